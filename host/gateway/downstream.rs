//! One live connection to one downstream MCP server: spawning or dialing it,
//! the rmcp client session on top, and the calls a script makes through it.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientRequest, ReadResourceRequest, ReadResourceRequestParams, ServerResult};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::convert;
use super::era::{self, EraMemory};
use super::handler::{Handler, RefreshSet};
use super::limited_http::LimitedHttp;
use super::reset::ResetCause;
use super::sse::SseTransport;
use super::{INHERITED_ENV, ServerConfig, Transport};
use crate::error::{ErrorCode, ForgeError};
use crate::relay::{Relay, Tracked, Upstream};

/// Room above a server's `max_response_mb` for rmcp's own line limit, so
/// quickforge's check (which names the limit) always fires first.
const LINE_SLACK: usize = 64 * 1024;

/// Reads a stdio server's stdout, failing the session with a message that
/// names the limit as soon as one line (one JSON-RPC message) grows past
/// `limit` bytes, before the gateway's memory follows it.
struct LimitedLines<R> {
    inner: R,
    limit: usize,
    since_newline: usize,
    reset: ResetCause,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for LimitedLines<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            let this = &mut *self;
            for &b in &buf.filled()[before..] {
                if b == b'\n' {
                    this.since_newline = 0;
                } else {
                    this.since_newline += 1;
                    if this.since_newline > this.limit {
                        let why = this.reset.oversized(this.limit);
                        return std::task::Poll::Ready(Err(std::io::Error::other(why)));
                    }
                }
            }
        }
        polled
    }
}

/// Longest stderr line of a server kept in the gateway's log, bytes.
pub const MAX_STDERR_LINE: usize = 4096;

/// A live session with one server.
pub struct Connection {
    /// Sends requests.
    pub peer: Peer<RoleClient>,
    /// What the server said about itself at initialize.
    pub instructions: Option<String>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// Why the session was torn down by quickforge itself, if it was.
    reset: ResetCause,
    cancel: std::sync::Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
    child: Option<ChildGuard>,
    /// The session's handler: where the requests a script has in flight
    /// here are known (its relay), so that what the server sends about them
    /// finds the script's client, and what relays the questions of an
    /// `input_required` answer.
    pub(super) handler: Handler,
    /// Tools this server refused to run without 2025-11-25 task
    /// augmentation; they are called as tasks from then on (see
    /// `tool_call::needs_task`).
    pub(super) task_tools: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Connection {
    /// Resolves when the session has ended (the server exited, closed the
    /// stream, or [`Connection::close`] was called).
    pub async fn closed(&self) {
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            let _ = service.waiting().await;
        } else {
            std::future::pending::<()>().await;
        }
    }

    /// Ends the session and, for a stdio server, its process group.
    pub fn close(&self) {
        if let Some(cancel) = self.cancel.lock().ok().and_then(|mut c| c.take()) {
            cancel.cancel();
        }
        if let Some(child) = &self.child {
            child.kill();
        }
    }

