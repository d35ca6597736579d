//! The HTTP session gate: what stands between HTTP clients and their
//! sessions, before rmcp sees a request. It keeps the cap on live sessions
//! (evicting the session left alone longest to let a new client in),
//! when each session was last used, whose each is (`[auth]`), and which
//! request ids each has running (a second request under a running id is
//! refused, never cross-answered).

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::{
    RETRY_AFTER_SECS, Recency, RedisSessionStore, SessionCap, SessionLimits, SessionOwners,
};

/// What stands between HTTP clients and their sessions: the cap on live
/// sessions, when each was last used, and whose each is (`[auth]`).
pub struct Gate {
    cap: SessionCap,
    recency: Recency,
    owners: SessionOwners,
    /// The sessions' records in Redis, where a session opened on another
    /// replica says whose it is.
    records: Option<Arc<RedisSessionStore>>,
    manager: Arc<LocalSessionManager>,
    limits: SessionLimits,
    /// The requests whose response is still open.
    running: RunningIds,
}

impl Gate {
    /// A gate under `cap`, over the sessions of `manager`, with their
    /// records in Redis when `records` is set.
    pub fn new(
        cap: SessionCap,
        records: Option<Arc<RedisSessionStore>>,
        manager: Arc<LocalSessionManager>,
        limits: SessionLimits,
    ) -> Gate {
        Gate {
            cap,
            recency: Recency::default(),
            owners: SessionOwners::default(),
            records,
            manager,
            limits,
            running: Arc::default(),
        }
    }

    /// Marks request `request` of session `session` running until the
    /// returned guard drops (when its response has been sent whole, or the
    /// client went away); `None` when one under that id already runs.
    fn start(&self, session: &str, request: String) -> Option<Running> {
        let key = (session.to_string(), request);
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.insert(key.clone()).then(|| Running {
            set: self.running.clone(),
            key,
        })
    }

    /// Whether a request of `subject` naming session `id` must be refused
    /// because the session is not known to be `subject`'s (`owners`).
    /// Without `[auth]` there are no subjects and nothing to check. With
    /// it, a session is admitted only on a record naming its owner: the one
    /// this replica made when the session's `initialize` answered, or its
    /// record in Redis (a session opened on another replica). A session
    /// with no record anywhere, or whose record cannot be read now (Redis
    /// unreachable), is refused: it either does not exist or its owner
    /// cannot be checked, and refusing costs its owner one new `initialize`
    /// where admitting could hand another subject its stream and its
    /// pending approvals.
    async fn foreign(&self, id: &str, subject: Option<&crate::auth::Subject>) -> bool {
        let Some(subject) = subject else {
            return false;
        };
        if let Some(owner) = self.owners.owner(id) {
            return owner != *subject;
        }
        let Some(records) = &self.records else {
            return true;
        };
        match records.opened_by(id, subject).await {
            Ok(Some(true)) => {
                self.owners.record(id, subject.clone());
                false
            }
            Ok(Some(false) | None) | Err(_) => true,
        }
    }

    /// Records that session `id` is `subject`'s, and drops the records of
    /// sessions rmcp has closed once there are twice as many as may live.
    async fn own(&self, id: &str, subject: crate::auth::Subject) {
        self.owners.record(id, subject);
        if self.owners.len() > 2 * self.limits.max_sessions.max(1) {
            let live = self.manager.sessions.read().await;
            self.owners.retain(|id| live.contains_key(id));
        }
    }

