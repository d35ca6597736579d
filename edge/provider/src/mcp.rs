//! The little of MCP's streamable HTTP client the provider needs: the
//! JSON-RPC bodies of `initialize`, `notifications/initialized`,
//! `tools/call` and `resources/read`, and reading a reply that is either
//! `application/json` or a `text/event-stream` carrying the response.
//!
//! serde_json rather than rmcp's model types: rmcp 3.9's model pulls in
//! tokio, schemars and its transports' feature plumbing, which is a large
//! part of a component whose whole job is these four messages; the texts
//! are fixed by the MCP specification.

use serde_json::{Value, json};

use crate::http::Reply;

/// The protocol version the provider asks for (the newest the native
/// gateway's rmcp speaks with session-based servers).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The JSON-RPC id of `initialize`. Every other request carries its call's
/// id: ids must be unique within a session, because a server routes each
/// response to the stream of the request with that id (the TypeScript SDK
/// sends a response to the newest stream with its id, so five concurrent
/// calls sharing an id get one answer between them).
const INITIALIZE_ID: u64 = 0;

/// `initialize`.
pub fn initialize() -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": INITIALIZE_ID, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "quickforge-edge", "version": env!("CARGO_PKG_VERSION")}
        }
    })
    .to_string()
    .into_bytes()
}

/// `notifications/initialized`.
pub fn initialized() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        .to_string()
        .into_bytes()
}

/// Request `id` (unique in its session, never 0) with `method` and `params`.
pub fn request(id: u32, method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

/// How a reply ended.
pub enum Answer {
    /// The JSON-RPC `result`.
    Result(Value),
    /// A JSON-RPC `error`: its code, message and data.
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// HTTP 404 on a request that carried a session: the server forgot it.
    SessionGone,
    /// Anything else that is not an answer: why.
    Broken(String),
}

/// The JSON-RPC response to request `id` (`None`: `initialize`) in
/// `reply` (JSON or SSE).
pub fn answer(reply: &Reply, id: Option<u32>, had_session: bool) -> Answer {
    let id = id.map_or(INITIALIZE_ID, u64::from);
    if reply.status == 404 && had_session {
        return Answer::SessionGone;
    }
    if !(200..300).contains(&reply.status) {
        return Answer::Broken(format!("the server answered HTTP {}", reply.status));
    }
    let text = String::from_utf8_lossy(&reply.body).replace("\r\n", "\n");
    let messages: Vec<Value> = if reply.content_type.starts_with("text/event-stream") {
        sse_data(&text)
            .filter_map(|d| serde_json::from_str(&d).ok())
            .collect()
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        match serde_json::from_str(&text) {
            Ok(Value::Array(batch)) => batch,
            Ok(v) => vec![v],
            Err(_) => return Answer::Broken("the server's answer is not JSON".into()),
        }
    };
    let Some(mut response) = messages
        .into_iter()
        .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
    else {
        return Answer::Broken("the server sent no response".into());
    };
    if let Some(error) = response.get_mut("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("unknown error")
            .to_string();
        return Answer::Error {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message,
            data: error.get_mut("data").map(Value::take),
        };
    }
    match response.get_mut("result") {
        Some(result) => Answer::Result(result.take()),
        None => Answer::Broken("the server's response has neither result nor error".into()),
    }
}

/// The `data` of each event in an SSE stream (multi-line data joined by `\n`).
///
/// Hand-written (the SSE format is a dozen lines of spec): the reply is
/// already whole in memory, so a streaming parser crate adds nothing.
fn sse_data(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("\n\n").filter_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.trim_end_matches('\r').strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        (!data.is_empty()).then(|| data.join("\n"))
    })
}
