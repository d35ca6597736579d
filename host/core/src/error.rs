//! [`ForgeError`]: the failure of one `forge.*` operation, which a script
//! sees as a thrown `ForgeError` and may catch.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::code::{Code, ErrorCode};

/// The failure of one `forge.*` operation, thrown in JS as a `ForgeError`
/// with exactly these fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ForgeError {
    /// Stable SCREAMING_SNAKE code, e.g. `SERVER_NOT_FOUND`.
    pub code: Code,
    /// What happened; shown to the model.
    pub message: String,
    /// Whether the same call may succeed later.
    pub retryable: bool,
    /// What to do instead, when known.
    pub suggestion: Option<String>,
    /// A server's own structured words (a JSON-RPC error's `data`, a
    /// structured error result), quoted after `message` where the error
    /// crosses a boundary ([`crate::shown`]): kept as JSON until then, so
    /// the crossing masks a sensitive field's value whatever its depth and
    /// type. Never serialized: what leaves has it in `message`. Boxed: most
    /// failures quote nothing, and every `Result` carrying one stays small.
    #[serde(skip)]
    pub quoted: Option<Box<serde_json::Value>>,
}

impl ForgeError {
    /// An error without a suggestion, retryable when its code is (see
    /// [`ErrorCode::retryable`]).
    pub fn new(code: impl Into<Code>, message: impl Into<String>) -> Self {
        let code = code.into();
        ForgeError {
            retryable: matches!(code, Code::Known(c) if c.retryable()),
            code,
            message: message.into(),
            suggestion: None,
            quoted: None,
        }
    }

    /// Quotes a server's structured words after the message (see
    /// [`ForgeError::quoted`]).
    pub fn quote(mut self, words: serde_json::Value) -> Self {
        self.quoted = Some(Box::new(words));
        self
    }

    /// Adds a suggestion.
    pub fn suggest(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }

    /// Marks the error retryable.
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// `SERVER_NOT_FOUND` for `server`.
    pub fn server_not_found(server: &str) -> Self {
        ForgeError::new(
            ErrorCode::ServerNotFound,
            format!("no downstream server is named {server:?}"),
        )
        .suggest("read manifest.servers (in search) for the configured server names")
    }

    /// `MODE_DENIED`: `api` (`forge.callTool`, `forge.readResource`,
    /// `forge.stash`) in a `search` execution.
    pub fn mode_denied(api: &str) -> Self {
        ForgeError::new(
            ErrorCode::ModeDenied,
            format!("{api} is not available in search; search code can only read `manifest`"),
        )
        .suggest("find the tool with search, then call it from the execute tool")
    }

    /// `ARGS_TOO_LARGE`: the `len` bytes of JSON arguments to `server`'s
    /// `tool` are over the gateway's `max`.
    pub fn args_too_large(server: &str, tool: &str, len: usize, max: usize) -> Self {
        ForgeError::new(
            ErrorCode::ArgsTooLarge,
            format!(
                "the arguments to {server}/{tool} are {len} bytes of JSON, over the {max}-byte limit"
            ),
        )
        .suggest("send less data per call")
    }

    /// `TOOL_CALL_BUDGET`: the execution already started its `max` tool
    /// calls and resource reads.
    pub fn call_budget(max: u32) -> Self {
        ForgeError::new(
            ErrorCode::ToolCallBudget,
            format!("this execution already started its limit of {max} tool calls and resource reads"),
        )
        .suggest("batch the work into fewer calls, or continue in another execution (forge.stash carries data over)")
    }

    /// `TIMEOUT`: `server` did not answer a call within `limit`, the
    /// deadline `setting` names (natively `its timeout_secs`, on the edge
    /// `QUICKFORGE_EDGE_CALL_TIMEOUT_MS`).
    pub fn call_timeout(server: &str, limit: Duration, setting: &str) -> Self {
        ForgeError::new(
            ErrorCode::Timeout,
            format!(
                "server {server:?} did not answer within {} s ({setting})",
                limit.as_secs_f64()
            ),
        )
        .suggest("retry later, or ask the server for less at once")
    }
}

/// At most 64 characters of `text`, for quoting a caller's value in a message.
pub fn preview(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_timeout_names_the_server_the_limit_and_the_setting() {
        let e = ForgeError::call_timeout("fixture", Duration::from_millis(300), "its timeout_secs");
        assert_eq!(e.code, Code::Known(ErrorCode::Timeout));
        assert!(e.retryable, "a timeout may pass");
        assert_eq!(
            e.message,
            "server \"fixture\" did not answer within 0.3 s (its timeout_secs)"
        );
    }

    #[test]
    fn previews_cut_at_64_characters_on_a_boundary() {
        assert_eq!(preview("short"), "short");
        let long = "é".repeat(100);
        let p = preview(&long);
        assert_eq!(p.chars().count(), 65);
        assert!(p.ends_with('…'));
    }
}
