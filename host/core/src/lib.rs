//! quickforge's call vocabulary, kept free of the gateway (no rmcp, no
//! Wasmtime, no async) so that the native gateway and the edge provider
//! (`edge/provider`, `wasm32-wasip2`) fail with the same codes, and in the
//! same words wherever both call one constructor here:
//!
//! - [`error`] — [`ForgeError`], the failure of one `forge.*` operation, and
//!   the constructors both gateways share (an unknown server, a call past
//!   its deadline);
//! - [`code`] — [`ErrorCode`], the one vocabulary of codes;
//! - [`convert`] — a downstream result as a script sees it, and a
//!   downstream JSON-RPC error as a `ForgeError`;
//! - [`shown`] — redaction where a text leaves: towards the script, the
//!   client and the audit log, once each, by a [`shown::Redactor`];
//! - [`execution`] — what one execution is and ends in: [`Mode`],
//!   [`Report`], [`ExecutionError`] and its [`ErrorKind`];
//! - [`answer`] — a report as the MCP tool result its client reads, the
//!   one shaper of both gateways;
//! - [`limits`] — limits of one run both gateways enforce (timers, logs);
//! - [`stash`] — the rules of one stash (key, value size, TTL, caps) and
//!   their refusals, which every stash backend applies.

pub mod answer;
pub mod code;
pub mod convert;
pub mod error;
pub mod execution;
pub mod limits;
pub mod shown;
pub mod stash;

pub use code::{Code, ErrorCode};
pub use error::{ForgeError, preview};
pub use execution::{ErrorKind, ExecutionError, LogLevel, LogLine, Mode, Report, Stats};
