//! The native gateway's redaction, under the name `host/gateway/convert.rs`
//! expects (`crate::redact`).

pub use quickforge_filters::redact::{redact_clip, redact_json};
