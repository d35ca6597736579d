//! The host side of every WIT import, one file per interface. Each decodes
//! what the guest sent, hands it to the execution's call pipeline
//! ([`crate::call`]) and encodes the answer; no check lives here.
//!
//! Trap versus error: an import's outer `wasmtime::Result` is a trap (a host
//! bug); everything a script can cause — a policy refusal, a spent budget, a
//! downstream failure — is the WIT-level `forge-error` the guest throws as a
//! `ForgeError`.

mod calls;
mod logging;
mod manifest;
mod resources;
mod stash;
mod tools;

use super::ExecutionState;
use super::bindings::quickforge::sandbox::types as wit;
use crate::call::{Op, Reply, Started};
use crate::error::{Code, ErrorCode, ForgeError};

impl wit::Host for ExecutionState {}

/// The WIT enum and [`ErrorCode`] name the same cases: both conversions
/// are exhaustive matches, so a case missing on either side does not
/// compile.
macro_rules! same_codes {
    ($($case:ident),* $(,)?) => {
        impl From<ErrorCode> for wit::ErrorCode {
            fn from(c: ErrorCode) -> Self {
                match c { $(ErrorCode::$case => wit::ErrorCode::$case),* }
            }
        }
        impl From<wit::ErrorCode> for ErrorCode {
            fn from(c: wit::ErrorCode) -> Self {
                match c { $(wit::ErrorCode::$case => ErrorCode::$case),* }
            }
        }
    };
}

quickforge_core::with_error_codes!(same_codes);

impl From<ForgeError> for wit::ForgeError {
    fn from(e: ForgeError) -> Self {
        // The one place a failure crosses into the script: redacted here, once
        // (`quickforge_core::shown`), so no secret of a downstream error
        // reaches the model, even through a value the script builds from it.
        let e = quickforge_core::shown::to_script(e, &quickforge_core::shown::Native);
        wit::ForgeError {
            code: match e.code {
                Code::Known(c) => wit::Code::Known(c.into()),
                Code::Other(text) => wit::Code::Other(text),
            },
            message: e.message,
            retryable: e.retryable,
            suggestion: e.suggestion,
        }
    }
}

impl ExecutionState {
    /// Runs one import's `work` under the execution's [`HostMeter`]
    /// (see [`super::meter`]): refused once the deadline has passed, and
    /// yielding the worker when the host has worked long enough for this
    /// execution.
    ///
    /// [`HostMeter`]: super::meter::HostMeter
    async fn metered<R: Send>(
        &mut self,
        work: impl FnOnce(&mut Self) -> R + Send,
    ) -> wasmtime::Result<R> {
        let started = self.meter.enter()?;
        let out = work(self);
        self.meter.leave(started).await;
        Ok(out)
    }

    /// Starts a tool call or resource read and returns its call id; it
    /// completes through `calls.next-completion`.
    fn start_call(&mut self, op: Op<'_>) -> Result<u32, wit::ForgeError> {
        match self.pipeline.start(op)? {
            Started::Running(id, running) => {
                let fut = Box::pin(async move { (id, running.await) });
                ExecutionState::track(&mut self.aborts, &self.calls, id, fut);
                Ok(id)
            }
            Started::Stash(_) => Err(unexpected().into()),
        }
    }

    /// Runs a stash operation: the pipeline's steps under the meter, then
    /// the store's answer (at once for memory, a round trip bounded by
    /// `[state] timeout_ms` for Redis), awaited without holding the worker.
    async fn stash(&mut self, op: Op<'_>) -> wasmtime::Result<Result<Reply, wit::ForgeError>> {
        let started = self.metered(|s| s.pipeline.start(op)).await?;
        let pending = match started {
            Ok(Started::Stash(pending)) => pending,
            Ok(Started::Running(..)) => return Ok(Err(unexpected().into())),
            Err(e) => return Ok(Err(e.into())),
        };
        let at = self.meter.enter()?;
        let reply = pending.await;
        self.meter.leave(at).await;
        Ok(reply.map_err(Into::into))
    }
}

/// An answer in the wrong shape for its operation (a stash operation that
/// ran, a call that did not, a reply of another operation): a pipeline bug,
/// reported as `INTERNAL` rather than hidden behind a default.
fn unexpected() -> ForgeError {
    tracing::error!("the call pipeline answered an operation in the wrong shape");
    ForgeError::new(
        ErrorCode::Internal,
        "the operation failed unexpectedly inside quickforge",
    )
}
