//! The gateway: live sessions with every downstream server in forge.toml, the
//! live manifest of what they offer, and the router that carries a script's
//! calls to them.
//!
//! Each server has a supervisor task: it connects (all servers at once, at
//! most `startup_concurrency` at a time), lists tools and resources into
//! the manifest, waits for the session to end, and reconnects with
//! exponential backoff and jitter. A server that fails never blocks the
//! others or the gateway; its manifest entry stays, marked `unavailable`
//! with the reason. The manifest is refreshed on an interval, on SIGHUP
//! ([`Gateway::refresh_all`]) and when a server announces
//! `notifications/tools/list_changed`.

mod reset;
/// Result conversion, shared with the edge provider.
pub use quickforge_core::convert;
pub(crate) mod downstream;
mod era;
mod handler;
mod limited_http;
mod merged;
mod pinning;
mod router;
mod settings;
mod sse;
mod supervise;
mod tool_call;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::{ArcSwap, ArcSwapOption};
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::call::Guards;
use crate::call::breaker::Breaker;

use crate::manifest::direct::DirectTools;
use crate::manifest::{Manifest, ServerEntry, ServerStatus, Snapshot};
use crate::policy::{RateLimit, ServerGroup};
use crate::relay::{Relay, Upstream};

pub use downstream::Connection;
pub use handler::RefreshSet;
pub use pinning::RECHECK as PIN_RECHECK;
pub use router::Router;
pub use settings::{GatewaySettings, GroupConfig, INHERITED_ENV, ServerConfig, Transport};
pub use supervise::MIN_CONNECT_TIME;

/// How long a stdio server gets to exit after its stdin closes at
/// shutdown before its process group is killed.
pub const SERVER_GRACE: Duration = Duration::from_secs(2);

/// Longest an execution waits for servers still making their first
/// connection attempt, so a script run right after start-up sees them.
pub const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// One configured server and its current session.
pub struct Server {
    /// Its `[servers.NAME]` section, validated.
    pub config: ServerConfig,
    conn: ArcSwapOption<Connection>,
    /// Its guards in the call pipeline: group, rate limit, circuit breaker,
    /// in-flight slots.
    pub guards: Arc<Guards>,
    /// Its protocol era once a connect has learned it, so reconnects skip
    /// the `server/discover` probe a legacy server may make slow.
    era: era::EraMemory,
    /// Connection attempts after the first (after a failed attempt or a
    /// lost session), for `/metrics`.
    pub reconnects: std::sync::atomic::AtomicU64,
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
            era: era::EraMemory::default(),
            reconnects: Default::default(),
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
    refresh: Arc<RefreshSet>,
    /// Servers still in their first connection attempt.
    pending: watch::Sender<usize>,
    /// Set once `pending` reached zero: executions after start-up skip the
    /// watch channel altogether.
    started: std::sync::atomic::AtomicBool,
    shutdown: CancellationToken,
    /// Which execution has which requests in flight, for what servers send
    /// back (see [`crate::relay`]).
    pub relay: Arc<Relay>,
    /// The tools listed directly (`expose`), made from the manifest each
    /// time a server's entry changes.
    direct: ArcSwap<DirectTools>,
    /// Where each tool's trusted version is recorded ([`crate::pins`]).
    pins: crate::pins::Pins,
}

