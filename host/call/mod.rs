//! One call pipeline: every operation a script starts — `forge.callTool`,
//! `forge.readResource`, `forge.stash.*` — passes the same steps, in this
//! order, each exactly once. The WIT imports (`sandbox::imports`) only decode
//! what the guest sent, hand it to [`Pipeline::start`], and encode the answer.
//!
//! ```text
//!  audit       records the operation, its refusal or its end       (audit.rs)
//!   └ admit    mode, name and URI lengths, argument size and shape  (admit.rs)
//!      └ route     server and tool in the execution's manifest snapshot,
//!                  did-you-mean, inputSchema, the live session        (Servers::route)
//!         └ policy    the server's tool policy, the strict-group lock,
//!                     the stash space the lock selects                (policy step below)
//!            └ budget     max_tool_calls
//!   ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ the call counts and has an id from here
//!               └ approval       the person, when the policy says "ask"
//!                                (crate::relay::approve)
//!               └ rate limit     the server's calls_per_minute      (guard.rs)
//!                  └ circuit breaker                                  (breaker.rs)
//!   ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ the rest runs while the script awaits
//!                     └ in-flight limit   the server's max_in_flight
//!                        └ timeout + downstream   the request itself (SendRequest)
//! ```
//!
//! Up to the budget, a refusal reaches the script at once, without a call id
//! and without costing a call. From the budget on, the call has an id: the
//! rate limit and the breaker still decide at once (after the person, for a
//! call that needs approval), but their refusal is that call's outcome, as
//! the downstream's answer would be.
//! Stash operations stop after the policy step: they are local. Manifest
//! reads (`manifest.*`) are not operations: they read the execution's
//! snapshot and change nothing, narrowed by the strict-group lock
//! (`visibility.rs`).
//!
//! **Cancellation**: a running call is a future the sandbox owns. Dropping it
//! — the execution ended, timed out, or its client cancelled the request —
//! releases its breaker probe and in-flight slot, and the downstream request
//! it was waiting on is cancelled on the server (`notifications/cancelled`,
//! see `gateway::downstream`).
//!
//! Why not tower: the head of this pipeline must answer synchronously (a
//! WIT import returns a call id or a refusal, then the guest goes on running
//! its job queue), which `Service::call`'s future-per-request shape cannot
//! express without polling futures by hand; the tail is three small async
//! guards. A plain sequence of named steps, written down here, says the same
//! with less machinery.

mod admit;
mod audit;
pub mod breaker;
mod guard;
mod visibility;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::audit::trail::SharedTrail;
use crate::deadline::Deadline;
use crate::error::{ErrorCode, ForgeError};
use crate::manifest::ManifestView;
use crate::policy::GroupLock;
use crate::relay::Upstream;
use crate::state::Stash;

pub use guard::Guards;
pub use quickforge_core::execution::Mode;

/// A boxed, sendable future, as the pipeline's running operations are.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One operation a script asked for, as the guest sent it.
#[derive(Debug)]
pub enum Op<'a> {
    /// `forge.callTool(server, tool, args)`; `args_json` is the guest's JSON.
    CallTool {
        /// The server's name.
        server: &'a str,
        /// The tool's name.
        tool: &'a str,
        /// The arguments, as JSON text.
        args_json: &'a str,
    },
    /// `forge.readResource(server, uri)`.
    ReadResource {
        /// The server's name.
        server: &'a str,
        /// The resource's URI.
        uri: &'a str,
    },
    /// `forge.stash.put(key, value, {ttl})`.
    StashPut {
        /// The key.
        key: &'a str,
        /// The value, as JSON text.
        value_json: String,
        /// The lifetime asked for, if any.
        ttl: Option<std::time::Duration>,
    },
    /// `forge.stash.get(key)`.
    StashGet {
        /// The key.
        key: &'a str,
    },
    /// `forge.stash.delete(key)`.
    StashDelete {
        /// The key.
        key: &'a str,
    },
    /// `forge.stash.keys()`.
    StashKeys,
}

impl Op<'_> {
    /// The script API's name for the operation, for messages.
    fn api(&self) -> &'static str {
        match self {
            Op::CallTool { .. } => "forge.callTool",
            Op::ReadResource { .. } => "forge.readResource",
            _ => "forge.stash",
        }
    }
}

