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
use crate::session::Gate;

use super::{EXIT_USAGE, ServeArgs, load_config, start};

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
            config.http,
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
        None => serve_stdio(executor, config.surface).await,
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
            serve_http(executor, config.surface, addr, access, forward, config.http).await
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

async fn serve_stdio(executor: Arc<Executor>, surface: crate::server::Surface) -> ExitCode {
    use rmcp::ServiceExt;
    // Requests read before stdin ends are answered before the session ends.
    let stdio = rmcp::transport::IntoTransport::<rmcp::RoleServer, _, _>::into_transport(
        rmcp::transport::stdio(),
    );
    let transport = crate::stdio::AnswerBeforeEnd::new(stdio, executor.drain_grace());
    let running = match ForgeServer::new(executor.clone())
        .with_surface(surface)
        .serve(transport)
        .await
    {
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
    surface: crate::server::Surface,
    addr: SocketAddr,
    access: Access,
    forward: Option<Arc<super::forward::Forward>>,
    limits: crate::config::HttpLimits,
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
        Arc::new(crate::session::RedisSessionStore::new(
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
        move || Ok(ForgeServer::for_http(factory_shared.clone()).with_surface(surface)),
        manager.clone(),
        config,
    );
    let gate = Arc::new(Gate::new(
        executor.session_cap.clone(),
        records,
        manager,
        executor.sessions,
    ));
    let answers = super::drain::Answers::default();
    let counting = answers.clone();
    // Outermost first: answers counted for the drain, the bearer token
    // (`[auth]`), forwarding to the replica that owns a follow-up, then
    // the session gate, then rmcp's service (which checks Host and Origin).
    let mut mcp =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |req, next| {
                crate::session::gate(gate.clone(), req, next)
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
    super::listen::serve(listener, router, limits, async move {
        terminated().await;
        drain.drain().await;
        // The drained executions' answers are still on their way
        // through the sessions; cancelling these now would cut them.
        answers.written().await;
        stop.cancel();
    })
    .await;
    shutdown.cancel();
    ExitCode::SUCCESS
}

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
