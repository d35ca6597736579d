//! The stash at the edge (issue 22 item 2: "the stash on `wasi:keyvalue`,
//! keyed by the stash handle; where a runtime lacks `wasi:keyvalue` the stash
//! lives for one request"): `quickforge_edge_keyvalue.wasm` keeps it in the
//! runtime's key-value store under handles sealed like the native gateway's,
//! refused when forged, bounded like natively; `quickforge_edge.wasm`, which
//! imports no store, and either without a secret keep it for one request.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::host::{Client, Kv, connect, env_for, fixture_and_manifest, serve, serve_keyvalue};

/// A secret for sealing handles, as a deployment would configure it.
const SECRET: &str = "edge-test-secret-0123456789abcdef";

/// What one `execute` answered: its structured content, whether it is an
/// error, and its text blocks joined.
struct Answer {
    structured: Value,
    is_error: bool,
    text: String,
}

/// `execute` of `code` with the optional `stash` argument; `Err` is the
/// JSON-RPC error's text.
async fn execute(client: &Client, code: &str, stash: Option<Value>) -> Result<Answer, String> {
    execute_as(client, "execute", code, stash).await
}

async fn execute_as(
    client: &Client,
    tool: &str,
    code: &str,
    stash: Option<Value>,
) -> Result<Answer, String> {
    let mut args = serde_json::Map::new();
    args.insert("code".into(), code.into());
    if let Some(s) = stash {
        args.insert("stash".into(), s);
    }
    let r = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .map_err(|e| e.to_string())?;
    let text = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Answer {
        structured: r.structured_content.clone().unwrap_or(Value::Null),
        is_error: r.is_error == Some(true),
        text,
    })
}

/// `execute` that must succeed: its result and the stash handle it reported.
async fn value(client: &Client, code: &str, stash: Option<&str>) -> (Value, Option<String>) {
    let a = execute(client, code, stash.map(Value::from)).await.unwrap();
    assert!(!a.is_error, "expected success, got {:#}", a.structured);
    let handle = a.structured["stash"].as_str().map(str::to_string);
    if let Some(h) = &handle {
        assert!(
            a.text.ends_with(&format!("stash: {h}")),
            "the handle is the last text line too: {}",
            a.text
        );
    }
    (a.structured["result"].clone(), handle)
}

/// `execute` that must fail as a script: the ForgeError's code and message.
async fn forge_error(client: &Client, code: &str, stash: Option<&str>) -> (String, String) {
    let a = execute(client, code, stash.map(Value::from)).await.unwrap();
    assert!(a.is_error, "expected a failure, got {:#}", a.structured);
    let forge = &a.structured["error"]["forge"];
    (
        forge["code"].as_str().unwrap_or_default().to_string(),
        forge["message"].as_str().unwrap_or_default().to_string(),
    )
}

async fn instructions(client: &Client) -> String {
    client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default()
}

/// With a secret configured, the stash outlives the request: a first
/// `execute` gets a sealed `qfs_` handle (in `structuredContent.stash` and
/// as the last text line), a later one passes it back as `stash` and finds
/// the values, `keys` and `delete` see the same stash, and an `execute`
/// without the handle gets a stash of its own.
#[tokio::test]
async fn edge_stash_is_kept_in_keyvalue_under_its_handle() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-stash").await;
    let kv = Kv::default();
    let edge = serve_keyvalue(
        env_for(&url, &manifest, &[("QUICKFORGE_EDGE_STASH_SECRET", SECRET)]),
        kv.clone(),
    )
    .await;
    let client = connect(&edge, None).await.unwrap();
    assert!(
        instructions(&client)
            .await
            .contains("pass a result's `stash` back"),
        "the instructions say how to keep the stash"
    );
    let tools = client.list_all_tools().await.unwrap();
    let execute_tool = tools.iter().find(|t| t.name == "execute").unwrap();
    assert_eq!(
        execute_tool.input_schema["properties"]["stash"]["type"], "string",
        "execute takes the handle, as natively"
    );

    let (v, handle) = value(
        &client,
        r#"async () => { await forge.stash.put("issues", {open: [1, 2]}); return "ok" }"#,
        None,
    )
    .await;
    assert_eq!(v, "ok");
    let handle = handle.expect("a script that used the stash reports its handle");
    assert!(
        handle.starts_with("qfs_") && handle.len() == 4 + 32 + 24,
        "{handle}"
    );
    assert!(
        kv.lock().unwrap().keys().any(|k| k.starts_with("qfs/")),
        "the value went to the runtime's key-value store"
    );

    let (v, again) = value(
        &client,
        r#"async () => ({ got: await forge.stash.get("issues"), keys: await forge.stash.keys() })"#,
        Some(&handle),
    )
    .await;
    assert_eq!(v, json!({"got": {"open": [1, 2]}, "keys": ["issues"]}));
    assert_eq!(again.as_deref(), Some(handle.as_str()), "the same handle");

    let (v, other) = value(&client, r#"async () => forge.stash.get("issues")"#, None).await;
    assert_eq!(v, Value::Null, "without the handle, a new stash");
    assert_ne!(other.as_deref(), Some(handle.as_str()));

    let (v, _) = value(
        &client,
        r#"async () => [await forge.stash.delete("issues"), await forge.stash.delete("issues"), await forge.stash.get("issues"), await forge.stash.keys()]"#,
        Some(&handle),
    )
    .await;
    assert_eq!(
        v,
        json!([{"deleted": true}, {"deleted": false}, null, []]),
        "delete answers as natively (Forgemax's shape)"
    );

    let (_, none) = value(&client, "async () => 1 + 1", None).await;
    assert_eq!(
        none, None,
        "no handle when the script did not touch the stash"
    );
}

