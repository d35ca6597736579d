//! The accept loop of the HTTP listeners (`serve --http` and
//! `[observability] listen`), with the limits `axum::serve` cannot set
//! (`[http]`; red team, issue 38 item 7):
//!
//! - **header read**: a connection must deliver a request's headers within
//!   `header_read_timeout` of when the server starts waiting for them, else
//!   it is closed (hyper's HTTP/1 timer). The timer also runs while a
//!   kept-alive connection waits for its next request, so an idle
//!   connection is closed after the same time; clients open a new one.
//! - **body read**: a request's whole body must arrive within
//!   `body_read_timeout` of its headers, else the answer is 408 and the
//!   connection closes ([`body_deadline`], the outermost layer, so no
//!   middleware that reads the body can be held by a stalled upload).
//! - **connection cap**: at most `max_connections` connections are served
//!   at once. One more is accepted, answered 503 with `Retry-After` (as
//!   far as the socket takes it without waiting) and closed at once. Not
//!   left waiting: a waiting connection still holds a descriptor, which is
//!   what the cap protects, and a client told at once retries sooner than
//!   one whose connection sits unanswered. The header and body timeouts
//!   are what free the slots of slow clients.
//!
//! HTTP/1.1 only: what MCP clients speak over plain HTTP (`axum::serve`
//! would also take HTTP/2 with prior knowledge, which has no header-read
//! timer). Shutdown is graceful as `axum::serve`'s is: when `shutdown`
//! resolves, no new connection is accepted, every open one finishes its
//! request in flight and closes, and [`serve`] returns when all have.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, BodyDataStream, HttpBody};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::HttpLimits;

/// What a connection past the cap is sent before it is closed.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 21\r\n\
\r\n\
too many connections\n";

/// How often, at most, the log says that connections are being refused
/// for the cap: once is enough to see it, and a flood of refusals must not
/// become a flood of log lines.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` under `limits` until `shutdown` resolves
/// and every open connection has closed.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    let body_limit = limits.body_read_timeout;
    let router = router.layer(axum::middleware::from_fn(move |req, next| {
        body_deadline(body_limit, req, next)
    }));
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let connections = TaskTracker::new();
    let stop = CancellationToken::new();
    let mut shutdown = pin!(shutdown);
    let mut refused = Refusals::default();
    let mut next_connection = 0u64;
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refused.note(limits.max_connections);
            turn_away(stream);
            continue;
        };
        // numbered, so that sessionless requests have a fairness key
        // without [auth] (crate::session::SlotShares)
        next_connection += 1;
        let connection = crate::session::ConnectionId(next_connection);
        let service = TowerToHyperService::new(router.clone().layer(axum::Extension(connection)));
        let stop = stop.clone();
        let header_read = limits.header_read_timeout;
        connections.spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(header_read);
            let mut conn = pin!(http.serve_connection(TokioIo::new(stream), service));
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
            };
            if let Err(e) = result {
                tracing::debug!("HTTP connection ended: {e}");
            }
        });
    }
    drop(listener);
    stop.cancel();
    connections.close();
    connections.wait().await;
}

/// Answers a connection past the cap with [`TOO_MANY`], as far as the
/// socket's buffer takes it without waiting, and closes it.
fn turn_away(stream: TcpStream) {
    let _ = stream.try_write(TOO_MANY);
    drop(stream);
}

/// Counts connections refused for the cap between two log lines.
#[derive(Default)]
struct Refusals {
    since_logged: u64,
    logged_at: Option<tokio::time::Instant>,
}

impl Refusals {
    fn note(&mut self, cap: usize) {
        self.since_logged += 1;
        let now = tokio::time::Instant::now();
        if self
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= REFUSAL_LOG_EVERY)
        {
            tracing::warn!(
                refused = self.since_logged,
                "refusing HTTP connections: {cap} are open (http.max_connections)"
            );
            self.since_logged = 0;
            self.logged_at = Some(now);
        }
    }
}

/// As `axum::serve` does: errors of one connection are skipped; others
/// (out of descriptors, most often) are logged and the loop pauses a
/// second rather than spin.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!("could not accept an HTTP connection: {e}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// A request body that did not arrive within the body-read timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTimeout(Duration);

/// Middleware: the request's body must arrive within `limit`. Past it, the
/// body fails for whoever reads it (so the reader lets go at once), and
/// the answer, whatever the reader made of the failure, is 408 with
/// `Connection: close`.
async fn body_deadline(limit: Duration, req: Request, next: Next) -> Response {
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let (parts, body) = req.into_parts();
    let body = Body::from_stream(Deadline {
        inner: body.into_data_stream(),
        sleep: Box::pin(tokio::time::sleep(limit)),
        limit,
        expired: expired.clone(),
    });
    let response = next.run(Request::from_parts(parts, body)).await;
    if !expired.load(Ordering::Acquire) {
        return response;
    }
    tracing::warn!("answered 408: a request body did not arrive within {limit:?}");
    (
        StatusCode::REQUEST_TIMEOUT,
        [(header::CONNECTION, "close")],
        format!(
            "the request body did not arrive within {} s (http.body_read_timeout_secs)\n",
            limit.as_secs()
        ),
    )
        .into_response()
}

/// A body's data that fails with [`BodyTimeout`] once `sleep` ends.
struct Deadline {
    inner: BodyDataStream,
    sleep: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
    expired: Arc<AtomicBool>,
}

impl Stream for Deadline {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // What has arrived is delivered first, even at the deadline.
        if let Poll::Ready(item) = this.inner.poll_next_unpin(cx) {
            return Poll::Ready(item);
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(axum::Error::new(BodyTimeout(this.limit)))));
        }
        Poll::Pending
    }
}
