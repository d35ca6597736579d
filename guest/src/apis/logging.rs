//! `console` and `forge.log`: the native that hands one formatted line to
//! the `logging` WIT import. The prelude formats the arguments and makes the
//! line well-formed; this side only maps the level's name.

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

/// Puts `log` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set(
        "log",
        Function::new(ctx.clone(), |lvl: String, line: String| {
            logging::log(level(&lvl), &line)
        })?,
    )?;
    Ok(())
}
