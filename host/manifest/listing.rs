//! A server's manifest entry, built from what it listed: tools with safe
//! names (the rest dropped and logged), sorted and deduplicated, those its
//! tool policy refuses set aside with the reason; prompts, resources and
//! templates cleaned or dropped as [`super::metadata`] says, resources
//! sorted; its
//! description from the config or, failing that, a clean summary of the
//! instructions it sent at initialize.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};

use super::{ResourceEntry, ServerEntry, ServerStatus, ToolEntry, metadata};
use crate::policy::Verdict;

/// What a server listed.
#[derive(Default)]
pub struct Listed {
    /// `tools/list`.
    pub tools: Vec<Tool>,
    /// `resources/list`.
    pub resources: Vec<Resource>,
    /// `resources/templates/list`.
    pub templates: Vec<ResourceTemplate>,
    /// `prompts/list`.
    pub prompts: Vec<Prompt>,
}

/// Who a listing is from: the server's name, the description forge.toml
/// gives it, and the policy its tools pass.
pub struct Source<'a> {
    /// The server's name.
    pub name: &'a str,
    /// `[servers.NAME] description`, which wins over its instructions.
    pub description: Option<&'a str>,
    /// Which of its tools are listed, and which ask first.
    pub policy: &'a crate::policy::ToolPolicy,
}

/// The entry of `config`'s server, ready, from what it `listed` and the
/// `instructions` it sent at initialize.
pub fn entry(config: Source<'_>, instructions: Option<&str>, listed: Listed) -> ServerEntry {
    let Listed {
        tools,
        resources,
        templates,
        prompts,
    } = listed;
    let (tools, resources) = (&tools[..], &resources[..]);
    let mut prompts: Vec<Prompt> = prompts
        .into_iter()
        .filter_map(|p| metadata::prompt(config.name, p))
        .collect();
    prompts.sort_by(|a, b| a.name.cmp(&b.name));
    prompts.dedup_by(|a, b| a.name == b.name);
    let templates: Vec<ResourceTemplate> = templates
        .into_iter()
        .filter_map(|t| metadata::template(config.name, t))
        .collect();
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
    let mut confirm = BTreeMap::new();
    tools.retain(
        |t| match config.policy.verdict(&t.name, t.annotations.as_ref()) {
            Verdict::Allow => true,
            Verdict::Ask(why) => {
                confirm.insert(t.name.clone(), why);
                true
            }
            Verdict::Deny(why) => {
                denied.insert(t.name.clone(), why);
                false
            }
        },
    );
    let mut resources: Vec<ResourceEntry> = resources
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .filter_map(|r| metadata::resource(config.name, &r))
        .collect();
    resources.sort_by(|a, b| a.uri.cmp(&b.uri));
    let description = config.description.map(str::to_owned).or_else(|| {
        instructions.map(|i| {
            let clean = super::sanitize::clean_text(i, super::sanitize::MAX_DESCRIPTION);
            super::summary(&clean.text, super::SUMMARY_CHARS)
        })
    });
    let mut entry = ServerEntry::new(config.name, description, ServerStatus::Ready);
    entry.tools = tools;
    entry.resources = resources;
    entry.denied = denied;
    entry.confirm = confirm;
    entry.prompts = prompts;
    entry.templates = templates;
    entry
}
