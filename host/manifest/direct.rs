//! Direct tools: downstream tools a server's `expose` setting also lists on
//! quickforge's own `tools/list`, under a namespaced name, beside `search`
//! and `execute`. Small, often-used tools are cheaper called directly than
//! through a script, and some clients do code mode themselves.
//!
//! A direct tool is listed as its server lists it (title, the cleaned
//! description, schemas, annotations), named `SERVER__tool`. MCP allows
//! tool names up to 128 characters with `.`, but the model APIs behind most
//! clients accept only `^[a-zA-Z0-9_-]{1,64}$`, so a name outside that shape
//! is made to fit: other characters become `_`, a long name is cut, and
//! either change adds a short hash of the real pair, so two tools never
//! share a name and the name stays the same from one start to the next.
//! A direct name always holds `__`, so it is never `search` or `execute`.
//! Calling one goes through the same pipeline as a script's call (see
//! `crate::server::direct`).

use std::collections::BTreeMap;

use rmcp::model::Tool;
use sha2::{Digest, Sha256};

use super::Manifest;
use crate::policy::Expose;

/// Longest direct tool name: the limit of the model APIs most clients call
/// (Anthropic's and OpenAI's tool names are `^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_DIRECT_NAME: usize = 64;

/// Hex digits of the hash a reshaped name ends with: 32 bits, so that
/// two tools of one gateway sharing a reshaped name is a one-in-billions
/// event (and is caught: the second is left out with a warning).
const HASH_HEX: usize = 8;

/// One direct tool.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectTool {
    /// The server it belongs to.
    pub server: String,
    /// Its name on that server.
    pub tool: String,
    /// How quickforge lists it.
    pub listed: Tool,
}

/// Every direct tool of one manifest, by listed name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirectTools(BTreeMap<String, DirectTool>);

impl DirectTools {
    /// The tools of `manifest` that `expose` (given a server's name) lists
    /// directly. Tools its policy denies are not in the manifest, so they
    /// are never listed.
    pub fn of<'a>(manifest: &Manifest, expose: impl Fn(&str) -> Option<&'a Expose>) -> Self {
        let mut tools = BTreeMap::new();
        for server in manifest.servers() {
            let Some(expose) = expose(&server.name).filter(|e| !e.is_none()) else {
                continue;
            };
            for t in server.tools.iter().filter(|t| expose.matches(&t.name)) {
                let name = direct_name(&server.name, &t.name);
                let mut v = t.listed_as(&name);
                if let Some(title) = &t.title {
                    v["title"] = title.clone().into();
                }
                let listed = match serde_json::from_value::<Tool>(v) {
                    Ok(listed) => listed,
                    Err(e) => {
                        tracing::warn!(server = %server.name, tool = %t.name, "not listing the tool directly: {e}");
                        continue;
                    }
                };
                if tools.contains_key(&name) {
                    tracing::warn!(server = %server.name, tool = %t.name, name = %name, "not listing the tool directly: another tool has the same direct name");
                    continue;
                }
                tools.insert(
                    name,
                    DirectTool {
                        server: server.name.clone(),
                        tool: t.name.clone(),
                        listed,
                    },
                );
            }
        }
        DirectTools(tools)
    }

    /// The direct tool listed as `name`.
    pub fn get(&self, name: &str) -> Option<&DirectTool> {
        self.0.get(name)
    }

    /// The tools as `tools/list` shows them, sorted by name.
    pub fn listed(&self) -> impl Iterator<Item = &Tool> {
        self.0.values().map(|t| &t.listed)
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The listed name of `server`'s `tool`: `server__tool` when that fits
/// `^[a-zA-Z0-9_-]{1,64}$`, else reshaped to fit (see the module docs).
pub fn direct_name(server: &str, tool: &str) -> String {
    let plain = format!("{server}__{tool}");
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if plain.len() <= MAX_DIRECT_NAME && plain.chars().all(fits) {
        return plain;
    }
    let shaped: String = plain
        .chars()
        .map(|c| if fits(c) { c } else { '_' })
        .take(MAX_DIRECT_NAME - HASH_HEX - 1)
        .collect();
    let hash = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hex: String = hash
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(HASH_HEX)
        .map(|n| char::from_digit(u32::from(n), 16).unwrap_or('0'))
        .collect();
    format!("{shaped}_{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names that already fit stay as they are; others are reshaped into
    /// the model APIs' shape, distinct, and the same every time.
    #[test]
    fn names_fit_the_model_apis() {
        assert_eq!(direct_name("everything", "echo"), "everything__echo");
        let dotted = direct_name("gh", "issues.list");
        let underscored = direct_name("gh", "issues_list");
        assert_ne!(dotted, underscored);
        assert_eq!(dotted, direct_name("gh", "issues.list"));
        let long = direct_name("server", &"t".repeat(120));
        for name in [&dotted, &long] {
            assert!(name.len() <= MAX_DIRECT_NAME, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
        assert_ne!(long, direct_name("server", &"t".repeat(121)));
    }
}
