//! `tools/call` downstream, and the answers a 2026-07-28 server may give to
//! it besides a plain result: a task (SEP-2663), awaited here by polling
//! `tasks/get` within the call's time, and `input_required` (MRTR), whose
//! questions go to the script's client through the relay (like a 2025
//! server's own requests) and whose answers go back on a retry of the call,
//! or with `tasks/update` for a task.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelTaskParams, CancelTaskRequest, ClientRequest,
    CustomRequest, GetTaskParams, GetTaskRequest, InputRequest, InputRequests, InputResponses,
    JsonObject, ServerResult, Task, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::convert;
use super::downstream::{Connection, Track, send, send_tracked, unexpected};
use crate::error::{ErrorCode, ForgeError};
use crate::relay::Owner;

/// One script's `tools/call`, and where it goes.
pub struct Call<'a> {
    /// The server's live session.
    pub conn: &'a Connection,
    /// The server's name.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The server's `timeout_secs`.
    pub timeout: Duration,
    /// The client of the execution that makes it, for what the server sends
    /// back while it runs; `None` without one.
    pub upstream: Option<std::sync::Arc<crate::relay::Upstream>>,
    /// What the result becomes.
    pub shape: convert::Shape,
}

/// Sends `tools/call` and converts the result.
pub async fn call_tool(
    call: Call<'_>,
    arguments: serde_json::Map<String, Value>,
) -> Result<Value, ForgeError> {
    let Call {
        conn,
        server,
        tool,
        timeout,
        upstream,
        shape,
    } = call;
    let mut params = crate::trace::inject(
        CallToolRequestParams::new(tool.to_string()).with_arguments(arguments),
    );
    let track = upstream.clone().map(|upstream| Track { tool, upstream });
    let asking = Asking {
        conn,
        server,
        tool,
        upstream: upstream.as_ref(),
        shape,
    };
    if conn.learned_task_tool(tool) {
        return call_as_task(&asking, &params, timeout, track).await;
    }
    for round in 0..=MAX_INPUT_ROUNDS {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
        // `_tracked` holds the call's place in the relay while a task it
        // started runs, too.
        let (result, _tracked) =
            match send_tracked(conn, server, request, timeout, track.clone()).await {
                Err(e) if round == 0 && needs_task(&e.message) => {
                    conn.learn_task_tool(tool);
                    return call_as_task(&asking, &params, timeout, track).await;
                }
                other => other?,
            };
        match result {
            ServerResult::CallToolResult(result)
                if round == 0
                    && result.is_error == Some(true)
                    && result
                        .content
                        .iter()
                        .any(|c| c.as_text().is_some_and(|t| needs_task(&t.text))) =>
            {
                conn.learn_task_tool(tool);
                return call_as_task(&asking, &params, timeout, track).await;
            }
            ServerResult::CallToolResult(result) => {
                let json = serde_json::to_value(&result).map_err(|e| {
                    ForgeError::new(ErrorCode::InvalidResponse, format!("{server}.{tool}: {e}"))
                })?;
                return shape.convert(server, tool, json);
            }
            ServerResult::CreateTaskResult(created) => {
                return await_task(&asking, created.task, timeout).await;
            }
            ServerResult::InputRequiredResult(asked) if round < MAX_INPUT_ROUNDS => {
                let requests = asked.input_requests.unwrap_or_default();
                params.input_responses = Some(asking.answer(requests).await?);
                params.request_state = asked.request_state;
            }
            ServerResult::InputRequiredResult(_) => {
                return Err(ForgeError::new(
                    ErrorCode::DownstreamError,
                    format!(
                        "server {server:?} asked for input {MAX_INPUT_ROUNDS} times for one call of {tool:?}; quickforge stopped answering"
                    ),
                ));
            }
            other => return Err(unexpected(server, &other)),
        }
    }
    unreachable!("the last round returns")
}

/// Whether a server's refusal says the tool runs only as a 2025-11-25 task
/// (`execution.taskSupport: "required"`). rmcp 3.9 (and 3.11) drops
/// `execution` from listed tools and has no 2025 task support, so the
/// requirement cannot be read from `tools/list`; it is learned from the
/// refusal the specification fixes for it (`-32601`, which the TypeScript
/// SDK's McpServer hands back as an `isError` result with this text). The
/// refusal comes before the tool runs, so calling again as a task never
/// runs it twice.
fn needs_task(text: &str) -> bool {
    text.contains("requires task augmentation") || text.contains("taskSupport: 'required'")
}