impl Gateway {
    /// Starts connecting to every server in `config` and returns at once.
    pub fn start(config: &GatewaySettings) -> Arc<Gateway> {
        let refresh = Arc::new(RefreshSet::default());
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
            relay: Arc::new(Relay::new(config.relay)),
            direct: ArcSwap::from_pointee(DirectTools::default()),
            pins: config.pins.clone(),
        });
        let permits = Arc::new(Semaphore::new(config.startup_concurrency));
        for server in gateway.servers.values() {
            tokio::spawn(supervise::supervise(
                Arc::downgrade(&gateway),
                server.clone(),
                permits.clone(),
                gateway.shutdown.clone(),
            ));
        }
        tokio::spawn(pinning::rechecker(
            Arc::downgrade(&gateway),
            gateway.shutdown.clone(),
        ));
        tokio::spawn(supervise::refresher(
            Arc::downgrade(&gateway),
            refresh,
            config.refresh_interval,
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

    /// Every configured server, sorted by name.
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
    pub fn router(
        self: &Arc<Self>,
        snapshot: &Snapshot,
        upstream: Option<Arc<Upstream>>,
    ) -> Router {
        Router {
            gateway: self.clone(),
            manifest: snapshot.0.clone(),
            upstream,
            shape: convert::Shape::Script,
        }
    }

    /// Tells every connected server that the client's roots changed
    /// (`notifications/roots/list_changed`); each asks again.
    pub async fn roots_changed(&self) {
        for server in self.servers.values() {
            if let Some(conn) = server.connection()
                && let Err(e) = conn.peer.notify_roots_list_changed().await
            {
                tracing::debug!(server = %server.config.name, "could not relay roots/list_changed: {e}");
            }
        }
    }

    /// Puts `entry` in the manifest; whether the direct tools changed
    /// with it.
    fn set_entry(&self, entry: ServerEntry) -> bool {
        let exposed = self
            .servers
            .get(&entry.name)
            .is_some_and(|s| !s.config.expose.is_none());
        let entry = Arc::new(entry);
        self.manifest.rcu(|m| m.with_server(entry.clone()));
        if !exposed {
            return false;
        }
        // Made from the latest manifest inside `rcu`, which makes it again
        // if another entry changed meanwhile: never an older list last.
        let old = self.direct.rcu(|_| {
            DirectTools::of(&self.manifest(), |name| {
                self.servers.get(name).map(|s| &s.config.expose)
            })
        });
        *old != **self.direct.load()
    }

    /// The tools listed directly beside `search` and `execute`.
    pub fn direct_tools(&self) -> Arc<DirectTools> {
        self.direct.load_full()
    }

    /// Whether any server lists tools directly (`expose`): quickforge's
    /// tool list can then change, and says so.
    pub fn exposes(&self) -> bool {
        self.servers.values().any(|s| !s.config.expose.is_none())
    }

    /// Lists `server`'s tools, resources, resource templates and prompts
    /// into the manifest; the clients hear when its prompts or resources
    /// changed.
    async fn list(&self, server: &Server, conn: &Connection) -> Result<(), String> {
        let timeout = server.config.timeout;
        let name = &server.config.name;
        let tools = tokio::time::timeout(timeout, conn.peer.list_all_tools())
            .await
            .map_err(|_| format!("tools/list took longer than {} s", timeout.as_secs_f64()))?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let caps = conn.peer.peer_info().map(|i| i.capabilities.clone());
        let has = |f: fn(&rmcp::model::ServerCapabilities) -> bool| caps.as_ref().is_some_and(f);
        let mut listed = crate::manifest::listing::Listed {
            tools,
            ..Default::default()
        };
        if has(|c| c.resources.is_some()) {
            listed.resources = optional(
                name,
                "resources/list",
                timeout,
                conn.peer.list_all_resources(),
            )
            .await;
            listed.templates = optional(
                name,
                "resources/templates/list",
                timeout,
                conn.peer.list_all_resource_templates(),
            )
            .await;
        }
        if has(|c| c.prompts.is_some()) {
            listed.prompts =
                optional(name, "prompts/list", timeout, conn.peer.list_all_prompts()).await;
        }
        let mut entry = crate::manifest::listing::entry(
            crate::manifest::listing::Source {
                name: &server.config.name,
                description: server.config.description.as_deref(),
                policy: &server.config.policy,
            },
            conn.instructions.as_deref(),
            listed,
        );
        self.pin(&server.config, &mut entry).await;
        tracing::info!(server = %name, tools = entry.tools.len(), resources = entry.resources.len(), prompts = entry.prompts.len(), "manifest updated");
        let old = self.manifest().server(name).cloned();
        let changed =
            |f: fn(&ServerEntry) -> String| old.as_deref().is_none_or(|o| f(o) != f(&entry));
        let prompts = changed(|e| format!("{:?}", e.prompts));
        let resources = changed(|e| format!("{:?}{:?}", e.resources, e.templates));
        let tools = self.set_entry(entry);
        self.relay.lists_changed(tools, prompts, resources);
        Ok(())
    }

    fn mark_unavailable(&self, server: &Server, why: String) {
        let current = self.manifest();
        let old = current.server(&server.config.name);
        let mut entry = ServerEntry::new(
            &server.config.name,
            old.and_then(|o| o.description.clone())
                .or_else(|| server.config.description.clone()),
            ServerStatus::Unavailable(unavailable_reason(&server.config, &why)),
        );
        // Keep the last known tools so scripts still see what the server
        // offers, and calls get a precise "unavailable" error.
        if let Some(old) = old {
            entry.tools = old.tools.clone();
            entry.resources = old.resources.clone();
            entry.prompts = old.prompts.clone();
            entry.templates = old.templates.clone();
            entry.changed = old.changed.clone();
        }
        // The tools stay, so the direct ones do too.
        self.set_entry(entry);
    }
}

/// What an optional list request (`resources/list`, `prompts/list`, …)
/// gave, or nothing, with a warning, when it failed or took longer than
/// `timeout`: the server's tools are still worth having.
async fn optional<T>(
    server: &str,
    what: &str,
    timeout: Duration,
    list: impl std::future::Future<Output = Result<Vec<T>, rmcp::ServiceError>>,
) -> Vec<T> {
    match tokio::time::timeout(timeout, list).await {
        Ok(Ok(list)) => list,
        Ok(Err(e)) => {
            tracing::warn!(server, "{what} failed: {e}");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!(server, "{what} timed out");
            Vec::new()
        }
    }
}

/// Why a server is unavailable, as the manifest and the log show it: redacted, and
/// when that hid something (the configured command's path, typically), prefixed with
/// the server's name and the basename of its command, so an operator still knows
/// which server and which program to look at (`server "git" (command uvx): could not
/// start "[REDACTED:path]": No such file or directory`).
pub(super) fn unavailable_reason(config: &ServerConfig, why: &str) -> String {
    // the libraries' own type paths first: internals, never shown
    let why = quickforge_filters::text::without_type_paths(why);
    let redacted = crate::redact::redact(&why);
    if !redacted.changed {
        return redacted.text;
    }
    let name = &config.name;
    match &config.transport {
        Transport::Stdio { command, .. } => {
            let base = std::path::Path::new(command)
                .file_name()
                .map_or_else(|| command.clone(), |b| b.to_string_lossy().into_owned());
            // the basename names a program, not where it lives; redact it all the same
            // (a program named like a token stays hidden)
            let base = crate::redact::redact(&base).text;
            format!("server {name:?} (command {base}): {}", redacted.text)
        }
        _ => format!("server {name:?}: {}", redacted.text),
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.shutdown();
    }
}
