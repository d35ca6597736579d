//! OpenTelemetry export of the execution and call spans over OTLP/HTTP,
//! behind the cargo feature `otel` (off by default, so the default build
//! stays lean) and the config key `[observability] otlp_endpoint`. Without
//! the feature these are no-ops, and the trace context is still propagated
//! (see `trace`).
//!
//! With the feature, the `tracing-opentelemetry` layer is part of the
//! subscriber from the start (it must be: `tracing-subscriber`'s reload
//! layer does not let `OpenTelemetrySpanExt` reach a layer inside it), but
//! it sees spans only once an exporter is installed, when the config names
//! an endpoint; its tracer's one span processor forwards to that exporter's
//! batch processor, set late for the same reason.

/// A client's span, as its `traceparent` named it.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(feature = "otel"),
    expect(dead_code, reason = "read only by the span export")
)]
pub struct Remote<'a> {
    /// The trace.
    pub trace_id: [u8; 16],
    /// The client's span.
    pub span_id: [u8; 8],
    /// The trace flags.
    pub flags: u8,
    /// The `tracestate`, if any.
    pub state: Option<&'a str>,
}

#[cfg(not(feature = "otel"))]
mod off {
    use super::Remote;

    /// Whether spans are exported (a fresh trace is then marked sampled).
    pub fn exporting() -> bool {
        false
    }

    /// Makes the client's span `parent` the remote parent of `span` when
    /// spans are exported; the exported span's trace and span ids.
    pub fn adopt(
        _span: &tracing::Span,
        _parent: Option<Remote<'_>>,
    ) -> Option<([u8; 16], [u8; 8])> {
        None
    }

    /// The exported span id of `span`, when spans are exported.
    pub fn span_id(_span: &tracing::Span) -> Option<[u8; 8]> {
        None
    }

    /// The subscriber's layer for the export: none without the feature.
    pub fn layer()
    -> Option<Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>> {
        None
    }

    /// Starts exporting to `endpoint`: without the feature, says it cannot.
    pub fn install(_endpoint: &str) -> Result<(), String> {
        Err("this quickforge was built without the `otel` feature (cargo build --features otel); spans are not exported, trace context is still propagated".into())
    }

    /// Sends the spans still queued.
    pub fn shutdown() {}
}

#[cfg(not(feature = "otel"))]
pub use off::*;

#[cfg(feature = "otel")]
mod on {
    use std::sync::OnceLock;
    use std::time::Duration;

    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
        TracerProvider as _,
    };
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::{
        BatchSpanProcessor, SdkTracerProvider, SpanData, SpanProcessor,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    use tracing_subscriber::Layer as _;

    use super::Remote;

    /// The batch processor of the installed exporter.
    static EXPORT: OnceLock<BatchSpanProcessor> = OnceLock::new();
    /// The provider of the layer's tracer, kept to flush at exit.
    static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

    /// How long exit waits for the last spans to reach the collector.
    const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

    fn resource() -> Resource {
        Resource::builder().with_service_name("quickforge").build()
    }

    /// The tracer's one processor: the installed exporter's batch
    /// processor, once there is one; spans ended before are dropped.
    #[derive(Debug)]
    struct Late;

    impl SpanProcessor for Late {
        fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
            if let Some(p) = EXPORT.get() {
                p.on_start(span, cx);
            }
        }
        fn on_end(&self, span: SpanData) {
            if let Some(p) = EXPORT.get() {
                p.on_end(span);
            }
        }
        fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
            EXPORT.get().map_or(Ok(()), SpanProcessor::force_flush)
        }
        fn shutdown_with_timeout(
            &self,
            timeout: Duration,
        ) -> opentelemetry_sdk::error::OTelSdkResult {
            EXPORT
                .get()
                .map_or(Ok(()), |p| p.shutdown_with_timeout(timeout))
        }
    }

    /// Whether spans are exported (a fresh trace is then marked sampled).
    pub fn exporting() -> bool {
        EXPORT.get().is_some()
    }

    /// The `tracing-opentelemetry` layer, seeing spans only while
    /// [`exporting`].
    pub fn layer()
    -> Option<Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>> {
        let provider = PROVIDER.get_or_init(|| {
            SdkTracerProvider::builder()
                .with_span_processor(Late)
                .with_resource(resource())
                .build()
        });
        let tracer = provider.tracer("quickforge");
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(tracing_subscriber::filter::filter_fn(|_| exporting()))
                .boxed(),
        )
    }

    /// Starts exporting spans to the OTLP/HTTP `endpoint` (the full URL of
    /// the traces path, e.g. `http://127.0.0.1:4318/v1/traces`).
    pub fn install(endpoint: &str) -> Result<(), String> {
        use opentelemetry_otlp::WithExportConfig as _;
        // reqwest is built without a default TLS provider (see Cargo.toml).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .build()
            .map_err(|e| format!("could not set up the OTLP exporter for {endpoint}: {e}"))?;
        let mut batch = BatchSpanProcessor::builder(exporter).build();
        batch.set_resource(&resource());
        EXPORT
            .set(batch)
            .map_err(|_| "the OTLP exporter is already installed".to_string())
    }

    /// Sends the spans still queued, waiting at most [`SHUTDOWN_WAIT`].
    pub fn shutdown() {
        if let Some(p) = EXPORT.get() {
            let _ = p.force_flush();
            let _ = p.shutdown_with_timeout(SHUTDOWN_WAIT);
        }
    }

    /// Makes the client's span `parent` the remote parent of `span` when
    /// spans are exported; the exported span's trace and span ids (for a
    /// fresh trace, new ones), so the audit line and downstream requests
    /// name the exported trace.
    pub fn adopt(span: &tracing::Span, parent: Option<Remote<'_>>) -> Option<([u8; 16], [u8; 8])> {
        if !exporting() {
            return None;
        }
        if let Some(p) = parent {
            let state = p
                .state
                .and_then(|s| s.parse::<TraceState>().ok())
                .unwrap_or_default();
            let remote = SpanContext::new(
                TraceId::from_bytes(p.trace_id),
                SpanId::from_bytes(p.span_id),
                TraceFlags::new(p.flags),
                true,
                state,
            );
            let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
        }
        let context = span.context();
        let own = context.span().span_context().clone();
        own.is_valid()
            .then(|| (own.trace_id().to_bytes(), own.span_id().to_bytes()))
    }

    /// The exported span id of `span`, when spans are exported.
    pub fn span_id(span: &tracing::Span) -> Option<[u8; 8]> {
        if !exporting() {
            return None;
        }
        let context = span.context();
        let own = context.span().span_context().clone();
        own.is_valid().then(|| own.span_id().to_bytes())
    }
}

#[cfg(feature = "otel")]
pub use on::*;
