//! The Prometheus metrics, with `prometheus-client`: families registered
//! once, counted from each execution's audit record, states read from the
//! gateway at each scrape, encoded in the text exposition format.
//!
//! Every label value comes from a closed set: the mode (`search`,
//! `execute`), an outcome (`ok`, `error`, `cancelled`), a breaker state, or
//! a server name from the config. A name a script made up (a call to a
//! server that does not exist) is counted under [`UNKNOWN_SERVER`], so no
//! client can grow the series without bound, and no tool name, argument or
//! error text ever becomes a label.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::audit::Record;
use crate::audit::trail::{OpKind, Outcome};
use crate::call::breaker::State;
use crate::error::ErrorKind;
use crate::gateway::Gateway;

/// The `server` label of a call to a server the config does not name.
/// Parentheses cannot occur in a configured name, so it never collides.
pub const UNKNOWN_SERVER: &str = "(unknown)";

/// Bucket bounds of the duration histograms, in seconds: 1 ms doubling
/// 17 times, to about 65 s. An execution's default time limit is 30 s and
/// a call's is bounded by it, so every real duration falls in a bucket with
/// at most a factor of two of error; finer buckets would multiply series
/// per server for no decision anyone makes on them.
fn duration_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.001, 2.0, 17)
}

fn duration_histogram() -> Histogram {
    Histogram::new(duration_buckets())
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    mode: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BreakerLabels {
    server: String,
    state: &'static str,
}

/// What a scrape reads from outside the gateway: the executions running
/// and the stash's size.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scrape {
    /// Executions admitted and not yet finished.
    pub executions_in_flight: usize,
    /// Bytes of keys and values in every stash.
    pub stash_bytes: usize,
    /// Stashes holding at least one entry.
    pub stashes: usize,
}

