//! The `quickforge` command line.
//!
//! - `quickforge [serve]`: the MCP server on stdio (the default), or on
//!   streamable HTTP with `--http`;
//! - `quickforge run FILE|-`: one script against the configured servers;
//! - `quickforge manifest`: what the servers offer;
//! - `quickforge doctor`: is the configuration sound and every server reachable;
//! - `quickforge tokens`: the context cost of quickforge against listing
//!   every tool;
//! - `quickforge init`: forge.toml from an MCP client's server list, and the
//!   client pointed at quickforge;
//! - `quickforge add`, `remove`, `list`: edit forge.toml's servers;
//! - `quickforge auth hash-token`: the hash `[[auth.tokens]]` lists.
//!
//! Exit status: 0 on success, 1 when the script failed or doctor found a
//! problem, 2 on usage or configuration errors. Logs and diagnostics go to
//! stderr; stdout carries only the result or the MCP protocol.
//!
//! This module holds what every command shares: the clap definitions, the
//! runtime, config loading and the start of the sandbox and gateway. Each
//! command lives in its own file (`serve`, `run`, `manifest`, `doctor`,
//! `tokens`, `init/`, `edit`), and the process's log in `logging`.

mod auth;
mod doctor;
mod drain;
mod edit;
mod forward;
mod health;
mod init;
mod listen;
mod logging;
mod manifest;
mod run;
mod serve;
mod tokens;
mod trust;

pub use tokens::count::count as count_tokens;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::gateway::Gateway;
use crate::sandbox::Sandbox;
use crate::server::Executor;

/// quickforge: an MCP gateway whose two tools, search and execute, run JavaScript in a WebAssembly sandbox.
#[derive(Debug, Parser)]
#[command(name = "quickforge", version, about)]
struct Cli {
    /// Configuration file (default: $FORGE_CONFIG, else ./forge.toml, else no servers).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,

    /// Log format on stderr: text or json (one object a line); overrides `[log] format`.
    #[arg(
        long,
        global = true,
        value_name = "FORMAT",
        env = "QUICKFORGE_LOG_FORMAT"
    )]
    log_format: Option<crate::config::LogFormat>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP on stdio (the default), or on streamable HTTP with --http.
    #[command(after_help = "Examples:\n  \
        quickforge serve --config forge.toml            # stdio, as an MCP client starts it\n  \
        quickforge serve --http                         # http://127.0.0.1:8765/mcp\n  \
        quickforge serve --http 0.0.0.0:8765 --allow-host gw.internal")]
    Serve(ServeArgs),
    /// Run one script (a JS async arrow function) and print its result as JSON.
    #[command(after_help = "Examples:\n  \
        quickforge run script.js\n  \
        echo 'async () => manifest.servers.map(s => s.name)' | quickforge run - --search")]
    Run {
        /// The script file, or `-` for standard input.
        file: PathBuf,
        /// Run in search mode: only `manifest` is available, no tool calls.
        #[arg(long)]
        search: bool,
    },
    /// Show the servers and tools quickforge reaches.
    #[command(after_help = "Examples:\n  \
        quickforge manifest\n  \
        quickforge manifest --server github --json")]
    Manifest {
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check the configuration and every server; exit 1 when something is wrong.
    #[command(after_help = "Example:\n  quickforge doctor --config forge.toml")]
    Doctor,
    /// Count the context tokens of quickforge's surface against listing every tool (o200k_base).
    #[command(after_help = "Examples:\n  \
        quickforge tokens\n  \
        quickforge tokens --config forge.toml --json")]
    Tokens {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write forge.toml from an MCP client's servers and print the entry that replaces them there.
    #[command(after_help = "Examples:\n  \
        quickforge init --apply                          # the one client found here, rewritten\n  \
        quickforge init --client claude-desktop --config ~/.config/quickforge/forge.toml\n  \
        quickforge init --from mcp.json --format cursor\n  \
        quickforge init --undo                           # put the client's file back")]
    Init(init::InitArgs),
    /// Add a server to forge.toml, keeping its comments and layout.
    #[command(after_help = "Examples:\n  \
        quickforge add memory -- npx -y @modelcontextprotocol/server-memory\n  \
        quickforge add github https://api.githubcopilot.com/mcp/ --header 'Authorization=Bearer ${GITHUB_TOKEN}'")]
    Add(edit::AddArgs),
    /// Remove a server from forge.toml, keeping the rest as it is.
    #[command(after_help = "Example:\n  quickforge remove memory")]
    Remove {
        /// The server's name.
        name: String,
    },
    /// List forge.toml's servers (names of env variables and headers, never their values).
    #[command(after_help = "Example:\n  quickforge list --config forge.toml")]
    List,
    /// Accept the changed tools of SERVER (or only TOOL) as last listed, after reviewing the change.
    #[command(
        after_help = "A tool is pinned (its hash recorded) the first time a gateway lists it; a later version is\n\
        listed as changed, and refused with on_tool_change = \"quarantine\", until it is trusted.\n\n\
        Examples:\n  \
        quickforge doctor                      # lists the tools changed since they were trusted\n  \
        quickforge trust github create_issue   # accept that tool's new version\n  \
        quickforge trust github                # accept every changed tool of github"
    )]
    Trust {
        /// The server's name in forge.toml.
        server: String,
        /// One of its tools; every changed tool of the server when left out.
        tool: Option<String>,
    },
    /// Authentication helpers for `serve --http` with `[auth]`.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Print a shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "Examples:\n  \
        quickforge completions bash > ~/.local/share/bash-completion/completions/quickforge\n  \
        quickforge completions zsh > \"${fpath[1]}/_quickforge\"")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write a page per command into --dir; generated from these definitions.
    #[command(after_help = "Examples:\n  \
        quickforge man > quickforge.1 && man ./quickforge.1\n  \
        quickforge man --dir /usr/local/share/man/man1")]
    Man {
        /// Write quickforge.1 and one page per command (quickforge-serve.1, ...) into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
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

/// `quickforge auth ...`.
#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Print the SHA-256 of a token read from standard input, for `[[auth.tokens]] sha256`.
    #[command(after_help = "Example:\n  \
        openssl rand -hex 32 > alice.token && quickforge auth hash-token < alice.token")]
    HashToken,
}

