//! The Redis backend: the stash, the HTTP session records of 2025-era
//! clients ([`session`]) and the per-minute rate limits ([`rate`]) shared
//! by every gateway that names the same Redis and `key_prefix`.
//!
//! **Client.** The `redis` crate (redis-rs, the maintained Rust client):
//! its `ConnectionManager` reconnects by itself after Redis restarts, and
//! its `Script` sends `EVALSHA` and falls back to `EVAL` when Redis has
//! forgotten the script (after a restart), so a Redis that comes back is
//! used again without restarting the gateway. Writing either by hand would
//! be a RESP client of our own.
//!
//! **One operation, one script.** Each stash operation is one Lua script
//! (`*.lua` beside this file, each behind `common.lua`) doing exactly what
//! [`super::MemoryStore`] does in one locked step — TTL, `max_keys`,
//! `max_total_size`, the space's share of `max_stashes` and
//! `max_gateway_size`, LRU eviction of stashes idle for `evict_idle_secs` —
//! with Redis's own clock (`TIME`), so gateways racing on one Redis never
//! take a stash or a space past a cap, and agree on expiry whatever their
//! own clocks say. Key and value checks that need no state run here first
//! ([`super::check_put`]), with the same errors as memory. The scripts name
//! their keys from the prefix rather than through `KEYS`, so Redis Cluster
//! (which needs every key declared and in one slot) is not supported: one
//! Redis, or a primary with replicas behind Sentinel's address.
//!
//! **Failure.** Every round trip is bounded by `[state] timeout_ms`; a
//! Redis that does not answer in time, refuses the connection, or is full
//! (`OOM command not allowed` under `maxmemory-policy noeviction`) is the
//! retryable `STATE_UNAVAILABLE`, with a message that says which. Nothing is
//! dropped silently: a script either ran whole or changed nothing. The
//! gateway starts with Redis down (with a warning) and reconnects on its
//! own; executions that do not touch the stash never wait for Redis.

pub mod rate;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::Deserialize;

use super::{At, StashLimits, StateStore, Usage, caps, check_key, check_put};
use crate::error::{ErrorCode, ForgeError};

/// `[state]` as written in forge.toml.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// `"memory"` (the default: this process alone), or a Redis URL:
    /// `redis://[user:password@]host:port[/db]`, `rediss://` for TLS,
    /// `redis+unix:///path/to/socket` or `unix:///path/to/socket`.
    /// `${VAR}` is expanded, so a password can come from the environment.
    pub backend: String,
    /// Longest wait for one Redis round trip, in ms. 500: a hundred times a
    /// LAN round trip, and short enough that a script waiting on a Redis
    /// that is down fails well inside the default 10 s execution limit.
    pub timeout_ms: u64,
    /// What every key this gateway writes in Redis starts with. Gateways
    /// that share state use the same prefix; unrelated deployments sharing
    /// one Redis use different ones.
    pub key_prefix: String,
    /// For `rediss://`: a PEM file of the CA certificate(s) that signed
    /// Redis's certificate, trusted instead of the system's roots. Redis
    /// with TLS nearly always has a certificate of the operator's own CA,
    /// which no system trusts; without this key the only ways left would be
    /// to add that CA to the whole host or to turn verification off
    /// (`#insecure`), both worse. Relative to the config file's folder;
    /// `${VAR}` is expanded.
    pub tls_ca_file: Option<std::path::PathBuf>,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            backend: "memory".into(),
            timeout_ms: 500,
            key_prefix: "quickforge:".into(),
            tls_ca_file: None,
        }
    }
}

/// Largest `timeout_ms`: 10 s, the default execution time limit; a longer
/// wait would outlive the script that waits.
pub const MAX_TIMEOUT_MS: u64 = 10_000;

/// Longest `key_prefix`: 64 bytes, a namespace, not data.
pub const MAX_PREFIX_LEN: usize = 64;

/// Where state lives, validated.
#[derive(Clone, PartialEq, Eq)]
pub enum Backend {
    /// In this process.
    Memory,
    /// In Redis.
    Redis {
        /// The URL, `${VAR}` expanded (may hold a password: never shown).
        url: String,
        /// [`StateConfig::timeout_ms`].
        timeout: Duration,
        /// [`StateConfig::key_prefix`].
        prefix: String,
        /// The PEM of [`StateConfig::tls_ca_file`], if given.
        ca: Option<Vec<u8>>,
    },
}

