//! The characters no model should read: escape sequences, controls, and
//! characters that show nothing or change the direction of what follows.
//! They are how text is hidden from the person who reads a tool list and
//! still shown to the model: a terminal escape that erases a line, a bidi
//! override that reverses one, tag characters or variation selectors that
//! spell arbitrary bytes after one visible character.

use std::sync::LazyLock;

use regex::Regex;

use super::Findings;

/// ANSI escape sequences (ECMA-48), with their parameters: CSI (`ESC [` or
/// C1 `U+009B`, parameters, final byte); OSC, DCS, SOS, PM and APC strings
/// (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` or their C1 forms, up to
/// `BEL`, `ESC \` or C1 `ST`, or to the end when unterminated); other
/// escapes (`ESC`, intermediates, final byte).
///
/// One regex rather than a terminal parser crate (`vte`,
/// `strip-ansi-escapes`): every control character left over (a lone `ESC`,
/// any C1) is removed afterwards anyway, so this only has to take away the
/// printable parameter bytes of a sequence, and the sanitizer needs to know
/// that something was removed, which those crates do not say.
static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:\x1b\[|\u{9b})[0-?]*[ -/]*[@-~]?",
        r"|(?:\x1b[\]PX^_]|[\u{9d}\u{90}\u{98}\u{9e}\u{9f}])[^\x07\x1b\u{9c}]*(?:\x07|\x1b\\|\u{9c})?",
        r"|\x1b[ -/]*[0-~]",
    ))
    .expect("a valid regex")
});

/// Zero-width joiner and non-joiner: kept only between two visible
/// non-ASCII characters (emoji sequences, Persian, Indic scripts), where
/// they shape the text; stripped elsewhere.
const JOINERS: [char; 2] = ['\u{200C}', '\u{200D}'];
/// Text and emoji presentation selectors (VS15, VS16): kept only right
/// after a visible non-ASCII symbol (`❤️`), where they choose how it is
/// drawn; every other variation selector is stripped.
const PRESENTATION: [char; 2] = ['\u{FE0E}', '\u{FE0F}'];

/// Characters stripped wherever they are (but see [`JOINERS`] and
/// [`PRESENTATION`]): Unicode's Default_Ignorable_Code_Point set
/// (zero-width characters, bidi marks, embeddings, overrides and isolates,
/// invisible operators, fillers, the BOM, variation selectors U+FE00–FE0F
/// and U+E0100–E01EF, tag characters U+E0000–E007F and the rest of that
/// plane), plus the interlinear annotation characters. The list is
/// Unicode's, written out because it is short and matched per character;
/// a test checks it against `unicode-security`'s copy of the property.
pub(super) fn hidden(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Line terminators other than `\n`: carriage return, line and paragraph
/// separators, next line, vertical tab, form feed. Each becomes `\n` (a
/// `\r\n` pair one `\n`), so a line start is a line start for the turn
/// markers and for the reader alike.
fn line_end(c: char) -> bool {
    matches!(
        c,
        '\r' | '\u{2028}' | '\u{2029}' | '\u{0085}' | '\u{000B}' | '\u{000C}'
    )
}

/// `text` without escape sequences, controls (but `\n` and `\t`) and
/// hidden characters; other line ends made `\n`. Sets `found.hidden` when
/// anything but a `\r` went.
pub(super) fn strip(text: &str, found: &mut Findings) -> String {
    let no_ansi = ANSI.replace_all(text, "");
    if no_ansi.len() != text.len() {
        found.hidden = true;
    }
    let mut out = String::with_capacity(no_ansi.len());
    let mut chars = no_ansi.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' => out.push('\n'),
            c if line_end(c) => {
                found.hidden = true;
                out.push('\n');
            }
            c if JOINERS.contains(&c) || PRESENTATION.contains(&c) => out.push(c),
            c if c.is_control() || hidden(c) => found.hidden = true,
            c => out.push(c),
        }
    }
    settle_joiners(&out, found)
}

