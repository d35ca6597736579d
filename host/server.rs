//! The MCP server quickforge shows its client: exactly two tools, `search`
//! and `execute`, each taking `code`, and initialize `instructions` that
//! carry the TypeScript definitions of the whole script API (`forge.d.ts`).
//!
//! One [`ForgeServer`] serves one client session (a stdio connection, or one
//! streamable-HTTP session) and holds that session's [`Session`]: its stash
//! handle and its share of the execution slots.

use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    DiscoverResult, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations, ToolsCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::gateway::{Gateway, STARTUP_WAIT};
use crate::sandbox::{ExecutionContext, LogLevel, Mode, Report, Sandbox};
use crate::session::{Session, SessionCap, SessionLimits};
use crate::state::{Handle, HandleKey, MemoryStore, Stash, StashLimits, StateStore};
use crate::validate::Rule;

/// How long a client may keep `tools/list` and `server/discover` results,
/// in milliseconds: one hour. Both are fixed for the life of the process
/// (two tools, their schemas, the instructions), the same for every client
/// (so `public`), and a new quickforge is a new connection that lists again.
pub const LIST_TTL_MS: u64 = 3_600_000;

/// The TypeScript definitions of the script API, as the guest exposes it
/// (tests/all/dts.rs checks they match).
pub const FORGE_D_TS: &str = include_str!("forge.d.ts");

/// What a client reads at initialize: how to work, then the API types.
pub fn instructions() -> String {
    format!(
        "quickforge gateway: downstream MCP tools are reached through code, not listed here.\n\
         1. `search`: run `async () => manifest.search(\"what you need\")`, then `manifest.tool(server, tool)` for the exact signature.\n\
         2. `execute`: run an async arrow function that calls `forge.callTool(server, tool, args)`; chain and combine calls in one script, return only what you need.\n\
         Failures throw ForgeError (code, message, retryable, suggestion). forge.stash keeps JSON between executions; pass a result's `stash` back as execute's `stash` to reach it from another session.\n\
         ```ts\n{FORGE_D_TS}```"
    )
}

/// The input schema of a tool taking `code` and, for `execute`, the
/// optional stash handle.
fn code_schema(what: &str, stash: bool) -> Arc<rmcp::model::JsonObject> {
    let mut properties = json!({"code": {"type": "string", "description": what}});
    if stash {
        properties["stash"] = json!({
            "type": "string",
            "description": "`stash` from an earlier result"
        });
    }
    Arc::new(rmcp::model::object(json!({
        "type": "object",
        "properties": properties,
        "required": ["code"],
        "additionalProperties": false
    })))
}

/// The `_meta` key that asks Claude Code to load a tool up front instead of
/// deferring it behind its tool search.
pub const ALWAYS_LOAD: &str = "anthropic/alwaysLoad";

/// The two tools, exactly as `tools/list` returns them under `surface`.
pub fn tools(surface: &crate::config::Surface) -> Vec<Tool> {
    let mut search = Tool::new(
        "search",
        "Find downstream tools. `code` is a JS async arrow function using `manifest` \
         (servers, search(query), tool(server, name)); it returns JSON. No tool calls.",
        code_schema("e.g. async () => manifest.search(\"create issue\")", false),
    );
    search.annotations = Some(ToolAnnotations::new().read_only(true));
    let execute = Tool::new(
        "execute",
        "Run a JS async arrow function that calls downstream tools with \
         `await forge.callTool(server, tool, args)` and returns JSON. Chain many calls in one script.",
        code_schema(
            "e.g. async () => (await forge.callTool(\"github\", \"list_issues\", {repo: \"o/r\"})).length",
            true,
        ),
    );
    let mut tools = vec![search, execute];
    if surface.always_load {
        for tool in &mut tools {
            let mut meta = rmcp::model::MetaObject::new();
            meta.insert(ALWAYS_LOAD.into(), Value::Bool(true));
            tool.meta = Some(meta);
        }
    }
    tools
}

/// What runs executions for every session: the sandbox, the gateway, the
/// gate in front of them (shutdown, `max_executions_per_minute`, the
/// validator) and the audit log. One per process, shared by all sessions.
pub struct Executor {
    /// The sandbox.
    pub sandbox: Arc<Sandbox>,
    /// Downstream servers and the manifest.
    pub gateway: Arc<Gateway>,
    /// Where every session's stash lives, with the gateway's caps.
    pub store: Arc<dyn StateStore>,
    /// The secret that seals stash handles.
    pub handles: HandleKey,
    /// How the two tools are listed.
    pub surface: crate::config::Surface,
    /// Bounds on sessions: how many, and each one's share of the slots.
    pub sessions: SessionLimits,
    /// The live HTTP sessions, against `sessions.max_sessions`.
    pub session_cap: SessionCap,
    /// Running executions, so shutdown can let them finish.
    pub running: tokio_util::task::TaskTracker,
    /// `max_executions_per_minute`, across all sessions.
    pub rate: Option<crate::policy::RateLimit>,
    /// Whether scripts pass the static validator before they run
    /// (`[sandbox] validate`).
    pub validate: bool,
    /// Where each execution is recorded (`[audit]`); `None` records nothing.
    pub audit: Option<Arc<crate::audit::AuditLog>>,
}

