//! `Math.random`: a xorshift64* generator in the guest, seeded from the
//! host's `random` WIT import at the start of every run, so that runs of the
//! same snapshot do not share one sequence.

use std::cell::Cell;

use rquickjs::{Ctx, Function, Object, Result};

use crate::quickforge::sandbox::random;

thread_local! {
    /// xorshift64* state behind `Math.random`; reseeded from the host per run.
    static RNG: Cell<u64> = const { Cell::new(0x9E37_79B9_7F4A_7C15) };
}

/// Starts a run: reseeds `Math.random` from the host's entropy (the snapshot
/// froze whatever state init left behind). Nothing is in flight: every run
/// starts from the snapshot, taken with no call started.
pub fn reseed() {
    let seed = random::seed();
    // xorshift must not start at zero.
    RNG.with(|s| {
        s.set(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    });
    debug_assert_eq!(super::calls::in_flight(), 0);
}

fn next_random() -> f64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        // 53 high bits of the xorshift64* output, scaled into [0, 1).
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    })
}

/// Puts `random`, the prelude's `Math.random`, on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set(
        "random",
        Function::new(ctx.clone(), next_random)?.with_name("random")?,
    )?;
    Ok(())
}
