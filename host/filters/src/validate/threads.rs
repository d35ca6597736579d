//! The validator's threads: a few long-lived threads with large stacks,
//! started on first use and fed from one queue.
//!
//! Starting a thread for every script cost 45 µs here (a 32 MiB mapping
//! and a clone per call), more than the validation itself and half of a
//! trivial execution; handing a job to a waiting thread costs a wake-up.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use super::{Rejection, ValidatorLimits};

/// Stack of a validator thread: 32 MiB of address space (pages are only
/// committed when touched). The pre-scan keeps oxc's recursion under about
/// [`super::PRESCAN_LIMIT`] levels of at most ~3 KiB each and our walks
/// under [`super::PHYSICAL_LIMIT`] nodes; the worst inputs that get that far
/// need 2–4 MiB in an unoptimised build (measured), so this is an 8x margin.
pub(super) const STACK_BYTES: usize = 32 << 20;

/// Most validator threads. Validation is CPU-bound, so more threads than
/// cores gain nothing; the sandbox runs at most a few executions at once.
const MAX_THREADS: usize = 8;

type Verdict = Result<(), Rejection>;

/// One script to validate, and where its verdict goes.
struct Job {
    code: String,
    limits: ValidatorLimits,
    reply: Reply,
}

/// Where a verdict goes: a blocked thread, or an async caller.
enum Reply {
    Blocking(Sender<Verdict>),
    Async(tokio::sync::oneshot::Sender<Verdict>),
}

impl Reply {
    /// Whether the caller still waits: an async caller that was cancelled
    /// (its request cancelled, its client gone) is not worth the work.
    fn wanted(&self) -> bool {
        match self {
            Reply::Blocking(_) => true,
            Reply::Async(tx) => !tx.is_closed(),
        }
    }

    fn send(self, verdict: Verdict) {
        // A caller that stopped waiting has nothing to receive it.
        let _ = match self {
            Reply::Blocking(tx) => tx.send(verdict).ok(),
            Reply::Async(tx) => tx.send(verdict).ok(),
        };
    }
}

/// The queue of the validator threads; `None` when not one could be
/// started.
fn queue() -> Option<&'static Sender<Job>> {
    static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (jobs, rx) = channel::<Job>();
            let rx = Arc::new(Mutex::new(rx));
            let threads = std::thread::available_parallelism()
                .map_or(2, usize::from)
                .min(MAX_THREADS);
            let started = (0..threads)
                .filter(|i| {
                    let rx = rx.clone();
                    std::thread::Builder::new()
                        .name(format!("quickforge-validate-{i}"))
                        .stack_size(STACK_BYTES)
                        .spawn(move || work(&rx))
                        .is_ok()
                })
                .count();
            (started > 0).then_some(jobs)
        })
        .as_ref()
}

fn work(jobs: &Mutex<Receiver<Job>>) {
    loop {
        // One thread waits on the queue while the others wait for the lock;
        // the lock is released before the job runs.
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        if !job.reply.wanted() {
            continue;
        }
        let verdict = std::panic::catch_unwind(AssertUnwindSafe(|| {
            super::validate_here(&job.code, &job.limits)
        }))
        .unwrap_or_else(|_| Err(super::unanalysable(&job.code)));
        job.reply.send(verdict);
    }
}

/// Hands `code` to a validator thread; `reply` gets the verdict. Gives the
/// job back when no thread is running.
fn submit(code: String, limits: ValidatorLimits, reply: Reply) -> Result<(), Job> {
    let job = Job {
        code,
        limits,
        reply,
    };
    match queue() {
        Some(q) => q.send(job).map_err(|e| e.0),
        None => Err(job),
    }
}

/// Validates on a validator thread, blocking until the verdict.
pub(super) fn validate(code: &str, limits: &ValidatorLimits) -> Result<(), Rejection> {
    let (tx, rx) = channel();
    match submit(code.to_owned(), limits.clone(), Reply::Blocking(tx)) {
        // A verdict always comes: a panic is caught and answered.
        Ok(()) => rx.recv().unwrap_or_else(|_| Err(super::unanalysable(code))),
        Err(_) => on_own_thread(code, limits),
    }
}

/// Validates on a validator thread without blocking the async runtime.
pub(super) async fn validate_async(code: String, limits: ValidatorLimits) -> Result<(), Rejection> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    match submit(code, limits, Reply::Async(tx)) {
        Ok(()) => rx.await.unwrap_or_else(|_| Err(super::unanalysable(""))),
        Err(job) => tokio::task::spawn_blocking(move || on_own_thread(&job.code, &job.limits))
            .await
            .unwrap_or_else(|_| Err(super::unanalysable(""))),
    }
}

/// The fallback when no validator thread could be started: a thread of our
/// own for this script, or, failing that too, the caller's thread (still
/// bounded by the pre-scan).
fn on_own_thread(code: &str, limits: &ValidatorLimits) -> Result<(), Rejection> {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("quickforge-validate".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || super::validate_here(code, limits));
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(super::unanalysable(code))),
            Err(_) => super::validate_here(code, limits),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "async () => (await forge.callTool('s', 't', {})).length";
    const BAD: &str = "async () => eval('1')";
    /// Under the pre-scan's bound, so oxc parses all of it, recursing 900
    /// levels on the validator thread's stack, before the depth rule refuses
    /// it.
    fn deep() -> String {
        format!("async () => {}1{}", "[".repeat(900), "]".repeat(900))
    }

    fn check(i: usize, verdict: Result<(), Rejection>) {
        match i % 3 {
            0 => assert!(verdict.is_ok(), "{verdict:?}"),
            1 => assert_eq!(verdict.unwrap_err().rule, "eval"),
            _ => assert_eq!(verdict.unwrap_err().rule, "too-deep"),
        }
    }

    fn script(i: usize) -> String {
        match i % 3 {
            0 => GOOD.into(),
            1 => BAD.into(),
            _ => deep(),
        }
    }

    /// Many callers at once, blocking and async, each get their own verdict
    /// from the shared threads.
    #[test]
    fn concurrent_callers_get_their_own_verdicts() {
        std::thread::scope(|s| {
            for i in 0..24 {
                s.spawn(move || {
                    for j in 0..10 {
                        let n = i + j;
                        check(n, validate(&script(n), &ValidatorLimits::default()));
                    }
                });
            }
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let verdicts = (0..60).map(|i| async move {
                (
                    i,
                    validate_async(script(i), ValidatorLimits::default()).await,
                )
            });
            for (i, verdict) in futures_util::future::join_all(verdicts).await {
                check(i, verdict);
            }
        });
    }
}
