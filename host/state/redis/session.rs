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
//! subject's restore finds no session (404), as on the replica that
//! serves it, where `ForgeServer::bind` refuses it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use super::Redis;
use crate::auth::{Subject, request_subject};

/// What Redis keeps of a session: rmcp's state (`S`: owned when read,
/// borrowed when written) and who opened it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Record<S> {
    /// SHA-256 (hex) of the opening subject's id; `None` without `[auth]`.
    subject: Option<String>,
    state: S,
}

/// The SHA-256 of the current request's subject, as a [`Record`] keeps it.
fn current_subject() -> Option<String> {
    use sha2::Digest;
    request_subject().map(|s: Subject| hex::encode(sha2::Sha256::digest(s.id().as_bytes())))
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
}

#[async_trait::async_trait]
impl SessionStore for RedisSessionStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let mut cmd = redis::cmd("GETEX");
        cmd.arg(self.key(session_id)).arg("PX").arg(self.ttl_ms());
        let json: Option<String> = self.redis.query(cmd).await?;
        let Some(json) = json else {
            return Ok(None);
        };
        let record: Record<SessionState> = serde_json::from_str(&json)?;
        // Another subject's session is no session of this one's.
        Ok((record.subject == current_subject()).then_some(record.state))
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
