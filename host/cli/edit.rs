//! `quickforge add`, `remove` and `list`: edit forge.toml's servers without
//! touching the rest of it.
//!
//! The file is edited with `toml_edit`, so comments, order and layout stay as
//! they were; the result is loaded by the config loader before anything is
//! written, and written atomically. On any error the file is left as it was.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use quickforge_filters::secrets;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::{EXIT_USAGE, config_path as target};
use crate::config::Config;
use crate::files::write_atomic;

/// What `${VAR}`s stand for while an edited file is checked: the variable's
/// value when it is set, else this, so a file that names variables only the
/// MCP client sets (as `quickforge init` writes them) still checks.
const PLACEHOLDER: &str = "quickforge-edit-check";

/// `quickforge add`'s options.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server's name: letters, digits, _ and -.
    name: String,
    /// An HTTP server's URL (streamable HTTP, or legacy SSE).
    #[arg(conflicts_with = "command")]
    url: Option<String>,
    /// A stdio server's command and arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
    /// An environment variable of a stdio server, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = pair)]
    env: Vec<(String, String)>,
    /// A request header of an HTTP server, NAME=VALUE (repeatable).
    #[arg(long = "header", value_name = "NAME=VALUE", value_parser = pair)]
    headers: Vec<(String, String)>,
    /// What the server is for, shown to scripts in manifest.servers.
    #[arg(long)]
    description: Option<String>,
}

fn pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// Prints `error: {e}` and returns the usage status.
fn fail(e: String) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(EXIT_USAGE)
}

/// Reads and parses `path`; a missing file is an empty document when
/// `missing_ok`.
fn read(path: &Path, missing_ok: bool) -> Result<(String, DocumentMut), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("could not read {}: {e}", path.display())),
    };
    let doc = text
        .parse::<DocumentMut>()
        .map_err(|e| format!("{} is not valid TOML: {e}", path.display()))?;
    Ok((text, doc))
}

/// Checks `doc` with the config loader, then writes it over `path`.
fn save(path: &Path, doc: &DocumentMut) -> Result<(), String> {
    let text = doc.to_string();
    let lookup = |var: &str| Some(std::env::var(var).unwrap_or_else(|_| PLACEHOLDER.into()));
    Config::parse_with_env(&text, path, &lookup)
        .map_err(|e| format!("{e}\n{} is unchanged", path.display()))?;
    write_atomic(path, text.as_bytes()).map_err(|e| format!("{e}; {} is unchanged", path.display()))
}

/// The `[servers]` table, or why it cannot be edited here.
fn servers_mut(doc: &mut DocumentMut, create: bool) -> Result<Option<&mut Table>, String> {
    if !doc.contains_key("servers") {
        if !create {
            return Ok(None);
        }
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("servers", Item::Table(t));
    }
    match doc.get_mut("servers") {
        Some(Item::Table(t)) => Ok(Some(t)),
        _ => Err("`servers` is not written as [servers.NAME] tables; edit it by hand".into()),
    }
}

