//! Which protocol era a downstream server speaks, learned at its first
//! connect and remembered for the life of the gateway, and the handshake
//! that goes with it: `server/discover` (2026-07-28) first, the 2025
//! `initialize` when the server does not know it.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::Service;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};

/// The longest rmcp's `Auto` lifecycle waits for an answer to
/// `server/discover` before it tries `initialize` on the same connection
/// (rmcp's fixed `DEFAULT_AUTO_DISCOVER_TIMEOUT`, not configurable). A
/// first connect to a server whose era is not known yet gets this much more
/// time, so a legacy server that ignores the probe still connects.
pub const DISCOVER_WAIT: Duration = Duration::from_secs(10);

/// What quickforge knows about one server's era.
#[derive(Debug, Default)]
pub struct EraMemory(AtomicU8);

const UNKNOWN: u8 = 0;
const LEGACY: u8 = 1;
const MODERN: u8 = 2;

impl EraMemory {
    /// Whether the server is known to speak only the 2025 handshake (so the
    /// probe, which may cost [`DISCOVER_WAIT`], is skipped).
    pub fn legacy(&self) -> bool {
        self.0.load(Ordering::Relaxed) == LEGACY
    }

    /// Whether the era is still to be learned.
    pub fn unknown(&self) -> bool {
        self.0.load(Ordering::Relaxed) == UNKNOWN
    }

    /// Records what a successful handshake showed.
    pub fn learn<S: Service<RoleClient>>(&self, service: &RunningService<RoleClient, S>) {
        let modern = service
            .peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize());
        self.0
            .store(if modern { MODERN } else { LEGACY }, Ordering::Relaxed);
    }

    /// Records that the server answered only the 2025 handshake.
    pub fn learn_legacy(&self) {
        self.0.store(LEGACY, Ordering::Relaxed);
    }
}

/// The revisions quickforge offers in `server/discover`. 2026-07-28 alone:
/// a server that answers discover but only at 2025 revisions (a dual-era
/// SDK capped at 2025-11-25) then fails the probe and is reached through
/// `initialize`, with a session, instead of every request going out
/// session-less with a per-request `_meta` envelope at 2025-11-25, which
/// such a server (quickforge itself before issue 20) serves statelessly.
fn preferred() -> Vec<ProtocolVersion> {
    vec![ProtocolVersion::V_2026_07_28]
}

/// Completes the MCP handshake on `transport`: the `Auto` lifecycle (discover,
/// falling back to `initialize` on a legacy answer or after
/// [`DISCOVER_WAIT`]) unless the server is known to be legacy, then plain
/// `initialize`. On success the era is remembered. An `Auto` failure is
/// returned as is: the caller retries with [`initialize`] on a fresh
/// connection (rmcp does not fall back when the server closes the stream
/// on an unknown method, or when no offered revision is supported).
pub async fn handshake<S, T, E, A>(
    handler: S,
    transport: T,
    era: &EraMemory,
) -> Result<RunningService<RoleClient, S>, ClientInitializeError>
where
    S: Service<RoleClient>,
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    if era.legacy() {
        return initialize(handler, transport, era).await;
    }
    let mode = ClientLifecycleMode::Auto {
        preferred_versions: preferred(),
        legacy_version: None,
    };
    let service = handler.serve_with_lifecycle(transport, mode).await?;
    era.learn(&service);
    Ok(service)
}

/// The 2025 `initialize` handshake alone; success teaches `era` that the
/// server is legacy.
pub async fn initialize<S, T, E, A>(
    handler: S,
    transport: T,
    era: &EraMemory,
) -> Result<RunningService<RoleClient, S>, ClientInitializeError>
where
    S: Service<RoleClient>,
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = handler.serve(transport).await?;
    era.learn_legacy();
    Ok(service)
}

/// The error that decides what a failed handshake means: for a failed
/// fallback, the `initialize` attempt's (the discover probe failing first
/// is what made it a fallback).
pub fn decisive(err: &ClientInitializeError) -> &ClientInitializeError {
    match err {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => decisive(fallback),
        other => other,
    }
}
