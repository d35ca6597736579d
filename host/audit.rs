//! The audit log: one JSON line per execution, for investigating what a
//! script did after the fact.
//!
//! Each line names the execution (a random id, its session, the time it
//! arrived), what it was (`search` or `execute`, a SHA-256 of the code and a
//! redacted preview), every operation it attempted — tool calls, resource
//! reads and stash operations, refused ones included — with the server,
//! tool or key, a SHA-256 of the arguments, the duration, the outcome and the
//! bytes returned, and how it ended (duration, outcome, error kind and code).
//!
//! No secrets: arguments and values appear only as hashes and sizes; every
//! name, key, URI, preview and error text passes [`crate::redact`] first.
//! Equal arguments give equal hashes, so an investigator holding a suspect
//! value can check whether it was sent without the log ever holding it.
//!
//! Lines go to a file (`[audit] file`, opened for appending, created private
//! to the user) and/or stderr (`[audit] stderr`), each written whole in one
//! call so concurrent executions never interleave within a line. A failed
//! write is reported on stderr and the execution goes on: the log serves
//! investigation, not admission.

use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::ForgeError;
use crate::sandbox::{Mode, Report};

/// Default `[audit] preview_bytes`: enough of a script to recognize it at a
/// glance (its first few statements), small enough that a line stays
/// readable. The hash identifies the code exactly.
pub const DEFAULT_PREVIEW_BYTES: usize = 256;
/// Largest `[audit] preview_bytes`: 64 KiB, the default `max_code_size`,
/// so a whole default-sized script fits.
pub const MAX_PREVIEW_BYTES: usize = 64 * 1024;
/// Default `[audit] max_operations`: the operations kept in one line. Tool
/// calls are bounded by `max_tool_calls`, but refused calls and stash
/// operations are not; a script looping over `forge.stash.get` must not
/// make a line of megabytes. A thousand covers every real script; beyond
/// it, operations are counted in `operations_dropped`.
pub const DEFAULT_MAX_OPERATIONS: usize = 1000;
/// Largest `[audit] max_operations`: at roughly 300 bytes an operation, a
/// line of at most about 30 MB.
pub const MAX_OPERATIONS: usize = 100_000;
/// Longest server name, tool name, URI or stash key kept in a line, in
/// bytes; longer ones are cut with a marker. They are identifiers, and the
/// sandbox accepts at most 4 KiB of them anyway.
const MAX_NAME_BYTES: usize = 256;
/// Longest error message kept in a line, in bytes: the code says what
/// happened, the message the detail.
const MAX_MESSAGE_BYTES: usize = 1024;

/// `[audit]`: where the log goes and how much it keeps.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// File the lines are appended to; relative paths are from the config
    /// file's folder. `None`: no file.
    pub file: Option<PathBuf>,
    /// Whether lines also go to stderr, among the gateway's own logs.
    pub stderr: bool,
    /// Bytes of each script kept, redacted, as `code_preview`.
    pub preview_bytes: usize,
    /// Operations kept per line; more are counted, not listed.
    pub max_operations: usize,
}

impl Default for AuditConfig {
    /// Off: no file, not on stderr.
    fn default() -> Self {
        AuditConfig {
            file: None,
            stderr: false,
            preview_bytes: DEFAULT_PREVIEW_BYTES,
            max_operations: DEFAULT_MAX_OPERATIONS,
        }
    }
}

impl AuditConfig {
    /// Whether any line is written at all.
    pub fn enabled(&self) -> bool {
        self.file.is_some() || self.stderr
    }
}

/// What kind of operation a script attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// `forge.callTool`.
    CallTool,
    /// `forge.readResource`.
    ReadResource,
    /// `forge.stash.put`.
    StashPut,
    /// `forge.stash.get`.
    StashGet,
    /// `forge.stash.delete`.
    StashDelete,
    /// `forge.stash.keys`.
    StashKeys,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// It failed or was refused; `error_code` says why (`TOOL_ERROR` for a
    /// tool's own `isError` answer).
    Error,
    /// The execution ended (timeout, trap) before it finished.
    Cancelled,
}

