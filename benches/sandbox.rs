//! `cargo bench --bench sandbox`: medians for the sandbox's hot paths, each
//! against a baseline measured in the same run.
//!
//! - a trivial script in a fresh instance, vs. a fresh native QuickJS
//!   runtime + context (rquickjs on the host, no Wasm) running the same script;
//! - one `forge.callTool` round trip through the host import, with a tool
//!   that answers at once, in a script that awaits 1,000 calls one after the
//!   other: per call, against the same loop awaiting an already-resolved
//!   promise instead (what any async API costs the script in QuickJS), so
//!   the difference is quickforge's own call path;
//! - a CPU-bound script (fib(25) plus a 10^6-step loop), vs. the same script
//!   in native QuickJS;
//! - the same CPU-bound script with the guest's own deadline set (an hour
//!   away, so it never fires), vs. without: the cost of QuickJS's interrupt
//!   handler, which reads the monotonic clock about every 10,000 back-edges
//!   or calls (`guest/src/deadline.rs`). The gateway does not set it; hosts
//!   without fuel do.
//!
//! With `QUICKFORGE_BENCH_GUESTS=label=path,...` (raw or pre-initialized
//! guest components built from the same WIT), it adds one row per guest
//! after the first: the trivial script in a fresh instance of that guest
//! against the first one, sampled in alternating blocks of 100 so both see
//! the same drift. That is how a guest change is held to the fresh
//! instance's budget (README.md, "What scripts can use", says how).
//!
//! Prints a Markdown table; README.md carries the figures.

#[path = "native.rs"]
mod native;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use native::time_native;
use quickforge::{
    CacheDir, ExecutionContext, ForgeError, Mode, NoServers, Route, Sandbox, SandboxLimits,
    Servers, Stash, Target, Tuning,
};
use serde_json::Value;

const TRIVIAL: &str = "async () => 1 + 1";
const CPU: &str = "async () => { const fib = (n) => n < 2 ? n : fib(n - 1) + fib(n - 2); let s = 0; for (let i = 0; i < 1000000; i++) s += i % 7; return fib(25) + s; }";
const CALLS: u32 = 1000;

/// A tool that answers at once, so only quickforge's own overhead is timed.
struct Instant0;