/// The answer of a stash operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A value was stored.
    Stored,
    /// The JSON stored under the key, if any.
    Value(Option<String>),
    /// Whether the key existed.
    Deleted(bool),
    /// The live keys.
    Keys(Vec<String>),
}

/// A started operation.
pub enum Started {
    /// A stash operation: every step before the store has passed; the
    /// future is the store's one atomic step (ready at once for memory, a
    /// round trip for Redis), awaited by the import while the script waits.
    Stash(BoxFuture<Result<Reply, ForgeError>>),
    /// It runs as call `id`; the future resolves to its JSON result.
    Running(u32, BoxFuture<Result<String, ForgeError>>),
}

/// Sends one request downstream, under its server's timeout. Called once,
/// after every step before it has passed.
pub type SendRequest = Box<dyn FnOnce() -> BoxFuture<Result<Value, ForgeError>> + Send>;

/// What [`Servers::route`] found for a call.
pub enum Route {
    /// The tool exists, but its server's tool policy refuses it, for this
    /// reason: the policy step turns it into `POLICY_DENIED`.
    Denied(String),
    /// A target the call may go to.
    To {
        /// The server's own guards (group, rate, breaker, in-flight slots);
        /// `None` for a target without any, such as in-process tools.
        guards: Option<Arc<Guards>>,
        /// The request.
        send: SendRequest,
    },
    /// A target the call may go to once the person approves it: the
    /// policy step asks (see [`crate::relay::approve`]).
    Ask {
        /// Why it needs approval, in the policy's words.
        why: String,
        /// The arguments, redacted, as JSON text, to show the person.
        args: String,
        /// As for [`Route::To`].
        guards: Option<Arc<Guards>>,
        /// As for [`Route::To`].
        send: SendRequest,
    },
}

/// What a call is aimed at, for [`Servers::route`].
#[derive(Debug)]
pub enum Target<'a> {
    /// A tool and its (already admitted) arguments.
    Tool {
        /// The server's name.
        server: &'a str,
        /// The tool's name.
        tool: &'a str,
        /// The arguments; they move into the route's [`SendRequest`].
        args: serde_json::Map<String, Value>,
    },
    /// A resource.
    Resource {
        /// The server's name.
        server: &'a str,
        /// The resource's URI.
        uri: &'a str,
    },
}

/// The servers behind the pipeline: the gateway's live sessions, or a
/// test's in-process tools. Implements the route step.
pub trait Servers: Send + Sync + 'static {
    /// Finds `target`, or says why there is none: `SERVER_NOT_FOUND` or
    /// `TOOL_NOT_FOUND` with did-you-mean, `INVALID_ARGUMENTS` when the
    /// arguments fail the tool's `inputSchema`, `SERVER_UNAVAILABLE` when
    /// the server has no live session.
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError>;

    /// The strict group `server` is in, if any: what the execution may read
    /// of it in the manifest narrows with the group lock (see [`visibility`]).
    fn strict_group(&self, server: &str) -> Option<Arc<str>> {
        let _ = server;
        None
    }
}

/// The servers of a gateway with none configured: every call fails with
/// `SERVER_NOT_FOUND`, the manifest is empty.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoServers;

impl Servers for NoServers {
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
        let (Target::Tool { server, .. } | Target::Resource { server, .. }) = target;
        Err(ForgeError::server_not_found(server))
    }
}

impl ManifestView for NoServers {
    fn servers(&self) -> Value {
        Value::Array(vec![])
    }

    fn search(
        &self,
        _query: &crate::manifest::Query,
        _limit: usize,
        _visible: &dyn Fn(&str) -> bool,
    ) -> Value {
        Value::Array(vec![])
    }

    fn tool(&self, server: &str, _name: &str) -> Result<Value, ForgeError> {
        Err(ForgeError::server_not_found(server))
    }
}

