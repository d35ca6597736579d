//! Executions that outlive their request, through the real binary and the
//! rmcp client: `execute` as a task (the tasks extension, SEP-2663) for a
//! client that takes tasks, at 2025-11-25 and 2026-07-28; a question from a
//! downstream server answered by `tasks/update`, or by a 2026-era client's
//! retry with `inputResponses` (MRTR, SEP-2322); cancellation; forged ids.
//! The downstream is tests/servers/relay.mjs (official TypeScript SDK).

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, GetTaskParams, Implementation, InputResponses, ProtocolVersion,
    TaskPayload, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient};
use serde_json::{Value, json};

use crate::mcp::*;

/// A client that answers every form elicitation with `{"answer": "blue"}`
/// (and `"interpretation": "blue"`, the field server-everything asks for),
/// declaring form elicitation and, when `tasks`, the tasks extension.
#[derive(Clone)]
pub(crate) struct Answering {
    pub(crate) tasks: bool,
}

impl ClientHandler for Answering {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        rmcp::model::ClientConfig::new(caps, Implementation::new("tasks-test", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"answer": "blue", "interpretation": "blue"})))
    }
}

pub(crate) type Client = RunningService<RoleClient, Answering>;

/// rmcp's `Auto` mode preferring 2026-07-28, or plain `initialize`.
pub(crate) fn mode(era: &ProtocolVersion) -> ClientLifecycleMode {
    if *era >= ProtocolVersion::V_2026_07_28 {
        ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

/// quickforge on stdio with `config`, and the client connected at `era`.
async fn connect(
    config: &Path,
    era: ProtocolVersion,
    tasks: bool,
) -> (tokio::process::Child, Client) {
    let (child, io) = serve_stdio(config);
    let client = Answering { tasks }
        .serve_with_lifecycle(io, mode(&era))
        .await
        .unwrap();
    assert_eq!(client.peer_info().unwrap().protocol_version, era);
    (child, client)
}

/// A config with relay.mjs as `r`, recording into `record`, and tasks
/// starting after 300 ms.
fn setup(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let record = dir.join("record.jsonl");
    let toml = format!(
        "[sandbox]\ntask_after_ms = 300\n\n[servers.r]\ncommand = \"node\"\nargs = [{}, \"--record\", {}]\ntimeout_secs = 30\n",
        toml_str(&servers_dir().join("relay.mjs").to_string_lossy()),
        toml_str(&record.to_string_lossy()),
    );
    (write_config(&dir, &toml), record)
}

pub(crate) fn execute(code: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("execute").with_arguments(
        json!({"code": code})
            .as_object()
            .cloned()
            .expect("an object"),
    )
}

pub(crate) async fn once(client: &Client, params: CallToolRequestParams) -> CallToolResponse {
    tokio::time::timeout(CALL_BOUND, client.peer().call_tool_once(params))
        .await
        .expect("answered in time")
        .expect("a tools/call answer")
}

/// Polls `tasks/get` until `done` accepts the payload.
pub(crate) async fn poll(
    client: &Client,
    id: &str,
    done: impl Fn(&TaskPayload) -> bool,
) -> TaskPayload {
    eventually(CALL_BOUND, || async {
        let got = client
            .peer()
            .get_task(GetTaskParams::new(id))
            .await
            .expect("tasks/get answers");
        done(&got.task.payload).then_some(got.task.payload)
    })
    .await
}

/// Runs a call of `r` to the end, as a task or not, so the server is up
/// and later timings are the scripts' own.
async fn warm(client: &Client) {
    let code = r#"async () => (await forge.callTool("r", "slow", {ms: 1})).slept"#;
    match once(client, execute(code)).await {
        CallToolResponse::Complete(r) => assert_eq!(ok_value(&r), 1),
        CallToolResponse::Task(t) => {
            let done = poll(client, &t.task.task_id, |p| {
                !matches!(p, TaskPayload::Working)
            })
            .await;
            assert_eq!(ok_value(&completed(&done)), 1);
        }
        other => panic!("{other:?}"),
    }
}

/// `code` through rmcp's own `call_tool`, which answers `input_required`
/// through the client's handler and retries by itself.
pub(crate) async fn driven(client: &Client, code: &str) -> CallToolResult {
    tokio::time::timeout(CALL_BOUND, client.call_tool(execute(code)))
        .await
        .expect("answered in time")
        .expect("a result")
}

pub(crate) fn completed(payload: &TaskPayload) -> CallToolResult {
    match payload {
        TaskPayload::Completed { result } => {
            serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult")
        }
        other => panic!("expected a completed task, got {other:?}"),
    }
}

/// Weakness: a long `execute` could not be run as a task. Now, for a
/// client that declared the tasks extension (at either revision), a script
/// still running after `task_after_ms` answers with a task the client
/// polls to its result, while a quick one answers at once.
#[tokio::test]
async fn a_slow_execute_becomes_a_task_the_client_polls_to_its_result() {
    let (config, _record) = setup("tasks-slow");
    for era in [ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25] {
        let (mut child, client) = connect(&config, era.clone(), true).await;
        warm(&client).await;
        let quick = once(&client, execute("async () => 6 * 7")).await;
        let CallToolResponse::Complete(quick) = quick else {
            panic!("a quick script answers at once at {era:?}: {quick:?}");
        };
        assert_eq!(ok_value(&quick), 42);
        let slow = once(
            &client,
            execute(r#"async () => (await forge.callTool("r", "slow", {ms: 1500})).slept"#),
        )
        .await;
        let CallToolResponse::Task(created) = slow else {
            panic!("a slow script becomes a task at {era:?}: {slow:?}");
        };
        assert!(created.task.task_id.starts_with("qft_"));
        assert!(created.task.poll_interval_ms.is_some());
        let done = poll(&client, &created.task.task_id, |p| {
            !matches!(p, TaskPayload::Working)
        })
        .await;
        assert_eq!(ok_value(&completed(&done)), 1500, "at {era:?}");
        drop(client);
        child.start_kill().unwrap();
    }
}

/// A finished task's outcome stays for its client to fetch however many
/// quick executions follow. Each `execute` of a 2026 or task-taking client
/// is a run, and a run answered with its result used to be kept ten
/// minutes like a task's; with `max_concurrent = 1` (four runs held) the
/// fifth quick script evicted the finished task as the oldest outcome.
#[tokio::test]
async fn quick_executions_do_not_evict_a_finished_tasks_outcome() {
    let dir = scratch("tasks-evict");
    let toml = format!(
        "[sandbox]\nmax_concurrent = 1\ntask_after_ms = 300\n\n[servers.r]\ncommand = \"node\"\nargs = [{}]\n",
        toml_str(&servers_dir().join("relay.mjs").to_string_lossy()),
    );
    let config = write_config(&dir, &toml);
    let (mut child, client) = connect(&config, ProtocolVersion::V_2026_07_28, true).await;
    warm(&client).await;
    let slow = once(
        &client,
        execute(r#"async () => (await forge.callTool("r", "slow", {ms: 800})).slept"#),
    )
    .await;
    let CallToolResponse::Task(created) = slow else {
        panic!("expected a task: {slow:?}");
    };
    let id = created.task.task_id;
    let done = poll(&client, &id, |p| !matches!(p, TaskPayload::Working)).await;
    assert_eq!(ok_value(&completed(&done)), 800);
    for i in 0..12 {
        let quick = once(&client, execute(&format!("async () => {i} * 2"))).await;
        let CallToolResponse::Complete(quick) = quick else {
            panic!("a quick script answers at once: {quick:?}");
        };
        assert_eq!(ok_value(&quick), i * 2);
    }
    let again = client
        .peer()
        .get_task(GetTaskParams::new(&id))
        .await
        .expect("the finished task is still there after twelve quick executions");
    assert_eq!(ok_value(&completed(&again.task.payload)), 800);
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: nothing could stop a long execution once its request was
/// answered. `tasks/cancel` stops the script and its downstream call (the
/// server hears `notifications/cancelled`), and the task reads cancelled.
#[tokio::test]
async fn cancelling_a_task_stops_the_script_and_its_downstream_call() {
    let (config, record) = setup("tasks-cancel");
    let (mut child, client) = connect(&config, ProtocolVersion::V_2026_07_28, true).await;
    warm(&client).await;
    let _ = std::fs::remove_file(&record);
    let slow = once(
        &client,
        execute(r#"async () => forge.callTool("r", "slow", {ms: 20000})"#),
    )
    .await;
    let CallToolResponse::Task(created) = slow else {
        panic!("expected a task: {slow:?}");
    };
    let id = created.task.task_id;
    // The call went out within the 300 ms before the task was returned;
    // a moment more for it to reach the server.
    tokio::time::sleep(Duration::from_millis(500)).await;
    client
        .peer()
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("tasks/cancel answers");
    let payload = poll(&client, &id, |p| !matches!(p, TaskPayload::Working)).await;
    assert!(matches!(payload, TaskPayload::Cancelled), "{payload:?}");
    let lines = eventually(Duration::from_secs(15), || async {
        let text = std::fs::read_to_string(&record).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (!lines.is_empty()).then_some(lines)
    })
    .await;
    assert_eq!(lines[0]["cancelled"], true, "{lines:?}");
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: a downstream question during a task had no way to the
/// client. It shows in `tasks/get` as `input_required` with the server's
/// elicitation, and `tasks/update` delivers the answer to the script's
/// waiting call.
#[tokio::test]
async fn a_tasks_question_is_answered_with_tasks_update() {
    let (config, _record) = setup("tasks-update");
    let (mut child, client) = connect(&config, ProtocolVersion::V_2026_07_28, true).await;
    let asked = once(
        &client,
        execute(r#"async () => forge.callTool("r", "ask", {question: "favourite colour?"})"#),
    )
    .await;
    let CallToolResponse::Task(created) = asked else {
        panic!("expected a task: {asked:?}");
    };
    let id = created.task.task_id;
    let payload = poll(&client, &id, |p| {
        matches!(p, TaskPayload::InputRequired { .. })
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = payload else {
        unreachable!()
    };
    assert_eq!(input_requests.len(), 1);
    let (key, request) = input_requests.into_iter().next().unwrap();
    let shown = serde_json::to_value(&request).unwrap();
    assert_eq!(shown["method"], "elicitation/create", "{shown}");
    assert!(
        shown["params"]["message"]
            .as_str()
            .unwrap()
            .contains("favourite colour?"),
        "{shown}"
    );
    let mut answers = InputResponses::new();
    answers.insert(
        key,
        json!({"action": "accept", "content": {"answer": "blue"}}),
    );
    client
        .peer()
        .update_task(UpdateTaskParams::new(&id, answers))
        .await
        .expect("tasks/update answers");
    let done = poll(&client, &id, |p| {
        matches!(
            p,
            TaskPayload::Completed { .. } | TaskPayload::Failed { .. }
        )
    })
    .await;
    let value = ok_value(&completed(&done));
    assert_eq!(value["content"]["answer"], "blue", "{value}");
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: a 2026-07-28 client could not be asked anything mid-script
/// (the revision has no server-to-client requests). Now `execute` answers
/// `input_required` with the downstream's elicitation and a sealed
/// `requestState`; the retry with `inputResponses` resumes the same
/// execution, which finishes with the answer. rmcp's own `call_tool`
/// drives the same round trip by itself.
#[tokio::test]
async fn a_2026_client_answers_a_mid_script_question_on_retry() {
    let (config, _record) = setup("tasks-mrtr");
    let (mut child, client) = connect(&config, ProtocolVersion::V_2026_07_28, false).await;
    let code = r#"async () => {
        const r = await forge.callTool("r", "ask", {question: "favourite colour?"});
        return {answer: r.content.answer, action: r.action};
    }"#;
    let first = once(&client, execute(code)).await;
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected input_required: {first:?}");
    };
    let state = asked.request_state.clone().expect("a requestState");
    assert!(state.starts_with("qft_"), "{state}");
    let requests = asked.input_requests.clone().expect("inputRequests");
    let key = requests.keys().next().unwrap().clone();
    let mut retry = execute(code);
    let mut answers = InputResponses::new();
    answers.insert(
        key,
        json!({"action": "accept", "content": {"answer": "blue"}}),
    );
    retry.input_responses = Some(answers);
    retry.request_state = Some(state);
    let second = once(&client, retry).await;
    let CallToolResponse::Complete(result) = second else {
        panic!("expected the result: {second:?}");
    };
    assert_eq!(
        ok_value(&result),
        json!({"answer": "blue", "action": "accept"})
    );

    // The SDK's own loop: it answers through its handler and retries.
    let driven = driven(&client, code).await;
    assert_eq!(
        ok_value(&driven),
        json!({"answer": "blue", "action": "accept"})
    );
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: ids are bearer capabilities. A forged or unknown task id is
/// the spec's `-32602`, and a retry whose `requestState` this gateway does
/// not hold says to run the script again; the gateway keeps serving.
#[tokio::test]
async fn forged_task_ids_and_request_states_are_refused() {
    let (config, _record) = setup("tasks-forged");
    let (mut child, client) = connect(&config, ProtocolVersion::V_2026_07_28, true).await;
    warm(&client).await;
    let forged = format!("qft_{}", "0".repeat(56));
    let e = client
        .peer()
        .get_task(GetTaskParams::new(&forged))
        .await
        .expect_err("a forged id is refused");
    let rmcp::ServiceError::McpError(e) = e else {
        panic!("{e:?}")
    };
    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{e:?}");
    assert!(e.message.contains("unknown task"), "{e:?}");
    let mut retry = execute("async () => 1");
    retry.request_state = Some(forged);
    retry.input_responses = Some(InputResponses::new());
    let CallToolResponse::Complete(gone) = once(&client, retry).await else {
        panic!("expected an error result");
    };
    assert_eq!(gone.is_error, Some(true));
    let text = serde_json::to_string(&gone.content).unwrap();
    assert!(text.contains("run the script again"), "{text}");
    let CallToolResponse::Complete(still) = once(&client, execute("async () => 2")).await else {
        panic!("a quick script answers at once");
    };
    assert_eq!(ok_value(&still), 2);
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: approvals (`allow_destructive = "ask"`) could reach only a
/// client quickforge can send requests to. A 2026-era client gets the
/// question as `input_required`; declining it on retry makes the script's
/// call throw `DECLINED`, and the destructive call never goes out.
#[tokio::test]
async fn an_approval_reaches_a_2026_client_as_input_required() {
    let dir = scratch("tasks-approve");
    let record = dir.join("record.jsonl");
    let toml = format!(
        "[servers.r]\ncommand = \"node\"\nargs = [{}, \"--record\", {}]\nallow_destructive = \"ask\"\n",
        toml_str(&servers_dir().join("relay.mjs").to_string_lossy()),
        toml_str(&record.to_string_lossy()),
    );
    let config = write_config(&dir, &toml);
    let (mut child, client) = connect(&config, ProtocolVersion::V_2026_07_28, false).await;
    let code = r#"async () => {
        try { await forge.callTool("r", "wipe", {target: "/srv"}); return "sent"; }
        catch (e) { return e.code; }
    }"#;
    let CallToolResponse::InputRequired(asked) = once(&client, execute(code)).await else {
        panic!("expected the approval as input_required");
    };
    let requests = asked.input_requests.expect("inputRequests");
    let (key, request) = requests.into_iter().next().unwrap();
    let shown = serde_json::to_value(&request).unwrap();
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("r.wipe") && message.contains("/srv"),
        "{message}"
    );
    let mut retry = execute(code);
    let mut answers = InputResponses::new();
    answers.insert(key, json!({"action": "decline"}));
    retry.input_responses = Some(answers);
    retry.request_state = asked.request_state;
    let CallToolResponse::Complete(result) = once(&client, retry).await else {
        panic!("expected the result");
    };
    assert_eq!(ok_value(&result), "DECLINED");
    assert!(
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .is_empty(),
        "the destructive call never went out"
    );
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: a 2026-era downstream's `input_required` answer (MRTR) failed
/// the call, because nobody relayed its questions. Now they reach the
/// script's client like a 2025 server's own requests — sent to a 2025
/// client, parked for a 2026 client's retry — and the answers go back on a
/// retry of the downstream call with its `requestState`.
#[tokio::test]
async fn a_downstream_input_required_is_relayed_to_the_client() {
    let dir = scratch("tasks-downstream-mrtr");
    let config = write_config(
        &dir,
        &crate::downstream_eras::modern(&dir.join("cancel.log")),
    );
    for era in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let (mut child, client) = connect(&config, era.clone(), false).await;
        let code = r#"async () => {
            for (let i = 0; ; i++) {
                try { return await forge.callTool("modern", "ask", {}); }
                catch (e) { if (e.code !== "SERVER_NOT_FOUND" && e.code !== "UNAVAILABLE" || i > 100) throw e; }
                await new Promise(r => setTimeout(r, 100));
            }
        }"#;
        let result = driven(&client, code).await;
        let value = ok_value(&result);
        let text = value.as_str().unwrap_or_default();
        assert!(
            text.starts_with("answered:") && text.contains("\"blue\"") && text.contains("accept"),
            "at {era:?}: {value}"
        );
        drop(client);
        child.start_kill().unwrap();
    }
}

/// Weakness: server-everything's `simulate-research-query` (taskSupport
/// `required`, protocol 2025-11-25) was listed yet every call failed with
/// "requires task augmentation". quickforge now calls such a tool as a
/// 2025 task (`tools/call` with `task`, then `tasks/result`), relaying the
/// task's own question (its clarification elicitation) to the script's
/// client; the second call goes straight to task mode.
#[tokio::test]
async fn a_tool_that_requires_task_augmentation_works() {
    let dir = scratch("tasks-required");
    // Each research task takes four one-second stages.
    let config = write_config(
        &dir,
        &format!("[sandbox]\ntimeout_secs = 40\n\n{}", everything()),
    );
    let (mut child, client) = connect(&config, ProtocolVersion::V_2025_11_25, false).await;
    let code = r#"async () => {
        const plain = await forge.callTool("everything", "simulate-research-query", {topic: "rust"});
        const asked = await forge.callTool("everything", "simulate-research-query", {topic: "python", ambiguous: true});
        const text = (r) => typeof r === "string" ? r : JSON.stringify(r);
        return {plain: text(plain).slice(0, 200), asked: text(asked)};
    }"#;
    let result = driven(&client, code).await;
    let value = ok_value(&result);
    let plain = value["plain"].as_str().unwrap_or_default();
    let asked = value["asked"].as_str().unwrap_or_default();
    assert!(plain.contains("Research Report: rust"), "{value}");
    assert!(asked.contains("Research Report: python (blue)"), "{value}");
    drop(client);
    child.start_kill().unwrap();
}

/// Weakness: over streamable HTTP a 2026-era request stands alone (rmcp
/// builds a handler per request), so anything kept in a handler is lost
/// between a task's creation and its polls, or between an MRTR answer and
/// its retry. Runs live in the gateway, not the handler: a task is polled
/// and answered, and an MRTR retry resumes, across those requests.
#[tokio::test]
async fn tasks_and_mrtr_work_over_http_where_each_request_stands_alone() {
    crate::http::tls();
    let (config, _record) = setup("tasks-http");
    let (mut child, url) = crate::http::serve_http(&config).await;
    let code = r#"async () => forge.callTool("r", "ask", {question: "favourite colour?"})"#;
    for tasks in [true, false] {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
        let client = Answering { tasks }
            .serve_with_lifecycle(transport, mode(&ProtocolVersion::V_2026_07_28))
            .await
            .unwrap();
        if tasks {
            let CallToolResponse::Task(created) = once(&client, execute(code)).await else {
                panic!("expected a task");
            };
            let id = created.task.task_id;
            let payload = poll(&client, &id, |p| {
                matches!(p, TaskPayload::InputRequired { .. })
            })
            .await;
            let TaskPayload::InputRequired { input_requests } = payload else {
                unreachable!()
            };
            let key = input_requests.keys().next().unwrap().clone();
            let mut answers = InputResponses::new();
            answers.insert(
                key,
                json!({"action": "accept", "content": {"answer": "blue"}}),
            );
            client
                .peer()
                .update_task(UpdateTaskParams::new(&id, answers))
                .await
                .unwrap();
            let done = poll(&client, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
            assert_eq!(ok_value(&completed(&done))["content"]["answer"], "blue");
        } else {
            let result = driven(&client, code).await;
            assert_eq!(ok_value(&result)["content"]["answer"], "blue");
        }
    }
    child.start_kill().unwrap();
}
