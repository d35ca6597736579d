//! A run's outcome as the MCP tool result, in the native gateway's shape
//! (`host/server/result.rs`): the value as JSON text and as
//! `structuredContent.result`, the logs, failures as `isError` results with
//! `structuredContent.error` = `{kind, message, forge?, stack?}`.

use serde_json::{Map, Value, json};

use crate::bindings::quickforge::edge::control::Report;
use crate::bindings::quickforge::sandbox::types::{
    Code, ForgeError, LogLevel, Outcome, ScriptError, ScriptErrorKind,
};

/// The tool result of a finished run.
pub fn result(outcome: Result<Outcome, ScriptError>, report: &Report) -> Value {
    let mut structured = Map::new();
    let (mut content, is_error) = match outcome {
        Ok(o) => {
            let value: Value = serde_json::from_str(&o.value_json).unwrap_or(Value::Null);
            structured.insert("result".into(), value.clone());
            (vec![text(value.to_string())], false)
        }
        Err(e) => {
            let forge = e.forge.as_ref().map(forge_json);
            // As natively: a script that died of the call budget's
            // ForgeError failed as `tool_call_budget`, not as `thrown`.
            let kind = match e.forge.as_ref().map(|f| code_of(&f.code)) {
                Some(code) if code == "TOOL_CALL_BUDGET" => "tool_call_budget".to_string(),
                _ => kind_text(&e.kind),
            };
            let mut line = format!("{kind}: {}", e.message);
            if let Some(f) = &e.forge {
                line.push_str(&format!(
                    "\nForgeError {}{}",
                    code_of(&f.code),
                    if f.retryable { " (retryable)" } else { "" }
                ));
                if let Some(s) = &f.suggestion {
                    line.push_str(&format!("\nsuggestion: {s}"));
                }
            }
            if let Some(stack) = &e.stack {
                line.push_str(&format!("\n{stack}"));
            }
            let mut error = json!({"kind": kind, "message": e.message});
            if let Some(f) = forge {
                error["forge"] = f;
            }
            if let Some(stack) = e.stack {
                error["stack"] = stack.into();
            }
            structured.insert("error".into(), error);
            (vec![text(line)], true)
        }
    };
    let logs: Vec<String> = report
        .logs
        .iter()
        .map(|l| {
            let level = match l.level {
                LogLevel::Debug => "debug",
                LogLevel::Info => "info",
                LogLevel::Warn => "warn",
                LogLevel::Error => "error",
            };
            format!("[{level}] {}", l.message)
        })
        .collect();
    if !logs.is_empty() {
        let mut log_text = logs.join("\n");
        if report.logs_dropped > 0 {
            log_text.push_str(&format!(
                "\n[quickforge] {} more log lines dropped (log limit)",
                report.logs_dropped
            ));
        }
        structured.insert("logs".into(), logs.into());
        content.push(text(format!("logs:\n{log_text}")));
    }
    if let Some(handle) = &report.stash {
        structured.insert("stash".into(), handle.clone().into());
        content.push(text(format!("stash: {handle}")));
    }
    json!({"content": content, "structuredContent": structured, "isError": is_error})
}

/// A failure decided before the guest ran (the code is too large).
pub fn failure(kind: &str, message: &str) -> Value {
    json!({
        "content": [text(format!("{kind}: {message}"))],
        "structuredContent": {"error": {"kind": kind, "message": message}},
        "isError": true
    })
}

fn text(t: String) -> Value {
    json!({"type": "text", "text": t})
}

fn forge_json(f: &ForgeError) -> Value {
    let mut o = json!({"code": code_of(&f.code), "message": f.message, "retryable": f.retryable});
    if let Some(s) = &f.suggestion {
        o["suggestion"] = s.clone().into();
    }
    o
}

fn code_of(code: &Code) -> String {
    match code {
        Code::Known(c) => code_text(&format!("{c:?}")),
        Code::Other(s) => s.clone(),
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

/// The native `ErrorKind` text of a guest-side failure.
fn kind_text(kind: &ScriptErrorKind) -> String {
    match kind {
        ScriptErrorKind::Syntax => "syntax",
        ScriptErrorKind::NotAFunction => "not_a_function",
        ScriptErrorKind::Thrown => "thrown",
        ScriptErrorKind::Timeout => "timeout",
        ScriptErrorKind::NeverSettled => "never_settled",
        ScriptErrorKind::OutOfMemory => "out_of_memory",
        ScriptErrorKind::OutputTooLarge => "output_too_large",
        ScriptErrorKind::NotSerializable => "not_serializable",
        ScriptErrorKind::Internal => "internal",
    }
    .to_string()
}
