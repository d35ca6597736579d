//! `tools`: starting tool calls.

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{tools::Host, types::ForgeError as WitError};
use crate::call::Op;

impl Host for ExecutionState {
    async fn start_call(
        &mut self,
        server: String,
        tool: String,
        args_json: String,
    ) -> wasmtime::Result<Result<u32, WitError>> {
        self.metered(|s| {
            ExecutionState::start_call(
                s,
                Op::CallTool {
                    server: &server,
                    tool: &tool,
                    args_json: &args_json,
                },
            )
        })
        .await
    }
}
