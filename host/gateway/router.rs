//! The route step of the call pipeline for live servers: a call's server
//! and tool in the execution's manifest snapshot, its arguments against the
//! tool's `inputSchema`, the server's live session and guards.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument as _;

use super::downstream::{self, Connection};
use super::{Gateway, Server};
use crate::call::{BoxFuture, Route, Servers, Target};
use crate::error::{ErrorCode, ForgeError};
use crate::manifest::{Lookup, Manifest, ServerEntry, ServerStatus};
use crate::policy::Isolation;
use crate::relay::Upstream;

/// Routes one execution's calls (the pipeline's route step, see
/// [`crate::call`]) over the manifest snapshot the execution started with.
pub struct Router {
    pub(super) gateway: Arc<Gateway>,
    pub(super) manifest: Arc<Manifest>,
    /// The client of the execution, for what servers send back during its
    /// calls; `None` without one.
    pub(super) upstream: Option<Arc<Upstream>>,
    /// What tool results become: values for a script, or MCP results for
    /// a direct tool's client.
    pub(super) shape: super::convert::Shape,
}

impl Router {
    /// `self`, with tool results in `shape`.
    pub fn with_shape(mut self, shape: super::convert::Shape) -> Router {
        self.shape = shape;
        self
    }

    /// `server`'s guards and live session, or `SERVER_UNAVAILABLE` with the
    /// reason its manifest `entry` gives.
    fn live(
        &self,
        server: &str,
        entry: &ServerEntry,
    ) -> Result<(Arc<Server>, Arc<Connection>), ForgeError> {
        let s = self
            .gateway
            .server(server)
            .ok_or_else(|| ForgeError::server_not_found(server))?;
        match s.connection() {
            Some(c) => Ok((s.clone(), c)),
            None => {
                let why = match &entry.status {
                    ServerStatus::Unavailable(why) => format!(": {why}"),
                    _ => String::new(),
                };
                Err(ForgeError::new(ErrorCode::ServerUnavailable, format!("server {server:?} is not connected{why}"))
                    .suggest("the gateway reconnects in the background; check manifest.servers for its status and retry later"))
            }
        }
    }

    /// The route to `server`'s live session, whose request `send` makes
    /// (given the connection, the server's name and its timeout).
    fn to_server(
        &self,
        server: &str,
        entry: &ServerEntry,
        send: impl FnOnce(Arc<Connection>, String, Duration) -> BoxFuture<Result<Value, ForgeError>>
        + Send
        + 'static,
    ) -> Result<Route, ForgeError> {
        let (s, conn) = self.live(server, entry)?;
        let (server, timeout) = (server.to_string(), s.config.timeout);
        Ok(Route::To {
            guards: Some(s.guards.clone()),
            send: Box::new(move || send(conn, server, timeout)),
        })
    }
}

impl Servers for Router {
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
        match target {
            Target::Tool { server, tool, args } => {
                let args = Value::Object(args);
                let entry = match self.manifest.lookup_tool(server, tool)? {
                    Lookup::Found(entry, t) => {
                        if let Some(change) = entry.changed.get(tool).filter(|c| c.quarantined) {
                            return Ok(Route::Denied(change.refusal(server, tool)));
                        }
                        crate::manifest::validate(t, server, &args)?;
                        entry
                    }
                    Lookup::Denied(why) => return Ok(Route::Denied(why.to_string())),
                };
                let Value::Object(args) = args else {
                    unreachable!("built as an object above")
                };
                // the arguments as the script wrote them: the approval shows
                // them to the person (`relay::approve`, the client's boundary)
                let confirm = entry
                    .confirm
                    .get(tool)
                    .map(|why| (why.clone(), Value::Object(args.clone()).to_string()));
                let tool = tool.to_string();
                let (upstream, shape) = (self.upstream.clone(), self.shape);
                let route = self.to_server(server, entry, move |conn, server, timeout| {
                    // One span per downstream call, under the execution's.
                    let span = crate::trace::call_span(&server, &tool);
                    Box::pin(
                        async move {
                            let call = super::tool_call::Call {
                                conn: &conn,
                                server: &server,
                                tool: &tool,
                                timeout,
                                upstream,
                                shape,
                            };
                            super::tool_call::call_tool(call, args).await
                        }
                        .instrument(span),
                    )
                })?;
                Ok(match (route, confirm) {
                    (Route::To { guards, send }, Some((why, args))) => Route::Ask {
                        why,
                        args,
                        guards,
                        send,
                    },
                    (route, _) => route,
                })
            }
            Target::Resource { server, uri } => {
                let entry = self.manifest.require_server(server)?;
                let uri = uri.to_string();
                self.to_server(server, entry, move |conn, server, timeout| {
                    Box::pin(async move {
                        downstream::read_resource(&conn, &server, &uri, timeout).await
                    })
                })
            }
        }
    }

    fn strict_group(&self, server: &str) -> Option<Arc<str>> {
        let group = self.gateway.server(server)?.guards.group.as_ref()?;
        (group.isolation == Isolation::Strict).then(|| group.name.clone())
    }
}
