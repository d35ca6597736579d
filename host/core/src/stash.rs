//! The rules of one stash, which every backend applies before it stores
//! anything (natively memory and Redis, on the edge `wasi:keyvalue` or one
//! request's map), with the refusals a script sees whichever holds it.
//!
//! What a backend adds (eviction under gateway-wide pressure, atomicity)
//! stays with the backend; what one stash may hold is decided here.

use std::time::Duration;

use crate::code::ErrorCode;
use crate::error::{ForgeError, preview};

pub use quickforge_filters::text::{MAX_STASH_KEY_LEN, is_stash_key};

/// The bounds of one stash. The defaults are the documented defaults of
/// `[sandbox.stash]` in forge.toml, which the edge uses as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StashRules {
    /// Most keys alive at once in one stash. 256: a stash is a scratchpad
    /// for a few intermediate results, not a database.
    pub max_keys: usize,
    /// Largest value, as JSON bytes. 1 MiB: the same as the largest tool
    /// argument, so anything a script can send it can also keep.
    pub max_value_size: usize,
    /// All keys and values of one stash together, in bytes. 16 MiB bounds
    /// what one client can hold.
    pub max_total_size: usize,
    /// Lifetime of a value stored without `ttl`, seconds. One hour: long
    /// enough for a working session, short enough that forgotten data goes
    /// away.
    pub default_ttl_secs: u64,
    /// Longest `ttl` a script may ask for, seconds. 24 hours: a stash is
    /// scratch space between executions, not storage.
    pub max_ttl_secs: u64,
}

impl StashRules {
    /// The documented defaults (see each field), as a constant for the
    /// edge, which has no configuration file.
    pub const DEFAULT: StashRules = StashRules {
        max_keys: 256,
        max_value_size: 1024 * 1024,
        max_total_size: 16 * 1024 * 1024,
        default_ttl_secs: 3600,
        max_ttl_secs: 24 * 3600,
    };
}

impl Default for StashRules {
    fn default() -> Self {
        StashRules::DEFAULT
    }
}

/// What one entry costs against `max_total_size`: its key and its JSON.
pub fn cost(key: &str, json: &str) -> usize {
    key.len() + json.len()
}

/// Keys are 1 to [`MAX_STASH_KEY_LEN`] bytes of `A-Z a-z 0-9 _ - . : /`:
/// safe to log, to show a model, and to scope by prefix.
pub fn check_key(key: &str) -> Result<(), ForgeError> {
    if is_stash_key(key) {
        return Ok(());
    }
    Err(ForgeError::new(
        ErrorCode::InvalidStashKey,
        format!(
            "invalid stash key {:?}: use 1 to {MAX_STASH_KEY_LEN} characters of A-Z a-z 0-9 _ - . : /",
            preview(key)
        ),
    ))
}

impl StashRules {
    /// The checks of a put that need no state: the key, the value's size,
    /// the TTL (defaulted when `None`). Returns the TTL to store with.
    pub fn check_put(
        &self,
        key: &str,
        json: &str,
        ttl: Option<Duration>,
    ) -> Result<Duration, ForgeError> {
        check_key(key)?;
        if json.len() > self.max_value_size {
            return Err(ForgeError::new(
                ErrorCode::StashValueTooLarge,
                format!(
                    "stash value for {:?} is {} bytes of JSON, over the {}-byte limit",
                    preview(key),
                    json.len(),
                    self.max_value_size
                ),
            )
            .suggest("store a smaller value, or split it across keys"));
        }
        let max_ttl = Duration::from_secs(self.max_ttl_secs);
        let ttl = ttl.unwrap_or(Duration::from_secs(self.default_ttl_secs));
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
        Ok(ttl)
    }

