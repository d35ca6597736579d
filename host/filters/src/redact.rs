//! Redaction of secrets and infrastructure details from error texts.
//!
//! quickforge runs model-written code against downstream MCP servers, and their error
//! messages go back to the model. Those messages routinely echo credentials (a failing
//! request's URL with `?api_key=`, an `Authorization` header dump, a config file with a
//! PEM key) and infrastructure details (private IPs, home directories, stack traces).
//! This module is applied once, at the boundary, to every error text that reaches the
//! model and to the gateway's own logs.
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
//! | `[REDACTED:key]` | a provider credential recognised by its prefix (`sk-`, `ghp_`, `AKIA`, `xoxb-`…) or an AWS secret key's shape | shape |
//! | `[REDACTED:jwt]` | a JSON Web Token | shape |
//! | `[REDACTED:pem]` | a PEM block (`-----BEGIN …-----` … `-----END …-----`, any type; a truncated one to the end of its base64) | shape |
//! | `[REDACTED:hex]` | a run of 32 or more hex digits (with a digit and a letter) | shape |
//! | `[REDACTED:card]` | a payment card number (known prefix and Luhn check) | shape |
//! | `[REDACTED:mnemonic]` | a BIP-39 mnemonic (seed) phrase | shape |
//! | `[REDACTED:stack]` | a run of stack-frame lines, a traceback, or a `Caused by:` chain | shape |
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
//! * **Provider keys** need a long enough random part: `sk-`/`pk-`/`rk-` need 16+
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
//!   redacted, git SHAs and content hashes included: they cannot be told apart from
//!   hex-encoded secrets. Pure digit runs are numbers and are kept. UUIDs in their
//!   hyphenated form are kept (never 32 hex digits in a row); a hyphen-less UUID is hex.
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

use regex::{Captures, Regex};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::sync::LazyLock;

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

const MARK_NAMED: &str = "[REDACTED]";
const MARK_URL: &str = "[REDACTED:url]";
const MARK_IP: &str = "[REDACTED:ip]";
const MARK_PATH: &str = "[REDACTED:path]";
const MARK_TOKEN: &str = "[REDACTED:token]";
const MARK_KEY: &str = "[REDACTED:key]";
const MARK_JWT: &str = "[REDACTED:jwt]";
const MARK_PEM: &str = "[REDACTED:pem]";
const MARK_HEX: &str = "[REDACTED:hex]";
const MARK_CARD: &str = "[REDACTED:card]";
const MARK_MNEMONIC: &str = "[REDACTED:mnemonic]";
const MARK_STACK: &str = "[REDACTED:stack]";

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

/// The official BIP-39 English word list (2048 words), one per line.
static BIP39_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("bip39_english.txt")
        .lines()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect()
});

/// Compiles a pattern that is a constant of this module (covered by the tests).
fn re(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(r) => r,
        Err(e) => panic!("redact: invalid built-in pattern: {e}"),
    }
}

static PEM_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?s)-----BEGIN [A-Z0-9 ]{1,64}-----(?:.*?-----END [A-Z0-9 ]{1,64}-----|[A-Za-z0-9+/=_\s\\:,-]*)",
    )
});

static JWT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){1,3}")
});

static URL_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/?#"'<>\\^`{}|()]*(?:[/?#][^\s"'<>\\^`{}|]*)?"#,
    )
});

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

static KEY_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?x)(?-u:\b)(?:
        (?:sk|pk|rk)-(?P<dash>[A-Za-z0-9_-]{16,})
      | (?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}
      | whsec_[A-Za-z0-9]{24,}
      | (?:api|key)_(?P<generic>[A-Za-z0-9]{16,})(?-u:\b)
      | gh[pousr]_[A-Za-z0-9]{30,}
      | github_pat_[A-Za-z0-9_]{30,}
      | (?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)
      | xox[abposre]-[A-Za-z0-9-]{10,}
      | xapp-[A-Za-z0-9-]{10,}
      | AIza[0-9A-Za-z_-]{35}
      | glpat-[A-Za-z0-9_-]{20,}
      | npm_[A-Za-z0-9]{36}
      | hf_[A-Za-z0-9]{30,}
    )")
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

static STACK_REST_HEADER_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[ \t]*(?:Caused by:|goroutine [0-9]+ \[[^\]]*\]:[ \t]*$)"));

static STACK_BLOCK_HEADER_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^[ \t]*(?:Traceback \(most recent call last\):|[Ss]tack backtrace:|Backtrace:|Stack ?trace:)[ \t]*$",
    )
});

static STACK_PY_FILE_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r#"^[ \t]*File "[^"]*", line [0-9]+"#));

static STACK_FRAME_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        // JS / Java / .NET / Rust `at` lines ending in a location
        r"^[ \t]+at[ \t]+[^\r\n]*?(?::[0-9]+\)?|:line [0-9]+|\((?:Native Method|Unknown Source|native|index [0-9]+)\)|<anonymous>\)?)(?:[ \t]*\{)?[ \t]*$",
        // Java / .NET `at Qualified.Name(args)` without a location
        r"|^[ \t]+at[ \t]+[\w$.<>\[\]/`+-]+\([^\r\n]*\)[ \t]*$",
        r"|^[ \t]+\.\.\. [0-9]+ (?:more|common frames omitted)[ \t]*$",
        // Rust backtrace frames: `  3: core::panicking::panic_fmt`, `  4: 0x55d0 - <T as …>`
        r"|^[ \t]*[0-9]+:[ \t]+(?:0x[0-9a-fA-F]+[ \t]+-[ \t]+)?(?:<|[A-Za-z_][A-Za-z0-9_]*::)",
        r"|^[ \t]*[0-9]+:[ \t]+0x[0-9a-fA-F]+",
        // PHP `#0 /x.php(12): f()`, `#1 {main}`
        r"|^#[0-9]+ (?:\{main\}|\S+\([0-9]+\): )",
        // .NET `--- End of stack trace from previous location ---`
        r"|^[ \t]*--- End of [^\r\n]*stack trace[^\r\n]*---[ \t]*$",
        // Ruby `from /x.rb:10:in `f'`
        r"|^[ \t]+from \S+:[0-9]+:in ",
    ))
});

/// `name: <scheme> [REDACTED…]` or `name: [REDACTED…]`: already redacted by a more
/// specific rule, left alone so that the specific marker survives.
static ALREADY_REDACTED_VALUE_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r#"^["']?(?:[A-Za-z0-9-]+[ \t]+)?\[REDACTED(?::[a-z]+)?\]["']?$"#));

