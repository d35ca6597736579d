//! The way back: what a downstream server sends while one of a script's
//! calls is in flight (progress, log messages, elicitation, sampling and
//! roots requests) finds the client whose execution made the call, and the
//! client's answer finds its way back to the server, while the script just
//! sits in its `await`.
//!
//! Downstream connections are shared by every client of the gateway, so a
//! message is sent to a client only when quickforge is certain whose it is
//! ([`Relay::owner`]):
//!
//! 1. by the request it relates to: a progress token quickforge put on one
//!    of its own downstream requests, or (streamable HTTP) the response
//!    stream of that request the message arrived on;
//! 2. because exactly one execution has calls in flight to that server, and
//!    every call to it that ended in the last [`GUESS_WINDOW`] was made for
//!    the same principal (its `[auth]` subject; without `[auth]` every client
//!    is the gateway's one user): a stdio server's log carries no request
//!    id, and one written just after another subject's call ended must not
//!    reach this one's call, the only one left in flight;
//! 3. with one client (stdio), because every message is that client's.
//!
//! Otherwise a request gets the specification's error and a notification
//! stays in the gateway's log: one client's data never reaches another.
//!
//! Requests to the client (elicitation, sampling, roots) are sent from the
//! task serving the client's `execute` ([`Upstream::pump`]), so rmcp routes
//! them on that request's own stream. Waiting on a person or on the
//! client's model pauses the execution's deadline (`crate::deadline`), has a
//! bound of its own, and takes one of a capped number of waiting places
//! ([`RelayLimits`]).

pub mod approve;

mod progress;
mod questions;
mod upstream;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{ProgressToken, RequestId};

pub use questions::Questions;
pub use upstream::{Asked, Caps, ClientLink, Pump, QUICK_ASK, Upstream};

/// How long a call that ended still counts when a message without a request
/// id is attributed by guess (rule 2 in the module doc): a server's log or
/// progress written just after it answered arrives within milliseconds;
/// five seconds covers a slow flush of its stderr-side buffers and a busy
/// gateway, and keeps a quiet server's messages deliverable.
pub const GUESS_WINDOW: Duration = Duration::from_secs(5);

/// Most ended calls remembered per server for [`GUESS_WINDOW`]: past it the
/// oldest go, and a guess refuses (it cannot tell) rather than grows.
const MAX_ENDED: usize = 256;

/// Bounds on waiting: every value is a documented `[sandbox]` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayLimits {
    /// Longest an execution may spend waiting on its client in all
    /// (`max_wait_secs`): elicitation, approvals, sampling. Five minutes: a
    /// person reads a form and types an answer in well under that, and an
    /// abandoned prompt frees its execution's slot after it. This time does
    /// not count against the execution's own time limit.
    pub max_wait: Duration,
    /// Executions that may wait on their client at once (`max_waiting`).
    /// Default: half of `max_concurrent`, rounded down, at least one, so
    /// executions parked on a person can never hold every slot and leave
    /// the gateway `busy` for everyone else.
    pub max_waiting: usize,
}

impl RelayLimits {
    /// The defaults for a gateway of `max_concurrent` slots.
    pub fn for_slots(max_concurrent: usize) -> RelayLimits {
        RelayLimits {
            max_wait: Duration::from_secs(300),
            max_waiting: (max_concurrent / 2).max(1),
        }
    }
}

/// One downstream request an execution has in flight.
struct InFlight {
    key: u64,
    request: RequestId,
    token: ProgressToken,
    tool: Arc<str>,
    upstream: Arc<Upstream>,
}

/// Whose a message from a downstream server is.
pub enum Owner {
    /// The execution that made the call it relates to.
    Execution(Arc<Upstream>, Arc<str>),
    /// The gateway's only client, with no execution to tie it to.
    Client(Arc<ClientLink>),
}

impl Owner {
    /// The client the message goes to.
    pub fn client(&self) -> &Arc<ClientLink> {
        match self {
            Owner::Execution(up, _) => up.client(),
            Owner::Client(c) => c,
        }
    }

    /// What that client can answer, for this execution.
    pub fn caps(&self) -> Caps {
        match self {
            Owner::Execution(up, _) => up.caps(),
            Owner::Client(c) => c.caps(),
        }
    }
}

