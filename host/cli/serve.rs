//! `quickforge serve`: the MCP server on stdio (the default) or on streamable
//! HTTP, until the client leaves or a signal ends it.
//!
//! Also the process hygiene serving needs: inherited descriptors marked
//! close-on-exec before anything starts, SIGINT/SIGTERM draining running
//! executions before the session closes, and SIGHUP refreshing the manifest.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::gateway::{Gateway, SERVER_GRACE};
use crate::server::{Executor, ForgeServer};

use super::{EXIT_FAILED, EXIT_USAGE, ServeArgs, load_config, start};

/// Runs `quickforge serve`: the MCP server until the client leaves or a
/// signal ends it, then the downstream servers are closed.
pub(super) async fn serve(config: Option<PathBuf>, args: ServeArgs) -> ExitCode {
    let config = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && args.allow_hosts.is_empty()
    {
        eprintln!(
            "error: --http {addr} is not a loopback address; name the Host header clients will use with --allow-host (DNS-rebinding protection)"
        );
        return ExitCode::from(EXIT_USAGE);
    }
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && config.auth.is_none()
    {
        eprintln!(
            "error: --http {addr} is not a loopback address and forge.toml has no [auth]: anyone who reaches the port would run scripts as the gateway.\n\
             Configure authentication in forge.toml, either opaque tokens:\n\
             \n  [auth]\n  resource = \"https://gw.example.com/mcp\"   # the URL clients use\n  [[auth.tokens]]\n  subject = \"alice\"\n  sha256 = \"...\"                               # from: quickforge auth hash-token < token-file\n\n\
             or JWTs from your identity provider ([auth.jwt] issuer, jwks_uri); see forge.toml.example"
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let executor = match start(&config).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let gateway = executor.gateway.clone();
    let observing = tokio_util::sync::CancellationToken::new();
    if let Some(addr) = config.observability.listen
        && let Err(e) = super::health::listen(
            addr,
            &config.observability.allow_hosts,
            executor.clone(),
            observing.clone(),
        )
        .await
    {
        eprintln!("error: could not listen on {addr} (observability.listen): {e}");
        gateway.close(SERVER_GRACE).await;
        return ExitCode::from(EXIT_USAGE);
    }
    tokio::spawn(refresh_on_sighup(gateway.clone()));
    let code = match args.http {
        None => serve_stdio(executor).await,
        Some(addr) => {
            let auth = config
                .auth
                .clone()
                .map(|c| Arc::new(crate::auth::Authenticator::new(c)));
            let access = Access {
                hosts: args.allow_hosts,
                origins: args.allow_origins,
                auth,
            };
            let forward = super::forward::Forward::new(&config.cluster, executor.runs.clone());
            serve_http(executor, addr, access, forward).await
        }
    };
    observing.cancel();
    gateway.close(SERVER_GRACE).await;
    code
}

/// How long the stdio session may take to write its last answers once it is
/// cancelled. Answers are small and local; two seconds is ample and bounds
/// the exit.
const SESSION_CLOSE: std::time::Duration = std::time::Duration::from_secs(2);

async fn serve_stdio(executor: Arc<Executor>) -> ExitCode {
    use rmcp::ServiceExt;
    // Requests read before stdin ends are answered before the session ends.
    let stdio = rmcp::transport::IntoTransport::<rmcp::RoleServer, _, _>::into_transport(
        rmcp::transport::stdio(),
    );
    let transport = crate::stdio::AnswerBeforeEnd::new(stdio, executor.drain_grace());
    let running = match ForgeServer::new(executor.clone()).serve(transport).await {
        Ok(r) => r,
        Err(e) => {
            // No lifecycle began: neither an `initialize` (2025 era) nor a
            // request carrying protocol `_meta` (2026 era) arrived.
            tracing::warn!(
                "the MCP client went away before its session began (no initialize, and no request with protocol _meta): {e}"
            );
            return ExitCode::SUCCESS;
        }
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        r = &mut waiting => {
            tracing::info!("MCP client closed the session: {r:?}");
        }
        _ = terminated() => {
            // Take no new work, let running scripts finish within the
            // grace period, then end the session. rmcp writes the answers of
            // finished handlers before its session task ends, so wait for it.
            tracing::info!("terminating: letting running executions finish");
            executor.drain().await;
            cancel.cancel();
            if tokio::time::timeout(SESSION_CLOSE, &mut waiting).await.is_err() {
                tracing::warn!("the MCP session did not close within {SESSION_CLOSE:?}");
            }
        }
    }
    ExitCode::SUCCESS
}

/// Who may reach the HTTP server: the Host and Origin headers accepted
/// besides the loopback ones, and the bearer tokens (`[auth]`), if any.
struct Access {
    hosts: Vec<String>,
    origins: Vec<String>,
    auth: Option<Arc<crate::auth::Authenticator>>,
}

async fn serve_http(
    executor: Arc<Executor>,
    addr: SocketAddr,
    access: Access,
    forward: Option<Arc<super::forward::Forward>>,
) -> ExitCode {
    let Access {
        hosts,
        origins,
        auth,
    } = access;
    use rmcp::transport::StreamableHttpService;
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: could not listen on {addr}: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let local = listener.local_addr().unwrap_or(addr);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let allowed_hosts = super::health::allowed_hosts(&hosts);
    let mut allowed_origins = vec![
        "http://localhost:*".to_string(),
        "http://127.0.0.1:*".into(),
        "http://[::1]:*".into(),
    ];
    allowed_origins.extend(origins);
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .with_cancellation_token(shutdown.child_token());
    // With state in Redis, each session's `initialize` is kept there too,
    // so a replica that never saw the session restores it.
    let records = executor.redis.clone().map(|redis| {
        Arc::new(crate::state::redis::session::RedisSessionStore::new(
            redis,
            executor.sessions.idle,
        ))
    });
    config.session_store = records.clone().map(|r| r as _);
    let factory_shared = executor.clone();
    // Sessions live as long as their stash's default TTL (rmcp's default
    // is 5 minutes): a client idle for longer still finds its session, and
    // its stash, when it comes back.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(executor.sessions.idle);
    let manager = Arc::new(sessions);
    let service = StreamableHttpService::new(
        move || Ok(ForgeServer::for_http(factory_shared.clone())),
        manager.clone(),
        config,
    );
    let gate = Arc::new(Gate {
        cap: executor.session_cap.clone(),
        recency: Default::default(),
        owners: Default::default(),
        records,
        manager,
        limits: executor.sessions,
    });
    let answers = super::drain::Answers::default();
    let counting = answers.clone();
    // Outermost first: answers counted for the drain, the bearer token
    // (`[auth]`), forwarding to the replica that owns a follow-up, then
    // the session gate, then rmcp's service (which checks Host and Origin).
    let mut mcp =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |req, next| {
                sessions_gate(gate.clone(), req, next)
            }));
    if let Some(forward) = forward {
        mcp = mcp.layer(axum::middleware::from_fn(move |req, next| {
            super::forward::forward(forward.clone(), req, next)
        }));
    }
    let mut router = axum::Router::new();
    if let Some(auth) = auth {
        mcp = crate::auth::protect(mcp, auth.clone());
        router = crate::auth::metadata_routes(&auth);
    }
    let router = router
        .merge(mcp.layer(axum::middleware::from_fn(move |req, next| {
            super::drain::count(counting.clone(), req, next)
        })))
        .merge(super::health::routes(executor.clone(), &hosts));
    // The one line on stdout in HTTP mode: where to connect. Tests and
    // scripts read it to learn the port when ADDR asked for port 0.
    println!("quickforge listening on http://{local}/mcp");
    let _ = std::io::stdout().flush();
    let stop = shutdown.clone();
    let drain = executor.clone();
    let result = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            terminated().await;
            drain.drain().await;
            // The drained executions' answers are still on their way
            // through the sessions; cancelling these now would cut them.
            answers.written().await;
            stop.cancel();
        })
        .await;
    shutdown.cancel();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: the HTTP server failed: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// What stands between HTTP clients and their sessions: the cap on live
