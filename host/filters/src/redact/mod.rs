//! Redaction of secrets and infrastructure details from error texts.
//!
//! quickforge runs model-written code against downstream MCP servers, and their error
//! messages go back to the model. Those messages routinely echo credentials (a failing
//! request's URL with `?api_key=`, an `Authorization` header dump, a config file with a
//! PEM key) and infrastructure details (private IPs, home directories, stack traces).
//! This module is applied once, at the boundary, to every error text that reaches the
//! model and to the gateway's own logs (downstream servers' stderr included).
//!
//! # Order
//!
//! Redact first, cut second: [`redact_clip`] redacts a text and only then cuts it to its
//! size limit, so a cut never lands inside a secret and leaves most of it behind.
//! Within one round, [`normalize`] first looks at each line through the encodings a
//! script can undo in one line (`\u` escapes, percent-encoding, HTML entities), at
//! base64 blobs that decode to text, and at tokens wrapped over lines or split into
//! groups; then the rules below run, most specific first; rounds repeat until nothing
//! changes.
//!
//! # Where the shapes come from
//!
//! Provider credentials are data, not code: gitleaks' rule set (`rules/gitleaks.toml`,
//! MIT, vendored with its licence) plus quickforge's own few shapes that gitleaks
//! only finds next to a keyword (`rules/quickforge.toml`), compiled once (see [`rules`]).
//!
//! # Marker scheme
//!
//! Every removal leaves a bracketed marker that says *why* something was removed, so the
//! model still understands the shape of the message:
//!
//! | marker | what was there | found by |
//! | --- | --- | --- |
//! | `[REDACTED]` | the value of a field whose *name* is sensitive (`password=…`, `"token": "…"`, `Cookie: …`, JSON fields) | name |
//! | `[REDACTED:url]` | path, query, fragment, user info and port of a URL (scheme and host are kept) | shape |
//! | `[REDACTED:ip]` | an IPv4 / IPv6 address, with its port, zone or CIDR suffix | shape |
//! | `[REDACTED:path]` | a Unix, Windows or UNC file path, with its `:line:col` suffix | shape |
//! | `[REDACTED:token]` | the credential after `Authorization:`, `Bearer` or `Basic` (the scheme word is kept) | position |
//! | `[REDACTED:key]` | a provider credential recognised by a rule of the rule set (`sk-`, `ghp_`, `AKIA`, `SG.`, `shpat_`…) or an AWS secret key's shape | shape |
//! | `[REDACTED:jwt]` | a JSON Web Token | shape |
//! | `[REDACTED:pem]` | a PEM block (`-----BEGIN …-----` … `-----END …-----`, any type; a truncated one to the end of its base64) | shape |
//! | `[REDACTED:hex]` | a run of 32 or more hex digits (with a digit and a letter) after a secret word (`key`, `secret`, `signature`…) on its line | shape and context |
//! | `[REDACTED:card]` | a payment card number (known prefix and Luhn check) | shape |
//! | `[REDACTED:mnemonic]` | a BIP-39 mnemonic (seed) phrase | shape |
//! | `[REDACTED:stack]` | a run of stack-frame lines, a traceback, or a `Caused by:` chain | shape |
//! | `[REDACTED:base64]` | a base64 blob whose decoded text held a secret | shape, decoded |
//!
//! The bare `[REDACTED]` means "removed because of its name"; the tagged ones mean
//! "removed because of what it looks like". In JSON ([`redact_json`]) a sensitive field's
//! value becomes the string `"[REDACTED]"`. No rule matches a marker, and [`redact`]
//! applies its rules until the text stops changing, so redaction is idempotent:
//! redacting a redacted text returns it unchanged, with `changed == false`.
//!
//! # Decisions
//!
//! * **URLs** keep `scheme://host` (the model must know which service failed; internal
//!   host names are therefore visible); user info, port, path, query and fragment become
//!   one `/[REDACTED:url]`. An IP host becomes `[REDACTED:ip]`. `https://host` and
//!   `https://host/` stay as they are. Host names outside URLs are not redacted either
//!   (`getaddrinfo ENOTFOUND db.internal`).
//! * **IPv4**: four dotted numbers 0–255 are an address, even when they are a four-part
//!   version without a `v` (`1.2.3.4`): ambiguous, and leaking an address is worse than
//!   hiding a version. `v1.2.3.4`, `1.2.3`, `1.2.3.4.5` and OIDs are kept. Loopback and
//!   `0.0.0.0` are redacted like any address (one rule, no exceptions).
//! * **IPv6** candidates are validated by the standard parser; a bare one must contain a
//!   digit and stand alone, so `std::fs`, `f64::EPSILON`, `Foo::bar`, clock times and MAC
//!   addresses are kept. `[::]:8080` is redacted, Node's bare `:::3000` is not.
//! * **Paths**: a candidate starts after a delimiter (start, space, quote, bracket, `=`,
//!   `:`…), never inside a word, so `a/b`, `and/or`, `application/json`, `tools/call`,
//!   `notifications/message`, `3/4`, `2026/11/22`, `docs/guide/setup.md` are kept. It is
//!   redacted when it starts with `~`, `./` or `../`; or is absolute with two or more
//!   segments and starts at a well-known root directory (`/home`, `/etc`, `/Users`,
//!   `/var`, `/tmp`, `/opt`, `/usr`, `/srv`, `/app`… see `KNOWN_ROOTS`), or has a hidden
//!   segment (`/x/.ssh/y`), or ends in a file name with an extension (`/x/y/config.yaml`).
//!   So API routes and JSON pointers (`/api/v1/users`, `/items/0/name`,
//!   `/data/attributes/title`) are kept, and so is an extension-less path under an
//!   unknown root (`/srv2/data/customer`). Windows drive (`C:\…`, `C:/…`) and UNC
//!   (`\\server\share`) paths are always redacted, also in their JSON-escaped form.
//!   Segments may contain single spaces when another separator follows
//!   (`C:\Program Files\…`, `…/Application Support/…`). Paths the model itself sent
//!   (for example to a filesystem server) are redacted too.
//! * **Stack traces**: every run of frame lines (JS/Java/.NET `at …`, Python
//!   `File "…", line N` with its source lines, Rust backtrace frames, PHP `#N`, Ruby
//!   `from …`, `... N more`) becomes one `[REDACTED:stack]` line; a
//!   `Traceback (most recent call last):` / `stack backtrace:` / `Stack trace:` header
//!   takes the indented lines after it. From a `Caused by:` line (Java, anyhow) or a Go
//!   `goroutine N [running]:` header to the end of the text, everything is stack: the
//!   first line(s) of the message are kept, the cause chain is not. For Python the
//!   exception line after the traceback (`ValueError: …`) is kept, because that is
//!   where Python puts the message.
//! * **Provider keys** come from the rule set; quickforge's own rules need a long
//!   enough random part: `sk-`/`pk-`/`rk-` need 16+
//!   characters with a digit or an uppercase letter, `api_`/`key_` 16+ letters and
//!   digits, so `sk-learn`, `pk-value`, `api_version`, `key_name` are kept. A free-standing
//!   AWS secret access key (exactly 40 base64 characters with upper, lower and digits,
//!   not all hex) is redacted by shape; other prefix-less secrets (an arbitrary base64
//!   string) cannot be recognised and are not.
//! * **`Bearer <x>`** outside an `Authorization` header is redacted only when `<x>`
//!   looks random (8+ characters with letters and digits, or 16+ with mixed case), so
//!   `Bearer token required` stays; `Basic <x>` only when `<x>` is base64 of printable
//!   `user:password`. After `Authorization:` the credential always goes.
//! * **Sensitive names** (see [`is_sensitive_key`]) are matched in `name=value` (query
//!   strings, logfmt, env dumps, connection strings; a value runs to `&name=`, `;`,
//!   `,`, a quote, a bracket or whitespace), `"name": value` (JSON, Python, Ruby reprs,
//!   also escaped JSON inside JSON), `name: "quoted value"` anywhere, and `name: value`
//!   at the start of a line when the value is a single token or quoted (YAML, header
//!   dumps). Header-like names (`Cookie`, `Set-Cookie`, `X-Api-Key`, anything with a
//!   `-`) lose their whole line value. `password: must be at least 8 characters`
//!   (a multi-word value after a bare name), `password is 'x'` (prose) and
//!   `--password hunter2` (flag and value apart) are *not* redacted.
//! * Values that are obviously not secrets stay even under a sensitive name: `null`,
//!   `true`, `false`, empty strings, masks (`***`), status words (`invalid`, `expired`,
//!   `missing`, `required`…), templates (`${DB_PASSWORD}`, `{{token}}`).
//! * **Long hex** (32+ digits, with at least one digit and one letter, optional `0x`) is
//!   redacted when a secret word (`key`, `secret`, `token`, `password`, `private`,
//!   `signature`, `hmac`, `seed`, `salt`, `credential`, `auth`) stands before it on its
//!   line (within 40 bytes, `shapes::HEX_CONTEXT`). Git SHAs, content hashes, digests and
//!   ids are kept: a tool's result is full of them, and a model needs them to work. A
//!   bare hex secret with no such word before it is the residual this choice accepts.
//!   Pure digit runs are numbers and are kept; so are UUIDs.
//! * **Cards**: 15 digits starting 34/37 or 16 digits starting 4, 51–55, 22–27, 6011, 65,
//!   644–649, contiguous or grouped 4-4-4-4 / 4-6-5, Luhn-valid. Other long numbers
//!   (ids, timestamps) are kept. SSNs and phone numbers in free text are not redacted
//!   (too close to other numbers); `ssn` is a sensitive *name*.
//! * **Mnemonics**: a run of 12 or more consecutive words (3–8 ASCII letters, any case,
//!   separated by one or two whitespace characters) that are all in the official BIP-39
//!   English list (embedded, 2048 words), whatever the run's length. Ordinary sentences
//!   do not form such runs: common function words (`the`, `and`, `of`, `is`…) are not in
//!   the list. In JSON, an array of 12 or more such words is replaced as a whole.
//! * Never redacted: tool and server names, "not found" messages, validation messages,
//!   JSON-RPC method names, ordinary English, numbers, durations (`30 s`, `1.5s`),
//!   semantic versions, MIME types, HTTP status text, user names (except URL user info),
//!   e-mail addresses, AWS account ids and ARNs.

