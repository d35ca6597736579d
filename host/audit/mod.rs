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
//!
//! The module's rooms: [`trail`] records the operations of one execution
//! (the outer step of the call pipeline, see [`crate::call`]); `line` turns
//! an execution and its trail into one line; `writer` puts lines on disk
//! and stderr from a thread of its own.

mod line;
pub mod trail;
mod writer;

use serde::Deserialize;

pub use line::{Arrival, Record, random_id};
pub use trail::{SharedTrail, Trail};
pub use writer::AuditLog;

/// Sees every execution's record as the log writes it, whether or not
/// lines go anywhere: the one place the metrics learn what executions and
/// their calls did (see `crate::observe`).
pub trait Observer: Send + Sync {
    /// Takes note of one finished (or cancelled) execution.
    fn observe(&self, record: &Record<'_>);
}

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

/// `[audit]`: where the log goes and how much it keeps.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// File the lines are appended to; relative paths are from the config
    /// file's folder. `None`: no file.
    pub file: Option<std::path::PathBuf>,
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

#[cfg(test)]
mod tests {
    use super::line::preview;
    use super::trail::{Digest, MAX_NAME_BYTES, OpKind, Outcome, Started, Target, sha256};
    use super::*;
    use crate::error::ForgeError;
    use quickforge_core::execution::{Mode, Report};
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

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
        let log = AuditLog::open(&config, None).unwrap().unwrap();
        let report = Report {
            result: Ok(serde_json::json!({"a": 1})),
            logs: Vec::new(),
            stats: Default::default(),
        };
        let handle = crate::state::Handle::random();
        for _ in 0..2 {
            let arrival = Arrival {
                session: "s1",
                subject: None,
                replica: "r1",
                stash: &handle,
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
        let e = AuditLog::open(&config, None).err().unwrap();
        assert!(
            e.to_string().contains("/nonexistent-dir/audit.jsonl"),
            "{e}"
        );
    }
}
