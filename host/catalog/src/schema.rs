//! A tool's `inputSchema` as the route step checks arguments against it,
//! made safe to run on the host when the manifest is loaded rather than
//! discovered per call. The edge provider uses this crate too, so a call's
//! arguments are checked, and a mismatch worded, alike in both.
//!
//! The schema is the downstream server's, so it may be hostile or merely
//! careless: a `pattern` with a backreference or nested quantifiers makes a
//! backtracking engine run for seconds on a few hundred crafted strings, on
//! the host's thread, and its failure reads as if the script's arguments were
//! wrong. So patterns run on the `regex` engine, whose matching is linear in
//! the input, with a bound on each compiled pattern's size; a pattern that
//! engine cannot take (backreferences, look-around) or that is over the bound
//! is left out of the check, and the tool's `warning` (and `doctor`) says so.
//! The schema the model reads is unchanged: the pattern still documents
//! what the server expects, the server still enforces it.

use std::sync::OnceLock;

use jsonschema::{PatternOptions, Validator};
use serde_json::{Value, json};

/// Bytes one compiled pattern may take (the `regex` crate's size limit).
/// Real argument patterns (identifiers, dates, paths) compile to a few KiB;
/// 256 KiB lets through anything plausible and stops a pattern built to make
/// every check slow, such as a bounded repetition in the thousands.
const PATTERN_SIZE_LIMIT: usize = 256 * 1024;

/// Bytes of lazy-DFA cache one pattern may use while matching: the regex
/// crate's default (2 MiB), stated here so the bound is written down.
const PATTERN_DFA_LIMIT: usize = 2 * 1024 * 1024;

/// Patterns one schema may have checked; past this the rest are left out
/// (and said so). A 32 KiB schema cannot hold many more real ones.
const MAX_PATTERNS: usize = 256;

/// The options every argument check compiles with.
fn options() -> jsonschema::ValidationOptions<'static> {
    jsonschema::options()
        .should_validate_formats(false)
        .with_pattern_options(
            PatternOptions::regex()
                .size_limit(PATTERN_SIZE_LIMIT)
                .dfa_size_limit(PATTERN_DFA_LIMIT),
        )
}

/// A tool's argument check: the schema it runs, compiled on first use, and
/// what had to be left out of it.
#[derive(Debug)]
pub struct ArgsCheck {
    /// The schema checked: the server's, less the patterns left out.
    schema: Value,
    /// Why parts of the schema are not checked, one sentence each.
    warnings: Vec<String>,
    validator: OnceLock<Result<Validator, String>>,
}

impl ArgsCheck {
    /// The check of `schema`: every `pattern` and `patternProperties` key
    /// compiled on the linear engine now; those it refuses are dropped from
    /// the check with a warning.
    pub fn new(schema: &Value) -> ArgsCheck {
        let mut checked = schema.clone();
        let mut warnings = Vec::new();
        let mut seen = 0usize;
        neutralise(&mut checked, "", &mut seen, &mut warnings);
        ArgsCheck {
            schema: checked,
            warnings,
            validator: OnceLock::new(),
        }
    }

