//! `random`: a fresh seed per run, so `Math.random` differs between runs even
//! though every instance starts from the same snapshot.

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::random::Host;

impl Host for ExecutionState {
    async fn seed(&mut self) -> wasmtime::Result<u64> {
        getrandom::u64().map_err(|e| wasmtime::format_err!("no entropy for the guest's seed: {e}"))
    }
}
