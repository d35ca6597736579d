//! The stash at the edge. With `QUICKFORGE_EDGE_STASH_SECRET` configured it
//! lives in the runtime's `wasi:keyvalue/store` and belongs to a handle
//! sealed exactly as the native gateway seals them
//! (`quickforge_filters::seal`): `execute` returns the handle when the script
//! used the stash, and a later request passes it back as `stash`. Without a
//! secret it lives for one request (a handle could not be checked).
//!
//! Layout in the bucket, for a stash whose handle's random part is `<id>`:
//!
//! - `qfs/<id>`: the index, JSON `{"<key>": [expires_unix_ms, bytes], ...}`,
//!   so that `keys()` and the caps need one read;
//! - `qfs/<id>/<key>`: `<expires_unix_ms>\n<value JSON>`, so that `get`
//!   needs one read and never returns an expired value.
//!
//! The portable build (no `keyvalue` feature) has no store: a secret there
//! is a configuration problem (`config.rs`), so only the one-request stash
//! runs, and the `portable` stand-in below is never reached.
//!
//! A bucket has no TTL of its own: expired entries are dropped when their
//! stash is next written. `wasi:keyvalue/store` promises no transactions,
//! so two requests writing one stash at the same moment may each miss the
//! other's index update (last writer wins); values themselves are never
//! torn. The index is read once per request and kept in memory.

use std::collections::BTreeMap;

use std::time::Duration;

use quickforge_core::preview;
use quickforge_core::stash::{StashRules, check_key, cost};
use quickforge_filters::seal::{RANDOM_BYTES, SealKey};

use crate::bindings::exports::quickforge::sandbox::types::ForgeError as Wit;
#[cfg(feature = "keyvalue")]
use crate::bindings::wasi::keyvalue::store::{self, Bucket};
use crate::error::{ErrorCode, ForgeError};
#[cfg(not(feature = "keyvalue"))]
use portable::{self as store, Bucket};

/// The prefix of a stash handle: the native one, so a model reads both alike.
const PREFIX: &str = "qfs_";
/// One stash's bounds: the native defaults of `[sandbox.stash]`, checked by
/// the native code with the native refusals (`quickforge_core::stash`).
const RULES: StashRules = StashRules::DEFAULT;

/// One key's entry in the index: when it expires (Unix ms) and its cost
/// (key and value bytes).
type Index = BTreeMap<String, (u64, usize)>;

/// This request's stash.
pub struct Stash {
    /// The key that seals handles; `None` keeps the stash for one request.
    key: Option<SealKey>,
    /// The `wasi:keyvalue` bucket's identifier.
    bucket_name: String,
    /// The handle in use: given by the client, or minted at first use.
    handle: Option<String>,
    /// The opened bucket and the stash's index, once read.
    kept: Option<(Bucket, Index)>,
    /// The stash of one request, when none is kept.
    local: BTreeMap<String, (u64, String)>,
    /// Whether the script touched the stash (then the handle is reported).
    used: bool,
}

impl Stash {
    /// A stash sealed by `key` (none: one request only) in `bucket_name`.
    pub fn new(key: Option<SealKey>, bucket_name: String) -> Stash {
        Stash {
            key,
            bucket_name,
            handle: None,
            kept: None,
            local: BTreeMap::new(),
            used: false,
        }
    }

    /// Whether the stash outlives the request.
    pub fn kept(&self) -> bool {
        self.key.is_some()
    }

    /// Uses the stash `handle` names (execute's `stash` argument).
    pub fn open(&mut self, handle: &str) -> Result<(), String> {
        let Some(key) = &self.key else {
            return Err("this endpoint keeps no stash between requests (QUICKFORGE_EDGE_STASH_SECRET is not configured); leave `stash` out".into());
        };
        if key.open(PREFIX, handle, None).is_none() {
            return Err(format!(
                "`stash` {:?} is not a stash handle of this endpoint (altered, from another deployment, or sealed before its secret changed); pass the `stash` value of an earlier result exactly, or leave it out for a new stash",
                preview(handle)
            ));
        }
        self.handle = Some(handle.to_string());
        Ok(())
    }

