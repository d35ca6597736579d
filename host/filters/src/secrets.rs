//! Which parts of an MCP server's configuration are credentials: the judge
//! `quickforge init` asks before it writes a client's servers into
//! forge.toml, so each credential becomes a `${VAR}` there and its value
//! stays with the client.
//!
//! A part is a credential when
//!
//! - **its name says so** ([`is_secret_name`]): an environment variable,
//!   header or query key named like `*TOKEN*`, `*KEY*`, `*SECRET*`,
//!   `*PASSWORD*`, `*AUTH*`, `*CREDENTIAL*`, `*SESSION*`, `PAT`, `PWD`...;
//! - **a flag before it says so** ([`in_arg`]): arguments are judged in
//!   pairs, `--api-key VALUE` makes `VALUE` a secret, and `--token=VALUE`
//!   (or `API_KEY=VALUE`) makes the part after `=` one;
//! - **it is a credential part of a URL** ([`in_value`]): the password (or
//!   a token-shaped user) of its user info, a query or fragment value under
//!   a secret name or of a credential's shape, a path segment of a
//!   credential's shape or after a segment such as `/key/` or `/token/`;
//! - **it has a credential's shape**, whatever it is called
//!   ([`looks_like_credential`]): whatever the redactor's rule set
//!   (gitleaks' provider shapes: `ghp_`, `github_pat_`, `sk-`, `xox…`,
//!   `AKIA…`, JWTs, PEM blocks...) removes as a credential, or a long
//!   random-looking run of letters and digits.
//!
//! What is found is a list of byte ranges of the value, so a caller moves
//! only the secret (`--token=${VAR}`, `https://host/v1/${VAR}/sse`) and
//! keeps the rest readable. Erring is one-sided on purpose: moving a value
//! that was no secret costs a line in the client's `env`; leaving a secret
//! costs the secret.
//!
//! Pure and linear in its input, so it is fuzzed (tests/fuzz,
//! `init_args`): the ranges are in bounds, on character boundaries, sorted,
//! never empty and never overlapping.

use std::ops::Range;

use crate::redact::{entropy, is_sensitive_key, redact};

/// A credential inside a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// Its bytes in the value.
    pub range: Range<usize>,
    /// The name that marked it (a flag, a query key, a path segment), when
    /// one did; a caller can name its variable after it.
    pub name: Option<String>,
}

impl Secret {
    fn new(range: Range<usize>, name: Option<&str>) -> Secret {
        Secret {
            range,
            name: name.map(str::to_string),
        }
    }

    fn shifted(mut self, by: usize) -> Secret {
        self.range = self.range.start + by..self.range.end + by;
        self
    }
}

/// Redaction markers that stand for a credential. The others (`url`, `ip`,
/// `path`, `stack`) hide infrastructure in error texts, which a config
/// rightly holds in clear.
const SECRET_MARKS: &[&str] = &[
    "[REDACTED]",
    "[REDACTED:token]",
    "[REDACTED:key]",
    "[REDACTED:jwt]",
    "[REDACTED:pem]",
    "[REDACTED:hex]",
    "[REDACTED:base64]",
    "[REDACTED:mnemonic]",
    "[REDACTED:card]",
];

/// Parts of a name that mark a credential wherever they appear in it
/// (`GITHUB_TOKEN`, `X-Api-Key`, `DB_PASSWORD`, `SESSIONID`), as the
/// config's header rule reads names. `key` is matched as a word instead
/// ([`SECRET_WORDS`]): as a part it would take `KEYBOARD` and `MONKEY`.
const SECRET_PARTS: &[&str] = &[
    "token",
    "secret",
    "passw",
    "credential",
    "auth",
    "session",
    "cookie",
    "apikey",
    "privatekey",
];

/// Words (between separators or at a case change) that mark a credential:
/// short ones that would match inside other words as parts. `pat` is a
/// personal access token (`GH_PAT`).
const SECRET_WORDS: &[&str] = &[
    "key", "keys", "pat", "pwd", "pass", "pw", "jwt", "bearer", "creds",
];

