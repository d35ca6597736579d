//! The edge against the native gateway on the same script and the same
//! downstream server (issue 22 item 2: "the same behaviour as the native
//! gateway"): what a script sees must be equal, not merely alike.

use serde_json::Value;

use super::host::{Kv, connect, env_for, fixture_and_manifest, ok, serve, serve_keyvalue};
use crate::mcp::{quickforge_cmd, scratch, write_config};

/// The script's value from the native gateway (`quickforge run`) against
/// the fixture at `url`.
async fn native(url: &str, code: &str) -> Value {
    native_with(url, code, &[]).await
}

/// The script's value from `quickforge run` with `flags`.
async fn native_with(url: &str, code: &str, flags: &[&str]) -> Value {
    native_configured(url, "", code, flags).await
}

/// The script's value from `quickforge run` with `flags`, the fixture's
/// server table extended by `server_toml`.
async fn native_configured(url: &str, server_toml: &str, code: &str, flags: &[&str]) -> Value {
    use tokio::io::AsyncWriteExt;
    let dir = scratch("edge-parity-native");
    let config = write_config(
        &dir,
        &format!("[servers.fixture]\nurl = \"{url}\"\n{server_toml}"),
    );
    let mut child = quickforge_cmd(Some(&config))
        .args(["run", "-"])
        .args(flags)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(code.as_bytes())
        .await
        .unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Arguments that do not match a tool's input schema are refused before
/// the call, as `INVALID_ARGUMENTS` with the same message and suggestion
/// as natively (the edge compiles `quickforge-catalog`); matching
/// ones go through.
#[tokio::test]
async fn edge_checks_arguments_against_the_input_schema_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity").await;
    let client = connect(&serve(env_for(&url, &manifest, &[])).await, None)
        .await
        .unwrap();
    let code = r#"async () => {
        const seen = [];
        for (const args of [{ms: "soon"}, {}, {ms: -1}, {ms: 0}]) {
            try {
                const r = await forge.callTool("fixture", "slow", args);
                seen.push({ok: r.slept});
            } catch (e) {
                seen.push({code: e.code, message: e.message, suggestion: e.suggestion, retryable: e.retryable});
            }
        }
        return seen;
    }"#;
    let edge = ok(&client, "execute", code).await;
    let native = native(&url, code).await;
    assert_eq!(edge, native, "edge and native answers differ");
    assert_eq!(edge[0]["code"], "INVALID_ARGUMENTS", "{edge:#}");
    assert!(
        edge[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("arguments of fixture.slow do not match its input schema: field ms:"),
        "{edge:#}"
    );
    assert_eq!(edge[3]["ok"], 0, "matching arguments reach the server");
}

/// `manifest.*` answers as natively: the same `manifest.servers` (shape,
/// summaries, categories), the same ranking of `manifest.search` (the edge
/// ranks with `quickforge-catalog`, the native manifest's own code), the
/// same refusals of over-long queries, and the same did-you-mean errors of
/// `manifest.tool`.
#[tokio::test]
async fn edge_answers_the_manifest_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity-manifest").await;
    let client = connect(&serve(env_for(&url, &manifest, &[])).await, None)
        .await
        .unwrap();
    let code = r#"async () => {
        const caught = (f) => { try { return f(); } catch (e) { return {code: e.code, message: e.message, suggestion: e.suggestion}; } };
        const out = {servers: manifest.servers, searches: {}, tools: {}};
        for (const q of ["", "slow", "sleep for a while", "echo text back", "slwo", "fixture", "zzzz"]) {
            out.searches[q] = await manifest.search(q, 5);
        }
        out.searches.long = caught(() => manifest.search("x".repeat(2000)));
        out.tools.wrongServer = caught(() => manifest.tool("fixtur", "slow"));
        out.tools.dotted = caught(() => manifest.tool("fixture.slow", "x"));
        out.tools.swapped = caught(() => manifest.tool("slow", "fixture"));
        out.tools.misspelt = caught(() => manifest.tool("fixture", "slwo"));
        out.tools.found = caught(() => manifest.tool("fixture", "slow"));
        return out;
    }"#;
    let edge = ok(&client, "search", code).await;
    let native = native_search(&url, code).await;
    for key in ["servers", "searches", "tools"] {
        assert_eq!(edge[key], native[key], "edge and native {key} differ");
    }
    assert!(
        edge["searches"]["slow"][0]["tool"] == "slow",
        "the ranking found the tool by name: {edge:#}"
    );
    assert_eq!(edge["tools"]["misspelt"]["code"], "TOOL_NOT_FOUND");
    assert_eq!(edge["searches"]["long"]["code"], "INVALID_ARGUMENT");
}

