//! The one vocabulary of `ForgeError` codes.
//!
//! [`ErrorCode`] lists every code quickforge itself reports to a script. Its
//! text form (`SERVER_NOT_FOUND`) and its retryability are derived from the
//! enum by strum, not kept in tables. The same list is the WIT enum
//! `error-code` (`wit/sandbox.wit`), which the guest turns into the same
//! text and hands scripts as `ForgeError.codes` (declared in `forge.d.ts`,
//! which names a few as examples). The sandbox's conversion to and from the
//! WIT enum (in `sandbox::imports`) and the guest's list (`guest/src/codes.rs`)
//! do not compile when a case is missing; `tests/all/dts.rs` fails when the
//! texts drift or `ForgeError.codes` differs from this list.
//!
//! [`Code`] is the code a `ForgeError` carries: one of these, or one a
//! script (or an in-process dispatcher) chose when it made its own.
//!
//! The texts are public API: scripts match on them. `INVALID_ARGUMENT` is
//! misuse of the script API (a missing name, arguments that are not an
//! object); `INVALID_ARGUMENTS` is arguments that fail a tool's
//! `inputSchema`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use strum::{EnumIter, EnumProperty, EnumString, IntoStaticStr};

/// Every code quickforge reports. A code is retryable when trying the same
/// call again later may succeed (`retryable` property).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, EnumString, IntoStaticStr, EnumIter, EnumProperty,
)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// A tool call's JSON arguments are over `max_args_size`.
    ArgsTooLarge,
    /// The server's circuit breaker is open after repeated failures.
    #[strum(props(retryable = true))]
    CircuitOpen,
    /// The person declined (or dismissed) the approval a call needed
    /// (`allow_destructive = "ask"`, `confirm`).
    Declined,
    /// The server answered the request with a JSON-RPC error.
    DownstreamError,
    /// A strict server group other than the one this execution is locked to.
    GroupPolicyDenied,
    /// A fault inside quickforge, not the script's.
    Internal,
    /// Misuse of the script API: a missing or oversized name, arguments that
    /// are not a JSON object.
    InvalidArgument,
    /// Arguments that do not match the tool's `inputSchema`.
    InvalidArguments,
    /// The server answered with something that is not a valid result.
    InvalidResponse,
    /// A stash key that is empty, too long or not text.
    InvalidStashKey,
    /// Tool calls, resource reads and the stash in `search` mode.
    ModeDenied,
    /// The server's tool policy (allow, deny, destructive) refuses the tool.
    PolicyDenied,
    /// A per-server or per-gateway rate limit; the message says when to retry.
    #[strum(props(retryable = true))]
    RateLimited,
    /// The server sent a message over its `max_response_mb`.
    ResponseTooLarge,
    /// No configured server has this name.
    ServerNotFound,
    /// The server is not connected (or the connection broke mid-call).
    #[strum(props(retryable = true))]
    ServerUnavailable,
    /// The stash is at its key count or total size limit.
    StashFull,
    /// A stash `ttl` over `max_ttl_secs`.
    StashTtlTooLong,
    /// A stash value over `max_value_size`.
    StashValueTooLarge,
    /// The shared state store (`[state] backend`, Redis) did not answer
    /// within `timeout_ms`, refused the connection, or is full (Redis at
    /// `maxmemory` with `noeviction`); the message says which.
    #[strum(props(retryable = true))]
    StateUnavailable,
    /// A value thrown inside `forge.parallel` that was not a `ForgeError`.
    Thrown,
    /// The server did not answer within its `timeout_secs`.
    #[strum(props(retryable = true))]
    Timeout,
    /// The execution already started `max_tool_calls` operations.
    ToolCallBudget,
    /// The tool ran and reported an error (`isError`).
    ToolError,
    /// The server has no tool of this name.
    ToolNotFound,
}

/// Calls the macro `$m` with every [`ErrorCode`] case, in order: for the
/// conversions to and from a WIT binding's `error-code` (the host's
/// `sandbox::imports`, the edge provider's `error.rs`), which are
/// exhaustive matches, so a case missing on either side does not compile.
/// A test holds this list to the enum.
#[macro_export]
macro_rules! with_error_codes {
    ($m:ident) => {
        $m! {
            ArgsTooLarge,
            CircuitOpen,
            Declined,
            DownstreamError,
            GroupPolicyDenied,
            Internal,
            InvalidArgument,
            InvalidArguments,
            InvalidResponse,
            InvalidStashKey,
            ModeDenied,
            PolicyDenied,
            RateLimited,
            ResponseTooLarge,
            ServerNotFound,
            ServerUnavailable,
            StashFull,
            StashTtlTooLong,
            StashValueTooLarge,
            StateUnavailable,
            Thrown,
            Timeout,
            ToolCallBudget,
            ToolError,
            ToolNotFound
        }
    };
}

impl ErrorCode {
    /// The code's text, e.g. `SERVER_NOT_FOUND`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether the same call may succeed if tried again later.
    pub fn retryable(self) -> bool {
        self.get_bool("retryable").unwrap_or(false)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The code of one `ForgeError`: quickforge's own, or another (a code a
/// script threw itself, or one an in-process dispatcher chose). Serialized
/// as its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Code {
    /// One of quickforge's codes.
    Known(ErrorCode),
    /// Any other text.
    Other(String),
}

impl Code {
    /// The code's text.
    pub fn as_str(&self) -> &str {
        match self {
            Code::Known(c) => c.as_str(),
            Code::Other(s) => s,
        }
    }

    /// Whether this is quickforge's `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        *self == Code::Known(code)
    }
}

impl From<ErrorCode> for Code {
    fn from(c: ErrorCode) -> Code {
        Code::Known(c)
    }
}

impl From<&str> for Code {
    /// Recognizes quickforge's own codes by their text.
    fn from(s: &str) -> Code {
        s.parse()
            .map_or_else(|_| Code::Other(s.to_string()), Code::Known)
    }
}

impl From<String> for Code {
    fn from(s: String) -> Code {
        match s.parse() {
            Ok(c) => Code::Known(c),
            Err(_) => Code::Other(s),
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        String::deserialize(d).map(Code::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator as _;

    #[test]
    fn texts_round_trip_and_retryability_is_derived() {
        for c in ErrorCode::iter() {
            assert_eq!(Code::from(c.as_str()), Code::Known(c));
            assert!(
                c.as_str()
                    .chars()
                    .all(|ch| ch.is_ascii_uppercase() || ch == '_')
            );
        }
        assert_eq!(ErrorCode::ServerNotFound.as_str(), "SERVER_NOT_FOUND");
        assert_eq!(ErrorCode::ToolCallBudget.as_str(), "TOOL_CALL_BUDGET");
        assert!(ErrorCode::Timeout.retryable() && ErrorCode::RateLimited.retryable());
        assert!(!ErrorCode::ToolNotFound.retryable());
        assert_eq!(Code::from("MY_OWN"), Code::Other("MY_OWN".into()));
        macro_rules! listed {
            ($($case:ident),*) => { vec![$(ErrorCode::$case),*] };
        }
        let listed: Vec<ErrorCode> = crate::with_error_codes!(listed);
        assert_eq!(
            listed,
            ErrorCode::iter().collect::<Vec<_>>(),
            "with_error_codes!"
        );
        assert_eq!(
            serde_json::to_string(&Code::Known(ErrorCode::Timeout)).unwrap(),
            "\"TIMEOUT\""
        );
    }
}