/// Last words of a flag that names where a secret is, or how many, not the
/// secret itself: `--token-file PATH`, `--key-id ID`, `--auth-url URL`.
/// What follows them is judged by its shape only.
const NOT_SECRET_TAILS: &[&str] = &[
    "file",
    "path",
    "dir",
    "directory",
    "count",
    "limit",
    "size",
    "length",
    "len",
    "type",
    "id",
    "name",
    "url",
    "uri",
    "endpoint",
    "env",
    "var",
    "ttl",
    "timeout",
    "mode",
    "scope",
    "scopes",
];

/// First words of a flag that is a number or a switch: `--max-tokens 100`,
/// `--no-auth`.
const NOT_SECRET_HEADS: &[&str] = &["max", "min", "no", "disable", "enable", "use", "skip"];

/// Path segments after which the next one is the secret itself:
/// `https://api.example.com/key/VALUE`.
const SECRET_SEGMENTS: &[&str] = &[
    "key",
    "apikey",
    "api-key",
    "api_key",
    "token",
    "access-token",
    "access_token",
    "secret",
    "password",
    "pat",
];

/// Whether `name` (an environment variable, a header, a flag without its
/// dashes, a query key) says its value is a credential.
pub fn is_secret_name(name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    if is_sensitive_key(name) {
        return true;
    }
    let lower = name.to_ascii_lowercase();
    SECRET_PARTS.iter().any(|p| lower.contains(p))
        || crate::redact::key_words(name)
            .iter()
            .any(|w| SECRET_WORDS.contains(&w.as_str()))
}

/// Whether a flag's name (without its dashes) says the value after it is a
/// credential: a secret name that is not a switch, a count or a place.
fn is_secret_flag_name(name: &str) -> bool {
    let words = crate::redact::key_words(name);
    match (words.first(), words.last()) {
        (Some(head), Some(tail)) => {
            is_secret_name(name)
                && !NOT_SECRET_HEADS.contains(&head.as_str())
                && !NOT_SECRET_TAILS.contains(&tail.as_str())
        }
        _ => false,
    }
}

/// Whether `arg` is a flag (`-k`, `--api-key`; no `=`) whose name makes the
/// next argument a secret.
pub fn is_secret_flag(arg: &str) -> bool {
    let name = arg.trim_start_matches('-');
    arg.len() > name.len()
        && arg.len() - name.len() <= 2
        && is_flag_name(name)
        && is_secret_flag_name(name)
}

/// A flag's or variable's name: a letter or `_`, then letters, digits,
/// `_`, `-` and `.`.
fn is_flag_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// Whether `value` on its own has a credential's shape: the redactor
/// removes a credential from it (a provider key, a JWT, a PEM block, a
/// `password=` pair...), or it is a long random-looking run
/// ([`high_entropy`]).
pub fn looks_like_credential(value: &str) -> bool {
    if value.is_empty() {
        return false;
    }
    if high_entropy(value) {
        return true;
    }
    let red = redact(value);
    red.changed && SECRET_MARKS.iter().any(|m| red.text.contains(m))
}

/// The shortest random-looking run taken for a key by shape alone. Below
/// it, words with digits (`Release2024Final`) come too close.
const ENTROPY_MIN_LEN: usize = 20;
/// The shortest hex run (digits and one case of `a`–`f`, with `-` as in a
/// UUID) taken for a key: 128 bits, a UUID's size; shorter ones are ids.
const HEX_MIN_LEN: usize = 32;
/// The longest run judged by its entropy: anything longer is no key typed
/// into a config, and the count stays bounded.
const ENTROPY_MAX_LEN: usize = 4096;

