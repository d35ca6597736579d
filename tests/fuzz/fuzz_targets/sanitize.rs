//! Text sanitization on arbitrary text: it never panics, its output holds
//! none of the classes it strips, cleaning it again changes nothing, and the
//! output is bounded by the limit plus the cut marker.
//!
//! Input: the first two bytes are the size limit; the rest is the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::sanitize::clean_text;
use quickforge_fuzz::{assert_clean, split_number};

/// Longest cut marker: "… [N more bytes cut]" with a 20-digit N.
const MARKER: usize = "… [".len() + 20 + " more bytes cut]".len();

fuzz_target!(|data: &[u8]| {
    let (max, rest) = split_number(data, 2);
    let max = max as usize;
    let text = String::from_utf8_lossy(rest);
    let cleaned = clean_text(&text, max);
    assert!(
        cleaned.text.len() <= max + MARKER,
        "{} bytes for a limit of {max}",
        cleaned.text.len()
    );
    assert_clean(&clean_text(&text, usize::MAX).text);
});
