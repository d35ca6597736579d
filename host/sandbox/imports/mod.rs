//! The host side of every WIT import, one file per interface.
//!
//! Trap versus error: an import's outer `wasmtime::Result` is a trap (a host
//! bug); everything a script can cause — a policy refusal, a spent budget, a
//! downstream failure — is the WIT-level `forge-error` the guest throws as a
//! `ForgeError`.

mod calls;
mod logging;
mod manifest;
mod random;
mod resources;
mod stash;
mod tools;

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;

use super::bindings::quickforge::sandbox::types as wit;
use super::{Mode, State};
use crate::error::ForgeError;

/// Code of the error a script gets once it has started `max_tool_calls`
/// operations; an uncaught one ends the execution as `tool_call_budget`.
pub const TOOL_CALL_BUDGET: &str = "TOOL_CALL_BUDGET";

impl wit::Host for State {}

impl From<ForgeError> for wit::ForgeError {
    fn from(e: ForgeError) -> Self {
        // The one place a failure's text crosses into the script: redact it
        // here, so no secret of a downstream error reaches the model, even
        // through a value the script builds from the message.
        wit::ForgeError {
            code: e.code,
            message: crate::redact::redact(&e.message).text,
            retryable: e.retryable,
            suggestion: e.suggestion,
        }
    }
}

/// Longest server name, tool name or resource URI accepted from a script, in
/// bytes. Names are short identifiers; a URI is an address, not a payload.
/// Checked before anything is formatted into a message or sent downstream.
pub const MAX_NAME_LEN: usize = 4096;

/// Refuses a name or URI longer than [`MAX_NAME_LEN`].
pub fn check_len(what: &str, value: &str) -> Result<(), ForgeError> {
    if value.len() > MAX_NAME_LEN {
        return Err(ForgeError::new(
            "INVALID_ARGUMENT",
            format!(
                "the {what} is {} bytes long, over the {MAX_NAME_LEN}-byte limit",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// Logs a panic inside downstream operation `id` and returns the error the
/// script sees for it.
fn panicked(id: u32) -> ForgeError {
    tracing::error!(call = id, "a downstream operation panicked");
    ForgeError::new(
        "INTERNAL",
        "the operation failed unexpectedly inside quickforge",
    )
}

impl State {
    /// Refuses `what` in search mode.
    fn require_execute(&self, what: &str) -> Result<(), ForgeError> {
        match self.mode {
            Mode::Execute => Ok(()),
            Mode::Search => Err(ForgeError::new(
                "MODE_DENIED",
                format!("{what} is not available in search; search code can only read `manifest`"),
            )
            .suggest("find the tool with search, then call it from the execute tool")),
        }
    }

    /// Starts one downstream operation after the mode and budget checks, and
    /// returns its call id. `op` builds the operation only once the checks
    /// have passed; a panic inside it becomes an `INTERNAL` error of that
    /// call alone.
    fn start_operation<F>(
        &mut self,
        what: &str,
        op: impl FnOnce(&Self) -> F,
    ) -> Result<u32, ForgeError>
    where
        F: Future<Output = Result<serde_json::Value, ForgeError>> + Send + 'static,
    {
        self.require_execute(what)?;
        if self.calls_started >= self.max_tool_calls {
            self.budget_spent = true;
            return Err(ForgeError::new(
                TOOL_CALL_BUDGET,
                format!(
                    "this execution already started its limit of {} tool calls and resource reads",
                    self.max_tool_calls
                ),
            )
            .suggest("batch the work into fewer calls, or continue in another execution (forge.stash carries data over)"));
        }
        let id = self.calls_started + 1;
        // A panic while building the operation, or while it runs, fails this
        // call alone; a call that could not even be built does not count.
        let op = match std::panic::catch_unwind(AssertUnwindSafe(|| op(self))) {
            Ok(op) => AssertUnwindSafe(op).catch_unwind(),
            Err(_panic) => return Err(panicked(id)),
        };
        self.calls_started = id;
        // Timed only for the audit trail: an unaudited call costs no clock
        // reads.
        let timed = self.cx.audit.is_some();
        self.calls.push(Box::pin(async move {
            let started = timed.then(std::time::Instant::now);
            let outcome = match op.await {
                Ok(result) => result.and_then(|value| {
                    serde_json::to_string(&value).map_err(|e| {
                        ForgeError::new("INTERNAL", format!("could not encode the result: {e}"))
                    })
                }),
                Err(_panic) => Err(panicked(id)),
            };
            (
                id,
                outcome,
                started.map(|s| s.elapsed()).unwrap_or_default(),
            )
        }));
        Ok(id)
    }

    /// Records in the audit trail, if one is kept, an operation that started
    /// `at` and got as far as `started` (a call id, or its end).
    fn audit(
        &mut self,
        op: crate::audit::OpKind,
        target: crate::audit::Target<'_>,
        at: Option<std::time::Instant>,
        started: Result<crate::audit::Started, &ForgeError>,
    ) {
        if let (Some(trail), Some(at)) = (&self.cx.audit, at) {
            crate::audit::lock(trail).record(op, target, at, started);
        }
    }

    /// The moment an operation starts, when an audit trail is kept.
    fn audit_clock(&self) -> Option<std::time::Instant> {
        self.cx.audit.is_some().then(std::time::Instant::now)
    }

    /// Records the end of call `id` in the audit trail, if one is kept.
    pub(in crate::sandbox) fn finished(
        &mut self,
        id: u32,
        outcome: &Result<String, ForgeError>,
        took: std::time::Duration,
    ) {
        if let Some(trail) = &self.cx.audit {
            crate::audit::lock(trail).finish(id, outcome.as_ref().map(String::as_str), took);
        }
    }
}