mod json;
mod kv;
mod names;
mod normalize;
mod rules;
mod shapes;
mod stack;

pub use json::{redact_json, redact_json_keeping, redact_json_with};
pub use names::is_sensitive_key;
pub(crate) use names::key_words;
pub(crate) use rules::entropy;
pub use rules::{RuleStats, rule_stats};

use regex::{Captures, Regex};
use std::borrow::Cow;
use std::sync::LazyLock;

use kv::{
    redact_authorization, redact_bare_name_kv, redact_basic, redact_bearer, redact_eq_kv,
    redact_escaped_kv, redact_line_kv, redact_quoted_kv,
};
use shapes::{
    redact_aws_secrets, redact_hex_and_cards, redact_ipv4, redact_ipv6, redact_jwts,
    redact_mnemonics, redact_pem, redact_unix_paths, redact_urls, redact_windows_paths,
};
use stack::collapse_stacks;

/// A text after redaction.
///
/// `changed` is computed by comparing the result with the input, so it is `false`
/// whenever the text came back byte-for-byte identical (for example when a rule matched
/// something that was already a marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    /// The redacted text.
    pub text: String,
    /// Whether `text` differs from the input.
    pub changed: bool,
}

/// Marker for a value removed because of its field's name.
pub(crate) const MARK_NAMED: &str = "[REDACTED]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_URL: &str = "[REDACTED:url]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_IP: &str = "[REDACTED:ip]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_PATH: &str = "[REDACTED:path]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_TOKEN: &str = "[REDACTED:token]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_KEY: &str = "[REDACTED:key]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_JWT: &str = "[REDACTED:jwt]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_PEM: &str = "[REDACTED:pem]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_HEX: &str = "[REDACTED:hex]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_CARD: &str = "[REDACTED:card]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_MNEMONIC: &str = "[REDACTED:mnemonic]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_STACK: &str = "[REDACTED:stack]";
/// Marker, see the table in the module doc.
pub(crate) const MARK_BASE64: &str = "[REDACTED:base64]";

