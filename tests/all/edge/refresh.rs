//! The manifest refreshed from `tools/list` at the edge (issue 22 item 2:
//! "the manifest, from a snapshot produced by `quickforge manifest --json`
//! at deploy time, and refreshed from `tools/list` when the runtime
//! allows"): a refresh updates the snapshot's tools, drops the ones a server
//! no longer lists, never adds one the snapshot (and so the gateway's tool
//! policy) did not let through; the keyvalue build keeps it in the bucket for
//! the interval; a server that cannot be listed shows as `unavailable`.

use std::time::Duration;

use serde_json::{Value, json};

use super::host::{Kv, connect, env_for, fixture_and_manifest, ok, run, serve, serve_keyvalue};

/// The snapshot as a deployment that is behind its server would have it:
/// `slow` with an old description, `ghost` (no longer listed by the
/// server), `crash` not yet in it (as if added after the deploy), `hang`
/// refused by the deploy-time policy.
fn stale_snapshot(manifest: &str) -> String {
    let mut servers: Value = serde_json::from_str(manifest).unwrap();
    let fixture = &mut servers[0];
    let tools = fixture["tools"].as_array_mut().unwrap();
    let slow = tools.iter_mut().find(|t| t["name"] == "slow").unwrap();
    slow["description"] = "OLD description".into();
    let mut ghost = slow.clone();
    ghost["name"] = "ghost".into();
    tools.push(ghost);
    tools.retain(|t| t["name"] != "crash" && t["name"] != "hang");
    fixture["denied"] = json!({"hang": "the deploy-time policy refuses it"});
    servers.to_string()
}

/// What a script sees of the four tools.
const LOOK: &str = r#"async () => {
    const caught = (f) => { try { return f(); } catch (e) { return {code: e.code, message: e.message}; } };
    return {
        slow: caught(() => manifest.tool("fixture", "slow").description),
        ghost: caught(() => manifest.tool("fixture", "ghost").name),
        crash: caught(() => manifest.tool("fixture", "crash").name),
        hang: caught(() => manifest.tool("fixture", "hang").name),
        status: manifest.servers[0].status,
    };
}"#;

#[tokio::test]
async fn edge_refreshes_the_snapshots_tools_from_tools_list() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-refresh").await;
    let stale = stale_snapshot(&manifest);

    // Without a refresh the snapshot is what scripts see.
    let plain = connect(&serve(env_for(&url, &stale, &[])).await, None)
        .await
        .unwrap();
    let seen = ok(&plain, "search", LOOK).await;
    assert_eq!(seen["slow"], "OLD description", "{seen:#}");
    assert_eq!(seen["ghost"], "ghost", "{seen:#}");

    // With one, the server's listing within the snapshot's bounds.
    let env = env_for(
        &url,
        &stale,
        &[("QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS", "60")],
    );
    let client = connect(&serve(env).await, None).await.unwrap();
    let seen = ok(&client, "search", LOOK).await;
    assert_eq!(seen["slow"], "Answer after a delay", "{seen:#}");
    assert_eq!(seen["ghost"]["code"], "TOOL_NOT_FOUND", "{seen:#}");
    assert_eq!(
        seen["crash"]["code"], "TOOL_NOT_FOUND",
        "a tool the snapshot lacks is not added: {seen:#}"
    );
    assert_eq!(seen["hang"]["code"], "POLICY_DENIED", "{seen:#}");
    assert!(
        seen["hang"]["message"]
            .as_str()
            .unwrap()
            .contains("the deploy-time policy refuses it"),
        "{seen:#}"
    );
    assert_eq!(seen["status"], "ready");

    // Calls are checked against the refreshed manifest: the tool added
    // after the deploy is refused before it reaches the server (which
    // would exit), and the server still answers afterwards.
    let calls = ok(
        &client,
        "execute",
        r#"async () => {
            let crash;
            try { await forge.callTool("fixture", "crash", {}); crash = "called"; }
            catch (e) { crash = e.code; }
            const slow = await forge.callTool("fixture", "slow", {ms: 0});
            return {crash, slept: slow.slept};
        }"#,
    )
    .await;
    assert_eq!(calls, json!({"crash": "TOOL_NOT_FOUND", "slept": 0}));
}

