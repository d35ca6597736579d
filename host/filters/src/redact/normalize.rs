//! The text as a script could read it after one line of decoding, so that an encoded
//! secret is found as if it were plain.
//!
//! A server (or a model steering one) can hand a secret over in a form no rule knows,
//! which the script then undoes in one line: `\u0067hp_…` (`JSON.parse`), `ghp%5F…`
//! (`decodeURIComponent`), `&#103;hp_…` (an HTML page), base64 (`atob`), or a token
//! wrapped over lines or split into groups (`.replace(/\s/g, "")`). Three views:
//!
//! * [`redact_encoded_lines`]: each line with a `\u` escape, a `%XX` or an HTML entity
//!   is decoded (in that order, once each) and redacted; when the decoded line yields
//!   more markers than the line as it is, the decoded, redacted line replaces it (so a
//!   line holding a secret is shown decoded; others are left as they are).
//! * [`redact_base64_blobs`]: a base64 blob of 20+ characters that decodes to text in
//!   which a rule finds a secret becomes `[REDACTED:base64]`.
//! * [`redact_wrapped_tokens`]: token-like chunks (with a digit, an inner capital or an
//!   `_`) separated by a line break or one or two spaces are joined, also with one
//!   chunk of any shape across a line break on either side, and a credential the rule
//!   set finds across a join is replaced, separators included.
//!
//! Residuals: an encoding applied twice on one line is undone over the rounds of
//! [`super::redact`] (four at most); a token split into all-lowercase groups is not
//! joined, beyond one group at either end of a line (prose would be); encodings other than these (hex of a token, ROT13, one
//! character per line) are not undone.

use super::{
    MARK_BASE64, MARK_KEY, Scope, base_rules, re, replace_matches, replace_ranges, rules, shapes,
};
use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::Regex;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

/// Something a script decodes in one call: a `\u` escape, a `%XX`, an HTML entity.
static ENCODED_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\\u[0-9A-Fa-f]{4}|%[0-9A-Fa-f]{2}|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});",
    )
});

/// A run of `\u` escapes (a surrogate pair is two).
static UNICODE_ESCAPES_RE: LazyLock<Regex> = LazyLock::new(|| re(r"(?:\\u[0-9A-Fa-f]{4})+"));

/// A base64 blob standing alone, standard or URL-safe alphabet, 20+ characters (15+
/// bytes: shorter blobs decode to too little text to hold a credential a rule knows).
static BASE64_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:^|[^A-Za-z0-9+/=_-])([A-Za-z0-9+/_-]{20,}={0,2})"));

/// Runs of chunks separated by a line break (`\n`, `\r\n` or `\r`, also escaped as in
/// JSON), or one or two spaces: the candidates for a wrapped or grouped token. A
/// chunk may be one character long (the last of a token wrapped at a fixed width).
static CHUNKS_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        "{CHUNK}(?:(?:{SEPARATOR}){CHUNK})+",
        CHUNK = r"[A-Za-z0-9_+/=.:-]+",
        SEPARATOR = SEPARATOR
    ))
});

/// What separates two chunks of a run: a line break with the spaces around it, or one
/// or two spaces. Chunks hold no space and no backslash, so within a run of
/// [`CHUNKS_RE`] every match of this is a separator, and the rest are the chunks.
const SEPARATOR: &str = r"[ \t]*(?:\r\n|\r|\n|\\r\\n|\\r|\\n)[ \t]*|[ \t]{1,2}";

static SEPARATOR_RE: LazyLock<Regex> = LazyLock::new(|| re(SEPARATOR));

/// Base64 as servers write it: either alphabet (`+/` or `-_`), padding or not.
const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
static STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
static URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// `s` decoded as base64 in either alphabet, padded or not.
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    if s.contains(['-', '_']) {
        URL_SAFE.decode(s).ok()
    } else {
        STANDARD.decode(s).ok()
    }
}

/// Counts the markers in `text`.
fn markers(text: &str) -> usize {
    text.matches("[REDACTED").count()
}

/// Counts the markers of secrets (not of addresses, paths or stacks, which a decoded
/// blob may hold without holding a secret).
fn secret_markers(text: &str) -> usize {
    markers(text)
        - text.matches("[REDACTED:url]").count()
        - text.matches("[REDACTED:ip]").count()
        - text.matches("[REDACTED:path]").count()
        - text.matches("[REDACTED:stack]").count()
}

/// `line` with its `\u` escapes, HTML entities and percent-encoding undone, once each;
/// `None` when there was nothing to undo.
fn decode_line(line: &str) -> Option<String> {
    let mut s: Cow<'_, str> = Cow::Borrowed(line);
    if s.contains("\\u") {
        let decoded = UNICODE_ESCAPES_RE.replace_all(&s, |c: &regex::Captures<'_>| {
            // the JSON parser joins surrogate pairs; a lone surrogate stays escaped
            serde_json::from_str::<String>(&format!("\"{}\"", &c[0]))
                .unwrap_or_else(|_| c[0].to_string())
        });
        s = Cow::Owned(decoded.into_owned());
    }
    if s.contains('&') {
        s = Cow::Owned(html_escape::decode_html_entities(&s).into_owned());
    }
    if s.contains('%') {
        s = Cow::Owned(
            percent_encoding::percent_decode_str(&s)
                .decode_utf8_lossy()
                .into_owned(),
        );
    }
    (s != line).then(|| s.into_owned())
}