/// Compiles a pattern that is a constant of this module (covered by the tests).
pub(crate) fn re(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(r) => r,
        Err(e) => panic!("redact: invalid built-in pattern: {e}"),
    }
}

/// `name: <scheme> [REDACTED…]` or `name: [REDACTED…]`: already redacted by a more
/// specific rule, left alone so that the specific marker survives.
pub(crate) static ALREADY_REDACTED_VALUE_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r#"^["']?(?:[A-Za-z0-9-]+[ \t]+)?\[REDACTED(?::[a-z]+)?\]["']?$"#));

/// Redacts secrets and infrastructure details from a free-form error text.
///
/// Each round first looks at the text through its decoded views (see [`normalize`]),
/// then runs the rules in a fixed order, most specific first, so that a secret is
/// reported with the most telling marker: PEM blocks, stack traces, mnemonics, JWTs,
/// URLs, `Authorization`/`Bearer`/`Basic` credentials, sensitive `name: value` /
/// `"name": value` / `name=value` pairs, provider keys (the rule set), IPv6 and IPv4
/// addresses, Windows/UNC and Unix paths, AWS secret keys, long hex runs after a secret
/// word, and card numbers. The rounds repeat until the text no longer changes (at most
/// four), which makes the result a fixed point. Every rule is a linear-time regex
/// (Rust's `regex` has no backtracking) or a single scan, so any input, however large or
/// hostile, takes time proportional to its length, and no input makes it panic.
pub fn redact(text: &str) -> Redacted {
    redact_in(text, Scope::Everything)
}

