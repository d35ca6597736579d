//! Both protocol eras end to end (issue 20, "Tests"): the official MCP
//! Python SDK (tests/clients/sdk_client.py, pinned in
//! tests/servers/requirements.txt) at 2026-07-28 and at 2025-11-25, and the
//! rmcp client in `Auto` and `Initialize` modes, each over stdio and
//! streamable HTTP against the real binary. In every mode a stash put in
//! one `execute` is read in a later one: by session (2025 era, and any
//! stdio connection) and by the handle the result carries (every mode).

use std::process::Stdio;

use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::handles::{Client, execute, handle_of};
use crate::http::{serve_http, tls};
use crate::mcp::*;

/// The stash steps every client runs: put, read without the handle, read
/// with the handle the put returned.
const PUT: &str = r#"async () => { await forge.stash.put("plan", {step: 2}); return "kept"; }"#;
const GET: &str = r#"async () => forge.stash.get("plan")"#;

/// How a client reaches the gateway.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Stdio,
    Http,
}

/// Runs the Python SDK client at `era` against a gateway on `wire` (an
/// empty config) with `steps` (see sdk_client.py) and returns its one JSON
/// line per step.
async fn python_sdk(wire: Wire, era: &str, steps: Value) -> Vec<Value> {
    install_servers();
    let dir = scratch("eras-sdk");
    let config = write_config(&dir, "");
    let mut http = None;
    let mut args: Vec<std::ffi::OsString> = vec![era.into()];
    match wire {
        Wire::Http => {
            let (child, url) = serve_http(&config).await;
            args.push(url.into());
            http = Some(child);
        }
        Wire::Stdio => args.extend(sdk_stdio_args(&config)),
    }
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let lines = python_client("sdk_client.py", &args, &steps, CALL_BOUND).await;
    if let Some(mut server) = http {
        server.start_kill().unwrap();
    }
    assert_eq!(lines.len(), steps.as_array().unwrap().len(), "{lines:#?}");
    lines
}

/// The handle an SDK step's result carries, in `structuredContent.stash`
/// and the last text block.
fn sdk_handle(step: &Value) -> &str {
    let handle = step["structuredContent"]["stash"]
        .as_str()
        .unwrap_or_else(|| panic!("no stash handle in {step:#}"));
    assert_eq!(
        step["text"].as_array().unwrap().last().unwrap(),
        &json!(format!("stash: {handle}"))
    );
    handle
}

/// The Python SDK at `era` over `wire`: tools/list shows exactly search and
/// execute, every step runs at the era asked for, execute works, and the
/// stash put in one execute is read in a later one with the returned
/// handle; without the handle, it is read only where a session or a
/// connection holds it (`kept_without_handle`).
async fn sdk_round_trip(wire: Wire, era: &str, kept_without_handle: bool) {
    let steps = json!([
        {"list": true},
        {"execute": PUT},
        {"execute": GET},
        {"execute": GET, "stash_from": 1},
    ]);
    let out = python_sdk(wire, era, steps).await;
    for step in &out {
        assert_eq!(step["protocolVersion"], era, "{step:#}");
    }
    assert_eq!(out[0]["tools"], json!(["search", "execute"]));
    if era == "2026-07-28" {
        // The list cannot change while the gateway runs, and says so.
        assert_eq!(
            (&out[0]["ttlMs"], &out[0]["cacheScope"]),
            (&json!(3_600_000), &json!("public"))
        );
    }
    assert_eq!(out[1]["isError"], false, "{:#}", out[1]);
    assert_eq!(out[1]["structuredContent"]["result"], "kept");
    let handle = sdk_handle(&out[1]);
    assert_eq!(out[3]["isError"], false, "{:#}", out[3]);
    assert_eq!(out[3]["structuredContent"]["result"], json!({"step": 2}));
    assert_eq!(sdk_handle(&out[3]), handle);
    if kept_without_handle {
        assert_eq!(out[2]["structuredContent"]["result"], json!({"step": 2}));
        assert_eq!(sdk_handle(&out[2]), handle);
    } else {
        assert_eq!(out[2]["structuredContent"]["result"], Value::Null);
        assert_ne!(sdk_handle(&out[2]), handle, "a fresh stash of its own");
    }
}

