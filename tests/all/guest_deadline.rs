//! The guest's own deadline (`deadline-ms` in `run-options`, issue 22 item
//! 3): for hosts without fuel, such as edge runtimes, a spinning script or a
//! hanging tool must end as a typed `timeout` before the runtime's own hard
//! stop drops the request. Driven through quickforge's host with the guest
//! deadline set far below its own timeout (10 s) and CPU budget (about
//! 3.6 s of spinning), so only the guest can end these runs in time.

use std::time::Duration;

use quickforge::ErrorKind;

use crate::support::{GUEST_DEADLINE, Kind, error, fails_as, run};

/// Well past the guest deadline (300 ms), well before the default CPU
/// budget (about 3.6 s of spinning on a 2-core machine) or timeout (10 s)
/// could end a run: a run that ends inside it was ended by the guest.
const BOUND: Duration = Duration::from_millis(2500);

/// Without the interrupt handler, a spinning script runs on until the host's
/// fuel ends it as `cpu_budget`, seconds later; with it, the guest ends it
/// as `timeout`, naming its limit, and the next run is served.
#[tokio::test]
async fn a_spinning_script_ends_as_a_timeout_at_the_guest_deadline() {
    let msg = fails_as(
        Kind::GuestDeadline,
        "async () => { while (true) {} }",
        ErrorKind::Timeout,
        BOUND,
    )
    .await;
    let limit = format!("{} ms", GUEST_DEADLINE.as_millis());
    assert!(msg.contains(&limit), "{msg}");
}

/// QuickJS's interrupt is uncatchable by `try`, but it still rejects an
/// async function's promise, which the script can catch and carry on from:
/// without the guest's own record of the deadline, this run would return
/// `"caught"` past its limit.
#[tokio::test]
async fn catching_the_interrupt_does_not_escape_the_timeout() {
    let code = "async () => { \
        try { await (async () => { while (true) {} })(); } catch (e) { return 'caught: ' + e; } \
    }";
    fails_as(Kind::GuestDeadline, code, ErrorKind::Timeout, BOUND).await;
}

/// A script waiting in `calls.next-completion` runs no JS, so no interrupt
/// can fire: the guest bounds the wait with a timer for the time left.
/// Without it the run would wait for the tool (60 s) until the host's own
/// 10 s timeout.
#[tokio::test]
async fn waiting_on_a_hanging_tool_ends_as_a_timeout_at_the_guest_deadline() {
    let code = r#"async () => forge.callTool("alpha", "sleep", { ms: 60000 })"#;
    fails_as(Kind::GuestDeadline, code, ErrorKind::Timeout, BOUND).await;
}

/// A deadline is a bound, not a schedule: a script that finishes well inside
/// it, timers and tool calls included, returns its value.
#[tokio::test]
async fn a_run_inside_the_guest_deadline_returns_its_value() {
    let code = r#"async () => {
        await new Promise((r) => setTimeout(r, 20));
        const r = await forge.callTool("alpha", "sleep", { ms: 20 });
        let s = 0; for (let i = 0; i < 100000; i++) s += i;
        return { s, ok: r !== undefined };
    }"#;
    let report = run(Kind::GuestDeadline, code).await;
    assert!(report.result.is_ok(), "{:?}", error(&report));
}
