//! Why quickforge reset a session itself: shared by a connection and the
//! transport under it (stdio, streamable HTTP, HTTP+SSE), so the calls that
//! then fail name the cause rather than a bare "transport closed".

use std::sync::Arc;

/// Why quickforge reset a session itself, shared by a connection and its
/// transport, so the calls that then fail name the cause rather than a bare
/// "transport closed".
#[derive(Debug, Clone, Default)]
pub struct ResetCause(Arc<std::sync::Mutex<Option<String>>>);

impl ResetCause {
    /// Records `why`.
    pub fn set(&self, why: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    /// Records that the server sent one message over `limit` bytes, and
    /// returns the reason. Every transport says it the same way.
    pub fn oversized(&self, limit: usize) -> String {
        let why = format!(
            "the server sent a message larger than its limit of {limit} bytes (max_response_mb); the session was reset"
        );
        self.set(why.clone());
        why
    }

    /// The recorded reason, if any.
    pub fn reason(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
