//! The manifest at the edge: the snapshot `quickforge manifest --json`
//! printed at deploy time (or its refresh, `refresh.rs`), answered as the
//! native `manifest.*` answers: the same ranking, summaries, categories and
//! did-you-mean, compiled from `quickforge-catalog`, the crate the native
//! manifest uses.

use quickforge_catalog::search::{Candidate, Query, QueryError, ToolWords};
use quickforge_catalog::{MAX_LISTED_RESOURCES, SUMMARY_CHARS, suggest, summary};
use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ForgeError};

/// The snapshot, by server.
pub struct Catalog<'a> {
    servers: &'a [Value],
}

/// The string at `key` of `v`, or `""`.
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
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

    fn find(&self, name: &str) -> Option<&'a Value> {
        self.servers.iter().find(|s| text(s, "name") == name)
    }

    fn has_tool(&self, server: &str, tool: &str) -> bool {
        self.find(server)
            .is_some_and(|s| Self::tools(s).iter().any(|t| text(t, "name") == tool))
    }

    /// The snapshot's entry for `name`, or `SERVER_NOT_FOUND` with a
    /// did-you-mean, as the native `require_server`.
    pub fn server(&self, name: &str) -> Result<&'a Value, ForgeError> {
        self.find(name).ok_or_else(|| {
            let found = suggest::suggestions(name, self.names());
            let err = ForgeError::server_not_found(name);
            match suggest::sentence(&found).or_else(|| suggest::listing(self.names())) {
                Some(s) => err.suggest(s),
                None => err,
            }
        })
    }

    /// The tool's description object (`manifest.tool`), or, as the native
    /// `lookup_tool`: `SERVER_NOT_FOUND` (suggesting the call that was meant
    /// when the names are `server.tool` or swapped), `POLICY_DENIED` for a
    /// tool the deploy-time policy refused, `TOOL_NOT_FOUND` with a
    /// did-you-mean.
    pub fn tool(&self, server: &str, tool: &str) -> Result<&'a Value, ForgeError> {
        if self.find(server).is_none() {
            let meant = match server.split_once('.') {
                Some((s, t)) if self.has_tool(s, t) => Some((s, t)),
                _ if self.has_tool(tool, server) => Some((tool, server)),
                _ => None,
            };
            if let Some((s, t)) = meant {
                return Err(ForgeError::server_not_found(server)
                    .suggest(format!("did you mean forge.callTool({s:?}, {t:?}, args)?")));
            }
        }
        let entry = self.server(server)?;
        let tools = Self::tools(entry);
        if let Some(t) = tools.iter().find(|t| text(t, "name") == tool) {
            return Ok(t);
        }
        if let Some(why) = entry.pointer("/denied").and_then(|d| d.get(tool)) {
            return Err(ForgeError::new(
                ErrorCode::PolicyDenied,
                format!(
                    "calling {server}.{tool} is not allowed: {}",
                    why.as_str().unwrap_or("")
                ),
            )
            .suggest("the gateway's configuration refuses this tool; do the task another way or ask the user to allow it"));
        }
        let found = suggest::suggestions(tool, tools.iter().map(|t| text(t, "name")));
        let suggestion = suggest::sentence(&found).unwrap_or_else(|| {
            format!("use manifest.search(...) in search to find tools of {server:?}")
        });
        let message = match text(entry, "status") {
            "ready" | "" => format!("server {server:?} has no tool named {tool:?}"),
            status => format!(
                "server {server:?} has no tool named {tool:?} (the server is {status}, so its tool list may be incomplete)"
            ),
        };
        Err(ForgeError::new(ErrorCode::ToolNotFound, message).suggest(suggestion))
    }

    /// `manifest.servers`, in the native `Manifest::servers_json` shape and
    /// key order.
    pub fn servers_json(&self) -> Value {
        let listed = |items: &[Value], shape: &dyn Fn(&Value) -> Value| -> Value {
            items
                .iter()
                .take(MAX_LISTED_RESOURCES)
                .map(shape)
                .collect::<Vec<_>>()
                .into()
        };
        let array = |s: &'a Value, key: &str| -> &'a [Value] {
            s.get(key)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        let mut servers: Vec<&Value> = self.servers.iter().collect();
        servers.sort_by_key(|s| text(s, "name"));
        Value::Array(
            servers
                .into_iter()
                .map(|s| {
                    let mut o = Map::new();
                    o.insert("name".into(), text(s, "name").into());
                    o.insert(
                        "description".into(),
                        summary(text(s, "description"), SUMMARY_CHARS).into(),
                    );
                    let status = match text(s, "status") {
                        "" => "ready",
                        other => other,
                    };
                    o.insert("status".into(), status.into());
                    if status == "unavailable" {
                        o.insert("error".into(), text(s, "error").into());
                    }
                    o.insert("tools".into(), Self::tools(s).len().into());
                    let resources = array(s, "resources");
                    o.insert(
                        "resources".into(),
                        listed(resources, &|r| {
                            let mut v = json!({"uri": text(r, "uri"), "name": text(r, "name")});
                            if let Some(m) = r.get("mimeType").filter(|m| m.is_string()) {
                                v["mimeType"] = m.clone();
                            }
                            v
                        }),
                    );
                    if resources.len() > MAX_LISTED_RESOURCES {
                        o.insert(
                            "resourcesCut".into(),
                            (resources.len() - MAX_LISTED_RESOURCES).into(),
                        );
                    }
                    o.insert(
                        "templates".into(),
                        listed(array(s, "templates"), &|t| {
                            json!({"uriTemplate": text(t, "uriTemplate"), "name": text(t, "name")})
                        }),
                    );
                    let empty = json!({});
                    o.insert(
                        "categories".into(),
                        quickforge_catalog::categories_json(Self::tools(s).iter().map(|t| {
                            (
                                text(t, "name"),
                                text(t, "description"),
                                t.get("inputSchema").unwrap_or(&empty),
                            )
                        })),
                    );
                    Value::Object(o)
                })
                .collect(),
        )
    }

    /// `manifest.search`, ranked by the native ranking.
    pub fn search(&self, query: &str, limit: u32) -> Result<Value, ForgeError> {
        let query = Query::parse(query).map_err(|QueryError(message)| {
            ForgeError::new(ErrorCode::InvalidArgument, message).suggest(QueryError::SUGGESTION)
        })?;
        let mut servers: Vec<&Value> = self.servers.iter().collect();
        servers.sort_by_key(|s| text(s, "name"));
        // A tool's words are split once per search: a request searches once
        // or twice, so there is nothing to keep them for.
        let words: Vec<Vec<ToolWords>> = servers
            .iter()
            .map(|s| {
                Self::tools(s)
                    .iter()
                    .map(|_| ToolWords::default())
                    .collect()
            })
            .collect();
        let view = servers.iter().zip(&words).map(|(s, words)| {
            let tools = Self::tools(s).iter().zip(words).map(|(t, w)| {
                let (name, description) = (text(t, "name"), text(t, "description"));
                let title = t.get("title").and_then(Value::as_str);
                Candidate {
                    name,
                    description,
                    words: w.get(name, title, description),
                }
            });
            (text(s, "name"), tools)
        });
        Ok(quickforge_catalog::search::search(
            &query,
            limit as usize,
            view,
        ))
    }
}
