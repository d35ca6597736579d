//! The sandbox: runs one script in a fresh instance of the QuickJS guest
//! component, under hard limits.
//!
//! [`Sandbox::new`] builds the Wasmtime engine, the linker and the
//! pre-instantiated component once (from a Wizer snapshot, AOT-compiled and
//! cached on disk, see [`artifact`]). [`Sandbox::run`] then gives every
//! execution its own `Store` and instance:
//!
//! - **CPU**: fuel (`max_fuel`), so a spinning script stops deterministically;
//! - **wall time**: a tokio deadline over the whole execution. The guest
//!   yields to tokio every 10 million units of fuel (about 1 ms
//!   of JS), so the deadline fires in the middle of a computation as well as
//!   while the script waits on the host, and a spinning script never holds a
//!   worker thread. (No epoch interruption: it would check the same loop
//!   headers fuel already checks, for a second 10-15% of interpreter speed;
//!   see README's Sandbox section.)
//! - **host work**: what the host does when the script calls an import is
//!   metered against the same deadline and yields the worker after ~1 ms
//!   (see [`meter`]); a result that arrives past the deadline is a timeout.
//! - **memory**: a resource limiter on linear memory (`max_heap`), and the
//!   QuickJS allocator limit a little below it;
//! - **stack**: `max_wasm_stack` below the guest's shadow stack, so deep
//!   recursion traps cleanly;
//! - **everything else** (code, output, args, call count, logs, concurrency)
//!   is checked by the host code in this module and in [`imports`].

mod artifact;
mod imports;
mod limits;
mod meter;
mod output;

use std::sync::Arc;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ProfilingStrategy,
    ResourceLimiter, Store, Trap,
};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

pub use artifact::CacheDir;
pub use limits::{MAX_PARALLEL, MIN_HEAP, SandboxLimits};
pub use output::json_len;

pub use crate::call::ExecutionContext;
use crate::call::{BoxFuture, CallLimits, Pipeline};
use crate::deadline::Deadline;
use crate::error::{Code, ErrorKind, ExecutionError, ForgeError};
use meter::HostMeter;
pub use quickforge_core::execution::{LogLevel, LogLine, Mode, Report, Stats};
use quickforge_core::shown;

/// Bindings generated from `wit/`, the single source of truth of the
/// host–guest contract.
mod bindings {
    wasmtime::component::bindgen!({
        world: "sandbox",
        path: "wit",
        imports: {
            "quickforge:sandbox/calls.next-completion": async,
            // Every other import is async so that it can be metered and
            // yield (see meter.rs); trappable so that it can refuse to run
            // past the deadline.
            default: async | trappable,
        },
        exports: { default: async },
    });
}

use bindings::quickforge::sandbox::types as wit;

/// Fuel a running guest burns between two yields to tokio. QuickJS burns
/// about 10 million units per millisecond here (see `max_fuel`), so this is
/// about 1 ms: the timeout's resolution while a script computes, and the
/// longest a guest holds a worker thread. A yield costs a fiber switch and a
/// trip through the scheduler, a few microseconds, well under 1% at this
/// interval.
const FUEL_YIELD_INTERVAL: u64 = 10_000_000;

/// Native stack Wasm code may use. 1 MiB is below the guest's 4 MiB shadow
/// stack (see `guest/.cargo/config.toml`), so deep JS recursion runs out of
/// this one first and traps as a clean `StackOverflow`.
const MAX_WASM_STACK: usize = 1024 * 1024;

/// Stack of each async fiber a guest runs on: `MAX_WASM_STACK` plus room for
/// the host functions the guest calls.
const ASYNC_STACK: usize = 2 * 1024 * 1024;

/// Largest `wasi:random` `get-random-bytes` request the host serves (a
/// larger one traps). The guest asks for its per-run seed through
/// `get-random-u64` and the script cannot reach WASI at all, so 256 bytes
/// (the most `getentropy` in the guest's libc ever asks for) is generous;
/// wasmtime-wasi's default of 64 MiB would be a host allocation outside the
/// execution's memory limit.
const MAX_RANDOM_BYTES: u64 = 256;

