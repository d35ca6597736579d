//! Secrets and infrastructure details found by their shape: PEM blocks, JWTs, URLs,
//! IP addresses, file paths, AWS secret keys, long hex after a secret word, card
//! numbers, mnemonic phrases.

use super::names::is_bip39_word;
use super::{
    MARK_CARD, MARK_HEX, MARK_IP, MARK_JWT, MARK_KEY, MARK_MNEMONIC, MARK_NAMED, MARK_PATH,
    MARK_PEM, MARK_URL, char_after, char_before, re, replace_matches, then,
};
use aho_corasick::AhoCorasick;
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::sync::LazyLock;

/// Top-level directories after which an absolute Unix path is always treated as a
/// file path (case-sensitive: `/Users/…` is macOS, `/users/42` is an API route).
/// Generic words such as `data`, `config` or `src` are left out on purpose: JSON
/// pointers (`/data/attributes/title`) and API routes use them.
const KNOWN_ROOTS: &[&str] = &[
    "etc",
    "home",
    "Users",
    "var",
    "tmp",
    "root",
    "opt",
    "usr",
    "proc",
    "srv",
    "mnt",
    "private",
    "Volumes",
    "dev",
    "sys",
    "run",
    "app",
    "workspace",
    "workspaces",
    "lib",
    "lib64",
    "bin",
    "sbin",
    "nix",
    "snap",
    "media",
    "boot",
    "Library",
    "System",
    "Applications",
    "cygdrive",
];

/// A whole PEM block, or a truncated one to the end of its base64 — taken
/// with `.`, `_` and `-` too: a token that follows in the same run (a JWT,
/// `header.payload.signature`) would otherwise be cut at its first dot and
/// its rest no longer match its own rule (found by `tests/fuzz` redact).
static PEM_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?s)-----BEGIN [A-Z0-9 ]{1,64}-----(?:.*?-----END [A-Z0-9 ]{1,64}-----|[A-Za-z0-9+/=_.\s\\:,-]*)",
    )
});

pub(crate) static JWT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){1,3}")
});

static URL_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/?#"'<>\\^`{}|()]*(?:[/?#][^\s"'<>\\^`{}|]*)?"#,
    )
});

static IPV6_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\[([0-9A-Fa-f:.]{2,45})(%[0-9A-Za-z_.-]{1,32})?\](?::[0-9]{1,5}(?-u:\b))?|([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.[0-9]{1,3}){0,3})(%[0-9A-Za-z_.-]{1,32})?(?:/[0-9]{1,3}(?-u:\b))?",
    )
});

static IPV4_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?-u:\b)((?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3})(?-u:\b)(?::[0-9]{1,5}(?-u:\b))?(?:/[0-9]{1,2}(?-u:\b))?",
    )
});

static WIN_PATH_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(^|[^A-Za-z0-9_\\/])([A-Za-z]:(?:\\{1,2}|/)(?:[^\\/\s"'<>|*?:]+(?:[ ][^\\/\s"'<>|*?:]+)*(?:\\{1,2}|/))*[^\\/\s"'<>|*?:,;()\[\]]*)"#,
    )
});

static UNC_PATH_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(^|[^A-Za-z0-9_\\])(\\\\[A-Za-z0-9_.$-]+\\(?:[^\\/\s"'<>|*?:]+(?:[ ][^\\/\s"'<>|*?:]+)*\\)*[^\\/\s"'<>|*?:,;()\[\]]*|\\\\\\\\[A-Za-z0-9_.$-]+\\\\(?:[^\\/\s"'<>|*?:]+(?:[ ][^\\/\s"'<>|*?:]+)*\\\\)*[^\\/\s"'<>|*?:,;()\[\]]*)"#,
    )
});

static UNIX_PATH_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(^|[\s"'`(\[{<=,;|>:])((?:~[A-Za-z0-9._-]*|\.{1,2})?(?:/[\w.@%+~$-]+(?: [\w.@%+~$-]+)*)*/[\w.@%+~$-]+/?)((?::[0-9]+){0,2})"#,
    )
});

