//! The run's own deadline (`deadline-ms` in `run-options`), for hosts that
//! have no CPU budget to stop a script with (see `wit/sandbox.wit`).
//!
//! Two things bound the run once a deadline is set:
//!
//! - while JS runs, QuickJS's interrupt handler, which quickjs-ng calls
//!   about every 10,000 back-edges or calls: every [`CLOCK_EVERY`]th call it
//!   reads the monotonic clock (`wasi:clocks/monotonic-clock`, through
//!   `std::time::Instant`) and, past the deadline, makes QuickJS throw its
//!   uncatchable `interrupted` error. It is installed only for a run with a
//!   deadline, so a run without one pays nothing (QuickJS's counter runs
//!   either way);
//! - while the guest waits in `calls.next-completion`, a host timer
//!   (`calls.start-timer`) for the time left, started the first time the
//!   run waits; its completion ends the wait at the deadline.
//!
//! The verdict is this module's record ([`passed`]), never the thrown value
//! (a script can throw `InternalError: interrupted` itself).

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::quickforge::sandbox::calls;

/// Interrupt-handler calls per clock read. A clock read is a host call,
/// and a host call every 10,000 ticks cost the CPU-bound bench about 3%;
/// every 8th (about 80,000 back-edges or calls, 3-4 ms of JS on a 2-core
/// x86 machine) keeps the deadline's resolution far below any deadline
/// worth setting while making the reads rare.
const CLOCK_EVERY: u32 = 8;

thread_local! {
    /// When this run's deadline falls; `None` without one.
    static END: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The deadline's limit, for the message.
    static LIMIT_MS: Cell<u64> = const { Cell::new(0) };
    /// Whether the interrupt handler or the timer found the deadline passed.
    static HIT: Cell<bool> = const { Cell::new(false) };
    /// The deadline timer's id, once the run waited on the host.
    static TIMER: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Starts a run with `ms` milliseconds from now, or no deadline; returns the
/// interrupt handler to install when there is one.
pub fn begin(ms: Option<u64>) -> Option<Box<dyn FnMut() -> bool>> {
    HIT.set(false);
    TIMER.set(None);
    let ms = ms?;
    LIMIT_MS.set(ms);
    // A deadline past what `Instant` can hold is no deadline.
    let end = Instant::now().checked_add(Duration::from_millis(ms))?;
    END.set(Some(end));
    let mut calls = 0u32;
    Some(Box::new(move || {
        calls = calls.wrapping_add(1);
        HIT.get() || (calls.is_multiple_of(CLOCK_EVERY) && passed())
    }))
}

/// Ends a run: a deadline timer that did not fire is cancelled, and the
/// deadline forgotten.
pub fn end() {
    if let Some(id) = TIMER.take() {
        calls::cancel(id);
    }
    END.set(None);
}

/// Whether the run has a deadline and it has passed (recorded once seen, so
/// every later check agrees even on a clock that a host made coarse).
pub fn passed() -> bool {
    if HIT.get() {
        return true;
    }
    let hit = END.get().is_some_and(|end| Instant::now() >= end);
    HIT.set(hit);
    hit
}

/// The deadline's limit in milliseconds, for the timeout's message.
pub fn limit_ms() -> u64 {
    LIMIT_MS.get()
}

/// Before the guest blocks in `next-completion`: makes sure a host timer
/// will end the wait at the deadline. `false` when the deadline has already
/// passed (do not wait). If the host refuses the timer (its cap on pending
/// timers is full), the wait is bounded by the other timers' and calls'
/// completions and by the host's own limits only.
pub fn arm() -> bool {
    let Some(end) = END.get() else {
        return true;
    };
    if passed() {
        return false;
    }
    if TIMER.get().is_none() {
        let left = end.saturating_duration_since(Instant::now());
        // Rounded up, so the timer never fires before the deadline.
        let ms = left.as_micros().div_ceil(1000);
        if let Ok(id) = calls::start_timer(u32::try_from(ms).unwrap_or(u32::MAX)) {
            TIMER.set(Some(id));
        }
    }
    true
}

/// Whether `id`, just completed, is the deadline timer's; if it is, the
/// deadline has passed.
pub fn is_timer(id: u32) -> bool {
    if TIMER.get() != Some(id) {
        return false;
    }
    TIMER.set(None);
    HIT.set(true);
    true
}
