//! Credentials found by their position: `Authorization`, `Bearer`, `Basic`, and the
//! values of sensitive names in `name: value`, `"name": value` and `name=value` pairs.

use super::names::{is_placeholder_value, is_sensitive_key};
use super::{
    ALREADY_REDACTED_VALUE_RE, MARK_NAMED, MARK_TOKEN, re, replace_group, replace_matches,
};
use aho_corasick::AhoCorasick;
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::sync::LazyLock;

/// The words that call the positional rules, in [`TRIGGERS`]' order.
#[derive(Clone, Copy)]
enum Trigger {
    Authorization = 0,
    Bearer = 1,
    Basic = 2,
}

/// The trigger words, found in one scan without regard to ASCII case.
static TRIGGERS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    match AhoCorasick::builder().ascii_case_insensitive(true).build([
        "authorization",
        "bearer",
        "basic",
    ]) {
        Ok(a) => a,
        Err(e) => panic!("redact: invalid trigger words: {e}"),
    }
});

/// Whether `text` contains the word of `trigger`, in any ASCII case.
fn mentions(text: &str, trigger: Trigger) -> bool {
    TRIGGERS
        .find_iter(text)
        .any(|m| m.pattern().as_usize() == trigger as usize)
}

static AUTHORIZATION_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)(?-u:\b)(?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(digest|aws4-hmac-sha256|ntlm|negotiate)[ \t]+[^\r\n]*|(?:(?:bearer|basic|token|bot|apikey|api-key|key|sso-key|jwt|dpop|hmac)[ \t]+)?([^\s"',;\\]+))"#,
    )
});

static BEARER_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?-u:\b)bearer[ \t]+([A-Za-z0-9._~+/-]+=*)"));

static BASIC_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?-u:\b)basic[ \t]+([A-Za-z0-9+/]{6,}={0,2})"));

/// `name: value` at the start of a line (YAML, header dumps, env listings).
static LINE_KV_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^([ \t]*(?:-[ \t]+)?)([A-Za-z_][A-Za-z0-9_.-]{0,63})([ \t]*:[ \t]*)([^\r\n]*)")
});

/// `name: "value"` anywhere, for an unquoted name and a quoted value.
static BARE_NAME_KV_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?-u:\b)([A-Za-z_$][A-Za-z0-9_$.-]{0,63})[ \t]*:[ \t]*("(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*')"#,
    )
});

/// `"name": value` / `'name': value` / `"name" => value` (JSON, Python and Ruby reprs).
static QUOTED_KV_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"["']([A-Za-z_$@][A-Za-z0-9_.$@-]{0,63})["'][ \t]*(?::|=>?)[ \t]*("(?:[^"\\\r\n]|\\.)*"|'[^'\r\n]*'|[^\s,{}\[\]()"']+)"#,
    )
});

/// `\"name\": \"value\"`: JSON that was itself embedded in a JSON string.
static ESCAPED_KV_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"\\"([A-Za-z_$@][A-Za-z0-9_.$@-]{0,63})\\"[ \t]*:[ \t]*(\\".*?\\"|[^\s,{}\[\]\\"]+)"#)
});

/// `name=value` anywhere (query strings, logfmt, connection strings, env dumps). A bare
/// value runs on over `&` (a password may contain one); the closure splits it again at
/// every `&name=`.
static EQ_KV_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?-u:\b)([A-Za-z_][A-Za-z0-9_.-]{0,63})[ \t]*=[ \t]*("[^"\r\n]*"|'[^'\r\n]*'|[^\s"'<>,;)\]}=][^\s"'<>,;)\]}]*)"#,
    )
});

