//! The guest component as Wasmtime runs it: pre-initialized by Wizer,
//! compiled ahead of time, and cached on disk.
//!
//! The committed `guest/dist/quickforge_guest.wasm` is already
//! pre-initialized (offline, by [`pre_initialize`]; see
//! `dist_guest_is_pre_initialized` below), so a host that builds from it
//! needs one Cranelift compilation (about 1.2 s on 2 cores) on a cold cache.
//! A guest built from source is not: the host pre-initializes it first,
//! which costs a second compilation (the instrumented guest for the Wizer
//! run). The result is
//! stored as `guest-<key>.cwasm` in the cache directory, where `key` hashes
//! the guest's bytes, this crate's version and the engine's compatibility
//! hash (Wasmtime version and every code-generation setting), so a stale or
//! foreign artifact is never loaded. Loading a cached one is an `mmap`.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

/// The guest component built by `build.rs` (from source, or `guest/dist/`).
pub const GUEST_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guest.wasm"));

/// Whether [`GUEST_WASM`] is already pre-initialized: `build.rs` says so
/// when it took the committed `guest/dist/` (pre-initialized offline); a
/// guest built from source is not. A wrong answer would cost time, not
/// behaviour: an uninitialized guest builds its engine at the start of
/// `run`, and `wizer-initialize` on an initialized one does nothing.
const GUEST_PREINITIALIZED: bool =
    matches!(env!("QUICKFORGE_GUEST_PREINITIALIZED").as_bytes(), b"1");

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
pub async fn load(engine: &Engine, cache: CacheDir) -> anyhow::Result<Component> {
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
    let snapshot = if GUEST_PREINITIALIZED {
        Cow::Borrowed(GUEST_WASM)
    } else {
        Cow::Owned(pre_initialize(engine, GUEST_WASM).await?)
    };
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

/// Snapshots and compiles `wasm`, a guest other than the embedded one (see
/// `Tuning::guest`), without the disk cache: its key names the embedded
/// guest.
pub async fn load_other(engine: &Engine, wasm: &[u8]) -> anyhow::Result<Component> {
    // Snapshotting an already snapshotted guest is harmless: its
    // `wizer-initialize` finds the engine built and returns.
    let snapshot = pre_initialize(engine, wasm).await?;
    let compiled = engine
        .precompile_component(&snapshot)
        .map_err(anyhow::Error::from)
        .context("could not compile the guest snapshot")?;
    // SAFETY: `compiled` was produced just above by this engine.
    unsafe { Component::deserialize(engine, &compiled) }.map_err(anyhow::Error::from)
}

/// Runs the guest's `wizer-initialize` (QuickJS runtime, contexts,
/// prelude) under Wizer and returns the snapshot of the initialized
/// component, as any standard Wizer would make it: no import is defined, so
/// an initialization that called the host (a clock, randomness) would trap
/// here instead of freezing what it read into every instance.
pub async fn pre_initialize(engine: &Engine, wasm: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut store = Store::new(engine, ());
    // The sandbox's engine meters fuel; initialization is not a script.
    if store.get_fuel().is_ok() {
        store.set_fuel(u64::MAX).map_err(anyhow::Error::from)?;
    }
    // Nor is it interrupted, in an engine that checks epochs (a bench's).
    store.set_epoch_deadline(1 << 40);
    let mut wizer = wasmtime_wizer::Wizer::new();
    // A component cannot drop an export, so the init function stays; the
    // guest makes a second call a no-op.
    wizer.init_func("wizer-initialize").keep_init_func(true);
    let (snapshot, _) = wizer
        .run_component(&mut store, wasm, async |store, component| {
            let mut linker = Linker::new(store.engine());
            linker.define_unknown_imports_as_traps(component)?;
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
    // the artifact once complete; never through a link at its name.
    crate::files::write_atomic(path, bytes).map_err(std::io::Error::from)
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use wasmtime::component::types::ComponentItem;
    use wasmtime::component::{Component, Linker, ResourceTable};
    use wasmtime::{Config, Engine, Store};
    use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

    use super::super::bindings;
    use super::pre_initialize;

    /// Fuel `wizer-initialize` may burn on a pre-initialized guest: it only
    /// finds the engine already built (a few hundred units). Building it
    /// (QuickJS's runtime, two contexts, the prelude) takes tens of millions.
    const ALREADY_DONE: u64 = 100_000;

    /// A bare embedder's store: WASI only, as any Wasm runtime has it.
    struct Bare {
        wasi: WasiCtx,
        table: ResourceTable,
    }

    impl WasiView for Bare {
        fn ctx(&mut self) -> WasiCtxView<'_> {
            WasiCtxView {
                ctx: &mut self.wasi,
                table: &mut self.table,
            }
        }
    }

    /// What a host that is not quickforge's sees of one guest: a plain
    /// Wasmtime with WASI and none of quickforge's imports (each traps).
    struct Probe {
        /// Time to compile it (Cranelift).
        compile: Duration,
        /// Fuel `wizer-initialize` burned on a fresh instance.
        init_fuel: u64,
        /// Median time to instantiate.
        instantiate: Duration,
        /// Median time to instantiate and run a trivial script, with no
        /// `wizer-initialize` call.
        first_run: Duration,
    }

    async fn probe(engine: &Engine, wasm: &[u8]) -> Probe {
        let t = Instant::now();
        let component = Component::new(engine, wasm).expect("the guest compiles");
        let compile = t.elapsed();
        let mut linker = Linker::<Bare>::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
        // quickforge's own imports, each a trap. (Not with
        // `define_unknown_imports_as_traps`: it looks WASI imports up by
        // their exact version, 0.2.6 in the guest, and would shadow
        // wasmtime-wasi's 0.2.12 with traps.)
        let ty = component.component_type();
        for (name, item) in ty.imports(engine) {
            let ComponentItem::ComponentInstance(interface) = item.ty else {
                continue;
            };
            if !name.starts_with("quickforge:sandbox/") {
                continue;
            }
            let mut instance = linker.instance(name).unwrap();
            for (func, item) in interface.exports(engine) {
                if let ComponentItem::ComponentFunc(_) = item.ty {
                    let what = format!("{name}#{func}");
                    instance
                        .func_new(func, move |_, _, _, _| {
                            Err(wasmtime::format_err!("{what} is not provided"))
                        })
                        .unwrap();
                }
            }
        }
        let pre = linker.instantiate_pre(&component).unwrap();
        let store = || {
            let mut store = Store::new(
                engine,
                Bare {
                    wasi: WasiCtx::builder().build(),
                    table: ResourceTable::new(),
                },
            );
            store.set_fuel(u64::MAX).unwrap();
            store
        };

        let mut s = store();
        let instance = pre.instantiate_async(&mut s).await.unwrap();
        let init = instance
            .get_typed_func::<(), ()>(&mut s, "wizer-initialize")
            .unwrap();
        init.call_async(&mut s, ()).await.unwrap();
        let init_fuel = u64::MAX - s.get_fuel().unwrap();

        let median = |mut v: Vec<Duration>| {
            v.sort();
            v[v.len() / 2]
        };
        let (mut instantiate, mut first_run) = (Vec::new(), Vec::new());
        for _ in 0..21 {
            let mut s = store();
            let t = Instant::now();
            let instance = pre.instantiate_async(&mut s).await.unwrap();
            instantiate.push(t.elapsed());
            let sandbox = bindings::Sandbox::new(&mut s, &instance).unwrap();
            let options = bindings::quickforge::sandbox::types::RunOptions {
                mode: bindings::quickforge::sandbox::types::Mode::Execute,
                js_memory_limit: 64 << 20,
                max_output_bytes: 1 << 20,
                max_parallel: 8,
                deadline_ms: None,
                time_zone: None,
            };
            let out = sandbox
                .call_run(&mut s, &options, "async () => 1 + 1")
                .await
                .unwrap()
                .expect("a trivial script runs");
            first_run.push(t.elapsed());
            assert_eq!(out.value_json, "2");
        }
        Probe {
            compile,
            init_fuel,
            instantiate: median(instantiate),
            first_run: median(first_run),
        }
    }

    /// Issue 22, item 4: the committed guest was not pre-initialized, so
    /// every host other than quickforge's (which snapshots it at first
    /// start) built QuickJS's runtime, contexts and prelude on every
    /// instance. This proves `guest/dist/quickforge_guest.wasm` is a Wizer
    /// snapshot: on a fresh instance in a plain Wasmtime, its
    /// `wizer-initialize` finds the engine built and burns next to no fuel
    /// (a raw guest burns tens of millions of units there), and a script
    /// runs with none of quickforge's imports defined. Prints what a bare
    /// embedder pays per instance, for the committed guest and, when this
    /// build made the guest from source, for the raw one.
    ///
    /// With `QUICKFORGE_UPDATE_DIST=1` (after `build.rs` copied a freshly
    /// built, raw guest into `guest/dist/`), it first pre-initializes that
    /// guest in place.
    #[tokio::test(flavor = "multi_thread")]
    async fn dist_guest_is_pre_initialized() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("guest/dist/quickforge_guest.wasm");
        let mut config = Config::new();
        config.consume_fuel(true);
        let engine = Engine::new(&config).unwrap();
        let mut dist = std::fs::read(&path).expect("guest/dist/ is committed");
        let mut seen = probe(&engine, &dist).await;
        if seen.init_fuel >= ALREADY_DONE
            && std::env::var("QUICKFORGE_UPDATE_DIST").as_deref() == Ok("1")
        {
            dist = pre_initialize(&engine, &dist)
                .await
                .expect("the guest initializes without calling the host");
            std::fs::write(&path, &dist).expect("could not write guest/dist/");
            seen = probe(&engine, &dist).await;
        }
        eprintln!(
            "committed guest ({} bytes): compile {:?}; wizer-initialize {} fuel; instantiate {:?}; instantiate + trivial run {:?}",
            dist.len(),
            seen.compile,
            seen.init_fuel,
            seen.instantiate,
            seen.first_run
        );
        if !super::GUEST_PREINITIALIZED {
            let raw = probe(&engine, super::GUEST_WASM).await;
            // What a host given the raw guest adds at a cold start.
            let t = Instant::now();
            pre_initialize(&engine, super::GUEST_WASM).await.unwrap();
            let snapshot = t.elapsed();
            eprintln!(
                "raw guest from source ({} bytes): compile {:?}; Wizer snapshot {snapshot:?}; wizer-initialize {} fuel; instantiate {:?}; instantiate + trivial run {:?}",
                super::GUEST_WASM.len(),
                raw.compile,
                raw.init_fuel,
                raw.instantiate,
                raw.first_run
            );
        }
        assert!(
            seen.init_fuel < ALREADY_DONE,
            "guest/dist/quickforge_guest.wasm is not pre-initialized: its wizer-initialize burned {} fuel; \
             refresh it with `QUICKFORGE_UPDATE_DIST=1 cargo test --release --lib dist_guest`",
            seen.init_fuel
        );
    }
}
