//! Replicas (issue 23): what Redis and a balancer cost, measured on the
//! deployment of deploy/ as tests/all/replicas/ starts it (the same code:
//! tests/all/replicas/cluster.rs is included below) — Debian's
//! `redis-server` with deploy/redis.conf, `quickforge serve --http`
//! replicas with deploy/forge.toml and deploy/replica.env, and `haproxy`
//! with deploy/haproxy.cfg, round robin. The client is rmcp's, at
//! 2026-07-28 over streamable HTTP with a bearer token, as the suite's.
//!
//! Three setups run side by side: one replica with `[state] backend =
//! "memory"`, one on Redis, and three on Redis behind haproxy.
//!
//! 1. Throughput and latency: [`CLIENTS`] clients at once, each sending
//!    [`CALLS`] `tools/call`s one after another, of a trivial `execute`, an
//!    `execute` with one downstream call (server-everything's `echo`, the
//!    recipe's server), and one with a stash `put` and `get`. Executions a
//!    second (median of the rounds) and p50/p99 latency (of every call).
//! 2. The Redis round trips of the stash: the trivial and the stash
//!    `execute` with one client (no queueing), on memory and on Redis.
//! 3. The forwarding hop: `tasks/get` of a finished task sent to the
//!    replica that owns it, and to another replica, which forwards it.
//!
//! Rounds of every setup and workload alternate, so load that comes and
//! goes weighs on each alike. Every call is checked (a `tools/call` that
//! succeeded with the expected value); a failure is counted, printed, and
//! fails the bench after the tables. The per-minute rate limit of the
//! recipe is raised so that it never refuses (it still runs: a GCRA in
//! Redis, or in memory). Replicas log at `warn`.
//!
//! Run: `cargo bench --bench replicas` (needs `redis-server` and
//! `haproxy`, `apt-get install redis-server haproxy` as .ci/run does; the
//! npm servers are installed on first use, as the tests do).

// The suite's harness, the same files: the bench uses part of it (not
// killing or restarting, not reading audit lines).
#[allow(dead_code)]
#[path = "../tests/all/processes.rs"]
mod processes;

#[allow(dead_code)]
#[path = "../tests/all/replicas/cluster.rs"]
mod cluster;

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, GetTaskParams, Implementation,
    ProtocolVersion, TaskPayload,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};

use cluster::{ALICE, Cluster, Settings};

/// Clients sending at once: a handful of agents sharing a gateway, and
/// more than the two cores can serve at once, so the replicas queue.
const CLIENTS: usize = 8;
/// Calls each client sends, one after another, per round.
const CALLS: usize = 40;
/// Calls of the one-client measurement per round and workload.
const SEQUENTIAL: usize = 40;
/// `tasks/get`s to each replica per round in the forwarding measurement.
const POLLS: usize = 40;
/// Measured rounds (after one unmeasured round of warm-up).
const ROUNDS: usize = 7;
/// Bound on one call: only a hang takes this long.
const CALL_BOUND: Duration = Duration::from_secs(60);

/// A client declaring the tasks extension (so a slow `execute` answers
/// with a task), at 2026-07-28.
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let caps = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        rmcp::model::ClientConfig::new(caps, Implementation::new("replicas-bench", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, Client>;

/// Opens a 2026-07-28 client to `url` with Alice's token.
async fn open(url: &str, tasks: bool) -> Session {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(ALICE),
    );
    let client = Client { tasks }
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client connects");
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    client
}

/// What the measured `execute`s run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// `async () => 1`.
    Trivial,
    /// One call to server-everything's `echo`.
    Call,
    /// One `forge.stash.put` and one `get`, with the client's handle.
    Stash,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::Trivial => "trivial `execute`",
            Workload::Call => "`execute` with one downstream call",
            Workload::Stash => "`execute` with a stash put and get",
        }
    }

    fn code(self) -> &'static str {
        match self {
            Workload::Trivial => "async () => 1",
            Workload::Call => {
                "async () => JSON.stringify(await forge.callTool('everything', 'echo', { message: 'qf' })).includes('Echo: qf')"
            }
            Workload::Stash => {
                "async () => { await forge.stash.put('n', 41); return (await forge.stash.get('n')) + 1; }"
            }
        }
    }

    fn expected(self) -> Value {
        match self {
            Workload::Trivial => json!(1),
            Workload::Call => json!(true),
            Workload::Stash => json!(42),
        }
    }
}

