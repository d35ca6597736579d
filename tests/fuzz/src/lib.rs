//! What the fuzz targets share: how raw fuzzer bytes become inputs, and the
//! properties checked on the filters' outputs.

/// Whether `c` is a character the sanitizer removes wherever it is: C0 and
/// C1 controls other than tab and line feed (ESC among them, so no ANSI
/// sequence survives), line and paragraph separators, zero-width spaces,
/// the BOM, bidirectional embeddings, overrides, isolates and marks,
/// invisible operators, tag characters (which can spell hidden ASCII) and
/// the variation selectors that can smuggle bytes (VS1–14, VS17–256, the
/// Mongolian ones). The joiners (U+200C/D) and the presentation selectors
/// VS15/VS16 are kept where they shape text (emoji, Persian); whether they
/// were kept rightly is the fixed-point half of [`assert_clean`].
pub fn stripped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180B}'..='\u{180F}' | '\u{200B}'
            | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{FE00}'..='\u{FE0D}' | '\u{FEFF}'
            | '\u{E0000}'..='\u{E007F}' | '\u{E0100}'..='\u{E01EF}')
}

/// Asserts that `text`, an output of the sanitizer, holds nothing it always
/// strips and is a fixed point: cleaning it again changes nothing and finds
/// nothing (no hidden character left in a wrong place, no instruction-like
/// text rebuilt from what is left).
pub fn assert_clean(text: &str) {
    if let Some(c) = text.chars().find(|&c| stripped(c)) {
        panic!("U+{:04X} survived sanitization in {text:?}", c as u32);
    }
    let again = quickforge_filters::sanitize::clean_text(text, usize::MAX);
    assert!(
        !again.found.any(),
        "cleaned text has findings again ({:?}): {text:?}",
        again.found
    );
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
