//! Issue 16, item 4: redaction that survives a determined or careless server,
//! through the real binary and the fixture server (`leak_via`): secrets in a
//! JSON-RPC error's message and `data`, in an `isError` result with only
//! `structuredContent`, across the error-text limit, and on the server's stderr
//! (the gateway's own log); and an "unavailable" reason that still names the
//! server and its command when redaction hid the command's path.

use serde_json::Value;

use crate::mcp::*;

/// Pieces of the secrets `leak_via` sends (SendGrid, Shopify, Google OAuth,
/// GitHub, a PEM body, named values); none may reach a script or the log.
const SECRETS: &[&str] = &[
    "ngeVfQFYQlKU0ufo8x5d1A",
    "shpat_4c3f5a1b",
    "1a2B3c4D5e6F7g8H9i0J",
    "ghp_16C7e42F",
    "6912E7710c838347Ae178B4a",
    "MIIEowIBAAKCAQEAz9fixture",
    "Zm9vYmFyYmF6cXV4cXV1eHh5enp5",
    "hunter2",
    "s3cr3t-value",
];

fn assert_clean(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{s:?} reached {what}: {text}");
    }
}

/// The error a script sees when `leak_via` fails through `via`: its code and
/// message, as the script reads them from the thrown `ForgeError`.
async fn caught(s: &Session, via: &str) -> Value {
    s.execute(&format!(
        r#"async () => {{
            try {{ await forge.callTool("fx", "leak_via", {{ via: "{via}" }}); return null; }}
            catch (e) {{ return {{ code: e.code, message: e.message }}; }}
        }}"#
    ))
    .await
}

/// Before: a JSON-RPC error's message reached the script with any provider
/// key the old hand-kept list did not know (SendGrid, Shopify); its `data`
/// was dropped, and an `isError` result with only `structuredContent` was
/// quoted as JSON text and cut before redaction (a field named
/// `client_secret` whose value looks like nothing was kept). Each channel
/// now arrives redacted, with markers where the secrets were.
#[tokio::test]
async fn secrets_in_downstream_errors_do_not_reach_the_script() {
    let dir = scratch("redact-errors");
    let s = connect(&write_config(&dir, &fixture("fx", &[]))).await;

    let e = caught(&s, "rpc_message").await;
    assert_eq!(e["code"], "DOWNSTREAM_ERROR", "{e:#}");
    let m = e["message"].as_str().unwrap();
    assert_clean("a JSON-RPC error message", m);
    assert!(m.contains("[REDACTED:key]") && m.contains("-32602"), "{m}");

    let e = caught(&s, "rpc_data").await;
    let m = e["message"].as_str().unwrap();
    assert_clean("a JSON-RPC error's data", m);
    // the data is shown (it says what failed), its secrets are not
    assert!(
        m.contains("data:") && m.contains("\"password\":\"[REDACTED]\""),
        "{m}"
    );

    let e = caught(&s, "structured").await;
    assert_eq!(e["code"], "TOOL_ERROR", "{e:#}");
    let m = e["message"].as_str().unwrap();
    assert_clean("a structured error result", m);
    assert!(m.contains("\"client_secret\":\"[REDACTED]\""), "{m}");
    assert!(m.contains("ValueError"), "the exception line is kept: {m}");
}

/// Before: the error text was cut to its 2048-byte limit first and redacted
/// after, so a token straddling the limit lost its tail and kept its
/// recognisable head (`ghp_16C7e42F…`) out of the redactor's reach.
#[tokio::test]
async fn a_secret_straddling_the_error_limit_is_redacted_before_the_cut() {
    let dir = scratch("redact-long");
    let s = connect(&write_config(&dir, &fixture("fx", &[]))).await;
    let e = caught(&s, "long").await;
    let m = e["message"].as_str().unwrap();
    assert_clean("a cut error text", m);
    assert!(
        m.contains("more bytes cut"),
        "the text was cut: {}",
        &m[m.len() - 80..]
    );
    assert!(!m.contains("ghp_"), "{}", &m[m.len() - 120..]);
}

/// Before: a server's stderr reached the gateway's log line by line, so a PEM
/// key, a token wrapped over two lines and keys of shapes the old list did not
/// know were logged as they were.
#[tokio::test]
async fn secrets_on_a_servers_stderr_do_not_reach_the_gateway_log() {
    let dir = scratch("redact-stderr");
    let log = dir.join("gateway.log");
    let s = connect_logging_to(
        quickforge_cmd(Some(&write_config(&dir, &fixture("fx", &[])))),
        std::fs::File::create(&log).unwrap().into(),
    )
    .await;
    let v = s
        .execute(r#"async () => (await forge.callTool("fx", "leak_via", { via: "stderr" })).wrote"#)
        .await;
    assert_eq!(v, "stderr");
    s.close().await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("loaded config"),
        "the stderr lines are logged: {text}"
    );
    assert_clean("the gateway log", &text);
    assert!(text.contains("[REDACTED:pem]"), "{text}");
}

/// Before: a server whose command was not found was listed as unavailable with
/// the reason `could not start "[REDACTED:path]": …`, which names neither the
/// server nor the program. The reason now names both (the command's basename),
/// and the path stays hidden.
#[tokio::test]
async fn an_unavailable_reason_names_the_server_and_its_commands_basename() {
    let dir = scratch("redact-unavailable");
    // under a well-known root, as a real install is (`/opt/...`, `/usr/...`):
    // redaction hides it; it does not exist
    let missing = "/opt/quickforge-missing-e2e/bin/uvx";
    let text = format!(
        "[servers.git]\ncommand = {}\ntimeout_secs = 5\n\n{}",
        toml_str(missing),
        fixture("fx", &[])
    );
    let s = connect(&write_config(&dir, &text)).await;
    let servers = s
        .search("async () => manifest.servers.map(s => [s.name, s.status, s.error ?? null])")
        .await;
    let git = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[0] == "git")
        .unwrap();
    assert_eq!(git[1], "unavailable", "{servers:#}");
    let why = git[2].as_str().unwrap();
    assert!(why.contains(r#"server "git" (command uvx)"#), "{why}");
    assert!(
        !why.contains(&*dir.to_string_lossy()),
        "the path stays hidden: {why}"
    );
}
