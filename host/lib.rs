//! quickforge: an MCP gateway that shows its client two tools, `search` and
//! `execute`, and runs the JavaScript they carry in QuickJS compiled to a
//! WebAssembly component, inside Wasmtime, under hard limits.
//!
//! The modules, private; what the binary, the tests and the benchmarks use
//! is re-exported below.
//!
//! - `cli` — the `quickforge` command, one file per subcommand ([`main`]);
//! - `config` — forge.toml, parsed strictly and validated ([`Config`]);
//! - `server` — the MCP server: search, execute, instructions;
//!   `stdio` — answering every request read before stdin closes;
//! - `validate` — the static check of a script before it runs (from the
//!   `quickforge-filters` crate, with `redact`, `sanitize` and `expand`);
//! - `sandbox` — the engine, the guest component and one execution
//!   ([`Sandbox`]);
//! - `call` — the one pipeline every tool call, resource read and stash
//!   operation passes, in a written order ([`Servers`] is its route step);
//! - `gateway` — downstream sessions, supervision, the live manifest, the
//!   route step for live servers;
//! - `manifest` — the model scripts query, search, TypeScript rendering;
//! - `policy` — tool policy, strict server groups, rate limits;
//! - `relay` — what downstream servers send during a script's calls
//!   (progress, logs, elicitation, sampling, roots), carried to the client
//!   whose execution made them; approvals; the pausable deadline;
//! - `state` — the stash behind a handle-keyed store, with the gateway's
//!   caps and one space per strict group;
//! - `session` — one client session: its stash handle, its share of the
//!   execution slots, the cap on live sessions;
//! - `auth` — bearer tokens on HTTP (`[auth]`): opaque or JWT, the
//!   subject each request comes from, the protected resource metadata;
//! - `audit` — one JSON line per execution, for investigation;
//! - `observe` — Prometheus metrics (fed by the audit records), the log's
//!   format, trace context;
//! - `redact` — secrets out of every error text and log line;
//! - `error` — the typed failures and the one vocabulary of codes;
//! - `suggest` — did-you-mean for misspelled names;
//! - `tokens` — the context cost, counted;
//! - `guest_json` — JSON text from the guest.

mod audit;
mod auth;
mod call;
mod cli;
mod config;
mod error;
mod gateway;
mod guest_json;
mod manifest;
mod observe;
mod policy;
mod relay;
mod sandbox;
mod server;
mod session;
mod state;
mod stdio;
use quickforge_catalog::suggest;
mod tasks;
mod tokens;

// The filters for untrusted text live in their own crate (no Wasmtime, so
// they fuzz small); the gateway names them as its own modules.
use quickforge_filters::{redact, validate};

pub use audit::Trail;
pub use call::{BoxFuture, ExecutionContext, Mode, NoServers, Route, SendRequest, Servers, Target};
pub use cli::main;
pub use config::{Config, ConfigError, Isolation, Surface, Transport};
pub use error::{Code, ErrorCode, ErrorKind, ExecutionError, ForgeError};
pub use manifest::{ManifestView, Query};
pub use sandbox::{
    CacheDir, LogLevel, LogLine, Report, Sandbox, SandboxLimits, Stats, Tuning, json_len,
};
pub use server::{FORGE_D_TS, instructions};
pub use session::SessionLimits;
pub use state::Backend as StateBackend;
#[doc(hidden)]
pub use state::redis::testing::RedisServer;
pub use state::{
    At, Handle, MemoryStore, RedisStore, Stash, StashLimits, StateConfig, StateStore, Usage,
};
pub use tokens::count as count_tokens;
pub use validate::{Rejection, Rule, ValidatorLimits, validate};
