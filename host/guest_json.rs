//! JSON text from the guest, parsed: QuickJS writes some JSON that is valid
//! text but not a valid Rust string, which this accepts.

/// Parses the guest's JSON. QuickJS escapes lone surrogates (`"\ud800"`),
/// which is valid JSON text but not a valid Rust string; those become U+FFFD.
pub fn parse_json(json: &str) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::from_str(json).or_else(|e| match replace_lone_surrogates(json) {
        Some(fixed) => serde_json::from_str(&fixed),
        None => Err(e),
    })
}

/// `json` with every `\uD800`–`\uDFFF` escape that is not half of a valid
/// pair replaced by `\uFFFD`; `None` if there was none.
fn replace_lone_surrogates(json: &str) -> Option<String> {
    let bytes = json.as_bytes();
    // The UTF-16 unit of a `\uXXXX` escape starting at `at`.
    let unit = |at: usize| -> Option<u16> {
        if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
            return None;
        }
        u16::from_str_radix(json.get(at + 2..at + 6)?, 16).ok()
    };
    let surrogate = |u: u16| (0xD800..0xE000).contains(&u);
    let high = |u: u16| (0xD800..0xDC00).contains(&u);
    let low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out = String::with_capacity(json.len());
    let (mut i, mut last) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(u) if high(u) && unit(i + 6).is_some_and(low) => i += 12,
            Some(u) if surrogate(u) => {
                out.push_str(&json[last..i]);
                out.push_str("\\uFFFD");
                i += 6;
                last = i;
            }
            // Any other escape: step over the backslash and what it escapes.
            _ => i += 2,
        }
    }
    if last == 0 {
        return None;
    }
    out.push_str(&json[last..]);
    Some(out)
}
