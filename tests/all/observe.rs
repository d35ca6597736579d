//! The log's JSON format (issue 21, item 4), through the real binary.

use serde_json::Value;

use crate::mcp::*;

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

/// Runs `quickforge run -` on `code` with `config` and `args` before the
/// subcommand; its stdout and stderr.
async fn run(config: &std::path::Path, args: &[&str], code: &str) -> (String, String) {
    let mut cmd = quickforge_cmd(Some(config));
    cmd.args(args)
        .args(["run", "-"])
        .env("QUICKFORGE_LOG", "quickforge=info,warn");
    let out = output_with_stdin(&mut cmd, code.as_bytes()).await;
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `[log] format = "json"`: every line on stderr is one JSON object with
/// the level, the message and its fields, still redacted (a secret in a
/// downstream error is masked inside the string, and the line stays valid
/// JSON); stdout still carries only the result. `--log-format text`
/// overrides the file. Reproduces: no structured log format for log
/// collectors.
#[tokio::test]
async fn json_logs_are_one_redacted_object_a_line_on_stderr() {
    let dir = scratch("log-json");
    // A command that cannot start, named like a token: its error is logged.
    let config = write_config(
        &dir,
        &format!("[log]\nformat = \"json\"\n[servers.leaky]\ncommand = \"{TOKEN}\"\n"),
    );
    let (stdout, stderr) = run(&config, &[], "async () => 1 + 1").await;
    assert_eq!(stdout.trim(), "2");
    assert!(!stderr.contains(TOKEN), "{stderr}");
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let failed = lines
        .iter()
        .find(|l| l["fields"]["server"] == "leaky")
        .unwrap_or_else(|| panic!("no line about the server: {stderr}"));
    assert_eq!(failed["level"], "WARN", "{failed}");
    let message = failed["fields"]["message"].as_str().unwrap();
    assert!(message.contains("could not connect"), "{message}");

    let (stdout, stderr) = run(&config, &["--log-format", "text"], "async () => 3").await;
    assert_eq!(stdout.trim(), "3");
    let warn = stderr
        .lines()
        .find(|l| l.contains("could not connect"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(serde_json::from_str::<Value>(warn).is_err(), "{warn}");
    assert!(!stderr.contains(TOKEN), "{stderr}");
}

/// W3C trace context end to end: the client's `traceparent` and
/// `tracestate` in the `execute` request's `_meta` reach the downstream
/// server's `tools/call` in its `_meta`, with the client's trace id, a new
/// parent span id (the gateway's span for that call, one per call) and the
/// same flags and state; the audit line carries the trace id; a request
/// without one starts a fresh trace, which downstream calls carry too.
/// Reproduces: no trace context carried from the client through the script
/// to the downstream calls.
#[tokio::test]
async fn the_clients_trace_reaches_downstream_calls_with_new_parent_spans() {
    use rmcp::model::{CallToolRequestParams, RequestMetaObject};
    let dir = scratch("trace");
    let record = dir.join("record.jsonl");
    let audit = dir.join("audit.jsonl");
    let config = format!(
        "{}[audit]\nfile = {}\n",
        crate::relay::relay_server("r", &record, ""),
        toml_str(&audit.to_string_lossy())
    );
    let s = connect(&write_config(&dir, &config)).await;
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let client_span = "b7ad6b7169203331";
    let mut meta = RequestMetaObject::new();
    meta.0
        .set_traceparent(format!("00-{trace}-{client_span}-01"));
    meta.0.set_tracestate("vendor=opaque");
    let mut args = serde_json::Map::new();
    args.insert(
        "code".into(),
        r#"async () => Promise.all([forge.callTool("r", "slow", {ms: 1}), forge.callTool("r", "slow", {ms: 2})])"#.into(),
    );
    let mut params = CallToolRequestParams::new("execute").with_arguments(args);
    params.meta = Some(meta);
    let r = s.client.call_tool(params).await.unwrap();
    ok_value(&r);

    let lines = crate::relay::recorded(&record, 2).await;
    let mut parents = Vec::new();
    for line in &lines {
        let tp = line["traceparent"]
            .as_str()
            .unwrap_or_else(|| panic!("no traceparent downstream: {line}"));
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4, "{tp}");
        assert_eq!((parts[0], parts[1], parts[3]), ("00", trace, "01"), "{tp}");
        assert_eq!(parts[2].len(), 16, "{tp}");
        assert_ne!(parts[2], client_span, "a new parent span: {tp}");
        assert_ne!(parts[2], "0000000000000000", "{tp}");
        assert_eq!(line["tracestate"], "vendor=opaque", "{line}");
        parents.push(parts[2].to_owned());
    }
    assert_ne!(parents[0], parents[1], "one span per call");

    // Without a traceparent: a fresh trace, still passed on.
    s.execute(r#"async () => forge.callTool("r", "slow", {ms: 1})"#)
        .await;
    let third = crate::relay::recorded(&record, 3).await.swap_remove(2);
    let fresh = third["traceparent"].as_str().unwrap().to_owned();
    assert!(
        fresh.starts_with("00-") && !fresh.contains(trace),
        "{fresh}"
    );
    assert_eq!(third["tracestate"], Value::Null);

    let audited = crate::relay::recorded(&audit, 2).await;
    assert_eq!(audited[0]["trace_id"], trace, "{}", audited[0]);
    assert_eq!(
        audited[1]["trace_id"].as_str(),
        fresh.split('-').nth(1),
        "{}",
        audited[1]
    );
    s.close().await;
}

/// A tool that runs only as a 2025-11-25 task (`taskSupport: "required"`,
/// called by quickforge with its own `tools/call` + `task` request) gets
/// the trace context too. Reproduces: the task path sent no `traceparent`.
#[tokio::test]
async fn a_task_only_tool_gets_the_trace_context_too() {
    use rmcp::model::{CallToolRequestParams, RequestMetaObject};
    let dir = scratch("trace-task");
    let record = dir.join("record.jsonl");
    let config = crate::relay::relay_server("r", &record, "");
    let s = connect(&write_config(&dir, &config)).await;
    let trace = "5af7651916cd43dd8448eb211c80319d";
    let mut meta = RequestMetaObject::new();
    meta.0
        .set_traceparent(format!("00-{trace}-b7ad6b7169203331-01"));
    let mut args = serde_json::Map::new();
    args.insert(
        "code".into(),
        r#"async () => forge.callTool("r", "slow_task", {ms: 50})"#.into(),
    );
    let mut params = CallToolRequestParams::new("execute").with_arguments(args);
    params.meta = Some(meta);
    let r = s.client.call_tool(params).await.unwrap();
    assert_eq!(ok_value(&r), serde_json::json!({"slept": 50}));
    let lines = crate::relay::recorded(&record, 1).await;
    let tp = lines[0]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent on the task call: {}", lines[0]));
    assert_eq!(tp.split('-').nth(1), Some(trace), "{tp}");
    s.close().await;
}

/// With the `otel` feature and `[observability] otlp_endpoint`, the
/// execution and call spans reach an OTLP/HTTP collector (a bare HTTP
/// receiver here) in the client's trace, and the span id passed downstream
/// as the parent is the exported call span's. Reproduces: no span export.
/// Runs only in a build with `--features otel`.
#[cfg(feature = "otel")]
#[tokio::test]
async fn spans_are_exported_over_otlp_http_in_the_clients_trace() {
    use rmcp::model::{CallToolRequestParams, RequestMetaObject};
    use std::sync::{Arc, Mutex};
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let kept = bodies.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(body.to_vec());
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = scratch("otlp");
    let record = dir.join("record.jsonl");
    let config = format!(
        "{}[observability]\notlp_endpoint = \"http://127.0.0.1:{port}/v1/traces\"\n",
        crate::relay::relay_server("r", &record, ""),
    );
    let s = connect(&write_config(&dir, &config)).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let mut meta = RequestMetaObject::new();
    meta.0
        .set_traceparent(format!("00-{trace}-00f067aa0ba902b7-01"));
    let mut args = serde_json::Map::new();
    args.insert(
        "code".into(),
        r#"async () => forge.callTool("r", "slow", {ms: 1})"#.into(),
    );
    let mut params = CallToolRequestParams::new("execute").with_arguments(args);
    params.meta = Some(meta);
    ok_value(&s.client.call_tool(params).await.unwrap());
    s.close().await;

    let line = crate::relay::recorded(&record, 1).await.swap_remove(0);
    let parent = line["traceparent"]
        .as_str()
        .unwrap()
        .split('-')
        .nth(2)
        .unwrap()
        .to_owned();
    let all: Vec<u8> = bodies.lock().unwrap().concat();
    let has = |needle: &[u8]| all.windows(needle.len()).any(|w| w == needle);
    assert!(!all.is_empty(), "nothing exported");
    assert!(has(&hex::decode(trace).unwrap()), "the client's trace id");
    assert!(
        has(&hex::decode(&parent).unwrap()),
        "the call span passed downstream"
    );
    assert!(has(b"execution") && has(b"tool_call"), "both spans");
}
