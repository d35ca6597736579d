//! The guest component as Wasmtime runs it: pre-initialized by Wizer,
//! compiled ahead of time, and cached on disk.
//!
//! Making it takes two Cranelift compilations (about 2.5 s on 2 cores):
//! the instrumented guest for the Wizer run, and the snapshot. The result is
//! stored as `guest-<key>.cwasm` in the cache directory, where `key` hashes
//! the guest's bytes, this crate's version and the engine's compatibility
//! hash (Wasmtime version and every code-generation setting), so a stale or
//! foreign artifact is never loaded. Loading a cached one is an `mmap`.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use super::{ExecutionContext, ExecutionState, Mode, SandboxLimits};

/// The guest component built by `build.rs` (from source, or `guest/dist/`).
pub const GUEST_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guest.wasm"));

/// Where compiled guest artifacts are cached.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CacheDir {
    /// `$QUICKFORGE_CACHE_DIR`, else `$XDG_CACHE_HOME/quickforge`, else
    /// `$HOME/.cache/quickforge`; no disk cache if none is set.
    #[default]
    Default,
    /// This directory.
    Path(PathBuf),
    /// No disk cache: compile at every start.
    Disabled,
}

impl CacheDir {
    /// The directory this names, if any.
    pub fn resolve(&self) -> Option<PathBuf> {
        match self {
            CacheDir::Disabled => None,
            CacheDir::Path(p) => Some(p.clone()),
            CacheDir::Default => {
                let var = |name| {
                    std::env::var_os(name)
                        .filter(|v| !v.is_empty())
                        .map(PathBuf::from)
                };
                var("QUICKFORGE_CACHE_DIR")
                    .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("quickforge")))
                    .or_else(|| var("HOME").map(|d| d.join(".cache").join("quickforge")))
            }
        }
    }
}

/// Loads the pre-initialized, compiled guest from the cache, or makes it
/// (and stores it, if there is a cache).
pub async fn load(
    engine: &Engine,
    linker: &Linker<ExecutionState>,
    cache: CacheDir,
) -> anyhow::Result<Component> {
    let path = cache
        .resolve()
        .map(|dir| dir.join(format!("guest-{}.cwasm", cache_key(engine))));
    if let Some(path) = &path
        && path.exists()
        && trusted(path)
    {
        // SAFETY: the file was written by `store` below from
        // `Engine::precompile_component` of this same engine configuration
        // (the key says so); Wasmtime checks its header again on load.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(component) => return Ok(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring unusable cached guest")
            }
        }
    }
    let snapshot = snapshot(engine, linker).await?;
    let compiled = engine
        .precompile_component(&snapshot)
        .map_err(anyhow::Error::from)
        .context("could not compile the guest snapshot")?;
    if let Some(path) = &path
        && let Err(e) = store(path, &compiled)
    {
        tracing::warn!(path = %path.display(), error = %e, "could not cache the compiled guest; the next start compiles again");
    }
    // SAFETY: `compiled` was produced just above by this engine.
    unsafe { Component::deserialize(engine, &compiled) }.map_err(anyhow::Error::from)
}

/// Runs the guest's `wizer-initialize` (QuickJS runtime, contexts, prelude)
/// and returns the snapshot of the initialized component.
async fn snapshot(engine: &Engine, linker: &Linker<ExecutionState>) -> anyhow::Result<Vec<u8>> {
    let limits = SandboxLimits::default();
    let mut store = Store::new(
        engine,
        ExecutionState::new(
            Mode::Search,
            ExecutionContext::default(),
            &limits,
            // Initialization calls no import; no deadline applies.
            {
                let deadline = std::sync::Arc::new(crate::relay::Deadline::default());
                deadline.start(std::time::Duration::from_secs(24 * 3600));
                deadline
            },
        ),
    );
    store.set_fuel(u64::MAX).map_err(anyhow::Error::from)?;
    let mut wizer = wasmtime_wizer::Wizer::new();
    // A component cannot drop an export, so the init function stays; the
    // guest makes a second call a no-op.
    wizer.init_func("wizer-initialize").keep_init_func(true);
    let (snapshot, _) = wizer
        .run_component(&mut store, GUEST_WASM, async |store, component| {
            linker.instantiate_async(store, component).await
        })
        .await
        .map_err(anyhow::Error::from)
        .context("could not pre-initialize the guest with wizer")?;
    Ok(snapshot)
}

/// Whether a cached artifact may be loaded: it is native code, so only a
/// file owned by this user that no one else can write, in a directory no one
/// else can write, is trusted. Anything else is compiled afresh.
#[cfg(unix)]
fn trusted(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory
    // of ours.
    let uid = unsafe { libc::geteuid() };
    let ok = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.uid() == uid && m.mode() & 0o022 == 0);
    let trusted = ok(path) && path.parent().is_some_and(ok);
    if !trusted {
        tracing::warn!(path = %path.display(), "not loading a cached guest that others could have written; compiling afresh");
    }
    trusted
}

/// Elsewhere the cache directory's own permissions are relied on.
#[cfg(not(unix))]
fn trusted(_path: &Path) -> bool {
    true
}

/// Writes the artifact atomically, so a concurrent start never reads half,
/// into a directory only this user can write.
fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = path.parent().expect("cache paths have a directory");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    // A temporary file (created 0600) in the same directory, renamed over
    // the artifact once complete.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// The artifact's file name: a SHA-256 over what makes a compiled guest
/// loadable (the engine's compatibility, the guest, this version).
/// `DefaultHasher` would do for a key but its output may change between Rust
/// releases, which would silently recompile on every toolchain update.
fn cache_key(engine: &Engine) -> String {
    /// Feeds `Hash` impls into SHA-256: wasmtime's compatibility hash is
    /// only available through `Hash`.
    struct Sha(Sha256);
    impl Hasher for Sha {
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
        fn finish(&self) -> u64 {
            unreachable!("only the SHA-256 digest is read")
        }
    }
    let mut h = Sha(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    GUEST_WASM.hash(&mut h);
    env!("CARGO_PKG_VERSION").hash(&mut h);
    hex::encode(&h.0.finalize()[..8])
}
