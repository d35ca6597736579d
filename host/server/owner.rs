//! Whose session this is: the authenticated subject (`[auth]`) of its
//! first request, which every later request must share, and the stash,
//! task ids and MRTR states sealed for it.
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

/// The MCP session id a request names, if any (2025-era streamable HTTP,
/// after `initialize`).
fn session_id_of(cx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = cx.extensions.get::<axum::http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    (!id.is_empty()).then(|| id.to_owned())
}

impl ForgeServer {
    /// Binds this session to the subject of `cx` on its first request, and
    /// refuses a request of another subject afterwards (a session id that
    /// leaked is of no use to anyone else).
    ///
    /// The first request that names its MCP session (`mcp-session-id`, a
    /// 2025-era streamable-HTTP session after `initialize`) also fixes the
    /// session's default stash: the handle derived from the session id for
    /// the subject ([`crate::state::HandleKey::derive_for`]), the same on
    /// every replica, so a session that a load balancer moves to a replica
    /// which restores it from the shared session store keeps its stash.
    pub(super) fn bind(&self, cx: &RequestContext<RoleServer>) -> Result<(), McpError> {
        let subject = subject_of(cx);
        if *self.owner.get_or_init(|| subject.clone()) != subject {
            return Err(McpError::invalid_request(
                "this MCP session belongs to another authenticated subject; open a session of your own",
                None,
            ));
        }
        // Only a session that initialized: rmcp routes its requests by the
        // header, so the header is its own id. A stateless 2026-era request
        // could put any session's id there.
        if self.bound.get().is_none()
            && self.initialized.load(std::sync::atomic::Ordering::Acquire)
            && let Some(id) = session_id_of(cx)
        {
            let derived = self.executor.handles.derive_for(&id, self.subject_id());
            let _ = self.bound.set(derived);
        }
        Ok(())
    }

    /// The subject this session serves, once bound.
    pub(super) fn subject(&self) -> Option<&Subject> {
        self.owner.get().and_then(Option::as_ref)
    }

    /// The subject's id, for sealing and opening ids.
    pub(super) fn subject_id(&self) -> Option<&str> {
        self.subject().map(Subject::id)
    }

    /// The session's own stash: the handle derived from the session id
    /// when the session has one (see [`ForgeServer::bind`]); otherwise
    /// (stdio, a stateless 2026-era request) without a subject the handle
    /// the session was made with, and with one a handle sealed for that
    /// subject, minted on first use. Either way the subject can reach it
    /// from another session by its handle and nobody else can.
    pub(super) fn default_handle(&self) -> Handle {
        self.bound
            .get_or_init(|| match self.subject() {
                None => self.session.handle.clone(),
                Some(s) => self.executor.handles.mint_for(Some(s.id())),
            })
            .clone()
    }
}
