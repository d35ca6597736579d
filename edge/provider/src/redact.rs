//! The native gateway's redaction, under the names `host/gateway/convert.rs`
//! expects (`crate::redact`), done by the redactor component (imported as
//! `quickforge:edge/redact`), which the composition pre-initialized: the
//! rule set is never compiled in a request. The JSON walk is the native
//! one (`redact_json_with`), run here, so only strings cross.

use serde_json::Value;

use crate::bindings::quickforge::edge::redact as redactor;

/// `text` redacted, then cut to at most `max` bytes.
pub fn redact_clip(text: &str, max: usize) -> String {
    redactor::redact_clip(text, u32::try_from(max).unwrap_or(u32::MAX))
}

/// Redacts a JSON error payload in place, as natively; whether anything
/// changed.
pub fn redact_json(value: &mut Value) -> bool {
    quickforge_filters::redact::redact_json_with(value, &redactor::redact)
}
