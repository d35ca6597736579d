//! The wall clock as QuickJS reads it.
//!
//! QuickJS reads the wall clock through libc's `gettimeofday` in two places:
//! `Date.now()` / `new Date()`, and `JS_NewContext`, which seeds the
//! context's own `Math.random` state and its `Map` hash seed from it (a
//! `TODO` in quickjs-ng). The second happens in [`crate::engine::initialize`],
//! which must call no host import: standard Wizer (`wasmtime wizer`, or
//! `wasmtime-wizer` with a linker that defines no import) refuses or traps on
//! any, and a snapshot made with the clock would freeze that instant anyway.
//!
//! So the guest defines `gettimeofday` itself, which the linker takes instead
//! of wasi-libc's: while [`frozen`] runs it reports the epoch without asking
//! the host; at any other time it reads `wasi:clocks/wall-clock` (through
//! `std`, which goes to libc's `clock_gettime`, not back here). What the
//! frozen instant decides is harmless: the context's `Math.random` is
//! replaced by the prelude with the per-run generator seeded from
//! `wasi:random` (`apis/random.rs`), and the `Map` hash seed only spreads a
//! script's own keys over buckets (a script that collides them slows only
//! itself, inside its own limits).
//!
//! Hand-written because no crate can replace a libc symbol for C code it
//! does not compile; QuickJS itself is used unpatched.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    /// Whether the clock reads as the epoch (while the engine is built).
    static FROZEN: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the wall clock frozen at the epoch, so that nothing it does
/// calls `wasi:clocks/wall-clock`.
pub fn frozen<R>(f: impl FnOnce() -> R) -> R {
    FROZEN.set(true);
    let out = f();
    FROZEN.set(false);
    out
}

/// libc's `gettimeofday`, for QuickJS; see the module docs. The time zone
/// argument is obsolete (POSIX leaves it unspecified) and ignored, as
/// wasi-libc does.
///
/// # Safety
///
/// `tv` is NULL or points to a writable `timeval`, as for libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gettimeofday(
    tv: *mut libc::timeval,
    _tz: *mut core::ffi::c_void,
) -> core::ffi::c_int {
    let since = if FROZEN.get() {
        std::time::Duration::ZERO
    } else {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    };
    if !tv.is_null() {
        // SAFETY: the caller passes a writable `timeval` or NULL (checked).
        unsafe {
            (*tv).tv_sec = since.as_secs() as libc::time_t;
            (*tv).tv_usec = libc::suseconds_t::from(since.subsec_micros());
        }
    }
    0
}
