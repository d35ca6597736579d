//! Shared fixtures: sandboxes built once per configuration, and an in-test
//! dispatcher whose tools really sleep, fail and echo.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use quickforge::{
    BoxFuture, CacheDir, ExecutionContext, ForgeError, ManifestView, Mode, Query, Report, Route,
    Sandbox, SandboxLimits, SendRequest, Servers, Stash, Target,
};
use serde_json::{Value, json};
use tokio::sync::RwLock;

pub use crate::processes::cache_dir;

/// Every execution holds this for reading; the memory soak holds it for
/// writing, so it measures the process's memory with nothing else running.
pub static EXCLUSIVE: RwLock<()> = RwLock::const_new(());

/// Which shared sandbox a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Default limits.
    Default,
    /// Small limits, so each limit test ends quickly.
    Tight,
    /// A short timeout and an unbounded CPU budget, to reach the wall clock.
    ShortTimeout,
    /// One slot and a short queue wait.
    OneSlot,
    /// The heap of the defaults before issue 18 (64 MiB), with the default
    /// CPU budget: data work that outgrows the heap before the budget.
    SmallHeap,
    /// Default limits, plus the guest's own deadline ([`GUEST_DEADLINE`]),
    /// far below the host's timeout and CPU budget: what ends a script
    /// early is the guest's deadline alone.
    GuestDeadline,
}

/// The guest's own deadline on [`Kind::GuestDeadline`]: short, so its tests
/// end quickly; the defaults' 10 s timeout and ~3.6 s of fuel are far past it.
pub const GUEST_DEADLINE: Duration = Duration::from_millis(300);

/// The limits of a sandbox kind.
pub fn limits(kind: Kind) -> SandboxLimits {
    let d = SandboxLimits::default();
    match kind {
        Kind::Default => d,
        Kind::Tight => SandboxLimits {
            timeout: Duration::from_secs(5),
            max_fuel: 1_000_000_000,
            max_heap: 32 * 1024 * 1024,
            max_code_size: 8 * 1024,
            max_output_size: 64 * 1024,
            max_tool_calls: 5,
            max_args_size: 1024,
            max_log_lines: 5,
            max_log_bytes: 100,
            ..d
        },
        Kind::ShortTimeout => SandboxLimits {
            timeout: Duration::from_millis(400),
            // About 10 s of JS: far past the timeout, so spinning ends as
            // `timeout`; finite, so a deadline that stopped firing fails the
            // test as `cpu_budget` instead of hanging it.
            max_fuel: 100_000_000_000,
            ..d
        },
        Kind::OneSlot => SandboxLimits {
            max_concurrent: 1,
            max_queue_wait: Duration::from_millis(100),
            ..d
        },
        Kind::SmallHeap => SandboxLimits {
            max_heap: 64 * 1024 * 1024,
            ..d
        },
        Kind::GuestDeadline => d,
    }
}

/// The shared sandbox of `kind`, built on first use.
pub fn sandbox(kind: Kind) -> &'static Sandbox {
    static SANDBOXES: LazyLock<Mutex<HashMap<Kind, &'static Sandbox>>> =
        LazyLock::new(Default::default);
    let mut map = SANDBOXES.lock().unwrap();
    map.entry(kind).or_insert_with(|| {
        // Sandbox::new is async; build it on a runtime of its own so that it
        // can be shared by every test's runtime.
        let limits = limits(kind);
        let mut sandbox = std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(Sandbox::new(limits, CacheDir::Path(cache_dir())))
        })
        .join()
        .unwrap()
        .expect("sandbox builds");
        if kind == Kind::GuestDeadline {
            sandbox.set_guest_deadline(Some(GUEST_DEADLINE));
        }
        Box::leak(Box::new(sandbox))
    })
}

/// A context over a fresh [`TestTools`] and a fresh stash.
pub fn context() -> (ExecutionContext, Arc<TestTools>) {
    let tools = Arc::new(TestTools::default());
    let cx = ExecutionContext {
        servers: tools.clone(),
        manifest: tools.clone(),
        stash: Arc::new(Stash::default()),
        audit: None,
        ..ExecutionContext::default()
    };
    (cx, tools)
}

/// Runs `code` in execute mode on the `kind` sandbox with a fresh context.
pub async fn run(kind: Kind, code: &str) -> Report {
    run_with(kind, Mode::Execute, code, context().0).await
}

/// Runs `code` on the `kind` sandbox with `cx`.
pub async fn run_with(kind: Kind, mode: Mode, code: &str, cx: ExecutionContext) -> Report {
    let _shared = EXCLUSIVE.read().await;
    sandbox(kind).run(mode, code, cx).await
}

/// Runs `code`, checks it fails as `kind` within `bound`, then checks that
/// the same sandbox still runs a script. Returns the error's message.
pub async fn fails_as(
    sandbox: Kind,
    code: &str,
    kind: quickforge::ErrorKind,
    bound: Duration,
) -> String {
    let report = run(sandbox, code).await;
    let elapsed = Duration::from_micros(report.stats.micros);
    let err = error(&report).clone();
    assert_eq!(err.kind, kind, "{code}: {err:?}");
    assert!(elapsed < bound, "{code}: took {elapsed:?}, bound {bound:?}");
    assert!(!err.message.is_empty());
    let next = run(sandbox, "async () => 'still serving'").await;
    assert_eq!(value(&next), &json!("still serving"));
    err.message
}

/// Generous bound for a limit to end an execution: only a hang exceeds it.
pub const HANG_BOUND: Duration = Duration::from_secs(20);

