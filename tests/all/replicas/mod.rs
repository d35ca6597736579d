//! Remote and replicated (issue 23): the deployment recipe of deploy/,
//! started for real — Redis, three replicas, haproxy round robin — and
//! driven through the balancer by the official Python SDK client and the
//! rmcp client.

mod cluster;

use std::time::{Duration, Instant};

use rmcp::model::{CallToolResponse, GetTaskParams, ProtocolVersion, TaskPayload};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

pub use cluster::{ALICE, BOB, Cluster, Settings};

use crate::mcp::{ok_value, python_client};
use crate::tasks::{Answering, completed, execute, mode, once, poll};

/// How many executions each replica recorded in its audit log.
fn served(cluster: &Cluster) -> Vec<usize> {
    cluster
        .replicas
        .iter()
        .map(|r| r.audit_lines().len())
        .collect()
}

/// The Python SDK client at `era` against `url`, running `steps` as Alice.
async fn sdk(era: &str, url: &str, steps: Value) -> Vec<Value> {
    sdk_as(ALICE, era, url, steps).await
}

/// As [`sdk`], with `token`.
async fn sdk_as(token: &str, era: &str, url: &str, steps: Value) -> Vec<Value> {
    python_client(
        "sdk_client.py",
        &[era.as_ref(), url.as_ref()],
        &json!({"bearer": token, "steps": steps}),
        Duration::from_secs(120),
    )
    .await
}

/// The rmcp streamable-HTTP transport to `url`, with Alice's token.
fn transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(ALICE),
    )
}

/// What a step's execute returned.
fn value(step: &Value) -> Value {
    assert_eq!(step["isError"], false, "{step}");
    step["structuredContent"]["result"].clone()
}

/// Reproduces: "Session not found" and empty stashes with two pods. A
/// value put through one replica is read through the others (the balancer
/// sends each request to the next replica), by the Python SDK at both
/// revisions (2026-07-28 carries the stash handle; a 2025-11-25 session
/// is restored on each replica from its Redis record and keeps one stash)
/// and by the rmcp client; every replica served some of it. A 2025-era
/// session that passes no handle keeps its own stash wherever it lands
/// (it used to get a fresh, empty one on each replica that restored it).
#[tokio::test]
async fn a_stash_written_through_one_replica_is_read_through_the_others() {
    crate::http::tls();
    let cluster = Cluster::start("replicas-stash", Settings::default()).await;
    for era in ["2026-07-28", "2025-11-25"] {
        let put = format!("async () => {{ await forge.stash.put('era', '{era}'); return 'put' }}");
        let mut steps = vec![json!({"execute": put})];
        for _ in 0..3 {
            steps.push(json!({"execute": "async () => forge.stash.get('era')", "stash_from": 0}));
        }
        let out = sdk(era, &cluster.url, Value::Array(steps)).await;
        assert_eq!(out.len(), 4, "{out:?}");
        assert_eq!(out[0]["protocolVersion"], era, "{out:?}");
        assert_eq!(value(&out[0]), "put");
        for step in &out[1..] {
            assert_eq!(value(step), era, "{out:?}");
        }
    }
    // A 2025-era session's own stash, with no handle passed back: the
    // session is restored on each replica, and its default stash (derived
    // from the session id) is the same everywhere.
    let mut steps = vec![
        json!({"execute": "async () => { await forge.stash.put('own', 'session'); return 'put' }"}),
    ];
    for _ in 0..3 {
        steps.push(json!({"execute": "async () => forge.stash.get('own')"}));
    }
    let out = sdk("2025-11-25", &cluster.url, Value::Array(steps)).await;
    assert_eq!(out.len(), 4, "{out:?}");
    assert_eq!(value(&out[0]), "put", "{out:?}");
    for step in &out[1..] {
        assert_eq!(value(step), "session", "{out:?}");
    }
    let client = ().serve(transport(&cluster.url)).await.unwrap();
    let got = crate::http::call(&client, "execute", "async () => forge.stash.get('era')").await;
    // The rmcp client's own stash is empty: stashes are per handle, and
    // this session has not been given one.
    assert_eq!(got, Value::Null);
    let put = "async () => { await forge.stash.put('era', 'rmcp'); return 1 }";
    crate::http::call(&client, "execute", put).await;
    for _ in 0..3 {
        let got = crate::http::call(&client, "execute", "async () => forge.stash.get('era')").await;
        assert_eq!(got, "rmcp");
    }
    drop(client);
    let counts = served(&cluster);
    assert!(
        counts.iter().all(|n| *n > 0),
        "round robin reached every replica: {counts:?}"
    );
    for replica in &cluster.replicas {
        for line in replica.audit_lines() {
            assert_eq!(line["replica"], replica.name.as_str(), "{line}");
        }
    }
}

