//! What `benches/sandbox.rs` and `benches/gap.rs` share, included by
//! `#[path]` in each: the baseline both measure the guest against (the same
//! script in native QuickJS, rquickjs) and the other guest builds an
//! environment variable names for A/B rows.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The same script in native QuickJS: a new runtime and context, evaluate,
/// call, drive the job queue, serialize the result.
fn native_once(code: &str) -> String {
    use rquickjs::{Context, Function, Promise, Runtime, Value};
    let rt = Runtime::new().unwrap();
    let ctx = Context::full(&rt).unwrap();
    ctx.with(|ctx| {
        let f: Function = ctx.eval(format!("(\n{code}\n)")).unwrap();
        let v: Value = f.call(()).unwrap();
        let p: Promise = v.into_promise().unwrap();
        let out: Value = p.finish().unwrap();
        ctx.json_stringify(out)
            .unwrap()
            .unwrap()
            .to_string()
            .unwrap()
    })
}

/// How long [`native_once`] takes for `code`.
pub fn time_native(code: &str) -> Duration {
    let t = Instant::now();
    black_box(native_once(code));
    t.elapsed()
}

/// The `label=path` pairs of the environment variable `var` (comma-separated),
/// each guest component read from its path.
pub fn guests_from(var: &str) -> Vec<(String, Arc<[u8]>)> {
    let Ok(list) = std::env::var(var) else {
        return Vec::new();
    };
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (label, path) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("{var} holds label=path pairs, got {pair:?}"));
            let wasm = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
            (label.to_string(), wasm.into())
        })
        .collect()
}
