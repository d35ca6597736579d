//! A transparent gateway (issue 19): what passes between a script's
//! downstream calls and the client that started the script, end to end.
//! The client is the official MCP Python SDK at protocol 2025-11-25
//! (tests/clients/relay_client.py, with callbacks for elicitation,
//! sampling, roots, logging and progress) driving the real binary over
//! stdio; the servers are server-everything and tests/servers/relay.mjs (on
//! the official TypeScript SDK, for what server-everything has no
//! deterministic tool for).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp::*;

/// `[servers.NAME]`: tests/servers/relay.mjs recording into `record`, with
/// `extra` TOML lines.
pub(crate) fn relay_server(name: &str, record: &Path, extra: &str) -> String {
    install_servers();
    format!(
        "[servers.{name}]\ncommand = \"node\"\nargs = [{}, \"--record\", {}]\ntimeout_secs = 20\n{extra}",
        toml_str(&servers_dir().join("relay.mjs").to_string_lossy()),
        toml_str(&record.to_string_lossy()),
    )
}

/// What the client saw: one value per step, then the callbacks' events.
struct Seen {
    steps: Vec<Value>,
    events: Value,
}

/// Runs the Python SDK client against a gateway on `config` over stdio
/// with `plan` (see relay_client.py).
async fn client(config: &Path, plan: Value) -> Seen {
    let quickforge = env!("CARGO_BIN_EXE_quickforge").as_ref();
    let args = [
        "--".as_ref(),
        quickforge,
        "--config".as_ref(),
        config.as_os_str(),
        "serve".as_ref(),
    ];
    client_with(&args, plan).await
}

/// Runs the Python SDK client with `args` (a URL, or `--` and a command)
/// and `plan`.
async fn client_with(args: &[&std::ffi::OsStr], plan: Value) -> Seen {
    let mut lines = python_client("relay_client.py", args, &plan, CALL_BOUND * 2).await;
    let events = lines.pop().expect("the events line")["events"].clone();
    Seen {
        steps: lines,
        events,
    }
}

/// The JSON result of a successful step.
fn result(step: &Value) -> &Value {
    assert_eq!(step["isError"], false, "{step}");
    &step["structuredContent"]["result"]
}

/// The text of a failed step.
fn error_text(step: &Value) -> String {
    assert_eq!(step["isError"], true, "{step}");
    step["text"][0].as_str().unwrap().to_string()
}

/// The JSON lines of `record` (written by relay.mjs, or any JSON-lines
/// file such as the audit log), once `count` are there.
pub(crate) async fn recorded(record: &Path, count: usize) -> Vec<Value> {
    eventually(Duration::from_secs(10), || async {
        let text = std::fs::read_to_string(record).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (lines.len() >= count).then_some(lines)
    })
    .await
}

fn setup(name: &str, toml: impl FnOnce(&Path) -> String) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let record = dir.join("record.jsonl");
    let config = write_config(&dir, &toml(&record));
    (dir, config, record)
}

/// Item 1: a client's `notifications/cancelled` for an `execute` stops the
/// script at once (it was sleeping in a 30 s call), the downstream call is
/// cancelled on its server, and the audit line says `cancelled` with the
/// call that was cut. Before, the script ran on to its end.
#[tokio::test]
async fn a_cancelled_execute_stops_the_script_and_its_downstream_call() {
    let (dir, config, record) = setup("relay-cancel", |record| {
        format!(
            "{}[audit]\nfile = \"audit.jsonl\"\n",
            relay_server("r", record, "")
        )
    });
    let seen = client(
        &config,
        json!({"steps": [
            {"execute": r#"async () => { await forge.callTool("r", "slow", {ms: 30000}); return "finished"; }"#,
             "cancel_after_ms": 1500},
            {"execute": "async () => 1 + 1"}
        ]}),
    )
    .await;
    assert_eq!(seen.steps[0]["cancelled"], true, "{:?}", seen.steps);
    assert_eq!(
        result(&seen.steps[1]),
        &json!(2),
        "the gateway still serves"
    );
    let lines = recorded(&record, 1).await;
    assert_eq!(
        lines[0]["cancelled"], true,
        "the server heard the cancellation: {lines:?}"
    );
    // The second execution may finish before the first one's line is out.
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let first: Value = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["code_preview"].as_str().unwrap().contains("slow"))
        .expect("the cancelled execution's line");
    assert_eq!(first["outcome"], "cancelled", "{first}");
    assert!(first["duration_ms"].as_f64().unwrap() < 10_000.0, "{first}");
    assert_eq!(first["operations"][0]["tool"], "slow", "{first}");
    assert_eq!(first["operations"][0]["outcome"], "cancelled", "{first}");
}

