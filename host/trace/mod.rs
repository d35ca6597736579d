//! W3C Trace Context through an execution: the `traceparent` (and
//! `tracestate`) an `execute` or `search` request carries in its `_meta`
//! (the key MCP reserves for it, SEP-414), or a fresh trace when it carries
//! none, held for the execution's task; one tracing span per execution and
//! per downstream call; each downstream `tools/call` carries the trace on
//! in its own `_meta`, with the call's own span id as the parent; the
//! trace id goes into the audit line.
//!
//! The context lives in a tokio task-local set around the execution: the
//! script's calls are routed, sent and awaited on the task serving the
//! request (see `server::call_tool`), so every call finds it there without
//! the call pipeline carrying it step by step.
//!
//! The `traceparent` parser is written here: the one in the Rust
//! OpenTelemetry crates is the SDK's `TraceContextPropagator`, which would
//! bring the SDK into the default build, and the header is four fixed-width
//! hex fields (W3C Trace Context, level 1, §3.2) whose rules fit in one
//! function, tested against the specification's examples below.

pub mod otel;

use std::future::Future;

use tracing::Instrument as _;

/// Longest `tracestate` passed on, in bytes. The specification asks that at
/// least 512 bytes be propagated; a longer one (or one with characters it
/// does not allow) is dropped whole rather than cut, as the trace id alone
/// still joins the spans.
pub const MAX_TRACESTATE_BYTES: usize = 512;

/// The trace one execution belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 16 bytes, never all zero.
    pub trace_id: [u8; 16],
    /// The span of the client's that made the request, when it sent one.
    pub parent_id: Option<[u8; 8]>,
    /// This execution's own span id.
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled), as received, or sampled when a
    /// trace exporter is on for a fresh trace.
    pub flags: u8,
    /// The vendor state, passed on unchanged.
    pub state: Option<String>,
}

tokio::task_local! {
    static CURRENT: TraceContext;
}

fn random<const N: usize>() -> [u8; N] {
    loop {
        let mut id = [0u8; N];
        // Without the OS random source, a fixed id: a trace that does not
        // join is not worth failing an execution over.
        if getrandom::fill(&mut id).is_err() {
            id[N - 1] = 1;
        }
        if id.iter().any(|&b| b != 0) {
            return id;
        }
    }
}

/// Parses a `traceparent` value: `version-traceid-parentid-flags`. `None`
/// for anything the specification says to ignore (then a fresh trace
/// starts).
pub fn parse_traceparent(value: &str) -> Option<([u8; 16], [u8; 8], u8)> {
    let value = value.trim();
    let lower_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let version = value.get(..2)?;
    if !lower_hex(version) || version == "ff" {
        return None;
    }
    // Version 00 is exactly 55 characters; a later version may append
    // fields after a dash, which a version-00 parser ignores (§4.3).
    let head = match (version, value.len()) {
        ("00", 55) => value,
        ("00", _) => return None,
        (_, 55) => value,
        (_, n) if n > 55 && value.as_bytes()[55] == b'-' => &value[..55],
        _ => return None,
    };
    let mut parts = head.split('-');
    let (_, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if trace.len() != 32 || parent.len() != 16 || flags.len() != 2 {
        return None;
    }
    if !lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags) {
        return None;
    }
    let mut trace_id = [0u8; 16];
    let mut parent_id = [0u8; 8];
    hex::decode_to_slice(trace, &mut trace_id).ok()?;
    hex::decode_to_slice(parent, &mut parent_id).ok()?;
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some((trace_id, parent_id, flags))
}

