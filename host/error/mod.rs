//! The failures an execution can end in, as the client sees them.
//!
//! [`ErrorKind`] is the stable, typed vocabulary (`timeout`, `cpu_budget`,
//! ...); [`ExecutionError`] carries the kind plus a message a model can act
//! on. [`ForgeError`] is the smaller failure of one `forge.*` call, which the
//! script sees as a thrown `ForgeError` and may catch; its code comes from
//! the one vocabulary, [`ErrorCode`].

// The vocabulary both gateways share lives in `quickforge-core`, so that the
// edge provider builds the same failures in the same words.
pub use quickforge_core::execution::{ErrorKind, ExecutionError};
pub use quickforge_core::{Code, ErrorCode, ForgeError, preview};

/// Every text from outside (script errors, stacks, downstream error messages
/// and bodies) is bounded with this before it is quoted to the model.
pub use quickforge_filters::text::{clip, clip_between_words};