/// Exactly 40 base64 characters standing alone: the shape of an AWS secret access key.
static AWS_SECRET_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})"));

static HEX_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?-u:\b)(?:0[xX])?([0-9A-Fa-f]{32,})(?-u:\b)"));

/// Card numbers in groups (4-4-4-4, Amex 4-6-5) or contiguous; explicit groups so that
/// a following number (`4111 1111 1111 1111 2`) is not pulled into the match.
static CARD_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?-u:\b)(?:[0-9]{4}[ -][0-9]{4}[ -][0-9]{4}[ -][0-9]{4}|[0-9]{4}[ -][0-9]{6}[ -][0-9]{5}|[0-9]{15,16})(?-u:\b)",
    )
});

pub(crate) fn redact_pem(text: &str) -> Cow<'_, str> {
    if !text.contains("-----BEGIN ") {
        return Cow::Borrowed(text);
    }
    PEM_RE.replace_all(text, MARK_PEM)
}

pub(crate) fn redact_jwts(text: &str) -> Cow<'_, str> {
    if !text.contains("eyJ") {
        return Cow::Borrowed(text);
    }
    JWT_RE.replace_all(text, MARK_JWT)
}

/// Replaces every run of 12 or more consecutive BIP-39 words (3–8 ASCII letters, any
/// case, separated by one or two whitespace characters) with `[REDACTED:mnemonic]`.
/// Common English function words (`the`, `and`, `of`, `is`…) are not in the list, so
/// ordinary sentences do not form such runs.
pub(crate) fn redact_mnemonics(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut run: Option<(usize, usize, usize)> = None; // start, end, word count
    let close = |run: &mut Option<(usize, usize, usize)>, ranges: &mut Vec<(usize, usize)>| {
        if let Some((s, e, n)) = run.take()
            && n >= 12
        {
            ranges.push((s, e));
        }
    };
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        // a word glued to digits or `_` (`abc1`, `abc_def`) is no mnemonic word
        let glued = |j: usize| b.get(j).is_some_and(|c| c.is_ascii_digit() || *c == b'_');
        let is_word =
            !glued(i) && (start == 0 || !glued(start - 1)) && is_bip39_word(&text[start..i]);
        if !is_word {
            close(&mut run, &mut ranges);
            continue;
        }
        match run {
            Some((s, end, n))
                if (1..=2).contains(&(start - end))
                    && b[end..start].iter().all(u8::is_ascii_whitespace) =>
            {
                run = Some((s, i, n + 1));
            }
            _ => {
                close(&mut run, &mut ranges);
                run = Some((start, i, 1));
            }
        }
    }
    close(&mut run, &mut ranges);
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (s, e) in ranges {
        out.push_str(&text[copied..s]);
        out.push_str(MARK_MNEMONIC);
        copied = e;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Keeps `scheme://host` and replaces user info, port, path, query and fragment with one
/// `/[REDACTED:url]`. A host that is an IP literal becomes `[REDACTED:ip]`. A URL that
/// is only `scheme://host[/]` is left as it is.
///
/// The regex only finds where a URL starts and ends in free text (trailing sentence
/// punctuation is not part of it); the `url` crate takes it apart. What it cannot parse
/// (several hosts, as in `mongodb://a:1,b:2/db`, or a broken authority) keeps its
/// scheme and loses the rest.
pub(crate) fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    replace_matches(&URL_RE, text, false, |_, caps| {
        let m = caps.get(0)?.as_str();
        let core = strip_trailing_punct(m);
        let trailing = &m[core.len()..];
        let (scheme, rest) = core.split_once("://")?;
        // what follows the authority, as written (the parser would add a `/`)
        let after = rest.find(['/', '?', '#']).map_or("", |i| &rest[i..]);
        // a host redacted in an earlier round parses as the address it stood for
        let parsed = url::Url::parse(&core.replace(MARK_IP, "192.0.2.1"));
        let (host, dropped) = match parsed {
            Ok(u) => {
                let host = match u.host() {
                    Some(url::Host::Domain(d)) => redact_host(d),
                    Some(_) => MARK_IP.to_string(),
                    None => String::new(),
                };
                let userinfo = !u.username().is_empty() || u.password().is_some();
                (
                    host,
                    userinfo || u.port().is_some() || !(after.is_empty() || after == "/"),
                )
            }
            Err(_) => (String::new(), true),
        };
        if !dropped {
            // as written (the parser lowercases), unless the host is an address
            return (host == MARK_IP).then(|| format!("{scheme}://{host}{after}{trailing}"));
        }
        Some(format!("{scheme}://{host}/{MARK_URL}{trailing}"))
    })
}

