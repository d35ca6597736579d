//! `execute` latency through the real binary and a real downstream server:
//! tests/servers/fixture.mjs (official TypeScript SDK) over stdio, its
//! `slow` tool with `ms: 0` (no work), called by the rmcp client.
//!
//! - baseline: the same client calling the same server directly, in the
//!   same run, one call after another;
//! - quickforge: one `execute` whose script awaits the same calls one after
//!   another, less a trivial `execute` (measured alternately), per call;
//! - with `QUICKFORGE_BASELINE=/path/to/quickforge` (another build, say the
//!   commit before a change), that binary measured the same way, so a change
//!   to the call path shows as a ratio against its predecessor.
//!
//! Rounds of the three alternate, so load that comes and goes during the
//! run weighs on each alike. Reports medians. Run: `./scripts/install-test-servers.sh && cargo bench
//! --bench gateway` (the tests install the servers too).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

/// Calls per measured `execute` (and per direct round).
const CALLS: usize = 20;
/// Measured rounds; the median is reported.
const ROUNDS: usize = 41;

type Client = RunningService<RoleClient, ()>;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/fixture.mjs")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap_or_default()
}

async fn spawn(mut cmd: tokio::process::Command) -> (tokio::process::Child, Client) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the process starts");
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(io).await.expect("the MCP handshake");
    (child, client)
}

async fn call(client: &Client, tool: &str, arguments: serde_json::Value) -> CallToolResult {
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(arguments)))
        .await
        .expect("a tools/call answer");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
}

/// The client calling the fixture server directly.
struct Direct {
    _child: tokio::process::Child,
    client: Client,
}

impl Direct {
    async fn start() -> Direct {
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(fixture());
        let (_child, client) = spawn(cmd).await;
        let direct = Direct { _child, client };
        direct.round().await;
        direct
    }

    /// One round: [`CALLS`] calls; the time per call.
    async fn round(&self) -> Duration {
        let t = Instant::now();
        for _ in 0..CALLS {
            call(&self.client, "slow", json!({"ms": 0})).await;
        }
        t.elapsed() / CALLS as u32
    }
}

/// A quickforge binary serving the fixture server, and the samples taken
/// of it.
struct Gateway {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
    client: Client,
    with_calls: Vec<Duration>,
    bare: Vec<Duration>,
}

const TRIVIAL: &str = "async () => 1";

fn calls_script() -> String {
    format!(
        "async () => {{ for (let i = 0; i < {CALLS}; i++) await forge.callTool('f', 'slow', {{ ms: 0 }}); return 1; }}"
    )
}

impl Gateway {
    async fn start(binary: &Path) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("forge.toml");
        std::fs::write(
            &config,
            format!(
                "[sandbox]\nmax_tool_calls = {CALLS}\n\n[servers.f]\ncommand = \"node\"\nargs = [{:?}]\n",
                fixture().to_string_lossy()
            ),
        )
        .unwrap();
        let mut cmd = tokio::process::Command::new(binary);
        cmd.arg("serve")
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "error");
        let (_child, client) = spawn(cmd).await;
        let mut gateway = Gateway {
            _child,
            _dir: dir,
            client,
            with_calls: Vec::new(),
            bare: Vec::new(),
        };
        // Warm up: the server connected, the instance pool and caches warm.
        for _ in 0..5 {
            gateway.round().await;
        }
        gateway.with_calls.clear();
        gateway.bare.clear();
        gateway
    }

    async fn execute(&self, code: &str) -> Duration {
        let t = Instant::now();
        call(&self.client, "execute", json!({"code": code})).await;
        t.elapsed()
    }

    /// One round: an `execute` of [`CALLS`] calls, then a trivial one.
    async fn round(&mut self) {
        let with_calls = self.execute(&calls_script()).await;
        let bare = self.execute(TRIVIAL).await;
        self.with_calls.push(with_calls);
        self.bare.push(bare);
    }

    /// The trivial `execute` and the per-call cost, medians.
    fn medians(&self) -> (Duration, Duration) {
        let bare = median(self.bare.clone());
        let per_call = median(self.with_calls.clone()).saturating_sub(bare) / CALLS as u32;
        (bare, per_call)
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ours = PathBuf::from(env!("CARGO_BIN_EXE_quickforge"));
        let baseline = std::env::var_os("QUICKFORGE_BASELINE").map(PathBuf::from);
        let direct = Direct::start().await;
        let mut this = Gateway::start(&ours).await;
        let mut other = match &baseline {
            Some(b) => Some(Gateway::start(b).await),
            None => None,
        };
        // Rounds alternate between the three, so a machine that gets busier
        // or quieter during the run moves them all alike.
        let mut direct_rounds = Vec::new();
        for _ in 0..ROUNDS {
            direct_rounds.push(direct.round().await);
            this.round().await;
            if let Some(other) = &mut other {
                other.round().await;
            }
        }
        let direct = median(direct_rounds);
        let (bare, per_call) = this.medians();
        println!("| what | median | baseline (median) | ratio |");
        println!("| --- | --- | --- | --- |");
        println!(
            "| one plain tool call (fixture.mjs `slow` 0 ms, stdio) inside `execute`, per call | {} | {} the same call made directly by the client | {:.2}× |",
            micros(per_call),
            micros(direct),
            per_call.as_secs_f64() / direct.as_secs_f64()
        );
        println!("| trivial `execute` round trip through the binary | {} | — | — |", micros(bare));
        if let Some(other) = &other {
            let (old_bare, old_per_call) = other.medians();
            println!(
                "| per call, this build vs QUICKFORGE_BASELINE | {} | {} | {:.2}× |",
                micros(per_call),
                micros(old_per_call),
                per_call.as_secs_f64() / old_per_call.as_secs_f64()
            );
            println!(
                "| trivial `execute`, this build vs QUICKFORGE_BASELINE | {} | {} | {:.2}× |",
                micros(bare),
                micros(old_bare),
                bare.as_secs_f64() / old_bare.as_secs_f64()
            );
        }
    });
}
