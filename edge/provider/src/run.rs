//! One request's run: its mode, budget, logs, stash, and the
//! downstream calls in flight.
//!
//! Calls are started at once and finish through `next-completion`, which
//! advances every exchange without blocking and otherwise waits in one
//! `wasi:io/poll` over all of them plus the nearest deadline: five 300 ms
//! calls under `Promise.all` take about 300 ms, not 1.5 s.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde_json::{Value, json};

use crate::bindings::exports::quickforge::edge::control::{LogLine, Report};
use crate::bindings::exports::quickforge::sandbox::calls::Completion;
use crate::bindings::exports::quickforge::sandbox::types::{ForgeError as Wit, LogLevel, Mode};
use crate::bindings::wasi::clocks::monotonic_clock;
use crate::bindings::wasi::io::poll;
use crate::config::Config;
use crate::error::{ErrorCode, ForgeError};
use crate::http::{Exchange, Step};
use crate::mcp::{self, Answer};
use crate::stash_kv::Stash;
use quickforge_core::convert;

use quickforge_core::limits::{
    DEFAULT_MAX_LOG_BYTES as MAX_LOG_BYTES, DEFAULT_MAX_LOG_LINES as MAX_LOG_LINES, MAX_TIMERS,
    TIMER_BIT,
};
/// Most `tools/list` pages read from one server per refresh: a bound on
/// a server that pages forever; 100 pages is thousands of tools.
const MAX_LIST_PAGES: usize = 100;

/// A downstream server's MCP session within this request.
enum Session {
    /// `initialize` (then `notifications/initialized`) in flight; calls wait.
    Connecting(Vec<Queued>),
    /// Ready, with the session id the server gave (if any).
    Ready(Option<String>),
    /// Connecting failed; every call fails with this.
    Failed(Wit),
}

/// A call waiting for its server's session.
struct Queued {
    id: u32,
    tool: String,
    method: &'static str,
    params: Value,
    deadline: u64,
    retried: bool,
}

/// What an exchange in flight is for.
enum Purpose {
    Initialize {
        server: String,
    },
    Initialized {
        server: String,
        session: Option<String>,
    },
    Call {
        server: String,
        call: Queued,
        had_session: bool,
    },
}

struct Op {
    exchange: Exchange,
    purpose: Purpose,
}

/// Everything one instance (one request) holds.
pub struct Run {
    /// The configuration, read once per instance.
    pub config: Config,
    /// Set by `control.begin`.
    pub mode: Option<Mode>,
    /// Tool calls and reads started.
    pub calls: u32,
    /// Whether a call was refused for the call budget: an uncaught refusal
    /// then ends the run as `tool_call_budget`, where a script's own
    /// `ForgeError("TOOL_CALL_BUDGET")` stays `thrown` (as natively).
    budget_spent: bool,
    next_id: u32,
    logs: Vec<LogLine>,
    log_bytes: usize,
    logs_dropped: u32,
    sessions: BTreeMap<String, Session>,
    ops: Vec<Op>,
    timers: Vec<(u32, u64)>,
    ready: VecDeque<Completion>,
    /// Compiled argument checks, by server and tool (`None`: the tool has
    /// no input schema to check against).
    pub checks: BTreeMap<(String, String), Option<quickforge_catalog::schema::ArgsCheck>>,
    /// The stash: in `wasi:keyvalue` under a sealed handle, or this
    /// request's own (`stash_kv.rs`).
    pub stash: Stash,
    /// Whether this request has brought the manifest up to date
    /// (`refresh.rs`); it does so once, at the first use.
    pub manifest_current: bool,
}

impl Run {
    /// A fresh run with the environment's configuration.
    pub fn new() -> Run {
        let config = Config::from_env();
        Run {
            stash: Stash::new(config.stash_key.clone(), config.stash_bucket.clone()),
            config,
            mode: None,
            calls: 0,
            budget_spent: false,
            next_id: 1,
            logs: Vec::new(),
            log_bytes: 0,
            logs_dropped: 0,
            sessions: BTreeMap::new(),
            ops: Vec::new(),
            timers: Vec::new(),
            ready: VecDeque::new(),
            checks: BTreeMap::new(),
            manifest_current: false,
        }
    }

