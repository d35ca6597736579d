//! `quickforge run FILE|-`: one script against the configured servers, its
//! logs on stderr and its result (or error) as JSON on stdout.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::gateway::SERVER_GRACE;
use crate::sandbox::{LogLevel, Mode};
use crate::server::ForgeServer;

use super::{EXIT_FAILED, EXIT_USAGE, load_config, start};

/// Runs `quickforge run`: one script, its logs on stderr, its result on stdout.
pub(super) async fn run(config: Option<PathBuf>, file: PathBuf, search: bool) -> ExitCode {
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
    let executor = match start(&config).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let session = ForgeServer::new(executor.clone());
    let mode = if search { Mode::Search } else { Mode::Execute };
    let report = session.run(mode, &code).await;
    executor.gateway.close(SERVER_GRACE).await;

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
