//! Operations: Prometheus metrics (`/metrics`), the log's format, and the
//! settings that say where they are served.
//!
//! The metrics learn what executions and their tool calls did from one
//! place, the audit record of each execution ([`crate::audit::Observer`]),
//! rather than from counters spread over the call pipeline; what is a state
//! rather than an event (breakers, calls in flight, the stash's size,
//! reconnects) is read from the gateway when `/metrics` is scraped.

mod metrics;
mod otel;
pub mod trace;

use std::net::SocketAddr;

use serde::Deserialize;

pub use metrics::{Metrics, Scrape};
pub use otel::exporting;

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
}

impl Default for ObservabilityConfig {
    fn default() -> Self {
        ObservabilityConfig {
            metrics: true,
            listen: None,
            allow_hosts: Vec::new(),
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
