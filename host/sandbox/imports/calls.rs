//! `calls`: where started operations complete, and the run's timers.
//!
//! A timer is a pending completion like a tool call, but it never enters the
//! call pipeline: no budget, no policy, no audit. It lives in its own set,
//! which the end of a run drops instead of draining, so a timer can never
//! outlive its execution, and the wall deadline bounds every wait on one.

use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::StreamExt as _;
use futures_util::future::{AbortHandle, Abortable};

use super::super::bindings::quickforge::sandbox::calls::{Completion, Host};
use super::super::{Completed, ExecutionState, InFlight};
use crate::call::BoxFuture;

use quickforge_core::limits::{MAX_TIMERS, TIMER_BIT};

impl ExecutionState {
    /// Adds `fut`, completing as `id`, to `set`, cancellable by
    /// `calls.cancel`.
    pub(in crate::sandbox) fn track(
        aborts: &mut std::collections::HashMap<u32, AbortHandle>,
        set: &InFlight,
        id: u32,
        fut: BoxFuture<Completed>,
    ) {
        let (handle, registration) = AbortHandle::new_pair();
        aborts.insert(id, handle);
        set.push(Box::pin(async move {
            Abortable::new(fut, registration).await.ok()
        }));
    }
}

impl ExecutionState {
    /// What the run's timers hold of the host: every entry of the set
    /// (cleared ones too, until a poll drops them) and the fired ones not
    /// yet handed to the guest. A loop of `clearTimeout(setTimeout(..))`
    /// grows the set, not the live ids, so this is what the cap counts.
    fn timers_held(&self) -> usize {
        self.timers.len() + self.timers_fired.len()
    }

    /// Drops the cleared timers from the set without waiting: each
    /// resolves as soon as it is polled; a timer that fired meanwhile is
    /// kept for `next-completion`. Live timers are not ready and stay.
    fn sweep_timers(&mut self) {
        while let Some(Some(done)) = self.timers.next().now_or_never() {
            if let Some(fired) = done {
                self.timers_fired.push_back(fired);
            }
        }
    }
}

impl Host for ExecutionState {
    async fn next_completion(&mut self) -> Option<Completion> {
        if let Some((id, outcome)) = self.timers_fired.pop_front() {
            self.aborts.remove(&id);
            return Some(Completion {
                id,
                outcome: outcome.map_err(Into::into),
            });
        }
        loop {
            // Whichever completes first; `None` once both sets are empty.
            let next = tokio::select! {
                Some(done) = self.calls.next(), if !self.calls.is_empty() => done,
                Some(done) = self.timers.next(), if !self.timers.is_empty() => done,
                else => return None,
            };
            // `None`: a cancelled operation, whose completion never comes.
            let Some((id, outcome)) = next else { continue };
            self.aborts.remove(&id);
            return Some(Completion {
                id,
                outcome: outcome.map_err(Into::into),
            });
        }
    }

    async fn start_timer(&mut self, ms: u32) -> wasmtime::Result<Result<u32, String>> {
        if self.timers_held() >= MAX_TIMERS {
            self.sweep_timers();
        }
        if self.timers_held() >= MAX_TIMERS {
            return Ok(Err(quickforge_core::limits::too_many_timers()));
        }
        self.timers_started = self.timers_started.wrapping_add(1);
        let id = TIMER_BIT | (self.timers_started & !TIMER_BIT);
        let sleep = Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
            (id, Ok("null".to_string()))
        });
        ExecutionState::track(&mut self.aborts, &self.timers, id, sleep);
        Ok(Ok(id))
    }

    async fn cancel(&mut self, id: u32) -> wasmtime::Result<()> {
        if let Some(handle) = self.aborts.remove(&id) {
            handle.abort();
        }
        Ok(())
    }
}
