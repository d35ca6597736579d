//! `[servers.NAME]`, `[groups.NAME]` and `[manifest]`: the downstream side of
//! forge.toml.
//!
//! The raw serde types mirror the file (Forgemax's keys plus `env` and `cwd`);
//! [`resolve`] validates them, expands `${VAR}` references and reports every
//! problem with the file, line and dotted key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::expand::{ExpandError, expand};
pub use crate::gateway::{GroupConfig, ServerConfig, Transport};
pub use crate::policy::Isolation;
use crate::policy::{Destructive, ToolPolicy};

/// Longest server or group name. Names appear in scripts and messages.
pub const MAX_NAME_LEN: usize = 64;

/// Default per-call timeout of a downstream server, seconds. 30 s: Forgemax's
/// default, long enough for a slow API, short enough to free a script's
/// budget. (The script's own `timeout_secs` still applies.)
pub const DEFAULT_SERVER_TIMEOUT_SECS: f64 = 30.0;
/// Longest per-server timeout, seconds: an hour. Calls are work of one agent
/// turn; longer ones belong in a job system.
pub const MAX_SERVER_TIMEOUT_SECS: f64 = 3600.0;
/// Default consecutive failures that open a server's circuit breaker. Five
/// tells a dead server from a blip without burning many scripts on it.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 5;
/// Default seconds an open breaker waits before letting one probe through.
pub const DEFAULT_RECOVERY_TIMEOUT_SECS: f64 = 30.0;
/// Default calls in flight to one server at once. Sixteen lets a script fan
/// out while keeping one busy script from flooding a server; more calls wait
/// their turn, and their timeout starts only when they are sent.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 16;
/// Default largest message one server may send, MiB. 16 MiB: sixteen times
/// the default `max_output_size`, the most a script could still receive cut
/// rather than refused; a larger message fails the call with an error
/// naming the limit, before the gateway's memory follows it.
pub const DEFAULT_MAX_RESPONSE_MB: u64 = 16;
/// Largest `max_response_mb`: 1 GiB.
pub const MAX_RESPONSE_MB: u64 = 1024;
/// Default `max_reconnect_backoff_secs`: a minute, so a server that comes
/// back is found within a minute without hammering one that stays down.
pub const DEFAULT_RECONNECT_BACKOFF: Duration = Duration::from_secs(60);
/// Largest `max_reconnect_backoff_secs`: an hour. A server that comes back
/// is then found within the hour; longer, and it may as well be removed.
pub const MAX_RECONNECT_BACKOFF_SECS: u64 = 3600;
/// Default seconds between manifest refreshes. Five minutes: servers that
/// announce changes (`notifications/tools/list_changed`) are refreshed at once
/// anyway; polling only catches the ones that do not.
pub const DEFAULT_REFRESH_INTERVAL_SECS: u64 = 300;

/// Whether a header of this name carries credentials: the standard ones
/// (`Authorization`, `Proxy-Authorization`, `Cookie`) and any name that says
/// so (`X-API-Key`, `X-Auth-Token`, `Private-Token`, ...). Such headers go only
/// over https or to a loopback address.
pub fn carries_credentials(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie"
    ) || [
        "token",
        "key",
        "secret",
        "auth",
        "password",
        "session",
        "credential",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Whether `url` points at this machine: `localhost` or a loopback address,
/// where clear-text HTTP never crosses a network.
pub fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// `[manifest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestConfig {
    /// How often every server's tools are listed again; `None` disables polling.
    pub refresh_interval: Option<Duration>,
}

