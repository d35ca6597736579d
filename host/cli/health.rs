//! `GET /health`, `GET /ready` and `GET /metrics` beside `/mcp` in `serve
//! --http`, and on the separate `[observability] listen` address (for a
//! gateway on stdio), for orchestrators, load balancers and Prometheus
//! (issue 21, item 4).
//!
//! `/health` answers 200 while the process serves. `/ready` answers 200 once
//! every configured server has been tried (connected, or failed and being
//! retried), 503 while a first attempt is still under way; its body lists
//! each server's state (`connecting`, `ready`, `unavailable`) by the names
//! in the config, never the error texts, which stay in the log and
//! `quickforge doctor`. Once a SIGTERM or SIGINT has begun the drain,
//! `/ready` answers 503 with `"draining": true` (the running executions
//! finish; new ones are refused), so a load balancer takes the replica out
//! of rotation before it stops: a rolling deploy loses no request.
//!
//! `/metrics` is the Prometheus text format of [`crate::observe::Metrics`].
//! It names the configured servers and how busy they are, so it answers
//! only requests whose `Host` header is a loopback name or one allowed by
//! `--allow-host` (`[observability] allow_hosts` on the separate address),
//! as `/mcp` does: a web page cannot read it through DNS rebinding.

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::manifest::ServerStatus;
use crate::server::Executor;

/// The routes, over `executor`'s gateway; `/metrics` (when the metrics are
/// on) answers only requests whose Host is loopback or in `hosts`.
pub fn routes(executor: Arc<Executor>, hosts: &[String]) -> axum::Router {
    let mut router = axum::Router::new();
    if executor.metrics.is_some() {
        let allowed: Arc<[String]> = allowed_hosts(hosts).into();
        let scraped = executor.clone();
        router = router.route(
            "/metrics",
            get(move || {
                let executor = scraped.clone();
                async move { metrics(&executor).await }
            })
            .layer(axum::middleware::from_fn(move |req, next| {
                host_check(allowed.clone(), req, next)
            })),
        );
    }
    router.route("/health", get(|| async { "ok\n" })).route(
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
    // The tracker closes when the drain begins and never reopens.
    let draining = executor.running.is_closed();
    let ready = tried && !draining;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({ "ready": ready, "draining": draining, "servers": servers })),
    )
}

/// The content type of what `prometheus-client` writes: OpenMetrics text
/// (which Prometheus scrapes natively, and which ends in `# EOF`).
const PROMETHEUS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

async fn metrics(executor: &Executor) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Some(metrics) = &executor.metrics else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let usage = executor.store.usage().await;
    let text = metrics.render(
        &executor.gateway,
        crate::observe::Scrape {
            executions_in_flight: executor.running.len(),
            stash_bytes: usage.bytes,
            stashes: usage.stashes,
        },
    );
    ([(axum::http::header::CONTENT_TYPE, PROMETHEUS_TEXT)], text).into_response()
}

/// The loopback names, which are always allowed, and `extra`.
pub fn allowed_hosts(extra: &[String]) -> Vec<String> {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(extra.iter().cloned());
    hosts
}

/// Refuses a request whose `Host` is not in `allowed` with 403, as rmcp's
/// streamable HTTP service does for `/mcp`. Written here because rmcp keeps
/// its check private to its service; the rule is the same: an allowed entry
/// without a port matches the host on any port, one with a port only that
/// port, names compared without case and IPv6 brackets.
async fn host_check(
    allowed: Arc<[String]>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let authority = req
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| axum::http::uri::Authority::try_from(h).ok())
        .or_else(|| req.uri().authority().cloned());
    let Some(authority) = authority else {
        return (
            StatusCode::BAD_REQUEST,
            "missing or malformed Host header\n",
        )
            .into_response();
    };
    let host = normalize(authority.host());
    let port = authority.port_u16();
    let ok = allowed.iter().any(|entry| {
        let (h, p) = match axum::http::uri::Authority::try_from(entry.as_str()) {
            Ok(a) => (normalize(a.host()), a.port_u16()),
            Err(_) => (normalize(entry), None),
        };
        h == host && p.is_none_or(|p| Some(p) == port)
    });
    if !ok {
        tracing::warn!(
            host = %authority,
            "refused a /metrics request with a Host header that is not allowed (possible DNS rebinding)"
        );
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed\n",
        )
            .into_response();
    }
    next.run(req).await
}

fn normalize(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// Serves `/health`, `/ready` and `/metrics` on `[observability] listen`,
/// under `[http]`'s limits, until `stop` is cancelled. Binds before
/// returning, so a bad address is reported at start.
pub async fn listen(
    addr: std::net::SocketAddr,
    hosts: &[String],
    limits: crate::config::HttpLimits,
    executor: Arc<Executor>,
    stop: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr().unwrap_or(addr);
    tracing::info!("observability endpoints on http://{local}/metrics, /health, /ready");
    let router = routes(executor, hosts);
    tokio::spawn(super::listen::serve(
        listener,
        router,
        limits,
        stop.cancelled_owned(),
    ));
    Ok(())
}
