//! Which subject each live 2025-era HTTP session belongs to, checked on
//! every request that names a session, before rmcp sees it.
//!
//! `ForgeServer::bind` refuses another subject inside the MCP handlers that
//! call it, but a session is more than its `tools/call`s: the SSE stream a
//! `GET` opens carries the server's requests to the client (elicitation,
//! sampling, progress), a client's JSON-RPC *responses* go straight to the
//! waiting request, `DELETE` ends the session (and its record in Redis),
//! and every other method reaches a handler. So the HTTP session gate
//! (`cli::serve`) asks here first: a request of another subject with a
//! session id gets the 404 of a session that does not exist, whatever it
//! is. A session opened on this replica is recorded when its `initialize`
//! answers; one opened elsewhere is looked up in its Redis record
//! (`session::store`) the first time it reaches this replica.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::auth::Subject;

/// The subject of each session this replica has seen, by session id.
#[derive(Default)]
pub struct SessionOwners {
    owners: Mutex<HashMap<Arc<str>, Subject>>,
}

impl SessionOwners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Subject>> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The subject session `id` belongs to, if this replica knows.
    pub fn owner(&self, id: &str) -> Option<Subject> {
        self.lock().get(id).cloned()
    }

    /// Session `id` belongs to `subject` (the first record stands).
    pub fn record(&self, id: &str, subject: Subject) {
        self.lock().entry(id.into()).or_insert(subject);
    }

    /// Session `id` is gone.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// How many sessions are recorded.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Keeps only the sessions `live` says are live (sessions rmcp closed
    /// for idleness leave no other trace here).
    pub fn retain(&self, live: impl Fn(&str) -> bool) {
        self.lock().retain(|id, _| live(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_owner_stands_until_the_session_is_forgotten() {
        let owners = SessionOwners::default();
        let (alice, bob) = (Subject::new("alice").unwrap(), Subject::new("bob").unwrap());
        assert_eq!(owners.owner("s1"), None);
        owners.record("s1", alice.clone());
        owners.record("s1", bob.clone());
        assert_eq!(owners.owner("s1"), Some(alice));
        owners.record("s2", bob.clone());
        owners.retain(|id| id == "s2");
        assert_eq!(owners.owner("s1"), None);
        owners.forget("s2");
        assert_eq!(owners.len(), 0);
    }
}
