//! A per-minute rate limit shared through Redis: the same GCRA quota as
//! the local limiter ([`crate::policy::RateLimit`]: `per_minute` a minute,
//! bursts of `per_minute / 6`), decided by one Lua script on Redis's clock,
//! so N replicas together admit what one would, not N times as much.
//!
//! Hand-written (a ten-line script, `gcra.lua`) because governor keeps its
//! state in process memory, and redis-cell, the Redis module that does
//! GCRA, is not part of Debian's Redis; the algorithm is governor's, so the
//! shared limit admits exactly what the local one does.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use super::Redis;
use crate::error::ForgeError;

/// `allow-oom`: a full Redis must not stop admission (the key is a few
/// bytes, rewritten in place).
static GCRA: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(concat!("#!lua flags=allow-oom\n", include_str!("gcra.lua")))
});

/// One limit's state in Redis, under `<key_prefix>rate:<what>`.
#[derive(Debug)]
pub struct SharedRate {
    redis: Arc<Redis>,
    key: String,
    interval_us: u64,
    burst: u32,
}

impl SharedRate {
    /// The limit named `what` (`servers.NAME.calls_per_minute`), admitting
    /// `per_minute` a minute in bursts of `burst`.
    pub fn new(redis: Arc<Redis>, what: &str, per_minute: u32, burst: u32) -> SharedRate {
        SharedRate {
            key: format!("{}rate:{what}", redis.prefix()),
            redis,
            interval_us: 60_000_000 / u64::from(per_minute.max(1)),
            burst: burst.max(1),
        }
    }

    /// Takes one event of `key` (a subject, for a per-subject limit; its
    /// budget lives under a hash of it, so Redis holds no subject names):
    /// `Ok(None)` admitted, `Ok(Some(wait))` refused until `wait` has
    /// passed, `Err` when Redis does not answer.
    pub async fn take(&self, key: Option<&str>) -> Result<Option<Duration>, ForgeError> {
        let redis_key = match key {
            Some(subject) => format!(
                "{}:{}",
                self.key,
                crate::auth::Subject::fingerprint(subject)
            ),
            None => self.key.clone(),
        };
        let wait_us: u64 = self
            .redis
            .eval(
                &GCRA,
                &[&redis_key],
                vec![super::arg(self.interval_us), super::arg(self.burst)],
            )
            .await?;
        Ok((wait_us > 0).then(|| Duration::from_micros(wait_us)))
    }
}
