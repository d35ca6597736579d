//! Cutting text to a byte limit on a character boundary, and the rule for
//! stash keys (shared by the native gateway and the edge provider).

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

#[cfg(test)]
mod tests {
    use super::*;

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