/// Reproduces: an execution waiting on its client (a task) lives in one
/// replica, and two of three follow-ups behind a round robin reach another.
/// A task created through the balancer is polled to its result through it:
/// the follow-ups that land elsewhere are forwarded to the owner.
#[tokio::test]
async fn a_task_is_polled_to_its_result_through_any_replica() {
    crate::http::tls();
    let cluster = Cluster::start("replicas-task", Settings::default()).await;
    let client = Answering { tasks: true }
        .serve_with_lifecycle(
            transport(&cluster.url),
            mode(&ProtocolVersion::V_2026_07_28),
        )
        .await
        .unwrap();
    // Past the recipe's task_after_ms (the default, 2 s).
    let code = "async () => { await new Promise(r => setTimeout(r, 3500)); return 'slept'; }";
    let CallToolResponse::Task(created) = once(&client, execute(code)).await else {
        panic!("a slow script becomes a task");
    };
    let id = created.task.task_id;
    // Polled every 100 ms: each replica gets several of the polls.
    let done = poll(&client, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    assert_eq!(ok_value(&completed(&done)), "slept");
    // An MRTR question (server-everything asks for elicitation) answered by
    // a retry that carries requestState, through the balancer.
    let asking = Answering { tasks: false }
        .serve_with_lifecycle(
            transport(&cluster.url),
            mode(&ProtocolVersion::V_2026_07_28),
        )
        .await
        .unwrap();
    let result = crate::tasks::driven(
        &asking,
        r#"async () => forge.callTool("everything", "trigger-elicitation-request", {})"#,
    )
    .await;
    let text = serde_json::to_string(&ok_value(&result)).unwrap();
    assert!(text.contains("blue"), "{text}");
}

/// Reproduces: with replicas, a dead one must not hang its clients. Sixteen
/// executions run through the balancer; one replica is killed with SIGKILL
/// in the middle. Its calls fail fast (the balancer's 502, well before
/// their timeout), the others finish, nothing hangs; later calls all
/// succeed through the other two and read a value written before the kill.
#[tokio::test]
async fn a_replica_killed_mid_run_fails_fast_and_the_others_serve() {
    crate::http::tls();
    let mut cluster = Cluster::start("replicas-kill", Settings::default()).await;
    let first = sdk(
        "2026-07-28",
        &cluster.url,
        json!([{"execute": "async () => { await forge.stash.put('before', 42); return 'put' }"}]),
    )
    .await;
    let handle = first[0]["structuredContent"]["stash"].clone();
    assert!(handle.is_string(), "{first:?}");
    let url = cluster.url.clone();
    let mut running = Vec::new();
    for _ in 0..16 {
        let url = url.clone();
        running.push(tokio::spawn(async move {
            let started = Instant::now();
            // The 2026-07-28 era: each call is one self-contained POST, so
            // a replica that dies cuts that POST and nothing else.
            let client = Answering { tasks: false }
                .serve_with_lifecycle(transport(&url), mode(&ProtocolVersion::V_2026_07_28))
                .await;
            let outcome = match client {
                Ok(client) => {
                    let mut args = serde_json::Map::new();
                    args.insert(
                        "code".into(),
                        "async () => { await new Promise(r => setTimeout(r, 2000)); return 'done'; }".into(),
                    );
                    client
                        .call_tool(
                            rmcp::model::CallToolRequestParams::new("execute").with_arguments(args),
                        )
                        .await
                        .map(|r| ok_value(&r))
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            (outcome, started.elapsed())
        }));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let killed_at = Instant::now();
    cluster.replicas[1].kill().await;
    let mut ok = 0;
    let mut failed = 0;
    for task in running {
        let (outcome, took) = tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("no execution hangs past its timeout")
            .unwrap();
        match outcome {
            Ok(v) => {
                assert_eq!(v, "done");
                ok += 1;
            }
            Err(e) => {
                // Failed when the replica died, not at a timeout.
                assert!(
                    took < Duration::from_secs(8),
                    "failed slowly ({took:?}): {e}"
                );
                failed += 1;
            }
        }
    }
    assert!(
        ok >= 8,
        "the live replicas finished theirs: {ok} ok, {failed} failed"
    );
    assert!(killed_at.elapsed() < Duration::from_secs(30));
    // Later calls succeed through the two left and see the earlier value.
    let steps: Vec<Value> = (0..6)
        .map(|_| json!({"call": "execute", "args": {"code": "async () => forge.stash.get('before')", "stash": handle}}))
        .collect();
    let out = sdk("2026-07-28", &cluster.url, Value::Array(steps)).await;
    for step in &out {
        assert_eq!(value(step), 42, "{out:?}");
    }
}

/// Reproduces: state that lives in one process is lost or unreachable when
/// the store goes away. Redis is restarted mid-run: while it is down, a
/// stash operation fails with the retryable `STATE_UNAVAILABLE` within the
/// configured time and a script that does not touch the stash succeeds;
/// once it is back, the gateways recover by themselves and the value
/// written before the restart is still there (append-only file on).
#[tokio::test]
async fn redis_restarted_mid_run_is_unavailable_then_recovers_with_its_data() {
    crate::http::tls();
    let mut cluster = Cluster::start("replicas-redis", Settings::default()).await;
    let put = sdk(
        "2026-07-28",
        &cluster.url,
        json!([{"execute": "async () => { await forge.stash.put('kept', 'yes'); return 'put' }"}]),
    )
    .await;
    let handle = put[0]["structuredContent"]["stash"].clone();
    let redis = cluster.redis.as_mut().unwrap();
    redis.stop().await;
    let started = Instant::now();
    let during = sdk(
        "2026-07-28",
        &cluster.url,
        json!([
            {"call": "execute", "args": {"code": "async () => forge.stash.get('kept')", "stash": handle}},
            {"execute": "async () => 6 * 7"},
        ]),
    )
    .await;
    let text = during[0]["text"].to_string();
    assert!(text.contains("STATE_UNAVAILABLE"), "{during:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "answered within the bound"
    );
    assert_eq!(value(&during[1]), 42, "scripts without state still run");
    cluster.redis.as_mut().unwrap().restart().await;
    let after = crate::mcp::eventually(Duration::from_secs(30), || {
        let url = cluster.url.clone();
        let handle = handle.clone();
        async move {
            let out = sdk(
                "2026-07-28",
                &url,
                json!([{"call": "execute", "args": {"code": "async () => forge.stash.get('kept')", "stash": handle}}]),
            )
            .await;
            (out[0]["isError"] == false).then(|| out[0].clone())
        }
    })
    .await;
    assert_eq!(value(&after), "yes");
}

/// Reproduces: a per-minute limit kept in each replica admits three times
/// as much behind three replicas. With `max_executions_per_minute = 60`
/// (bursts of 10), thirty executions sent at once through the balancer are
/// admitted about as one replica would admit them: the burst, not three.
#[tokio::test]
async fn a_rate_limit_is_shared_across_the_replicas() {
    crate::http::tls();
    let cluster = Cluster::start(
        "replicas-rate",
        Settings {
            edits: vec![(
                "max_executions_per_minute = 600",
                "max_executions_per_minute = 60",
            )],
            ..Settings::default()
        },
    )
    .await;
    let steps: Vec<Value> = (0..30)
        .map(|_| json!({"execute": "async () => 1"}))
        .collect();
    let out = sdk("2026-07-28", &cluster.url, Value::Array(steps)).await;
    let admitted = out.iter().filter(|s| s["isError"] == false).count();
    let limited = out
        .iter()
        .filter(|s| s["text"].to_string().contains("RATE_LIMITED"))
        .count();
    assert_eq!(admitted + limited, 30, "{out:?}");
    // One replica's burst is 10, plus one for each second the steps took;
    // three independent limiters would admit about 30.
    assert!((8..=16).contains(&admitted), "admitted {admitted} of 30");
}

/// Reproduces: a remote gateway that trusts whoever connects. Through the
/// balancer, a request without a token and one with an unknown token get
/// 401 with the `WWW-Authenticate` challenge (pointing at the RFC 9728
/// metadata); Bob presenting Alice's stash handle is refused on every
/// replica exactly as a handle that never existed, while Alice reads her
/// value through each of them. (Expired, wrong-audience and wrong-issuer
/// JWTs are refused in tests/all/auth.rs against one gateway; the check is
/// the same on every replica.)
#[tokio::test]
async fn tokens_and_subjects_hold_through_the_balancer() {
    crate::http::tls();
    // JWTs of the test issuer beside the recipe's opaque tokens, as its
    // forge.toml says to add them (an [auth.jwt] table).
    let (jwks, _) = crate::auth::serve_jwks().await;
    let settings = Settings {
        env: vec![("QF_TEST_JWKS".into(), jwks)],
        edits: vec![(
            "[audit]",
            "[auth.jwt]\nissuer = \"https://issuer.test\"\njwks_uri = \"${QF_TEST_JWKS}\"\nalgorithms = [\"EdDSA\"]\n\n[audit]",
        )],
        ..Settings::default()
    };
    let cluster = Cluster::start("replicas-auth", settings).await;
    jwts_hold_on_every_replica(&cluster).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for token in [None, Some("not-a-token-anyone-was-given-0123456789")] {
        let mut post = http
            .post(&cluster.url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(t) = token {
            post = post.bearer_auth(t);
        }
        let r = post.send().await.unwrap();
        assert_eq!(r.status(), 401);
        let challenge = r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            challenge.starts_with("Bearer ")
                && challenge.contains("resource_metadata=")
                && challenge.contains("/.well-known/oauth-protected-resource"),
            "{challenge}"
        );
        assert_eq!(
            token.is_some(),
            challenge.contains("invalid_token"),
            "{challenge}"
        );
    }
    let put = sdk(
        "2026-07-28",
        &cluster.url,
        json!([{"execute": "async () => { await forge.stash.put('mine', 'alice'); return 'put' }"}]),
    )
    .await;
    let handle = put[0]["structuredContent"]["stash"].clone();
    let forged = format!(
        "{}0",
        &handle.as_str().unwrap()[..handle.as_str().unwrap().len() - 1]
    );
    let read = |stash: Value| json!({"call": "execute", "args": {"code": "async () => forge.stash.get('mine')", "stash": stash}});
    let bob = sdk_as(
        BOB,
        "2026-07-28",
        &cluster.url,
        json!([
            read(handle.clone()),
            read(handle.clone()),
            read(handle.clone()),
            read(json!(forged))
        ]),
    )
    .await;
    // The refusal quotes the handle it refuses; apart from that, Bob's
    // use of Alice's handle reads exactly as a forged one.
    let text = |i: usize, handle: &str| bob[i]["text"].to_string().replace(handle, "HANDLE");
    assert_eq!(bob[3]["isError"], true, "{bob:?}");
    for i in 0..3 {
        assert_eq!(bob[i]["isError"], true, "{bob:?}");
        assert_eq!(
            text(i, handle.as_str().unwrap()),
            text(3, &forged),
            "the same refusal as a forged handle"
        );
    }
    let alice = sdk(
        "2026-07-28",
        &cluster.url,
        json!([read(handle.clone()), read(handle.clone()), read(handle)]),
    )
    .await;
    for step in &alice {
        assert_eq!(value(step), "alice", "{alice:?}");
    }
    session_ids_hold_for_their_subject_only(&cluster).await;
}

/// Through the balancer (so on every replica in turn): a JWT expired, for
/// another audience or from another issuer gets 401 `invalid_token` with
/// the reason, every time; a valid one is served every time, and its
/// subject's handle opens on every replica.
async fn jwts_hold_on_every_replica(cluster: &Cluster) {
    use crate::auth::{ISSUER, KID, claims, jwt};
    let key = "jwt-test-ed25519";
    let aud = cluster.url.as_str();
    let refused = [
        (
            jwt(key, KID, &claims("carol", aud, ISSUER, -3600)),
            "expired",
        ),
        (
            jwt(
                key,
                KID,
                &claims("carol", "https://other.test/mcp", ISSUER, 600),
            ),
            "not issued for this resource",
        ),
        (
            jwt(key, KID, &claims("carol", aud, "https://evil.test", 600)),
            "configured issuer",
        ),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for (token, why) in &refused {
        for _ in 0..cluster.replicas.len() {
            let r = reqwest::Client::new()
                .post(&cluster.url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .json(&init)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 401, "{why}");
            let challenge = r.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .to_string();
            assert!(
                challenge.contains("error=\"invalid_token\"") && challenge.contains(why),
                "{why}: {challenge}"
            );
        }
    }
    let carol = jwt(key, KID, &claims("carol", aud, ISSUER, 600));
    let mut steps = vec![
        json!({"execute": "async () => { await forge.stash.put('k', 'carol'); return 'put' }"}),
    ];
    for _ in 0..cluster.replicas.len() {
        steps.push(json!({"execute": "async () => forge.stash.get('k')", "stash_from": 0}));
    }
    let before = served(cluster);
    let out = sdk_as(&carol, "2026-07-28", &cluster.url, Value::Array(steps)).await;
    assert_eq!(out.len(), 1 + cluster.replicas.len(), "{out:?}");
    assert_eq!(value(&out[0]), "put", "{out:?}");
    for step in &out[1..] {
        assert_eq!(value(step), "carol", "{out:?}");
    }
    let after = served(cluster);
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "Carol's JWT was served by every replica: {before:?} -> {after:?}"
    );
}

/// One JSON-RPC POST to `url` as `token` in `session`; the status and the
/// answer with id 2, if one came.
async fn post_rpc(url: &str, token: &str, session: &str, body: Value) -> (u16, Option<Value>) {
    let r = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    let answer = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(body.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == 2);
    (status, answer)
}

/// Reproduces: a leaked 2025-era session id let another subject take the
/// session over on a replica that had not seen it (rmcp restores a
/// session by replaying its `initialize` with the restoring request's
/// credentials). Alice opens a session on one replica; Bob's requests with
/// her session id find no session (404) on that replica, on another that
/// has not seen it (its record is hers), and his DELETE through a third
/// ends nothing; Alice's own request on the second replica is then
/// restored and served, with her stash.
async fn session_ids_hold_for_their_subject_only(cluster: &Cluster) {
    let url = |i: usize| format!("http://127.0.0.1:{}/mcp", cluster.replicas[i].port);
    let init = reqwest::Client::new()
        .post(url(0))
        .bearer_auth(ALICE)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _) = post_rpc(&url(0), ALICE, &session, initialized).await;
    assert!((200..300).contains(&status), "{status}");
    let call = |code: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": code}}})
    };
    let put = call("async () => { await forge.stash.put('who', 'alice'); return 1 }");
    let (_, answer) = post_rpc(&url(0), ALICE, &session, put).await;
    assert_eq!(answer.unwrap()["result"]["isError"], false);
    let get = call("async () => forge.stash.get('who')");
    let (status, answer) = post_rpc(&url(0), BOB, &session, get.clone()).await;
    assert_eq!(status, 404, "Bob used Alice's session: {answer:?}");
    let (status, answer) = post_rpc(&url(1), BOB, &session, get.clone()).await;
    assert_eq!(status, 404, "Bob restored Alice's session: {answer:?}");
    // Bob's DELETE through a third replica ends nothing.
    let r = reqwest::Client::new()
        .delete(url(2))
        .bearer_auth(BOB)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let (status, answer) = post_rpc(&url(1), ALICE, &session, get).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer.unwrap()["result"]["structuredContent"]["result"],
        "alice",
        "her session, restored, with its own stash"
    );
}

/// The replica `name` of a small cluster started directly (no balancer,
/// state in memory: only run ids matter here), its `[cluster] peers` the
/// replicas `(name, port)` of `peers`, serving on `port`; tasks from the
/// first millisecond.
async fn member(
    dir: &std::path::Path,
    name: &str,
    port: u16,
    peers: &[(&str, u16)],
) -> tokio::process::Child {
    let peers: String = peers
        .iter()
        .map(|(n, p)| format!("peers.{n} = \"http://127.0.0.1:{p}/mcp\"\n"))
        .collect();
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "[sandbox]\ntask_after_ms = 0\n\n[sandbox.stash]\nsecret = \"one secret for every replica of this test\"\n\n[cluster]\nreplica = \"{name}\"\n{peers}"
        ),
    )
    .unwrap();
    cluster::serve(crate::mcp::quickforge_cmd(Some(&config)), port).await
}

