//! State that outlives one execution: the stash, behind a [`StateStore`]
//! addressed by a [`Handle`].
//!
//! A script reaches it as `forge.stash.put/get/delete/keys`. Each of those is
//! one call on the store, and the store does the whole operation in one
//! atomic step: key and value checks, TTL, the caps of the stash, the caps
//! of the whole gateway and eviction. Nothing reads state in one call and
//! writes it in the next, so a networked backend (Redis, with a script per
//! operation) can keep the same contract.
//!
//! **Handles.** State belongs to a handle, not to an object's lifetime. A
//! handle is sealed with an HMAC under the gateway's secret ([`handle`]).
//! Each client session (one stdio connection, one streamable-HTTP session)
//! mints one as its default; `execute` returns it whenever the script used
//! the stash, and takes it back as its `stash` argument from any session, so
//! a client that carries it keeps its state across reconnects, session
//! expiry and stateless requests. Nothing releases a handle's state when a
//! session closes (the handle may live on in the client): its entries end
//! with their TTL, or with eviction when the caps are under pressure.
//!
//! **Spaces.** Inside one handle, state lives in spaces: the public space
//! (`None`) and one space per strict server group. An execution locked to a
//! strict group writes, deletes and lists in its group's space and may read
//! the public one; an execution that is not locked sees the public space
//! alone. Each space is a world of its own: its own key and byte capacity
//! per stash, and its own share of the gateway's caps (see [`caps`]), so
//! that nothing one space does — filling, deleting, being evicted — shows in
//! another. SECURITY.md lists the channels this closes and those it leaves.

pub mod caps;
pub mod handle;
pub mod memory;
pub mod redis;
mod stash_entries;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Deserialize;

/// The directory where this machine keeps quickforge's state (what must
/// survive a restart and is not a cache: deleting it loses records, such as
/// the tools a person trusted, see `crate::pins`):
/// `$QUICKFORGE_STATE_DIR`, else `$XDG_STATE_HOME/quickforge`, else
/// `$HOME/.local/state/quickforge` (the XDG base directory rules); `None`
/// when none is set, and state is then kept for the process only.
pub fn local_dir() -> Option<std::path::PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    var("QUICKFORGE_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("quickforge")))
        .or_else(|| var("HOME").map(|d| d.join(".local").join("state").join("quickforge")))
}

use quickforge_core::stash::StashRules;

use crate::error::ForgeError;

pub use handle::{HandleKey, KeySource};
pub use memory::MemoryStore;
pub use redis::{Backend, RedisStore, StateConfig};

/// Bounds of one stash and of all stashes together. Every value is a
/// documented default of `[sandbox.stash]` in forge.toml.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StashLimits {
    /// Most keys alive at once in one stash (one handle, one space). 256: a
    /// stash is a scratchpad for a few intermediate results, not a database.
    pub max_keys: usize,
    /// Largest value, as JSON bytes. 1 MiB: the same as the largest tool
    /// argument, so anything a script can send it can also keep.
    pub max_value_size: usize,
    /// All keys and values of one stash together, in bytes. 16 MiB bounds
    /// what one client can hold.
    pub max_total_size: usize,
    /// Lifetime of a value stored without `ttl`. One hour: long enough for a
    /// working session, short enough that forgotten data goes away.
    pub default_ttl_secs: u64,
    /// Longest `ttl` a script may ask for. 24 hours.
    pub max_ttl_secs: u64,
    /// Stashes alive at once in one space, across the whole gateway (a stash
    /// is one handle's state in one space). 128: twice the default
    /// `max_sessions`, so every session can keep state while handles of
    /// closed sessions wait for their TTL or eviction.
    pub max_stashes: usize,
    /// All stashes of one space together, in bytes, across the whole gateway.
    /// 256 MiB: sixteen full stashes at the default `max_total_size`. The
    /// gateway holds at most (1 + strict groups) times this; each space has
    /// its own share so that one space's fill cannot be sensed from another.
    pub max_gateway_size: usize,
    /// How long a stash must have been left alone before it may be evicted
    /// to make room for another. 60 s: longer than the default execution
    /// time limit (10 s) many times over, so a stash in use is not evicted
    /// under a running script; a write that finds only younger stashes is
    /// refused as retryable instead.
    pub evict_idle_secs: u64,
    /// The secret that seals stash handles (`${VAR}` expanded). Unset, a
    /// secret is generated and kept in the cache directory, so handles stay
    /// valid across restarts; changing it invalidates every handle.
    pub secret: Option<Secret>,
}

