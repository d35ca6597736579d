//! `cargo bench --bench budgets`: what real data work costs against the
//! default budgets (issue 18, item 3), each figure a median of several runs
//! with its baseline measured in the same run.
//!
//! - Three workloads models write, in the sandbox with budgets too large to
//!   matter, against the same script in native QuickJS (rquickjs on the
//!   host): 1e6 `Map` entries with string keys (1e6 sets, 1e6 gets),
//!   sorting 1e5 objects with a comparator, and a 10 MB JSON
//!   parse-and-stringify. For each: wall time, fuel, and the smallest
//!   `max_heap_mb` (of a few steps) it runs in: what `max_fuel` and
//!   `max_heap_mb` must leave room for.
//! - Memory per parked execution: the process's resident memory while N
//!   executions each wait on a tool call that has not answered, minus
//!   before, divided by N; at the default `max_heap_mb` and at the one
//!   before it (64), in the same run.
//!
//! Prints Markdown tables; README.md carries the figures.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use quickforge::{
    CacheDir, ExecutionContext, ForgeError, Mode, NoServers, Route, Sandbox, SandboxLimits,
    Servers, Stash, Target,
};
use serde_json::Value;

/// 1e6 `Map` entries with string keys: 1e6 sets, then 1e6 gets.
const MAP: &str = "async () => { const m = new Map(); for (let i = 0; i < 1000000; i++) m.set('key' + i, i); let s = 0; for (let i = 0; i < 1000000; i++) s += m.get('key' + i); return m.size + s; }";
/// Sorting 1e5 objects by two fields.
const SORT: &str = "async () => { const a = []; for (let i = 0; i < 100000; i++) a.push({ id: i, name: 'n' + ((i * 7919) % 100000), score: (i * 104729) % 1000 }); a.sort((x, y) => x.score - y.score || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0)); return a[0].id + a[99999].id; }";
/// A 10 MB JSON text (140,000 objects) parsed and stringified again.
const JSON_10MB: &str = "async () => { const a = []; for (let i = 0; i < 140000; i++) a.push({ id: i, name: 'item number ' + i, tags: ['a', 'b', 'c'], value: i * 1.5, ok: i % 2 === 0 }); const s = JSON.stringify(a); const t = JSON.stringify(JSON.parse(s)); return [s.length, s === t]; }";

const RUNS: usize = 5;
/// The heap sizes tried, MiB.
const HEAP_STEPS: [usize; 8] = [64, 96, 128, 192, 256, 384, 512, 1024];
const PARKED: usize = 200;

/// A tool that answers once `open` is set, and counts the calls waiting.
struct Gate {
    waiting: Arc<AtomicUsize>,
    open: Arc<tokio::sync::Notify>,
}

