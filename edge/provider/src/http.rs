//! One HTTP POST over `wasi:http/outgoing-handler`, advanced without
//! blocking so that many can be in flight and one `wasi:io/poll` waits for
//! whichever moves first (what makes `Promise.all` overlap).

use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    FutureIncomingResponse, Headers, IncomingBody, IncomingResponse, Method, OutgoingBody,
    OutgoingRequest, Scheme,
};
use crate::bindings::wasi::io::poll::Pollable;
use crate::bindings::wasi::io::streams::{InputStream, StreamError};
use crate::config::Url;

/// Bytes asked for per read of a response body.
const READ_CHUNK: u64 = 64 * 1024;
/// Most bytes `blocking-write-and-flush` takes at once (wasi:io's contract).
const WRITE_CHUNK: usize = 4096;

/// A finished exchange.
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// `Mcp-Session-Id`, if the server set one.
    pub session: Option<String>,
    /// `Content-Type`, lowercased.
    pub content_type: String,
    /// The whole body.
    pub body: Vec<u8>,
}

/// Where an exchange is.
enum Stage {
    Waiting(FutureIncomingResponse),
    // Field order is drop order: the stream before its body, the body
    // before its response (wasi:http's child resources).
    Reading {
        stream: InputStream,
        _body: IncomingBody,
        _response: IncomingResponse,
        status: u16,
        session: Option<String>,
        content_type: String,
        buf: Vec<u8>,
    },
    Done,
}

/// One request in flight.
pub struct Exchange {
    stage: Stage,
    max_body: usize,
}

/// What advancing an exchange gave.
pub enum Step {
    /// Not finished; this pollable becomes ready when it can move again.
    Blocked(Pollable),
    /// Finished, or failed with a message (no URL or credential in it).
    Done(Result<Reply, String>),
}

impl Exchange {
    /// Sends `body` to `url` as a JSON POST with `headers`.
    pub fn post(
        url: &Url,
        headers: &[(String, String)],
        body: &[u8],
        max_body: usize,
    ) -> Result<Exchange, String> {
        let fields = Headers::new();
        let mut all: Vec<(&str, &str)> = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        all.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        for (k, v) in all {
            fields
                .append(&k.to_ascii_lowercase(), v.as_bytes())
                .map_err(|e| format!("header {k:?} refused: {e:?}"))?;
        }
        let request = OutgoingRequest::new(fields);
        let _ = request.set_method(&Method::Post);
        let _ = request.set_scheme(Some(&if url.https {
            Scheme::Https
        } else {
            Scheme::Http
        }));
        request
            .set_authority(Some(&url.authority))
            .map_err(|()| "the server's host is not valid".to_string())?;
        request
            .set_path_with_query(Some(&url.path))
            .map_err(|()| "the server's path is not valid".to_string())?;
        let outgoing = request
            .body()
            .map_err(|()| "the request body was taken twice".to_string())?;
        let future = outgoing_handler::handle(request, None)
            .map_err(|e| format!("the runtime refused the request: {e:?}"))?;
        {
            let stream = outgoing
                .write()
                .map_err(|()| "the request body stream was taken twice".to_string())?;
            for chunk in body.chunks(WRITE_CHUNK) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| format!("sending the request failed: {e:?}"))?;
            }
        }
        OutgoingBody::finish(outgoing, None)
            .map_err(|e| format!("sending the request failed: {e:?}"))?;
        Ok(Exchange {
            stage: Stage::Waiting(future),
            max_body,
        })
    }

    /// Moves the exchange as far as it can go without blocking.
    pub fn advance(&mut self) -> Step {
        loop {
            match &mut self.stage {
                Stage::Waiting(future) => match future.get() {
                    None => return Step::Blocked(future.subscribe()),
                    Some(Ok(Ok(response))) => {
                        let status = response.status();
                        let headers = response.headers();
                        let header = |name: &str| {
                            headers
                                .get(name)
                                .first()
                                .map(|v| String::from_utf8_lossy(v).into_owned())
                        };
                        let session = header("mcp-session-id");
                        let content_type = header("content-type")
                            .unwrap_or_default()
                            .to_ascii_lowercase();
                        drop(headers);
                        let Ok(body) = response.consume() else {
                            return self.finish(Err("the response body was taken twice".into()));
                        };
                        let Ok(stream) = body.stream() else {
                            return self.finish(Err("the response body was taken twice".into()));
                        };
                        self.stage = Stage::Reading {
                            stream,
                            _body: body,
                            _response: response,
                            status,
                            session,
                            content_type,
                            buf: Vec::new(),
                        };
                    }
                    Some(Ok(Err(e))) => {
                        return self.finish(Err(format!("the request failed: {}", code(&e))));
                    }
                    Some(Err(())) => {
                        return self.finish(Err("the response was already taken".into()));
                    }
                },
                Stage::Reading { stream, buf, .. } => match stream.read(READ_CHUNK) {
                    Ok(bytes) if bytes.is_empty() => return Step::Blocked(stream.subscribe()),
                    Ok(bytes) => {
                        buf.extend_from_slice(&bytes);
                        if buf.len() > self.max_body {
                            let max = self.max_body;
                            return self.finish(Err(format!(
                                "the server's response is over the {max}-byte limit"
                            )));
                        }
                    }
                    Err(StreamError::Closed) => {
                        let Stage::Reading {
                            status,
                            session,
                            content_type,
                            buf,
                            ..
                        } = std::mem::replace(&mut self.stage, Stage::Done)
                        else {
                            unreachable!()
                        };
                        return Step::Done(Ok(Reply {
                            status,
                            session,
                            content_type,
                            body: buf,
                        }));
                    }
                    Err(StreamError::LastOperationFailed(_)) => {
                        return self.finish(Err("reading the response failed".into()));
                    }
                },
                Stage::Done => return Step::Done(Err("the exchange already finished".into())),
            }
        }
    }

    fn finish(&mut self, result: Result<Reply, String>) -> Step {
        self.stage = Stage::Done;
        Step::Done(result)
    }
}

/// A short name for a `wasi:http` error code, without any address in it.
fn code(e: &crate::bindings::wasi::http::types::ErrorCode) -> String {
    let text = format!("{e:?}");
    text.split(['(', ' ', '{'])
        .next()
        .unwrap_or("error")
        .to_string()
}