    /// Ends the session politely: closes it (a stdio server sees its stdin
    /// close), gives the server `grace` to exit, then kills its process
    /// group, and reaps the child either way.
    pub async fn shutdown(&self, grace: Duration) {
        if let Some(cancel) = self.cancel.lock().ok().and_then(|mut c| c.take()) {
            cancel.cancel();
        }
        let Some(guard) = &self.child else { return };
        let child = guard.child.lock().ok().and_then(|mut c| c.take());
        let Some(mut child) = child else { return };
        if tokio::time::timeout(grace, child.0.wait()).await.is_err() {
            child.kill();
            let _ = child.0.wait().await;
        } else {
            // The leader exited; grandchildren it left behind go too.
            child.kill();
        }
        // With the whole group gone the pipe reaches its end: what is left
        // in it goes to the log, unless that takes longer than the bound.
        let stderr = guard.stderr.lock().ok().and_then(|mut s| s.take());
        if let Some(task) = stderr {
            let _ = tokio::time::timeout(STDERR_FLUSH, task).await;
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// Kills a stdio server's whole process group (npx, uvx and shell wrappers
/// start the real server as a grandchild) when the connection goes.
struct ChildGuard {
    /// Taken by [`Connection::shutdown`] to reap it; dropped otherwise
    /// (its group is killed, and tokio reaps the leader in the background).
    child: std::sync::Mutex<Option<GroupChild>>,
    /// The task copying its stderr to the log, awaited by
    /// [`Connection::shutdown`] so its last lines and drop count are logged
    /// before the gateway exits.
    stderr: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl ChildGuard {
    /// Kills the group now, unless [`Connection::shutdown`] holds the child
    /// (it kills the group itself, and so does dropping it).
    fn kill(&self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(child) = child.as_mut() {
            child.kill();
        }
    }
}

/// A stdio server spawned by process-wrap as the leader of a process group of
/// its own (on Unix), whose whole group is killed when it is dropped.
/// process-wrap's `KillOnDrop` is tokio's `kill_on_drop`, which signals the
/// leader alone; a wrapper's grandchild would outlive it.
struct GroupChild(Box<dyn ChildWrapper>);

impl GroupChild {
    /// Sends SIGKILL to the whole group (on Unix; elsewhere to the child). A
    /// group already gone is no error worth a line.
    fn kill(&mut self) {
        if let Err(e) = self.0.start_kill() {
            tracing::debug!("could not kill a server's process group: {e}");
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The transport to a stdio server's pipes, read through [`LimitedLines`].
type StdioTransport = AsyncRwTransport<
    RoleClient,
    LimitedLines<tokio::process::ChildStdout>,
    tokio::process::ChildStdin,
>;

/// Starts a stdio server as the leader of its own process group, its stderr
/// copied to the log, and returns the transport on its pipes.
fn spawn(config: &ServerConfig) -> Result<(StdioTransport, ChildGuard, ResetCause), String> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &config.transport
    else {
        return Err("not a stdio server".into());
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).env_clear();
    for key in INHERITED_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut cmd = CommandWrap::from(cmd);
    cmd.wrap(KillOnDrop);
    #[cfg(unix)]
    cmd.wrap(process_wrap::tokio::ProcessGroup::leader());

    let mut child = GroupChild(
        cmd.spawn()
            .map_err(|e| format!("could not start {command:?}: {e}"))?,
    );
    let (Some(stdout), Some(stdin)) = (child.0.stdout().take(), child.0.stdin().take()) else {
        return Err("the child's stdio pipes were not available".into());
    };
    let stderr = child
        .0
        .stderr()
        .take()
        .map(|stderr| tokio::spawn(drain_stderr(config.name.clone(), stderr)));
    let guard = ChildGuard {
        child: std::sync::Mutex::new(Some(child)),
        stderr: std::sync::Mutex::new(stderr),
    };
    let reset = ResetCause::default();
    let limit = config.max_response_bytes;
    let stdout = LimitedLines {
        inner: stdout,
        limit,
        since_newline: 0,
        reset: reset.clone(),
    };
    let transport =
        AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(limit + LINE_SLACK);
    Ok((transport, guard, reset))
}

/// Connects to `config`'s server and completes the MCP handshake, in the
/// server's era (see [`era`]): `era` remembers what the first connect
/// learned, so a legacy server is not probed again on every reconnect.
pub async fn connect(
    config: &ServerConfig,
    refresh: Arc<RefreshSet>,
    relay: Arc<Relay>,
    era: &EraMemory,
) -> Result<Connection, String> {
    let handler = Handler {
        server: config.name.as_str().into(),
        refresh,
        relay,
        sampling: config.sampling,
        roots: config.roots.clone().into(),
    };
    match &config.transport {
        Transport::Stdio { command, .. } => {
            let (transport, guard, reset) = spawn(config)?;
            match era::handshake(handler.clone(), transport, era).await {
                Ok(service) => Ok(finish(service, Some(guard), reset)),
                Err(e) if era.legacy() => {
                    Err(format!("MCP handshake with {command:?} failed: {e}"))
                }
                Err(probe) => {
                    // The probe broke the session (the server closed it on an
                    // unknown method, or speaks no revision offered): a fresh
                    // process gets the 2025 handshake alone.
                    drop(guard);
                    tracing::debug!(server = %config.name, "server/discover failed ({probe}); trying initialize");
                    let (transport, guard, reset) = spawn(config)?;
                    let service = era::initialize(handler, transport, era)
                        .await
                        .map_err(|e| {
                            format!("MCP handshake with {command:?} failed: {e} (and server/discover: {probe})")
                        })?;
                    Ok(finish(service, Some(guard), reset))
                }
            }
        }
        Transport::Http { url, headers } => {
            let http = http_client()?;
            let reset = ResetCause::default();
            let mut custom = HashMap::new();
            let mut header_map = HeaderMap::new();
            for (k, v) in headers {
                let name = HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| format!("header {k:?}: {e}"))?;
                let value = HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
                custom.insert(name.clone(), value.clone());
                header_map.insert(name, value);
            }
            let streamable = || {
                StreamableHttpClientTransport::with_client(
                    LimitedHttp::new(http.clone(), reset.clone()),
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom.clone())
                        .reinit_on_expired_session(true)
                        .max_sse_event_size(config.max_response_bytes),
                )
            };
            let mut attempt = era::handshake(handler.clone(), streamable(), era).await;
            if let Err(probe) = &attempt
                && !era.legacy()
                && !refuses_streamable_http(probe)
            {
                // As on stdio: the probe failed in a way rmcp does not fall
                // back from; a fresh connection gets `initialize` alone.
                tracing::debug!(server = %config.name, "server/discover failed ({probe}); trying initialize");
                attempt = era::initialize(handler.clone(), streamable(), era).await;
            }
            match attempt {
                Ok(service) => Ok(finish(service, None, reset.clone())),
                Err(e) if refuses_streamable_http(&e) => {
                    tracing::info!(server = %config.name, "no streamable HTTP ({e}); trying legacy HTTP+SSE");
                    let sse = SseTransport::connect(
                        http,
                        url,
                        header_map,
                        &config.name,
                        config.max_response_bytes,
                        reset.clone(),
                    )
                    .await
                    .map_err(|sse| {
                        format!("neither streamable HTTP ({e}) nor HTTP+SSE ({sse}) worked")
                    })?;
                    // HTTP+SSE predates the 2026 era: `initialize` alone.
                    let service = era::initialize(handler, sse, era)
                        .await
                        .map_err(|e| format!("MCP handshake over HTTP+SSE failed: {e}"))?;
                    Ok(finish(service, None, reset))
                }
                Err(e) => Err(format!(
                    "MCP handshake over streamable HTTP failed: {e}{}",
                    redirect_hint(&e)
                )),
            }
        }
    }
}

fn finish(
    service: RunningService<RoleClient, Handler>,
    child: Option<ChildGuard>,
    reset: ResetCause,
) -> Connection {
    let instructions = service.peer_info().and_then(|i| i.instructions.clone());
    let handler = service.service().clone();
    Connection {
        handler,
        peer: service.peer().clone(),
        instructions,
        cancel: std::sync::Mutex::new(Some(service.cancellation_token())),
        service: tokio::sync::Mutex::new(Some(service)),
        child,
        reset,
        task_tools: std::sync::Mutex::default(),
    }
}

/// Longest a TCP and TLS connect to an HTTP server may take: far above a
/// healthy connect (milliseconds), short enough that an unreachable host
/// fails the attempt well inside the supervisor's connect window.
const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs rustls's ring provider as the process's default, once: every
/// reqwest client quickforge builds (downstream servers, peers) needs it,
/// since reqwest is built without a provider of its own.
pub(crate) fn install_crypto() {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The HTTP client for downstream servers: rustls with the ring provider.
fn http_client() -> Result<reqwest::Client, String> {
    install_crypto();
    reqwest::Client::builder()
        .connect_timeout(HTTP_CONNECT_TIMEOUT)
        // A redirect could carry the configured credentials to another
        // host; MCP endpoints have no reason to redirect.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("could not build an HTTP client: {e}"))
}

/// Whether a failed streamable-HTTP handshake means "this is not a
/// streamable-HTTP endpoint": a 4xx answer to the initialize POST, or a
/// non-MCP content type. The specification then says to try HTTP+SSE.
/// Under the `Auto` lifecycle the `initialize` POST is the fallback after
/// the discover POST, so the answer to look at is inside
/// `LegacyFallbackFailed`.
fn refuses_streamable_http(err: &rmcp::service::ClientInitializeError) -> bool {
    use rmcp::service::ClientInitializeError as E;
    let E::TransportError { error, .. } = era::decisive(err) else {
        return false;
    };
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::UnexpectedServerResponse(msg)) => msg.starts_with("HTTP 4"),
        Some(StreamableHttpError::UnexpectedContentType(_)) => true,
        _ => false,
    }
}

/// Why a handshake that met a redirect failed, for the server's status: the
/// gateway does not follow redirects (they could carry the configured
/// credentials to another host), so the fix is in the config.
fn redirect_hint(err: &rmcp::service::ClientInitializeError) -> &'static str {
    use rmcp::service::ClientInitializeError as E;
    let E::TransportError { error, .. } = era::decisive(err) else {
        return "";
    };
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::UnexpectedServerResponse(msg)) if msg.starts_with("HTTP 3") => {
            " (the server answered with a redirect, which quickforge does not follow so that \
             credentials cannot travel to another host; set `url` to the final address)"
        }
        _ => "",
    }
}

