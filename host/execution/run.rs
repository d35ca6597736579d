//! One execution of a session, its steps in the order the room's doc lists
//! them: the audit line opened, then the gate (shutdown, the execution
//! rate, the session's share of the slots, the code size, the validator),
//! the context, the sandbox, the report, the audit line written.

use std::sync::Arc;

use super::Executor;
use crate::gateway::STARTUP_WAIT;
use crate::gateway::convert::Shape;
use crate::relay::Upstream;
use crate::sandbox::{ExecutionContext, Mode, Report};
use crate::session::Session;
use crate::state::{Handle, Stash};
use crate::validate::Rule;

impl Executor {
    /// Runs `code` in `mode` for `session` with its own stash, and records
    /// it in the audit log, if there is one.
    pub async fn run(&self, session: &Session, mode: Mode, code: &str) -> Report {
        self.run_with(session, mode, code, session.handle.clone(), None)
            .await
            .0
    }

    /// Runs `code` in `mode` with the stash of `handle`, and records it in
    /// the audit log, if there is one; with the report, the handle when the
    /// script used the stash (the client needs it to come back to it).
    /// `upstream` is the client side of the execution, when an MCP client
    /// started it.
    pub async fn run_with(
        &self,
        session: &Session,
        mode: Mode,
        code: &str,
        handle: Handle,
        upstream: Option<Arc<Upstream>>,
    ) -> (Report, Option<Handle>) {
        self.audited(session, mode, code, handle, |trail, stash| {
            self.admit(session, mode, code, trail, stash, upstream)
        })
        .await
    }

    /// Does `work` (an execution, or a direct tool call: `mode`, described
    /// by `code`) with the stash of `handle`, and records it in the audit
    /// log, if there is one; with its report, the handle when the stash
    /// was used.
    pub async fn audited<W, F>(
        &self,
        session: &Session,
        mode: Mode,
        code: &str,
        handle: Handle,
        work: W,
    ) -> (Report, Option<Handle>)
    where
        W: FnOnce(Option<crate::audit::SharedTrail>, Arc<Stash>) -> F,
        F: std::future::Future<Output = Report>,
    {
        let stash = Arc::new(Stash::new(self.store.clone(), handle));
        let report = match &self.audit {
            None => work(None, stash.clone()).await,
            Some(audit) => {
                let mut audited = Audited {
                    audit,
                    arrival: crate::audit::Arrival {
                        session: session.audit_id(),
                        subject: session.subject_id(),
                        replica: &self.replica,
                        stash: stash.handle(),
                        at: std::time::SystemTime::now(),
                        mode,
                        code,
                    },
                    trail: audit.trail(),
                    written: false,
                };
                let trail = Some(audited.trail.clone());
                let report = work(trail, stash.clone()).await;
                audited.write(Some(&report));
                report
            }
        };
        let used = stash.touched().then(|| stash.handle().clone());
        (report, used)
    }

    /// Runs `code` unless the gateway is closing, over its execution rate,
    /// or the session holds its share of the slots, recording its
    /// operations in `trail`.
    async fn admit(
        &self,
        session: &Session,
        mode: Mode,
        code: &str,
        trail: Option<crate::audit::SharedTrail>,
        stash: Arc<Stash>,
        upstream: Option<Arc<Upstream>>,
    ) -> Report {
        if let Some(refused) = self.closing("executions") {
            return refused;
        }
        let rate = match &self.rate {
            Some(rate) => rate.take_shared_for(session.subject_id()).await,
            None => Ok(()),
        };
        if let Err(e) = rate {
            let mut err = crate::error::ExecutionError::new(
                crate::error::ErrorKind::RateLimited,
                e.message.clone(),
            );
            err.forge = Some(e);
            return Report::refused(err);
        }
        self.running
            .track_future(async {
                let limits = self.sandbox.limits();
                match session
                    .slot(limits.max_queue_wait, limits.max_concurrent)
                    .await
                {
                    Ok(_slot) => self.run_now(mode, code, trail, stash, upstream).await,
                    Err(busy) => Report::refused(busy),
                }
            })
            .await
    }

    async fn run_now(
        &self,
        mode: Mode,
        code: &str,
        trail: Option<crate::audit::SharedTrail>,
        stash: Arc<Stash>,
        upstream: Option<Arc<Upstream>>,
    ) -> Report {
        // Oversized code is the sandbox's to refuse, without parsing it.
        if self.validate && code.len() <= self.sandbox.limits().max_code_size {
            let verdict = crate::validate::validate_async(
                code.to_string(),
                crate::validate::ValidatorLimits::default(),
            )
            .await;
            let refusal = match verdict {
                Ok(()) => None,
                // Code that does not parse, or is not one function, keeps
                // the kinds the sandbox would give it; the rest is policy.
                Err(rejection) => Some((
                    match rejection.kind {
                        Rule::Syntax => crate::error::ErrorKind::Syntax,
                        Rule::NotAsyncArrow => crate::error::ErrorKind::NotAFunction,
                        Rule::Internal => crate::error::ErrorKind::Internal,
                        _ => crate::error::ErrorKind::Validation,
                    },
                    rejection.to_string(),
                )),
            };
            if let Some((kind, message)) = refusal {
                return Report::refused(crate::error::ExecutionError::new(kind, message));
            }
        }
        let cx = self.context(Shape::Script, trail, stash, upstream).await;
        self.sandbox.run(mode, code, cx).await
    }

    /// Step 2, the one shutdown check: once the gateway drains, the refusal
    /// of new `what` (executions, calls), else `None`.
    pub(super) fn closing(&self, what: &str) -> Option<Report> {
        self.running.is_closed().then(|| {
            Report::refused(crate::error::ExecutionError::new(
                crate::error::ErrorKind::Busy,
                format!("the gateway is shutting down and takes no new {what}"),
            ))
        })
    }

    /// What one execution (or direct call) reaches, once the servers have
    /// had their start-up: the manifest as it is now, the router over it
    /// giving tool results in `shape`, and the execution's stash, audit
    /// trail and client.
    pub async fn context(
        &self,
        shape: Shape,
        trail: Option<crate::audit::SharedTrail>,
        stash: Arc<Stash>,
        upstream: Option<Arc<Upstream>>,
    ) -> ExecutionContext {
        let gateway = &self.gateway;
        gateway.wait_started(STARTUP_WAIT).await;
        let snapshot = gateway.snapshot();
        let router = gateway
            .router(&snapshot, upstream.clone())
            .with_shape(shape);
        let cx = ExecutionContext {
            servers: Arc::new(router),
            manifest: Arc::new(snapshot),
            stash,
            audit: trail,
            ..ExecutionContext::default()
        };
        match upstream {
            Some(upstream) => cx.for_upstream(upstream),
            None => cx,
        }
    }
}

/// Writes one execution's audit line exactly once: when it finishes, or,
/// if its future is dropped first (the client cancelled the request or went
/// away), as `cancelled` with the operations it had started.
struct Audited<'a> {
    audit: &'a crate::audit::AuditLog,
    arrival: crate::audit::Arrival<'a>,
    trail: crate::audit::SharedTrail,
    written: bool,
}

impl Audited<'_> {
    fn write(&mut self, report: Option<&Report>) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let record = self.audit.record(&self.arrival, report, &self.trail);
        self.audit.write(&record);
    }
}

impl Drop for Audited<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let report = Report::refused(crate::error::ExecutionError::new(
                crate::error::ErrorKind::Internal,
                "the execution panicked inside quickforge",
            ));
            self.write(Some(&report));
        } else {
            self.write(None);
        }
    }
}
