//! The arguments of a call as a person reads them in an approval question
//! (`quickforge_core::shown::approval_arguments`), on arbitrary text: it
//! never panics; no invisible, control or direction character reaches the
//! person as such (each is written out as `<U+XXXX>`); the text is bounded;
//! and a credential the script put in its arguments never shows, whatever
//! surrounds it.
//!
//! Input: the bytes are a string value of the arguments (JSON-escaped, as
//! the router makes them), beside a GitHub token in another field; the
//! same bytes as raw arguments text are checked for the first two
//! properties.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_core::shown::{MAX_APPROVAL_ARGS, approval_arguments};
use quickforge_fuzz::stripped;

/// Longest cut marker: "… [N more bytes cut]" with a 20-digit N.
const MARKER: usize = "… [".len() + 20 + " more bytes cut]".len();

const TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

fn check(shown: &str) {
    if let Some(c) = shown.chars().find(|&c| stripped(c)) {
        panic!("U+{:04X} shown as is in {shown:?}", c as u32);
    }
    assert!(
        shown.len() <= MAX_APPROVAL_ARGS + MARKER,
        "{} bytes shown",
        shown.len()
    );
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    check(&approval_arguments(&text));
    // Before the cut: a token past the limit is cut away, not shown.
    let head: String = text.chars().take(200).collect();
    let args = serde_json::json!({"note": head, "token": TOKEN, "after": head}).to_string();
    let shown = approval_arguments(&args);
    check(&shown);
    assert!(!shown.contains(TOKEN), "the token shows in {shown:?}");
    // (unless the fuzzer wrote that half itself, which is no token)
    if !head.contains(&TOKEN[..20]) {
        assert!(!shown.contains(&TOKEN[..20]), "half the token shows in {shown:?}");
    }
});