    /// The handle to report: the stash's, when it is kept and was used.
    pub fn reported(&self) -> Option<String> {
        self.used.then(|| self.handle.clone()).flatten()
    }

    /// `forge.stash.put`.
    pub fn put(&mut self, key: &str, json: String, ttl: Option<u64>) -> Result<(), Wit> {
        let ttl = RULES
            .check_put(key, &json, ttl.map(Duration::from_secs))?
            .as_secs();
        let now = now_ms();
        let expires = now.saturating_add(ttl.saturating_mul(1000));
        let size = cost(key, &json);
        if self.key.is_none() {
            self.local.retain(|_, (e, _)| *e > now);
            let costs = self.local.iter().map(|(k, (_, v))| (k, cost(k, v)));
            caps(costs, key, size)?;
            self.local.insert(key.to_string(), (expires, json));
            return Ok(());
        }
        let id = self.id()?;
        let (bucket, index) = self.open_bucket()?;
        let expired: Vec<String> = index
            .iter()
            .filter(|(_, (e, _))| *e <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &expired {
            index.remove(k);
        }
        caps(index.iter().map(|(k, (_, c))| (k, *c)), key, size)?;
        let value = format!("{expires}\n{json}");
        bucket
            .set(&format!("qfs/{id}/{key}"), value.as_bytes())
            .map_err(unavailable)?;
        index.insert(key.to_string(), (expires, size));
        write_index(bucket, &id, index)?;
        for k in expired {
            // Best effort: a value left behind is expired, so never read.
            let _ = bucket.delete(&format!("qfs/{id}/{k}"));
        }
        Ok(())
    }

    /// `forge.stash.get`.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, Wit> {
        check_key(key)?;
        let now = now_ms();
        if self.key.is_none() {
            return Ok(self
                .local
                .get(key)
                .filter(|(e, _)| *e > now)
                .map(|(_, v)| v.clone()));
        }
        let id = self.id()?;
        let (bucket, _) = self.open_bucket()?;
        let Some(bytes) = bucket
            .get(&format!("qfs/{id}/{key}"))
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let text = String::from_utf8(bytes).map_err(|_| corrupt())?;
        let (expires, json) = text.split_once('\n').ok_or_else(corrupt)?;
        let expires: u64 = expires.parse().map_err(|_| corrupt())?;
        Ok((expires > now).then(|| json.to_string()))
    }

    /// `forge.stash.delete`: whether a live value was there.
    pub fn delete(&mut self, key: &str) -> Result<bool, Wit> {
        check_key(key)?;
        let now = now_ms();
        if self.key.is_none() {
            return Ok(self.local.remove(key).is_some_and(|(e, _)| e > now));
        }
        let id = self.id()?;
        let (bucket, index) = self.open_bucket()?;
        let Some((expires, _)) = index.remove(key) else {
            return Ok(false);
        };
        bucket
            .delete(&format!("qfs/{id}/{key}"))
            .map_err(unavailable)?;
        write_index(bucket, &id, index)?;
        Ok(expires > now)
    }

    /// `forge.stash.keys`: the live keys, sorted.
    pub fn keys(&mut self) -> Result<Vec<String>, Wit> {
        let now = now_ms();
        if self.key.is_none() {
            return Ok(live(self.local.iter().map(|(k, (e, _))| (k, *e)), now));
        }
        self.id()?;
        let (_, index) = self.open_bucket()?;
        Ok(live(index.iter().map(|(k, (e, _))| (k, *e)), now))
    }

    /// The random part of the stash's handle, minting a handle at first
    /// use when the client gave none.
    fn id(&mut self) -> Result<String, Wit> {
        self.used = true;
        let key = self.key.as_ref().expect("only a kept stash has an id");
        let handle = match &self.handle {
            Some(h) => h.clone(),
            None => {
                let bytes =
                    crate::bindings::wasi::random::random::get_random_bytes(RANDOM_BYTES as u64);
                let random: [u8; RANDOM_BYTES] = bytes
                    .try_into()
                    .map_err(|_| internal("the runtime's random source gave too few bytes"))?;
                let h = key.seal(PREFIX, &random, None);
                self.handle = Some(h.clone());
                h
            }
        };
        Ok(handle[PREFIX.len()..PREFIX.len() + 2 * RANDOM_BYTES].to_string())
    }