/// The script's value from `quickforge run --search` against the fixture.
async fn native_search(url: &str, code: &str) -> Value {
    native_with(url, code, &["--search"]).await
}

/// Downstream error texts leave the edge redacted exactly as they leave the
/// native gateway: the text redaction is done by the pre-initialized
/// redactor component, the JSON walk by the provider, both the native code
/// (`quickforge-filters`). Every channel a server leaks through: an error
/// result's text, a JSON-RPC error message, and a structured error result.
#[tokio::test]
async fn edge_redacts_downstream_errors_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity-redact").await;
    let client = connect(&serve(env_for(&url, &manifest, &[])).await, None)
        .await
        .unwrap();
    // The per-request figure README reports: a request whose tool error is
    // redacted (the rule set is in the redactor's snapshot, not compiled).
    // First, so that a component from before this test can be timed too.
    let leak = r#"async () => { try { await forge.callTool("fixture", "leak", {}); } catch (e) { return e.code; } }"#;
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = std::time::Instant::now();
        assert_eq!(ok(&client, "execute", leak).await, "TOOL_ERROR");
        times.push(started.elapsed());
    }
    times.sort();
    eprintln!(
        "edge: an execute whose tool error is redacted, median of 20: {:?}",
        times[10]
    );
    let code = r#"async () => {
        const seen = [];
        const calls = [["leak", {}], ["leak_via", {via: "rpc_message"}], ["leak_via", {via: "structured"}], ["leak_via", {via: "long"}]];
        for (const [tool, args] of calls) {
            try { await forge.callTool("fixture", tool, args); seen.push("no error"); }
            catch (e) { seen.push({code: e.code, message: e.message}); }
        }
        return seen;
    }"#;
    let edge = ok(&client, "execute", code).await;
    let native = native(&url, code).await;
    assert_eq!(edge, native, "edge and native redaction differ");
    let text = edge.to_string();
    for secret in [
        "hunter2",
        "ghp_R4nd0mT0k3nV4lu3Xy9Zq8Wv7Ut6Sr5Pq4On",
        "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
        "SG.ngeVfQFYQlKU0ufo8x5d1A",
        "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",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "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",
        "s3cr3t-value",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {edge:#}");
    }
    assert!(text.contains("[REDACTED"), "{edge:#}");
}

