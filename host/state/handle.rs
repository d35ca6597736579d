//! Stash handles: unguessable ids sealed with an HMAC under the gateway's
//! secret, so that state is addressed by a handle a client can carry, not
//! by the lifetime of a session object.
//!
//! A handle reads `qfs_` + 32 hex digits of randomness + 24 hex digits of
//! tag (HMAC-SHA256 of the random part under the [`HandleKey`], cut to 96
//! bits). A handle presented by a client is opened with
//! [`HandleKey::open_for`], which checks the tag in constant time before
//! anything is looked up: a guessed, altered or foreign handle never reaches
//! the store, and it is refused exactly like one that never existed.
//!
//! Behind `[auth]`, a handle is also bound to the subject it was minted
//! for: the tag covers the subject ([`HandleKey::mint_for`]), so the same
//! text opened for another subject ([`HandleKey::open_for`]) fails the tag
//! check, and is refused exactly like a forged handle. Nothing is stored
//! for the binding, so it holds across restarts and replicas that share the
//! secret.

use std::path::{Path, PathBuf};

use quickforge_filters::seal::{self, SealKey};

use super::Handle;

/// The text every handle starts with, so a model (and a person reading a
/// transcript) can tell a stash handle from other ids.
const PREFIX: &str = "qfs_";

/// The domain label of handles derived from a session id.
const SESSION_LABEL: &str = "quickforge session stash";

/// Shortest configured secret, in bytes (see [`seal::MIN_SECRET_BYTES`]).
pub const MIN_SECRET_BYTES: usize = seal::MIN_SECRET_BYTES;

/// Name of the file in the cache directory that keeps a generated secret,
/// so handles stay valid across restarts.
pub const KEY_FILE: &str = "stash-secret";

/// Where the [`HandleKey`] came from, for the startup log and `doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `[sandbox.stash] secret` in forge.toml.
    Configured,
    /// Generated before and kept in this file of the cache directory.
    Kept(PathBuf),
    /// Generated now and written to this file of the cache directory.
    Created(PathBuf),
    /// Generated now for this process only (no cache directory, or it
    /// could not be written): handles end with the process.
    Ephemeral(String),
}

/// The per-gateway secret that seals handles: the sealing itself is
/// `quickforge_filters::seal`, shared with the edge provider; this adds
/// where the key comes from and the OS randomness.
#[derive(Clone, Debug)]
pub struct HandleKey {
    key: SealKey,
}

impl HandleKey {
    /// A key from the OS random source, for this process only.
    pub fn random() -> HandleKey {
        let mut key = [0u8; 32];
        // Without the OS random source no handle is safe to hand out.
        getrandom::fill(&mut key).expect("the OS random source works");
        HandleKey {
            key: SealKey::from_bytes(key),
        }
    }

    /// A key derived from a configured secret of any length (SHA-256 of
    /// it: the HMAC needs a fixed-size key, and a passphrase works too).
    pub fn from_secret(secret: &str) -> HandleKey {
        HandleKey {
            key: SealKey::from_secret(secret),
        }
    }

    /// The gateway's key: the configured secret if there is one, else the
    /// one kept in `cache` (made and written there, readable by the owner
    /// only, the first time), else a key for this process alone.
    pub fn load(configured: Option<&str>, cache: Option<&Path>) -> (HandleKey, KeySource) {
        if let Some(secret) = configured {
            return (HandleKey::from_secret(secret), KeySource::Configured);
        }
        let Some(dir) = cache else {
            return (
                HandleKey::random(),
                KeySource::Ephemeral("no cache directory".into()),
            );
        };
        let path = dir.join(KEY_FILE);
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(bytes) = hex::decode(text.trim())
            && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
        {
            return (
                HandleKey {
                    key: SealKey::from_bytes(key),
                },
                KeySource::Kept(path),
            );
        }
        let made = HandleKey::random();
        match write_private(dir, &path, &hex::encode(made.key.bytes())) {
            Ok(()) => (made, KeySource::Created(path)),
            Err(e) => (
                made,
                KeySource::Ephemeral(format!("could not write {}: {e}", path.display())),
            ),
        }
    }

    /// A new handle sealed with this key.
    pub fn mint(&self) -> Handle {
        self.mint_for(None)
    }

    /// A new handle sealed with this key for `subject` (the authenticated
    /// caller, `None` without `[auth]`): it opens for that subject only.
    pub fn mint_for(&self, subject: Option<&str>) -> Handle {
        Handle(self.mint_as(PREFIX, subject).into())
    }

    /// The handle `text` names, if this key sealed it for `subject` (`None`
    /// without `[auth]`). The tag is checked in constant time; every failure
    /// is the same `None`: a handle of another subject fails exactly as a
    /// forged one does.
    pub fn open_for(&self, text: &str, subject: Option<&str>) -> Option<Handle> {
        self.opens_as(PREFIX, text, subject)
            .then(|| Handle(text.into()))
    }

    /// A new id of another kind (`prefix` tells the kinds apart: a task id
    /// is not a stash handle), random and sealed like a handle for
    /// `subject`, as [`HandleKey::mint_for`].
    pub fn mint_as(&self, prefix: &str, subject: Option<&str>) -> String {
        let mut random = [0u8; Handle::RANDOM_BYTES];
        getrandom::fill(&mut random).expect("the OS random source works");
        self.key.seal(prefix, &random, subject)
    }