/// Which of the rules a redaction applies: the one rule of `ARCHITECTURE.md`
/// ("Errors") has two halves, and a boundary picks by where a text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every rule: credentials, and the infrastructure a text from a server or
    /// from the gateway itself can reveal (a URL past its host, an address, a
    /// path, a stack trace).
    Everything,
    /// Credentials only (keys, tokens, JWTs, PEM blocks, sensitive `name=value`
    /// pairs, a URL's password, cards, mnemonics): for strings a script itself
    /// passed, quoted back to a person or to the script. The path or URL it
    /// named is its own and is what a person must read to decide; a
    /// credential in it is still not shown on.
    Credentials,
}

/// [`redact`] with the rules of `scope`.
pub fn redact_in(text: &str, scope: Scope) -> Redacted {
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    // A redaction can change the context of its neighbour (a URL glued to a UNC path
    // becomes a marker, and the path now starts after a delimiter), so the rules are
    // applied until nothing changes. Almost every text settles in one round (a second
    // round confirms it); the bound keeps the cost linear whatever happens.
    for _ in 0..4 {
        match apply_rules(&current, scope) {
            Some(next) if next != current => current = Cow::Owned(next),
            _ => break,
        }
    }
    let changed = current != text;
    Redacted {
        text: current.into_owned(),
        changed,
    }
}

/// How far past its limit [`redact_clip`] reads before it redacts, in bytes. Redaction
/// needs the end of a secret that starts before the cut to recognise it; 64 KiB holds
/// the longest credential shapes (a PEM block of a 8192-bit RSA key is under 7 KiB) many
/// times over, and bounds the work for a 20 MB error page whose first 2 KiB are shown.
pub const CLIP_LOOKAHEAD: usize = 64 * 1024;

/// `text` redacted, then cut to at most `max` bytes (plus the cut marker).
///
/// The order matters: cutting first can land inside a secret and leave most of it in
/// a shape no rule knows any more (`ghp_16C7e42F292c6912E77` is no GitHub token). The
/// cut never splits a marker either. Only the first `max +` [`CLIP_LOOKAHEAD`] bytes
/// are read.
pub fn redact_clip(text: &str, max: usize) -> String {
    let end = text.floor_char_boundary(max.saturating_add(CLIP_LOOKAHEAD));
    let unread = text.len() - end;
    let red = redact(&text[..end]).text;
    if red.len() <= max && unread == 0 {
        return red;
    }
    let mut cut = red.floor_char_boundary(max);
    if let Some(open) = red[..cut].rfind('[')
        && red[open..].starts_with("[REDACTED")
        && !red[open..cut].contains(']')
    {
        cut = open;
    }
    format!(
        "{}… [{} more bytes cut]",
        &red[..cut],
        red.len() - cut + unread
    )
}

/// One round: the decoded lines, every rule, then base64 blobs and wrapped tokens;
/// `None` when nothing changed.
fn apply_rules(text: &str, scope: Scope) -> Option<String> {
    let decoded = normalize::redact_encoded_lines(text, scope);
    let current = then(decoded, |t| base_rules(t, scope));
    let current = then(current, normalize::redact_base64_blobs);
    let current = then(current, normalize::redact_wrapped_tokens);
    match current {
        Cow::Borrowed(_) => None,
        Cow::Owned(s) => Some(s),
    }
}

/// One round of every rule on the text as it is, in order (no decoded views: those
/// call this on what they decoded, so decoding never recurses).
pub(crate) fn base_rules(text: &str, scope: Scope) -> Cow<'_, str> {
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    for (pass, runs) in PASSES {
        if runs.get(scope) {
            current = then(current, pass);
        }
    }
    current
}

/// Which scopes a pass of [`PASSES`] runs in.
#[derive(Clone, Copy)]
enum Runs {
    /// Both: a credential's shape.
    Always,
    /// [`Scope::Everything`] only: infrastructure (stacks, URL paths,
    /// addresses, paths).
    Everything,
    /// [`Scope::Credentials`] only: a URL's password, which the URL rule
    /// takes with everything past the host in the other scope.
    Credentials,
}

