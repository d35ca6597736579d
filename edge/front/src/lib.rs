//! quickforge at the edge, the front: serves MCP streamable HTTP on
//! `wasi:http/incoming-handler` with the native gateway's two tools,
//! `search` and `execute`, and `forge.d.ts` as initialize instructions.
//!
//! Stateless: no `Mcp-Session-Id` is issued, every POST carries one
//! JSON-RPC message and gets its answer as `application/json`. A
//! `tools/call` runs the guest's `run` once; a second `run` in the same
//! instance is refused, so a runtime that reuses instances never hands one
//! request the JS state of another.

#![allow(missing_docs)] // the generated bindings

mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/sandbox.wit", "../../wit/edge"],
        world: "quickforge:edge/front",
        generate_all,
    });
}

mod answer;
mod wire;

use std::cell::Cell;

use bindings::exports::wasi::http::incoming_handler::Guest;
use bindings::quickforge::edge::control;
use bindings::quickforge::sandbox::types::Mode;
use bindings::wasi::http::types::{IncomingRequest, Method, ResponseOutparam};
use serde_json::{Value, json};

/// The TypeScript definitions of the script API: the native gateway's file.
const FORGE_D_TS: &str = include_str!("../../../host/forge.d.ts");

/// Protocol versions this endpoint answers in, newest first; a client
/// asking for another gets the newest.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Largest request body, bytes: the largest script plus its JSON-RPC
/// envelope and escaping, with room to spare.
const MAX_BODY: usize = 1 << 20;

thread_local! {
    /// Whether this instance already ran a script.
    static RAN: Cell<bool> = const { Cell::new(false) };
}

struct Front;

impl Guest for Front {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let authorization = wire::header(&request, "authorization");
        if !control::authorize(authorization.as_deref()) {
            return wire::respond(
                out,
                401,
                &[("www-authenticate", "Bearer")],
                b"{\"error\":\"a valid bearer token is required\"}",
            );
        }
        if !matches!(request.method(), Method::Post) {
            // No server-to-client stream: every answer rides its POST.
            return wire::respond(out, 405, &[("allow", "POST")], b"");
        }
        let body = match wire::read_body(request, MAX_BODY) {
            Ok(b) => b,
            Err(why) => {
                return wire::respond(out, 413, &[], json!({"error": why}).to_string().as_bytes());
            }
        };
        let message: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) => {
                let e = rpc_error(Value::Null, -32700, "the body is not JSON");
                return wire::json(out, 400, &e);
            }
        };
        let Some(id) = message.get("id").cloned() else {
            // A notification (`notifications/initialized`, cancellations).
            return wire::respond(out, 202, &[], b"");
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let reply = match dispatch(method, &params) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, text)) => rpc_error(id, code, &text),
        };
        wire::json(out, 200, &reply)
    }
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Answers one request, or a JSON-RPC error code and message.
fn dispatch(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = VERSIONS
                .iter()
                .find(|v| Some(**v) == asked)
                .unwrap_or(&VERSIONS[0]);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "quickforge-edge", "version": env!("CARGO_PKG_VERSION")},
                "instructions": instructions(),
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => call(params),
        other => Err((-32601, format!("method {other:?} is not served here"))),
    }
}

/// Initialize's instructions: how to work, then the API types.
fn instructions() -> String {
    format!(
        "quickforge at the edge: downstream MCP tools are reached through code, not listed here.\n\
         1. `search`: run `async () => manifest.search(\"what you need\")`, then `manifest.tool(server, tool)` for the exact signature.\n\
         2. `execute`: run an async arrow function that calls `forge.callTool(server, tool, args)`; chain and combine calls in one script, return only what you need.\n\
         Failures throw ForgeError (code, message, retryable, suggestion). {}\n\
         ```ts\n{FORGE_D_TS}```",
        if control::stash_kept() {
            "forge.stash keeps JSON between executions; pass a result's `stash` back as execute's `stash` to reach it again."
        } else {
            "Here forge.stash lives for one execute only."
        }
    )
}

/// The two tools, as the native gateway lists them.
fn tools() -> Value {
    // As natively (host/server/mod.rs `code_schema`): `execute` also takes
    // the optional stash handle.
    let schema = |what: &str, stash: bool| {
        let mut properties = json!({"code": {"type": "string", "description": what}});
        if stash {
            properties["stash"] =
                json!({"type": "string", "description": "`stash` from an earlier result"});
        }
        json!({
            "type": "object",
            "properties": properties,
            "required": ["code"],
            "additionalProperties": false
        })
    };
    json!([
        {
            "name": "search",
            "description": "Find downstream tools. `code` is a JS async arrow function using `manifest` \
                (servers, search(query), tool(server, name)); it returns JSON. No tool calls.",
            "inputSchema": schema("e.g. async () => manifest.search(\"create issue\")", false),
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "execute",
            "description": "Run a JS async arrow function that calls downstream tools with \
                `await forge.callTool(server, tool, args)` and returns JSON. Chain many calls in one script.",
            "inputSchema": schema("e.g. async () => (await forge.callTool(\"github\", \"list_issues\", {repo: \"o/r\"})).length", true),
        }
    ])
}

/// `tools/call` of `search` or `execute`: one run of the guest.
fn call(params: &Value) -> Result<Value, (i64, String)> {
    let mode = match params.get("name").and_then(Value::as_str) {
        Some("search") => Mode::Search,
        Some("execute") => Mode::Execute,
        other => {
            return Err((
                -32602,
                format!("unknown tool {other:?}: use search or execute"),
            ));
        }
    };
    let Some(code) = params
        .get("arguments")
        .and_then(|a| a.get("code"))
        .and_then(Value::as_str)
    else {
        return Err((-32602, "`code` (a string) is required".into()));
    };
    let max = control::max_code_bytes() as usize;
    if code.len() > max {
        return Ok(answer::failure(
            quickforge_core::execution::ErrorKind::CodeTooLarge,
            &format!(
                "the code is {} bytes, over the {max}-byte limit",
                code.len()
            ),
        ));
    }
    if RAN.replace(true) {
        return Err((
            -32603,
            "this instance already ran a script; the runtime must give each request a fresh instance".into(),
        ));
    }
    match params.get("arguments").and_then(|a| a.get("stash")) {
        None | Some(Value::Null) => {}
        Some(Value::String(handle)) if matches!(mode, Mode::Execute) => {
            control::use_stash(handle).map_err(|e| (-32602, e))?;
        }
        Some(Value::String(_)) => {
            return Err((
                -32602,
                "`stash` is an argument of execute, not of search".into(),
            ));
        }
        Some(_) => {
            return Err((
                -32602,
                "`stash` must be a string: the `stash` value of an earlier result".into(),
            ));
        }
    }
    let options = control::begin(mode).map_err(|e| (-32603, e))?;
    let outcome = bindings::run(&options, code);
    let report = control::finish();
    Ok(answer::result(outcome, &report))
}

bindings::export!(Front with_types_in bindings);