/// A configured secret: never shown by `Debug`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl StashLimits {
    /// The bounds of one stash, as every backend applies them.
    pub fn rules(&self) -> StashRules {
        StashRules {
            max_keys: self.max_keys,
            max_value_size: self.max_value_size,
            max_total_size: self.max_total_size,
            default_ttl_secs: self.default_ttl_secs,
            max_ttl_secs: self.max_ttl_secs,
        }
    }
}

impl Default for StashLimits {
    fn default() -> Self {
        // One stash's defaults are the edge's too: kept in one place.
        let one = StashRules::default();
        StashLimits {
            max_keys: one.max_keys,
            max_value_size: one.max_value_size,
            max_total_size: one.max_total_size,
            default_ttl_secs: one.default_ttl_secs,
            max_ttl_secs: one.max_ttl_secs,
            max_stashes: 128,
            max_gateway_size: 256 * 1024 * 1024,
            evict_idle_secs: 60,
            secret: None,
        }
    }
}

/// Largest `max_ttl_secs` accepted: 30 days. A stash is session scratch
/// space, not storage.
pub const MAX_TTL_SECS: u64 = 30 * 24 * 3600;

/// Who state belongs to: an opaque, unguessable id, sealed by a
/// [`HandleKey`] when a client may see it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Handle(Arc<str>);

impl Handle {
    /// Bytes of randomness in a handle. 16 (128 bits): unguessable, as a
    /// bearer capability must be once clients carry handles themselves.
    pub const RANDOM_BYTES: usize = quickforge_filters::seal::RANDOM_BYTES;

    /// A fresh unsealed handle from the OS random source, for state no
    /// client addresses (tests, a private stash).
    pub fn random() -> Handle {
        let mut bytes = [0u8; Self::RANDOM_BYTES];
        // Without the OS random source no handle is safe to hand out.
        getrandom::fill(&mut bytes).expect("the OS random source works");
        Handle(hex::encode(bytes).into())
    }

    /// The handle's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A short hash of the handle, for the audit log: lines of one handle
    /// can be matched without the log holding the capability itself.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        hex::encode(&sha2::Sha256::digest(self.0.as_bytes())[..8])
    }
}

impl std::fmt::Debug for Handle {
    /// Never the whole handle: it is a capability.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handle({}…)", self.0.get(..8).unwrap_or(""))
    }
}

/// The space an operation acts in: the strict group the execution is locked
/// to, or `None` for the public space.
pub type Space = Option<Arc<str>>;

/// Where an operation acts: one handle's state, in one space.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    /// Whose state.
    pub handle: &'a Handle,
    /// Which space: the execution's strict group, or the public space.
    pub space: Option<&'a Arc<str>>,
}

/// How much the store holds, for tests and `doctor`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Stashes alive (handle × space pairs holding at least one entry).
    pub stashes: usize,
    /// Bytes of keys and values, across every stash.
    pub bytes: usize,
}

