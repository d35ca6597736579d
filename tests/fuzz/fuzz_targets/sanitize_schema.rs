//! Schema sanitization on arbitrary JSON: it never panics, and every string
//! of the result, keys included, is clean (see `assert_clean`). Bytes that are not
//! JSON become the description and a property title of a small schema, so
//! every input reaches the walk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::sanitize::clean_schema;
use quickforge_fuzz::assert_clean;
use serde_json::{Value, json};

/// Checks every string of the schema, keys and values, at any depth: the
/// sanitizer walks them all, since a model reads them all.
fn check(value: &Value) {
    match value {
        Value::String(s) => assert_clean(s),
        Value::Array(items) => items.iter().for_each(check),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            assert_clean(k);
            check(v);
        }),
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
    check(&schema);
});