impl Servers for Gate {
    fn route(&self, _: Target<'_>) -> Result<Route, ForgeError> {
        let (waiting, open) = (self.waiting.clone(), self.open.clone());
        Ok(Route::To {
            guards: None,
            send: Box::new(move || {
                Box::pin(async move {
                    let notified = open.notified();
                    waiting.fetch_add(1, Ordering::SeqCst);
                    notified.await;
                    Ok(Value::Bool(true))
                })
            }),
        })
    }
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn cx(servers: Arc<dyn Servers>) -> ExecutionContext {
    ExecutionContext {
        servers,
        manifest: Arc::new(NoServers),
        stash: Arc::new(Stash::default()),
        audit: None,
        ..ExecutionContext::default()
    }
}

fn native(code: &str) -> Duration {
    use rquickjs::{Context, Function, Promise, Runtime, Value};
    let t = Instant::now();
    let rt = Runtime::new().unwrap();
    let ctx = Context::full(&rt).unwrap();
    ctx.with(|ctx| {
        let f: Function = ctx.eval(format!("(\n{code}\n)")).unwrap();
        let v: Value = f.call(()).unwrap();
        let out: Value = v
            .into_promise()
            .map(|p: Promise| p.finish().unwrap())
            .unwrap();
        black_box(ctx.json_stringify(out).unwrap());
    });
    t.elapsed()
}

/// Resident memory of this process, bytes (Linux).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Resident memory per execution parked on a tool call, at `heap_mb`.
async fn parked(heap_mb: usize) -> u64 {
    let limits = SandboxLimits {
        max_heap: heap_mb << 20,
        max_concurrent: PARKED,
        timeout: Duration::from_secs(60),
        ..SandboxLimits::default()
    };
    let sandbox = Arc::new(Sandbox::new(limits, CacheDir::Default).await.unwrap());
    // one run first, so that caches and the pool's first slot are warm
    let gate = Arc::new(Gate {
        waiting: Arc::default(),
        open: Arc::default(),
    });
    let warm = sandbox
        .run(Mode::Execute, "async () => 1", cx(gate.clone()))
        .await;
    black_box(warm.result.unwrap());
    let before = rss();
    let mut runs = Vec::new();
    for _ in 0..PARKED {
        let (sandbox, gate) = (sandbox.clone(), gate.clone());
        runs.push(tokio::spawn(async move {
            let code = "async () => { const held = 'x'.repeat(1000); await forge.callTool('s', 't', {}); return held.length; }";
            sandbox.run(Mode::Execute, code, cx(gate)).await
        }));
    }
    while gate.waiting.load(Ordering::SeqCst) < PARKED {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let during = rss();
    gate.open.notify_waiters();
    for r in runs {
        r.await.unwrap().result.unwrap();
    }
    during.saturating_sub(before) / PARKED as u64
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Budgets far past the work, so that only the work is measured.
        let roomy = SandboxLimits {
            max_fuel: 1_000_000_000_000,
            max_heap: 1024 << 20,
            timeout: Duration::from_secs(120),
            ..SandboxLimits::default()
        };
        let sandbox = Sandbox::new(roomy.clone(), CacheDir::Default).await.unwrap();
        println!("| workload | quickforge (median) | native QuickJS (median) | ratio | fuel | smallest max_heap_mb |");
        println!("| --- | --- | --- | --- | --- | --- |");
        for (name, code) in [
            ("1e6 `Map` entries (string keys) set and read", MAP),
            ("sort 1e5 objects", SORT),
            ("10 MB JSON parse + stringify", JSON_10MB),
        ] {
            let (mut wasm, mut nat, mut fuel) = (vec![], vec![], vec![]);
            for _ in 0..RUNS {
                let t = Instant::now();
                let report = sandbox
                    .run(Mode::Execute, code, cx(Arc::new(NoServers)))
                    .await;
                wasm.push(t.elapsed());
                black_box(report.result.expect("the workload succeeds"));
                fuel.push(report.stats.fuel);
                nat.push(native(code));
            }
            let (w, n) = (median(wasm), median(nat));
            let mut fits = None;
            for mb in HEAP_STEPS {
                let limits = SandboxLimits {
                    max_heap: mb << 20,
                    ..roomy.clone()
                };
                let small = Sandbox::new(limits, CacheDir::Default).await.unwrap();
                let report = small.run(Mode::Execute, code, cx(Arc::new(NoServers))).await;
                if report.result.is_ok() {
                    fits = Some(mb);
                    break;
                }
            }
            println!(
                "| {name} | {:.0} ms | {:.0} ms | {:.2}× | {:.1}e9 | {} |",
                w.as_secs_f64() * 1e3,
                n.as_secs_f64() * 1e3,
                w.as_secs_f64() / n.as_secs_f64(),
                median(fuel) as f64 / 1e9,
                fits.map_or("over 1024".to_string(), |mb| mb.to_string()),
            );
        }
        let default_heap = SandboxLimits::default().max_heap >> 20;
        println!();
        println!("| memory per parked execution ({PARKED} parked) | at max_heap_mb {default_heap} | at max_heap_mb 64 |");
        println!("| --- | --- | --- |");
        let now = parked(default_heap).await;
        let before = parked(64).await;
        println!(
            "| resident memory | {} KiB | {} KiB |",
            now >> 10,
            before >> 10
        );
    });
}
