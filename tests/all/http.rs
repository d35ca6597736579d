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

pub(crate) fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Starts `quickforge serve --http 127.0.0.1:0` and returns it with its URL.
pub(crate) async fn serve_http(config: &std::path::Path) -> (tokio::process::Child, String) {
    let mut cmd = quickforge_cmd(Some(config));
    cmd.stderr(Stdio::inherit());
    serve_http_with(cmd).await
}

/// Starts `cmd` (a `quickforge` command with its config, environment and
/// stderr set) as `serve --http 127.0.0.1:0`, and returns it with its URL.
pub(crate) async fn serve_http_with(
    mut cmd: tokio::process::Command,
) -> (tokio::process::Child, String) {
    let mut child = cmd
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
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

/// A bare 2025-era `initialize` POST to `url`, as a client opening a
/// session sends it; the raw response.
pub(crate) async fn raw_initialize(url: &str) -> reqwest::Response {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn call(
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

/// Listens on a free port and counts connections, answering none.
async fn counting_listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((_conn, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (port, hits)
}

/// An HTTP endpoint that answers every request with `status` and a
/// `Location` pointing at `to`, as a moved or hijacked MCP endpoint would.
async fn redirecting_endpoint(status: &'static str, to: String) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let to = to.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                // The headers are enough to answer; the body is not read.
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 {status}\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = conn.write_all(answer.as_bytes()).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test]
async fn redirects_from_downstream_servers_are_not_followed() {
    // Two endpoints redirect, temporarily and permanently, to another
    // origin, with the configured credentials on the original request. The
    // other origin must never see a connection, let alone the token.
    let (target, hits) = counting_listener().await;
    let temporary = redirecting_endpoint(
        "307 Temporary Redirect",
        format!("http://127.0.0.1:{target}/mcp"),
    )
    .await;
    let permanent = redirecting_endpoint(
        "308 Permanent Redirect",
        format!("http://127.0.0.1:{target}/mcp"),
    )
    .await;
    let dir = scratch("http-redirect");
    let config = format!(
        "[servers.moved]\nurl = \"http://127.0.0.1:{temporary}/mcp\"\nheaders = {{ Authorization = \"Bearer redirect-secret\" }}\n\n\
         [servers.gone]\nurl = \"http://127.0.0.1:{permanent}/mcp\"\nheaders = {{ Authorization = \"Bearer redirect-secret\" }}\n\n{}",
        fixture("fx", &[])
    );
    let s = connect(&write_config(&dir, &config)).await;
    let servers = eventually(Duration::from_secs(30), || async {
        let v = s
            .search("async () => manifest.servers.map(s => [s.name, s.status, s.error ?? null])")
            .await;
        let settled = v.as_array().unwrap().iter().all(|s| s[1] != "connecting");
        settled.then_some(v)
    })
    .await;
    let servers = servers.as_array().unwrap();
    for name in ["moved", "gone"] {
        let entry = servers.iter().find(|s| s[0] == name).unwrap();
        assert_eq!(entry[1], "unavailable", "{entry}");
        let why = entry[2].as_str().unwrap_or_default();
        assert!(
            why.contains("redirect") && why.contains("set `url` to the final address"),
            "the reason names the redirect and the fix: {entry}"
        );
        assert!(!why.contains("redirect-secret"), "{why}");
    }
    let e = s
        .execute_err(r#"async () => { await forge.callTool("moved", "echo", {message: "x"}); }"#)
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("unavailable"),
        "{e}"
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the redirect target was never contacted"
    );
    // The gateway still serves its healthy server.
    assert_eq!(
        s.execute(r#"async () => (await forge.callTool("fx", "whoami", {})) !== undefined"#)
            .await,
        true
    );
}

// Slow and many clients (`[http]`; red team, issue 38 item 7): a client
// that trickles its headers, one whose body stalls, and connections past
// the cap are let go within the configured time, and the gateway serves a
// normal client throughout.

/// `host:port` of a `http://host:port/mcp` URL.
fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}

/// Reads `stream` until the server closes it (or resets it), at most
/// `bound`: what the server sent, or `None` if it is still open.
async fn closed_within(stream: &mut tokio::net::TcpStream, bound: Duration) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(bound, read).await.ok().map(|()| got)
}

/// A normal MCP client opens a session and runs a script.
async fn still_serves(url: &str) {
    let client = tokio::time::timeout(
        CALL_BOUND,
        ().serve(StreamableHttpClientTransport::from_uri(url)),
    )
    .await
    .expect("the session opens in time")
    .unwrap();
    assert_eq!(
        call(&client, "execute", "async () => 1 + 1").await,
        json!(2)
    );
    client.cancel().await.unwrap();
}

/// Opens a connection and sends a request head one byte every 200 ms,
/// never finishing it; returns how long the server kept the connection
/// open, or `None` if it was still open after 15 s.
async fn trickle(addr: String) -> Option<Duration> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = std::time::Instant::now();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    let mut buf = [0u8; 1024];
    for i in 0.. {
        if started.elapsed() > Duration::from_secs(15) {
            return None;
        }
        let byte = head.get(i).copied().unwrap_or(b'a');
        if stream.write_all(&[byte]).await.is_err() {
            return Some(started.elapsed());
        }
        // Closed: end of stream or reset. An answer or no answer yet: on.
        let read = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
        if let Ok(Ok(0) | Err(_)) = read {
            return Some(started.elapsed());
        }
    }
    unreachable!()
}

#[tokio::test]
async fn clients_trickling_their_headers_are_disconnected() {
    tls();
    let dir = scratch("http-trickle");
    let (mut child, url) = serve_http(&write_config(
        &dir,
        "[http]\nheader_read_timeout_secs = 1\n",
    ))
    .await;
    let tricklers: Vec<_> = (0..8)
        .map(|_| tokio::spawn(trickle(authority(&url))))
        .collect();
    // Served while they trickle, and after.
    still_serves(&url).await;
    for trickler in tricklers {
        let open = trickler.await.unwrap();
        assert!(
            open.is_some_and(|d| d < Duration::from_secs(10)),
            "a connection trickling its headers was kept open for {open:?} (header_read_timeout_secs = 1)"
        );
    }
    still_serves(&url).await;
    child.start_kill().unwrap();
}

#[tokio::test]
async fn a_request_body_that_stalls_is_answered_408() {
    use tokio::io::AsyncWriteExt;
    tls();
    let dir = scratch("http-body-stall");
    let (mut child, url) =
        serve_http(&write_config(&dir, "[http]\nbody_read_timeout_secs = 1\n")).await;
    let mut stream = tokio::net::TcpStream::connect(authority(&url))
        .await
        .unwrap();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n\
              {\"jsonrpc\": \"2.0\", ",
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let answer = closed_within(&mut stream, Duration::from_secs(10))
        .await
        .expect("the connection is closed within 10 s (body_read_timeout_secs = 1)");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("body_read_timeout_secs"),
        "the answer names the setting: {answer}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "not before the deadline"
    );
    still_serves(&url).await;
    child.start_kill().unwrap();
}

#[tokio::test]
async fn connections_past_the_cap_are_refused_and_the_gateway_recovers() {
    use tokio::io::AsyncWriteExt;
    tls();
    let dir = scratch("http-cap");
    // The held connections send nothing, so the header timer must outlast the test's checks.
    let (mut child, url) = serve_http(&write_config(
        &dir,
        "[http]\nmax_connections = 4\nheader_read_timeout_secs = 60\n",
    ))
    .await;
    let addr = authority(&url);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    for _ in 0..3 {
        let mut extra = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let answer = closed_within(&mut extra, Duration::from_secs(5))
            .await
            .expect("a connection past the cap is closed at once");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
            "{answer}"
        );
    }
    // The four held connections are still served.
    let mut first = held.remove(0);
    first
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = closed_within(&mut first, Duration::from_secs(10))
        .await
        .expect("a held connection is answered");
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    // When they go, their slots come back.
    drop(held);
    let health = url.replace("/mcp", "/health");
    eventually(Duration::from_secs(10), || async {
        reqwest::get(health.as_str())
            .await
            .is_ok_and(|r| r.status().is_success())
            .then_some(())
    })
    .await;
    still_serves(&url).await;
    child.start_kill().unwrap();
}
