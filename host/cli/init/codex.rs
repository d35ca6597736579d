//! Codex's `config.toml`: `[mcp_servers.NAME]` tables.
//!
//! Codex does not interpolate values; it names variables instead: `env_vars`
//! (forwarded from its environment), `bearer_token_env_var` and
//! `env_http_headers` (header → variable). Those become [`Piece::Var`]s.

use toml::{Table, Value};

use super::model::{Imported, Kind, Piece, Source, Template, text};

/// Reads Codex's `config.toml`.
pub(super) fn parse(source: &str) -> Result<Source, String> {
    let root: Table = source.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    let servers = root
        .get("mcp_servers")
        .and_then(Value::as_table)
        .map(|list| list.iter().map(|(name, v)| entry(name, v)).collect())
        .unwrap_or_default();
    Ok(Source {
        servers,
        inputs: Vec::new(),
    })
}

fn var(name: &str) -> Template {
    vec![Piece::Var {
        name: name.to_string(),
        fallback: None,
    }]
}

fn entry(name: &str, v: &Value) -> Imported {
    let kind = match v.as_table() {
        None => Kind::Skipped("the entry is not a table".into()),
        Some(t) if t.get("enabled").and_then(Value::as_bool) == Some(false) => {
            Kind::Skipped("disabled in the client (enabled = false)".into())
        }
        Some(t) => server(t),
    };
    Imported {
        name: name.to_string(),
        kind,
        env_file: None,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn server(t: &Table) -> Kind {
    let string = |key: &str| t.get(key).and_then(Value::as_str);
    let table = |key: &str| -> Vec<(String, Template)> {
        t.get(key)
            .and_then(Value::as_table)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), text(scalar(v))))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(command) = string("command") {
        let mut env = table("env");
        // `env_vars`: names forwarded from Codex's environment (strings, or
        // tables with a `name` in newer releases).
        for item in t
            .get("env_vars")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = item
                .as_str()
                .or_else(|| item.get("name").and_then(Value::as_str));
            if let Some(name) = name
                && !env.iter().any(|(k, _)| k == name)
            {
                env.push((name.to_string(), var(name)));
            }
        }
        return Kind::Stdio {
            command: text(command),
            args: t
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|x| text(scalar(x))).collect())
                .unwrap_or_default(),
            env,
            cwd: string("cwd").map(text),
        };
    }
    let Some(url) = string("url") else {
        return Kind::Skipped("has neither `command` nor `url`".into());
    };
    let mut headers = table("http_headers");
    for (header, name) in t
        .get("env_http_headers")
        .and_then(Value::as_table)
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str() {
            headers.push((header.clone(), var(name)));
        }
    }
    if let Some(name) = string("bearer_token_env_var") {
        let mut value = text("Bearer ");
        value.extend(var(name));
        headers.push(("Authorization".into(), value));
    } else if let Some(token) = string("bearer_token") {
        headers.push(("Authorization".into(), text(format!("Bearer {token}"))));
    }
    Kind::Http {
        url: text(url),
        headers,
    }
}
