//! What one execution is and what it ends in, in words both gateways
//! share: the [`Mode`] a script runs in, the [`Report`] of its run (value or
//! [`ExecutionError`], captured log lines, [`Stats`]) and the typed
//! [`ErrorKind`] of a failed run. The native gateway's audit line, its
//! metrics and its MCP results, and the edge's answers, all read these.

use serde::{Deserialize, Serialize};

use crate::error::ForgeError;

/// What a script may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `manifest.*` and logging only; tool calls, resources and stash refused.
    Search,
    /// Everything.
    Execute,
    /// One call of a tool the client called directly (a server's
    /// `expose`): no script runs; the call passes this same pipeline.
    Direct,
}

impl Mode {
    /// The `snake_case` name, as serialized (audit lines, metrics, spans).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Search => "search",
            Mode::Execute => "execute",
            Mode::Direct => "direct",
        }
    }
}

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

    /// The kind a run that failed as `self` ends as: `thrown` by the
    /// gateway's own call-budget refusal (`forge`, uncaught) becomes
    /// `tool_call_budget`, but only when the gateway did refuse a call or
    /// stash operation for its budget in this run (`budget_spent`), so a
    /// script that throws its own `ForgeError("TOOL_CALL_BUDGET")` stays
    /// `thrown`. Both gateways classify a script's failure with this.
    pub fn of_script_failure(self, forge: Option<&ForgeError>, budget_spent: bool) -> ErrorKind {
        let budget =
            budget_spent && forge.is_some_and(|f| f.code.is(crate::ErrorCode::ToolCallBudget));
        match self {
            ErrorKind::Thrown if budget => ErrorKind::ToolCallBudget,
            kind => kind,
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
}

/// Severity of a captured log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// `console.debug`.
    Debug,
    /// `console.log`, `console.info`, `forge.log`.
    Info,
    /// `console.warn`.
    Warn,
    /// `console.error`.
    Error,
}

/// One captured line of script output: its severity and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[expect(missing_docs, reason = "the fields are what the type's doc names")]
pub struct LogLine {
    pub level: LogLevel,
    pub message: String,
}

/// Counters of one execution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Tool calls and resource reads started (what `max_tool_calls`
    /// counts).
    pub operations: u32,
    /// Fuel consumed.
    pub fuel: u64,
    /// Wall time, in microseconds.
    pub micros: u64,
    /// Log lines written beyond the kept ones.
    pub logs_dropped: u32,
    /// Bytes of JSON cut from a result over `max_output_size` (0 when it fit).
    pub output_cut: u64,
    /// Part of `micros` spent waiting on the client (a person answering an
    /// elicitation or an approval, the client's model sampling), which the
    /// time limit does not count.
    pub waited_micros: u64,
    /// Time spent waiting for one of the sandbox's `max_concurrent` slots
    /// before running (or before being refused as busy), in microseconds;
    /// `None` for an execution refused before it queued.
    pub queued_micros: Option<u64>,
}

/// Everything one execution produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The script's value, or why it failed.
    #[serde(serialize_with = "serialize_result")]
    pub result: Result<serde_json::Value, ExecutionError>,
    /// Captured `console.*` and `forge.log` lines, within the log limits.
    pub logs: Vec<LogLine>,
    /// Counters.
    pub stats: Stats,
}

fn serialize_result<S: serde::Serializer>(
    r: &Result<serde_json::Value, ExecutionError>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Tagged<'a> {
        Value(&'a serde_json::Value),
        Error(&'a ExecutionError),
    }
    match r {
        Ok(v) => Tagged::Value(v).serialize(s),
        Err(e) => Tagged::Error(e).serialize(s),
    }
}

impl Report {
    /// The report of an execution refused before it ran: no logs, no
    /// counts.
    pub fn refused(error: ExecutionError) -> Report {
        Report {
            result: Err(error),
            logs: Vec::new(),
            stats: Stats::default(),
        }
    }
}

/// The compact JSON size of `v`, without building the text.
pub fn json_len(v: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}