impl Runs {
    fn get(self, scope: Scope) -> bool {
        match self {
            Runs::Always => true,
            Runs::Everything => scope == Scope::Everything,
            Runs::Credentials => scope == Scope::Credentials,
        }
    }
}

/// One rule pass over a text.
type Pass = for<'a> fn(&'a str) -> Cow<'a, str>;

/// The rules in their order (see [`redact`]), each with the scopes it runs in.
const PASSES: [(Pass, Runs); 21] = [
    (redact_pem, Runs::Always),
    (collapse_stacks, Runs::Everything),
    (redact_mnemonics, Runs::Always),
    (redact_jwts, Runs::Always),
    (redact_urls, Runs::Everything),
    (shapes::redact_url_passwords, Runs::Credentials),
    (redact_authorization, Runs::Always),
    (redact_bearer, Runs::Always),
    (redact_basic, Runs::Always),
    (redact_line_kv, Runs::Always),
    (redact_bare_name_kv, Runs::Always),
    (redact_quoted_kv, Runs::Always),
    (redact_escaped_kv, Runs::Always),
    (redact_eq_kv, Runs::Always),
    (rules::redact_keys, Runs::Always),
    (redact_ipv6, Runs::Everything),
    (redact_ipv4, Runs::Everything),
    (redact_windows_paths, Runs::Everything),
    (redact_unix_paths, Runs::Everything),
    (redact_aws_secrets, Runs::Always),
    (redact_hex_and_cards, Runs::Always),
];

/// Replaces each byte range (sorted, disjoint) of `text` with `marker`.
pub(crate) fn replace_ranges<'t>(
    text: &'t str,
    ranges: &[std::ops::Range<usize>],
    marker: &str,
) -> Cow<'t, str> {
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for r in ranges {
        out.push_str(&text[copied..r.start]);
        out.push_str(marker);
        copied = r.end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Runs `re` over `text` and lets `f` pick a replacement for each match (`None` keeps
/// it). With `retry`, a rejected match is searched again from its second character, for
/// patterns whose matches are short (addresses); otherwise the search goes on after it.
pub(crate) fn replace_matches<'t>(
    re: &Regex,
    text: &'t str,
    retry: bool,
    mut f: impl FnMut(&'t str, &Captures<'t>) -> Option<String>,
) -> Cow<'t, str> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut pos = 0;
    while pos <= text.len() {
        let Some(caps) = re.captures_at(text, pos) else {
            break;
        };
        let Some(m) = caps.get(0) else {
            break;
        };
        match f(text, &caps) {
            Some(rep) => {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(&text[copied..m.start()]);
                o.push_str(&rep);
                copied = m.end();
                pos = if m.is_empty() {
                    next_boundary(text, m.end())
                } else {
                    m.end()
                };
            }
            None => {
                pos = if retry || m.is_empty() {
                    next_boundary(text, m.start())
                } else {
                    m.end()
                };
            }
        }
    }
    match out {
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(text),
    }
}

/// The index of the next character boundary after `i` (past the end when none).
pub(crate) fn next_boundary(text: &str, i: usize) -> usize {
    match i + 1 {
        j if j >= text.len() => j,
        j => text.ceil_char_boundary(j),
    }
}

/// Replaces group `g` of the match with `rep`, keeping the rest of the match.
pub(crate) fn replace_group(
    text: &str,
    caps: &Captures<'_>,
    g: usize,
    rep: &str,
) -> Option<String> {
    let m = caps.get(0)?;
    let inner = caps.get(g)?;
    Some(format!(
        "{}{}{}",
        &text[m.start()..inner.start()],
        rep,
        &text[inner.end()..m.end()]
    ))
}

pub(crate) fn char_before(text: &str, i: usize) -> Option<char> {
    text[..i].chars().next_back()
}

pub(crate) fn char_after(text: &str, i: usize) -> Option<char> {
    text[i..].chars().next()
}

/// Applies a second pass to the result of a first, keeping borrowed text borrowed.
pub(crate) fn then<'t>(
    first: Cow<'t, str>,
    second: impl for<'a> Fn(&'a str) -> Cow<'a, str>,
) -> Cow<'t, str> {
    match first {
        Cow::Borrowed(t) => second(t),
        Cow::Owned(s) => {
            let next = match second(&s) {
                Cow::Borrowed(_) => None,
                Cow::Owned(o) => Some(o),
            };
            Cow::Owned(next.unwrap_or(s))
        }
    }
}