    /// The handle derived from `seed` (an MCP session id) for `subject`:
    /// the same seed gives the same handle under the same key, on any
    /// replica and after a restart, so a 2025-era session restored on
    /// another replica keeps its default stash. The id part is the HMAC of
    /// the seed under a domain label (unpredictable without the key, and
    /// never equal to the tag of anything); the handle is then sealed for
    /// `subject` like a minted one.
    pub fn derive_for(&self, seed: &str, subject: Option<&str>) -> Handle {
        let random = self.key.derive(SESSION_LABEL, seed);
        Handle(self.key.seal(PREFIX, &random, subject).into())
    }

    /// Whether this key sealed `text` as an id of the kind `prefix` for
    /// `subject` (false for another subject, or for none); the tag is
    /// checked in constant time.
    pub fn opens_as(&self, prefix: &str, text: &str, subject: Option<&str>) -> bool {
        self.key.open(prefix, text, subject).is_some()
    }
}

/// Writes `text` to `path` atomically, readable and writable by the owner
/// only, never replacing a file another process wrote first nor writing
/// through a link (crate::files).
fn write_private(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    crate::files::write_new(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_handle_opens_under_its_key_only() {
        let (key, other) = (HandleKey::random(), HandleKey::random());
        let h = key.mint();
        assert_eq!(
            h.as_str().len(),
            PREFIX.len() + seal::ID_HEX + seal::TAG_HEX
        );
        assert_eq!(key.open_for(h.as_str(), None), Some(h.clone()));
        assert_eq!(other.open_for(h.as_str(), None), None);
    }

    #[test]
    fn altered_or_malformed_handles_are_refused() {
        let key = HandleKey::random();
        let h = key.mint();
        let text = h.as_str();
        // Every single-digit change, in the id and in the tag.
        for at in PREFIX.len()..text.len() {
            let mut bytes = text.as_bytes().to_vec();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            let altered = String::from_utf8(bytes).unwrap();
            assert_eq!(key.open_for(&altered, None), None, "{altered}");
        }
        for bad in [
            "",
            "qfs_",
            &text[..text.len() - 1],
            &format!("{text}0"),
            &text[PREFIX.len()..],
            "qfs_zz",
            &text.to_ascii_uppercase(),
        ] {
            assert_eq!(key.open_for(bad, None), None, "{bad:?}");
        }
    }

    /// Issue 23 (per-user isolation): a handle minted for one subject
    /// opens for that subject only, never for another or for none.
    #[test]
    fn a_handle_minted_for_a_subject_opens_for_it_only() {
        let key = HandleKey::random();
        let h = key.mint_for(Some("alice"));
        assert_eq!(key.open_for(h.as_str(), Some("alice")), Some(h.clone()));
        assert_eq!(key.open_for(h.as_str(), Some("bob")), None);
        assert_eq!(key.open_for(h.as_str(), Some("alice\0")), None);
        assert_eq!(key.open_for(h.as_str(), None), None);
        let plain = key.mint();
        assert_eq!(key.open_for(plain.as_str(), Some("alice")), None);
        let run = key.mint_as("qft_", Some("alice"));
        assert!(key.opens_as("qft_", &run, Some("alice")));
        assert!(!key.opens_as("qft_", &run, Some("bob")));
    }

    /// Issue 23 (2025-era sessions across replicas): the handle derived
    /// from a session id is the same on every replica that shares the
    /// secret, differs per session, opens for its subject only, and is not
    /// derivable without the key.
    #[test]
    fn a_session_handle_is_derived_alike_under_one_secret_only() {
        let (a, b) = (
            HandleKey::from_secret("shared between replicas"),
            HandleKey::from_secret("shared between replicas"),
        );
        let h = a.derive_for("session-1", Some("alice"));
        assert_eq!(b.derive_for("session-1", Some("alice")), h);
        assert_eq!(b.open_for(h.as_str(), Some("alice")), Some(h.clone()));
        assert_eq!(b.open_for(h.as_str(), Some("bob")), None);
        assert_ne!(a.derive_for("session-2", Some("alice")), h);
        assert_ne!(a.derive_for("session-1", Some("bob")), h);
        let plain = a.derive_for("session-1", None);
        assert_eq!(a.open_for(plain.as_str(), None), Some(plain.clone()));
        assert_eq!(
            HandleKey::random().open_for(plain.as_str(), None),
            None,
            "another key neither derives nor opens it"
        );
        assert_ne!(HandleKey::random().derive_for("session-1", None), plain);
    }

    #[test]
    fn the_same_secret_gives_the_same_key() {
        let h = HandleKey::from_secret("correct horse").mint();
        assert!(
            HandleKey::from_secret("correct horse")
                .open_for(h.as_str(), None)
                .is_some()
        );
        assert!(
            HandleKey::from_secret("correct horsf")
                .open_for(h.as_str(), None)
                .is_none()
        );
    }

    #[test]
    fn a_generated_key_is_kept_in_the_cache_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (first, source) = HandleKey::load(None, Some(dir.path()));
        assert!(matches!(source, KeySource::Created(_)), "{source:?}");
        let (again, source) = HandleKey::load(None, Some(dir.path()));
        assert!(matches!(source, KeySource::Kept(_)), "{source:?}");
        let h = first.mint();
        assert!(again.open_for(h.as_str(), None).is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (_, source) = HandleKey::load(Some("s"), Some(dir.path()));
        assert_eq!(source, KeySource::Configured);
    }
}
