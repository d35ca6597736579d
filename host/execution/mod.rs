//! One execution, in one room: everything a `search` or `execute` script,
//! or one direct tool call, passes between the MCP request that asks for it
//! and the report that answers it.
//!
//! The steps, in order (each once; [`Executor::run_with`] and
//! [`Executor::audited`] in `run.rs`):
//!
//! 1. **audit line opened** — the arrival (session, subject, replica,
//!    stash, mode, code hash) and a trail every operation is recorded in;
//!    the line is written exactly once, when the run ends or its future is
//!    dropped (`cancelled`);
//! 2. **shutdown** — a closing gateway takes no new executions;
//! 3. **rate** — `max_executions_per_minute`, across sessions or per
//!    subject;
//! 4. **session share** — one of the session's
//!    `max_concurrent_per_session` slots, waiting at most `max_queue_wait`;
//! 5. **code size** — oversized code is refused by the sandbox without
//!    being parsed, so the validator never sees it;
//! 6. **validate** — the static check (`[sandbox] validate`);
//! 7. **context** — the manifest snapshot, the router over it, the stash,
//!    the trail and the client ([`Executor::context`]);
//! 8. **slot, deadline, sandbox** — one of the sandbox's `max_concurrent`
//!    slots, the pausable deadline, a fresh instance (`crate::sandbox`);
//! 9. **report** — the script's value or typed failure, its logs and
//!    counters (`quickforge_core::execution::Report`);
//! 10. **audit line written**.
//!
//! A direct tool call (`direct.rs`) passes steps 1, 2, 7 and 10 around one
//! call of the call pipeline, and no sandbox. Executions that outlive
//! their request (tasks, MRTR waits) are held in the run table (`tasks`).

mod direct;
mod executor;
mod run;
pub mod tasks;

pub use executor::{Executor, MAX_REPLICA_BYTES, default_replica};
