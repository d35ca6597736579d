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
        json!({"ready": true, "draining": false, "servers": {"everything": "ready", "silent": "unavailable"}})
    );
    child.kill().await.unwrap();
}

/// Once SIGTERM begins the drain, `/ready` answers 503 with `draining`
/// while the running execution finishes, and that execution still gets
/// its answer. Reproduces: `/ready` stayed 200 through the drain, so a
/// load balancer kept sending new requests to a replica that refuses them
/// (a rolling deploy lost requests).
#[tokio::test]
async fn ready_turns_503_while_draining_and_running_work_finishes() {
    use rmcp::ServiceExt;
    tls();
    let dir = scratch("health-drain");
    let (mut child, url) = serve_http(&write_config(&dir, &everything())).await;
    let base = url.trim_end_matches("/mcp").to_string();
    let http = reqwest::Client::new();
    crate::mcp::eventually(Duration::from_secs(60), || {
        let http = http.clone();
        let base = base.clone();
        async move {
            let r = http.get(format!("{base}/ready")).send().await.ok()?;
            (r.status() == 200).then_some(())
        }
    })
    .await;
    let client = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            url.as_str(),
        ))
        .await
        .unwrap();
    let slow = tokio::spawn(async move {
        let r = crate::http::call(
            &client,
            "execute",
            "async () => { await new Promise(r => setTimeout(r, 1500)); return 'finished'; }",
        )
        .await;
        drop(client);
        r
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = child.id().unwrap() as i32;
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let body: Value = crate::mcp::eventually(Duration::from_secs(5), || {
        let http = http.clone();
        let base = base.clone();
        async move {
            let r = http.get(format!("{base}/ready")).send().await.ok()?;
            if r.status() != 503 {
                return None;
            }
            r.json::<Value>().await.ok()
        }
    })
    .await;
    assert_eq!(body["draining"], true, "{body}");
    assert_eq!(body["ready"], false, "{body}");
    let answer = tokio::time::timeout(Duration::from_secs(20), slow)
        .await
        .expect("the running execution is answered during the drain");
    assert_eq!(answer.unwrap(), "finished");
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the replica stops after the drain")
        .unwrap();
    assert!(status.success(), "{status}");
}
