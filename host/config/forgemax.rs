//! Forgemax's `[sandbox]` keys that quickforge has no key of its own for,
//! so that configs in Forgemax's documented format load without edits: each is mapped to
//! what it means here, or, where nothing here corresponds, accepted with
//! one warning that names it. Keys Forgemax does not know either stay
//! errors (every table here denies unknown fields).
//!
//! | Forgemax key | here |
//! | --- | --- |
//! | `max_resource_size_mb` | the default `max_response_mb` of every server that sets none: the largest message a server may send, a resource read included |
//! | `max_parallel` | `max_parallel` itself (a `[sandbox]` key of quickforge's) |
//! | `startup_concurrency` | servers connecting at once |
//! | `stash.max_value_size_mb`, `stash.max_total_size_mb` | `stash.max_value_size`, `stash.max_total_size` in MiB |
//! | `stash.max_calls` | stash operations per execution |
//! | `execution_mode`, `max_ipc_message_size_mb`, `[sandbox.pool]` | accepted and ignored, with a warning: there is no worker process and no IPC |
//!
//! The per-server keys `reconnect` and `max_reconnect_backoff_secs` are
//! quickforge's too and live with the other server keys (`servers.rs`).

use serde::Deserialize;

use super::{ConfigError, RawSandbox};
use crate::state::{Secret, StashLimits};

/// `[sandbox.stash]` as written: quickforge's keys (in bytes) and
/// Forgemax's (in MiB, and `max_calls`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawStash {
    max_keys: usize,
    max_value_size: Option<usize>,
    max_total_size: Option<usize>,
    default_ttl_secs: u64,
    max_ttl_secs: u64,
    max_stashes: usize,
    max_gateway_size: usize,
    evict_idle_secs: u64,
    secret: Option<Secret>,
    max_value_size_mb: Option<u64>,
    max_total_size_mb: Option<u64>,
    max_calls: Option<u32>,
}

impl Default for RawStash {
    fn default() -> Self {
        let d = StashLimits::default();
        RawStash {
            max_keys: d.max_keys,
            max_value_size: None,
            max_total_size: None,
            default_ttl_secs: d.default_ttl_secs,
            max_ttl_secs: d.max_ttl_secs,
            max_stashes: d.max_stashes,
            max_gateway_size: d.max_gateway_size,
            evict_idle_secs: d.evict_idle_secs,
            secret: d.secret,
            max_value_size_mb: None,
            max_total_size_mb: None,
            max_calls: None,
        }
    }
}

/// Forgemax's `[sandbox.pool]` (its worker processes): read so that a typo
/// in it is still an error, then ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "read only to accept Forgemax's keys with their types; quickforge has no worker pool"
)]
pub(super) struct RawPool {
    enabled: Option<bool>,
    min_workers: Option<usize>,
    max_workers: Option<usize>,
    max_idle_secs: Option<u64>,
    max_uses: Option<u32>,
}

/// What Forgemax's keys come to.
pub(super) struct Adopted {
    /// The default `max_response_mb` of servers that set none.
    pub response_mb: u64,
    /// Servers connecting at once.
    pub startup_concurrency: usize,
    /// `[sandbox.stash]` with the MiB keys applied.
    pub stash: StashLimits,
    /// Stash operations per execution, if limited.
    pub stash_calls: Option<u32>,
    /// The keys that were accepted and mean nothing here.
    pub ignored: Vec<&'static str>,
}

/// Largest `max_resource_size_mb`: the same bound as a server's own
/// `max_response_mb`, which it sets the default of.
const MAX_RESOURCE_SIZE_MB: u64 = super::servers::MAX_RESPONSE_MB;
/// Default `startup_concurrency`, servers connecting at once (Forgemax's
/// default too). Each stdio server is a process start (often `npx`, which
/// is CPU-heavy); eight keeps a cold start of many servers from starving
/// the machine while still overlapping network waits.
pub const DEFAULT_STARTUP_CONCURRENCY: usize = 8;
/// Largest `startup_concurrency` (Forgemax's bound too): every connecting
/// stdio server is a process start, often `npx`.
pub const MAX_STARTUP_CONCURRENCY: usize = 64;
/// One MiB, the unit of Forgemax's `*_mb` keys.
const MIB: u64 = 1024 * 1024;

