//! Issue 16, item 4: redaction that survives a determined or careless server,
//! through the real binary and the fixture server (`leak_via`): secrets in a
//! JSON-RPC error's message and `data`, in an `isError` result with only
//! `structuredContent`, across the error-text limit, and on the server's stderr
//! (the gateway's own log); and an "unavailable" reason that still names the
//! server and its command when redaction hid the command's path.

use std::path::Path;

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

/// Issue 37, item 5: redaction is owned by one boundary per direction
/// (`host/core/src/shown.rs` says which). Every other file of the gateways
/// calls none of the redactor's functions outside its tests; the few that
/// may, and why, are listed here. Read as text: test modules (from the
/// first `#[cfg(test)]`) and comment lines left out.
#[test]
fn redaction_is_called_only_at_the_boundaries() {
    const ALLOWED: &[(&str, &str)] = &[
        ("host/core/src/shown.rs", "the boundaries themselves"),
        ("host/cli/logging.rs", "the log's boundary: its writer"),
        (
            "host/gateway/mod.rs",
            "a server's unavailable reason, recorded shown",
        ),
        (
            "host/gateway/sse.rs",
            "the HTTP error page quoted in that reason",
        ),
        (
            "edge/provider/src/redact.rs",
            "the redactor component, as a Redactor",
        ),
        ("edge/provider/src/run.rs", "the edge's unavailable reasons"),
        (
            "edge/provider/src/refresh.rs",
            "the edge's unavailable reasons",
        ),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["host", "edge/provider/src", "edge/front/src"] {
        collect_rs(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("host/filters/") || ALLOWED.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            if [
                "redact(",
                "redact_in(",
                "redact_json",
                "redact_clip(",
                ".redacted()",
            ]
            .iter()
            .any(|call| line.contains(call))
            {
                found.push(format!("{rel}:{}: {line}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "redaction outside its boundaries (use quickforge_core::shown):\n{}",
        found.join("\n")
    );
}

fn collect_rs(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
