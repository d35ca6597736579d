//! Limits of one run that both gateways enforce, in one place so the edge
//! cannot drift from the native gateway.

/// Most timers one run may have pending. A timer costs the host a boxed
/// sleep and an abort handle (a few hundred bytes) until it fires or is
/// cleared; retries, backoff, polling and an `AbortSignal.timeout` per call
/// of a large `forge.parallel` batch need far fewer, and the cap keeps a
/// runaway `setTimeout` loop from growing host memory without bound.
pub const MAX_TIMERS: usize = 1_000;

/// The bit that marks a timer's id (`wit/sandbox.wit`, `start-timer`), so
/// that it never equals a call's (calls are numbered from 1 up to the call
/// budget).
pub const TIMER_BIT: u32 = 1 << 31;

/// Log lines one run keeps by default (`max_log_lines`): enough to follow
/// a script's progress, few enough not to flood a model's context.
pub const DEFAULT_MAX_LOG_LINES: usize = 200;

/// Log bytes one run keeps by default (`max_log_bytes`): 64 KiB, about
/// 16,000 tokens at most, beside a result of its own.
pub const DEFAULT_MAX_LOG_BYTES: usize = 64 * 1024;

/// Why a run may not start another timer, in both gateways' words.
pub fn too_many_timers() -> String {
    format!(
        "too many pending timers: a run may have {MAX_TIMERS} at once; \
         clear the ones you no longer need (clearTimeout, clearInterval) \
         or wait for some to fire"
    )
}
