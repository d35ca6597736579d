//! The gateway: live sessions with every downstream server in forge.toml, the
//! live manifest of what they offer, and the router that carries a script's
//! calls to them.
//!
//! Each server has a supervisor task: it connects (all servers at once, at
//! most [`MAX_PARALLEL_CONNECTS`] at a time), lists tools and resources into
//! the manifest, waits for the session to end, and reconnects with
//! exponential backoff and jitter. A server that fails never blocks the
//! others or the gateway; its manifest entry stays, marked `unavailable`
//! with the reason. The manifest is refreshed on an interval, on SIGHUP
//! ([`Gateway::refresh_all`]) and when a server announces
//! `notifications/tools/list_changed`.

mod broken;
pub mod convert;
mod downstream;
mod limited_http;
mod sse;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::{ArcSwap, ArcSwapOption};
use serde_json::Value;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::call::breaker::Breaker;
use crate::call::{BoxFuture, Guards, Route, Servers, Target};
use crate::config::{Config, ServerConfig};
use crate::error::{ErrorCode, ForgeError};
use crate::manifest::{
    Lookup, Manifest, ResourceEntry, ServerEntry, ServerStatus, Snapshot, ToolEntry,
};
use crate::policy::{RateLimit, ServerGroup};

pub use downstream::{Connection, RefreshQueue};

/// Servers connecting at once. Each stdio server is a process start (often
/// `npx`, which is CPU-heavy); eight keeps a cold start of many servers from
/// starving the machine while still overlapping network waits.
pub const MAX_PARALLEL_CONNECTS: usize = 8;

/// First reconnect delay. Doubles per failure up to [`MAX_BACKOFF`].
pub const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// Longest reconnect delay: a minute, so a server that comes back is found
/// within a minute without hammering one that stays down.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How long a stdio server gets to exit after its stdin closes at
/// shutdown before its process group is killed.
pub const SERVER_GRACE: Duration = Duration::from_secs(2);

/// Longest an execution waits for servers still making their first
/// connection attempt, so a script run right after start-up sees them.
pub const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// One configured server and its current session.
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    conn: ArcSwapOption<Connection>,
    /// Its guards in the call pipeline: group, rate limit, circuit breaker,
    /// in-flight slots.
    pub guards: Arc<Guards>,
}

impl Server {
    fn new(config: &ServerConfig, group: Option<ServerGroup>) -> Server {
        Server {
            guards: Arc::new(Guards {
                group,
                rate: config.calls_per_minute.map(|n| {
                    RateLimit::new(n, format!("servers.{}.calls_per_minute", config.name))
                }),
                breaker: Breaker::new(
                    &config.name,
                    config.circuit_breaker,
                    config.failure_threshold,
                    config.recovery_timeout,
                ),
                in_flight: Semaphore::new(config.max_in_flight as usize),
            }),
            config: config.clone(),
            conn: ArcSwapOption::empty(),
        }
    }
}

impl Server {
    /// The live session, if connected.
    pub fn connection(&self) -> Option<Arc<Connection>> {
        self.conn.load_full()
    }
}

/// The gateway's shared state. Cheap to share behind an `Arc`.
pub struct Gateway {
    servers: BTreeMap<String, Arc<Server>>,
    manifest: ArcSwap<Manifest>,
    refresh: Arc<RefreshQueue>,
    /// Servers still in their first connection attempt.
    pending: watch::Sender<usize>,
    /// Set once `pending` reached zero: executions after start-up skip the
    /// watch channel altogether.
    started: std::sync::atomic::AtomicBool,
    shutdown: CancellationToken,
}

