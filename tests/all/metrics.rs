//! Prometheus `/metrics` (issue 21, item 4): served beside `/mcp` under
//! `serve --http` and on `[observability] listen` for a stdio gateway,
//! parsed with a real Prometheus text parser after runs with known counts.

use std::time::Duration;

use prometheus_parse::{Sample, Scrape, Value as Metric};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;

use crate::http::{serve_http, tls};
use crate::mcp::*;

/// Fetches `url` and parses it as Prometheus text; the raw text too.
async fn scrape(url: &str) -> (Scrape, String) {
    let r = reqwest::get(url).await.unwrap();
    assert_eq!(r.status(), 200, "{url}");
    let content_type = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = r.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let parsed = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    (parsed, text)
}

/// The value of the sample `metric` whose labels include `labels`; for a
/// histogram, its count. `None` when no such sample is there.
fn value(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found: Vec<&Sample> = s
        .samples
        .iter()
        .filter(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(v)))
        .collect();
    assert!(found.len() <= 1, "several samples of {metric} {labels:?}");
    found.first().map(|x| match &x.value {
        Metric::Counter(v) | Metric::Gauge(v) | Metric::Untyped(v) => *v,
        Metric::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
        Metric::Summary(_) => panic!("no summaries here"),
    })
}

async fn execute_raw(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    code: &str,
) -> rmcp::model::CallToolResult {
    let mut args = serde_json::Map::new();
    args.insert("code".into(), code.into());
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap()
}

/// After a known run — an execution with one call that went through, one
/// refused by the server's `calls_per_minute` and one to a server that does
/// not exist; a search; an execution that throws — `/metrics` counts
/// exactly those, by mode and outcome and by configured server, with the
/// made-up server name folded into one fixed label, the breaker closed, the
/// queue waits observed, and a server that keeps failing to start counted
/// in reconnects. A page on another host name (DNS rebinding) is refused.
/// Reproduces: no metrics endpoint; labels unbounded by the config.
#[tokio::test]
async fn metrics_count_a_known_run_by_mode_outcome_and_configured_server() {
    tls();
    let dir = scratch("metrics-http");
    let config = format!(
        "{}calls_per_minute = 1\n[servers.down]\ncommand = \"false\"\n",
        fixture("fx", &[])
    );
    let (mut child, url) = serve_http(&write_config(&dir, &config)).await;
    let metrics_url = url.replace("/mcp", "/metrics");
    let client = ().serve(StreamableHttpClientTransport::from_uri(url.as_str())).await.unwrap();

    let r = execute_raw(
        &client,
        "execute",
        r#"async () => {
  const codes = [];
  for (const [s, t, a] of [["fx", "slow", {ms: 1}], ["fx", "slow", {ms: 1}], ["made_up_secret_name", "x", {}]]) {
    try { await forge.callTool(s, t, a); codes.push("ok"); } catch (e) { codes.push(e.code); }
  }
  return codes;
}"#,
    )
    .await;
    assert_eq!(
        ok_value(&r),
        serde_json::json!(["ok", "RATE_LIMITED", "SERVER_NOT_FOUND"])
    );
    assert_eq!(
        ok_value(&execute_raw(&client, "search", "async () => 1").await),
        1
    );
    let thrown = execute_raw(&client, "execute", "async () => { throw new Error('no') }").await;
    assert_eq!(thrown.is_error, Some(true));

    // Server `down` exits at once: its supervisor retries after 0.5-1 s.
    let (s, text) = eventually(Duration::from_secs(20), || async {
        let (s, text) = scrape(&metrics_url).await;
        let reconnects = value(
            &s,
            "quickforge_downstream_reconnects_total",
            &[("server", "down")],
        );
        (reconnects >= Some(1.0)).then_some((s, text))
    })
    .await;
    let v = |metric: &str, labels: &[(&str, &str)]| value(&s, metric, labels);
    let executions = "quickforge_executions_total";
    assert_eq!(
        v(executions, &[("mode", "execute"), ("outcome", "ok")]),
        Some(1.0)
    );
    assert_eq!(
        v(executions, &[("mode", "execute"), ("outcome", "error")]),
        Some(1.0)
    );
    assert_eq!(
        v(executions, &[("mode", "search"), ("outcome", "ok")]),
        Some(1.0)
    );
    assert_eq!(
        v(executions, &[("mode", "search"), ("outcome", "error")]),
        None
    );
    let calls = "quickforge_tool_calls_total";
    assert_eq!(v(calls, &[("server", "fx"), ("outcome", "ok")]), Some(1.0));
    assert_eq!(
        v(calls, &[("server", "fx"), ("outcome", "error")]),
        Some(1.0)
    );
    assert_eq!(
        v(calls, &[("server", "(unknown)"), ("outcome", "error")]),
        Some(1.0)
    );
    assert!(!text.contains("made_up_secret_name"), "{text}");
    assert!(!text.contains("slow"), "no tool names as labels: {text}");
    assert_eq!(
        v(
            "quickforge_tool_calls_rate_limited_total",
            &[("server", "fx")]
        ),
        Some(1.0)
    );
    assert_eq!(
        v("quickforge_executions_rate_limited_total", &[]),
        Some(0.0)
    );
    assert_eq!(
        v(
            "quickforge_execution_duration_seconds_count",
            &[("mode", "execute")]
        ),
        Some(2.0)
    );
    assert_eq!(
        v(
            "quickforge_tool_call_duration_seconds_count",
            &[("server", "fx")]
        ),
        Some(2.0)
    );
    assert_eq!(v("quickforge_queue_wait_seconds_count", &[]), Some(3.0));
    assert_eq!(
        v(
            "quickforge_breaker_state",
            &[("server", "fx"), ("state", "closed")]
        ),
        Some(1.0)
    );
    assert_eq!(
        v(
            "quickforge_breaker_state",
            &[("server", "fx"), ("state", "open")]
        ),
        Some(0.0)
    );
    assert_eq!(
        v("quickforge_tool_calls_in_flight", &[("server", "fx")]),
        Some(0.0)
    );
    assert_eq!(v("quickforge_executions_in_flight", &[]), Some(0.0));
    assert_eq!(
        v(
            "quickforge_downstream_reconnects_total",
            &[("server", "fx")]
        ),
        Some(0.0)
    );

    // DNS rebinding: a page served from another name reaches the port but
    // names its own host.
    let refused = reqwest::Client::new()
        .get(&metrics_url)
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    client.cancel().await.unwrap();
    child.kill().await.unwrap();
}

