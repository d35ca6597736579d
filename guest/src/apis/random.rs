//! `Math.random`: a `fastrand` generator in the guest, seeded at the start of
//! every run from `wasi:random` (through `getrandom`), so that runs of the
//! same snapshot do not share one sequence.
//!
//! The seed is drawn per run, not per call: a host call for every
//! `Math.random()` would cost a component-boundary crossing each, and the
//! script needs no more than an unpredictable sequence. `wasi:random` is the
//! host's CSPRNG with a generator of its own per execution (see
//! `host/sandbox/mod.rs`), so no run can predict another's seed.

use std::cell::RefCell;

use rquickjs::{Ctx, Function, Object, Result};

thread_local! {
    /// The generator behind `Math.random`; reseeded from `wasi:random` per run.
    /// Its state in the snapshot is whatever init left, and is never used.
    static RNG: RefCell<fastrand::Rng> = const { RefCell::new(fastrand::Rng::with_seed(0)) };
}

/// Starts a run: reseeds `Math.random` from `wasi:random` (the snapshot froze
/// whatever state init left behind). Nothing is in flight: every run starts
/// from the snapshot, taken with no call started.
pub fn reseed() {
    // On wasm32-wasip2, `getrandom` is one `wasi:random/random.get-random-u64`
    // call, which cannot fail.
    let seed = getrandom::u64().expect("wasi:random cannot fail");
    RNG.with(|r| r.borrow_mut().seed(seed));
    debug_assert_eq!(super::calls::in_flight(), 0);
}

/// `Math.random()`: a float in `[0, 1)`.
fn next_random() -> f64 {
    RNG.with(|r| r.borrow_mut().f64())
}

/// Puts `random`, the prelude's `Math.random`, on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set(
        "random",
        Function::new(ctx.clone(), next_random)?.with_name("random")?,
    )?;
    Ok(())
}
