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
                let space = self.cx.dispatcher.stash_space();
                self.cx.stash.put(
                    space.as_ref(),
                    &key,
                    value_json,
                    ttl_secs.map(Duration::from_secs),
                )
            })
            .map_err(Into::into))
    }

    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .and_then(|()| {
                let space = self.cx.dispatcher.stash_space();
                self.cx.stash.get(space.as_ref(), &key)
            })
            .map_err(Into::into))
    }

    fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .and_then(|()| {
                let space = self.cx.dispatcher.stash_space();
                self.cx.stash.delete(space.as_ref(), &key)
            })
            .map_err(Into::into))
    }

    fn keys(&mut self) -> wasmtime::Result<Result<Vec<String>, WitError>> {
        Ok(self
            .require_execute("forge.stash")
            .map(|()| {
                let space = self.cx.dispatcher.stash_space();
                self.cx.stash.keys(space.as_ref())
            })
            .map_err(Into::into))
    }
}
