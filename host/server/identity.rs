//! Whose session this is, read from a request: the authenticated subject
//! (`[auth]`) and the session id rmcp's request context carries, handed to
//! the session (`crate::session::Session::bind`), which keeps them.
//!
//! The auth middleware (`crate::auth`) puts the [`Subject`] into the HTTP
//! request's extensions; rmcp hands the request's parts to every handler
//! in its context. Without `[auth]` (stdio, or HTTP on loopback) there is
//! no subject, and everything works as before.

use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::ForgeServer;
use crate::auth::Subject;
use crate::state::Handle;

/// The subject an MCP request came with, if any.
fn subject_of(cx: &RequestContext<RoleServer>) -> Option<Subject> {
    cx.extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Subject>()
        .cloned()
}

/// The HTTP connection a request came on, if over HTTP.
fn connection_of(cx: &RequestContext<RoleServer>) -> Option<crate::session::ConnectionId> {
    cx.extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<crate::session::ConnectionId>()
        .copied()
}

/// The MCP session id a request names, if any (2025-era streamable HTTP,
/// after `initialize`).
fn session_id_of(cx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = cx.extensions.get::<axum::http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    (!id.is_empty()).then(|| id.to_owned())
}

impl ForgeServer {
    /// Binds this session to the subject of `cx` (see
    /// [`crate::session::Session::bind`]): the session's facts live in the
    /// session; what this reads is where rmcp keeps them in a request.
    pub(super) fn bind(&self, cx: &RequestContext<RoleServer>) -> Result<(), McpError> {
        self.session
            .bind(
                subject_of(cx),
                session_id_of(cx).as_deref(),
                &self.executor.handles,
                connection_of(cx),
                &self.executor.slot_shares,
            )
            .map_err(|e| McpError::invalid_request(e.to_string(), None))
    }

    /// The subject's id, for sealing and opening ids.
    pub(super) fn subject_id(&self) -> Option<&str> {
        self.session.subject_id()
    }

    /// The session's own stash (see
    /// [`crate::session::Session::default_handle`]).
    pub(super) fn default_handle(&self) -> Handle {
        self.session.default_handle(&self.executor.handles)
    }
}