/// sessions, when each was last used, and whose each is (`[auth]`).
struct Gate {
    cap: crate::session::SessionCap,
    recency: crate::session::Recency,
    owners: crate::auth::SessionOwners,
    /// The sessions' records in Redis, where a session opened on another
    /// replica says whose it is.
    records: Option<Arc<crate::state::redis::session::RedisSessionStore>>,
    manager: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    limits: crate::session::SessionLimits,
}

impl Gate {
    /// Whether a request of `subject` naming session `id` must be refused
    /// because the session is another subject's (`auth::sessions`). Without
    /// `[auth]` there are no subjects and nothing to check. A session
    /// neither recorded here nor in Redis is left to rmcp, which answers
    /// it 404 (or restores it, when Redis, just now unreachable, answers).
    async fn foreign(&self, id: &str, subject: Option<&crate::auth::Subject>) -> bool {
        let Some(subject) = subject else {
            return false;
        };
        if let Some(owner) = self.owners.owner(id) {
            return owner != *subject;
        }
        let Some(records) = &self.records else {
            return false;
        };
        match records.opened_by(id, subject).await {
            Ok(Some(true)) => {
                self.owners.record(id, subject.clone());
                false
            }
            Ok(Some(false)) => true,
            Ok(None) | Err(_) => false,
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
/// from [`ForgeServer`]'s own `initialize`, which still guards against a
/// race here, would be a bare JSON-RPC error). Requests of the 2026 era
/// carry no session id either but open no session, so only when the
/// gateway is full is the body read to tell an `initialize` apart.
async fn sessions_gate(
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
        let response = next.run(req).await;
        if closes || response.status() == axum::http::StatusCode::NOT_FOUND {
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
        if opens && !gate.evict_one().await {
            let body = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32000, "message": gate.cap.full()},
            });
            return (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                [(
                    axum::http::header::RETRY_AFTER,
                    crate::session::RETRY_AFTER_SECS.to_string(),
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

/// Marks every file descriptor above stderr that this process inherited
/// close-on-exec, before any thread or child exists, so downstream servers
/// inherit nothing but their three pipes (descriptors the gateway opens
/// itself are close-on-exec already).
pub(super) fn no_inherited_fds() {
    #[cfg(unix)]
    {
        let fds: Vec<i32> =
            match std::fs::read_dir("/proc/self/fd").or_else(|_| std::fs::read_dir("/dev/fd")) {
                Ok(dir) => dir
                    .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .filter(|&fd| fd > 2)
                    .collect(),
                Err(_) => (3..1024).collect(),
            };
        for fd in fds {
            // SAFETY: fcntl on a descriptor number; an invalid one (e.g. the
            // directory listing's own, now closed) just fails with EBADF.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Lists every server's tools again on SIGHUP.
async fn refresh_on_sighup(gateway: Arc<Gateway>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            return;
        };
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP: refreshing the manifest");
            gateway.refresh_all();
        }
    }
    #[cfg(not(unix))]
    let _ = gateway;
}