/// Where stashes live. Every method is one atomic step that enforces the
/// key rules, TTLs and every cap itself; callers never combine calls to
/// decide anything. The methods are async because a networked backend
/// (Redis) answers over the network: the stash imports are async host
/// functions, so a script's `await forge.stash.get` waits for the round
/// trip without holding a tokio worker (the memory backend's futures are
/// ready at once). A backend that cannot answer fails with the retryable
/// `STATE_UNAVAILABLE`, within a bounded time.
#[async_trait::async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Stores `json` under `key` at `at` for `ttl` (or the default TTL).
    /// `STASH_FULL` when the stash or its space's share of the gateway is
    /// full (retryable when only stashes in use stand in the way).
    async fn put(
        &self,
        at: At<'_>,
        key: &str,
        json: String,
        ttl: Option<Duration>,
    ) -> Result<(), ForgeError>;

    /// The live JSON under `key`: from `at`'s own space, else (for a strict
    /// group's space) from the handle's public space.
    async fn get(&self, at: At<'_>, key: &str) -> Result<Option<String>, ForgeError>;

    /// Removes `key` from `at`'s own space (never another space); whether a
    /// live entry was there.
    async fn delete(&self, at: At<'_>, key: &str) -> Result<bool, ForgeError>;

    /// The live keys [`StateStore::get`] would find at `at`, sorted.
    async fn keys(&self, at: At<'_>) -> Result<Vec<String>, ForgeError>;

    /// What the store holds now (for Redis: what every gateway sharing it
    /// holds; zero when Redis does not answer).
    async fn usage(&self) -> Usage;
}

/// One execution's view of a stash: a store, the handle it is addressed
/// by, and whether the script used it (then the handle goes back to the
/// client with the result).
pub struct Stash {
    store: Arc<dyn StateStore>,
    handle: Handle,
    touched: AtomicBool,
}

impl Stash {
    /// The state of `handle` in `store`.
    pub fn new(store: Arc<dyn StateStore>, handle: Handle) -> Stash {
        Stash {
            store,
            handle,
            touched: AtomicBool::new(false),
        }
    }

    /// The handle this stash is addressed by.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Whether any operation reached the store through this view.
    pub fn touched(&self) -> bool {
        self.touched.load(Ordering::Relaxed)
    }

    /// Where `space`'s operations act; marks the view used.
    fn at<'a>(&'a self, space: Option<&'a Arc<str>>) -> At<'a> {
        self.touched.store(true, Ordering::Relaxed);
        At {
            handle: &self.handle,
            space,
        }
    }

    /// [`StateStore::put`] in `space`.
    pub async fn put(
        &self,
        space: Option<&Arc<str>>,
        key: &str,
        json: String,
        ttl: Option<Duration>,
    ) -> Result<(), ForgeError> {
        self.store.put(self.at(space), key, json, ttl).await
    }

    /// [`StateStore::get`] in `space`.
    pub async fn get(
        &self,
        space: Option<&Arc<str>>,
        key: &str,
    ) -> Result<Option<String>, ForgeError> {
        self.store.get(self.at(space), key).await
    }

    /// [`StateStore::delete`] in `space`.
    pub async fn delete(&self, space: Option<&Arc<str>>, key: &str) -> Result<bool, ForgeError> {
        self.store.delete(self.at(space), key).await
    }

    /// [`StateStore::keys`] in `space`.
    pub async fn keys(&self, space: Option<&Arc<str>>) -> Result<Vec<String>, ForgeError> {
        self.store.keys(self.at(space)).await
    }
}

impl Default for Stash {
    /// A fresh handle in a private memory store with default limits.
    fn default() -> Self {
        Stash::new(
            Arc::new(MemoryStore::new(StashLimits::default())),
            Handle::random(),
        )
    }
}

/// Keys are 1 to 256 bytes of `A-Z a-z 0-9 _ - . : /`: safe to
/// log, to show a model, and to scope by prefix (the rule and its wording
/// are `quickforge-core`'s, shared with the edge).
pub use quickforge_core::stash::check_key;

/// The checks of a put that need no state: the key, the value's size, the
/// TTL (defaulted). Every backend runs them first.
pub fn check_put(
    limits: &StashLimits,
    key: &str,
    json: &str,
    ttl: Option<Duration>,
) -> Result<Duration, ForgeError> {
    limits.rules().check_put(key, json, ttl)
}