/// A URL's password (`scheme://user:password@host`) as `[REDACTED]`, the rest of the
/// URL as written: [`super::Scope::Credentials`]' URL rule.
pub(crate) fn redact_url_passwords(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    replace_matches(&URL_RE, text, false, |_, caps| {
        let m = caps.get(0)?.as_str();
        let (scheme, rest) = m.split_once("://")?;
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let (userinfo, _) = authority.rsplit_once('@')?;
        let (user, password) = userinfo.split_once(':')?;
        if password.is_empty() || password == MARK_NAMED {
            return None;
        }
        let after = &rest[userinfo.len()..];
        Some(format!("{scheme}://{user}:{MARK_NAMED}{after}"))
    })
}

/// Strips sentence punctuation and unbalanced closing brackets from the end of a URL.
fn strip_trailing_punct(s: &str) -> &str {
    let mut s = s;
    loop {
        let Some(c) = s.chars().next_back() else {
            return s;
        };
        let strip = match c {
            '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '"' => true,
            ')' => s.matches('(').count() < s.matches(')').count(),
            ']' => s.matches('[').count() < s.matches(']').count(),
            _ => false,
        };
        if !strip {
            return s;
        }
        s = &s[..s.len() - c.len_utf8()];
    }
}

/// A host as written, or the IP marker when it is an address (the `url` crate leaves
/// the hosts of schemes it does not know, `redis://10.0.0.7`, as names).
fn redact_host(host: &str) -> String {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let bare = bare.split('%').next().unwrap_or(bare);
    if host == MARK_IP || Ipv4Addr::from_str(bare).is_ok() || Ipv6Addr::from_str(bare).is_ok() {
        MARK_IP.to_string()
    } else {
        host.to_string()
    }
}

/// IPv6 addresses (validated by the standard parser), bracketed with a port, or bare with
/// a `%zone`. A candidate must contain a digit and stand alone (not inside a word or a
/// longer `a:b:c` run), so Rust paths like `std::fs`, `f64::EPSILON` and clock times stay.
pub(crate) fn redact_ipv6(text: &str) -> Cow<'_, str> {
    if !text.contains(':') {
        return Cow::Borrowed(text);
    }
    replace_matches(&IPV6_RE, text, true, |text, caps| {
        let m = caps.get(0)?;
        let (addr, bracketed) = match (caps.get(1), caps.get(3)) {
            (Some(a), _) => (a.as_str(), true),
            (None, Some(a)) => (a.as_str(), false),
            _ => return None,
        };
        // bare candidates need a digit (`abc::def` is a path); brackets are clear enough
        if (!bracketed && !addr.bytes().any(|b| b.is_ascii_digit()))
            || Ipv6Addr::from_str(addr).is_err()
        {
            return None;
        }
        if !bracketed {
            let word = |c: char| c.is_alphanumeric() || c == '_' || c == ':' || c == '.';
            if char_before(text, m.start()).is_some_and(word)
                || char_after(text, m.end()).is_some_and(word)
            {
                return None;
            }
        }
        Some(MARK_IP.to_string())
    })
}

