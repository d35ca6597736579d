//! The streamable-HTTP client of downstream sessions: rmcp's reqwest client,
//! with one addition. When rmcp refuses an oversized answer (an SSE event
//! over the server's `max_response_mb`, or a JSON body over rmcp's fixed
//! 16 MiB) it ends the whole session with a bare "transport closed"; this
//! wrapper notes why first, so the calls that fail name the limit.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use super::reset::ResetCause;

/// rmcp's cap on a JSON (non-SSE) response body, which it does not let
/// callers change.
const RMCP_JSON_LIMIT_MB: usize = 16;

/// rmcp's reqwest client, noting oversized answers in `reset`.
#[derive(Clone)]
pub struct LimitedHttp {
    inner: reqwest::Client,
    reset: ResetCause,
}

type Result<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;
type Events = BoxStream<'static, std::result::Result<Sse, SseError>>;

impl LimitedHttp {
    /// Wraps `inner`; reasons for resets go to `reset`.
    pub fn new(inner: reqwest::Client, reset: ResetCause) -> LimitedHttp {
        LimitedHttp { inner, reset }
    }

    /// Watches `events` for rmcp's "event too large" error.
    fn watch(&self, events: Events, limit: usize) -> Events {
        let this = self.clone();
        events
            .inspect(move |item| {
                if let Err(e) = item
                    && too_large(e)
                {
                    this.reset.oversized(limit);
                }
            })
            .boxed()
    }

    fn checked(
        &self,
        r: Result<StreamableHttpPostResponse>,
        limit: usize,
    ) -> Result<StreamableHttpPostResponse> {
        match r {
            Ok(StreamableHttpPostResponse::Sse(events, sid)) => Ok(
                StreamableHttpPostResponse::Sse(self.watch(events, limit), sid),
            ),
            Err(e @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                self.reset.set(format!(
                    "the server sent a JSON body larger than the HTTP client's fixed limit of {RMCP_JSON_LIMIT_MB} MiB (max_response_mb cannot raise it); the session was reset"
                ));
                Err(e)
            }
            other => other,
        }
    }
}

/// Whether `e` is rmcp's bounded-stream error for an oversized event. The
/// error type is private to rmcp; its message is the stable part.
fn too_large(e: &SseError) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = source {
        if err.to_string().contains("exceeded the maximum size") {
            return true;
        }
        source = err.source();
    }
    false
}

impl StreamableHttpClient for LimitedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        let r = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.checked(r, usize::MAX)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse> {
        let r = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.checked(r, max_sse_event_size)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events> {
        let events = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.watch(events, usize::MAX))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events> {
        let events = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.watch(events, max_sse_event_size))
    }
}