/// One `execute` of `workload` (with `handle` as its stash); its latency,
/// or why it failed.
async fn execute(
    client: &Session,
    workload: Workload,
    handle: Option<&str>,
) -> Result<Duration, String> {
    let mut args = json!({"code": workload.code()});
    if let Some(h) = handle {
        args["stash"] = h.into();
    }
    let params =
        CallToolRequestParams::new("execute").with_arguments(args.as_object().cloned().unwrap());
    let t = Instant::now();
    let r = tokio::time::timeout(CALL_BOUND, client.call_tool(params))
        .await
        .map_err(|_| "no answer in time".to_string())?
        .map_err(|e| format!("{e}"))?;
    let took = t.elapsed();
    let value = r.structured_content.as_ref().map(|s| &s["result"]);
    if r.is_error == Some(true) || value != Some(&workload.expected()) {
        return Err(format!("{:?}", r.structured_content.unwrap_or_default()));
    }
    Ok(took)
}

/// A setup under measurement: its cluster, its clients (each with its own
/// stash handle) and its samples.
struct Setup {
    name: &'static str,
    cluster: Cluster,
    clients: Vec<(Session, String)>,
    samples: Vec<Samples>,
    sequential: Vec<Vec<Duration>>,
    errors: Vec<String>,
}

/// The samples of one workload at [`CLIENTS`] at once.
#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    per_second: Vec<f64>,
}

const WORKLOADS: [Workload; 3] = [Workload::Trivial, Workload::Call, Workload::Stash];

impl Setup {
    async fn start(name: &'static str, replicas: usize, redis: bool) -> Setup {
        let cluster = Cluster::start(
            name,
            Settings {
                replicas,
                redis,
                env: vec![("QUICKFORGE_LOG".into(), "warn".into())],
                edits: vec![(
                    "max_executions_per_minute = 600",
                    "max_executions_per_minute = 100000000",
                )],
            },
        )
        .await;
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            let client = open(&cluster.url, false).await;
            // The client's stash: minted by a first put, then carried.
            let r = client
                .call_tool(
                    CallToolRequestParams::new("execute").with_arguments(
                        json!({"code": "async () => { await forge.stash.put('n', 0); return 0; }"})
                            .as_object()
                            .cloned()
                            .unwrap(),
                    ),
                )
                .await
                .expect("the first execute");
            let handle = r.structured_content.as_ref().unwrap()["stash"]
                .as_str()
                .expect("a stash handle")
                .to_string();
            clients.push((client, handle));
        }
        let mut setup = Setup {
            name,
            cluster,
            clients,
            samples: WORKLOADS.iter().map(|_| Samples::default()).collect(),
            sequential: vec![Vec::new(); 2],
            errors: Vec::new(),
        };
        // Warm-up: every replica's instance pool, downstream connection and
        // Redis connection in use before anything counts.
        setup.round().await;
        setup.samples = WORKLOADS.iter().map(|_| Samples::default()).collect();
        setup.sequential = vec![Vec::new(); 2];
        setup
    }

    /// One round of each workload at [`CLIENTS`] at once.
    async fn round(&mut self) {
        for (i, workload) in WORKLOADS.into_iter().enumerate() {
            let t = Instant::now();
            let runs = self.clients.iter().map(|(client, handle)| async move {
                let mut out = Vec::with_capacity(CALLS);
                for _ in 0..CALLS {
                    out.push(execute(client, workload, Some(handle.as_str())).await);
                }
                out
            });
            let results = futures_util::future::join_all(runs).await;
            let wall = t.elapsed();
            let mut done = 0;
            for r in results.into_iter().flatten() {
                match r {
                    Ok(d) => {
                        self.samples[i].latencies.push(d);
                        done += 1;
                    }
                    Err(e) => self
                        .errors
                        .push(format!("{}: {}: {e}", self.name, workload.label())),
                }
            }
            self.samples[i]
                .per_second
                .push(done as f64 / wall.as_secs_f64());
        }
    }

    /// One round of the trivial and the stash `execute` from one client.
    async fn sequential_round(&mut self) {
        let (client, handle) = &self.clients[0];
        for (i, workload) in [Workload::Trivial, Workload::Stash].into_iter().enumerate() {
            for _ in 0..SEQUENTIAL {
                match execute(client, workload, Some(handle)).await {
                    Ok(d) => self.sequential[i].push(d),
                    Err(e) => self
                        .errors
                        .push(format!("{}: {}: {e}", self.name, workload.label())),
                }
            }
        }
    }
}

