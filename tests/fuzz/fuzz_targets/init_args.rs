//! The judge `quickforge init` asks which parts of a server's arguments,
//! URL and environment are credentials (`quickforge_filters::secrets`), on
//! arbitrary input. Properties:
//!
//! - it never panics, and judges the same input the same way twice;
//! - what it finds are ranges of the value: in bounds, on character
//!   boundaries, never empty, sorted and never overlapping (so a caller can
//!   replace each with a `${VAR}`);
//! - arguments go in pairs: after a flag that names a secret, the whole
//!   next argument is one (unless it is a flag itself);
//! - a credential of a known shape is found wherever it sits: as a path
//!   segment of a URL between arbitrary segments, as the value of any
//!   environment variable, after `--api-key`.
//!
//! Input: the first byte picks the credential; the rest, as text, is split
//! at U+0001 into the arguments (one a line), a variable's name, and two
//! path segments.
#![no_main]

use std::ops::Range;

use libfuzzer_sys::fuzz_target;
use quickforge_filters::secrets::{Secret, in_arg, in_args, in_env, in_value, is_secret_flag};

/// Fake credentials in the providers' documented shapes, and one with no
/// prefix that only its randomness gives away.
const SECRETS: &[&str] = &[
    "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dcAbCdEf",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "AKIAIOSFODNN7EXAMPLE",
    "Xk9Qm2Lp7Rt4Vw8Yz3Bc6Dn1Fg5Hj0",
];

/// The ranges of `found` are usable in `value`.
fn well_formed(value: &str, found: &[Secret]) {
    let mut end = 0;
    for s in found {
        let Range { start, end: stop } = s.range.clone();
        assert!(start >= end, "{value:?}: overlapping or unsorted {found:?}");
        assert!(start < stop && stop <= value.len(), "{value:?}: {found:?}");
        assert!(value.is_char_boundary(start) && value.is_char_boundary(stop));
        end = stop;
    }
}

/// Whether `found` covers `range` of the value.
fn covers(found: &[Secret], range: &Range<usize>) -> bool {
    found
        .iter()
        .any(|s| s.range.start <= range.start && range.end <= s.range.end)
}

/// Path-segment text: no separator of a URL's parts.
fn segment(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(64)
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let secret = SECRETS[usize::from(pick) % SECRETS.len()];
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.split('\u{1}');
    let mut next = || parts.next().unwrap_or("").to_string();
    let (args, name, a, b) = (next(), next(), next(), next());

    let args: Vec<&str> = args.split('\n').collect();
    let found = in_args(&args);
    assert_eq!(found, in_args(&args), "deterministic");
    assert_eq!(found.len(), args.len());
    for (i, (arg, f)) in args.iter().zip(&found).enumerate() {
        well_formed(arg, f);
        if i > 0 && is_secret_flag(args[i - 1]) && !arg.is_empty() && !arg.starts_with('-') {
            assert!(covers(f, &(0..arg.len())), "{:?} then {arg:?}: {f:?}", args[i - 1]);
        }
        well_formed(arg, &in_value(arg));
        well_formed(arg, &in_env(&name, arg));
    }

    // A credential after `--api-key`, and under any name.
    assert!(covers(&in_arg(Some("--api-key"), secret), &(0..secret.len())));
    assert!(covers(&in_env(&name, secret), &(0..secret.len())), "{name:?}");

    // A credential as a path segment, between arbitrary ones.
    let (a, b) = (segment(&a), segment(&b));
    let url = format!("https://mcp.example.com/{a}/{secret}/{b}");
    let found = in_value(&url);
    well_formed(&url, &found);
    let at = "https://mcp.example.com/".len() + a.len() + 1;
    assert!(covers(&found, &(at..at + secret.len())), "{url:?}: {found:?}");
});
