//! `quickforge manifest`: the servers and tools quickforge reaches, as text
//! or JSON, once every server has started or failed to.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::gateway::{Gateway, SERVER_GRACE, STARTUP_WAIT};

use super::{EXIT_USAGE, load_config};

/// Runs `quickforge manifest`, for every server or only the one named.
pub(super) async fn manifest(
    config: Option<PathBuf>,
    only: Option<String>,
    as_json: bool,
) -> ExitCode {
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
    let gateway = Gateway::start(&config.gateway());
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
                    "templates": s.templates,
                    // The tools its policy refuses, with why: the edge
                    // answers calls to them POLICY_DENIED, as here.
                    "denied": s.denied,
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