/// Longest wait at shutdown for a server's remaining stderr to reach the
/// log. At most a pipe's worth (64 KiB) is left once the process group is
/// dead; two seconds reads it many times over, and bounds the exit.
const STDERR_FLUSH: Duration = Duration::from_secs(2);

/// Stderr lines per second a server may put into the gateway's log, and the
/// burst above that rate. A server's start-up banner and an occasional stack
/// trace fit; a server writing in a tight loop would otherwise drown the
/// gateway's own log and cost it CPU. Lines over the rate are counted and
/// reported, not kept.
pub const STDERR_LINES_PER_SEC: u32 = 50;
/// See [`STDERR_LINES_PER_SEC`].
pub const STDERR_BURST: u32 = 200;

/// Reports stderr lines [`drain_stderr`] left out of the log.
fn log_dropped(server: &str, dropped: u64) {
    tracing::warn!(target: "quickforge::downstream", server = %server, "{dropped} stderr lines dropped (over {STDERR_LINES_PER_SEC} lines/s)");
}

/// Most stderr lines logged together as one event, and most bytes: a burst
/// (a YAML dump, a PEM key, a traceback written in one go) reaches the log's
/// writer whole, and the writer redacts each event whole, so a secret over
/// several lines is found; the bound keeps the block, and the wait for it,
/// small.
pub const STDERR_BLOCK_LINES: usize = 64;

