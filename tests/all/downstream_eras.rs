//! Downstream servers of either protocol era through the real binary (issue
//! 20, item 3): a modern-only server on the official Python SDK
//! (tests/servers/modern_only.py, which refuses the 2025 `initialize`), and
//! legacy-only servers on the TypeScript SDK (tests/servers/fixture.mjs,
//! server-everything), all in one config.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::mcp::{
    CALL_BOUND, Session, connect, eventually, everything, fixture, install_servers, scratch,
    servers_dir, toml_str, write_config,
};

/// `[servers.modern]`: modern_only.py over stdio, logging the tasks it is
/// asked to cancel to `cancel_log`.
pub fn modern(cancel_log: &Path) -> String {
    install_servers();
    format!(
        "[servers.modern]\ncommand = {}\nargs = [{}]\nenv = {{ MODERN_CANCEL_LOG = {} }}\ntimeout_secs = 20\n",
        toml_str(&servers_dir().join(".venv/bin/python").to_string_lossy()),
        toml_str(&servers_dir().join("modern_only.py").to_string_lossy()),
        toml_str(&cancel_log.to_string_lossy()),
    )
}

/// A gateway with `before` and [`modern`] (logging to dir/cancel.log) in its
/// config, once the modern server answers a call.
async fn modern_up(dir: &Path, before: &str) -> Session {
    let config = format!("{before}{}", modern(&dir.join("cancel.log")));
    let s = connect(&write_config(dir, &config)).await;
    s.execute_when_ready(
        CALL_BOUND,
        r#"async () => forge.callTool("modern", "echo", { text: "up" })"#,
    )
    .await;
    s
}

/// Weakness: quickforge connected downstream with `initialize` pinned to
/// 2025-11-25 only, so a server that speaks 2026-07-28 alone was
/// unreachable (its `initialize` answer is -32022). Here a modern-only and
/// a legacy-only server sit in one config and one script calls both.
#[tokio::test]
async fn a_modern_only_and_a_legacy_only_server_are_both_reachable() {
    let dir = scratch("eras-both");
    let config = format!("{}{}", modern(&dir.join("cancel.log")), everything());
    let s = connect(&write_config(&dir, &config)).await;
    let value = s
        .execute_when_ready(
            CALL_BOUND,
            r#"async () => ({
                modern: await forge.callTool("modern", "echo", { text: "hi" }),
                legacy: await forge.callTool("everything", "echo", { message: "hi" }),
            })"#,
        )
        .await;
    assert_eq!(value["modern"], "modern:hi", "{value:#}");
    assert_eq!(value["legacy"], "Echo: hi", "{value:#}");
}

/// Weakness: a modern-only downstream was reached over stdio only. Here
/// modern_only.py serves streamable HTTP through the Python SDK's
/// single-exchange 2026-07-28 entry alone (a 2025 `initialize` POST is
/// refused), and quickforge reaches it by URL: a plain result, and a task
/// polled with `tasks/get` over HTTP to its result.
#[tokio::test]
async fn a_modern_only_server_over_streamable_http_is_reachable() {
    let (_server, port) = crate::mcp::python_listening(
        "modern_only.py",
        &["--http".as_ref(), "0".as_ref()],
        "modern: listening on",
    )
    .await;
    let dir = scratch("eras-modern-http");
    let config =
        format!("[servers.modern]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_secs = 20\n");
    let s = connect(&write_config(&dir, &config)).await;
    let value = s
        .execute_when_ready(
            CALL_BOUND,
            r#"async () => ({
                plain: await forge.callTool("modern", "echo", { text: "over http" }),
                task: await forge.callTool("modern", "slow_task", { ms: 300, text: "y" }),
            })"#,
        )
        .await;
    assert_eq!(value["plain"], "modern:over http", "{value:#}");
    assert_eq!(value["task"], "task done:y", "{value:#}");
    s.close().await;
}

/// Weakness: a `CreateTaskResult` (`resultType: "task"`) from a downstream
/// ended in "unexpected result". Now the task is polled with `tasks/get`
/// until it completes, and its result reaches the script like a plain one.
#[tokio::test]
async fn a_task_result_is_polled_to_completion() {
    let dir = scratch("eras-task");
    let s = connect(&write_config(&dir, &modern(&dir.join("cancel.log")))).await;
    let value = s
        .execute_when_ready(
            CALL_BOUND,
            r#"async () => forge.callTool("modern", "slow_task", { ms: 700, text: "x" })"#,
        )
        .await;
    assert_eq!(value, "task done:x", "{value:#}");
}

/// Weakness: nothing bounded a downstream task by the execution: a task
/// that outlives the script would run on at the server. Here the execution
/// times out (sandbox timeout 2 s) while the task would take a minute; the
/// script gets a timeout and the server hears `tasks/cancel`.
#[tokio::test]
async fn a_task_that_outlives_the_execution_is_cancelled_downstream() {
    let dir = scratch("eras-task-cancel");
    let log = dir.join("cancel.log");
    let s = modern_up(&dir, "[sandbox]\ntimeout_secs = 2\n\n").await;
    let e = s
        .execute_err(r#"async () => forge.callTool("modern", "slow_task", { ms: 60000 })"#)
        .await;
    assert_eq!(e["kind"], "timeout", "{e:#}");
    let cancelled = eventually(Duration::from_secs(10), || async {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|text| text.lines().any(|l| l.starts_with("task-")))
    })
    .await;
    assert_eq!(cancelled.trim(), "task-1", "{cancelled}");
}

/// Weakness: an `input_required` answer (MRTR) ended in "unexpected
/// result". With no client able to answer (this test client declares no
/// elicitation), the script gets an error that says the server asked for
/// input, and what; `tasks.rs`-style clients that can answer get the
/// question relayed (see `an_input_required_answer_is_relayed_to_the_client`).
#[tokio::test]
async fn an_input_required_answer_gives_a_clear_error() {
    let dir = scratch("eras-mrtr");
    let s = modern_up(&dir, "").await;
    let e = s
        .execute_err(r#"async () => forge.callTool("modern", "ask", {})"#)
        .await;
    let message = e["forge"]["message"].as_str().unwrap_or_default();
    assert_eq!(e["forge"]["code"], "DOWNSTREAM_ERROR", "{e:#}");
    assert!(message.contains("asked for input"), "{e:#}");
    assert!(message.contains("elicitation"), "{e:#}");
    assert!(!message.contains("unexpected"), "{e:#}");
}

/// Weakness: rmcp's `Auto` lifecycle waits 10 s for an answer to
/// `server/discover`; a legacy stdio server that ignores it (fixture.mjs
/// --ignore-discover) would cost that on every reconnect. The era learned
/// at the first connect is remembered: after the server crashes, the
/// reconnect goes straight to `initialize`.
#[tokio::test]
async fn a_legacy_server_that_ignores_discover_is_not_probed_again_on_reconnect() {
    let dir = scratch("eras-remember");
    let config = fixture("quiet", &["--ignore-discover"]);
    let s = connect(&write_config(&dir, &config)).await;
    s.execute_when_ready(
        CALL_BOUND,
        r#"async () => forge.callTool("quiet", "stats", {})"#,
    )
    .await;
    let _ = s
        .execute_err(r#"async () => forge.callTool("quiet", "crash", {})"#)
        .await;
    let crashed = Instant::now();
    s.execute_when_ready(
        CALL_BOUND,
        r#"async () => forge.callTool("quiet", "stats", {})"#,
    )
    .await;
    let took = crashed.elapsed();
    assert!(
        took < Duration::from_secs(8),
        "the reconnect took {took:?}: the discover probe was paid again"
    );
}
