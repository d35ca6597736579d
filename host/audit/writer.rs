//! Where lines go: a file opened private to the user and/or stderr,
//! written by a thread of its own so that no execution waits on a disk.
//!
//! The thread and its bounded queue are written here rather than taken from
//! `tracing-appender`'s non-blocking writer (0.2.5, checked for issue 17),
//! whose queue and lossy mode would fit but whose shutdown does not: its
//! `WorkerGuard` gives queued lines a fixed 100 ms to enqueue the shutdown
//! message and 1 s to be written, not configurable (tokio-rs/tracing#1135,
//! open), where closing this log waits up to [`CLOSE_WAIT`] for the last
//! executions before exit to reach a slow disk, and says when it gave up. And
//! when its queue is full at that moment (the overload this queue exists
//! for), the guard reports it with `println!`, on stdout, which is the MCP
//! protocol for a stdio gateway. Its drop counter is also only a number to
//! poll; here the writer reports lost lines in the log as soon as it catches
//! up.

use std::fs::File;
use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::AuditConfig;
use super::trail::{SharedTrail, Trail};

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
    /// `None` when no line is written anywhere and only `observer` sees the
    /// records.
    queue: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Lines lost to a full queue since the writer last reported.
    lost: std::sync::Arc<AtomicU64>,
    pub(super) preview_bytes: usize,
    max_operations: usize,
    /// Sees every record as it is written (the metrics).
    pub(super) observer: Option<std::sync::Arc<dyn super::Observer>>,
}

impl AuditLog {
    /// Opens the log `config` describes, with `observer` seeing every
    /// record; `None` when it writes nowhere and nothing observes it.
    pub fn open(
        config: &AuditConfig,
        observer: Option<std::sync::Arc<dyn super::Observer>>,
    ) -> std::io::Result<Option<AuditLog>> {
        if !config.enabled() {
            return Ok(observer.map(|observer| AuditLog {
                queue: None,
                writer: None,
                lost: Default::default(),
                preview_bytes: config.preview_bytes,
                max_operations: config.max_operations,
                observer: Some(observer),
            }));
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
            observer,
        }))
    }

    /// Whether lines are written anywhere (else only the observer sees
    /// the records).
    pub(super) fn writes(&self) -> bool {
        self.queue.is_some()
    }

    /// A new trail for one execution, bounded by `max_operations`.
    pub fn trail(&self) -> SharedTrail {
        std::sync::Arc::new(Mutex::new(Trail::new(self.max_operations)))
    }

    /// Queues one encoded line (ending in a newline) for each
    /// destination. Never blocks: when the queue is full the line is counted
    /// as lost.
    pub(super) fn queue(&self, line: Vec<u8>) {
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
    // Never through a link in the log's own name (crate::files).
    let file = crate::files::open_append(path).map_err(|e| {
        let e = std::io::Error::from(e);
        std::io::Error::new(e.kind(), format!("could not open the audit log: {e}"))
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
