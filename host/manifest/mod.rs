//! The manifest: what the downstream servers offer, as scripts see it through
//! `manifest.*` and the router uses it to check calls.
//!
//! A [`Manifest`] is immutable. The gateway keeps the current one behind an
//! `ArcSwap` and replaces it whole when a server connects, drops, or says its
//! tools changed; every execution takes one snapshot ([`Snapshot`]) and sees
//! exactly that state from start to end, never a torn mix.

pub mod direct;
pub mod listing;
mod metadata;
pub use quickforge_filters::sanitize;
mod search;

pub use quickforge_catalog::tool::ToolEntry;
pub use quickforge_catalog::{MAX_LISTED_RESOURCES, SUMMARY_CHARS, schema, summary};

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ForgeError};
use crate::suggest;

pub use search::{Query, search};

/// Whether a server can take calls now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    /// Its first connection attempt has not finished.
    Connecting,
    /// Connected; its tools are listed.
    Ready,
    /// Not connected; the gateway keeps retrying. Carries the last error.
    Unavailable(String),
}

impl ServerStatus {
    /// `connecting`, `ready` or `unavailable`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerStatus::Connecting => "connecting",
            ServerStatus::Ready => "ready",
            ServerStatus::Unavailable(_) => "unavailable",
        }
    }
}

/// Checks `args` against `tool`'s input schema: `INVALID_ARGUMENTS`
/// naming each offending field and what is wrong with it.
pub fn validate(tool: &ToolEntry, server: &str, args: &Value) -> Result<(), ForgeError> {
    match tool.mismatch(server, args) {
        None => Ok(()),
        Some(message) => Err(ForgeError::new(ErrorCode::InvalidArguments, message)
            .suggest(schema::suggestion(server, &tool.name))),
    }
}

/// One resource a server lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceEntry {
    /// Its URI, the argument of `forge.readResource`.
    pub uri: String,
    /// The name the server gives it, for people; the URI identifies it.
    pub name: String,
    /// What it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One server's entry.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    /// Its configured name.
    pub name: String,
    /// Its configured description, else the one it gave at initialize.
    pub description: Option<String>,
    /// Whether it takes calls now.
    pub status: ServerStatus,
    /// Its tools, sorted by name.
    pub tools: Vec<Arc<ToolEntry>>,
    /// Its resources, sorted by URI.
    pub resources: Vec<ResourceEntry>,
    /// Tools its policy refuses, by name, with the reason. They are hidden
    /// from every manifest answer; calling one is `POLICY_DENIED`.
    pub denied: std::collections::BTreeMap<String, String>,
    /// Tools its policy lets through only with the person's approval, by
    /// name, with the reason (`allow_destructive = "ask"`, `confirm`).
    pub confirm: std::collections::BTreeMap<String, String>,
    /// Its prompts, as it listed them (text cleaned, those with names that
    /// cannot be shown unchanged dropped: see [`metadata`]), for
    /// quickforge's own `prompts/list`.
    pub prompts: Vec<rmcp::model::Prompt>,
    /// Its resource templates, as it listed them (text cleaned, those with
    /// URI templates that cannot be shown unchanged dropped).
    pub templates: Vec<rmcp::model::ResourceTemplate>,
    /// Its tools listed with a hash other than the one trusted, by name
    /// (see [`crate::pins`]): shown as changed, and refused when
    /// quarantined.
    pub changed: BTreeMap<String, crate::pins::Change>,
}

impl ServerEntry {
    /// An entry with no tools yet.
    pub fn new(name: &str, description: Option<String>, status: ServerStatus) -> ServerEntry {
        ServerEntry {
            name: name.to_string(),
            description,
            status,
            tools: Vec::new(),
            resources: Vec::new(),
            denied: Default::default(),
            confirm: Default::default(),
            prompts: Vec::new(),
            templates: Vec::new(),
            changed: BTreeMap::new(),
        }
    }

    /// The tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.tools[i])
    }

    /// Its tools by category, in Forgemax's shape
    /// ([`quickforge_catalog::categories_json`]).
    pub fn categories_json(&self) -> Value {
        quickforge_catalog::categories_json(
            self.tools
                .iter()
                .map(|t| (t.name.as_str(), t.description.as_str(), &t.input_schema)),
        )
    }

    /// `TOOL_NOT_FOUND` for `tool`, with did-you-mean.
    pub fn tool_not_found(&self, tool: &str) -> ForgeError {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        let found = suggest::suggestions(tool, names.iter().copied());
        let suggestion = suggest::sentence(&found).unwrap_or_else(|| {
            format!(
                "use manifest.search(...) in search to find tools of {:?}",
                self.name
            )
        });
        let message = match &self.status {
            ServerStatus::Ready => format!("server {:?} has no tool named {tool:?}", self.name),
            other => format!(
                "server {:?} has no tool named {tool:?} (the server is {}, so its tool list may be incomplete)",
                self.name,
                other.as_str()
            ),
        };
        ForgeError::new(ErrorCode::ToolNotFound, message).suggest(suggestion)
    }
}