impl Executor {
    /// An executor over `sandbox` and `gateway`, whose sessions' stashes
    /// live in a memory store bounded by `stash_limits`; validating, with
    /// the default session limits, no rate limit and no audit log until the
    /// `with_*` methods say otherwise.
    pub fn new(
        sandbox: Arc<Sandbox>,
        gateway: Arc<Gateway>,
        stash_limits: StashLimits,
    ) -> Executor {
        let sessions = SessionLimits::for_slots(sandbox.limits().max_concurrent);
        Executor {
            sandbox,
            gateway,
            store: Arc::new(MemoryStore::new(stash_limits)),
            handles: HandleKey::random(),
            surface: crate::config::Surface::default(),
            sessions,
            session_cap: SessionCap::new(sessions.max_sessions),
            running: tokio_util::task::TaskTracker::new(),
            rate: None,
            validate: true,
            audit: None,
        }
    }

    /// Bounds sessions by `limits`.
    pub fn with_sessions(mut self, limits: SessionLimits) -> Executor {
        self.session_cap = SessionCap::new(limits.max_sessions);
        self.sessions = limits;
        self
    }

    /// Seals stash handles with `key` (by default a key for this process
    /// only).
    pub fn with_handle_key(mut self, key: HandleKey) -> Executor {
        self.handles = key;
        self
    }

    /// Lists the two tools as `surface` says.
    pub fn with_surface(mut self, surface: crate::config::Surface) -> Executor {
        self.surface = surface;
        self
    }

    /// Records every execution in `log`.
    pub fn with_audit(mut self, log: Option<crate::audit::AuditLog>) -> Executor {
        self.audit = log.map(Arc::new);
        self
    }

    /// Turns the static validator on or off. Off, the sandbox's own
    /// hardening is the only layer; it is meant for testing that layer.
    pub fn with_validation(mut self, on: bool) -> Executor {
        self.validate = on;
        self
    }

    /// Limits executions to `per_minute` across all sessions.
    pub fn with_rate_limit(mut self, per_minute: Option<std::num::NonZeroU32>) -> Executor {
        self.rate = per_minute
            .map(|n| crate::policy::RateLimit::new(n, "sandbox.max_executions_per_minute"));
        self
    }

    /// How long an execution admitted now may still take: its waits for a
    /// slot of its session and a slot of the sandbox, its time limit, and a
    /// second for validation and answering.
    /// (A wait for servers still starting up is not counted: shutting down
    /// right after start-up should not take half a minute.)
    pub fn drain_grace(&self) -> std::time::Duration {
        let limits = self.sandbox.limits();
        limits.max_queue_wait * 2 + limits.timeout + std::time::Duration::from_secs(1)
    }

    /// Stops taking executions and waits for the running ones, at most
    /// [`Executor::drain_grace`].
    pub async fn drain(&self) {
        self.running.close();
        let grace = self.drain_grace();
        if tokio::time::timeout(grace, self.running.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "executions still running after {} s; ending them",
                grace.as_secs_f64()
            );
        }
    }
}

/// One client session.
#[derive(Clone)]
pub struct ForgeServer {
    executor: Arc<Executor>,
    session: Arc<Session>,
    /// Whether an `initialize` must take a place under `max_sessions`
    /// (HTTP; stdio has one session by nature).
    capped: bool,
}

impl ForgeServer {
    /// A new session with an empty stash, outside the session cap (a stdio
    /// connection: one per process).
    pub fn new(executor: Arc<Executor>) -> ForgeServer {
        ForgeServer::with_place(executor, None)
    }

    /// A server for streamable HTTP: a session of the 2025 era takes its
    /// place under `max_sessions` when it initializes; a stateless request
    /// of the 2026 era is served by a server of its own and takes none.
    pub fn for_http(executor: Arc<Executor>) -> ForgeServer {
        let mut server = ForgeServer::with_place(executor, None);
        server.capped = true;
        server
    }

