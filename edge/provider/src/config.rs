//! The deployment's configuration, read from the runtime's environment
//! (`wasi:cli/environment`): `wasmtime serve --env`, a jco host's `env`, a
//! platform's variables. Nothing here is baked into the `.wasm`.
//!
//! Environment rather than `wasi:config/store`: the guest already imports
//! `wasi:cli` (so every runtime that serves the composition offers it), and
//! not every runtime offers `wasi:config` (jco's shims do not).
//!
//! | variable | meaning |
//! | --- | --- |
//! | `QUICKFORGE_EDGE_SERVERS` | JSON object: server name → `{"url": "...", "headers": {"Authorization": "Bearer ..."}}` |
//! | `QUICKFORGE_EDGE_MANIFEST` | the JSON `quickforge manifest --json` printed at deploy time |
//! | `QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS` | when set (above 0), the snapshot's servers are listed again (`tools/list`) once the last listing is this old: kept in the `wasi:keyvalue` bucket by `quickforge_edge_keyvalue.wasm`, once per request by `quickforge_edge.wasm` (which has nowhere to keep it); a refresh updates and drops the snapshot's tools, never adds one (`refresh.rs`) |
//! | `QUICKFORGE_EDGE_ALLOW` | comma-separated origins (`http://host:port`) downstream requests may go to; default: the configured servers' origins |
//! | `QUICKFORGE_EDGE_TOKEN` | when set, every request must carry `Authorization: Bearer <it>` |
//! | `QUICKFORGE_EDGE_MAX_CALLS` | tool calls plus resource reads per request (default 50, as the native `max_tool_calls`) |
//! | `QUICKFORGE_EDGE_CALL_TIMEOUT_MS` | per-call deadline (default 30000, as the native servers' `timeout_secs`) |
//! | `QUICKFORGE_EDGE_TIMEOUT_MS` | the whole script's deadline, enforced by the guest itself (default 10000: shorter than the native 30 s, since edge runtimes cut long requests themselves) |
//! | `QUICKFORGE_EDGE_MAX_ARGS_BYTES` | largest arguments of one call (default 1 MiB, as `max_args_size`) |
//! | `QUICKFORGE_EDGE_MAX_RESPONSE_BYTES` | largest downstream response (default 16 MiB, as `max_response_mb`) |
//! | `QUICKFORGE_EDGE_STASH_SECRET` | `quickforge_edge_keyvalue.wasm` only: when set (at least 16 bytes), the stash is kept in the runtime's `wasi:keyvalue` under handles sealed with it, as the native `[sandbox.stash] secret`; unset, the stash lives for one request (as always in `quickforge_edge.wasm`, which refuses the setting) |
//! | `QUICKFORGE_EDGE_STASH_BUCKET` | the `wasi:keyvalue` bucket the stash and the refreshed manifest live in (default `""`, the one `wasmtime serve -Skeyvalue` has; Spin names it `default`) |
//! | `QUICKFORGE_EDGE_TIME_ZONE` | scripts' default time zone for `Intl` (an IANA name, as the native `time_zone`; default UTC); a name the guest does not know fails the scripts that format dates with a `RangeError` naming it |

use std::collections::BTreeMap;

use quickforge_filters::seal::SealKey;
use serde_json::Value;

/// One downstream MCP server reached over streamable HTTP.
pub struct Server {
    /// Its endpoint, e.g. `https://mcp.example.com/mcp`.
    pub url: Url,
    /// Extra request headers (credentials), from the environment only.
    pub headers: Vec<(String, String)>,
}

/// The parts of an `http(s)` URL that `wasi:http` requests need.
#[derive(Clone, PartialEq, Eq)]
pub struct Url {
    /// `true` for `https`.
    pub https: bool,
    /// `host[:port]`.
    pub authority: String,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Url {
    /// Parses `http://host[:port]/path`; anything else is refused.
    ///
    /// Hand-written (eight lines) rather than the `url` crate: only the
    /// scheme, authority and path are needed, and the provider stays small.
    pub fn parse(text: &str) -> Result<Url, String> {
        let (https, rest) = if let Some(r) = text.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = text.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("{text:?} is not an http(s) URL"));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{text:?} has no plain host"));
        }
        Ok(Url {
            https,
            authority: authority.to_ascii_lowercase(),
            path: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
        })
    }

    /// Whether the host is this machine (`localhost`, `127.x.y.z`, `[::1]`).
    pub fn is_loopback(&self) -> bool {
        let host = match self.authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.authority.split(':').next().unwrap_or(""),
        };
        host == "localhost" || host == "::1" || host.starts_with("127.")
    }

    /// `scheme://authority`, the unit of the egress allowlist.
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

