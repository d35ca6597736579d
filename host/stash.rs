//! The session stash: a small JSON key-value store that outlives one
//! execution. It is the only channel from one run to the next; the gateway
//! keeps one per client session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use tokio::time::Instant;

use crate::error::{ErrorCode, ForgeError, preview};

/// Bounds of one stash. Every value is a documented default of
/// `[sandbox.stash]` in forge.toml.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StashLimits {
    /// Most keys alive at once. 256: a stash is a scratchpad for a few
    /// intermediate results, not a database.
    pub max_keys: usize,
    /// Largest value, as JSON bytes. 1 MiB: the same as the largest tool
    /// argument, so anything a script can send it can also keep.
    pub max_value_size: usize,
    /// All values together, as JSON bytes. 16 MiB bounds the gateway's memory
    /// per session.
    pub max_total_size: usize,
    /// Lifetime of a value stored without `ttl`. One hour: long enough for a
    /// working session, short enough that forgotten data goes away.
    pub default_ttl_secs: u64,
    /// Longest `ttl` a script may ask for. 24 hours.
    pub max_ttl_secs: u64,
}

impl Default for StashLimits {
    fn default() -> Self {
        StashLimits {
            max_keys: 256,
            max_value_size: 1024 * 1024,
            max_total_size: 16 * 1024 * 1024,
            default_ttl_secs: 3600,
            max_ttl_secs: 24 * 3600,
        }
    }
}

/// Largest `max_ttl_secs` accepted: 30 days. A stash is session scratch
/// space, not storage.
pub const MAX_TTL_SECS: u64 = 30 * 24 * 3600;

/// Longest key, in bytes. Keys are names, not data.
pub const MAX_KEY_LEN: usize = 256;

struct Entry {
    json: String,
    expires: Instant,
}

/// Where an entry lives: the public space (`None`) or the space of one
/// strict server group. An execution locked to a strict group writes into
/// that group's space, and reads its own group's space before the public
/// one; entries of other groups are invisible to it, and group entries are
/// invisible to executions not locked to that group. The stash so obeys
/// the same data-flow policy as tool calls.
type Space = Option<Arc<str>>;

/// A session's stash. Thread-safe; expired entries are dropped lazily.
pub struct Stash {
    limits: StashLimits,
    entries: Mutex<HashMap<(Space, String), Entry>>,
}

impl Stash {
    /// An empty stash with `limits`.
    pub fn new(limits: StashLimits) -> Self {
        Stash {
            limits,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Stores `json` under `key` for `ttl` (or the default TTL), in the
    /// space of `group` (the strict group the execution is locked to).
    pub fn put(
        &self,
        group: Option<&Arc<str>>,
        key: &str,
        json: String,
        ttl: Option<Duration>,
    ) -> Result<(), ForgeError> {
        check_key(key)?;
        if json.len() > self.limits.max_value_size {
            return Err(ForgeError::new(
                ErrorCode::StashValueTooLarge,
                format!(
                    "stash value for {:?} is {} bytes of JSON, over the {}-byte limit",
                    preview(key),
                    json.len(),
                    self.limits.max_value_size
                ),
            )
            .suggest("store a smaller value, or split it across keys"));
        }
        let max_ttl = Duration::from_secs(self.limits.max_ttl_secs);
        let ttl = ttl.unwrap_or(Duration::from_secs(self.limits.default_ttl_secs));
        if ttl > max_ttl {
            return Err(ForgeError::new(
                ErrorCode::StashTtlTooLong,
                format!(
                    "ttl of {}s is over the {}s maximum",
                    ttl.as_secs(),
                    max_ttl.as_secs()
                ),
            ));
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|_, e| e.expires > now);
        let slot = (group.cloned(), key.to_string());
        let replaced = entries.get(&slot).map_or(0, |e| e.json.len());
        if !entries.contains_key(&slot) && entries.len() >= self.limits.max_keys {
            return Err(ForgeError::new(
                ErrorCode::StashFull,
                format!(
                    "the stash already holds its limit of {} keys",
                    self.limits.max_keys
                ),
            )
            .suggest("delete keys you no longer need with forge.stash.delete"));
        }
        let total: usize = entries.values().map(|e| e.json.len()).sum::<usize>() - replaced;
        if total + json.len() > self.limits.max_total_size {
            return Err(ForgeError::new(
                ErrorCode::StashFull,
                format!(
                    "storing {} more bytes would put the stash over its {}-byte limit",
                    json.len(),
                    self.limits.max_total_size
                ),
            )
            .suggest("delete keys you no longer need with forge.stash.delete"));
        }
        entries.insert(
            slot,
            Entry {
                json,
                expires: now + ttl,
            },
        );
        Ok(())
    }

    /// The JSON under `key`, if present and not expired: from `group`'s
    /// space first, then the public one.
    pub fn get(&self, group: Option<&Arc<str>>, key: &str) -> Result<Option<String>, ForgeError> {
        check_key(key)?;
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        Ok(visible(group, key)
            .find_map(|slot| entries.get(&slot).filter(|e| e.expires > now))
            .map(|e| e.json.clone()))
    }

    /// Removes `key` (the entry [`Stash::get`] would return); whether a
    /// live entry was there.
    pub fn delete(&self, group: Option<&Arc<str>>, key: &str) -> Result<bool, ForgeError> {
        check_key(key)?;
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        for slot in visible(group, key) {
            if let Some(e) = entries.remove(&slot)
                && e.expires > now
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every live key visible from `group`'s space, sorted.
    pub fn keys(&self, group: Option<&Arc<str>>) -> Vec<String> {
        let now = Instant::now();
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut keys: Vec<String> = entries
            .iter()
            .filter(|((space, _), e)| {
                e.expires > now && (space.is_none() || space.as_ref() == group)
            })
            .map(|((_, k), _)| k.clone())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// The slots `key` may be read from by an execution locked to `group`:
/// the group's own, then the public one.
fn visible(group: Option<&Arc<str>>, key: &str) -> impl Iterator<Item = (Space, String)> {
    group
        .map(|g| (Some(g.clone()), key.to_string()))
        .into_iter()
        .chain(std::iter::once((None, key.to_string())))
}

impl Default for Stash {
    fn default() -> Self {
        Stash::new(StashLimits::default())
    }
}

/// Keys are 1 to [`MAX_KEY_LEN`] bytes of `A-Z a-z 0-9 _ - . : /`: safe to
/// log, to show a model, and to scope by prefix.
fn check_key(key: &str) -> Result<(), ForgeError> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:/".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ForgeError::new(
            ErrorCode::InvalidStashKey,
            format!(
                "invalid stash key {key:?}: use 1 to {MAX_KEY_LEN} characters of A-Z a-z 0-9 _ - . : /"
            ),
        ))
    }
}
