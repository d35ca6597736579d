//! One execution as one line of the log: what arrived, every operation
//! its trail recorded, and how it ended.

use serde::Serialize;

use super::trail::{Operation, SharedTrail, lock, name, sha256};
use super::writer::AuditLog;
use quickforge_core::execution::{Mode, Report, json_len};

/// Longest error message kept in a line, in bytes: the code says what
/// happened, the message the detail.
const MAX_MESSAGE_BYTES: usize = 1024;

/// One execution, as one line of the log.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// Always `"execution"`, so the lines can be picked out of stderr.
    pub event: &'static str,
    /// Random, unique per execution (128 bits, hex).
    pub id: String,
    /// Random, unique per client session (64 bits, hex).
    pub session: &'a str,
    /// The authenticated subject (`[auth]`), as a fingerprint (the first
    /// 64 bits of the SHA-256 of its id, hex): never the id, never a
    /// token. Absent without `[auth]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The gateway replica that ran it (`[cluster] replica`, the host's
    /// name by default).
    pub replica: &'a str,
    /// The stash handle the execution ran with, as a fingerprint (the first
    /// 64 bits of its SHA-256, hex): never the handle, which is a
    /// capability.
    pub stash: String,
    /// When the execution arrived, RFC 3339 UTC with milliseconds.
    pub timestamp: String,
    /// `search`, `execute`, or `direct` (a direct tool call: its code
    /// fields then describe the tool's listed name).
    pub operation: Mode,
    /// The W3C trace id the execution ran in (the client's, from the
    /// request's `traceparent`, or a fresh one), 32 hex digits, to join
    /// this line to the traces of the client and the downstream servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// SHA-256 (hex) of the code exactly as received.
    pub code_sha256: String,
    /// Size of the code, in bytes.
    pub code_bytes: u64,
    /// The start of the code, redacted, at most `preview_bytes`.
    pub code_preview: String,
    /// Every operation attempted, in order.
    pub operations: Vec<Operation>,
    /// Operations beyond `max_operations`, counted, not listed.
    pub operations_dropped: u64,
    /// Wall time from arrival to answer, in milliseconds.
    pub duration_ms: f64,
    /// Part of `duration_ms` spent waiting on the client (a person
    /// answering an elicitation or an approval, the client's model
    /// sampling), which the execution's time limit does not count.
    pub waited_ms: f64,
    /// Part of `duration_ms` spent waiting for a free execution slot of
    /// the sandbox (`max_concurrent`); absent for an execution refused
    /// before it queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_ms: Option<f64>,
    /// `ok`, `error`, or `cancelled` (the request was cancelled, or the
    /// client went away, before the execution finished).
    pub outcome: &'static str,
    /// The error kind of a failed execution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::error::ErrorKind>,
    /// The code of the `ForgeError` that ended it, if one did (redacted
    /// and bounded: a script can throw a code of its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The error message, redacted and bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Bytes of JSON returned to the client, after any cut.
    pub result_bytes: u64,
    /// Fuel consumed (0 when cancelled).
    pub fuel: u64,
    /// Log lines the script wrote, kept and dropped (0 when cancelled).
    pub log_lines: u64,
}

/// An execution as it arrived.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    /// The session it came from.
    pub session: &'a str,
    /// The authenticated subject's id, if any (the line keeps a hash).
    pub subject: Option<&'a str>,
    /// The replica it runs on.
    pub replica: &'a str,
    /// The stash handle it runs with.
    pub stash: &'a crate::state::Handle,
    /// When.
    pub at: std::time::SystemTime,
    /// `search` or `execute`.
    pub mode: Mode,
    /// The code.
    pub code: &'a str,
}

