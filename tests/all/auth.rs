//! `serve --http` with `[auth]` (issue 23, items 1 and 2): the real binary
//! as an OAuth resource server, driven over HTTP by reqwest, the rmcp
//! client and the official Python SDK client. Tokens are opaque ones from
//! forge.toml and JWTs signed here with a test key whose JWKS a small axum
//! server in this process serves over real HTTP.
//!
//! The keys under tests/fixtures/auth/ are test keys made for these tests
//! (`openssl genpkey -algorithm ed25519`); they protect nothing, so they
//! are not secrets. The tokens below are likewise test values.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, GetTaskParams, Implementation,
    ProtocolVersion, TaskPayload,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::mcp::*;

/// Alice's opaque test token (not a secret).
const ALICE: &str = "alice-test-token-5f0c8d1e2b3a4c5d6e7f8091a2b3c4d5";
/// Bob's opaque test token (not a secret).
const BOB: &str = "bob-test-token-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
/// The issuer the gateway trusts.
pub(crate) const ISSUER: &str = "https://issuer.test";
/// The resource the gateway is (`[auth] resource`).
const RESOURCE: &str = "https://gw.test/mcp";
/// What the 401s point to: RFC 9728 §3.1's URL for [`RESOURCE`].
const METADATA: &str = "https://gw.test/.well-known/oauth-protected-resource/mcp";
/// The JWKS key id of the trusted key.
pub(crate) const KID: &str = "test-key-1";

fn key_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/auth/{name}.pem"))
}

fn signing_key(name: &str) -> EncodingKey {
    EncodingKey::from_ed_pem(&std::fs::read(key_file(name)).unwrap()).unwrap()
}

/// A JWT signed with the key `key` under `kid`, with `claims`.
pub(crate) fn jwt(key: &str, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, &signing_key(key)).unwrap()
}

/// Claims of a token for `sub`, expiring `ttl` seconds from now.
pub(crate) fn claims(sub: &str, aud: &str, iss: &str, ttl: i64) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    json!({"sub": sub, "aud": aud, "iss": iss, "iat": now, "exp": now + ttl})
}

/// What the JWKS endpoint of [`serve_jwks_on`] answers: HTTP 500.
const SERVE_500: usize = 0;
/// ... a 200 whose body is not a key set.
const SERVE_GARBAGE: usize = 1;
/// ... the key set.
const SERVE_KEYS: usize = 2;

/// Serves the JWKS holding the trusted test key at
/// `http://127.0.0.1:PORT/jwks`; returns the URL and a count of fetches.
pub(crate) async fn serve_jwks() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let fetches = serve_jwks_on(listener, Arc::new(AtomicUsize::new(SERVE_KEYS)));
    (format!("http://127.0.0.1:{port}/jwks"), fetches)
}

/// Serves `/jwks` on `listener`, answering as `answer` says at the time of
/// each request ([`SERVE_KEYS`] and the others); returns a count of fetches.
fn serve_jwks_on(listener: tokio::net::TcpListener, answer: Arc<AtomicUsize>) -> Arc<AtomicUsize> {
    use axum::response::IntoResponse;
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(
        &signing_key("jwt-test-ed25519"),
        Algorithm::EdDSA,
    )
    .unwrap();
    jwk.common.key_id = Some(KID.into());
    let set = json!({"keys": [jwk]});
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = fetches.clone();
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let response = match answer.load(Ordering::SeqCst) {
                SERVE_500 => {
                    (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response()
                }
                SERVE_GARBAGE => (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    "<html>not a key set</html>",
                )
                    .into_response(),
                _ => axum::Json(set.clone()).into_response(),
            };
            async move { response }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    fetches
}

/// The forge.toml of an authenticated gateway: Alice's and Bob's opaque
/// tokens, JWTs of [`ISSUER`] against `jwks`, an audit file, the replica
/// named from the environment, tasks from the first millisecond.
fn config(dir: &Path, jwks: &str, rate: &Rate) -> PathBuf {
    let hash = |t: &str| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(t.as_bytes()));
    write_config(
        dir,
        &format!(
            "[sandbox]\ntask_after_ms = 0\n{}\n[cluster]\nreplica = \"${{QF_TEST_REPLICA}}\"\n\n[audit]\nfile = \"audit.jsonl\"\n\n\
             [auth]\nresource = \"{RESOURCE}\"\n{}\n\
             [[auth.tokens]]\nsubject = \"alice\"\nsha256 = \"{}\"\n\n\
             [[auth.tokens]]\nsubject = \"bob\"\nsha256 = \"{}\"\n\n\
             [auth.jwt]\nissuer = \"{ISSUER}\"\njwks_uri = \"{jwks}\"\nalgorithms = [\"EdDSA\"]\n{}",
            rate.sandbox,
            rate.auth,
            hash(ALICE),
            hash(BOB),
            rate.jwt
        ),
    )
}