    fn with_place(
        executor: Arc<Executor>,
        place: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> ForgeServer {
        let session = Session::new(
            executor.handles.mint(),
            executor.sessions.max_concurrent_per_session,
            place,
        );
        ForgeServer {
            executor,
            session: Arc::new(session),
            capped: false,
        }
    }

    /// Runs `code` in `mode` with this session's own stash, and records it
    /// in the audit log, if there is one.
    pub async fn run(&self, mode: Mode, code: &str) -> Report {
        self.run_with(mode, code, self.session.handle.clone())
            .await
            .0
    }

    /// Runs `code` in `mode` with the stash of `handle`, and records it in
    /// the audit log, if there is one; with the report, the handle when the
    /// script used the stash (the client needs it to come back to it).
    pub async fn run_with(
        &self,
        mode: Mode,
        code: &str,
        handle: Handle,
    ) -> (Report, Option<Handle>) {
        let stash = Arc::new(Stash::new(self.executor.store.clone(), handle));
        let report = match &self.executor.audit {
            None => self.admit(mode, code, None, stash.clone()).await,
            Some(audit) => {
                let mut audited = Audited {
                    audit,
                    arrival: crate::audit::Arrival {
                        session: &self.session.id,
                        stash: stash.handle(),
                        at: std::time::SystemTime::now(),
                        mode,
                        code,
                    },
                    trail: audit.trail(),
                    written: false,
                };
                let trail = Some(audited.trail.clone());
                let report = self.admit(mode, code, trail, stash.clone()).await;
                audited.write(Some(&report));
                report
            }
        };
        let used = stash.touched().then(|| stash.handle().clone());
        (report, used)
    }

    /// Runs `code` unless the gateway is closing, over its execution rate,
    /// or the session holds its share of the slots, recording its
    /// operations in `trail`.
    async fn admit(
        &self,
        mode: Mode,
        code: &str,
        trail: Option<crate::audit::SharedTrail>,
        stash: Arc<Stash>,
    ) -> Report {
        if self.executor.running.is_closed() {
            return Report::refused(crate::error::ExecutionError::new(
                crate::error::ErrorKind::Busy,
                "the gateway is shutting down and takes no new executions",
            ));
        }
        if let Some(Err(e)) = self.executor.rate.as_ref().map(|r| r.take()) {
            let mut err = crate::error::ExecutionError::new(
                crate::error::ErrorKind::RateLimited,
                e.message.clone(),
            );
            err.forge = Some(e);
            return Report::refused(err);
        }
        self.executor
            .running
            .track_future(async {
                let limits = self.executor.sandbox.limits();
                match self
                    .session
                    .slot(limits.max_queue_wait, limits.max_concurrent)
                    .await
                {
                    Ok(_slot) => self.run_now(mode, code, trail, stash).await,
                    Err(busy) => Report::refused(busy),
                }
            })
            .await
    }

    async fn run_now(
        &self,
        mode: Mode,
        code: &str,
        trail: Option<crate::audit::SharedTrail>,
        stash: Arc<Stash>,
    ) -> Report {
        // Oversized code is the sandbox's to refuse, without parsing it.
        if self.executor.validate && code.len() <= self.executor.sandbox.limits().max_code_size {
            let verdict = crate::validate::validate_async(
                code.to_string(),
                crate::validate::ValidatorLimits::default(),
            )
            .await;
            let refusal = match verdict {
                Ok(()) => None,
                // Code that does not parse, or is not one function, keeps
                // the kinds the sandbox would give it; the rest is policy.
                Err(rejection) => Some((
                    match rejection.kind {
                        Rule::Syntax => crate::error::ErrorKind::Syntax,
                        Rule::NotAsyncArrow => crate::error::ErrorKind::NotAFunction,
                        Rule::Internal => crate::error::ErrorKind::Internal,
                        _ => crate::error::ErrorKind::Validation,
                    },
                    rejection.to_string(),
                )),
            };
            if let Some((kind, message)) = refusal {
                return Report::refused(crate::error::ExecutionError::new(kind, message));
            }
        }
        let gateway = &self.executor.gateway;
        gateway.wait_started(STARTUP_WAIT).await;
        let snapshot = gateway.snapshot();
        let cx = ExecutionContext {
            servers: Arc::new(gateway.router(&snapshot)),
            manifest: Arc::new(snapshot),
            stash,
            audit: trail,
        };
        self.executor.sandbox.run(mode, code, cx).await
    }
}

/// Writes one execution's audit line exactly once: when it finishes, or,
/// if its future is dropped first (the client cancelled the request or went
/// away), as `cancelled` with the operations it had started.
struct Audited<'a> {
    audit: &'a crate::audit::AuditLog,
    arrival: crate::audit::Arrival<'a>,
    trail: crate::audit::SharedTrail,
    written: bool,
}

impl Audited<'_> {
    fn write(&mut self, report: Option<&Report>) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let record = self.audit.record(&self.arrival, report, &self.trail);
        self.audit.write(&record);
    }
}

impl Drop for Audited<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let report = Report::refused(crate::error::ExecutionError::new(
                crate::error::ErrorKind::Internal,
                "the execution panicked inside quickforge",
            ));
            self.write(Some(&report));
        } else {
            self.write(None);
        }
    }
}

