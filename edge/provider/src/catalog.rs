//! The manifest at the edge: the snapshot `quickforge manifest --json`
//! printed at deploy time, answered as the native `manifest.*` answers.
//!
//! The ranking of `search` is a simpler one than `host/manifest/search.rs`
//! (which is bound to the native manifest's types, in the lead's area): a
//! tool scores per query word found in its name (10), its server's name (5)
//! or its description (1). Moving the native ranking into a crate both
//! compile is the better end state (see the edge's README section).

use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ForgeError};
use crate::suggest;

/// Longest query, bytes: the native `MAX_QUERY_BYTES`.
const MAX_QUERY_BYTES: usize = 1024;
/// Most query words ranked: the native `MAX_QUERY_TERMS`.
const MAX_QUERY_TERMS: usize = 32;
/// Most hits returned: the native `MAX_SEARCH_LIMIT`.
const MAX_SEARCH_LIMIT: usize = 1000;
/// Description characters a search hit or server entry shows.
const SUMMARY_CHARS: usize = 200;

/// The snapshot, by server.
pub struct Catalog<'a> {
    servers: &'a [Value],
}

impl<'a> Catalog<'a> {
    /// Over the parsed snapshot.
    pub fn new(servers: &'a [Value]) -> Catalog<'a> {
        Catalog { servers }
    }

    fn names(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.servers
            .iter()
            .filter_map(|s| s.get("name").and_then(Value::as_str))
    }

    fn tools(server: &'a Value) -> &'a [Value] {
        server
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The snapshot's entry for `name`, or `SERVER_NOT_FOUND` with a
    /// did-you-mean, as the native `require_server`.
    pub fn server(&self, name: &str) -> Result<&'a Value, ForgeError> {
        self.servers
            .iter()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| {
                let found = suggest::suggestions(name, self.names());
                let err = ForgeError::new(
                    ErrorCode::ServerNotFound,
                    format!("no downstream server is named {name:?}"),
                );
                match suggest::sentence(&found).or_else(|| suggest::listing(self.names())) {
                    Some(s) => err.suggest(s),
                    None => err.suggest(
                        "read manifest.servers (in search) for the configured server names",
                    ),
                }
            })
    }

    /// The tool's description object, or `SERVER_NOT_FOUND`/`TOOL_NOT_FOUND`
    /// with a did-you-mean.
    pub fn tool(&self, server: &str, tool: &str) -> Result<&'a Value, ForgeError> {
        let entry = self.server(server)?;
        let tools = Self::tools(entry);
        tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
            .ok_or_else(|| {
                let names = tools
                    .iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str));
                let found = suggest::suggestions(tool, names);
                let suggestion = suggest::sentence(&found).unwrap_or_else(|| {
                    format!("use manifest.search(...) in search to find tools of {server:?}")
                });
                ForgeError::new(
                    ErrorCode::ToolNotFound,
                    format!("server {server:?} has no tool named {tool:?}"),
                )
                .suggest(suggestion)
            })
    }

    /// `manifest.servers`.
    pub fn servers_json(&self) -> Value {
        Value::Array(
            self.servers
                .iter()
                .map(|s| {
                    let mut o = Map::new();
                    for key in ["name", "status", "error"] {
                        if let Some(v) = s.get(key).filter(|v| !v.is_null()) {
                            o.insert(key.into(), v.clone());
                        }
                    }
                    let description = s.get("description").and_then(Value::as_str).unwrap_or("");
                    o.insert("description".into(), summary(description).into());
                    o.insert("tools".into(), Self::tools(s).len().into());
                    o.insert(
                        "resources".into(),
                        s.get("resources").cloned().unwrap_or_else(|| json!([])),
                    );
                    Value::Object(o)
                })
                .collect(),
        )
    }

    /// `manifest.search`.
    pub fn search(&self, query: &str, limit: u32) -> Result<Value, ForgeError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(ForgeError::new(
                ErrorCode::InvalidArgument,
                format!("the query is over {MAX_QUERY_BYTES} bytes"),
            )
            .suggest("search with a few words"));
        }
        let mut terms: Vec<String> = Vec::new();
        for word in words(query) {
            if !terms.contains(&word) {
                terms.push(word);
            }
        }
        if terms.len() > MAX_QUERY_TERMS {
            return Err(ForgeError::new(
                ErrorCode::InvalidArgument,
                format!("the query has over {MAX_QUERY_TERMS} words"),
            )
            .suggest("search with a few words"));
        }
        let mut hits: Vec<(u32, &str, &str, &str)> = Vec::new();
        for s in self.servers {
            let server = s.get("name").and_then(Value::as_str).unwrap_or("");
            let server_words = words(server);
            for t in Self::tools(s) {
                let name = t.get("name").and_then(Value::as_str).unwrap_or("");
                let description = t.get("description").and_then(Value::as_str).unwrap_or("");
                let (name_words, text_words) = (words(name), words(description));
                let score: u32 = if terms.is_empty() {
                    1
                } else {
                    terms
                        .iter()
                        .map(|term| {
                            let hit =
                                |ws: &[String]| ws.iter().any(|w| w.starts_with(term.as_str()));
                            if hit(&name_words) {
                                10
                            } else if hit(&server_words) {
                                5
                            } else if hit(&text_words) {
                                1
                            } else {
                                0
                            }
                        })
                        .sum()
                };
                if score > 0 {
                    hits.push((score, server, name, description));
                }
            }
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| (a.1, a.2).cmp(&(b.1, b.2))));
        let limit = (limit as usize).clamp(1, MAX_SEARCH_LIMIT);
        Ok(Value::Array(
            hits.into_iter()
                .take(limit)
                .map(|(_, server, tool, d)| {
                    json!({"server": server, "tool": tool, "description": summary(d)})
                })
                .collect(),
        ))
    }
}

/// Lowercase words of `text` (split at anything not alphanumeric, and at
/// camelCase boundaries are not split: `list_issues` gives `list`, `issues`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The first [`SUMMARY_CHARS`] characters of `text`, on one line.
fn summary(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}
