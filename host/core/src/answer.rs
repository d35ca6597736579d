//! An execution's [`Report`] as the MCP tool result its client reads, in
//! the one shape both gateways answer with: the value as JSON text and as
//! `structuredContent.result` (with `cutBytes` when the output was cut),
//! failures as `isError` results whose text gives the kind, the message,
//! the `ForgeError` code, suggestion and stack, and whose
//! `structuredContent.error` is the [`ExecutionError`]; then the logs, then
//! the stash handle when the script used a stash the client can come back
//! to.
//!
//! The parts are plain JSON ([`ToolResult`]): the native gateway wraps them
//! in rmcp's types, the edge writes [`ToolResult::to_json`].

use serde_json::{Map, Value, json};

use crate::execution::{LogLevel, Report};

/// The parts of an MCP `CallToolResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The text content blocks, in order.
    pub texts: Vec<String>,
    /// `structuredContent`.
    pub structured: Map<String, Value>,
    /// `isError`.
    pub is_error: bool,
}

impl ToolResult {
    /// The result as MCP's JSON (`content`, `structuredContent`, `isError`).
    pub fn to_json(&self) -> Value {
        let content: Vec<Value> = self
            .texts
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        json!({
            "content": content,
            "structuredContent": self.structured,
            "isError": self.is_error,
        })
    }
}

/// `report` as the tool result its client reads; `stash` is the handle to
/// show when the script used a stash the client can come back to.
pub fn tool_result(report: &Report, stash: Option<&str>) -> ToolResult {
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
    let mut structured = Map::new();
    let (mut texts, is_error) = match &report.result {
        Ok(value) => {
            structured.insert("result".into(), value.clone());
            if report.stats.output_cut > 0 {
                structured.insert("cutBytes".into(), report.stats.output_cut.into());
            }
            (
                vec![serde_json::to_string(value).unwrap_or_default()],
                false,
            )
        }
        Err(e) => {
            let mut text = format!("{}: {}", e.kind, e.message);
            if let Some(f) = &e.forge {
                text.push_str(&format!(
                    "\nForgeError {}{}",
                    f.code,
                    if f.retryable { " (retryable)" } else { "" }
                ));
                if let Some(s) = &f.suggestion {
                    text.push_str(&format!("\nsuggestion: {s}"));
                }
            }
            if let Some(stack) = &e.stack {
                text.push_str(&format!("\n{stack}"));
            }
            structured.insert(
                "error".into(),
                serde_json::to_value(e).unwrap_or(Value::Null),
            );
            (vec![text], true)
        }
    };
    if !logs.is_empty() {
        let mut log_text = logs.join("\n");
        if report.stats.logs_dropped > 0 {
            log_text.push_str(&format!(
                "\n[quickforge] {} more log lines dropped (log limit)",
                report.stats.logs_dropped
            ));
        }
        structured.insert("logs".into(), logs.into());
        texts.push(format!("logs:\n{log_text}"));
    }
    if let Some(handle) = stash {
        structured.insert("stash".into(), handle.into());
        texts.push(format!("stash: {handle}"));
    }
    ToolResult {
        texts,
        structured,
        is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::{ErrorKind, ExecutionError, LogLine, Stats};
    use crate::{ErrorCode, ForgeError};

    #[test]
    fn a_value_with_logs_and_a_stash() {
        let report = Report {
            result: Ok(json!({"a": 1})),
            logs: vec![LogLine {
                level: LogLevel::Warn,
                message: "careful".into(),
            }],
            stats: Stats {
                logs_dropped: 2,
                output_cut: 10,
                ..Stats::default()
            },
        };
        let r = tool_result(&report, Some("h1"));
        assert_eq!(
            r.to_json(),
            json!({
                "content": [
                    {"type": "text", "text": "{\"a\":1}"},
                    {"type": "text", "text": "logs:\n[warn] careful\n[quickforge] 2 more log lines dropped (log limit)"},
                    {"type": "text", "text": "stash: h1"},
                ],
                "structuredContent": {"result": {"a": 1}, "cutBytes": 10, "logs": ["[warn] careful"], "stash": "h1"},
                "isError": false,
            })
        );
    }

    #[test]
    fn a_failure_names_its_kind_code_and_suggestion() {
        let forge = ForgeError::call_budget(3);
        let report = Report::refused(ExecutionError {
            kind: ErrorKind::ToolCallBudget,
            message: forge.message.clone(),
            forge: Some(forge.clone()),
            stack: Some("at f (script:1:2)".into()),
        });
        let r = tool_result(&report, None);
        assert!(r.is_error);
        assert_eq!(
            r.texts[0],
            format!(
                "tool_call_budget: {}\nForgeError TOOL_CALL_BUDGET\nsuggestion: {}\nat f (script:1:2)",
                forge.message,
                forge.suggestion.as_deref().unwrap()
            )
        );
        assert_eq!(r.structured["error"]["kind"], "tool_call_budget");
        assert_eq!(r.structured["error"]["forge"]["code"], "TOOL_CALL_BUDGET");
        // Without a suggestion the field is there, null, on both gateways.
        let plain = Report::refused(ExecutionError {
            kind: ErrorKind::Thrown,
            message: "no".into(),
            forge: Some(ForgeError::new(ErrorCode::Internal, "no")),
            stack: None,
        });
        let r = tool_result(&plain, None);
        assert_eq!(r.structured["error"]["forge"]["suggestion"], Value::Null);
        assert_eq!(r.texts, ["thrown: no\nForgeError INTERNAL"]);
    }
}
