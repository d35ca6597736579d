//! `ForgeError` codes as scripts see them: the WIT `error-code` cases (the
//! one list the host, the guest and `forge.d.ts` share) in SCREAMING_SNAKE
//! text, `server-not-found` → `SERVER_NOT_FOUND`.

use std::fmt::Write as _;

use crate::quickforge::sandbox::types::{Code, ErrorCode};

/// The text of `code`.
pub fn text(code: &Code) -> String {
    match code {
        Code::Known(c) => known(*c),
        Code::Other(s) => s.clone(),
    }
}

/// The text of one of quickforge's own codes, derived from the case's name.
/// wit-bindgen names a case only in its `Debug` form (`ErrorCode::ServerNotFound`;
/// `name()` is generated for error types alone), so the camel-case name is
/// read from there. Only failures take this path.
pub fn known(code: ErrorCode) -> String {
    let mut debug = String::new();
    let _ = write!(debug, "{code:?}");
    let camel = debug.rsplit("::").next().unwrap_or(&debug);
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Defines [`every`] from one list of the WIT enum's cases; the match in
/// it does not compile when the WIT enum gains a case the list lacks.
macro_rules! every_code {
    ($($case:ident),* $(,)?) => {
        /// Every case of the WIT `error-code`, in its order: what scripts
        /// read as `ForgeError.codes`.
        pub fn every() -> impl Iterator<Item = ErrorCode> {
            fn _exhaustive(code: ErrorCode) {
                match code {
                    $(ErrorCode::$case => ()),*
                }
            }
            [$(ErrorCode::$case),*].into_iter()
        }
    };
}

every_code!(
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
    ToolNotFound,
);
