//! Downstream results, converted to what a script expects.
//!
//! Works on the MCP wire shape (JSON), so it does not depend on how the SDK
//! models content types from one protocol revision to the next.
//!
//! - `structuredContent`, when present, is the value;
//! - else each content block becomes a value: text that parses as JSON is
//!   parsed, other text stays a string; images and audio become
//!   `{type, mimeType, size, data, mime_type}` and binary resources
//!   `{type: "blob", mimeType, size, uri, _type: "blob", _encoding: "base64",
//!   data, mime_type}`: quickforge's fields beside Forgemax's documented
//!   ones, with the base64 `data` up to [`MAX_BINARY_DATA`] (past it,
//!   Forgemax's `truncated: true` and `original_size` instead);
//! - one block is returned as itself, several as an array, none as `null`;
//! - `isError: true` becomes a `TOOL_ERROR` carrying the server's text.
//!
//! A server's text quoted in a `ForgeError` is quoted raw: it is redacted
//! once, where the error crosses into the script or to the client
//! ([`crate::shown`]).

use serde_json::{Map, Value, json};

use crate::code::ErrorCode;
use crate::error::ForgeError;

/// Longest base64 `data` of one image, audio or blob handed to a script, in
/// bytes: 1 MiB, Forgemax's bound on binary content and quickforge's
/// default `max_output_size`, so a script can pass on what it receives. A
/// larger one comes as metadata alone, marked `truncated`.
pub const MAX_BINARY_DATA: usize = 1024 * 1024;

/// A JSON-RPC error answer from `server` as the script sees it: its code,
/// its message and its `data` (the data often says more: which field, which
/// limit), quoted as JSON so the boundary masks a sensitive field whatever
/// its value.
pub fn rpc_error(server: &str, code: i64, message: &str, data: Option<Value>) -> ForgeError {
    let prefix =
        format!("server {server:?} refused the request (JSON-RPC error {code}): {message}");
    match data {
        Some(data) => {
            ForgeError::new(ErrorCode::DownstreamError, format!("{prefix}; data: ")).quote(data)
        }
        None => ForgeError::new(ErrorCode::DownstreamError, prefix),
    }
}

/// What a tool's result becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// A value for a script ([`call_result`]).
    #[default]
    Script,
    /// The MCP result itself, for a client that called a direct tool
    /// ([`mcp_result`]).
    Mcp,
}

impl Shape {
    /// `result` (a `tools/call` result, as JSON) from `server`'s `tool`, in
    /// this shape.
    pub fn convert(self, server: &str, tool: &str, result: Value) -> Result<Value, ForgeError> {
        match self {
            Shape::Script => call_result(server, tool, result),
            Shape::Mcp => mcp_result(server, tool, result),
        }
    }
}

/// A `tools/call` result (as JSON) kept as the server sent it (content
/// blocks, `structuredContent`), for a direct tool's client; an error
/// result becomes the same `TOOL_ERROR` a script gets.
pub fn mcp_result(server: &str, tool: &str, result: Value) -> Result<Value, ForgeError> {
    let failed = result
        .as_object()
        .is_none_or(|o| o.get("isError").and_then(Value::as_bool) == Some(true));
    if failed {
        return call_result(server, tool, result);
    }
    Ok(result)
}

/// Converts a `tools/call` result (as JSON) from `server`'s `tool`.
pub fn call_result(server: &str, tool: &str, result: Value) -> Result<Value, ForgeError> {
    let Value::Object(mut result) = result else {
        return Err(ForgeError::new(
            ErrorCode::InvalidResponse,
            format!("{server}.{tool} returned a result that is not an object"),
        ));
    };
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let content = match result.remove("content") {
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    };
    if is_error {
        let text: Vec<String> = content
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let failed = ForgeError::new(ErrorCode::ToolError, format!("{server}.{tool} failed: "))
            .suggest("the downstream tool reported this error; check the arguments against manifest.tool(...)");
        // A structured error (a YAML config dump, a traceback as an object) is
        // quoted as JSON: the boundary masks a sensitive field whatever its value.
        return Err(if !text.is_empty() {
            ForgeError {
                message: format!("{}{}", failed.message, text.join("\n")),
                ..failed
            }
        } else if let Some(structured) = result.remove("structuredContent") {
            failed.quote(structured)
        } else {
            ForgeError {
                message: format!(
                    "{}the tool reported an error without a message",
                    failed.message
                ),
                ..failed
            }
        });
    }
    if let Some(structured) = result.remove("structuredContent") {
        return Ok(structured);
    }
    Ok(collapse(content.into_iter().map(block).collect()))
}

