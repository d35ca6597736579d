//! Which field names are sensitive, and which values under them are no secret.

use super::{ALREADY_REDACTED_VALUE_RE, MARK_NAMED};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::LazyLock;

/// The official BIP-39 English word list (2048 words), one per line.
static BIP39_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("bip39_english.txt")
        .lines()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect()
});

/// Whether a field name is sensitive (password, secret, private key, token compounds, mnemonic…).
///
/// The name is split into lowercase words on every non-alphanumeric character and at
/// camelCase boundaries (`privateKey`, `X-Api-Key`, `APIKey`, `client_secret` all split
/// into words). Then:
///
/// * A word `password`, `passwd`, `passphrase`, `pwd`, `ssn`, `cvv`, `cvc` anywhere, or a
///   word *ending* in `password`/`passwd`/`passphrase` (`PGPASSWORD`), is sensitive.
/// * Otherwise the *head* word decides: the last word, after dropping trailing fillers
///   such as `value`, `string`, `raw`, `b64`, `hash`, `header` (`token_value` → `token`).
///   Sensitive heads: `token` (or a word ending in `token`, like `accesstoken`), `secret`
///   (or ending in it), `secrets`, `credential(s)`, `creds`, `cookie(s)`, `authorization`,
///   `auth`, `mnemonic`, `pass`, `pw`, session-cookie names (`sessionid`, `jsessionid`…),
///   flattened key names (`apikey`, `privatekey`…); `key` only with a qualifier such as
///   `api`, `private`, `secret`, `access`, `signing` (`api_key`, `aws_secret_access_key`);
///   `phrase`/`words` with `seed`/`recovery`/`mnemonic`; `number` with `card`/`cc`/`credit`
///   /`security`; `card` with `credit`/`debit`.
///
/// So `token_count`, `max_tokens`, `tokens_used`, `token_type`, `tokenizer`, `keyboard`,
/// `monkey`, `secretary`, `secret_name`, `key`, `public_key`, `cookie_domain`, `seed` (a
/// sampling parameter) and `private_key_id` are not sensitive. Pagination and tokenizer
/// tokens (`next_token`, `page_token`, `eos_token`…) are not secrets either, and the model
/// may need them.
pub fn is_sensitive_key(name: &str) -> bool {
    let words = key_words(name);
    if words.is_empty() {
        return false;
    }
    if words.iter().any(|w| is_strong_word(w)) {
        return true;
    }
    let mut end = words.len();
    while end > 1 && KEY_FILLERS.contains(&words[end - 1].as_str()) {
        end -= 1;
    }
    let head = words[end - 1].as_str();
    let quals = &words[..end - 1];
    let has_qual = |set: &[&str]| quals.iter().any(|q| set.contains(&q.as_str()));
    match head {
        "token" => !has_qual(NON_SECRET_TOKEN_QUALIFIERS),
        "key" | "keys" => has_qual(KEY_QUALIFIERS),
        "phrase" | "words" => {
            has_qual(&["seed", "recovery", "secret", "backup", "mnemonic", "wallet"])
        }
        "number" | "num" | "no" => has_qual(&["card", "cc", "credit", "ssn", "security"]),
        "card" => has_qual(&["credit", "debit"]),
        h if SENSITIVE_HEADS.contains(&h) => true,
        h => (h.len() > 5 && h.ends_with("token")) || h.ends_with("secret"),
    }
}

const KEY_FILLERS: &[&str] = &[
    "value",
    "val",
    "string",
    "str",
    "raw",
    "plain",
    "plaintext",
    "text",
    "b64",
    "base64",
    "hex",
    "hash",
    "enc",
    "encrypted",
    "encoded",
    "data",
    "bytes",
    "content",
    "header",
    "field",
    "param",
];

const SENSITIVE_HEADS: &[&str] = &[
    "secret",
    "secrets",
    "credential",
    "credentials",
    "creds",
    "cookie",
    "cookies",
    "authorization",
    "auth",
    "mnemonic",
    "pass",
    "pw",
    "sessionid",
    "jsessionid",
    "phpsessid",
    "sessid",
    "sid",
    "seedphrase",
    "recoveryphrase",
    "apikey",
    "apikeys",
    "privkey",
    "privatekey",
    "secretkey",
    "accesskey",
    "signingkey",
    "masterkey",
    "authkey",
    "sshkey",
    "cvv",
    "cvc",
    "ssn",
];

const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "private",
    "priv",
    "secret",
    "access",
    "signing",
    "sign",
    "encryption",
    "decryption",
    "master",
    "auth",
    "client",
    "ssh",
    "pgp",
    "gpg",
    "session",
    "app",
    "application",
    "consumer",
    "service",
    "account",
    "root",
    "aes",
    "hmac",
    "shared",
    "webhook",
    "license",
    "subscription",
    "admin",
    "deploy",
    "storage",
    "jwt",
    "crypto",
    "wallet",
    "seed",
];

const NON_SECRET_TOKEN_QUALIFIERS: &[&str] = &[
    "next",
    "page",
    "continuation",
    "pagination",
    "cursor",
    "sync",
    "resume",
    "prev",
    "previous",
    "start",
    "end",
    "last",
    "first",
    "eos",
    "bos",
    "pad",
    "unk",
    "sep",
    "cls",
    "mask",
    "special",
    "stop",
];

fn is_strong_word(w: &str) -> bool {
    matches!(w, "pwd" | "ssn" | "cvv" | "cvv2" | "cvc" | "passcode")
        || w.ends_with("password")
        || w.ends_with("passwd")
        || w.ends_with("passphrase")
}

/// Splits a field name into lowercase words at separators and camelCase boundaries.
pub(crate) fn key_words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().take(256).collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = match prev {
                Some(p) => p.is_lowercase() || p.is_numeric() || (p.is_uppercase() && next_lower),
                None => false,
            };
            if boundary {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Whether a JSON value under a sensitive name can hold a secret worth replacing.
pub(crate) fn holds_secret(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(_) => false,
        Value::String(s) => !s.is_empty() && s != MARK_NAMED,
        Value::Number(_) => true,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

pub(crate) fn is_bip39_word(w: &str) -> bool {
    let bytes = w.as_bytes();
    if !(3..=8).contains(&bytes.len()) || !bytes.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let mut buf = [0u8; 8];
    for (d, s) in buf.iter_mut().zip(bytes) {
        *d = s.to_ascii_lowercase();
    }
    std::str::from_utf8(&buf[..bytes.len()]).is_ok_and(|lower| BIP39_WORDS.contains(lower))
}

/// Values that are obviously not secrets even under a sensitive name, and values that a
/// more specific rule already redacted (`Bearer [REDACTED:jwt]`).
pub(crate) fn is_placeholder_value(v: &str) -> bool {
    let v = v.trim();
    if v.is_empty()
        || v.starts_with("[REDACTED")
        || ALREADY_REDACTED_VALUE_RE.is_match(v)
        || v.starts_with("${")
        || v.starts_with("{{")
        || v.chars()
            .all(|c| matches!(c, '*' | '•' | '.' | '-' | 'x' | 'X'))
    {
        return true;
    }
    const WORDS: &[&str] = &[
        "null",
        "nil",
        "none",
        "undefined",
        "true",
        "false",
        "empty",
        "missing",
        "required",
        "invalid",
        "expired",
        "revoked",
        "unset",
        "n/a",
        "redacted",
        "hidden",
        "masked",
        "<redacted>",
        "<hidden>",
    ];
    WORDS.iter().any(|w| v.eq_ignore_ascii_case(w))
}