/// Weakness: the current revision was refused (`server/discover` at
/// 2026-07-28 got -32022, and the SDK fell back to 2025-11-25), and a
/// 2026 client over HTTP lost the stash on every call, since each request
/// is served by a server of its own. Now the SDK speaks 2026-07-28, and
/// carries its stash by handle; without the handle a request stands alone.
#[tokio::test]
async fn python_sdk_at_2026_07_28_over_http_carries_the_stash_by_handle() {
    sdk_round_trip(Wire::Http, "2026-07-28", false).await;
}

/// Weakness: the current revision was refused over stdio too. On stdio
/// the stash of the connection is kept without a handle as well.
#[tokio::test]
async fn python_sdk_at_2026_07_28_over_stdio() {
    sdk_round_trip(Wire::Stdio, "2026-07-28", true).await;
}

/// The 2025 era keeps working beside the new one over HTTP: a session
/// keeps its stash, and the handle reaches it too.
#[tokio::test]
async fn python_sdk_at_2025_11_25_over_http() {
    sdk_round_trip(Wire::Http, "2025-11-25", true).await;
}

/// The 2025 era keeps working beside the new one over stdio.
#[tokio::test]
async fn python_sdk_at_2025_11_25_over_stdio() {
    sdk_round_trip(Wire::Stdio, "2025-11-25", true).await;
}

/// rmcp's `Auto` mode as a 2026 client would set it: discover, preferring
/// the current revision, and fall back to initialize.
fn auto() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: None,
    }
}

/// The rmcp client, connected in `mode`: it runs at `era`, sees exactly
/// search and execute, and reads back with the handle what it stashed;
/// without the handle only where a session or connection keeps it.
async fn rmcp_round_trip(client: &Client, era: ProtocolVersion, kept_without_handle: bool) {
    let info = client.peer_info().expect("the server is known");
    assert_eq!(info.protocol_version, era);
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(),
        ["search", "execute"]
    );
    let put = execute(client, PUT, None).await;
    assert_eq!(ok_value(&put), "kept");
    let handle = handle_of(&put);
    let carried = execute(client, GET, Some(&handle)).await;
    assert_eq!(ok_value(&carried), json!({"step": 2}));
    assert_eq!(handle_of(&carried), handle);
    let bare = execute(client, GET, None).await;
    if kept_without_handle {
        assert_eq!(ok_value(&bare), json!({"step": 2}));
    } else {
        assert_eq!(ok_value(&bare), Value::Null, "each request stands alone");
        assert_ne!(handle_of(&bare), handle);
    }
}

/// Weakness: an rmcp client in `Auto` mode ended up sending every call
/// without a session (full `_meta` on each request), so over HTTP three
/// calls were three empty stashes. Now `Auto` reaches 2026-07-28 and keeps
/// its stash by the returned handle, while `Initialize` keeps a 2025
/// session whose stash needs no handle, on one endpoint.
#[tokio::test]
async fn rmcp_client_in_auto_and_initialize_modes_over_http() {
    tls();
    let dir = scratch("eras-rmcp-http");
    let (mut child, url) = serve_http(&write_config(&dir, "")).await;
    let transport = || StreamableHttpClientTransport::from_uri(url.as_str());
    let modern = ().serve_with_lifecycle(transport(), auto()).await.unwrap();
    rmcp_round_trip(&modern, ProtocolVersion::V_2026_07_28, false).await;
    let legacy =
        ().serve_with_lifecycle(transport(), ClientLifecycleMode::Initialize)
            .await
            .unwrap();
    rmcp_round_trip(&legacy, ProtocolVersion::V_2025_11_25, true).await;
    child.start_kill().unwrap();
}

/// Weakness: over stdio too, `Auto` was held to 2025-11-25. Both modes
/// reach `execute`; the connection keeps its stash, and the handle works.
#[tokio::test]
async fn rmcp_client_in_auto_and_initialize_modes_over_stdio() {
    let dir = scratch("eras-rmcp-stdio");
    let config = write_config(&dir, "");
    for (mode, era) in [
        (auto(), ProtocolVersion::V_2026_07_28),
        (
            ClientLifecycleMode::Initialize,
            ProtocolVersion::V_2025_11_25,
        ),
    ] {
        let mut child = quickforge_cmd(Some(&config))
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = ().serve_with_lifecycle(io, mode).await.unwrap();
        rmcp_round_trip(&client, era, true).await;
        drop(client);
        child.start_kill().unwrap();
    }
}

/// A 2026-07-28 request for `version`, with the per-request `_meta` that
/// era uses in place of `initialize`.
fn enveloped(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "eras-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}})
}

