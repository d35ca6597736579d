//! Progress on the client's token: what a script's downstream calls report
//! and what the script reports itself (`forge.progress`), coalesced.
//!
//! One `execute` has one progress token, and the specification wants the
//! value on it to increase with every notification; downstream calls each
//! count on their own scale, several at once. So each notification's value
//! is one step past the last one sent (the message names the server, the
//! tool and the server's own figures), except the script's own
//! `forge.progress(done, total)`, which is sent as it is whenever `done`
//! is past the last value sent, so a script can drive a progress bar.
//!
//! A chatty server (one notification per item of a 10,000-item job) must
//! not flood the client: at most one notification per
//! [`PROGRESS_INTERVAL`] leaves, carrying the latest report; reports in
//! between are merged into it.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::Notify;

/// Shortest time between two progress notifications of one execution:
/// a tenth of a second, faster than a person reads a progress line and
/// slow enough that a server reporting every item costs the client ten
/// messages a second at most.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Longest progress message relayed, bytes; a progress line is one line.
pub const MAX_PROGRESS_MESSAGE: usize = 512;

/// The script's own figures, `(done, total)`; `None` for a step of a
/// downstream call.
pub type Figures = Option<(f64, Option<f64>)>;

/// One execution's progress token and what waits to be sent on it.
pub struct Progress {
    state: Mutex<State>,
    wake: Notify,
    token: ProgressToken,
}

#[derive(Default)]
struct State {
    /// The last value sent.
    sent: f64,
    /// The latest report not yet sent.
    pending: Option<(Figures, String)>,
}

impl Progress {
    /// Progress on `token`, sent to `peer` by a task that ends with the
    /// execution (when the last `Arc` goes).
    pub fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Arc<Progress> {
        let p = Arc::new(Progress {
            state: Mutex::default(),
            wake: Notify::new(),
            token: token.clone(),
        });
        tokio::spawn(flush(Arc::downgrade(&p), peer, token));
        p
    }

    /// Merges a report into the next notification (see the module doc).
    pub fn report(&self, value: Figures, message: String) {
        // it crosses to the client here: redacted once, then cut
        let message = quickforge_core::shown::text_to_client(&message, MAX_PROGRESS_MESSAGE);
        self.state.lock().unwrap_or_else(|p| p.into_inner()).pending = Some((value, message));
        self.wake.notify_one();
    }

    /// The next notification's value, total and message, if one is due.
    fn take(&self) -> Option<(f64, Option<f64>, String)> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (value, message) = s.pending.take()?;
        let (progress, total) = match value {
            Some((done, total)) if done.is_finite() && done > s.sent => {
                (done, total.filter(|t| t.is_finite() && *t >= done))
            }
            _ => (s.sent.floor() + 1.0, None),
        };
        s.sent = progress;
        Some((progress, total, message))
    }
}

impl Progress {
    /// Sends what is still pending at once: the execution is about to
    /// answer, and its last report (often "done") must not arrive after
    /// the result.
    pub async fn finish(&self, peer: &Peer<RoleServer>) {
        if let Some((value, total, message)) = self.take() {
            let mut params = ProgressNotificationParam::new(self.token.clone(), value);
            params.total = total;
            params.message = Some(message);
            if let Err(e) = peer.notify_progress(params).await {
                tracing::debug!("could not relay progress: {e}");
            }
        }
    }
}

/// Sends what [`Progress::report`] left, at most once per
/// [`PROGRESS_INTERVAL`], until the execution's `Progress` is gone.
async fn flush(progress: Weak<Progress>, peer: Peer<RoleServer>, token: ProgressToken) {
    loop {
        let Some(p) = progress.upgrade() else { return };
        let Some((value, total, message)) = p.take() else {
            // Wait for a report (`notify_one` keeps a wake-up that comes
            // before the wait), or check back for the end of the execution.
            let _ = tokio::time::timeout(Duration::from_secs(1), p.wake.notified()).await;
            continue;
        };
        drop(p);
        let mut params = ProgressNotificationParam::new(token.clone(), value);
        params.total = total;
        params.message = Some(message);
        if let Err(e) = peer.notify_progress(params).await {
            tracing::debug!("could not relay progress: {e}");
            return;
        }
        tokio::time::sleep(PROGRESS_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress() -> Progress {
        Progress {
            state: Mutex::default(),
            wake: Notify::new(),
            token: ProgressToken(rmcp::model::NumberOrString::Number(1)),
        }
    }

    /// Values only go up: steps of downstream calls, and the script's own
    /// figures when they are past the last value sent.
    #[test]
    fn values_only_increase() {
        let p = progress();
        p.report(None, "a".into());
        assert_eq!(p.take().map(|t| t.0), Some(1.0));
        p.report(Some((10.0, Some(20.0))), "script".into());
        assert_eq!(p.take().map(|t| (t.0, t.1)), Some((10.0, Some(20.0))));
        p.report(Some((5.0, Some(20.0))), "behind".into());
        assert_eq!(p.take().map(|t| (t.0, t.1)), Some((11.0, None)));
        assert!(p.take().is_none(), "nothing pending, nothing sent");
    }

    /// Reports between two sends merge into the latest one.
    #[test]
    fn reports_in_between_merge() {
        let p = progress();
        for i in 0..100 {
            p.report(None, format!("item {i}"));
        }
        assert_eq!(p.take().map(|t| t.2), Some("item 99".to_string()));
        assert!(p.take().is_none());
    }
}