/// Maps Forgemax's keys of `s`; `invalid(key, message)` builds the error of
/// a `sandbox.`-relative key.
pub(super) fn adopt(
    s: &mut RawSandbox,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Adopted, ConfigError> {
    let response_mb = match s.max_resource_size_mb {
        None => super::servers::DEFAULT_MAX_RESPONSE_MB,
        Some(mb) if (1..=MAX_RESOURCE_SIZE_MB).contains(&mb) => mb,
        Some(mb) => {
            return Err(invalid(
                "max_resource_size_mb",
                format!("must be from 1 to {MAX_RESOURCE_SIZE_MB}, got {mb}"),
            ));
        }
    };
    let startup_concurrency = match s.startup_concurrency {
        None => DEFAULT_STARTUP_CONCURRENCY,
        Some(n) if (1..=MAX_STARTUP_CONCURRENCY).contains(&n) => n,
        Some(n) => {
            return Err(invalid(
                "startup_concurrency",
                format!("must be from 1 to {MAX_STARTUP_CONCURRENCY}, got {n}"),
            ));
        }
    };
    let raw = std::mem::take(&mut s.stash);
    let d = StashLimits::default();
    let bytes = |exact: Option<usize>, mb: Option<u64>, key: &str, default: usize| match (exact, mb)
    {
        (Some(_), Some(_)) => Err(invalid(
            &format!("stash.{key}_mb"),
            format!("set stash.{key} (bytes) or stash.{key}_mb (MiB, Forgemax's key), not both"),
        )),
        (Some(n), None) => Ok(n),
        (None, Some(mb)) => usize::try_from(mb.saturating_mul(MIB))
            .map_err(|_| invalid(&format!("stash.{key}_mb"), format!("{mb} MiB is too large"))),
        (None, None) => Ok(default),
    };
    let stash = StashLimits {
        max_keys: raw.max_keys,
        max_value_size: bytes(
            raw.max_value_size,
            raw.max_value_size_mb,
            "max_value_size",
            d.max_value_size,
        )?,
        max_total_size: bytes(
            raw.max_total_size,
            raw.max_total_size_mb,
            "max_total_size",
            d.max_total_size,
        )?,
        default_ttl_secs: raw.default_ttl_secs,
        max_ttl_secs: raw.max_ttl_secs,
        max_stashes: raw.max_stashes,
        max_gateway_size: raw.max_gateway_size,
        evict_idle_secs: raw.evict_idle_secs,
        secret: raw.secret,
    };
    if raw.max_calls == Some(0) {
        return Err(invalid(
            "stash.max_calls",
            "must be at least 1 (leave it out for no limit)".into(),
        ));
    }
    let mut ignored = Vec::new();
    if s.execution_mode.is_some() {
        ignored.push("sandbox.execution_mode");
    }
    if s.max_ipc_message_size_mb.is_some() {
        ignored.push("sandbox.max_ipc_message_size_mb");
    }
    if s.pool.is_some() {
        ignored.push("sandbox.pool");
    }
    Ok(Adopted {
        response_mb,
        startup_concurrency,
        stash,
        stash_calls: raw.max_calls,
        ignored,
    })
}

/// One warning naming every accepted key that means nothing here.
pub(super) fn warn_ignored(ignored: &[&str]) {
    if !ignored.is_empty() {
        tracing::warn!(
            "config keys {} are Forgemax's and are ignored: quickforge runs every script in a fresh WebAssembly instance inside the gateway, with no worker processes and no IPC",
            ignored.join(", ")
        );
    }
}