/// IPv4 addresses (four dotted numbers 0–255) with an optional `:port` and `/prefix`.
/// Part of a longer dotted run (`1.2.3.4.5`, an OID) or glued to a word (`v1.2.3.4`) is
/// not an address.
pub(crate) fn redact_ipv4(text: &str) -> Cow<'_, str> {
    if !text.contains('.') {
        return Cow::Borrowed(text);
    }
    replace_matches(&IPV4_RE, text, true, |text, caps| {
        let m = caps.get(0)?;
        let ip = caps.get(1)?;
        let before = &text[..m.start()];
        let after = &text[ip.end()..];
        let dotted_before = before.ends_with('.')
            && before[..before.len() - 1]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        let mut a = after.chars();
        let dotted_after =
            a.next() == Some('.') && a.next().is_some_and(|c| c.is_ascii_alphanumeric());
        if dotted_before || dotted_after {
            return None;
        }
        Some(MARK_IP.to_string())
    })
}

/// `C:\…`, `C:/…`, `\\server\share\…` (and their JSON-escaped forms with doubled
/// backslashes). Windows paths may contain spaces inside a segment (`Program Files`) as
/// long as another separator follows.
pub(crate) fn redact_windows_paths(text: &str) -> Cow<'_, str> {
    if !text.contains(['\\', ':']) {
        return Cow::Borrowed(text);
    }
    let drive = replace_matches(&WIN_PATH_RE, text, false, |_, caps| {
        let prefix = caps.get(1)?.as_str();
        let path = caps.get(2)?.as_str();
        let kept = path.trim_end_matches('.');
        if kept[2..].trim_matches(['\\', '/']).is_empty() {
            return None;
        }
        Some(format!("{prefix}{MARK_PATH}{}", &path[kept.len()..]))
    });
    then(drive, |t| replace_matches(&UNC_PATH_RE, t, false, unc_path))
}

fn unc_path(_: &str, caps: &Captures<'_>) -> Option<String> {
    let prefix = caps.get(1)?.as_str();
    let path = caps.get(2)?.as_str();
    let kept = path.trim_end_matches('.');
    Some(format!("{prefix}{MARK_PATH}{}", &path[kept.len()..]))
}

/// Unix paths. A candidate starts after a delimiter (start, space, quote, bracket, `=`,
/// `:`…) — never inside a word, so `a/b`, `and/or`, `application/json`, `tools/call`,
/// `2026/11/22` are not candidates. It is redacted when it starts with `~`, `./` or
/// `../`; or is absolute with at least two segments and either starts at one of
/// `KNOWN_ROOTS`, has a hidden segment (`.ssh`) or ends in a file name with an
/// extension. A trailing `:line:col` goes with it. Like on Windows, a segment may
/// contain single spaces when another `/` follows (`/Users/jane/Library/Application
/// Support/app/db.sqlite3`); the last segment ends at the first space.
pub(crate) fn redact_unix_paths(text: &str) -> Cow<'_, str> {
    if !text.contains('/') {
        return Cow::Borrowed(text);
    }
    replace_matches(&UNIX_PATH_RE, text, false, |_, caps| {
        let prefix = caps.get(1)?.as_str();
        let path = caps.get(2)?.as_str();
        let kept = path.trim_end_matches('.');
        if !is_unix_path(kept) {
            return None;
        }
        // sentence dots after the path stay; a `:line:col` suffix goes with it
        Some(format!("{prefix}{MARK_PATH}{}", &path[kept.len()..]))
    })
}

fn is_unix_path(path: &str) -> bool {
    if path.starts_with('~') || path.starts_with("./") || path.starts_with("../") {
        return path.split('/').skip(1).any(|s| !s.is_empty());
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() < 2 {
        return false;
    }
    if KNOWN_ROOTS.contains(&segments[0]) {
        return true;
    }
    let hidden = segments
        .iter()
        .any(|s| s.len() > 1 && s.starts_with('.') && *s != "..");
    let extension = segments.last().is_some_and(|last| {
        last.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        })
    });
    hidden || extension
}

