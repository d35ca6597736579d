//! The MCP server quickforge shows its client: two tools, `search` and
//! `execute`, each taking `code`, and initialize `instructions` that carry
//! the TypeScript definitions of the whole script API (`forge.d.ts`); beside
//! them, only the tools a server's `expose` lists directly (`direct.rs`).
//!
//! One [`ForgeServer`] serves one client session (a stdio connection, or one
//! streamable-HTTP session) and holds that session's [`Session`]: its stash
//! handle and its share of the execution slots.

use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, Tool, ToolAnnotations, ToolsCapability,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::relay::ClientLink;
use crate::session::Session;

mod call;
mod direct;
mod identity;
mod pages;
mod result;

pub use crate::execution::Executor;
pub use result::to_result;

/// How long a client may keep `tools/list` and `server/discover` results,
/// in milliseconds: one hour. Both are fixed for the life of the process
/// (two tools, their schemas, the instructions), the same for every client
/// (so `public`), and a new quickforge is a new connection that lists again.
pub const LIST_TTL_MS: u64 = 3_600_000;

/// How long a client may keep `tools/list` when servers list tools
/// directly (`expose`), in milliseconds: one minute. Their tools change
/// when a server's do; a client with a session hears it at once
/// (`notifications/tools/list_changed`), one without (2026-07-28,
/// stateless) lists again after this.
pub const DIRECT_LIST_TTL_MS: u64 = 60_000;

/// The TypeScript definitions of the script API, as the guest exposes it
/// (tests/all/dts.rs checks they match).
pub const FORGE_D_TS: &str = include_str!("../forge.d.ts");

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

/// `[surface]`: how quickforge's own two tools are listed to its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Surface {
    /// Whether `search` and `execute` carry `_meta` `"anthropic/alwaysLoad":
    /// true`. Default on: Claude Code defers every MCP tool behind its tool
    /// search unless the tool says so, and a code-mode gateway whose two
    /// tools are deferred loses its point. Clients that do not know the key
    /// ignore it.
    pub always_load: bool,
}

impl Default for Surface {
    fn default() -> Self {
        Surface { always_load: true }
    }
}

/// The two tools, exactly as `tools/list` returns them under `surface`.
pub fn tools(surface: &Surface) -> Vec<Tool> {
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

/// One client session.
#[derive(Clone)]
pub struct ForgeServer {
    executor: Arc<Executor>,
    session: Arc<Session>,
    /// Whether an `initialize` must take a place under `max_sessions`
    /// (HTTP; stdio has one session by nature).
    capped: bool,
    /// The session's client, for the relay (see [`ForgeServer::client`]).
    client: Arc<std::sync::OnceLock<Arc<ClientLink>>>,
    /// How the two tools are listed (`[surface]`).
    surface: Surface,
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
            client: Arc::default(),
            surface: Surface::default(),
        }
    }

    /// Lists the two tools as `surface` says.
    pub fn with_surface(mut self, surface: Surface) -> ForgeServer {
        self.surface = surface;
        self
    }

    /// Runs `code` in `mode` with this session's own stash, and records it
    /// in the audit log, if there is one.
    pub async fn run(&self, mode: crate::sandbox::Mode, code: &str) -> crate::sandbox::Report {
        self.executor.run(&self.session, mode, code).await
    }

    /// The client of this session, as the relay sees it; made on first use
    /// (after `initialize`, when its capabilities are known). A stdio
    /// session's client is the gateway's only one.
    fn client(&self, peer: &Peer<RoleServer>) -> Arc<ClientLink> {
        self.client
            .get_or_init(|| {
                let principal = self.session.subject_id().map(Arc::from);
                let link = ClientLink::new(peer.clone(), principal);
                self.executor.gateway.relay.register(&link);
                if !self.capped {
                    self.executor.gateway.relay.set_solo(link.clone());
                }
                link
            })
            .clone()
    }
}

