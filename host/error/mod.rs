//! The failures an execution can end in, as the client sees them.
//!
//! [`ErrorKind`] is the stable, typed vocabulary (`timeout`, `cpu_budget`,
//! ...); [`ExecutionError`] carries the kind plus a message a model can act
//! on. [`ForgeError`] is the smaller failure of one `forge.*` call, which the
//! script sees as a thrown `ForgeError` and may catch; its code comes from
//! the one vocabulary, [`ErrorCode`].

use serde::{Deserialize, Serialize};

// The vocabulary both gateways share lives in `quickforge-core`, so that the
// edge provider builds the same failures in the same words.
pub use quickforge_core::{Code, ErrorCode, ForgeError, preview};

/// Why an execution failed. Serialized in `snake_case`; stable across
/// versions, so clients may match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The code did not parse.
    Syntax,
    /// The code parsed but is not a function expression.
    NotAFunction,
    /// The script threw, or its promise rejected, and nothing caught it.
    Thrown,
    /// The wall-clock limit (`timeout_secs`) passed.
    Timeout,
    /// The CPU budget (`max_fuel`) ran out.
    CpuBudget,
    /// The script used more memory than `max_heap_mb` allows.
    OutOfMemory,
    /// The script recursed too deeply.
    StackOverflow,
    /// The code is longer than `max_code_size`.
    CodeTooLarge,
    /// The result is larger than `max_output_size`.
    OutputTooLarge,
    /// The result cannot be expressed as JSON (BigInt, cycles).
    NotSerializable,
    /// The script used up `max_tool_calls` and did not catch the error.
    ToolCallBudget,
    /// The script's promise can never settle.
    NeverSettled,
    /// Every execution slot stayed busy for `max_queue_wait_ms`.
    Busy,
    /// Over `max_executions_per_minute`; the message says when to retry.
    RateLimited,
    /// The validator refused the code before it ran; the message names the
    /// rule, the line and column, and the offending text.
    Validation,
    /// A fault of quickforge itself, not of the script.
    Internal,
}

impl ErrorKind {
    /// The `snake_case` name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::NotAFunction => "not_a_function",
            ErrorKind::Thrown => "thrown",
            ErrorKind::Timeout => "timeout",
            ErrorKind::CpuBudget => "cpu_budget",
            ErrorKind::OutOfMemory => "out_of_memory",
            ErrorKind::StackOverflow => "stack_overflow",
            ErrorKind::CodeTooLarge => "code_too_large",
            ErrorKind::OutputTooLarge => "output_too_large",
            ErrorKind::NotSerializable => "not_serializable",
            ErrorKind::ToolCallBudget => "tool_call_budget",
            ErrorKind::NeverSettled => "never_settled",
            ErrorKind::Busy => "busy",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Validation => "validation",
            ErrorKind::Internal => "internal",
        }
    }

    /// Whether running the same code again later may succeed.
    pub fn retryable(self) -> bool {
        matches!(self, ErrorKind::Busy | ErrorKind::RateLimited)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an execution failed.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ExecutionError {
    /// The typed reason.
    pub kind: ErrorKind,
    /// A message a model can act on.
    pub message: String,
    /// Set when the script died of an uncaught `ForgeError`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forge: Option<ForgeError>,
    /// The JS stack of an uncaught exception, if it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

impl ExecutionError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ExecutionError {
            kind,
            message: message.into(),
            forge: None,
            stack: None,
        }
    }

    /// Whether running the same code again later may succeed.
    pub fn retryable(&self) -> bool {
        self.kind.retryable() || self.forge.as_ref().is_some_and(|f| f.retryable)
    }

    /// The error as it may leave the gateway: its messages redacted (see
    /// [`crate::redact`]) and, when that removed anything, its stack
    /// dropped entirely, since frames of the same text would repeat it.
    pub fn redacted(mut self) -> Self {
        let message = crate::redact::redact(&self.message);
        let mut changed = message.changed;
        self.message = message.text;
        if let Some(f) = &mut self.forge {
            let m = crate::redact::redact(&f.message);
            changed |= m.changed;
            f.message = m.text;
        }
        if changed {
            self.stack = None;
        }
        self
    }
}

/// Every text from outside (script errors, stacks, downstream error messages
/// and bodies) is bounded with this before it is quoted to the model.
pub use quickforge_filters::text::clip;