/// Runs `quickforge add`.
pub fn add(config: Option<PathBuf>, args: AddArgs) -> ExitCode {
    let path = target(config);
    let result = (|| {
        let (_, mut doc) = read(&path, true)?;
        let mut t = Table::new();
        match (&args.url, args.command.split_first()) {
            (Some(url), None) => {
                if !args.env.is_empty() {
                    return Err("--env is for stdio servers (add NAME -- COMMAND ...); an HTTP server takes --header".to_string());
                }
                t.insert("url", value(url.as_str()));
                if !args.headers.is_empty() {
                    t.insert("headers", value(inline(&args.headers)));
                }
            }
            (None, Some((command, rest))) => {
                if !args.headers.is_empty() {
                    return Err(
                        "--header is for HTTP servers (add NAME URL); a stdio server takes --env"
                            .to_string(),
                    );
                }
                t.insert("command", value(command.as_str()));
                t.insert(
                    "args",
                    value(rest.iter().map(String::as_str).collect::<Array>()),
                );
                if !args.env.is_empty() {
                    t.insert("env", value(inline(&args.env)));
                }
            }
            _ => {
                return Err(
                    "give a URL (add NAME URL) or a command after -- (add NAME -- COMMAND ARGS...)"
                        .to_string(),
                );
            }
        }
        if let Some(d) = &args.description {
            t.insert("description", value(d.as_str()));
        }
        // The judge `init` uses (quickforge_filters::secrets): names,
        // flag pairs, URL parts, shapes.
        for (k, v) in args.env.iter().chain(&args.headers) {
            if !secrets::in_env(k, v).is_empty() && !v.contains("${") {
                eprintln!(
                    "warning: {k} looks like a secret and is written in clear; consider {k}=\"${{VAR}}\" with VAR set in the MCP client's env"
                );
            }
        }
        let in_clear =
            |v: &str, found: Vec<secrets::Secret>| !found.is_empty() && !v.contains("${");
        let url = args
            .url
            .as_deref()
            .is_some_and(|u| in_clear(u, secrets::in_value(u)));
        let command = secrets::in_args(&args.command)
            .into_iter()
            .zip(&args.command)
            .any(|(found, v)| in_clear(v, found));
        if url || command {
            eprintln!(
                "warning: the {} holds what looks like a secret, written in clear; consider ${{VAR}} there with VAR set in the MCP client's env",
                if url { "URL" } else { "command" }
            );
        }
        let servers = servers_mut(&mut doc, true)?.ok_or("no [servers]")?;
        if servers.contains_key(&args.name) {
            return Err(format!(
                "a server named {:?} is already in {}; remove it first, or choose another name",
                args.name,
                path.display()
            ));
        }
        servers.insert(&args.name, Item::Table(t));
        save(&path, &doc)
    })();
    match result {
        Ok(()) => {
            eprintln!("added {:?} to {}", args.name, path.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn inline(pairs: &[(String, String)]) -> InlineTable {
    let mut t = InlineTable::new();
    for (k, v) in pairs {
        t.insert(k, v.as_str().into());
    }
    t
}

/// Runs `quickforge remove NAME`.
pub fn remove(config: Option<PathBuf>, name: String) -> ExitCode {
    let path = target(config);
    let result = (|| {
        let (_, mut doc) = read(&path, false)?;
        let servers = servers_mut(&mut doc, false)?;
        let names: Vec<String> = servers
            .as_ref()
            .map(|s| s.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default();
        let removed = servers.and_then(|s| s.remove(&name));
        if removed.is_none() {
            let hint = crate::suggest::did_you_mean(&name, names.iter().map(String::as_str))
                .map(|s| format!("; did you mean {s:?}?"))
                .unwrap_or_default();
            return Err(format!(
                "no server is named {name:?} in {}{hint}",
                path.display()
            ));
        }
        save(&path, &doc)
    })();
    match result {
        Ok(()) => {
            eprintln!("removed {name:?} from {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// Runs `quickforge list`: one line per server, `NAME  command args` or
/// `NAME  url`; values of `env` and `headers` are not shown (they may be
/// secrets), only their names.
pub fn list(config: Option<PathBuf>) -> ExitCode {
    let path = target(config);
    let (_, doc) = match read(&path, false) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let Some(servers) = doc.get("servers").and_then(Item::as_table_like) else {
        eprintln!("{} has no servers", path.display());
        return ExitCode::SUCCESS;
    };
    let text = |item: Option<&Item>| item.and_then(Item::as_str).unwrap_or("").to_string();
    for (name, server) in servers.iter() {
        let Some(s) = server.as_table_like() else {
            continue;
        };
        let how = match s.get("url") {
            Some(url) => text(Some(url)),
            None => {
                let mut parts = vec![text(s.get("command"))];
                if let Some(args) = s.get("args").and_then(Item::as_array) {
                    parts.extend(args.iter().filter_map(|a| a.as_str()).map(str::to_string));
                }
                parts.join(" ")
            }
        };
        let keys = |k: &str| -> Vec<String> {
            s.get(k)
                .and_then(Item::as_table_like)
                .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
                .unwrap_or_default()
        };
        let mut line = format!("{name}\t{how}");
        for (label, names) in [("env", keys("env")), ("headers", keys("headers"))] {
            if !names.is_empty() {
                line.push_str(&format!("\t{label}: {}", names.join(", ")));
            }
        }
        println!("{line}");
    }
    ExitCode::SUCCESS
}