    /// The bucket and this stash's index, opened and read at first use.
    fn open_bucket(&mut self) -> Result<(&Bucket, &mut Index), Wit> {
        if self.kept.is_none() {
            let id = self.id()?;
            let bucket = store::open(&self.bucket_name).map_err(unavailable)?;
            let index = match bucket.get(&format!("qfs/{id}")).map_err(unavailable)? {
                None => Index::new(),
                Some(bytes) => serde_json::from_slice(&bytes).map_err(|_| corrupt())?,
            };
            self.kept = Some((bucket, index));
        }
        let (bucket, index) = self.kept.as_mut().expect("just set");
        Ok((bucket, index))
    }
}

/// The native caps (`StashRules::check_caps`) for adding `key` at `size`
/// bytes to a stash whose live entries cost `costs` (key → bytes).
fn caps<'a>(
    costs: impl Iterator<Item = (&'a String, usize)>,
    key: &str,
    size: usize,
) -> Result<(), ForgeError> {
    let (mut keys, mut bytes, mut replaced) = (0, 0, None);
    for (k, c) in costs {
        keys += 1;
        bytes += c;
        if k == key {
            replaced = Some(c);
        }
    }
    RULES.check_caps(keys, bytes, replaced, size).map(drop)
}

fn write_index(bucket: &Bucket, id: &str, index: &Index) -> Result<(), Wit> {
    let text = serde_json::to_vec(index).expect("an index serializes");
    bucket.set(&format!("qfs/{id}"), &text).map_err(unavailable)
}

fn live<'a>(entries: impl Iterator<Item = (&'a String, u64)>, now: u64) -> Vec<String> {
    entries
        .filter(|(_, e)| *e > now)
        .map(|(k, _)| k.clone())
        .collect()
}

/// Wall-clock time, Unix milliseconds: expiries must hold across instances.
pub(crate) fn now_ms() -> u64 {
    let t = crate::bindings::wasi::clocks::wall_clock::now();
    t.seconds * 1000 + u64::from(t.nanoseconds / 1_000_000)
}

fn unavailable(e: store::Error) -> Wit {
    let why = match e {
        store::Error::NoSuchStore => {
            "it has no such bucket (see QUICKFORGE_EDGE_STASH_BUCKET)".to_string()
        }
        store::Error::AccessDenied => "access was denied".to_string(),
        store::Error::Other(text) => text,
    };
    ForgeError::new(
        ErrorCode::StateUnavailable,
        format!("the runtime's key-value store failed: {why}"),
    )
    .into()
}

fn corrupt() -> Wit {
    internal("a stash entry in the key-value store is not in quickforge's format")
}

fn internal(message: &str) -> Wit {
    ForgeError::new(ErrorCode::Internal, message).into()
}

/// The portable build's stand-in for `wasi:keyvalue/store`: it opens
/// nothing, so the same stash code compiles in both builds.
#[cfg(not(feature = "keyvalue"))]
pub(crate) mod portable {
    #[allow(dead_code)] // the variants mirror wasi:keyvalue's
    pub enum Error {
        NoSuchStore,
        AccessDenied,
        Other(String),
    }

    pub enum Bucket {}

    pub fn open(_: &str) -> Result<Bucket, Error> {
        Err(Error::Other(
            "quickforge_edge.wasm has no key-value store; serve quickforge_edge_keyvalue.wasm"
                .into(),
        ))
    }

    impl Bucket {
        pub fn get(&self, _: &str) -> Result<Option<Vec<u8>>, Error> {
            match *self {}
        }
        pub fn set(&self, _: &str, _: &[u8]) -> Result<(), Error> {
            match *self {}
        }
        pub fn delete(&self, _: &str) -> Result<(), Error> {
            match *self {}
        }
    }
}