/// A raw 2026-07-28 `tools/call` of `execute` to `port` carrying `state` as
/// its MRTR `requestState` (with `forwarded_by` as the header replicas mark
/// forwarded requests with, if given); the answer's status and body, and
/// how long it took.
async fn retry(port: u16, state: &str, forwarded_by: Option<&str>) -> (u16, String, Duration) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
    "name": "execute", "arguments": {"code": "async () => 1"}, "requestState": state,
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "replicas-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let mut post = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute")
        .json(&body);
    if let Some(by) = forwarded_by {
        post = post.header("x-quickforge-forwarded-by", by);
    }
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(20), post.send())
        .await
        .expect("answered, not hung")
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    (status, text, started.elapsed())
}

/// Reproduces: a follow-up (task poll, MRTR retry) whose owner is gone
/// must not hang its client or bounce between replicas. Replicas `a` and
/// `b` list each other; `c` shares their secret but is not among `a`'s
/// peers. While `b` lives, `a` forwards the poll of `b`'s task (the
/// control). A poll of `c`'s task through `a` gets the JSON-RPC error
/// that says to run the script again, naming the unlisted replica; once
/// `b` is killed, so does a poll of `b`'s task and an MRTR retry carrying
/// its id, each within a few seconds. The same retry marked as already
/// forwarded (`x-quickforge-forwarded-by`) is answered by `a` itself, not
/// sent on to the dead `b`: no loop.
#[tokio::test]
async fn a_follow_up_whose_owner_is_dead_or_unlisted_says_run_it_again() {
    crate::http::tls();
    let dir = crate::mcp::scratch("replicas-dead-owner");
    let (a, b, c) = (
        cluster::free_port(),
        cluster::free_port(),
        cluster::free_port(),
    );
    let _ra = member(&dir, "a", a, &[("a", a), ("b", b)]).await;
    let mut rb = member(&dir, "b", b, &[("a", a), ("b", b)]).await;
    let _rc = member(&dir, "c", c, &[("c", c)]).await;
    let connect = |port: u16| {
        Answering { tasks: true }.serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(format!("http://127.0.0.1:{port}/mcp")),
            mode(&ProtocolVersion::V_2026_07_28),
        )
    };
    // Longer than the test: still running when its owner dies.
    let slow = "async () => { await new Promise(r => setTimeout(r, 60000)); return 'late' }";
    let mut ids = Vec::new();
    for port in [b, c] {
        let client = connect(port).await.unwrap();
        let CallToolResponse::Task(created) = once(&client, execute(slow)).await else {
            panic!("task_after_ms = 0 makes a running execute a task");
        };
        ids.push(created.task.task_id);
    }
    let (of_b, of_c) = (&ids[0], &ids[1]);
    assert!(
        of_b.starts_with("qft_b.") && of_c.starts_with("qft_c."),
        "{ids:?}"
    );
    let on_a = connect(a).await.unwrap();
    let get = |id: &str| on_a.peer().get_task(GetTaskParams::new(id));
    let working = get(of_b).await.expect("forwarded to b, which runs it");
    assert!(matches!(working.task.payload, TaskPayload::Working));

    let started = Instant::now();
    let err = get(of_c).await.expect_err("c is not a's peer").to_string();
    assert!(
        err.contains("\"c\"")
            && err.contains("[cluster] peers does not list")
            && err.contains("run the script again"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    rb.kill().await.unwrap();
    let started = Instant::now();
    let err = get(of_b).await.expect_err("b is dead").to_string();
    assert!(
        err.contains("\"b\"")
            && err.contains("did not answer")
            && err.contains("run the script again"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (status, text, took) = retry(a, of_b, None).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("did not answer") && text.contains("run the script again"),
        "{text}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Marked as forwarded: a answers it itself (the run is not its own),
    // rather than trying b again.
    let (_, text, took) = retry(a, of_b, Some("b")).await;
    assert!(!text.contains("did not answer"), "forwarded again: {text}");
    assert!(
        text.contains("\"id\":7") || text.contains("\"error\""),
        "{text}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}