impl Connection {
    fn learned_task_tool(&self, tool: &str) -> bool {
        self.task_tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(tool)
    }

    fn learn_task_tool(&self, tool: &str) {
        self.task_tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tool.to_string());
    }
}

/// Calls the tool as a 2025-11-25 task: `tools/call` with `task`, then
/// `tasks/result`, which the server answers when the task ends (its
/// questions meanwhile come as its own requests, relayed like any other
/// during the call, since the request is tracked). Within the server's
/// `timeout_secs`; a call that ends first cancels the task with
/// `tasks/cancel`. rmcp has no 2025 task types, hence the custom requests.
async fn call_as_task(
    asking: &Asking<'_>,
    params: &CallToolRequestParams,
    timeout: Duration,
    track: Option<Track<'_>>,
) -> Result<Value, ForgeError> {
    let Asking {
        conn,
        server,
        tool,
        shape,
        ..
    } = *asking;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut call = serde_json::json!({
        "name": tool,
        "arguments": params.arguments.clone().unwrap_or_default(),
        "task": {"ttl": timeout.as_millis() as u64},
    });
    // The trace context (`traceparent`) goes along as on a plain call.
    if let Some(meta) = &params.meta {
        call["_meta"] = serde_json::to_value(meta).unwrap_or_default();
    }
    let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(call)));
    let (created, _tracked) = send_tracked(conn, server, request, timeout, track.clone()).await?;
    let created = serde_json::to_value(&created).unwrap_or_default();
    let Some(id) = created
        .pointer("/task/taskId")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        // A server may answer a task-augmented call with the plain result.
        return shape.convert(server, tool, created);
    };
    let mut cancel = CancelTaskOnDrop {
        peer: Some(conn.peer.clone()),
        id: id.clone(),
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let request = ClientRequest::CustomRequest(CustomRequest::new(
        "tasks/result",
        Some(serde_json::json!({"taskId": id})),
    ));
    let (result, _tracked) = match send_tracked(conn, server, request, left, track).await {
        Err(e) if e.code.is(ErrorCode::Timeout) => return Err(task_timeout(server, tool, timeout)),
        other => other?,
    };
    cancel.peer = None;
    shape.convert(
        server,
        tool,
        serde_json::to_value(&result).unwrap_or_default(),
    )
}

/// Most `input_required` rounds one call may take: rmcp's own client
/// default (`DEFAULT_MRTR_MAX_ROUNDS`, shared by the official SDKs), so a
/// server that keeps asking cannot hold a script for ever.
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// Who answers a server's questions during one call: the script's client,
/// through the session handler's relay.
struct Asking<'a> {
    conn: &'a Connection,
    server: &'a str,
    tool: &'a str,
    upstream: Option<&'a std::sync::Arc<crate::relay::Upstream>>,
    shape: convert::Shape,
}

impl Asking<'_> {
    /// Answers every question of an `input_required` answer (or a task's)
    /// through the script's client, as the server's own requests would be;
    /// without a client, or when one cannot be answered, the call fails
    /// saying what was asked and why.
    async fn answer(&self, requests: InputRequests) -> Result<InputResponses, ForgeError> {
        let Some(up) = self.upstream else {
            return Err(input_required(
                self.server,
                self.tool,
                Some(&requests),
                "this execution has no MCP client to ask",
            ));
        };
        let owner = Owner::Execution(up.clone(), self.tool.into());
        let handler = &self.conn.handler;
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let what = asked(std::iter::once(&request));
            let answer = match request {
                InputRequest::Elicitation(r) => handler
                    .elicit(&owner, r.params)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default()),
                InputRequest::CreateMessage(r) => match handler.sampling_allowed() {
                    Ok(()) => handler
                        .sample(&owner, r.params)
                        .await
                        .map(|r| serde_json::to_value(r).unwrap_or_default()),
                    Err(e) => Err(e),
                },
                InputRequest::ListRoots(_) => handler
                    .roots(Some(&owner))
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default()),
                _ => Err(rmcp::ErrorData::invalid_params(
                    "a kind of question quickforge does not know",
                    None,
                )),
            };
            match answer {
                Ok(value) => {
                    responses.insert(key, value);
                }
                Err(e) => {
                    return Err(ForgeError::new(
                        ErrorCode::DownstreamError,
                        format!(
                            "server {:?} asked for input before {:?} could finish ({what}), and it could not be answered: {}",
                            self.server,
                            self.tool,
                            crate::error::clip(&e.message, 512)
                        ),
                    ));
                }
            }
        }
        Ok(responses)
    }
}

