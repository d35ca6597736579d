//! The provider builds the native gateway's own failures
//! (`quickforge_core::ForgeError`, its codes and constructors) and turns
//! them into the WIT types only where they cross into the guest.

use crate::bindings::exports::quickforge::sandbox::types::{
    Code as WitCode, ErrorCode as WitErrorCode, ForgeError as Wit,
};
pub use quickforge_core::{Code, ErrorCode, ForgeError};

/// The WIT enum and [`ErrorCode`] name the same cases: the conversion is an
/// exhaustive match, so a case missing on either side does not compile
/// (the list is `quickforge_core::with_error_codes!`, the host's too).
macro_rules! same_codes {
    ($($case:ident),* $(,)?) => {
        fn wit_code(c: ErrorCode) -> WitErrorCode {
            match c { $(ErrorCode::$case => WitErrorCode::$case),* }
        }
    };
}

quickforge_core::with_error_codes!(same_codes);

impl From<ForgeError> for Wit {
    /// Where a failure crosses into the guest: redacted here, once, by the
    /// script's boundary (`quickforge_core::shown::to_script`), as natively.
    fn from(e: ForgeError) -> Wit {
        let e = quickforge_core::shown::to_script(e, &crate::redact::Edge);
        Wit {
            code: match e.code {
                Code::Known(c) => WitCode::Known(wit_code(c)),
                Code::Other(text) => WitCode::Other(text),
            },
            message: e.message,
            retryable: e.retryable,
            suggestion: e.suggestion,
        }
    }
}