/// One operation of an execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operation {
    /// What it was.
    pub op: OpKind,
    /// The server of a tool call or resource read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The tool of a tool call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The URI of a resource read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The key of a stash operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The stash space: the strict group the execution was locked to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space: Option<String>,
    /// SHA-256 (hex) of the JSON arguments of a tool call, the URI of a
    /// resource read, or the value of a stash put, exactly as the script
    /// sent them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_sha256: Option<String>,
    /// Size of those arguments or that value, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_bytes: Option<u64>,
    /// When the script started it, in microseconds since the execution
    /// arrived.
    pub at_us: u64,
    /// How long it ran, in microseconds: for a tool call or resource read,
    /// from when the gateway first polled it (operations are driven while
    /// the script waits, so from the script's first `await` after starting
    /// it) to its answer as the gateway saw it. `at_us + duration_us` is
    /// therefore not its end time when the script computed before waiting.
    pub duration_us: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The `ForgeError` code of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Bytes of JSON it returned to the script (a stash value, a tool
    /// result; for `keys`, the key count).
    pub bytes: u64,
}

/// The operations of one execution, recorded by the sandbox as they happen.
#[derive(Debug, Clone)]
pub struct Trail {
    started: Instant,
    ops: Vec<Operation>,
    dropped: u64,
    max: usize,
    /// Call id → index in `ops` of operations in flight.
    pending: Vec<(u32, usize)>,
}

/// An operation's arguments, as the trail records them.
pub enum Target<'a> {
    /// A tool call: server, tool, JSON arguments.
    Tool(&'a str, &'a str, &'a str),
    /// A resource read: server, URI.
    Resource(&'a str, &'a str),
    /// A stash operation: key (none for `keys`), space, and the digest of
    /// the value of a `put` (taken before the value moved into the stash).
    Stash(Option<&'a str>, Option<&'a str>, Option<Digest>),
}

/// Largest data hashed for the log: 16 MiB, far above the default
/// `max_args_size` and `max_value_size` (1 MiB). Larger data, which the
/// sandbox refuses unless those limits were raised, is recorded by its size
/// alone, so a script cannot make the host hash gigabytes.
pub const MAX_HASHED_BYTES: usize = 16 * 1024 * 1024;

/// The SHA-256 and size of data an operation carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    sha256: Option<String>,
    bytes: u64,
}

impl Digest {
    /// The digest of `data`; its hash only up to [`MAX_HASHED_BYTES`].
    pub fn of(data: &str) -> Digest {
        Digest {
            sha256: (data.len() <= MAX_HASHED_BYTES).then(|| sha256(data)),
            bytes: data.len() as u64,
        }
    }
}

impl Trail {
    /// An empty trail that keeps at most `max` operations.
    pub fn new(max: usize) -> Trail {
        Trail {
            started: Instant::now(),
            ops: Vec::new(),
            dropped: 0,
            max,
            pending: Vec::new(),
        }
    }

