//! The admit step: what can be decided from the operation alone — the
//! execution's mode, the lengths of names and URIs, the size and shape of a
//! tool call's arguments.

use serde_json::{Map, Value};

use super::Mode;
use crate::error::{ErrorCode, ForgeError};

/// Longest server name, tool name or resource URI accepted from a script,
/// in bytes: the limit both gateways share (see its reason there).
pub use quickforge_core::limits::MAX_NAME_LEN;

/// Refuses `api` (e.g. `forge.callTool`) in search mode.
pub fn mode(mode: Mode, api: &str) -> Result<(), ForgeError> {
    match mode {
        Mode::Execute | Mode::Direct => Ok(()),
        Mode::Search => Err(ForgeError::mode_denied(api)),
    }
}

/// Refuses a name or URI longer than [`MAX_NAME_LEN`].
pub fn name(what: &str, value: &str) -> Result<(), ForgeError> {
    if value.len() > MAX_NAME_LEN {
        return Err(ForgeError::new(
            ErrorCode::InvalidArgument,
            format!(
                "the {what} is {} bytes long, over the {MAX_NAME_LEN}-byte limit",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// The arguments of `server`'s `tool`: at most `max` bytes of JSON, and a
/// JSON object.
pub fn args(
    server: &str,
    tool: &str,
    json: &str,
    max: usize,
) -> Result<Map<String, Value>, ForgeError> {
    if json.len() > max {
        return Err(ForgeError::args_too_large(server, tool, json.len(), max));
    }
    match crate::guest_json::parse_json(json) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(_) => Err(ForgeError::new(
            ErrorCode::InvalidArgument,
            "tool arguments must be a JSON object",
        )),
        Err(e) => Err(ForgeError::new(
            ErrorCode::InvalidArgument,
            format!("tool arguments are not valid JSON: {e}"),
        )),
    }
}