/// Whether `state` may be passed on: at most [`MAX_TRACESTATE_BYTES`],
/// printable ASCII (what the specification's list members are made of).
fn valid_tracestate(state: &str) -> bool {
    !state.is_empty()
        && state.len() <= MAX_TRACESTATE_BYTES
        && state.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

impl TraceContext {
    /// The context of a request whose `_meta` is `meta`: the client's trace
    /// when it sent a valid `traceparent`, else a fresh one. `sampled` is
    /// the flag a fresh trace gets (set when spans are exported).
    pub fn from_meta(meta: &rmcp::model::MetaObject, sampled: bool) -> TraceContext {
        match meta.get_traceparent().and_then(parse_traceparent) {
            Some((trace_id, parent_id, flags)) => TraceContext {
                trace_id,
                parent_id: Some(parent_id),
                span_id: random(),
                flags,
                state: meta
                    .get_tracestate()
                    .filter(|s| valid_tracestate(s))
                    .map(str::to_owned),
            },
            None => TraceContext {
                trace_id: random(),
                parent_id: None,
                span_id: random(),
                flags: u8::from(sampled),
                state: None,
            },
        }
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// The `traceparent` of a request made from span `span_id` of this
    /// trace.
    fn traceparent(&self, span_id: [u8; 8]) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex::encode(self.trace_id),
            hex::encode(span_id),
            self.flags
        )
    }
}

/// Runs `execution` (one `search`, `execute` or direct tool call) in `cx`'s trace, inside a
/// span of its own named `execution`.
pub async fn scope<F: Future>(
    cx: TraceContext,
    mode: quickforge_core::execution::Mode,
    execution: F,
) -> F::Output {
    let mode = mode.as_str();
    let span = tracing::info_span!(
        "execution",
        mode,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
        parent_id = cx.parent_id.map(hex::encode),
    );
    let mut cx = cx;
    let parent = cx.parent_id.map(|span_id| otel::Remote {
        trace_id: cx.trace_id,
        span_id,
        flags: cx.flags,
        state: cx.state.as_deref(),
    });
    if let Some((trace_id, span_id)) = otel::adopt(&span, parent) {
        cx.trace_id = trace_id;
        cx.span_id = span_id;
    }
    span.record("trace_id", cx.trace_id_hex());
    span.record("span_id", hex::encode(cx.span_id));
    CURRENT.scope(cx, execution.instrument(span)).await
}

/// The trace id of the execution running on this task, if any.
pub fn current_trace_id() -> Option<String> {
    CURRENT.try_with(TraceContext::trace_id_hex).ok()
}

/// The span of one downstream call of the execution on this task.
pub fn call_span(server: &str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        "tool_call",
        server,
        tool,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty
    )
}

/// `params` with the trace of the execution on this task passed on in
/// its `_meta`: `traceparent` naming the current call's span as the parent,
/// and `tracestate` unchanged. Unchanged outside an execution.
pub fn inject(
    mut params: rmcp::model::CallToolRequestParams,
) -> rmcp::model::CallToolRequestParams {
    let Ok((traceparent, state)) = CURRENT.try_with(|cx| {
        let span = tracing::Span::current();
        let span_id = otel::span_id(&span).unwrap_or_else(random);
        span.record("trace_id", cx.trace_id_hex());
        span.record("span_id", hex::encode(span_id));
        (cx.traceparent(span_id), cx.state.clone())
    }) else {
        return params;
    };
    let meta = params.meta.get_or_insert_with(Default::default);
    meta.0.set_traceparent(traceparent);
    if let Some(state) = state {
        meta.0.set_tracestate(state);
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specification_examples_parse_and_bad_ones_do_not() {
        let (trace, parent, flags) =
            parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").unwrap();
        assert_eq!(hex::encode(trace), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(hex::encode(parent), "b7ad6b7169203331");
        assert_eq!(flags, 1);
        // A later version may append fields.
        assert!(
            parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra")
                .is_some()
        );
        for bad in [
            "",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-001",
            "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_request_without_a_trace_starts_one_and_a_bad_tracestate_is_dropped() {
        let fresh = TraceContext::from_meta(&rmcp::model::MetaObject::new(), false);
        assert_eq!(fresh.parent_id, None);
        assert_ne!(fresh.trace_id, [0; 16]);
        assert_eq!(fresh.flags, 0);
        let mut meta = rmcp::model::MetaObject::new();
        meta.set_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        meta.set_tracestate("x".repeat(MAX_TRACESTATE_BYTES + 1));
        let joined = TraceContext::from_meta(&meta, false);
        assert_eq!(joined.trace_id_hex(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(joined.state, None);
        let child = joined.traceparent(joined.span_id);
        assert!(
            child.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
            "{child}"
        );
        assert!(!child.contains("b7ad6b7169203331"), "{child}");
    }
}
