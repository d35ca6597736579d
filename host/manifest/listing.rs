//! A server's manifest entry, built from what it listed: tools with safe
//! names (the rest dropped and logged), sorted and deduplicated, those its
//! tool policy refuses set aside with the reason; resources sorted; its
//! description from the config or, failing that, a clean summary of the
//! instructions it sent at initialize.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{Resource, Tool};

use super::{ResourceEntry, ServerEntry, ServerStatus, ToolEntry};
use crate::config::ServerConfig;

/// The entry of `config`'s server, ready, from its `tools` and `resources`
/// lists and the `instructions` it sent at initialize.
pub fn entry(
    config: &ServerConfig,
    instructions: Option<&str>,
    tools: &[Tool],
    resources: &[Resource],
) -> ServerEntry {
    let mut tools: Vec<Arc<ToolEntry>> = tools
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .filter_map(|t| {
            let entry = ToolEntry::from_json(&t);
            if entry.is_none() {
                let name = t.get("name").map(|n| n.to_string()).unwrap_or_default();
                tracing::warn!(
                    server = %config.name,
                    "ignored a tool whose name is not 1 to 128 of A-Z a-z 0-9 _ - . : {}",
                    crate::error::clip(&name.escape_debug().to_string(), 80)
                );
            }
            entry
        })
        .map(Arc::new)
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools.dedup_by(|a, b| a.name == b.name);
    let mut denied = BTreeMap::new();
    tools.retain(
        |t| match config.policy.verdict(&t.name, t.annotations.as_ref()) {
            None => true,
            Some(why) => {
                denied.insert(t.name.clone(), why);
                false
            }
        },
    );
    let mut resources: Vec<ResourceEntry> = resources
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .filter_map(|r| ResourceEntry::from_json(&r))
        .collect();
    resources.sort_by(|a, b| a.uri.cmp(&b.uri));
    let description = config.description.clone().or_else(|| {
        instructions.map(|i| {
            let clean = super::sanitize::clean_text(i, super::sanitize::MAX_DESCRIPTION);
            super::summary(&clean.text, super::SUMMARY_CHARS)
        })
    });
    let mut entry = ServerEntry::new(&config.name, description, ServerStatus::Ready);
    entry.tools = tools;
    entry.resources = resources;
    entry.denied = denied;
    entry
}
