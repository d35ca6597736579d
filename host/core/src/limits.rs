//! Limits of one run that both gateways enforce, in one place so the edge
//! cannot drift from the native gateway.

use crate::{ErrorCode, ForgeError};

/// Most timers one run may have pending. A timer costs the host a boxed
/// sleep and an abort handle (a few hundred bytes) until it fires or is
/// cleared; retries, backoff, polling and an `AbortSignal.timeout` per call
/// of a large `forge.parallel` batch need far fewer, and the cap keeps a
/// runaway `setTimeout` loop from growing host memory without bound.
pub const MAX_TIMERS: usize = 1_000;

/// The bit that marks a timer's id (`wit/sandbox.wit`, `start-timer`), so
/// that it never equals a call's (calls are numbered from 1 up to the call
/// budget).
pub const TIMER_BIT: u32 = 1 << 31;

/// Log lines one run keeps by default (`max_log_lines`): enough to follow
/// a script's progress, few enough not to flood a model's context.
pub const DEFAULT_MAX_LOG_LINES: usize = 200;

/// Log bytes one run keeps by default (`max_log_bytes`): 64 KiB, about
/// 16,000 tokens at most, beside a result of its own.
pub const DEFAULT_MAX_LOG_BYTES: usize = 64 * 1024;

/// Why a run may not start another timer, in both gateways' words.
pub fn too_many_timers() -> String {
    format!(
        "too many pending timers: a run may have {MAX_TIMERS} at once; \
         clear the ones you no longer need (clearTimeout, clearInterval) \
         or wait for some to fire"
    )
}

/// Longest server name, tool name or resource URI accepted from a script,
/// in bytes. Names are short identifiers (MCP caps a tool name at 128
/// characters) and a URI is an address, not a payload; 4 KiB leaves room
/// for any real one. Checked at the import boundary, before the name is
/// looked up, folded, compared for a did-you-mean or quoted in a message:
/// each of those is work that grows with the name, and a script can pass a
/// string as large as its heap (a 26 MB name once kept the host busy 22 s
/// past a 5 s limit).
pub const MAX_NAME_LEN: usize = 4096;

/// Refuses `value`, the `what` (`"tool name"`, `"resource URI"`) a script
/// passed to `api` (`"manifest.tool"`), when it is over `max` bytes:
/// `INVALID_ARGUMENT` naming the API, the size and the limit. Only its
/// length is read, so the refusal costs the same for any size.
pub fn bounded(api: &str, what: &str, value: &str, max: usize) -> Result<(), ForgeError> {
    if value.len() <= max {
        return Ok(());
    }
    Err(ForgeError::new(
        ErrorCode::InvalidArgument,
        format!(
            "{api}: the {what} is {} bytes long, over the {max}-byte limit",
            value.len()
        ),
    )
    .suggest(format!("pass the {what} exactly as manifest lists it")))
}

/// [`bounded`] at [`MAX_NAME_LEN`]: a server name, tool name or URI.
pub fn name(api: &str, what: &str, value: &str) -> Result<(), ForgeError> {
    bounded(api, what, value, MAX_NAME_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn an_oversized_name_is_refused_with_the_api_and_the_limit() {
        assert!(name("manifest.tool", "tool name", &"n".repeat(MAX_NAME_LEN)).is_ok());
        let e = name("manifest.tool", "tool name", &"n".repeat(MAX_NAME_LEN + 1)).unwrap_err();
        assert_eq!(e.code, Code::Known(ErrorCode::InvalidArgument));
        assert_eq!(
            e.message,
            "manifest.tool: the tool name is 4097 bytes long, over the 4096-byte limit"
        );
    }
}
