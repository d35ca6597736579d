//! A server's manifest entry, built from what it listed: tools with safe
//! names (the rest dropped and logged), sorted and deduplicated, those its
//! tool policy refuses set aside with the reason; resources sorted; its
//! description from the config or, failing that, a clean summary of the
//! instructions it sent at initialize.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};

use super::{ResourceEntry, ServerEntry, ServerStatus, ToolEntry};
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

/// Longest description of a prompt, a prompt argument or a resource
/// template kept for the surface, in characters: as for a tool's.
const MAX_SURFACE_DESCRIPTION: usize = super::sanitize::MAX_DESCRIPTION;

/// `text` cleaned like a tool's description (instruction-like text, hidden
/// characters, length).
fn clean(text: &mut Option<String>) {
    if let Some(t) = text.as_mut() {
        *t = super::sanitize::clean_text(t, MAX_SURFACE_DESCRIPTION).text;
    }
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
        mut templates,
        mut prompts,
    } = listed;
    let (tools, resources) = (&tools[..], &resources[..]);
    for p in &mut prompts {
        clean(&mut p.description);
        for a in p.arguments.iter_mut().flatten() {
            clean(&mut a.description);
        }
    }
    prompts.sort_by(|a, b| a.name.cmp(&b.name));
    prompts.dedup_by(|a, b| a.name == b.name);
    for t in &mut templates {
        clean(&mut t.description);
    }
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
        .filter_map(|r| ResourceEntry::from_json(&r))
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
