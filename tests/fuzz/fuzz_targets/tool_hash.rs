//! A tool's integrity hash (`quickforge_filters::integrity`) on arbitrary
//! JSON: it never panics; the canonical JSON is a fixed point (parsed and
//! canonicalized again, it is the same bytes); and the hash does not move
//! with key order or whitespace, so a server that reorders its schema is
//! not reported as changed. Bytes that are not JSON become a tool's
//! description.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::integrity::{canonical, tool_hash};
use serde_json::{Map, Value, json};

/// `value` with every object's keys in reverse order (serde_json keeps
/// insertion order here: `preserve_order`).
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map.iter().rev() {
                out.insert(k.clone(), reversed(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    let value = serde_json::from_slice::<Value>(data).unwrap_or_else(|_| {
        json!({"name": "t", "description": String::from_utf8_lossy(data), "inputSchema": {"type": "object"}})
    });
    let bytes = canonical(&value);
    let text = std::str::from_utf8(&bytes).expect("canonical JSON is UTF-8");
    let again: Value = serde_json::from_str(text).expect("canonical JSON parses");
    assert_eq!(canonical(&again), bytes, "canonicalization is not a fixed point");
    let tool = match value {
        Value::Object(_) => value,
        other => json!({"name": "t", "inputSchema": {"type": "object", "default": other}}),
    };
    let hash = tool_hash(&tool);
    let pretty: Value =
        serde_json::from_str(&serde_json::to_string_pretty(&reversed(&tool)).unwrap()).unwrap();
    assert_eq!(tool_hash(&pretty), hash, "key order or whitespace moved the hash");
});