/// Extra lines for `[sandbox]`, `[auth]` and `[auth.jwt]`: a rate limit
/// and its scope, the JWKS timing.
#[derive(Default)]
struct Rate {
    sandbox: &'static str,
    auth: &'static str,
    jwt: &'static str,
}

/// A gateway under test, its URL and its stderr.
struct Gateway {
    child: tokio::process::Child,
    url: String,
    dir: PathBuf,
}

impl Gateway {
    async fn start(name: &str) -> (Gateway, Arc<AtomicUsize>) {
        Gateway::start_with(name, &Rate::default()).await
    }

    async fn start_with(name: &str, rate: &Rate) -> (Gateway, Arc<AtomicUsize>) {
        let (jwks, fetches) = serve_jwks().await;
        (Gateway::start_at(name, &jwks, rate).await, fetches)
    }

    /// A gateway whose `[auth.jwt] jwks_uri` is `jwks`.
    async fn start_at(name: &str, jwks: &str, rate: &Rate) -> Gateway {
        crate::http::tls();
        let dir = scratch(name);
        let config = config(&dir, jwks, rate);
        let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();
        let mut cmd = quickforge_cmd(Some(&config));
        cmd.env("QF_TEST_REPLICA", "replica-a")
            .stderr(Stdio::from(stderr));
        let (child, url) = crate::http::serve_http_with(cmd).await;
        Gateway { child, url, dir }
    }

    /// A POST of a 2025-era `initialize` with `authorization` (a header
    /// value), as a client opening a session sends it.
    async fn post(&self, authorization: Option<&str>) -> reqwest::Response {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let mut request = reqwest::Client::new()
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.send().await.unwrap()
    }

    /// An rmcp client sending `token`, in the 2025 era (a session).
    async fn client(&self, token: &str) -> RunningService<RoleClient, ()> {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).auth_header(token),
        );
        ().serve(transport).await.unwrap()
    }
}

/// A client that takes tasks (SEP-2663).
#[derive(Clone)]
struct Tasks;

impl ClientHandler for Tasks {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("auth-test", "1.0.0"),
        )
    }
}

/// The 401 challenge of `response`, checked to be one.
fn challenge(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), 401);
    let value = response
        .headers()
        .get("www-authenticate")
        .expect("a 401 carries WWW-Authenticate")
        .to_str()
        .unwrap()
        .to_string();
    assert!(value.starts_with("Bearer "), "{value}");
    assert!(
        value.contains(&format!("resource_metadata=\"{METADATA}\"")),
        "{value}"
    );
    value
}

