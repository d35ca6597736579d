//! Cutting text to a byte limit on a character boundary.

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
    fn clip_marks_the_cut() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("abcdef", 3), "abc… [3 more bytes cut]");
        assert_eq!(clip("ééé", 3), "é… [4 more bytes cut]");
    }
}
