//! Follow-ups that a load balancer sent to the wrong replica.
//!
//! An execution waiting on its client (an MRTR `input_required`, a task)
//! lives in the replica that started it: its Wasm instance sits in a host
//! future there, and nothing of it is serialized. The client's follow-up (a
//! `tools/call` retry carrying `requestState`, a `tasks/*` request carrying
//! `taskId`) names the run, and a run id of a cluster names its owner under
//! the gateway's seal (`tasks::Runs::owner_of`). A replica that gets a
//! follow-up for a run another replica owns forwards the request, as it
//! came (headers and body), to the owner's own URL from `[cluster] peers`,
//! and streams the owner's answer back. A round-robin balancer therefore
//! needs no stickiness, and the client never sees which replica answered.
//!
//! The alternative, answering "run the script again", would fail two of
//! three follow-ups behind a three-replica round robin. Forwarding costs
//! one loopback or LAN hop for the requests that need it and nothing for
//! the rest beyond a scan of the body for `qft_` (only in a cluster).
//!
//! A forwarded request carries [`FORWARDED_BY`] and is never forwarded
//! again, so two replicas that disagree cannot bounce a request for ever.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::config::ClusterConfig;
use crate::execution::tasks::{RUN_PREFIX, Runs};

/// The header a forwarded request carries: the forwarding replica's name.
pub const FORWARDED_BY: &str = "x-quickforge-forwarded-by";

/// Largest request body read to look for a run id. Request bodies are a
/// script (`max_code_size`, 64 KiB by default) or a client's answers; 4 MiB
/// is the same bound the session gate reads an `initialize` with.
const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// How long connecting to the owner may take. Peers are on the same LAN
/// or host: two seconds means it is down, and the client hears so at once
/// instead of after its own timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Headers that describe one hop, not the request: never copied.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "content-length",
];

/// What forwarding needs: who this replica is, where the others are, and
/// the runs (to read and check the owner named in an id).
pub struct Forward {
    me: String,
    peers: std::collections::BTreeMap<String, url::Url>,
    runs: Arc<Runs>,
    http: reqwest::Client,
}

impl Forward {
    /// Forwarding for `cluster`, or `None` when this is not a replica with
    /// peers (then nothing is scanned).
    pub fn new(cluster: &ClusterConfig, runs: Arc<Runs>) -> Option<Arc<Forward>> {
        if cluster.peers.is_empty() {
            return None;
        }
        let me = cluster.replica.clone();
        crate::gateway::downstream::install_crypto();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // A peer's answer to a forwarded request is the client's
            // answer: never follow a redirect to somewhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(Arc::new(Forward {
            me,
            peers: cluster.peers.clone(),
            runs,
            http,
        }))
    }
}

/// Middleware on `/mcp`: forwards a follow-up to the replica that owns its
/// run, and passes everything else through untouched.
pub async fn forward(forward: Arc<Forward>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST || req.headers().contains_key(FORWARDED_BY) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    };
    // Run ids are sealed for the subject that started them: one presented
    // by another subject names no owner, and goes on to be refused as
    // unknown like any other.
    let subject = parts.extensions.get::<crate::auth::Subject>();
    let owner = follow_up(&bytes).and_then(|(run, id)| {
        let owner = forward.runs.owner_of(&run, subject.map(|s| s.id()))?;
        Some((owner.to_string(), id))
    });
    match owner {
        Some((owner, id)) if owner != forward.me => {
            let presented = parts.extensions.get::<crate::auth::Presented>();
            relay(&forward, &owner, id, &parts.headers, presented, bytes).await
        }
        _ => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

/// The run id a JSON-RPC request names (an MRTR retry's `requestState` or
/// a `tasks/*` request's `taskId`) and the request's own id, for an error
/// answer; `None` at once when the body cannot hold a run id.
fn follow_up(body: &[u8]) -> Option<(String, Value)> {
    let marker = RUN_PREFIX.as_bytes();
    if !body.windows(marker.len()).any(|w| w == marker) {
        return None;
    }
    let mut request: Value = serde_json::from_slice(body).ok()?;
    let params = request.get("params")?;
    let run = ["requestState", "taskId"]
        .iter()
        .find_map(|k| params.get(*k).and_then(Value::as_str))?
        .to_string();
    Some((
        run,
        request.get_mut("id").map(Value::take).unwrap_or_default(),
    ))
}

/// Sends the request to `owner` and streams its answer back; when the
/// owner cannot be reached, a JSON-RPC error that says what happened and
/// what to do.
async fn relay(
    forward: &Forward,
    owner: &str,
    id: Value,
    headers: &HeaderMap,
    presented: Option<&crate::auth::Presented>,
    body: bytes::Bytes,
) -> Response {
    let Some(url) = forward.peers.get(owner) else {
        return gone(
            id,
            format!(
                "this execution runs on replica {owner:?}, which [cluster] peers does not list: run the script again"
            ),
        );
    };
    let mut request = forward.http.post(url.as_str()).body(body);
    for (name, value) in headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            request = request.header(name, value);
        }
    }
    // The client's own token, which the authentication layer took out of
    // the headers: the owner checks it again, as for any request.
    if let Some(presented) = presented {
        request = request.header(axum::http::header::AUTHORIZATION, presented.0.clone());
    }
    request = request.header(FORWARDED_BY, forward.me.as_str());
    match request.send().await {
        Ok(answer) => {
            tracing::debug!(owner, status = %answer.status(), "forwarded a follow-up to the replica that runs it");
            let mut response = Response::builder().status(answer.status().as_u16());
            for (name, value) in answer.headers() {
                if !HOP_BY_HOP.contains(&name.as_str())
                    && let Ok(name) = HeaderName::from_bytes(name.as_str().as_bytes())
                {
                    response = response.header(name, value.as_bytes());
                }
            }
            response
                .body(Body::from_stream(answer.bytes_stream()))
                .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
        }
        Err(e) => {
            tracing::warn!(owner, "could not forward a follow-up to its replica: {e}");
            gone(
                id,
                format!(
                    "this execution runs on replica {owner:?}, which did not answer (it may have stopped; its executions ended with it): run the script again"
                ),
            )
        }
    }
}

/// A JSON-RPC error for request `id`: the run cannot be reached.
fn gone(id: Value, message: String) -> Response {
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}})
            .to_string(),
    )
        .into_response()
}
