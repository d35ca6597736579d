//! Keeping servers connected: one supervisor task per server connects
//! (at most `startup_concurrency`,
//! [`crate::config::DEFAULT_STARTUP_CONCURRENCY`] by default, at once), lists its tools into the manifest, waits for the session to end
//! and reconnects with exponential backoff and jitter (unless the server
//! says `reconnect = false`); one refresher task lists servers again on
//! list-change events and on the configured interval.

use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::downstream;
use super::handler::RefreshSet;
use super::{Gateway, Server};

/// Shortest reconnect delay, the first one after a failure: long enough
/// that a server crashing at start does not spin the machine, short enough
/// that a server restarted by hand is back before anyone notices.
pub const MIN_BACKOFF: Duration = Duration::from_millis(500);

/// Reconnect delays up to `max` (a server's `max_reconnect_backoff_secs`,
/// 60 s by default): doubling from [`MIN_BACKOFF`] per failure, never
/// giving up (a server is retried for as long as the gateway runs).
/// backon's jitter adds a random share of the delay again (up to 100%), so
/// servers that failed together do not retry in lockstep; the doubling
/// therefore stops at half of `max`, so that delay plus jitter stays within
/// it.
fn backoff(max: Duration) -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(MIN_BACKOFF.min(max / 2))
        .with_max_delay(max / 2)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
}

/// Shortest time a connection attempt (process start or dial, plus the MCP
/// handshake) gets, whatever the server's `timeout_secs`: `npx` fetching a
/// package on a cold cache takes several seconds, and a call timeout of one
/// second must not make a server unreachable.
pub const MIN_CONNECT_TIME: Duration = Duration::from_secs(10);

/// Connects `server`, keeps it connected, and reconnects after failures.
pub(super) async fn supervise(
    gateway: std::sync::Weak<Gateway>,
    server: Arc<Server>,
    permits: Arc<Semaphore>,
    shutdown: CancellationToken,
) {
    let name = server.config.name.clone();
    let max_backoff = server.config.max_reconnect_backoff;
    let mut backoff = backoff(max_backoff).build();
    let mut first = true;
    loop {
        let (events, relay) = match gateway.upgrade() {
            Some(g) => (g.refresh.clone(), g.relay.clone()),
            None => return,
        };
        if !first {
            server
                .reconnects
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let attempt = {
            let _permit = permits.acquire().await;
            let mut limit = server.config.timeout.max(MIN_CONNECT_TIME);
            if server.era.unknown() {
                // a legacy server that ignores the probe costs this once
                limit += super::era::DISCOVER_WAIT;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                r = tokio::time::timeout(limit, downstream::connect(&server.config, events, relay, &server.era)) => {
                    r.unwrap_or_else(|_| Err(format!("no MCP handshake within {} s", limit.as_secs_f64())))
                }
            }
        };
        let Some(g) = gateway.upgrade() else { return };
        let connected = match attempt {
            Ok(conn) => {
                let conn = Arc::new(conn);
                match g.list(&server, &conn).await {
                    Ok(()) => {
                        tracing::info!(server = %name, "connected");
                        server.conn.store(Some(conn.clone()));
                        Some(conn)
                    }
                    Err(e) => {
                        conn.close();
                        tracing::warn!(server = %name, "connected but could not list tools: {e}");
                        g.mark_unavailable(&server, e);
                        None
                    }
                }
            }
            Err(e) => {
                // the log names the command's basename when redaction hides its path
                tracing::warn!(server = %name, "could not connect: {}", super::unavailable_reason(&server.config, &e));
                g.mark_unavailable(&server, e);
                None
            }
        };
        if first {
            first = false;
            g.pending.send_modify(|n| *n = n.saturating_sub(1));
        }
        drop(g);
        if let Some(conn) = connected {
            // It connected: the next failure starts again from the shortest delay.
            backoff = self::backoff(max_backoff).build();
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = conn.closed() => {}
            }
            server.conn.store(None);
            let Some(g) = gateway.upgrade() else { return };
            if !server.config.reconnect {
                tracing::warn!(server = %name, "session ended; not reconnecting (reconnect = false)");
                g.mark_unavailable(
                    &server,
                    "the server closed the session (reconnect = false in forge.toml)".into(),
                );
                return;
            }
            tracing::warn!(server = %name, "session ended; reconnecting");
            g.mark_unavailable(
                &server,
                "the server closed the session; reconnecting".into(),
            );
        } else if !server.config.reconnect {
            // unavailable already, with the reason of the failed attempt
            tracing::warn!(server = %name, "not trying again (reconnect = false)");
            return;
        }
        // Never `None`: the backoff has no limit on attempts.
        let delay = backoff.next().unwrap_or(max_backoff);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// Refreshes servers' manifest entries on list-change events and on the
/// configured interval.
pub(super) async fn refresher(
    gateway: std::sync::Weak<Gateway>,
    refresh: Arc<RefreshSet>,
    interval: Option<Duration>,
    shutdown: CancellationToken,
) {
    let mut tick = interval.map(|i| {
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + i, i);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    loop {
        let mut due: Vec<String> = Vec::new();
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = refresh.wait() => {},
            _ = async { match tick.as_mut() { Some(t) => { t.tick().await; } None => std::future::pending::<()>().await } } => {
                if let Some(g) = gateway.upgrade() {
                    due.extend(g.servers.keys().cloned());
                }
            }
        }
        // A burst of notifications becomes one listing per server.
        due.extend(refresh.take());
        due.sort();
        due.dedup();
        let Some(g) = gateway.upgrade() else { return };
        for name in due {
            let Some(server) = g.servers.get(&name).cloned() else {
                continue;
            };
            let Some(conn) = server.connection() else {
                continue;
            };
            if let Err(e) = g.list(&server, &conn).await {
                tracing::warn!(server = %name, "manifest refresh failed: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented bounds hold with backon's jitter on top: no delay is
    /// shorter than [`MIN_BACKOFF`] or longer than the ceiling (the jitter
    /// adds up to the delay again, so doubling up to the ceiling itself would
    /// wait up to two minutes), the first is at most twice the shortest, and
    /// retries never stop.
    #[test]
    fn reconnect_delays_stay_within_the_documented_bounds() {
        // the default ceiling, and a server's own `max_reconnect_backoff_secs`
        for max in [Duration::from_secs(60), Duration::from_secs(4)] {
            for _ in 0..50 {
                let mut delays = backoff(max).build();
                let first = delays.next().expect("a first delay");
                assert!(first >= MIN_BACKOFF && first < MIN_BACKOFF * 2, "{first:?}");
                let rest: Vec<Duration> = delays.by_ref().take(40).collect();
                assert_eq!(rest.len(), 40, "retries never stop");
                for d in &rest {
                    assert!(*d >= MIN_BACKOFF && *d <= max, "{d:?}");
                }
                // long after the doubling stopped, delays sit in the top half
                assert!(rest[30..].iter().all(|d| *d >= max / 2), "{rest:?}");
            }
        }
    }
}