    /// Brings the manifest up to date when it is due (`refresh.rs`), once
    /// per request.
    pub fn ensure_manifest(&mut self) {
        if !self.manifest_current {
            self.manifest_current = true;
            crate::refresh::refresh(self);
        }
    }

    /// The manifest, refreshed first when it is due.
    pub fn catalog(&mut self) -> crate::catalog::Catalog<'_> {
        self.ensure_manifest();
        crate::catalog::Catalog::new(&self.config.manifest)
    }

    /// Refuses `api` (`forge.callTool`, ...) in `search`, as natively.
    pub fn require_execute(&self, api: &str) -> Result<(), Wit> {
        if self.mode == Some(Mode::Execute) {
            return Ok(());
        }
        Err(ForgeError::mode_denied(api).into())
    }

    /// Refuses work while the configuration is broken: every call and stash
    /// operation fails with the first problem, so a mistake (a short stash
    /// secret, a malformed server list) is seen at once, not worked around.
    pub fn require_config(&self) -> Result<(), Wit> {
        match self.config.problems.first() {
            None => Ok(()),
            Some(problem) => Err(ForgeError::new(
                ErrorCode::Internal,
                format!(
                    "the edge configuration is broken: {}",
                    crate::redact::redact_clip(problem, 512)
                ),
            )
            .into()),
        }
    }

    /// Starts `method` (`tools/call` or `resources/read`) on `server` after
    /// every check that needs no server; the id is returned at once.
    pub fn start(
        &mut self,
        server: &str,
        tool: &str,
        method: &'static str,
        params: Value,
    ) -> Result<u32, Wit> {
        self.require_execute(if method == "resources/read" {
            "forge.readResource"
        } else {
            "forge.callTool"
        })?;
        self.require_config()?;
        if self.calls >= self.config.max_calls {
            self.budget_spent = true;
            return Err(ForgeError::call_budget(self.config.max_calls).into());
        }
        let Some(target) = self.config.servers.get(server) else {
            let names = self.config.servers.keys().map(String::as_str);
            let found = quickforge_catalog::suggest::suggestions(server, names.clone());
            let err = ForgeError::server_not_found(server);
            return Err(match quickforge_catalog::suggest::sentence(&found)
                .or_else(|| quickforge_catalog::suggest::listing(names))
            {
                Some(s) => err.suggest(s),
                None => err,
            }
            .into());
        };
        let origin = target.url.origin();
        if !self.config.allow.contains(&origin) {
            return Err(ForgeError::new(
                ErrorCode::PolicyDenied,
                format!("server {server:?} is outside this deployment's egress allowlist"),
            )
            .suggest("the operator adds its origin to QUICKFORGE_EDGE_ALLOW")
            .into());
        }
        self.calls += 1;
        let id = self.next_id;
        self.next_id += 1;
        let call = Queued {
            id,
            tool: tool.to_string(),
            method,
            params,
            deadline: monotonic_clock::now().saturating_add(self.config.call_timeout_ns),
            retried: false,
        };
        self.dispatch(server.to_string(), call);
        Ok(id)
    }

    /// Sends `call` on its server's session, connecting first if needed.
    fn dispatch(&mut self, server: String, call: Queued) {
        match self.sessions.get_mut(&server) {
            Some(Session::Ready(session)) => {
                let session = session.clone();
                self.send(server, call, session);
            }
            Some(Session::Connecting(queue)) => queue.push(call),
            Some(Session::Failed(e)) => {
                let e = e.clone();
                self.ready.push_back(Completion {
                    id: call.id,
                    outcome: Err(e),
                });
            }
            None => {
                self.sessions
                    .insert(server.clone(), Session::Connecting(vec![call]));
                self.post(Purpose::Initialize { server }, mcp::initialize(), None);
            }
        }
    }

    fn send(&mut self, server: String, call: Queued, session: Option<String>) {
        let body = mcp::request(call.id, call.method, call.params.clone());
        let had_session = session.is_some();
        self.post(
            Purpose::Call {
                server,
                call,
                had_session,
            },
            body,
            session,
        );
    }

    /// Starts one POST; a failure to start finishes its purpose at once.
    fn post(&mut self, purpose: Purpose, body: Vec<u8>, session: Option<String>) {
        let server = match &purpose {
            Purpose::Initialize { server }
            | Purpose::Initialized { server, .. }
            | Purpose::Call { server, .. } => server.clone(),
        };
        let Some(target) = self.config.servers.get(&server) else {
            return;
        };
        let mut headers = target.headers.clone();
        if let Some(s) = session {
            headers.push(("mcp-session-id".into(), s));
            headers.push(("mcp-protocol-version".into(), mcp::PROTOCOL_VERSION.into()));
        }
        match Exchange::post(&target.url, &headers, &body, self.config.max_response) {
            Ok(exchange) => self.ops.push(Op { exchange, purpose }),
            Err(why) => self.finished(purpose, Err(why)),
        }
    }

    /// Acts on a finished exchange.
    fn finished(&mut self, purpose: Purpose, reply: Result<crate::http::Reply, String>) {
        match purpose {
            Purpose::Initialize { server } => {
                let answer = reply.map(|r| (mcp::answer(&r, None, false), r.session));
                match answer {
                    Ok((Answer::Result(_), session)) => {
                        let body = mcp::initialized();
                        self.post(
                            Purpose::Initialized {
                                server,
                                session: session.clone(),
                            },
                            body,
                            session,
                        );
                    }
                    Ok((Answer::Error { message: why, .. } | Answer::Broken(why), _))
                    | Err(why) => self.fail_server(server, why),
                    Ok((Answer::SessionGone, _)) => {
                        self.fail_server(server, "the server refused the session".into())
                    }
                }
            }
            Purpose::Initialized { server, session } => {
                let queued = match self
                    .sessions
                    .insert(server.clone(), Session::Ready(session.clone()))
                {
                    Some(Session::Connecting(queue)) => queue,
                    _ => Vec::new(),
                };
                for call in queued {
                    self.send(server.clone(), call, session.clone());
                }
            }
            Purpose::Call {
                server,
                call,
                had_session,
            } => {
                let outcome = match reply {
                    Err(why) if why.contains("limit") => Err(ForgeError::new(
                        ErrorCode::ResponseTooLarge,
                        format!("{server}.{}: {why}", call.tool),
                    )
                    .into()),
                    Err(why) => Err(unavailable(&server, &why)),
                    Ok(reply) => match mcp::answer(&reply, Some(call.id), had_session) {
                        Answer::SessionGone if !call.retried => {
                            // The server forgot the session (restarted, expired):
                            // connect again and send the call once more.
                            self.sessions.remove(&server);
                            let call = Queued {
                                retried: true,
                                ..call
                            };
                            self.dispatch(server, call);
                            return;
                        }
                        Answer::SessionGone => {
                            Err(unavailable(&server, "the server lost the session twice"))
                        }
                        // As natively (`host/gateway/downstream.rs`).
                        Answer::Error {
                            code,
                            message,
                            data,
                        } => Err(convert::rpc_error(&server, code, &message, data).into()),
                        Answer::Broken(why) => Err(ForgeError::new(
                            ErrorCode::InvalidResponse,
                            format!("{server}.{}: {why}", call.tool),
                        )
                        .into()),
                        // A listing is the provider's own: kept as the
                        // server sent it, for `refresh.rs`.
                        Answer::Result(v) if call.method == "tools/list" => Ok(v.to_string()),
                        Answer::Result(v) => {
                            let converted = if call.method == "resources/read" {
                                Ok(convert::read_result(v))
                            } else {
                                convert::call_result(&server, &call.tool, v)
                            };
                            converted.map(|v| v.to_string()).map_err(Into::into)
                        }
                    },
                };
                self.ready.push_back(Completion {
                    id: call.id,
                    outcome,
                });
            }
        }
    }

    fn fail_server(&mut self, server: String, why: String) {
        let err = unavailable(&server, &why);
        if let Some(Session::Connecting(queue)) =
            self.sessions.insert(server, Session::Failed(err.clone()))
        {
            for call in queue {
                self.ready.push_back(Completion {
                    id: call.id,
                    outcome: Err(err.clone()),
                });
            }
        }
    }

    /// Starts a timer of `ms` milliseconds.
    pub fn start_timer(&mut self, ms: u32) -> Result<u32, String> {
        if self.timers.len() >= MAX_TIMERS {
            return Err(quickforge_core::limits::too_many_timers());
        }
        let id = TIMER_BIT | self.next_id;
        self.next_id += 1;
        let deadline = monotonic_clock::now().saturating_add(u64::from(ms) * 1_000_000);
        self.timers.push((id, deadline));
        Ok(id)
    }

    /// Stops waiting for `id` (dropping an exchange cancels its request).
    pub fn cancel(&mut self, id: u32) {
        self.timers.retain(|(t, _)| *t != id);
        self.ops
            .retain(|op| !matches!(&op.purpose, Purpose::Call { call, .. } if call.id == id));
        for session in self.sessions.values_mut() {
            if let Session::Connecting(queue) = session {
                queue.retain(|c| c.id != id);
            }
        }
        self.ready.retain(|c| c.id != id);
    }

    fn idle(&self) -> bool {
        self.ready.is_empty()
            && self.ops.is_empty()
            && self.timers.is_empty()
            && !self
                .sessions
                .values()
                .any(|s| matches!(s, Session::Connecting(q) if !q.is_empty()))
    }

    /// The next finished call or timer, waiting for one if needed; `None`
    /// when nothing is in flight.
    pub fn next_completion(&mut self) -> Option<Completion> {
        loop {
            if let Some(done) = self.ready.pop_front() {
                return Some(done);
            }
            if self.idle() || !self.pump() {
                return None;
            }
        }
    }

    /// Moves every exchange on and finishes what is overdue; when nothing
    /// moved, waits in one `wasi:io/poll` over every exchange and the
    /// nearest deadline. `false` when there is nothing to wait on.
    fn pump(&mut self) -> bool {
        let before = self.ready.len();
        self.expire(monotonic_clock::now());
        let mut moved = self.ready.len() != before;
        let mut waits = Vec::new();
        let mut i = 0;
        while i < self.ops.len() {
            match self.ops[i].exchange.advance() {
                Step::Blocked(p) => {
                    waits.push(p);
                    i += 1;
                }
                Step::Done(reply) => {
                    let op = self.ops.swap_remove(i);
                    self.finished(op.purpose, reply);
                    moved = true;
                }
            }
        }
        if moved {
            return true;
        }
        if let Some(deadline) = self.nearest_deadline() {
            waits.push(monotonic_clock::subscribe_instant(deadline));
        }
        if waits.is_empty() {
            // Calls queued behind a session whose connect is not in
            // flight cannot happen; guard against spinning anyway.
            return false;
        }
        let refs: Vec<&poll::Pollable> = waits.iter().collect();
        poll::poll(&refs);
        true
    }

    /// Every tool `servers` list now (`tools/list`, page after page, up to
    /// [`MAX_LIST_PAGES`]), by server, or why a server's listing failed.
    /// Listing is the provider's own work: it counts against no script
    /// budget, works in search mode, and leaves the completions of the
    /// script's calls in flight where they are.
    pub fn list_tools(
        &mut self,
        servers: &[String],
    ) -> BTreeMap<String, Result<Vec<Value>, String>> {
        let mut pending: BTreeMap<u32, (String, Vec<Value>, usize)> = BTreeMap::new();
        let mut done = BTreeMap::new();
        for server in servers {
            match self.start_listing(server, json!({})) {
                Ok(id) => {
                    pending.insert(id, (server.clone(), Vec::new(), 1));
                }
                Err(why) => {
                    done.insert(server.clone(), Err(why));
                }
            }
        }
        while !pending.is_empty() {
            let mut mine = Vec::new();
            self.ready.retain(|c| {
                let ours = pending.contains_key(&c.id);
                if ours {
                    mine.push(c.clone());
                }
                !ours
            });
            for c in mine {
                let Some((server, mut tools, pages)) = pending.remove(&c.id) else {
                    continue;
                };
                let page = c.outcome.map_err(|e| e.message).and_then(|text| {
                    serde_json::from_str::<Value>(&text).map_err(|e| e.to_string())
                });
                let page = match page {
                    Ok(page) => page,
                    Err(why) => {
                        done.insert(server, Err(why));
                        continue;
                    }
                };
                if let Some(listed) = page.get("tools").and_then(Value::as_array) {
                    tools.extend(listed.iter().cloned());
                }
                match page.get("nextCursor").and_then(Value::as_str) {
                    Some(cursor) if pages < MAX_LIST_PAGES => {
                        match self.start_listing(&server, json!({"cursor": cursor})) {
                            Ok(id) => {
                                pending.insert(id, (server, tools, pages + 1));
                            }
                            Err(why) => {
                                done.insert(server, Err(why));
                            }
                        }
                    }
                    _ => {
                        done.insert(server, Ok(tools));
                    }
                }
            }
            if !pending.is_empty() && !self.pump() {
                for (_, (server, _, _)) in std::mem::take(&mut pending) {
                    done.insert(server, Err("the listing stalled".into()));
                }
            }
        }
        done
    }

    /// Starts one `tools/list` page on `server`, within the egress
    /// allowlist and the per-call deadline.
    fn start_listing(&mut self, server: &str, params: Value) -> Result<u32, String> {
        let Some(target) = self.config.servers.get(server) else {
            return Err(format!("server {server:?} is not configured"));
        };
        if !self.config.allow.contains(&target.url.origin()) {
            return Err(format!(
                "server {server:?} is outside this deployment's egress allowlist"
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        let call = Queued {
            id,
            tool: "tools/list".into(),
            method: "tools/list",
            params,
            // Within the script's own deadline too: the guest cannot
            // interrupt the provider while it waits for a listing.
            deadline: monotonic_clock::now().saturating_add(
                self.config
                    .call_timeout_ns
                    .min(self.config.timeout_ms.saturating_mul(1_000_000)),
            ),
            retried: false,
        };
        self.dispatch(server.to_string(), call);
        Ok(id)
    }

    fn nearest_deadline(&self) -> Option<u64> {
        let calls = self.ops.iter().filter_map(|op| match &op.purpose {
            Purpose::Call { call, .. } => Some(call.deadline),
            _ => None,
        });
        let queued = self.sessions.values().flat_map(|s| match s {
            Session::Connecting(q) => q.iter().map(|c| c.deadline).collect::<Vec<_>>(),
            _ => Vec::new(),
        });
        self.timers
            .iter()
            .map(|(_, d)| *d)
            .chain(calls)
            .chain(queued)
            .min()
    }

    /// Finishes every timer and call whose deadline passed.
    fn expire(&mut self, now: u64) {
        // Worded as natively (`quickforge_core`), naming this gateway's
        // setting.
        let limit = Duration::from_nanos(self.config.call_timeout_ns);
        let timeout = |server: &str, call: &Queued| -> Completion {
            Completion {
                id: call.id,
                outcome: Err(ForgeError::call_timeout(
                    server,
                    limit,
                    "QUICKFORGE_EDGE_CALL_TIMEOUT_MS",
                )
                .into()),
            }
        };
        let (due, kept): (Vec<_>, Vec<_>) = self.timers.iter().partition(|(_, d)| *d <= now);
        self.timers = kept;
        for (id, _) in due {
            self.ready.push_back(Completion {
                id,
                outcome: Ok("null".into()),
            });
        }
        let mut i = 0;
        while i < self.ops.len() {
            match &self.ops[i].purpose {
                Purpose::Call { server, call, .. } if call.deadline <= now => {
                    let done = timeout(server, call);
                    self.ops.swap_remove(i);
                    self.ready.push_back(done);
                }
                _ => i += 1,
            }
        }
        for (server, session) in &mut self.sessions {
            if let Session::Connecting(queue) = session {
                let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(queue)
                    .into_iter()
                    .partition(|c| c.deadline <= now);
                *queue = kept;
                for call in due {
                    self.ready.push_back(timeout(server, &call));
                }
            }
        }
    }

    /// Records one log line within the caps.
    pub fn log(&mut self, level: LogLevel, message: String) {
        if self.logs.len() >= MAX_LOG_LINES || self.log_bytes + message.len() > MAX_LOG_BYTES {
            self.logs_dropped += 1;
            return;
        }
        self.log_bytes += message.len();
        self.logs.push(LogLine { level, message });
    }

    /// What the run did.
    pub fn report(&mut self) -> Report {
        Report {
            logs: std::mem::take(&mut self.logs),
            logs_dropped: self.logs_dropped,
            calls: self.calls,
            budget_spent: self.budget_spent,
            stash: self.stash.reported(),
        }
    }
}

fn unavailable(server: &str, why: &str) -> Wit {
    ForgeError::new(
        ErrorCode::ServerUnavailable,
        format!(
            "server {server:?} is unavailable: {}",
            crate::redact::redact_clip(why, 512)
        ),
    )
    .into()
}
