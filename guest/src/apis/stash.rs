//! `forge.stash`: the natives behind `put`, `get`, `delete` and `keys`, each
//! a synchronous bridge to the `stash` WIT import. The prelude checks the
//! key, encodes the value and wraps each call in a promise; a refusal from
//! the host is thrown as the array the prelude turns into a `ForgeError`.

use rquickjs::function::Opt;
use rquickjs::{Ctx, Function, IntoJs, Object, Result};

use super::throw;
use crate::quickforge::sandbox::stash;

/// Puts `stashPut`, `stashGet`, `stashDelete` and `stashKeys` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set(
        "stashPut",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, key: String, json: String, ttl: Opt<Option<f64>>| {
                let ttl = ttl.0.flatten().map(|t| t.max(1.0) as u64);
                stash::put(&key, &json, ttl).map_err(|e| throw(&ctx, e))
            },
        )?,
    )?;
    host.set(
        "stashGet",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, key: String| {
            stash::get(&key).map_err(|e| throw(&ctx, e))
        })?,
    )?;
    host.set(
        "stashDelete",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, key: String| {
            stash::delete(&key).map_err(|e| throw(&ctx, e))
        })?,
    )?;
    host.set(
        "stashKeys",
        Function::new(ctx.clone(), |ctx: Ctx<'js>| {
            let keys = stash::keys().map_err(|e| throw(&ctx, e))?;
            keys.into_js(&ctx)
        })?,
    )?;
    Ok(())
}
