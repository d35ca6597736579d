//! The client side of the relay: one client session ([`ClientLink`]: its
//! peer, what it can do, the log level it asked for) and one execution of
//! it ([`Upstream`]: its progress token, its deadline, and the channel its
//! requests to the client go through).

#![expect(
    deprecated,
    reason = "logging, sampling and roots are deprecated in MCP 2026-07-28 (SEP-2577) but are what 2025-era clients speak"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use rmcp::model::{
    ClientResult, ErrorCode as RpcCode, LoggingLevel, LoggingMessageNotificationParam,
    ProgressToken, ProtocolVersion, ServerRequest,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::progress::Progress;
use super::questions::Questions;
use super::{Relay, wait_left};
use crate::deadline::Deadline;

/// Longest a quick request to the client (`roots/list`) may take: the
/// client program answers it itself, without a person, in milliseconds.
pub const QUICK_ASK: Duration = Duration::from_secs(10);

/// Longest JSON text of one relayed log message's `data`, bytes: a log line
/// explains; a server dumping a payload into its log gets it cut here, so
/// it cannot flood the client's context through the side door.
pub const MAX_LOG_DATA: usize = 8 * 1024;

/// Log messages per second relayed to one client, and the burst above
/// that: a server logging in a tight loop would otherwise flood the client
/// (and cost the gateway CPU). Messages over the rate stay in the gateway's
/// own log.
pub const LOG_MESSAGES_PER_SEC: u32 = 20;
/// See [`LOG_MESSAGES_PER_SEC`].
pub const LOG_BURST: u32 = 100;

/// What a client said it can do at `initialize`, as the relay needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// Form-mode elicitation (`elicitation: {}` means form, by the spec).
    pub elicit_form: bool,
    /// URL-mode elicitation.
    pub elicit_url: bool,
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `roots/list`.
    pub roots: bool,
}

impl Caps {
    /// What `declared` (a client's capabilities, at `initialize` or in a
    /// request's `_meta`) says the client can answer.
    pub fn of(declared: &rmcp::model::ClientCapabilities) -> Caps {
        let elicit = declared.elicitation.as_ref();
        Caps {
            // An empty `elicitation: {}` is form mode (2025-11-25).
            elicit_form: elicit
                .is_some_and(|e| e.form.is_some() || (e.form.is_none() && e.url.is_none())),
            elicit_url: elicit.is_some_and(|e| e.url.is_some()),
            sampling: declared.sampling.is_some(),
            roots: declared.roots.is_some(),
        }
    }
}

/// One client session, as the relay sees it.
pub struct ClientLink {
    id: u64,
    /// Whom it serves (see [`ClientLink::new`]).
    principal: Option<Arc<str>>,
    peer: Peer<RoleServer>,
    caps: Caps,
    /// [`level_rank`] of the least severe level the client wants.
    level: AtomicU8,
    logs: DefaultDirectRateLimiter,
}

/// The severity rank of `level` (debug 0 … emergency 7).
pub fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl ClientLink {
    /// The client behind `peer`, with what it declared at `initialize`. A
    /// client of the 2026 era gets no server-to-client requests (the
    /// revision forbids them), whatever it declares.
    /// `principal` is whom it serves: its subject under `[auth]`, else `None`
    /// (every client is then the gateway's one user).
    pub fn new(peer: Peer<RoleServer>, principal: Option<Arc<str>>) -> Arc<ClientLink> {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let caps = peer
            .peer_info()
            .filter(|info| info.protocol_version < ProtocolVersion::V_2026_07_28)
            .map(|info| Caps::of(&info.capabilities))
            .unwrap_or_default();
        let quota = Quota::per_second(
            std::num::NonZeroU32::new(LOG_MESSAGES_PER_SEC).unwrap_or(std::num::NonZeroU32::MIN),
        )
        .allow_burst(std::num::NonZeroU32::new(LOG_BURST).unwrap_or(std::num::NonZeroU32::MIN));
        Arc::new(ClientLink {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            principal,
            peer,
            caps,
            // Until the client sets a level: info and above, the level a
            // person reading a client's log panel expects by default.
            level: AtomicU8::new(level_rank(LoggingLevel::Info)),
            logs: RateLimiter::direct(quota),
        })
    }

    /// A number that tells this session from every other in this process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whom the client serves: its subject under `[auth]`, else `None`.
    pub fn principal(&self) -> Option<&Arc<str>> {
        self.principal.as_ref()
    }

    /// What the client can do.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// The client's peer.
    pub fn peer(&self) -> &Peer<RoleServer> {
        &self.peer
    }

    /// `logging/setLevel`: messages below `level` are no longer sent.
    pub fn set_level(&self, level: LoggingLevel) {
        self.level.store(level_rank(level), Ordering::Relaxed);
    }

    /// Sends a downstream server's log message to the client, as
    /// `notifications/message` with `logger` set to the server's name,
    /// when it is at or above the client's level and within the rate;
    /// redacted where it crosses to the client (`quickforge_core::shown`),
    /// `data` cut at [`MAX_LOG_DATA`] after, the server's own `logger` name
    /// redacted and cleaned like any text a person reads.
    pub async fn log(&self, server: &str, level: LoggingLevel, data: Value, logger: Option<&str>) {
        if level_rank(level) < self.level.load(Ordering::Relaxed) {
            return;
        }
        if self.logs.check().is_err() {
            tracing::debug!(target: "quickforge::downstream", server, "log message over the relay rate kept in the gateway log");
            return;
        }
        let mut data = data;
        quickforge_core::shown::json_to_client(&mut data);
        let text = data.to_string();
        if text.len() > MAX_LOG_DATA {
            // redacted whole above, so the cut cannot leave half a secret
            data = Value::String(crate::error::clip(&text, MAX_LOG_DATA));
        }
        let logger = match logger {
            Some(inner) => format!("{server}/{}", shown_logger(inner)),
            None => server.to_string(),
        };
        let mut params = LoggingMessageNotificationParam::new(level, data);
        params.logger = Some(logger);
        if let Err(e) = self.peer.notify_logging_message(params).await {
            tracing::debug!("could not relay a log message: {e}");
        }
    }
}