/// Memory (and table) bytes a pooled slot keeps resident between
/// instances. 16 MiB covers what a typical script touches (the snapshot's
/// heap, the shadow stack, a few MiB of fresh allocations); beyond it, pages
/// are returned to the kernel as usual.
const KEEP_RESIDENT: usize = 16 * 1024 * 1024;

/// Engine and guest settings that differ from the gateway's, so that
/// `benches/gap.rs` can measure what each costs in the same run. The gateway
/// always runs [`Tuning::default`] (nothing in the config reaches this); a
/// tuning other than the default weakens a limit, as each field says.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct Tuning {
    /// Fuel metering (`Config::consume_fuel`). `false` removes the CPU
    /// budget, and with it the yields that let the wall deadline fire while
    /// a script computes. Default `true`.
    pub fuel: bool,
    /// Epoch interruption, with a deadline no ticker ever reaches: the cost
    /// of the checks alone. Default `false`.
    pub epoch: bool,
    /// Linear-memory accesses bounds-checked in code: the memory
    /// reservation cut to `max_heap` and no guard region, instead of
    /// Wasmtime's 4 GiB reservation plus guard, against which Cranelift
    /// elides the checks. Default `false`.
    pub explicit_bounds_checks: bool,
    /// Writes `/tmp/perf-<pid>.map`, so `perf report` names the guest's
    /// compiled functions. Default `false`.
    pub perf_map: bool,
    /// A guest component to run instead of the embedded one (snapshotted
    /// and compiled at start, never cached). Default `None`.
    pub guest: Option<Arc<[u8]>>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            fuel: true,
            epoch: false,
            explicit_bounds_checks: false,
            perf_map: false,
            guest: None,
        }
    }
}

/// The engine, linker and pre-instantiated guest, built once and shared by
/// every execution.
pub struct Sandbox {
    engine: Engine,
    pre: bindings::SandboxPre<ExecutionState>,
    limits: SandboxLimits,
    slots: Arc<Semaphore>,
    /// The guest's own deadline (`deadline-ms`); see
    /// [`Sandbox::set_guest_deadline`].
    guest_deadline: Option<std::time::Duration>,
    /// Settings other than the gateway's, for benches only.
    tuning: Tuning,
}

impl Sandbox {
    /// Builds the sandbox: engine, linker, the compiled guest snapshot (from
    /// the disk cache in `cache` when it is there, else compiled and stored).
    /// Takes about 1.2 s on a cold cache with the committed, pre-initialized
    /// guest (2.5 s with one built from source, which is snapshotted first),
    /// milliseconds on a warm one.
    pub async fn new(limits: SandboxLimits, cache: CacheDir) -> anyhow::Result<Self> {
        Self::new_tuned(limits, cache, Tuning::default()).await
    }

