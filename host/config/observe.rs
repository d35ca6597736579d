//! `[observability]` and `[log]`: what `crate::observe` serves and how the
//! log is written. Here rather than in `observe`, which reads the gateway,
//! so that the config does not depend on what it configures.

use std::net::SocketAddr;

use serde::Deserialize;

/// `[observability]`: the metrics, and where they are served.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ObservabilityConfig {
    /// Whether `/metrics` is served (beside `/health` and `/ready` under
    /// `serve --http`, and on `listen`). Default on: the counters cost a
    /// few atomic additions per execution, and an endpoint nobody scrapes
    /// costs nothing.
    pub metrics: bool,
    /// A separate address serving `/metrics`, `/health` and `/ready`, for a
    /// gateway on stdio (which has no HTTP server of its own) or to keep
    /// them off the MCP port. `None` (the default): none.
    pub listen: Option<SocketAddr>,
    /// Host headers accepted on `listen` besides the loopback names, as
    /// `--allow-host` does for `--http` (DNS-rebinding protection). A
    /// `listen` address that is not loopback needs at least one.
    pub allow_hosts: Vec<String>,
    /// The OTLP/HTTP traces URL spans are exported to (e.g.
    /// `http://127.0.0.1:4318/v1/traces`), in a build with the `otel`
    /// feature. `None` (the default): no export; trace context is still
    /// propagated.
    pub otlp_endpoint: Option<String>,
}

impl Default for ObservabilityConfig {
    fn default() -> Self {
        ObservabilityConfig {
            metrics: true,
            listen: None,
            allow_hosts: Vec::new(),
            otlp_endpoint: None,
        }
    }
}

/// `[log]`: how the process's own log (on stderr) is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `text` (the default, for people) or `json` (one object a line, for
    /// log collectors). `--log-format` overrides it.
    pub format: LogFormat,
}

/// The log's format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}
