//! The audit step, outermost: every operation goes into the execution's
//! trail (see [`crate::audit`]) with how far it got — refused, done, or
//! running — and a running call's end is recorded when its future ends.
//! A call whose future is dropped first stays recorded as cancelled. A
//! stash operation is recorded once its store answers (the script awaits
//! it at once, so the trail keeps the script's order).

use std::sync::Arc;
use std::time::Instant;

use super::{BoxFuture, Op, Reply, Started};
use crate::audit::trail::{self, Digest, OpKind, SharedTrail};
use crate::error::ForgeError;

/// What the trail needs of an operation, taken before the steps consume it.
pub struct Before<'a> {
    kind: OpKind,
    server: &'a str,
    name: &'a str,
    key: Option<&'a str>,
    /// The digest of a stash value, taken before the value moves.
    value: Option<Digest>,
    at: Instant,
}

impl<'a> Before<'a> {
    /// Notes `op` as it arrives.
    pub fn of(op: &Op<'a>) -> Before<'a> {
        let (kind, server, name, key, value) = match op {
            Op::CallTool {
                server,
                tool,
                args_json: _,
            } => (OpKind::CallTool, *server, *tool, None, None),
            Op::ReadResource { server, uri } => (OpKind::ReadResource, *server, *uri, None, None),
            Op::StashPut {
                key, value_json, ..
            } => (
                OpKind::StashPut,
                "",
                "",
                Some(*key),
                Some(Digest::of(value_json)),
            ),
            Op::StashGet { key } => (OpKind::StashGet, "", "", Some(*key), None),
            Op::StashDelete { key } => (OpKind::StashDelete, "", "", Some(*key), None),
            Op::StashKeys => (OpKind::StashKeys, "", "", None, None),
        };
        Before {
            kind,
            server,
            name,
            key,
            value,
            at: Instant::now(),
        }
    }
}

/// Records the operation `before` describes, which the steps answered
/// with `result` (`args_json` for a tool call, `space` the stash space in
/// force), and hands `result` on; a running call's future is wrapped so
/// that its end is recorded too.
pub fn record(
    trail: &SharedTrail,
    before: Before<'_>,
    args_json: &str,
    space: Option<Arc<str>>,
    result: Result<Started, ForgeError>,
) -> Result<Started, ForgeError> {
    let result = match result {
        Ok(Started::Stash(pending)) => {
            return Ok(Started::Stash(answered(
                trail.clone(),
                before,
                space,
                pending,
            )));
        }
        other => other,
    };
    let target = match before.kind {
        OpKind::CallTool => trail::Target::Tool(before.server, before.name, args_json),
        OpKind::ReadResource => trail::Target::Resource(before.server, before.name),
        _ => trail::Target::Stash(before.key, space.as_deref(), before.value),
    };
    let started = match &result {
        Ok(Started::Running(id, _)) => Ok(trail::Started::Running(*id)),
        Ok(Started::Stash(_)) => unreachable!("returned above"),
        Err(e) => Err(e),
    };
    trail::lock(trail).record(before.kind, target, before.at, started);
    match result {
        Ok(Started::Running(id, running)) => {
            Ok(Started::Running(id, timed(trail.clone(), id, running)))
        }
        other => other,
    }
}

/// The stash operation `before` describes, recorded in `trail` once the
/// store answers.
fn answered(
    trail: SharedTrail,
    before: Before<'_>,
    space: Option<Arc<str>>,
    pending: BoxFuture<Result<Reply, ForgeError>>,
) -> BoxFuture<Result<Reply, ForgeError>> {
    let (kind, at, value) = (before.kind, before.at, before.value);
    let key = before.key.map(str::to_owned);
    Box::pin(async move {
        let reply = pending.await;
        let started = reply.as_ref().map(|reply| {
            trail::Started::Done(match reply {
                Reply::Stored | Reply::Deleted(_) => 0,
                Reply::Value(v) => v.as_ref().map_or(0, |v| v.len() as u64),
                Reply::Keys(keys) => keys.len() as u64,
            })
        });
        let target = trail::Target::Stash(key.as_deref(), space.as_deref(), value);
        trail::lock(&trail).record(kind, target, at, started);
        reply
    })
}

/// `running`, recording its end in `trail`. Timed from its first poll:
/// operations are driven while the script waits.
fn timed(
    trail: SharedTrail,
    id: u32,
    running: BoxFuture<Result<String, ForgeError>>,
) -> BoxFuture<Result<String, ForgeError>> {
    Box::pin(async move {
        let started = Instant::now();
        let outcome = running.await;
        trail::lock(&trail).finish(id, outcome.as_ref().map(String::as_str), started.elapsed());
        outcome
    })
}