/// Whether `s` is a long run of key characters that looks random: hex of
/// 32+ characters with letters and digits mixed, or 20+ characters of
/// letters and digits (32+ when all letters are of one case) that change
/// often between upper case, lower case and digits and repeat few
/// characters. Words (`MyProjectRelease2024Final`: few changes), paths,
/// versions, package and host names (a `/`, `@` or `:` is no key
/// character) fail it. A heuristic, tuned so that random keys of those
/// lengths pass (in 99% of draws); a miss is still caught by its name.
fn high_entropy(s: &str) -> bool {
    let n = s.len();
    if !(ENTROPY_MIN_LEN..=ENTROPY_MAX_LEN).contains(&n)
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.+=~".contains(&b))
    {
        return false;
    }
    let count = |f: fn(&u8) -> bool| s.bytes().filter(f).count();
    let (digits, upper, lower) = (
        count(u8::is_ascii_digit),
        count(u8::is_ascii_uppercase),
        count(u8::is_ascii_lowercase),
    );
    if digits == 0 || upper + lower == 0 {
        return false;
    }
    let bits = entropy(s.as_bytes());
    let hex = s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') && (upper == 0 || lower == 0);
    if hex {
        return n >= HEX_MIN_LEN && bits >= 3.0;
    }
    if bits < 3.5 {
        return false;
    }
    // Changes of kind between neighbouring letters and digits: about 62%
    // of them in a random mixed-case key, 40% in a one-case one (the bounds
    // keep 99% of each), a few in
    // words that end in a number.
    let class = |b: u8| match b {
        b'0'..=b'9' => 0,
        b'A'..=b'Z' => 1,
        _ => 2,
    };
    let alnum: Vec<u8> = s.bytes().filter(u8::is_ascii_alphanumeric).collect();
    let changes = alnum
        .windows(2)
        .filter(|w| class(w[0]) != class(w[1]))
        .count() as f64;
    let ratio = changes / (alnum.len().max(2) - 1) as f64;
    if upper > 0 && lower > 0 {
        ratio >= 0.3
    } else {
        n >= HEX_MIN_LEN && ratio >= 0.2
    }
}

/// The credentials in one value standing on its own (an argument, an
/// environment value, a header value, a URL): the value of a `--flag=` or
/// `NAME=` with a secret name, the credential parts of a URL, else the
/// whole value if it has a credential's shape.
pub fn in_value(value: &str) -> Vec<Secret> {
    if value.is_empty() {
        return Vec::new();
    }
    let found = assignment(value).unwrap_or_else(|| in_plain(value, 0));
    if found.is_empty() && looks_like_credential(value) {
        return vec![Secret::new(0..value.len(), None)];
    }
    found
}

/// `--flag=value` or `NAME=value`: the value when the name is a secret's,
/// else what [`in_plain`] finds in the value; `None` for anything else.
fn assignment(value: &str) -> Option<Vec<Secret>> {
    let (left, right) = value.split_once('=')?;
    let name = left.trim_start_matches('-');
    if left.len() - name.len() > 2 || !is_flag_name(name) || right.is_empty() {
        return None;
    }
    let start = left.len() + 1;
    Some(if is_secret_flag_name(name) {
        vec![Secret::new(start..value.len(), Some(name))]
    } else {
        in_plain(right, start)
    })
}

/// The credential parts of `value` if it is a URL, else the whole of it
/// if it has a credential's shape; ranges shifted by `at`.
fn in_plain(value: &str, at: usize) -> Vec<Secret> {
    let found = match url_parts(value) {
        Some(parts) => parts,
        None if looks_like_credential(value) => vec![Secret::new(0..value.len(), None)],
        None => Vec::new(),
    };
    found.into_iter().map(|s| s.shifted(at)).collect()
}