/// Each line that holds an encoding, decoded and redacted when that finds more than
/// the line as it is (see the module doc).
pub(crate) fn redact_encoded_lines(text: &str, scope: Scope) -> Cow<'_, str> {
    if !ENCODED_RE.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let decoded = ENCODED_RE
            .is_match(body)
            .then(|| decode_line(body))
            .flatten();
        if let Some(decoded) = decoded {
            let plain = base_rules(body, scope);
            let seen = base_rules(&decoded, scope);
            if markers(&seen) > markers(&plain) {
                out.push_str(&seen);
                out.push_str(&line[body.len()..]);
                changed = true;
                continue;
            }
        }
        out.push_str(line);
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// Base64 blobs whose decoded text holds a secret become `[REDACTED:base64]`.
pub(crate) fn redact_base64_blobs(text: &str) -> Cow<'_, str> {
    replace_matches(&BASE64_RE, text, true, |text, caps| {
        let m = caps.get(0)?;
        let blob = caps.get(1)?;
        let bytes = decode_base64(blob.as_str())?;
        let decoded = std::str::from_utf8(&bytes).ok()?;
        let printable = decoded
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'));
        if !printable || secret_markers(&base_rules(decoded, Scope::Everything)) == 0 {
            return None;
        }
        Some(format!("{}{MARK_BASE64}", &text[m.start()..blob.start()]))
    })
}

/// Whether a chunk looks like a piece of a token rather than a word: it has a digit,
/// a capital after its first letter, or an `_`.
fn token_like(chunk: &str) -> bool {
    chunk.len() >= 3
        && chunk
            .char_indices()
            .any(|(i, c)| c.is_ascii_digit() || c == '_' || (i > 0 && c.is_ascii_uppercase()))
}

/// Whether the text between two chunks holds a line break, real or escaped.
fn breaks_line(between: &str) -> bool {
    between.contains(['\n', '\r']) || between.contains("\\n") || between.contains("\\r")
}

/// Credentials wrapped over lines or split into groups (see the module doc). All
/// groups of the text are joined into one view (a line break between groups, which
/// no credential spans), so the rule set runs once per text, not once per group.
///
/// A group is a run of token-like chunks; and where a line break separates such a run
/// from a chunk that is not token-like, the run with that chunk is a group too (a
/// wrapped token's tail can be one character or all lowercase, its head can be cut
/// before the `_`). Both are kept, since a rule that wants a terminator after the token
/// fails on the longer one. Each chunk is in at most three groups: the view stays
/// linear in the text.
pub(crate) fn redact_wrapped_tokens(text: &str) -> Cow<'_, str> {
    let mut joined = String::new();
    // (offset in joined, offset in text) at the start of each chunk
    let mut starts: Vec<(usize, usize)> = Vec::new();
    for run in CHUNKS_RE.find_iter(text) {
        // (offset in text, chunk): the pieces between the separators
        let mut chunks: Vec<(usize, &str)> = Vec::new();
        let mut at = 0;
        for sep in SEPARATOR_RE.find_iter(run.as_str()) {
            chunks.push((run.start() + at, &run.as_str()[at..sep.start()]));
            at = sep.end();
        }
        chunks.push((run.start() + at, &run.as_str()[at..]));
        let broken = |i: usize| {
            let (before, previous) = chunks[i - 1];
            breaks_line(&text[before + previous.len()..chunks[i].0])
        };
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut i = 0;
        while i < chunks.len() {
            if !token_like(chunks[i].1) {
                i += 1;
                continue;
            }
            let first = i;
            while i < chunks.len() && token_like(chunks[i].1) {
                i += 1;
            }
            groups.push(first..i);
            if i < chunks.len() && broken(i) {
                groups.push(first..i + 1);
            }
            if first > 0 && broken(first) {
                groups.push(first - 1..i);
            }
        }
        for group in groups.into_iter().filter(|g| g.len() >= 2) {
            for &(at, chunk) in &chunks[group] {
                starts.push((joined.len(), at));
                joined.push_str(chunk);
            }
            joined.push('\n');
        }
    }
    if joined.is_empty() {
        return Cow::Borrowed(text);
    }
    let to_text = |j: usize| {
        let i = starts.partition_point(|(s, _)| *s <= j).saturating_sub(1);
        starts[i].1 + (j - starts[i].0)
    };
    let mut ranges = rules::secret_ranges(&joined);
    ranges.extend(shapes::JWT_RE.find_iter(&joined).map(|m| m.range()));
    let mut found: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        if r.is_empty() || joined[r.clone()].contains('\n') {
            continue;
        }
        let (start, end) = (to_text(r.start), to_text(r.end - 1) + 1);
        // one chunk alone is the plain rules' business
        if text[start..end].contains(|c: char| c.is_whitespace() || c == '\\') {
            found.push(start..end);
        }
    }
    replace_ranges(text, &rules::merge(found), MARK_KEY)
}
