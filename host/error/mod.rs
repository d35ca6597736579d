//! The failures an execution can end in, as the client sees them.
//!
//! [`ErrorKind`] is the stable, typed vocabulary (`timeout`, `cpu_budget`,
//! ...); [`ExecutionError`] carries the kind plus a message a model can act
//! on. [`ForgeError`] is the smaller failure of one `forge.*` call, which the
//! script sees as a thrown `ForgeError` and may catch; its code comes from
//! the one vocabulary in [`code`].

mod code;

use serde::{Deserialize, Serialize};

pub use code::{Code, ErrorCode};

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
        }
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

/// At most 64 characters of `text`, for quoting a caller's value in a message.
pub fn preview(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
