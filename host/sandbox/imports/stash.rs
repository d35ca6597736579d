//! `stash`: the session stash, through the call pipeline.

use std::time::Duration;

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{stash::Host, types::ForgeError as WitError};
use crate::call::{Op, Reply};

impl Host for ExecutionState {
    fn put(
        &mut self,
        key: String,
        value_json: String,
        ttl_secs: Option<u64>,
    ) -> wasmtime::Result<Result<(), WitError>> {
        Ok(self
            .stash(Op::StashPut {
                key: &key,
                value_json,
                ttl: ttl_secs.map(Duration::from_secs),
            })
            .map(|_| ()))
    }

    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, WitError>> {
        Ok(self.stash(Op::StashGet { key: &key }).map(|r| match r {
            Reply::Value(v) => v,
            _ => None,
        }))
    }

    fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, WitError>> {
        Ok(self
            .stash(Op::StashDelete { key: &key })
            .map(|r| matches!(r, Reply::Deleted(true))))
    }

    fn keys(&mut self) -> wasmtime::Result<Result<Vec<String>, WitError>> {
        Ok(self.stash(Op::StashKeys).map(|r| match r {
            Reply::Keys(keys) => keys,
            _ => Vec::new(),
        }))
    }
}
