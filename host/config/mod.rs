//! forge.toml: parsed strictly into raw serde types, then validated into the
//! [`Config`] the program runs on.
//!
//! Discovery: `--config PATH`, else `$FORGE_CONFIG`, else `./forge.toml`;
//! with none of them, quickforge runs with defaults and no servers, and says
//! so on stderr. The format is Forgemax's, so configs in its documented format load without edits,
//! plus `env`/`cwd` for stdio servers and a few limits of quickforge's own.
//! Every key is documented, with its default and reason, in
//! `forge.toml.example`. Every error names the file, the line and the key.

use quickforge_filters::expand;
mod cluster;
mod forgemax;
mod http;
mod observe;
mod remote;
mod servers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

pub use crate::server::Surface;
pub use cluster::ClusterConfig;
pub use expand::{expand, references_with_fallbacks};
pub use forgemax::DEFAULT_STARTUP_CONCURRENCY;
pub use http::HttpLimits;
pub use observe::{LogConfig, LogFormat, ObservabilityConfig};
pub use servers::{GroupConfig, Isolation, MAX_NAME_LEN, ManifestConfig, ServerConfig, Transport};

use crate::sandbox::{CacheDir, MIN_HEAP, SandboxLimits};
use crate::session::SessionLimits;
use crate::state::StashLimits;

/// A configuration problem, naming the file and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("could not read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or has an unknown key or a wrong type.
    #[error("invalid config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line, column and key.
        message: String,
    },
    /// A value is out of its allowed range, or refers to something missing.
    #[error("invalid config file {}{}: key `{key}`: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the offending value, when known.
        line: Option<usize>,
        /// The dotted key.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

impl ConfigError {
    /// The dotted key at fault, for [`ConfigError::Invalid`].
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it was loaded from; `None` for defaults.
    pub source: Option<PathBuf>,
    /// `[sandbox]`.
    pub sandbox: SandboxLimits,
    /// `[sandbox.stash]`.
    pub stash: StashLimits,
    /// `[sandbox] max_sessions` and `max_concurrent_per_session`.
    pub sessions: SessionLimits,
    /// `[sandbox] cache_dir`.
    pub cache_dir: CacheDir,
    /// `[surface]`.
    pub surface: Surface,
    /// `[servers.NAME]`, sorted by name.
    pub servers: Vec<ServerConfig>,
    /// `[groups.NAME]`, sorted by name.
    pub groups: Vec<GroupConfig>,
    /// `[manifest]`.
    pub manifest: ManifestConfig,
    /// `[sandbox] max_executions_per_minute`: executions a minute across
    /// all sessions; `None` (the default) sets no limit.
    pub executions_per_minute: Option<std::num::NonZeroU32>,
    /// `[sandbox] validate`: whether scripts pass the static validator
    /// before they run.
    pub validate: bool,
    /// `[audit]`, with `file` resolved against the config file's folder.
    pub audit: crate::audit::AuditConfig,
    /// `[sandbox] max_wait_secs` and `max_waiting`: how long and how many
    /// executions may wait on their clients.
    pub relay: crate::relay::RelayLimits,
    /// `[sandbox] task_timeout_secs` and `task_after_ms`: executions run
    /// as tasks, and when an `execute` becomes one.
    pub tasks: crate::execution::tasks::TaskLimits,
    /// `[observability]`: `/metrics` and the separate listener.
    pub observability: ObservabilityConfig,
    /// `[log]`: the log's format.
    pub log: LogConfig,
    /// `[sandbox] startup_concurrency` (Forgemax's key): servers connecting
    /// at once, [`DEFAULT_STARTUP_CONCURRENCY`] by default.
    pub startup_concurrency: usize,
    /// `[cluster]`: this gateway's name among its replicas (in every
    /// audit line) and its peers.
    pub cluster: ClusterConfig,
    /// `[auth]`: bearer tokens for `serve --http`; `None`: no
    /// authentication (allowed on a loopback address only).
    pub auth: Option<crate::auth::AuthConfig>,
    /// `[state]`: where the stash, the HTTP session records and the rate
    /// limits live (memory, or a Redis shared by replicas).
    pub state: crate::state::Backend,
    /// `[http]`: header and body read timeouts and the connection cap of
    /// the HTTP listeners.
    pub http: HttpLimits,
}

