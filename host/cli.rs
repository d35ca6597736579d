//! The `quickforge` command line.
//!
//! - `quickforge [serve]`: the MCP server on stdio (the default), or on
//!   streamable HTTP with `--http`;
//! - `quickforge run FILE|-`: one script against the configured servers;
//! - `quickforge manifest`: what the servers offer;
//! - `quickforge doctor`: is the configuration sound and every server reachable;
//! - `quickforge tokens`: the context cost of quickforge against listing
//!   every tool.
//!
//! Exit status: 0 on success, 1 when the script failed or doctor found a
//! problem, 2 on usage or configuration errors. Logs and diagnostics go to
//! stderr; stdout carries only the result or the MCP protocol.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use crate::config::Config;
use crate::gateway::{Gateway, SERVER_GRACE, STARTUP_WAIT};
use crate::sandbox::{LogLevel, Mode, Sandbox};
use crate::server::{ForgeServer, Shared};

/// quickforge: an MCP gateway whose two tools, search and execute, run JavaScript in a WebAssembly sandbox.
#[derive(Debug, Parser)]
#[command(name = "quickforge", version, about)]
struct Cli {
    /// Configuration file (default: $FORGE_CONFIG, else ./forge.toml, else no servers).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP on stdio (the default), or on streamable HTTP with --http.
    Serve(ServeArgs),
    /// Run one script (a JS async arrow function) and print its result as JSON.
    Run {
        /// The script file, or `-` for standard input.
        file: PathBuf,
        /// Run in search mode: only `manifest` is available, no tool calls.
        #[arg(long)]
        search: bool,
    },
    /// Show the servers and tools quickforge reaches.
    Manifest {
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check the configuration and every server; exit 1 when something is wrong.
    Doctor,
    /// Count the context tokens of quickforge's surface against listing every tool (o200k_base).
    Tokens {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Default, clap::Args)]
struct ServeArgs {
    /// Serve streamable HTTP at ADDR (default 127.0.0.1:8765) on path /mcp, instead of stdio.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
    http: Option<SocketAddr>,
    /// Also accept this Host header (DNS-rebinding protection allows only loopback names by default).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Also accept browser requests from this Origin (e.g. https://app.example.com:443).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
}

/// Exit status for usage and configuration errors.
const EXIT_USAGE: u8 = 2;
/// Exit status for a script that failed, or a doctor finding.
const EXIT_FAILED: u8 = 1;

/// Runs the command line and returns the process's exit status.
pub fn main() -> ExitCode {
    no_inherited_fds();
    init_tracing();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve(ServeArgs::default())) {
            Command::Serve(args) => serve(cli.config, args).await,
            Command::Run { file, search } => run(cli.config, file, search).await,
            Command::Manifest { server, json } => manifest(cli.config, server, json).await,
            Command::Doctor => doctor(cli.config).await,
            Command::Tokens { json } => tokens(cli.config, json).await,
        }
    });
    // Blocking reads of stdin must not hold the process open.
    runtime.shutdown_timeout(Duration::from_secs(1));
    code
}