    /// [`Sandbox::new`] with engine or guest settings other than the
    /// gateway's: for benches that measure what each setting costs.
    #[doc(hidden)]
    pub async fn new_tuned(
        limits: SandboxLimits,
        cache: CacheDir,
        tuning: Tuning,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            limits.max_heap >= MIN_HEAP,
            "max_heap of {} bytes is below the {MIN_HEAP}-byte minimum the guest needs",
            limits.max_heap
        );
        anyhow::ensure!(
            limits.max_concurrent >= 1,
            "max_concurrent must be at least 1"
        );
        let engine = Engine::new(&engine_config(&limits, &tuning)).map_err(anyhow::Error::from)?;
        let mut linker = Linker::<ExecutionState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
        bindings::Sandbox::add_to_linker::<
            ExecutionState,
            wasmtime::component::HasSelf<ExecutionState>,
        >(&mut linker, |s| s)
        .map_err(anyhow::Error::from)?;
        let component = match &tuning.guest {
            None => artifact::load(&engine, cache).await?,
            Some(wasm) => artifact::load_other(&engine, wasm).await?,
        };
        let pre = linker
            .instantiate_pre(&component)
            .map_err(anyhow::Error::from)?;
        let pre = bindings::SandboxPre::new(pre).map_err(anyhow::Error::from)?;
        let slots = Arc::new(Semaphore::new(limits.max_concurrent));
        Ok(Sandbox {
            engine,
            pre,
            limits,
            slots,
            guest_deadline: None,
            tuning,
        })
    }

    /// Also hands every run a deadline the guest enforces itself
    /// (`deadline-ms` in `wit/sandbox.wit`: QuickJS's interrupt handler and
    /// a timer on its waits), behind fuel and the host's own deadline.
    /// `None`, the default and what the gateway uses: fuel and the host's
    /// deadline already stop a script, and the guest's clock cannot pause
    /// while the client answers an elicitation, as the host's deadline does.
    /// Edge hosts without fuel are who the guest's deadline is for; here it
    /// serves to measure the handler's cost (`benches/sandbox.rs`) and to
    /// test it through the real guest.
    pub fn set_guest_deadline(&mut self, deadline: Option<std::time::Duration>) {
        self.guest_deadline = deadline;
    }

    /// The limits this sandbox enforces.
    pub fn limits(&self) -> &SandboxLimits {
        &self.limits
    }

    /// Runs `code` (the source of a JS function expression, usually an async
    /// arrow function) in `mode` against `cx`, in a fresh instance.
    pub async fn run(&self, mode: Mode, code: &str, cx: ExecutionContext) -> Report {
        let started = Instant::now();
        if code.len() > self.limits.max_code_size {
            return failed(
                ErrorKind::CodeTooLarge,
                format!(
                    "the code is {} bytes, over the {}-byte limit; write a shorter script, \
                     or split the work across executions (forge.stash carries data between them)",
                    code.len(),
                    self.limits.max_code_size
                ),
            );
        }
        let queued = Instant::now();
        let permit = match tokio::time::timeout(self.limits.max_queue_wait, self.slots.acquire())
            .await
        {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return failed(ErrorKind::Internal, "the sandbox is shutting down"),
            Err(_) => {
                let mut busy = failed(
                    ErrorKind::Busy,
                    format!(
                        "the sandbox is busy: all {} execution slots stayed taken for {} ms; retry shortly",
                        self.limits.max_concurrent,
                        self.limits.max_queue_wait.as_millis()
                    ),
                );
                busy.stats.queued_micros = Some(queued.elapsed().as_micros() as u64);
                return busy;
            }
        };
        let queued_micros = Some(queued.elapsed().as_micros() as u64);
        // The time limit counts from when the execution gets its slot, and
        // stops while the execution waits on its client (see
        // `crate::deadline`).
        let deadline = cx.deadline.clone();
        let limit = deadline.limit().unwrap_or(self.limits.timeout);
        deadline.start(limit);
        let mut store = self.store(mode, cx, deadline.clone());
        let options = wit::RunOptions {
            mode: match mode {
                Mode::Search => wit::Mode::Search,
                // Direct calls run no script; were one run, it would have
                // exactly execute's rights.
                Mode::Execute | Mode::Direct => wit::Mode::Execute,
            },
            js_memory_limit: self.limits.js_memory_limit() as u64,
            max_output_bytes: self.limits.hard_output_limit() as u64,
            max_parallel: self.limits.max_parallel,
            deadline_ms: self
                .guest_deadline
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            time_zone: self.limits.time_zone.clone(),
        };
        let run = async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            let outcome = instance.call_run(&mut store, &options, code).await?;
            // Calls the script started and never awaited still go out (a
            // fire-and-forget `forge.callTool` is a request, not a no-op);
            // their results are dropped. Timers still pending are dropped
            // with the store: none outlives its execution. A run the guest
            // ended at its own deadline drops its calls instead, as the
            // host's timeout does: they are what it gave up waiting for.
            let timed_out = matches!(&outcome, Err(e) if e.kind == wit::ScriptErrorKind::Timeout);
            while !timed_out && store.data_mut().calls.next().await.is_some() {}
            wasmtime::Result::Ok(outcome)
        };
        let outcome = tokio::select! {
            outcome = run => Ok(outcome),
            () = deadline.expired() => Err(()),
        };
        let fuel = self
            .limits
            .max_fuel
            .saturating_sub(store.get_fuel().unwrap_or(0));
        let memory_denied = store.data().memory.denied;
        let state = store.into_data();
        // The instance's pool slot is free only once its store is gone.
        drop(permit);
        let result = match outcome {
            Err(()) => Err(self.timeout_error(limit)),
            // Whatever arrives after the deadline (host work that ran past
            // it, a trap from an import entered too late) is a timeout: an
            // execution never finishes `ok` past its limit.
            _ if deadline.passed() => Err(self.timeout_error(limit)),
            Ok(Err(trap)) => Err(self.classify_trap(&trap, memory_denied)),
            Ok(Ok(Err(script))) => Err(classify_script_error(
                script,
                state.pipeline.budget_spent(),
            )),
            Ok(Ok(Ok(outcome))) => crate::guest_json::parse_json(&outcome.value_json).map_err(|e| {
                ExecutionError::new(
                    ErrorKind::NotSerializable,
                    format!(
                        "the result cannot be passed on as JSON ({e}); return flatter, plainer data"
                    ),
                )
            }),
        };
        // A result over max_output_size is cut at clean JSON boundaries, with
        // a marker; only one over the hard limit failed above.
        let mut output_cut = 0;
        let result = result.map(|value| {
            let (value, cut) = output::fit(value, self.limits.max_output_size);
            output_cut = cut as u64;
            value
        });
        Report {
            result,
            logs: state.logs,
            stats: Stats {
                operations: state.pipeline.operations(),
                fuel,
                micros: started.elapsed().as_micros() as u64,
                logs_dropped: state.logs_dropped,
                output_cut,
                waited_micros: deadline.waited().as_micros() as u64,
                queued_micros,
            },
        }
    }

    fn store(
        &self,
        mode: Mode,
        cx: ExecutionContext,
        deadline: Arc<Deadline>,
    ) -> Store<ExecutionState> {
        let state = ExecutionState::new(mode, cx, &self.limits, deadline);
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.memory);
        if self.tuning.epoch {
            // No ticker advances the engine's epoch: only the checks cost.
            store.set_epoch_deadline(1 << 40);
        }
        if !self.tuning.fuel {
            return store;
        }
        store
            .set_fuel(self.limits.max_fuel)
            .expect("fuel is enabled in the engine config");
        // Yielding is what lets the deadline around the execution fire while
        // the guest computes: a tokio timeout can only act when the future it
        // wraps returns `Pending`.
        store
            .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
            .expect("fuel and async support are enabled in the engine config");
        store
    }

    fn timeout_error(&self, limit: std::time::Duration) -> ExecutionError {
        ExecutionError::new(
            ErrorKind::Timeout,
            format!(
                "the execution ran past its {} ms time limit; do less per execution \
                 (fewer or smaller tool calls, less computation)",
                limit.as_millis()
            ),
        )
    }

    fn classify_trap(&self, err: &wasmtime::Error, memory_denied: bool) -> ExecutionError {
        match err.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => ExecutionError::new(
                ErrorKind::CpuBudget,
                format!(
                    "the script used its whole CPU budget ({} fuel units) — an endless loop, \
                     or too much computation for one execution",
                    self.limits.max_fuel
                ),
            ),
            // Wasmtime's own stack limit: a stack overflow whatever happened
            // to memory earlier in the run. Running off the guest's shadow
            // stack shows as an out-of-bounds access below address 0 (the
            // stack sits first in memory), which a refused memory growth can
            // explain too.
            Some(Trap::StackOverflow) => stack_overflow(),
            Some(Trap::MemoryOutOfBounds) if !memory_denied => stack_overflow(),
            _ if memory_denied => ExecutionError::new(
                ErrorKind::OutOfMemory,
                format!(
                    "the script ran out of memory (the {} MiB sandbox limit); work on smaller pieces of data",
                    self.limits.max_heap / (1024 * 1024)
                ),
            ),
            _ => {
                tracing::error!(error = ?err, "guest trapped");
                ExecutionError::new(ErrorKind::Internal, "the sandbox guest failed unexpectedly")
            }
        }
    }
}

