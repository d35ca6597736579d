//! The memory backend of [`StateStore`]: every space's [`Pool`] of stashes
//! behind one mutex, so each operation is one atomic step. Expired entries
//! are dropped lazily: when their stash is written, and across a space when
//! it runs out of room.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::caps::Pool;
use super::stash_entries::{Entry, StashEntries, cost};
use super::{At, Space, StashLimits, StateStore, Usage, check_key, check_put};
use crate::error::ForgeError;

/// Stashes in this process's memory, lost when it exits.
pub struct MemoryStore {
    limits: StashLimits,
    pools: Mutex<HashMap<Space, Pool>>,
}

impl MemoryStore {
    /// An empty store enforcing `limits`.
    pub fn new(limits: StashLimits) -> MemoryStore {
        MemoryStore {
            limits,
            pools: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Space, Pool>> {
        self.pools.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl StateStore for MemoryStore {
    async fn put(
        &self,
        at: At<'_>,
        key: &str,
        json: String,
        ttl: Option<Duration>,
    ) -> Result<(), ForgeError> {
        let ttl = check_put(&self.limits, key, &json, ttl)?;
        let now = Instant::now();
        let mut pools = self.lock();
        let pool = pools.entry(at.space.cloned()).or_default();
        // The stash being written leaves the pool while the caps are
        // checked, so eviction cannot pick it; it goes back unless empty.
        let taken = pool.buckets.remove(at.handle);
        let new_bucket = taken.is_none();
        let mut bucket = taken.unwrap_or_else(|| StashEntries::new(now));
        pool.bytes -= bucket.bytes;
        bucket.purge(now);
        let result = (|| {
            let replaced = bucket.entries.get(key).map(|e| cost(key, &e.json));
            let size = cost(key, &json);
            let after = self.limits.rules().check_caps(
                bucket.entries.len(),
                bucket.bytes,
                replaced,
                size,
            )?;
            pool.make_room(after, new_bucket, &self.limits, now)?;
            bucket.bytes = after;
            bucket.entries.insert(
                key.to_string(),
                Entry {
                    json,
                    expires: now + ttl,
                },
            );
            bucket.last_used = now;
            Ok(())
        })();
        if !bucket.entries.is_empty() {
            pool.bytes += bucket.bytes;
            pool.buckets.insert(at.handle.clone(), bucket);
        }
        result
    }

    async fn get(&self, at: At<'_>, key: &str) -> Result<Option<String>, ForgeError> {
        check_key(key)?;
        let now = Instant::now();
        let mut pools = self.lock();
        if let Some(bucket) = pools
            .get_mut(&at.space.cloned())
            .and_then(|p| p.buckets.get_mut(at.handle))
        {
            bucket.last_used = now;
            if let Some(json) = bucket.live(key, now) {
                return Ok(Some(json.to_string()));
            }
        }
        if at.space.is_none() {
            return Ok(None);
        }
        // A strict group reads the public space without touching it.
        Ok(pools
            .get(&None)
            .and_then(|p| p.buckets.get(at.handle))
            .and_then(|b| b.live(key, now))
            .map(str::to_string))
    }

    async fn delete(&self, at: At<'_>, key: &str) -> Result<bool, ForgeError> {
        check_key(key)?;
        let now = Instant::now();
        let mut pools = self.lock();
        let Some(pool) = pools.get_mut(&at.space.cloned()) else {
            return Ok(false);
        };
        let Some(bucket) = pool.buckets.get_mut(at.handle) else {
            return Ok(false);
        };
        bucket.last_used = now;
        let Some(e) = bucket.entries.remove(key) else {
            return Ok(false);
        };
        let freed = cost(key, &e.json);
        bucket.bytes -= freed;
        pool.bytes -= freed;
        if bucket.entries.is_empty() {
            pool.buckets.remove(at.handle);
        }
        Ok(e.expires > now)
    }

    async fn keys(&self, at: At<'_>) -> Result<Vec<String>, ForgeError> {
        let now = Instant::now();
        let mut pools = self.lock();
        let mut keys = Vec::new();
        if let Some(bucket) = pools
            .get_mut(&at.space.cloned())
            .and_then(|p| p.buckets.get_mut(at.handle))
        {
            bucket.last_used = now;
            keys.extend(bucket.live_keys(now).cloned());
        }
        if at.space.is_some()
            && let Some(public) = pools.get(&None).and_then(|p| p.buckets.get(at.handle))
        {
            keys.extend(public.live_keys(now).cloned());
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    async fn usage(&self) -> Usage {
        let pools = self.lock();
        pools.values().fold(Usage::default(), |u, p| Usage {
            stashes: u.stashes + p.buckets.len(),
            bytes: u.bytes + p.bytes,
        })
    }
}

#[cfg(test)]
pub(super) mod tests;
