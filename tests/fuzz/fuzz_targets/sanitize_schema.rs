//! Schema sanitization on arbitrary JSON: it never panics, and every string
//! a model reads as prose is clean (see `assert_clean`). Bytes that are not
//! JSON become the description and a property title of a small schema, so
//! every input reaches the walk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::sanitize::clean_schema;
use quickforge_fuzz::assert_clean;
use serde_json::{Value, json};

/// Keys whose string values are prose for the model. With `pending`, also
/// the ones issue 16 (item 5) says the sanitizer skips today.
fn prose(key: &str) -> bool {
    matches!(key, "description" | "title")
        || (cfg!(feature = "pending")
            && (matches!(
                key,
                "$comment" | "default" | "examples" | "deprecationMessage"
            ) || key.starts_with("x-")))
}

/// Checks every string under a prose key (inside arrays too).
fn check(value: &Value, under_prose: bool) {
    match value {
        Value::String(s) if under_prose => assert_clean(s),
        Value::Array(items) => items.iter().for_each(|v| check(v, under_prose)),
        Value::Object(map) => map.iter().for_each(|(k, v)| check(v, prose(k))),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut schema = serde_json::from_slice::<Value>(data).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(data);
        json!({
            "type": "object",
            "description": text,
            "properties": { "p": { "type": "string", "title": text } }
        })
    });
    clean_schema(&mut schema);
    check(&schema, false);
});