/// Copies a server's stderr into the gateway's log, each line cut at
/// [`MAX_STDERR_LINE`] bytes and the rate held to [`STDERR_LINES_PER_SEC`],
/// so a chatty server can grow neither memory nor the log. Lines that
/// arrived together (up to [`STDERR_BLOCK_LINES`]) are logged as one event,
/// which the log's writer redacts whole (the log's one boundary), so a
/// secret spread over lines (a PEM block, a wrapped token, a config dump)
/// goes too. The pipe is always read to the end, so the server never blocks
/// on a full pipe.
async fn drain_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use governor::{Quota, RateLimiter};
    use std::num::NonZeroU32;
    let quota = Quota::per_second(NonZeroU32::new(STDERR_LINES_PER_SEC).unwrap_or(NonZeroU32::MIN))
        .allow_burst(NonZeroU32::new(STDERR_BURST).unwrap_or(NonZeroU32::MIN));
    let limiter = RateLimiter::direct(quota);
    let mut dropped: u64 = 0;
    let mut emit = |block: &mut Vec<String>| {
        let lines: Vec<&str> = block
            .iter()
            .map(|l| l.trim_end())
            .filter(|l| !l.is_empty())
            .collect();
        // each line is one cell of the rate; a block over it loses its tail
        let mut kept = lines.len();
        while kept > 0 {
            let n = NonZeroU32::new(kept as u32).unwrap_or(NonZeroU32::MIN);
            if matches!(limiter.check_n(n), Ok(Ok(()))) {
                break;
            }
            kept /= 2;
        }
        dropped += (lines.len() - kept) as u64;
        if kept > 0 {
            if dropped > 0 && kept == lines.len() {
                log_dropped(&server, dropped);
                dropped = 0;
            }
            let text = lines[..kept].join("\n");
            tracing::info!(target: "quickforge::downstream", server = %server, "{text}");
        }
        block.clear();
    };
    let mut reader = BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let mut block: Vec<String> = Vec::new();
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) if !buf.is_empty() => buf,
            _ => break,
        };
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        let room = MAX_STDERR_LINE.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let consumed = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(consumed);
        if newline.is_some() {
            block.push(String::from_utf8_lossy(&line).into_owned());
            line.clear();
            // the burst is over when nothing more is buffered
            if !reader.buffer().contains(&b'\n') || block.len() >= STDERR_BLOCK_LINES {
                emit(&mut block);
            }
        }
    }
    block.push(String::from_utf8_lossy(&line).into_owned());
    emit(&mut block);
    if dropped > 0 {
        log_dropped(&server, dropped);
    }
}

