//! The quickforge guest: QuickJS (through rquickjs) compiled to a
//! `wasm32-wasip2` component that implements the `sandbox` world in `wit/`.
//!
//! The component is pre-initialized once with Wizer (`wizer-initialize`
//! builds the runtime, both contexts and the JS prelude, calling no import;
//! the committed `guest/dist/` is that snapshot), then the host instantiates
//! a fresh copy of the snapshot for every script and calls `run` exactly
//! once on it.
//!
//! - [`clock`]: the wall clock QuickJS reads, frozen while the engine is
//!   built so that initialization calls no host import.
//! - [`codes`]: `ForgeError` codes as scripts see them.
//! - [`deadline`]: the run's own deadline, when the host sets one (an
//!   interrupt handler while JS runs, a timer while it waits).
//! - [`describe`]: how values are named in messages.
//! - [`engine`]: the QuickJS runtime, compiling and running one script.
//! - [`heap`]: the runtime's allocator, which enforces the memory limit and
//!   records what it refused (the evidence for `out-of-memory`).
//! - [`apis`]: the `host` object of native functions the JS prelude uses to
//!   reach the host, one module per JS API (calls, stash, manifest, logging,
//!   random).
//! - [`hints`]: what the model reads about its usual mistakes (a missing
//!   `await` or `return`, a name the sandbox will never have).
//! - [`json`]: a fast JSON encoder for plain data, in front of `JSON.stringify`.
//! - `prelude.js`: the JS API (`forge`, `manifest`, `console`, `ForgeError`).
//! - `web.js`: the web-platform globals (timers, `URL`, `TextEncoder`, ...).
//! - `intl.js`: `Intl` and the locale-aware methods (`toLocaleString`, ...).

// The export glue wit-bindgen generates for `run` takes `run-options`
// flattened into core Wasm parameters, one per field; that is the canonical
// ABI, not a signature written here.
#![expect(
    clippy::too_many_arguments,
    reason = "wit-bindgen's export glue for `run` flattens `run-options` (canonical ABI)"
)]

wit_bindgen::generate!({
    world: "sandbox",
    path: "../wit",
});

mod apis;
mod clock;
mod codes;
mod deadline;
mod describe;
mod engine;
mod heap;
mod hints;
mod json;

struct Component;

impl Guest for Component {
    fn run(options: RunOptions, code: String) -> Result<Outcome, ScriptError> {
        engine::run(options, &code)
    }

    fn wizer_initialize() {
        engine::initialize();
    }
}

export!(Component);
