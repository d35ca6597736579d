//! `manifest`: read-only queries, answered from the execution's manifest view.

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{manifest::Host, types::ForgeError as WitError};

impl Host for ExecutionState {
    fn servers(&mut self) -> wasmtime::Result<String> {
        Ok(self.pipeline.manifest().servers().to_string())
    }

    fn search(&mut self, query: String, limit: u32) -> wasmtime::Result<String> {
        Ok(self
            .pipeline
            .manifest()
            .search(&query, limit as usize)
            .to_string())
    }

    fn tool(&mut self, server: String, name: String) -> wasmtime::Result<Result<String, WitError>> {
        Ok(self
            .pipeline
            .manifest()
            .tool(&server, &name)
            .map(|v| v.to_string())
            .map_err(Into::into))
    }
}