impl ServerHandler for ForgeServer {
    #[expect(
        deprecated,
        reason = "logging is deprecated in MCP 2026-07-28 (SEP-2577); 2025-era clients use it"
    )]
    fn get_info(&self) -> ServerConfig {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(self.executor.gateway.exposes());
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools_with(tools)
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_tasks()
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
        self.session.mark_initialized();
        self.bind(&cx)?;
        if self.capped {
            self.session
                .take_place(&self.executor.session_cap)
                .map_err(|full| McpError::internal_error(full, None))?;
        }
        let result = self.negotiate_initialize(&request)?;
        // The client as it will be served: at the negotiated revision, not
        // the one it asked for (rmcp records that only after this returns,
        // and the client link below reads it now: a client asking for
        // 2026-07-28 and served at 2025-11-25 can be sent requests).
        let mut info = request;
        info.protocol_version = result.protocol_version.clone();
        cx.peer.set_peer_info(info);
        if !self.capped {
            // The gateway's only client: servers that asked for roots before
            // it came saw the configured ones; now they can ask it.
            let client = self.client(&cx.peer);
            if client.caps().roots {
                let gateway = self.executor.gateway.clone();
                tokio::spawn(async move { gateway.roots_changed().await });
            }
        }
        Ok(result)
    }

    async fn discover(&self, _cx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        )
        .with_ttl_ms(LIST_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    /// `search`, `execute`, and the direct tools (`expose`), if any.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let gateway = &self.executor.gateway;
        let ttl = if gateway.exposes() {
            // The direct tools are those of the servers up at the time.
            gateway.surface_ready().await;
            DIRECT_LIST_TTL_MS
        } else {
            LIST_TTL_MS
        };
        let mut listed = tools(&self.surface);
        listed.extend(gateway.direct_tools().listed().cloned());
        Ok(ListToolsResult::with_all_items(listed)
            .with_ttl_ms(ttl)
            .with_cache_scope(CacheScope::Public))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools(&self.surface)
            .into_iter()
            .find(|t| t.name == name)
            .or_else(|| {
                let direct = self.executor.gateway.direct_tools();
                direct.get(name).map(|t| t.listed.clone())
            })
    }

    /// `logging/setLevel`: downstream log messages below `level` are no
    /// longer relayed to this client.
    #[expect(
        deprecated,
        reason = "logging is deprecated in MCP 2026-07-28 (SEP-2577); 2025-era clients use it"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.client(&cx.peer).set_level(request.level);
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.executor.gateway.surface_ready().await;
        let (items, next) = pages::page(self.executor.gateway.surface_prompts(), request.as_ref())?;
        let mut r = ListPromptsResult::with_all_items(items);
        r.next_cursor = next;
        Ok(r)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.executor
            .gateway
            .get_prompt(request)
            .await
            .map(Into::into)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.executor.gateway.surface_ready().await;
        let (items, next) =
            pages::page(self.executor.gateway.surface_resources(), request.as_ref())?;
        let mut r = ListResourcesResult::with_all_items(items);
        r.next_cursor = next;
        Ok(r)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.executor.gateway.surface_ready().await;
        let (items, next) =
            pages::page(self.executor.gateway.surface_templates(), request.as_ref())?;
        let mut r = ListResourceTemplatesResult::with_all_items(items);
        r.next_cursor = next;
        Ok(r)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.executor
            .gateway
            .read_resource(&request.uri)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.executor.gateway.complete(request).await
    }

    /// `resources/subscribe`: the owning server is asked once, whoever
    /// subscribes after; its updates reach every subscribed client.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let client = self.client(&cx.peer);
        let gateway = &self.executor.gateway;
        if gateway.relay.subscribe(&request.uri, &client) {
            gateway.subscribe(&request.uri).await?;
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let client = self.client(&cx.peer);
        let gateway = &self.executor.gateway;
        if gateway.relay.unsubscribe(&request.uri, &client) {
            gateway.unsubscribe(&request.uri).await?;
        }
        Ok(())
    }

    /// The client's roots changed: every server hears it and asks again.
    async fn on_roots_list_changed(&self, _cx: NotificationContext<RoleServer>) {
        self.executor.gateway.roots_changed().await;
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.bind(&cx)?;
        self.call(request, cx).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.bind(&cx)?;
        let run = self.held(&request.task_id)?;
        Ok(GetTaskResult::new(
            run.detailed(self.executor.runs.limits()),
        ))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.bind(&cx)?;
        self.held(&request.task_id)?.answer(request.input_responses);
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.bind(&cx)?;
        self.held(&request.task_id)?.cancel();
        Ok(())
    }
}