/// Redacts secrets and infrastructure details from a free-form error text.
///
/// Rules run in a fixed order, most specific first, so that a secret is reported with
/// the most telling marker: PEM blocks, stack traces, mnemonics, JWTs, URLs,
/// `Authorization`/`Bearer`/`Basic` credentials, sensitive `name: value` /
/// `"name": value` / `name=value` pairs, provider keys, IPv6 and IPv4 addresses,
/// Windows/UNC and Unix paths, AWS secret keys, long hex runs and card numbers. The
/// rounds repeat until the text no longer changes (at most four), which makes the result
/// a fixed point. Every rule is a linear-time regex (Rust's `regex` has no backtracking)
/// or a single scan, so any input, however large or hostile, takes time proportional to
/// its length, and no input makes it panic.
pub fn redact(text: &str) -> Redacted {
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    // A redaction can change the context of its neighbour (a URL glued to a UNC path
    // becomes a marker, and the path now starts after a delimiter), so the rules are
    // applied until nothing changes. Almost every text settles in one round (a second
    // round confirms it); the bound keeps the cost linear whatever happens.
    for _ in 0..4 {
        match apply_rules(&current) {
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

/// One round of every rule, in order; `None` when no rule touched the text.
fn apply_rules(text: &str) -> Option<String> {
    let passes: [fn(&str) -> Cow<'_, str>; 20] = [
        redact_pem,
        collapse_stacks,
        redact_mnemonics,
        redact_jwts,
        redact_urls,
        redact_authorization,
        redact_bearer,
        redact_basic,
        redact_line_kv,
        redact_bare_name_kv,
        redact_quoted_kv,
        redact_escaped_kv,
        redact_eq_kv,
        redact_keys,
        redact_ipv6,
        redact_ipv4,
        redact_windows_paths,
        redact_unix_paths,
        redact_aws_secrets,
        redact_hex_and_cards,
    ];
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    for pass in passes {
        let next = match pass(&current) {
            Cow::Borrowed(_) => None,
            Cow::Owned(s) => Some(s),
        };
        if let Some(s) = next {
            current = Cow::Owned(s);
        }
    }
    match current {
        Cow::Borrowed(_) => None,
        Cow::Owned(s) => Some(s),
    }
}

/// Redacts a JSON error payload in place: the values of sensitive field names at any depth
/// are replaced with `"[REDACTED]"`, string values anywhere go through `redact`, and mnemonic
/// phrases are replaced. Returns whether anything changed.
///
/// Details: a sensitive field's value is replaced whatever its type (string, number,
/// object, array) except `null`, booleans, `""`, `{}` and `[]`, which hold no secret; an
/// array of 12 or more strings that are all BIP-39 words becomes
/// `"[REDACTED:mnemonic]"`; object keys go through [`redact`] too (an object keyed by
/// file path), keeping their order. The walk uses an explicit stack, so arbitrarily deep
/// values cannot overflow the call stack.
pub fn redact_json(value: &mut Value) -> bool {
    let mut changed = false;
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        if let Value::Array(items) = &*v
            && is_mnemonic_array(items)
        {
            *v = Value::String(MARK_MNEMONIC.to_string());
            changed = true;
            continue;
        }
        match v {
            Value::String(s) => {
                let r = redact(s);
                if r.changed {
                    *s = r.text;
                    changed = true;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                // mask by the original names, then rename, then descend
                for (k, child) in map.iter_mut() {
                    if is_sensitive_key(k) && holds_secret(child) {
                        *child = Value::String(MARK_NAMED.to_string());
                        changed = true;
                    }
                }
                let renamed: Vec<Option<String>> = map
                    .keys()
                    .map(|k| {
                        let r = redact(k);
                        r.changed.then_some(r.text)
                    })
                    .collect();
                if renamed.iter().any(Option::is_some) {
                    let old = std::mem::take(map);
                    for ((k, child), new) in old.into_iter().zip(renamed) {
                        let base = new.unwrap_or(k);
                        // two names redacted alike must not overwrite each other
                        let mut key = base.clone();
                        let mut n = 2;
                        while map.contains_key(&key) {
                            key = format!("{base} ({n})");
                            n += 1;
                        }
                        map.insert(key, child);
                    }
                    changed = true;
                }
                stack.extend(map.values_mut());
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    changed
}

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
fn key_words(name: &str) -> Vec<String> {
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
fn holds_secret(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(_) => false,
        Value::String(s) => !s.is_empty() && s != MARK_NAMED,
        Value::Number(_) => true,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn is_mnemonic_array(items: &[Value]) -> bool {
    items.len() >= 12
        && items
            .iter()
            .all(|v| matches!(v, Value::String(s) if is_bip39_word(s.trim())))
}

fn is_bip39_word(w: &str) -> bool {
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
fn is_placeholder_value(v: &str) -> bool {
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

/// Runs `re` over `text` and lets `f` pick a replacement for each match (`None` keeps
/// it). With `retry`, a rejected match is searched again from its second character, for
/// patterns whose matches are short (addresses); otherwise the search goes on after it.
fn replace_matches<'t>(
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
fn next_boundary(text: &str, i: usize) -> usize {
    let mut j = i + 1;
    while j < text.len() && !text.is_char_boundary(j) {
        j += 1;
    }
    j
}

/// Replaces group `g` of the match with `rep`, keeping the rest of the match.
fn replace_group(text: &str, caps: &Captures<'_>, g: usize, rep: &str) -> Option<String> {
    let m = caps.get(0)?;
    let inner = caps.get(g)?;
    Some(format!(
        "{}{}{}",
        &text[m.start()..inner.start()],
        rep,
        &text[inner.end()..m.end()]
    ))
}

fn char_before(text: &str, i: usize) -> Option<char> {
    text[..i].chars().next_back()
}

fn char_after(text: &str, i: usize) -> Option<char> {
    text[i..].chars().next()
}

// ---------------------------------------------------------------------------------------
// Passes
// ---------------------------------------------------------------------------------------

fn redact_pem(text: &str) -> Cow<'_, str> {
    if !text.contains("-----BEGIN ") {
        return Cow::Borrowed(text);
    }
    PEM_RE.replace_all(text, MARK_PEM)
}

fn redact_jwts(text: &str) -> Cow<'_, str> {
    if !text.contains("eyJ") {
        return Cow::Borrowed(text);
    }
    JWT_RE.replace_all(text, MARK_JWT)
}

#[derive(Clone, Copy, PartialEq)]
enum StackState {
    Normal,
    /// After a header like `Traceback (most recent call last):`: indented lines are frames.
    Indented,
    /// After a Python `File "…", line N` line: deeper-indented lines are its source.
    PySource(usize),
    /// After `Caused by:` or a Go `goroutine N [running]:`: everything is stack.
    Rest,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

fn is_stack_line(body: &str, state: &mut StackState) -> bool {
    if *state == StackState::Rest {
        return true;
    }
    if STACK_REST_HEADER_RE.is_match(body) {
        *state = StackState::Rest;
        return true;
    }
    if STACK_BLOCK_HEADER_RE.is_match(body) {
        *state = StackState::Indented;
        return true;
    }
    match *state {
        StackState::Indented => {
            if body.starts_with([' ', '\t']) && !body.trim().is_empty() {
                return true;
            }
            *state = StackState::Normal;
        }
        StackState::PySource(ind) => {
            if indent_of(body) > ind && !body.trim().is_empty() && !STACK_PY_FILE_RE.is_match(body)
            {
                return true;
            }
            *state = StackState::Normal;
        }
        StackState::Normal | StackState::Rest => {}
    }
    if STACK_PY_FILE_RE.is_match(body) {
        *state = StackState::PySource(indent_of(body));
        return true;
    }
    STACK_FRAME_RE.is_match(body)
}

/// Collapses every run of stack-trace lines into one `[REDACTED:stack]` line. Stack
/// frames name files, functions and line numbers of the downstream server; the message
/// line(s) around them are kept (for Python, the exception line after the traceback).
/// From a `Caused by:` line (Java, anyhow) or a Go `goroutine N [...]:` header on,
/// everything is stack: the first line of the message says what failed.
fn collapse_stacks(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut changed = false;
    let mut state = StackState::Normal;
    let mut in_run = false;
    let mut run_eol = "";
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let eol = &line[body.len()..];
        if is_stack_line(body, &mut state) {
            if !in_run {
                out.push_str(MARK_STACK);
                in_run = true;
            }
            run_eol = eol;
            changed = true;
        } else {
            if in_run {
                out.push_str(run_eol);
                in_run = false;
            }
            out.push_str(line);
        }
    }
    if in_run {
        out.push_str(run_eol);
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// Replaces every run of 12 or more consecutive BIP-39 words (3–8 ASCII letters, any
/// case, separated by one or two whitespace characters) with `[REDACTED:mnemonic]`.
/// Common English function words (`the`, `and`, `of`, `is`…) are not in the list, so
/// ordinary sentences do not form such runs.
fn redact_mnemonics(text: &str) -> Cow<'_, str> {
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
fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    replace_matches(&URL_RE, text, false, |_, caps| {
        let m = caps.get(0)?.as_str();
        let core = strip_trailing_punct(m);
        let trailing = &m[core.len()..];
        let (scheme, rest) = core.split_once("://")?;
        let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (auth, after) = rest.split_at(auth_end);
        let mut dropped = false;
        let hostports = match auth.rfind('@') {
            Some(i) => {
                dropped = true;
                &auth[i + 1..]
            }
            None => auth,
        };
        let hosts: Vec<String> = hostports
            .split(',')
            .map(|hp| {
                let (host, had_port) = split_port(hp);
                dropped |= had_port;
                redact_host(host)
            })
            .collect();
        if !after.is_empty() && after != "/" {
            dropped = true;
        }
        let mut out = format!("{scheme}://{}", hosts.join(","));
        if dropped {
            out.push('/');
            out.push_str(MARK_URL);
        } else {
            out.push_str(after);
        }
        out.push_str(trailing);
        Some(out)
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

/// Splits `host:port` / `[v6]:port`; returns the host and whether a port was present.
fn split_port(hp: &str) -> (&str, bool) {
    if hp.starts_with('[') {
        return match hp.find(']') {
            Some(i) => (&hp[..=i], i + 1 < hp.len()),
            None => (hp, false),
        };
    }
    match hp.rfind(':') {
        Some(i) if !hp[..i].contains(':') => (&hp[..i], true),
        _ => (hp, false),
    }
}

fn redact_host(host: &str) -> String {
    if host == MARK_IP {
        return host.to_string();
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let bare = bare.split('%').next().unwrap_or(bare);
    if Ipv4Addr::from_str(bare).is_ok() || Ipv6Addr::from_str(bare).is_ok() {
        MARK_IP.to_string()
    } else {
        host.to_string()
    }
}

/// `Authorization: <scheme> <credential>` (also `Proxy-Authorization`, quoted JSON keys
/// and `=`): the credential always goes, whatever it looks like; the scheme is kept.
fn redact_authorization(text: &str) -> Cow<'_, str> {
    if !contains_ignore_ascii_case(text, "authorization") {
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
fn redact_bearer(text: &str) -> Cow<'_, str> {
    if !contains_ignore_ascii_case(text, "bearer") {
        return Cow::Borrowed(text);
    }
    replace_matches(&BEARER_RE, text, false, |text, caps| {
        let tok = caps.get(1)?.as_str();
        looks_like_token(tok.trim_end_matches('='))
            .then(|| replace_group(text, caps, 1, MARK_TOKEN))?
    })
}

/// `Basic <base64>` anywhere, when the base64 decodes to printable `user:password`.
fn redact_basic(text: &str) -> Cow<'_, str> {
    if !contains_ignore_ascii_case(text, "basic") {
        return Cow::Borrowed(text);
    }
    replace_matches(&BASIC_RE, text, false, |text, caps| {
        let b64 = caps.get(1)?.as_str();
        let decoded = base64_decode(b64)?;
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

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    let n = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(n.len())
        .any(|w| w.eq_ignore_ascii_case(n))
}

/// `name: value` at the start of a line, for a sensitive name. Header-like names
/// (`Cookie`, `Set-Cookie`, `X-Api-Key`, anything with a `-`) lose their whole value;
/// other names only a single-token or quoted value, so that a validation message such as
/// `password: must be at least 8 characters` is kept.
fn redact_line_kv(text: &str) -> Cow<'_, str> {
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
fn redact_bare_name_kv(text: &str) -> Cow<'_, str> {
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

fn redact_quoted_kv(text: &str) -> Cow<'_, str> {
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

fn redact_escaped_kv(text: &str) -> Cow<'_, str> {
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

fn redact_eq_kv(text: &str) -> Cow<'_, str> {
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

/// Provider credentials recognised by their prefix. The generic prefixes (`sk-`, `pk-`,
/// `rk-`, `api_`, `key_`) need a random part of at least 16 characters that looks random
/// (a digit or an uppercase letter for `sk-`-style, letters and digits for `api_`/`key_`),
/// so `sk-learn`, `pk-value`, `api_version`, `key_name` stay.
fn redact_keys(text: &str) -> Cow<'_, str> {
    replace_matches(&KEY_RE, text, false, |_, caps| {
        if let Some(rest) = caps.name("dash") {
            let r = rest.as_str();
            if !r
                .bytes()
                .any(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            {
                return None;
            }
        }
        if let Some(rest) = caps.name("generic") {
            let r = rest.as_str();
            if !(r.bytes().any(|b| b.is_ascii_digit())
                && r.bytes().any(|b| b.is_ascii_alphabetic()))
            {
                return None;
            }
        }
        Some(MARK_KEY.to_string())
    })
}

/// IPv6 addresses (validated by the standard parser), bracketed with a port, or bare with
/// a `%zone`. A candidate must contain a digit and stand alone (not inside a word or a
/// longer `a:b:c` run), so Rust paths like `std::fs`, `f64::EPSILON` and clock times stay.
fn redact_ipv6(text: &str) -> Cow<'_, str> {
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
fn redact_ipv4(text: &str) -> Cow<'_, str> {
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
fn redact_windows_paths(text: &str) -> Cow<'_, str> {
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

/// Applies a second pass to the result of a first, keeping borrowed text borrowed.
fn then<'t>(first: Cow<'t, str>, second: impl for<'a> Fn(&'a str) -> Cow<'a, str>) -> Cow<'t, str> {
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
fn redact_unix_paths(text: &str) -> Cow<'_, str> {
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
fn redact_aws_secrets(text: &str) -> Cow<'_, str> {
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

/// Runs of ≥ 32 hex digits (optionally `0x`-prefixed) containing both a digit and a
/// letter, and Luhn-valid card numbers.
fn redact_hex_and_cards(text: &str) -> Cow<'_, str> {
    let hex = replace_matches(&HEX_RE, text, false, |_, caps| {
        let h = caps.get(1)?.as_str();
        let digit = h.bytes().any(|b| b.is_ascii_digit());
        let letter = h.bytes().any(|b| b.is_ascii_alphabetic());
        (digit && letter).then(|| MARK_HEX.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Asserts the exact redaction and that it is a fixed point.
    #[track_caller]
    fn check(input: &str, expected: &str) {
        let r = redact(input);
        assert_eq!(r.text, expected, "\ninput: {input:?}");
        assert_eq!(r.changed, input != expected, "changed flag for {input:?}");
        let again = redact(&r.text);
        assert_eq!(again.text, r.text, "not idempotent for {input:?}");
        assert!(!again.changed);
    }

    #[track_caller]
    fn unchanged(input: &str) {
        let r = redact(input);
        assert!(
            !r.changed,
            "unexpected redaction of {input:?}: {:?}",
            r.text
        );
        assert_eq!(r.text, input);
    }

    #[track_caller]
    fn redacts(input: &str, marker: &str, gone: &[&str]) -> String {
        let r = redact(input);
        assert!(r.changed, "nothing redacted in {input:?}");
        assert!(r.text.contains(marker), "{marker} missing in {:?}", r.text);
        for g in gone {
            assert!(!r.text.contains(g), "{g:?} still in {:?}", r.text);
        }
        let again = redact(&r.text);
        assert_eq!(again.text, r.text, "not idempotent for {input:?}");
        assert!(!again.changed);
        r.text
    }

    // ----- real error shapes -----

    #[test]
    fn postgres_connection_error() {
        check(
            r#"connection to server at "10.1.2.3", port 5432 failed: FATAL:  password authentication failed for user "app""#,
            r#"connection to server at "[REDACTED:ip]", port 5432 failed: FATAL:  password authentication failed for user "app""#,
        );
        check(
            "error connecting to postgres://app:s3cr3t@db.internal:5432/orders?sslmode=require: timeout",
            "error connecting to postgres://db.internal/[REDACTED:url]: timeout",
        );
    }

    #[test]
    fn reqwest_error_with_api_key_in_url() {
        check(
            "error sending request for url (https://api.example.com/v1/items?api_key=sk-proj-Abc123Def456Ghi789Jkl012): operation timed out",
            "error sending request for url (https://api.example.com/[REDACTED:url]): operation timed out",
        );
    }

    #[test]
    fn urls_keep_scheme_and_host() {
        check(
            "GET https://api.github.com/repos/x?token=abc failed",
            "GET https://api.github.com/[REDACTED:url] failed",
        );
        check(
            "https://user:pass@example.com",
            "https://example.com/[REDACTED:url]",
        );
        check(
            "see http://10.0.0.5:8080/health.",
            "see http://[REDACTED:ip]/[REDACTED:url].",
        );
        check(
            "dial ws://[::1]:9000/socket",
            "dial ws://[REDACTED:ip]/[REDACTED:url]",
        );
        check(
            "mongodb+srv://admin:pw@cluster0.abc.mongodb.net/db?retryWrites=true",
            "mongodb+srv://cluster0.abc.mongodb.net/[REDACTED:url]",
        );
        check(
            "jdbc:postgresql://db:5432/app?user=x&password=y",
            "jdbc:postgresql://db/[REDACTED:url]",
        );
        check(
            "redis://:hunter2@10.0.0.7:6379/0 unreachable",
            "redis://[REDACTED:ip]/[REDACTED:url] unreachable",
        );
        check(
            "open file:///home/bob/notes.txt",
            "open file:///[REDACTED:url]",
        );
        check(
            "[docs](https://docs.example.com/a/b)",
            "[docs](https://docs.example.com/[REDACTED:url])",
        );
        unchanged("server https://api.github.com is down");
        unchanged("upstream https://api.github.com/ returned 502");
    }

    #[test]
    fn node_enoent_stack() {
        check(
            "Error: ENOENT: no such file or directory, open '/home/app/.config/secret.json'\n    at Object.openSync (node:fs:573:3)\n    at Object.readFileSync (node:fs:452:35)\n    at loadConfig (/srv/app/dist/config.js:12:19)\n    at async Promise.all (index 0)\n    at new Promise (<anonymous>)",
            "Error: ENOENT: no such file or directory, open '[REDACTED:path]'\n[REDACTED:stack]",
        );
        // Node's inspected error object
        check(
            "{\n  errno: -2,\n  code: 'ENOENT',\n  syscall: 'open',\n  path: '/var/lib/app/db.sqlite'\n}",
            "{\n  errno: -2,\n  code: 'ENOENT',\n  syscall: 'open',\n  path: '[REDACTED:path]'\n}",
        );
    }

    #[test]
    fn python_traceback_keeps_exception_line() {
        check(
            "Traceback (most recent call last):\n  File \"/opt/app/server.py\", line 42, in handle\n    data = load(path)\n  File \"/opt/app/store.py\", line 7, in load\n    with open(p) as f:\n         ^^^^^^^\nFileNotFoundError: [Errno 2] No such file or directory: '/etc/app/keys.yaml'\n",
            "[REDACTED:stack]\nFileNotFoundError: [Errno 2] No such file or directory: '[REDACTED:path]'\n",
        );
        // a frame without the header (truncated message)
        check(
            "tool failed:\n  File \"/x/y.py\", line 3, in f\n    g()\nValueError: bad input",
            "tool failed:\n[REDACTED:stack]\nValueError: bad input",
        );
    }

    #[test]
    fn java_exception_with_caused_by() {
        check(
            "org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection; nested exception is org.postgresql.util.PSQLException: Connection to 10.0.0.5:5432 refused.\n\tat org.springframework.jdbc.datasource.DataSourceUtils.getConnection(DataSourceUtils.java:82)\n\tat java.base/java.lang.Thread.run(Thread.java:833)\nCaused by: org.postgresql.util.PSQLException: Connection to 10.0.0.5:5432 refused.\n\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:319)\n\t... 12 more\nCaused by: java.net.ConnectException: Connection refused\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)\n",
            "org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection; nested exception is org.postgresql.util.PSQLException: Connection to [REDACTED:ip] refused.\n[REDACTED:stack]\n",
        );
    }

    #[test]
    fn rust_anyhow_and_panic_backtrace() {
        check(
            "failed to load config\n\nCaused by:\n    0: reading /etc/forge/forge.toml\n    1: Permission denied (os error 13)",
            "failed to load config\n\n[REDACTED:stack]",
        );
        check(
            "thread 'main' panicked at src/main.rs:10:5:\nboom\nstack backtrace:\n   0: rust_begin_unwind\n             at /rustc/abc/library/std/src/panicking.rs:645:5\n   1: core::panicking::panic_fmt\n   2: app::main\nnote: run with `RUST_BACKTRACE=full` for a verbose backtrace.",
            "thread 'main' panicked at src/main.rs:10:5:\nboom\n[REDACTED:stack]\nnote: run with `RUST_BACKTRACE=full` for a verbose backtrace.",
        );
        check(
            "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()\n\t/home/dev/app/main.go:10 +0x1d\nexit status 2",
            "panic: runtime error: index out of range\n\n[REDACTED:stack]",
        );
    }

    #[test]
    fn dotnet_windows_path_and_stack() {
        check(
            "System.IO.FileNotFoundException: Could not find file 'C:\\Users\\bob\\AppData\\Roaming\\App\\secrets.json'.\r\n   at System.IO.FileStream.ValidateFileHandle(SafeFileHandle fileHandle, String path, Boolean bFromProxy)\r\n   at Program.Main(String[] args) in C:\\src\\App\\Program.cs:line 12\r\n--- End of stack trace from previous location ---\r\n",
            "System.IO.FileNotFoundException: Could not find file '[REDACTED:path]'.\r\n[REDACTED:stack]\r\n",
        );
        check(
            "cannot open C:\\Program Files\\Acme App\\config.ini: access denied",
            "cannot open [REDACTED:path]: access denied",
        );
        check(
            "read C:/Users/bob/secrets.txt failed",
            "read [REDACTED:path] failed",
        );
        check(
            r"copy from \\fileserver\finance\q3 report\budget.xlsx denied",
            "copy from [REDACTED:path] denied",
        );
        check(
            r#"{"error":"cannot open C:\\Users\\bob\\key.pem"}"#,
            r#"{"error":"cannot open [REDACTED:path]"}"#,
        );
        check(
            r#"{"share":"\\\\nas01\\backups\\db.bak"}"#,
            r#"{"share":"[REDACTED:path]"}"#,
        );
    }

    #[test]
    fn php_and_ruby_frames() {
        check(
            "PHP Fatal error: Uncaught Exception: nope in /var/www/html/index.php:12\nStack trace:\n#0 /var/www/html/index.php(20): fail()\n#1 {main}\n  thrown",
            "PHP Fatal error: Uncaught Exception: nope in [REDACTED:path]\n[REDACTED:stack]\n  thrown",
        );
        check(
            "undefined method `foo' for nil (NoMethodError)\n\tfrom /app/lib/x.rb:10:in `bar'\n\tfrom /app/lib/y.rb:3:in `<main>'",
            "undefined method `foo' for nil (NoMethodError)\n[REDACTED:stack]",
        );
    }

    #[test]
    fn aws_error_with_access_key() {
        check(
            "An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation: The security token included in the request is invalid. AccessKeyId: AKIAIOSFODNN7EXAMPLE",
            "An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation: The security token included in the request is invalid. AccessKeyId: [REDACTED:key]",
        );
        check(
            "credentials: aws_access_key_id=ASIAY34FZKBOKMUTVV7A aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "credentials: aws_access_key_id=[REDACTED:key] aws_secret_access_key=[REDACTED]",
        );
        check(
            "Access key AKIAI44QH8DHBEXAMPLE with secret je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
            "Access key [REDACTED:key] with secret [REDACTED:key]",
        );
        check(
            "keys: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
            "keys: [REDACTED:key] [REDACTED:key]",
        );
        // 41 characters, all lowercase, or a longer base64 blob: not this shape
        unchanged("blob aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8=");
        unchanged("name abcdefghijklmnopqrstuvwxyzabcdefghijklmn");
    }

    #[test]
    fn github_401_with_echoed_token() {
        check(
            "GitHub API error 401 Bad credentials: token ghp_16C7e42F292c6912E7710c838347Ae178B4a was rejected",
            "GitHub API error 401 Bad credentials: token [REDACTED:key] was rejected",
        );
        redacts(
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV expired",
            MARK_KEY,
            &["github_pat_"],
        );
    }

    #[test]
    fn provider_keys() {
        for (k, _) in [
            ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", ()),
            ("sk-1234567890abcdefghijklmnopqrstuvwxyzABCD", ()),
            ("sk_live_51H8abcdEFGHijklMNOP1234", ()),
            ("pk_test_TYooMQauvdEDq54NiTphI7jx", ()),
            ("pk-lf-1234567890abcdef1234", ()),
            ("api_9f8e7d6c5b4a39281726", ()),
            ("key_a1b2c3d4e5f6g7h8i9j0", ()),
            (
                "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
                (),
            ),
            ("xoxp-123456789012-abcdefabcdef", ()),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", ()),
            ("glpat-xxxxXXXX1234yyyyZZZZ", ()),
            ("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", ()),
        ] {
            let text = format!("request rejected: {k} is invalid");
            check(&text, "request rejected: [REDACTED:key] is invalid");
        }
    }

    #[test]
    fn jwt_in_header_dump() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        check(
            &format!("request headers:\nAuthorization: Bearer {jwt}\nX-Request-Id: 42"),
            "request headers:\nAuthorization: Bearer [REDACTED:jwt]\nX-Request-Id: 42",
        );
        check(
            &format!(
                r#"headers {{"authorization": "Bearer {jwt}", "accept": "application/json"}}"#
            ),
            r#"headers {"authorization": "Bearer [REDACTED:jwt]", "accept": "application/json"}"#,
        );
        check(
            &format!("id_token {jwt} expired"),
            "id_token [REDACTED:jwt] expired",
        );
    }

    #[test]
    fn authorization_bearer_basic() {
        check(
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "Authorization: Basic [REDACTED:token]",
        );
        check(
            "proxy-authorization=Token 12345 denied",
            "proxy-authorization=Token [REDACTED:token] denied",
        );
        check(
            "sent bearer abcdEF12ghIJ34kl to upstream",
            "sent bearer [REDACTED:token] to upstream",
        );
        check(
            "retry with basic dXNlcjpwYXNz",
            "retry with basic [REDACTED:token]",
        );
        check(
            "Authorization: Digest username=\"bob\", realm=\"x\", response=\"6629fae49393a05397450978507c4ef1\"",
            "Authorization: Digest [REDACTED:token]",
        );
        unchanged("Bearer token required");
        unchanged("Bearer authentication failed");
        unchanged("WWW-Authenticate: Bearer realm=\"api\", error=\"invalid_token\"");
        unchanged("Basic auth is disabled");
        unchanged("authorization failed for tool github.create_issue");
    }

    #[test]
    fn key_value_pairs() {
        check(
            "query: /v1/items?api_key=abc123&limit=10",
            "query: /v1/items?api_key=[REDACTED]&limit=10",
        );
        check(
            "Server=10.0.0.9;Database=prod;User Id=app;Password=Tr0ub4dor&3;",
            "Server=[REDACTED:ip];Database=prod;User Id=app;Password=[REDACTED];",
        );
        check(
            "GET /v1/items?limit=10&api_key=abc123&page=2&token=x&y&sig=ab%3D",
            "GET /v1/items?limit=10&api_key=[REDACTED]&page=2&token=[REDACTED]&sig=ab%3D",
        );
        check(
            "env: PGPASSWORD=hunter2 DB_HOST=db",
            "env: PGPASSWORD=[REDACTED] DB_HOST=db",
        );
        check(
            "--client-secret=\"a b c\"",
            "--client-secret=\"[REDACTED]\"",
        );
        check(
            "config: {'password': 'hunter2', 'user': 'bob'}",
            "config: {'password': '[REDACTED]', 'user': 'bob'}",
        );
        check(
            r#"body: {"error":{"message":"bad","api_key":"abc","pin":1234}}"#,
            r#"body: {"error":{"message":"bad","api_key":"[REDACTED]","pin":1234}}"#,
        );
        check(
            r#"upstream said "{\"token\":\"abc.def\",\"n\":1}""#,
            r#"upstream said "{\"token\":\"[REDACTED]\",\"n\":1}""#,
        );
        check(
            "db:\n  password: hunter2\n  host: db",
            "db:\n  password: [REDACTED]\n  host: db",
        );
        check(
            "Cookie: session=abc123; theme=dark\nAccept: */*",
            "Cookie: [REDACTED]\nAccept: */*",
        );
        check("X-Api-Key: 12345", "X-Api-Key: [REDACTED]");
        unchanged("password: must be at least 8 characters");
        unchanged("token: invalid");
        unchanged("password=${DB_PASSWORD} not expanded");
        unchanged(r#"{"password": null, "token": "", "secret": true}"#);
        unchanged("max_tokens=4096 token_count=12 key=name");
        unchanged("if token == null then fail");
    }

    #[test]
    fn pem_block_in_config_echo() {
        check(
            "invalid config: tls.key = \"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c0x\nabcdEFGH+/==\n-----END RSA PRIVATE KEY-----\" is encrypted",
            "invalid config: tls.key = \"[REDACTED:pem]\" is encrypted",
        );
        check(
            r#"{"cert":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"}"#,
            r#"{"cert":"[REDACTED:pem]"}"#,
        );
        // truncated block
        check(
            "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA",
            "key: [REDACTED:pem]",
        );
    }

    #[test]
    fn ip_addresses() {
        check(
            "dial tcp [::1]:8080: connect: connection refused",
            "dial tcp [REDACTED:ip]: connect: connection refused",
        );
        check(
            "connect ECONNREFUSED 2001:db8::1 port 443",
            "connect ECONNREFUSED [REDACTED:ip] port 443",
        );
        check("link fe80::1%eth0 down", "link [REDACTED:ip] down");
        check("peer [2001:db8::42]:8443 reset", "peer [REDACTED:ip] reset");
        check("from ::ffff:10.0.0.1", "from [REDACTED:ip]");
        check(
            "connect ECONNREFUSED 127.0.0.1:6379",
            "connect ECONNREFUSED [REDACTED:ip]",
        );
        check("allowed 10.0.0.0/8 only", "allowed [REDACTED:ip] only");
        check("host 192.168.1.20.", "host [REDACTED:ip].");
        unchanged("upgrade to 1.2.3 or v2.0.1.4");
        unchanged("oid 1.3.6.1.4.1.311 unknown");
        unchanged("at 10:30:00 and 12:34:56.789");
        unchanged("std::fs::read failed in f64::EPSILON and u8::MAX, Foo::bar");
        unchanged("mac 00:1a:2b:3c:4d:5e");
        unchanged("version 256.1.1.1");
    }

    #[test]
    fn unix_paths() {
        check(
            "open /home/alice/.ssh/id_rsa failed",
            "open [REDACTED:path] failed",
        );
        check("cannot read /etc/passwd.", "cannot read [REDACTED:path].");
        check("see ~/.aws/credentials", "see [REDACTED:path]");
        check("at (/srv/app/index.js:10:5)", "at ([REDACTED:path])");
        check("file=/x/y/config.yaml", "file=[REDACTED:path]");
        check("dir \"/opt/acme/data\"", "dir \"[REDACTED:path]\"");
        check("run ./scripts/deploy.sh", "run [REDACTED:path]");
        check("mounted /run/secrets/db", "mounted [REDACTED:path]");
        unchanged("POST /api/v1/users returned 404");
        unchanged("instance /items/0/name must be string");
        unchanged("pointer /data/attributes/title is invalid");
        unchanged("use a/b or and/or; ratio 3/4 on 2026/11/22");
        unchanged("tools/call failed; notifications/message dropped");
        unchanged("content-type application/json expected");
        unchanged("root path / is not allowed; /tmp is fine");
    }

    #[test]
    fn hex_and_cards() {
        check(
            "signature mismatch: expected 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "signature mismatch: expected [REDACTED:hex]",
        );
        check(
            "commit 3b18e512dba79e4c8300dd08aeb37f8e728b8dad not found",
            "commit [REDACTED:hex] not found",
        );
        check(
            "wallet key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
            "wallet key [REDACTED:hex]",
        );
        check(
            "card 4111 1111 1111 1111 declined",
            "card [REDACTED:card] declined",
        );
        check(
            "card 5555-5555-5555-4444 declined",
            "card [REDACTED:card] declined",
        );
        check("amex 378282246310005", "amex [REDACTED:card]");
        check("amex 3782 822463 10005", "amex [REDACTED:card]");
        check(
            "cards 4111 1111 1111 1111 2 and 1",
            "cards [REDACTED:card] 2 and 1",
        );
        unchanged("uuid 123e4567-e89b-12d3-a456-426614174000");
        unchanged("id 12345678901234567890123456789012345");
        unchanged("order 1234567890123456 shipped"); // no card prefix
        unchanged("card 4111 1111 1111 1112 declined"); // fails Luhn
        unchanged("ts 1732265678123 and 1732265678123456789");
    }

    #[test]
    fn mnemonics() {
        let twelve =
            "abandon ability able about above absent absorb abstract absurd abuse access accident";
        check(
            &format!("seed was: {twelve}."),
            "seed was: [REDACTED:mnemonic].",
        );
        let twenty_four = "legal winner thank year wave sausage worth useful legal winner thank yellow \
                           letter advice cage absurd amount doctor acoustic avoid letter advice cage above";
        check(
            &format!("mnemonic {twenty_four}"),
            "mnemonic [REDACTED:mnemonic]",
        );
        check(
            "words:\nzoo zoo zoo zoo\nzoo zoo zoo zoo\nzoo zoo zoo wrong",
            "words:\n[REDACTED:mnemonic]",
        );
        unchanged("the quick brown fox jumps over the lazy dog and then sleeps all afternoon long");
        unchanged(
            "please check your network connection and try again later because the server could not be reached",
        );
        // eleven list words are not a mnemonic
        unchanged("abandon ability able about above absent absorb abstract absurd abuse access");
    }

    #[test]
    fn false_positives_stay_unchanged() {
        for text in [
            r#"tool "github.create_issue" not found; did you mean "github.create_issues"?"#,
            r#"field repo: 5 is not of type "string""#,
            r#"field a.b: "one" is not of type "number""#,
            r#"server "memory" is not connected"#,
            "tools/call failed",
            "content-type application/json expected",
            "sk-learn version 1.2.3",
            "max_tokens must be <= 4096",
            "took 1.5 s",
            "timed out after 30 s (1.5s per attempt, 250ms backoff)",
            "uuid 123e4567-e89b-12d3-a456-426614174000",
            "date 2026/11/22",
            "and/or",
            "ratio 3/4",
            "HTTP 404 Not Found",
            "HTTP/1.1 503 Service Unavailable",
            "api_version 2024-01-01 and key_name x and pk-value y",
            "The model returned an error because the request contained too many tokens for the context window.",
            "Error: request to the memory server failed with status 500 Internal Server Error",
            "expected one of: read, write, admin",
            "invalid argument: limit must be between 1 and 100",
            "at least one of (owner, repo) is required",
            "  at least 3 characters (got 2)",
            "git@github.com:org/repo.git rejected the push",
            "rate limited; retry after 2026-11-22T10:00:00Z",
            "",
        ] {
            unchanged(text);
        }
    }

    #[test]
    fn sensitive_keys() {
        for k in [
            "password",
            "Password",
            "passwd",
            "pwd",
            "db_password",
            "PGPASSWORD",
            "passwordHash",
            "secret",
            "client_secret",
            "clientSecret",
            "aws_secret_access_key",
            "private_key",
            "privateKey",
            "PRIVATE-KEY",
            "api_key",
            "apiKey",
            "APIKey",
            "x-api-key",
            "apikey",
            "access_token",
            "accessToken",
            "refresh_token",
            "auth_token",
            "id_token",
            "session_token",
            "token",
            "csrftoken",
            "x-auth-token",
            "token_value",
            "authorization",
            "Proxy-Authorization",
            "cookie",
            "Set-Cookie",
            "credentials",
            "credential",
            "mnemonic",
            "seed_phrase",
            "seedPhrase",
            "recovery_phrase",
            "passphrase",
            "ssn",
            "card_number",
            "cardNumber",
            "credit_card",
            "cvv",
            "auth",
            "basic_auth",
            "DB_PASS",
            "signing_key",
            "webhook_secret",
        ] {
            assert!(is_sensitive_key(k), "{k} should be sensitive");
        }
        for k in [
            "token_count",
            "max_tokens",
            "tokens_used",
            "tokens",
            "token_type",
            "tokenizer",
            "next_token",
            "NextToken",
            "page_token",
            "eos_token",
            "keyboard",
            "monkey",
            "secretary",
            "secret_name",
            "key",
            "key_name",
            "public_key",
            "private_key_id",
            "primary_key",
            "cookie_domain",
            "seed",
            "author",
            "authority",
            "authorization_url",
            "passwordless",
            "session_id",
            "name",
            "repo",
            "",
            "___",
        ] {
            assert!(!is_sensitive_key(k), "{k} should not be sensitive");
        }
    }

    #[test]
    fn json_nested_objects_and_arrays() {
        let mut v = json!({
            "error": {
                "message": "request to https://api.example.com/v1/x?key=1 failed",
                "details": [
                    {"password": "hunter2", "user": "bob"},
                    {"headers": {"Authorization": "Bearer abc", "Set-Cookie": ["a=1", "b=2"]}},
                    {"clientSecret": {"value": "s", "rotated": true}},
                    {"privateKey": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}
                ],
                "token_count": 1234,
                "max_tokens": 4096,
                "keyboard": "qwerty",
                "access_token": 12345,
                "refresh_token": null,
                "mnemonic_note": "abandon ability able about above absent absorb abstract absurd abuse access accident"
            }
        });
        assert!(redact_json(&mut v));
        assert_eq!(
            v,
            json!({
                "error": {
                    "message": "request to https://api.example.com/[REDACTED:url] failed",
                    "details": [
                        {"password": "[REDACTED]", "user": "bob"},
                        {"headers": {"Authorization": "[REDACTED]", "Set-Cookie": "[REDACTED]"}},
                        {"clientSecret": "[REDACTED]"},
                        {"privateKey": "[REDACTED]"}
                    ],
                    "token_count": 1234,
                    "max_tokens": 4096,
                    "keyboard": "qwerty",
                    "access_token": "[REDACTED]",
                    "refresh_token": null,
                    "mnemonic_note": "[REDACTED:mnemonic]"
                }
            })
        );
        // idempotent
        let snapshot = v.clone();
        assert!(!redact_json(&mut v));
        assert_eq!(v, snapshot);
    }

    #[test]
    fn json_keys_order_and_mnemonic_arrays() {
        let mut v = json!({
            "z": 1,
            "/home/bob/.netrc": "x",
            "a": ["legal","winner","thank","year","wave","sausage","worth","useful","legal","winner","thank","yellow"],
            "b": ["only", "three", "words"]
        });
        assert!(redact_json(&mut v));
        let keys: Vec<&String> = v
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["z", "[REDACTED:path]", "a", "b"]);
        assert_eq!(v["a"], json!("[REDACTED:mnemonic]"));
        assert_eq!(v["b"], json!(["only", "three", "words"]));

        let mut clean =
            json!({"message": "tool \"x\" not found", "code": -32601, "data": {"max_tokens": 10}});
        assert!(!redact_json(&mut clean));

        let mut s = json!("Bearer abcdEF12ghIJ34kl");
        assert!(redact_json(&mut s));
        assert_eq!(s, json!("Bearer [REDACTED:token]"));
    }

    #[test]
    fn deep_json_does_not_overflow() {
        let mut v = json!("secret");
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert!(!redact_json(&mut v));
        // dropping a very deep Value recurses inside serde_json; unwind it by hand
        let mut cur = v;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn hostile_inputs_do_not_panic() {
        let inputs: Vec<String> = vec![
            "\u{0}\u{FFFF}é🙂://@[]:::/\\\\".into(),
            ":".repeat(64),
            "[[[[[[]]]]]]://x".into(),
            "https://[::1".into(),
            "https://@".into(),
            "a:".repeat(1000),
            "/".repeat(5000),
            "a/".repeat(5000),
            "é/ü/ß.txt /é/ü/ß.txt ~/é".into(),
            "-----BEGIN X-----".into(),
            "Caused by:".into(),
            "eyJ.eyJ.".into(),
            "Basic ====".into(),
            "1.1.1.1.1.1.1.1.1.1".into(),
            "0x".into(),
            "C:".into(),
            "\\\\".into(),
            "4".into(),
            "zoo ".repeat(3000),
        ];
        for i in &inputs {
            let r = redact(i);
            assert_eq!(redact(&r.text).text, r.text, "not idempotent for {i:?}");
        }
    }

    #[test]
    fn one_megabyte_completes() {
        let sample = "Error: ENOENT: no such file or directory, open '/home/app/.config/secret.json'\n    at Object.openSync (node:fs:573:3)\n\
            connection to server at \"10.1.2.3\", port 5432 failed: FATAL: password authentication failed for user \"app\"\n\
            error sending request for url (https://api.example.com/v1/items?api_key=sk-proj-Abc123Def456Ghi789Jkl012)\n\
            tool \"github.create_issue\" not found; did you mean \"github.create_issues\"? took 1.5 s, max_tokens must be <= 4096 \
            and the quick brown fox jumps over the lazy dog; std::fs::read 12:30:00 é ü 🙂\n";
        let mut text = String::with_capacity(1 << 20);
        while text.len() < 1 << 20 {
            text.push_str(sample);
        }
        let start = std::time::Instant::now();
        let r = redact(&text);
        let elapsed = start.elapsed();
        println!(
            "redact: {} bytes in {:?} (debug build)",
            text.len(),
            elapsed
        );
        assert!(r.changed);
        assert!(!r.text.contains("10.1.2.3"));
        assert!(!r.text.contains("sk-proj"));

        let clean =
            "plain english words and numbers 1.2.3 without anything to hide; ".repeat(16_000);
        let start = std::time::Instant::now();
        let r = redact(&clean);
        println!(
            "redact: {} clean bytes in {:?} (debug build)",
            clean.len(),
            start.elapsed()
        );
        assert!(!r.changed);
    }

    /// Fragments of secrets, addresses, paths, frames and ordinary text glued together
    /// at random (deterministic xorshift) must redact without panicking, idempotently.
    #[test]
    fn random_mixtures_are_idempotent() {
        const FRAGMENTS: &[&str] = &[
            "https://user:pw@api.example.com:8443/v1/x?token=abc#f",
            "http://10.0.0.5/a",
            "[::1]:80",
            "fe80::1%eth0",
            "2001:db8::1",
            "10.1.2.3:5432",
            "1.2.3",
            "v1.2.3.4",
            "/home/bob/.ssh/id_rsa",
            "~/x",
            "./a/b",
            "C:\\Users\\bob\\a b\\c.txt",
            "\\\\srv\\share\\f",
            "a/b",
            "tools/call",
            "Bearer abcdEF12ghIJ34kl",
            "Authorization: Basic dXNlcjpwYXNz",
            "password=hunter2",
            "&token=x",
            "\"secret\": \"s\"",
            "'api_key': 'k'",
            "token: abc123",
            "sk-proj-Abc123Def456Ghi789Jkl012",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-123456789012-abcdefABCDEF",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig_sig",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
            "-----BEGIN X-----",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "4111 1111 1111 1111",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "abandon ability able about above absent absorb abstract absurd abuse access accident",
            "zoo zoo zoo zoo zoo zoo",
            "    at foo (/app/x.js:1:2)",
            "\tat com.x.Y.z(Y.java:3)",
            "Caused by: boom",
            "Traceback (most recent call last):",
            "  File \"/x.py\", line 3, in f",
            "   0: std::panicking::begin_panic",
            "[REDACTED]",
            "[REDACTED:url]",
            "not found",
            "max_tokens",
            "é🙂",
            "\"",
            "'",
            "=",
            ":",
            "/",
            "\\",
            "[",
            "]",
            "(",
            ")",
            "@",
        ];
        const SEPARATORS: &[&str] = &[
            "", " ", "\n", "\r\n", ", ", "; ", "=", ": ", "\"", "/", "\t",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..3000 {
            let mut text = String::new();
            let mut spaced = true;
            for _ in 0..1 + next(8) {
                text.push_str(FRAGMENTS[next(FRAGMENTS.len())]);
                let sep = SEPARATORS[next(SEPARATORS.len())];
                spaced &= matches!(sep, " " | "\n" | "\r\n" | "\t");
                text.push_str(sep);
            }
            let once = redact(&text);
            let twice = redact(&once.text);
            assert_eq!(twice.text, once.text, "not idempotent for {text:?}");
            assert!(!twice.changed);
            // glued fragments can form other tokens; leaks are judged on spaced ones
            if !spaced {
                continue;
            }
            for secret in [
                "hunter2",
                "16C7e42F",
                "IOSFODNN",
                "dXNlcjpwYXNz",
                "MIIB",
                "abandon ability",
            ] {
                assert!(
                    !once.text.contains(secret),
                    "{secret} leaked from {text:?}: {:?}",
                    once.text
                );
            }
        }
    }
}
