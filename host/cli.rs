//! The `quickforge` command line.
//!
//! Exit status: 0 on success, 1 when the script failed (the error, with its
//! kind, is printed as JSON on stdout), 2 on usage or configuration errors.
//! Logs and diagnostics go to stderr; stdout carries only the result.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::sandbox::{ExecutionContext, LogLevel, Mode, Sandbox};
use crate::stash::Stash;

/// quickforge: an MCP gateway whose tools run JavaScript in a WebAssembly sandbox.
#[derive(Debug, Parser)]
#[command(name = "quickforge", version, about)]
struct Cli {
    /// Configuration file (default: $FORGE_CONFIG, else ./forge.toml, else built-in defaults).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one script (a JS async arrow function) and print its result as JSON.
    Run {
        /// The script file, or `-` for standard input.
        file: PathBuf,
        /// Run in search mode: only `manifest` is available, no tool calls.
        #[arg(long)]
        search: bool,
    },
}

/// Exit status for usage and configuration errors.
const EXIT_USAGE: u8 = 2;
/// Exit status for a script that failed.
const EXIT_SCRIPT: u8 = 1;

/// Runs the command line and returns the process's exit status.
pub fn main() -> ExitCode {
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
    runtime.block_on(async move {
        match cli.command {
            Command::Run { file, search } => run(cli.config, file, search).await,
        }
    })
}

async fn run(config: Option<PathBuf>, file: PathBuf, search: bool) -> ExitCode {
    let config = match Config::discover(config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if config.source.is_none() {
        tracing::info!(
            "no config file (--config, $FORGE_CONFIG or ./forge.toml): no servers, default limits"
        );
    }
    let code = match read_script(&file) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: could not read script {}: {e}", file.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let sandbox = match Sandbox::new(config.sandbox.clone(), config.cache_dir.clone()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: could not start the sandbox: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let cx = ExecutionContext {
        stash: std::sync::Arc::new(Stash::new(config.stash.clone())),
        ..Default::default()
    };
    let mode = if search { Mode::Search } else { Mode::Execute };
    let report = sandbox.run(mode, &code, cx).await;

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
    let mut out = std::io::stdout().lock();
    match &report.result {
        Ok(value) => {
            let _ = writeln!(out, "{value}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
            ExitCode::from(EXIT_SCRIPT)
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

/// Logs go to stderr (stdout belongs to the result, and later to the MCP
/// protocol). `QUICKFORGE_LOG` (or `RUST_LOG`) sets the filter; default `warn`.
fn init_tracing() {
    let filter = std::env::var("QUICKFORGE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
}
