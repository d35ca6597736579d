//! What runs executions for every session, shared by all of them.

use std::sync::Arc;

use crate::gateway::Gateway;
use crate::sandbox::Sandbox;
use crate::session::{SessionCap, SessionLimits};
use crate::state::{HandleKey, MemoryStore, StashLimits, StateStore};

/// What runs executions for every session: the sandbox, the gateway, the
/// gate in front of them (shutdown, `max_executions_per_minute`, the
/// validator) and the audit log. One per process, shared by all sessions.
pub struct Executor {
    /// The sandbox.
    pub sandbox: Arc<Sandbox>,
    /// Downstream servers and the manifest.
    pub gateway: Arc<Gateway>,
    /// Where every session's stash lives, with the gateway's caps.
    pub store: Arc<dyn StateStore>,
    /// The secret that seals stash handles.
    pub handles: HandleKey,
    /// Bounds on sessions: how many, and each one's share of the slots.
    pub sessions: SessionLimits,
    /// The live HTTP sessions, against `sessions.max_sessions`.
    pub session_cap: SessionCap,
    /// The execution slots of each fairness key (a subject, a connection),
    /// `sessions.max_concurrent_per_session` each.
    pub slot_shares: Arc<crate::session::SlotShares>,
    /// Running executions, so shutdown can let them finish.
    pub running: tokio_util::task::TaskTracker,
    /// `max_executions_per_minute`, across all sessions.
    pub rate: Option<crate::policy::RateLimit>,
    /// Whether scripts pass the static validator before they run
    /// (`[sandbox] validate`).
    pub validate: bool,
    /// Where each execution is recorded (`[audit]`); `None` records nothing.
    pub audit: Option<Arc<crate::audit::AuditLog>>,
    /// Executions that outlive their request: tasks, and executions
    /// waiting for a 2026-era client's answers.
    pub runs: Arc<crate::execution::tasks::Runs>,
    /// The metrics `/metrics` serves (`[observability] metrics`); the audit
    /// log feeds them. `None`: not served.
    pub metrics: Option<Arc<crate::observe::Metrics>>,
    /// This gateway's name among its replicas (`[cluster] replica`), in
    /// every audit line.
    pub replica: Arc<str>,
    /// The Redis of `[state] backend`, when state is shared: it also holds
    /// the HTTP session records and the shared rate limits.
    pub redis: Option<Arc<crate::state::redis::Redis>>,
}

impl Executor {
    /// An executor over `sandbox` and `gateway`, whose sessions' stashes
    /// live in a memory store bounded by `stash_limits`; validating, with
    /// the default session limits, no rate limit and no audit log until the
    /// `with_*` methods say otherwise.
    pub fn new(
        sandbox: Arc<Sandbox>,
        gateway: Arc<Gateway>,
        stash_limits: StashLimits,
    ) -> Executor {
        let sessions = SessionLimits::for_slots(sandbox.limits().max_concurrent);
        let handles = HandleKey::random();
        let tasks = crate::execution::tasks::TaskLimits::for_slots(sandbox.limits().max_concurrent);
        Executor {
            runs: Arc::new(crate::execution::tasks::Runs::new(handles.clone(), tasks)),
            sandbox,
            gateway,
            store: Arc::new(MemoryStore::new(stash_limits)),
            handles,
            sessions,
            session_cap: SessionCap::new(sessions.max_sessions),
            slot_shares: Arc::new(crate::session::SlotShares::new(
                sessions.max_concurrent_per_session,
            )),
            running: tokio_util::task::TaskTracker::new(),
            rate: None,
            validate: true,
            audit: None,
            metrics: None,
            replica: default_replica().into(),
            redis: None,
        }
    }

    /// Bounds sessions by `limits`.
    pub fn with_sessions(mut self, limits: SessionLimits) -> Executor {
        self.session_cap = SessionCap::new(limits.max_sessions);
        self.slot_shares = Arc::new(crate::session::SlotShares::new(
            limits.max_concurrent_per_session,
        ));
        self.sessions = limits;
        self
    }

    /// Seals stash handles with `key` (by default a key for this process
    /// only).
    pub fn with_handle_key(mut self, key: HandleKey) -> Executor {
        self.handles = key;
        let (limits, owner) = (*self.runs.limits(), self.runs.owner().cloned());
        self.remake_runs(limits, owner)
    }

