//! Redis as the shared state backend (issue 23, item 3), through the real
//! binary: gateways started by the test, each `quickforge serve --http`,
//! sharing one real `redis-server` that the test starts on a free port and
//! kills at the end (see `quickforge::RedisServer`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

use crate::handles::{Client, execute, handle_of};
use crate::http::{raw_initialize, serve_http, tls};
use crate::mcp::*;
use quickforge::RedisServer;

/// A config whose state is in `redis`, with the stash secret every replica
/// shares (so each opens the others' handles) and `extra` appended.
fn config(redis: &RedisServer, extra: &str) -> String {
    format!(
        "[state]\nbackend = {}\ntimeout_ms = 300\nkey_prefix = \"it:\"\n\n[sandbox.stash]\nsecret = \"a shared secret for every replica\"\n{extra}",
        toml_str(&redis.url())
    )
}

/// A gateway over HTTP with `toml` (in a scratch folder named `name`).
async fn gateway(name: &str, toml: &str) -> (tokio::process::Child, String) {
    serve_http(&write_config(&scratch(name), toml)).await
}

async fn open(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("a session opens")
}

/// The value of a successful `execute`.
async fn value(client: &Client, code: &str, stash: Option<&str>) -> Value {
    ok_value(&execute(client, code, stash).await)
}

/// Weakness: state lived in one process, so two replicas behind a load
/// balancer were two worlds. Here a value stored through gateway A is read,
/// listed and deleted through gateway B (the handle travels with the
/// client), and B's deletion is seen by A.
#[tokio::test]
async fn two_gateways_share_one_stash_through_redis() {
    tls();
    let redis = RedisServer::start(&[]);
    let toml = config(&redis, "");
    let (mut ga, url_a) = gateway("redis-share-a", &toml).await;
    let (mut gb, url_b) = gateway("redis-share-b", &toml).await;
    let (a, b) = (open(&url_a).await, open(&url_b).await);
    let put = execute(
        &a,
        r#"async () => { await forge.stash.put("plan", {step: 2}); return "kept"; }"#,
        None,
    )
    .await;
    let handle = handle_of(&put);
    assert_eq!(
        value(
            &b,
            r#"async () => [await forge.stash.get("plan"), await forge.stash.keys()]"#,
            Some(&handle)
        )
        .await,
        json!([{"step": 2}, ["plan"]])
    );
    assert_eq!(
        value(
            &b,
            r#"async () => forge.stash.delete("plan")"#,
            Some(&handle)
        )
        .await,
        json!({"deleted": true})
    );
    assert_eq!(
        value(&a, r#"async () => forge.stash.get("plan")"#, Some(&handle)).await,
        Value::Null
    );
    ga.start_kill().unwrap();
    gb.start_kill().unwrap();
}

/// Weakness: caps checked in each process could not hold across replicas;
/// two gateways filling one stash at once would each admit `max_keys`.
/// Here both race to store 20 keys each into one handle's stash with
/// `max_keys = 8`: exactly 8 are stored, and every other put is refused as
/// `STASH_FULL`.
#[tokio::test]
async fn two_gateways_racing_never_pass_max_keys() {
    tls();
    let redis = RedisServer::start(&[]);
    let toml = config(&redis, "max_keys = 8\n");
    let (mut ga, url_a) = gateway("redis-race-a", &toml).await;
    let (mut gb, url_b) = gateway("redis-race-b", &toml).await;
    let (a, b) = (open(&url_a).await, open(&url_b).await);
    let handle = handle_of(&execute(&a, r#"async () => forge.stash.put("seed", 0)"#, None).await);
    let fill = |who: &'static str| {
        format!(
            r#"async () => {{
                const codes = [];
                for (let i = 0; i < 20; i++) {{
                    try {{ await forge.stash.put("{who}" + i, i); codes.push("ok"); }}
                    catch (e) {{ codes.push(e.code); }}
                }}
                return codes;
            }}"#
        )
    };
    let (fill_a, fill_b) = (fill("a"), fill("b"));
    let (ra, rb) = tokio::join!(
        value(&a, &fill_a, Some(&handle)),
        value(&b, &fill_b, Some(&handle))
    );
    let codes: Vec<Value> = [ra, rb]
        .into_iter()
        .flat_map(|v| v.as_array().unwrap().clone())
        .collect();
    let stored = codes.iter().filter(|c| *c == "ok").count();
    assert_eq!(stored, 7, "seed plus 7: {codes:?}");
    assert!(
        codes.iter().all(|c| c == "ok" || c == "STASH_FULL"),
        "{codes:?}"
    );
    assert_eq!(
        value(
            &b,
            r#"async () => (await forge.stash.keys()).length"#,
            Some(&handle)
        )
        .await,
        8
    );
    ga.start_kill().unwrap();
    gb.start_kill().unwrap();
}