/// Shortest wait between two `tasks/get` polls, whatever the server's
/// `pollIntervalMs` says: a server asking for 0 ms would otherwise make the
/// gateway spin against it. 50 ms keeps a quick task quick.
const MIN_POLL: Duration = Duration::from_millis(50);
/// Longest wait between two polls, whatever the server asks: the script is
/// waiting, and a task that finishes must not be noticed minutes late.
const MAX_POLL: Duration = Duration::from_secs(5);
/// Poll interval when the server names none.
const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// The error a script sees when a server asks for input (MRTR) that nobody
/// can give: it names what was asked, and `why`. Not "unexpected": the
/// server did nothing wrong.
pub(super) fn input_required(
    server: &str,
    tool: &str,
    requests: Option<&InputRequests>,
    why: &str,
) -> ForgeError {
    let asked = requests
        .map(|requests| asked(requests.values()))
        .unwrap_or_else(|| "input".into());
    ForgeError::new(
        ErrorCode::DownstreamError,
        format!(
            "server {server:?} asked for input before {tool:?} could finish ({asked}); \
             {why}, so the call fails"
        ),
    )
    .suggest("call a tool that needs no confirmation or user input, or run the script from an MCP client that supports elicitation")
}

/// What a set of input requests asks for, for the error message:
/// "elicitation", "sampling", "roots", joined.
fn asked<'a>(requests: impl Iterator<Item = &'a InputRequest>) -> String {
    let mut kinds: Vec<&str> = requests
        .map(|r| match r {
            InputRequest::Elicitation(_) => "elicitation",
            InputRequest::CreateMessage(_) => "sampling",
            InputRequest::ListRoots(_) => "roots",
            _ => "input",
        })
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    if kinds.is_empty() {
        "input".into()
    } else {
        kinds.join(", ")
    }
}

/// Awaits `task` (created by `tools/call`) by polling `tasks/get` at the
/// server's `pollIntervalMs` (held between [`MIN_POLL`] and [`MAX_POLL`]),
/// for at most `timeout` (the server's `timeout_secs`, the same bound as a
/// plain call), and converts its final result like a plain one. A task that
/// does not end in time, or whose call is dropped (the execution ended), is
/// cancelled on the server with `tasks/cancel`.
async fn await_task(
    asking: &Asking<'_>,
    task: Task,
    timeout: Duration,
) -> Result<Value, ForgeError> {
    let Asking {
        conn,
        server,
        tool,
        shape,
        ..
    } = *asking;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut cancel = CancelTaskOnDrop {
        peer: Some(conn.peer.clone()),
        id: task.task_id.clone(),
    };
    let mut interval = task.poll_interval_ms;
    loop {
        let wait = interval
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_POLL)
            .clamp(MIN_POLL, MAX_POLL);
        let now = tokio::time::Instant::now();
        if now + wait >= deadline {
            tokio::time::sleep_until(deadline).await;
            return Err(task_timeout(server, tool, timeout));
        }
        tokio::time::sleep(wait).await;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let request =
            ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(&task.task_id)));
        let got = match send(conn, server, request, left).await {
            Ok(ServerResult::GetTaskResult(got)) => got,
            Ok(other) => return Err(unexpected(server, &other)),
            Err(e) if e.code.is(ErrorCode::Timeout) => {
                return Err(task_timeout(server, tool, timeout));
            }
            Err(e) => return Err(e),
        };
        interval = got.task.task.poll_interval_ms.or(interval);
        match got.task.payload {
            TaskPayload::Working => continue,
            TaskPayload::Completed { result } => {
                cancel.peer = None;
                return shape.convert(server, tool, Value::Object(result));
            }
            TaskPayload::Failed { error } => {
                cancel.peer = None;
                return Err(task_failed(server, tool, error));
            }
            TaskPayload::Cancelled => {
                cancel.peer = None;
                return Err(ForgeError::new(
                    ErrorCode::DownstreamError,
                    format!("server {server:?} cancelled the task running {tool:?}"),
                ));
            }
            // The task waits for input: the script's client answers it
            // (or, with nobody to ask, the task is cancelled — the guard
            // stays armed — and the script hears why).
            TaskPayload::InputRequired { input_requests } => {
                let responses = asking.answer(input_requests).await?;
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let request = ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(
                    UpdateTaskParams::new(&task.task_id, responses),
                ));
                send(conn, server, request, left).await?;
                // Answered: look again at once rather than after a poll.
                interval = Some(0);
            }
            _ => continue,
        }
    }
}