#[tokio::test]
async fn edge_keeps_the_refreshed_manifest_in_the_bucket() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-refresh-kept").await;
    let stale = stale_snapshot(&manifest);
    let kv = Kv::default();
    let env = env_for(
        &url,
        &stale,
        &[("QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS", "2")],
    );
    let client = connect(&serve_keyvalue(env, kv.clone()).await, None)
        .await
        .unwrap();
    let seen = ok(&client, "search", LOOK).await;
    assert_eq!(seen["slow"], "Answer after a delay", "{seen:#}");
    let kept = |kv: &Kv| -> Value {
        serde_json::from_slice(kv.lock().unwrap().get("qfm/manifest").expect("kept")).unwrap()
    };
    let first = kept(&kv);
    assert!(first["fetched"].as_u64().unwrap() > 0, "{first:#}");

    // Within the interval the kept listing is read, not listed again: a
    // description changed in the store is what the next request sees.
    // A tool written into the store beside them is not: what is kept is
    // held to the snapshot's tools again when read.
    let mut doctored = first.clone();
    let tools = doctored["servers"][0]["tools"].as_array_mut().unwrap();
    for t in tools.iter_mut() {
        if t["name"] == "slow" {
            t["description"] = "KEPT".into();
        }
    }
    let mut planted = tools[0].clone();
    planted["name"] = "crash".into();
    tools.push(planted);
    kv.lock()
        .unwrap()
        .insert("qfm/manifest".into(), doctored.to_string().into_bytes());
    let seen = ok(&client, "search", LOOK).await;
    assert_eq!(seen["slow"], "KEPT", "{seen:#}");
    assert_eq!(seen["crash"]["code"], "TOOL_NOT_FOUND", "{seen:#}");

    // A deployment with another snapshot does not use it.
    let other = stale.replace("OLD description", "OLDER description");
    let env = env_for(
        &url,
        &other,
        &[("QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS", "2")],
    );
    let replica = connect(&serve_keyvalue(env, kv.clone()).await, None)
        .await
        .unwrap();
    let seen = ok(&replica, "search", LOOK).await;
    assert_eq!(seen["slow"], "Answer after a delay", "{seen:#}");

    // Once the interval is over, the next request lists again.
    let kv2 = Kv::default();
    let env = env_for(
        &url,
        &stale,
        &[("QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS", "1")],
    );
    let client = connect(&serve_keyvalue(env, kv2.clone()).await, None)
        .await
        .unwrap();
    ok(&client, "search", LOOK).await;
    let before = kept(&kv2)["fetched"].as_u64().unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ok(&client, "search", LOOK).await;
    let after = kept(&kv2)["fetched"].as_u64().unwrap();
    assert!(after >= before + 1000, "{before} → {after}");
}

#[tokio::test]
async fn edge_shows_a_server_it_cannot_list_as_unavailable() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-refresh-down").await;
    // A second server, `gone`, at an address nothing listens on.
    let mut servers: Value = serde_json::from_str(&manifest).unwrap();
    let mut gone = servers[0].clone();
    gone["name"] = "gone".into();
    let tools = gone["tools"].as_array().unwrap().len();
    servers.as_array_mut().unwrap().push(gone);
    let env = vec![
        (
            "QUICKFORGE_EDGE_SERVERS".to_string(),
            json!({"fixture": {"url": url}, "gone": {"url": "http://127.0.0.1:9/mcp"}}).to_string(),
        ),
        ("QUICKFORGE_EDGE_MANIFEST".to_string(), servers.to_string()),
        (
            "QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS".to_string(),
            "60".to_string(),
        ),
    ];
    let client = connect(&serve(env).await, None).await.unwrap();
    let seen = ok(
        &client,
        "search",
        "async () => manifest.servers.map(s => ({name: s.name, status: s.status, error: s.error, tools: s.tools}))",
    )
    .await;
    assert_eq!(seen[0]["name"], "fixture");
    assert_eq!(seen[0]["status"], "ready", "{seen:#}");
    assert_eq!(seen[1]["name"], "gone");
    assert_eq!(seen[1]["status"], "unavailable", "{seen:#}");
    assert!(
        seen[1]["error"].as_str().unwrap().contains("gone"),
        "{seen:#}"
    );
    assert_eq!(seen[1]["tools"], tools, "its last tools stay: {seen:#}");
}

#[tokio::test]
async fn edge_refuses_a_refresh_without_a_snapshot() {
    let (_fixture, url, _) = fixture_and_manifest("edge-refresh-nosnap").await;
    let env = vec![
        (
            "QUICKFORGE_EDGE_SERVERS".to_string(),
            json!({"fixture": {"url": url}}).to_string(),
        ),
        (
            "QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS".to_string(),
            "60".to_string(),
        ),
    ];
    let client = connect(&serve(env).await, None).await.unwrap();
    let (v, is_error) = run(
        &client,
        "execute",
        r#"async () => forge.callTool("fixture", "slow", {ms: 0})"#,
    )
    .await;
    assert!(is_error, "{v:#}");
    assert!(
        v.to_string().contains(
            "QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS refreshes the snapshot's tools, so it needs QUICKFORGE_EDGE_MANIFEST"
        ),
        "{v:#}"
    );
}
