//! Tool integrity pinning: what each downstream tool looked like when it was
//! first seen or last trusted, and which tools have changed since.
//!
//! A server can change a tool after the person started relying on it (a
//! "rug pull": a description rewritten to steer the model, a schema that
//! now takes a path it did not, `destructiveHint` flipped to `false`). Each
//! tool's hash ([`quickforge_filters::integrity`], RFC 8785 + SHA-256 of the
//! tool as the server sent it) is recorded the first time the gateway sees
//! it (trust on first use). When a later listing shows another hash the
//! tool is *changed*: the manifest lists it so (`manifest.tool`,
//! `manifest.search`, `quickforge doctor`), the audit log and the
//! `quickforge_tools_changed` metric record it, and with
//! `[servers.NAME] on_tool_change = "quarantine"` calls to it are refused.
//! It stays changed until `quickforge trust SERVER [TOOL]` accepts the
//! version last seen that differed (or the server lists the trusted one
//! again).
//!
//! The records live in the state store: `pins.json` in the state directory
//! for one gateway (several on one machine share it, under a file lock),
//! Redis with `[state] backend = "redis"` so every replica agrees on what
//! was trusted. See [`store`].

pub mod store;

use std::collections::BTreeMap;

use quickforge_filters::integrity::ToolHash;
use serde::{Deserialize, Serialize};

pub use store::Pins;

/// `[servers.NAME] on_tool_change`: what a changed tool may still do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnToolChange {
    /// Listed as changed, with a warning to the model and to the person
    /// (doctor, audit log, metric), and still callable. The default: first
    /// sight is trust on first use, servers started with `npx -y` or `uvx`
    /// update themselves at every restart and reword their tools often, and
    /// a Forgemax config (which has no such key) must keep working; the
    /// sanitizer still neutralises instruction-like text in any version.
    #[default]
    Warn,
    /// Listed as changed, and every call refused until a person runs
    /// `quickforge trust`: for servers whose tools can do harm.
    Quarantine,
}

/// One tool's record: the version trusted (first seen, or accepted by
/// `quickforge trust`) and, when a different one has been listed since,
/// that one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The trusted version's hash (`sha256:` + 64 hex digits).
    pub hash: String,
    /// Its fields' own hashes, to name what a change touched.
    pub fields: BTreeMap<String, String>,
    /// When it was first seen or trusted, RFC 3339 UTC.
    pub since: String,
    /// The last version listed that differs from the trusted one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Seen>,
}

/// A version of a tool listed after the trusted one and different from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// Its hash.
    pub hash: String,
    /// Its fields' own hashes.
    pub fields: BTreeMap<String, String>,
    /// When it was first listed, RFC 3339 UTC.
    pub at: String,
}

/// A tool listed with a hash other than the trusted one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The trusted version's hash.
    pub trusted: String,
    /// The listed version's hash.
    pub now: String,
    /// The pinned fields that differ, in the order of
    /// [`quickforge_filters::integrity::PINNED_FIELDS`].
    pub fields: Vec<&'static str>,
    /// When the listed version was first seen.
    pub since: String,
    /// Whether calls to it are refused (`on_tool_change = "quarantine"`).
    pub quarantined: bool,
}

impl Change {
    /// What changed, for a model or a person: `description and annotations
    /// changed since it was trusted (sha256:1f2e… → sha256:9a8b…, first
    /// seen 2026-11-28T19:00:00Z)`.
    pub fn sentence(&self) -> String {
        let fields = match self.fields.as_slice() {
            [] => "its metadata".to_string(),
            [one] => (*one).to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        };
        format!(
            "{fields} changed since it was trusted ({} → {}, first seen {})",
            short(&self.trusted),
            short(&self.now),
            self.since
        )
    }

    /// What `manifest.tool` shows under `changed`: the fields that
    /// changed, the trusted hash (the tool's `hash` is the listed one),
    /// since when, and whether calls are refused.
    pub fn shown(&self) -> serde_json::Value {
        serde_json::json!({
            "fields": self.fields,
            "trusted": self.trusted,
            "since": self.since,
            "quarantined": self.quarantined,
        })
    }

    /// Why a call is refused, when it is: the sentence and what ends it.
    pub fn refusal(&self, server: &str, tool: &str) -> String {
        format!(
            "its {}; servers.{server}.on_tool_change = \"quarantine\" holds it until a person reviews the change and runs `quickforge trust {server} {tool}`",
            self.sentence()
        )
    }
}

/// `sha256:` and the first 12 hex digits: enough to tell two versions
/// apart when reading, not a hash to compare by.
fn short(hash: &str) -> String {
    let end = hash.len().min("sha256:".len() + 12);
    format!("{}…", &hash[..end])
}

