//! Everything a client session is, in one room: who it is (its id, the id
//! its client names it by, the authenticated subject it serves), its
//! default stash handle, its share of the execution slots, its place under
//! the cap on live sessions; and, for HTTP, the cap itself, the recency
//! eviction reads, which subject owns each session id (`owners`), and the
//! session records replicas share in Redis (`store`).
//!
//! A session is one stdio connection or one streamable-HTTP session. Over
//! HTTP, any number of clients may open sessions, so both what one session
//! may hold and how many sessions there are have bounds of their own: a
//! session runs at most `max_concurrent_per_session` executions at once (so
//! one client cannot take every slot while another waits), and the gateway
//! serves at most `max_sessions` HTTP sessions (each holds a task, buffers
//! and a stash handle).

mod cap;
mod gate;
mod owners;
mod shares;
mod store;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Subject;
use crate::error::{ErrorKind, ExecutionError};
use crate::state::{Handle, HandleKey};

pub use cap::{RETRY_AFTER_SECS, Recency, SessionCap, SessionLimits};
pub use gate::{Gate, gate};
pub use owners::SessionOwners;
pub use shares::{ConnectionId, SlotShares};
pub use store::RedisSessionStore;

/// One session's own state. Dropped with the session's server, which
/// releases its place under the cap (not its stash: the handle may live on
/// in the client).
pub struct Session {
    /// Random; names the session in the audit log until its client names
    /// it ([`Session::audit_id`]).
    pub id: Arc<str>,
    /// A random stash handle: the default stash of a session on stdio, of
    /// `quickforge run`, and of an HTTP session without `[auth]` until it
    /// names its session id (then [`Session::bind`] derives the default
    /// from the id, the same on every replica).
    pub handle: Handle,
    /// The authenticated subject the session serves, set by its first
    /// request (`None` inside: no `[auth]`).
    owner: OnceLock<Option<Subject>>,
    /// The session's default stash handle: derived from its session id,
    /// else sealed for `owner` and minted on first use.
    bound: OnceLock<Handle>,
    /// Whether the session has seen `initialize`: a session of the 2025
    /// era (or stdio), whose `mcp-session-id` rmcp routes by. A stateless
    /// request of the 2026 era never initializes, and the session id
    /// header it may carry names nothing.
    initialized: AtomicBool,
    /// The client's own name for the session (`Mcp-Session-Id`), hashed
    /// ([`client_session_digest`]), once a request of the initialized
    /// session named it.
    client_id: OnceLock<Arc<str>>,
    /// The session's own slots, used while it is its own fairness key.
    slots: Arc<Semaphore>,
    /// The slots of its fairness key when that is not the session itself
    /// (a subject, or a sessionless request's connection: see
    /// [`shares`]), and which key it is; fixed by its first request.
    shared: OnceLock<(Arc<Semaphore>, &'static str)>,
    share: usize,
    /// The session's place under `max_sessions`, once it holds one: taken
    /// at `initialize`, which only sessions of the 2025 era send (a
    /// stateless request of the 2026 era builds a server too, but is no
    /// session and takes no place).
    place: std::sync::Mutex<Option<OwnedSemaphorePermit>>,
}

impl Session {
    /// A session whose default stash handle is `handle`, running at most
    /// `share` executions at once, holding `place` under the session cap if
    /// any.
    pub fn new(handle: Handle, share: usize, place: Option<OwnedSemaphorePermit>) -> Session {
        Session {
            id: crate::audit::random_id(8).into(),
            handle,
            owner: OnceLock::new(),
            bound: OnceLock::new(),
            initialized: AtomicBool::new(false),
            client_id: OnceLock::new(),
            place: std::sync::Mutex::new(place),
            slots: Arc::new(Semaphore::new(share.max(1))),
            shared: OnceLock::new(),
            share,
        }
    }

    /// The session has answered `initialize`: it is a session of the
    /// 2025 era (or stdio), and the `mcp-session-id` its requests carry is
    /// its own.
    pub fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    /// Binds this session to `subject` (the one its request came with) on
    /// its first request, and refuses a request of another subject
    /// afterwards (a session id that leaked is of no use to anyone else).
    ///
    /// The first request of an initialized session that names its MCP
    /// session (`client_session`, the `mcp-session-id` header) also fixes
    /// the session's default stash: the handle `handles` derives from the
    /// session id for the subject ([`HandleKey::derive_for`]), the same on
    /// every replica, so a session that a load balancer moves to a replica
    /// which restores it from the shared session store keeps its stash.
    ///
    /// It also fixes the session's fairness key (see [`shares`]): the
    /// subject's share of slots from `shares` when there is a subject; the
    /// share of `connection` for a request that is no session (a stateless
    /// 2026-era request, which never initialized); else its own.
    pub fn bind(
        &self,
        subject: Option<Subject>,
        client_session: Option<&str>,
        handles: &HandleKey,
        connection: Option<ConnectionId>,
        shares: &SlotShares,
    ) -> Result<(), NotYours> {
        if *self.owner.get_or_init(|| subject.clone()) != subject {
            return Err(NotYours);
        }
        if self.shared.get().is_none() {
            let key = match (&subject, connection) {
                (Some(s), _) => Some((format!("s:{}", s.id()), "subject")),
                (None, Some(c)) if !self.initialized.load(Ordering::Acquire) => {
                    Some((format!("c:{}", c.0), "connection"))
                }
                _ => None,
            };
            if let Some((key, kind)) = key {
                let _ = self.shared.set((shares.of(&key), kind));
            }
        }
        // Only a session that initialized: rmcp routes its requests by the
        // header, so the header is its own id. A stateless 2026-era request
        // could put any session's id there.
        if self.initialized.load(Ordering::Acquire)
            && let Some(id) = client_session
        {
            if self.bound.get().is_none() {
                let _ = self.bound.set(handles.derive_for(id, self.subject_id()));
            }
            let _ = self
                .client_id
                .get_or_init(|| client_session_digest(id).into());
        }
        Ok(())
    }