/// `execute` of `code` with `stash` (a handle), through `client`.
async fn execute(
    client: &RunningService<RoleClient, ()>,
    code: &str,
    stash: Option<&str>,
) -> rmcp::model::CallToolResult {
    let mut args = json!({"code": code});
    if let Some(h) = stash {
        args["stash"] = h.into();
    }
    client
        .call_tool(
            CallToolRequestParams::new("execute")
                .with_arguments(args.as_object().cloned().unwrap()),
        )
        .await
        .unwrap()
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Weakness (issue 23, item 1): `serve --http` trusted whoever connected.
/// Now a request without a token, with a token of another scheme, or with
/// a token that is not valid here (unknown opaque token; a JWT expired, for
/// another audience, from another issuer, with a bad signature or an
/// unknown key) is answered 401 with the challenge the MCP authorization
/// spec asks for (`resource_metadata`, and `invalid_token` with the reason
/// when a token was given); the metadata document is served without a
/// token; and a stream of unknown key ids fetches the JWKS no more than
/// the refresh interval allows.
#[tokio::test]
async fn requests_without_a_valid_token_get_the_spec_challenge() {
    let (mut gw, fetches) = Gateway::start("auth-refused").await;
    for missing in [None, Some("Basic YWxpY2U6cHc="), Some("Bearer ")] {
        let value = challenge(&gw.post(missing).await);
        assert!(!value.contains("error="), "{missing:?}: {value}");
    }
    let bad = [
        (
            "not-a-listed-token-0123456789abcdef".to_string(),
            "not valid here",
        ),
        (
            jwt(
                "jwt-test-ed25519",
                KID,
                &claims("alice", RESOURCE, ISSUER, -3600),
            ),
            "expired",
        ),
        (
            jwt(
                "jwt-test-ed25519",
                KID,
                &claims("alice", "https://other.test/mcp", ISSUER, 600),
            ),
            "not issued for this resource",
        ),
        (
            jwt(
                "jwt-test-ed25519",
                KID,
                &claims("alice", RESOURCE, "https://issuer.test/", 600),
            ),
            "configured issuer",
        ),
        (
            jwt(
                "jwt-other-ed25519",
                KID,
                &claims("alice", RESOURCE, ISSUER, 600),
            ),
            "signature",
        ),
        (
            jwt(
                "jwt-other-ed25519",
                "unknown-kid",
                &claims("alice", RESOURCE, ISSUER, 600),
            ),
            "kid",
        ),
        (
            jwt(
                "jwt-other-ed25519",
                "another-unknown-kid",
                &claims("alice", RESOURCE, ISSUER, 600),
            ),
            "kid",
        ),
    ];
    for (token, why) in &bad {
        let value = challenge(&gw.post(Some(&format!("Bearer {token}"))).await);
        assert!(value.contains("error=\"invalid_token\""), "{why}: {value}");
        assert!(value.contains(why), "{why}: {value}");
    }
    // The first JWT fetched the keys; the unknown kids right after did not
    // fetch again (jwks_refresh_secs).
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    // A good token opens a session.
    let ok = gw.post(Some(&format!("Bearer {ALICE}"))).await;
    assert_eq!(ok.status(), 200);
    let base = gw.url.trim_end_matches("/mcp");
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let doc: Value = reqwest::get(format!("{base}{path}"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["resource"], RESOURCE, "{path}");
        assert_eq!(doc["authorization_servers"], json!([ISSUER]), "{path}");
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{path}");
    }
    gw.child.start_kill().unwrap();
}

/// Weakness (issue 23, items 1 and 2): anyone holding a stash handle or a
/// task id reached its data, whoever they were. Now opaque tokens and JWTs
/// both authenticate; a handle minted for Alice and presented by Bob is
/// refused with exactly the error of a forged handle, while Alice reaches
/// it from a new session (with a JWT of the same subject); Bob's own stash
/// is empty; Alice's task id is unknown to Bob; and the audit line names
/// the subject by hash and the replica, with no token in it or in the log.
#[tokio::test]
async fn handles_and_tasks_are_bound_to_their_subject() {
    let (mut gw, _) = Gateway::start("auth-isolation").await;
    let alice = gw.client(ALICE).await;
    let put = execute(
        &alice,
        "async () => { await forge.stash.put(\"k\", 42); return 1 }",
        None,
    )
    .await;
    assert_eq!(ok_value(&put), 1);
    let handle = put.structured_content.as_ref().unwrap()["stash"]
        .as_str()
        .unwrap()
        .to_string();

    let bob = gw.client(BOB).await;
    let get = "async () => forge.stash.get(\"k\")";
    let stolen = execute(&bob, get, Some(&handle)).await;
    assert_eq!(stolen.is_error, Some(true));
    // A forged handle of the same shape: same error, handle aside.
    let forged = format!("qfs_{}", "0".repeat(handle.len() - 4));
    let refused = execute(&bob, get, Some(&forged)).await;
    assert_eq!(refused.is_error, Some(true));
    let shown = |r: &rmcp::model::CallToolResult, h: &str| {
        text(r).replace(&quickforge_preview(h), "HANDLE")
    };
    assert_eq!(shown(&stolen, &handle), shown(&refused, &forged));
    assert_eq!(ok_value(&execute(&bob, get, None).await), Value::Null);

    // Alice again, from a new session, with a JWT of the same subject.
    let token = jwt(
        "jwt-test-ed25519",
        KID,
        &claims("alice", RESOURCE, ISSUER, 600),
    );
    let again = gw.client(&token).await;
    assert_eq!(ok_value(&execute(&again, get, Some(&handle)).await), 42);

    // A task of Alice's, polled by Bob: unknown; by Alice: hers.
    let connect = |token: &str| {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(gw.url.as_str()).auth_header(token),
        );
        Tasks.serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: None,
            },
        )
    };
    let alice_tasks = connect(ALICE).await.unwrap();
    let bob_tasks = connect(BOB).await.unwrap();
    let params = CallToolRequestParams::new("execute").with_arguments(
        // Half a second of waiting: still running when the answer is due.
        json!({"code": "async () => { await new Promise(r => setTimeout(r, 500)); return 7 }"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let created = match alice_tasks.peer().call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created,
        other => panic!("task_after_ms = 0 makes a running execute a task, got {other:?}"),
    };
    let id = created.task.task_id;
    let err = bob_tasks
        .peer()
        .get_task(GetTaskParams::new(&id))
        .await
        .expect_err("another subject's task is unknown");
    assert!(err.to_string().contains("unknown task"), "{err}");
    let done = eventually(CALL_BOUND, || async {
        let got = alice_tasks
            .peer()
            .get_task(GetTaskParams::new(&id))
            .await
            .unwrap();
        matches!(got.task.payload, TaskPayload::Completed { .. }).then_some(())
    })
    .await;
    let () = done;

    // The audit lines: subjects by hash, the replica by name, no token.
    let fingerprint =
        |s: &str| hex::encode(&<sha2::Sha256 as sha2::Digest>::digest(s.as_bytes())[..8]);
    let audit = gw.dir.join("audit.jsonl");
    let lines: Vec<Value> = eventually(CALL_BOUND, || async {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (lines.len() >= 4).then_some(lines)
    })
    .await;
    let subjects: std::collections::BTreeSet<&str> =
        lines.iter().filter_map(|l| l["subject"].as_str()).collect();
    assert_eq!(
        subjects,
        [fingerprint("alice"), fingerprint("bob")]
            .iter()
            .map(String::as_str)
            .collect()
    );
    assert!(
        lines.iter().all(|l| l["replica"] == "replica-a"),
        "{lines:?}"
    );
    gw.child.start_kill().unwrap();
    let _ = gw.child.wait().await;
    for file in ["audit.jsonl", "stderr.log"] {
        let text = std::fs::read_to_string(gw.dir.join(file)).unwrap();
        for secret in [ALICE, BOB, token.as_str(), "alice\""] {
            assert!(!text.contains(secret), "{file} holds {secret:?}");
        }
    }
}

/// How quickforge shows a handle in an error (`crate::error::preview`):
/// whole up to 64 characters, and a handle has 60.
fn quickforge_preview(handle: &str) -> String {
    assert!(handle.len() <= 64);
    handle.to_string()
}

/// Weakness (issue 23, item 1): opaque tokens are listed by hash, so the
/// operator needs the hash without the token ever being on a command line.
/// `quickforge auth hash-token` reads it from stdin (one trailing newline
/// is not part of it) and prints the SHA-256 that `[[auth.tokens]]` takes;
/// a short token is refused.
/// Red team round 3, point 6 (the run table): one subject's stream of
/// quick tasks evicted another subject's finished, unfetched result from
/// the shared table (four runs at `max_concurrent = 1`). The largest
/// holder makes room now, with its own oldest outcome.
#[tokio::test]
async fn one_subjects_tasks_do_not_evict_anothers_result() {
    let rate = Rate {
        sandbox: "max_concurrent = 1\n",
        ..Rate::default()
    };
    let (mut gw, _) = Gateway::start_with("auth-run-share", &rate).await;
    let connect = |token: &str| {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(gw.url.as_str()).auth_header(token),
        );
        Tasks.serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: None,
            },
        )
    };
    let task = |ms: u64, value: u64| {
        CallToolRequestParams::new("execute").with_arguments(
            json!({"code": format!("async () => {{ await new Promise(r => setTimeout(r, {ms})); return {value} }}")})
                .as_object()
                .cloned()
                .unwrap(),
        )
    };
    // run to its end (as a task; task_after_ms = 0), and its id
    let finished = |client: RunningService<RoleClient, Tasks>, params: CallToolRequestParams| async move {
        let id = match client.peer().call_tool_once(params).await.unwrap() {
            CallToolResponse::Task(created) => created.task.task_id,
            other => panic!("expected a task, got {other:?}"),
        };
        eventually(CALL_BOUND, || async {
            let got = client
                .peer()
                .get_task(GetTaskParams::new(&id))
                .await
                .unwrap();
            matches!(got.task.payload, TaskPayload::Completed { .. }).then_some(())
        })
        .await;
        (client, id)
    };
    let (alice, kept) = finished(connect(ALICE).await.unwrap(), task(100, 7)).await;
    let mut bob = connect(BOB).await.unwrap();
    for i in 0..8 {
        bob = finished(bob, task(10, i)).await.0;
    }
    let got = alice
        .peer()
        .get_task(GetTaskParams::new(&kept))
        .await
        .expect("alice's finished task is still held after eight of bob's");
    let TaskPayload::Completed { result } = got.task.payload else {
        panic!("{:?}", got.task.payload);
    };
    assert_eq!(
        result["structuredContent"]["result"],
        json!(7),
        "{result:?}"
    );
    gw.child.start_kill().unwrap();
}

