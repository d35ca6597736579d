//! The manifest kept current from `tools/list` (issue 22: "refreshed from
//! `tools/list` when the runtime allows").
//!
//! With `QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS` set, the first manifest use
//! of a request (a `manifest.*` read or a tool call) lists the snapshot's
//! configured servers again when the last listing is older than that. The
//! keyvalue build keeps the result in the bucket (`qfm/manifest`, with the
//! time it was fetched and the digest of the snapshot it was made from), so
//! one request in each interval pays for the listing and the others read
//! it; the portable build has nowhere to keep it and lists once per request
//! that uses the manifest.
//!
//! What a refresh may change is bounded by the snapshot, because the
//! snapshot is where the gateway's tool policy was applied (`quickforge
//! manifest --json` lists only the tools the policy lets through, and the
//! refused ones under `denied`): a refresh updates the descriptions, schemas
//! and annotations of the snapshot's tools (cleaned and described by
//! `quickforge-catalog`, exactly as natively), drops the tools a server no
//! longer lists, and never adds a tool the snapshot did not have, nor keeps
//! one that now calls itself destructive when the snapshot's did not (the
//! native default policy refuses those). New tools arrive with a new
//! snapshot. A server whose listing fails keeps its last tools and shows as
//! `unavailable` with the (redacted) reason.

use std::collections::BTreeMap;

use quickforge_catalog::tool::ToolEntry;
use serde_json::{Value, json};

#[cfg(feature = "keyvalue")]
use crate::bindings::wasi::keyvalue::store;
use crate::run::Run;
use crate::stash_kv::now_ms;
#[cfg(not(feature = "keyvalue"))]
use crate::stash_kv::portable as store;

/// The bucket key of the kept listing (the stash's keys start `qfs/`).
const KEPT_KEY: &str = "qfm/manifest";

/// Refreshes `run`'s manifest when a refresh is configured and due.
pub fn refresh(run: &mut Run) {
    let Some(every) = run.config.manifest_refresh_ms else {
        return;
    };
    let now = now_ms();
    let bucket = store::open(&run.config.stash_bucket).ok();
    let kept: Option<Value> = bucket
        .as_ref()
        .and_then(|b| b.get(KEPT_KEY).ok().flatten())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .filter(|k: &Value| k["snapshot"] == run.config.manifest_digest.as_str());
    if let Some(kept) = &kept
        && let Some(fetched) = kept["fetched"].as_u64()
        && now.saturating_sub(fetched) < every
        && let Some(servers) = kept["servers"].as_array()
    {
        run.config.manifest = within_snapshot(&run.config.manifest, servers);
        return;
    }
    let names: Vec<String> = run
        .config
        .manifest
        .iter()
        .filter_map(|s| s["name"].as_str())
        .filter(|name| run.config.servers.contains_key(*name))
        .map(str::to_string)
        .collect();
    let listed = run.list_tools(&names);
    let previous: BTreeMap<&str, &Value> = kept
        .as_ref()
        .and_then(|k| k["servers"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["name"].as_str()?, s)))
        .collect();
    let servers: Vec<Value> = run
        .config
        .manifest
        .iter()
        .map(|snapshot| {
            let name = snapshot["name"].as_str().unwrap_or("");
            let last = previous.get(name).copied().unwrap_or(snapshot);
            match listed.get(name) {
                None => snapshot.clone(),
                Some(Ok(tools)) => merged(snapshot, tools),
                Some(Err(why)) => unavailable(last, why),
            }
        })
        .collect();
    if let Some(bucket) = &bucket {
        let kept = json!({
            "snapshot": run.config.manifest_digest,
            "fetched": now,
            "servers": servers,
        });
        // Keeping it is an optimization: a failed write means the next
        // request lists again, nothing worse.
        let _ = bucket.set(KEPT_KEY, kept.to_string().as_bytes());
    }
    run.config.manifest = servers;
}

/// The kept `servers`, held to the snapshot's servers and tool names again
/// as they are read: the bucket is shared storage, and what it holds must
/// not widen what the deployment allows. (Their text is as the refresh
/// cleaned it, not cleaned again in every request: the sanitizer is in the
/// redactor's snapshot, but rebuilding each kept tool's entry per request
/// is not free, and whoever can write the bucket can already rewrite every
/// stash in it.)
fn within_snapshot(snapshot: &[Value], servers: &[Value]) -> Vec<Value> {
    snapshot
        .iter()
        .map(|s| {
            let name = s["name"].as_str().unwrap_or("");
            let Some(kept) = servers.iter().find(|k| k["name"] == name) else {
                return s.clone();
            };
            let allowed: Vec<&str> = s["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str())
                .collect();
            let mut entry = kept.clone();
            if let Some(tools) = entry.get_mut("tools").and_then(Value::as_array_mut) {
                tools.retain(|t| t["name"].as_str().is_some_and(|n| allowed.contains(&n)));
            }
            if let (Value::Object(o), Some(denied)) = (&mut entry, s.get("denied")) {
                o.insert("denied".into(), denied.clone());
            }
            entry
        })
        .collect()
}

/// `snapshot`'s server entry with its tools as the server lists them now,
/// within what the snapshot allowed.
fn merged(snapshot: &Value, listed: &[Value]) -> Value {
    let name = snapshot["name"].as_str().unwrap_or("");
    let allowed: BTreeMap<&str, &Value> = snapshot["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["name"].as_str()?, t)))
        .collect();
    let mut tools: Vec<ToolEntry> = listed
        .iter()
        .filter_map(|t| ToolEntry::from_json_with(t, &crate::redact::clean_text))
        .filter(|t| {
            allowed
                .get(t.name.as_str())
                .is_some_and(|before| !newly_destructive(before, t))
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools.dedup_by(|a, b| a.name == b.name);
    let mut entry = snapshot.clone();
    if let Value::Object(o) = &mut entry {
        o.insert("status".into(), "ready".into());
        o.remove("error");
        o.insert(
            "tools".into(),
            tools.iter().map(|t| t.describe(name)).collect(),
        );
    }
    entry
}

/// Whether `now` says it is destructive where the snapshot's tool did not.
fn newly_destructive(before: &Value, now: &ToolEntry) -> bool {
    let destructive = |a: Option<&Value>| {
        a.and_then(|a| a.get("destructiveHint"))
            .and_then(Value::as_bool)
            == Some(true)
    };
    destructive(now.annotations.as_ref()) && !destructive(before.get("annotations"))
}

/// `last` marked `unavailable` for `why`.
fn unavailable(last: &Value, why: &str) -> Value {
    let mut entry = last.clone();
    if let Value::Object(o) = &mut entry {
        o.insert("status".into(), "unavailable".into());
        o.insert("error".into(), crate::redact::redact_clip(why, 512).into());
    }
    entry
}
