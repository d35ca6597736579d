//! The gateway's side of tool integrity pinning ([`crate::pins`]): each
//! listing's tools are checked against their pins before the entry goes
//! into the manifest, and while any tool is listed as changed the pins are
//! read again every [`RECHECK`], so that `quickforge trust` (run beside a
//! live gateway, or on another replica) takes effect in seconds rather than
//! at the next full listing.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Gateway, ServerConfig};
use crate::manifest::ServerEntry;
use crate::pins::{Change, OnToolChange};

/// How often the pins of servers with a changed tool are read again: a
/// person who just ran `quickforge trust` waits at most this long, and a
/// gateway with nothing changed reads nothing.
pub const RECHECK: Duration = Duration::from_secs(3);

/// Marks each change of `config`'s server as quarantined or not.
fn marked(
    config: &ServerConfig,
    mut changed: std::collections::BTreeMap<String, Change>,
) -> std::collections::BTreeMap<String, Change> {
    for change in changed.values_mut() {
        change.quarantined = config.on_tool_change == OnToolChange::Quarantine;
    }
    changed
}

impl Gateway {
    /// Checks `entry`'s tools against their pins (recording first sights
    /// and changes) and lists the changed ones in it. A store that cannot
    /// be read leaves the tools unchecked, with a warning: the gateway
    /// serves what it can.
    pub(super) async fn pin(&self, config: &ServerConfig, entry: &mut ServerEntry) {
        let listed: Vec<_> = entry
            .tools
            .iter()
            .map(|t| (t.name.as_str(), &t.hash))
            .collect();
        match self.pins.observe(&config.name, &listed).await {
            Ok(changed) => entry.changed = marked(config, changed),
            Err(e) => tracing::warn!(
                server = %config.name,
                "tool pins could not be checked ({e}); its tools are listed unchecked until the next listing"
            ),
        }
    }

    /// Reads again the pins of every server with a changed tool, and puts
    /// in the manifest what they say now (a tool trusted since, or one the
    /// server changed back, is no longer changed).
    async fn recheck_pins(&self) {
        let manifest = self.manifest();
        for entry in manifest.servers().filter(|e| !e.changed.is_empty()) {
            let Some(server) = self.servers.get(&entry.name) else {
                continue;
            };
            let records = match self.pins.records(&entry.name).await {
                Ok(records) => records,
                Err(e) => {
                    tracing::debug!(server = %entry.name, "tool pins could not be read again: {e}");
                    continue;
                }
            };
            let listed = entry.tools.iter().map(|t| (t.name.as_str(), &t.hash));
            let now = marked(&server.config, crate::pins::changes(&records, listed));
            if now.keys().eq(entry.changed.keys()) {
                continue;
            }
            for tool in entry.changed.keys().filter(|t| !now.contains_key(*t)) {
                tracing::info!(server = %entry.name, %tool, "tool trusted again; it is no longer listed as changed");
            }
            // Only this entry's list of changes moves; if the server was
            // listed again meanwhile, that listing's own check stands.
            let current = self.manifest();
            if let Some(latest) = current.server(&entry.name)
                && Arc::ptr_eq(latest, entry)
            {
                let mut fresh = ServerEntry::clone(entry);
                fresh.changed = now;
                self.set_entry(fresh);
            }
        }
    }
}

/// Rechecks pins every [`RECHECK`] while the gateway lives.
pub(super) async fn rechecker(gateway: std::sync::Weak<Gateway>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(RECHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Some(g) = gateway.upgrade() else { return };
        g.recheck_pins().await;
    }
}
