//! `logging`: captured script output, bounded by `max_log_lines` and
//! `max_log_bytes`; lines past either bound are counted, not kept.

use super::super::bindings::quickforge::sandbox::logging::Host;
use super::super::bindings::quickforge::sandbox::types::LogLevel as WitLevel;
use super::super::{ExecutionState, LogLevel, LogLine};

impl Host for ExecutionState {
    async fn log(&mut self, level: WitLevel, message: String) -> wasmtime::Result<()> {
        self.metered(|s| s.keep_log(level, message)).await
    }

    /// `forge.progress`: to the client's progress token, if the execution
    /// has a client that sent one (see `crate::relay::progress`, which
    /// bounds the message and coalesces the reports); otherwise nothing.
    async fn progress(
        &mut self,
        done: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> wasmtime::Result<()> {
        self.metered(|s| {
            if let Some(up) = s.pipeline.upstream() {
                up.progress(Some((done, total)), message.unwrap_or_default());
            }
        })
        .await
    }
}

impl ExecutionState {
    /// Keeps one line, or counts it as dropped past the line or byte cap.
    fn keep_log(&mut self, level: WitLevel, message: String) {
        if self.logs.len() >= self.max_log_lines
            || self.log_bytes + message.len() > self.max_log_bytes
        {
            self.logs_dropped = self.logs_dropped.saturating_add(1);
            return;
        }
        self.log_bytes += message.len();
        let level = match level {
            WitLevel::Debug => LogLevel::Debug,
            WitLevel::Info => LogLevel::Info,
            WitLevel::Warn => LogLevel::Warn,
            WitLevel::Error => LogLevel::Error,
        };
        self.logs.push(LogLine { level, message });
    }
}
