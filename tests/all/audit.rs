//! The audit log (issue 4 item 8): one JSON line per execution, with every
//! operation, and no secrets, written by the real binary.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::mcp::*;

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The lines of `path` once there are at least `n`: a writer thread
/// writes them just after the answers go out. Waits at most 10 s.
async fn lines_once(path: &Path, n: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let all = lines(path);
        if all.len() >= n || tokio::time::Instant::now() > deadline {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn is_hash(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[tokio::test]
async fn every_execution_leaves_one_line_with_every_operation_and_no_secret() {
    let dir = scratch("audit");
    let config = format!(
        "{}{}[sandbox]\ntimeout_secs = 3\n[audit]\nfile = \"audit.jsonl\"\npreview_bytes = 120\n",
        memory(&dir),
        fixture("fx", &[])
    );
    let s = connect(&write_config(&dir, &config)).await;
    let log = dir.join("audit.jsonl");

    // 1. Calls, a refused call, a tool error, a resource read and every
    //    stash operation, with a secret in the code and the arguments.
    let code = format!(
        r#"async () => {{
  const token = "{TOKEN}";
  await forge.callTool("memory", "create_entities", {{entities: [{{name: "audited", entityType: "t", observations: [token]}}]}});
  try {{ await forge.callTool("memory", "no_such_tool", {{}}); }} catch (e) {{}}
  try {{ await forge.callTool("fx", "leak", {{}}); }} catch (e) {{}}
  try {{ await forge.readResource("fx", "test://nothing/" + token); }} catch (e) {{}}
  await forge.stash.put("k-" + token, {{token}});
  const v = await forge.stash.get("k-" + token);
  await forge.stash.keys();
  await forge.stash.delete("k-" + token);
  return v.token.length;
}}"#
    );
    assert_eq!(s.execute(&code).await, 40);
    let all = lines_once(&log, 1).await;
    assert_eq!(all.len(), 1, "one line per execution: {all:#?}");
    let l = &all[0];
    assert_eq!(l["event"], "execution");
    assert_eq!(l["operation"], "execute");
    assert_eq!(l["outcome"], "ok");
    assert_eq!(l["code_sha256"], sha256(&code));
    assert_eq!(l["code_bytes"], code.len());
    let preview = l["code_preview"].as_str().unwrap();
    assert!(preview.starts_with("async () => {"), "{preview}");
    assert!(
        preview.contains("[REDACTED") && preview.contains("bytes cut]"),
        "{preview}"
    );
    assert_eq!(l["result_bytes"], 2);
    assert!(l["duration_ms"].as_f64().unwrap() > 0.0);
    assert!(
        is_hash(&Value::String(l["id"].as_str().unwrap().repeat(2))),
        "128-bit hex id: {l}"
    );
    let ts = l["timestamp"].as_str().unwrap();
    assert!(
        ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
        "{ts}"
    );
    let ops = l["operations"].as_array().unwrap();
    let kinds: Vec<&str> = ops.iter().map(|o| o["op"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "call_tool",
            "call_tool",
            "call_tool",
            "read_resource",
            "stash_put",
            "stash_get",
            "stash_keys",
            "stash_delete"
        ]
    );
    let (create, unknown, leak, read) = (&ops[0], &ops[1], &ops[2], &ops[3]);
    assert_eq!(
        (&create["server"], &create["tool"], &create["outcome"]),
        (&"memory".into(), &"create_entities".into(), &"ok".into())
    );
    assert!(is_hash(&create["args_sha256"]), "{create}");
    assert!(create["args_bytes"].as_u64().unwrap() > 40);
    assert!(create["bytes"].as_u64().unwrap() > 0, "{create}");
    assert!(create["duration_us"].as_u64().unwrap() > 0, "{create}");
    assert_eq!(unknown["outcome"], "error");
    assert_eq!(unknown["error_code"], "TOOL_NOT_FOUND");
    assert_eq!(unknown["args_sha256"], sha256("{}"));
    assert_eq!(leak["error_code"], "TOOL_ERROR");
    assert_eq!(read["outcome"], "error");
    assert_eq!(
        read["args_sha256"],
        sha256(&format!("test://nothing/{TOKEN}"))
    );
    assert!(
        read["uri"].as_str().unwrap().starts_with("test://nothing/"),
        "{read}"
    );
    let (put, get, keys) = (&ops[4], &ops[5], &ops[6]);
    assert_eq!(put["outcome"], "ok");
    assert_eq!(
        put["args_sha256"],
        sha256(&format!("{{\"token\":\"{TOKEN}\"}}"))
    );
    assert_eq!(
        get["bytes"], put["args_bytes"],
        "get returns what put stored"
    );
    assert_eq!(keys["bytes"], 1, "one key");
    assert!(
        ops.windows(2)
            .all(|w| w[0]["at_us"].as_u64() <= w[1]["at_us"].as_u64()),
        "in the order they started"
    );

    // 2. A thrown error, a validator refusal, a search, and a timeout with
    //    a call still in flight: each one line, each with its kind.
    let e = s
        .execute_err(&format!(
            r#"async () => {{ throw new Error("boom {TOKEN}"); }}"#
        ))
        .await;
    assert_eq!(e["kind"], "thrown");
    s.execute_err(r#"async () => eval("1")"#).await;
    s.search(r#"async () => manifest.search("entities")"#).await;
    let e = s
        .execute_err(r#"async () => { await forge.callTool("fx", "hang", {}); }"#)
        .await;
    assert_eq!(e["kind"], "timeout");
    // An uncaught downstream error full of secrets, and a ForgeError whose
    // code the script chose.
    s.execute_err(r#"async () => { await forge.callTool("fx", "leak", {}); }"#)
        .await;
    s.execute_err(&format!(
        r#"async () => {{ throw new ForgeError("{TOKEN}", "mine"); }}"#
    ))
    .await;
    let all = lines_once(&log, 7).await;
    assert_eq!(all.len(), 7, "{all:#?}");
    let (leaked, chosen) = (&all[5], &all[6]);
    assert_eq!(leaked["error_code"], "TOOL_ERROR");
    let why = leaked["error"].as_str().unwrap();
    assert!(
        why.contains("[REDACTED") && !why.contains("hunter2"),
        "{why}"
    );
    assert!(
        chosen["error_code"].as_str().unwrap().contains("[REDACTED"),
        "a script's own code is redacted too: {chosen}"
    );
    let (thrown, refused, search, timeout) = (&all[1], &all[2], &all[3], &all[4]);
    assert_eq!(
        (&thrown["outcome"], &thrown["error_kind"]),
        (&"error".into(), &"thrown".into())
    );
    assert!(
        thrown["error"].as_str().unwrap().contains("boom"),
        "{thrown}"
    );
    assert_eq!(refused["error_kind"], "validation");
    assert!(
        refused["error"].as_str().unwrap().contains("eval"),
        "{refused}"
    );
    assert_eq!(refused["operations"], Value::Array(vec![]));
    assert_eq!(
        (&search["operation"], &search["outcome"]),
        (&"search".into(), &"ok".into())
    );
    assert_eq!(timeout["error_kind"], "timeout");
    assert_eq!(timeout["operations"][0]["tool"], "hang");
    assert_eq!(timeout["operations"][0]["outcome"], "cancelled");
    let ids: std::collections::HashSet<&str> =
        all.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 7, "ids are unique");
    assert!(
        all.iter().all(|l| l["session"] == all[0]["session"]),
        "one session"
    );

    // No secret anywhere in the file: the token went into code, arguments,
    // a key, a URI, a stored value, error messages and an error code.
    let text = std::fs::read_to_string(&log).unwrap();
    for secret in [TOKEN, "hunter2", "R4nd0mT0k3n", "sk-proj-Ab12"] {
        assert!(!text.contains(secret), "{secret} leaked into the audit log");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the log is private");
    }
    s.close().await;
}

#[tokio::test]
async fn audit_lines_can_go_to_stderr_and_refusals_and_bounds_are_recorded() {
    let dir = scratch("audit-stderr");
    let stderr = dir.join("gateway.log");
    let s = connect_logging_to(
        quickforge_cmd(Some(&write_config(
            &dir,
            "[sandbox]\nmax_executions_per_minute = 1\n[audit]\nstderr = true\nmax_operations = 3\n",
        ))),
        std::fs::File::create(&stderr).unwrap().into(),
    )
    .await;
    s.execute("async () => { for (let i = 0; i < 10; i++) await forge.stash.put(\"k\" + i, i); return 1; }")
        .await;
    let e = s.execute_err("async () => 1").await;
    assert_eq!(e["kind"], "rate_limited");
    s.close().await;
    let text = std::fs::read_to_string(&stderr).unwrap();
    let audit: Vec<Value> = text
        .lines()
        .filter(|l| l.starts_with("{\"event\":\"execution\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(audit.len(), 2, "two audit lines on stderr: {text}");
    assert_eq!(audit[0]["operations"].as_array().unwrap().len(), 3);
    assert_eq!(audit[0]["operations_dropped"], 7);
    assert_eq!(audit[1]["error_kind"], "rate_limited");
    assert_eq!(audit[1]["error_code"], "RATE_LIMITED");
}

#[tokio::test]
async fn an_execution_cut_off_by_the_client_still_leaves_its_line() {
    let dir = scratch("audit-cancel");
    // An execution limit below the server's call timeout (20 s), so the
    // execution, not the call, is what ends first.
    let config = format!(
        "[sandbox]\ntimeout_secs = 10\n\n{}[audit]\nfile = \"audit.jsonl\"\n",
        fixture("fx", &[])
    );
    let s = connect(&write_config(&dir, &config)).await;
    s.execute_when_ready(
        Duration::from_secs(20),
        r#"async () => (await forge.callTool("fx", "whoami", {})) !== undefined"#,
    )
    .await;
    let log = dir.join("audit.jsonl");
    // The client sends a call that hangs, then goes away before the answer.
    let peer = s.client.peer().clone();
    let hanging = tokio::spawn(async move {
        let mut args = serde_json::Map::new();
        args.insert(
            "code".into(),
            r#"async () => { await forge.callTool("fx", "hang", {}); }"#.into(),
        );
        let _ = peer
            .call_tool(rmcp::model::CallToolRequestParams::new("execute").with_arguments(args))
            .await;
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.close().await;
    hanging.abort();
    let all = lines(&log);
    let cut: Vec<&Value> = all
        .iter()
        .filter(|l| l["operations"][0]["tool"] == "hang")
        .collect();
    assert_eq!(cut.len(), 1, "one line for the cut-off execution: {all:#?}");
    let cut = cut[0];
    assert!(
        cut["outcome"] == "cancelled" || cut["error_kind"] == "timeout",
        "{cut}"
    );
    assert_eq!(cut["operations"][0]["tool"], "hang");
    assert_eq!(cut["operations"][0]["outcome"], "cancelled");
}

#[tokio::test]
async fn an_audit_file_that_cannot_be_opened_stops_the_start_with_its_path() {
    let dir = scratch("audit-bad");
    let config = write_config(&dir, "[audit]\nfile = \"no/such/dir/audit.jsonl\"\n");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        quickforge_cmd(Some(&config)).arg("serve").output(),
    )
    .await
    .expect("it exits")
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not open the audit log") && err.contains("no/such/dir/audit.jsonl"),
        "{err}"
    );
}

/// An HTTP session's audit lines name it by the digest of the id its client
/// holds (`Mcp-Session-Id`), so a line joins with the client's session
/// without the log holding an id that opens it; a stdio session, which has
/// no such id, keeps a random one.
#[tokio::test]
async fn an_http_sessions_audit_lines_join_with_its_mcp_session_id() {
    crate::http::tls();
    let dir = scratch("audit-join");
    let (mut child, url) =
        crate::http::serve_http(&write_config(&dir, "[audit]\nfile = \"audit.jsonl\"\n")).await;
    let http = reqwest::Client::new();
    let post = |session: Option<&str>, body: Value| {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&body);
        if let Some(id) = session {
            req = req.header("mcp-session-id", id);
        }
        req.send()
    };
    let mut ids = Vec::new();
    for _ in 0..2 {
        let init = crate::http::raw_initialize(&url).await;
        let id = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = init.text().await;
        post(
            Some(&id),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await
        .unwrap();
        let answer = post(
            Some(&id),
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "execute", "arguments": {"code": "async () => 6 * 7"}}}),
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
        assert!(answer.contains("42"), "{answer}");
        ids.push(id);
    }
    let all = lines_once(&dir.join("audit.jsonl"), 2).await;
    child.start_kill().unwrap();
    assert_eq!(all.len(), 2, "{all:#?}");
    for (line, id) in all.iter().zip(&ids) {
        let digest = format!("mcp-{}", &sha256(id)[..16]);
        assert_eq!(line["session"], digest.as_str(), "{line:#}");
        assert!(
            !line.to_string().contains(id.as_str()),
            "the id itself: {line:#}"
        );
    }

    // stdio: no client id to join, a random one, the same for the session.
    let dir = scratch("audit-join-stdio");
    let s = connect(&write_config(&dir, "[audit]\nfile = \"audit.jsonl\"\n")).await;
    s.execute("async () => 1").await;
    s.execute("async () => 2").await;
    s.close().await;
    let all = lines_once(&dir.join("audit.jsonl"), 2).await;
    assert_eq!(all[0]["session"], all[1]["session"]);
    assert!(
        !all[0]["session"].as_str().unwrap().starts_with("mcp-"),
        "{:#}",
        all[0]
    );
}