/// Default calls per request: the native `max_tool_calls`.
const DEFAULT_MAX_CALLS: u32 = 50;
/// Default per-call deadline: the native servers' `timeout_secs` (30 s).
const DEFAULT_CALL_TIMEOUT_MS: u64 = 30_000;
/// Default script deadline, 10 s: a third of the native `[sandbox]
/// timeout_secs`, because edge runtimes commonly end a request after a few
/// tens of seconds and the script's typed `timeout` must come first. The
/// guest enforces it (`run-options.deadline-ms`), so a spinning script
/// ends as a typed `timeout` before the runtime's own limits cut it off.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Default argument cap: the native `max_args_size` (1 MiB).
const DEFAULT_MAX_ARGS: usize = 1 << 20;
/// Default response cap: the native `max_response_mb` (16 MiB).
const DEFAULT_MAX_RESPONSE: usize = 16 << 20;

/// Everything the provider is configured with.
pub struct Config {
    /// Downstream servers by name.
    pub servers: BTreeMap<String, Server>,
    /// The manifest snapshot (`quickforge manifest --json`); replaced by its
    /// refresh when one is due (`refresh.rs`).
    pub manifest: Vec<Value>,
    /// SHA-256 of the snapshot's text, hex: a refresh kept in the bucket is
    /// used only with the snapshot it was made from.
    pub manifest_digest: String,
    /// How old a listing may be before the manifest is refreshed,
    /// milliseconds; `None`: the snapshot only.
    pub manifest_refresh_ms: Option<u64>,
    /// Origins requests may go to.
    pub allow: Vec<String>,
    /// The bearer token requests must carry (`QUICKFORGE_EDGE_TOKEN`).
    pub token: Token,
    /// Calls per request.
    pub max_calls: u32,
    /// Per-call deadline, nanoseconds.
    pub call_timeout_ns: u64,
    /// The script's deadline, milliseconds.
    pub timeout_ms: u64,
    /// Largest arguments, bytes.
    pub max_args: usize,
    /// Largest downstream response, bytes.
    pub max_response: usize,
    /// The key that seals stash handles; `None` keeps the stash for one
    /// request.
    pub stash_key: Option<SealKey>,
    /// The `wasi:keyvalue` bucket the stash lives in.
    pub stash_bucket: String,
    /// Scripts' default time zone (an IANA name); `None` is UTC.
    pub time_zone: Option<String>,
    /// What was wrong with the configuration; every call fails with it.
    pub problems: Vec<String>,
}

impl Config {
    /// Reads the configuration from the environment.
    pub fn from_env() -> Config {
        let env: BTreeMap<String, String> =
            crate::bindings::wasi::cli::environment::get_environment()
                .into_iter()
                .collect();
        Config::from_vars(&env)
    }

