//! `cargo bench --bench gap`: where the CPU-bound script of
//! `benches/sandbox.rs` loses to native QuickJS (issue 18, item 3), one
//! arm per setting, all arms alternated round by round in the same run so
//! that each sees the same machine, medians reported against native
//! QuickJS and against the gateway's own setting.
//!
//! Arms (each a [`Tuning`] of one sandbox; the gateway runs the default):
//!
//! - `native`: the script in native QuickJS (rquickjs on the host);
//! - `gateway`: the sandbox as the gateway runs it (fuel on, no epochs,
//!   bounds checks elided against a 4 GiB reservation plus guard), and a
//!   second identical arm, `gateway (A/A)`, whose ratio to the first is the
//!   run's noise floor;
//! - `no fuel`: fuel metering off (and with it the CPU budget);
//! - `fuel + epoch`: epoch interruption on top of fuel;
//! - `bounds checks`: explicit bounds checks (reservation cut to the heap,
//!   no guard);
//! - `no fuel, guest <label>`: fuel off and another guest build, one arm per
//!   `label=path.wasm` in `QUICKFORGE_GAP_GUESTS` (comma-separated), each
//!   against the first of them (build the first exactly as the embedded
//!   guest, `strip = false` aside, and vary one thing in each other): how a
//!   guest build flag or allocator changes interpreter speed, without
//!   fuel's per-block cost in the way.
//!
//! `QUICKFORGE_GAP_PROFILE=<arm>` instead runs that one arm (`native`,
//! `gateway` or `no fuel`) for `QUICKFORGE_GAP_SECS` seconds (default 20)
//! with Wasmtime's perf map on, for `perf record -e cpu-clock -g -p <pid>`
//! (or `perf record -- cargo bench --bench gap`): `perf report` then names
//! the guest's functions if the guest kept its name section (the embedded
//! one is stripped: the first guest of `QUICKFORGE_GAP_GUESTS` runs instead,
//! when set).
//!
//! Prints a Markdown table; README.md's "Where the CPU-bound gap goes"
//! carries the figures.

#[path = "native.rs"]
mod native;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quickforge::{CacheDir, ExecutionContext, Mode, NoServers, Sandbox, SandboxLimits, Tuning};

/// The CPU-bound script of `benches/sandbox.rs`.
const CPU: &str = "async () => { const fib = (n) => n < 2 ? n : fib(n - 1) + fib(n - 2); let s = 0; for (let i = 0; i < 1000000; i++) s += i % 7; return fib(25) + s; }";
/// Rounds; every arm runs once per round.
const ROUNDS: usize = 21;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn time_wasm(sandbox: &Sandbox) -> Duration {
    let cx = ExecutionContext {
        manifest: Arc::new(NoServers),
        audit: None,
        ..ExecutionContext::default()
    };
    let t = Instant::now();
    let report = sandbox.run(Mode::Execute, CPU, cx).await;
    let elapsed = t.elapsed();
    black_box(report.result.expect("the script succeeds"));
    elapsed
}

/// One arm: a label, a sandbox (none for native QuickJS) and the label of
/// the arm it is compared with besides native.
struct Arm {
    label: String,
    sandbox: Option<Sandbox>,
    against: String,
}

impl Arm {
    /// One run of the script in this arm.
    async fn time(&self) -> Duration {
        match &self.sandbox {
            Some(s) => time_wasm(s).await,
            None => native::time_native(CPU),
        }
    }
}

/// An arm of the gateway's sandbox with one setting changed, against the
/// gateway's.
async fn tuned(label: &str, tuning: Tuning) -> Arm {
    Arm {
        label: label.into(),
        sandbox: Some(sandbox(tuning).await),
        against: "gateway".into(),
    }
}

async fn sandbox(tuning: Tuning) -> Sandbox {
    // Fuel far past the script; one slot, as the runs are sequential.
    let limits = SandboxLimits {
        max_fuel: 1_000_000_000_000,
        max_concurrent: 1,
        ..SandboxLimits::default()
    };
    Sandbox::new_tuned(limits, CacheDir::Default, tuning)
        .await
        .expect("the sandbox builds")
}

async fn profile(arm: &str) {
    let secs: u64 = std::env::var("QUICKFORGE_GAP_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let tuning = Tuning {
        fuel: arm != "no fuel",
        perf_map: true,
        guest: native::guests_from("QUICKFORGE_GAP_GUESTS")
            .into_iter()
            .next()
            .map(|(_, wasm)| wasm),
        ..Tuning::default()
    };
    let sandbox = (arm != "native").then_some(sandbox(tuning).await);
    eprintln!("profiling `{arm}` for {secs} s, pid {}", std::process::id());
    let (start, mut runs) = (Instant::now(), 0);
    while start.elapsed() < Duration::from_secs(secs) {
        match &sandbox {
            Some(s) => time_wasm(s).await,
            None => native::time_native(CPU),
        };
        runs += 1;
    }
    eprintln!("{runs} runs");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if let Ok(arm) = std::env::var("QUICKFORGE_GAP_PROFILE") {
            return profile(&arm).await;
        }
        let no_fuel = || Tuning {
            fuel: false,
            ..Tuning::default()
        };
        let mut arms = vec![
            Arm {
                label: "native".into(),
                sandbox: None,
                against: "native".into(),
            },
            Arm {
                label: "gateway".into(),
                sandbox: Some(sandbox(Tuning::default()).await),
                against: "gateway".into(),
            },
            Arm {
                label: "gateway (A/A)".into(),
                sandbox: Some(sandbox(Tuning::default()).await),
                against: "gateway".into(),
            },
            Arm {
                label: "no fuel".into(),
                sandbox: Some(sandbox(no_fuel()).await),
                against: "gateway".into(),
            },
            tuned(
                "fuel + epoch",
                Tuning {
                    epoch: true,
                    ..Tuning::default()
                },
            )
            .await,
            tuned(
                "bounds checks",
                Tuning {
                    explicit_bounds_checks: true,
                    ..Tuning::default()
                },
            )
            .await,
        ];
        let guests = native::guests_from("QUICKFORGE_GAP_GUESTS");
        let control = guests
            .first()
            .map(|(label, _)| format!("no fuel, guest {label}"));
        for (label, wasm) in guests {
            let tuning = Tuning {
                guest: Some(wasm),
                ..no_fuel()
            };
            arms.push(Arm {
                label: format!("no fuel, guest {label}"),
                sandbox: Some(sandbox(tuning).await),
                against: control.clone().expect("there is a first guest"),
            });
        }
        // Warm every arm (caches, pool slots) before sampling.
        for arm in &arms {
            for _ in 0..2 {
                arm.time().await;
            }
        }
        let mut samples = vec![Vec::with_capacity(ROUNDS); arms.len()];
        for _ in 0..ROUNDS {
            for (arm, samples) in arms.iter().zip(&mut samples) {
                samples.push(arm.time().await);
            }
        }
        let medians: Vec<Duration> = samples.into_iter().map(median).collect();
        let of = |label: &str| medians[arms.iter().position(|a| a.label == label).unwrap()];
        let native = of("native");
        println!("| arm | median | ÷ native | ÷ baseline (which) |");
        println!("| --- | --- | --- | --- |");
        for (arm, m) in arms.iter().zip(&medians) {
            let base = of(&arm.against);
            println!(
                "| {} | {:.1} ms | {:.2}× | {:.3}× ({}) |",
                arm.label,
                m.as_secs_f64() * 1e3,
                m.as_secs_f64() / native.as_secs_f64(),
                m.as_secs_f64() / base.as_secs_f64(),
                arm.against,
            );
        }
    });
}
