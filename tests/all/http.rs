//! Streamable HTTP, both ways: quickforge serving MCP over HTTP to a real
//! client, and quickforge reaching downstream servers over streamable HTTP
//! and legacy HTTP+SSE (server-everything in its HTTP modes).

use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::mcp::*;

fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Starts `quickforge serve --http 127.0.0.1:0` and returns it with its URL.
async fn serve_http(config: &std::path::Path) -> (tokio::process::Child, String) {
    let mut cmd = quickforge_cmd(Some(config));
    let mut child = cmd
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(CALL_BOUND, lines.next_line())
        .await
        .expect("the server says where it listens")
        .unwrap()
        .expect("a line on stdout");
    let url = line.rsplit(' ').next().unwrap().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{line}"
    );
    (child, url)
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    code: &str,
) -> Value {
    let mut args = serde_json::Map::new();
    args.insert("code".into(), code.into());
    let r = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap();
    ok_value(&r)
}

#[tokio::test]
async fn quickforge_serves_streamable_http_with_a_stash_per_session() {
    tls();
    let dir = scratch("http-serve");
    let (mut child, url) = serve_http(&write_config(&dir, &everything())).await;
    let a = ().serve(StreamableHttpClientTransport::from_uri(url.as_str())).await.unwrap();
    let b = ().serve(StreamableHttpClientTransport::from_uri(url.as_str())).await.unwrap();
    let tools = a.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(),
        ["search", "execute"]
    );
    let echo = call(
        &a,
        "execute",
        r#"async () => forge.callTool("everything", "echo", { message: "over http" })"#,
    )
    .await;
    assert_eq!(echo, "Echo: over http");
    call(&a, "execute", r#"async () => forge.stash.put("who", "a")"#).await;
    assert_eq!(
        call(&a, "execute", r#"async () => forge.stash.get("who")"#).await,
        "a"
    );
    assert_eq!(
        call(&b, "execute", r#"async () => forge.stash.get("who")"#).await,
        Value::Null
    );
    child.start_kill().unwrap();
}

#[tokio::test]
async fn http_mode_rejects_foreign_hosts_and_origins() {
    tls();
    let dir = scratch("http-rebind");
    let (mut child, url) = serve_http(&write_config(&dir, "")).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |host: Option<&str>, origin: Option<&str>| {
        let mut req = http
            .post(url.as_str())
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(h) = host {
            req = req.header("host", h);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    assert_eq!(
        post(Some("evil.example"), None).await.unwrap().status(),
        403
    );
    assert_eq!(
        post(None, Some("http://evil.example"))
            .await
            .unwrap()
            .status(),
        403
    );
    assert!(
        post(None, Some("http://localhost:3000"))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    assert!(post(None, None).await.unwrap().status().is_success());
    child.start_kill().unwrap();
}

/// Starts server-everything in `mode` (streamableHttp or sse) on a free port.
async fn everything_http(mode: &str) -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    install_servers();
    let module =
        servers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let child = tokio::process::Command::new("node")
        .arg(module)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually(Duration::from_secs(20), || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    (child, port)
}

#[tokio::test]
async fn downstream_servers_over_streamable_http_and_legacy_sse() {
    let (_streamable, p1) = everything_http("streamableHttp").await;
    let (_sse, p2) = everything_http("sse").await;
    let dir = scratch("http-down");
    // One `url` key for both kinds: the SSE one is found by fallback, and
    // Forgemax's `transport = "sse"` is accepted.
    let config = format!(
        "[servers.modern]\nurl = \"http://127.0.0.1:{p1}/mcp\"\n\n[servers.legacy]\ntransport = \"sse\"\nurl = \"http://127.0.0.1:{p2}/sse\"\n"
    );
    let s = connect(&write_config(&dir, &config)).await;
    let status = s
        .search("async () => manifest.servers.map(s => [s.name, s.status, s.tools > 5])")
        .await;
    assert_eq!(
        status,
        json!([["legacy", "ready", true], ["modern", "ready", true]])
    );
    let v = s
        .execute(
            r#"async () => Promise.all([
                forge.callTool("modern", "echo", { message: "streamable" }),
                forge.callTool("legacy", "echo", { message: "sse" }),
            ])"#,
        )
        .await;
    assert_eq!(v, json!(["Echo: streamable", "Echo: sse"]));
}
