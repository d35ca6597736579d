//! A report as the MCP tool result the client reads: the shape is
//! `quickforge_core::answer`'s, the one both gateways answer with; this
//! wraps its parts in rmcp's types.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::sandbox::Report;
use crate::state::Handle;

/// A report as an MCP tool result: the value as JSON text (and as
/// `structuredContent.result`), the logs, errors as `isError` results a
/// model can read, and the stash handle when the script used the stash (as
/// `structuredContent.stash` and a line of text, for clients that drop
/// structured content).
pub fn to_result(report: &Report, stash: Option<&Handle>) -> CallToolResult {
    let shaped = quickforge_core::answer::tool_result(report, stash.map(Handle::as_str));
    let content = shaped.texts.into_iter().map(ContentBlock::text).collect();
    let mut result = if shaped.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(Value::Object(shaped.structured));
    result
}
