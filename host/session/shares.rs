//! Execution slots shared by every request of one holder. A session alone
//! is not a fair unit: one subject can open many sessions, and a 2026-era
//! client needs none (each stateless request is served by a session of its
//! own, with a fresh share), so one client could take every slot while
//! another waits. The share of `max_concurrent_per_session` slots belongs to
//! the *fairness key* instead:
//!
//! - with `[auth]`, the authenticated subject, across all its sessions and
//!   stateless requests;
//! - without `[auth]`, the session for a session (stdio, a 2025-era HTTP
//!   session), and the HTTP connection for a sessionless 2026-era request
//!   ([`ConnectionId`]; connections are themselves capped by
//!   `[http] max_connections`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Semaphore;

/// The HTTP connection a request came on, numbered by the listener
/// (`crate::cli::listen`) and put in each request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

/// The slot shares of the live fairness keys.
pub struct SlotShares {
    share: usize,
    /// Each key's semaphore, while any session of it holds it.
    live: Mutex<HashMap<String, Weak<Semaphore>>>,
}

impl SlotShares {
    /// Shares of `share` slots each.
    pub fn new(share: usize) -> SlotShares {
        SlotShares {
            share: share.max(1),
            live: Mutex::default(),
        }
    }

    /// The slots of `key`, shared with every other holder of them.
    pub fn of(&self, key: &str) -> Arc<Semaphore> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slots) = live.get(key).and_then(Weak::upgrade) {
            return slots;
        }
        // keys whose sessions are all gone go with the next new key, so the
        // map holds the live keys and at most as many dead ones
        live.retain(|_, w| w.strong_count() > 0);
        let slots = Arc::new(Semaphore::new(self.share));
        live.insert(key.to_string(), Arc::downgrade(&slots));
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_one_share_while_held() {
        let shares = SlotShares::new(2);
        let a = shares.of("s:alice");
        let again = shares.of("s:alice");
        assert!(Arc::ptr_eq(&a, &again));
        let b = shares.of("s:bob");
        assert!(!Arc::ptr_eq(&a, &b));
        drop((a, again));
        let fresh = shares.of("s:alice");
        assert_eq!(fresh.available_permits(), 2);
    }
}
