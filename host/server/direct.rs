//! A direct tool's report (see `crate::execution::direct`) as the MCP
//! result its client reads: the server's own result when it succeeded, an
//! `isError` result giving the ForgeError code, message and suggestion
//! otherwise.

use rmcp::model::{CallToolResult, ContentBlock};

use crate::sandbox::Report;

/// A direct call's report as the MCP result its client reads.
pub fn direct_result(report: &Report) -> CallToolResult {
    let error = match &report.result {
        Ok(value) => match serde_json::from_value::<CallToolResult>(value.clone()) {
            Ok(mut result) => {
                // A complete result at any revision (rmcp drops the field for
                // older clients); the server's own `_meta` (its task ids,
                // its progress tokens) means nothing to this client.
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                result.meta = None;
                return result;
            }
            Err(e) => {
                format!("INVALID_RESPONSE: the server's result is not an MCP tool result: {e}")
            }
        },
        Err(e) => match &e.forge {
            Some(f) => {
                let mut text = format!("{}: {}", f.code, f.message);
                if let Some(s) = &f.suggestion {
                    text.push_str(&format!("\nsuggestion: {s}"));
                }
                text
            }
            None => format!("{}: {}", e.kind, e.message),
        },
    };
    CallToolResult::error(vec![ContentBlock::text(error)])
}
