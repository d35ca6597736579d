//! A circuit breaker per downstream server, so a dead server fails fast
//! instead of costing every script its full timeout.
//!
//! ```text
//!            N consecutive failures                 recovery timeout passed
//!  Closed ─────────────────────────────▶ Open ─────────────────────────────▶ HalfOpen
//!    ▲  ▲                                 ▲  (calls fail at once with          │
//!    │  └── success resets the count      │   CIRCUIT_OPEN and a retry time)   │ one probe
//!    │                                    └──────── probe fails ───────────────┤ call let
//!    └───────────────────────────────────────────── probe succeeds ────────────┘ through
//! ```
//!
//! Failures are what says the server is unwell: timeouts and broken
//! connections. A tool's own error result (`isError`), a JSON-RPC error or
//! bad arguments are answers, so they count as successes.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{ErrorCode, ForgeError};

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Calls go through; counts consecutive failures.
    Closed {
        /// Failures in a row so far.
        failures: u32,
    },
    /// Calls fail at once until `until`.
    Open {
        /// When a probe may go.
        until: Instant,
    },
    /// One probe call decides; others fail at once meanwhile.
    HalfOpen {
        /// Whether the probe is out.
        probing: bool,
    },
}

/// What a call was admitted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// An ordinary call.
    Normal,
    /// The one probe of a half-open breaker.
    Probe,
}

/// One server's breaker.
#[derive(Debug)]
pub struct Breaker {
    server: String,
    enabled: bool,
    threshold: u32,
    recovery: Duration,
    state: Mutex<State>,
}

impl Breaker {
    /// A closed breaker that opens after `threshold` failures in a row and
    /// probes after `recovery`. A disabled one admits everything.
    pub fn new(server: &str, enabled: bool, threshold: u32, recovery: Duration) -> Breaker {
        Breaker {
            server: server.to_string(),
            enabled,
            threshold: threshold.max(1),
            recovery,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a call, or refuses it with `CIRCUIT_OPEN`.
    pub fn admit(&self) -> Result<Admission, ForgeError> {
        if !self.enabled {
            return Ok(Admission::Normal);
        }
        let now = Instant::now();
        let mut state = self.lock();
        match *state {
            State::Closed { .. } => Ok(Admission::Normal),
            State::Open { until } if now >= until => {
                *state = State::HalfOpen { probing: true };
                Ok(Admission::Probe)
            }
            State::Open { until } => Err(self.open_error(Some(until - now))),
            State::HalfOpen { probing: false } => {
                *state = State::HalfOpen { probing: true };
                Ok(Admission::Probe)
            }
            State::HalfOpen { probing: true } => Err(self.open_error(None)),
        }
    }

    /// Records how an admitted call ended: `failed` for a timeout or a
    /// broken connection.
    pub fn record(&self, admission: Admission, failed: bool) {
        if !self.enabled {
            return;
        }
        let mut state = self.lock();
        let next = match (*state, failed) {
            (_, false) => State::Closed { failures: 0 },
            (State::Closed { failures }, true) if failures + 1 >= self.threshold => {
                tracing::warn!(server = %self.server, failures = failures + 1, "circuit breaker opened");
                State::Open {
                    until: Instant::now() + self.recovery,
                }
            }
            (State::Closed { failures }, true) => State::Closed {
                failures: failures + 1,
            },
            (State::HalfOpen { .. }, true) if admission == Admission::Probe => {
                tracing::warn!(server = %self.server, "circuit breaker probe failed; open again");
                State::Open {
                    until: Instant::now() + self.recovery,
                }
            }
            // A call admitted before the breaker opened ended late: the
            // breaker already knows.
            (other, true) => other,
        };
        if matches!(*state, State::Open { .. } | State::HalfOpen { .. })
            && next == (State::Closed { failures: 0 })
        {
            tracing::info!(server = %self.server, "circuit breaker closed");
        }
        *state = next;
    }

    /// Gives up a probe that never ran (e.g. refused before it was sent),
    /// so the next call can probe.
    pub fn release(&self, admission: Admission) {
        if admission == Admission::Probe {
            let mut state = self.lock();
            if *state == (State::HalfOpen { probing: true }) {
                *state = State::HalfOpen { probing: false };
            }
        }
    }

    fn open_error(&self, wait: Option<Duration>) -> ForgeError {
        let when = match wait {
            Some(w) => format!("the next attempt is allowed in {:.1} s", w.as_secs_f64()),
            None => "a probe call is deciding whether it is back".to_string(),
        };
        ForgeError::new(
            ErrorCode::CircuitOpen,
            format!(
                "server {:?} failed {} times in a row, so calls to it fail at once for now; {when}",
                self.server, self.threshold
            ),
        )
        .suggest("use other servers meanwhile, or retry after the wait")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> Breaker {
        Breaker::new("s", true, 3, Duration::from_secs(10))
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_the_threshold_and_fails_fast() {
        let b = breaker();
        for _ in 0..2 {
            let a = b.admit().unwrap();
            b.record(a, true);
        }
        assert_eq!(b.state(), State::Closed { failures: 2 });
        let a = b.admit().unwrap();
        b.record(a, true);
        assert!(matches!(b.state(), State::Open { .. }));
        let e = b.admit().unwrap_err();
        assert_eq!(e.code, "CIRCUIT_OPEN");
        assert!(e.retryable);
        assert!(e.message.contains("in 10.0 s"), "{}", e.message);
        tokio::time::advance(Duration::from_secs(4)).await;
        assert!(b.admit().unwrap_err().message.contains("in 6.0 s"));
    }

    #[tokio::test(start_paused = true)]
    async fn successes_reset_the_count() {
        let b = breaker();
        for failed in [true, true, false, true, true] {
            let a = b.admit().unwrap();
            b.record(a, failed);
        }
        assert_eq!(b.state(), State::Closed { failures: 2 });
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_lets_one_probe_through() {
        let b = breaker();
        for _ in 0..3 {
            let a = b.admit().unwrap();
            b.record(a, true);
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        let probe = b.admit().unwrap();
        assert_eq!(probe, Admission::Probe);
        assert!(b.admit().unwrap_err().message.contains("probe"));
        // The probe fails: open again for a full recovery timeout.
        b.record(probe, true);
        assert!(matches!(b.state(), State::Open { .. }));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(b.admit().is_err());
        tokio::time::advance(Duration::from_secs(1)).await;
        let probe = b.admit().unwrap();
        b.record(probe, false);
        assert_eq!(b.state(), State::Closed { failures: 0 });
        assert_eq!(b.admit().unwrap(), Admission::Normal);
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_probe_lets_the_next_call_probe() {
        let b = breaker();
        for _ in 0..3 {
            let a = b.admit().unwrap();
            b.record(a, true);
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        let probe = b.admit().unwrap();
        b.release(probe);
        assert_eq!(b.admit().unwrap(), Admission::Probe);
    }

    #[test]
    fn a_disabled_breaker_admits_everything() {
        let b = Breaker::new("s", false, 1, Duration::from_secs(10));
        for _ in 0..10 {
            let a = b.admit().unwrap();
            b.record(a, true);
        }
        assert_eq!(b.admit().unwrap(), Admission::Normal);
    }
}