    /// The caps of one stash for a put of `size` bytes (see [`cost`]) into
    /// a stash holding `keys` live keys of `bytes` bytes in total, where
    /// `replaced` is the cost of the live entry under the same key, if any.
    /// Returns the stash's size after the put.
    pub fn check_caps(
        &self,
        keys: usize,
        bytes: usize,
        replaced: Option<usize>,
        size: usize,
    ) -> Result<usize, ForgeError> {
        debug_assert!(
            replaced.unwrap_or(0) <= bytes,
            "a replaced entry is part of its stash's size"
        );
        if replaced.is_none() && keys >= self.max_keys {
            return Err(self.keys_full());
        }
        let after = bytes - replaced.unwrap_or(0).min(bytes) + size;
        if after > self.max_total_size {
            return Err(self.bytes_full(size));
        }
        Ok(after)
    }

    /// The stash already holds `max_keys` keys: only deleting keys helps.
    pub fn keys_full(&self) -> ForgeError {
        ForgeError::new(
            ErrorCode::StashFull,
            format!(
                "the stash already holds its limit of {} keys",
                self.max_keys
            ),
        )
        .suggest("delete keys you no longer need with forge.stash.delete")
    }

    /// Storing `size` more bytes would put the stash over `max_total_size`.
    pub fn bytes_full(&self, size: usize) -> ForgeError {
        ForgeError::new(
            ErrorCode::StashFull,
            format!(
                "storing {} more bytes would put the stash over its {}-byte limit",
                size, self.max_total_size
            ),
        )
        .suggest("delete keys you no longer need with forge.stash.delete")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::Code;

    fn code(e: ForgeError) -> Code {
        e.code
    }

    #[test]
    fn puts_are_checked_for_key_size_and_ttl() {
        let r = StashRules {
            max_value_size: 10,
            max_ttl_secs: 60,
            default_ttl_secs: 30,
            ..StashRules::default()
        };
        assert_eq!(r.check_put("k", "1", None), Ok(Duration::from_secs(30)));
        assert_eq!(
            r.check_put("k", "1", Some(Duration::from_secs(60))),
            Ok(Duration::from_secs(60))
        );
        let e = r.check_put("k", "12345678901", None).unwrap_err();
        assert_eq!(e.code, Code::Known(ErrorCode::StashValueTooLarge));
        assert_eq!(
            e.message,
            "stash value for \"k\" is 11 bytes of JSON, over the 10-byte limit"
        );
        let e = r
            .check_put("k", "1", Some(Duration::from_secs(61)))
            .unwrap_err();
        assert_eq!(e.code, Code::Known(ErrorCode::StashTtlTooLong));
        assert_eq!(e.message, "ttl of 61s is over the 60s maximum");
        let e = r.check_put("a b", "1", None).unwrap_err();
        assert_eq!(code(e), Code::Known(ErrorCode::InvalidStashKey));
    }

    #[test]
    fn an_invalid_key_is_quoted_short() {
        let e = check_key(&"ключ".repeat(1000)).unwrap_err();
        assert!(e.message.len() < 400, "{}", e.message);
        assert!(e.message.contains('…'));
    }

    #[test]
    fn caps_count_keys_and_bytes_and_let_a_replacement_through() {
        let r = StashRules {
            max_keys: 2,
            max_total_size: 100,
            ..StashRules::default()
        };
        assert_eq!(r.check_caps(1, 40, None, 10), Ok(50));
        let e = r.check_caps(2, 40, None, 10).unwrap_err();
        assert_eq!(e.message, "the stash already holds its limit of 2 keys");
        // replacing a key at the key limit is fine, and frees its old bytes
        assert_eq!(r.check_caps(2, 95, Some(30), 30), Ok(95));
        let e = r.check_caps(1, 95, None, 10).unwrap_err();
        assert_eq!(
            e.message,
            "storing 10 more bytes would put the stash over its 100-byte limit"
        );
        assert_eq!(e.code, Code::Known(ErrorCode::StashFull));
        assert!(!e.retryable, "only deleting keys helps");
    }
}