/// Red team round 3, point 6 (slots): a 2026-era client needs no session,
/// and each stateless request got a share of slots of its own, so one
/// subject held every slot. The share is the subject's now, across its
/// requests: past it, alice is told busy, and bob still runs.
#[tokio::test]
async fn a_subjects_stateless_requests_share_one_share_of_slots() {
    let rate = Rate {
        sandbox: "max_concurrent = 4\nmax_queue_wait_ms = 300\n",
        ..Rate::default()
    };
    let (mut gw, _) = Gateway::start_with("auth-slot-share", &rate).await;
    let connect = |token: &str| {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(gw.url.as_str()).auth_header(token),
        );
        ().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: None,
            },
        )
    };
    let (alice, bob) = (connect(ALICE).await.unwrap(), connect(BOB).await.unwrap());
    let params = |code: &str| {
        CallToolRequestParams::new("execute")
            .with_arguments(json!({"code": code}).as_object().cloned().unwrap())
    };
    let slow = "async () => { await new Promise(r => setTimeout(r, 1500)); return 1 }";
    let alices = futures_util::future::join_all((0..4).map(|_| alice.call_tool(params(slow))));
    let bobs = async {
        // while alice's four are in, bob's one runs at once
        tokio::time::sleep(Duration::from_millis(400)).await;
        bob.call_tool(params("async () => 2")).await.unwrap()
    };
    let (alices, bob_result) = tokio::join!(alices, bobs);
    assert_eq!(ok_value(&bob_result), 2);
    let (ran, busy): (Vec<_>, Vec<_>) = alices
        .into_iter()
        .map(Result::unwrap)
        .partition(|r| r.is_error != Some(true));
    assert_eq!((ran.len(), busy.len()), (2, 2), "{busy:?}");
    for r in &busy {
        assert!(
            text(r).contains("this subject already runs its share of 2"),
            "{}",
            text(r)
        );
    }
    gw.child.start_kill().unwrap();
}

