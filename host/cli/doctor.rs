//! `quickforge doctor`: is the configuration sound and every server
//! reachable. Prints one `ok`/`warn`/`FAIL` line per check and exits 1 when
//! any check failed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::config::Config;
use crate::gateway::{Gateway, SERVER_GRACE};
use crate::sandbox::{Mode, Sandbox};

use super::EXIT_FAILED;

/// Runs `quickforge doctor`: environment, config, limits, sandbox, then every
/// server on its own.
pub(super) async fn doctor(config_path: Option<PathBuf>) -> ExitCode {
    let mut problems = 0usize;
    let mut out = std::io::stdout().lock();
    // Every ${VAR} the file references, checked before loading so all the
    // missing ones are listed, not just the first (loading stops at it).
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
        for check in env_checks(&text, &|name| std::env::var_os(name).is_some()) {
            match check {
                EnvCheck::Set(name) => {
                    let _ = writeln!(out, "ok    environment variable {name} is set");
                }
                EnvCheck::Defaulted(name) => {
                    let _ = writeln!(
                        out,
                        "ok    environment variable {name} is not set; its default applies"
                    );
                }
                EnvCheck::Missing(name) => {
                    let _ = writeln!(
                        out,
                        "FAIL  environment variable {name} is referenced but not set"
                    );
                    problems += 1;
                }
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
                "warn  no config file (--config, $FORGE_CONFIG or forge.toml in the working directory): no downstream servers"
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
    // Each server on its own: connect, list, time it; its tools checked
    // against their pins, where the gateway keeps them.
    let pins = match super::trust::pins_of(&config) {
        Ok(pins) => {
            let _ = writeln!(
                std::io::stdout().lock(),
                "ok    tool pins are kept in {}",
                pins.place()
            );
            pins
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stdout().lock(),
                "FAIL  tool pins: [state] backend: {e}"
            );
            problems += 1;
            config.gateway().pins
        }
    };
    let checks = config.servers.iter().map(|server| {
        let pins = pins.clone();
        let one = Config {
            servers: vec![server.clone()],
            manifest: crate::config::ManifestConfig {
                refresh_interval: None,
            },
            ..config.clone()
        };
        async move {
            let started = Instant::now();
            let mut settings = one.gateway();
            settings.pins = pins;
            let gateway = Gateway::start(&settings);
            gateway
                .wait_started(
                    server.timeout.max(crate::gateway::MIN_CONNECT_TIME) + Duration::from_secs(1),
                )
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
                // What the manifest tells the model about a tool (hostile
                // metadata removed, argument patterns the host will not
                // run): not failures, but the operator should know.
                for tool in entry.iter().flat_map(|e| e.tools.iter()) {
                    for warning in tool.warnings() {
                        let _ = writeln!(out, "warn  tool {name}.{}: {warning}", tool.name);
                    }
                }
                // A tool changed since it was trusted: the person decides.
                // Quarantined, its calls fail, which is a problem to fix.
                for (tool, change) in entry.iter().flat_map(|e| e.changed.iter()) {
                    let level = if change.quarantined {
                        problems += 1;
                        "FAIL"
                    } else {
                        "warn"
                    };
                    let _ = writeln!(
                        out,
                        "{level:<5} tool {name}.{tool}: {}{}; review it, then `quickforge trust {name} {tool}`",
                        change.sentence(),
                        if change.quarantined {
                            ", and calls to it are refused"
                        } else {
                            ""
                        }
                    );
                }
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

/// What the environment makes of one variable the config file references.
#[derive(Debug, PartialEq, Eq)]
enum EnvCheck {
    /// The variable is set.
    Set(String),
    /// Unset, but every reference to it has a `:-default`.
    Defaulted(String),
    /// Unset, and referenced at least once without a default: loading fails.
    Missing(String),
}

/// Every variable the config `text` references, each once, sorted by name,
/// with what `is_set` says of it.
///
/// References are read from the parsed TOML's string values, as the config
/// expands them, never from the raw lines: a `# comment` is not a value, and a
/// `#` inside a string does not start one. A file that is not valid TOML
/// references nothing here; loading it reports why.
fn env_checks(text: &str, is_set: &dyn Fn(&str) -> bool) -> Vec<EnvCheck> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let mut strings = Vec::new();
    for value in table.values() {
        string_values(value, &mut strings);
    }
    // Name → whether some reference has no fallback, so the name must be set.
    let mut required: BTreeMap<String, bool> = BTreeMap::new();
    for reference in strings
        .into_iter()
        .flat_map(crate::config::references_with_fallbacks)
    {
        *required.entry(reference.name).or_default() |= !reference.has_fallback;
    }
    required
        .into_iter()
        .map(|(name, required)| {
            if is_set(&name) {
                EnvCheck::Set(name)
            } else if required {
                EnvCheck::Missing(name)
            } else {
                EnvCheck::Defaulted(name)
            }
        })
        .collect()
}

/// Every string in `value`, however deep in arrays and tables (keys are not
/// values, and the config expands none).
fn string_values<'a>(value: &'a toml::Value, out: &mut Vec<&'a str>) {
    match value {
        toml::Value::String(s) => out.push(s),
        toml::Value::Array(items) => items.iter().for_each(|v| string_values(v, out)),
        toml::Value::Table(table) => table.values().for_each(|v| string_values(v, out)),
        _ => {}
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
    // Each space has its own share of the gateway's stash memory.
    let spaces = 1 + config
        .groups
        .iter()
        .filter(|g| g.isolation == crate::config::Isolation::Strict)
        .count();
    let stash = config.stash.max_gateway_size.saturating_mul(spaces);
    if stash > 4 << 30 {
        w.push(format!(
            "sandbox.stash.max_gateway_size x {spaces} spaces (public + strict groups) allows {} GiB of stash memory",
            stash >> 30
        ));
    }
    if s.max_tool_calls == 0 {
        w.push("sandbox.max_tool_calls is 0: execute can call no tools".into());
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none_set(_: &str) -> bool {
        false
    }

    #[test]
    fn an_unset_variable_with_a_default_is_no_failure() {
        let text = r#"
[servers.a]
command = "${QF_CMD:-npx}"
args = ["--token", "${QF_TOKEN}"]
"#;
        assert_eq!(
            env_checks(text, &none_set),
            vec![
                EnvCheck::Defaulted("QF_CMD".into()),
                EnvCheck::Missing("QF_TOKEN".into()),
            ]
        );
        // One reference without a default is enough to need the variable.
        let both = r#"
[servers.a]
command = "${QF_CMD:-npx}"
cwd = "${QF_CMD}"
"#;
        assert_eq!(
            env_checks(both, &none_set),
            vec![EnvCheck::Missing("QF_CMD".into())]
        );
        assert_eq!(
            env_checks(text, &|name| name == "QF_CMD"),
            vec![
                EnvCheck::Set("QF_CMD".into()),
                EnvCheck::Missing("QF_TOKEN".into()),
            ]
        );
    }

    #[test]
    fn comments_are_not_scanned_but_strings_with_hashes_are() {
        let text = r##"
# ${QF_WHOLE_LINE}
[servers.a] # ${QF_AFTER_HEADER}
command = "run" # was ${QF_TRAILING}
args = ["a # ${QF_IN_STRING}", 'b # ${QF_LITERAL}']
env.NOTE = """
# ${QF_MULTILINE}
"""
"##;
        assert_eq!(
            env_checks(text, &none_set),
            vec![
                EnvCheck::Missing("QF_IN_STRING".into()),
                EnvCheck::Missing("QF_LITERAL".into()),
                EnvCheck::Missing("QF_MULTILINE".into()),
            ]
        );
    }
}
