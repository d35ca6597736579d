//! The edge against the native gateway on the same script and the same
//! downstream server (issue 22 item 2: "the same behaviour as the native
//! gateway"): what a script sees must be equal, not merely alike.

use serde_json::Value;

use super::host::{connect, env_for, fixture_and_manifest, ok, serve};
use crate::mcp::{quickforge_cmd, scratch, write_config};

/// The script's value from the native gateway (`quickforge run`) against
/// the fixture at `url`.
async fn native(url: &str, code: &str) -> Value {
    use tokio::io::AsyncWriteExt;
    let dir = scratch("edge-parity-native");
    let config = write_config(&dir, &format!("[servers.fixture]\nurl = \"{url}\"\n"));
    let mut child = quickforge_cmd(Some(&config))
        .args(["run", "-"])
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
/// as natively (the edge compiles `host/manifest/schema.rs`); matching
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
