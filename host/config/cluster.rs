//! `[cluster]`: this gateway's name among its replicas (in every audit
//! line) and the replicas it shares a deployment with, so a follow-up
//! request that a load balancer sends to the wrong replica (an MRTR retry,
//! a task poll) is forwarded to the one that runs the execution (see
//! `cli::forward`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// Longest name of a replica listed in `peers`. Such names go into every
/// run id a client carries: 32 characters name any fleet.
pub const MAX_REPLICA_NAME: usize = 32;

pub use crate::execution::{MAX_REPLICA_BYTES, default_replica};

/// `[cluster]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// This gateway's name among its replicas (`replica`, e.g.
    /// `${QUICKFORGE_REPLICA}` or `${POD_NAME}`), in every audit line; the
    /// host's name by default.
    pub replica: String,
    /// Every replica's own `/mcp` URL by name, this one included (the same
    /// file serves every replica), as its peers reach it directly, not
    /// through the balancer.
    pub peers: BTreeMap<String, url::Url>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            replica: default_replica(),
            peers: BTreeMap::new(),
        }
    }
}

/// `[cluster]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawCluster {
    replica: Option<String>,
    peers: BTreeMap<String, String>,
}

/// Whether `name` is a valid replica name: 1 to [`MAX_REPLICA_NAME`] of
/// `A-Z a-z 0-9 _ -` (it is sealed into run ids, so no `.`).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_REPLICA_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl RawCluster {
    /// Checks and expands `[cluster]`; on error, the key and why.
    pub(super) fn resolve(
        self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ClusterConfig, (&'static str, String)> {
        let expand =
            |key, text: &str| super::expand(text, lookup).map_err(|e| (key, e.to_string()));
        let replica = match self.replica {
            Some(text) => {
                let name = expand("replica", &text)?;
                if name.is_empty()
                    || name.len() > MAX_REPLICA_BYTES
                    || name.chars().any(char::is_control)
                {
                    return Err((
                        "replica",
                        format!(
                            "must be 1 to {MAX_REPLICA_BYTES} bytes without control characters, got {:?}",
                            crate::error::preview(&name)
                        ),
                    ));
                }
                name
            }
            None => default_replica(),
        };
        let mut peers = BTreeMap::new();
        for (name, text) in self.peers {
            if !valid_name(&name) {
                return Err((
                    "peers",
                    format!(
                        "replica name {name:?}: use 1 to {MAX_REPLICA_NAME} characters of A-Z a-z 0-9 _ -"
                    ),
                ));
            }
            let url = url::Url::parse(&expand("peers", &text)?)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    (
                        "peers",
                        format!(
                            "{name}: must be the replica's own http(s) /mcp URL, e.g. http://10.0.0.2:8781/mcp; got {text:?}"
                        ),
                    )
                })?;
            peers.insert(name, url);
        }
        if !peers.is_empty() && !peers.contains_key(&replica) {
            return Err((
                "peers",
                format!(
                    "does not list this replica ({:?}): set replica (e.g. \"${{QUICKFORGE_REPLICA}}\") to one of the names in peers, and list every replica, this one included, so one file serves them all",
                    crate::error::preview(&replica)
                ),
            ));
        }
        Ok(ClusterConfig { replica, peers })
    }
}