/// What one execution can reach, fresh for every execution.
#[derive(Clone)]
pub struct ExecutionContext {
    /// The servers tool calls and resource reads go to.
    pub servers: Arc<dyn Servers>,
    /// Answers `manifest.*`.
    pub manifest: Arc<dyn ManifestView>,
    /// The client session's stash.
    pub stash: Arc<Stash>,
    /// Where every operation is recorded for the audit log (see
    /// [`crate::audit`]); `None` records nothing, at no cost. Shared, so
    /// the operations are there even if the execution is cancelled.
    pub audit: Option<SharedTrail>,
    /// The execution's deadline: started by the sandbox when it has a
    /// slot, paused while the execution waits on its client.
    pub deadline: Arc<Deadline>,
    /// The client that started the execution, for what downstream servers
    /// send back during its calls and for approvals; `None` for executions
    /// without an MCP client (`quickforge run`, tests).
    pub upstream: Option<Arc<Upstream>>,
}

impl ExecutionContext {
    /// `self`, for an execution started by `upstream`'s client, on its
    /// deadline.
    pub fn for_upstream(mut self, upstream: Arc<Upstream>) -> ExecutionContext {
        self.deadline = upstream.deadline().clone();
        self.upstream = Some(upstream);
        self
    }
}

impl Default for ExecutionContext {
    /// No downstream servers, a fresh, private stash, no client.
    fn default() -> Self {
        ExecutionContext {
            servers: Arc::new(NoServers),
            manifest: Arc::new(NoServers),
            stash: Arc::default(),
            audit: None,
            deadline: Arc::default(),
            upstream: None,
        }
    }
}

/// The limits the pipeline enforces for one execution (from `[sandbox]`).
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// `max_tool_calls`: tool calls and resource reads per execution.
    pub max_calls: u32,
    /// `max_args_size`: bytes of JSON arguments per tool call.
    pub max_args_size: usize,
    /// `[sandbox.stash] max_calls`: stash operations per execution; `None`
    /// counts none.
    pub max_stash_calls: Option<u32>,
}

/// The pipeline of one execution: its context, and the state its steps
/// keep (the call count, the strict-group lock).
pub struct Pipeline {
    cx: ExecutionContext,
    mode: Mode,
    limits: CallLimits,
    /// Calls counted against `max_calls`; also the id of the last one.
    calls: u32,
    /// Whether a call was refused for `max_calls`.
    budget_spent: bool,
    /// Stash operations admitted, counted against `max_stash_calls`.
    stash_calls: u32,
    lock: GroupLock,
}

impl Pipeline {
    /// The pipeline of one execution in `mode`.
    pub fn new(mode: Mode, limits: CallLimits, cx: ExecutionContext) -> Pipeline {
        Pipeline {
            cx,
            mode,
            limits,
            calls: 0,
            budget_spent: false,
            stash_calls: 0,
            lock: GroupLock::default(),
        }
    }

    /// The client side of the execution, if an MCP client started it.
    pub fn upstream(&self) -> Option<&Arc<Upstream>> {
        self.cx.upstream.as_ref()
    }

    /// Tool calls and resource reads started (counted against the budget).
    pub fn operations(&self) -> u32 {
        self.calls
    }

    /// Whether a call or a stash operation was refused because its budget
    /// was spent (either ends an uncaught run as `tool_call_budget`), so that a
    /// script's own `ForgeError("TOOL_CALL_BUDGET")` is not mistaken for one.
    pub fn budget_spent(&self) -> bool {
        self.budget_spent
    }

    /// Starts `op` through every step, the audit record around them all.
    pub fn start(&mut self, op: Op<'_>) -> Result<Started, ForgeError> {
        let Some(trail) = self.cx.audit.clone() else {
            return self.steps_unwinding(op);
        };
        let before = audit::Before::of(&op);
        let args_json = match &op {
            Op::CallTool { args_json, .. } => *args_json,
            _ => "",
        };
        let result = self.steps_unwinding(op);
        audit::record(&trail, before, args_json, self.lock.current(), result)
    }

    /// [`Pipeline::steps`], with a panic inside them (a `Servers` or schema
    /// bug) failing this operation alone, as `INTERNAL`.
    fn steps_unwinding(&mut self, op: Op<'_>) -> Result<Started, ForgeError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.steps(op)))
            .unwrap_or_else(|_| Err(panicked(self.calls + 1)))
    }

