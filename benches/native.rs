//! The baseline both `benches/sandbox.rs` and `benches/gap.rs` measure the
//! guest against: the same script in native QuickJS (rquickjs), included by
//! `#[path]` in each.

use std::hint::black_box;
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