/// Sends `resources/read` and converts the result.
pub async fn read_resource(
    conn: &Connection,
    server: &str,
    uri: &str,
    timeout: Duration,
) -> Result<Value, ForgeError> {
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
        ReadResourceRequestParams::new(uri),
    ));
    match send(conn, server, request, timeout).await? {
        ServerResult::ReadResourceResult(result) => {
            let json = serde_json::to_value(&result).map_err(|e| {
                ForgeError::new(ErrorCode::InvalidResponse, format!("{server}: {e}"))
            })?;
            Ok(convert::read_result(json))
        }
        other => Err(unexpected(server, &other)),
    }
}

pub(super) fn unexpected(server: &str, result: &ServerResult) -> ForgeError {
    let kind = serde_json::to_value(result)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
        })
        .unwrap_or_default();
    ForgeError::new(
        ErrorCode::InvalidResponse,
        format!("server {server:?} answered with an unexpected result ({kind})"),
    )
}

pub(super) async fn send(
    conn: &Connection,
    server: &str,
    request: ClientRequest,
    timeout: Duration,
) -> Result<ServerResult, ForgeError> {
    send_tracked(conn, server, request, timeout, None)
        .await
        .map(|(result, _)| result)
}

/// A script's request, as the relay tracks it: the tool, and the client of
/// the execution that made it.
#[derive(Clone)]
pub(super) struct Track<'a> {
    pub tool: &'a str,
    pub upstream: Arc<Upstream>,
}

/// [`send`], with the request known to the relay while it is in flight, and
/// after, as long as the caller keeps the returned guard (a task the call
/// started still belongs to the call).
pub(super) async fn send_tracked(
    conn: &Connection,
    server: &str,
    request: ClientRequest,
    timeout: Duration,
    track: Option<Track<'_>>,
) -> Result<(ServerResult, Option<Tracked>), ForgeError> {
    let fail = |e| {
        // A session quickforge reset itself says why.
        match conn.reset.reason() {
            Some(why) if matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_) | ServiceError::Cancelled { .. }) => {
                ForgeError::new(ErrorCode::ResponseTooLarge, format!("server {server:?}: {why}"))
                    .suggest("ask the tool for less (filters, paging), or raise this server's max_response_mb")
            }
            _ => service_error(server, timeout, e),
        }
    };
    let handle = conn
        .peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
        .map_err(fail)?;
    let tracked = track.map(|t| {
        conn.handler.relay.track(
            server,
            t.tool,
            handle.id.clone(),
            handle.progress_token.clone(),
            t.upstream,
        )
    });
    let mut pending = CancelOnDrop {
        peer: Some(conn.peer.clone()),
        id: handle.id.clone(),
    };
    let answer = handle.await_response().await;
    // Answered, or timed out (rmcp has then sent the cancellation itself).
    pending.peer = None;
    answer.map(|a| (a, tracked)).map_err(fail)
}

/// Cancels a request on its server when the call waiting for it is dropped
/// before the answer came: the execution ended (its timeout, its budget) or
/// its client cancelled it. The server hears `notifications/cancelled` and
/// can stop the work; the pipeline's in-flight slot is already free.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let id = self.id.clone();
        runtime.spawn(async move {
            let params = rmcp::model::CancelledNotificationParam::new(
                Some(id),
                Some("the script's execution ended before the answer".into()),
            );
            if let Err(e) = peer.notify_cancelled(params).await {
                tracing::debug!("could not send notifications/cancelled: {e}");
            }
        });
    }
}

/// A failed request as the script sees it.
pub fn service_error(server: &str, timeout: Duration, e: ServiceError) -> ForgeError {
    match e {
        ServiceError::McpError(data) => {
            convert::rpc_error(server, data.code.0.into(), &data.message, data.data)
        }
        ServiceError::Timeout { .. } => {
            ForgeError::call_timeout(server, timeout, "its timeout_secs")
        }
        ServiceError::TransportClosed
        | ServiceError::TransportSend(_)
        | ServiceError::Cancelled { .. } => ForgeError::new(
            ErrorCode::ServerUnavailable,
            format!(
                "the connection to server {server:?} broke during the call: {}",
                quickforge_filters::text::without_type_paths(&e.to_string())
            ),
        )
        .suggest("the gateway reconnects in the background; retry shortly"),
        other => ForgeError::new(
            ErrorCode::DownstreamError,
            format!(
                "server {server:?}: {}",
                quickforge_filters::text::without_type_paths(&other.to_string())
            ),
        ),
    }
}
