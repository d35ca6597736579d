//! The native gateway's redaction, done by the redactor component (imported
//! as `quickforge:edge/redact`), which the composition pre-initialized: the
//! rule set is never compiled in a request. The JSON walk is the native one
//! (`Redactor::redact_json`'s default), run here, so only strings cross.

use quickforge_core::convert::Redactor;

use crate::bindings::quickforge::edge::redact as redactor;

/// The redactor component, as `quickforge_core::convert` takes redaction.
pub struct Edge;

impl Redactor for Edge {
    fn redact(&self, text: &str) -> Option<String> {
        redactor::redact(text)
    }

    fn redact_clip(&self, text: &str, max: usize) -> String {
        redact_clip(text, max)
    }
}

/// `text` redacted, then cut to at most `max` bytes.
pub fn redact_clip(text: &str, max: usize) -> String {
    redactor::redact_clip(text, u32::try_from(max).unwrap_or(u32::MAX))
}
