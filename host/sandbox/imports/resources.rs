//! `resources`: starting resource reads.

use super::super::State;
use super::super::bindings::quickforge::sandbox::{resources::Host, types::ForgeError as WitError};
use crate::audit::{OpKind, Started, Target};

impl Host for State {
    fn start_read(
        &mut self,
        server: String,
        uri: String,
    ) -> wasmtime::Result<Result<u32, WitError>> {
        let at = self.audit_clock();
        let started = super::check_len("server name", &server)
            .and_then(|()| super::check_len("resource URI", &uri))
            .and_then(|()| {
                self.start_operation("forge.readResource", |s| {
                    s.cx.dispatcher.read_resource(&server, &uri)
                })
            });
        self.audit(
            OpKind::ReadResource,
            Target::Resource(&server, &uri),
            at,
            started.as_ref().map(|&id| Started::Running(id)),
        );
        Ok(started.map_err(Into::into))
    }
}