/// A report as an MCP tool result: the value as JSON text (and as
/// `structuredContent.result`), the logs, errors as `isError` results a
/// model can read, and the stash handle when the script used the stash (as
/// `structuredContent.stash` and a line of text, for clients that drop
/// structured content).
pub fn to_result(report: &Report, stash: Option<&Handle>) -> CallToolResult {
    let logs: Vec<String> = report
        .logs
        .iter()
        .map(|l| {
            let level = match l.level {
                LogLevel::Debug => "debug",
                LogLevel::Info => "info",
                LogLevel::Warn => "warn",
                LogLevel::Error => "error",
            };
            format!("[{level}] {}", l.message)
        })
        .collect();
    let mut log_text = logs.join("\n");
    if report.stats.logs_dropped > 0 {
        log_text.push_str(&format!(
            "\n[quickforge] {} more log lines dropped (log limit)",
            report.stats.logs_dropped
        ));
    }
    let mut structured = serde_json::Map::new();
    let (mut content, is_error) = match &report.result {
        Ok(value) => {
            structured.insert("result".into(), value.clone());
            if report.stats.output_cut > 0 {
                structured.insert("cutBytes".into(), report.stats.output_cut.into());
            }
            (
                vec![ContentBlock::text(
                    serde_json::to_string(value).unwrap_or_default(),
                )],
                false,
            )
        }
        Err(e) => {
            let error = serde_json::to_value(e).unwrap_or(Value::Null);
            let mut text = format!("{}: {}", e.kind, e.message);
            if let Some(f) = &e.forge {
                text.push_str(&format!(
                    "\nForgeError {}{}",
                    f.code,
                    if f.retryable { " (retryable)" } else { "" }
                ));
                if let Some(s) = &f.suggestion {
                    text.push_str(&format!("\nsuggestion: {s}"));
                }
            }
            if let Some(stack) = &e.stack {
                text.push_str(&format!("\n{stack}"));
            }
            structured.insert("error".into(), error);
            (vec![ContentBlock::text(text)], true)
        }
    };
    if !logs.is_empty() {
        structured.insert("logs".into(), logs.into());
        content.push(ContentBlock::text(format!("logs:\n{log_text}")));
    }
    if let Some(handle) = stash {
        structured.insert("stash".into(), handle.as_str().into());
        content.push(ContentBlock::text(format!("stash: {}", handle.as_str())));
    }
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(Value::Object(structured));
    result
}

impl ServerHandler for ForgeServer {
    fn get_info(&self) -> ServerConfig {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(false);
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools_with(tools)
                .build(),
        )
        .with_server_info(Implementation::new("quickforge", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions())
    }

    /// Both eras: up to 2025-11-25 with `initialize` and sessions, and
    /// 2026-07-28 with `server/discover` and per-request `_meta`, where each
    /// request stands alone and state travels by stash handle.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if self.capped {
            self.session
                .take_place(&self.executor.session_cap)
                .map_err(|full| McpError::internal_error(full, None))?;
        }
        cx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(&self, _cx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        )
        .with_ttl_ms(LIST_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(
            ListToolsResult::with_all_items(tools(&self.executor.surface))
                .with_ttl_ms(LIST_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools(&self.executor.surface)
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mode = match request.name.as_ref() {
            "search" => Mode::Search,
            "execute" => Mode::Execute,
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "unknown tool {other:?}: quickforge has exactly two tools, search and execute"
                    ),
                    None,
                ));
            }
        };
        let code = match request.arguments.as_ref().and_then(|a| a.get("code")) {
            Some(Value::String(code)) => code.clone(),
            Some(other) => {
                let kind = match other {
                    Value::Null => "null",
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::Array(_) => "an array",
                    Value::Object(_) => "an object",
                    Value::String(_) => "a string",
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "`code` must be a string holding a JS async arrow function, got {kind}"
                ))])
                .into());
            }
            None => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    "missing argument `code`: a JS async arrow function, e.g. async () => manifest.servers",
                )])
                .into());
            }
        };
        let handle = match request.arguments.as_ref().and_then(|a| a.get("stash")) {
            None | Some(Value::Null) => self.session.handle.clone(),
            Some(Value::String(text)) => match self.executor.handles.open(text) {
                Some(handle) => handle,
                None => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "`stash` {:?} is not a stash handle of this gateway (altered, from another gateway, or sealed before its secret changed); pass the `stash` value of an earlier result exactly, or leave it out to use this session's stash",
                        crate::error::preview(text)
                    ))])
                    .into());
                }
            },
            Some(_) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    "`stash` must be a string: the `stash` value of an earlier result",
                )])
                .into());
            }
        };
        let (report, used) = self.run_with(mode, &code, handle).await;
        Ok(to_result(&report, used.as_ref()).into())
    }
}