/// What [`Manifest::lookup_tool`] found.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// The tool, and its server's entry.
    Found(&'a Arc<ServerEntry>, &'a Arc<ToolEntry>),
    /// The server has the tool, but its tool policy hides it, for this
    /// reason.
    Denied(&'a str),
}

/// Everything the downstream servers offer, at one moment.
#[derive(Debug, Default)]
pub struct Manifest {
    servers: BTreeMap<String, Arc<ServerEntry>>,
}

impl Manifest {
    /// A manifest of `servers`.
    pub fn new(servers: impl IntoIterator<Item = ServerEntry>) -> Manifest {
        Manifest {
            servers: servers
                .into_iter()
                .map(|s| (s.name.clone(), Arc::new(s)))
                .collect(),
        }
    }

    /// This manifest with `entry` in place of the server of the same name.
    /// Other entries are shared, not copied.
    pub fn with_server(&self, entry: Arc<ServerEntry>) -> Manifest {
        let mut servers = self.servers.clone();
        servers.insert(entry.name.clone(), entry);
        Manifest { servers }
    }

    /// The entry of `name`.
    pub fn server(&self, name: &str) -> Option<&Arc<ServerEntry>> {
        self.servers.get(name)
    }

    /// Whether `server` is configured and has a tool named `tool`.
    fn has_tool(&self, server: &str, tool: &str) -> bool {
        self.servers
            .get(server)
            .is_some_and(|e| e.tool(tool).is_some())
    }

    /// Every server, by name.
    pub fn servers(&self) -> impl Iterator<Item = &Arc<ServerEntry>> {
        self.servers.values()
    }

    /// The entry of `name`, or `SERVER_NOT_FOUND` with did-you-mean, or,
    /// when no configured name is close, the configured names (the first
    /// [`suggest::MAX_LISTED`]): a model that guessed `"github"` learns
    /// what exists instead of reading the manifest first.
    pub fn require_server(&self, name: &str) -> Result<&Arc<ServerEntry>, ForgeError> {
        self.servers.get(name).ok_or_else(|| {
            let names = || self.servers.keys().map(String::as_str);
            let found = suggest::suggestions(name, names());
            let mut err = ForgeError::server_not_found(name);
            if let Some(s) = suggest::sentence(&found).or_else(|| suggest::listing(names())) {
                err = err.suggest(s);
            }
            err
        })
    }

    /// The tool `server`/`tool`, or why its policy hides it, or
    /// `SERVER_NOT_FOUND` / `TOOL_NOT_FOUND` with did-you-mean. A server
    /// name that is really `server.tool`, or a server and tool given the
    /// wrong way round, gets the call that was meant as its suggestion.
    pub fn lookup_tool(&self, server: &str, tool: &str) -> Result<Lookup<'_>, ForgeError> {
        if !self.servers.contains_key(server) {
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
        let entry = self.require_server(server)?;
        match entry.tool(tool) {
            Some(t) => Ok(Lookup::Found(entry, t)),
            None => match entry.denied.get(tool) {
                Some(why) => Ok(Lookup::Denied(why)),
                None => Err(entry.tool_not_found(tool)),
            },
        }
    }

    /// The JSON `manifest.servers` returns.
    pub fn servers_json(&self) -> Value {
        Value::Array(
            self.servers
                .values()
                .map(|s| {
                    let mut o = Map::new();
                    o.insert("name".into(), s.name.clone().into());
                    o.insert(
                        "description".into(),
                        s.description
                            .as_deref()
                            .map(|d| summary(d, SUMMARY_CHARS))
                            .unwrap_or_default()
                            .into(),
                    );
                    o.insert("status".into(), s.status.as_str().into());
                    if let ServerStatus::Unavailable(why) = &s.status {
                        o.insert("error".into(), why.clone().into());
                    }
                    o.insert("tools".into(), s.tools.len().into());
                    o.insert(
                        "resources".into(),
                        s.resources
                            .iter()
                            .take(MAX_LISTED_RESOURCES)
                            .map(|r| {
                                let mut v = json!({"uri": r.uri, "name": r.name});
                                if let Some(m) = &r.mime_type {
                                    v["mimeType"] = m.clone().into();
                                }
                                v
                            })
                            .collect::<Vec<_>>()
                            .into(),
                    );
                    if s.resources.len() > MAX_LISTED_RESOURCES {
                        o.insert(
                            "resourcesCut".into(),
                            (s.resources.len() - MAX_LISTED_RESOURCES).into(),
                        );
                    }
                    // Templates: a script fills one in and reads the URI
                    // with forge.readResource(server, uri).
                    o.insert(
                        "templates".into(),
                        s.templates
                            .iter()
                            .take(MAX_LISTED_RESOURCES)
                            .map(|t| json!({"uriTemplate": t.uri_template, "name": t.name}))
                            .collect::<Vec<_>>()
                            .into(),
                    );
                    o.insert("categories".into(), s.categories_json());
                    Value::Object(o)
                })
                .collect(),
        )
    }
}

