//! Folding look-alike text to one plain spelling before it is matched
//! against a list of things to catch, so that `Ѕystem:` (Cyrillic Ѕ),
//! `ｉｇｎｏｒｅ` (fullwidth) or `𝐢𝐠𝐧𝐨𝐫𝐞` (mathematical bold) are caught by a
//! pattern written as `system:` or `ignore`.
//!
//! The folded form is for matching only: callers keep showing the original
//! text (or replace the matched part of it, found through [`Folded`]'s map
//! back to the original), so folding never changes what an honest reader
//! sees. One function serves every filter that matches words in untrusted
//! text (the metadata sanitizer, and the script validator).
//!
//! Per character, in order:
//! 1. ASCII is lowercased and nothing else: the patterns are written in
//!    lowercase ASCII, and Unicode's table would turn ASCII `m` into `rn`
//!    and `I` into `l`.
//! 2. Compatibility forms are decomposed (NFKC, from `unicode-normalization`):
//!    fullwidth and halfwidth forms, mathematical alphanumerics, ligatures,
//!    circled and superscript letters, the other spaces.
//! 3. What is still not ASCII is mapped to its prototype in Unicode's
//!    confusables table (the skeleton of UTS #39, from `unicode-security`,
//!    kept by unicode-rs and generated from the Unicode Consortium's
//!    `confusables.txt`): Cyrillic, Greek, Armenian, Cherokee ... look-alikes
//!    of Latin letters, look-alike punctuation (`‹`, `｜`, `∶`). A capital
//!    whose prototype is `l` (Cyrillic `І`, Greek `Ι`: the table maps them
//!    like ASCII `I`) folds to `i`, as ASCII `I` does in step 1, and a
//!    character whose prototype is `rn` (the table's for `m`-like letters)
//!    folds to `m`.
//! 4. Combining marks are dropped (`ï` matches `i`), and so are the
//!    default-ignorable characters the skeleton drops (zero-width characters,
//!    variation selectors, tag characters).
//! 5. The result is lowercased.
//!
//! `unicode-security` was chosen over `decancer`: it is the Consortium's own
//! table (Unicode 18 in 0.1.3) with no rules of its own, shares its
//! normalization crate with this one, and maps one character at a time,
//! which is what keeps the map back to the original simple. `decancer` adds
//! a hand-kept table, leetspeak and separator rules of its own: more false
//! positives in honest text, and matches found only as literal strings.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// `text` folded for matching: see the module documentation.
pub fn fold(text: &str) -> String {
    Folded::new(text).text
}

/// Folded text with, for each of its bytes, where the character that
/// produced it starts in the original, so that a match in the folded text
/// can be mapped back to the original text it came from.
#[derive(Debug, Clone)]
pub struct Folded {
    /// The folded text.
    pub text: String,
    /// For each byte of `text`, the byte offset in the original of the
    /// character it was folded from. Empty when the original was ASCII (the
    /// offsets are then the same).
    from: Vec<usize>,
    /// Byte length of each original character a folded byte came from,
    /// index for index with `from`.
    width: Vec<u8>,
}

impl Folded {
    /// Folds `text`, keeping the map back to it.
    pub fn new(text: &str) -> Folded {
        if text.is_ascii() {
            return Folded {
                text: text.to_ascii_lowercase(),
                from: Vec::new(),
                width: Vec::new(),
            };
        }
        let mut folded = String::with_capacity(text.len());
        let mut from = Vec::with_capacity(text.len());
        let mut width = Vec::with_capacity(text.len());
        for (at, c) in text.char_indices() {
            let before = folded.len();
            fold_char(c, &mut folded);
            let n = folded.len() - before;
            from.extend(std::iter::repeat_n(at, n));
            // A char is at most 4 bytes.
            width.extend(std::iter::repeat_n(c.len_utf8() as u8, n));
        }
        Folded {
            text: folded,
            from,
            width,
        }
    }

    /// The byte range of the original text that the folded bytes `range`
    /// came from: from the start of the character of its first byte to the
    /// end of the character of its last. An empty range maps to an empty
    /// range.
    pub fn original(&self, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
        if self.from.is_empty() || range.is_empty() {
            return range;
        }
        let start = self.from[range.start];
        let last = range.end - 1;
        start..self.from[last] + usize::from(self.width[last])
    }
}

/// Appends the folded form of `c` to `out`.
fn fold_char(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
    for d in std::iter::once(c).nfkc() {
        if d.is_ascii() {
            out.push(d.to_ascii_lowercase());
            continue;
        }
        let mut buf = [0u8; 4];
        let mut proto = String::new();
        for p in unicode_security::skeleton(d.encode_utf8(&mut buf)) {
            if !is_combining_mark(p) {
                proto.extend(p.to_lowercase());
            }
        }
        match proto.as_str() {
            "l" if d.is_uppercase() => proto = "i".into(),
            // The table's prototype for `m`-like letters (`ṃ`): as a
            // single character it can only have stood for `m`.
            "rn" => proto = "m".into(),
            _ => {}
        }
        out.push_str(&proto);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_fold_to_ascii() {
        for (text, plain) in [
            ("IGNORE Previous", "ignore previous"),
            ("Ѕystem:", "system:"),
            ("ｉｇｎｏｒｅ　ｐｒｅｖｉｏｕｓ", "ignore previous"),
            ("𝐢𝐠𝐧𝐨𝐫𝐞", "ignore"),
            ("ІGNORE", "ignore"),
            ("ΗUMAN:", "human:"),
            ("аѕѕіѕtаnt", "assistant"),
            ("＜｜im_start｜＞", "<|im_start|>"),
            ("ïgnörë", "ignore"),
            ("in\u{200b}structions\u{fe0f}", "instructions"),
            ("ﬁle", "file"),
            ("ṃodel", "model"),
        ] {
            assert_eq!(fold(text), plain, "{text}");
        }
    }

    #[test]
    fn matches_map_back_to_the_original() {
        let text = "ok Ѕystem: go";
        let f = Folded::new(text);
        let at = f.text.find("system:").unwrap();
        let r = f.original(at..at + "system:".len());
        assert_eq!(&text[r], "Ѕystem:");
        let ascii = Folded::new("A Human: x");
        assert_eq!(ascii.original(2..8), 2..8);
        let wide = "ｉｇｎｏｒｅ!";
        let f = Folded::new(wide);
        assert_eq!(&wide[f.original(0..6)], "ｉｇｎｏｒｅ");
    }

    #[test]
    fn other_scripts_keep_their_letters_when_not_look_alikes() {
        // Folding is for matching; what matters is that ordinary words of
        // other scripts do not fold into the English markers.
        for text in ["数据库查询", "Получить список", "قائمة الملفات", "검색"]
        {
            let f = fold(text);
            assert!(!f.contains("system") && !f.contains("ignore"), "{f}");
        }
    }
}