/// One request for the client, sent by [`Pump::run`] from the task that
/// serves the client's `execute`.
struct Ask {
    request: ServerRequest,
    answer: oneshot::Sender<Result<ClientResult, ErrorData>>,
}

/// Whether a request waits on a person or the client's model (elicitation,
/// approvals, sampling) or is answered by the client program itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A person or a model: the deadline pauses, a waiting place is taken,
    /// `max_wait_secs` bounds it.
    Person,
    /// The client program: [`QUICK_ASK`] bounds it; the deadline runs on.
    Program,
}

/// The client side of one execution.
pub struct Upstream {
    client: Arc<ClientLink>,
    /// What this execution's client can answer: the session's capabilities,
    /// or, for an execution whose questions are parked (a task, or a client
    /// of the 2026 era), those its request declared.
    caps: Caps,
    progress: Option<Arc<Progress>>,
    asks: mpsc::Sender<Ask>,
    deadline: Arc<Deadline>,
    relay: Arc<Relay>,
}

/// Sends an execution's requests to its client; see [`Pump::run`].
pub struct Pump {
    peer: Peer<RoleServer>,
    asks: mpsc::Receiver<Ask>,
}

/// Requests of one execution queued for its client at once: more would
/// wait for a waiting place anyway.
const ASK_QUEUE: usize = 16;

impl Upstream {
    /// The client side of an execution of `client`'s, whose `execute`
    /// carried `progress` as its progress token; with the pump that must
    /// run beside the execution, on the task serving the request.
    pub fn new(
        client: Arc<ClientLink>,
        progress: Option<ProgressToken>,
        relay: Arc<Relay>,
    ) -> (Arc<Upstream>, Pump) {
        let caps = client.caps;
        Upstream::with(client, progress, relay, caps, Deadline::default())
    }

    /// The client side of an execution whose questions are parked for its
    /// client to answer later (see [`Pump::park`]): `caps` are what the
    /// request declared, and `limit`, if given, replaces the sandbox's time
    /// limit (a task's own).
    pub fn parked(
        client: Arc<ClientLink>,
        progress: Option<ProgressToken>,
        relay: Arc<Relay>,
        caps: Caps,
        limit: Option<Duration>,
    ) -> (Arc<Upstream>, Pump) {
        let deadline = limit.map(Deadline::with_limit).unwrap_or_default();
        Upstream::with(client, progress, relay, caps, deadline)
    }

    fn with(
        client: Arc<ClientLink>,
        progress: Option<ProgressToken>,
        relay: Arc<Relay>,
        caps: Caps,
        deadline: Deadline,
    ) -> (Arc<Upstream>, Pump) {
        let (tx, rx) = mpsc::channel(ASK_QUEUE);
        let pump = Pump {
            peer: client.peer.clone(),
            asks: rx,
        };
        let progress = progress.map(|token| Progress::start(client.peer.clone(), token));
        let up = Upstream {
            client,
            caps,
            progress,
            asks: tx,
            deadline: Arc::new(deadline),
            relay,
        };
        (Arc::new(up), pump)
    }

    /// The client.
    pub fn client(&self) -> &Arc<ClientLink> {
        &self.client
    }

    /// What the execution's client can answer.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// The execution's deadline, paused while it waits on its client.
    pub fn deadline(&self) -> &Arc<Deadline> {
        &self.deadline
    }

    /// Reports progress on the client's token, if it sent one: `value` is
    /// the script's own `(done, total)`, `None` for a step of a downstream
    /// call. Coalesced (see [`super::progress`]).
    pub fn progress(&self, value: Option<(f64, Option<f64>)>, message: String) {
        if let Some(p) = &self.progress {
            p.report(value, message);
        }
    }

    /// Sends the progress still pending, before the execution answers.
    pub async fn finish(&self) {
        if let Some(p) = &self.progress {
            p.finish(&self.client.peer).await;
        }
    }

