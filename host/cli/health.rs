//! `GET /health` and `GET /ready` beside `/mcp` in `serve --http`, for
//! orchestrators and load balancers (issue 21, item 4; metrics are not here
//! yet).
//!
//! `/health` answers 200 while the process serves. `/ready` answers 200 once
//! every configured server has been tried (connected, or failed and being
//! retried), 503 while a first attempt is still under way; its body lists
//! each server's state (`connecting`, `ready`, `unavailable`) by the names
//! in the config, never the error texts, which stay in the log and
//! `quickforge doctor`.

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::manifest::ServerStatus;
use crate::server::Executor;

/// The two routes, over `executor`'s gateway.
pub fn routes(executor: Arc<Executor>) -> axum::Router {
    axum::Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route(
            "/ready",
            get(move || {
                let executor = executor.clone();
                async move { ready(&executor) }
            }),
        )
}

fn ready(executor: &Executor) -> (StatusCode, Json<Value>) {
    let manifest = executor.gateway.manifest();
    let servers: serde_json::Map<String, Value> = manifest
        .servers()
        .map(|s| (s.name.clone(), json!(s.status.as_str())))
        .collect();
    let tried = manifest
        .servers()
        .all(|s| !matches!(s.status, ServerStatus::Connecting));
    let status = if tried {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({ "ready": tried, "servers": servers })))
}
