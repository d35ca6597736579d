//! Answers in flight on streamable HTTP when the gateway stops.
//!
//! A SIGTERM drains: the executor takes no new executions and waits for
//! the running ones. On HTTP an execution's answer then still has to travel
//! through rmcp's session worker into the POST's response stream, and
//! cancelling the sessions at the moment the last execution ends cut that
//! short: the client got an empty stream for work that had finished (the
//! audit line said `ok`). [`Answers`] counts the POST response bodies still
//! being written, so shutdown waits for them, within a bound, before it
//! cancels the sessions. A client's standalone GET stream is not counted:
//! it stays open for as long as the session does, and the cancellation is
//! what ends it.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use tokio_util::task::TaskTracker;

/// How long shutdown waits, after the drain, for answers still being
/// written. Answers are written within milliseconds of their execution's
/// end; two seconds is ample even on a loaded machine, and bounds the exit
/// when a client stops reading.
pub const ANSWER_GRACE: Duration = Duration::from_secs(2);

/// The POST response bodies still being written.
#[derive(Clone, Default)]
pub struct Answers(TaskTracker);

impl Answers {
    /// Waits until every answer counted now has been written, at most
    /// [`ANSWER_GRACE`]; answers begun later are not waited for.
    pub async fn written(&self) {
        self.0.close();
        if tokio::time::timeout(ANSWER_GRACE, self.0.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "{} HTTP answers still unwritten after {ANSWER_GRACE:?}; closing the sessions",
                self.0.len()
            );
        }
    }
}

/// Middleware: counts each POST's response body until it has been written
/// to the end (or dropped, when the client goes away).
pub async fn count(answers: Answers, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let token = answers.0.token();
    let response = next.run(req).await;
    let (parts, body) = response.into_parts();
    // The token lives in the stream's closure: dropped with the body.
    let stream = body.into_data_stream().map(move |chunk| {
        let _counted = &token;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