/// The time now, as records keep it.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `pin` after `hash` was listed: the record to keep, and the change when
/// the listed version is not the trusted one.
fn observed(pin: Option<&Pin>, hash: &ToolHash, at: &str) -> (Pin, Option<Change>) {
    let Some(pin) = pin else {
        return (
            Pin {
                hash: hash.whole.clone(),
                fields: hash.fields.clone(),
                since: at.to_string(),
                seen: None,
            },
            None,
        );
    };
    if pin.hash == hash.whole {
        // The trusted version. A changed one seen elsewhere is kept: a
        // doctor's fresh server process, or a replica not yet updated,
        // listing the old version must not take from the person the change
        // another gateway reported and they are about to trust.
        return (pin.clone(), None);
    }
    let seen = match &pin.seen {
        Some(s) if s.hash == hash.whole => s.clone(),
        _ => Seen {
            hash: hash.whole.clone(),
            fields: hash.fields.clone(),
            at: at.to_string(),
        },
    };
    let change = Change {
        trusted: pin.hash.clone(),
        now: hash.whole.clone(),
        fields: hash.changed_fields(&pin.fields),
        since: seen.at.clone(),
        quarantined: false,
    };
    (
        Pin {
            seen: Some(seen),
            ..pin.clone()
        },
        Some(change),
    )
}

/// What `quickforge trust` accepted for one tool: the hash it had and the
/// one it has now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trusted {
    /// The tool's name.
    pub tool: String,
    /// The hash trusted before.
    pub from: String,
    /// The hash trusted now.
    pub to: String,
    /// The pinned fields that differ between the two.
    pub fields: Vec<&'static str>,
}

/// `pin` with its last seen version trusted, if it has one.
fn trusted(tool: &str, pin: &Pin, at: &str) -> Option<(Pin, Trusted)> {
    let seen = pin.seen.as_ref()?;
    Some((
        Pin {
            hash: seen.hash.clone(),
            fields: seen.fields.clone(),
            since: at.to_string(),
            seen: None,
        },
        Trusted {
            tool: tool.to_string(),
            from: pin.hash.clone(),
            to: seen.hash.clone(),
            fields: quickforge_filters::integrity::PINNED_FIELDS
                .into_iter()
                .filter(|f| pin.fields.get(*f) != seen.fields.get(*f))
                .collect(),
        },
    ))
}

/// The changes `pins` records for the tools listed now (`listed`, name and
/// hash): a pin's `seen` counts only while the tool is still listed with
/// that hash, so a recheck after `quickforge trust` or a revert clears it.
pub fn changes<'a>(
    pins: &BTreeMap<String, Pin>,
    listed: impl IntoIterator<Item = (&'a str, &'a ToolHash)>,
) -> BTreeMap<String, Change> {
    listed
        .into_iter()
        .filter_map(|(name, hash)| {
            let pin = pins.get(name)?;
            (pin.hash != hash.whole).then(|| {
                let since = pin
                    .seen
                    .as_ref()
                    .filter(|s| s.hash == hash.whole)
                    .map_or_else(now, |s| s.at.clone());
                let change = Change {
                    trusted: pin.hash.clone(),
                    now: hash.whole.clone(),
                    fields: hash.changed_fields(&pin.fields),
                    since,
                    quarantined: false,
                };
                (name.to_string(), change)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use quickforge_filters::integrity::tool_hash;
    use serde_json::json;

    use super::*;

    fn hash(description: &str) -> ToolHash {
        tool_hash(&json!({"name": "t", "description": description}))
    }

    #[test]
    fn first_sight_is_trusted_and_a_change_is_named() {
        let (pin, change) = observed(None, &hash("a"), "T0");
        assert_eq!(
            (pin.hash.as_str(), change),
            (hash("a").whole.as_str(), None)
        );
        let (pin2, change) = observed(Some(&pin), &hash("b"), "T1");
        let change = change.unwrap();
        assert_eq!(change.fields, ["description"]);
        assert_eq!(
            (change.trusted.as_str(), change.since.as_str()),
            (pin.hash.as_str(), "T1")
        );
        assert!(
            change
                .sentence()
                .starts_with("description changed since it was trusted (sha256:"),
            "{}",
            change.sentence()
        );
        // seen again later: still first seen at T1
        let (pin3, change) = observed(Some(&pin2), &hash("b"), "T2");
        assert_eq!(change.unwrap().since, "T1");
        assert_eq!(pin3, pin2);
        // trusting takes the seen version; it is then unchanged
        let (pin4, t) = trusted("t", &pin3, "T3").unwrap();
        assert_eq!((t.from, t.to.clone()), (pin.hash.clone(), hash("b").whole));
        assert_eq!(
            observed(Some(&pin4), &hash("b"), "T4"),
            (pin4.clone(), None)
        );
        assert!(trusted("t", &pin4, "T5").is_none());
        // a server that goes back is unchanged again; the change it showed
        // stays to be trusted (another gateway may still list it)
        let (back, change) = observed(Some(&pin2), &hash("a"), "T6");
        assert_eq!((back, change), (pin2.clone(), None));
    }

    #[test]
    fn changes_count_only_what_is_listed_now() {
        let (pin, _) = observed(None, &hash("a"), "T0");
        let (pin, _) = observed(Some(&pin), &hash("b"), "T1");
        let pins = BTreeMap::from([("t".to_string(), pin)]);
        let (a, b) = (hash("a"), hash("b"));
        assert!(changes(&pins, [("t", &a)]).is_empty());
        assert_eq!(changes(&pins, [("t", &b)])["t"].since, "T1");
        assert!(changes(&pins, [("other", &b)]).is_empty());
    }
}
