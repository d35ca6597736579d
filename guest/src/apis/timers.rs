//! The natives behind the web timers (`setTimeout`, `setInterval`,
//! `AbortSignal.timeout`) and `performance.now`. (Cancelling a timer or a
//! call is `cancel`, in [`super::calls`].)
//!
//! A timer is a host completion like a tool call (`calls.start-timer`), so
//! a script waiting on one blocks in `next-completion` beside its calls,
//! and the host holds it to the run's wall deadline. Which callback runs
//! when a timer completes is the JS half's choice (`web.js`, `fireTimer`):
//! this module only tracks which timer ids are live.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use rquickjs::{Ctx, Exception, Function, Object, Result};

use crate::quickforge::sandbox::calls;

/// The bit the host sets on a timer's id (see `start-timer` in the WIT).
pub const TIMER_BIT: u32 = 1 << 31;

/// Resolution of `performance.now()`, in milliseconds: 100 µs, as browsers
/// without cross-origin isolation do. A finer clock would let a script time
/// the host (a tool call's latency, another execution's load on the machine)
/// precisely enough to learn what it should not; a script's own timing needs
/// no more.
const NOW_RESOLUTION_MS: f64 = 0.1;

thread_local! {
    /// Timers started in this run that neither fired nor were cancelled.
    static LIVE: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// When this run started: `performance.now()`'s origin. The snapshot's
    /// value is never read; `begin` sets it for every run.
    static ORIGIN: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Starts a run: `performance.now()` counts from here. Nothing is live: the
/// snapshot was taken with no timer started.
pub fn begin() {
    ORIGIN.set(Some(Instant::now()));
    debug_assert!(LIVE.with(|l| l.borrow().is_empty()));
}

/// Number of timers pending.
pub fn pending() -> usize {
    LIVE.with(|l| l.borrow().len())
}

/// Whether `id` is a timer's, and if it was live, forgets it: a completion
/// for a timer the script cleared (it raced the cancel) is dropped.
pub fn fired(id: u32) -> Option<bool> {
    if id & TIMER_BIT == 0 {
        return None;
    }
    Some(LIVE.with(|l| {
        let mut l = l.borrow_mut();
        let i = l.iter().position(|t| *t == id);
        i.map(|i| l.swap_remove(i)).is_some()
    }))
}

/// Milliseconds since the run began, coarsened to [`NOW_RESOLUTION_MS`].
fn now() -> f64 {
    let ms = ORIGIN
        .get()
        .map_or(0.0, |o| o.elapsed().as_secs_f64() * 1000.0);
    (ms / NOW_RESOLUTION_MS).floor() * NOW_RESOLUTION_MS
}

/// Puts `now` and `timerStart` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set("now", Function::new(ctx.clone(), now)?)?;
    host.set(
        "timerStart",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, ms: f64| {
            // The JS half clamps the delay; this only keeps it in the u32.
            let ms = ms.clamp(0.0, f64::from(u32::MAX)) as u32;
            match calls::start_timer(ms) {
                Ok(id) => {
                    LIVE.with(|l| l.borrow_mut().push(id));
                    // As a number: a u32 past i32's range would cross as a
                    // negative int32 and not come back as the same id.
                    Ok(f64::from(id))
                }
                Err(message) => Err(Exception::throw_range(&ctx, &message)),
            }
        })?,
    )?;
    Ok(())
}