fn stack_overflow() -> ExecutionError {
    ExecutionError::new(
        ErrorKind::StackOverflow,
        "the script recursed too deeply (stack overflow); use iteration or less nesting",
    )
}

/// A report for an execution that never started.
fn failed(kind: ErrorKind, message: impl Into<String>) -> Report {
    Report::refused(ExecutionError::new(kind, message))
}

/// `budget_spent`: whether the host refused a call for the call budget in this
/// run, so a script that throws its own `ForgeError("TOOL_CALL_BUDGET")` is
/// not mistaken for one.
fn classify_script_error(e: wit::ScriptError, budget_spent: bool) -> ExecutionError {
    use wit::ScriptErrorKind as K;
    let forge = e.forge.map(|f| ForgeError {
        code: match f.code {
            wit::Code::Known(c) => Code::Known(c.into()),
            // A script's own code, or the text of one of ours: recognized
            // by its text.
            wit::Code::Other(text) => Code::from(text),
        },
        message: f.message,
        retryable: f.retryable,
        suggestion: f.suggestion,
        quoted: None,
    });
    let kind = match e.kind {
        K::Syntax => ErrorKind::Syntax,
        K::NotAFunction => ErrorKind::NotAFunction,
        K::Thrown => ErrorKind::Thrown,
        K::NeverSettled => ErrorKind::NeverSettled,
        K::OutOfMemory => ErrorKind::OutOfMemory,
        K::OutputTooLarge => ErrorKind::OutputTooLarge,
        K::NotSerializable => ErrorKind::NotSerializable,
        K::Internal => ErrorKind::Internal,
        // The guest's own deadline (`deadline-ms`), in the host's words.
        K::Timeout => ErrorKind::Timeout,
    }
    .of_script_failure(forge.as_ref(), budget_spent);
    // A script's failure leaves towards the client here: redacted and cut
    // once, by the client's boundary (`quickforge_core::shown`).
    shown::to_client(
        ExecutionError {
            kind,
            message: e.message,
            forge,
            stack: e.stack,
        },
        &shown::Native,
    )
}

