//! `quickforge trust SERVER [TOOL]`: a person accepts the version of a
//! server's tools last listed, where it differs from the one trusted (see
//! [`crate::pins`]). Nothing is fetched here: what is accepted is what a
//! gateway (or `quickforge doctor`) saw and reported, so the person trusts
//! the change they were shown, not whatever the server says at this moment.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::pins::Pins;

use super::{EXIT_FAILED, EXIT_USAGE};

/// The pins `config`'s gateway keeps: Redis's when `[state]` names it (the
/// replicas' shared record), else the state directory's.
pub(super) fn pins_of(config: &Config) -> Result<Pins, String> {
    match crate::state::redis::Redis::open(&config.state)? {
        Some(redis) => Ok(Pins::in_redis(redis)),
        None => Ok(config.gateway().pins),
    }
}

/// Runs `quickforge trust`.
pub(super) async fn trust(
    config: Option<PathBuf>,
    server: String,
    tool: Option<String>,
) -> ExitCode {
    let config = match super::load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if !config.servers.iter().any(|s| s.name == server) {
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        eprintln!(
            "error: no server named {server:?} in the configuration (servers: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let pins = match pins_of(&config) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: [state] backend: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let done = match pins.trust(&server, tool.as_deref()).await {
        Ok(done) => done,
        Err(e) => {
            eprintln!(
                "error: could not update the tool pins ({}): {e}",
                pins.place()
            );
            return ExitCode::from(EXIT_FAILED);
        }
    };
    if done.is_empty() {
        let records = pins.records(&server).await.unwrap_or_default();
        return match &tool {
            Some(t) if !records.contains_key(t) => {
                eprintln!(
                    "error: no tool {t:?} of {server} is pinned ({}); a tool is pinned the first time a gateway or `quickforge doctor` lists it",
                    pins.place()
                );
                ExitCode::from(EXIT_FAILED)
            }
            _ => {
                let what = tool.map_or_else(
                    || format!("no tool of {server}"),
                    |t| format!("{server}.{t}"),
                );
                println!(
                    "nothing to trust: {what} has changed since it was trusted, as far as {} records (`quickforge doctor` lists the servers' tools now)",
                    pins.place()
                );
                ExitCode::SUCCESS
            }
        };
    }
    for t in &done {
        let fields = if t.fields.is_empty() {
            String::new()
        } else {
            format!(" ({} changed)", t.fields.join(", "))
        };
        println!("trusted {server}.{}{fields}: {} → {}", t.tool, t.from, t.to);
    }
    println!(
        "recorded in {}; a running gateway lists {} as unchanged within {} s",
        pins.place(),
        if done.len() == 1 { "it" } else { "them" },
        crate::gateway::PIN_RECHECK.as_secs()
    );
    ExitCode::SUCCESS
}
