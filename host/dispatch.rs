//! The seams between the sandbox and the rest of the gateway: what a script
//! reaches through `forge.callTool`/`forge.readResource` ([`Dispatcher`]),
//! `forge.stash` ([`Stash`]) and `manifest` ([`ManifestView`]).
//!
//! The sandbox only knows these traits. The gateway implements them over live
//! MCP servers; tests implement them in-process.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::error::ForgeError;

/// A boxed, sendable future, as the dispatch traits return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Carries tool calls and resource reads to downstream servers.
pub trait Dispatcher: Send + Sync + 'static {
    /// Refuses at once, before the call counts against the budget, a call
    /// that cannot succeed: an unknown server or tool. The default accepts
    /// everything and leaves the verdict to [`Dispatcher::call_tool`].
    fn check_call(&self, _server: &str, _tool: &str) -> Result<(), ForgeError> {
        Ok(())
    }

    /// Calls `tool` on `server` with `args` (a JSON object); resolves to the
    /// converted result.
    fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Value,
    ) -> BoxFuture<Result<Value, ForgeError>>;

    /// Reads `uri` from `server`.
    fn read_resource(&self, server: &str, uri: &str) -> BoxFuture<Result<Value, ForgeError>>;

    /// The stash space of this execution: the strict server group its calls
    /// have locked it to, if any (see [`crate::stash`]). The default has no
    /// groups.
    fn stash_space(&self) -> Option<std::sync::Arc<str>> {
        None
    }
}

/// Read-only access to the manifest of downstream servers and tools.
pub trait ManifestView: Send + Sync + 'static {
    /// One JSON object per server.
    fn servers(&self) -> Value;
    /// The best `limit` matches for `query`, as a JSON array.
    fn search(&self, query: &str, limit: usize) -> Value;
    /// The full description of one tool.
    fn tool(&self, server: &str, name: &str) -> Result<Value, ForgeError>;
}

/// The dispatcher and manifest of a gateway with no downstream servers: every
/// call fails with `SERVER_NOT_FOUND`, the manifest is empty.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoServers;

impl Dispatcher for NoServers {
    fn check_call(&self, server: &str, _tool: &str) -> Result<(), ForgeError> {
        Err(ForgeError::server_not_found(server))
    }

    fn call_tool(
        &self,
        server: &str,
        _tool: &str,
        _args: Value,
    ) -> BoxFuture<Result<Value, ForgeError>> {
        let err = ForgeError::server_not_found(server);
        Box::pin(async move { Err(err) })
    }

    fn read_resource(&self, server: &str, _uri: &str) -> BoxFuture<Result<Value, ForgeError>> {
        let err = ForgeError::server_not_found(server);
        Box::pin(async move { Err(err) })
    }
}

impl ManifestView for NoServers {
    fn servers(&self) -> Value {
        Value::Array(vec![])
    }

    fn search(&self, _query: &str, _limit: usize) -> Value {
        Value::Array(vec![])
    }

    fn tool(&self, server: &str, _name: &str) -> Result<Value, ForgeError> {
        Err(ForgeError::server_not_found(server))
    }
}
