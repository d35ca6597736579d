//! `tools/call` of a direct tool (a server's `expose`, see
//! [`crate::manifest::direct`]): one call through the same pipeline a
//! script's `forge.callTool` passes (admission, route with did-you-mean and
//! the argument check, policy and approval, rate limit, breaker, in-flight
//! limit, the server's timeout), recorded in the audit log as an operation
//! of its own (`"operation": "direct"`). No script runs, so no sandbox slot
//! is taken; the server's `max_in_flight` and `calls_per_minute` bound it.
//!
//! The answer is the server's own result (content blocks, structured
//! content) when it succeeds; a refusal or a tool error is an `isError`
//! result whose text gives the ForgeError code, message and suggestion, the
//! server's text redacted and bounded once, as it leaves towards the client
//! (`quickforge_core::shown::to_client`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::Executor;
use crate::call::{CallLimits, Op, Pipeline, Started};
use crate::error::{ErrorCode, ErrorKind, ExecutionError, ForgeError};
use crate::gateway::convert::Shape;
use crate::manifest::direct::DirectTool;
use crate::relay::Upstream;
use crate::sandbox::{Mode, Report, Stats};
use crate::state::Stash;

impl Executor {
    /// Calls direct tool `tool` (listed as `name`) with `args`, recording it
    /// in `trail`; the report of that one call, whose value is the MCP
    /// result as JSON.
    pub async fn call_direct(
        &self,
        tool: &DirectTool,
        args: &Value,
        trail: Option<crate::audit::SharedTrail>,
        stash: Arc<Stash>,
        upstream: Option<Arc<Upstream>>,
    ) -> Report {
        if let Some(refused) = self.closing("calls") {
            return refused;
        }
        let started = Instant::now();
        let cx = self.context(Shape::Mcp, trail, stash, upstream).await;
        let deadline = cx.deadline.clone();
        let limits = CallLimits {
            max_calls: 1,
            max_args_size: self.sandbox.limits().max_args_size,
            max_stash_calls: None,
        };
        let mut pipeline = Pipeline::new(Mode::Direct, limits, cx);
        let args_json = args.to_string();
        let op = Op::CallTool {
            server: &tool.server,
            tool: &tool.tool,
            args_json: &args_json,
        };
        let outcome = match pipeline.start(op) {
            Ok(Started::Running(_, running)) => self.running.track_future(running).await,
            Ok(Started::Stash(_)) => Err(ForgeError::new(
                ErrorCode::Internal,
                "a tool call finished without calling the tool",
            )),
            Err(refused) => Err(refused),
        };
        let result = outcome
            .and_then(|json| {
                serde_json::from_str::<Value>(&json).map_err(|e| {
                    ForgeError::new(
                        ErrorCode::Internal,
                        format!("could not read the result: {e}"),
                    )
                })
            })
            .map_err(|forge| {
                // the failure leaves towards the client: redacted here, once
                let forge =
                    quickforge_core::shown::forge_to_client(forge, &quickforge_core::shown::Native);
                ExecutionError {
                    kind: ErrorKind::Thrown,
                    message: forge.message.clone(),
                    forge: Some(forge),
                    stack: None,
                }
            });
        Report {
            result,
            logs: Vec::new(),
            stats: Stats {
                operations: pipeline.operations(),
                micros: started.elapsed().as_micros() as u64,
                waited_micros: deadline.waited().as_micros() as u64,
                ..Stats::default()
            },
        }
    }
}
