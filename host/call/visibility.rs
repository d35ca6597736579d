//! What one execution may read of the manifest.
//!
//! `manifest.*` is a read, not a call, but what it returns comes from the
//! downstream servers (their tool metadata, their resource lists), so it is
//! data a strict group must keep to itself (see [`crate::policy::GroupLock`]):
//!
//! - an execution locked to a strict group does not see the servers of the
//!   other strict groups at all: they are left out of `manifest.servers` and
//!   `manifest.search`, and `manifest.tool` on one is `GROUP_POLICY_DENIED`;
//! - an `execute` run not locked yet sees every server, but a strict group's
//!   resource list (data its server chose, like file names) only once it is
//!   locked to that group, so it cannot read one group's listing and then
//!   carry it into another group's first call;
//! - `search` runs make no calls and touch no stash, so nothing they read can
//!   reach a server: they see everything.
//!
//! Tool names and descriptions of every group stay readable before the lock:
//! the residual channel is named in SECURITY.md.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Mode, Pipeline, Servers};
use crate::error::{ErrorCode, ForgeError};
use crate::manifest::ManifestView;

/// One execution's visibility of servers, as of the moment it was taken
/// (the lock only narrows it).
#[derive(Clone)]
pub struct Visibility {
    mode: Mode,
    locked: Option<Arc<str>>,
    servers: Arc<dyn Servers>,
}

impl Visibility {
    /// Whether the execution may see `server` at all.
    pub fn server(&self, server: &str) -> bool {
        match (&self.locked, self.servers.strict_group(server)) {
            (Some(locked), Some(group)) => *locked == group,
            _ => true,
        }
    }

    /// Whether it may see the data `server` lists (its resources).
    fn listing(&self, server: &str) -> bool {
        match self.servers.strict_group(server) {
            None => true,
            Some(group) => self.mode == Mode::Search || self.locked.as_deref() == Some(&*group),
        }
    }

    /// `GROUP_POLICY_DENIED` for reading about `server`, hidden by the lock.
    fn hidden(&self, server: &str) -> ForgeError {
        let locked = self.locked.as_deref().unwrap_or_default();
        ForgeError::new(
            ErrorCode::GroupPolicyDenied,
            format!(
                "server {server:?} is in another strict group than {locked:?}, which this execution is locked to; \
                 it cannot read about that server's tools"
            ),
        )
        .suggest("do the work of each strict group in its own execution")
    }
}

impl Pipeline {
    /// What the execution may see now.
    pub fn visibility(&self) -> Visibility {
        Visibility {
            mode: self.mode,
            locked: self.lock.current(),
            servers: self.cx.servers.clone(),
        }
    }

    /// The execution's manifest, to search off the async workers.
    pub fn manifest_view(&self) -> Arc<dyn ManifestView> {
        self.cx.manifest.clone()
    }

    /// `manifest.servers`, narrowed to what the execution may see. Entries
    /// that name no server are passed on as they are: there is nothing to
    /// narrow them by.
    pub fn manifest_servers(&self) -> Value {
        let seen = self.visibility();
        let all = match self.cx.manifest.servers() {
            Value::Array(all) => all,
            other => return other,
        };
        Value::Array(
            all.into_iter()
                .filter_map(|mut server| {
                    let Some(name) = server
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                    else {
                        return Some(server);
                    };
                    if !seen.server(&name) {
                        return None;
                    }
                    if !seen.listing(&name)
                        && let Value::Object(o) = &mut server
                    {
                        hide_listing(o);
                    }
                    Some(server)
                })
                .collect(),
        )
    }

    /// `manifest.tool(server, name)`, unless the lock hides `server`.
    pub fn manifest_tool(&self, server: &str, name: &str) -> Result<Value, ForgeError> {
        let seen = self.visibility();
        if !seen.server(server) {
            return Err(seen.hidden(server));
        }
        self.cx.manifest.tool(server, name)
    }
}

/// Replaces a strict group's resource list with a note of why it is not
/// shown; the note is there whether or not the list was empty, so its
/// presence says nothing about the group's data.
fn hide_listing(server: &mut Map<String, Value>) {
    server.remove("resourcesCut");
    server.insert("resources".into(), Value::Array(Vec::new()));
    server.insert("templates".into(), Value::Array(Vec::new()));
    server.insert(
        "resourcesHidden".into(),
        "a strict group's resources are listed in search, or here once this execution is locked to the group by a call to it".into(),
    );
}