    /// Every step under audit, in the order the module doc lists.
    fn steps(&mut self, op: Op<'_>) -> Result<Started, ForgeError> {
        admit::mode(self.mode, op.api())?;
        match op {
            Op::CallTool {
                server,
                tool,
                args_json,
            } => {
                admit::name("server name", server)?;
                admit::name("tool name", tool)?;
                let args = admit::args(server, tool, args_json, self.limits.max_args_size)?;
                let route = self.cx.servers.route(Target::Tool { server, tool, args })?;
                self.call(server, Some(tool), route)
            }
            Op::ReadResource { server, uri } => {
                admit::name("server name", server)?;
                admit::name("resource URI", uri)?;
                let route = self.cx.servers.route(Target::Resource { server, uri })?;
                self.call(server, None, route)
            }
            op => {
                // budget: Forgemax's per-execution limit on stash operations.
                if let Some(max) = self.limits.max_stash_calls {
                    if self.stash_calls >= max {
                        // Spent like the call budget: uncaught, it ends the
                        // run as `tool_call_budget`, as a call refusal does.
                        self.budget_spent = true;
                        return Err(ForgeError::new(
                            ErrorCode::ToolCallBudget,
                            format!("this execution already made its limit of {max} stash operations (sandbox.stash.max_calls)"),
                        )
                        .suggest("keep intermediate data in a variable, or store one object under one key"));
                    }
                    self.stash_calls += 1;
                }
                // policy: the stash space the strict-group lock selects.
                let space = self.lock.current();
                let store = self.cx.stash.clone();
                let reply: BoxFuture<Result<Reply, ForgeError>> = match op {
                    Op::StashPut {
                        key,
                        value_json,
                        ttl,
                    } => {
                        let key = key.to_owned();
                        Box::pin(async move {
                            store
                                .put(space.as_ref(), &key, value_json, ttl)
                                .await
                                .map(|()| Reply::Stored)
                        })
                    }
                    Op::StashGet { key } => {
                        let key = key.to_owned();
                        Box::pin(
                            async move { store.get(space.as_ref(), &key).await.map(Reply::Value) },
                        )
                    }
                    Op::StashDelete { key } => {
                        let key = key.to_owned();
                        Box::pin(async move {
                            store.delete(space.as_ref(), &key).await.map(Reply::Deleted)
                        })
                    }
                    Op::StashKeys => {
                        Box::pin(async move { store.keys(space.as_ref()).await.map(Reply::Keys) })
                    }
                    Op::CallTool { .. } | Op::ReadResource { .. } => unreachable!("matched above"),
                };
                Ok(Started::Stash(reply))
            }
        }
    }

    /// The steps of a routed call: policy, budget, then the guards.
    fn call(
        &mut self,
        server: &str,
        tool: Option<&str>,
        route: Route,
    ) -> Result<Started, ForgeError> {
        // policy
        let (guards, send, ask) = match route {
            Route::To { guards, send } => (guards, send, None),
            Route::Ask {
                why,
                args,
                guards,
                send,
            } => (guards, send, Some((why, args))),
            Route::Denied(why) => {
                let what = match tool {
                    Some(tool) => format!("{server}.{tool}"),
                    None => server.to_string(),
                };
                return Err(crate::policy::denied(&what, &why));
            }
        };
        if let Some(guards) = &guards {
            self.lock.enter(server, guards.group.as_ref())?;
        }
        // budget
        if self.calls >= self.limits.max_calls {
            self.budget_spent = true;
            return Err(ForgeError::call_budget(self.limits.max_calls));
        }
        self.calls += 1;
        let id = self.calls;
        // (approval,) rate limit, breaker, then (running) in-flight,
        // timeout, downstream. A counted call has an id: a refusal from here
        // on is its outcome.
        let running = match ask {
            None => {
                guard::run(guards, send).unwrap_or_else(|refused| Box::pin(async { Err(refused) }))
            }
            Some((why, args)) => {
                let upstream = self.cx.upstream.clone();
                let (server, tool) = (server.to_string(), tool.unwrap_or_default().to_string());
                Box::pin(async move {
                    let question = crate::relay::approve::Question {
                        server: &server,
                        tool: &tool,
                        why: &why,
                        args: &args,
                    };
                    crate::relay::approve::approve(upstream.as_deref(), question).await?;
                    guard::run(guards, send)?.await
                })
            }
        };
        Ok(Started::Running(id, encoded(id, running)))
    }
}