/// Read-only access to the manifest of downstream servers and tools, as
/// `manifest.*` reads it. The gateway's [`Snapshot`] implements it; tests
/// implement it in-process.
pub trait ManifestView: Send + Sync + 'static {
    /// One JSON object per server.
    fn servers(&self) -> Value;
    /// The best `limit` matches for `query` among the servers `visible`
    /// lets through, as a JSON array. Runs off the async workers: it is the
    /// one read whose work grows with the manifest.
    fn search(&self, query: &Query, limit: usize, visible: &dyn Fn(&str) -> bool) -> Value;
    /// The full description of one tool.
    fn tool(&self, server: &str, name: &str) -> Result<Value, ForgeError>;
}

/// One execution's view of the manifest: a snapshot taken when it started.
#[derive(Debug, Clone)]
pub struct Snapshot(pub Arc<Manifest>);

impl ManifestView for Snapshot {
    fn servers(&self) -> Value {
        self.0.servers_json()
    }

    fn search(&self, query: &Query, limit: usize, visible: &dyn Fn(&str) -> bool) -> Value {
        search(&self.0, query, limit, visible)
    }

    fn tool(&self, server: &str, name: &str) -> Result<Value, ForgeError> {
        match self.0.lookup_tool(server, name)? {
            Lookup::Found(entry, tool) => {
                let mut described = tool.describe(server);
                if let Some(change) = entry.changed.get(name) {
                    described["changed"] = change.shown();
                    let mut warning = described["warning"]
                        .as_str()
                        .map_or_else(String::new, |w| format!("{w}; "));
                    warning.push_str(&change.sentence());
                    if change.quarantined {
                        warning
                            .push_str("; calls are refused until a person runs `quickforge trust`");
                    }
                    described["warning"] = warning.into();
                }
                Ok(described)
            }
            Lookup::Denied(why) => Err(crate::policy::denied(&format!("{server}.{name}"), why)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Manifest {
        let tool = |v: Value| ToolEntry::from_json(&v).unwrap();
        let mut gh = ServerEntry::new(
            "github",
            Some("GitHub: issues, PRs, code".into()),
            ServerStatus::Ready,
        );
        gh.tools = vec![
            Arc::new(tool(
                json!({"name": "issues.create", "description": "Create an issue in a repository", "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}, "title": {"type": "string"}}, "required": ["repo", "title"]}}),
            )),
            Arc::new(tool(
                json!({"name": "issues.list", "description": "List issues of a repository"}),
            )),
            Arc::new(tool(
                json!({"name": "search_code", "description": "Search code across repositories"}),
            )),
        ];
        let mut mem = ServerEntry::new("memory", None, ServerStatus::Unavailable("exited".into()));
        mem.tools = vec![Arc::new(tool(
            json!({"name": "create_entities", "description": "Create entities in the knowledge graph"}),
        ))];
        Manifest::new([gh, mem])
    }

    #[test]
    fn servers_json_has_counts_categories_and_status() {
        let m = sample();
        let v = m.servers_json();
        assert_eq!(v[0]["name"], "github");
        assert_eq!(v[0]["tools"], 3);
        let cats = &v[0]["categories"];
        assert_eq!(cats["issues"]["tools"][0]["name"], "create");
        assert_eq!(cats["issues"]["tools"][1]["name"], "list");
        assert_eq!(
            cats["issues"]["tools"][0]["input_schema"]["required"],
            json!(["repo", "title"])
        );
        assert_eq!(cats["general"]["tools"][0]["name"], "search_code");
        assert_eq!(cats["general"]["name"], "general");
        assert_eq!(v[1]["status"], "unavailable");
        assert_eq!(v[1]["error"], "exited");
    }

    #[test]
    fn lookups_suggest_near_names() {
        let m = sample();
        let e = m.lookup_tool("githib", "x").unwrap_err();
        assert_eq!(e.code, "SERVER_NOT_FOUND");
        assert!(e.suggestion.unwrap().contains("\"github\""));
        let e = m.lookup_tool("github", "issues.creat").unwrap_err();
        assert_eq!(e.code, "TOOL_NOT_FOUND");
        assert!(e.suggestion.unwrap().contains("\"issues.create\""));
    }

    #[test]
    fn validation_names_the_field() {
        let m = sample();
        let Ok(Lookup::Found(_, t)) = m.lookup_tool("github", "issues.create") else {
            panic!("issues.create is in the sample")
        };
        assert!(validate(t, "github", &json!({"repo": "a", "title": "b"})).is_ok());
        let e = validate(t, "github", &json!({"repo": 5})).unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENTS");
        assert!(e.message.contains("field repo"), "{}", e.message);
        assert!(e.message.contains("title"), "{}", e.message);
    }

    #[test]
    fn summary_cuts_at_a_word() {
        assert_eq!(summary("one\ntwo", 10), "one");
        let s = summary("alpha beta gamma delta epsilon", 14);
        assert_eq!(s, "alpha beta…");
    }
}