    /// Makes a place for a new session of `subject` in a full gateway when
    /// another subject holds more places than it: that subject's session
    /// used least recently is closed, idle or not (the largest holder
    /// pays, so one subject cannot keep another out by holding every
    /// place; repeated, the places even out). Whether a place is free now.
    /// Without `[auth]` there are no subjects, and nothing is done.
    async fn evict_for(&self, subject: Option<&crate::auth::Subject>) -> bool {
        use rmcp::transport::streamable_http_server::SessionManager;
        let Some(subject) = subject else {
            return false;
        };
        let live: Vec<Arc<str>> = {
            let sessions = self.manager.sessions.read().await;
            sessions.keys().map(|id| Arc::from(id.as_ref())).collect()
        };
        let mut held: std::collections::HashMap<String, Vec<Arc<str>>> = Default::default();
        for id in live {
            if let Some(owner) = self.owners.owner(&id) {
                held.entry(owner.id().to_string()).or_default().push(id);
            }
        }
        let mine = held.get(subject.id()).map_or(0, Vec::len);
        let Some((_, ids)) = held
            .into_iter()
            .filter(|(owner, ids)| owner != subject.id() && ids.len() > mine + 1)
            .max_by_key(|(_, ids)| ids.len())
        else {
            return false;
        };
        let Some(id) = self.recency.least_recent(&ids) else {
            return false;
        };
        self.recency.forget(&id);
        self.owners.forget(&id);
        if self.manager.close_session(&id).await.is_err() {
            return false;
        }
        tracing::info!(
            held = ids.len(),
            "closed the least recently used HTTP session of the subject holding the most places, to let another subject in (sandbox.max_sessions)"
        );
        let started = std::time::Instant::now();
        while self.cap.is_full() && started.elapsed() < EVICT_WAIT {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        !self.cap.is_full()
    }

    /// Closes the session left alone longest, if one has been idle for
    /// `evict_idle`, and waits (briefly) for its place to come free;
    /// whether a place is free now.
    async fn evict_one(&self) -> bool {
        use rmcp::transport::streamable_http_server::SessionManager;
        let idle = self
            .recency
            .idle_for(self.limits.evict_idle, self.limits.idle);
        for id in idle {
            self.recency.forget(&id);
            if self.manager.close_session(&id).await.is_err() {
                continue;
            }
            tracing::info!(
                "closed the HTTP session idle longest to let a new client in (sandbox.max_sessions); its stash stays reachable by handle"
            );
            // The session's server drops, and frees its place, as its task
            // ends.
            let started = std::time::Instant::now();
            while self.cap.is_full() && started.elapsed() < EVICT_WAIT {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            if !self.cap.is_full() {
                return true;
            }
        }
        false
    }
}

/// Longest wait for an evicted session to give its place back.
const EVICT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Keeps track of when each HTTP session was used, and lets a new client
/// in when the gateway serves `max_sessions`: by closing the session left
/// alone longest (idle at least `session_evict_idle_secs`), else with HTTP
/// 503, `Retry-After` and a JSON-RPC error saying why (where the refusal
/// from the MCP server's own `initialize`, which still guards against a
/// race here, would be a bare JSON-RPC error). Requests of the 2026 era
/// carry no session id either but open no session, so only when the
/// gateway is full is the body read to tell an `initialize` apart.
pub async fn gate(
    gate: Arc<Gate>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let subject = req.extensions().get::<crate::auth::Subject>().cloned();
    if let Some(id) = session_id(req.headers()) {
        // Another subject's session, whatever the request (a GET would
        // read its stream, a DELETE end it): the 404 of no session at all.
        if gate.foreign(&id, subject.as_ref()).await {
            return (
                axum::http::StatusCode::NOT_FOUND,
                "Not Found: Session not found",
            )
                .into_response();
        }
        gate.recency.touch(&id);
        let closes = req.method() == axum::http::Method::DELETE;
        let (req, running) = match admit_request(&gate, &id, req).await {
            Ok(admitted) => admitted,
            Err(refusal) => return refusal,
        };
        let mut response = next.run(req).await;
        if let Some(running) = running {
            // the id is free again once the response is over, however it ends
            let body = std::mem::take(response.body_mut());
            let stream = futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
                let _ = &running;
                chunk
            });
            *response.body_mut() = axum::body::Body::from_stream(stream);
        }
        // Ownership is never inferred from rmcp's answers (a 404 can answer
        // a request of a live session, an unknown method at 2026-07-28): a
        // record goes only with a session its owner ended, or when the
        // sessions rmcp closed are swept (`own`).
        if closes && response.status().is_success() {
            gate.recency.forget(&id);
            gate.owners.forget(&id);
        }
        return response;
    }
    let mut req = req;
    if req.method() == axum::http::Method::POST && gate.cap.is_full() {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, INITIALIZE_PEEK_BYTES).await else {
            return (
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large",
            )
                .into_response();
        };
        let opens = serde_json::from_slice::<serde_json::Value>(&bytes)
            .is_ok_and(|v| v["method"] == "initialize");
        let subject_ref = parts.extensions.get::<crate::auth::Subject>();
        if opens && !gate.evict_one().await && !gate.evict_for(subject_ref).await {
            let body = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32000, "message": gate.cap.full()},
            });
            return (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                [(
                    axum::http::header::RETRY_AFTER,
                    RETRY_AFTER_SECS.to_string(),
                )],
                axum::Json(body),
            )
                .into_response();
        }
        req = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
    }
    let response = next.run(req).await;
    if let Some(id) = session_id(response.headers()) {
        gate.recency.touch(&id);
        if let Some(subject) = subject {
            gate.own(&id, subject).await;
        }
    }
    response
}

/// (session id, request id as JSON) of each request whose response is
/// still open.
type RunningIds = Arc<std::sync::Mutex<std::collections::HashSet<(String, String)>>>;

/// A request id running in a session; free again when dropped.
struct Running {
    set: RunningIds,
    key: (String, String),
}

/// What the gate reads of a JSON-RPC message: whether it is a request
/// (it names a method) and its id; the rest (a script's code, a tool's
/// arguments) is skipped, not built.
#[derive(serde::Deserialize)]
struct Head {
    method: Option<serde::de::IgnoredAny>,
    id: Option<serde_json::Value>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.key);
    }
}

/// A `POST` to `session` read whole (rmcp reads it whole next anyway) and,
/// when it is a JSON-RPC request, its id marked running; a request under an
/// id that still runs in the session is answered here with a JSON-RPC error
/// (red team round 3: rmcp would route both answers by the one id, so one
/// client's call could receive the other's result, or be dropped).
async fn admit_request(
    gate: &Gate,
    session: &str,
    req: axum::extract::Request,
) -> Result<(axum::extract::Request, Option<Running>), axum::response::Response> {
    use axum::response::IntoResponse;
    if req.method() != axum::http::Method::POST {
        return Ok((req, None));
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Err((
            axum::http::StatusCode::BAD_REQUEST,
            "could not read the request body",
        )
            .into_response());
    };
    let id = serde_json::from_slice::<Head>(&bytes)
        .ok()
        .filter(|head| head.method.is_some())
        .and_then(|head| head.id.filter(|id| !id.is_null()));
    let running = match id {
        Some(id) => match gate.start(session, id.to_string()) {
            Some(running) => Some(running),
            None => {
                let body = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": -32600, "message": format!(
                        "request id {id} is already in use by a request still running in this session; give each request its own id"
                    )},
                });
                return Err((axum::http::StatusCode::CONFLICT, axum::Json(body)).into_response());
            }
        },
        None => None,
    };
    Ok((
        axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes)),
        running,
    ))
}

/// The `Mcp-Session-Id` of a request or response, if it has one.
fn session_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Largest request body read while the gateway is full of sessions, to
/// tell an `initialize` from a stateless request: 4 MiB, far above any
/// request quickforge serves (a script is at most `max_code_size`, 64 KiB
/// by default), and a bound on what a full gateway ever buffers.
const INITIALIZE_PEEK_BYTES: usize = 4 * 1024 * 1024;
