//! The native gateway's redaction and tool-metadata cleaning, done by the
//! redactor component (imported as `quickforge:edge/redact` and
//! `quickforge:edge/sanitize`), which the composition pre-initialized:
//! neither rule set is compiled in a request. The JSON walks are the native
//! ones (`Redactor::redact_json`'s default, `clean_schema_with`), run here,
//! so only strings cross.

use quickforge_core::shown::Redactor;

use quickforge_filters::sanitize::{Cleaned, Findings};

use crate::bindings::quickforge::edge::redact as redactor;
use crate::bindings::quickforge::edge::sanitize as sanitizer;

/// The redactor component, as `quickforge_core::shown` takes redaction.
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

/// `quickforge_filters::sanitize::clean_text`, by the redactor component.
pub fn clean_text(text: &str, max: usize) -> Cleaned {
    let (text, found) = sanitizer::clean_text(text, u32::try_from(max).unwrap_or(u32::MAX));
    Cleaned {
        text,
        found: Findings {
            instructions: found.instructions,
            hidden: found.hidden,
            cut: found.cut,
            dropped: found.dropped,
        },
    }
}
