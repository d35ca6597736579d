//! `calls`: where started operations complete.

use futures_util::StreamExt as _;

use super::super::State;
use super::super::bindings::quickforge::sandbox::calls::{Completion, Host};

impl Host for State {
    async fn next_completion(&mut self) -> Option<Completion> {
        let (id, outcome) = self.calls.next().await?;
        Some(Completion {
            id,
            outcome: outcome.map_err(Into::into),
        })
    }
}