/// `Authorization: <scheme> <credential>` (also `Proxy-Authorization`, quoted JSON keys
/// and `=`): the credential always goes, whatever it looks like; the scheme is kept.
pub(crate) fn redact_authorization(text: &str) -> Cow<'_, str> {
    if !mentions(text, Trigger::Authorization) {
        return Cow::Borrowed(text);
    }
    replace_matches(&AUTHORIZATION_RE, text, false, |text, caps| {
        let m = caps.get(0)?;
        if let Some(scheme) = caps.get(1) {
            return Some(format!("{} {MARK_TOKEN}", &text[m.start()..scheme.end()]));
        }
        let cred = caps.get(2)?;
        if cred.as_str().starts_with("[REDACTED") {
            return None;
        }
        replace_group(text, caps, 2, MARK_TOKEN)
    })
}

/// `Bearer <token>` anywhere, when the token looks random (see [`looks_like_token`]):
/// `Bearer token required` and `Bearer authentication failed` stay.
pub(crate) fn redact_bearer(text: &str) -> Cow<'_, str> {
    if !mentions(text, Trigger::Bearer) {
        return Cow::Borrowed(text);
    }
    replace_matches(&BEARER_RE, text, false, |text, caps| {
        let tok = caps.get(1)?.as_str();
        looks_like_token(tok.trim_end_matches('='))
            .then(|| replace_group(text, caps, 1, MARK_TOKEN))?
    })
}

/// `Basic <base64>` anywhere, when the base64 decodes to printable `user:password`.
pub(crate) fn redact_basic(text: &str) -> Cow<'_, str> {
    if !mentions(text, Trigger::Basic) {
        return Cow::Borrowed(text);
    }
    replace_matches(&BASIC_RE, text, false, |text, caps| {
        let b64 = caps.get(1)?.as_str();
        let decoded = super::normalize::decode_base64(b64)?;
        let credential =
            decoded.contains(&b':') && decoded.iter().all(|b| (0x20..0x7f).contains(b));
        credential.then(|| replace_group(text, caps, 1, MARK_TOKEN))?
    })
}

/// A random-looking credential: at least 8 characters with letters and digits, or at
/// least 16 with both upper- and lowercase letters.
fn looks_like_token(s: &str) -> bool {
    let digit = s.bytes().any(|b| b.is_ascii_digit());
    let lower = s.bytes().any(|b| b.is_ascii_lowercase());
    let upper = s.bytes().any(|b| b.is_ascii_uppercase());
    s.len() >= 8 && ((digit && (lower || upper)) || (s.len() >= 16 && lower && upper))
}

/// `name: value` at the start of a line, for a sensitive name. Header-like names
/// (`Cookie`, `Set-Cookie`, `X-Api-Key`, anything with a `-`) lose their whole value;
/// other names only a single-token or quoted value, so that a validation message such as
/// `password: must be at least 8 characters` is kept.
pub(crate) fn redact_line_kv(text: &str) -> Cow<'_, str> {
    if !text.contains(':') {
        return Cow::Borrowed(text);
    }
    replace_matches(&LINE_KV_RE, text, false, |text, caps| {
        let name = caps.get(2)?.as_str();
        let v = caps.get(4)?;
        // a JS object literal line ends in `,`: keep it outside the value
        let value = v.as_str().trim_end();
        let value = value.strip_suffix([',', ';']).unwrap_or(value).trim_end();
        if value.is_empty() || !is_sensitive_key(name) || ALREADY_REDACTED_VALUE_RE.is_match(value)
        {
            return None;
        }
        let header = name.contains('-')
            || name.eq_ignore_ascii_case("cookie")
            || name.eq_ignore_ascii_case("authorization");
        let quoted = value.len() >= 2
            && ((value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\'')));
        let (inner, q) = if quoted {
            (&value[1..value.len() - 1], &value[..1])
        } else {
            (value, "")
        };
        if is_placeholder_value(inner) || (!header && !quoted && value.contains([' ', '\t'])) {
            return None;
        }
        let m = caps.get(0)?;
        Some(format!(
            "{}{q}{MARK_NAMED}{q}{}",
            &text[m.start()..v.start()],
            &text[v.start() + value.len()..m.end()]
        ))
    })
}

