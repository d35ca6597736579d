//! rmcp's [`SessionStore`] in Redis: the `initialize` of every 2025-era
//! streamable-HTTP session, so that a replica that never saw the session
//! can restore it (rmcp replays the `initialize` on a fresh server) when a
//! load balancer sends the client elsewhere. A record lives as long as a
//! session may stay idle (`[sandbox] session_idle_secs`), refreshed each
//! time a replica loads it.
//!
//! Behind `[auth]` a record also keeps the SHA-256 of the subject that
//! opened the session, and is restored for that subject only: rmcp
//! replays the `initialize` with the restoring request's credentials, so
//! without this check another subject holding a leaked session id would
//! own the restored session on a replica that had not seen it. Another
//! subject's restore finds no session (404). The HTTP session gate asks
//! [`RedisSessionStore::opened_by`] too, before any request of a session
//! this replica has not seen reaches rmcp (`session::SessionOwners`).
//!
//! A record that does not parse (written by another version) is no
//! session: the client gets 404 and opens a new one, where an error would
//! be a 500 it does not recover from.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::auth::{Subject, request_subject};
use crate::state::redis::Redis;

/// What Redis keeps of a session: rmcp's state (`S`: owned when read,
/// borrowed when written) and who opened it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Record<S> {
    /// SHA-256 (hex) of the opening subject's id; `None` without `[auth]`.
    subject: Option<String>,
    state: S,
}

/// The SHA-256 of `subject`'s id, as a [`Record`] keeps it.
fn digest(subject: &Subject) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(subject.id().as_bytes()))
}

/// The digest of the current request's subject.
fn current_subject() -> Option<String> {
    request_subject().as_ref().map(digest)
}

/// Session records under `<key_prefix>session:<id>`.
pub struct RedisSessionStore {
    redis: Arc<Redis>,
    ttl: Duration,
}

impl RedisSessionStore {
    /// Records in `redis` that expire after `ttl` without use.
    pub fn new(redis: Arc<Redis>, ttl: Duration) -> RedisSessionStore {
        RedisSessionStore { redis, ttl }
    }

    fn key(&self, id: &str) -> String {
        format!("{}session:{id}", self.redis.prefix())
    }

    fn ttl_ms(&self) -> u64 {
        (self.ttl.as_millis() as u64).max(1)
    }

    /// The record of session `id`, if there is one that parses (refreshing
    /// nothing).
    async fn record(&self, id: &str) -> Result<Option<Record<SessionState>>, SessionStoreError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.key(id));
        let json: Option<String> = self.redis.query(cmd).await?;
        Ok(json.and_then(|json| match serde_json::from_str(&json) {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::debug!("a session record that does not parse is no session: {e}");
                None
            }
        }))
    }

    /// Whether session `id` was opened by `subject`: `None` when Redis has
    /// no record of it.
    pub async fn opened_by(
        &self,
        id: &str,
        subject: &Subject,
    ) -> Result<Option<bool>, SessionStoreError> {
        let record = self.record(id).await?;
        Ok(record.map(|r| r.subject.as_deref() == Some(digest(subject).as_str())))
    }
}

#[async_trait::async_trait]
impl SessionStore for RedisSessionStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(record) = self.record(session_id).await? else {
            return Ok(None);
        };
        // Another subject's session is no session of this one's, and its
        // attempts do not keep the record alive.
        if record.subject != current_subject() {
            return Ok(None);
        }
        let mut cmd = redis::cmd("PEXPIRE");
        cmd.arg(self.key(session_id)).arg(self.ttl_ms());
        self.redis.query::<()>(cmd).await?;
        Ok(Some(record.state))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(session_id))
            .arg(serde_json::to_string(&Record {
                subject: current_subject(),
                state,
            })?)
            .arg("PX")
            .arg(self.ttl_ms());
        self.redis.query::<()>(cmd).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.key(session_id));
        self.redis.query::<()>(cmd).await?;
        Ok(())
    }
}