impl Gateway {
    /// Starts connecting to every server in `config` and returns at once.
    pub fn start(config: &Config) -> Arc<Gateway> {
        let refresh = Arc::new(RefreshQueue::default());
        let servers: BTreeMap<String, Arc<Server>> = config
            .servers
            .iter()
            .map(|c| {
                let group = config
                    .groups
                    .iter()
                    .find(|g| g.servers.contains(&c.name))
                    .map(|g| ServerGroup {
                        name: g.name.as_str().into(),
                        isolation: g.isolation,
                    });
                (c.name.clone(), Arc::new(Server::new(c, group)))
            })
            .collect();
        let manifest =
            Manifest::new(config.servers.iter().map(|c| {
                ServerEntry::new(&c.name, c.description.clone(), ServerStatus::Connecting)
            }));
        let (pending, _) = watch::channel(servers.len());
        let gateway = Arc::new(Gateway {
            servers,
            manifest: ArcSwap::from_pointee(manifest),
            refresh: refresh.clone(),
            pending,
            started: std::sync::atomic::AtomicBool::new(false),
            shutdown: CancellationToken::new(),
        });
        let permits = Arc::new(Semaphore::new(MAX_PARALLEL_CONNECTS));
        for server in gateway.servers.values() {
            tokio::spawn(supervise(
                Arc::downgrade(&gateway),
                server.clone(),
                permits.clone(),
                gateway.shutdown.clone(),
            ));
        }
        tokio::spawn(refresher(
            Arc::downgrade(&gateway),
            refresh,
            config.manifest.refresh_interval,
            gateway.shutdown.clone(),
        ));
        gateway
    }

    /// The current manifest.
    pub fn manifest(&self) -> Arc<Manifest> {
        self.manifest.load_full()
    }