fn engine_config(limits: &SandboxLimits, tuning: &Tuning) -> Config {
    let mut config = Config::new();
    config.consume_fuel(tuning.fuel);
    config.epoch_interruption(tuning.epoch);
    if tuning.explicit_bounds_checks {
        config
            .memory_reservation(limits.max_heap as u64)
            .memory_guard_size(0);
    }
    if tuning.perf_map {
        config.profiler(ProfilingStrategy::PerfMap);
    }
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(ASYNC_STACK);
    // One slot per concurrent execution, plus one for the Wizer snapshot run
    // at startup (for a guest built from source; the committed one is
    // already snapshotted). The guest is one component of a handful of core instances
    // (its main module and the shims `wasm-component-ld` adds).
    let slots = limits.max_concurrent as u32 + 1;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots * 8)
        .max_core_instances_per_component(8)
        .total_memories(slots * 2)
        .max_memories_per_component(2)
        .total_tables(slots * 8)
        .max_tables_per_component(8)
        .total_stacks(slots)
        .max_memory_size(limits.max_heap)
        .max_component_instance_size(1 << 20)
        .max_core_instance_size(1 << 20)
        // Reset a finished instance's dirty pages in place (found with the
        // kernel's pagemap scan) instead of dropping them: the next instance
        // in the slot then takes no page faults on the memory a run touches.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(KEEP_RESIDENT)
        .async_stack_keep_resident(ASYNC_STACK);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// Linear-memory limiter that remembers whether it refused growth, so a trap
/// that follows can be reported as `out_of_memory`.
struct MemoryLimiter {
    max: usize,
    denied: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max {
            self.denied = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; QuickJS does not grow them.
        Ok(desired <= 100_000)
    }
}

/// A finished host operation: its call id and its JSON result or error.
type Completed = (u32, Result<String, ForgeError>);

/// Host operations in flight, each cancellable: one that `calls.cancel`
/// dropped completes as `None`.
type InFlight = FuturesUnordered<BoxFuture<Option<Completed>>>;