impl Default for ManifestConfig {
    fn default() -> Self {
        ManifestConfig {
            refresh_interval: Some(Duration::from_secs(DEFAULT_REFRESH_INTERVAL_SECS)),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    transport: Option<Spanned<String>>,
    command: Option<Spanned<String>>,
    #[serde(default)]
    args: Vec<Spanned<String>>,
    url: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    description: Option<Spanned<String>>,
    timeout_secs: Option<Spanned<f64>>,
    circuit_breaker: Option<bool>,
    failure_threshold: Option<Spanned<u32>>,
    recovery_timeout_secs: Option<Spanned<f64>>,
    max_in_flight: Option<Spanned<u32>>,
    max_response_mb: Option<Spanned<u64>>,
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    allow_destructive: Option<Spanned<AllowDestructive>>,
    #[serde(default)]
    confirm: Vec<Spanned<String>>,
    sampling: Option<bool>,
    #[serde(default)]
    roots: Vec<Spanned<String>>,
    calls_per_minute: Option<Spanned<u32>>,
    reconnect: Option<bool>,
    max_reconnect_backoff_secs: Option<Spanned<u64>>,
    expose: Option<Spanned<RawExpose>>,
    on_tool_change: Option<Spanned<String>>,
    #[serde(default)]
    env: BTreeMap<String, Spanned<String>>,
    cwd: Option<Spanned<String>>,
}

/// `expose`: `"code"`, `"direct"` or a list of tool globs.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawExpose {
    Word(String),
    // Plain strings: spans do not survive an untagged enum's buffering.
    Globs(Vec<String>),
}

/// `allow_destructive`: `true`, `false` or `"ask"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum AllowDestructive {
    Flag(bool),
    Word(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGroup {
    servers: Spanned<Vec<Spanned<String>>>,
    isolation: Option<Isolation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawManifest {
    refresh_interval_secs: Option<Spanned<u64>>,
}

/// Reports a problem at a byte offset of the file.
pub(super) trait Report {
    fn at(&self, span: std::ops::Range<usize>, key: String, message: String) -> super::ConfigError;
}

/// What [`resolve`] produces.
pub(super) struct Downstream {
    pub servers: Vec<ServerConfig>,
    pub groups: Vec<GroupConfig>,
    pub manifest: ManifestConfig,
}

/// Validates and expands the downstream part of the file.
pub(super) fn resolve(
    servers: BTreeMap<Spanned<String>, Spanned<RawServer>>,
    groups: BTreeMap<Spanned<String>, Spanned<RawGroup>>,
    manifest: Option<Spanned<RawManifest>>,
    base_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    report: &dyn Report,
    default_response_mb: u64,
) -> Result<Downstream, super::ConfigError> {
    let mut out = Vec::with_capacity(servers.len());
    for (name, raw) in servers {
        let key = format!("servers.{}", name.get_ref());
        check_name(&name, &key, report)?;
        let span = raw.span();
        out.push(server(
            name.into_inner(),
            raw.into_inner(),
            span,
            base_dir,
            lookup,
            report,
            default_response_mb,
        )?);
    }
    let names: Vec<&str> = out.iter().map(|s| s.name.as_str()).collect();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut resolved_groups = Vec::with_capacity(groups.len());
    for (name, raw) in groups {
        let key = format!("groups.{}", name.get_ref());
        check_name(&name, &key, report)?;
        let raw_span = raw.span();
        let raw = raw.into_inner();
        if raw.servers.get_ref().is_empty() {
            return Err(report.at(
                raw.servers.span(),
                format!("{key}.servers"),
                "a group needs at least one server".into(),
            ));
        }
        let mut members = Vec::new();
        for server in raw.servers.into_inner() {
            let span = server.span();
            let server = server.into_inner();
            if !names.contains(&server.as_str()) {
                let hint = crate::suggest::did_you_mean(&server, names.iter().copied())
                    .map(|s| format!("; did you mean {s:?}?"))
                    .unwrap_or_default();
                return Err(report.at(
                    span,
                    format!("{key}.servers"),
                    format!("no server is named {server:?}{hint}"),
                ));
            }
            if let Some(other) = owner.insert(server.clone(), name.get_ref().clone()) {
                return Err(report.at(
                    span,
                    format!("{key}.servers"),
                    format!("server {server:?} is already in group {other:?}; a server belongs to at most one group"),
                ));
            }
            members.push(server);
        }
        let _ = raw_span;
        resolved_groups.push(GroupConfig {
            name: name.into_inner(),
            servers: members,
            isolation: raw.isolation.unwrap_or(Isolation::Strict),
        });
    }
    let manifest = match manifest.map(Spanned::into_inner) {
        None => ManifestConfig::default(),
        Some(m) => ManifestConfig {
            refresh_interval: match m.refresh_interval_secs.map(Spanned::into_inner) {
                None => Some(Duration::from_secs(DEFAULT_REFRESH_INTERVAL_SECS)),
                Some(0) => None,
                Some(secs) => Some(Duration::from_secs(secs)),
            },
        },
    };
    Ok(Downstream {
        servers: out,
        groups: resolved_groups,
        manifest,
    })
}

fn check_name(
    name: &Spanned<String>,
    key: &str,
    report: &dyn Report,
) -> Result<(), super::ConfigError> {
    let n = name.get_ref();
    let ok = !n.is_empty()
        && n.len() <= MAX_NAME_LEN
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(report.at(
            name.span(),
            key.to_string(),
            format!("names are 1 to {MAX_NAME_LEN} ASCII letters, digits, _ or -; got {n:?}"),
        ))
    }
}

fn server(
    name: String,
    raw: RawServer,
    span: std::ops::Range<usize>,
    base_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    report: &dyn Report,
    default_response_mb: u64,
) -> Result<ServerConfig, super::ConfigError> {
    let key = |k: &str| format!("servers.{name}.{k}");
    let text = |value: Spanned<String>, k: String| -> Result<String, super::ConfigError> {
        let span = value.span();
        expand(value.get_ref(), lookup).map_err(|e: ExpandError| report.at(span, k, e.to_string()))
    };
    let kind = match &raw.transport {
        None if raw.command.is_some() => "stdio".to_string(),
        None if raw.url.is_some() => "http".to_string(),
        None => {
            return Err(report.at(
                span,
                format!("servers.{name}"),
                "a server needs `command` (a stdio server) or `url` (an HTTP server)".into(),
            ));
        }
        Some(t) => t.get_ref().clone(),
    };
    let transport_span = raw.transport.as_ref().map_or(span.clone(), |t| t.span());
    let transport = match kind.as_str() {
        "stdio" => {
            let Some(command) = raw.command else {
                return Err(report.at(
                    transport_span,
                    key("command"),
                    "a stdio server needs `command`".into(),
                ));
            };
            if let Some(url) = &raw.url {
                return Err(report.at(
                    url.span(),
                    key("url"),
                    "`url` is for HTTP servers; a stdio server has `command`".into(),
                ));
            }
            if let Some((header, value)) = raw.headers.iter().next() {
                return Err(report.at(
                    value.span(),
                    key(&format!("headers.{header}")),
                    "`headers` are for HTTP servers".into(),
                ));
            }
            let command = text(command, key("command"))?;
            if command.trim().is_empty() {
                return Err(report.at(span, key("command"), "must not be empty".into()));
            }
            let mut args = Vec::with_capacity(raw.args.len());
            for (i, arg) in raw.args.into_iter().enumerate() {
                args.push(text(arg, format!("{}[{i}]", key("args")))?);
            }
            let mut env = BTreeMap::new();
            for (var, value) in raw.env {
                let value = text(value, key(&format!("env.{var}")))?;
                env.insert(var, value);
            }
            let cwd = match raw.cwd {
                None => None,
                Some(dir) => {
                    let dir = PathBuf::from(text(dir, key("cwd"))?);
                    Some(if dir.is_relative() {
                        base_dir.join(dir)
                    } else {
                        dir
                    })
                }
            };
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            }
        }
        "http" | "sse" | "streamable-http" | "streamable_http" | "streamableHttp" => {
            let Some(url) = raw.url else {
                return Err(report.at(
                    transport_span,
                    key("url"),
                    format!("a {kind} server needs `url`"),
                ));
            };
            if let Some(command) = &raw.command {
                return Err(report.at(
                    command.span(),
                    key("command"),
                    "`command` is for stdio servers; an HTTP server has `url`".into(),
                ));
            }
            for (k, v) in [
                ("args", raw.args.first().map(Spanned::span)),
                ("cwd", raw.cwd.as_ref().map(Spanned::span)),
                ("env", raw.env.values().next().map(Spanned::span)),
            ] {
                if let Some(s) = v {
                    return Err(report.at(s, key(k), format!("`{k}` is for stdio servers")));
                }
            }
            let url_span = url.span();
            let url = text(url, key("url"))?;
            let parsed = match reqwest::Url::parse(&url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => u,
                Ok(u) => {
                    return Err(report.at(
                        url_span,
                        key("url"),
                        format!(
                            "scheme {:?} is not supported; use http or https",
                            u.scheme()
                        ),
                    ));
                }
                Err(e) => {
                    return Err(report.at(url_span, key("url"), format!("not a valid URL: {e}")));
                }
            };
            let in_clear = parsed.scheme() != "https" && !is_loopback(&parsed);
            if in_clear && (!parsed.username().is_empty() || parsed.password().is_some()) {
                return Err(report.at(
                    url_span,
                    key("url"),
                    "the URL carries credentials and would send them in clear text; use https:// (or a loopback address)".into(),
                ));
            }
            let mut headers = BTreeMap::new();
            for (header, value) in raw.headers {
                let k = key(&format!("headers.{header}"));
                let span = value.span();
                let value = text(value, k.clone())?;
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                    return Err(report.at(
                        span,
                        k,
                        format!("{header:?} is not a valid HTTP header name"),
                    ));
                }
                if reqwest::header::HeaderValue::from_str(&value).is_err() {
                    return Err(report.at(
                        span,
                        k,
                        "the value is not a valid HTTP header value (control characters?)".into(),
                    ));
                }
                if in_clear && carries_credentials(&header) {
                    return Err(report.at(
                        span,
                        k,
                        format!(
                            "header {header:?} carries credentials and would travel in clear text to {}; use an https:// URL (or a loopback address)",
                            parsed.host_str().unwrap_or("the server")
                        ),
                    ));
                }
                headers.insert(header, value);
            }
            Transport::Http { url, headers }
        }
        other => {
            return Err(report.at(
                transport_span,
                key("transport"),
                format!("unsupported transport {other:?}: use \"stdio\", \"http\" (streamable HTTP, falling back to SSE) or \"sse\" (the same)"),
            ));
        }
    };
    let description = raw
        .description
        .map(|d| text(d, key("description")))
        .transpose()?;
    let seconds = |value: Option<Spanned<f64>>,
                   k: &str,
                   default: f64|
     -> Result<Duration, super::ConfigError> {
        match value {
            None => Ok(Duration::from_secs_f64(default)),
            Some(v) if *v.get_ref() > 0.0 && *v.get_ref() <= MAX_SERVER_TIMEOUT_SECS => {
                Ok(Duration::from_secs_f64(*v.get_ref()))
            }
            Some(v) => Err(report.at(
                v.span(),
                key(k),
                format!(
                    "must be above 0 and at most {MAX_SERVER_TIMEOUT_SECS}, got {}",
                    v.get_ref()
                ),
            )),
        }
    };
    let timeout = seconds(
        raw.timeout_secs,
        "timeout_secs",
        DEFAULT_SERVER_TIMEOUT_SECS,
    )?;
    let recovery_timeout = seconds(
        raw.recovery_timeout_secs,
        "recovery_timeout_secs",
        DEFAULT_RECOVERY_TIMEOUT_SECS,
    )?;
    let failure_threshold = match raw.failure_threshold {
        None => DEFAULT_FAILURE_THRESHOLD,
        Some(t) if *t.get_ref() > 0 => *t.get_ref(),
        Some(t) => {
            return Err(report.at(
                t.span(),
                key("failure_threshold"),
                "must be at least 1".into(),
            ));
        }
    };
    let max_in_flight = match raw.max_in_flight {
        None => DEFAULT_MAX_IN_FLIGHT,
        Some(n) if *n.get_ref() > 0 => *n.get_ref(),
        Some(n) => {
            return Err(report.at(n.span(), key("max_in_flight"), "must be at least 1".into()));
        }
    };
    let max_response_mb = match raw.max_response_mb {
        None => default_response_mb,
        Some(n) if (1..=MAX_RESPONSE_MB).contains(n.get_ref()) => *n.get_ref(),
        Some(n) => {
            return Err(report.at(
                n.span(),
                key("max_response_mb"),
                format!("must be from 1 to {MAX_RESPONSE_MB}, got {}", n.get_ref()),
            ));
        }
    };
    let max_reconnect_backoff = match raw.max_reconnect_backoff_secs {
        None => DEFAULT_RECONNECT_BACKOFF,
        Some(n) if (1..=MAX_RECONNECT_BACKOFF_SECS).contains(n.get_ref()) => {
            Duration::from_secs(*n.get_ref())
        }
        Some(n) => {
            return Err(report.at(
                n.span(),
                key("max_reconnect_backoff_secs"),
                format!(
                    "must be from 1 to {MAX_RECONNECT_BACKOFF_SECS}, got {}",
                    n.get_ref()
                ),
            ));
        }
    };
    let globs = |list: Vec<Spanned<String>>, k: &str| -> Result<Vec<String>, super::ConfigError> {
        list.into_iter()
            .enumerate()
            .map(|(i, g)| {
                let span = g.span();
                let pattern = g.into_inner();
                ToolPolicy::check_glob(&pattern)
                    .map(|()| pattern)
                    .map_err(|e| {
                        report.at(
                            span,
                            key(&format!("{k}[{i}]")),
                            format!("not a valid glob: {e}"),
                        )
                    })
            })
            .collect()
    };
    let allow = globs(raw.allow, "allow")?;
    let deny = globs(raw.deny, "deny")?;
    let calls_per_minute = match raw.calls_per_minute {
        None => None,
        Some(n) => match std::num::NonZeroU32::new(*n.get_ref()) {
            Some(n) => Some(n),
            None => {
                return Err(report.at(
                    n.span(),
                    key("calls_per_minute"),
                    "must be at least 1 (leave it out for no limit)".into(),
                ));
            }
        },
    };
    let confirm = globs(raw.confirm, "confirm")?;
    let destructive = match raw.allow_destructive {
        None => Destructive::Deny,
        Some(d) => match d.get_ref() {
            AllowDestructive::Flag(true) => Destructive::Allow,
            AllowDestructive::Flag(false) => Destructive::Deny,
            AllowDestructive::Word(w) if w == "ask" => Destructive::Ask,
            AllowDestructive::Word(w) => {
                return Err(report.at(
                    d.span(),
                    key("allow_destructive"),
                    format!("must be true, false or \"ask\", got {w:?}"),
                ));
            }
        },
    };
    let expose = match raw.expose {
        None => Vec::new(),
        Some(e) => {
            let span = e.span();
            match e.into_inner() {
                RawExpose::Word(w) if w == "code" => Vec::new(),
                RawExpose::Word(w) if w == "direct" => vec!["*".to_string()],
                RawExpose::Word(w) => {
                    return Err(report.at(
                        span,
                        key("expose"),
                        format!("must be \"code\", \"direct\" or a list of tool globs such as [\"search_*\"], got {w:?}"),
                    ));
                }
                RawExpose::Globs(list) => {
                    crate::policy::Expose::globs(&list).map_err(|e| {
                        report.at(span, key("expose"), format!("not a valid glob: {e}"))
                    })?;
                    list
                }
            }
        }
    };
    let expose = crate::policy::Expose::globs(&expose)
        .map_err(|e| report.at(0..0, key("expose"), format!("not a valid glob: {e}")))?;
    let mut roots = Vec::new();
    for (i, root) in raw.roots.into_iter().enumerate() {
        let span = root.span();
        let uri = root.into_inner();
        if url::Url::parse(&uri).is_err() {
            return Err(report.at(
                span,
                key(&format!("roots[{i}]")),
                format!("must be a URI such as \"file:///home/me/project\", got {uri:?}"),
            ));
        }
        roots.push(uri);
    }
    let on_tool_change = match raw.on_tool_change {
        None => crate::pins::OnToolChange::default(),
        Some(w) => match w.get_ref().as_str() {
            "warn" => crate::pins::OnToolChange::Warn,
            "quarantine" => crate::pins::OnToolChange::Quarantine,
            other => {
                return Err(report.at(
                    w.span(),
                    key("on_tool_change"),
                    format!("must be \"warn\" or \"quarantine\", got {other:?}"),
                ));
            }
        },
    };
    let policy = ToolPolicy::new(&name, &allow, &deny, destructive)
        .and_then(|p| p.with_confirm(&confirm))
        .map_err(|e| {
            report.at(
                0..0,
                key("allow"),
                format!("the tool policy does not build: {e}"),
            )
        })?;
    Ok(ServerConfig {
        name,
        max_in_flight,
        policy,
        calls_per_minute,
        max_response_bytes: (max_response_mb as usize) * 1024 * 1024,
        description,
        transport,
        timeout,
        circuit_breaker: raw.circuit_breaker.unwrap_or(true),
        failure_threshold,
        recovery_timeout,
        sampling: raw.sampling.unwrap_or(true),
        roots,
        reconnect: raw.reconnect.unwrap_or(true),
        max_reconnect_backoff,
        expose,
        on_tool_change,
    })
}
