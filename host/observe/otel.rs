//! OpenTelemetry export of the execution and call spans, behind the cargo
//! feature `otel` (off by default, so the default build stays lean) and the
//! config key `[observability] otlp_endpoint`. Without the feature these
//! are no-ops and the trace context is still propagated (see `trace`).

use super::trace::TraceContext;

/// Whether spans are exported (a fresh trace is then marked sampled).
#[cfg(not(feature = "otel"))]
pub fn exporting() -> bool {
    false
}

/// Makes the client's span the remote parent of `span` when spans are
/// exported.
#[cfg(not(feature = "otel"))]
pub fn adopt(_span: &tracing::Span, _cx: &TraceContext) {}

/// The exported span id of `span`, when spans are exported.
#[cfg(not(feature = "otel"))]
pub fn span_id(_span: &tracing::Span) -> Option<[u8; 8]> {
    None
}
