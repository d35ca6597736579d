//! Token economics: what quickforge's surface costs a model's context on
//! every turn (its `tools/list` result plus the initialize instructions),
//! against listing every downstream tool directly, counted with a real
//! tokenizer (tiktoken's `o200k_base`).
//!
//! Besides the configured servers, the comparison runs on synthetic sets of
//! 10, 76, 150 and 267 tools shaped like real MCP tools (a two-sentence
//! description and four to eight described parameters, enums and arrays
//! among them), so the figures are reproducible anywhere.

use serde::Serialize;
use serde_json::{Value, json};

use crate::manifest::Manifest;

/// The synthetic set sizes: a small server, Forgemax's 76-tool benchmark,
/// a mid-size setup, and the 267-tool setup that costs ~110k tokens.
pub const SYNTHETIC_SIZES: &[usize] = &[10, 76, 150, 267];

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What was measured.
    pub setup: String,
    /// Downstream tools in it.
    pub tools: usize,
    /// Tokens of listing every tool directly.
    pub direct_tokens: usize,
    /// Tokens of quickforge's tools/list plus instructions.
    pub quickforge_tokens: usize,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// Tokens of quickforge's `tools/list` result alone.
    pub tools_list_tokens: usize,
    /// Tokens of its initialize `instructions` alone.
    pub instructions_tokens: usize,
    /// Tools the configured servers list directly (`expose`).
    pub direct_tools: usize,
    /// Tokens those direct tools add to `tools/list` (counted in
    /// `tools_list_tokens` and every row's `quickforge_tokens`).
    pub direct_tokens: usize,
    /// One row per setup.
    pub rows: Vec<Row>,
}

/// Counts `text`'s tokens with o200k_base.
pub fn count(text: &str) -> Result<usize, String> {
    static BPE: std::sync::OnceLock<Result<tiktoken_rs::CoreBPE, String>> =
        std::sync::OnceLock::new();
    let bpe = BPE
        .get_or_init(|| {
            tiktoken_rs::o200k_base().map_err(|e| format!("could not load o200k_base: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)?;
    Ok(bpe.encode_with_special_tokens(text).len())
}

/// The tools of `manifest` as their servers list them (name, description,
/// schemas, annotations), names prefixed by server as a flat gateway would.
pub fn downstream_tools(manifest: &Manifest) -> Vec<Value> {
    manifest
        .servers()
        .flat_map(|s| {
            s.tools
                .iter()
                .map(move |t| t.listed_as(&format!("{}__{}", s.name, t.name)))
        })
        .collect()
}

/// The tokens of a `tools/list` result holding `tools`.
fn list_tokens(tools: &[Value]) -> Result<usize, String> {
    count(&json!({"tools": tools}).to_string())
}

/// The comparison for the configured tools (if any) and the synthetic sets,
/// with quickforge's two tools listed as `surface` says, and the `direct`
/// tools the configuration exposes beside them.
pub fn table(
    configured: Option<Vec<Value>>,
    direct: &[rmcp::model::Tool],
    surface: &crate::config::Surface,
) -> Result<Table, String> {
    let as_json = |t: &rmcp::model::Tool| serde_json::to_value(t).unwrap_or(Value::Null);
    let mut ours: Vec<Value> = crate::server::tools(surface).iter().map(as_json).collect();
    let two = list_tokens(&ours)?;
    ours.extend(direct.iter().map(as_json));
    let tools_list_tokens = list_tokens(&ours)?;
    let instructions_tokens = count(&crate::server::instructions())?;
    let quickforge_tokens = tools_list_tokens + instructions_tokens;
    let mut rows = Vec::new();
    if let Some(tools) = configured {
        rows.push(Row {
            setup: "configured servers".into(),
            tools: tools.len(),
            direct_tokens: list_tokens(&tools)?,
            quickforge_tokens,
        });
    }
    for &n in SYNTHETIC_SIZES {
        rows.push(Row {
            setup: format!("synthetic {n}"),
            tools: n,
            direct_tokens: list_tokens(&synthetic(n))?,
            quickforge_tokens,
        });
    }
    Ok(Table {
        tools_list_tokens,
        instructions_tokens,
        direct_tools: direct.len(),
        direct_tokens: tools_list_tokens - two,
        rows,
    })
}

/// The table as markdown.
pub fn markdown(t: &Table) -> String {
    let direct = if t.direct_tools > 0 {
        format!(
            "; the {} direct tools (expose) add {} of them",
            t.direct_tools, t.direct_tokens
        )
    } else {
        String::new()
    };
    let mut s = format!(
        "quickforge surface: {} tokens (tools/list {} + instructions {}){direct}, o200k_base\n\n| setup | tools | every tool listed | quickforge | ratio |\n|---|---:|---:|---:|---:|\n",
        t.tools_list_tokens + t.instructions_tokens,
        t.tools_list_tokens,
        t.instructions_tokens
    );
    for r in &t.rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.1}x |\n",
            r.setup,
            r.tools,
            r.direct_tokens,
            r.quickforge_tokens,
            r.direct_tokens as f64 / r.quickforge_tokens.max(1) as f64
        ));
    }
    s
}