/// The gateway's metrics. One per process, shared by the audit log (which
/// feeds it every execution's record) and the `/metrics` endpoints.
pub struct Metrics {
    registry: Registry,
    /// The configured server names: the only `server` label values besides
    /// [`UNKNOWN_SERVER`].
    servers: BTreeSet<String>,
    executions: Family<ExecutionLabels, Counter>,
    execution_seconds: Family<ModeLabels, Histogram, fn() -> Histogram>,
    executions_rate_limited: Counter,
    queue_wait_seconds: Histogram,
    tool_calls: Family<CallLabels, Counter>,
    tool_call_seconds: Family<ServerLabels, Histogram, fn() -> Histogram>,
    tool_calls_rate_limited: Family<ServerLabels, Counter>,
    executions_in_flight: Gauge,
    tool_calls_in_flight: Family<ServerLabels, Gauge>,
    breaker: Family<BreakerLabels, Gauge>,
    reconnects: Family<ServerLabels, Counter>,
    tools_changed: Family<ServerLabels, Gauge>,
    stash_bytes: Gauge,
    stashes: Gauge,
    /// One scrape at a time: a scrape brings the reconnect counters up to
    /// the gateway's by adding the difference, which two at once would add
    /// twice.
    scrape: Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// The metrics of a gateway whose config names `servers`.
    pub fn new<'a>(servers: impl IntoIterator<Item = &'a str>) -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("quickforge"),
            servers: servers.into_iter().map(str::to_owned).collect(),
            executions: Family::default(),
            execution_seconds: Family::new_with_constructor(duration_histogram),
            executions_rate_limited: Counter::default(),
            queue_wait_seconds: duration_histogram(),
            tool_calls: Family::default(),
            tool_call_seconds: Family::new_with_constructor(duration_histogram),
            tool_calls_rate_limited: Family::default(),
            executions_in_flight: Gauge::default(),
            tool_calls_in_flight: Family::default(),
            breaker: Family::default(),
            reconnects: Family::default(),
            tools_changed: Family::default(),
            stash_bytes: Gauge::default(),
            stashes: Gauge::default(),
            scrape: Mutex::new(()),
        };
        let r = &mut m.registry;
        r.register(
            "executions",
            "Executions finished, by mode (search, execute, direct) and outcome (ok, error, cancelled)",
            m.executions.clone(),
        );
        r.register(
            "execution_duration_seconds",
            "Wall time of an execution from arrival to answer, by mode",
            m.execution_seconds.clone(),
        );
        r.register(
            "executions_rate_limited",
            "Executions refused by sandbox.max_executions_per_minute",
            m.executions_rate_limited.clone(),
        );
        r.register(
            "queue_wait_seconds",
            "Time an execution waited for a free sandbox slot (max_concurrent) before running or being refused",
            m.queue_wait_seconds.clone(),
        );
        r.register(
            "tool_calls",
            "Tool calls scripts made, by configured server and outcome (refused calls are errors)",
            m.tool_calls.clone(),
        );
        r.register(
            "tool_call_duration_seconds",
            "Time from a tool call's first poll to its answer, by configured server",
            m.tool_call_seconds.clone(),
        );
        r.register(
            "tool_calls_rate_limited",
            "Tool calls refused by a server's calls_per_minute",
            m.tool_calls_rate_limited.clone(),
        );
        r.register(
            "executions_in_flight",
            "Executions admitted and not finished",
            m.executions_in_flight.clone(),
        );
        r.register(
            "tool_calls_in_flight",
            "Tool calls holding one of a server's max_in_flight slots",
            m.tool_calls_in_flight.clone(),
        );
        r.register(
            "breaker_state",
            "1 for the state each server's circuit breaker is in (closed, open, half_open), 0 for the others",
            m.breaker.clone(),
        );
        r.register(
            "downstream_reconnects",
            "Connection attempts to a server after its first (after a failed attempt or a lost session)",
            m.reconnects.clone(),
        );
        r.register(
            "tools_changed",
            "Tools each server lists with a hash other than the trusted one (see `quickforge trust`)",
            m.tools_changed.clone(),
        );
        r.register(
            "stash_bytes",
            "Bytes of keys and values held in every stash",
            m.stash_bytes.clone(),
        );
        r.register(
            "stashes",
            "Stashes holding at least one entry",
            m.stashes.clone(),
        );
        m
    }

    /// The `server` label for `name`: itself when the config names it.
    fn server(&self, name: Option<&str>) -> String {
        match name {
            Some(n) if self.servers.contains(n) => n.to_owned(),
            _ => UNKNOWN_SERVER.to_owned(),
        }
    }

    /// The text exposition of every metric, with the states read now from
    /// `gateway` and `scrape`.
    pub fn render(&self, gateway: &Gateway, scrape: Scrape) -> String {
        let _one = self.scrape.lock().unwrap_or_else(|p| p.into_inner());
        self.executions_in_flight
            .set(scrape.executions_in_flight as i64);
        self.stash_bytes.set(scrape.stash_bytes as i64);
        self.stashes.set(scrape.stashes as i64);
        let manifest = gateway.manifest();
        for server in gateway.servers() {
            let name = &server.config.name;
            let label = ServerLabels {
                server: name.clone(),
            };
            let busy = (server.config.max_in_flight as usize)
                .saturating_sub(server.guards.in_flight.available_permits());
            self.tool_calls_in_flight
                .get_or_create(&label)
                .set(busy as i64);
            let now = match server.guards.breaker.state() {
                State::Closed { .. } => "closed",
                State::Open { .. } => "open",
                State::HalfOpen { .. } => "half_open",
            };
            for state in ["closed", "open", "half_open"] {
                self.breaker
                    .get_or_create(&BreakerLabels {
                        server: name.clone(),
                        state,
                    })
                    .set(i64::from(state == now));
            }
            let changed = manifest.server(name).map_or(0, |e| e.changed.len());
            self.tools_changed.get_or_create(&label).set(changed as i64);
            let counter = self.reconnects.get_or_create(&label);
            let seen = server.reconnects.load(Ordering::Relaxed);
            if seen > counter.get() {
                counter.inc_by(seen - counter.get());
            }
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

impl crate::audit::Observer for Metrics {
    fn observe(&self, record: &Record<'_>) {
        let mode = record.operation.as_str();
        self.executions
            .get_or_create(&ExecutionLabels {
                mode,
                outcome: record.outcome,
            })
            .inc();
        self.execution_seconds
            .get_or_create(&ModeLabels { mode })
            .observe(record.duration_ms / 1000.0);
        if record.error_kind == Some(ErrorKind::RateLimited) {
            self.executions_rate_limited.inc();
        }
        if let Some(queued) = record.queued_ms {
            self.queue_wait_seconds.observe(queued / 1000.0);
        }
        for op in record
            .operations
            .iter()
            .filter(|o| o.op == OpKind::CallTool)
        {
            let server = self.server(op.server.as_deref());
            let outcome = match op.outcome {
                Outcome::Ok => "ok",
                Outcome::Error => "error",
                Outcome::Cancelled => "cancelled",
            };
            if op.error_code.as_deref() == Some(crate::error::ErrorCode::RateLimited.as_str()) {
                self.tool_calls_rate_limited
                    .get_or_create(&ServerLabels {
                        server: server.clone(),
                    })
                    .inc();
            }
            self.tool_call_seconds
                .get_or_create(&ServerLabels {
                    server: server.clone(),
                })
                .observe(op.duration_us as f64 / 1e6);
            self.tool_calls
                .get_or_create(&CallLabels { server, outcome })
                .inc();
        }
    }
}