/// Red team round 3, point 6 (session places): one subject holding every
/// `max_sessions` place kept another at 503. The subject holding the most
/// places now gives up its least recently used session to a subject that
/// holds fewer; between equals, the gateway stays full.
#[tokio::test]
async fn one_subject_cannot_hold_every_session_place() {
    let rate = Rate {
        sandbox: "max_sessions = 2\n",
        ..Rate::default()
    };
    let (mut gw, _) = Gateway::start_with("auth-place-share", &rate).await;
    let _a1 = gw.client(ALICE).await;
    let _a2 = gw.client(ALICE).await;
    let bob = gw.post(Some(&format!("Bearer {BOB}"))).await;
    assert_eq!(
        bob.status(),
        200,
        "bob gets a place from alice, who held both"
    );
    let alice = gw.post(Some(&format!("Bearer {ALICE}"))).await;
    assert_eq!(alice.status(), 503, "one place each: the gateway is full");
    let said = alice.text().await.unwrap();
    assert!(said.contains("sandbox.max_sessions"), "{said}");
    gw.child.start_kill().unwrap();
}

#[tokio::test]
async fn hash_token_reads_the_token_from_stdin() {
    for (input, code) in [(format!("{ALICE}\n"), 0), ("short\n".to_string(), 2)] {
        let mut cmd = quickforge_cmd(None);
        cmd.args(["auth", "hash-token"]);
        let out = output_with_stdin(&mut cmd, input.as_bytes()).await;
        assert_eq!(out.status.code(), Some(code), "{input:?}");
        if code == 0 {
            let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(ALICE.as_bytes()));
            assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), hash);
        } else {
            assert!(String::from_utf8_lossy(&out.stderr).contains("at least 32 bytes"));
        }
    }
}

