//! `tools`: starting tool calls.

use super::super::State;
use super::super::bindings::quickforge::sandbox::{tools::Host, types::ForgeError as WitError};
use crate::audit::{OpKind, Started, Target};
use crate::error::ForgeError;

impl Host for State {
    fn start_call(
        &mut self,
        server: String,
        tool: String,
        args_json: String,
    ) -> wasmtime::Result<Result<u32, WitError>> {
        let at = self.audit_clock();
        let started = self.start_tool_call(&server, &tool, &args_json);
        self.audit(
            OpKind::CallTool,
            Target::Tool(&server, &tool, &args_json),
            at,
            started.as_ref().map(|&id| Started::Running(id)),
        );
        Ok(started.map_err(Into::into))
    }
}

impl State {
    fn start_tool_call(
        &mut self,
        server: &str,
        tool: &str,
        args_json: &str,
    ) -> Result<u32, ForgeError> {
        self.require_execute("forge.callTool")?;
        super::check_len("server name", server)?;
        super::check_len("tool name", tool)?;
        // Unknown servers and tools are refused before they cost a call.
        self.cx.dispatcher.check_call(server, tool)?;
        if args_json.len() > self.max_args_size {
            return Err(ForgeError::new(
                "ARGS_TOO_LARGE",
                format!(
                    "the arguments to {server}/{tool} are {} bytes of JSON, over the {}-byte limit",
                    args_json.len(),
                    self.max_args_size
                ),
            )
            .suggest("send less data per call"));
        }
        let args: serde_json::Value = super::super::parse_json(args_json).map_err(|e| {
            ForgeError::new(
                "INVALID_ARGUMENT",
                format!("tool arguments are not valid JSON: {e}"),
            )
        })?;
        if !args.is_object() {
            return Err(ForgeError::new(
                "INVALID_ARGUMENT",
                "tool arguments must be a JSON object",
            ));
        }
        self.start_operation("forge.callTool", |s| {
            s.cx.dispatcher.call_tool(server, tool, args)
        })
    }
}