/// The error of a -32022 answer: it names the version asked for and lists
/// both eras' revisions as supported.
fn assert_unsupported(answer: &Value) {
    let error = &answer["error"];
    assert_eq!(error["code"], -32022, "{answer:#}");
    assert_eq!(error["data"]["requested"], "2099-01-01");
    let supported = error["data"]["supported"].as_array().unwrap();
    for era in ["2025-11-25", "2026-07-28"] {
        assert!(supported.contains(&json!(era)), "{answer:#}");
    }
}

/// Weakness: enveloped requests of the new era were refused with -32022
/// even at 2026-07-28. Now a version quickforge does not speak gets
/// -32022 with the supported list (both revisions), over HTTP and stdio,
/// while the same request at 2026-07-28 is answered.
#[tokio::test]
async fn an_unsupported_version_in_meta_gets_32022_with_the_supported_list() {
    tls();
    let dir = scratch("eras-32022");
    let config = write_config(&dir, "");
    let (mut server, url) = serve_http(&config).await;
    let http = reqwest::Client::new();
    let post = |version: &'static str| {
        http.post(url.as_str())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", "tools/list")
            .json(&enveloped(version))
            .send()
    };
    let refused = post("2099-01-01").await.unwrap();
    assert_eq!(refused.status(), 400);
    assert_unsupported(&refused.json().await.unwrap());
    let served = post("2026-07-28").await.unwrap();
    assert_eq!(served.status(), 200);
    let body = served.text().await.unwrap();
    assert!(body.contains(r#""name":"execute""#), "{body}");
    server.start_kill().unwrap();

    // stdio: one JSON-RPC message a line, each answered on stdout.
    let mut child = quickforge_cmd(Some(&config))
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for version in ["2099-01-01", "2026-07-28"] {
        let line = format!("{}\n", enveloped(version));
        stdin.write_all(line.as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(CALL_BOUND, lines.next_line())
            .await
            .expect("answered in time")
            .unwrap()
            .expect("an answer line");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        if version == "2099-01-01" {
            assert_unsupported(&answer);
        } else {
            assert_eq!(
                answer["result"]["tools"][1]["name"], "execute",
                "{answer:#}"
            );
        }
    }
    child.start_kill().unwrap();
}

/// One POST of `body` to `url` with `headers`; the answer with id `id`
/// (from a JSON or an SSE body).
async fn post_answer(url: &str, headers: &[(&str, &str)], body: Value, id: i64) -> Value {
    let mut post = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    for (name, value) in headers {
        post = post.header(*name, *value);
    }
    let text = post.send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no answer {id} in {text}"))
}

/// Reproduces (review of issue 23's session-derived stash): a 2025-era
/// session's default stash has a handle derived from its session id; a
/// stateless 2026-era request that put that session's id in an
/// `mcp-session-id` header must not get the same derivation, or anyone who
/// saw a session id would reach its stash without `[auth]`. The session
/// reads its value; the stateless request with its id reads nothing.
#[tokio::test]
async fn a_stateless_request_naming_a_session_id_gets_no_session_stash() {
    tls();
    let dir = scratch("eras-session-id-stateless");
    let config = write_config(&dir, "");
    let (mut server, url) = serve_http(&config).await;
    let init = reqwest::Client::new()
        .post(url.as_str())
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let in_session = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    reqwest::Client::new()
        .post(url.as_str())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session.as_str())
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    let call = |id: i64, code: &str, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "execute", "arguments": {"code": code}, "_meta": meta}})
    };
    let put =
        "async () => { await forge.stash.put('own', 'secret'); return forge.stash.get('own') }";
    let answer = post_answer(&url, &in_session, call(2, put, json!({})), 2).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "secret",
        "{answer}"
    );
    let get = "async () => forge.stash.get('own')";
    let answer = post_answer(&url, &in_session, call(3, get, json!({})), 3).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "secret",
        "the session reads its own stash: {answer}"
    );
    let modern = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "eras-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let stateless = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "execute"),
    ];
    let answer = post_answer(&url, &stateless, call(4, get, modern), 4).await;
    assert_eq!(
        answer["result"]["isError"], false,
        "the stateless request is served: {answer}"
    );
    assert_eq!(
        answer["result"]["structuredContent"]["result"],
        Value::Null,
        "a stateless request reached the session's stash by naming its id: {answer}"
    );
    server.start_kill().unwrap();
}
