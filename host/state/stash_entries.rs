//! One stash: one handle's entries in one space, with the bytes they cost
//! the caps.

use std::collections::HashMap;

use tokio::time::Instant;

/// One value and when it expires.
pub(super) struct Entry {
    pub(super) json: String,
    pub(super) expires: Instant,
}

/// What an entry costs the caps: its key and its value.
pub(super) use quickforge_core::stash::cost;

/// One stash: one handle's entries in one space.
pub(super) struct StashEntries {
    pub(super) entries: HashMap<String, Entry>,
    /// Bytes of keys and values of `entries`.
    pub(super) bytes: usize,
    /// The last operation of this space on it (see `caps` for why reads
    /// from another space do not count).
    pub(super) last_used: Instant,
}

impl StashEntries {
    pub(super) fn new(now: Instant) -> StashEntries {
        StashEntries {
            entries: HashMap::new(),
            bytes: 0,
            last_used: now,
        }
    }

    /// Drops expired entries; the bytes freed.
    pub(super) fn purge(&mut self, now: Instant) -> usize {
        let mut freed = 0;
        self.entries.retain(|k, e| {
            let live = e.expires > now;
            if !live {
                freed += cost(k, &e.json);
            }
            live
        });
        self.bytes -= freed;
        freed
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn live(&self, key: &str, now: Instant) -> Option<&str> {
        self.entries
            .get(key)
            .filter(|e| e.expires > now)
            .map(|e| e.json.as_str())
    }

    pub(super) fn live_keys(&self, now: Instant) -> impl Iterator<Item = &String> {
        self.entries
            .iter()
            .filter(move |(_, e)| e.expires > now)
            .map(|(k, _)| k)
    }
}