/// Every refusal of the stash, edge (its one-request stash, then the stash
/// kept in `wasi:keyvalue`) against native (`quickforge run`'s memory store): an invalid key (a long one, quoted
/// short), a value over the size limit, a TTL over the maximum, the key
/// count and the total size. Both apply `quickforge_core::stash`, so code,
/// message, suggestion and retryability must be equal.
#[tokio::test]
async fn edge_refuses_stash_writes_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity-stash").await;
    let client = connect(&serve(env_for(&url, &manifest, &[])).await, None)
        .await
        .unwrap();
    let code = r#"async () => {
        const seen = [];
        const attempt = async (f) => {
            try { await f(); seen.push("stored"); }
            catch (e) { seen.push({code: e.code, message: e.message, suggestion: e.suggestion, retryable: e.retryable}); }
        };
        await attempt(() => forge.stash.put("a b", 1));
        await attempt(() => forge.stash.put("ключ".repeat(100), 1));
        await attempt(() => forge.stash.delete("semi;colon"));
        await attempt(() => forge.stash.put("big", "x".repeat(1024 * 1024)));
        await attempt(() => forge.stash.put("k", 1, {ttl: 86401}));
        for (let i = 0; i < 256; i++) await forge.stash.put(`k${i}`, i);
        await attempt(() => forge.stash.put("one-more", 1));
        await attempt(() => forge.stash.put("k0", "replaced"));
        for (let i = 0; i < 256; i++) await forge.stash.delete(`k${i}`);
        const mb = "x".repeat(1024 * 1024 - 16);
        for (let i = 0; i < 15; i++) await forge.stash.put(`m${i}`, mb);
        await attempt(() => forge.stash.put("m15", mb));
        await attempt(() => forge.stash.put("m16", mb));
        seen.push(await forge.stash.keys());
        return seen;
    }"#;
    let edge = ok(&client, "execute", code).await;
    let native = native(&url, code).await;
    assert_eq!(edge, native, "edge and native stash refusals differ");
    // The kept stash (`wasi:keyvalue`, its caps over the bucket's index)
    // refuses alike.
    let kept = connect(
        &serve_keyvalue(
            env_for(
                &url,
                &manifest,
                &[(
                    "QUICKFORGE_EDGE_STASH_SECRET",
                    "edge-parity-secret-0123456789abcdef",
                )],
            ),
            Kv::default(),
        )
        .await,
        None,
    )
    .await
    .unwrap();
    let edge_kept = ok(&kept, "execute", code).await;
    assert_eq!(
        edge_kept, native,
        "the kept stash and native refusals differ"
    );
    let codes: Vec<&str> = edge
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["code"].as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "INVALID_STASH_KEY",
            "INVALID_STASH_KEY",
            "INVALID_STASH_KEY",
            "STASH_VALUE_TOO_LARGE",
            "STASH_TTL_TOO_LONG",
            "STASH_FULL",
            "STASH_FULL",
        ],
        "{edge:#}"
    );
    assert!(edge[1]["message"].as_str().unwrap().len() < 600, "{edge:#}");
    assert_eq!(edge[6], "stored", "replacing a key at the key limit");
    assert_eq!(edge[7], "stored", "the 16th value of a megabyte still fits");
}

/// A call past its deadline is the same `TIMEOUT` as natively: the same
/// words, the same suggestion and retryability; only the setting named
/// differs (natively the server's `timeout_secs`, on the edge
/// `QUICKFORGE_EDGE_CALL_TIMEOUT_MS`). The next call is served.
#[tokio::test]
async fn edge_times_out_a_call_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity-timeout").await;
    let client = connect(
        &serve(env_for(
            &url,
            &manifest,
            &[("QUICKFORGE_EDGE_CALL_TIMEOUT_MS", "1000")],
        ))
        .await,
        None,
    )
    .await
    .unwrap();
    let code = r#"async () => {
        const seen = [];
        try { await forge.callTool("fixture", "slow", {ms: 3000}); seen.push("answered"); }
        catch (e) { seen.push({code: e.code, message: e.message, suggestion: e.suggestion, retryable: e.retryable}); }
        seen.push(await forge.callTool("fixture", "slow", {ms: 1}));
        return seen;
    }"#;
    let edge = ok(&client, "execute", code).await;
    let native = native_configured(&url, "timeout_secs = 1\n", code, &[]).await;
    let edge_text = edge
        .to_string()
        .replace("QUICKFORGE_EDGE_CALL_TIMEOUT_MS", "its timeout_secs");
    assert_eq!(
        edge_text,
        native.to_string(),
        "edge {edge:#}\nnative {native:#}"
    );
    assert_eq!(edge[0]["code"], "TIMEOUT", "{edge:#}");
    assert_eq!(edge[0]["retryable"], true, "{edge:#}");
    assert_eq!(
        edge[0]["message"],
        "server \"fixture\" did not answer within 1 s (QUICKFORGE_EDGE_CALL_TIMEOUT_MS)"
    );
}

