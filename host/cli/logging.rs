//! The log of the `quickforge` process: to stderr only (stdout belongs to the
//! MCP protocol or the result), with every line redacted, as text for people
//! or as one JSON object a line for log collectors (`[log] format`,
//! `--log-format`).
//!
//! The subscriber starts before the command line is parsed (so parsing and
//! config errors are logged), in text; the format is swapped in place
//! through a `reload` layer once the config is known.

use std::io::Write;
use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry, reload};

use crate::config::LogFormat;

/// The log's writer: stderr, with every formatted event redacted (the fmt
/// layer writes each event in one call), so secrets in downstream errors and
/// stderr lines never reach the log either.
struct RedactingStderr {
    json: bool,
}

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let redacted = if self.json {
            redact_json_line(&text)
        } else {
            crate::redact::redact(&text).text
        };
        std::io::stderr().write_all(redacted.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// A JSON log line with every string in it redacted one by one, so the
/// line stays valid JSON whatever a redaction rule matches (a rule run over
/// the encoded line could take an escape's backslash and leave its quote).
fn redact_json_line(line: &str) -> String {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                let r = crate::redact::redact(s);
                if r.text != *s {
                    *s = r.text;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            serde_json::Value::Object(o) => o.values_mut().for_each(walk),
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(line.trim_end()) {
        Ok(mut v) => {
            walk(&mut v);
            let mut out = v.to_string();
            out.push('\n');
            out
        }
        // Not what the JSON formatter writes; redacted as text all the same.
        Err(_) => crate::redact::redact(line).text,
    }
}

/// The span export's layer (see `observe::otel`), under the formatting.
type Otel = Option<Box<dyn Layer<Registry> + Send + Sync>>;
/// What the formatting layer sits on.
type Base = tracing_subscriber::layer::Layered<Otel, Registry>;
/// The formatting layer, boxed so the reload layer can swap one format for
/// the other.
type Fmt = Box<dyn Layer<Base> + Send + Sync>;

fn layer(format: LogFormat) -> Fmt {
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(|| RedactingStderr { json: false })
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(|| RedactingStderr { json: true })
            .boxed(),
    }
}

/// Swaps the format of the running subscriber.
static FORMAT: OnceLock<reload::Handle<Fmt, Base>> = OnceLock::new();

/// Sends the log to stderr, redacted, as text until [`set_format`] says
/// otherwise. `QUICKFORGE_LOG` (or `RUST_LOG`) sets the filter; default
/// `warn`.
pub(super) fn init_tracing() {
    let mut filter = std::env::var("QUICKFORGE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    let otel = crate::trace::otel::layer();
    if otel.is_some() {
        // The execution and call spans reach the export whatever the log's
        // level (spans are not log lines: the text log does not show them).
        filter.push_str(",quickforge::trace=info");
    }
    let (fmt, handle) = reload::Layer::new(layer(LogFormat::Text));
    let installed = tracing_subscriber::registry()
        .with(otel)
        .with(fmt)
        .with(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
    if installed.is_ok() {
        let _ = FORMAT.set(handle);
    }
}

/// Writes the log in `format` from now on.
pub(super) fn set_format(format: LogFormat) {
    if let Some(handle) = FORMAT.get()
        && let Err(e) = handle.reload(layer(format))
    {
        tracing::warn!("could not switch the log format: {e}");
    }
}