fn load_config(path: Option<PathBuf>) -> Result<Config, ExitCode> {
    match Config::discover(path.as_deref()) {
        Ok(c) => {
            if c.source.is_none() {
                tracing::warn!(
                    "no config file (--config, $FORGE_CONFIG or ./forge.toml): no downstream servers, default limits"
                );
            }
            Ok(c)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

async fn start(config: &Config) -> Result<Arc<Shared>, ExitCode> {
    // Before the sandbox, which takes seconds on a cold cache: a bad path
    // should fail at once.
    let audit = match crate::audit::AuditLog::open(&config.audit) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    let sandbox = match Sandbox::new(config.sandbox.clone(), config.cache_dir.clone()).await {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("error: could not start the sandbox: {e:#}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    Ok(Arc::new(
        Shared::new(sandbox, Gateway::start(config), config.stash.clone())
            .with_rate_limit(config.executions_per_minute)
            .with_validation(config.validate)
            .with_audit(audit),
    ))
}

async fn serve(config: Option<PathBuf>, args: ServeArgs) -> ExitCode {
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
    let shared = match start(&config).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let gateway = shared.gateway.clone();
    tokio::spawn(refresh_on_sighup(gateway.clone()));
    let code = match args.http {
        None => serve_stdio(shared).await,
        Some(addr) => serve_http(shared, addr, args.allow_hosts, args.allow_origins).await,
    };
    gateway.close(SERVER_GRACE).await;
    code
}

/// How long the stdio session may take to write its last answers once it is
/// cancelled. Answers are small and local; two seconds is ample and bounds
/// the exit.
const SESSION_CLOSE: std::time::Duration = std::time::Duration::from_secs(2);

async fn serve_stdio(shared: Arc<Shared>) -> ExitCode {
    use rmcp::ServiceExt;
    // Requests read before stdin ends are answered before the session ends.
    let stdio = rmcp::transport::IntoTransport::<rmcp::RoleServer, _, _>::into_transport(
        rmcp::transport::stdio(),
    );
    let transport = crate::stdio::AnswerBeforeEnd::new(stdio, shared.drain_grace());
    let running = match ForgeServer::new(shared.clone()).serve(transport).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("the MCP client went away before initializing: {e}");
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
            shared.drain().await;
            cancel.cancel();
            if tokio::time::timeout(SESSION_CLOSE, &mut waiting).await.is_err() {
                tracing::warn!("the MCP session did not close within {SESSION_CLOSE:?}");
            }
        }
    }
    ExitCode::SUCCESS
}

async fn serve_http(
    shared: Arc<Shared>,
    addr: SocketAddr,
    hosts: Vec<String>,
    origins: Vec<String>,
) -> ExitCode {
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
    let mut allowed_hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    allowed_hosts.extend(hosts);
    let mut allowed_origins = vec![
        "http://localhost:*".to_string(),
        "http://127.0.0.1:*".into(),
        "http://[::1]:*".into(),
    ];
    allowed_origins.extend(origins);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .with_cancellation_token(shutdown.child_token());
    let factory_shared = shared.clone();
    let service = StreamableHttpService::new(
        move || Ok(ForgeServer::new(factory_shared.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    // The one line on stdout in HTTP mode: where to connect. Tests and
    // scripts read it to learn the port when ADDR asked for port 0.
    println!("quickforge listening on http://{local}/mcp");
    let _ = std::io::stdout().flush();
    let stop = shutdown.clone();
    let drain = shared.clone();
    let result = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            terminated().await;
            drain.drain().await;
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

/// Marks every file descriptor above stderr that this process inherited
/// close-on-exec, before any thread or child exists, so downstream servers
/// inherit nothing but their three pipes (descriptors the gateway opens
/// itself are close-on-exec already).
fn no_inherited_fds() {
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

async fn run(config: Option<PathBuf>, file: PathBuf, search: bool) -> ExitCode {
    let config = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = match read_script(&file) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: could not read script {}: {e}", file.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let shared = match start(&config).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let session = ForgeServer::new(shared.clone());
    let mode = if search { Mode::Search } else { Mode::Execute };
    let report = session.run(mode, &code).await;
    shared.gateway.close(SERVER_GRACE).await;

    let mut err = std::io::stderr().lock();
    for line in &report.logs {
        let level = match line.level {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        };
        let _ = writeln!(err, "[{level}] {}", line.message);
    }
    if report.stats.logs_dropped > 0 {
        let _ = writeln!(
            err,
            "[quickforge] {} more log lines were dropped (log limit)",
            report.stats.logs_dropped
        );
    }
    if report.stats.output_cut > 0 {
        let _ = writeln!(
            err,
            "[quickforge] the result was cut by {} bytes to fit max_output_size",
            report.stats.output_cut
        );
    }
    let mut out = std::io::stdout().lock();
    match &report.result {
        Ok(value) => {
            let _ = writeln!(out, "{value}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
            ExitCode::from(EXIT_FAILED)
        }
    }
}

fn read_script(file: &PathBuf) -> std::io::Result<String> {
    if file.as_os_str() == "-" {
        let mut code = String::new();
        std::io::stdin().read_to_string(&mut code)?;
        Ok(code)
    } else {
        std::fs::read_to_string(file)
    }
}

async fn manifest(config: Option<PathBuf>, only: Option<String>, as_json: bool) -> ExitCode {
    let config = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(name) = &only
        && !config.servers.iter().any(|s| &s.name == name)
    {
        let names = config.servers.iter().map(|s| s.name.as_str());
        let hint = crate::suggest::did_you_mean(name, names)
            .map(|s| format!("; did you mean {s:?}?"))
            .unwrap_or_default();
        eprintln!("error: no server is named {name:?}{hint}");
        return ExitCode::from(EXIT_USAGE);
    }
    let gateway = Gateway::start(&config);
    gateway.wait_started(STARTUP_WAIT).await;
    let manifest = gateway.manifest();
    gateway.close(SERVER_GRACE).await;
    let servers: Vec<_> = manifest
        .servers()
        .filter(|s| only.as_ref().is_none_or(|o| &s.name == o))
        .collect();
    let mut out = std::io::stdout().lock();
    if as_json {
        let value: Vec<Value> = servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "description": s.description,
                    "status": s.status.as_str(),
                    "error": match &s.status { crate::manifest::ServerStatus::Unavailable(e) => Some(e), _ => None },
                    "tools": s.tools.iter().map(|t| t.describe(&s.name)).collect::<Vec<_>>(),
                    "resources": s.resources,
                })
            })
            .collect();
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    } else {
        for s in &servers {
            let status = match &s.status {
                crate::manifest::ServerStatus::Unavailable(e) => format!("unavailable: {e}"),
                other => other.as_str().to_string(),
            };
            let _ = writeln!(
                out,
                "{} ({status}; {} tools, {} resources)",
                s.name,
                s.tools.len(),
                s.resources.len()
            );
            if let Some(d) = &s.description {
                let _ = writeln!(out, "  {}", crate::manifest::summary(d, 100));
            }
            for t in &s.tools {
                let _ = writeln!(
                    out,
                    "  - {}: {}",
                    t.name,
                    crate::manifest::summary(&t.description, 100)
                );
            }
        }
        if servers.is_empty() {
            let _ = writeln!(out, "no servers configured");
        }
    }
    ExitCode::SUCCESS
}

async fn doctor(config_path: Option<PathBuf>) -> ExitCode {
    let mut problems = 0usize;
    let mut out = std::io::stdout().lock();
    // Every ${VAR} the file references, checked before loading so all the
    // missing ones are listed, not just the first.
    let path = config_path
        .clone()
        .or_else(|| {
            std::env::var_os("FORGE_CONFIG")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| Some(PathBuf::from("forge.toml")).filter(|p| p.exists()));
    if let Some(path) = &path
        && let Ok(text) = std::fs::read_to_string(path)
    {
        let mut names: Vec<String> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .flat_map(crate::config::references)
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            if std::env::var_os(&name).is_some() {
                let _ = writeln!(out, "ok    environment variable {name} is set");
            } else {
                let _ = writeln!(
                    out,
                    "FAIL  environment variable {name} is referenced but not set"
                );
                problems += 1;
            }
        }
    }
    let config = match Config::discover(config_path.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(out, "FAIL  config: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    match &config.source {
        Some(p) => {
            let _ = writeln!(
                out,
                "ok    config {} is valid ({} servers, {} groups)",
                p.display(),
                config.servers.len(),
                config.groups.len()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "warn  no config file (--config, $FORGE_CONFIG or ./forge.toml): no downstream servers"
            );
        }
    }
    for warning in limit_warnings(&config) {
        let _ = writeln!(out, "warn  {warning}");
    }
    drop(out);
    match Sandbox::new(config.sandbox.clone(), config.cache_dir.clone()).await {
        Ok(sandbox) => {
            let report = sandbox
                .run(Mode::Execute, "async () => 6 * 7", Default::default())
                .await;
            let mut out = std::io::stdout().lock();
            match report.result {
                Ok(v) if v == json!(42) => {
                    let _ = writeln!(
                        out,
                        "ok    sandbox runs scripts ({} µs)",
                        report.stats.micros
                    );
                }
                other => {
                    let _ = writeln!(out, "FAIL  sandbox: {other:?}");
                    problems += 1;
                }
            }
        }
        Err(e) => {
            println!("FAIL  sandbox: {e:#}");
            problems += 1;
        }
    }
    // Each server on its own: connect, list, time it.
    let checks = config.servers.iter().map(|server| {
        let one = Config {
            servers: vec![server.clone()],
            manifest: crate::config::ManifestConfig {
                refresh_interval: None,
            },
            ..config.clone()
        };
        async move {
            let started = Instant::now();
            let gateway = Gateway::start(&one);
            gateway
                .wait_started(server.timeout.max(Duration::from_secs(10)) + Duration::from_secs(1))
                .await;
            let elapsed = started.elapsed();
            let manifest = gateway.manifest();
            gateway.close(SERVER_GRACE).await;
            let entry = manifest.server(&server.name).cloned();
            (server.name.clone(), entry, elapsed)
        }
    });
    let results = futures_util::future::join_all(checks).await;
    let mut out = std::io::stdout().lock();
    for (name, entry, elapsed) in results {
        match entry.as_deref().map(|e| (&e.status, e.tools.len())) {
            Some((crate::manifest::ServerStatus::Ready, tools)) => {
                let _ = writeln!(
                    out,
                    "ok    server {name}: {tools} tools, connected in {} ms",
                    elapsed.as_millis()
                );
            }
            Some((crate::manifest::ServerStatus::Unavailable(e), _)) => {
                let _ = writeln!(out, "FAIL  server {name}: {e}");
                problems += 1;
            }
            _ => {
                let _ = writeln!(
                    out,
                    "FAIL  server {name}: no answer within {} ms",
                    elapsed.as_millis()
                );
                problems += 1;
            }
        }
    }
    if problems == 0 {
        let _ = writeln!(out, "all checks passed");
        ExitCode::SUCCESS
    } else {
        let _ = writeln!(out, "{problems} problem(s) found");
        ExitCode::from(EXIT_FAILED)
    }
}

/// Limits that are valid but probably not what the user meant.
fn limit_warnings(config: &Config) -> Vec<String> {
    let s = &config.sandbox;
    let mut w = Vec::new();
    let memory = s.max_heap.saturating_mul(s.max_concurrent);
    if memory > 8 << 30 {
        w.push(format!(
            "max_heap_mb x max_concurrent allows {} GiB of script memory at once",
            memory >> 30
        ));
    }
    if s.max_tool_calls == 0 {
        w.push("sandbox.max_tool_calls is 0: execute can call no tools".into());
    }
    w
}

async fn tokens(config: Option<PathBuf>, as_json: bool) -> ExitCode {
    let config = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let configured = if config.servers.is_empty() {
        None
    } else {
        let gateway = Gateway::start(&config);
        gateway.wait_started(STARTUP_WAIT).await;
        let m = gateway.manifest();
        gateway.close(SERVER_GRACE).await;
        Some(crate::tokens::downstream_tools(&m))
    };
    let table = match crate::tokens::table(configured) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let mut out = std::io::stdout().lock();
    if as_json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&table).unwrap_or_default()
        );
    } else {
        let _ = write!(out, "{}", crate::tokens::markdown(&table));
    }
    ExitCode::SUCCESS
}

/// Logs go to stderr (stdout belongs to the MCP protocol or the result).
/// `QUICKFORGE_LOG` (or `RUST_LOG`) sets the filter; default `warn`.
/// The log's writer: stderr, with every formatted event redacted (the fmt
/// layer writes each event in one call), so secrets in downstream errors and
/// stderr lines never reach the log either.
struct RedactingStderr;

impl std::io::Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(crate::redact::redact(&text).text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

fn init_tracing() {
    let filter = std::env::var("QUICKFORGE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_writer(|| RedactingStderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
}
