//! Every string of a schema cleaned: the model reads all of them, in
//! `manifest.tool(...)` (the schema as JSON) and in the TypeScript
//! signature (property names, enum and const values, descriptions as
//! comments). That means `$comment`, `default`, `examples`, `x-*`
//! extensions, `deprecationMessage`, enum values, property names and keys
//! of any kind, at any depth, not only `description` and `title`.
//!
//! Cleaning a string that takes part in validation changes it the same way
//! wherever it appears (a property name and its entry in `required` stay
//! equal), and the manifest validates arguments against the cleaned schema,
//! so what the model reads is what it is checked against. Two kinds of
//! string are dropped rather than changed, because a changed one would mean
//! something else: a `pattern` (or `patternProperties` key) that cleaning
//! would change, since a marker spliced into a regex is a different regex,
//! and a key whose cleaned form is already a key of the same object.
//! Honest schemas have neither.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Cleaned, Findings, MAX_SCHEMA, MAX_SHORT_TEXT, clean_text};

/// Cleans every string of a JSON Schema in place, keys and values at any
/// depth (an explicit stack, so no depth limit is needed), each to at most
/// [`MAX_SHORT_TEXT`] bytes. A schema over [`MAX_SCHEMA`] bytes, before
/// or after cleaning, is replaced by a plain object schema. Returns what
/// was removed or changed.
pub fn clean_schema(schema: &mut Value) -> Findings {
    clean_schema_with(schema, &clean_text)
}

/// [`clean_schema`] with the text cleaning given: `clean` is
/// [`clean_text`] or the same code elsewhere (the edge provider passes its
/// pre-initialized redactor component's, so the sanitizer's regexes are
/// never compiled in a request).
pub fn clean_schema_with(schema: &mut Value, clean: &dyn Fn(&str, usize) -> Cleaned) -> Findings {
    let mut found = Findings::default();
    if replace_if_huge(schema, &mut found) {
        return found;
    }
    // Each entry: a value, and whether the keys of the object it is (if it
    // is one) are regexes (it is the value of `patternProperties`).
    let mut stack: Vec<(&mut Value, bool)> = vec![(schema, false)];
    while let Some((value, regex_keys)) = stack.pop() {
        match value {
            Value::String(s) => {
                let c = clean(s, MAX_SHORT_TEXT);
                found |= c.found;
                *s = c.text;
            }
            Value::Object(map) => {
                clean_keys(map, regex_keys, &mut found, clean);
                for (k, child) in map.iter_mut() {
                    stack.push((child, k == "patternProperties"));
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut().map(|v| (v, false))),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    replace_if_huge(schema, &mut found);
    found
}

/// Replaces `schema` by a plain object schema saying why when it is over
/// [`MAX_SCHEMA`] bytes of JSON.
fn replace_if_huge(schema: &mut Value, found: &mut Findings) -> bool {
    let size = serde_json::to_string(schema).map_or(usize::MAX, |s| s.len());
    if size <= MAX_SCHEMA {
        return false;
    }
    *schema = serde_json::json!({
        "type": "object",
        "description": format!("[schema removed: {size} bytes, over quickforge's {MAX_SCHEMA}-byte limit]"),
    });
    found.cut = true;
    true
}

/// Cleans the keys of `map` (the values are cleaned as the walk reaches
/// them), keeping the order. Drops an entry whose key is a regex that
/// cleaning would change (`regex_keys`), whose cleaned key is taken, or
/// that is a `pattern` string cleaning would change.
fn clean_keys(
    map: &mut Map<String, Value>,
    regex_keys: bool,
    found: &mut Findings,
    clean_text: &dyn Fn(&str, usize) -> Cleaned,
) {
    let clean = |s: &str| Some(clean_text(s, MAX_SHORT_TEXT)).filter(|c| c.text != s);
    let keys: Vec<Option<Cleaned>> = map.keys().map(|k| clean(k)).collect();
    let pattern = map.get("pattern").and_then(Value::as_str).and_then(clean);
    if keys.iter().all(Option::is_none) && pattern.is_none() {
        return;
    }
    if let Some(p) = &pattern {
        *found |= p.found;
        found.dropped = true;
    }
    let untouched: HashSet<String> = map
        .keys()
        .zip(&keys)
        .filter(|(_, c)| c.is_none())
        .map(|(k, _)| k.clone())
        .collect();
    let old = std::mem::take(map);
    for ((key, value), cleaned) in old.into_iter().zip(keys) {
        if key == "pattern" && value.is_string() && pattern.is_some() {
            continue;
        }
        let key = match cleaned {
            None => key,
            Some(c) => {
                *found |= c.found;
                if regex_keys || untouched.contains(&c.text) || map.contains_key(&c.text) {
                    found.dropped = true;
                    continue;
                }
                c.text
            }
        };
        map.insert(key, value);
    }
}
