//! The rmcp client handler of one downstream session: what quickforge
//! declares it can do for the server, and what it does with what the
//! server sends — list changes refresh the manifest; progress, log
//! messages, elicitation, sampling and roots requests go to the client
//! whose execution they belong to (see [`crate::relay`]).

#![expect(
    deprecated,
    reason = "logging, sampling and roots are deprecated in MCP 2026-07-28 (SEP-2577) but are what 2025-era servers send"
)]

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode as RpcCode, FormElicitationCapability,
    Implementation, ListRootsRequest, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProtocolVersion, ResourceUpdatedNotificationParam, Root,
    ServerRequest, UrlElicitationCapability,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;

use crate::relay::{Asked, Hint, Owner, Relay};

/// Servers whose tool lists need listing again. A set, not a queue: a
/// server flooding `list_changed` notifications costs one entry and one
/// listing per refresh round, never a growing backlog.
#[derive(Debug, Default)]
pub struct RefreshSet {
    due: std::sync::Mutex<std::collections::BTreeSet<String>>,
    notify: tokio::sync::Notify,
}

impl RefreshSet {
    /// Marks `server` for a refresh.
    pub fn push(&self, server: &str) {
        let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
        if !due.contains(server) {
            due.insert(server.to_string());
        }
        drop(due);
        self.notify.notify_one();
    }

    /// Waits until some server is due.
    pub async fn wait(&self) {
        self.notify.notified().await;
    }

    /// Takes every due server.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.due.lock().unwrap_or_else(|p| p.into_inner()))
            .into_iter()
            .collect()
    }
}

/// The `_meta` key that tells the client which downstream server a relayed
/// request comes from.
pub const FROM_SERVER: &str = "io.github.quickforge/server";

/// The rmcp client handler of one session: it knows its server's name and
/// what its config allows, and hands what the server sends to the gateway.
#[derive(Clone)]
pub struct Handler {
    pub(super) server: Arc<str>,
    pub(super) refresh: Arc<RefreshSet>,
    pub(super) relay: Arc<Relay>,
    /// `servers.NAME.sampling`: whether the server may ask the client's
    /// model for completions.
    pub(super) sampling: bool,
    /// `servers.NAME.roots`: what the server sees in `roots/list` when no
    /// client can be asked.
    pub(super) roots: Arc<[String]>,
}

impl Handler {
    /// Whose a request from the server is: by the response stream it came
    /// on (streamable HTTP) or the progress token in its `_meta`, then by
    /// the relay's other rules.
    fn owner(&self, cx: &RequestContext<RoleClient>) -> Option<Owner> {
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = cx.extensions.get() {
            return self.relay.owner(&self.server, Hint::Request(id));
        }
        if let Some(token) = cx.meta.get_progress_token() {
            return self.relay.owner(&self.server, Hint::Token(&token));
        }
        self.relay.owner(&self.server, Hint::None)
    }

    /// The error for a request no client can take.
    fn nobody(&self, what: &str) -> ErrorData {
        ErrorData::invalid_params(
            format!(
                "quickforge cannot tell which of its clients this {what} request is for: it relays one only during a call of one execution (or to its only client)"
            ),
            None,
        )
    }

    /// The error for a client that lacks `capability`.
    fn unsupported(&self, capability: &str) -> ErrorData {
        ErrorData::new(
            RpcCode::METHOD_NOT_FOUND,
            format!("the client this request would go to does not support {capability}"),
            None,
        )
    }

    /// Sends `request` to `owner`'s client: through its execution, which
    /// pauses that execution's deadline while a person is asked, or, for
    /// the only client with no execution to tie it to, directly.
    async fn ask(
        &self,
        owner: &Owner,
        request: ServerRequest,
        kind: Asked,
    ) -> Result<ClientResult, ErrorData> {
        match owner {
            Owner::Execution(up, _) => up.ask(request, kind).await,
            Owner::Client(client) => {
                let limit = match kind {
                    Asked::Person => self.relay.limits().max_wait,
                    Asked::Program => crate::relay::QUICK_ASK,
                };
                match tokio::time::timeout(limit, client.peer().send_request(request)).await {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(rmcp::ServiceError::McpError(e))) => Err(e),
                    Ok(Err(e)) => Err(ErrorData::internal_error(
                        format!("quickforge could not reach its client: {e}"),
                        None,
                    )),
                    Err(_) => Err(ErrorData::internal_error(
                        format!("the client did not answer within {} s", limit.as_secs()),
                        None,
                    )),
                }
            }
        }
    }
}