    /// Sends `request` to the client and waits for the answer, as `kind`
    /// says; an error is what the asking server (or the script) is told.
    pub async fn ask(
        &self,
        request: ServerRequest,
        kind: Asked,
    ) -> Result<ClientResult, ErrorData> {
        let (_place, _paused, limit) = match kind {
            Asked::Program => (None, None, QUICK_ASK),
            Asked::Person => {
                let limits = self.relay.limits();
                let place = self.relay.wait_place().ok_or_else(|| {
                    ErrorData::new(
                        RpcCode::INTERNAL_ERROR,
                        format!(
                            "quickforge: {} executions already wait on their clients (max_waiting); try again shortly",
                            limits.max_waiting
                        ),
                        None,
                    )
                })?;
                let left = wait_left(&limits, self.deadline.waited()).ok_or_else(|| {
                    ErrorData::new(
                        RpcCode::INTERNAL_ERROR,
                        format!(
                            "quickforge: this execution spent its {} s of waiting on the client (max_wait_secs)",
                            limits.max_wait.as_secs()
                        ),
                        None,
                    )
                })?;
                (Some(place), Some(self.deadline.pause()), left)
            }
        };
        let (tx, rx) = oneshot::channel();
        let ask = Ask {
            request,
            answer: tx,
        };
        let gone = || {
            ErrorData::new(
                RpcCode::INTERNAL_ERROR,
                "quickforge: the execution this request belongs to has ended",
                None,
            )
        };
        self.asks.send(ask).await.map_err(|_| gone())?;
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(gone()),
            Err(_) => Err(ErrorData::new(
                RpcCode::INTERNAL_ERROR,
                format!(
                    "quickforge: the client did not answer within {} s",
                    limit.as_secs()
                ),
                None,
            )),
        }
    }
}

impl Pump {
    /// Sends the execution's requests to its client and hands back the
    /// answers, several at once; never returns. It must be polled by the
    /// task serving the client's request, so that rmcp sends each request
    /// on that request's own stream. A request whose asker went away (the
    /// execution ended, the wait timed out) is cancelled on the client.
    pub async fn run(mut self) {
        let mut running = FuturesUnordered::new();
        loop {
            tokio::select! {
                ask = self.asks.recv() => {
                    let Some(ask) = ask else { break };
                    running.push(send(self.peer.clone(), ask));
                }
                Some(()) = running.next(), if !running.is_empty() => {}
            }
        }
        // Every sender is gone: the execution has ended.
        std::future::pending::<()>().await;
    }
}

impl Pump {
    /// Parks the execution's requests in `questions`, for a client that
    /// answers them later (see [`super::questions`]), several at once;
    /// never returns. A question whose asker went away is withdrawn.
    pub async fn park(mut self, questions: Arc<Questions>) {
        let mut running = FuturesUnordered::new();
        loop {
            tokio::select! {
                ask = self.asks.recv() => {
                    let Some(mut ask) = ask else { break };
                    let questions = questions.clone();
                    running.push(async move {
                        if let Some(answer) = questions.ask(ask.request, &mut ask.answer).await {
                            let _ = ask.answer.send(answer);
                        }
                    });
                }
                Some(()) = running.next(), if !running.is_empty() => {}
            }
        }
        std::future::pending::<()>().await;
    }
}

async fn send(peer: Peer<RoleServer>, mut ask: Ask) {
    let handle = match peer
        .send_request_with_option(ask.request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(e) => {
            let _ = ask.answer.send(Err(service_error(e)));
            return;
        }
    };
    let id = handle.id.clone();
    tokio::select! {
        answer = handle.await_response() => {
            let _ = ask.answer.send(answer.map_err(service_error));
        }
        () = ask.answer.closed() => {
            let params = rmcp::model::CancelledNotificationParam::new(
                Some(id),
                Some("the execution that asked has ended or stopped waiting".into()),
            );
            if let Err(e) = peer.notify_cancelled(params).await {
                tracing::debug!("could not cancel a request to the client: {e}");
            }
        }
    }
}

/// A failed request to the client, as the asker is told.
fn service_error(e: rmcp::ServiceError) -> ErrorData {
    match e {
        rmcp::ServiceError::McpError(data) => data,
        other => ErrorData::new(
            RpcCode::INTERNAL_ERROR,
            format!("quickforge could not reach its client: {other}"),
            None,
        ),
    }
}
/// Longest logger name a server gives relayed, in bytes: a name, not a
/// message.
const MAX_LOGGER: usize = 64;

/// A server's `logger` name as the client reads it: redacted (red team
/// round 3 found a GitHub token and an AWS secret there while `data` was
/// redacted), then cleaned of escapes, controls and direction characters.
fn shown_logger(inner: &str) -> String {
    let redacted = quickforge_core::shown::text_to_client(inner, MAX_LOGGER);
    crate::manifest::sanitize::clean_text(&redacted, MAX_LOGGER).text
}