impl std::fmt::Debug for Backend {
    /// Never the URL: it may carry a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Memory => f.write_str("Memory"),
            Backend::Redis {
                timeout, prefix, ..
            } => f
                .debug_struct("Redis")
                .field("timeout", timeout)
                .field("prefix", prefix)
                .finish_non_exhaustive(),
        }
    }
}

impl StateConfig {
    /// Validates `[state]` (its `backend` already `${VAR}`-expanded); the
    /// error names the key and says what is allowed.
    pub fn backend(&self) -> Result<Backend, (&'static str, String)> {
        if !(1..=MAX_TIMEOUT_MS).contains(&self.timeout_ms) {
            return Err((
                "timeout_ms",
                format!(
                    "must be from 1 to {MAX_TIMEOUT_MS}, got {}",
                    self.timeout_ms
                ),
            ));
        }
        let prefix = &self.key_prefix;
        if prefix.is_empty()
            || prefix.len() > MAX_PREFIX_LEN
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:/{}".contains(&b))
        {
            return Err((
                "key_prefix",
                format!(
                    "use 1 to {MAX_PREFIX_LEN} characters of A-Z a-z 0-9 _ - . : / {{ }}, got {prefix:?}"
                ),
            ));
        }
        let url = self.backend.trim();
        if url == "memory" {
            return Ok(Backend::Memory);
        }
        let scheme = url.split_once("://").map(|(s, _)| s);
        if !matches!(scheme, Some("redis" | "rediss" | "redis+unix" | "unix")) {
            return Err((
                "backend",
                "must be \"memory\" or a Redis URL: redis://host:port, rediss://host:port (TLS), redis+unix:///path or unix:///path".into(),
            ));
        }
        // The crate's own parser, so what loads is what connects. Its
        // message never quotes the URL (which may hold a password).
        if let Err(e) = redis::Client::open(url) {
            return Err((
                "backend",
                format!("not a valid Redis URL ({})", e.kind_text()),
            ));
        }
        let ca = match &self.tls_ca_file {
            None => None,
            Some(_) if scheme != Some("rediss") => {
                return Err((
                    "tls_ca_file",
                    "is for a TLS connection: use it with backend = \"rediss://host:port\"".into(),
                ));
            }
            Some(path) => Some(read_ca(path, url).map_err(|m| ("tls_ca_file", m))?),
        };
        Ok(Backend::Redis {
            url: url.to_string(),
            timeout: Duration::from_millis(self.timeout_ms),
            prefix: prefix.clone(),
            ca,
        })
    }
}

/// The CA certificates in the PEM file `path`, checked the way the client
/// will use them for `url`.
fn read_ca(path: &std::path::Path, url: &str) -> Result<Vec<u8>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("could not read {}: {e}", path.display()))?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(format!(
            "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    client(url, Some(&pem)).map_err(|e| {
        format!(
            "{} is not a usable CA certificate ({})",
            path.display(),
            e.kind_text()
        )
    })?;
    Ok(pem)
}

/// The client for `url`, trusting `ca` (PEM) rather than the system's
/// roots when given.
fn client(url: &str, ca: Option<&[u8]>) -> redis::RedisResult<redis::Client> {
    match ca {
        None => redis::Client::open(url),
        Some(ca) => redis::Client::build_with_tls(
            url,
            redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(ca.to_vec()),
            },
        ),
    }
}

/// A short, URL-free description of a redis error.
trait KindText {
    fn kind_text(&self) -> String;
}

impl KindText for redis::RedisError {
    fn kind_text(&self) -> String {
        match self.detail() {
            Some(detail) => format!("{:?}: {detail}", self.kind()),
            None => format!("{:?}", self.kind()),
        }
    }
}

