//! Reading a client's file into [`Source`]: the JSON clients (Claude Desktop,
//! Claude Code, Cursor, VS Code) here, Codex's TOML in `codex`.
//!
//! Each client's reference syntax is small and its own (`${VAR:-x}` in Claude
//! Code, `${env:VAR}` and `${input:id}` in the editors), and no crate reads
//! them, so [`template`] scans them by hand.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::model::{Imported, Input, Kind, Piece, Source, Template, text};
use super::paths::{Client, Places, Syntax};

/// Transport names the clients write that quickforge reaches with a URL: it
/// tries streamable HTTP and falls back to legacy SSE.
const URL_TYPES: &[&str] = &[
    "http",
    "sse",
    "streamable-http",
    "streamable_http",
    "streamableHttp",
];

/// Reads `text`, the content of `path`, as `client` writes it.
pub(super) fn parse(
    client: Client,
    path: &Path,
    text: &str,
    places: &Places,
) -> Result<Source, String> {
    let workspace = workspace_of(client, path, places);
    let cx = Context {
        syntax: client.syntax(),
        home: places.home.clone(),
        workspace,
    };
    if client == Client::Codex {
        return super::codex::parse(text);
    }
    let root: Value = serde_json::from_str(text).map_err(|e| {
        format!("{} is not plain JSON ({e}); comments and trailing commas are not read: remove them, or pass a cleaned copy with --from", path.display())
    })?;
    let Some(root) = root.as_object() else {
        return Err(format!("{} holds no JSON object", path.display()));
    };
    let mut servers = Vec::new();
    let key = if client == Client::Vscode {
        "servers"
    } else {
        "mcpServers"
    };
    if let Some(list) = root.get(key).and_then(Value::as_object) {
        servers.extend(list.iter().map(|(name, v)| entry(name, v, &cx)));
    }
    if client == Client::ClaudeCodeUser {
        servers.extend(project_entries(root, &places.project).map(|(name, v)| entry(name, v, &cx)));
    }
    let inputs = root
        .get("inputs")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|raw| {
                    Some(Input {
                        id: raw.get("id")?.as_str()?.to_string(),
                        description: raw
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        raw: raw.clone(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Source { servers, inputs })
}

/// Claude Code's local scope: `projects.<this folder>.mcpServers` of
/// `~/.claude.json`.
pub(super) fn project_entries<'a>(
    root: &'a Map<String, Value>,
    project: &Path,
) -> impl Iterator<Item = (&'a String, &'a Value)> {
    root.get("projects")
        .and_then(|p| p.get(project.to_string_lossy().as_ref()))
        .and_then(|p| p.get("mcpServers"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The folder `${workspaceFolder}` means: the project a project file sits in
/// (the parent of `.vscode/` or `.cursor/`), else the working directory.
fn workspace_of(client: Client, path: &Path, places: &Places) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("."));
    match client {
        Client::Vscode | Client::Cursor
            if parent
                .file_name()
                .is_some_and(|n| n == ".vscode" || n == ".cursor") =>
        {
            parent.parent().unwrap_or(parent).to_path_buf()
        }
        Client::ClaudeCode => parent.to_path_buf(),
        _ => places.project.clone(),
    }
}

/// What reading values needs.
pub(super) struct Context {
    /// The client's reference syntax.
    pub syntax: Syntax,
    /// `${userHome}`.
    pub home: PathBuf,
    /// `${workspaceFolder}`.
    pub workspace: PathBuf,
}

impl Context {
    /// `s` as a template, under the client's syntax.
    pub(super) fn template(&self, s: &str) -> Template {
        if matches!(self.syntax, Syntax::Literal | Syntax::Codex) {
            return text(s);
        }
        let mut out: Template = Vec::new();
        let mut literal = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            literal.push_str(&rest[..i]);
            let body = &rest[i + 2..];
            let Some(end) = body.find('}') else {
                literal.push_str(&rest[i..]);
                rest = "";
                break;
            };
            match self.reference(&body[..end]) {
                Some(Ok(piece)) => {
                    if !literal.is_empty() {
                        out.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    out.push(piece);
                }
                Some(Err(value)) => literal.push_str(&value),
                None => literal.push_str(&rest[i..i + 2 + end + 1]),
            }
            rest = &body[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() || out.is_empty() {
            out.push(Piece::Text(literal));
        }
        out
    }

    /// One `${...}` body: a reference (`Ok`), a value known now (`Err`, e.g.
    /// `${userHome}`), or `None` when the client would leave it as it is.
    fn reference(&self, body: &str) -> Option<Result<Piece, String>> {
        let var = |name: &str, fallback: Option<&str>| {
            valid_var(name).then(|| {
                Ok(Piece::Var {
                    name: name.to_string(),
                    fallback: fallback.map(str::to_string),
                })
            })
        };
        match self.syntax {
            Syntax::Dollar => match body.split_once(":-") {
                Some((name, fallback)) => var(name, Some(fallback)),
                None => var(body, None),
            },
            Syntax::Editor => {
                let path = |p: &Path| Some(Err(p.to_string_lossy().into_owned()));
                match body.split_once(':') {
                    Some(("env", name)) => var(name, None),
                    Some(("input", id)) => Some(Ok(Piece::Input(id.to_string()))),
                    _ => match body {
                        "userHome" => path(&self.home),
                        "workspaceFolder" => path(&self.workspace),
                        "workspaceFolderBasename" => Some(Err(self
                            .workspace
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default())),
                        "pathSeparator" | "/" => Some(Err(std::path::MAIN_SEPARATOR.to_string())),
                        _ => None,
                    },
                }
            }
            Syntax::Literal | Syntax::Codex => None,
        }
    }

    /// A value known to be literal text now (a path with `${workspaceFolder}`
    /// resolved), or `None` when it refers to the environment.
    fn literal(&self, s: &str) -> Option<String> {
        let mut out = String::new();
        for piece in self.template(s) {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                _ => return None,
            }
        }
        Some(out)
    }
}

/// Whether `name` is a variable name quickforge's `${NAME}` accepts.
pub(super) fn valid_var(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One entry of a JSON client's server list.
fn entry(name: &str, v: &Value, cx: &Context) -> Imported {
    let skipped = |why: String| Imported {
        name: name.to_string(),
        kind: Kind::Skipped(why),
        env_file: None,
    };
    let Some(v) = v.as_object() else {
        return skipped("the entry is not a JSON object".into());
    };
    if v.get("disabled").and_then(Value::as_bool) == Some(true)
        || v.get("enabled").and_then(Value::as_bool) == Some(false)
    {
        return skipped("disabled in the client".into());
    }
    let kind = v
        .get("type")
        .or_else(|| v.get("transport"))
        .and_then(Value::as_str);
    let string = |key: &str| v.get(key).and_then(Value::as_str);
    let pairs = |key: &str| -> Vec<(String, Template)> {
        v.get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, val)| (k.clone(), cx.template(&scalar(val))))
                    .collect()
            })
            .unwrap_or_default()
    };
    let env_file = string("envFile")
        .and_then(|f| cx.literal(f))
        .map(|f| cx.workspace.join(f));
    let kind = match (kind, string("command"), string("url")) {
        (None | Some("stdio"), Some(command), _) => Kind::Stdio {
            command: cx.template(command),
            args: v
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|x| cx.template(&scalar(x))).collect())
                .unwrap_or_default(),
            env: pairs("env"),
            cwd: string("cwd").map(|c| cx.template(c)),
        },
        (t, _, Some(url)) if t.is_none_or(|t| URL_TYPES.contains(&t)) => {
            let headers = pairs("headers");
            if headers.is_empty() && (v.contains_key("oauth") || v.contains_key("auth")) {
                return skipped(
                    "signs in with OAuth, which quickforge cannot do for it; keep it in the client"
                        .into(),
                );
            }
            Kind::Http {
                url: cx.template(url),
                headers,
            }
        }
        (Some(t), _, _) => {
            return skipped(format!(
                "transport {t:?} is not one quickforge reaches (stdio, http, sse)"
            ));
        }
        (None, _, _) => return skipped("has neither `command` nor `url`".into()),
    };
    Imported {
        name: name.to_string(),
        kind,
        env_file,
    }
}

/// A JSON scalar as the text a client would pass (numbers and booleans in
/// `args` and `env` are written without quotes by some people).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
