//! `resources`: starting resource reads.

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{resources::Host, types::ForgeError as WitError};
use crate::call::Op;

impl Host for ExecutionState {
    async fn start_read(
        &mut self,
        server: String,
        uri: String,
    ) -> wasmtime::Result<Result<u32, WitError>> {
        self.metered(|s| {
            s.start_call(Op::ReadResource {
                server: &server,
                uri: &uri,
            })
        })
        .await
    }
}