/// `text` with every character a reader would not see, or that would turn
/// what follows around, written as `<U+XXXX>`: controls (but `\n` and `\t`),
/// other line ends, and the [`hidden`] set, joiners and selectors included.
/// For text a person must judge as it is (an approval's arguments), where
/// removing a character would show them something other than what the tool
/// will receive.
pub fn reveal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\n' | '\t') || !(c.is_control() || line_end(c) || hidden(c)) {
            out.push(c);
        } else {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        }
    }
    out
}

/// A visible character other than ASCII: what a joiner may stand beside.
fn visible_wide(c: char) -> bool {
    !c.is_ascii() && !c.is_whitespace() && !c.is_control() && !hidden(c)
}

/// `text` without the joiners and presentation selectors that are not in
/// a place where they shape text (see [`JOINERS`], [`PRESENTATION`]).
/// Only removes, so it never makes a new match for the markers (folding
/// ignores these characters) and running it twice changes nothing.
pub(super) fn settle_joiners(text: &str, found: &mut Findings) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        // What it would stand between: the last character kept (so a
        // selector removed just before does not count) and the next one
        // (a joiner or selector there is never `visible_wide`).
        let before = out.chars().next_back();
        let after = chars.peek().copied();
        let keep = if JOINERS.contains(&c) {
            before.is_some_and(|b| visible_wide(b) || PRESENTATION.contains(&b))
                && after.is_some_and(visible_wide)
        } else if PRESENTATION.contains(&c) {
            before.is_some_and(|b| visible_wide(b) && !b.is_alphanumeric())
        } else {
            true
        };
        if keep {
            out.push(c);
        } else {
            found.hidden = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written list is Unicode's Default_Ignorable_Code_Point as
    /// `unicode-security` has it (its skeleton drops exactly those), plus
    /// the interlinear annotation characters.
    #[test]
    fn hidden_is_default_ignorable() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let ignorable = unicode_security::skeleton(c.encode_utf8(&mut buf))
                .next()
                .is_none();
            let annotation = ('\u{FFF9}'..='\u{FFFB}').contains(&c);
            assert_eq!(hidden(c), ignorable || annotation, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn escapes_of_every_kind_go() {
        let mut found = Findings::default();
        let s = strip(
            "a\x1b[1;31mb\x1b]8;;http://evil\x1b\\c\x1b]0;t\x07d\x1bPq#0\x1b\\e\u{9b}2Jf\x1b(Bg\x1b7h\u{90}dcs\u{9c}i\x1b]unterminated",
            &mut found,
        );
        assert_eq!(s, "abcdefghi");
        assert!(found.hidden);
    }

    #[test]
    fn line_ends_become_newlines() {
        let mut found = Findings::default();
        assert_eq!(strip("a\r\nb\rc", &mut found), "a\nb\nc");
        assert!(!found.hidden, "CRLF is ordinary text");
        assert_eq!(
            strip("a\u{2028}b\u{2029}c\u{85}d", &mut found),
            "a\nb\nc\nd"
        );
        assert!(found.hidden);
    }

    #[test]
    fn joiners_stay_only_where_they_shape_text() {
        for (text, kept) in [
            ("👨\u{200D}👩\u{200D}👧", true),
            ("می\u{200C}خواهم", true),
            ("❤\u{FE0F}", true),
            ("❤\u{FE0F}\u{200D}🔥", true),
            ("a\u{200D}b", false),
            ("a\u{FE0F}", false),
            ("❤\u{FE0F}\u{FE0F}", false),
            ("é\u{200D}\u{200D}é", false),
            ("x\u{FE01}", false),
            ("x\u{E0100}\u{E0101}", false),
        ] {
            let mut found = Findings::default();
            let out = strip(text, &mut found);
            assert_eq!(out == text, kept, "{text:?} -> {out:?}");
            assert_eq!(found.hidden, !kept, "{text:?}");
        }
    }
}
