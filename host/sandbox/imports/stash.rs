//! `stash`: the session stash, for execute mode only.

use std::time::Duration;

use super::super::State;
use super::super::bindings::quickforge::sandbox::{stash::Host, types::ForgeError as WitError};

impl Host for State {
    fn put(
        &mut self,
        key: String,
        value_json: String,
        ttl_secs: Option<u64>,
    ) -> wasmtime::Result<Result<(), WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .and_then(|()| {
                self.cx
                    .stash
                    .put(&key, value_json, ttl_secs.map(Duration::from_secs))
            })
            .map_err(Into::into))
    }

    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .and_then(|()| self.cx.stash.get(&key))
            .map_err(Into::into))
    }

    fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .and_then(|()| self.cx.stash.delete(&key))
            .map_err(Into::into))
    }

    fn keys(&mut self) -> wasmtime::Result<Result<Vec<String>, WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .map(|()| self.cx.stash.keys())
            .map_err(Into::into))
    }
}