/// One connection to Redis, shared by the stash, the session records and
/// the rate limits of a gateway: a reconnecting [`ConnectionManager`], the
/// round-trip bound and the key prefix.
pub struct Redis {
    conn: ConnectionManager,
    timeout: Duration,
    prefix: String,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("timeout", &self.timeout)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Reconnection attempts the manager makes after a failure before it gives
/// up until the next request: 2, each bounded by `timeout_ms`, so a request
/// that meets a dead Redis is answered within its own bound and the next one
/// tries again.
const RECONNECT_RETRIES: usize = 2;

impl Redis {
    /// A connection to `backend`'s Redis, made on first use (so a gateway
    /// starts while Redis is down). Must run inside a tokio runtime. `None`
    /// for the memory backend.
    pub fn open(backend: &Backend) -> Result<Option<Arc<Redis>>, String> {
        let Backend::Redis {
            url,
            timeout,
            prefix,
            ca,
        } = backend
        else {
            return Ok(None);
        };
        // rediss:// uses rustls with the process-wide provider; the
        // gateway's other clients install the same one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = client(url, ca.as_deref())
            .map_err(|e| format!("not a valid Redis URL ({})", e.kind_text()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(*timeout))
            .set_response_timeout(Some(*timeout))
            .set_number_of_retries(RECONNECT_RETRIES)
            .set_max_delay(*timeout);
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("could not set up the Redis client ({})", e.kind_text()))?;
        Ok(Some(Arc::new(Redis {
            conn,
            timeout: *timeout,
            prefix: prefix.clone(),
        })))
    }

    /// The prefix of every key.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether Redis answers a `PING` within the bound.
    pub async fn ping(&self) -> Result<(), ForgeError> {
        let mut conn = self.conn.clone();
        self.bounded(async move { redis::cmd("PING").query_async::<String>(&mut conn).await })
            .await
            .map(drop)
    }

    /// Runs `script` with `args` (after the prefix) and `keys`, within the
    /// bound.
    pub(crate) async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &redis::Script,
        keys: &[&str],
        args: Vec<Vec<u8>>,
    ) -> Result<T, ForgeError> {
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        invocation.arg(self.prefix.as_str());
        for arg in args {
            invocation.arg(arg);
        }
        let mut conn = self.conn.clone();
        self.bounded(async move { invocation.invoke_async(&mut conn).await })
            .await
    }

    /// Runs `cmd` within the bound.
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: redis::Cmd,
    ) -> Result<T, ForgeError> {
        let mut conn = self.conn.clone();
        self.bounded(async move { cmd.query_async(&mut conn).await })
            .await
    }

    /// `work`, failed as `STATE_UNAVAILABLE` when it takes longer than the
    /// bound or Redis refuses it.
    async fn bounded<T>(
        &self,
        work: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ForgeError> {
        match tokio::time::timeout(self.timeout, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(unavailable(&e, self.timeout)),
            Err(_) => {
                tracing::warn!(
                    timeout_ms = self.timeout.as_millis() as u64,
                    "the state store (Redis) did not answer in time"
                );
                Err(ForgeError::new(
                    ErrorCode::StateUnavailable,
                    format!(
                        "the state store (Redis) did not answer within {} ms ([state] timeout_ms)",
                        self.timeout.as_millis()
                    ),
                )
                .suggest(
                    "retry in a few seconds; work that does not use forge.stash is not affected",
                ))
            }
        }
    }
}

/// The `STATE_UNAVAILABLE` for a Redis error: full, slow, or unreachable.
fn unavailable(e: &redis::RedisError, timeout: Duration) -> ForgeError {
    // An I/O failure's own text says why (the OS's "connection refused",
    // or rustls's "invalid peer certificate: UnknownIssuer" for a Redis
    // whose certificate `tls_ca_file` does not vouch for) and never holds
    // the URL; other kinds are shown by kind alone.
    let why = if e.is_io_error() {
        e.to_string()
    } else {
        e.kind_text()
    };
    tracing::warn!(error = %why, "the state store (Redis) failed an operation");
    let (message, suggestion) = if e.code() == Some("OOM") {
        (
            "the state store (Redis) is full: it refused the write (maxmemory reached, maxmemory-policy noeviction); nothing was stored".to_string(),
            "delete keys you no longer need with forge.stash.delete, or retry later; the operator can raise Redis's maxmemory",
        )
    } else if e.is_timeout() {
        (
            format!(
                "the state store (Redis) did not answer within {} ms ([state] timeout_ms)",
                timeout.as_millis()
            ),
            "retry in a few seconds; work that does not use forge.stash is not affected",
        )
    } else if e.is_io_error() || e.is_connection_refusal() || e.is_connection_dropped() {
        (
            "the state store (Redis) cannot be reached".to_string(),
            "retry in a few seconds; work that does not use forge.stash is not affected",
        )
    } else {
        (
            format!(
                "the state store (Redis) refused the operation ({:?})",
                e.kind()
            ),
            "retry later; if it persists, the operator should check Redis",
        )
    };
    ForgeError::new(ErrorCode::StateUnavailable, message)
        .retryable()
        .suggest(suggestion)
}