/// The credential parts of `value` when it is a URL (`scheme://...`):
/// user info, path segments, query and fragment values. Read by hand, not
/// with a URL parser, so the ranges are those of the text as written
/// (a parser normalizes it).
fn url_parts(value: &str) -> Option<Vec<Secret>> {
    let scheme_end = value.find("://")?;
    let scheme = &value[..scheme_end];
    let mut chars = scheme.bytes();
    if !chars.next().is_some_and(|b| b.is_ascii_alphabetic())
        || !chars.all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
    {
        return None;
    }
    let mut found = Vec::new();
    let start = scheme_end + 3;
    let authority_end = value[start..]
        .find(['/', '?', '#'])
        .map_or(value.len(), |i| start + i);
    if let Some(at) = value[start..authority_end].rfind('@') {
        let info = &value[start..start + at];
        match info.split_once(':') {
            Some((user, password)) => {
                if looks_like_credential(user) {
                    found.push(Secret::new(start..start + user.len(), None));
                }
                if !password.is_empty() {
                    let from = start + user.len() + 1;
                    found.push(Secret::new(from..start + at, Some("password")));
                }
            }
            None if looks_like_credential(info) => {
                found.push(Secret::new(start..start + at, None));
            }
            None => {}
        }
    }
    let path_end = value[authority_end..]
        .find(['?', '#'])
        .map_or(value.len(), |i| authority_end + i);
    let mut previous: Option<&str> = None;
    let mut offset = authority_end;
    for segment in value[authority_end..path_end].split('/') {
        if !segment.is_empty() {
            let named =
                previous.filter(|p| SECRET_SEGMENTS.contains(&p.to_ascii_lowercase().as_str()));
            if named.is_some() || looks_like_credential(segment) {
                found.push(Secret::new(offset..offset + segment.len(), named));
            }
        }
        previous = Some(segment);
        offset += segment.len() + 1;
    }
    // The query, then the fragment (where OAuth's implicit flow puts
    // `access_token=`), as `&`- or `;`-separated pairs.
    let mut offset = path_end + 1;
    if path_end < value.len() {
        for pair in value[path_end + 1..].split(['&', ';', '#', '?']) {
            let (key, val, val_at) = match pair.split_once('=') {
                Some((k, v)) => (Some(k), v, offset + k.len() + 1),
                None => (None, pair, offset),
            };
            if !val.is_empty() && (key.is_some_and(is_secret_name) || looks_like_credential(val)) {
                found.push(Secret::new(val_at..val_at + val.len(), key));
            }
            offset += pair.len() + 1;
        }
    }
    Some(found)
}

/// The credentials in one argument, given the one before it: all of it
/// when the one before is a flag that names a secret (unless it is itself a
/// flag: the one before was a switch), else what [`in_value`] finds.
pub fn in_arg(previous: Option<&str>, arg: &str) -> Vec<Secret> {
    if let Some(flag) = previous
        && is_secret_flag(flag)
        && !arg.is_empty()
        && !arg.starts_with('-')
    {
        return vec![Secret::new(
            0..arg.len(),
            Some(flag.trim_start_matches('-')),
        )];
    }
    in_value(arg)
}

/// The credentials in each of a command's arguments, judged in pairs
/// ([`in_arg`]).
pub fn in_args<S: AsRef<str>>(args: &[S]) -> Vec<Vec<Secret>> {
    args.iter()
        .enumerate()
        .map(|(i, arg)| {
            let previous = i.checked_sub(1).map(|p| args[p].as_ref());
            in_arg(previous, arg.as_ref())
        })
        .collect()
}