/// What a downstream message says it relates to.
#[derive(Debug, Clone, Copy)]
pub enum Hint<'a> {
    /// Nothing: only the server it came from.
    None,
    /// A progress token in its `_meta` or params.
    Token(&'a ProgressToken),
    /// The response stream of one of quickforge's requests it arrived on.
    Request(&'a RequestId),
}

/// The gateway's side of the relay: which execution has which downstream
/// requests in flight, the only client when there is one, and the places
/// for executions waiting on their client.
pub struct Relay {
    calls: Mutex<HashMap<Arc<str>, Vec<InFlight>>>,
    /// Per server, when each of its calls of the last [`GUESS_WINDOW`]
    /// ended and for whom ([`ClientLink::principal`]).
    ended: Mutex<EndedCalls>,
    next: AtomicU64,
    solo: Mutex<Option<Arc<ClientLink>>>,
    waiting: Arc<tokio::sync::Semaphore>,
    limits: RelayLimits,
    /// Every client session alive, for the list-change notifications.
    clients: Mutex<Vec<Weak<ClientLink>>>,
    /// Resource URI → the clients subscribed to it.
    subscribed: Mutex<HashMap<String, Vec<Weak<ClientLink>>>>,
}

impl Relay {
    /// A relay bounded by `limits`, with no client yet.
    pub fn new(limits: RelayLimits) -> Relay {
        Relay {
            calls: Mutex::default(),
            ended: Mutex::default(),
            next: AtomicU64::new(1),
            solo: Mutex::default(),
            waiting: Arc::new(tokio::sync::Semaphore::new(limits.max_waiting.max(1))),
            limits,
            clients: Mutex::default(),
            subscribed: Mutex::default(),
        }
    }

    /// Counts `client` among the live ones (until its last `Arc` goes).
    pub fn register(&self, client: &Arc<ClientLink>) {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        clients.retain(|c| c.strong_count() > 0);
        clients.push(Arc::downgrade(client));
    }

    /// Tells every live client that quickforge's tool list (its direct
    /// tools) or the merged prompt or resource lists changed, as the flags
    /// say (a server's list changed, or a server came or went).
    pub fn lists_changed(&self, tools: bool, prompts: bool, resources: bool) {
        if !(tools || prompts || resources) {
            return;
        }
        let clients: Vec<Arc<ClientLink>> = self
            .clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        if clients.is_empty() {
            return;
        }
        tokio::spawn(async move {
            for c in clients {
                if tools {
                    let _ = c.peer().notify_tool_list_changed().await;
                }
                if prompts {
                    let _ = c.peer().notify_prompt_list_changed().await;
                }
                if resources {
                    let _ = c.peer().notify_resource_list_changed().await;
                }
            }
        });
    }

    /// Records `client`'s subscription to `uri`; whether it is the first
    /// live one (then the server must be asked to subscribe).
    pub fn subscribe(&self, uri: &str, client: &Arc<ClientLink>) -> bool {
        let mut subs = self.subscribed.lock().unwrap_or_else(|p| p.into_inner());
        let list = subs.entry(uri.to_string()).or_default();
        list.retain(|c| c.strong_count() > 0);
        let first = list.is_empty();
        if !list
            .iter()
            .any(|c| std::ptr::eq(c.as_ptr(), Arc::as_ptr(client)))
        {
            list.push(Arc::downgrade(client));
        }
        first
    }

    /// Ends `client`'s subscription to `uri`; whether none is left (then the
    /// server can be told to stop).
    pub fn unsubscribe(&self, uri: &str, client: &Arc<ClientLink>) -> bool {
        let mut subs = self.subscribed.lock().unwrap_or_else(|p| p.into_inner());
        let Some(list) = subs.get_mut(uri) else {
            return false;
        };
        list.retain(|c| c.strong_count() > 0 && !std::ptr::eq(c.as_ptr(), Arc::as_ptr(client)));
        let last = list.is_empty();
        if last {
            subs.remove(uri);
        }
        last
    }

    /// The clients subscribed to `uri`.
    pub fn subscribers(&self, uri: &str) -> Vec<Arc<ClientLink>> {
        self.subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(uri)
            .map(|l| l.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }

    /// The bounds on waiting.
    pub fn limits(&self) -> RelayLimits {
        self.limits
    }

    /// Declares `client` the gateway's only one (stdio): every downstream
    /// message no execution claims is its.
    pub fn set_solo(&self, client: Arc<ClientLink>) {
        *self.solo.lock().unwrap_or_else(|p| p.into_inner()) = Some(client);
    }

    /// The gateway's only client, if it has one.
    pub fn solo(&self) -> Option<Arc<ClientLink>> {
        self.solo.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records that `upstream`'s execution has `request` (with progress
    /// `token`) in flight to `server` for `tool`, until the guard drops.
    pub fn track(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        request: RequestId,
        token: ProgressToken,
        upstream: Arc<Upstream>,
    ) -> Tracked {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let server: Arc<str> = server.into();
        let entry = InFlight {
            key,
            request,
            token,
            tool: tool.into(),
            upstream,
        };
        self.lock().entry(server.clone()).or_default().push(entry);
        Tracked {
            relay: self.clone(),
            server,
            key,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Vec<InFlight>>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whose a message from `server` is, by `hint` and then by the rules in
    /// the module doc; `None` when quickforge cannot be certain.
    pub fn owner(&self, server: &str, hint: Hint<'_>) -> Option<Owner> {
        let calls = self.lock();
        let flights = calls.get(server).map(Vec::as_slice).unwrap_or_default();
        let exact = match hint {
            Hint::None => None,
            Hint::Token(t) => flights.iter().find(|f| &f.token == t),
            Hint::Request(r) => flights.iter().find(|f| &f.request == r),
        };
        if let Some(f) = exact {
            return Some(Owner::Execution(f.upstream.clone(), f.tool.clone()));
        }
        if let Hint::Token(_) = hint {
            // A token names one request: one not in flight (any more) is no
            // reason to guess.
            return None;
        }
        if let Some(first) = flights.first()
            && flights
                .iter()
                .all(|f| Arc::ptr_eq(&f.upstream, &first.upstream))
            && self.ended_only_for(server, first.upstream.client().principal())
        {
            return Some(Owner::Execution(first.upstream.clone(), first.tool.clone()));
        }
        let solo = self.solo()?;
        // With one client every execution is its; a call in flight, if any,
        // says which one waits.
        Some(match flights.first() {
            Some(f) => Owner::Execution(f.upstream.clone(), f.tool.clone()),
            None => Owner::Client(solo),
        })
    }

    /// Whether every call to `server` that ended in the last
    /// [`GUESS_WINDOW`] was made for `principal`.
    fn ended_only_for(&self, server: &str, principal: Option<&Arc<str>>) -> bool {
        let mut ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        let Some(list) = ended.get_mut(server) else {
            return true;
        };
        let now = tokio::time::Instant::now();
        while list.front().is_some_and(|(at, _)| now - *at > GUESS_WINDOW) {
            list.pop_front();
        }
        list.iter()
            .all(|(_, e)| matches!(e, Ended::For(p) if Some(p) == principal))
    }

    /// Notes that a call for `principal` to `server` ended now.
    fn note_ended(&self, server: &Arc<str>, principal: Arc<str>) {
        let mut ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        let now = tokio::time::Instant::now();
        ended.retain(|_, l| l.back().is_some_and(|(at, _)| now - *at <= GUESS_WINDOW));
        let list = ended.entry(server.clone()).or_default();
        while list.front().is_some_and(|(at, _)| now - *at > GUESS_WINDOW) {
            list.pop_front();
        }
        if list.len() >= MAX_ENDED {
            // too many to keep: one entry nobody matches stands for them
            list.clear();
            list.push_back((now, Ended::Forgotten));
        }
        list.push_back((now, Ended::For(principal)));
    }

    /// A place among the executions waiting on their client, or `None`
    /// when `max_waiting` of them already wait.
    pub fn wait_place(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.waiting.clone().try_acquire_owned().ok()
    }
}

/// Per server, the calls of the last [`GUESS_WINDOW`] that ended: when, and
/// for whom.
type EndedCalls = HashMap<Arc<str>, VecDeque<(tokio::time::Instant, Ended)>>;

/// For whom a call that ended was made.
enum Ended {
    /// For this principal (its `[auth]` subject).
    For(Arc<str>),
    /// Stands for calls forgotten past [`MAX_ENDED`]: matches nobody.
    Forgotten,
}

/// A downstream request in flight, known to the relay until dropped.
pub struct Tracked {
    relay: Arc<Relay>,
    server: Arc<str>,
    key: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut principal = None;
        {
            let mut calls = self.relay.lock();
            if let Some(flights) = calls.get_mut(&self.server) {
                principal = flights
                    .iter()
                    .find(|f| f.key == self.key)
                    .map(|f| f.upstream.client().principal().cloned());
                flights.retain(|f| f.key != self.key);
                if flights.is_empty() {
                    calls.remove(&self.server);
                }
            }
        }
        // Without `[auth]` (no principal) every client is the one user, and
        // nothing needs telling apart: no record, no lock on that path.
        if let Some(Some(principal)) = principal {
            self.relay.note_ended(&self.server, principal);
        }
    }
}

/// How long the next wait of an execution that has waited `waited` may
/// last under `limits`, or `None` when its waiting time is spent.
pub fn wait_left(limits: &RelayLimits, waited: Duration) -> Option<Duration> {
    limits.max_wait.checked_sub(waited).filter(|d| !d.is_zero())
}