/// One stash script: a shebang line with its flags, `common.lua`, then the
/// operation's own.
///
/// The flags matter when Redis is full (`maxmemory`, `noeviction`). A
/// script with a shebang and no `allow-oom` is refused *before it runs*, so
/// a put never stops halfway (Redis does not roll a script back: one
/// refused at its first growing write would leave its purge half done).
/// Reads, deletes and listings carry `allow-oom`: they only refresh a
/// recency score or free memory, and a full Redis must still let scripts
/// read what they stored and delete it to make room. Shebang flags need
/// Redis 7.0 or later.
macro_rules! script {
    ($flags:literal, $file:literal) => {
        LazyLock::new(|| {
            redis::Script::new(concat!(
                "#!lua",
                $flags,
                "\n",
                include_str!("common.lua"),
                "\n",
                include_str!($file)
            ))
        })
    };
}

static PUT: LazyLock<redis::Script> = script!("", "put.lua");
static GET: LazyLock<redis::Script> = script!(" flags=allow-oom", "get.lua");
static DELETE: LazyLock<redis::Script> = script!(" flags=allow-oom", "delete.lua");
static KEYS: LazyLock<redis::Script> = script!(" flags=allow-oom", "keys.lua");
static USAGE: LazyLock<redis::Script> = script!(" flags=allow-oom", "usage.lua");

/// Stashes in Redis, shared by every gateway with the same Redis and
/// `key_prefix`, and kept across gateway restarts (and Redis restarts, with
/// Redis's persistence on).
pub struct RedisStore {
    redis: Arc<Redis>,
    limits: StashLimits,
}

impl RedisStore {
    /// A store in `redis` enforcing `limits`.
    pub fn new(redis: Arc<Redis>, limits: StashLimits) -> RedisStore {
        RedisStore { redis, limits }
    }
}

/// The arguments every stash script starts with (after the prefix): the
/// space's tag and the handle.
fn head(at: At<'_>) -> Vec<Vec<u8>> {
    let space = match at.space {
        None => "p".to_string(),
        // Group names are ASCII letters, digits, _ and -: no ':' to confuse
        // the layout.
        Some(group) => format!("g-{group}"),
    };
    vec![arg(space), arg(at.handle.as_str())]
}

/// One script argument: a single value's bytes.
fn arg(value: impl redis::ToRedisArgs) -> Vec<u8> {
    value.to_redis_args().pop().unwrap_or_default()
}

#[async_trait::async_trait]
impl StateStore for RedisStore {
    async fn put(
        &self,
        at: At<'_>,
        key: &str,
        json: String,
        ttl: Option<Duration>,
    ) -> Result<(), ForgeError> {
        let ttl = check_put(&self.limits, key, &json, ttl)?;
        let l = &self.limits;
        let mut args = head(at);
        args.extend([
            arg(key),
            arg(json),
            arg(ttl.as_millis() as u64),
            arg(l.max_keys),
            arg(l.max_total_size),
            arg(l.max_stashes),
            arg(l.max_gateway_size),
            arg(l.evict_idle_secs.saturating_mul(1000)),
        ]);
        let (code, n): (u8, usize) = self.redis.eval(&PUT, &[], args).await?;
        match code {
            0 => Ok(()),
            1 => Err(caps::keys_full(l)),
            2 => Err(caps::bytes_full(n, l)),
            3 => Err(caps::space_full(true, n, l)),
            _ => Err(caps::space_full(false, n, l)),
        }
    }

    async fn get(&self, at: At<'_>, key: &str) -> Result<Option<String>, ForgeError> {
        check_key(key)?;
        let mut args = head(at);
        args.push(arg(key));
        self.redis.eval(&GET, &[], args).await
    }

    async fn delete(&self, at: At<'_>, key: &str) -> Result<bool, ForgeError> {
        check_key(key)?;
        let mut args = head(at);
        args.push(arg(key));
        let live: u8 = self.redis.eval(&DELETE, &[], args).await?;
        Ok(live == 1)
    }

    async fn keys(&self, at: At<'_>) -> Result<Vec<String>, ForgeError> {
        let mut keys: Vec<String> = self.redis.eval(&KEYS, &[], head(at)).await?;
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    async fn usage(&self) -> Usage {
        match self
            .redis
            .eval::<(usize, usize)>(&USAGE, &[], Vec::new())
            .await
        {
            Ok((stashes, bytes)) => Usage { stashes, bytes },
            Err(_) => Usage::default(),
        }
    }
}