/// Weakness (issue 23, item 2): `max_executions_per_minute` was one budget
/// for everyone, so one user's loop locked all others out. With
/// `rate_limit_scope = "subject"` each subject has its own: Alice spends
/// hers (6 a minute, bursts of 1) and is refused, Bob still runs.
#[tokio::test]
async fn rate_limits_can_be_per_subject() {
    let rate = Rate {
        sandbox: "max_executions_per_minute = 6\n",
        auth: "rate_limit_scope = \"subject\"\n",
        ..Rate::default()
    };
    let (mut gw, _) = Gateway::start_with("auth-rate", &rate).await;
    let (alice, bob) = (gw.client(ALICE).await, gw.client(BOB).await);
    assert_eq!(ok_value(&execute(&alice, "async () => 1", None).await), 1);
    let e = err_value(&execute(&alice, "async () => 1", None).await);
    assert_eq!(e["forge"]["code"], "RATE_LIMITED", "{e:#}");
    assert_eq!(ok_value(&execute(&bob, "async () => 2", None).await), 2);
    gw.child.start_kill().unwrap();
}

/// Weakness (issue 23, item 1): the official Python SDK client must work
/// against an authenticated gateway. It sends the bearer header on every
/// request, in both protocol eras, and its scripts run.
#[tokio::test]
async fn the_python_sdk_client_sends_its_bearer_token() {
    let (mut gw, _) = Gateway::start("auth-python").await;
    for era in ["2026-07-28", "2025-11-25"] {
        let input = json!({"bearer": ALICE, "steps": [{"execute": "async () => 6 * 7"}]});
        let args = [std::ffi::OsStr::new(era), std::ffi::OsStr::new(&gw.url)];
        let out = python_client("sdk_client.py", &args, &input, CALL_BOUND).await;
        assert_eq!(out[0]["protocolVersion"], era);
        assert_eq!(out[0]["structuredContent"]["result"], 42, "{era}: {out:?}");
    }
    gw.child.start_kill().unwrap();
}