    /// A consistent view for one execution.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.manifest())
    }

    /// The configured server `name`.
    pub fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.get(name)
    }

    /// Every configured server.
    pub fn servers(&self) -> impl Iterator<Item = &Arc<Server>> {
        self.servers.values()
    }

    /// Waits until every server has finished its first connection attempt,
    /// or `limit` passes.
    pub async fn wait_started(&self, limit: Duration) {
        use std::sync::atomic::Ordering;
        if self.started.load(Ordering::Acquire) {
            return;
        }
        let mut rx = self.pending.subscribe();
        if let Ok(Ok(_)) = tokio::time::timeout(limit, rx.wait_for(|&n| n == 0)).await {
            self.started.store(true, Ordering::Release);
        }
    }

    /// Lists every connected server's tools and resources again.
    pub fn refresh_all(&self) {
        for name in self.servers.keys() {
            self.refresh.push(name);
        }
    }

    /// Ends every session and kills every stdio server's process group. New
    /// connections are not attempted afterwards.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
        for server in self.servers.values() {
            if let Some(conn) = server.conn.swap(None) {
                conn.close();
            }
        }
    }

    /// Ends every session politely and reaps every stdio server: each gets
    /// `grace` to exit after its stdin closes, then its process group is
    /// killed. No new connections are attempted afterwards.
    pub async fn close(&self, grace: Duration) {
        self.shutdown.cancel();
        let conns: Vec<Arc<Connection>> = self
            .servers
            .values()
            .filter_map(|s| s.conn.swap(None))
            .collect();
        futures_util::future::join_all(conns.iter().map(|c| c.shutdown(grace))).await;
    }

    /// The servers of one execution, routed over `snapshot`.
    pub fn router(self: &Arc<Self>, snapshot: &Snapshot) -> Router {
        Router {
            gateway: self.clone(),
            manifest: snapshot.0.clone(),
        }
    }

    fn set_entry(&self, entry: ServerEntry) {
        let entry = Arc::new(entry);
        self.manifest.rcu(|m| m.with_server(entry.clone()));
    }

    /// Lists `server`'s tools and resources into the manifest.
    async fn list(&self, server: &Server, conn: &Connection) -> Result<(), String> {
        let timeout = server.config.timeout;
        let tools = tokio::time::timeout(timeout, conn.peer.list_all_tools())
            .await
            .map_err(|_| format!("tools/list took longer than {} s", timeout.as_secs_f64()))?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let mut tools: Vec<Arc<ToolEntry>> = tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .filter_map(|t| {
                let entry = ToolEntry::from_json(&t);
                if entry.is_none() {
                    let name = t.get("name").map(|n| n.to_string()).unwrap_or_default();
                    tracing::warn!(
                        server = %server.config.name,
                        "ignored a tool whose name is not 1 to 128 of A-Z a-z 0-9 _ - . : {}",
                        crate::error::clip(&name.escape_debug().to_string(), 80)
                    );
                }
                entry
            })
            .map(Arc::new)
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools.dedup_by(|a, b| a.name == b.name);
        let mut denied = std::collections::BTreeMap::new();
        tools.retain(|t| {
            match server
                .config
                .policy
                .verdict(&t.name, t.annotations.as_ref())
            {
                None => true,
                Some(why) => {
                    denied.insert(t.name.clone(), why);
                    false
                }
            }
        });
        let supports_resources = conn
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some());
        let mut resources = Vec::new();
        if supports_resources {
            match tokio::time::timeout(timeout, conn.peer.list_all_resources()).await {
                Ok(Ok(list)) => {
                    resources = list
                        .iter()
                        .filter_map(|r| serde_json::to_value(r).ok())
                        .filter_map(|r| ResourceEntry::from_json(&r))
                        .collect();
                    resources.sort_by(|a: &ResourceEntry, b| a.uri.cmp(&b.uri));
                }
                Ok(Err(e)) => {
                    tracing::warn!(server = %server.config.name, "resources/list failed: {e}")
                }
                Err(_) => tracing::warn!(server = %server.config.name, "resources/list timed out"),
            }
        }
        let description = server.config.description.clone().or_else(|| {
            conn.instructions.as_deref().map(|i| {
                let clean = crate::manifest::sanitize::clean_text(
                    i,
                    crate::manifest::sanitize::MAX_DESCRIPTION,
                );
                crate::manifest::summary(&clean.text, crate::manifest::SUMMARY_CHARS)
            })
        });
        let mut entry = ServerEntry::new(&server.config.name, description, ServerStatus::Ready);
        entry.tools = tools;
        entry.resources = resources;
        entry.denied = denied;
        tracing::info!(server = %server.config.name, tools = entry.tools.len(), resources = entry.resources.len(), "manifest updated");
        self.set_entry(entry);
        Ok(())
    }

    fn mark_unavailable(&self, server: &Server, why: String) {
        let current = self.manifest();
        let old = current.server(&server.config.name);
        let mut entry = ServerEntry::new(
            &server.config.name,
            old.and_then(|o| o.description.clone())
                .or_else(|| server.config.description.clone()),
            ServerStatus::Unavailable(crate::redact::redact(&why).text),
        );
        // Keep the last known tools so scripts still see what the server
        // offers, and calls get a precise "unavailable" error.
        if let Some(old) = old {
            entry.tools = old.tools.clone();
            entry.resources = old.resources.clone();
        }
        self.set_entry(entry);
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Connects `server`, keeps it connected, and reconnects after failures.
async fn supervise(
    gateway: std::sync::Weak<Gateway>,
    server: Arc<Server>,
    permits: Arc<Semaphore>,
    shutdown: CancellationToken,
) {
    let name = server.config.name.clone();
    let mut backoff = MIN_BACKOFF;
    let mut first = true;
    loop {
        let events = match gateway.upgrade() {
            Some(g) => g.refresh.clone(),
            None => return,
        };
        let attempt = {
            let _permit = permits.acquire().await;
            let limit = server.config.timeout.max(Duration::from_secs(10));
            tokio::select! {
                _ = shutdown.cancelled() => return,
                r = tokio::time::timeout(limit, downstream::connect(&server.config, events)) => {
                    r.unwrap_or_else(|_| Err(format!("no MCP handshake within {} s", limit.as_secs_f64())))
                }
            }
        };
        let Some(g) = gateway.upgrade() else { return };
        let connected = match attempt {
            Ok(conn) => {
                let conn = Arc::new(conn);
                match g.list(&server, &conn).await {
                    Ok(()) => {
                        tracing::info!(server = %name, "connected");
                        server.conn.store(Some(conn.clone()));
                        Some(conn)
                    }
                    Err(e) => {
                        conn.close();
                        tracing::warn!(server = %name, "connected but could not list tools: {e}");
                        g.mark_unavailable(&server, e);
                        None
                    }
                }
            }
            Err(e) => {
                tracing::warn!(server = %name, "could not connect: {e}");
                g.mark_unavailable(&server, e);
                None
            }
        };
        if first {
            first = false;
            g.pending.send_modify(|n| *n = n.saturating_sub(1));
        }
        drop(g);
        if let Some(conn) = connected {
            backoff = MIN_BACKOFF;
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = conn.closed() => {}
            }
            server.conn.store(None);
            let Some(g) = gateway.upgrade() else { return };
            tracing::warn!(server = %name, "session ended; reconnecting");
            g.mark_unavailable(
                &server,
                "the server closed the session; reconnecting".into(),
            );
        }
        let delay = jitter(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// `base` ± 25%, so servers that failed together do not retry in lockstep.
fn jitter(base: Duration) -> Duration {
    let mut bytes = [0u8; 8];
    let r = if getrandom::fill(&mut bytes).is_ok() {
        u64::from_le_bytes(bytes)
    } else {
        0
    };
    let unit = (r % 1000) as f64 / 1000.0; // [0, 1)
    base.mul_f64(0.75 + unit * 0.5)
}

/// Refreshes servers' manifest entries on list-change events and on the
/// configured interval.
async fn refresher(
    gateway: std::sync::Weak<Gateway>,
    refresh: Arc<RefreshQueue>,
    interval: Option<Duration>,
    shutdown: CancellationToken,
) {
    let mut tick = interval.map(|i| {
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + i, i);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    loop {
        let mut due: Vec<String> = Vec::new();
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = refresh.wait() => {},
            _ = async { match tick.as_mut() { Some(t) => { t.tick().await; } None => std::future::pending::<()>().await } } => {
                if let Some(g) = gateway.upgrade() {
                    due.extend(g.servers.keys().cloned());
                }
            }
        }
        // A burst of notifications becomes one listing per server.
        due.extend(refresh.take());
        due.sort();
        due.dedup();
        let Some(g) = gateway.upgrade() else { return };
        for name in due {
            let Some(server) = g.servers.get(&name).cloned() else {
                continue;
            };
            let Some(conn) = server.connection() else {
                continue;
            };
            if let Err(e) = g.list(&server, &conn).await {
                tracing::warn!(server = %name, "manifest refresh failed: {e}");
            }
        }
    }
}

/// Routes one execution's calls (the pipeline's route step, see
/// [`crate::call`]) over the manifest snapshot the execution started with.
pub struct Router {
    gateway: Arc<Gateway>,
    manifest: Arc<Manifest>,
}

impl Router {
    /// `server`'s guards and live session, or `SERVER_UNAVAILABLE` with the
    /// reason its manifest entry gives.
    fn live(&self, server: &str) -> Result<(Arc<Server>, Arc<Connection>), ForgeError> {
        let entry = self.manifest.require_server(server)?;
        let s = self
            .gateway
            .server(server)
            .ok_or_else(|| ForgeError::server_not_found(server))?;
        match s.connection() {
            Some(c) => Ok((s.clone(), c)),
            None => {
                let why = match &entry.status {
                    ServerStatus::Unavailable(why) => format!(": {why}"),
                    _ => String::new(),
                };
                Err(ForgeError::new(ErrorCode::ServerUnavailable, format!("server {server:?} is not connected{why}"))
                    .suggest("the gateway reconnects in the background; check manifest.servers for its status and retry later"))
            }
        }
    }

    /// The route to `server`'s live session, whose request `send` makes
    /// (given the connection, the server's name and its timeout).
    fn to_server(
        &self,
        server: &str,
        send: impl FnOnce(Arc<Connection>, String, Duration) -> BoxFuture<Result<Value, ForgeError>>
        + Send
        + 'static,
    ) -> Result<Route, ForgeError> {
        let (s, conn) = self.live(server)?;
        let (server, timeout) = (server.to_string(), s.config.timeout);
        Ok(Route {
            denied: None,
            guards: Some(s.guards.clone()),
            send: Box::new(move || send(conn, server, timeout)),
        })
    }
}

impl Servers for Router {
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
        match target {
            Target::Tool { server, tool, args } => {
                let args = Value::Object(args);
                match self.manifest.lookup_tool(server, tool)? {
                    Lookup::Found(_, t) => t.validate(server, &args)?,
                    Lookup::Denied(why) => {
                        return Ok(Route {
                            denied: Some(why.to_string()),
                            guards: None,
                            send: Box::new(|| Box::pin(async { Err(never_sent()) })),
                        });
                    }
                }
                let Value::Object(args) = args else {
                    unreachable!("built as an object above")
                };
                let tool = tool.to_string();
                self.to_server(server, move |conn, server, timeout| {
                    Box::pin(async move {
                        downstream::call_tool(&conn, &server, &tool, args, timeout).await
                    })
                })
            }
            Target::Resource { server, uri } => {
                let uri = uri.to_string();
                self.to_server(server, move |conn, server, timeout| {
                    Box::pin(async move {
                        downstream::read_resource(&conn, &server, &uri, timeout).await
                    })
                })
            }
        }
    }
}

/// The error of a request the pipeline sent although its route said the
/// policy refuses it: a pipeline bug, never seen by a working gateway.
fn never_sent() -> ForgeError {
    ForgeError::new(
        ErrorCode::Internal,
        "a refused call reached its server; this is a bug in quickforge",
    )
}
