//! quickforge: an MCP gateway that shows its client two tools, `search` and
//! `execute`, and runs the JavaScript they carry in QuickJS compiled to a
//! WebAssembly component, inside Wasmtime, under hard limits.
//!
//! The modules are private; what the binary, the tests and the benchmarks
//! use is re-exported below. The pure logic the edge gateway shares lives
//! in three crates beside this one: `quickforge-core` (the vocabulary of a
//! call and of an execution: codes, errors, reports, result conversion, the
//! stash's rules), `quickforge-catalog` (manifest search, argument checks,
//! TypeScript signatures, did-you-mean) and `quickforge-filters` (the
//! validator, redaction, sanitizing, `${VAR}` expansion).
//!
//! ## Layers
//!
//! Top to bottom: a module uses only modules on the layers below its own
//! (never its own layer's, never one above). `tests/all/layers.rs` reads
//! every `crate::` and `super::` path of the crate (test code left out)
//! and fails on one that points sideways or up.
//!
//! 1. `cli` — the composition root: the `quickforge` command, one file per
//!    subcommand ([`main`]); it reads the config and builds every room
//! 2. `config` — forge.toml, parsed strictly and validated ([`Config`]),
//!    then turned into each room's own settings
//! 3. `server` · `stdio` — the MCP server: the two tools, instructions,
//!    requests turned into jobs and reports into MCP results; answering
//!    every request read before stdin closes
//! 4. `execution` — one script (or direct call) from request to report, its
//!    steps in a written order; the executor, the runs/tasks table
//! 5. `session` — one client session: id, subject, default stash handle,
//!    slots; the cap, eviction, owners and stored records of HTTP sessions
//! 6. `observe` — Prometheus metrics, fed by the audit records
//! 7. `sandbox` · `gateway` — the engine, the guest and one instance
//!    ([`Sandbox`]); downstream sessions, supervision, the live manifest,
//!    the route step for live servers
//! 8. `call` — the one pipeline every tool call, resource read and stash
//!    operation passes, in a written order ([`Servers`] is its route step)
//! 9. `relay` — what downstream servers send during a script's calls,
//!    carried to the client whose execution made them; approvals
//! 10. `manifest` — the model scripts query, search, TypeScript rendering
//! 11. `policy` · `pins` — tool policy, strict server groups, rate limits;
//!     each tool's trusted hash and the changes since (tool pinning)
//! 12. `audit` — one JSON line per execution, for investigation
//! 13. `state` — the stash behind a handle-keyed store (memory, Redis),
//!     with the gateway's caps and one space per strict group
//! 14. `auth` — bearer tokens on HTTP (`[auth]`): opaque or JWT, the
//!     subject each request comes from, the protected resource metadata
//! 15. `trace` · `deadline` — W3C trace context through an execution, and
//!     span export; an execution's wall deadline, paused while it waits on
//!     a person or the client's model
//! 16. `error` · `guest_json` · `files` — the typed failures and the one
//!     vocabulary of codes (from `quickforge-core`); JSON text from the
//!     guest; writing a file without following a link in its own name

mod audit;
mod auth;
mod call;
mod cli;
mod config;
mod deadline;
mod error;
mod execution;
mod files;
mod gateway;
mod guest_json;
mod manifest;
mod observe;
mod pins;
mod policy;
mod relay;
mod sandbox;
mod server;
mod session;
mod state;
mod stdio;
use quickforge_catalog::suggest;
mod trace;

// The filters for untrusted text live in their own crate (no Wasmtime, so
// they fuzz small); the gateway names them as its own modules.
use quickforge_filters::{redact, validate};

pub use audit::Trail;
pub use call::{BoxFuture, ExecutionContext, Mode, NoServers, Route, SendRequest, Servers, Target};
pub use cli::count_tokens;
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
pub use validate::{Rejection, Rule, ValidatorLimits, validate};