impl Config {
    /// The gateway's own settings, taken from this config.
    pub fn gateway(&self) -> crate::gateway::GatewaySettings {
        crate::gateway::GatewaySettings {
            servers: self.servers.clone(),
            groups: self.groups.clone(),
            relay: self.relay,
            startup_concurrency: self.startup_concurrency,
            refresh_interval: self.manifest.refresh_interval,
            pins: crate::pins::Pins::in_dir(crate::state::local_dir()),
        }
    }
}

impl Default for Config {
    /// No servers, default limits, the validator on.
    fn default() -> Self {
        Config {
            source: None,
            sandbox: SandboxLimits::default(),
            stash: StashLimits::default(),
            sessions: SessionLimits::for_slots(SandboxLimits::default().max_concurrent),
            cache_dir: CacheDir::default(),
            surface: Surface::default(),
            servers: Vec::new(),
            groups: Vec::new(),
            manifest: ManifestConfig::default(),
            executions_per_minute: None,
            validate: true,
            audit: crate::audit::AuditConfig::default(),
            relay: crate::relay::RelayLimits::for_slots(SandboxLimits::default().max_concurrent),
            tasks: crate::execution::tasks::TaskLimits::for_slots(
                SandboxLimits::default().max_concurrent,
            ),
            observability: ObservabilityConfig::default(),
            log: LogConfig::default(),
            startup_concurrency: DEFAULT_STARTUP_CONCURRENCY,
            cluster: ClusterConfig::default(),
            auth: None,
            state: crate::state::Backend::Memory,
            http: HttpLimits::default(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    sandbox: RawSandbox,
    #[serde(default)]
    servers: BTreeMap<Spanned<String>, Spanned<servers::RawServer>>,
    #[serde(default)]
    groups: BTreeMap<Spanned<String>, Spanned<servers::RawGroup>>,
    manifest: Option<Spanned<servers::RawManifest>>,
    #[serde(default)]
    audit: crate::audit::AuditConfig,
    #[serde(default)]
    surface: Surface,
    #[serde(default)]
    observability: ObservabilityConfig,
    #[serde(default)]
    log: LogConfig,
    #[serde(default)]
    cluster: cluster::RawCluster,
    auth: Option<crate::auth::RawAuth>,
    #[serde(default)]
    state: crate::state::StateConfig,
    #[serde(default)]
    http: http::RawHttp,
}

/// Turns byte offsets of one file into error messages with line numbers.
struct Located<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Located<'_> {
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// The line where the dotted `key` is written, found in the parsed file.
    fn line_of(&self, key: &[&str]) -> Option<usize> {
        use toml::de::{DeTable, DeValue};
        let root = DeTable::parse(self.text).ok()?;
        let mut table = root.get_ref();
        let mut span = None;
        for (i, part) in key.iter().enumerate() {
            let (k, v) = table.iter().find(|(k, _)| k.get_ref() == part)?;
            span = Some(k.span());
            if i + 1 < key.len() {
                match v.get_ref() {
                    DeValue::Table(t) => table = t,
                    _ => return None,
                }
            }
        }
        span.map(|s| self.line(s.start))
    }
}

impl servers::Report for Located<'_> {
    fn at(&self, span: std::ops::Range<usize>, key: String, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            line: Some(self.line(span.start)),
            key,
            message,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawSandbox {
    timeout_secs: f64,
    max_fuel: u64,
    max_heap_mb: u64,
    max_code_size: usize,
    max_output_size: usize,
    max_tool_calls: u32,
    max_args_size: usize,
    max_concurrent: usize,
    max_concurrent_per_session: Option<usize>,
    max_sessions: usize,
    session_idle_secs: Option<u64>,
    session_evict_idle_secs: u64,
    max_queue_wait_ms: u64,
    max_log_lines: usize,
    max_log_bytes: usize,
    cache_dir: Option<PathBuf>,
    max_executions_per_minute: Option<u32>,
    max_wait_secs: Option<u64>,
    max_waiting: Option<usize>,
    task_timeout_secs: Option<u64>,
    task_after_ms: Option<u64>,
    validate: bool,
    max_parallel: u32,
    /// The scripts' default time zone (an IANA name); `None` is UTC.
    time_zone: Option<String>,
    /// Forgemax's choice of isolation; accepted so its configs load, and
    /// ignored: quickforge always runs each script in its own Wasm instance.
    execution_mode: Option<String>,
    stash: forgemax::RawStash,
    /// Forgemax's keys: mapped (`max_resource_size_mb`,
    /// `startup_concurrency`) or accepted with a warning (the rest); see
    /// [`forgemax`].
    max_resource_size_mb: Option<u64>,
    startup_concurrency: Option<usize>,
    max_ipc_message_size_mb: Option<u64>,
    pool: Option<forgemax::RawPool>,
}

impl Default for RawSandbox {
    fn default() -> Self {
        let d = SandboxLimits::default();
        RawSandbox {
            timeout_secs: d.timeout.as_secs_f64(),
            max_fuel: d.max_fuel,
            max_heap_mb: (d.max_heap / (1024 * 1024)) as u64,
            max_code_size: d.max_code_size,
            max_output_size: d.max_output_size,
            max_tool_calls: d.max_tool_calls,
            max_args_size: d.max_args_size,
            max_concurrent: d.max_concurrent,
            max_concurrent_per_session: None,
            max_sessions: SessionLimits::for_slots(d.max_concurrent).max_sessions,
            session_idle_secs: None,
            session_evict_idle_secs: SessionLimits::for_slots(d.max_concurrent)
                .evict_idle
                .as_secs(),
            max_queue_wait_ms: d.max_queue_wait.as_millis() as u64,
            max_log_lines: d.max_log_lines,
            max_log_bytes: d.max_log_bytes,
            cache_dir: None,
            max_executions_per_minute: None,
            max_wait_secs: None,
            max_waiting: None,
            task_timeout_secs: None,
            task_after_ms: None,
            validate: true,
            max_parallel: d.max_parallel,
            time_zone: None,
            execution_mode: None,
            stash: forgemax::RawStash::default(),
            max_resource_size_mb: None,
            startup_concurrency: None,
            max_ipc_message_size_mb: None,
            pool: None,
        }
    }
}

/// Largest `timeout_secs`: ten minutes. Longer scripts hold a slot and the
/// client's turn for too long; split the work instead.
pub const MAX_TIMEOUT_SECS: f64 = 600.0;
/// Largest `max_wait_secs`: one hour. An execution waiting on a person
/// holds its slot and its instance's memory; a question unanswered for an
/// hour has been abandoned.
pub const MAX_WAIT_SECS: u64 = 3600;
/// Largest `task_timeout_secs`: a day. A task holds a slot and its
/// instance's memory while it runs; work longer than a day belongs in a job
/// system, not a script.
pub const MAX_TASK_TIMEOUT_SECS: u64 = 86_400;
/// Largest `task_after_ms`: the longest `timeout_secs` allows. Past it a
/// plain execution would have ended anyway.
pub const MAX_TASK_AFTER_MS: u64 = 600_000;
/// Largest `max_heap_mb`: 4 GiB, the most a 32-bit Wasm memory can address.
pub const MAX_HEAP_MB: u64 = 4096;

impl Config {
    /// Finds and loads the configuration: `explicit`, else `$FORGE_CONFIG`,
    /// else `./forge.toml`, else defaults.
    pub fn discover(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        if let Some(path) = explicit {
            return Config::load(path);
        }
        if let Some(path) = std::env::var_os("FORGE_CONFIG").filter(|p| !p.is_empty()) {
            return Config::load(Path::new(&path));
        }
        let local = Path::new("forge.toml");
        if local.exists() {
            return Config::load(local);
        }
        Ok(Config::default())
    }

    /// Loads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// Parses and validates `text`, reporting errors against `path` and
    /// reading `${VAR}` references from the process environment.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        Config::parse_with_env(text, path, &|name| std::env::var(name).ok())
    }

    /// [`Config::parse`] with `${VAR}` references read through `lookup`.
    pub fn parse_with_env(
        text: &str,
        path: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let located = Located { path, text };
        let base_dir = path.parent().unwrap_or(Path::new("."));
        let invalid = |key: &str, message: String| {
            let mut parts = vec!["sandbox"];
            parts.extend(key.split('.'));
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line: located.line_of(&parts),
                key: format!("sandbox.{key}"),
                message,
            }
        };
        let mut s = raw.sandbox;
        let adopted = forgemax::adopt(&mut s, &invalid)?;
        let downstream = servers::resolve(
            raw.servers,
            raw.groups,
            raw.manifest,
            base_dir,
            lookup,
            &located,
            adopted.response_mb,
        )?;
        let stash = adopted.stash;
        if !(s.timeout_secs > 0.0 && s.timeout_secs <= MAX_TIMEOUT_SECS) {
            return Err(invalid(
                "timeout_secs",
                format!(
                    "must be above 0 and at most {MAX_TIMEOUT_SECS}, got {}",
                    s.timeout_secs
                ),
            ));
        }
        let min_heap_mb = (MIN_HEAP / (1024 * 1024)) as u64;
        if !(min_heap_mb..=MAX_HEAP_MB).contains(&s.max_heap_mb) {
            return Err(invalid(
                "max_heap_mb",
                format!(
                    "must be from {min_heap_mb} to {MAX_HEAP_MB}, got {}",
                    s.max_heap_mb
                ),
            ));
        }
        let positive = [
            ("max_fuel", s.max_fuel as u128),
            ("max_code_size", s.max_code_size as u128),
            ("max_output_size", s.max_output_size as u128),
            ("max_args_size", s.max_args_size as u128),
            ("max_concurrent", s.max_concurrent as u128),
            ("max_sessions", s.max_sessions as u128),
            ("stash.max_keys", stash.max_keys as u128),
            ("stash.max_value_size", stash.max_value_size as u128),
            ("stash.max_total_size", stash.max_total_size as u128),
            ("stash.default_ttl_secs", stash.default_ttl_secs as u128),
            ("stash.max_stashes", stash.max_stashes as u128),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(invalid(key, "must be greater than 0".into()));
            }
        }
        if stash.max_ttl_secs > crate::state::MAX_TTL_SECS {
            return Err(invalid(
                "stash.max_ttl_secs",
                format!(
                    "must be at most {} (30 days), got {}",
                    crate::state::MAX_TTL_SECS,
                    stash.max_ttl_secs
                ),
            ));
        }
        if stash.default_ttl_secs > stash.max_ttl_secs {
            return Err(invalid(
                "stash.default_ttl_secs",
                format!(
                    "must not exceed stash.max_ttl_secs ({}), got {}",
                    stash.max_ttl_secs, stash.default_ttl_secs
                ),
            ));
        }
        if stash.max_gateway_size < stash.max_total_size {
            return Err(invalid(
                "stash.max_gateway_size",
                format!(
                    "must be at least stash.max_total_size ({}), so one full stash fits, got {}",
                    stash.max_total_size, stash.max_gateway_size
                ),
            ));
        }
        if !(1..=crate::sandbox::MAX_PARALLEL).contains(&s.max_parallel) {
            return Err(invalid(
                "max_parallel",
                format!(
                    "must be from 1 to {}, got {}",
                    crate::sandbox::MAX_PARALLEL,
                    s.max_parallel
                ),
            ));
        }
        // The same IANA database the guest bundles, so a zone accepted here
        // is one `Intl` can use; stored by its canonical name.
        let time_zone = match &s.time_zone {
            None => None,
            Some(name) => match jiff::tz::TimeZone::get(name) {
                Ok(zone) => Some(zone.iana_name().unwrap_or(name).to_owned()),
                Err(_) => {
                    return Err(invalid(
                        "time_zone",
                        format!(
                            "{name:?} is not an IANA time zone: use a name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\""
                        ),
                    ));
                }
            },
        };
        let secret = match &stash.secret {
            None => None,
            Some(secret) => {
                let text = expand(&secret.0, lookup)
                    .map_err(|e| invalid("stash.secret", e.to_string()))?;
                if text.len() < crate::state::handle::MIN_SECRET_BYTES {
                    return Err(invalid(
                        "stash.secret",
                        format!(
                            "must be at least {} bytes (it seals every stash handle), got {}; e.g. secret = \"${{QUICKFORGE_STASH_SECRET}}\" with 32 random bytes in hex",
                            crate::state::handle::MIN_SECRET_BYTES,
                            text.len()
                        ),
                    ));
                }
                Some(crate::state::Secret(text))
            }
        };
        let mut sessions = SessionLimits::for_slots(s.max_concurrent);
        sessions.max_sessions = s.max_sessions;
        sessions.idle = match s.session_idle_secs {
            Some(0) => {
                return Err(invalid(
                    "session_idle_secs",
                    "must be greater than 0".into(),
                ));
            }
            Some(secs) => Duration::from_secs(secs),
            None => SessionLimits::idle_for(&stash),
        };
        sessions.evict_idle = Duration::from_secs(s.session_evict_idle_secs);
        if let Some(share) = s.max_concurrent_per_session {
            if !(1..=s.max_concurrent).contains(&share) {
                return Err(invalid(
                    "max_concurrent_per_session",
                    format!(
                        "must be from 1 to max_concurrent ({}), got {share}",
                        s.max_concurrent
                    ),
                ));
            }
            sessions.max_concurrent_per_session = share;
        }
        let executions_per_minute = match s.max_executions_per_minute {
            None => None,
            Some(n) => Some(std::num::NonZeroU32::new(n).ok_or_else(|| {
                invalid(
                    "max_executions_per_minute",
                    "must be at least 1 (leave it out for no limit)".into(),
                )
            })?),
        };
        let mut relay = crate::relay::RelayLimits::for_slots(s.max_concurrent);
        match s.max_wait_secs {
            Some(secs) if !(1..=MAX_WAIT_SECS).contains(&secs) => {
                return Err(invalid(
                    "max_wait_secs",
                    format!("must be from 1 to {MAX_WAIT_SECS}, got {secs}"),
                ));
            }
            Some(secs) => relay.max_wait = Duration::from_secs(secs),
            None => {}
        }
        match s.max_waiting {
            Some(n) if !(1..=s.max_concurrent).contains(&n) => {
                return Err(invalid(
                    "max_waiting",
                    format!(
                        "must be from 1 to max_concurrent ({}), got {n}",
                        s.max_concurrent
                    ),
                ));
            }
            Some(n) => relay.max_waiting = n,
            None => {}
        }
        let mut tasks = crate::execution::tasks::TaskLimits::for_slots(s.max_concurrent);
        match s.task_timeout_secs {
            Some(secs) if !(1..=MAX_TASK_TIMEOUT_SECS).contains(&secs) => {
                return Err(invalid(
                    "task_timeout_secs",
                    format!("must be from 1 to {MAX_TASK_TIMEOUT_SECS}, got {secs}"),
                ));
            }
            Some(secs) => tasks.timeout = Duration::from_secs(secs),
            None => {}
        }
        match s.task_after_ms {
            Some(ms) if ms > MAX_TASK_AFTER_MS => {
                return Err(invalid(
                    "task_after_ms",
                    format!("must be from 0 to {MAX_TASK_AFTER_MS}, got {ms}"),
                ));
            }
            Some(ms) => tasks.after = Duration::from_millis(ms),
            None => {}
        }
        let audit = resolve_audit(raw.audit, base_dir, path, &located, lookup)?;
        let auth = remote::resolve_auth(raw.auth, path, &located, lookup)?;
        let state = resolve_state(raw.state, base_dir, path, &located, lookup)?;
        if let Some(endpoint) = &raw.observability.otlp_endpoint
            && !url::Url::parse(endpoint).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
        {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: located.line_of(&["observability", "otlp_endpoint"]),
                key: "observability.otlp_endpoint".into(),
                message: format!(
                    "must be an http(s) URL of an OTLP/HTTP traces path, e.g. http://127.0.0.1:4318/v1/traces; got {endpoint:?}"
                ),
            });
        }
        if let Some(addr) = raw.observability.listen
            && !addr.ip().is_loopback()
            && raw.observability.allow_hosts.is_empty()
        {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: located.line_of(&["observability", "listen"]),
                key: "observability.listen".into(),
                message: format!(
                    "{addr} is not a loopback address; name the Host header scrapers will use in observability.allow_hosts (DNS-rebinding protection)"
                ),
            });
        }
        if let Some(mode) = &s.execution_mode {
            tracing::warn!(
                execution_mode = %mode,
                "config key sandbox.execution_mode is ignored: quickforge runs every script in its own WebAssembly instance"
            );
        }
        let cluster =
            raw.cluster
                .resolve(lookup)
                .map_err(|(key, message)| ConfigError::Invalid {
                    path: path.to_path_buf(),
                    line: located.line_of(&["cluster", key]),
                    key: format!("cluster.{key}"),
                    message,
                })?;
        let http = raw
            .http
            .resolve()
            .map_err(|(key, message)| ConfigError::Invalid {
                path: path.to_path_buf(),
                line: located.line_of(&["http", key]),
                key: format!("http.{key}"),
                message,
            })?;
        forgemax::warn_ignored(&adopted.ignored);
        Ok(Config {
            source: Some(path.to_path_buf()),
            sandbox: SandboxLimits {
                timeout: Duration::from_secs_f64(s.timeout_secs),
                max_fuel: s.max_fuel,
                max_heap: (s.max_heap_mb * 1024 * 1024) as usize,
                max_code_size: s.max_code_size,
                max_output_size: s.max_output_size,
                max_tool_calls: s.max_tool_calls,
                max_args_size: s.max_args_size,
                max_concurrent: s.max_concurrent,
                max_queue_wait: Duration::from_millis(s.max_queue_wait_ms),
                max_log_lines: s.max_log_lines,
                max_log_bytes: s.max_log_bytes,
                max_parallel: s.max_parallel,
                max_stash_calls: adopted.stash_calls,
                time_zone,
            },
            stash: StashLimits { secret, ..stash },
            sessions,
            cache_dir: s.cache_dir.map_or(CacheDir::Default, CacheDir::Path),
            surface: raw.surface,
            servers: downstream.servers,
            groups: downstream.groups,
            manifest: downstream.manifest,
            executions_per_minute,
            validate: s.validate,
            audit,
            relay,
            tasks,
            observability: raw.observability,
            log: raw.log,
            state,
            startup_concurrency: adopted.startup_concurrency,
            cluster,
            auth,
            http,
        })
    }
}

