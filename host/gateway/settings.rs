//! What the gateway is started with: every downstream server's settings
//! and the groups they form, parsed and checked from forge.toml by
//! `crate::config` (which builds [`GatewaySettings`] from them, as each
//! room owns its settings and the config only fills them in).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::policy::{Isolation, ToolPolicy};

/// Everything [`crate::gateway::Gateway::start`] needs.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// The downstream servers, in the order forge.toml lists them.
    pub servers: Vec<ServerConfig>,
    /// `[groups.NAME]`.
    pub groups: Vec<GroupConfig>,
    /// What downstream servers may send back during calls, and its bounds.
    pub relay: crate::relay::RelayLimits,
    /// Servers started at once (`startup_concurrency`).
    pub startup_concurrency: usize,
    /// How often every server's tools are listed again; `None`: never.
    pub refresh_interval: Option<Duration>,
    /// Where each tool's trusted version is recorded (see [`crate::pins`]).
    pub pins: crate::pins::Pins,
}

/// Environment variables a stdio server inherits from the gateway. Nothing
/// else of the gateway's environment (which may hold every secret of the
/// user's shell) reaches a child; give a server what it needs with `env`.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TMPDIR",
    "TZ",
    // Windows needs these to start most programs at all.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "TEMP",
    "TMP",
];

/// One downstream MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name: the first argument of `forge.callTool`.
    pub name: String,
    /// What it is for, shown in `manifest.servers`.
    pub description: Option<String>,
    /// How to reach it.
    pub transport: Transport,
    /// Longest wait for one call's answer.
    pub timeout: Duration,
    /// Whether failures open a circuit breaker.
    pub circuit_breaker: bool,
    /// Consecutive failures that open the breaker.
    pub failure_threshold: u32,
    /// How long an open breaker waits before a probe.
    pub recovery_timeout: Duration,
    /// Calls in flight at once; more wait for a slot.
    pub max_in_flight: u32,
    /// Largest message accepted from the server, bytes.
    pub max_response_bytes: usize,
    /// Which tools may be called: `allow` and `deny` globs (deny wins), and
    /// `allow_destructive` for tools annotated `destructiveHint: true`.
    pub policy: ToolPolicy,
    /// Calls a minute to this server, across all executions; `None`: no
    /// limit.
    pub calls_per_minute: Option<std::num::NonZeroU32>,
    /// `sampling`: whether the server may ask the client's model for a
    /// completion (`sampling/createMessage`) through quickforge. On by
    /// default, as a client connected directly would allow it; the client
    /// still shows each request to its person. Off, the server gets the
    /// specification's error: sampling spends the user's tokens.
    pub sampling: bool,
    /// `roots`: the roots (URIs) the server sees in `roots/list` when no
    /// client can be asked (over HTTP with several clients, outside any
    /// call). Empty by default.
    pub roots: Vec<String>,
    /// `reconnect`: whether a server whose session ended, or that could not
    /// be reached, is tried again (Forgemax's key). On by default: a
    /// gateway outlives its servers' restarts.
    pub reconnect: bool,
    /// `max_reconnect_backoff_secs`: the longest wait between two attempts
    /// to reach the server (Forgemax's key); `DEFAULT_RECONNECT_BACKOFF` (crate::config)
    /// by default.
    pub max_reconnect_backoff: Duration,
    /// `expose`: the tools also listed on quickforge's own `tools/list`
    /// as `NAME__tool` (`"direct"`: all; a list of globs: those; `"code"`,
    /// the default: none, they are reached through `execute` only).
    pub expose: crate::policy::Expose,
    /// `on_tool_change`: whether a tool changed since it was trusted is
    /// still callable (`"warn"`, the default) or refused until `quickforge
    /// trust` (`"quarantine"`); see [`crate::pins`].
    pub on_tool_change: crate::pins::OnToolChange,
}

/// How quickforge talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment: [`INHERITED_ENV`] from the gateway, then these.
        env: BTreeMap<String, String>,
        /// Its working directory; `None` inherits the gateway's.
        cwd: Option<PathBuf>,
    },
    /// A URL: streamable HTTP, falling back to legacy HTTP+SSE as the MCP
    /// specification's backwards-compatibility rule describes.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// `[groups.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// The group's name.
    pub name: String,
    /// The servers in it, by name; a server is in at most one group.
    pub servers: Vec<String>,
    /// Whether the first call into it locks an execution to it (`strict`,
    /// the default) or the group is a label (`open`).
    pub isolation: Isolation,
}
