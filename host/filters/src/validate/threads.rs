//! The validator's threads: a few long-lived threads with large stacks,
//! started on first use, each blocking on one shared job queue.
//!
//! Starting a thread for every script cost 45 µs here (a 32 MiB mapping
//! and a clone per call), more than the validation itself and half of a
//! trivial execution; handing a job to a waiting thread costs one futex
//! wake-up. Hand-written rather than rayon's pool: an idle rayon worker
//! spins and calls `sched_yield` for a while before it sleeps, which on a
//! two-core machine took CPU from the executions themselves (measured: about
//! 8 context switches per trivial `execute`, and a share of its CPU time);
//! the validator needs no work stealing, only a thread with a big stack.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Condvar, Mutex, OnceLock};

use super::{Rejection, ValidatorLimits};

/// Stack of a validator thread: 32 MiB of address space (pages are only
/// committed when touched). The pre-scan keeps oxc's recursion under about
/// [`super::prescan::PRESCAN_LIMIT`] levels of at most ~3 KiB each and the
/// walk under [`super::shape::PHYSICAL_LIMIT`] nodes; the worst inputs that
/// get that far need 2–4 MiB in an unoptimised build (measured), so this is
/// an 8x margin.
const STACK_BYTES: usize = 32 << 20;

/// Most validator threads. Validation is CPU-bound, so more threads than
/// cores gain nothing; the sandbox runs at most a few executions at once.
const MAX_THREADS: usize = 8;

type Verdict = Result<(), Rejection>;

/// One validation handed to the threads.
type Job = Box<dyn FnOnce() + Send>;

/// The jobs waiting for a validator thread. A mutex and a condition
/// variable, not a channel: an idle thread parks on the futex at once, with
/// no spinning before it sleeps.
struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

/// The queue the validator threads take jobs from; `None` when no thread
/// could be started.
fn pool() -> Option<&'static Queue> {
    static POOL: OnceLock<Option<Queue>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism()
            .map_or(2, usize::from)
            .min(MAX_THREADS);
        let started = (0..threads)
            .filter(|i| {
                std::thread::Builder::new()
                    .name(format!("quickforge-validate-{i}"))
                    .stack_size(STACK_BYTES)
                    .spawn(work)
                    .is_ok()
            })
            .count();
        (started > 0).then(|| Queue {
            jobs: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        })
    })
    .as_ref()
}

/// A validator thread: runs queued jobs, one at a time, for the life of the
/// process. Started from inside [`pool`]'s initialization, its own call to
/// [`pool`] waits for that to finish.
fn work() {
    let Some(queue) = pool() else { return };
    loop {
        let job = {
            let mut jobs = queue.jobs.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(job) = jobs.pop_front() {
                    break job;
                }
                jobs = queue.ready.wait(jobs).unwrap_or_else(|p| p.into_inner());
            }
        };
        job();
    }
}

impl Queue {
    /// Queues `job` for the next idle validator thread.
    fn push(&self, job: Job) {
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(job);
        self.ready.notify_one();
    }
}

/// The verdict, with a panic of the analysis answered as
/// [`super::unanalysable`], on the current thread; `prescanned` is the
/// pre-scan's estimate when the caller already has it.
pub(super) fn verdict(code: &str, limits: &ValidatorLimits, prescanned: Option<usize>) -> Verdict {
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        super::validate_here(code, limits, prescanned)
    }))
    .unwrap_or_else(|_| Err(super::unanalysable(code)))
}

/// Validates on a validator thread, blocking until the verdict.
pub(super) fn validate(code: &str, limits: &ValidatorLimits) -> Verdict {
    let Some(queue) = pool() else {
        return on_own_thread(code, limits);
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let (owned, limits) = (code.to_owned(), limits.clone());
    queue.push(Box::new(move || {
        let _ = tx.send(verdict(&owned, &limits, None));
    }));
    rx.recv().unwrap_or_else(|_| Err(super::unanalysable(code)))
}

/// Validates on a validator thread without blocking the async runtime.
pub(super) async fn validate_async(code: String, limits: ValidatorLimits) -> Verdict {
    let Some(queue) = pool() else {
        return tokio::task::spawn_blocking(move || on_own_thread(&code, &limits))
            .await
            .unwrap_or_else(|_| Err(super::unanalysable("")));
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    queue.push(Box::new(move || {
        // A caller that stopped waiting (its request cancelled, its client
        // gone) is not worth the work.
        if !tx.is_closed() {
            let _ = tx.send(verdict(&code, &limits, None));
        }
    }));
    rx.await.unwrap_or_else(|_| Err(super::unanalysable("")))
}

/// The fallback when no validator thread could be started: a thread of our
/// own for this script, or, failing that too, the caller's thread (still
/// bounded by the pre-scan).
fn on_own_thread(code: &str, limits: &ValidatorLimits) -> Verdict {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("quickforge-validate".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || verdict(code, limits, None));
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(super::unanalysable(code))),
            Err(_) => verdict(code, limits, None),
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

    /// The deepest script validated on the caller's thread checks out on a
    /// thread with an eighth of an async runtime thread's stack; one level
    /// deeper, or a longer script, goes to the validator threads.
    #[test]
    fn short_shallow_scripts_validate_on_a_small_stack() {
        let at_bound = |depth: usize| {
            format!(
                "async () => {}1{}",
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            )
        };
        // The deepest bracket nesting that still fits (the estimate also
        // counts the arrow's pending body).
        let depth = (2..super::super::INLINE_MAX_DEPTH * 2)
            .take_while(|d| super::super::fits_any_stack(&at_bound(*d)).is_some())
            .last()
            .expect("shallow scripts fit");
        assert!(depth + 2 >= super::super::INLINE_MAX_DEPTH, "{depth}");
        assert!(super::super::fits_any_stack(&at_bound(depth + 1)).is_none());
        let shallow = at_bound(depth);
        let long = format!("async () => {{ let a; {}}}", "a = 1; ".repeat(2 * 1024));
        assert!(super::super::fits_any_stack(&long).is_none());
        let verdict = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || super::super::validate(&shallow, &ValidatorLimits::default()))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(
            verdict.is_ok() || verdict.as_ref().unwrap_err().rule == "too-deep",
            "{verdict:?}"
        );
        let long_verdict = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || super::super::validate(&long, &ValidatorLimits::default()))
            .unwrap()
            .join()
            .unwrap();
        assert!(long_verdict.is_ok(), "{long_verdict:?}");
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
