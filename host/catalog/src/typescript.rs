//! TypeScript types rendered from JSON Schema, so `manifest.tool` can show a
//! model a call it can copy and the shape of what comes back.
//!
//! Covers what tool schemas use in practice: primitive types, `enum`,
//! `const`, arrays, objects with `required` and `additionalProperties`,
//! nullable type lists, `anyOf`/`oneOf` (unions), `allOf` (intersections)
//! and local `$ref`s into `$defs`/`definitions`. Anything else becomes
//! `unknown`. Property descriptions become one-line comments. Output is
//! bounded in depth and length so a hostile schema cannot blow it up.

use serde_json::{Map, Value};

/// Deepest nesting rendered; deeper schemas show `unknown`.
const MAX_DEPTH: usize = 8;
/// Longest rendered signature, in bytes; longer ones are cut with a marker.
/// The full schema is always returned beside it.
const MAX_LEN: usize = 8 * 1024;
/// Longest property comment, in characters.
const MAX_COMMENT: usize = 100;

/// `callTool("server", "tool", args: {...}): Promise<...>`.
pub fn render_signature(server: &str, tool: &str, input: &Value, output: Option<&Value>) -> String {
    let args = render_type(input, input, 1);
    let optional = input
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(|r| r.is_empty());
    let ret = output.map_or_else(|| "unknown".to_string(), |o| render_type(o, o, 1));
    let mut sig = format!(
        "callTool({}, {}, args{}: {args}): Promise<{ret}>",
        serde_json::to_string(server).unwrap_or_default(),
        serde_json::to_string(tool).unwrap_or_default(),
        if optional { "?" } else { "" },
    );
    if sig.len() > MAX_LEN {
        sig.truncate(sig.floor_char_boundary(MAX_LEN));
        sig.push_str(" /* …cut; see inputSchema */");
    }
    sig
}

/// The TypeScript type of `schema`, resolving `$ref`s against `root`, with
/// object members indented for nesting `level`.
pub fn render_type(schema: &Value, root: &Value, level: usize) -> String {
    let mut out = String::new();
    ty(schema, root, level, 0, &mut out);
    out
}

fn ty(schema: &Value, root: &Value, level: usize, depth: usize, out: &mut String) {
    if depth > MAX_DEPTH || out.len() > MAX_LEN {
        out.push_str("unknown");
        return;
    }
    let Some(s) = schema.as_object() else {
        // `true` accepts anything, `false` nothing.
        out.push_str(if schema == &Value::Bool(false) {
            "never"
        } else {
            "unknown"
        });
        return;
    };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        match resolve(root, r) {
            Some(target) => ty(target, root, level, depth + 1, out),
            None => out.push_str("unknown"),
        }
        return;
    }
    if let Some(c) = s.get("const") {
        out.push_str(&literal(c));
        return;
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        let parts: Vec<String> = values.iter().map(literal).collect();
        out.push_str(if parts.is_empty() { "never" } else { "" });
        out.push_str(&parts.join(" | "));
        return;
    }
    for (key, sep) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
        if let Some(list) = s
            .get(key)
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
        {
            let parts: Vec<String> = list
                .iter()
                .map(|sub| {
                    let mut o = String::new();
                    ty(sub, root, level, depth + 1, &mut o);
                    if needs_parens(&o) {
                        format!("({o})")
                    } else {
                        o
                    }
                })
                .collect();
            out.push_str(&parts.join(sep));
            return;
        }
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if s.contains_key("properties") => vec!["object"],
        _ if s.contains_key("items") => vec!["array"],
        _ => vec![],
    };
    if types.is_empty() {
        out.push_str("unknown");
        return;
    }
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(" | ");
        }
        match *t {
            "string" => out.push_str("string"),
            "number" | "integer" => out.push_str("number"),
            "boolean" => out.push_str("boolean"),
            "null" => out.push_str("null"),
            "array" => {
                let mut item = String::new();
                match s.get("items") {
                    Some(items) => ty(items, root, level, depth + 1, &mut item),
                    None => item.push_str("unknown"),
                }
                if needs_parens(&item) {
                    out.push_str(&format!("({item})[]"));
                } else {
                    out.push_str(&item);
                    out.push_str("[]");
                }
            }
            "object" => object(s, root, level, depth, out),
            _ => out.push_str("unknown"),
        }
    }
}

