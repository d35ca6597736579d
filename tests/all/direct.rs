//! Per-server direct tools (issue 21 item 5): `[servers.NAME] expose`
//! lists a server's tools on quickforge's own `tools/list` beside `search`
//! and `execute`, and a call of one passes the same policy, argument check,
//! redaction and audit as a script's call. Driven through the real binary
//! by the official Python SDK client (tests/clients/sdk_client.py) and the
//! rmcp client, against server-everything and the fixture server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::mcp::*;

/// server-everything with `echo` and `get-s*` exposed, and the fixture
/// server with every tool exposed but `crash`, which its policy denies;
/// audited to `audit.jsonl`.
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let toml = format!(
        "{}expose = [\"echo\", \"get-s*\"]\n{}expose = \"direct\"\ndeny = [\"crash\"]\n[audit]\nfile = \"audit.jsonl\"\n",
        everything(),
        fixture("fx", &[]),
    );
    write_config(dir, &toml)
}

/// The Python SDK (at 2025-11-25 and at 2026-07-28, over stdio) lists the direct tools with their schemas beside search and
/// execute, and calls them: the server's own result on success; a schema
/// violation, a denied tool and a tool error as `isError` results with the
/// ForgeError code, the secrets in the server's error text redacted; every
/// call in the audit log as a `direct` operation. Without `expose`,
/// `tools/list` would hold search and execute alone (surface.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_and_calls_direct_tools_through_the_pipeline() {
    for era in ["2025-11-25", "2026-07-28"] {
        sdk_direct(era).await;
    }
}

