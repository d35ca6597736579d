//! Pre-initializes the redactor (`edge/redactor`) with Wizer before it is
//! composed: its `wizer-initialize` builds the redaction rule set and
//! regexes, and the snapshot of its memory after that call is what every
//! instance starts from, so no request compiles them again (issue 22,
//! item 4).
//!
//! As for the guest (`host/sandbox/artifact.rs`), imports are traps, so an
//! initialization that called the runtime (a clock, the environment, the
//! network) fails here instead of freezing what it read into every
//! instance, with one exception: `wasi:random/insecure-seed`. Compiling any
//! regex makes a `HashMap` (regex-automata's capture names), and Rust's std
//! seeds every `HashMap`'s hasher once per instance from that import, so
//! without it nothing can be compiled ahead. It answers [`SNAPSHOT_SEED`]
//! here, and every instance of the snapshot starts from the same hasher
//! keys. That is why the redactor is a component of its own and the
//! provider is not a snapshot (session 14 measured a pre-initialized
//! provider and kept it out): the provider parses scripts' arguments and
//! servers' answers into hash maps, and with published keys colliding keys
//! could be computed offline; the redactor takes and returns strings, and
//! its maps have fixed keys or are the regex engine's bounded caches.
//!
//! What the snapshot holds: the compiled rule set (~200 rules' automata and
//! prefilters) is most of it; the lazy-DFA caches that redacting
//! `EVERY_SHAPE` (`edge/redactor/src/lib.rs`) fills are about 1.4 MB and
//! pay for themselves (session 14, measured alternately: a request that
//! redacts an error 10–25 ms with them, 21–30 ms without). `inspect FILE`
//! prints each core module's data segments.

use anyhow::{Context, Result};
use wasmtime::component::Linker;
use wasmtime::{Engine, Store};

/// The interface whose answer the snapshot keeps (see the module doc).
const INSECURE_SEED: &str = "wasi:random/insecure-seed@";
/// The hasher seed frozen into the snapshot: a constant, since whatever is
/// chosen here is readable in the published `.wasm` anyway.
const SNAPSHOT_SEED: (u64, u64) = (0x7175_6963_6b66_6f72, 0x6765_2d65_6467_6521);

/// The snapshot of `wasm` (a component exporting `wizer-initialize`) after
/// that export ran once. The export stays (a component cannot drop one);
/// the redactor makes a second call a no-op.
pub fn pre_initialize(wasm: &[u8]) -> Result<Vec<u8>> {
    let engine = Engine::default();
    let mut store = Store::new(&engine, ());
    let mut wizer = wasmtime_wizer::Wizer::new();
    wizer.init_func("wizer-initialize").keep_init_func(true);
    let run = wizer.run_component(&mut store, wasm, async |store, component| {
        let mut linker = Linker::new(store.engine());
        let engine = store.engine().clone();
        for (name, _) in component.component_type().imports(&engine) {
            if name.starts_with(INSECURE_SEED) {
                linker
                    .instance(name)?
                    .func_wrap("insecure-seed", |_, ()| Ok((SNAPSHOT_SEED,)))?;
            }
        }
        linker.define_unknown_imports_as_traps(component)?;
        linker.instantiate_async(store, component).await
    });
    let started = std::time::Instant::now();
    let (snapshot, _) = futures_executor::block_on(run)
        .map_err(anyhow::Error::from)
        .context("could not pre-initialize the redactor with wizer")?;
    eprintln!(
        "pre-initialized the redactor in {:?} ({} → {} bytes)",
        started.elapsed(),
        wasm.len(),
        snapshot.len()
    );
    Ok(snapshot)
}