impl AuditLog {
    /// Queues `record` to be written as one line to each destination.
    /// Never blocks: when the queue is full the line is counted as lost.
    pub fn write(&self, record: &Record<'_>) {
        if let Some(observer) = &self.observer {
            observer.observe(record);
        }
        if !self.writes() {
            return;
        }
        let mut line = match serde_json::to_vec(record) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!("could not encode an audit record: {e}");
                return;
            }
        };
        line.push(b'\n');
        self.queue(line);
    }

    /// The line of one execution: `arrival` says what came in, `report`
    /// what it produced (`None`: it was cancelled before it finished, as
    /// when the client cancels the request or goes away), `trail` the
    /// operations the sandbox recorded; the trail began when the execution
    /// arrived, so its age is the time to the answer.
    pub fn record<'a>(
        &self,
        arrival: &Arrival<'a>,
        report: Option<&Report>,
        trail: &SharedTrail,
    ) -> Record<'a> {
        let (operations, operations_dropped, took) = {
            let trail = lock(trail);
            let (operations, dropped) = trail.snapshot();
            (operations, dropped, trail.elapsed())
        };
        let (outcome, error_kind, error_code, error, result_bytes) = match report.map(|r| &r.result)
        {
            None => ("cancelled", None, None, None, 0),
            Some(Ok(value)) => ("ok", None, None, None, json_len(value) as u64),
            // The code of an uncaught ForgeError may be the script's own
            // invention: bounded and redacted like any other name.
            Some(Err(e)) => (
                "error",
                Some(e.kind),
                e.forge.as_ref().map(|f| name(f.code.as_str())),
                Some(quickforge_core::shown::to_audit(
                    &e.message,
                    MAX_MESSAGE_BYTES,
                )),
                0,
            ),
        };
        Record {
            event: "execution",
            id: random_id(16),
            session: arrival.session,
            subject: arrival.subject.map(crate::auth::Subject::fingerprint),
            replica: arrival.replica,
            stash: arrival.stash.fingerprint(),
            timestamp: chrono::DateTime::<chrono::Utc>::from(arrival.at)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            operation: arrival.mode,
            trace_id: crate::trace::current_trace_id(),
            // Nobody reads these when only the observer sees the record:
            // no hashing and redacting of the code then.
            code_sha256: if self.writes() {
                sha256(arrival.code)
            } else {
                String::new()
            },
            code_bytes: arrival.code.len() as u64,
            code_preview: if self.writes() {
                preview(arrival.code, self.preview_bytes)
            } else {
                String::new()
            },
            operations,
            operations_dropped,
            duration_ms: took.as_secs_f64() * 1000.0,
            waited_ms: report.map_or(0.0, |r| r.stats.waited_micros as f64 / 1000.0),
            queued_ms: report.and_then(|r| r.stats.queued_micros.map(|q| q as f64 / 1000.0)),
            outcome,
            error_kind,
            error_code,
            error,
            result_bytes,
            fuel: report.map_or(0, |r| r.stats.fuel),
            log_lines: report.map_or(0, |r| r.logs.len() as u64 + u64::from(r.stats.logs_dropped)),
        }
    }
}

/// A tool integrity event as one line (see `crate::pins`): `tool_changed`
/// when a listing first shows a tool other than the trusted version,
/// `tool_trusted` when a person accepted the version listed.
#[derive(Debug, Serialize)]
struct ToolEvent<'a> {
    event: &'static str,
    /// When, RFC 3339 UTC with milliseconds.
    timestamp: String,
    server: &'a str,
    /// The tool's name (a checked identifier: see `valid_tool_name`).
    tool: &'a str,
    /// The hash trusted before the event.
    trusted: &'a str,
    /// The hash listed (`tool_changed`) or now trusted (`tool_trusted`).
    listed: &'a str,
}

impl AuditLog {
    /// Queues one tool integrity event (`event` is `tool_changed` or
    /// `tool_trusted`); like [`AuditLog::write`], never blocks.
    pub fn write_tool_event(
        &self,
        event: &'static str,
        server: &str,
        tool: &str,
        trusted: &str,
        listed: &str,
    ) {
        if !self.writes() {
            return;
        }
        let record = ToolEvent {
            event,
            timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            server,
            tool,
            trusted,
            listed,
        };
        if let Ok(mut line) = serde_json::to_vec(&record) {
            line.push(b'\n');
            self.queue(line);
        }
    }
}

/// Longest code redacted for a preview: 1 MiB, well above `max_code_size`.
/// Longer code (which the sandbox refuses unless the limit was raised)
/// gets no preview rather than a scan of megabytes.
const MAX_PREVIEW_SCANNED: usize = 1024 * 1024;

/// The start of `code`, redacted, at most `max` bytes before the cut marker.
/// The whole code is redacted before the cut, so a secret that straddles
/// the cut is still found.
pub(super) fn preview(code: &str, max: usize) -> String {
    if code.len() > MAX_PREVIEW_SCANNED {
        return format!("[{} bytes; no preview]", code.len());
    }
    quickforge_core::shown::to_audit(code, max)
}

/// `bytes` random bytes, hex.
pub fn random_id(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The OS random source failing is not worth losing an audit line over;
    // a zero id is still a line.
    let _ = getrandom::fill(&mut buf);
    hex::encode(buf)
}
