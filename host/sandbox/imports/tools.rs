//! `tools`: starting tool calls.

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{tools::Host, types::ForgeError as WitError};
use crate::call::Op;

impl Host for ExecutionState {
    fn start_call(
        &mut self,
        server: String,
        tool: String,
        args_json: String,
    ) -> wasmtime::Result<Result<u32, WitError>> {
        Ok(ExecutionState::start_call(
            self,
            Op::CallTool {
                server: &server,
                tool: &tool,
                args_json: &args_json,
            },
        ))
    }
}
