//! quickforge's catalog of downstream tools as scripts read it, kept free of
//! the gateway (no rmcp, no Wasmtime, no async) so that the native gateway
//! and the edge provider (`edge/provider`, `wasm32-wasip2`) compile the same
//! code and answer `manifest.*` alike:
//!
//! - [`tool`] — a tool's `tools/list` entry cleaned, and `manifest.tool`;
//! - [`search`] — the ranking of `manifest.search`;
//! - [`schema`] — the argument check against a tool's input schema;
//! - [`typescript`] — the TypeScript signature `manifest.tool` shows;
//! - [`suggest`] — did-you-mean for server and tool names;
//! - [`categories_json`] and [`summary`] — the shapes `manifest.servers`
//!   is made of.
//!
//! Errors are plain messages here; each gateway wraps them in its own
//! `ForgeError` with the same code and suggestion.

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub mod schema;
pub mod search;
pub mod suggest;
pub mod tool;
pub mod typescript;

/// Longest one-line description in `manifest.search` results and
/// `manifest.servers`, in characters: enough to tell tools apart, short enough
/// that 20 results stay a few hundred tokens.
pub const SUMMARY_CHARS: usize = 160;

/// Most resources listed per server in `manifest.servers`; the rest are
/// counted in `resourcesCut`. Servers with thousands of resources (a file
/// tree) would otherwise make one property read cost a context's worth.
pub const MAX_LISTED_RESOURCES: usize = 50;

/// Forgemax's category of the tools whose names have no `.`.
pub const GENERAL_CATEGORY: &str = "general";

/// The first line of `text`, at most `max` characters, cut at a word.
pub fn summary(text: &str, max: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let cut: String = line.chars().take(max).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => &cut,
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// The category of a tool named `name`: the part before its first `.`, if
/// any and not empty.
pub fn category(name: &str) -> Option<&str> {
    name.split_once('.')
        .map(|(c, _)| c)
        .filter(|c| !c.is_empty())
}

/// `tools` (name, description, input schema) by category, in Forgemax's
/// shape: an object keyed by category (see [`category`]; tools without one
/// are in [`GENERAL_CATEGORY`]), each `{name, description, tools}`, each
/// tool `{name, description, input_schema}` with its name inside the
/// category (`issues.create` is `create` in `issues`).
pub fn categories_json<'a>(
    tools: impl IntoIterator<Item = (&'a str, &'a str, &'a Value)>,
) -> Value {
    let mut cats: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (tool, description, input_schema) in tools {
        let (cat, name) = match category(tool) {
            Some(cat) => (cat, &tool[cat.len() + 1..]),
            None => (GENERAL_CATEGORY, tool),
        };
        cats.entry(cat).or_default().push(json!({
            "name": name,
            "description": description,
            "input_schema": input_schema,
        }));
    }
    Value::Object(
        cats.into_iter()
            .map(|(cat, tools)| {
                let entry =
                    json!({"name": cat, "description": format!("{cat} tools"), "tools": tools});
                (cat.to_string(), entry)
            })
            .collect(),
    )
}