/// A free loopback port, for a listener the test configures.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A stdio gateway has no HTTP server of its own: `[observability] listen`
/// serves `/metrics` (and `/health`, `/ready`) on an address of its own,
/// with the same Host check; an execution refused by
/// `max_executions_per_minute` is counted. Reproduces: no metrics for a
/// gateway on stdio.
#[tokio::test]
async fn a_stdio_gateway_serves_metrics_on_its_own_listener() {
    tls();
    let dir = scratch("metrics-stdio");
    let port = free_port();
    let config = format!(
        "[sandbox]\nmax_executions_per_minute = 1\n[observability]\nlisten = \"127.0.0.1:{port}\"\nallow_hosts = [\"metrics.internal\"]\n"
    );
    let s = connect(&write_config(&dir, &config)).await;
    assert_eq!(s.execute("async () => 2").await, 2);
    let refused = s.execute_err("async () => 3").await;
    assert!(
        refused.to_string().contains("max_executions_per_minute"),
        "{refused}"
    );
    let base = format!("http://127.0.0.1:{port}");
    let (m, _) = scrape(&format!("{base}/metrics")).await;
    assert_eq!(
        value(
            &m,
            "quickforge_executions_total",
            &[("mode", "execute"), ("outcome", "ok")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &m,
            "quickforge_executions_total",
            &[("mode", "execute"), ("outcome", "error")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&m, "quickforge_executions_rate_limited_total", &[]),
        Some(1.0)
    );
    // The refused execution never queued for a slot.
    assert_eq!(
        value(&m, "quickforge_queue_wait_seconds_count", &[]),
        Some(1.0)
    );
    let http = reqwest::Client::new();
    let health = http.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let named = http
        .get(format!("{base}/metrics"))
        .header("host", format!("metrics.internal:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(named.status(), 200);
    let other = http
        .get(format!("{base}/metrics"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 403);
    s.close().await;
}

/// A listener on a non-loopback address without any allowed Host name is a
/// config error that says what to add (DNS-rebinding protection, as for
/// `--http`).
#[tokio::test]
async fn a_public_metrics_listener_needs_allowed_hosts() {
    let dir = scratch("metrics-public");
    let config = write_config(&dir, "[observability]\nlisten = \"0.0.0.0:9464\"\n");
    let out = quickforge_cmd(Some(&config))
        .arg("serve")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("observability.allow_hosts"), "{stderr}");
}
