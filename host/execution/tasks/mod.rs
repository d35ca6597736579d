//! Executions that outlive the request that started them.
//!
//! Two things in MCP need an `execute` to go on after its request has been
//! answered: a task (the tasks extension, SEP-2663: the client gets a task
//! id and polls `tasks/get`) and a question to a client of the 2026-07-28
//! era (MRTR, SEP-2322: `execute` answers `input_required`, and the client
//! retries with its answers). Both are one [`Run`]: the execution spawned on
//! a tokio task of its own, its questions parked in [`Questions`], its
//! outcome kept until it is fetched or expires. A task's id and an MRTR
//! `requestState` are the same sealed run id.
//!
//! The script is not saved anywhere while it waits: its pending call is a
//! host future inside the spawned execution, and the Wasm instance stays
//! where it is. So a run lives in this process only. A replica of a
//! cluster (`[cluster] replica`) names itself in its run ids, under the
//! seal: a retry or a task poll that a load balancer sends to another
//! replica is forwarded to the owner (see `cli::forward`); one that
//! reaches a process that no longer holds the run (or this one after a
//! restart) is told to run the script again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmcp::model::{
    CallToolResult, DetailedTask, InputRequests, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::relay::Questions;
use crate::state::HandleKey;

/// How run ids begin: `qft_`, then (in a cluster) the owning replica's
/// name and a `.`, then 128 random bits and a tag under the gateway's
/// secret covering all of it (see [`HandleKey::mint_as`]), so an id is
/// checked before any lookup, never taken for a stash handle, and names
/// its owner in a way no client can forge.
pub const RUN_PREFIX: &str = "qft_";

/// The sealed prefix of the runs `owner` mints.
fn prefix_of(owner: Option<&str>) -> String {
    match owner {
        Some(name) => format!("{RUN_PREFIX}{name}."),
        None => RUN_PREFIX.to_string(),
    }
}

/// Bounds on runs; `timeout` and `after` are `[sandbox]` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// A task-run `execute`'s time limit (`task_timeout_secs`), instead of
    /// `timeout_secs`. Fifteen minutes: long enough for a batch of slow
    /// downstream work a client would not hold a request open for, short
    /// enough that a forgotten task frees its slot.
    pub timeout: Duration,
    /// How long an `execute` from a client that accepts tasks runs before
    /// its answer becomes a task (`task_after_ms`). Two seconds: a quick
    /// script answers at once with its result (no polling round trips),
    /// and a slow one stops holding the client's request soon.
    pub after: Duration,
    /// How long a finished run's outcome is kept for the client to fetch:
    /// ten minutes, time for a client polling every few seconds (or one
    /// that was away) to come back; then it is gone.
    pub keep: Duration,
    /// Most runs held at once, running and finished. Running ones are
    /// bounded by the sandbox's slots anyway; this bounds the finished
    /// outcomes kept (each up to `max_output_size`). Default: four per
    /// slot.
    pub max_runs: usize,
    /// The poll interval suggested to clients: one second, quick enough
    /// for a person watching, slow enough to cost nothing.
    pub poll: Duration,
}

impl TaskLimits {
    /// The defaults for a gateway of `max_concurrent` slots.
    pub fn for_slots(max_concurrent: usize) -> TaskLimits {
        TaskLimits {
            timeout: Duration::from_secs(900),
            after: Duration::from_millis(2000),
            keep: Duration::from_secs(600),
            max_runs: (max_concurrent * 4).max(4),
            poll: Duration::from_secs(1),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The execution answered (an error of the script is an `isError`
    /// result, as for a plain `execute`).
    Completed(CallToolResult),
    /// It failed inside quickforge (a panic).
    Failed(String),
    /// The client cancelled it.
    Cancelled,
}

/// Where a run stands, for the request waiting on it.
#[derive(Debug)]
pub enum Phase {
    /// It ended.
    Done(Outcome),
    /// It waits for answers to these questions.
    Asking(InputRequests),
    /// It is still working.
    Working,
}

/// One execution that may outlive its request.
pub struct Run {
    id: String,
    created: SystemTime,
    questions: Arc<Questions>,
    outcome: watch::Sender<Option<(Outcome, SystemTime, Instant)>>,
    abort: Mutex<Option<tokio::task::AbortHandle>>,
    /// Whether a client was ever shown this run as a task (and so may poll
    /// it until it expires); see [`Runs::forget`].
    tasked: AtomicBool,
    /// Whose share of the table it counts against (see [`Runs::start`]).
    holder: Arc<str>,
}

impl Run {
    /// The run's id: the task id, and the MRTR `requestState`.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn ended(&self) -> Option<Outcome> {
        self.outcome.borrow().as_ref().map(|(o, _, _)| o.clone())
    }

    fn finish(&self, outcome: Outcome) {
        self.outcome.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            *slot = Some((outcome, SystemTime::now(), Instant::now()));
            true
        });
    }

    /// Hands the client's answers to the questions they answer.
    pub fn answer(&self, responses: InputResponses) -> usize {
        self.questions.answer(responses)
    }