/// Exit status for usage and configuration errors.
const EXIT_USAGE: u8 = 2;
/// Exit status for a script that failed, or a doctor finding.
const EXIT_FAILED: u8 = 1;

/// Runs the command line and returns the process's exit status.
pub fn main() -> ExitCode {
    serve::no_inherited_fds();
    logging::init_tracing();
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
    if let Some(format) = cli.log_format {
        logging::set_format(format);
        let _ = LOG_FORMAT_FORCED.set(());
    }
    // Generated from the clap definitions; nothing to start.
    match &cli.command {
        Some(Command::Completions { shell }) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Into a buffer first: clap_complete panics when its writer
            // fails, and stdout may be a pipe that closes (`| head`).
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut command, "quickforge", &mut script);
            let mut out = std::io::stdout().lock();
            return match std::io::Write::write_all(&mut out, &script)
                .and_then(|()| std::io::Write::flush(&mut out))
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: could not write the completion script: {e}");
                    ExitCode::from(EXIT_FAILED)
                }
            };
        }
        Some(Command::Man { dir }) => {
            let command = <Cli as clap::CommandFactory>::command();
            let written = match dir {
                Some(dir) => man_pages(command, dir),
                None => clap_mangen::Man::new(command).render(&mut std::io::stdout()),
            };
            return match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: could not write the man page: {e}");
                    ExitCode::from(EXIT_FAILED)
                }
            };
        }
        _ => {}
    }
    // Editing files: nothing to start either.
    let cli = match cli.command {
        Some(Command::Init(args)) => return init::init(cli.config, args),
        Some(Command::Add(args)) => return edit::add(cli.config, args),
        Some(Command::Remove { name }) => return edit::remove(cli.config, name),
        Some(Command::List) => return edit::list(cli.config),
        Some(Command::Auth(AuthCommand::HashToken)) => return auth::hash_token(),
        _ => cli,
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
            Command::Serve(args) => serve::serve(cli.config, args).await,
            Command::Run { file, search } => run::run(cli.config, file, search).await,
            Command::Manifest { server, json } => {
                manifest::manifest(cli.config, server, json).await
            }
            Command::Doctor => doctor::doctor(cli.config).await,
            Command::Tokens { json } => tokens::tokens(cli.config, json).await,
            Command::Trust { server, tool } => trust::trust(cli.config, server, tool).await,
            // Answered above, before the runtime.
            Command::Completions { .. }
            | Command::Man { .. }
            | Command::Init(_)
            | Command::Add(_)
            | Command::Remove { .. }
            | Command::List
            | Command::Auth(_) => ExitCode::SUCCESS,
        }
    });
    // Blocking reads of stdin must not hold the process open.
    runtime.shutdown_timeout(Duration::from_secs(1));
    crate::observe::otel_shutdown();
    code
}

/// `quickforge man --dir DIR`: what `clap_mangen::generate_to` writes (a
/// page per visible command), each page written by [`crate::files`] so a
/// link planted in DIR is refused rather than written through.
fn man_pages(command: clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    fn pages(command: clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            pages(sub.clone(), dir)?;
        }
        let man = clap_mangen::Man::new(command);
        let mut page = Vec::new();
        man.render(&mut page)?;
        crate::files::write_atomic_readable(&dir.join(man.get_filename()), &page)?;
        Ok(())
    }
    let mut command = command.disable_help_subcommand(true);
    command.build();
    pages(command, dir)
}