/// `name: "value"` / `name: 'value'` anywhere (JS object literals, inline YAML): an
/// unquoted sensitive name with a quoted value.
pub(crate) fn redact_bare_name_kv(text: &str) -> Cow<'_, str> {
    if !text.contains(':') {
        return Cow::Borrowed(text);
    }
    replace_matches(&BARE_NAME_KV_RE, text, false, |text, caps| {
        if !is_sensitive_key(caps.get(1)?.as_str()) {
            return None;
        }
        redact_value_group(text, caps, 2, 1)
    })
}

/// Redacts a captured value: quoted values keep their quotes.
fn redact_value_group(
    text: &str,
    caps: &Captures<'_>,
    g: usize,
    quote_len: usize,
) -> Option<String> {
    let v = caps.get(g)?.as_str();
    let (inner, q) = if quote_len > 0
        && v.len() >= 2 * quote_len
        && (v.starts_with('"') || v.starts_with('\'') || v.starts_with("\\\""))
    {
        (&v[quote_len..v.len() - quote_len], &v[..quote_len])
    } else {
        (v, "")
    };
    if is_placeholder_value(inner) {
        return None;
    }
    replace_group(text, caps, g, &format!("{q}{MARK_NAMED}{q}"))
}

pub(crate) fn redact_quoted_kv(text: &str) -> Cow<'_, str> {
    if !text.contains(['"', '\'']) {
        return Cow::Borrowed(text);
    }
    replace_matches(&QUOTED_KV_RE, text, false, |text, caps| {
        if !is_sensitive_key(caps.get(1)?.as_str()) {
            return None;
        }
        redact_value_group(text, caps, 2, 1)
    })
}

pub(crate) fn redact_escaped_kv(text: &str) -> Cow<'_, str> {
    if !text.contains("\\\"") {
        return Cow::Borrowed(text);
    }
    replace_matches(&ESCAPED_KV_RE, text, false, |text, caps| {
        if !is_sensitive_key(caps.get(1)?.as_str()) {
            return None;
        }
        redact_value_group(text, caps, 2, 2)
    })
}

pub(crate) fn redact_eq_kv(text: &str) -> Cow<'_, str> {
    if !text.contains('=') {
        return Cow::Borrowed(text);
    }
    replace_matches(&EQ_KV_RE, text, false, |text, caps| {
        let m = caps.get(0)?;
        let v = caps.get(2)?;
        if v.as_str().starts_with(['"', '\'']) {
            if !is_sensitive_pair_name(caps.get(1)?.as_str()) {
                return None;
            }
            return redact_value_group(text, caps, 2, 1);
        }
        // `a=1&token=x&b=2`: split at every `&name=`; other `&`s belong to the value
        let mut pairs: Vec<(&str, String)> = Vec::new();
        let mut segments = v.as_str().split('&');
        let mut current = (
            caps.get(1)?.as_str(),
            segments.next().unwrap_or_default().to_string(),
        );
        for seg in segments {
            match pair_name(seg) {
                Some(n) => {
                    let value = seg.get(n.len() + 1..).unwrap_or_default().to_string();
                    pairs.push(std::mem::replace(&mut current, (n, value)));
                }
                None => {
                    current.1.push('&');
                    current.1.push_str(seg);
                }
            }
        }
        pairs.push(current);
        let mut out = String::from(&text[m.start()..v.start()]);
        let mut changed = false;
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push('&');
                out.push_str(name);
                out.push('=');
            }
            if is_sensitive_pair_name(name) && !is_placeholder_value(value) {
                out.push_str(MARK_NAMED);
                changed = true;
            } else {
                out.push_str(value);
            }
        }
        out.push_str(&text[v.end()..m.end()]);
        changed.then_some(out)
    })
}

/// `authorization=<scheme> <credential>` belongs to the Authorization rule.
fn is_sensitive_pair_name(name: &str) -> bool {
    is_sensitive_key(name) && !name.to_ascii_lowercase().ends_with("authorization")
}

/// The name of a `name=value` segment, if it is one.
fn pair_name(segment: &str) -> Option<&str> {
    let (name, _) = segment.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let ok = (first.is_ascii_alphabetic() || first == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'));
    ok.then_some(name)
}
