//! The names `host/gateway/convert.rs` expects at `crate::error`, over the
//! WIT types, so the provider compiles the native gateway's result
//! conversion itself (through `#[path]`) instead of a copy.

pub use crate::bindings::exports::quickforge::sandbox::types::ErrorCode;
use crate::bindings::exports::quickforge::sandbox::types::{Code, ForgeError as Wit};

/// A failure for the script, as the native gateway builds one.
pub struct ForgeError(pub Wit);

impl ForgeError {
    /// `code` with `message`; retryable exactly where the native code is
    /// (`host/error/code.rs`).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ForgeError {
        ForgeError(Wit {
            retryable: matches!(
                code,
                ErrorCode::CircuitOpen
                    | ErrorCode::RateLimited
                    | ErrorCode::ServerUnavailable
                    | ErrorCode::StateUnavailable
                    | ErrorCode::Timeout
            ),
            code: Code::Known(code),
            message: message.into(),
            suggestion: None,
        })
    }

    /// Adds what to do instead.
    pub fn suggest(mut self, suggestion: impl Into<String>) -> ForgeError {
        self.0.suggestion = Some(suggestion.into());
        self
    }
}

impl From<ForgeError> for Wit {
    fn from(e: ForgeError) -> Wit {
        e.0
    }
}
