//! Cutting text to a byte limit on a character boundary, the gateway's own
//! type paths out of its error texts, and the rule for stash keys (shared by
//! the native gateway and the edge provider).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Longest stash key, in bytes. Keys are names, not data.
pub const MAX_STASH_KEY_LEN: usize = 256;

/// Whether `key` is a stash key: 1 to [`MAX_STASH_KEY_LEN`] bytes of
/// `A-Z a-z 0-9 _ - . : /`, safe to log, to show a model, and to scope by
/// prefix (a key-value store's key is built from it).
pub fn is_stash_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_STASH_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:/".contains(&b))
}

/// `text` cut to at most `max` bytes at a character boundary, with a marker
/// saying how much was cut, so a reader knows the text is incomplete.
pub fn clip(text: &str, max: usize) -> String {
    clip_more(text, max, 0)
}

/// [`clip`] for a text that was already cut by `more` bytes before it got
/// here: the marker counts those too. With `more > 0` the marker is always
/// added.
pub fn clip_more(text: &str, max: usize, more: usize) -> String {
    if text.len() <= max && more == 0 {
        return text.to_string();
    }
    let cut = text.floor_char_boundary(max);
    format!(
        "{}… [{} more bytes cut]",
        &text[..cut],
        text.len() - cut + more
    )
}

/// A Rust type path of three or more segments (`rmcp::transport::worker::
/// WorkerTransport<…>`), with its generic arguments: what a library's error
/// prints when it names a type (`std::any::type_name`).
static TYPE_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+::([A-Za-z_][A-Za-z0-9_]*)(?:<[^\s\]\)]*>)?")
        .expect("a valid regex")
});

/// `text` with each Rust type path of three or more segments cut to its last
/// segment, generic arguments dropped: an error of the gateway's libraries
/// names their internal types (`Transport [rmcp::transport::worker::…]`),
/// which tell a model nothing and an attacker the gateway's make
/// (`ARCHITECTURE.md`, "Errors": internals are always removed). Two-segment
/// paths (`std::fs`, `f64::EPSILON`) are kept: too often a word of the text.
pub fn without_type_paths(text: &str) -> Cow<'_, str> {
    TYPE_PATH.replace_all(text, "$1")
}

/// How far back from its limit [`clip_between_words`] looks for a word's
/// end, in bytes: longer than any credential shape (a PEM block is cut
/// anyway, and the PEM rule takes a truncated one).
const WORD_LOOKBACK: usize = 1024;

/// [`clip`], but the cut falls after whitespace or JSON punctuation (`"`,
/// `,`, `:`, `{`, `}`, `[`, `]`) when one lies in the last
/// [`WORD_LOOKBACK`] bytes before `max`: a credential holds none of these,
/// so the cut never leaves half of one for a redaction that runs after it
/// (the gateway's log writer redacts every line it writes). For text that
/// is cut *before* it is redacted; text redacted first needs no care.
pub fn clip_between_words(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let end = text.floor_char_boundary(max);
    let from = end.saturating_sub(WORD_LOOKBACK);
    let cut = text.as_bytes()[from..end]
        .iter()
        .rposition(|b| b.is_ascii_whitespace() || b"\",:{}[]".contains(b))
        .map_or(end, |i| from + i + 1);
    clip_more(&text[..cut], cut, text.len() - cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_paths_lose_their_crates_and_generics() {
        let text = "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: closed";
        assert_eq!(
            without_type_paths(text),
            "Transport [WorkerTransport] error: closed"
        );
        for kept in [
            "std::fs failed",
            "f64::EPSILON",
            "a::b",
            "see https://x.dev/a::b",
        ] {
            assert_eq!(without_type_paths(kept), kept);
        }
    }

    #[test]
    fn a_cut_between_words_leaves_a_token_whole_or_out() {
        let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        let text = format!("{{\"a\":\"{}\",\"t\":\"{token}\"}}", "x".repeat(90));
        let cut = clip_between_words(&text, 110);
        assert!(!cut.contains("ghp_"), "{cut}");
        assert!(
            cut.ends_with(&format!("… [{} more bytes cut]", text.len() - 103)),
            "{cut}"
        );
        assert_eq!(clip_between_words("short", 10), "short");
        // no word end in reach: a plain cut
        assert!(clip_between_words(&"y".repeat(3000), 2000).starts_with(&"y".repeat(2000)));
    }

    #[test]
    fn stash_keys_are_short_plain_names() {
        for ok in [
            "a",
            "issues/open:2024-01.v1",
            &"k".repeat(MAX_STASH_KEY_LEN),
        ] {
            assert!(is_stash_key(ok), "{ok}");
        }
        for bad in ["", "a b", "ключ", "a\0", &"k".repeat(MAX_STASH_KEY_LEN + 1)] {
            assert!(!is_stash_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn clip_marks_the_cut() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("abcdef", 3), "abc… [3 more bytes cut]");
        assert_eq!(clip("ééé", 3), "é… [4 more bytes cut]");
    }
}