/// Replicas of one deployment (same secret, same key-value store) share
/// stashes: a handle from one opens on another. A deployment with another
/// secret refuses it before anything runs, as it refuses an altered handle,
/// a non-string one, and a `stash` given to `search`; the endpoint serves
/// on after each refusal.
#[tokio::test]
async fn edge_stash_handles_open_on_replicas_and_nowhere_else() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-stash-replicas").await;
    let kv = Kv::default();
    let env = |secret: &str| env_for(&url, &manifest, &[("QUICKFORGE_EDGE_STASH_SECRET", secret)]);
    let a = connect(&serve_keyvalue(env(SECRET), kv.clone()).await, None)
        .await
        .unwrap();
    let b = connect(&serve_keyvalue(env(SECRET), kv.clone()).await, None)
        .await
        .unwrap();
    let foreign = connect(
        &serve_keyvalue(env("another-deployment-secret-xyz"), kv.clone()).await,
        None,
    )
    .await
    .unwrap();

    let (_, handle) = value(&a, r#"async () => forge.stash.put("k", "from a")"#, None).await;
    let handle = handle.unwrap();
    let (v, _) = value(&b, r#"async () => forge.stash.get("k")"#, Some(&handle)).await;
    assert_eq!(v, "from a", "another replica reads it");

    let refused = execute(
        &foreign,
        r#"async () => forge.stash.get("k")"#,
        Some(handle.clone().into()),
    )
    .await
    .err()
    .expect("another deployment's handle is refused");
    assert!(
        refused.contains("is not a stash handle of this endpoint"),
        "{refused}"
    );

    let mut altered = handle.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'0' { b'1' } else { b'0' };
    let altered = String::from_utf8(altered).unwrap();
    let refused = execute(&a, "async () => 1", Some(altered.into()))
        .await
        .err()
        .unwrap();
    assert!(refused.contains("is not a stash handle"), "{refused}");

    let refused = execute(&a, "async () => 1", Some(json!(42)))
        .await
        .err()
        .unwrap();
    assert!(refused.contains("`stash` must be a string"), "{refused}");
    let refused = execute_as(&a, "search", "async () => 1", Some(handle.clone().into()))
        .await
        .err()
        .unwrap();
    assert!(refused.contains("argument of execute"), "{refused}");

    let (v, _) = value(&a, r#"async () => forge.stash.get("k")"#, Some(&handle)).await;
    assert_eq!(v, "from a", "still serving, the stash intact");
}

/// Without a secret, and always in the portable component, the stash lives
/// for one request: values are there within the script and gone from the
/// next one, no handle is reported, a `stash` argument is refused with the
/// reason, and the instructions say so. A secret given to the portable
/// component, or one shorter than 16 bytes, fails stash operations and
/// calls with the configuration problem instead of quietly keeping nothing.
#[tokio::test]
async fn edge_stash_without_a_secret_lives_for_one_request() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-stash-local").await;
    for keyvalue in [false, true] {
        let env = env_for(&url, &manifest, &[]);
        let edge = if keyvalue {
            serve_keyvalue(env, Kv::default()).await
        } else {
            serve(env).await
        };
        let client = connect(&edge, None).await.unwrap();
        assert!(
            instructions(&client)
                .await
                .contains("lives for one execute only")
        );
        let (v, handle) = value(
            &client,
            r#"async () => { await forge.stash.put("a", 1); return [await forge.stash.get("a"), await forge.stash.keys()] }"#,
            None,
        )
        .await;
        assert_eq!(v, json!([1, ["a"]]));
        assert_eq!(handle, None);
        let (v, _) = value(&client, r#"async () => forge.stash.get("a")"#, None).await;
        assert_eq!(
            v,
            Value::Null,
            "the next request starts with an empty stash"
        );
        let refused = execute(&client, "async () => 1", Some("qfs_x".into()))
            .await
            .err()
            .unwrap();
        assert!(
            refused.contains("QUICKFORGE_EDGE_STASH_SECRET is not configured"),
            "{refused}"
        );
    }

    for (keyvalue, secret, problem) in [
        (
            false,
            SECRET,
            "QUICKFORGE_EDGE_STASH_SECRET is set, but quickforge_edge.wasm keeps the stash for one request only; serve edge/dist/quickforge_edge_keyvalue.wasm",
        ),
        (
            true,
            "short",
            "QUICKFORGE_EDGE_STASH_SECRET is 5 bytes; use at least 16",
        ),
    ] {
        let env = env_for(&url, &manifest, &[("QUICKFORGE_EDGE_STASH_SECRET", secret)]);
        let edge = if keyvalue {
            serve_keyvalue(env, Kv::default()).await
        } else {
            serve(env).await
        };
        let client = connect(&edge, None).await.unwrap();
        for code in [
            r#"async () => forge.stash.put("a", 1)"#,
            r#"async () => forge.callTool("fixture", "stats", {})"#,
        ] {
            let (code_, message) = forge_error(&client, code, None).await;
            assert_eq!(code_, "INTERNAL");
            assert!(message.contains(problem), "{message}");
        }
    }
}

/// The native caps and errors, enforced by the provider over the key-value
/// store: key rule, value size, TTL maximum, key count; a value's TTL ends
/// it for every later request; a bucket the runtime does not have fails as
/// `STATE_UNAVAILABLE` naming the setting. The endpoint serves on.
#[tokio::test]
async fn edge_stash_enforces_the_native_limits_and_ttls() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-stash-limits").await;
    let env = env_for(&url, &manifest, &[("QUICKFORGE_EDGE_STASH_SECRET", SECRET)]);
    let client = connect(&serve_keyvalue(env, Kv::default()).await, None)
        .await
        .unwrap();

    let (code, message) =
        forge_error(&client, r#"async () => forge.stash.put("a b", 1)"#, None).await;
    assert_eq!(code, "INVALID_STASH_KEY", "{message}");
    let (code, message) = forge_error(
        &client,
        r#"async () => forge.stash.put("big", "x".repeat(1024 * 1024))"#,
        None,
    )
    .await;
    assert_eq!(code, "STASH_VALUE_TOO_LARGE", "{message}");
    assert!(message.contains("over the 1048576-byte limit"), "{message}");
    let (code, message) = forge_error(
        &client,
        r#"async () => forge.stash.put("k", 1, {ttl: 86401})"#,
        None,
    )
    .await;
    assert_eq!(code, "STASH_TTL_TOO_LONG", "{message}");

    let (v, handle) = value(
        &client,
        r#"async () => {
            for (let i = 0; i < 256; i++) await forge.stash.put(`k${i}`, i);
            try { await forge.stash.put("one-more", 1); return "stored" }
            catch (e) { return [e.code, (await forge.stash.keys()).length] }
        }"#,
        None,
    )
    .await;
    assert_eq!(v, json!(["STASH_FULL", 256]));
    let handle = handle.unwrap();
    let (v, _) = value(
        &client,
        r#"async () => { await forge.stash.put("k0", "replaced"); return forge.stash.get("k0") }"#,
        Some(&handle),
    )
    .await;
    assert_eq!(v, "replaced", "replacing a key of a full stash is allowed");

    let (_, short) = value(
        &client,
        r#"async () => { await forge.stash.put("brief", 1, {ttl: 1}); await forge.stash.put("long", 2); return forge.stash.get("brief") }"#,
        None,
    )
    .await;
    let short = short.unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let (v, _) = value(
        &client,
        r#"async () => [await forge.stash.get("brief"), await forge.stash.get("long"), await forge.stash.keys()]"#,
        Some(&short),
    )
    .await;
    assert_eq!(
        v,
        json!([null, 2, ["long"]]),
        "the TTL ended `brief` for later requests"
    );

    let other_bucket = connect(
        &serve_keyvalue(
            env_for(
                &url,
                &manifest,
                &[
                    ("QUICKFORGE_EDGE_STASH_SECRET", SECRET),
                    ("QUICKFORGE_EDGE_STASH_BUCKET", "nope"),
                ],
            ),
            Kv::default(),
        )
        .await,
        None,
    )
    .await
    .unwrap();
    let (code, message) =
        forge_error(&other_bucket, r#"async () => forge.stash.get("a")"#, None).await;
    assert_eq!(code, "STATE_UNAVAILABLE");
    assert!(
        message.contains("QUICKFORGE_EDGE_STASH_BUCKET"),
        "{message}"
    );
    let (v, _) = value(&other_bucket, "async () => 2 + 2", None).await;
    assert_eq!(v, 4, "scripts that do not use the stash keep working");
}
