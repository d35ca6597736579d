//! `/health` and `/ready` beside `/mcp` in `serve --http` (issue 21, item 4).

use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{serve_http, tls};
use crate::mcp::{everything, scratch, write_config};

/// `/health` answers at once; `/ready` answers 503 while a configured server
/// is still on its first attempt and 200 once every server has been tried,
/// with each one's state by name. Reproduces: no health or readiness
/// endpoint for an orchestrator to probe.
#[tokio::test]
async fn health_at_once_ready_when_every_server_was_tried() {
    tls();
    let dir = scratch("health");
    // `sleep` never answers the handshake: connecting until the handshake's
    // 10 s floor, then unavailable.
    let config = write_config(
        &dir,
        &format!(
            "{}[servers.silent]\ncommand = \"sleep\"\nargs = [\"60\"]\ntimeout_secs = 1\n",
            everything()
        ),
    );
    let (mut child, url) = serve_http(&config).await;
    let base = url.trim_end_matches("/mcp");
    let http = reqwest::Client::new();
    let health = http.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok\n");

    let first = http.get(format!("{base}/ready")).send().await.unwrap();
    assert_eq!(first.status(), 503);
    let body: Value = first.json().await.unwrap();
    assert_eq!(body["ready"], false);
    assert_eq!(body["servers"]["silent"], "connecting");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let body = loop {
        let r = http.get(format!("{base}/ready")).send().await.unwrap();
        if r.status() == 200 {
            break r.json::<Value>().await.unwrap();
        }
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        body,
        json!({"ready": true, "servers": {"everything": "ready", "silent": "unavailable"}})
    );
    child.kill().await.unwrap();
}