/// The credentials in an environment variable's (or header's) value: all
/// of it when the name is a secret's, else what [`in_value`] finds.
pub fn in_env(name: &str, value: &str) -> Vec<Secret> {
    if value.is_empty() {
        return Vec::new();
    }
    if is_secret_name(name) {
        return vec![Secret::new(0..value.len(), Some(name))];
    }
    in_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(value: &'a str, found: &[Secret]) -> Vec<&'a str> {
        found.iter().map(|s| &value[s.range.clone()]).collect()
    }

    #[test]
    fn flags_are_judged_in_pairs() {
        let args = [
            "--api-key",
            "abc123plain",
            "--port",
            "8080",
            "--token=hunter2",
            "-y",
            "--max-tokens",
            "100",
            "--no-auth",
            "--verbose",
            "--token-file",
            "/run/t",
            "GH_TOKEN=xyz",
            "--url=https://h.example/v1?api_key=zzz",
            "--key",
            "k1",
        ];
        let found = in_args(&args);
        let moved: Vec<Vec<&str>> = args.iter().zip(&found).map(|(a, f)| parts(a, f)).collect();
        assert_eq!(
            moved,
            [
                vec![],
                vec!["abc123plain"],
                vec![],
                vec![],
                vec!["hunter2"],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec!["xyz"],
                vec!["zzz"],
                vec![],
                vec!["k1"],
            ]
        );
        assert_eq!(found[1][0].name.as_deref(), Some("api-key"));
        assert_eq!(found[4][0].name.as_deref(), Some("token"));
    }

    #[test]
    fn urls_are_judged_by_their_parts() {
        let cases: &[(&str, &[&str])] = &[
            ("https://mcp.example.com/v1/sse", &[]),
            ("https://mcp.example.com/mcp", &[]),
            (
                "https://mcp.example.com/v1/sk_live_51Hx9QkLmN2pR7sT4uV8wY3zA6bC1dE0fG/sse",
                &["sk_live_51Hx9QkLmN2pR7sT4uV8wY3zA6bC1dE0fG"],
            ),
            (
                "https://api.example.com/key/ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue",
                &["ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue"],
            ),
            ("https://api.example.com/key/plainvalue", &["plainvalue"]),
            (
                "https://mcp.zapier.com/api/mcp/s/Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5/mcp",
                &["Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5"],
            ),
            (
                "https://h.example/s/3f2e1d0c-b9a8-4f7e-a6d5-c4b3a2910f8e/mcp",
                &["3f2e1d0c-b9a8-4f7e-a6d5-c4b3a2910f8e"],
            ),
            (
                "postgresql://alex:correct-horse-battery@db.internal.example:5432/app",
                &["correct-horse-battery"],
            ),
            (
                "https://ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue@github.com/o/r",
                &["ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue"],
            ),
            (
                "https://api.example.com/mcp?api_key=abc123&region=eu",
                &["abc123"],
            ),
            ("https://h.example/cb#access_token=abc&state=1", &["abc"]),
            (
                "https://h.example/docs/getting-started/v2/index.html?page=3",
                &[],
            ),
        ];
        for (url, want) in cases {
            assert_eq!(parts(url, &in_value(url)), *want, "{url}");
        }
    }

    #[test]
    fn values_are_judged_by_shape_and_name() {
        for secret in [
            "ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
            "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "AKIAIOSFODNN7EXAMPLE",
            "sk-ant-api03-Zx8Qm2Lp7Rt4Vw9Yb3Cd6Fg1Hj5Kn0Ps",
            "Xk9Qm2Lp7Rt4Vw8Yz3Bc6Dn1Fg5Hj0",
        ] {
            assert!(looks_like_credential(secret), "{secret}");
            assert_eq!(in_env("WHATEVER", secret).len(), 1, "{secret}");
        }
        for plain in [
            "1",
            "8080",
            "true",
            "info",
            "/Users/alex/Documents/notes",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "airtable-mcp-server",
            "us-east-1",
            "Release2024Final",
            "node18-alpine",
            "quickforge-init-check",
            "sk-learn",
        ] {
            assert!(!looks_like_credential(plain), "{plain}");
            assert!(in_env("DEBUG", plain).is_empty(), "{plain}");
        }
        for name in [
            "GH_PAT",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "X-API-Key",
            "DB_PASSWORD",
            "Authorization",
            "apiKey",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "DEBUG",
            "MEMORY_FILE_PATH",
            "KEYBOARD_LAYOUT",
            "PATH",
            "LOG_LEVEL",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    fn well_formed(value: &str, found: &[Secret]) {
        let mut end = 0;
        for s in found {
            assert!(s.range.start >= end, "{value:?}: {found:?}");
            assert!(s.range.start < s.range.end && s.range.end <= value.len());
            assert!(value.is_char_boundary(s.range.start) && value.is_char_boundary(s.range.end));
            end = s.range.end;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// What the fuzz target `init_args` checks, for `cargo test`:
        /// ranges usable on any input, and a credential found as a URL
        /// path segment between arbitrary ones.
        #[test]
        fn ranges_are_well_formed_and_a_planted_key_is_found(
            args in proptest::collection::vec("[-=a-zA-Z0-9_:/?#&@.%\\u{e9}\\u{1f600}]{0,40}", 0..6),
            a in "[a-zA-Z0-9._-]{0,20}",
            b in "[a-zA-Z0-9._-]{0,20}",
        ) {
            for (arg, found) in args.iter().zip(in_args(&args)) {
                well_formed(arg, &found);
                well_formed(arg, &in_env("X", arg));
            }
            let secret = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
            let url = format!("https://mcp.example.com/{a}/{secret}/{b}");
            let found = in_value(&url);
            well_formed(&url, &found);
            let at = "https://mcp.example.com/".len() + a.len() + 1;
            proptest::prop_assert!(
                found.iter().any(|s| s.range.start <= at && at + secret.len() <= s.range.end),
                "{url:?}: {found:?}"
            );
        }
    }
}