/// The `q` quantile of `samples` (nearest rank); zero for no samples
/// (every call failed: the bench fails after the tables).
fn quantile(samples: &[Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut s = samples.to_vec();
    s.sort();
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// The forwarding hop: `tasks/get` of a finished task owned by replica1,
/// sent to replica1 itself and to replica2 (which forwards it), alternately;
/// the latencies of each, or the errors.
struct Hop {
    owner: Session,
    other: Session,
    direct: Vec<Duration>,
    forwarded: Vec<Duration>,
}

impl Hop {
    async fn start(cluster: &Cluster) -> Hop {
        let url = |i: usize| format!("http://127.0.0.1:{}/mcp", cluster.replicas[i].port);
        Hop {
            owner: open(&url(0), true).await,
            other: open(&url(1), true).await,
            direct: Vec::new(),
            forwarded: Vec::new(),
        }
    }

    /// A finished task of replica1's. A new one each round: a replica
    /// keeps a bounded number of finished runs, and the other setups'
    /// executions push an old one out.
    async fn task(&self) -> String {
        // Past the recipe's task_after_ms (2 s): answered with a task.
        let code = "async () => { await new Promise(r => setTimeout(r, 2500)); return 'slept'; }";
        let params = CallToolRequestParams::new("execute")
            .with_arguments(json!({"code": code}).as_object().cloned().unwrap());
        let CallToolResponse::Task(created) = self
            .owner
            .peer()
            .call_tool_once(params)
            .await
            .expect("a tools/call answer")
        else {
            panic!("a slow script becomes a task");
        };
        let task = created.task.task_id;
        processes::eventually(CALL_BOUND, || async {
            self.get(&self.owner, &task).await.ok().map(|_| ())
        })
        .await;
        task
    }

    /// `tasks/get` through `client`; its latency if the task is completed
    /// with the script's value.
    async fn get(&self, client: &Session, task: &str) -> Result<Duration, String> {
        let t = Instant::now();
        let got =
            tokio::time::timeout(CALL_BOUND, client.peer().get_task(GetTaskParams::new(task)))
                .await
                .map_err(|_| "no answer in time".to_string())?
                .map_err(|e| format!("{e}"))?;
        let took = t.elapsed();
        match &got.task.payload {
            TaskPayload::Completed { result }
                if result.get("structuredContent").map(|s| &s["result"])
                    == Some(&json!("slept")) =>
            {
                Ok(took)
            }
            other => Err(format!("{other:?}")),
        }
    }

    async fn round(&mut self, errors: &mut Vec<String>) {
        let task = self.task().await;
        for _ in 0..POLLS {
            match self.get(&self.owner, &task).await {
                Ok(d) => self.direct.push(d),
                Err(e) => errors.push(format!("tasks/get on the owner: {e}")),
            }
            match self.get(&self.other, &task).await {
                Ok(d) => self.forwarded.push(d),
                Err(e) => errors.push(format!("tasks/get forwarded: {e}")),
            }
        }
    }
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut setups = vec![
            Setup::start("bench-memory", 1, false).await,
            Setup::start("bench-redis", 1, true).await,
            Setup::start("bench-three", 3, true).await,
        ];
        let mut hop = Hop::start(&setups[2].cluster).await;
        // Warm-up, as the setups had theirs.
        hop.round(&mut Vec::new()).await;
        hop.direct.clear();
        hop.forwarded.clear();
        let mut hop_errors = Vec::new();
        for _ in 0..ROUNDS {
            for setup in &mut setups {
                setup.round().await;
            }
            for setup in &mut setups[..2] {
                setup.sequential_round().await;
            }
            hop.round(&mut hop_errors).await;
        }

        let labels = [
            "one replica, memory",
            "one replica, Redis",
            "three replicas, Redis, haproxy",
        ];
        println!(
            "{CLIENTS} clients at once, {CALLS} calls each per round, {ROUNDS} rounds; executions a second: median of the rounds; latency: of every call"
        );
        println!();
        println!("| workload | setup | executions/s | p50 | p99 | vs one replica on memory (executions/s) |");
        println!("| --- | --- | ---: | ---: | ---: | ---: |");
        for (i, workload) in WORKLOADS.into_iter().enumerate() {
            let base = median_f64(setups[0].samples[i].per_second.clone());
            for (setup, label) in setups.iter().zip(labels) {
                let s = &setup.samples[i];
                let rate = median_f64(s.per_second.clone());
                println!(
                    "| {} | {label} | {rate:.0} | {} | {} | {:.2}× |",
                    workload.label(),
                    ms(quantile(&s.latencies, 0.5)),
                    ms(quantile(&s.latencies, 0.99)),
                    rate / base
                );
            }
        }
        println!();
        println!(
            "One client, one call at a time ({} calls of each per setup): medians",
            SEQUENTIAL * ROUNDS
        );
        println!();
        println!("| workload | memory | Redis | difference | ratio |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        let mut medians = Vec::new();
        for (i, workload) in [Workload::Trivial, Workload::Stash].into_iter().enumerate() {
            let memory = quantile(&setups[0].sequential[i], 0.5);
            let redis = quantile(&setups[1].sequential[i], 0.5);
            medians.push((memory, redis));
            println!(
                "| {} | {} | {} | {:+.0} µs | {:.2}× |",
                workload.label(),
                ms(memory),
                ms(redis),
                (redis.as_secs_f64() - memory.as_secs_f64()) * 1e6,
                redis.as_secs_f64() / memory.as_secs_f64()
            );
        }
        let stash_ops = |(memory, redis): (Duration, Duration)| {
            redis.as_secs_f64() - memory.as_secs_f64()
        };
        println!(
            "| the put and get alone (stash less trivial, Redis less memory) | | | {:+.0} µs | |",
            (stash_ops(medians[1]) - stash_ops(medians[0])) * 1e6
        );
        println!();
        let direct = quantile(&hop.direct, 0.5);
        let forwarded = quantile(&hop.forwarded, 0.5);
        println!(
            "`tasks/get` of a finished task ({} of each, alternating): medians",
            POLLS * ROUNDS
        );
        println!();
        println!("| to the owner | to another replica (forwarded) | the hop | ratio |");
        println!("| ---: | ---: | ---: | ---: |");
        println!(
            "| {} | {} | {:+.0} µs | {:.2}× |",
            ms(direct),
            ms(forwarded),
            (forwarded.as_secs_f64() - direct.as_secs_f64()) * 1e6,
            forwarded.as_secs_f64() / direct.as_secs_f64()
        );
        let errors: Vec<String> = setups
            .iter()
            .flat_map(|s| s.errors.iter().cloned())
            .chain(hop_errors)
            .collect();
        assert!(
            errors.is_empty(),
            "{} calls failed; the first: {:?}",
            errors.len(),
            &errors[..errors.len().min(5)]
        );
    });
}