impl Servers for Instant0 {
    fn route(&self, _: Target<'_>) -> Result<Route, ForgeError> {
        Ok(Route::To {
            guards: None,
            send: Box::new(|| Box::pin(async { Ok(Value::Bool(true)) })),
        })
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

async fn sample_sandbox(sandbox: &Sandbox, code: &str, warmup: usize, n: usize) -> Duration {
    let cx = || ExecutionContext {
        servers: Arc::new(Instant0),
        manifest: Arc::new(NoServers),
        stash: Arc::new(Stash::default()),
        audit: None,
        ..ExecutionContext::default()
    };
    for _ in 0..warmup {
        sandbox
            .run(Mode::Execute, code, cx())
            .await
            .result
            .expect("bench script succeeds");
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let cx = cx();
        let t = Instant::now();
        let report = sandbox.run(Mode::Execute, code, cx).await;
        samples.push(t.elapsed());
        black_box(report.result.expect("bench script succeeds"));
    }
    median(samples)
}

/// Medians of `code` in the sandbox and in native QuickJS, sampled
/// alternately so that both see the same machine noise (for long scripts,
/// where that noise dominates and cache effects do not).
async fn sample_pair(
    sandbox: &Sandbox,
    code: &str,
    warmup: usize,
    n: usize,
) -> (Duration, Duration) {
    sample_sandbox(sandbox, code, warmup, 1).await;
    for _ in 0..warmup {
        time_native(code);
    }
    let (mut wasm, mut native) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        wasm.push(sample_sandbox(sandbox, code, 0, 1).await);
        native.push(time_native(code));
    }
    (median(wasm), median(native))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let t = Instant::now();
        // Default limits, but enough tool calls for the round-trip loop.
        let limits = SandboxLimits { max_tool_calls: CALLS, ..SandboxLimits::default() };
        let mut sandbox = Sandbox::new(limits.clone(), CacheDir::Default).await.expect("sandbox builds");
        eprintln!("sandbox ready in {:?}", t.elapsed());

        // Sampled in two blocks, not interleaved: a native runtime created
        // between two instances would evict the caches a gateway keeps warm.
        let trivial = sample_sandbox(&sandbox, TRIVIAL, 200, 2000).await;
        for _ in 0..200 {
            time_native(TRIVIAL);
        }
        let trivial_native = median((0..2000).map(|_| time_native(TRIVIAL)).collect());

        let calls_code = format!("async () => {{ for (let i = 0; i < {CALLS}; i++) await forge.callTool('s', 't', {{ i }}); return 1; }}");
        let awaits_code = format!("async () => {{ for (let i = 0; i < {CALLS}; i++) await Promise.resolve({{ i }}); return 1; }}");
        // Alternated, so that the difference is not the machine's drift.
        sample_sandbox(&sandbox, &calls_code, 5, 1).await;
        sample_sandbox(&sandbox, &awaits_code, 5, 1).await;
        let (mut calls, mut awaits) = (Vec::new(), Vec::new());
        for _ in 0..61 {
            calls.push(sample_sandbox(&sandbox, &calls_code, 0, 1).await);
            awaits.push(sample_sandbox(&sandbox, &awaits_code, 0, 1).await);
        }
        let (calls, awaits) = (median(calls), median(awaits));
        let per_call = calls.saturating_sub(trivial) / CALLS;
        let per_await = awaits.saturating_sub(trivial) / CALLS;

        let (cpu, cpu_native) = sample_pair(&sandbox, CPU, 3, 21).await;

        // Alternated on the same sandbox (same engine, code and instance
        // pool), so the deadline is the only difference and both see the
        // same noise.
        // A third arm, without the deadline too, gives the noise floor: what
        // two identical arms differ by in this run.
        let far = Some(Duration::from_secs(3600));
        let (mut plain, mut deadline, mut again) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..41 {
            sandbox.set_guest_deadline(None);
            plain.push(sample_sandbox(&sandbox, CPU, 0, 1).await);
            sandbox.set_guest_deadline(far);
            deadline.push(sample_sandbox(&sandbox, CPU, 0, 1).await);
            sandbox.set_guest_deadline(None);
            again.push(sample_sandbox(&sandbox, CPU, 0, 1).await);
        }
        let (plain, deadline, again) = (median(plain), median(deadline), median(again));

        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!("| what | quickforge (median) | baseline (median) | ratio |");
        println!("| --- | --- | --- | --- |");
        println!(
            "| trivial script, fresh instance | {} | {} native QuickJS runtime + context | {:.2}× |",
            micros(trivial),
            micros(trivial_native),
            ratio(trivial, trivial_native)
        );
        println!(
            "| one `callTool` round trip, zero-latency tool, awaited in a loop | {} | {} awaiting a resolved promise | +{} per call |",
            micros(per_call),
            micros(per_await),
            micros(per_call.saturating_sub(per_await))
        );
        println!(
            "| CPU-bound script (fib(25) + 10^6 loop) | {} | {} native QuickJS | {:.2}× |",
            micros(cpu),
            micros(cpu_native),
            ratio(cpu, cpu_native)
        );
        println!(
            "| the same, guest deadline set (interrupt handler on) | {} | {} without | {:.3}× |",
            micros(deadline),
            micros(plain),
            ratio(deadline, plain)
        );
        println!(
            "| the same, no deadline (noise floor: a second identical arm) | {} | {} | {:.3}× |",
            micros(again),
            micros(plain),
            ratio(again, plain)
        );

        compare_guests(&limits).await;
    });
}

/// The fresh-instance row of each guest after the first, against the first.
async fn compare_guests(limits: &SandboxLimits) {
    let guests = native::guests_from("QUICKFORGE_BENCH_GUESTS");
    let Some(((control_label, _), _)) = guests.split_first() else {
        return;
    };
    let mut sandboxes = Vec::new();
    for (label, wasm) in &guests {
        let tuning = Tuning {
            guest: Some(wasm.clone()),
            ..Tuning::default()
        };
        let sandbox = Sandbox::new_tuned(limits.clone(), CacheDir::Default, tuning)
            .await
            .unwrap_or_else(|e| panic!("guest {label} does not load: {e:#}"));
        sample_sandbox(&sandbox, TRIVIAL, 200, 1).await;
        sandboxes.push(sandbox);
    }
    for (i, (label, _)) in guests.iter().enumerate().skip(1) {
        let (mut control, mut other) = (Vec::new(), Vec::new());
        for _ in 0..40 {
            for _ in 0..100 {
                control.push(sample_sandbox(&sandboxes[0], TRIVIAL, 0, 1).await);
            }
            for _ in 0..100 {
                other.push(sample_sandbox(&sandboxes[i], TRIVIAL, 0, 1).await);
            }
        }
        let (control, other) = (median(control), median(other));
        println!(
            "| trivial script, fresh instance, guest `{label}` | {} | {} guest `{control_label}` | {:.3}× |",
            micros(other),
            micros(control),
            other.as_secs_f64() / control.as_secs_f64()
        );
    }
}