    /// Records an operation that has started, `at` the given instant. For
    /// one still running, `started` is its call id; for one already over,
    /// its end: what it returned (bytes) or why it failed.
    pub fn record(
        &mut self,
        op: OpKind,
        target: Target<'_>,
        at: Instant,
        started: Result<Started, &ForgeError>,
    ) {
        if self.ops.len() >= self.max {
            self.dropped += 1;
            return;
        }
        let mut o = Operation {
            op,
            server: None,
            tool: None,
            uri: None,
            key: None,
            space: None,
            args_sha256: None,
            args_bytes: None,
            at_us: micros(at.saturating_duration_since(self.started)),
            duration_us: 0,
            outcome: Outcome::Ok,
            error_code: None,
            bytes: 0,
        };
        let hash = |o: &mut Operation, digest: Digest| {
            o.args_sha256 = digest.sha256;
            o.args_bytes = Some(digest.bytes);
        };
        match target {
            Target::Tool(server, tool, args) => {
                o.server = Some(name(server));
                o.tool = Some(name(tool));
                hash(&mut o, Digest::of(args));
            }
            Target::Resource(server, uri) => {
                o.server = Some(name(server));
                // Redaction masks a URI's path, which may hold a token or a
                // user name; the hash still identifies the exact resource.
                o.uri = Some(name(uri));
                hash(&mut o, Digest::of(uri));
            }
            Target::Stash(key, space, value) => {
                o.key = key.map(name);
                o.space = space.map(name);
                if let Some(digest) = value {
                    hash(&mut o, digest);
                }
            }
        }
        match started {
            Ok(Started::Running(id)) => {
                o.outcome = Outcome::Cancelled;
                self.pending.push((id, self.ops.len()));
            }
            Ok(Started::Done(bytes)) => {
                o.duration_us = micros(at.elapsed());
                o.bytes = bytes;
            }
            Err(e) => {
                o.duration_us = micros(at.elapsed());
                o.outcome = Outcome::Error;
                o.error_code = Some(e.code.clone());
            }
        }
        self.ops.push(o);
    }

    /// Records the end of call `id`: its JSON result or its error, after
    /// `took`.
    pub fn finish(&mut self, id: u32, outcome: Result<&str, &ForgeError>, took: Duration) {
        let Some(at) = self.pending.iter().position(|&(i, _)| i == id) else {
            // Not recorded: over `max_operations`.
            return;
        };
        let (_, index) = self.pending.swap_remove(at);
        let o = &mut self.ops[index];
        o.duration_us = micros(took);
        match outcome {
            Ok(json) => {
                o.outcome = Outcome::Ok;
                o.bytes = json.len() as u64;
            }
            Err(e) => {
                o.outcome = Outcome::Error;
                o.error_code = Some(e.code.clone());
            }
        }
    }

    /// Time since the trail began, when the execution arrived.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The operations so far, in the order they started (those still
    /// running marked cancelled), and how many more were not kept.
    pub fn snapshot(&self) -> (Vec<Operation>, u64) {
        (self.ops.clone(), self.dropped)
    }
}

/// A trail shared between the sandbox, which records into it, and the
/// session, which writes it out even when the execution is cancelled
/// half-way. Locked once per operation, by one task at a time.
pub type SharedTrail = std::sync::Arc<Mutex<Trail>>;

/// Locks `trail`. A panic while it was held cannot leave it half-written
/// (every update is a push or a field store), so a poisoned lock is used as
/// is.
pub fn lock(trail: &SharedTrail) -> std::sync::MutexGuard<'_, Trail> {
    trail.lock().unwrap_or_else(|p| p.into_inner())
}

/// How far an operation got when it was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// In flight as call `id`; [`Trail::finish`] records its end.
    Running(u32),
    /// Already done, returning this many bytes.
    Done(u64),
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Lowercase hex SHA-256 of `data`.
pub fn sha256(data: &str) -> String {
    hex::encode(Sha256::digest(data.as_bytes()))
}

/// Longest name redacted and kept in part; a longer one (the sandbox
/// refuses them, at 4 KiB) is recorded by its size alone: redacting it in
/// full, up to `max_operations` times, could cost more than the script paid
/// to make it, and redacting only its start could leave half a secret at
/// the cut.
const MAX_NAME_SCANNED: usize = 4096;

/// A script-supplied identifier, redacted and bounded.
fn name(text: &str) -> String {
    if text.len() > MAX_NAME_SCANNED {
        return format!("[{} bytes, not kept]", text.len());
    }
    let redacted = crate::redact::redact(text).text;
    crate::error::clip(&redacted, MAX_NAME_BYTES)
}

