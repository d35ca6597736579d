//! rmcp's [`SessionStore`] in Redis: the `initialize` of every 2025-era
//! streamable-HTTP session, so that a replica that never saw the session
//! can restore it (rmcp replays the `initialize` on a fresh server) when a
//! load balancer sends the client elsewhere. A record lives as long as a
//! session may stay idle (`[sandbox] session_idle_secs`), refreshed each
//! time a replica loads it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use super::Redis;

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
        Ok(match json {
            Some(json) => Some(serde_json::from_str(&json)?),
            None => None,
        })
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(session_id))
            .arg(serde_json::to_string(state)?)
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
