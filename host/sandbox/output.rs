//! Fitting a result into `max_output_size`: a result that is too large is
//! cut at clean JSON boundaries (whole array items, whole object members, a
//! string at a character) and stays valid JSON, with an explicit marker
//! saying how much was cut. The model sees the start of its data and knows
//! to ask for less, instead of a bare error.

use serde_json::{Map, Value};

/// Below this many bytes of remaining budget, an item that does not fit is
/// dropped rather than cut: a 40-byte stub of it would say nothing.
const MIN_PARTIAL: usize = 256;

/// Bytes kept free for the marker itself.
const MARKER_RESERVE: usize = 128;

/// Key of the marker member added to a cut object.
pub const CUT_KEY: &str = "…";

pub use quickforge_core::execution::json_len;

/// `value` cut to at most about `max` bytes of JSON, and how many bytes were
/// cut (0 when it fit).
pub fn fit(value: Value, max: usize) -> (Value, usize) {
    let size = json_len(&value);
    if size <= max {
        return (value, 0);
    }
    let cut = shrink(&value, max.saturating_sub(MARKER_RESERVE).max(MIN_PARTIAL));
    let after = json_len(&cut);
    (cut, size.saturating_sub(after))
}

fn shrink(v: &Value, budget: usize) -> Value {
    let size = json_len(v);
    if size <= budget {
        return v.clone();
    }
    match v {
        Value::String(s) => {
            let keep = s.floor_char_boundary(budget.saturating_sub(MARKER_RESERVE));
            Value::String(format!(
                "{}… [quickforge cut {} more bytes to fit max_output_size]",
                &s[..keep],
                s.len() - keep
            ))
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            let mut used = 2;
            for item in items {
                let len = json_len(item) + 1;
                if used + len + MARKER_RESERVE <= budget {
                    out.push(item.clone());
                    used += len;
                    continue;
                }
                let room = budget.saturating_sub(used + MARKER_RESERVE);
                if room >= MIN_PARTIAL {
                    out.push(shrink(item, room));
                }
                break;
            }
            let kept = out.len();
            let rest = items.len() - kept;
            out.push(Value::String(format!(
                "[quickforge cut {rest} more of {} items to fit max_output_size]",
                items.len()
            )));
            Value::Array(out)
        }
        Value::Object(members) => {
            let mut out = Map::new();
            let mut used = 2;
            let mut kept = 0usize;
            for (k, item) in members {
                let len = json_len(item) + k.len() + 4;
                if used + len + MARKER_RESERVE <= budget {
                    out.insert(k.clone(), item.clone());
                    used += len;
                    kept += 1;
                    continue;
                }
                let room = budget.saturating_sub(used + k.len() + 4 + MARKER_RESERVE);
                if room >= MIN_PARTIAL {
                    out.insert(k.clone(), shrink(item, room));
                    kept += 1;
                }
                break;
            }
            let rest = members.len() - kept;
            out.insert(
                CUT_KEY.into(),
                Value::String(format!(
                    "[quickforge cut {rest} more of {} members to fit max_output_size]",
                    members.len()
                )),
            );
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_values_pass_untouched() {
        let v = json!({"a": [1, 2, 3]});
        assert_eq!(fit(v.clone(), 100), (v, 0));
    }

    #[test]
    fn arrays_keep_whole_items_and_say_how_many_were_cut() {
        let v = Value::Array(
            (0..1000)
                .map(|i| json!({"id": i, "name": format!("item {i}")}))
                .collect(),
        );
        let (cut, bytes) = fit(v.clone(), 2000);
        assert!(json_len(&cut) <= 2000, "{}", json_len(&cut));
        assert!(bytes > 0);
        let items = cut.as_array().unwrap();
        assert_eq!(items[0], v[0]);
        let marker = items.last().unwrap().as_str().unwrap();
        assert!(marker.contains("more of 1000 items"), "{marker}");
    }

    #[test]
    fn strings_cut_at_a_character() {
        let (cut, bytes) = fit(Value::String("é".repeat(10_000)), 1000);
        let s = cut.as_str().unwrap();
        assert!(s.starts_with("éé") && s.contains("quickforge cut"), "{s}");
        assert!(json_len(&cut) <= 1000);
        assert!(bytes > 18_000);
    }

    #[test]
    fn objects_cut_nested_members() {
        let v = json!({"small": 1, "big": "x".repeat(5000), "after": 2});
        let (cut, _) = fit(v, 1200);
        assert_eq!(cut["small"], 1);
        assert!(cut.get("after").is_none());
        assert!(cut["big"].as_str().unwrap().contains("quickforge cut"));
        assert!(
            cut[CUT_KEY]
                .as_str()
                .unwrap()
                .contains("1 more of 3 members")
        );
        assert!(json_len(&cut) <= 1200);
    }
}
