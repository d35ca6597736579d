//! The validator's threads: a rayon pool of a few long-lived threads with
//! large stacks, started on first use.
//!
//! Starting a thread for every script cost 45 µs here (a 32 MiB mapping
//! and a clone per call), more than the validation itself and half of a
//! trivial execution; handing a job to a waiting pool thread costs a
//! wake-up.

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

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

/// The validator pool; `None` when it could not be started.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism()
            .map_or(2, usize::from)
            .min(MAX_THREADS);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .stack_size(STACK_BYTES)
            .thread_name(|i| format!("quickforge-validate-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// The verdict, with a panic of the analysis answered as
/// [`super::unanalysable`].
fn verdict(code: &str, limits: &ValidatorLimits) -> Verdict {
    std::panic::catch_unwind(AssertUnwindSafe(|| super::validate_here(code, limits)))
        .unwrap_or_else(|_| Err(super::unanalysable(code)))
}

/// Validates on a validator thread, blocking until the verdict.
pub(super) fn validate(code: &str, limits: &ValidatorLimits) -> Verdict {
    match pool() {
        Some(pool) => pool.install(|| verdict(code, limits)),
        None => on_own_thread(code, limits),
    }
}

/// Validates on a validator thread without blocking the async runtime.
pub(super) async fn validate_async(code: String, limits: ValidatorLimits) -> Verdict {
    let Some(pool) = pool() else {
        return tokio::task::spawn_blocking(move || on_own_thread(&code, &limits))
            .await
            .unwrap_or_else(|_| Err(super::unanalysable("")));
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    pool.spawn(move || {
        // A caller that stopped waiting (its request cancelled, its client
        // gone) is not worth the work.
        if !tx.is_closed() {
            let _ = tx.send(verdict(&code, &limits));
        }
    });
    rx.await.unwrap_or_else(|_| Err(super::unanalysable("")))
}

/// The fallback when the pool could not be started: a thread of our own
/// for this script, or, failing that too, the caller's thread (still
/// bounded by the pre-scan).
fn on_own_thread(code: &str, limits: &ValidatorLimits) -> Verdict {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("quickforge-validate".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || verdict(code, limits));
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(super::unanalysable(code))),
            Err(_) => verdict(code, limits),
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