const SERVICES: &[(&str, &str)] = &[
    ("github", "repository"),
    ("linear", "issue"),
    ("slack", "channel"),
    ("notion", "page"),
    ("stripe", "invoice"),
    ("sentry", "incident"),
    ("jira", "ticket"),
    ("postgres", "table"),
    ("figma", "file"),
    ("datadog", "monitor"),
    ("zendesk", "ticket"),
    ("hubspot", "contact"),
];
const VERBS: &[(&str, &str)] = &[
    (
        "list",
        "Lists {n}s visible to the authenticated user, newest first, with pagination.",
    ),
    (
        "get",
        "Fetches one {n} by its id, including metadata, owners and timestamps.",
    ),
    (
        "create",
        "Creates a new {n} with the given fields and returns it with its assigned id.",
    ),
    (
        "update",
        "Updates fields of an existing {n}; fields not given are left unchanged.",
    ),
    (
        "delete",
        "Permanently deletes a {n}. This cannot be undone; prefer archive when unsure.",
    ),
    (
        "search",
        "Searches {n}s with a full-text query and optional filters, ranked by relevance.",
    ),
    (
        "archive",
        "Archives a {n} so it no longer appears in default listings but can be restored.",
    ),
    (
        "comment",
        "Adds a comment to a {n}, optionally mentioning users, and returns the comment.",
    ),
];

/// `n` synthetic tools shaped like real ones.
pub fn synthetic(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let (service, noun) = SERVICES[i % SERVICES.len()];
            let (verb, what) = VERBS[(i / SERVICES.len()) % VERBS.len()];
            let mut props = serde_json::Map::new();
            props.insert("workspace".into(), json!({"type": "string", "description": format!("The {service} workspace or organization slug, e.g. \"acme\".")}));
            props.insert(format!("{noun}_id"), json!({"type": "string", "description": format!("Identifier of the {noun}, as returned by list_{noun}s or search_{noun}s.")}));
            props.insert("fields".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Fields to include in the response; all fields when omitted."}));
            if i % 2 == 0 {
                props.insert("limit".into(), json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 25, "description": "Maximum number of results per page."}));
                props.insert("cursor".into(), json!({"type": "string", "description": "Opaque pagination cursor from a previous response."}));
            }
            if i % 3 == 0 {
                props.insert("state".into(), json!({"type": "string", "enum": ["open", "closed", "archived", "all"], "description": format!("Only {noun}s in this state.")}));
            }
            if i % 4 == 0 {
                props.insert("labels".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Labels to filter by or to apply."}));
                props.insert("assignee".into(), json!({"type": "string", "description": "Username or email of the person responsible."}));
            }
            json!({
                "name": format!("{service}_{verb}_{noun}_{i}"),
                "description": format!("{} Requires a {service} token with access to the workspace; returns an error naming the missing scope otherwise.", what.replace("{n}", noun)),
                "inputSchema": {"type": "object", "properties": props, "required": ["workspace"]},
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quickforge_costs_the_same_whatever_the_tool_count() {
        let t = table(None, &[], &crate::config::Surface::default()).unwrap();
        let ours: Vec<usize> = t.rows.iter().map(|r| r.quickforge_tokens).collect();
        assert!(ours.windows(2).all(|w| w[0] == w[1]), "{ours:?}");
        let direct: Vec<usize> = t.rows.iter().map(|r| r.direct_tokens).collect();
        assert!(direct.windows(2).all(|w| w[0] < w[1]), "{direct:?}");
        assert!(t.rows.last().unwrap().direct_tokens > 20 * ours[0], "{t:?}");
    }

    #[test]
    fn synthetic_tools_are_distinct_and_well_formed() {
        let tools = synthetic(267);
        let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 267);
        assert!(
            tools
                .iter()
                .all(|t| t["inputSchema"]["required"] == json!(["workspace"]))
        );
    }
}