async fn sdk_direct(era: &str) {
    install_servers();
    let dir = scratch("direct-sdk");
    let config = config(&dir);
    let steps = json!([
        {"list": true},
        {"call": "everything__echo", "args": {"message": "straight through"}},
        {"call": "everything__get-sum", "args": {"a": 2, "b": 3}},
        {"call": "everything__echo", "args": {}},
        {"call": "fx__leak", "args": {}},
        {"call": "everything__get-structured-content", "args": {"location": "Chicago"}},
        {"execute": "async () => (await forge.callTool('everything', 'echo', {message: 'scripted'}))"},
    ]);
    let mut args: Vec<std::ffi::OsString> = vec![era.into()];
    args.extend(sdk_stdio_args(&config));
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = python_client("sdk_client.py", &args, &steps, CALL_BOUND).await;
    assert_eq!(out.len(), 7, "{out:#?}");

    let names: Vec<&str> = out[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for want in [
        "search",
        "execute",
        "everything__echo",
        "everything__get-sum",
        "everything__get-structured-content",
        "fx__leak",
        "fx__add_tool",
    ] {
        assert!(names.contains(&want), "{want} not listed: {names:?}");
    }
    assert!(
        !names.contains(&"fx__crash"),
        "a denied tool is never listed"
    );
    assert!(
        !names.contains(&"everything__get-env"),
        "only the exposed globs of everything: {names:?}"
    );
    let echo = out[0]["listed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "everything__echo")
        .unwrap();
    assert_eq!(
        echo["inputSchema"]["required"],
        json!(["message"]),
        "listed with the server's schema: {echo:#}"
    );
    if era == "2026-07-28" {
        // A list that can change is kept a minute, not an hour.
        assert_eq!(out[0]["ttlMs"], 60_000);
        assert_eq!(out[0]["protocolVersion"], era);
    }

    assert_eq!(out[1]["isError"], false, "{:#}", out[1]);
    assert_eq!(out[1]["text"], json!(["Echo: straight through"]));
    assert_eq!(out[2]["isError"], false, "{:#}", out[2]);
    assert!(
        out[2]["text"][0].as_str().unwrap().contains('5'),
        "{:#}",
        out[2]
    );

    let text = |i: usize| out[i]["text"][0].as_str().unwrap().to_string();
    assert_eq!(out[3]["isError"], true);
    assert!(text(3).starts_with("INVALID_ARGUMENTS:"), "{}", text(3));
    assert_eq!(out[4]["isError"], true);
    assert!(text(4).starts_with("TOOL_ERROR:"), "{}", text(4));
    for secret in [
        "hunter2",
        "ghp_R4nd0mT0k3nV4lu3Xy9Zq8Wv7Ut6Sr5Pq4On",
        "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
    ] {
        assert!(
            !text(4).contains(secret),
            "{secret} reached the client: {}",
            text(4)
        );
    }
    // The server's structured content comes through as it sent it.
    assert_eq!(out[5]["isError"], false, "{:#}", out[5]);
    assert_eq!(
        out[5]["structuredContent"]["temperature"], 36,
        "{:#}",
        out[5]
    );
    assert_eq!(out[6]["isError"], false, "scripts still work: {:#}", out[6]);

    let log = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let direct: Vec<&Value> = lines
        .iter()
        .filter(|l| l["operation"] == "direct")
        .collect();
    assert_eq!(direct.len(), 5, "one audit line per direct call: {log}");
    assert_eq!(direct[0]["operations"][0]["server"], "everything");
    assert_eq!(direct[0]["operations"][0]["tool"], "echo");
    assert_eq!(direct[0]["outcome"], "ok");
    assert_eq!(direct[2]["error_code"], "INVALID_ARGUMENTS");
    assert_eq!(direct[3]["error_code"], "TOOL_ERROR");
    assert!(
        !log.contains("hunter2"),
        "secrets stay out of the audit log"
    );
    assert_eq!(
        lines.iter().filter(|l| l["operation"] == "execute").count(),
        1
    );
}

/// A client that counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

impl ClientHandler for Counting {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// When an exposing server's tools change, the direct tools follow and the
/// client hears `notifications/tools/list_changed` (the capability says
/// `listChanged: true`); the new tool is then listed and callable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_announced_and_the_new_tool_is_callable() {
    let dir = scratch("direct-changed");
    let config = write_config(
        &dir,
        &format!("{}expose = \"direct\"\n", fixture("fx", &[])),
    );
    let (mut child, transport) = serve_stdio(&config);
    let heard = Counting::default();
    let client = tokio::time::timeout(CALL_BOUND, heard.clone().serve(transport))
        .await
        .unwrap()
        .unwrap();
    let caps = client.peer_info().unwrap().capabilities.clone();
    assert_eq!(caps.tools.and_then(|t| t.list_changed), Some(true));
    let names = || async {
        let listed = client.list_all_tools().await.unwrap();
        listed
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    assert!(names().await.contains(&"fx__add_tool".to_string()));
    // A name not listed is the spec's unknown-tool error, with did-you-mean.
    let unknown = client
        .call_tool(CallToolRequestParams::new("fx__add_tol"))
        .await
        .expect_err("an unknown tool is an error");
    assert!(
        unknown
            .to_string()
            .contains("did you mean \"fx__add_tool\"?"),
        "{unknown}"
    );
    // The start-up itself may have been announced (fx's tools appearing
    // after this client connected); count from a quiet moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = heard.0.load(Ordering::SeqCst);
    let mut args = serde_json::Map::new();
    args.insert("name".into(), json!("brand_new"));
    let r = client
        .call_tool(CallToolRequestParams::new("fx__add_tool").with_arguments(args))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    eventually(Duration::from_secs(20), || async {
        (heard.0.load(Ordering::SeqCst) > before).then_some(())
    })
    .await;
    assert!(names().await.contains(&"fx__brand_new".to_string()));
    let r = client
        .call_tool(CallToolRequestParams::new("fx__brand_new"))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    drop(client);
    let _ = child.kill().await;
}

/// `quickforge tokens` counts what the direct tools add to the surface,
/// only when they are configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_report_what_direct_tools_add() {
    let dir = scratch("direct-tokens");
    let tokens = |config: std::path::PathBuf| async move {
        let out = quickforge_cmd(Some(&config))
            .args(["tokens", "--json"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let plain = tokens(write_config(&dir, &everything())).await;
    assert_eq!(plain["direct_tools"], 0);
    assert_eq!(plain["direct_tokens"], 0);
    let exposed = tokens(write_config(
        &dir,
        &format!("{}expose = [\"echo\"]\n", everything()),
    ))
    .await;
    assert_eq!(exposed["direct_tools"], 1);
    let added = exposed["direct_tokens"].as_u64().unwrap();
    assert!(added > 20, "the echo tool costs tokens: {exposed:#}");
    assert_eq!(
        exposed["tools_list_tokens"].as_u64().unwrap(),
        plain["tools_list_tokens"].as_u64().unwrap() + added
    );
}
