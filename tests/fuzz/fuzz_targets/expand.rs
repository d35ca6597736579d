//! `${VAR}` expansion on arbitrary text. Properties:
//!
//! - it never panics, on any value and any variable values;
//! - `$$` escapes: any text with every `$` doubled expands to itself;
//! - a variable's value is inserted verbatim, never expanded again, and a
//!   fallback is used exactly when the variable is unset or empty;
//! - `references_with_fallbacks` finds that reference.
//!
//! Input: text split at U+0001 into a raw value, a prefix, a variable's
//! value, a fallback and a suffix; the variable's name is made of the
//! prefix's name characters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::expand::{expand, references_with_fallbacks};

fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\u{1}');
    let mut next = || parts.next().unwrap_or("").to_string();
    let (raw, prefix, value, fallback, suffix) = (next(), next(), next(), next(), next());

    // Anything goes in, nothing panics.
    let echo = |name: &str| Some(format!("<{name}>"));
    let _ = expand(&raw, &echo);
    let _ = expand(&raw, &|_| None);
    let _ = references_with_fallbacks(&raw);

    assert_eq!(
        expand(&escape(&raw), &|_| None).as_deref(),
        Ok(raw.as_str())
    );

    let mut name: String = prefix
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, 'V');
    }
    let set = |n: &str| (n == name).then(|| value.clone());
    let plain = format!("{}${{{name}}}{}", escape(&prefix), escape(&suffix));
    assert_eq!(
        expand(&plain, &set).as_deref(),
        Ok(format!("{prefix}{value}{suffix}").as_str())
    );
    let refs = references_with_fallbacks(&plain);
    assert_eq!(refs.len(), 1, "{plain:?}: {refs:?}");
    assert!(refs[0].name == name && !refs[0].has_fallback);

    // A fallback cannot hold `}` (it ends the reference); `$` in it is
    // kept as written.
    if !fallback.contains('}') {
        let with = format!(
            "{}${{{name}:-{fallback}}}{}",
            escape(&prefix),
            escape(&suffix)
        );
        let used = if value.is_empty() { &fallback } else { &value };
        assert_eq!(
            expand(&with, &set).as_deref(),
            Ok(format!("{prefix}{used}{suffix}").as_str())
        );
        let refs = references_with_fallbacks(&with);
        assert!(refs.len() == 1 && refs[0].name == name && refs[0].has_fallback);
    }
});