    /// What is left out of the check, for the tool's `warning` and doctor.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The compiled check, or why the schema does not compile (then
    /// arguments go unchecked to the server, which checks them itself).
    pub fn validator(&self) -> Result<&Validator, &str> {
        self.validator
            .get_or_init(|| options().build(&self.schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }
}

impl ArgsCheck {
    /// Why `args` do not match the schema, naming each offending field
    /// and what is wrong with it (the first few; the rest counted), or
    /// `None` when they match or the schema does not compile.
    pub fn mismatch(&self, server: &str, tool: &str, args: &Value) -> Option<String> {
        /// Problems listed in one message; the rest are counted.
        const MAX_LISTED: usize = 5;
        let validator = self.validator().ok()?;
        let mut problems = Vec::new();
        let mut more = 0usize;
        for error in validator.iter_errors(args) {
            if problems.len() < MAX_LISTED {
                let path = error.instance_path().to_string();
                let field = if path.is_empty() {
                    "arguments".to_string()
                } else {
                    format!("field {}", path.trim_start_matches('/').replace('/', "."))
                };
                problems.push(format!("{field}: {error}"));
            } else {
                more += 1;
            }
        }
        if problems.is_empty() {
            return None;
        }
        let mut message = format!(
            "arguments of {server}.{tool} do not match its input schema: {}",
            problems.join("; ")
        );
        if more > 0 {
            message.push_str(&format!(" (and {more} more)"));
        }
        Some(message)
    }
}

/// What a script should do about a mismatch: read the exact types.
pub fn suggestion(server: &str, tool: &str) -> String {
    format!("read manifest.tool({server:?}, {tool:?}) in search for the exact argument types")
}

/// Why `pattern` cannot be checked on the host, if it cannot. jsonschema
/// only says a refused pattern "is not a regex", so the reason is read
/// from the `regex` crate's own error on the pattern as written.
fn refused(pattern: &str) -> Option<String> {
    options().build(&json!({ "pattern": pattern })).err()?;
    let why = match regex::RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
    {
        Err(regex::Error::CompiledTooBig(_)) => {
            "it compiles to more than the 256 KiB allowed".to_string()
        }
        Err(e)
            if e.to_string().contains("look-around")
                || e.to_string().contains("backreferences") =>
        {
            "it uses backreferences or look-around, which linear-time matching cannot do"
                .to_string()
        }
        Err(e) => format!(
            "it does not compile: {}",
            quickforge_filters::text::clip(&e.to_string().replace('\n', " "), 160)
        ),
        Ok(_) => "it does not compile as an ECMA-262 pattern".to_string(),
    };
    Some(why)
}

/// Why the `seen`-th pattern of a schema, `pattern`, is not checked, if it
/// is not: past [`MAX_PATTERNS`] none is compiled.
fn next_refused(pattern: &str, seen: &mut usize) -> Option<String> {
    *seen += 1;
    if *seen > MAX_PATTERNS {
        return Some(format!("the schema has more than {MAX_PATTERNS} patterns"));
    }
    refused(pattern)
}

/// Drops from `schema` (at JSON pointer `at`) every pattern the host will
/// not run, saying why in `warnings`. Walks objects and arrays; depth is
/// bounded by the sanitizer's size bound on schemas.
fn neutralise(schema: &mut Value, at: &str, seen: &mut usize, warnings: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(p)) = map.get("pattern")
                && let Some(why) = next_refused(p, seen)
            {
                warnings.push(format!(
                    "the pattern at {at}/pattern is not checked by quickforge: {why}"
                ));
                map.remove("pattern");
            }
            if let Some(Value::Object(props)) = map.get_mut("patternProperties") {
                let keys: Vec<String> = props.keys().cloned().collect();
                for key in keys {
                    if let Some(why) = next_refused(&key, seen) {
                        warnings.push(format!(
                            "the patternProperties key {key:?} at {at}/patternProperties is not checked by quickforge: {why}"
                        ));
                        props.remove(&key);
                    }
                }
            }
            for (k, v) in map.iter_mut() {
                if v.is_object() || v.is_array() {
                    neutralise(v, &format!("{at}/{}", escape(k)), seen, warnings);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                neutralise(v, &format!("{at}/{i}"), seen, warnings);
            }
        }
        _ => {}
    }
}

/// `key` as a JSON pointer token (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backreference_pattern_is_left_out_with_a_warning() {
        let schema = json!({
            "type": "object",
            "properties": {
                "word": {"type": "string", "pattern": "^(a+)+\\1$"},
                "id": {"type": "string", "pattern": "^[a-z]+$"}
            }
        });
        let check = ArgsCheck::new(&schema);
        assert_eq!(check.warnings().len(), 1, "{:?}", check.warnings());
        assert!(check.warnings()[0].contains("/properties/word/pattern"));
        assert!(check.warnings()[0].contains("backreferences or look-around"));
        let v = check.validator().unwrap();
        // The kept pattern still checks; the dropped one no longer fails.
        assert!(!v.is_valid(&json!({"id": "ABC"})));
        assert!(v.is_valid(&json!({"word": "aaaab", "id": "abc"})));
    }

    #[test]
    fn an_oversized_pattern_is_left_out() {
        let schema = json!({"properties": {"x": {"type": "string", "pattern": "(a{1000}){1000}"}}});
        let check = ArgsCheck::new(&schema);
        assert!(
            check.warnings()[0].contains("more than the 256 KiB"),
            "{:?}",
            check.warnings()
        );
    }

    #[test]
    fn pattern_properties_keys_are_checked_too() {
        let schema = json!({"patternProperties": {"^(?=x)": {"type": "string"}, "^y": {}}});
        let check = ArgsCheck::new(&schema);
        assert_eq!(check.warnings().len(), 1, "{:?}", check.warnings());
        assert!(check.validator().is_ok());
    }

    #[test]
    fn matching_is_linear_on_inputs_that_make_backtracking_explode() {
        // (a|a)*b over "aaaa…" is exponential for a backtracking engine.
        let schema = json!({"properties": {"s": {"type": "string", "pattern": "^(a|a)*b$"}}});
        let check = ArgsCheck::new(&schema);
        assert!(check.warnings().is_empty());
        let started = std::time::Instant::now();
        let s = "a".repeat(100_000);
        assert!(!check.validator().unwrap().is_valid(&json!({ "s": s })));
        // A generous bound for a hang, not a timing assertion.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
