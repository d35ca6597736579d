//! `stash`: the session stash, through the call pipeline.

use std::time::Duration;

use super::super::ExecutionState;
use super::super::bindings::quickforge::sandbox::{stash::Host, types::ForgeError as WitError};
use crate::call::{Op, Reply};

impl Host for ExecutionState {
    async fn put(
        &mut self,
        key: String,
        value_json: String,
        ttl_secs: Option<u64>,
    ) -> wasmtime::Result<Result<(), WitError>> {
        let reply = self
            .stash(Op::StashPut {
                key: &key,
                value_json,
                ttl: ttl_secs.map(Duration::from_secs),
            })
            .await?;
        Ok(reply.and_then(|r| match r {
            Reply::Stored => Ok(()),
            _ => Err(super::unexpected().into()),
        }))
    }

    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, WitError>> {
        let reply = self.stash(Op::StashGet { key: &key }).await?;
        Ok(reply.and_then(|r| match r {
            Reply::Value(v) => Ok(v),
            _ => Err(super::unexpected().into()),
        }))
    }

    async fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, WitError>> {
        let reply = self.stash(Op::StashDelete { key: &key }).await?;
        Ok(reply.and_then(|r| match r {
            Reply::Deleted(existed) => Ok(existed),
            _ => Err(super::unexpected().into()),
        }))
    }

    async fn keys(&mut self) -> wasmtime::Result<Result<Vec<String>, WitError>> {
        let reply = self.stash(Op::StashKeys).await?;
        Ok(reply.and_then(|r| match r {
            Reply::Keys(keys) => Ok(keys),
            _ => Err(super::unexpected().into()),
        }))
    }
}