/// Item 1, the deadline: an execution that times out while a downstream
/// call is in flight cancels that call on its server.
#[tokio::test]
async fn a_timeout_cancels_the_call_in_flight_downstream() {
    let (_dir, config, record) = setup("relay-timeout", |record| {
        format!(
            "{}[sandbox]\ntimeout_secs = 2\n",
            relay_server("r", record, "")
        )
    });
    let seen = client(
        &config,
        json!({"steps": [{"execute": r#"async () => forge.callTool("r", "slow", {ms: 20000})"#}]}),
    )
    .await;
    assert!(
        error_text(&seen.steps[0]).starts_with("timeout"),
        "{:?}",
        seen.steps
    );
    let lines = recorded(&record, 1).await;
    assert_eq!(lines[0]["cancelled"], true, "{lines:?}");
}

/// Item 2: progress from the script's downstream calls reaches the client
/// on its own token, increasing, naming server and tool; without a token,
/// nothing is sent.
#[tokio::test]
async fn progress_of_downstream_calls_reaches_the_client_on_its_token() {
    let (_dir, config, _record) = setup("relay-progress", |record| relay_server("r", record, ""));
    let code = r#"async () => (await forge.callTool("r", "progress", {steps: 4})).token"#;
    let seen = client(
        &config,
        json!({"steps": [
            {"execute": code, "progress": true},
            {"execute": code}
        ]}),
    )
    .await;
    assert_eq!(
        result(&seen.steps[0]),
        &json!(true),
        "quickforge put its own token downstream"
    );
    let progress = seen.steps[0]["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "{:?}", seen.steps[0]);
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[1] > w[0]),
        "monotonic: {values:?}"
    );
    let message = progress.last().unwrap()["message"].as_str().unwrap();
    assert!(message.starts_with("r.progress: step"), "{message}");
    assert!(seen.steps[1]["progress"].as_array().unwrap().is_empty());
}

/// Item 3: downstream log messages reach the client with `logger` naming
/// the server, at or above the level it set, redacted.
#[tokio::test]
async fn downstream_log_messages_reach_the_client_filtered_and_redacted() {
    let (_dir, config, _record) = setup("relay-logging", |record| relay_server("r", record, ""));
    let seen = client(
        &config,
        json!({"log_level": "warning", "steps": [
            {"execute": r#"async () => forge.callTool("r", "log", {levels: ["debug", "info", "warning", "error"]})"#}
        ]}),
    )
    .await;
    result(&seen.steps[0]);
    let logs = seen.events["logs"].as_array().unwrap();
    // rmcp handles each notification on a task of its own, so their order
    // is not kept.
    let mut levels: Vec<&str> = logs.iter().map(|l| l["level"].as_str().unwrap()).collect();
    levels.sort_unstable();
    assert_eq!(levels, ["error", "warning"], "{logs:?}");
    for l in logs {
        assert_eq!(l["logger"], "r/relay-fixture", "{l}");
        let data = l["data"].as_str().unwrap();
        assert!(!data.contains("ghp_AAAA"), "redacted: {data}");
    }
}

/// Item 4: a downstream `elicitation/create` made during a call reaches the
/// client, marked with the server, and the answer goes back; the time the
/// person took does not count against the execution's time limit.
#[tokio::test]
async fn elicitation_is_relayed_and_its_wait_is_not_counted() {
    let (dir, config, _record) = setup("relay-elicit", |record| {
        format!(
            "{}[sandbox]\ntimeout_secs = 2\n[audit]\nfile = \"audit.jsonl\"\n",
            relay_server("r", record, "")
        )
    });
    let seen = client(
        &config,
        json!({
            "capabilities": {"elicitation": true},
            "elicit": {"action": "accept", "content": {"answer": "blue"}, "delay_ms": 3000},
            "steps": [{"execute": r#"async () => forge.callTool("r", "ask", {question: "Favourite colour?"})"#}]
        }),
    )
    .await;
    let answer = result(&seen.steps[0]);
    assert_eq!(answer["action"], "accept", "{answer}");
    assert_eq!(answer["content"]["answer"], "blue", "{answer}");
    let asked = &seen.events["elicitations"][0];
    assert_eq!(asked["message"], "[r] Favourite colour?", "{asked}");
    assert_eq!(
        asked["_meta"]["io.github.quickforge/server"], "r",
        "{asked}"
    );
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let line: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert!(line["waited_ms"].as_f64().unwrap() >= 2500.0, "{line}");
}

/// Item 4, negative: a client without elicitation: the server gets the
/// specification's error (and its tool reports it), the gateway serves on.
#[tokio::test]
async fn elicitation_to_a_client_without_it_is_the_specs_error() {
    let (_dir, config, _record) = setup("relay-no-elicit", |record| relay_server("r", record, ""));
    let seen = client(
        &config,
        json!({"steps": [
            {"execute": r#"async () => { try { return await forge.callTool("r", "ask", {question: "?"}); } catch (e) { return e.message; } }"#},
            {"execute": "async () => 2"}
        ]}),
    )
    .await;
    let text = result(&seen.steps[0]).to_string();
    assert!(text.contains("does not support form elicitation"), "{text}");
    assert_eq!(result(&seen.steps[1]), &json!(2));
}

/// Item 4: sampling is relayed with the server marked, and a per-server
/// switch refuses it.
#[tokio::test]
async fn sampling_is_relayed_unless_the_server_is_switched_off() {
    let (_dir, config, _record) = setup("relay-sampling", |record| {
        format!(
            "{}{}",
            relay_server("r", record, ""),
            relay_server("off", &record.with_extension("off"), "sampling = false\n")
        )
    });
    let seen = client(
        &config,
        json!({
            "capabilities": {"sampling": true},
            "steps": [
                {"execute": r#"async () => forge.callTool("r", "sample", {prompt: "hi"})"#},
                {"execute": r#"async () => { try { return await forge.callTool("off", "sample", {prompt: "hi"}); } catch (e) { return e.message; } }"#}
            ]
        }),
    )
    .await;
    assert_eq!(
        result(&seen.steps[0])["text"],
        "sampled: hi",
        "{:?}",
        seen.steps[0]
    );
    assert_eq!(seen.events["samplings"].as_array().unwrap().len(), 1);
    assert_eq!(
        seen.events["samplings"][0]["_meta"]["io.github.quickforge/server"],
        "r"
    );
    let refused = result(&seen.steps[1]).to_string();
    assert!(
        refused.contains("servers.off.sampling = false"),
        "{refused}"
    );
}

/// Item 5: a downstream `roots/list` during a call gets the client's
/// roots, and after the client's `roots/list_changed` the new ones.
#[tokio::test]
async fn roots_are_the_clients() {
    let (_dir, config, _record) = setup("relay-roots", |record| relay_server("r", record, ""));
    let code = r#"async () => (await forge.callTool("r", "roots", {})).map(r => r.uri)"#;
    let seen = client(
        &config,
        json!({
            "capabilities": {"roots": true},
            "roots": [{"uri": "file:///work/project", "name": "project"}],
            "steps": [
                {"execute": code},
                {"execute": code, "roots_changed_to": [{"uri": "file:///work/other"}]}
            ]
        }),
    )
    .await;
    assert_eq!(result(&seen.steps[0]), &json!(["file:///work/project"]));
    assert_eq!(result(&seen.steps[1]), &json!(["file:///work/other"]));
}

/// Item 6: `allow_destructive = "ask"` puts a destructive call to the
/// person: accept sends it, decline throws DECLINED (caught by the
/// script) and the tool never runs; a client without elicitation gets
/// POLICY_DENIED naming the config key.
#[tokio::test]
async fn approvals_ask_the_person_before_a_destructive_call() {
    let (_dir, config, record) = setup("relay-approve", |record| {
        relay_server("r", record, "allow_destructive = \"ask\"\n")
    });
    let wipe = r#"async () => { try { return await forge.callTool("r", "wipe", {target: "staging-db"}); } catch (e) { return {code: e.code, message: e.message, suggestion: e.suggestion}; } }"#;
    let accepted = client(
        &config,
        json!({"capabilities": {"elicitation": true}, "elicit": {"action": "accept", "content": {}},
               "steps": [{"execute": wipe}]}),
    )
    .await;
    assert_eq!(result(&accepted.steps[0])["wiped"], "staging-db");
    let asked = accepted.events["elicitations"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        asked.contains("r.wipe") && asked.contains("staging-db"),
        "{asked}"
    );
    let declined = client(
        &config,
        json!({"capabilities": {"elicitation": true}, "elicit": {"action": "decline"},
               "steps": [{"execute": wipe}]}),
    )
    .await;
    assert_eq!(
        result(&declined.steps[0])["code"],
        "DECLINED",
        "{:?}",
        declined.steps
    );
    let unasked = client(&config, json!({"steps": [{"execute": wipe}]})).await;
    let refusal = result(&unasked.steps[0]);
    assert_eq!(refusal["code"], "POLICY_DENIED", "{refusal}");
    assert!(
        refusal["suggestion"]
            .as_str()
            .unwrap()
            .contains("allow_destructive"),
        "{refusal}"
    );
    let lines = recorded(&record, 1).await;
    assert_eq!(lines.len(), 1, "only the approved call ran: {lines:?}");
}

/// Item 1 with item 4: cancelling an execution while its elicitation is
/// pending stops it and cancels its downstream call.
#[tokio::test]
async fn cancelling_while_an_elicitation_is_pending_stops_everything() {
    let (_dir, config, _record) = setup("relay-cancel-elicit", |record| {
        relay_server("r", record, "")
    });
    let seen = client(
        &config,
        json!({
            "capabilities": {"elicitation": true},
            "elicit": {"action": "accept", "content": {"answer": "late"}, "delay_ms": 4000},
            "steps": [
                {"execute": r#"async () => forge.callTool("r", "ask", {question: "?"})"#, "cancel_after_ms": 1000},
                {"execute": "async () => 3"}
            ]
        }),
    )
    .await;
    assert_eq!(seen.steps[0]["cancelled"], true);
    assert_eq!(result(&seen.steps[1]), &json!(3));
}

/// server-everything's elicitation and sampling tools are in the manifest
/// now that quickforge declares what it relays, and they work through it.
#[tokio::test]
async fn server_everything_elicits_and_samples_through_quickforge() {
    let dir = scratch("relay-everything");
    let config = write_config(&dir, &everything());
    let seen = client(
        &config,
        json!({
            "capabilities": {"elicitation": true, "sampling": true},
            "elicit": {"action": "decline"},
            "steps": [
                {"execute": r#"async () => (await manifest.search("trigger request")).map(t => t.tool).sort()"#},
                {"execute": r#"async () => forge.callTool("everything", "trigger-sampling-request", {prompt: "hello", maxTokens: 20})"#},
                {"execute": r#"async () => forge.callTool("everything", "trigger-elicitation-request", {})"#}
            ]
        }),
    )
    .await;
    let names = result(&seen.steps[0]).to_string();
    for tool in ["trigger-elicitation-request", "trigger-sampling-request"] {
        assert!(names.contains(tool), "{tool} missing: {names}");
    }
    let sampled = result(&seen.steps[1]).to_string();
    assert!(
        sampled.contains("sampled: ") && sampled.contains("hello"),
        "{sampled}"
    );
    assert!(
        result(&seen.steps[2])
            .to_string()
            .to_lowercase()
            .contains("decline"),
        "{:?}",
        seen.steps[2]
    );
}

/// tests/servers/relay.mjs over streamable HTTP, and its port.
async fn relay_http(record: &Path) -> (tokio::process::Child, u16) {
    let args = [
        "--http".as_ref(),
        "0".as_ref(),
        "--record".as_ref(),
        record.as_os_str(),
    ];
    node_listening("relay.mjs", &args, "relay: listening on ").await
}

/// Item 4 with several clients (HTTP): two clients' scripts ask the same
/// server a question at the same time; each question reaches only the
/// client whose script made the call (the server sends it on the response
/// stream of that call), and each answer goes back to its own script.
#[tokio::test]
async fn over_http_each_client_gets_only_its_own_questions() {
    let dir = scratch("relay-two-clients");
    let (_server, port) = relay_http(&dir.join("record.jsonl")).await;
    let config = write_config(
        &dir,
        &format!("[servers.r]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_secs = 20\n"),
    );
    let (mut gateway, url) = crate::http::serve_http(&config).await;
    let plan = |who: &str| {
        json!({
            "capabilities": {"elicitation": true},
            "elicit": {"action": "accept", "content": {"answer": format!("from {who}")}, "delay_ms": 1500},
            "steps": [{"execute": format!(r#"async () => forge.callTool("r", "ask", {{question: "question of {who}"}})"#)}]
        })
    };
    let url = std::ffi::OsString::from(url);
    let args = [url.as_os_str()];
    let (a, b) = tokio::join!(client_with(&args, plan("A")), client_with(&args, plan("B")));
    for (seen, who) in [(&a, "A"), (&b, "B")] {
        assert_eq!(
            result(&seen.steps[0])["content"]["answer"],
            format!("from {who}"),
            "{:?}",
            seen.steps
        );
        let asked = seen.events["elicitations"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0]["message"], format!("[r] question of {who}"));
    }
    gateway.start_kill().unwrap();
}

/// Item 7: the servers' prompts (namespaced `server.prompt`), resources and
/// resource templates are on quickforge's own surface; `prompts/get`,
/// `resources/read` (by URI and by template) and completions route to the
/// owning server, and what comes back is redacted. A strict group's are
/// left out, as for an execution not locked to it.
#[tokio::test]
async fn prompts_resources_and_completions_pass_through() {
    let (_dir, config, _record) = setup("relay-surface", |record| {
        format!(
            "{}{}{}[groups.locked]\nservers = [\"hidden\"]\n",
            relay_server("r", record, ""),
            everything(),
            relay_server("hidden", &record.with_extension("hidden"), "")
        )
    });
    let seen = client(
        &config,
        json!({"steps": [
            {"list_prompts": true},
            {"get_prompt": "r.review", "args": {"file": "main.rs"}},
            {"list_resources": true},
            {"list_templates": true},
            {"read": "note://readme"},
            {"read": "note://12"},
            {"complete": {"prompt": "r.review", "argument": {"name": "file", "value": "m"}}},
            {"complete": {"template": "note://{id}", "argument": {"name": "id", "value": "1"}}},
            {"get_prompt": "nosuch.review"},
            {"read": "nowhere://x"}
        ]}),
    )
    .await;
    let s = &seen.steps;
    let prompts = s[0]["prompts"].as_array().unwrap();
    assert!(prompts.contains(&json!("r.review")), "{prompts:?}");
    assert!(
        prompts
            .iter()
            .any(|p| p.as_str().unwrap().starts_with("everything.")),
        "{prompts:?}"
    );
    assert!(
        !prompts
            .iter()
            .any(|p| p.as_str().unwrap().starts_with("hidden.")),
        "{prompts:?}"
    );
    let text = s[1]["messages"][0].as_str().unwrap();
    assert!(
        text.starts_with("Review main.rs") && !text.contains("sk_live_aaaa"),
        "{text}"
    );
    let resources = s[2]["resources"].as_array().unwrap();
    assert!(resources.contains(&json!("note://readme")), "{resources:?}");
    assert!(
        resources.len() > 1,
        "server-everything's too: {resources:?}"
    );
    assert!(
        s[3]["templates"]
            .as_array()
            .unwrap()
            .contains(&json!("note://{id}")),
        "{:?}",
        s[3]
    );
    assert_eq!(s[4]["contents"], json!(["read me first"]));
    assert_eq!(s[5]["contents"], json!(["note 12"]));
    assert_eq!(s[6]["values"], json!(["main.rs", "mod.rs"]));
    assert_eq!(s[7]["values"], json!(["1", "12"]));
    assert!(
        s[8]["error"].as_str().unwrap().contains("nosuch"),
        "{:?}",
        s[8]
    );
    assert!(
        s[9]["error"].as_str().unwrap().contains("nowhere://x"),
        "{:?}",
        s[9]
    );
}

/// A 2025-era session opened on `url` by hand, initialized: its id.
async fn raw_session(url: &str) -> String {
    let init = crate::http::raw_initialize(url).await;
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    post_in(
        &reqwest::Client::new(),
        url,
        &session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    session
}

/// POSTs `body` to `url` in `session`.
fn post_in(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    body: &Value,
) -> impl Future<Output = reqwest::Result<reqwest::Response>> + use<> {
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(body)
        .send()
}

/// Item 1 over HTTP: the end of the client's session (`DELETE`) stops the
/// execution it had running, and its downstream call is cancelled.
#[tokio::test]
async fn the_end_of_an_http_session_stops_its_execution() {
    crate::http::tls();
    let (_dir, config, record) = setup("relay-delete", |record| relay_server("r", record, ""));
    let (mut gateway, url) = crate::http::serve_http(&config).await;
    let session = raw_session(&url).await;
    let http = reqwest::Client::new();
    let post = |body: Value| post_in(&http, &url, &session, &body);
    let code = r#"async () => forge.callTool("r", "slow", {ms: 30000})"#;
    let running = tokio::spawn(post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": code}}}),
    ));
    // Once the call is in flight downstream, the client ends its session.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let deleted = http
        .delete(&url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let lines = recorded(&record, 1).await;
    assert_eq!(
        lines[0]["cancelled"], true,
        "the server heard the cancellation: {lines:?}"
    );
    running.abort();
    gateway.start_kill().unwrap();
}

/// Item 2: `forge.progress(done, total, message)` reaches the client on its
/// token with the script's own figures; a bad `done` is a clear error.
#[tokio::test]
async fn a_script_reports_its_own_progress() {
    let (_dir, config, _record) =
        setup("relay-own-progress", |record| relay_server("r", record, ""));
    let seen = client(
        &config,
        json!({"steps": [
            {"execute": r#"async () => { forge.progress(5, 10, "halfway"); await new Promise(r => setTimeout(r, 300)); forge.progress(10, 10, "done"); return 1; }"#,
             "progress": true},
            {"execute": r#"async () => { try { forge.progress("five"); } catch (e) { return e.code; } }"#}
        ]}),
    )
    .await;
    let progress = seen.steps[0]["progress"].as_array().unwrap();
    assert_eq!(
        progress[0],
        json!({"progress": 5.0, "total": 10.0, "message": "halfway"}),
        "{progress:?}"
    );
    assert_eq!(progress.last().unwrap()["progress"], 10.0, "{progress:?}");
    assert_eq!(result(&seen.steps[1]), &json!("INVALID_ARGUMENT"));
}

/// Item 7, the script's side: resource templates were on the surface but
/// not in `manifest`. `manifest.servers[i].templates` lists them, and a
/// script reads a URI it filled in with `forge.readResource`.
#[tokio::test]
async fn scripts_see_resource_templates_in_the_manifest() {
    let (_dir, config, _record) = setup("relay-templates", |record| relay_server("r", record, ""));
    let s = connect(&config).await;
    let got = s
        .execute_when_ready(
            CALL_BOUND,
            r#"async () => {
                const r = manifest.servers.find((s) => s.name === "r");
                const t = r.templates.find((t) => t.uriTemplate === "note://{id}");
                return { t, read: await forge.readResource("r", t.uriTemplate.replace("{id}", "7")) };
            }"#,
        )
        .await;
    assert_eq!(got["t"]["uriTemplate"], "note://{id}", "{got}");
    assert!(got["read"].to_string().contains("note 7"), "{got}");
}

/// Red team round 3, point 4 (the relay's part): a server's `logger` name
/// reached the client as it was, carrying a GitHub token, terminal escapes
/// and a bidi override, while `data` was redacted. Both are shown redacted
/// where they cross to the client, the name cleaned as well.
#[tokio::test]
async fn a_relayed_logger_name_is_redacted_and_cleaned() {
    let (_dir, config, _record) = setup("relay-logger", |record| relay_server("r", record, ""));
    let token = format!("ghp_{}", "C".repeat(36));
    let script = format!(
        r#"async () => forge.callTool("r", "log", {{levels: ["error"], logger: "auth {token} \u001b[31mred\u202Eevil"}})"#
    );
    let seen = client(
        &config,
        json!({"log_level": "info", "steps": [{"execute": script}]}),
    )
    .await;
    result(&seen.steps[0]);
    let logs = seen.events["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let logger = logs[0]["logger"].as_str().unwrap();
    assert!(logger.starts_with("r/auth [REDACTED:key]"), "{logger}");
    for hidden in ["ghp_", "\u{1b}", "\u{202E}", "[31m"] {
        assert!(!logger.contains(hidden), "{hidden:?} in {logger:?}");
    }
}

/// Red team round 3, point 10: an approval showed every path as
/// `[REDACTED:path]` (two different targets read alike, so the person
/// approved blind) and a bidi override from the script as it was. The
/// person now reads the path the tool will get, hidden characters written
/// out, and still no credential.
#[tokio::test]
async fn an_approval_shows_the_scripts_path_and_hidden_characters_but_no_credential() {
    let (_dir, config, _record) = setup("relay-approve-text", |record| {
        relay_server("r", record, "allow_destructive = \"ask\"\n")
    });
    let token = format!("ghp_{}", "D".repeat(36));
    let wipe = format!(
        r#"async () => forge.callTool("r", "wipe", {{target: "/home/alice/.ssh/id_rsa\u202Etxt.exe {token}"}})"#
    );
    let seen = client(
        &config,
        json!({"capabilities": {"elicitation": true}, "elicit": {"action": "decline"},
               "steps": [{"execute": wipe}]}),
    )
    .await;
    let asked = seen.events["elicitations"][0]["message"].as_str().unwrap();
    assert!(
        asked.contains("/home/alice/.ssh/id_rsa<U+202E>txt.exe"),
        "{asked}"
    );
    assert!(
        !asked.contains('\u{202E}') && !asked.contains("ghp_"),
        "{asked}"
    );
    assert!(asked.contains("[REDACTED:key]"), "{asked}");
}

/// The eras issue's `resources/read` point (red team round 3, point 12): a
/// resource's own URI came back through the redactor
/// (`file:///[REDACTED:url]`), so the client could not use it again. An
/// identifier crosses to the client unchanged; the text beside it does not.
#[tokio::test]
async fn a_read_resource_keeps_its_uri_and_loses_its_secrets() {
    let (_dir, config, _record) = setup("relay-read-uri", |record| relay_server("r", record, ""));
    let uri = "file:///home/alice/notes/todo.md";
    let seen = client(&config, json!({"steps": [{"read": uri}]})).await;
    assert_eq!(seen.steps[0]["uris"], json!([uri]), "{:?}", seen.steps);
    let text = seen.steps[0]["contents"][0].as_str().unwrap();
    assert!(
        text.contains("[REDACTED:path]")
            && text.contains("[REDACTED:key]")
            && !text.contains("ghp_"),
        "{text}"
    );
}

/// Red team round 3, point 12: two requests under one JSON-RPC id in one
/// HTTP session were dropped or cross-answered silently. The second is
/// refused at once (409, a JSON-RPC error naming the id), the first gets
/// its own result, and the id can be used again once it is answered.
#[tokio::test]
async fn a_second_request_under_a_running_id_is_refused_over_http() {
    crate::http::tls();
    let (_dir, config, _record) = setup("relay-dup-id", |record| relay_server("r", record, ""));
    let (mut gateway, url) = crate::http::serve_http(&config).await;
    let session = raw_session(&url).await;
    let http = reqwest::Client::new();
    let post = |body: Value| post_in(&http, &url, &session, &body);
    let execute = |code: &str| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "execute", "arguments": {"code": code}}})
    };
    let first = tokio::spawn(post(execute(
        r#"async () => { await forge.callTool("r", "slow", {ms: 1500}); return "first"; }"#,
    )));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = post(execute(r#"async () => "second""#)).await.unwrap();
    assert_eq!(second.status(), reqwest::StatusCode::CONFLICT);
    let refusal: Value = second.json().await.unwrap();
    assert_eq!(refusal["id"], 7, "{refusal}");
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    let first = first.await.unwrap().unwrap();
    assert!(first.status().is_success(), "{}", first.status());
    let text = first.text().await.unwrap();
    assert!(text.contains("first") && !text.contains("second"), "{text}");
    // answered, so the id is free again
    let again = post(execute(r#"async () => "again""#)).await.unwrap();
    assert!(again.status().is_success(), "{}", again.status());
    assert!(again.text().await.unwrap().contains("again"));
    gateway.start_kill().unwrap();
}

/// Log messages an rmcp client received, as JSON text.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

#[expect(
    deprecated,
    reason = "logging is deprecated in MCP 2026-07-28 (SEP-2577) but is what a 2025-era session relays"
)]
impl rmcp::ClientHandler for Logs {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _cx: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.data.to_string());
    }
}

/// Red team round 3, point 3: a shared stdio server that logged after one
/// subject's call ended had the log delivered to another subject's call,
/// the only one still in flight to that server (stdio messages carry no
/// request id, so the owner was a guess). A guess now also needs every call
/// to the server that ended in the last few seconds to be for the same
/// subject: the late log reaches neither.
#[tokio::test]
async fn a_late_log_of_one_subject_does_not_reach_another() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    crate::http::tls();
    let hash = |t: &str| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(t.as_bytes()));
    let (alice_token, bob_token) = (
        "alice-relay-token-0123456789abcdef",
        "bob-relay-token-fedcba9876543210",
    );
    let (_dir, config, _record) = setup("relay-late-log", |record| {
        format!(
            "[auth]\nresource = \"https://gw.test/mcp\"\n\
             [[auth.tokens]]\nsubject = \"alice\"\nsha256 = \"{}\"\n\n\
             [[auth.tokens]]\nsubject = \"bob\"\nsha256 = \"{}\"\n\n{}",
            hash(alice_token),
            hash(bob_token),
            relay_server("r", record, "")
        )
    });
    let (mut gateway, url) = crate::http::serve_http(&config).await;
    let connect = |token: &str, logs: Logs| {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token),
        );
        logs.serve(transport)
    };
    let (alice_logs, bob_logs) = (Logs::default(), Logs::default());
    let alice = connect(alice_token, alice_logs.clone()).await.unwrap();
    let bob = connect(bob_token, bob_logs.clone()).await.unwrap();
    let execute = |code: &str| {
        let mut args = serde_json::Map::new();
        args.insert("code".into(), code.into());
        rmcp::model::CallToolRequestParams::new("execute").with_arguments(args)
    };
    let done = alice
        .call_tool(execute(
            r#"async () => forge.callTool("r", "log_later", {ms: 800, marker: "late-from-alice"})"#,
        ))
        .await
        .unwrap();
    assert_eq!(done.is_error, Some(false), "{done:?}");
    // bob's call is the only one in flight when alice's log arrives
    let done = bob
        .call_tool(execute(
            r#"async () => forge.callTool("r", "slow", {ms: 2000})"#,
        ))
        .await
        .unwrap();
    assert_eq!(done.is_error, Some(false), "{done:?}");
    for (who, logs) in [("alice", &alice_logs), ("bob", &bob_logs)] {
        let logs = logs.0.lock().unwrap().join("\n");
        assert!(!logs.contains("late-from-alice"), "{who} got it: {logs}");
    }
    let _ = alice.cancel().await;
    let _ = bob.cancel().await;
    gateway.start_kill().unwrap();
}
