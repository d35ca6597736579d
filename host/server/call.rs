//! `tools/call` of `search`, `execute` and the direct tools: the arguments,
//! then one of two ways to run. A client of the 2025 era that does not take tasks is
//! served on the request's own task, with the pump that sends its questions
//! on the request's stream beside it. A client that takes tasks (SEP-2663)
//! or speaks 2026-07-28 gets a [`Run`] (see [`crate::execution::tasks`]): the execution
//! goes on by itself, its questions are parked, and the request answers
//! with the result, a task, or `input_required` (MRTR), whichever comes
//! first.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult,
    InputRequiredResult, ProtocolVersion, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use tokio::time::Instant;

use super::{ForgeServer, to_result};
use crate::execution::tasks::{Outcome, Phase, Run};
use crate::relay::{Caps, Upstream};
use crate::sandbox::Mode;

impl ForgeServer {
    /// `tools/call`.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let declared = cx.client_capabilities();
        let tasks = declared.as_ref().is_some_and(|c| c.supports_tasks());
        // A retry with answers to an earlier `input_required` (MRTR).
        if let Some(state) = request.request_state.as_deref() {
            let Some(run) = self.executor.runs.get(state, self.subject_id()) else {
                return Ok(gone());
            };
            run.answer(request.input_responses.clone().unwrap_or_default());
            return self.follow(&run, tasks, &cx).await;
        }
        let job = match request.name.as_ref() {
            "search" | "execute" => match self.script(&request) {
                Ok(job) => job,
                Err(refusal) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(refusal)]).into());
                }
            },
            name => match self.executor.gateway.direct_tools().get(name) {
                Some(tool) => Job::Direct {
                    tool: Box::new(tool.clone()),
                    args: Value::Object(request.arguments.clone().unwrap_or_default()),
                },
                None => return Err(self.unknown_tool(name)),
            },
        };
        let mode = job.mode();
        let client = self.client(&cx.peer);
        let token = cx.meta.get_progress_token();
        let relay = self.executor.gateway.relay.clone();
        let trace = crate::trace::TraceContext::from_meta(&cx.meta.0, crate::observe::exporting());
        let modern = cx
            .protocol_version()
            .is_none_or(|v| v >= ProtocolVersion::V_2026_07_28);
        if tasks || modern {
            let caps = declared.as_ref().map(Caps::of).unwrap_or_default();
            let limit = tasks.then_some(self.executor.runs.limits().timeout);
            let (upstream, pump) = Upstream::parked(client, token, relay, caps, limit);
            let server = self.clone();
            let execution = crate::trace::scope(trace, mode, server.perform(job, upstream));
            let owner = self.subject_id();
            // the fairness key: the subject, else this session
            let holder = owner.unwrap_or(&self.session.id);
            let Some(run) = self.executor.runs.start(execution, pump, owner, holder) else {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "busy: quickforge already holds {} running or unfetched executions (tasks and waiting questions); retry shortly",
                    self.executor.runs.limits().max_runs
                ))])
                .into());
            };
            return self.follow(&run, tasks, &cx).await;
        }
        // The execution runs on this task, beside the pump that sends its
        // requests to the client (so they travel on this request's stream),
        // until it ends or the client cancels the request: then it is
        // dropped, which stops the script at once, frees its slots and
        // cancels its downstream calls.
        let (upstream, pump) = Upstream::new(client, token, relay);
        let run = crate::trace::scope(trace, mode, self.clone().perform(job, upstream));
        tokio::select! {
            biased;
            () = cx.ct.cancelled() => Err(cancelled()),
            result = run => Ok(result.into()),
            () = pump.run() => unreachable!("the pump never ends"),
        }
    }

    /// A `search` or `execute` request's job, or the text that refuses its
    /// arguments.
    fn script(&self, request: &CallToolRequestParams) -> Result<Job, String> {
        let mode = if request.name == "search" {
            Mode::Search
        } else {
            Mode::Execute
        };
        let code = match request.arguments.as_ref().and_then(|a| a.get("code")) {
            Some(Value::String(code)) => code.clone(),
            Some(other) => {
                let kind = match other {
                    Value::Null => "null",
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::Array(_) => "an array",
                    Value::Object(_) => "an object",
                    Value::String(_) => "a string",
                };
                return Err(format!(
                    "`code` must be a string holding a JS async arrow function, got {kind}"
                ));
            }
            None => {
                return Err(
                    "missing argument `code`: a JS async arrow function, e.g. async () => manifest.servers".into(),
                );
            }
        };
        let handle = match request.arguments.as_ref().and_then(|a| a.get("stash")) {
            None | Some(Value::Null) => self.default_handle(),
            // Sealed for the subject: another subject's handle fails here
            // exactly like a forged one.
            Some(Value::String(text)) => {
                match self.executor.handles.open_for(text, self.subject_id()) {
                    Some(handle) => handle,
                    None => {
                        return Err(format!(
                            "`stash` {:?} is not a stash handle of this gateway (altered, from another gateway, or sealed before its secret changed); pass the `stash` value of an earlier result exactly, or leave it out to use this session's stash",
                            crate::error::preview(text)
                        ));
                    }
                }
            }
            Some(_) => {
                return Err(
                    "`stash` must be a string: the `stash` value of an earlier result".into(),
                );
            }
        };
        Ok(Job::Script { mode, code, handle })
    }

    /// The error for a `tools/call` of a name quickforge does not list.
    fn unknown_tool(&self, name: &str) -> McpError {
        let direct = self.executor.gateway.direct_tools();
        let listed = ["search", "execute"]
            .into_iter()
            .chain(direct.listed().map(|t| t.name.as_ref()));
        let hint = crate::suggest::did_you_mean(name, listed)
            .map(|s| format!("; did you mean {s:?}?"))
            .unwrap_or_default();
        let what = if direct.is_empty() {
            "quickforge has exactly two tools, search and execute".to_string()
        } else {
            format!(
                "quickforge lists search, execute and {} direct tools",
                direct.len()
            )
        };
        McpError::invalid_params(format!("unknown tool {name:?}: {what}{hint}"), None)
    }

    /// Does `job` for the client on the other side of `upstream`, and
    /// answers with its result once the last of its reports went out.
    async fn perform(self, job: Job, upstream: Arc<Upstream>) -> CallToolResult {
        let result = match job {
            Job::Script { mode, code, handle } => {
                let (report, used) = self
                    .executor
                    .run_with(&self.session, mode, &code, handle, Some(upstream.clone()))
                    .await;
                to_result(&report, used.as_ref())
            }
            Job::Direct { tool, args } => {
                let handle = self.default_handle();
                let name = tool.listed.name.clone();
                let up = Some(upstream.clone());
                let executor = &self.executor;
                let (report, _) = executor
                    .audited(
                        &self.session,
                        Mode::Direct,
                        &name,
                        handle,
                        |trail, stash| executor.call_direct(&tool, &args, trail, stash, up),
                    )
                    .await;
                super::direct::direct_result(&report)
            }
        };
        upstream.finish().await;
        result
    }

    /// Answers a request about `run` with whatever comes first: its result;
    /// for a client that takes tasks, a task once it has run `task_after_ms`
    /// or asks something; otherwise its questions, as `input_required` with
    /// the run's id as `requestState`. A request the client cancels stops
    /// a run that is not a task.
    async fn follow(
        &self,
        run: &Arc<Run>,
        tasks: bool,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let limits = self.executor.runs.limits();
        let until = tasks.then(|| Instant::now() + limits.after);
        let phase = tokio::select! {
            biased;
            () = cx.ct.cancelled() => {
                run.cancel();
                return Err(cancelled());
            }
            phase = run.settle(until) => phase,
        };
        if let Phase::Done(_) = &phase {
            // Answered with the outcome itself, not a task: see `forget`.
            self.executor.runs.forget(run);
        }
        let task = |status| {
            CallToolResponse::Task(CreateTaskResult::new(run.task(
                status,
                std::time::SystemTime::now(),
                limits,
            )))
        };
        Ok(match phase {
            Phase::Done(Outcome::Completed(result)) => result.into(),
            Phase::Done(Outcome::Failed(message)) => {
                return Err(McpError::internal_error(message, None));
            }
            Phase::Done(Outcome::Cancelled) => return Err(cancelled()),
            Phase::Asking(_) if tasks => task(TaskStatus::InputRequired),
            Phase::Asking(questions) => {
                InputRequiredResult::new(Some(questions), Some(run.id().to_string())).into()
            }
            Phase::Working => task(TaskStatus::Working),
        })
    }

    /// The run a task id names, or the spec's error for an unknown one
    /// (`-32602`); a forged, expired or foreign id is unknown.
    pub(super) fn held(&self, id: &str) -> Result<Arc<Run>, McpError> {
        self.executor.runs.get(id, self.subject_id()).ok_or_else(|| {
            McpError::invalid_params(
                format!(
                    "unknown task {:?}: quickforge does not hold it (it finished more than {} s ago, made room for newer runs of a client holding more, ran in another quickforge process, or was never this gateway's)",
                    crate::error::preview(id),
                    self.executor.runs.limits().keep.as_secs()
                ),
                None,
            )
        })
    }
}

/// What a `tools/call` asks quickforge to do.
enum Job {
    /// Run a script.
    Script {
        /// `search` or `execute`.
        mode: Mode,
        /// The script.
        code: String,
        /// The stash it runs with.
        handle: crate::state::Handle,
    },
    /// Call a direct tool.
    Direct {
        /// The tool.
        tool: Box<crate::manifest::direct::DirectTool>,
        /// Its arguments (an object).
        args: Value,
    },
}

impl Job {
    fn mode(&self) -> Mode {
        match self {
            Job::Script { mode, .. } => *mode,
            Job::Direct { .. } => Mode::Direct,
        }
    }
}

/// The answer to a cancelled request.
fn cancelled() -> McpError {
    McpError::internal_error("the request was cancelled; the execution was stopped", None)
}

/// The answer to a retry whose execution is no longer here.
fn gone() -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(
        "the execution these answers belong to is no longer held by this quickforge (it ended, waited too long for them, or ran in another quickforge process); run the script again",
    )])
    .into()
}
