//! The gateway's caps on state, and what happens under pressure.
//!
//! **Caps.** Each space (the public one, each strict group) has its own
//! share of the gateway: at most `max_stashes` stashes and `max_gateway_size`
//! bytes of keys and values across every handle. The shares do not borrow
//! from one another. That costs memory headroom (the gateway holds at most
//! (1 + strict groups) × `max_gateway_size`), and buys isolation: a write in
//! one space can neither be refused nor evict anything because of another
//! space, so a script locked to one strict group cannot sense another
//! group's fill level through the gateway's caps.
//!
//! **Policy under pressure.** When a write would take its space over a cap,
//! the store first drops expired entries of that space, then evicts whole
//! stashes of that space, least recently used first, among those left alone
//! for at least `evict_idle_secs` — never the stash being written, never a
//! stash of another space. When that is not enough, the write is refused
//! with `STASH_FULL`, marked retryable: the stashes in the way are in use
//! now and become evictable as they go idle. Recency counts operations in a
//! stash's own space only: a strict-group script reading the public space
//! does not refresh public stashes (which would change what is evicted
//! there).
//!
//! The LRU victim is found by a scan of the space's stashes: at most
//! `max_stashes` (128 by default), and only when the space is full, so a
//! linked list kept in order on every operation would cost more than it
//! saves.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::stash_entries::StashEntries;
use super::{Handle, StashLimits};
use crate::error::{ErrorCode, ForgeError};

/// Every stash of one space, across the gateway, and their total size.
#[derive(Default)]
pub(super) struct Pool {
    pub(super) buckets: HashMap<Handle, StashEntries>,
    /// Bytes of keys and values of every bucket (expired entries included
    /// until dropped).
    pub(super) bytes: usize,
}

impl Pool {
    /// Makes room in this space for a stash of `bytes` (the one being
    /// written, taken out of the pool meanwhile) and, when `new_bucket`, for
    /// one more stash. Drops expired entries, then evicts idle stashes,
    /// least recently used first.
    pub(super) fn make_room(
        &mut self,
        bytes: usize,
        new_bucket: bool,
        limits: &StashLimits,
        now: Instant,
    ) -> Result<(), ForgeError> {
        let fits = |pool: &Pool| {
            pool.bytes + bytes <= limits.max_gateway_size
                && (!new_bucket || pool.buckets.len() < limits.max_stashes)
        };
        if fits(self) {
            return Ok(());
        }
        self.purge(now);
        let idle = Duration::from_secs(limits.evict_idle_secs);
        while !fits(self) {
            let victim = self
                .buckets
                .iter()
                .filter(|(_, b)| now.saturating_duration_since(b.last_used) >= idle)
                .min_by_key(|(_, b)| b.last_used)
                .map(|(h, _)| h.clone());
            let Some(victim) = victim else {
                return Err(self.full(bytes, new_bucket, limits));
            };
            if let Some(b) = self.buckets.remove(&victim) {
                self.bytes -= b.bytes;
                tracing::info!(
                    freed = b.bytes,
                    "stash space full: evicted the least recently used idle stash"
                );
            }
        }
        Ok(())
    }

    /// Drops expired entries of every stash, and stashes left empty.
    fn purge(&mut self, now: Instant) {
        let mut freed = 0;
        self.buckets.retain(|_, b| {
            freed += b.purge(now);
            !b.is_empty()
        });
        self.bytes -= freed;
    }

    /// The retryable refusal when only stashes in use stand in the way.
    fn full(&self, bytes: usize, new_bucket: bool, limits: &StashLimits) -> ForgeError {
        space_full(
            new_bucket && self.buckets.len() >= limits.max_stashes,
            bytes,
            limits,
        )
    }
}

/// The refusals every backend words alike, so a script sees the same
/// `STASH_FULL` whichever store holds its stash (the per-stash ones are
/// `quickforge-core`'s, shared with the edge).
///
/// The stash already holds `max_keys` keys: only deleting keys helps.
pub(super) fn keys_full(limits: &StashLimits) -> ForgeError {
    limits.rules().keys_full()
}

/// Storing `size` more bytes would put the stash over `max_total_size`.
pub(super) fn bytes_full(size: usize, limits: &StashLimits) -> ForgeError {
    limits.rules().bytes_full(size)
}

/// The space is at one of its caps (`stashes`: the count, else the bytes
/// of a stash of `bytes`) and only stashes used in the last
/// `evict_idle_secs` stand in the way: retryable.
pub(super) fn space_full(stashes: bool, bytes: usize, limits: &StashLimits) -> ForgeError {
    let message = if stashes {
        format!(
            "the gateway already keeps its limit of {} stashes in this space, all used in the last {} s",
            limits.max_stashes, limits.evict_idle_secs
        )
    } else {
        format!(
            "a stash of {bytes} bytes would put this space's stashes across the gateway over their {}-byte limit, and every other stash was used in the last {} s",
            limits.max_gateway_size, limits.evict_idle_secs
        )
    };
    ForgeError::new(ErrorCode::StashFull, message)
        .retryable()
        .suggest(format!(
            "retry in {} s, when idle stashes may be evicted, or store less",
            limits.evict_idle_secs.max(1)
        ))
}