/// One execution, as one line of the log.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// Always `"execution"`, so the lines can be picked out of stderr.
    pub event: &'static str,
    /// Random, unique per execution (128 bits, hex).
    pub id: String,
    /// Random, unique per client session (64 bits, hex).
    pub session: &'a str,
    /// When the execution arrived, RFC 3339 UTC with milliseconds.
    pub timestamp: String,
    /// `search` or `execute`.
    pub operation: Mode,
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
    /// When.
    pub at: std::time::SystemTime,
    /// `search` or `execute`.
    pub mode: Mode,
    /// The code.
    pub code: &'a str,
}

/// Lines waiting for the writer thread. A burst of a thousand executions
/// fits; a log that cannot keep up for longer (a stalled disk, a stderr
/// nobody reads) loses lines, counted and reported, rather than stalling
/// every execution behind it.
pub const QUEUE_LINES: usize = 1024;
/// How long closing the log waits for queued lines to be written, at exit.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Where audit lines go. Shared by every session. Lines are written by a
/// thread of their own, so no execution waits on a disk.
pub struct AuditLog {
    queue: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Lines lost to a full queue since the writer last reported.
    lost: std::sync::Arc<AtomicU64>,
    preview_bytes: usize,
    max_operations: usize,
}

impl AuditLog {
    /// Opens the log `config` describes; `None` when it writes nowhere.
    pub fn open(config: &AuditConfig) -> std::io::Result<Option<AuditLog>> {
        if !config.enabled() {
            return Ok(None);
        }
        let file = match &config.file {
            None => None,
            Some(path) => Some(open_private(path)?),
        };
        let (queue, lines) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUE_LINES);
        let lost = std::sync::Arc::new(AtomicU64::new(0));
        let mut sink = Sink {
            file,
            stderr: config.stderr,
            failing: false,
            lost: lost.clone(),
        };
        let writer = std::thread::Builder::new()
            .name("quickforge-audit".into())
            .spawn(move || {
                while let Ok(line) = lines.recv() {
                    sink.write(&line);
                }
            })?;
        Ok(Some(AuditLog {
            queue: Some(queue),
            writer: Some(writer),
            lost,
            preview_bytes: config.preview_bytes,
            max_operations: config.max_operations,
        }))
    }

    /// A new trail for one execution, bounded by `max_operations`.
    pub fn trail(&self) -> SharedTrail {
        std::sync::Arc::new(Mutex::new(Trail::new(self.max_operations)))
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
            Some(Ok(value)) => (
                "ok",
                None,
                None,
                None,
                crate::sandbox::json_len(value) as u64,
            ),
            // The code of an uncaught ForgeError may be the script's own
            // invention: bounded and redacted like any other name.
            Some(Err(e)) => (
                "error",
                Some(e.kind),
                e.forge.as_ref().map(|f| name(&f.code)),
                Some(crate::error::clip(
                    &crate::redact::redact(&e.message).text,
                    MAX_MESSAGE_BYTES,
                )),
                0,
            ),
        };
        Record {
            event: "execution",
            id: random_id(16),
            session: arrival.session,
            timestamp: chrono::DateTime::<chrono::Utc>::from(arrival.at)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            operation: arrival.mode,
            code_sha256: sha256(arrival.code),
            code_bytes: arrival.code.len() as u64,
            code_preview: preview(arrival.code, self.preview_bytes),
            operations,
            operations_dropped,
            duration_ms: took.as_secs_f64() * 1000.0,
            outcome,
            error_kind,
            error_code,
            error,
            result_bytes,
            fuel: report.map_or(0, |r| r.stats.fuel),
            log_lines: report.map_or(0, |r| r.logs.len() as u64 + u64::from(r.stats.logs_dropped)),
        }
    }

    /// Queues `record` to be written as one line to each destination.
    /// Never blocks: when the queue is full the line is counted as lost.
    pub fn write(&self, record: &Record<'_>) {
        let mut line = match serde_json::to_vec(record) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!("could not encode an audit record: {e}");
                return;
            }
        };
        line.push(b'\n');
        if let Some(queue) = &self.queue
            && let Err(std::sync::mpsc::TrySendError::Full(_)) = queue.try_send(line)
        {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for AuditLog {
    /// Writes the lines still queued (at most [`CLOSE_WAIT`]), so the last
    /// executions before exit are in the log.
    fn drop(&mut self) {
        drop(self.queue.take());
        let Some(writer) = self.writer.take() else {
            return;
        };
        let deadline = Instant::now() + CLOSE_WAIT;
        while !writer.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if writer.is_finished() {
            let _ = writer.join();
        } else {
            tracing::error!(
                "the audit log did not finish writing within {} s; lines may be missing",
                CLOSE_WAIT.as_secs()
            );
        }
    }
}

/// Opens `path` for appending, creating it readable by the user alone (the
/// log describes what agents did). An existing file keeps its mode; one
/// others can read is reported.
fn open_private(path: &std::path::Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let file = options.open(path).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("could not open the audit log {}: {e}", path.display()),
        )
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = file.metadata()?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                "the audit log {} is readable by others (mode {:o}); chmod 600 it",
                path.display(),
                mode & 0o777
            );
        }
    }
    Ok(file)
}

