//! `calls`: where started operations complete.

use futures_util::StreamExt as _;

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::calls::{Completion, Host};

impl Host for ExecutionState {
    async fn next_completion(&mut self) -> Option<Completion> {
        let (id, outcome) = self.calls.next().await?;
        Some(Completion {
            id,
            outcome: outcome.map_err(Into::into),
        })
    }
}
