//! The log of the `quickforge` process: to stderr only (stdout belongs to the
//! MCP protocol or the result), with every line redacted.

use std::io::Write;

/// The log's writer: stderr, with every formatted event redacted (the fmt
/// layer writes each event in one call), so secrets in downstream errors and
/// stderr lines never reach the log either.
struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(crate::redact::redact(&text).text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Sends the log to stderr, redacted. `QUICKFORGE_LOG` (or `RUST_LOG`) sets
/// the filter; default `warn`.
pub(super) fn init_tracing() {
    let filter = std::env::var("QUICKFORGE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_writer(|| RedactingStderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
}