    /// Bounds tasks and other runs by `limits`.
    pub fn with_tasks(self, limits: crate::execution::tasks::TaskLimits) -> Executor {
        let owner = self.runs.owner().cloned();
        self.remake_runs(limits, owner)
    }

    /// Names this replica of a cluster in the run ids it mints, so a
    /// follow-up that reaches another replica finds its way back.
    pub fn with_run_owner(self, name: Option<Arc<str>>) -> Executor {
        let limits = *self.runs.limits();
        self.remake_runs(limits, name)
    }

    /// The builders' one way to change what runs are made with. The
    /// builders run before the executor serves (the run table is empty),
    /// so a new table loses nothing.
    fn remake_runs(
        mut self,
        limits: crate::execution::tasks::TaskLimits,
        owner: Option<Arc<str>>,
    ) -> Executor {
        self.runs = Arc::new(
            crate::execution::tasks::Runs::new(self.handles.clone(), limits).owned_by(owner),
        );
        self
    }

    /// Records every execution in `log`.
    pub fn with_audit(mut self, log: Option<Arc<crate::audit::AuditLog>>) -> Executor {
        self.audit = log;
        self
    }

    /// Turns the static validator on or off. Off, the sandbox's own
    /// hardening is the only layer; it is meant for testing that layer.
    pub fn with_validation(mut self, on: bool) -> Executor {
        self.validate = on;
        self
    }

    /// Limits executions to `per_minute` across all sessions, or, with
    /// `per_subject`, to `per_minute` for each authenticated subject
    /// (`[auth] rate_limit_scope = "subject"`).
    pub fn with_rate_limit(
        mut self,
        per_minute: Option<std::num::NonZeroU32>,
        per_subject: bool,
    ) -> Executor {
        const WHAT: &str = "sandbox.max_executions_per_minute";
        self.rate = per_minute.map(|n| match per_subject {
            true => crate::policy::RateLimit::per_key(n, WHAT),
            false => crate::policy::RateLimit::new(n, WHAT),
        });
        self
    }

    /// Names this gateway `replica` in the audit lines.
    pub fn with_replica(mut self, replica: &str) -> Executor {
        self.replica = replica.into();
        self
    }

    /// Keeps state in `redis` (when `Some`): the stashes, bounded by
    /// `stash_limits`, and the rate limits set so far (the executions' and
    /// every server's), shared with every gateway using the same Redis.
    pub fn with_redis(
        mut self,
        redis: Option<Arc<crate::state::redis::Redis>>,
        stash_limits: StashLimits,
    ) -> Executor {
        let Some(redis) = redis else {
            return self;
        };
        self.store = Arc::new(crate::state::RedisStore::new(redis.clone(), stash_limits));
        let servers = self
            .gateway
            .servers()
            .filter_map(|s| s.guards.rate.as_ref());
        for rate in self.rate.iter().chain(servers) {
            rate.share(&redis);
        }
        self.redis = Some(redis);
        self
    }

    /// How long an execution admitted now may still take: its waits for a
    /// slot of its session and a slot of the sandbox, its time limit, and a
    /// second for validation and answering.
    /// (A wait for servers still starting up is not counted: shutting down
    /// right after start-up should not take half a minute.)
    pub fn drain_grace(&self) -> std::time::Duration {
        let limits = self.sandbox.limits();
        limits.max_queue_wait * 2 + limits.timeout + std::time::Duration::from_secs(1)
    }

    /// Stops taking executions and waits for the running ones, at most
    /// [`Executor::drain_grace`].
    pub async fn drain(&self) {
        self.running.close();
        let grace = self.drain_grace();
        if tokio::time::timeout(grace, self.running.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "executions still running after {} s; ending them",
                grace.as_secs_f64()
            );
        }
    }
}

/// Longest `replica`, in bytes, outside a cluster: 128, room for any host
/// name or pod name; it is written in every audit line.
pub const MAX_REPLICA_BYTES: usize = 128;

/// The host's name, as the default replica name, else `"quickforge"`.
pub fn default_replica() -> String {
    gethostname::gethostname()
        .into_string()
        .ok()
        .filter(|h| !h.is_empty() && h.len() <= MAX_REPLICA_BYTES)
        .unwrap_or_else(|| "quickforge".into())
}