    /// Stops the run, if it is still going: the execution is dropped (its
    /// downstream calls are cancelled, its slot freed) and it ends
    /// `cancelled`.
    pub fn cancel(&self) {
        self.finish(Outcome::Cancelled);
        if let Some(abort) = self.abort.lock().unwrap_or_else(|p| p.into_inner()).take() {
            abort.abort();
        }
    }

    /// Waits until the run ends, asks something, or `until` passes
    /// (never, if `None`).
    pub async fn settle(&self, until: Option<Instant>) -> Phase {
        let mut ended = self.outcome.subscribe();
        let mut asked = self.questions.watch();
        loop {
            if let Some(outcome) = self.ended() {
                return Phase::Done(outcome);
            }
            let pending = self.questions.pending();
            if !pending.is_empty() {
                return Phase::Asking(pending);
            }
            let timer = async {
                match until {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = ended.changed() => {}
                _ = asked.changed() => {}
                () = timer => return Phase::Working,
            }
        }
    }

    /// The run as a task (SEP-2663), with what its status carries.
    pub fn detailed(&self, limits: &TaskLimits) -> DetailedTask {
        let (payload, updated) = match &*self.outcome.borrow() {
            Some((outcome, at, _)) => (
                match outcome {
                    Outcome::Completed(result) => TaskPayload::Completed {
                        result: object(serde_json::to_value(result).unwrap_or_default()),
                    },
                    Outcome::Failed(message) => TaskPayload::Failed {
                        error: object(serde_json::json!({
                            "code": rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                            "message": message,
                        })),
                    },
                    Outcome::Cancelled => TaskPayload::Cancelled,
                },
                *at,
            ),
            None => {
                let pending = self.questions.pending();
                if pending.is_empty() {
                    (TaskPayload::Working, SystemTime::now())
                } else {
                    (
                        TaskPayload::InputRequired {
                            input_requests: pending,
                        },
                        SystemTime::now(),
                    )
                }
            }
        };
        DetailedTask::new(self.task(payload.status(), updated, limits), payload)
    }

    /// The run as a task without its payload.
    pub fn task(&self, status: TaskStatus, updated: SystemTime, limits: &TaskLimits) -> Task {
        self.tasked.store(true, Ordering::Relaxed);
        let mut task = Task::new(self.id.clone(), status, iso(self.created), iso(updated));
        // From creation: the longest it may run, then how long its outcome
        // is kept. (Waits on a person move a running task's end out.)
        task.ttl_ms = Some((limits.timeout + limits.keep).as_millis() as u64);
        task.poll_interval_ms = Some(limits.poll.as_millis() as u64);
        task
    }
}

fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn iso(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Every run of the gateway.
pub struct Runs {
    key: HandleKey,
    limits: TaskLimits,
    owner: Option<Arc<str>>,
    map: Mutex<HashMap<String, Arc<Run>>>,
}

/// Which finished run makes room in a full table, given each run held as
/// (id, holder, when it finished if it did): the oldest finished run of the
/// holder with the most runs held, or of the next largest that has a
/// finished one; `None` when none has finished. Largest holder pays: a
/// client whose quick tasks fill the table evicts its own outcomes, never
/// the one unfetched result of a client that holds little.
fn room<'a>(held: impl Iterator<Item = (&'a str, &'a str, Option<Instant>)>) -> Option<String> {
    /// Per holder: runs held, and its oldest finished one (when, id).
    type Share<'a> = (usize, Option<(Instant, &'a str)>);
    let mut by_holder: HashMap<&str, Share<'_>> = HashMap::new();
    for (id, holder, finished) in held {
        let (count, oldest) = by_holder.entry(holder).or_default();
        *count += 1;
        if let Some(at) = finished
            && oldest.is_none_or(|(o, _)| at < o)
        {
            *oldest = Some((at, id));
        }
    }
    by_holder
        .into_values()
        .filter_map(|(count, oldest)| oldest.map(|(at, id)| (count, std::cmp::Reverse(at), id)))
        .max()
        .map(|(_, _, id)| id.to_string())
}

impl Runs {
    /// No runs yet; ids sealed with `key`.
    pub fn new(key: HandleKey, limits: TaskLimits) -> Runs {
        Runs {
            key,
            limits,
            owner: None,
            map: Mutex::default(),
        }
    }

