//! Redaction on arbitrary text. Properties:
//!
//! - it never panics;
//! - it is idempotent: redacting a redacted text changes nothing;
//! - a secret the redactor matches on a line of its own is matched in any
//!   context: placed on a line between two arbitrary texts, it does not
//!   survive (the context may hold copies of its own, which may survive
//!   when glued into other words, so occurrences are counted).
//!
//! Input: the first byte picks the secret; the rest, as text, is split at
//! its first U+0001 into what comes before and after it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::redact::redact;

/// `(line, secret)`: a line holding a credential in a shape the redactor
/// knows, and the part of it that must not survive. Fake values in the
/// providers' documented shapes.
const SECRETS: &[(&str, &str)] = &[
    ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
        "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    ),
    (
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "sk_live_4eC39HqLyjWDarjtT1zdp7dcAbCdEf",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dcAbCdEf",
    ),
    (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "Authorization: Bearer 0123456789abcdefghijKLMNOPQRST",
        "0123456789abcdefghijKLMNOPQRST",
    ),
    ("password=hunter2-correct-horse", "hunter2-correct-horse"),
    (
        r#"{"api_key": "q8Wd2LmZ0pXr7TnVb3Ky"}"#,
        "q8Wd2LmZ0pXr7TnVb3Ky",
    ),
    (
        "postgres://admin:Sup3rS3cretPw@db.internal.example:5432/app",
        "Sup3rS3cretPw",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB",
    ),
];

fn idempotent(text: &str) -> String {
    let once = redact(text);
    let twice = redact(&once.text);
    assert_eq!(
        twice.text, once.text,
        "redacting twice changes the text of {text:?}"
    );
    once.text
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.match_indices(needle).count()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    idempotent(&text);
    let (before, after) = text.split_once('\u{1}').unwrap_or((&text, ""));
    let (line, secret) = SECRETS[usize::from(pick) % SECRETS.len()];
    let alone = redact(line).text;
    assert!(!alone.contains(secret), "{line:?} alone is not redacted");
    let placed = format!("{before}\n{line}\n{after}");
    let out = idempotent(&placed);
    assert!(
        count(&out, secret) <= count(before, secret) + count(after, secret),
        "{secret:?} survives redaction in {placed:?}: {out:?}"
    );
});
