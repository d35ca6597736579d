//! Sealed ids: a random part and an HMAC-SHA256 tag under a secret key, so
//! that an id a client carries back (a stash handle, a task id) is checked
//! before anything is looked up. Pure logic, shared by the native gateway
//! (`host/state/handle.rs`, which adds where keys and randomness come from)
//! and the edge provider (`edge/provider`), so a handle reads and opens the
//! same way on both.
//!
//! An id reads `prefix` + 32 lowercase hex digits (128 random bits) + 24
//! hex digits of tag (the HMAC of prefix and random part, and of the
//! subject when there is one, cut to 96 bits).

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Bytes of randomness in an id. 16 (128 bits): unguessable, as a bearer
/// capability must be once clients carry ids themselves.
pub const RANDOM_BYTES: usize = 16;

/// Hex digits of the random part.
pub const ID_HEX: usize = 2 * RANDOM_BYTES;

/// Hex digits of the tag: 96 bits. A forger must guess it outright (the
/// tag is checked before any lookup, and every failure looks the same), so
/// 2^96 tries per id; longer would only cost the model more tokens each
/// time it carries the id.
pub const TAG_HEX: usize = 24;

/// Shortest configured secret, in bytes: 16 bytes is 128 bits if random;
/// anything shorter is a password a forger could guess offline from one
/// sealed id.
pub const MIN_SECRET_BYTES: usize = 16;

/// A key that seals and opens ids.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    /// Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// A key of exactly these bytes (random ones, or ones kept on disk).
    pub fn from_bytes(key: [u8; 32]) -> SealKey {
        SealKey(key)
    }

    /// A key derived from a configured secret of any length (SHA-256 of
    /// it: the HMAC needs a fixed-size key, and a passphrase works too).
    pub fn from_secret(secret: &str) -> SealKey {
        SealKey(Sha256::digest(secret.as_bytes()).into())
    }

    /// The key's bytes, to keep it on disk.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The tag of the id `body` (prefix and random part) for `subject`.
    /// Without a subject the tag covers the id alone; with one, a NUL and
    /// the subject follow: the id is of fixed length and holds no NUL, so
    /// no (id, subject) pair reads as another.
    fn tag(&self, body: &str, subject: Option<&str>) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key size");
        mac.update(body.as_bytes());
        if let Some(subject) = subject {
            mac.update(b"\0");
            mac.update(subject.as_bytes());
        }
        mac
    }

    /// `prefix` + the random part `random` + the tag of both for `subject`.
    /// The tag covers the prefix too: an id of one kind never opens as
    /// another.
    pub fn seal(&self, prefix: &str, random: &[u8; RANDOM_BYTES], subject: Option<&str>) -> String {
        let id = hex::encode(random);
        let tag = hex::encode(
            self.tag(&format!("{prefix}{id}"), subject)
                .finalize()
                .into_bytes(),
        );
        format!("{prefix}{id}{}", &tag[..TAG_HEX])
    }

    /// The random part derived from `seed` under a domain `label`: the same
    /// seed gives the same part under the same key (on any replica, after a
    /// restart), unpredictable without the key, and never equal to the tag
    /// of anything.
    pub fn derive(&self, label: &str, seed: &str) -> [u8; RANDOM_BYTES] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key size");
        mac.update(label.as_bytes());
        mac.update(b"\0");
        mac.update(seed.as_bytes());
        let mut out = [0; RANDOM_BYTES];
        out.copy_from_slice(&mac.finalize().into_bytes()[..RANDOM_BYTES]);
        out
    }

    /// The random part of `text` (its 32 hex digits) if this key sealed it
    /// as an id of the kind `prefix` for `subject` (not for another
    /// subject, nor for none); the tag is checked in constant time, and
    /// every failure is the same `None`.
    pub fn open<'t>(&self, prefix: &str, text: &'t str, subject: Option<&str>) -> Option<&'t str> {
        let body = text.strip_prefix(prefix)?;
        let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if body.len() != ID_HEX + TAG_HEX || !body.bytes().all(lower_hex) {
            return None;
        }
        let (id, tag) = body.split_at(ID_HEX);
        let tag = hex::decode(tag).ok()?;
        self.tag(&format!("{prefix}{id}"), subject)
            .verify_truncated_left(&tag)
            .is_ok()
            .then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    #[test]
    fn a_sealed_id_opens_under_its_key_prefix_and_subject_only() {
        let key = SealKey::from_bytes(KEY);
        let id = key.seal("qfs_", &[1; RANDOM_BYTES], None);
        assert_eq!(id.len(), 4 + ID_HEX + TAG_HEX);
        assert_eq!(key.open("qfs_", &id, None), Some(&id[4..4 + ID_HEX]));
        assert_eq!(SealKey::from_bytes([8; 32]).open("qfs_", &id, None), None);
        assert_eq!(
            key.open("qft_", &id.replacen("qfs_", "qft_", 1), None),
            None
        );
        assert_eq!(key.open("qfs_", &id, Some("alice")), None);
        let bound = key.seal("qfs_", &[1; RANDOM_BYTES], Some("alice"));
        assert!(key.open("qfs_", &bound, Some("alice")).is_some());
        assert_eq!(key.open("qfs_", &bound, Some("bob")), None);
        assert_eq!(key.open("qfs_", &bound, None), None);
    }

    #[test]
    fn every_altered_digit_is_refused() {
        let key = SealKey::from_secret("correct horse battery");
        let id = key.seal("qfs_", &[9; RANDOM_BYTES], None);
        for at in 4..id.len() {
            let mut bytes = id.as_bytes().to_vec();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            let altered = String::from_utf8(bytes).unwrap();
            assert_eq!(key.open("qfs_", &altered, None), None, "{altered}");
        }
        assert_eq!(key.open("qfs_", &id.to_ascii_uppercase(), None), None);
    }

    #[test]
    fn derivation_depends_on_key_label_and_seed() {
        let (a, b) = (
            SealKey::from_secret("s1 s1 s1 s1 s1 s1"),
            SealKey::from_secret("s2 s2 s2 s2 s2 s2"),
        );
        assert_eq!(a.derive("l", "x"), a.derive("l", "x"));
        assert_ne!(a.derive("l", "x"), a.derive("l", "y"));
        assert_ne!(a.derive("l", "x"), a.derive("m", "x"));
        assert_ne!(a.derive("l", "x"), b.derive("l", "x"));
    }
}
