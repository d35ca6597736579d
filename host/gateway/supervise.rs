//! Keeping servers connected: one supervisor task per server connects
//! (at most [`MAX_PARALLEL_CONNECTS`] at once), lists its tools into the
//! manifest, waits for the session to end and reconnects with exponential
//! backoff and jitter; one refresher task lists servers again on
//! list-change events and on the configured interval.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::downstream::{self, RefreshSet};
use super::{Gateway, Server};

/// Servers connecting at once. Each stdio server is a process start (often
/// `npx`, which is CPU-heavy); eight keeps a cold start of many servers from
/// starving the machine while still overlapping network waits.
pub const MAX_PARALLEL_CONNECTS: usize = 8;

/// First reconnect delay. Doubles per failure up to [`MAX_BACKOFF`].
pub const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// Longest reconnect delay: a minute, so a server that comes back is found
/// within a minute without hammering one that stays down.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

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
    let mut backoff = MIN_BACKOFF;
    let mut first = true;
    loop {
        let events = match gateway.upgrade() {
            Some(g) => g.refresh.clone(),
            None => return,
        };
        let attempt = {
            let _permit = permits.acquire().await;
            let limit = server.config.timeout.max(MIN_CONNECT_TIME);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                r = tokio::time::timeout(limit, downstream::connect(&server.config, events)) => {
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
            backoff = MIN_BACKOFF;
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = conn.closed() => {}
            }
            server.conn.store(None);
            let Some(g) = gateway.upgrade() else { return };
            tracing::warn!(server = %name, "session ended; reconnecting");
            g.mark_unavailable(
                &server,
                "the server closed the session; reconnecting".into(),
            );
        }
        let delay = jitter(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// `base` ± 25%, so servers that failed together do not retry in lockstep.
fn jitter(base: Duration) -> Duration {
    let mut bytes = [0u8; 8];
    let r = if getrandom::fill(&mut bytes).is_ok() {
        u64::from_le_bytes(bytes)
    } else {
        0
    };
    let unit = (r % 1000) as f64 / 1000.0; // [0, 1)
    base.mul_f64(0.75 + unit * 0.5)
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