/// A free-standing AWS secret access key: exactly 40 characters of `[A-Za-z0-9/+]` with
/// upper- and lowercase letters and digits, and not all hex (hex is the next rule's).
/// The only common credential with neither a prefix nor a name next to it.
pub(crate) fn redact_aws_secrets(text: &str) -> Cow<'_, str> {
    replace_matches(&AWS_SECRET_RE, text, true, |text, caps| {
        let m = caps.get(0)?;
        let k = caps.get(1)?;
        let s = k.as_str();
        let upper = s.bytes().any(|b| b.is_ascii_uppercase());
        let lower = s.bytes().any(|b| b.is_ascii_lowercase());
        let digit = s.bytes().any(|b| b.is_ascii_digit());
        let hex = s.bytes().all(|b| b.is_ascii_hexdigit());
        let longer = char_after(text, k.end())
            .is_some_and(|c| c.is_ascii_alphanumeric() || "/+=".contains(c));
        if !(upper && lower && digit) || hex || longer {
            return None;
        }
        Some(format!(
            "{}{MARK_KEY}{}",
            &text[m.start()..k.start()],
            &text[k.end()..m.end()]
        ))
    })
}

/// How far before a long hex run a secret word is looked for, in bytes, on the same
/// line: room for `private key (hex): ` or `"signing_secret": "0x`; a word further away
/// says nothing about this value.
pub const HEX_CONTEXT: usize = 40;

/// The words that make a long hex run after them a secret (matched without regard to
/// ASCII case, also inside longer words: `apiKey`, `client_secret`).
static HEX_SECRET_WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let words = [
        "key",
        "secret",
        "token",
        "passw",
        "pwd",
        "private",
        "signature",
        "hmac",
        "seed",
        "salt",
        "credential",
        "auth",
    ];
    match AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(words)
    {
        Ok(a) => a,
        Err(e) => panic!("redact: invalid hex context words: {e}"),
    }
});

/// Runs of ≥ 32 hex digits (optionally `0x`-prefixed) containing both a digit and a
/// letter, after a secret word on their line (see [`HEX_CONTEXT`]); and Luhn-valid card
/// numbers. Hashes, git SHAs and ids without such a word stay.
pub(crate) fn redact_hex_and_cards(text: &str) -> Cow<'_, str> {
    let hex = replace_matches(&HEX_RE, text, false, |text, caps| {
        let m = caps.get(0)?;
        let h = caps.get(1)?.as_str();
        let digit = h.bytes().any(|b| b.is_ascii_digit());
        let letter = h.bytes().any(|b| b.is_ascii_alphabetic());
        let from = text.floor_char_boundary(m.start().saturating_sub(HEX_CONTEXT));
        let before = &text[from..m.start()];
        let before = before.rsplit('\n').next().unwrap_or(before);
        (digit && letter && HEX_SECRET_WORDS.is_match(before)).then(|| MARK_HEX.to_string())
    });
    then(hex, |t| replace_matches(&CARD_RE, t, false, card))
}

/// A payment card number: 15 digits starting 34/37 (Amex) or 16 digits starting 4
/// (Visa), 51–55 or 22–27 (Mastercard), 6011/65/644–649 (Discover), Luhn-valid, written
/// contiguously or in groups with one kind of separator. Other long numbers (ids,
/// timestamps) stay.
fn card(_: &str, caps: &Captures<'_>) -> Option<String> {
    let m = caps.get(0)?.as_str();
    if m.contains(' ') && m.contains('-') {
        return None;
    }
    let digits: Vec<u8> = m
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    let prefix2 = u32::from(*digits.first()?) * 10 + u32::from(*digits.get(1)?);
    let prefix4: u32 = digits.iter().take(4).fold(0, |a, &d| a * 10 + u32::from(d));
    let ok_prefix = match digits.len() {
        15 => prefix2 == 34 || prefix2 == 37,
        16 => {
            prefix2 / 10 == 4
                || (51..=55).contains(&prefix2)
                || (22..=27).contains(&prefix2)
                || prefix4 == 6011
                || prefix2 == 65
                || (644..=649).contains(&(prefix4 / 10))
        }
        _ => false,
    };
    (ok_prefix && luhn(&digits)).then(|| MARK_CARD.to_string())
}

/// The Luhn checksum of card numbers. Kept by hand: the crates for it parse a string
/// of digits again (we already have the digits, separators removed) and are not
/// maintained more than these ten lines need.
fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}
