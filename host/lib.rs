//! quickforge: an MCP gateway that shows its client two tools, `search` and
//! `execute`, and runs the JavaScript they carry in QuickJS compiled to a
//! WebAssembly component, inside Wasmtime, under hard limits.
//!
//! - [`sandbox`] — the engine, the guest component and one execution;
//! - [`gateway`] — downstream sessions, the live manifest, routing;
//! - [`manifest`] — the model scripts query, search, TypeScript rendering;
//! - [`call`] — the one pipeline every tool call, resource read and stash
//!   operation passes, in a written order;
//! - [`stash`] — the per-session key-value store;
//! - [`policy`] — tool policy, strict server groups, rate limits;
//! - [`redact`] — secrets out of every error text and log line;
//! - [`audit`] — one JSON line per execution, for investigation;
//! - [`config`] — forge.toml;
//! - [`error`] — the typed failures;
//! - [`suggest`] — did-you-mean for misspelled names;
//! - [`server`] — the MCP server: search, execute, instructions;
//! - [`tokens`] — the context cost, counted;
//! - [`validate`] — the static check of a script before it runs;
//! - [`cli`] — the `quickforge` command.

pub mod audit;
pub mod call;
pub mod cli;
pub mod config;
pub mod error;
pub mod gateway;
mod guest_json;
pub mod manifest;
pub mod policy;
pub mod redact;
pub mod sandbox;
pub mod server;
pub mod stash;
pub mod stdio;
pub mod suggest;
pub mod tokens;
pub mod validate;

pub use call::{BoxFuture, ExecutionContext, Mode, NoServers, Route, Servers, Target};
pub use config::{Config, ConfigError};
pub use error::{Code, ErrorCode, ErrorKind, ExecutionError, ForgeError};
pub use manifest::ManifestView;
pub use sandbox::{CacheDir, LogLevel, LogLine, Report, Sandbox, SandboxLimits, Stats};
pub use stash::{Stash, StashLimits};