/// Weakness: with state in a server, an outage could hang scripts or take
/// the gateway down with it. Here Redis is killed: a stash operation fails
/// as `STATE_UNAVAILABLE`, retryable, within the configured 300 ms (plus
/// the execution's own overhead), while a script that does not touch the
/// stash still succeeds; Redis restarted (append-only file, fsync always)
/// serves again without a gateway restart, and the value stored before the
/// outage is still there.
#[tokio::test]
async fn redis_restarted_mid_run_recovers_without_a_gateway_restart() {
    tls();
    let mut redis = RedisServer::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let (mut g, url) = gateway("redis-outage", &config(&redis, "")).await;
    let c = open(&url).await;
    let handle =
        handle_of(&execute(&c, r#"async () => forge.stash.put("kept", "before")"#, None).await);
    redis.kill();
    let started = Instant::now();
    let refused = value(
        &c,
        r#"async () => { try { await forge.stash.get("kept"); return "read"; } catch (e) { return [e.code, e.retryable, e.message]; } }"#,
        Some(&handle),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(refused[0], "STATE_UNAVAILABLE", "{refused}");
    assert_eq!(refused[1], true, "{refused}");
    assert!(took < Duration::from_secs(2), "answered in {took:?}");
    assert_eq!(value(&c, "async () => 6 * 7", None).await, 42);
    redis.restart();
    let back = eventually(Duration::from_secs(15), || async {
        let r = execute(&c, r#"async () => forge.stash.get("kept")"#, Some(&handle)).await;
        (r.is_error != Some(true)).then(|| ok_value(&r))
    })
    .await;
    assert_eq!(back, "before");
    g.start_kill().unwrap();
}

/// Weakness: under memory pressure a store could drop data silently. Here
/// Redis runs at a 2 MiB `maxmemory` with `noeviction`: a script filling
/// the stash meets a clear `STATE_UNAVAILABLE` saying Redis is full, and
/// what it stored before is still readable.
#[tokio::test]
async fn a_full_redis_is_a_clear_error_through_the_gateway() {
    tls();
    let redis = RedisServer::start(&["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"]);
    let (mut g, url) = gateway("redis-full", &config(&redis, "")).await;
    let c = open(&url).await;
    let r = value(
        &c,
        r#"async () => {
            const v = "x".repeat(60000);
            for (let i = 0; i < 100; i++) {
                try { await forge.stash.put("k" + i, v); }
                catch (e) { return [i, e.code, e.message, (await forge.stash.get("k0")).length]; }
            }
            return "never full";
        }"#,
        None,
    )
    .await;
    assert!(r[0].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r[1], "STATE_UNAVAILABLE", "{r}");
    assert!(r[2].as_str().unwrap().contains("is full"), "{r}");
    assert_eq!(r[3], 60000, "{r}");
    g.start_kill().unwrap();
}

/// Weakness: a per-minute limit counted in each replica admits N times the
/// limit behind N replicas. Here `max_executions_per_minute = 12` (bursts
/// of 2) across two gateways on one Redis: twelve executions in quick
/// succession, alternating, admit 2 (3 if a second passes), what one
/// gateway alone admits, not 4.
#[tokio::test]
async fn a_rate_limit_is_shared_by_two_gateways() {
    tls();
    let redis = RedisServer::start(&[]);
    let toml = config(&redis, "").replace(
        "[sandbox.stash]",
        "[sandbox]\nmax_executions_per_minute = 12\n\n[sandbox.stash]",
    );
    let (mut ga, url_a) = gateway("redis-rate-a", &toml).await;
    let (mut gb, url_b) = gateway("redis-rate-b", &toml).await;
    let (a, b) = (open(&url_a).await, open(&url_b).await);
    let mut admitted = 0;
    let mut refusal = String::new();
    for i in 0..12 {
        let r = execute(if i % 2 == 0 { &a } else { &b }, "async () => 1", None).await;
        if r.is_error == Some(true) {
            refusal = serde_json::to_string(&r.content).unwrap();
        } else {
            admitted += 1;
        }
    }
    assert!((2..=3).contains(&admitted), "admitted {admitted}");
    assert!(refusal.contains("per minute"), "{refusal}");
    ga.start_kill().unwrap();
    gb.start_kill().unwrap();
}

/// Weakness: "Session not found" with two pods. A 2025-era session opened
/// through gateway A is used through gateway B, which never saw it: B
/// restores it from the record A kept in Redis (rmcp's `SessionStore`) and
/// answers the call. The same request to a third gateway on memory, which
/// has no record, is refused with 404, as before.
#[tokio::test]
async fn a_2025_session_opened_on_one_gateway_is_used_through_another() {
    tls();
    let redis = RedisServer::start(&[]);
    let toml = config(&redis, "");
    let (mut ga, url_a) = gateway("redis-session-a", &toml).await;
    let (mut gb, url_b) = gateway("redis-session-b", &toml).await;
    let (mut gm, url_m) = gateway("redis-session-memory", "").await;
    let init = raw_initialize(&url_a).await;
    assert!(init.status().is_success(), "{}", init.status());
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let post = |url: String, body: Value| {
        let session = session.clone();
        async move {
            reqwest::Client::new()
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18")
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let initialized = post(
        url_a.clone(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert!(
        initialized.status().is_success(),
        "{}",
        initialized.status()
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": "async () => 6 * 7"}}});
    let on_b = post(url_b, call.clone()).await;
    assert_eq!(on_b.status(), 200);
    let body = on_b.text().await.unwrap();
    let answer: Value = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .find(|v: &Value| v["id"] == 2)
        .unwrap_or_else(|| panic!("no answer in {body}"));
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 42,
        "{answer}"
    );
    let on_memory = post(url_m, call.clone()).await;
    assert_eq!(on_memory.status(), 404);

    // A record in the format before records kept their subject (rmcp's
    // state alone) is no session: 404, which a client recovers from by
    // opening a new one, not a 500.
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let record: String = redis::cmd("GET")
        .arg(format!("it:session:{session}"))
        .query(&mut conn)
        .unwrap();
    let record: Value = serde_json::from_str(&record).unwrap();
    assert!(record.get("subject").is_some(), "{record}");
    let old = serde_json::to_string(&record["state"]).unwrap();
    let () = redis::cmd("SET")
        .arg("it:session:an-old-format-record")
        .arg(old)
        .query(&mut conn)
        .unwrap();
    let on_old = reqwest::Client::new()
        .post(url_a.as_str())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", "an-old-format-record")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&call)
        .send()
        .await
        .unwrap();
    assert_eq!(on_old.status(), 404);
    for g in [&mut ga, &mut gb, &mut gm] {
        g.start_kill().unwrap();
    }
}

/// Weakness: a gateway that needs its state store to start would turn a
/// Redis outage into a gateway outage. Here the gateway starts while Redis
/// is down: scripts that do not use the stash run, stash operations fail
/// as `STATE_UNAVAILABLE`, and once Redis starts the stash works.
#[tokio::test]
async fn a_gateway_starts_while_redis_is_down() {
    tls();
    let mut redis = RedisServer::start(&[]);
    redis.kill();
    let (mut g, url) = gateway("redis-down-at-start", &config(&redis, "")).await;
    let c = open(&url).await;
    assert_eq!(value(&c, "async () => 6 * 7", None).await, 42);
    let refused = value(
        &c,
        r#"async () => { try { await forge.stash.put("k", 1); return "stored"; } catch (e) { return e.code; } }"#,
        None,
    )
    .await;
    assert_eq!(refused, "STATE_UNAVAILABLE");
    redis.restart();
    let stored = eventually(Duration::from_secs(15), || async {
        let r = execute(
            &c,
            r#"async () => { await forge.stash.put("k", 1); return forge.stash.get("k"); }"#,
            None,
        )
        .await;
        (r.is_error != Some(true)).then(|| ok_value(&r))
    })
    .await;
    assert_eq!(stored, 1);
    g.start_kill().unwrap();
}

/// Makes a throwaway CA named `name` in `dir` and, signed by it, a server
/// certificate for 127.0.0.1; writes `{name}-ca.pem`, `{name}-cert.pem`
/// and `{name}-key.pem` and returns their paths in that order.
fn throwaway_ca(dir: &Path, name: &str) -> [PathBuf; 3] {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, format!("quickforge test CA {name}"));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let cert = params.signed_by(&key, &*ca).unwrap();
    let paths = ["ca", "cert", "key"].map(|f| dir.join(format!("{name}-{f}.pem")));
    std::fs::write(&paths[0], ca.pem()).unwrap();
    std::fs::write(&paths[1], cert.pem()).unwrap();
    std::fs::write(&paths[2], key.serialize_pem()).unwrap();
    paths
}

/// A config whose state is in the TLS-only `redis`, trusting the CA in
/// `ca` (`[state] tls_ca_file`), with the replicas' shared stash secret.
fn tls_config(redis: &RedisServer, ca: &Path) -> String {
    format!(
        "[state]\nbackend = {}\ntimeout_ms = 300\nkey_prefix = \"it:\"\ntls_ca_file = {}\n\n[sandbox.stash]\nsecret = \"a shared secret for every replica\"\n",
        toml_str(&redis.url()),
        toml_str(&ca.to_string_lossy())
    )
}

/// Weakness (issue 23, item 3, "TLS too"): `rediss://` was never run, and
/// a Redis whose certificate comes from the operator's own CA (as Redis
/// certificates nearly always do) could not be trusted at all: the client
/// knew only the system's roots. With `[state] tls_ca_file` naming that CA
/// the stash works over a TLS-only Redis (`--port 0`): a value put through
/// one gateway is read through another. A gateway given another CA starts,
/// and its stash answers `STATE_UNAVAILABLE` at once, not after a hang,
/// with the untrusted certificate in its log; a CA file that does not
/// exist is refused at start, naming the key.
#[tokio::test]
async fn the_stash_works_over_rediss_with_the_operators_ca() {
    tls();
    let dir = scratch("redis-tls");
    let [ca, cert, key] = throwaway_ca(&dir, "right");
    let [other_ca, _, _] = throwaway_ca(&dir, "wrong");
    let redis = RedisServer::start_tls(&cert, &key, &ca, &[]);
    assert!(redis.url().starts_with("rediss://"), "{}", redis.url());
    let toml = tls_config(&redis, &ca);
    let (mut ga, url_a) = gateway("redis-tls-a", &toml).await;
    let put = execute(
        &open(&url_a).await,
        r#"async () => { await forge.stash.put("over", "tls"); return "kept"; }"#,
        None,
    )
    .await;
    assert_eq!(ok_value(&put), "kept");
    let handle = handle_of(&put);
    let (mut gb, url_b) = gateway("redis-tls-b", &toml).await;
    let read = r#"async () => forge.stash.get("over")"#;
    assert_eq!(value(&open(&url_b).await, read, Some(&handle)).await, "tls");

    // Another CA: the handshake fails, promptly and clearly.
    let wrong = scratch("redis-tls-wrong");
    let config = write_config(&wrong, &tls_config(&redis, &other_ca));
    let log = wrong.join("stderr.log");
    let mut cmd = quickforge_cmd(Some(&config));
    cmd.stderr(std::process::Stdio::from(
        std::fs::File::create(&log).unwrap(),
    ));
    let (mut gw, url_w) = crate::http::serve_http_with(cmd).await;
    let started = Instant::now();
    let refused = value(
        &open(&url_w).await,
        r#"async () => { try { await forge.stash.get("over"); return "read"; } catch (e) { return e.code; } }"#,
        None,
    )
    .await;
    assert_eq!(refused, "STATE_UNAVAILABLE");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.to_lowercase().contains("certificate"), "{text}");

    // A CA file that is not there: refused at start.
    let missing = write_config(
        &scratch("redis-tls-missing"),
        &tls_config(&redis, Path::new("no-such-ca.pem")),
    );
    let mut cmd = quickforge_cmd(Some(&missing));
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(CALL_BOUND, cmd.output())
        .await
        .expect("refused at once")
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("state.tls_ca_file") && stderr.contains("no-such-ca.pem"),
        "{stderr}"
    );
    for g in [&mut ga, &mut gb, &mut gw] {
        g.start_kill().unwrap();
    }
}
