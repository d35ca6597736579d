//! How many sessions there are and what each may hold: the bounds
//! ([`SessionLimits`]), the cap on live HTTP sessions ([`SessionCap`]) and
//! which of them were left alone longest ([`Recency`]), for eviction.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// Bounds on sessions. Every value is a documented default of `[sandbox]`
/// in forge.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// HTTP sessions alive at once (`max_sessions`). 64: far more than the
    /// agents one gateway serves, and with the default stash caps it bounds
    /// what idle sessions can hold. A new session past it is refused with
    /// HTTP 503 and `Retry-After`; stdio has one session by nature.
    pub max_sessions: usize,
    /// Executions one fairness key may run at once
    /// (`max_concurrent_per_session`): the subject with `[auth]`, else the
    /// session, or a sessionless request's connection (see `shares`).
    /// Default: half of `max_concurrent`, rounded up (4 of 8), so one client
    /// can fan work out and still leave half the slots to the others.
    pub max_concurrent_per_session: usize,
    /// How long an idle HTTP session lives (`session_idle_secs`). Default:
    /// the stash's default TTL, and never under rmcp's 5 minutes, so a
    /// client that comes back within the TTL finds its session, and with it
    /// its stash, where it left them ([`SessionLimits::idle_for`]).
    pub idle: Duration,
    /// How long an HTTP session must have been left alone before a full
    /// gateway may close it to let a new client in
    /// (`session_evict_idle_secs`). 60 s: far longer than one turn of an
    /// agent's work, so a session in use is never taken, while sessions
    /// kept alive for their stash's TTL cannot lock newcomers out for an
    /// hour. The closed session's stash stays reachable by its handle.
    pub evict_idle: Duration,
}

impl SessionLimits {
    /// The defaults for a gateway of `max_concurrent` slots.
    pub fn for_slots(max_concurrent: usize) -> SessionLimits {
        SessionLimits {
            max_sessions: 64,
            max_concurrent_per_session: max_concurrent.div_ceil(2).max(1),
            idle: SessionLimits::idle_for(&crate::state::StashLimits::default()),
            evict_idle: Duration::from_secs(60),
        }
    }

    /// The default idle lifetime of a session whose stash has `stash`'s
    /// limits: its default TTL, at least [`MIN_SESSION_IDLE`].
    pub fn idle_for(stash: &crate::state::StashLimits) -> Duration {
        Duration::from_secs(stash.default_ttl_secs).max(MIN_SESSION_IDLE)
    }
}

/// Shortest default idle lifetime of a session: rmcp's own default, 5
/// minutes, which clients are written against.
pub const MIN_SESSION_IDLE: Duration = Duration::from_secs(300);

/// Seconds a client refused for `max_sessions` is told to wait
/// (`Retry-After`). Sessions end when their client leaves or after rmcp's
/// idle keep-alive; half a minute is a fair first retry.
pub const RETRY_AFTER_SECS: u64 = 30;

/// The live HTTP sessions, counted against `max_sessions`.
#[derive(Clone)]
pub struct SessionCap {
    open: Arc<Semaphore>,
    max: usize,
}

impl SessionCap {
    /// A cap of `max` live sessions.
    pub fn new(max: usize) -> SessionCap {
        SessionCap {
            open: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A place for one more session, held until the session ends; or the
    /// message saying the gateway is full.
    pub fn try_open(&self) -> Result<OwnedSemaphorePermit, String> {
        match self.open.clone().try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => Err(self.full()),
        }
    }

    /// Whether every place is taken now.
    pub fn is_full(&self) -> bool {
        self.open.available_permits() == 0
    }

    /// Why a new session is refused.
    pub fn full(&self) -> String {
        format!(
            "quickforge already serves its limit of {} sessions (sandbox.max_sessions); retry in {RETRY_AFTER_SECS} s, or close sessions you no longer use",
            self.max
        )
    }
}

/// When each live HTTP session was last used (by its id), so that a full
/// gateway can give the place of the session left alone longest to a new
/// client instead of refusing it.
#[derive(Default)]
pub struct Recency {
    last: std::sync::Mutex<std::collections::HashMap<Arc<str>, std::time::Instant>>,
}

impl Recency {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<Arc<str>, std::time::Instant>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Session `id` was used now.
    pub fn touch(&self, id: &str) {
        self.lock().insert(id.into(), std::time::Instant::now());
    }

    /// Session `id` is gone.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Of `ids`, the one used least recently (one never touched first).
    pub fn least_recent(&self, ids: &[Arc<str>]) -> Option<Arc<str>> {
        let last = self.lock();
        ids.iter()
            .min_by_key(|id| last.get(&***id).copied())
            .cloned()
    }

    /// The sessions left alone for at least `idle`, longest first; entries
    /// older than `expired` (sessions rmcp has closed for idleness) are
    /// dropped on the way.
    pub fn idle_for(&self, idle: Duration, expired: Duration) -> Vec<Arc<str>> {
        let mut last = self.lock();
        last.retain(|_, at| at.elapsed() < expired);
        let mut idle: Vec<_> = last
            .iter()
            .filter(|(_, at)| at.elapsed() >= idle)
            .map(|(id, at)| (*at, id.clone()))
            .collect();
        idle.sort();
        idle.into_iter().map(|(_, id)| id).collect()
    }
}