/// Weakness (issue 23, item 1): `serve --http` on a public address served
/// anyone once `--allow-host` was given. Now without `[auth]` it refuses to
/// start, with exit 2 and a message that shows how to configure it.
#[tokio::test]
async fn a_public_bind_without_auth_is_refused_with_how_to_configure_it() {
    let dir = scratch("auth-public");
    let config = write_config(&dir, "");
    let mut cmd = quickforge_cmd(Some(&config));
    cmd.args(["serve", "--http", "0.0.0.0:0", "--allow-host", "gw.test"])
        .stdin(Stdio::null());
    // Without the check it would serve until killed: bound the wait.
    let out = tokio::time::timeout(CALL_BOUND, cmd.output())
        .await
        .expect("refused at once, not served")
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for says in [
        "[auth]",
        "[[auth.tokens]]",
        "quickforge auth hash-token",
        "[auth.jwt]",
    ] {
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
}

/// Weakness (issue 23, item 1): the issuer's JWKS out of reach. Before any
/// key was fetched, a well-formed JWT must get 503 with `Retry-After` (the
/// token cannot be checked, which is not the same as invalid), every time
/// until a fetch succeeds — the gateway answered 401 "kid unknown" to the
/// requests between two tries, sending clients for new tokens that could
/// not work either. Meanwhile `/health` and opaque tokens keep working;
/// a JWKS that answers 500 or garbage is still a 503; and once it serves
/// the keys, the same token is accepted without a restart.
#[tokio::test]
async fn an_unreachable_jwks_is_a_503_until_it_serves_then_the_token_works() {
    // A port nobody listens on yet: bound for its number, then released.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let jwks = format!("http://127.0.0.1:{port}/jwks");
    // One second between fetches, the least the config allows: the test
    // waits for the next try, so it waits no longer than that.
    let rate = Rate {
        jwt: "jwks_refresh_secs = 1\n",
        ..Rate::default()
    };
    let mut gw = Gateway::start_at("auth-jwks-down", &jwks, &rate).await;
    let token = format!(
        "Bearer {}",
        jwt(
            "jwt-test-ed25519",
            KID,
            &claims("alice", RESOURCE, ISSUER, 600)
        )
    );
    let unavailable = |r: reqwest::Response| async move {
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1", "jwks_refresh_secs");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "temporarily_unavailable", "{body}");
    };
    // The first try fails; the second comes before the next try is due.
    for _ in 0..2 {
        unavailable(gw.post(Some(&token)).await).await;
    }
    let base = gw.url.trim_end_matches("/mcp").to_string();
    let health = reqwest::get(format!("{base}/health")).await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        gw.post(Some(&format!("Bearer {ALICE}"))).await.status(),
        200
    );

    // The JWKS comes up, answering 500, then garbage: still 503, and each
    // kind is fetched (a fetch per second at most).
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let answer = Arc::new(AtomicUsize::new(SERVE_500));
    let fetches = serve_jwks_on(listener, answer.clone());
    for mode in [SERVE_500, SERVE_GARBAGE] {
        answer.store(mode, Ordering::SeqCst);
        let before = fetches.load(Ordering::SeqCst);
        eventually(Duration::from_secs(10), || async {
            unavailable(gw.post(Some(&token)).await).await;
            (fetches.load(Ordering::SeqCst) > before).then_some(())
        })
        .await;
    }
    // Then the keys: the same token is accepted, by the same process.
    answer.store(SERVE_KEYS, Ordering::SeqCst);
    eventually(Duration::from_secs(10), || async {
        let r = gw.post(Some(&token)).await;
        if r.status() == 200 {
            return Some(());
        }
        unavailable(r).await;
        None
    })
    .await;
    assert!(gw.child.try_wait().unwrap().is_none(), "still serving");
    gw.child.start_kill().unwrap();
}