    /// The subject this session serves, once bound.
    pub fn subject(&self) -> Option<&Subject> {
        self.owner.get().and_then(Option::as_ref)
    }

    /// The subject's id, for sealing and opening ids.
    pub fn subject_id(&self) -> Option<&str> {
        self.subject().map(Subject::id)
    }

    /// The session's own stash: the handle derived from the session id
    /// when the session has one (see [`Session::bind`]); otherwise (stdio,
    /// a stateless 2026-era request) without a subject the handle the
    /// session was made with, and with one a handle `handles` seals for
    /// that subject, minted on first use. Either way the subject can reach
    /// it from another session by its handle and nobody else can.
    pub fn default_handle(&self, handles: &HandleKey) -> Handle {
        self.bound
            .get_or_init(|| match self.subject() {
                None => self.handle.clone(),
                Some(s) => handles.mint_for(Some(s.id())),
            })
            .clone()
    }

    /// How the audit log names this session: the digest of the id its
    /// client knows it by ([`client_session_digest`] of `Mcp-Session-Id`),
    /// once a request named it, so an audit line joins with the client's
    /// session; the random [`Session::id`] otherwise (stdio, `quickforge
    /// run`, a stateless request).
    pub fn audit_id(&self) -> &str {
        self.client_id.get().unwrap_or(&self.id)
    }

    /// Takes a place under `cap` for this session, unless it holds one
    /// already; the message saying the gateway is full otherwise.
    pub fn take_place(&self, cap: &SessionCap) -> Result<(), String> {
        let mut place = self.place.lock().unwrap_or_else(|e| e.into_inner());
        if place.is_none() {
            *place = Some(cap.try_open()?);
        }
        Ok(())
    }

    /// One of the session's execution slots, waiting at most `wait`; a
    /// `busy` refusal when the session's other executions keep them all.
    pub async fn slot(
        &self,
        wait: Duration,
        max_concurrent: usize,
    ) -> Result<OwnedSemaphorePermit, ExecutionError> {
        let (slots, whose) = match self.shared.get() {
            Some((slots, kind)) => (slots, *kind),
            None => (&self.slots, "session"),
        };
        match tokio::time::timeout(wait, slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(ExecutionError::new(
                ErrorKind::Internal,
                "the session is closing",
            )),
            Err(_) => Err(ExecutionError::new(
                ErrorKind::Busy,
                format!(
                    "this {whose} already runs its share of {} of the gateway's {max_concurrent} execution slots (sandbox.max_concurrent_per_session, per {whose}), and none came free in {} ms; retry when one of its executions finishes",
                    self.share,
                    wait.as_millis()
                ),
            )),
        }
    }
}

/// A request named a session that another authenticated subject opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this MCP session belongs to another authenticated subject; open a session of your own")]
pub struct NotYours;

/// How the audit log names a client's session: `mcp-` and the first 16
/// hex digits (64 bits) of the SHA-256 of its `Mcp-Session-Id`. Hashed
/// because the id is what a client presents to use the session, and an
/// audit log is read by more people than the session's owner; 64 bits keep
/// collisions among the sessions of one log out of reach. To find a
/// session's lines, hash its id the same way
/// (`printf %s "$ID" | sha256sum | cut -c1-16`).
pub fn client_session_digest(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    format!("mcp-{}", &hex::encode(digest)[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fairness key each kind of request gets (see [`shares`]).
    #[test]
    fn the_fairness_key_is_the_subject_else_the_connection_of_a_sessionless_request() {
        let (key, shares) = (HandleKey::random(), SlotShares::new(2));
        let session = || Session::new(key.mint(), 2, None);
        let bound = |s: &Session, subject: Option<&str>, connection: Option<u64>| {
            s.bind(
                subject.and_then(Subject::new),
                None,
                &key,
                connection.map(ConnectionId),
                &shares,
            )
            .unwrap();
            s.shared.get().map(|(slots, kind)| (slots.clone(), *kind))
        };
        // a subject: one share across its sessions and requests
        let (a, b) = (session(), session());
        let (sa, sb) = (
            bound(&a, Some("alice"), Some(1)),
            bound(&b, Some("alice"), Some(2)),
        );
        assert!(Arc::ptr_eq(&sa.as_ref().unwrap().0, &sb.unwrap().0));
        assert_eq!(sa.unwrap().1, "subject");
        // no subject: sessionless requests on one connection share
        let (c, d) = (session(), session());
        let (sc, sd) = (bound(&c, None, Some(7)), bound(&d, None, Some(7)));
        assert!(Arc::ptr_eq(&sc.as_ref().unwrap().0, &sd.unwrap().0));
        assert_eq!(sc.unwrap().1, "connection");
        // an initialized session without a subject is its own key; so is stdio
        let e = session();
        e.mark_initialized();
        assert!(bound(&e, None, Some(7)).is_none());
        assert!(bound(&session(), None, None).is_none());
    }
}
