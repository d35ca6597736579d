//! Redaction of a JSON value: an error's `data`, a structured error result.

use super::names::{holds_secret, is_bip39_word, is_sensitive_key};
use super::{MARK_MNEMONIC, MARK_NAMED, redact};
use serde_json::Value;

/// Redacts a JSON error payload in place: the values of sensitive field names at any depth
/// are replaced with `"[REDACTED]"`, string values anywhere go through `redact`, and mnemonic
/// phrases are replaced. Returns whether anything changed.
///
/// Details: a sensitive field's value is replaced whatever its type (string, number,
/// object, array) except `null`, booleans, `""`, `{}` and `[]`, which hold no secret; an
/// array of 12 or more strings that are all BIP-39 words becomes
/// `"[REDACTED:mnemonic]"`; object keys go through [`redact`] too (an object keyed by
/// file path), keeping their order. The walk uses an explicit stack, so arbitrarily deep
/// values cannot overflow the call stack.
pub fn redact_json(value: &mut Value) -> bool {
    redact_json_with(value, &|text| {
        let r = redact(text);
        r.changed.then_some(r.text)
    })
}

/// [`redact_json`] with the text redaction given: `redact_text` answers a string's
/// redacted form, or `None` when nothing in it changed. The edge provider passes the
/// redaction of its pre-initialized redactor component, so the rule set is never
/// compiled per request.
pub fn redact_json_with(value: &mut Value, redact_text: &dyn Fn(&str) -> Option<String>) -> bool {
    redact_json_keeping(value, &[], redact_text)
}

/// [`redact_json_with`], except that a string under a field named in `keep` is
/// left as it is: an identifier the reader must be able to use again (a
/// resource's `uri`, its `mimeType`, a `name`), which `ARCHITECTURE.md`
/// ("Errors") says is never rewritten. A sensitive field name still masks
/// its value, and objects and arrays under a kept name are walked as usual.
pub fn redact_json_keeping(
    value: &mut Value,
    keep: &[&str],
    redact_text: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let mut changed = false;
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        if let Value::Array(items) = &*v
            && is_mnemonic_array(items)
        {
            *v = Value::String(MARK_MNEMONIC.to_string());
            changed = true;
            continue;
        }
        match v {
            Value::String(s) => {
                if let Some(text) = redact_text(s) {
                    *s = text;
                    changed = true;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                // mask by the original names, then rename, then descend
                for (k, child) in map.iter_mut() {
                    if is_sensitive_key(k) && holds_secret(child) {
                        *child = Value::String(MARK_NAMED.to_string());
                        changed = true;
                    }
                }
                let renamed: Vec<Option<String>> = map.keys().map(|k| redact_text(k)).collect();
                if renamed.iter().any(Option::is_some) {
                    let old = std::mem::take(map);
                    for ((k, child), new) in old.into_iter().zip(renamed) {
                        let base = new.unwrap_or(k);
                        // two names redacted alike must not overwrite each other
                        let mut key = base.clone();
                        let mut n = 2;
                        while map.contains_key(&key) {
                            key = format!("{base} ({n})");
                            n += 1;
                        }
                        map.insert(key, child);
                    }
                    changed = true;
                }
                stack.extend(
                    map.iter_mut()
                        .filter(|(k, v)| !(v.is_string() && keep.contains(&k.as_str())))
                        .map(|(_, v)| v),
                );
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    changed
}

fn is_mnemonic_array(items: &[Value]) -> bool {
    items.len() >= 12
        && items
            .iter()
            .all(|v| matches!(v, Value::String(s) if is_bip39_word(s.trim())))
}
