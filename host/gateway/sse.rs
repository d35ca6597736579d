//! The legacy HTTP+SSE client transport (MCP 2024-11-05), which rmcp no
//! longer ships: GET the URL as an event stream, wait for the `endpoint`
//! event naming where to POST, then POST every client message there and read
//! the server's messages from `message` events.
//!
//! Used only as the fallback of the specification's backwards-compatibility
//! rule, when a server refuses streamable HTTP.

use std::borrow::Cow;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::reset::ResetCause;

/// Messages buffered between the event stream and the client. The reader
/// waits when it is full, which slows a flooding server rather than growing
/// the gateway's memory.
const CHANNEL: usize = 64;

/// Longest error body quoted from a failed request.
const MAX_BODY: usize = 512;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// The request itself failed.
    #[error("HTTP request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with an error status.
    #[error("HTTP {0}: {1}")]
    Status(reqwest::StatusCode, String),
    /// The `endpoint` event was unusable.
    #[error("bad `endpoint` event: {0}")]
    BadEndpoint(String),
    /// The stream ended before the `endpoint` event.
    #[error("the event stream closed before its `endpoint` event; is this an MCP SSE endpoint?")]
    NoEndpoint,
    /// The event stream broke.
    #[error("event stream error: {0}")]
    Stream(String),
}

/// `resp` if its status is a success, else the status and the start of
/// the body as an error.
async fn success(resp: reqwest::Response) -> Result<reqwest::Response, SseError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    // Read no more of the body than is quoted: an error page can be huge.
    let mut body = Vec::new();
    let mut chunks = resp.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            break;
        }
    }
    Err(SseError::Status(
        status,
        crate::redact::redact_clip(&String::from_utf8_lossy(&body), MAX_BODY),
    ))
}

/// `stream` failing as soon as one event (the bytes between blank lines)
/// grows past `limit` bytes, before the event parser buffers it whole. The
/// reason is also left in `reset`, so calls name the limit.
fn bounded_events(
    stream: impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>>,
    limit: usize,
    reset: ResetCause,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    let mut since_blank = 0usize;
    let mut at_line_start = false;
    stream.map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for &b in chunk.iter() {
            match b {
                b'\n' if at_line_start => since_blank = 0,
                b'\n' => at_line_start = true,
                b'\r' => {}
                _ => {
                    at_line_start = false;
                    since_blank += 1;
                    if since_blank > limit {
                        return Err(std::io::Error::other(reset.oversized(limit)));
                    }
                }
            }
        }
        Ok(chunk)
    })
}

/// A connected legacy SSE session.
pub struct SseTransport {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for its `endpoint` event.
    pub async fn connect(
        http: reqwest::Client,
        url: &str,
        headers: HeaderMap,
        server: &str,
        max_event: usize,
        reset: ResetCause,
    ) -> Result<SseTransport, SseError> {
        let resp = http
            .get(url)
            .headers(headers.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .send()
            .await?;
        let resp = success(resp).await?;
        let base = resp.url().clone();
        let mut events =
            SseStream::from_bytes_stream(bounded_events(resp.bytes_stream(), max_event, reset));
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let raw = event.data.unwrap_or_default();
                    let url = base
                        .join(raw.trim())
                        .map_err(|e| SseError::BadEndpoint(format!("{raw:?}: {e}")))?;
                    // The specification requires the same origin; anything
                    // else would send the session's messages elsewhere.
                    if url.origin() != base.origin() {
                        return Err(SseError::BadEndpoint(format!(
                            "{url} is not on the origin of {base}"
                        )));
                    }
                    break url;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(SseError::Stream(e.to_string())),
                None => return Err(SseError::NoEndpoint),
            }
        };
        let (tx, rx) = mpsc::channel(CHANNEL);
        let server = server.to_string();
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::warn!(server = %server, "SSE stream error: {e}");
                        break;
                    }
                };
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                let Some(data) = event.data else { continue };
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(server = %server, "ignored a malformed SSE message: {e}")
                    }
                }
            }
        });
        Ok(SseTransport {
            http,
            endpoint,
            headers,
            rx,
            reader,
        })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        "legacy-sse".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            success(request.send().await?).await?;
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.rx.close();
        Ok(())
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
