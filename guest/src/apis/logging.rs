//! `console`, `forge.log` and `forge.progress`: the natives that hand one
//! formatted line, or one progress report, to the `logging` WIT import. The
//! prelude formats and checks the arguments and makes the text well-formed;
//! this side only maps the level's name.

use rquickjs::{Ctx, Function, Object, Result};

use crate::quickforge::sandbox::logging;
use crate::quickforge::sandbox::types::LogLevel;

fn level(name: &str) -> LogLevel {
    match name {
        "debug" => LogLevel::Debug,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        _ => LogLevel::Info,
    }
}

/// Puts `log` and `progress` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set(
        "log",
        Function::new(ctx.clone(), |lvl: String, line: String| {
            logging::log(level(&lvl), &line)
        })?,
    )?;
    host.set(
        "progress",
        Function::new(
            ctx.clone(),
            |done: f64, total: Option<f64>, message: Option<String>| {
                logging::progress(done, total, message.as_deref())
            },
        )?,
    )?;
    Ok(())
}
