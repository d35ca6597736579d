//! A run's outcome as the MCP tool result: the guest's outcome and the
//! provider's report turned into `quickforge_core`'s [`Report`] and shaped
//! by `quickforge_core::answer`, the native gateway's own shaper, so both
//! answer alike (the value as JSON text and as `structuredContent.result`,
//! the logs, failures as `isError` results with `structuredContent.error`
//! = `{kind, message, forge?, stack?}`).

use quickforge_core::answer::tool_result;
use quickforge_core::execution::{ErrorKind, ExecutionError, LogLine, Report, Stats};
use quickforge_core::{Code, ForgeError};
use serde_json::Value;

use crate::bindings::quickforge::edge::control;
use crate::bindings::quickforge::sandbox::types::{self as wit, Outcome, ScriptError};

/// The tool result of a finished run.
pub fn result(outcome: Result<Outcome, ScriptError>, report: &control::Report) -> Value {
    let result = match outcome {
        Ok(o) => Ok(serde_json::from_str(&o.value_json).unwrap_or(Value::Null)),
        Err(e) => {
            let forge = e.forge.map(forge_error);
            Err(ExecutionError {
                kind: kind(&e.kind).of_script_failure(forge.as_ref(), report.budget_spent),
                message: e.message,
                forge,
                stack: e.stack,
            })
        }
    };
    let report_ = Report {
        result,
        logs: report
            .logs
            .iter()
            .map(|l| LogLine {
                level: level(&l.level),
                message: l.message.clone(),
            })
            .collect(),
        stats: Stats {
            operations: report.calls,
            logs_dropped: report.logs_dropped,
            ..Stats::default()
        },
    };
    tool_result(&report_, report.stash.as_deref()).to_json()
}

/// A failure decided before the guest ran (the code is too large).
pub fn failure(kind: ErrorKind, message: &str) -> Value {
    tool_result(&Report::refused(ExecutionError::new(kind, message)), None).to_json()
}

fn forge_error(f: wit::ForgeError) -> ForgeError {
    ForgeError {
        code: match f.code {
            // The WIT enum's cases are the vocabulary's, by name.
            wit::Code::Known(c) => Code::from(code_text(&format!("{c:?}"))),
            wit::Code::Other(s) => Code::from(s),
        },
        message: f.message,
        retryable: f.retryable,
        suggestion: f.suggestion,
        quoted: None,
    }
}

/// `ToolNotFound` → `TOOL_NOT_FOUND`: the public texts of the codes.
fn code_text(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn level(l: &wit::LogLevel) -> quickforge_core::execution::LogLevel {
    use quickforge_core::execution::LogLevel as L;
    match l {
        wit::LogLevel::Debug => L::Debug,
        wit::LogLevel::Info => L::Info,
        wit::LogLevel::Warn => L::Warn,
        wit::LogLevel::Error => L::Error,
    }
}

/// The native `ErrorKind` of a guest-side failure.
fn kind(kind: &wit::ScriptErrorKind) -> ErrorKind {
    use wit::ScriptErrorKind as K;
    match kind {
        K::Syntax => ErrorKind::Syntax,
        K::NotAFunction => ErrorKind::NotAFunction,
        K::Thrown => ErrorKind::Thrown,
        K::Timeout => ErrorKind::Timeout,
        K::NeverSettled => ErrorKind::NeverSettled,
        K::OutOfMemory => ErrorKind::OutOfMemory,
        K::OutputTooLarge => ErrorKind::OutputTooLarge,
        K::NotSerializable => ErrorKind::NotSerializable,
        K::Internal => ErrorKind::Internal,
    }
}
