//! Host work done on a script's behalf, held to the script's limits.
//!
//! Fuel counts the guest's instructions, not what the host does when the
//! guest calls an import: parsing arguments, checking them against a schema,
//! ranking a search, redacting an error, encoding a manifest. Each of those
//! is bounded in size, but a script can call them in a loop, and the guest
//! yields to tokio only after [`super::FUEL_YIELD_INTERVAL`] of its *own*
//! fuel, so a loop of cheap-for-the-guest, costly-for-the-host calls could
//! hold a tokio worker (and run past the wall deadline) for seconds.
//!
//! Every import is therefore async and metered: [`HostMeter::enter`] refuses
//! to start work once the execution's deadline has passed (a trap the
//! sandbox reports as a timeout), and [`HostMeter::leave`] adds the work's
//! time to what the host did since the last yield and, past
//! [`HOST_YIELD_AFTER`], yields the worker, which is also when the deadline
//! around the execution can fire.
//!
//! The WASI imports (linked from wasmtime-wasi only because the guest's libc
//! and `Math.random`'s per-run seed need them) are not metered: the script
//! cannot call them, the guest calls `wasi:random` once per run for 8 bytes
//! (at most [`super::MAX_RANDOM_BYTES`] per call), and the others read a
//! clock or answer from an empty context (no environment, closed stdio):
//! each is bounded and a few nanoseconds to microseconds of host work.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::deadline::Deadline;

/// Host time an execution may take on a tokio worker between two yields:
/// the same ~1 ms the guest gets between fuel yields, so another execution
/// on the same worker waits at most about this long, whoever does the work.
pub const HOST_YIELD_AFTER: Duration = Duration::from_millis(1);

/// The trap an import raises when it is entered after the execution's
/// deadline: the sandbox reports it as the execution's timeout.
#[derive(Debug, thiserror::Error)]
#[error("the execution's deadline passed while it was calling the host")]
pub struct DeadlinePassed;

/// One execution's meter of host work.
#[derive(Debug)]
pub struct HostMeter {
    deadline: Arc<Deadline>,
    since_yield: Duration,
}

impl HostMeter {
    /// A meter for an execution that must end by `deadline`.
    pub fn new(deadline: Arc<Deadline>) -> HostMeter {
        HostMeter {
            deadline,
            since_yield: Duration::ZERO,
        }
    }

    /// Called as an import starts: the time it started, or the
    /// [`DeadlinePassed`] trap.
    pub fn enter(&self) -> wasmtime::Result<Instant> {
        if self.deadline.passed() {
            return Err(wasmtime::Error::new(DeadlinePassed));
        }
        Ok(Instant::now())
    }

    /// Called as an import that [`enter`](Self::enter)ed at `started`
    /// finishes: yields the worker once the host has worked
    /// [`HOST_YIELD_AFTER`] for this execution since the last yield.
    pub async fn leave(&mut self, started: Instant) {
        self.since_yield += started.elapsed();
        if self.since_yield >= HOST_YIELD_AFTER {
            self.since_yield = Duration::ZERO;
            tokio::task::yield_now().await;
        }
    }

    /// Called after the import awaited something that may have yielded
    /// (a blocking task): the host work since the last yield starts over.
    pub fn yielded(&mut self) {
        self.since_yield = Duration::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deadline(limit: Duration) -> Arc<Deadline> {
        let d = Arc::new(Deadline::default());
        d.start(limit);
        d
    }

    #[tokio::test]
    async fn entering_after_the_deadline_is_a_deadline_trap() {
        let meter = HostMeter::new(deadline(Duration::ZERO));
        let trap = meter.enter().unwrap_err();
        assert!(trap.downcast_ref::<DeadlinePassed>().is_some());
        assert!(
            HostMeter::new(deadline(Duration::from_secs(5)))
                .enter()
                .is_ok()
        );
    }

    #[tokio::test]
    async fn long_host_work_resets_the_count_by_yielding() {
        let mut meter = HostMeter::new(deadline(Duration::from_secs(5)));
        let t = meter.enter().unwrap();
        std::thread::sleep(HOST_YIELD_AFTER * 2);
        meter.leave(t).await;
        assert_eq!(meter.since_yield, Duration::ZERO);
        let t = meter.enter().unwrap();
        meter.leave(t).await;
        assert!(meter.since_yield < HOST_YIELD_AFTER);
    }
}
