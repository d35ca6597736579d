//! `stash`: the session stash, for execute mode only.

use std::time::Duration;

use super::super::State;
use super::super::bindings::quickforge::sandbox::{stash::Host, types::ForgeError as WitError};
use crate::audit::{OpKind, Started, Target};
use crate::error::ForgeError;

impl State {
    /// Runs one stash operation in execute mode, in the execution's stash
    /// space, recording it in the audit trail with the bytes `size` says it
    /// returned.
    fn stash_op<T>(
        &mut self,
        op: OpKind,
        key: Option<&str>,
        value: Option<crate::audit::Digest>,
        run: impl FnOnce(&Self, Option<&std::sync::Arc<str>>) -> Result<T, ForgeError>,
        size: impl FnOnce(&T) -> u64,
    ) -> Result<T, ForgeError> {
        let at = self.audit_clock();
        let space = self.cx.dispatcher.stash_space();
        let result = self
            .require_execute("forge.stash")
            .and_then(|()| run(self, space.as_ref()));
        self.audit(
            op,
            Target::Stash(key, space.as_deref(), value),
            at,
            result.as_ref().map(|v| Started::Done(size(v))),
        );
        result
    }
}

impl Host for State {
    fn put(
        &mut self,
        key: String,
        value_json: String,
        ttl_secs: Option<u64>,
    ) -> wasmtime::Result<Result<(), WitError>> {
        // The value moves into the stash: its digest is taken first, and
        // only when it is audited.
        let digest = self
            .cx
            .audit
            .is_some()
            .then(|| crate::audit::Digest::of(&value_json));
        Ok(self
            .stash_op(
                OpKind::StashPut,
                Some(&key),
                digest,
                |s, space| {
                    s.cx.stash
                        .put(space, &key, value_json, ttl_secs.map(Duration::from_secs))
                },
                |()| 0,
            )
            .map_err(Into::into))
    }

    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, WitError>> {
        Ok(self
            .stash_op(
                OpKind::StashGet,
                Some(&key),
                None,
                |s, space| s.cx.stash.get(space, &key),
                |v| v.as_ref().map_or(0, |v| v.len() as u64),
            )
            .map_err(Into::into))
    }

    fn delete(&mut self, key: String) -> wasmtime::Result<Result<bool, WitError>> {
        Ok(self
            .stash_op(
                OpKind::StashDelete,
                Some(&key),
                None,
                |s, space| s.cx.stash.delete(space, &key),
                |_| 0,
            )
            .map_err(Into::into))
    }

    fn keys(&mut self) -> wasmtime::Result<Result<Vec<String>, WitError>> {
        Ok(self
            .stash_op(
                OpKind::StashKeys,
                None,
                None,
                |s, space| Ok(s.cx.stash.keys(space)),
                |keys| keys.len() as u64,
            )
            .map_err(Into::into))
    }
}
