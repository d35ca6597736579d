//! The recorder: every operation one execution attempts, as the call
//! pipeline's outer step ([`crate::call`]) records it — tool calls,
//! resource reads and stash operations, refused ones included — with names
//! redacted and bounded, and arguments only as hashes and sizes.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::error::ForgeError;

/// Longest server name, tool name, URI or stash key kept in a line, in
/// bytes; longer ones are cut with a marker. They are identifiers, and the
/// sandbox accepts at most 4 KiB of them anyway.
pub(super) const MAX_NAME_BYTES: usize = 256;

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
                o.error_code = Some(e.code.to_string());
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
                o.error_code = Some(e.code.to_string());
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
pub(super) fn name(text: &str) -> String {
    if text.len() > MAX_NAME_SCANNED {
        return format!("[{} bytes, not kept]", text.len());
    }
    quickforge_core::shown::to_audit(text, MAX_NAME_BYTES)
}
