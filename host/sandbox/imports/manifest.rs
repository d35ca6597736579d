//! `manifest`: read-only queries, answered from the execution's manifest
//! view as narrowed by its strict-group lock (see `call::view`).
//!
//! Every string a script passes is held to its size bound before any work
//! on it (the query by `Query::parse`, names by
//! [`quickforge_core::limits::name`]): looking a name up, folding it for a
//! did-you-mean and quoting it in a message all grow with its length.
//!
//! All three are metered like every import. `search` is the one whose work
//! grows with the manifest (every tool of every server is ranked), so after
//! its query passes the bounds it runs on a blocking thread: the worker is
//! free meanwhile, and the execution's deadline can end the wait.

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{manifest::Host, types::ForgeError as WitError};
use crate::error::{ErrorCode, ForgeError};
use crate::manifest::Query;

impl Host for ExecutionState {
    async fn servers(&mut self) -> wasmtime::Result<String> {
        self.metered(|s| s.pipeline.manifest_servers().to_string())
            .await
    }

    async fn search(
        &mut self,
        query: String,
        limit: u32,
    ) -> wasmtime::Result<Result<String, WitError>> {
        let started = self.meter.enter()?;
        let query = match Query::parse(&query) {
            Ok(q) => q,
            Err(e) => {
                self.meter.leave(started).await;
                return Ok(Err(e.into()));
            }
        };
        let view = self.pipeline.manifest_view();
        let visibility = self.pipeline.visibility();
        let ranked = tokio::task::spawn_blocking(move || {
            view.search(&query, limit as usize, &|server| visibility.server(server))
                .to_string()
        })
        .await;
        self.meter.yielded();
        Ok(ranked.map_err(|e| {
            tracing::error!(error = %e, "manifest.search failed on its thread");
            ForgeError::new(
                ErrorCode::Internal,
                "manifest.search failed inside quickforge",
            )
            .into()
        }))
    }

    async fn tool(
        &mut self,
        server: String,
        name: String,
    ) -> wasmtime::Result<Result<String, WitError>> {
        use quickforge_core::limits::name as bounded;
        if let Err(e) = bounded("manifest.tool", "server name", &server)
            .and_then(|()| bounded("manifest.tool", "tool name", &name))
        {
            return Ok(Err(e.into()));
        }
        self.metered(|s| {
            s.pipeline
                .manifest_tool(&server, &name)
                .map(|v| v.to_string())
                .map_err(Into::into)
        })
        .await
    }
}
