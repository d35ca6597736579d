//! The server entry that replaces a client's servers: one `quickforge`
//! running `quickforge serve --config <forge.toml>`, in the client's own
//! shape, its `env` carrying what forge.toml's `${VAR}`s need.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::model::Input;
use super::paths::{Client, Syntax};
use super::secrets::{Moved, Vars};

/// The name of quickforge's entry in the client.
pub(super) const ENTRY: &str = "quickforge";

/// What the entry needs.
pub(super) struct Entry<'a> {
    /// The client.
    pub client: Client,
    /// The quickforge program, absolute (clients start servers with a bare
    /// PATH, Claude Desktop on macOS especially).
    pub program: &'a Path,
    /// forge.toml, absolute.
    pub config: &'a Path,
    /// The variables to pass.
    pub vars: &'a Vars,
    /// The `envFile` to keep (VS Code).
    pub env_file: Option<&'a Path>,
    /// The VS Code inputs the variables ask for.
    pub inputs: &'a [Input],
}

impl Entry<'_> {
    fn args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            "--config".into(),
            self.config.to_string_lossy().into_owned(),
        ]
    }

    /// The entry as JSON (every client but Codex).
    pub(super) fn json(&self) -> Value {
        let mut env = Map::new();
        for (var, moved) in &self.vars.map {
            let v = match moved {
                Moved::Literal(v) => v.clone(),
                Moved::ClientVar { name, fallback } => match (self.client.syntax(), fallback) {
                    (Syntax::Dollar, Some(f)) => format!("${{{name}:-{f}}}"),
                    (Syntax::Dollar, None) => format!("${{{name}}}"),
                    _ => format!("${{env:{name}}}"),
                },
                Moved::Input(id) => format!("${{input:{id}}}"),
                Moved::EnvFile(_) => continue,
            };
            env.insert(var.clone(), Value::String(v));
        }
        let mut entry = Map::new();
        if self.client == Client::Vscode {
            entry.insert("type".into(), json!("stdio"));
        }
        entry.insert("command".into(), json!(self.program.to_string_lossy()));
        entry.insert("args".into(), json!(self.args()));
        if !env.is_empty() {
            entry.insert("env".into(), Value::Object(env));
        }
        if let Some(file) = self.env_file {
            entry.insert("envFile".into(), json!(file.to_string_lossy()));
        }
        Value::Object(entry)
    }

    /// The VS Code inputs the entry uses.
    pub(super) fn used_inputs(&self) -> Vec<Value> {
        self.inputs
            .iter()
            .filter(|i| {
                self.vars
                    .map
                    .values()
                    .any(|m| matches!(m, Moved::Input(id) if *id == i.id))
            })
            .map(|i| i.raw.clone())
            .collect()
    }

    /// The entry as Codex's `[mcp_servers.quickforge]` table. Codex passes
    /// its own variables by name (`env_vars`), never renamed.
    pub(super) fn codex(&self) -> toml_edit::Table {
        let mut t = toml_edit::Table::new();
        t.insert(
            "command",
            toml_edit::value(self.program.to_string_lossy().as_ref()),
        );
        let mut args = toml_edit::Array::new();
        for a in self.args() {
            args.push(a);
        }
        t.insert("args", toml_edit::value(args));
        let mut env = toml_edit::InlineTable::new();
        let mut forwarded = toml_edit::Array::new();
        for (var, moved) in &self.vars.map {
            match moved {
                Moved::Literal(v) => {
                    env.insert(var, v.as_str().into());
                }
                Moved::ClientVar { name, .. } => {
                    if name != var {
                        eprintln!(
                            "warning: Codex forwards variables under their own names; set {var} to the value of {name} in Codex's environment"
                        );
                    }
                    forwarded.push(var.as_str());
                }
                Moved::Input(_) | Moved::EnvFile(_) => {}
            }
        }
        if !env.is_empty() {
            t.insert("env", toml_edit::value(env));
        }
        if !forwarded.is_empty() {
            t.insert("env_vars", toml_edit::value(forwarded));
        }
        t
    }

    /// The snippet to paste, as text: the client's whole servers section.
    pub(super) fn text(&self) -> String {
        match self.client {
            Client::Codex => {
                let mut doc = toml_edit::DocumentMut::new();
                let mut servers = toml_edit::Table::new();
                servers.set_implicit(true);
                servers.insert(ENTRY, toml_edit::Item::Table(self.codex()));
                doc.insert("mcp_servers", toml_edit::Item::Table(servers));
                doc.to_string()
            }
            client => {
                let key = if client == Client::Vscode {
                    "servers"
                } else {
                    "mcpServers"
                };
                let mut root = Map::new();
                root.insert(key.into(), json!({ ENTRY: self.json() }));
                let inputs = self.used_inputs();
                if !inputs.is_empty() {
                    root.insert("inputs".into(), Value::Array(inputs));
                }
                pretty(&Value::Object(root))
            }
        }
    }
}

/// JSON as clients write it: two-space indent, a final newline.
pub(super) fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}
