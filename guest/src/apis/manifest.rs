//! The `manifest` global: the natives behind `manifest.servers`,
//! `manifest.search` and `manifest.tool`, each a synchronous bridge to the
//! `manifest` WIT import that returns JSON text for the prelude to parse.
//! `search` and `tool` can fail; a failure is thrown as the array the
//! prelude turns into a `ForgeError`.

use rquickjs::{Ctx, Function, Object, Result};

use super::throw;
use crate::quickforge::sandbox::manifest;

/// Puts `manifestServers`, `manifestSearch` and `manifestTool` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set(
        "manifestServers",
        Function::new(ctx.clone(), manifest::servers)?,
    )?;
    host.set(
        "manifestSearch",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, query: String, limit: u32| {
            manifest::search(&query, limit).map_err(|e| throw(&ctx, e))
        })?,
    )?;
    host.set(
        "manifestTool",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, server: String, name: String| {
                manifest::tool(&server, &name).map_err(|e| throw(&ctx, e))
            },
        )?,
    )?;
    Ok(())
}