/// The request's `_meta` marked with the server it comes from.
fn marked(
    meta: Option<rmcp::model::RequestMetaObject>,
    server: &str,
) -> rmcp::model::RequestMetaObject {
    let mut meta = meta.unwrap_or_default();
    meta.insert(FROM_SERVER.into(), Value::String(server.to_string()));
    meta
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Declared: what quickforge can relay. Each request still reaches a
        // client only if that client can take it; if not, the server gets
        // the specification's error for it (see `crate::relay`). Tasks are
        // declared because `tool_call::await_task` polls the tasks a server
        // starts.
        let mut caps = ClientCapabilities::builder()
            .enable_tasks()
            .enable_roots()
            .enable_roots_list_changed()
            .enable_sampling()
            .build();
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        elicitation.url = Some(UrlElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        ClientConfig::new(
            caps,
            Implementation::new("quickforge", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.refresh.push(&self.server);
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.refresh.push(&self.server);
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.refresh.push(&self.server);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        for client in self.relay.subscribers(&params.uri) {
            if let Err(e) = client.peer().notify_resource_updated(params.clone()).await {
                tracing::debug!("could not relay resources/updated: {e}");
            }
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        // quickforge's own token on one of its requests: exact, or nobody's.
        let Some(Owner::Execution(up, tool)) = self
            .relay
            .owner(&self.server, Hint::Token(&params.progress_token))
        else {
            return;
        };
        let figures = match params.total {
            Some(total) => format!(" ({}/{total})", params.progress),
            None => format!(" ({})", params.progress),
        };
        let message = params.message.unwrap_or_default();
        let sep = if message.is_empty() { "" } else { ": " };
        up.progress(
            None,
            format!("{}.{tool}{sep}{message}{figures}", self.server),
        );
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        match self.relay.owner(&self.server, Hint::None) {
            Some(owner) => {
                owner
                    .client()
                    .log(
                        &self.server,
                        params.level,
                        params.data,
                        params.logger.as_deref(),
                    )
                    .await;
            }
            None => {
                // redacted by the log's writer, the log's boundary; the cut
                // before it never splits a credential
                let text = crate::error::clip_between_words(&params.data.to_string(), 1024);
                tracing::info!(target: "quickforge::downstream", server = %self.server, level = ?params.level, "log message no client claims: {text}");
            }
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let owner = self.owner(&cx).ok_or_else(|| self.nobody("elicitation"))?;
        self.elicit(&owner, request).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sampling_allowed()?;
        let owner = self.owner(&cx).ok_or_else(|| self.nobody("sampling"))?;
        self.sample(&owner, params).await
    }

    async fn list_roots(
        &self,
        cx: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.roots(self.owner(&cx).as_ref()).await
    }
}

/// What a server asks of the client, once it is known whose it is: used
/// for the server's own requests (2025 era) and for the `inputRequests` of
/// an `input_required` answer (2026 era, see `kinds`).
impl Handler {
    /// Relays an elicitation to `owner`'s client, marked with the server's
    /// name, if the client can take that mode.
    pub(super) async fn elicit(
        &self,
        owner: &Owner,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let caps = owner.caps();
        let server = &self.server;
        let request = match request {
            ElicitRequestParams::FormElicitationParams {
                meta,
                message,
                requested_schema,
            } => {
                if !caps.elicit_form {
                    return Err(self.unsupported("form elicitation"));
                }
                ElicitRequestParams::FormElicitationParams {
                    meta: Some(marked(meta, server)),
                    message: format!("[{server}] {message}"),
                    requested_schema,
                }
            }
            ElicitRequestParams::UrlElicitationParams {
                meta,
                message,
                url,
                elicitation_id,
            } => {
                if !caps.elicit_url {
                    return Err(self.unsupported("URL elicitation"));
                }
                ElicitRequestParams::UrlElicitationParams {
                    meta: Some(marked(meta, server)),
                    message: format!("[{server}] {message}"),
                    url,
                    elicitation_id,
                }
            }
            _ => return Err(self.unsupported("this elicitation mode")),
        };
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(request));
        match self.ask(owner, request, Asked::Person).await? {
            ClientResult::ElicitResult(r) => Ok(r),
            _ => Err(ErrorData::internal_error(
                "the client answered elicitation with something else",
                None,
            )),
        }
    }

    /// The spec's error when `servers.NAME.sampling = false`.
    pub(super) fn sampling_allowed(&self) -> Result<(), ErrorData> {
        if !self.sampling {
            return Err(ErrorData::new(
                RpcCode::METHOD_NOT_FOUND,
                format!(
                    "sampling is turned off for this server in quickforge (servers.{}.sampling = false)",
                    self.server
                ),
                None,
            ));
        }
        Ok(())
    }

    /// Relays a sampling request to `owner`'s client, if it can take one.
    pub(super) async fn sample(
        &self,
        owner: &Owner,
        mut params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        if !owner.caps().sampling {
            return Err(self.unsupported("sampling"));
        }
        params.meta = Some(marked(params.meta.take(), &self.server));
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.ask(owner, request, Asked::Person).await? {
            ClientResult::CreateMessageResult(r) => Ok(*r),
            _ => Err(ErrorData::internal_error(
                "the client answered sampling with something else",
                None,
            )),
        }
    }

    /// `roots/list`: `owner`'s client's roots when it has them, else the
    /// configured ones.
    pub(super) async fn roots(&self, owner: Option<&Owner>) -> Result<ListRootsResult, ErrorData> {
        let configured = || ListRootsResult::new(self.roots.iter().map(Root::new).collect());
        let Some(owner) = owner else {
            return Ok(configured());
        };
        if !owner.caps().roots {
            return Ok(configured());
        }
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        match self.ask(owner, request, Asked::Program).await? {
            ClientResult::ListRootsResult(r) => Ok(r),
            _ => Err(ErrorData::internal_error(
                "the client answered roots/list with something else",
                None,
            )),
        }
    }
}