/// Checks `[audit]` and resolves its `file` against `base_dir`.
fn resolve_audit(
    mut audit: crate::audit::AuditConfig,
    base_dir: &Path,
    path: &Path,
    located: &Located<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::audit::AuditConfig, ConfigError> {
    use crate::audit::{MAX_OPERATIONS, MAX_PREVIEW_BYTES};
    let invalid = |key: &str, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: located.line_of(&["audit", key]),
        key: format!("audit.{key}"),
        message,
    };
    if audit.preview_bytes > MAX_PREVIEW_BYTES {
        return Err(invalid(
            "preview_bytes",
            format!(
                "must be at most {MAX_PREVIEW_BYTES}, got {}",
                audit.preview_bytes
            ),
        ));
    }
    if !(1..=MAX_OPERATIONS).contains(&audit.max_operations) {
        return Err(invalid(
            "max_operations",
            format!(
                "must be from 1 to {MAX_OPERATIONS}, got {}",
                audit.max_operations
            ),
        ));
    }
    if let Some(file) = audit.file.take() {
        // `${VAR}` works here as in server values, e.g. "${XDG_STATE_HOME}/…".
        let file = match file.to_str() {
            Some(text) => {
                PathBuf::from(expand(text, lookup).map_err(|e| invalid("file", e.to_string()))?)
            }
            None => file,
        };
        if file.as_os_str().is_empty() {
            return Err(invalid(
                "file",
                "must be a path (leave it out for no audit file)".into(),
            ));
        }
        audit.file = Some(base_dir.join(file));
    }
    Ok(audit)
}

/// `[state]`, `${VAR}` expanded in `backend` and `tls_ca_file` (resolved
/// against `base_dir`), validated.
fn resolve_state(
    mut raw: crate::state::StateConfig,
    base_dir: &Path,
    path: &Path,
    located: &Located<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::state::Backend, ConfigError> {
    let invalid = |key: &str, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: located.line_of(&["state", key]),
        key: format!("state.{key}"),
        message,
    };
    raw.backend = expand(&raw.backend, lookup).map_err(|e| invalid("backend", e.to_string()))?;
    if let Some(file) = raw.tls_ca_file.take() {
        let file = match file.to_str() {
            Some(text) => PathBuf::from(
                expand(text, lookup).map_err(|e| invalid("tls_ca_file", e.to_string()))?,
            ),
            None => file,
        };
        raw.tls_ca_file = Some(base_dir.join(file));
    }
    raw.backend()
        .map_err(|(key, message)| invalid(key, message))
}
