//! Operations: Prometheus metrics (`/metrics`), the log's format, and the
//! settings that say where they are served.
//!
//! The metrics learn what executions and their tool calls did from one
//! place, the audit record of each execution ([`crate::audit::Observer`]),
//! rather than from counters spread over the call pipeline; what is a state
//! rather than an event (breakers, calls in flight, the stash's size,
//! reconnects) is read from the gateway when `/metrics` is scraped.

mod metrics;

pub use crate::trace::otel::{exporting, shutdown as otel_shutdown};
pub use metrics::{Metrics, Scrape};