    /// The bounds.
    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Run>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `execution` as a run, with `pump` (see
    /// [`crate::relay::Upstream::parked`]) parking its questions beside it;
    /// `None` when `max_runs` runs are held and none has finished (the
    /// caller refuses the execution as busy).
    ///
    /// The run's id is sealed for `subject` (the authenticated caller,
    /// `None` without `[auth]`), so only it can poll, answer or cancel the
    /// run (see [`Runs::get`]).
    ///
    /// `holder` is the fairness key the run counts against: the subject
    /// with `[auth]`, else the session (a stdio connection, an HTTP
    /// session, or for a sessionless 2026-era request the request itself).
    /// When the table is full, the finished run that makes room is the
    /// oldest of the holder with the most runs held ([`room`]), so one
    /// client's stream of tasks evicts its own unfetched outcomes before
    /// anyone else's.
    pub fn start<F>(
        &self,
        execution: F,
        pump: crate::relay::Pump,
        subject: Option<&str>,
        holder: &str,
    ) -> Option<Arc<Run>>
    where
        F: Future<Output = CallToolResult> + Send + 'static,
    {
        let mut map = self.lock();
        let now = Instant::now();
        let keep = self.limits.keep;
        map.retain(|_, run| {
            run.outcome
                .borrow()
                .as_ref()
                .is_none_or(|(_, _, at)| now.duration_since(*at) < keep)
        });
        if map.len() >= self.limits.max_runs {
            let held = map.iter().map(|(id, run)| {
                let finished = run.outcome.borrow().as_ref().map(|(_, _, at)| *at);
                (id.as_str(), &*run.holder, finished)
            });
            match room(held) {
                Some(id) => {
                    map.remove(&id);
                }
                None => return None,
            }
        }
        let run = Arc::new(Run {
            id: self.key.mint_as(&prefix_of(self.owner.as_deref()), subject),
            created: SystemTime::now(),
            questions: Arc::default(),
            outcome: watch::Sender::new(None),
            abort: Mutex::new(None),
            tasked: AtomicBool::new(false),
            holder: holder.into(),
        });
        map.insert(run.id.clone(), run.clone());
        drop(map);
        let running = run.clone();
        let questions = run.questions.clone();
        let task = tokio::spawn(async move {
            use futures_util::FutureExt as _;
            // A panic inside the execution ends the run as failed, so it
            // does not stay `working` for ever.
            let outcome = tokio::select! {
                result = std::panic::AssertUnwindSafe(execution).catch_unwind() => match result {
                    Ok(result) => Outcome::Completed(result),
                    Err(_) => Outcome::Failed("the execution failed inside quickforge".into()),
                },
                () = pump.park(questions) => unreachable!("the pump never ends"),
            };
            running.finish(outcome);
        });
        *run.abort.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
        Some(run)
    }

    /// Lets go of `run`, whose outcome its request has just answered with
    /// (a quick script, or the retry that found the run done), unless it was
    /// ever shown as a task: then its client may still poll it. A run never
    /// tasked cannot be asked for again, and keeping it `keep` long would
    /// hold its output and, once `max_runs` are held, evict the outcome of
    /// a task a client has yet to fetch.
    pub fn forget(&self, run: &Run) {
        if !run.tasked.load(Ordering::Relaxed) {
            self.lock().remove(&run.id);
        }
    }

    /// The run `id` names, if this gateway sealed it and still holds it.
    /// Every failure is the same `None`.
    /// A run started for another subject is `None` too, exactly like one
    /// never started.
    pub fn get(&self, id: &str, subject: Option<&str>) -> Option<Arc<Run>> {
        if !self
            .key
            .opens_as(&prefix_of(self.owner.as_deref()), id, subject)
        {
            return None;
        }
        self.lock().get(id).cloned()
    }

    /// Runs minted from now on name `owner` (this replica) in their ids.
    pub fn owned_by(mut self, owner: Option<Arc<str>>) -> Runs {
        self.owner = owner;
        self
    }

    /// The replica named in its ids (`None` outside a cluster).
    pub fn owner(&self) -> Option<&Arc<str>> {
        self.owner.as_ref()
    }

    /// The replica that minted `id` for `subject`, when `id` is a run id
    /// of a cluster sealed under this gateway's secret (which every replica
    /// shares); `None` for anything else, forged ids and another subject's
    /// ids included.
    pub fn owner_of<'a>(&self, id: &'a str, subject: Option<&str>) -> Option<&'a str> {
        let (name, _) = id.strip_prefix(RUN_PREFIX)?.split_once('.')?;
        self.key
            .opens_as(&prefix_of(Some(name)), id, subject)
            .then_some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Red team round 3, point 6: one subject's quick tasks evicted another
    /// subject's finished, unfetched result from the shared table. The
    /// largest holder pays now, with its own oldest outcome.
    #[test]
    fn the_largest_holder_makes_room_with_its_own_oldest_outcome() {
        let t0 = Instant::now();
        let at = |s: u64| Some(t0 + Duration::from_secs(s));
        // alice's one result is the oldest of all; bob holds three
        let held = [
            ("a1", "alice", at(1)),
            ("b1", "bob", at(5)),
            ("b2", "bob", at(3)),
            ("b3", "bob", None),
        ];
        assert_eq!(room(held.into_iter()).as_deref(), Some("b2"));
        // bob's all still running: alice's finished one is what can go
        let held = [
            ("a1", "alice", at(1)),
            ("b1", "bob", None),
            ("b2", "bob", None),
        ];
        assert_eq!(room(held.into_iter()).as_deref(), Some("a1"));
        // nothing finished: no room
        let held = [("a1", "alice", None), ("b1", "bob", None)];
        assert_eq!(room(held.into_iter()), None);
        // equal holders: the oldest outcome goes
        let held = [("a1", "alice", at(2)), ("b1", "bob", at(1))];
        assert_eq!(room(held.into_iter()).as_deref(), Some("b1"));
    }
}
