//! The guards between a routed call and its server: the server's rate
//! limit and circuit breaker (decided at once), then its in-flight slots
//! (waited for), around the request the route's [`super::SendRequest`] makes.

use serde_json::Value;
use tokio::sync::Semaphore;

use super::BoxFuture;
use super::breaker::{Admission, Breaker};
use crate::error::{ErrorCode, ForgeError};
use crate::policy::{RateLimit, ServerGroup};

/// One server's guards, built once with the gateway and shared by every
/// execution.
#[derive(Debug)]
pub struct Guards {
    /// Its strict or open group, if it is in one.
    pub group: Option<ServerGroup>,
    /// Its `calls_per_minute`, if set.
    pub rate: Option<RateLimit>,
    /// Its circuit breaker.
    pub breaker: Breaker,
    /// Slots for its calls in flight (`max_in_flight`).
    pub in_flight: Semaphore,
}

/// Runs the rate limit and the breaker now, and returns the rest of the
/// call: a slot, then the request. A rate limit shared through Redis needs
/// a round trip: then both run as the call's first step instead, in the
/// same order, and their refusal is the call's outcome all the same.
pub fn run(
    guards: Option<std::sync::Arc<Guards>>,
    send: super::SendRequest,
) -> Result<BoxFuture<Result<Value, ForgeError>>, ForgeError> {
    let Some(guards) = guards else {
        return Ok(send());
    };
    if guards.rate.as_ref().is_some_and(|r| r.is_shared()) {
        return Ok(Box::pin(async move {
            if let Some(rate) = &guards.rate {
                rate.take_shared().await?;
            }
            admitted(guards, send)?.await
        }));
    }
    if let Some(rate) = &guards.rate {
        rate.take()?;
    }
    admitted(guards, send)
}

/// The breaker's admission, then the rest of the call.
fn admitted(
    guards: std::sync::Arc<Guards>,
    send: super::SendRequest,
) -> Result<BoxFuture<Result<Value, ForgeError>>, ForgeError> {
    let admission = guards.breaker.admit()?;
    // Made before the future, so that dropping the call even before its
    // first poll releases the admission.
    let mut pending = Pending {
        guards,
        admission: Some(admission),
    };
    Ok(Box::pin(async move {
        let _slot = pending.guards.in_flight.acquire().await.map_err(|_| {
            ForgeError::new(ErrorCode::ServerUnavailable, "the gateway is shutting down")
        })?;
        let result = send().await;
        // Timeouts and broken connections say the server is unwell; answers,
        // even error answers, say it is alive.
        let failed = matches!(&result, Err(e) if e.code.is(ErrorCode::Timeout) || e.code.is(ErrorCode::ServerUnavailable));
        if let Some(admission) = pending.admission.take() {
            pending.guards.breaker.record(admission, failed);
        }
        result
    }))
}

/// Releases an unfinished breaker admission (a probe) if the call is
/// dropped before it ends — its execution ended or was cancelled — so the
/// breaker does not wait for it forever.
struct Pending {
    guards: std::sync::Arc<Guards>,
    admission: Option<Admission>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(a) = self.admission.take() {
            self.guards.breaker.release(a);
        }
    }
}