/// The data of one execution's `Store`.
struct ExecutionState {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: MemoryLimiter,
    /// Every operation the script starts goes through it.
    pipeline: Pipeline,
    /// Host operations in flight. They are polled on the execution's own
    /// task while the guest waits in `next-completion`: a call that is ready
    /// at once costs no cross-thread wake-up, and all calls in flight make
    /// progress together. Dropping them (the execution ended) cancels them.
    calls: InFlight,
    /// Timers pending (see `imports/calls.rs`): polled like calls, but
    /// dropped, not drained, when the run has its result. A cleared timer
    /// stays in the set until the set is polled, so its length, not the
    /// live ids, is what the timer cap counts.
    timers: InFlight,
    /// Timers that fired while the set was swept for cleared ones, kept
    /// for `next-completion` (counted against the cap with `timers`).
    timers_fired: std::collections::VecDeque<Completed>,
    /// How to cancel each call and timer in flight, by id.
    aborts: std::collections::HashMap<u32, futures_util::future::AbortHandle>,
    /// Timers started in this run, which numbers them.
    timers_started: u32,
    logs: Vec<LogLine>,
    log_bytes: usize,
    logs_dropped: u32,
    max_log_lines: usize,
    max_log_bytes: usize,
    /// Host work done for the script, held to its deadline.
    meter: HostMeter,
}

impl ExecutionState {
    fn new(
        mode: Mode,
        cx: ExecutionContext,
        limits: &SandboxLimits,
        deadline: Arc<Deadline>,
    ) -> Self {
        let call_limits = CallLimits {
            max_calls: limits.max_tool_calls,
            max_args_size: limits.max_args_size,
            max_stash_calls: limits.max_stash_calls,
        };
        ExecutionState {
            // No preopens, no env, no args, closed stdio, every socket denied:
            // WASI is linked only because the guest's libc imports it, and
            // for `wasi:random`, which seeds the guest's `Math.random` every
            // run. A context per execution means a generator per execution:
            // wasmtime-wasi seeds its `wasi:random/random` (a ChaCha
            // `StdRng`) and its insecure generator and seed from the thread's
            // OS-seeded CSPRNG, so no execution can predict another's
            // randomness.
            wasi: WasiCtx::builder().max_random_size(MAX_RANDOM_BYTES).build(),
            table: ResourceTable::new(),
            memory: MemoryLimiter {
                max: limits.max_heap,
                denied: false,
            },
            pipeline: Pipeline::new(mode, call_limits, cx),
            calls: FuturesUnordered::new(),
            timers: FuturesUnordered::new(),
            timers_fired: std::collections::VecDeque::new(),
            aborts: std::collections::HashMap::new(),
            timers_started: 0,
            logs: Vec::new(),
            log_bytes: 0,
            logs_dropped: 0,
            max_log_lines: limits.max_log_lines,
            max_log_bytes: limits.max_log_bytes,
            meter: HostMeter::new(deadline),
        }
    }
}

impl WasiView for ExecutionState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bench tuning builds and runs a script (`benches/gap.rs` relies
    /// on it), and the default is the gateway's: fuel on, nothing else.
    #[tokio::test(flavor = "multi_thread")]
    async fn every_tuning_runs_a_script() {
        let gateway = Tuning::default();
        assert!(gateway.fuel && !gateway.epoch && !gateway.explicit_bounds_checks);
        let limits = SandboxLimits {
            max_concurrent: 1,
            ..SandboxLimits::default()
        };
        for tuning in [
            Tuning {
                fuel: false,
                ..Tuning::default()
            },
            Tuning {
                epoch: true,
                ..Tuning::default()
            },
            Tuning {
                explicit_bounds_checks: true,
                ..Tuning::default()
            },
        ] {
            let sandbox = Sandbox::new_tuned(limits.clone(), CacheDir::Disabled, tuning.clone())
                .await
                .unwrap();
            let report = sandbox
                .run(
                    Mode::Execute,
                    "async () => 1 + 1",
                    ExecutionContext::default(),
                )
                .await;
            assert_eq!(report.result.unwrap(), serde_json::json!(2), "{tuning:?}");
        }
    }
}
