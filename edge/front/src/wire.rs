//! Reading the incoming request and writing the response over `wasi:http`.

use crate::bindings::wasi::http::types::{
    Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use crate::bindings::wasi::io::streams::StreamError;

/// Most bytes `blocking-write-and-flush` takes at once (wasi:io's contract).
const WRITE_CHUNK: usize = 4096;

/// The first value of header `name`, as text.
pub fn header(request: &IncomingRequest, name: &str) -> Option<String> {
    let headers = request.headers();
    let values = headers.get(name);
    values
        .first()
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The whole body, or why not (over `max` bytes, a broken stream).
pub fn read_body(request: IncomingRequest, max: usize) -> Result<Vec<u8>, String> {
    let body = request
        .consume()
        .map_err(|()| "the body was already read".to_string())?;
    let mut buf = Vec::new();
    {
        let stream = body
            .stream()
            .map_err(|()| "the body was already read".to_string())?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => {
                    buf.extend_from_slice(&chunk);
                    if buf.len() > max {
                        return Err(format!("the request body is over {max} bytes"));
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => {
                    return Err("reading the request body failed".into());
                }
            }
        }
    }
    drop(body);
    Ok(buf)
}

/// Sends `value` as `application/json` with `status`.
pub fn json(out: ResponseOutparam, status: u16, value: &serde_json::Value) {
    respond(
        out,
        status,
        &[("content-type", "application/json")],
        value.to_string().as_bytes(),
    );
}

/// Sends a response.
pub fn respond(out: ResponseOutparam, status: u16, headers: &[(&str, &str)], body: &[u8]) {
    let fields = Fields::new();
    for (k, v) in headers {
        let _ = fields.append(k, v.as_bytes());
    }
    let response = OutgoingResponse::new(fields);
    let _ = response.set_status_code(status);
    let Ok(outgoing) = response.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(response));
    if let Ok(stream) = outgoing.write() {
        for chunk in body.chunks(WRITE_CHUNK) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                return;
            }
        }
    }
    let _ = OutgoingBody::finish(outgoing, None);
}