/// The writer thread's end: the destinations and their health.
struct Sink {
    file: Option<File>,
    stderr: bool,
    /// Set while writes to the file fail, so a full disk is reported once,
    /// and the next line starts on a line of its own.
    failing: bool,
    lost: std::sync::Arc<AtomicU64>,
}

impl Sink {
    fn write(&mut self, line: &[u8]) {
        if let Some(file) = &mut self.file {
            // A line cut short by a failed write is ended first, so the next
            // one stays parseable.
            let result = if self.failing {
                file.write_all(b"\n").and_then(|()| file.write_all(line))
            } else {
                file.write_all(line)
            };
            match result {
                Err(e) if !self.failing => {
                    self.failing = true;
                    tracing::error!("could not write to the audit log: {e}; executions go on");
                }
                Err(_) => {}
                Ok(()) if self.failing => {
                    self.failing = false;
                    tracing::info!("the audit log is writable again");
                }
                Ok(()) => {}
            }
        }
        if self.stderr {
            // Already redacted: written as is, not through the log writer,
            // so the line stays parseable JSON.
            let _ = std::io::stderr().lock().write_all(line);
        }
        let lost = self.lost.swap(0, Ordering::Relaxed);
        if lost > 0 {
            tracing::error!("{lost} audit lines lost: the audit log could not keep up");
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
fn preview(code: &str, max: usize) -> String {
    if code.len() > MAX_PREVIEW_SCANNED {
        return format!("[{} bytes; no preview]", code.len());
    }
    crate::error::clip(&crate::redact::redact(code).text, max)
}

/// `bytes` random bytes, hex.
pub fn random_id(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The OS random source failing is not worth losing an audit line over;
    // a zero id is still a line.
    let _ = getrandom::fill(&mut buf);
    hex::encode(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: &str) -> ForgeError {
        ForgeError::new(code, "no")
    }

    #[test]
    fn a_trail_records_starts_ends_refusals_and_cancellations() {
        let mut t = Trail::new(10);
        let now = Instant::now();
        t.record(
            OpKind::CallTool,
            Target::Tool("memory", "read_graph", "{}"),
            now,
            Ok(Started::Running(1)),
        );
        t.record(
            OpKind::CallTool,
            Target::Tool("memory", "nope", "{\"a\":1}"),
            now,
            Err(&err("TOOL_NOT_FOUND")),
        );
        t.record(
            OpKind::ReadResource,
            Target::Resource("everything", "test://static/resource/1"),
            now,
            Ok(Started::Running(2)),
        );
        t.record(
            OpKind::StashPut,
            Target::Stash(Some("k"), None, Some(Digest::of("[1,2]"))),
            now,
            Ok(Started::Done(0)),
        );
        t.finish(1, Ok("{\"x\":1}"), Duration::from_micros(1500));
        let (ops, dropped) = t.snapshot();
        assert_eq!(dropped, 0);
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[0].outcome, Outcome::Ok);
        assert_eq!(ops[0].bytes, 7);
        assert_eq!(ops[0].duration_us, 1500);
        assert_eq!(ops[0].args_sha256.as_deref(), Some(sha256("{}").as_str()));
        assert_eq!(ops[1].outcome, Outcome::Error);
        assert_eq!(ops[1].error_code.as_deref(), Some("TOOL_NOT_FOUND"));
        assert_eq!(ops[1].args_bytes, Some(7));
        assert_eq!(ops[2].outcome, Outcome::Cancelled, "never finished");
        let uri = ops[2].uri.as_deref().unwrap();
        assert!(uri.starts_with("test://static/"), "{uri}");
        assert_eq!(ops[2].args_sha256, Some(sha256("test://static/resource/1")));
        assert_eq!(ops[3].key.as_deref(), Some("k"));
        assert_eq!(ops[3].args_sha256, Some(sha256("[1,2]")));
    }

    #[test]
    fn a_trail_counts_what_it_does_not_keep() {
        let mut t = Trail::new(2);
        for id in 1..=5 {
            t.record(
                OpKind::CallTool,
                Target::Tool("s", "t", "{}"),
                Instant::now(),
                Ok(Started::Running(id)),
            );
        }
        // Ends of calls that were not kept are ignored.
        for id in 1..=5 {
            t.finish(id, Err(&err("TIMEOUT")), Duration::ZERO);
        }
        let (ops, dropped) = t.snapshot();
        assert_eq!((ops.len(), dropped), (2, 3));
        assert!(
            ops.iter()
                .all(|o| o.error_code.as_deref() == Some("TIMEOUT"))
        );
    }

    #[test]
    fn names_and_previews_are_redacted_and_bounded() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let mut t = Trail::new(1);
        let key = format!("{token}{}", "k".repeat(1000));
        t.record(
            OpKind::StashGet,
            Target::Stash(Some(&key), None, None),
            Instant::now(),
            Ok(Started::Done(3)),
        );
        let (ops, _) = t.snapshot();
        let kept = ops[0].key.as_deref().unwrap();
        assert!(!kept.contains(token), "{kept}");
        assert!(kept.len() < MAX_NAME_BYTES + 40, "{}", kept.len());

        let code = format!(
            "async () => {{ const t = \"{token}\"; {} }}",
            "1;".repeat(50_000)
        );
        let p = preview(&code, 64);
        assert!(!p.contains(token), "{p}");
        assert!(p.starts_with("async () => { const t = "), "{p}");
        assert!(p.ends_with("more bytes cut]"), "{p}");
        assert_eq!(preview("async () => 1", 64), "async () => 1");
    }

    #[test]
    fn the_log_appends_whole_private_lines() {
        let dir = std::env::temp_dir().join(format!("qf-audit-{}", random_id(8)));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        let config = AuditConfig {
            file: Some(path.clone()),
            ..AuditConfig::default()
        };
        let log = AuditLog::open(&config).unwrap().unwrap();
        let report = Report {
            result: Ok(serde_json::json!({"a": 1})),
            logs: Vec::new(),
            stats: Default::default(),
        };
        for _ in 0..2 {
            let arrival = Arrival {
                session: "s1",
                at: std::time::SystemTime::now(),
                mode: Mode::Execute,
                code: "async () => ({a: 1})",
            };
            let r = log.record(&arrival, Some(&report), &log.trail());
            log.write(&r);
        }
        // Closing the log writes what is queued.
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_ne!(lines[0]["id"], lines[1]["id"]);
        assert_eq!(lines[0]["outcome"], "ok");
        assert_eq!(lines[0]["result_bytes"], 7);
        assert_eq!(lines[0]["operation"], "execute");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unopenable_file_names_itself() {
        let config = AuditConfig {
            file: Some(PathBuf::from("/nonexistent-dir/audit.jsonl")),
            ..AuditConfig::default()
        };
        let e = AuditLog::open(&config).err().unwrap();
        assert!(
            e.to_string().contains("/nonexistent-dir/audit.jsonl"),
            "{e}"
        );
    }
}
