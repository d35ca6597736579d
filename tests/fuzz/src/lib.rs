//! What the fuzz targets share: how raw fuzzer bytes become inputs, and the
//! properties checked on the filters' outputs.

/// Whether `c` is a character the sanitizer must remove from anything a
/// model reads, and which it removes today: C0 and C1 controls other than
/// tab and line feed (ESC among them, so no ANSI sequence survives),
/// zero-width characters and joiners, the BOM, bidirectional embeddings,
/// overrides, isolates and marks, invisible operators and tag characters
/// (which can spell hidden ASCII).
pub fn stripped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
        || pending(c)
}

/// Classes issue 16 (item 5) adds and the sanitizer does not strip yet:
/// variation selectors (which can smuggle arbitrary bytes), the Mongolian
/// free variation selectors, and the line and paragraph separators. Checked
/// only with the `pending` feature, which CI turns on once the sanitizer
/// strips them.
#[cfg(feature = "pending")]
fn pending(c: char) -> bool {
    matches!(c,
        '\u{180B}'..='\u{180D}' | '\u{180F}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{E0100}'..='\u{E01EF}' | '\u{2028}' | '\u{2029}')
}

#[cfg(not(feature = "pending"))]
fn pending(_: char) -> bool {
    false
}

/// Asserts that `text`, an output of the sanitizer, holds nothing it strips
/// and is a fixed point: cleaning it again changes nothing and finds no
/// instruction-like text (a marker it replaced cannot be rebuilt from what
/// is left).
pub fn assert_clean(text: &str) {
    if let Some(c) = text.chars().find(|&c| stripped(c)) {
        panic!("U+{:04X} survived sanitization in {text:?}", c as u32);
    }
    let again = quickforge_filters::sanitize::clean_text(text, usize::MAX);
    assert!(!again.flagged, "cleaned text is flagged again: {text:?}");
    assert_eq!(again.text, text, "cleaning is not idempotent");
}

/// The first `n` bytes of `data` as a little-endian number, and the rest.
pub fn split_number(data: &[u8], n: usize) -> (u64, &[u8]) {
    let n = n.min(data.len());
    let value = data[..n]
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    (value, &data[n..])
}
