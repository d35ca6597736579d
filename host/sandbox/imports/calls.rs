//! `calls`: where started operations complete.

use super::super::State;
use super::super::bindings::quickforge::sandbox::calls::{Completion, Host};
use crate::error::ForgeError;

impl Host for State {
    async fn next_completion(&mut self) -> Option<Completion> {
        let joined = self.calls.join_next_with_id().await?;
        let (task, outcome) = match joined {
            Ok((task, (_, outcome))) => (task, outcome),
            Err(e) => {
                tracing::error!(error = %e, "a downstream operation panicked");
                (
                    e.id(),
                    Err(ForgeError::new(
                        "INTERNAL",
                        "the operation failed unexpectedly inside quickforge",
                    )),
                )
            }
        };
        let id = self
            .call_ids
            .remove(&task)
            .expect("every task is registered when spawned");
        Some(Completion {
            id,
            outcome: outcome.map_err(Into::into),
        })
    }
}