/// `running`'s value as the JSON text the guest parses. A panic inside it
/// fails call `id` alone.
fn encoded(
    id: u32,
    running: BoxFuture<Result<Value, ForgeError>>,
) -> BoxFuture<Result<String, ForgeError>> {
    use futures_util::FutureExt as _;
    Box::pin(async move {
        let value = match std::panic::AssertUnwindSafe(running).catch_unwind().await {
            Ok(result) => result?,
            Err(_panic) => return Err(panicked(id)),
        };
        serde_json::to_string(&value).map_err(|e| {
            ForgeError::new(
                ErrorCode::Internal,
                format!("could not encode the result: {e}"),
            )
        })
    })
}

/// Logs a panic inside operation `id` (or the one that would have had it)
/// and returns the error the script sees for it.
fn panicked(id: u32) -> ForgeError {
    tracing::error!(call = id, "a downstream operation panicked");
    ForgeError::new(
        ErrorCode::Internal,
        "the operation failed unexpectedly inside quickforge",
    )
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::time::Duration;

    use super::*;
    use crate::policy::RateLimit;

    /// One server whose guards allow one call a minute; every call answers
    /// `true` at once.
    struct OneAMinute(Arc<Guards>);

    impl Servers for OneAMinute {
        fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
            if let Target::Tool { tool: "panic", .. } = target {
                panic!("a route step that breaks");
            }
            Ok(Route::To {
                guards: Some(self.0.clone()),
                send: Box::new(|| Box::pin(async { Ok(Value::Bool(true)) })),
            })
        }
    }

    fn pipeline(trail: Option<SharedTrail>) -> Pipeline {
        let guards = Guards {
            group: None,
            rate: Some(RateLimit::new(NonZeroU32::MIN, "test")),
            breaker: breaker::Breaker::new("s", true, 3, Duration::from_secs(10)),
            in_flight: tokio::sync::Semaphore::new(1),
        };
        let cx = ExecutionContext {
            servers: Arc::new(OneAMinute(Arc::new(guards))),
            audit: trail,
            ..ExecutionContext::default()
        };
        let limits = CallLimits {
            max_calls: 10,
            max_args_size: 1024,
            max_stash_calls: None,
        };
        Pipeline::new(Mode::Execute, limits, cx)
    }

    fn call(tool: &str) -> Op<'_> {
        Op::CallTool {
            server: "s",
            tool,
            args_json: "{}",
        }
    }

    /// A call past the budget step counts, and a refusal after it (here the
    /// rate limit) is that call's outcome, through its id, as the audit
    /// trail records it: the count and the trail agree.
    #[tokio::test]
    async fn refusals_after_the_budget_arrive_through_the_call_id() {
        let trail: SharedTrail =
            Arc::new(std::sync::Mutex::new(crate::audit::trail::Trail::new(10)));
        let mut p = pipeline(Some(trail.clone()));
        for (want_id, want) in [(1, Ok("true".to_string())), (2, Err("RATE_LIMITED"))] {
            let Ok(Started::Running(id, running)) = p.start(call("t")) else {
                panic!("a call past the budget step runs")
            };
            assert_eq!(id, want_id);
            let got = running.await.map_err(|e| e.code.to_string());
            assert_eq!(got, want.map_err(String::from));
        }
        assert_eq!(p.operations(), 2);
        let (ops, _) = crate::audit::trail::lock(&trail).snapshot();
        let codes: Vec<_> = ops.iter().map(|o| o.error_code.clone()).collect();
        assert_eq!(codes, [None, Some("RATE_LIMITED".to_string())]);
    }

    /// A panic inside a step fails that operation alone, as `INTERNAL`,
    /// and the audit trail still records it.
    #[tokio::test]
    async fn a_panicking_step_is_an_audited_internal_error() {
        let trail: SharedTrail =
            Arc::new(std::sync::Mutex::new(crate::audit::trail::Trail::new(10)));
        let mut p = pipeline(Some(trail.clone()));
        let Err(e) = p.start(call("panic")) else {
            panic!("the panic is an error")
        };
        assert!(e.code.is(ErrorCode::Internal), "{e:?}");
        assert!(matches!(p.start(call("t")), Ok(Started::Running(1, _))));
        let (ops, _) = crate::audit::trail::lock(&trail).snapshot();
        assert_eq!(ops[0].error_code.as_deref(), Some("INTERNAL"));
        assert_eq!(ops.len(), 2);
    }
}
