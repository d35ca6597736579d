//! The edge against the native gateway on the same script and the same
//! downstream server (issue 22 item 2: "the same behaviour as the native
//! gateway"): what a script sees must be equal, not merely alike.

use serde_json::Value;

use super::host::{connect, env_for, fixture_and_manifest, ok, serve};
use crate::mcp::{quickforge_cmd, scratch, write_config};

/// The script's value from the native gateway (`quickforge run`) against
/// the fixture at `url`.
async fn native(url: &str, code: &str) -> Value {
    native_with(url, code, &[]).await
}

/// The script's value from `quickforge run` with `flags`.
async fn native_with(url: &str, code: &str, flags: &[&str]) -> Value {
    use tokio::io::AsyncWriteExt;
    let dir = scratch("edge-parity-native");
    let config = write_config(&dir, &format!("[servers.fixture]\nurl = \"{url}\"\n"));
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