fn object(s: &Map<String, Value>, root: &Value, level: usize, depth: usize, out: &mut String) {
    let props = s.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let extra = match s.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(schema @ Value::Object(_)) => {
            let mut o = String::new();
            ty(schema, root, level + 1, depth + 1, &mut o);
            Some(o)
        }
        _ => Some("unknown".to_string()),
    };
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        match extra {
            Some(v) => out.push_str(&format!("Record<string, {v}>")),
            None => out.push_str("{}"),
        }
        return;
    };
    let pad = "  ".repeat(level);
    let close = "  ".repeat(level.saturating_sub(1));
    out.push_str("{\n");
    for (name, prop) in props {
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            let line = crate::summary(d, MAX_COMMENT).replace("*/", "* /");
            if !line.is_empty() {
                out.push_str(&format!("{pad}/** {line} */\n"));
            }
        }
        out.push_str(&pad);
        out.push_str(&key(name));
        if !required.contains(&name.as_str()) {
            out.push('?');
        }
        out.push_str(": ");
        ty(prop, root, level + 1, depth + 1, out);
        out.push_str(";\n");
    }
    if let Some(extra) = extra.filter(|_| s.contains_key("additionalProperties")) {
        out.push_str(&format!("{pad}[key: string]: {extra};\n"));
    }
    out.push_str(&close);
    out.push('}');
}

/// Whether `ty` has a top-level `|` or `&`, so it needs parentheses inside
/// a union, an intersection or before `[]`.
fn needs_parens(ty: &str) -> bool {
    let mut depth = 0i32;
    let mut in_string = false;
    let mut prev = ' ';
    for c in ty.chars() {
        match c {
            '"' if prev != '\\' => in_string = !in_string,
            '{' | '<' | '(' | '[' if !in_string => depth += 1,
            '}' | '>' | ')' | ']' if !in_string => depth -= 1,
            '|' | '&' if !in_string && depth == 0 => return true,
            _ => {}
        }
        prev = c;
    }
    false
}

fn resolve<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let pointer = r.strip_prefix('#')?;
    root.pointer(pointer)
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => v.to_string(),
        _ => "unknown".into(),
    }
}

fn key(name: &str) -> String {
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_objects_with_optional_fields_and_comments() {
        let schema = json!({
            "type": "object",
            "properties": {
                "repo": {"type": "string", "description": "owner/name"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "state": {"enum": ["open", "closed"]},
                "limit": {"type": ["integer", "null"]},
                "my-key": {"type": "boolean"}
            },
            "required": ["repo"],
            "additionalProperties": false
        });
        let sig = render_signature("github", "list", &schema, None);
        assert!(
            sig.starts_with("callTool(\"github\", \"list\", args: {\n"),
            "{sig}"
        );
        assert!(
            sig.contains("  /** owner/name */\n  repo: string;\n"),
            "{sig}"
        );
        assert!(sig.contains("  labels?: string[];\n"), "{sig}");
        assert!(sig.contains("  state?: \"open\" | \"closed\";\n"), "{sig}");
        assert!(sig.contains("  limit?: number | null;\n"), "{sig}");
        assert!(sig.contains("  \"my-key\"?: boolean;\n"), "{sig}");
        assert!(sig.ends_with("}): Promise<unknown>"), "{sig}");
    }

    #[test]
    fn renders_output_refs_unions_and_records() {
        let out = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
            "required": ["items"],
            "$defs": {"item": {"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": {"type": "number"}}]}}
        });
        let sig = render_signature("s", "t", &json!({"type": "object"}), Some(&out));
        assert!(sig.contains("args?: Record<string, unknown>"), "{sig}");
        assert!(
            sig.contains("items: (string | Record<string, number>)[];"),
            "{sig}"
        );
    }

    #[test]
    fn bounds_recursive_schemas() {
        let schema = json!({"$ref": "#"});
        assert_eq!(render_type(&schema, &schema, 0), "unknown");
        let deep = (0..50).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "array", "items": inner}),
        );
        assert!(render_type(&deep, &deep, 0).contains("unknown"));
    }
}