/// A 2025-era request in session `session` with `token` (if any), carrying
/// `body`; the raw response.
async fn in_session(
    gw: &Gateway,
    session: &str,
    token: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(&gw.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// The JSON-RPC answer with `id` in a response's SSE (or JSON) body.
async fn answer(response: reqwest::Response, id: u64) -> Value {
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    body.lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no answer {id} in {body}"))
}

/// Weakness (issue 23, item 2): a 2025-era session id is a bearer of its
/// own; one that leaked (a log, a proxy) must be of no use to another
/// user. Bob, with his own valid token, uses Alice's session id for a
/// `tools/call`, another method (`tools/list`), the session's SSE stream
/// (GET, which would carry the server's requests to Alice) and DELETE
/// (which would end her session): each gets the 404 of a session that
/// does not exist, and his call does not run. (Only `tools/call` and a few
/// others were refused before, inside the MCP handlers; GET, DELETE and
/// the rest reached the session.) A request with her session id and no
/// token gets 401. Alice's session is undisturbed: her next call works and
/// sees the value she put in the session's stash.
#[tokio::test]
async fn another_subject_cannot_use_a_session_id() {
    let (mut gw, _) = Gateway::start("auth-session-reuse").await;
    let init = gw.post(Some(&format!("Bearer {ALICE}"))).await;
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    drop(init);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = in_session(&gw, &session, Some(ALICE), &initialized).await;
    assert!(r.status().is_success(), "{}", r.status());
    let call = |id: u64, code: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "execute", "arguments": {"code": code}}})
    };
    let put = call(
        2,
        "async () => { await forge.stash.put('k', 'alice'); return 'put' }",
    );
    let a = answer(in_session(&gw, &session, Some(ALICE), &put).await, 2).await;
    assert_eq!(a["result"]["structuredContent"]["result"], "put", "{a}");

    // Red team round 3, point 2: a request of Alice's that rmcp answers
    // with 404 although her session lives (a method unknown at 2026-07-28)
    // must not make the gate forget whose the session is; Bob's requests
    // below stay refused.
    let unknown = reqwest::Client::new()
        .post(&gw.url)
        .bearer_auth(ALICE)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "no/such/method")
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404, "the case the gate must survive");

    // Bob, in Alice's session: no such session, and his script does not run.
    let overwrite = call(
        3,
        "async () => { await forge.stash.put('k', 'bob'); return 'overwritten' }",
    );
    let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
    for body in [&overwrite, &list] {
        let r = in_session(&gw, &session, Some(BOB), body).await;
        assert_eq!(r.status(), 404, "{body}");
    }
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = reqwest::Client::new()
            .request(method.clone(), &gw.url)
            .bearer_auth(BOB)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{method}");
    }
    // No token at all: 401 before the session is looked at.
    challenge(&in_session(&gw, &session, None, &overwrite).await);

    // Alice's session goes on, with her value in its stash.
    let get = call(4, "async () => forge.stash.get('k')");
    let a = answer(in_session(&gw, &session, Some(ALICE), &get).await, 4).await;
    assert_eq!(a["result"]["structuredContent"]["result"], "alice", "{a}");
    gw.child.start_kill().unwrap();
}