/// The refusals before a call leaves the gateway read as natively (both
/// call `quickforge-core`'s constructors): every `forge.*` operation in
/// `search`, an unknown server with its did-you-mean, arguments over the
/// size limit (1 MiB on both by default).
#[tokio::test]
async fn edge_refuses_calls_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity-refusals").await;
    let client = connect(&serve(env_for(&url, &manifest, &[])).await, None)
        .await
        .unwrap();
    let attempts = r#"
        const seen = [];
        const attempt = async (f) => {
            try { await f(); seen.push("done"); }
            catch (e) { seen.push({code: e.code, message: e.message, suggestion: e.suggestion, retryable: e.retryable}); }
        };"#;
    let search = format!(
        r#"async () => {{ {attempts}
        await attempt(() => forge.callTool("fixture", "slow", {{ms: 0}}));
        await attempt(() => forge.readResource("fixture", "fixture://x"));
        await attempt(() => forge.stash.put("k", 1));
        await attempt(() => forge.stash.keys());
        return seen;
    }}"#
    );
    let edge = ok(&client, "search", &search).await;
    let natively = native_search(&url, &search).await;
    assert_eq!(edge, natively, "refusals in search differ");
    assert!(
        edge.as_array()
            .unwrap()
            .iter()
            .all(|e| e["code"] == "MODE_DENIED"),
        "{edge:#}"
    );
    let execute = format!(
        r#"async () => {{ {attempts}
        await attempt(() => forge.callTool("fixtur", "slow", {{ms: 0}}));
        await attempt(() => forge.callTool("fixture", "slow", {{ms: 0, pad: "x".repeat(1024 * 1024)}}));
        return seen;
    }}"#
    );
    let edge = ok(&client, "execute", &execute).await;
    let natively = native(&url, &execute).await;
    assert_eq!(edge, natively, "refusals in execute differ");
    assert_eq!(edge[0]["code"], "SERVER_NOT_FOUND", "{edge:#}");
    assert_eq!(edge[1]["code"], "ARGS_TOO_LARGE", "{edge:#}");
}

/// Issue 37: the edge shapes a failed run with the native gateway's own
/// shaper and classifies it by the same rule: a script that throws its own
/// `ForgeError("TOOL_CALL_BUDGET")` failed as `thrown` on both (the edge
/// used to call it `tool_call_budget`), and one that the gateway refused
/// for its call budget, uncaught, as `tool_call_budget` on both. The whole
/// `structuredContent` and the text are compared.
#[tokio::test]
async fn edge_shapes_and_classifies_failures_as_natively() {
    let (_fixture, url, manifest) = fixture_and_manifest("edge-parity-failures").await;
    let client = connect(
        &serve(env_for(
            &url,
            &manifest,
            &[("QUICKFORGE_EDGE_MAX_CALLS", "3")],
        ))
        .await,
        None,
    )
    .await
    .unwrap();
    let dir = scratch("edge-parity-failures-native");
    let natively = crate::mcp::connect(&write_config(
        &dir,
        &format!("[sandbox]\nmax_tool_calls = 3\n\n[servers.fixture]\nurl = \"{url}\"\n"),
    ))
    .await;
    for (code, kind) in [
        (
            r#"async () => { throw new ForgeError("TOOL_CALL_BUDGET", "my own", false, null); }"#,
            "thrown",
        ),
        (
            r#"async () => { for (let i = 0; i < 4; i++) await forge.callTool("fixture", "slow", {ms: 1}); }"#,
            "tool_call_budget",
        ),
        (
            r#"async () => { console.warn("before"); throw new Error("plain"); }"#,
            "thrown",
        ),
    ] {
        let (edge, is_error) = super::host::run(&client, "execute", code).await;
        assert!(is_error, "{edge:#}");
        let native = natively.call("execute", code).await;
        assert_eq!(native.is_error, Some(true));
        let native_structured = native.structured_content.clone().unwrap();
        assert_eq!(edge["error"]["kind"], kind, "{edge:#}");
        assert_eq!(edge, native_structured, "{code}");
    }
    natively.close().await;
}
