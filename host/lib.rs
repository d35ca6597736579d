//! quickforge: an MCP gateway that shows its client two tools, `search` and
//! `execute`, and runs the JavaScript they carry in QuickJS compiled to a
//! WebAssembly component, inside Wasmtime, under hard limits.
//!
//! - [`sandbox`] — the engine, the guest component and one execution;
//! - [`dispatch`] — what scripts reach (tool calls, resources, manifest);
//! - [`stash`] — the per-session key-value store;
//! - [`config`] — forge.toml;
//! - [`error`] — the typed failures;
//! - [`cli`] — the `quickforge` command.

pub mod cli;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod sandbox;
pub mod stash;

pub use config::{Config, ConfigError};
pub use dispatch::{BoxFuture, Dispatcher, ManifestView, NoServers};
pub use error::{ErrorKind, ExecutionError, ForgeError};
pub use sandbox::{
    CacheDir, ExecutionContext, LogLevel, LogLine, Mode, Report, Sandbox, SandboxLimits, Stats,
};
pub use stash::{Stash, StashLimits};