/// The value of a successful run; panics with the error otherwise.
pub fn value(report: &Report) -> &Value {
    match &report.result {
        Ok(v) => v,
        Err(e) => panic!("expected success, got {e:?}"),
    }
}

/// The error of a failed run; panics with the value otherwise.
pub fn error(report: &Report) -> &quickforge::ExecutionError {
    match &report.result {
        Ok(v) => panic!("expected an error, got value {v}"),
        Err(e) => e,
    }
}

/// Downstream "servers" implemented in the test process, with tools that do
/// real work: `alpha/echo` returns its call, `alpha/sleep` sleeps `ms`,
/// `alpha/fail` fails, `alpha/big` returns `bytes` bytes; `beta/docs.search`
/// shows a dotted (category) name. Counts calls in flight.
#[derive(Default)]
pub struct TestTools {
    /// Shared with the calls in flight.
    pub counters: Arc<Counters>,
}

/// What [`TestTools`] observed.
#[derive(Default)]
pub struct Counters {
    in_flight: AtomicUsize,
    /// Highest number of calls in flight at once.
    pub max_in_flight: AtomicUsize,
    /// Calls received.
    pub calls: AtomicUsize,
    /// Calls that ran to completion.
    pub completed: AtomicUsize,
}

struct InFlight(Arc<Counters>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn enter(counters: &Arc<Counters>) -> InFlight {
    counters.calls.fetch_add(1, Ordering::SeqCst);
    let now = counters.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    counters.max_in_flight.fetch_max(now, Ordering::SeqCst);
    InFlight(counters.clone())
}

const TOOLS: &[(&str, &str, &str)] = &[
    (
        "alpha",
        "echo",
        "Return the call's server, tool and arguments",
    ),
    ("alpha", "sleep", "Sleep for ms milliseconds, then return"),
    ("alpha", "fail", "Always fail with a retryable error"),
    (
        "alpha",
        "big",
        "Return a string of the given number of bytes",
    ),
    ("beta", "docs.search", "Search the documentation"),
];

impl TestTools {
    fn call_tool(
        counters: &Arc<Counters>,
        server: &str,
        tool: &str,
        args: Value,
    ) -> BoxFuture<Result<Value, ForgeError>> {
        let (server, tool) = (server.to_string(), tool.to_string());
        let guard = enter(counters);
        Box::pin(async move {
            let _guard = guard;
            let result = match (server.as_str(), tool.as_str()) {
                ("alpha", "echo") | ("beta", "docs.search") => {
                    Ok(json!({ "server": server, "tool": tool, "args": args }))
                }
                ("alpha", "sleep") => {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(json!({ "slept": ms }))
                }
                ("alpha", "fail") => {
                    Err(ForgeError::new("TOOL_FAILED", "the tool failed on purpose")
                        .retryable()
                        .suggest("try again"))
                }
                ("alpha", "big") => Ok(Value::String(
                    "x".repeat(args["bytes"].as_u64().unwrap_or(0) as usize),
                )),
                ("alpha" | "beta", _) => Err(ForgeError::new(
                    "TOOL_NOT_FOUND",
                    format!("no tool {tool:?} on {server:?}"),
                )),
                _ => Err(ForgeError::server_not_found(&server)),
            };
            _guard.0.completed.fetch_add(1, Ordering::SeqCst);
            result
        })
    }

    fn read_resource(server: &str, uri: &str) -> BoxFuture<Result<Value, ForgeError>> {
        let result = if server == "alpha" {
            Ok(json!({ "uri": uri, "text": format!("contents of {uri}") }))
        } else {
            Err(ForgeError::server_not_found(server))
        };
        Box::pin(async move { result })
    }
}

impl Servers for TestTools {
    /// Unknown servers are refused at once; everything else is decided by
    /// the tool itself, as it runs.
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
        let send: SendRequest = match target {
            Target::Tool { server, tool, args } => {
                if !matches!(server, "alpha" | "beta") {
                    return Err(ForgeError::server_not_found(server));
                }
                let counters = self.counters.clone();
                let (server, tool) = (server.to_string(), tool.to_string());
                Box::new(move || Self::call_tool(&counters, &server, &tool, Value::Object(args)))
            }
            Target::Resource { server, uri } => {
                let (server, uri) = (server.to_string(), uri.to_string());
                Box::new(move || Self::read_resource(&server, &uri))
            }
        };
        Ok(Route::To { guards: None, send })
    }
}

impl ManifestView for TestTools {
    fn servers(&self) -> Value {
        json!([
            { "name": "alpha", "description": "test tools", "tools": 4, "status": "connected" },
            { "name": "beta", "description": "docs", "tools": 1, "status": "connected" },
        ])
    }

    fn search(&self, query: &Query, limit: usize, visible: &dyn Fn(&str) -> bool) -> Value {
        let query = query.text();
        let hits: Vec<Value> = TOOLS
            .iter()
            .filter(|(server, _, _)| visible(server))
            .filter(|(_, name, desc)| name.contains(query) || desc.to_lowercase().contains(&query.to_lowercase()))
            .take(limit)
            .map(|(server, name, desc)| json!({ "server": server, "tool": name, "description": desc }))
            .collect();
        Value::Array(hits)
    }

    fn tool(&self, server: &str, name: &str) -> Result<Value, ForgeError> {
        TOOLS
            .iter()
            .find(|(s, n, _)| *s == server && *n == name)
            .map(|(s, n, d)| json!({ "server": s, "name": n, "description": d, "inputSchema": { "type": "object" } }))
            .ok_or_else(|| ForgeError::new("TOOL_NOT_FOUND", format!("no tool {name:?} on {server:?}")))
    }
}
