//! An execution's wall deadline, paused while the execution waits on a
//! person (an elicitation, an approval) or on the client's model (sampling).
//!
//! The time limit (`[sandbox] timeout_ms`) bounds what the gateway does for
//! a script; a person reading a form is not that, and counting it would end
//! every execution that asks a question. So a wait stops the clock, and the
//! waits have their own bound (`[sandbox] max_wait_secs`, enforced by the
//! relay around each ask). When the last wait of an execution ends, the
//! deadline moves out by the time it lasted.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// One execution's deadline; shared by the sandbox (which ends the
/// execution when it passes) and the relay (which pauses it during waits).
#[derive(Debug)]
pub struct Deadline {
    state: Mutex<State>,
    /// The time limit for this execution when it is not the sandbox's
    /// `timeout_ms`: a task's own, longer one (`[sandbox] task_timeout_secs`).
    limit: Option<Duration>,
    /// Woken when a wait ends (the deadline moved) or when it starts.
    changed: Notify,
}

#[derive(Debug)]
struct State {
    /// When the execution must end, waits not counted; `None` until the
    /// execution has a slot and its clock starts.
    due: Option<Instant>,
    /// Waits in progress (several calls of one script can wait at once).
    waiting: u32,
    /// When the current stretch of waiting began.
    since: Option<Instant>,
    /// Total time spent waiting, finished stretches only.
    waited: Duration,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline {
            state: Mutex::new(State {
                due: None,
                waiting: 0,
                since: None,
                waited: Duration::ZERO,
            }),
            changed: Notify::new(),
            limit: None,
        }
    }
}

impl Deadline {
    /// A deadline whose time limit is `limit` instead of the sandbox's.
    pub fn with_limit(limit: Duration) -> Deadline {
        Deadline {
            limit: Some(limit),
            ..Deadline::default()
        }
    }

    /// The time limit this execution has instead of the sandbox's, if any.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the clock: the execution must end `limit` from now, plus
    /// whatever it waits.
    pub fn start(&self, limit: Duration) {
        self.lock().due = Some(Instant::now() + limit);
        self.changed.notify_waiters();
    }

    /// Whether the deadline has passed: never while a wait is in progress.
    pub fn passed(&self) -> bool {
        let s = self.lock();
        s.waiting == 0 && s.due.is_some_and(|due| Instant::now() >= due)
    }

    /// Time spent waiting so far, the current stretch included.
    pub fn waited(&self) -> Duration {
        let s = self.lock();
        s.waited + s.since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Resolves once the deadline has passed (see [`Deadline::passed`]).
    pub async fn expired(&self) {
        loop {
            let changed = self.changed.notified();
            let due = {
                let s = self.lock();
                if s.waiting > 0 { None } else { s.due }
            };
            match due {
                // Not started, or waiting: nothing can expire before a change.
                None => changed.await,
                Some(due) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(due) => {
                            if self.passed() {
                                return;
                            }
                        }
                        () = changed => {}
                    }
                }
            }
        }
    }

    /// Stops the clock until the returned guard is dropped.
    pub fn pause(self: &std::sync::Arc<Self>) -> Paused {
        let mut s = self.lock();
        if s.waiting == 0 {
            s.since = Some(Instant::now());
        }
        s.waiting += 1;
        drop(s);
        self.changed.notify_waiters();
        Paused(self.clone())
    }
}

/// A wait in progress; the clock runs again (moved out by the wait) when
/// the last one is dropped.
#[derive(Debug)]
pub struct Paused(std::sync::Arc<Deadline>);

impl Drop for Paused {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.waiting = s.waiting.saturating_sub(1);
        if s.waiting == 0
            && let Some(since) = s.since.take()
        {
            let stretch = since.elapsed();
            s.waited += stretch;
            if let Some(due) = s.due.as_mut() {
                *due += stretch;
            }
        }
        drop(s);
        self.0.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A wait stops the clock: the deadline passes only after the limit
    /// plus the wait, and the wait is reported.
    #[tokio::test(start_paused = true)]
    async fn a_wait_moves_the_deadline_out() {
        let d = Arc::new(Deadline::default());
        d.start(Duration::from_millis(100));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let paused = d.pause();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!d.passed(), "no deadline passes during a wait");
        drop(paused);
        assert_eq!(d.waited(), Duration::from_millis(500));
        let started = Instant::now();
        d.expired().await;
        assert_eq!(started.elapsed(), Duration::from_millis(50));
    }

    /// Without waits, the deadline is the limit.
    #[tokio::test(start_paused = true)]
    async fn without_waits_the_deadline_is_the_limit() {
        let d = Deadline::default();
        d.start(Duration::from_millis(100));
        let started = Instant::now();
        d.expired().await;
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        assert!(d.passed());
    }
}