/// The file `init`, `add`, `remove` and `list` write or read: `--config`,
/// else `$FORGE_CONFIG`, else `./forge.toml`, as the other commands find it.
fn config_path(config: Option<PathBuf>) -> PathBuf {
    config
        .or_else(|| {
            std::env::var_os("FORGE_CONFIG")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("forge.toml"))
}

/// Loads the configuration the way every command does, warning when there is
/// none; a broken one is reported and ends the command with [`EXIT_USAGE`].
/// Set when `--log-format` (or `QUICKFORGE_LOG_FORMAT`) chose the log's
/// format, which `[log] format` then does not change.
static LOG_FORMAT_FORCED: std::sync::OnceLock<()> = std::sync::OnceLock::new();

fn load_config(path: Option<PathBuf>) -> Result<Config, ExitCode> {
    match Config::discover(path.as_deref()) {
        Ok(c) => {
            if LOG_FORMAT_FORCED.get().is_none() {
                logging::set_format(c.log.format);
            }
            if c.source.is_none() {
                tracing::warn!(
                    "no config file (--config, $FORGE_CONFIG or forge.toml in the working directory): no downstream servers, default limits"
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

/// Opens the audit log, starts the sandbox and the gateway: what `serve` and
/// `run` share before their first execution.
async fn start(config: &Config) -> Result<Arc<Executor>, ExitCode> {
    // Before the sandbox, which takes seconds on a cold cache: a bad path
    // should fail at once.
    let metrics = config.observability.metrics.then(|| {
        Arc::new(crate::observe::Metrics::new(
            config.servers.iter().map(|s| s.name.as_str()),
        ))
    });
    let observer = metrics
        .clone()
        .map(|m| m as Arc<dyn crate::audit::Observer>);
    let audit = match crate::audit::AuditLog::open(&config.audit, observer) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    if let Some(endpoint) = &config.observability.otlp_endpoint {
        match crate::trace::otel::install(endpoint) {
            Ok(()) => tracing::info!("exporting spans to {endpoint}"),
            Err(e) => tracing::warn!("observability.otlp_endpoint: {e}"),
        }
    }
    let sandbox = match Sandbox::new(config.sandbox.clone(), config.cache_dir.clone()).await {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("error: could not start the sandbox: {e:#}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    let cache = config.cache_dir.resolve();
    let secret = config.stash.secret.as_ref().map(|s| s.0.as_str());
    let (key, source) = crate::state::HandleKey::load(secret, cache.as_deref());
    match source {
        crate::state::KeySource::Ephemeral(why) => tracing::warn!(
            "stash handles are sealed with a key for this process only ({why}): handles given out now stop working at restart; set [sandbox.stash] secret or a writable cache_dir"
        ),
        source => tracing::debug!(?source, "stash handle key"),
    }
    let redis = match crate::state::redis::Redis::open(&config.state) {
        Ok(redis) => redis,
        Err(e) => {
            eprintln!("error: [state] backend: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    if let Some(redis) = &redis {
        // Not fatal: the gateway serves what needs no state while Redis is
        // down, and the connection comes up by itself when Redis does.
        match redis.ping().await {
            Ok(()) => tracing::info!("[state] backend: Redis answers; state is shared"),
            Err(e) => tracing::warn!(
                "[state] backend: {}; starting anyway: stash operations fail with STATE_UNAVAILABLE until Redis answers",
                e.message
            ),
        }
    }
    let audit = audit.map(Arc::new);
    let mut settings = config.gateway();
    if let Some(redis) = &redis {
        // replicas agree on what was trusted
        settings.pins = crate::pins::Pins::in_redis(redis.clone());
    }
    settings.pins = settings.pins.with_audit(audit.clone());
    let mut executor = Executor::new(sandbox, Gateway::start(&settings), config.stash.clone())
        .with_handle_key(key)
        .with_tasks(config.tasks)
        .with_run_owner(
            (!config.cluster.peers.is_empty()).then(|| config.cluster.replica.as_str().into()),
        )
        .with_sessions(config.sessions)
        .with_rate_limit(
            config.executions_per_minute,
            config
                .auth
                .as_ref()
                .is_some_and(|a| a.rate_limit_scope == crate::auth::RateLimitScope::Subject),
        )
        .with_replica(&config.cluster.replica)
        .with_validation(config.validate)
        .with_audit(audit)
        .with_redis(redis, config.stash.clone());
    executor.metrics = metrics;
    Ok(Arc::new(executor))
}
