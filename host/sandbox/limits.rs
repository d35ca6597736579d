//! The limits every execution runs under, with their defaults and the reason
//! for each value. forge.toml sets them under `[sandbox]`.

use std::time::Duration;

/// Hard limits of one execution, enforced by the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxLimits {
    /// Wall-clock limit of one execution, tool calls included. 30 s: the
    /// whole CPU budget (`max_fuel`) must fit below it on slow machines too,
    /// so that a runaway loop ends as `cpu_budget`, not `timeout`: 40e9 fuel
    /// took 3.6 s on one 2-vCPU VM and 10 s on another (2026-11-27, two
    /// loops on two cores: 4e9 units a second), so 30 s keeps a 3x margin
    /// over the slowest seen; it also matches the servers' default
    /// `timeout_secs`, so one slow call is not cut short by its execution.
    /// An agent's turn still does not stall long on a spinning script: the
    /// fuel ends it in seconds. (Forgemax's configs say 5.)
    pub timeout: Duration,
    /// CPU budget in Wasmtime fuel units (about one per Wasm instruction).
    /// 40 billion: a 10 MB JSON parse-and-stringify takes 18e9, a million
    /// `Map` entries set and read 8e9, sorting 1e5 objects 4e9 (`cargo bench
    /// --bench budgets`), so real data work finishes well inside it; a
    /// spinning loop burns it in about 3.6 s on a 2-core x86 machine (6.6e9
    /// to 11e9 units a second, allocation-heavy to plain loops), below the
    /// timeout, so it ends as `cpu_budget` (deterministic: the same script
    /// always stops at the same point) rather than `timeout`.
    pub max_fuel: u64,
    /// Linear memory of one instance, in bytes: the QuickJS heap plus the
    /// guest's stack and static data. 512 MiB: a 10 MB JSON round trip needs
    /// 192 MiB, a million `Map` entries 128 MiB (Forgemax's 64 MiB fits
    /// neither). Memory is committed as a script touches it: an execution
    /// parked on a tool call holds about 0.65 MiB whatever this is.
    pub max_heap: usize,
    /// Longest accepted script, in bytes. 64 KiB: a script is glue, and its
    /// source also costs the model's context.
    pub max_code_size: usize,
    /// Largest JSON result handed on, in bytes. 1 MiB (about 250k tokens):
    /// more would flood the model's context anyway. A larger result is cut
    /// at clean JSON boundaries with a marker saying how much was cut; one
    /// over [`OUTPUT_HARD_FACTOR`] times this fails as `output_too_large`.
    pub max_output_size: usize,
    /// Downstream operations (tool calls and resource reads) one execution
    /// may start. 50 (as in Forgemax): enough to fan out, bounded so a
    /// runaway loop cannot hammer downstream servers.
    pub max_tool_calls: u32,
    /// Largest arguments of one tool call, as JSON bytes. 1 MiB: bigger
    /// payloads belong in a file or a resource, not a tool argument.
    pub max_args_size: usize,
    /// Executions running at once. 8 (as in Forgemax): each holds up to
    /// `max_heap` of memory and a Wasm stack, so at most 4 GiB when all
    /// eight fill their heaps at once (lower either for a small machine).
    pub max_concurrent: usize,
    /// How long an execution waits for a free slot before failing as `busy`.
    /// 2 s: long enough to absorb a burst, short enough to tell the client
    /// promptly instead of stacking up work.
    pub max_queue_wait: Duration,
    /// Log lines (`console.*`, `forge.log`) kept per execution. 200: logs go
    /// back into the model's context; beyond this they are counted, not kept.
    pub max_log_lines: usize,
    /// Log bytes kept per execution. 64 KiB, for the same reason.
    pub max_log_bytes: usize,
    /// Most calls `forge.parallel` runs at once, whatever concurrency a
    /// script asks for (Forgemax's `max_parallel`); the default concurrency
    /// is 8 or this, if lower. 64: past what any server's in-flight slots
    /// (`max_in_flight`, 16 by default) let through at once, so a higher
    /// value would only grow the promises waiting in the guest.
    pub max_parallel: u32,
    /// Stash operations (`forge.stash.*`) one execution may make; `None`,
    /// the default, counts none (Forgemax's `[sandbox.stash] max_calls`).
    /// Each operation is a bounded in-memory step, so only a deployment
    /// that wants Forgemax's per-execution rate limit needs it.
    pub max_stash_calls: Option<u32>,
    /// The time zone scripts' `Intl.DateTimeFormat` and `toLocaleString`
    /// use when they name none: a canonical IANA name (`[sandbox]
    /// time_zone`, checked at load). `None`, the default, is UTC: the
    /// machine's own zone is never used, so a script's output does not
    /// depend on where the gateway runs.
    pub time_zone: Option<String>,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            timeout: Duration::from_secs(30),
            max_fuel: 40_000_000_000,
            max_heap: 512 * 1024 * 1024,
            max_code_size: 64 * 1024,
            max_output_size: 1024 * 1024,
            max_tool_calls: 50,
            max_args_size: 1024 * 1024,
            max_concurrent: 8,
            max_queue_wait: Duration::from_secs(2),
            max_log_lines: quickforge_core::limits::DEFAULT_MAX_LOG_LINES,
            max_log_bytes: quickforge_core::limits::DEFAULT_MAX_LOG_BYTES,
            max_parallel: DEFAULT_MAX_PARALLEL,
            max_stash_calls: None,
            time_zone: None,
        }
    }
}

/// Default of [`SandboxLimits::max_parallel`].
pub const DEFAULT_MAX_PARALLEL: u32 = 64;

/// Largest `max_parallel` accepted: every call in flight is a promise and a
/// host future of its execution; 1024 is far past any server's slots.
pub const MAX_PARALLEL: u32 = 1024;

/// Smallest `max_heap` accepted: the guest's 4 MiB shadow stack, its static
/// data and the snapshot's initial heap must fit with room to spare.
pub const MIN_HEAP: usize = 16 * 1024 * 1024;

/// Memory kept back from QuickJS's own allocator limit, out of `max_heap`: the
/// guest's shadow stack (4 MiB), static data and the Rust side's allocations.
/// With it, running out of memory is a catchable JS `out of memory` error
/// rather than a failed allocation outside QuickJS.
pub const JS_HEAP_HEADROOM: usize = 8 * 1024 * 1024;

impl SandboxLimits {
    /// The QuickJS allocator limit derived from `max_heap`.
    pub fn js_memory_limit(&self) -> usize {
        self.max_heap
            .saturating_sub(JS_HEAP_HEADROOM)
            .max(self.max_heap / 2)
    }
}

/// A result over this many times `max_output_size` is not cut but refused
/// (`output_too_large`): producing it cost the guest that much memory and
/// time, and cutting 15/16 of it away says the script should ask for less.
pub const OUTPUT_HARD_FACTOR: usize = 16;

impl SandboxLimits {
    /// The size beyond which a result fails instead of being cut.
    pub fn hard_output_limit(&self) -> usize {
        self.max_output_size.saturating_mul(OUTPUT_HARD_FACTOR)
    }
}