/// Converts a `resources/read` result (as JSON).
pub fn read_result(result: Value) -> Value {
    let contents = match result {
        Value::Object(mut o) => match o.remove("contents") {
            Some(Value::Array(c)) => c,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    collapse(contents.into_iter().map(resource_contents).collect())
}

fn collapse(mut values: Vec<Value>) -> Value {
    match values.len() {
        0 => Value::Null,
        1 => values.pop().unwrap_or(Value::Null),
        _ => Value::Array(values),
    }
}

/// Text parsed as JSON when all of it is JSON, else the text itself.
fn text_value(text: String) -> Value {
    let trimmed = text.trim_start();
    let looks_json = trimmed.starts_with(['{', '[', '"'])
        || matches!(trimmed, "true" | "false" | "null")
        || trimmed.parse::<f64>().is_ok();
    if looks_json && let Ok(v) = serde_json::from_str(&text) {
        return v;
    }
    Value::String(text)
}

fn block(b: Value) -> Value {
    let Value::Object(mut b) = b else {
        return b;
    };
    match b.get("type").and_then(Value::as_str) {
        Some("text") => match b.remove("text") {
            Some(Value::String(t)) => text_value(t),
            other => other.unwrap_or(Value::Null),
        },
        Some(kind @ ("image" | "audio")) => {
            let kind = kind.to_string();
            binary_meta(&kind, &mut b, "data")
        }
        Some("resource") => match b.remove("resource") {
            Some(r) => resource_contents(r),
            None => Value::Null,
        },
        Some("resource_link") => {
            let mut o = Map::new();
            o.insert("type".into(), "resource_link".into());
            for k in ["uri", "name", "title", "description", "mimeType", "size"] {
                if let Some(v) = b.remove(k) {
                    o.insert(k.into(), v);
                }
            }
            Value::Object(o)
        }
        _ => Value::Object(b),
    }
}

/// A `resources/read` entry: text (JSON-parsed when its MIME type says JSON
/// or it parses cleanly) or blob metadata.
fn resource_contents(r: Value) -> Value {
    let Value::Object(mut r) = r else {
        return r;
    };
    if let Some(Value::String(text)) = r.remove("text") {
        let json_mime = r
            .get("mimeType")
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains("json"));
        if json_mime && let Ok(v) = serde_json::from_str(&text) {
            return v;
        }
        return text_value(text);
    }
    if r.contains_key("blob") {
        return binary_meta("blob", &mut r, "blob");
    }
    Value::Object(r)
}

/// `{type, mimeType, size, uri?}` for base64 data in `field`, with
/// Forgemax's fields for the same content: `data` (at most
/// [`MAX_BINARY_DATA`] bytes of base64, else `truncated` and
/// `original_size`), `mime_type`, and for a blob `_type` and `_encoding`.
fn binary_meta(kind: &str, b: &mut Map<String, Value>, field: &str) -> Value {
    let data = match b.remove(field) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let padding = data.bytes().rev().take_while(|&c| c == b'=').count();
    let size = (data.len() / 4 * 3).saturating_sub(padding.min(2));
    let mime = b.get("mimeType").cloned().unwrap_or(Value::Null);
    let mut o = json!({"type": kind, "mimeType": mime, "size": size});
    if let Some(uri) = b.get("uri") {
        o["uri"] = uri.clone();
    }
    if kind == "blob" {
        o["_type"] = "blob".into();
        o["_encoding"] = "base64".into();
    }
    o["mime_type"] = mime;
    if data.len() <= MAX_BINARY_DATA {
        o["data"] = data.into();
    } else {
        o["truncated"] = true.into();
        o["original_size"] = data.len().into();
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_wins() {
        let r = json!({"content": [{"type": "text", "text": "ignored"}], "structuredContent": {"a": 1}});
        assert_eq!(call_result("s", "t", r).unwrap(), json!({"a": 1}));
    }

    #[test]
    fn text_parses_as_json_when_it_is_json() {
        let one = |t: &str| {
            call_result("s", "t", json!({"content": [{"type": "text", "text": t}]})).unwrap()
        };
        assert_eq!(one("{\"x\": [1, 2]}"), json!({"x": [1, 2]}));
        assert_eq!(one("42"), json!(42));
        assert_eq!(one("Echo: hello"), json!("Echo: hello"));
        assert_eq!(one("[not json"), json!("[not json"));
        assert_eq!(
            call_result("s", "t", json!({"content": []})).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn several_blocks_become_an_array_and_binaries_metadata() {
        let r = json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://1", "mimeType": "application/json", "text": "{\"k\":1}"}},
            {"type": "resource_link", "uri": "test://2", "name": "two"}
        ]});
        let v = call_result("s", "t", r).unwrap();
        assert_eq!(v[0], json!("a"));
        assert_eq!(
            v[1],
            json!({"type": "image", "mimeType": "image/png", "size": 5, "mime_type": "image/png", "data": "aGVsbG8="})
        );
        assert_eq!(v[2]["size"], 3);
        assert_eq!(v[3], json!({"k": 1}));
        assert_eq!(
            v[4],
            json!({"type": "resource_link", "uri": "test://2", "name": "two"})
        );
    }

    #[test]
    fn is_error_becomes_a_tool_error() {
        let r = json!({"isError": true, "content": [{"type": "text", "text": "repo not found"}]});
        let e = call_result("github", "get", r).unwrap_err();
        assert_eq!(e.code, "TOOL_ERROR");
        assert!(
            e.message.contains("github.get failed: repo not found"),
            "{}",
            e.message
        );
        assert!(!e.retryable);
    }

    #[test]
    fn resources_convert_likewise() {
        assert_eq!(
            read_result(json!({"contents": [{"uri": "u", "text": "plain"}]})),
            json!("plain")
        );
        let blob = read_result(
            json!({"contents": [{"uri": "u", "blob": "AAAAAAAA", "mimeType": "application/octet-stream"}]}),
        );
        assert_eq!(
            blob,
            json!({"type": "blob", "mimeType": "application/octet-stream", "size": 6, "uri": "u",
                "_type": "blob", "_encoding": "base64", "mime_type": "application/octet-stream", "data": "AAAAAAAA"})
        );
        let big = "A".repeat(MAX_BINARY_DATA + 4);
        let image = call_result(
            "s",
            "t",
            json!({"content": [{"type": "image", "data": big, "mimeType": "image/png"}]}),
        )
        .unwrap();
        assert_eq!(image["truncated"], true);
        assert_eq!(image["original_size"], MAX_BINARY_DATA + 4);
        assert!(image.get("data").is_none());
    }
}