fn task_timeout(server: &str, tool: &str, timeout: Duration) -> ForgeError {
    ForgeError::new(
        ErrorCode::Timeout,
        format!(
            "the task server {server:?} started for {tool:?} did not finish within {} s (its timeout_secs); it was cancelled",
            timeout.as_secs_f64()
        ),
    )
}

/// A failed task's error: its message, or the whole error object quoted
/// (redacted where it crosses, `quickforge_core::shown`).
fn task_failed(server: &str, tool: &str, error: JsonObject) -> ForgeError {
    let failed = format!("the task server {server:?} ran for {tool:?} failed: ");
    if let Some(Value::String(message)) = error.get("message") {
        return ForgeError::new(ErrorCode::DownstreamError, format!("{failed}{message}"));
    }
    ForgeError::new(ErrorCode::DownstreamError, failed).quote(Value::Object(error))
}

/// Sends `tasks/cancel` for a task whose call ended before the task did
/// (the execution's deadline, its budget, the client's cancellation, or the
/// call's own timeout), so the server can stop the work.
struct CancelTaskOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: String,
}

impl Drop for CancelTaskOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let request = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
            CancelTaskParams::new(std::mem::take(&mut self.id)),
        ));
        runtime.spawn(async move {
            let options = rmcp::service::PeerRequestOptions::with_timeout(CANCEL_TIMEOUT);
            let sent = peer.send_request_with_option(request, options).await;
            let answered = match sent {
                Ok(handle) => handle.await_response().await.map(|_| ()),
                Err(e) => Err(e),
            };
            if let Err(e) = answered {
                tracing::debug!("could not send tasks/cancel: {e}");
            }
        });
    }
}

/// Longest wait for the server to acknowledge `tasks/cancel`; nobody waits
/// on the answer, the bound only ends the background send.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed task's error reaches the script redacted and bounded, like
    /// any downstream error text, by the script's boundary.
    #[test]
    fn a_failed_task_error_is_redacted_and_cut_where_it_crosses() {
        use quickforge_core::shown::{MAX_SCRIPT_MESSAGE, Native, to_script};
        let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let mut error = JsonObject::new();
        error.insert(
            "message".into(),
            format!("upstream said token {secret} {}", "x".repeat(64 * 1024)).into(),
        );
        let raw = task_failed("gh", "sync", error);
        assert_eq!(raw.code.as_str(), "DOWNSTREAM_ERROR");
        let e = to_script(raw, &Native);
        assert!(!e.message.contains(secret), "{}", e.message);
        assert!(
            e.message
                .starts_with("the task server \"gh\" ran for \"sync\" failed: upstream said token")
        );
        assert!(
            e.message.len() < MAX_SCRIPT_MESSAGE + 64,
            "{}",
            e.message.len()
        );
        // Without a message, the whole error object is shown (redacted).
        let mut error = JsonObject::new();
        error.insert("code".into(), 7.into());
        error.insert("password".into(), "hunter2".into());
        let e = to_script(task_failed("s", "t", error), &Native);
        assert!(
            e.message
                .ends_with(r#"failed: {"code":7,"password":"[REDACTED]"}"#),
            "{}",
            e.message
        );
    }

    /// The input_required error says what was asked and that quickforge
    /// cannot relay it, never "unexpected".
    #[test]
    fn input_required_names_the_server_the_tool_and_what_was_asked() {
        let e = input_required("forms", "confirm", None, "nobody can answer it");
        assert_eq!(e.code.as_str(), "DOWNSTREAM_ERROR");
        assert!(
            e.message
                .contains("\"forms\" asked for input before \"confirm\"")
                && e.message.contains("(input)")
                && e.message.contains("nobody can answer it"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("unexpected"));
        assert!(e.suggestion.is_some());
        assert_eq!(asked(std::iter::empty()), "input");
        let t = task_timeout("s", "t", Duration::from_millis(1500));
        assert_eq!(t.code.as_str(), "TIMEOUT");
        assert!(
            t.message.contains("1.5 s") && t.message.contains("cancelled"),
            "{}",
            t.message
        );
    }
}
