//! A report as the MCP tool result the client reads.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::sandbox::{LogLevel, Report};
use crate::state::Handle;

/// A report as an MCP tool result: the value as JSON text (and as
/// `structuredContent.result`), the logs, errors as `isError` results a
/// model can read, and the stash handle when the script used the stash (as
/// `structuredContent.stash` and a line of text, for clients that drop
/// structured content).
pub fn to_result(report: &Report, stash: Option<&Handle>) -> CallToolResult {
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
    let mut log_text = logs.join("\n");
    if report.stats.logs_dropped > 0 {
        log_text.push_str(&format!(
            "\n[quickforge] {} more log lines dropped (log limit)",
            report.stats.logs_dropped
        ));
    }
    let mut structured = serde_json::Map::new();
    let (mut content, is_error) = match &report.result {
        Ok(value) => {
            structured.insert("result".into(), value.clone());
            if report.stats.output_cut > 0 {
                structured.insert("cutBytes".into(), report.stats.output_cut.into());
            }
            (
                vec![ContentBlock::text(
                    serde_json::to_string(value).unwrap_or_default(),
                )],
                false,
            )
        }
        Err(e) => {
            let error = serde_json::to_value(e).unwrap_or(Value::Null);
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
            structured.insert("error".into(), error);
            (vec![ContentBlock::text(text)], true)
        }
    };
    if !logs.is_empty() {
        structured.insert("logs".into(), logs.into());
        content.push(ContentBlock::text(format!("logs:\n{log_text}")));
    }
    if let Some(handle) = stash {
        structured.insert("stash".into(), handle.as_str().into());
        content.push(ContentBlock::text(format!("stash: {}", handle.as_str())));
    }
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(Value::Object(structured));
    result
}