    fn from_vars(env: &BTreeMap<String, String>) -> Config {
        let mut problems = Vec::new();
        let mut servers = BTreeMap::new();
        if let Some(text) = env.get("QUICKFORGE_EDGE_SERVERS") {
            match serde_json::from_str::<serde_json::Map<String, Value>>(text) {
                Ok(map) => {
                    for (name, spec) in map {
                        match server(&spec) {
                            Ok(s) => {
                                servers.insert(name, s);
                            }
                            Err(e) => problems.push(format!("server {name:?}: {e}")),
                        }
                    }
                }
                Err(e) => {
                    problems.push(format!("QUICKFORGE_EDGE_SERVERS is not a JSON object: {e}"))
                }
            }
        }
        let manifest = match env.get("QUICKFORGE_EDGE_MANIFEST") {
            None => Vec::new(),
            Some(text) => serde_json::from_str(text).unwrap_or_else(|e| {
                problems.push(format!("QUICKFORGE_EDGE_MANIFEST is not a JSON array: {e}"));
                Vec::new()
            }),
        };
        let manifest_digest = {
            use sha2::Digest;
            let text = env
                .get("QUICKFORGE_EDGE_MANIFEST")
                .map_or("", String::as_str);
            sha2::Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let allow = match env.get("QUICKFORGE_EDGE_ALLOW") {
            Some(list) => list
                .split(',')
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
            None => servers.values().map(|s| s.url.origin()).collect(),
        };
        let number = |key: &str, default: u64, problems: &mut Vec<String>| match env.get(key) {
            None => default,
            Some(v) => v.trim().parse().unwrap_or_else(|_| {
                problems.push(format!("{key} is not a number: {v:?}"));
                default
            }),
        };
        let stash_key = match env.get("QUICKFORGE_EDGE_STASH_SECRET") {
            None => None,
            #[cfg(not(feature = "keyvalue"))]
            Some(_) => {
                problems.push(
                    "QUICKFORGE_EDGE_STASH_SECRET is set, but quickforge_edge.wasm keeps the stash for one request only; serve edge/dist/quickforge_edge_keyvalue.wasm in a runtime with wasi:keyvalue to keep it between requests".into(),
                );
                None
            }
            #[cfg(feature = "keyvalue")]
            Some(secret) if secret.len() < quickforge_filters::seal::MIN_SECRET_BYTES => {
                problems.push(format!(
                    "QUICKFORGE_EDGE_STASH_SECRET is {} bytes; use at least {} random bytes (e.g. `openssl rand -hex 32`)",
                    secret.len(),
                    quickforge_filters::seal::MIN_SECRET_BYTES
                ));
                None
            }
            #[cfg(feature = "keyvalue")]
            Some(secret) => Some(SealKey::from_secret(secret)),
        };
        let refresh_secs = number("QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS", 0, &mut problems);
        if refresh_secs > 0 && manifest.is_empty() {
            problems.push("QUICKFORGE_EDGE_MANIFEST_REFRESH_SECS refreshes the snapshot's tools, so it needs QUICKFORGE_EDGE_MANIFEST (what `quickforge manifest --json` prints): a snapshot made by the gateway is what applies its tool policy".into());
        }
        Config {
            manifest_refresh_ms: (refresh_secs > 0 && !manifest.is_empty())
                .then(|| refresh_secs.saturating_mul(1000)),
            manifest_digest,
            stash_key,
            stash_bucket: env
                .get("QUICKFORGE_EDGE_STASH_BUCKET")
                .cloned()
                .unwrap_or_default(),
            max_calls: number(
                "QUICKFORGE_EDGE_MAX_CALLS",
                DEFAULT_MAX_CALLS.into(),
                &mut problems,
            )
            .min(u32::MAX.into()) as u32,
            call_timeout_ns: number(
                "QUICKFORGE_EDGE_CALL_TIMEOUT_MS",
                DEFAULT_CALL_TIMEOUT_MS,
                &mut problems,
            )
            .saturating_mul(1_000_000),
            timeout_ms: number(
                "QUICKFORGE_EDGE_TIMEOUT_MS",
                DEFAULT_TIMEOUT_MS,
                &mut problems,
            ),
            max_args: number(
                "QUICKFORGE_EDGE_MAX_ARGS_BYTES",
                DEFAULT_MAX_ARGS as u64,
                &mut problems,
            ) as usize,
            max_response: number(
                "QUICKFORGE_EDGE_MAX_RESPONSE_BYTES",
                DEFAULT_MAX_RESPONSE as u64,
                &mut problems,
            ) as usize,
            time_zone: env
                .get("QUICKFORGE_EDGE_TIME_ZONE")
                .map(|z| z.trim().to_owned())
                .filter(|z| !z.is_empty()),
            token: match env.get("QUICKFORGE_EDGE_TOKEN") {
                None => Token::None,
                Some(t) if t.trim().is_empty() => Token::Unusable,
                Some(t) => Token::Bearer(t.clone()),
            },
            servers,
            manifest,
            allow,
            problems,
        }
    }
}

/// The bearer token of `QUICKFORGE_EDGE_TOKEN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Not set: every request is served (the endpoint is for a trusted
    /// network, or a gateway in front authenticates).
    None,
    /// Requests must carry `Authorization: Bearer <it>`.
    Bearer(String),
    /// Set, but empty or whitespace: a deployment that meant to require a
    /// token and lost its value (an unset secret expands to ""). Failing
    /// open would serve anyone; every request is refused instead.
    Unusable,
}

/// Why every request is refused when the token is [`Token::Unusable`].
pub const UNUSABLE_TOKEN: &str = "QUICKFORGE_EDGE_TOKEN is set but empty or whitespace, so every request is refused; set it to the bearer token clients send, or unset it to serve without one";

fn server(spec: &Value) -> Result<Server, String> {
    let url = spec
        .get("url")
        .and_then(Value::as_str)
        .ok_or("no \"url\"")?;
    let headers = match spec.get("headers") {
        None => Vec::new(),
        Some(Value::Object(h)) => h
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|v| (k.clone(), v.to_string()))
                    .ok_or_else(|| format!("header {k:?} is not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"headers\" is not an object".into()),
    };
    let url = Url::parse(url)?;
    // As natively (host/config/servers.rs): credentials never travel in
    // clear text except to this machine. Every header here is there to
    // carry credentials, so any header counts.
    if !url.https && !url.is_loopback() && !headers.is_empty() {
        return Err(format!(
            "its headers would travel in clear text to {}; use an https:// URL (or a loopback address)",
            url.authority
        ));
    }
    Ok(Server { url, headers })
}
