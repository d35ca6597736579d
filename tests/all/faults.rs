//! Fault injection: the fixture server hangs, crashes, refuses to start,
//! answers slowly, sends 100 MB, writes garbage and floods notifications.
//! Each time the error is precise, the other servers are unaffected and the
//! gateway keeps serving.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp::*;

/// The fixture as `faulty` with a short timeout, beside server-everything.
fn config(extra: &str) -> String {
    format!(
        "{}timeout_secs = 2\n{extra}\n{}",
        fixture("faulty", &[]).replace("timeout_secs = 20\n", ""),
        everything()
    )
}

async fn healthy(s: &Session) {
    let v = s
        .execute(r#"async () => forge.callTool("everything", "echo", { message: "ok" })"#)
        .await;
    assert_eq!(v, "Echo: ok", "the other server is unaffected");
}

#[tokio::test]
async fn a_hanging_call_times_out_with_the_servers_limit() {
    let dir = scratch("hang");
    let s = connect(&write_config(&dir, &config("circuit_breaker = false"))).await;
    let started = Instant::now();
    let e = s
        .execute_err(r#"async () => forge.callTool("faulty", "hang", {})"#)
        .await;
    assert_eq!(e["forge"]["code"], "TIMEOUT", "{e:#}");
    assert!(
        e["forge"]["message"]
            .as_str()
            .unwrap()
            .contains("within 2 s"),
        "{e:#}"
    );
    assert_eq!(e["forge"]["retryable"], true);
    assert!(started.elapsed() < Duration::from_secs(20));
    healthy(&s).await;
    // The same session still answers other calls.
    let v = s
        .execute(r#"async () => (await forge.callTool("faulty", "slow", { ms: 10 })).slept"#)
        .await;
    assert_eq!(v, 10);
}

#[tokio::test]
async fn a_call_cut_off_by_the_execution_timeout_is_cancelled_on_its_server() {
    let dir = scratch("cancel");
    let text = format!("[sandbox]\ntimeout_secs = 1\n\n{}", config(""));
    let s = connect(&write_config(&dir, &text)).await;
    let e = s
        .execute_err(r#"async () => forge.callTool("faulty", "slow", { ms: 15000 })"#)
        .await;
    assert_eq!(e["kind"], "timeout", "{e:#}");
    // The server hears notifications/cancelled for the abandoned call.
    let started = Instant::now();
    loop {
        let cancelled = s
            .execute(r#"async () => (await forge.callTool("faulty", "stats", {})).cancelled"#)
            .await;
        if cancelled == 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the server saw no cancellation: {cancelled}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    healthy(&s).await;
}

#[tokio::test]
async fn the_timeout_counts_from_sending_not_from_queueing() {
    let dir = scratch("queue");
    // One call in flight at a time; three 1.2 s calls queue up behind each
    // other for 3.6 s in all, each within its own 2 s.
    let s = connect(&write_config(&dir, &config("max_in_flight = 1"))).await;
    let v = s
        .execute(r#"async () => (await Promise.all([1, 2, 3].map(() => forge.callTool("faulty", "slow", { ms: 1200 })))).map(r => r.slept)"#)
        .await;
    assert_eq!(v, json!([1200, 1200, 1200]));
}

#[tokio::test]
async fn a_server_that_exits_at_startup_is_reported_and_others_serve() {
    let dir = scratch("startup");
    let text = format!(
        "{}\n{}",
        fixture("broken", &["--exit-at-startup"]),
        everything()
    );
    let s = connect(&write_config(&dir, &text)).await;
    let servers = s
        .search("async () => manifest.servers.map(s => [s.name, s.status, s.error ?? null])")
        .await;
    assert_eq!(servers[0][0], "broken");
    assert_eq!(servers[0][1], "unavailable");
    assert!(
        servers[0][2].as_str().unwrap().len() > 10,
        "the reason is given: {servers:#}"
    );
    assert_eq!(servers[1], json!(["everything", "ready", null]));
    let e = s
        .execute_err(r#"async () => forge.callTool("broken", "whoami", {})"#)
        .await;
    assert!(
        ["SERVER_UNAVAILABLE", "TOOL_NOT_FOUND"].contains(&e["forge"]["code"].as_str().unwrap()),
        "{e:#}"
    );
    assert_eq!(
        e["forge"]["code"] == "SERVER_UNAVAILABLE",
        e["forge"]["retryable"] == true
    );
    healthy(&s).await;
}

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_100_mb_result_fails_with_the_limit_and_memory_stays_flat() {
    let dir = scratch("big");
    let text = format!(
        "[sandbox]\ntimeout_secs = 60\n\n{}timeout_secs = 30\n\n{}",
        fixture("faulty", &[]).replace("timeout_secs = 20\n", ""),
        everything()
    );
    let s = connect(&write_config(&dir, &text)).await;
    healthy(&s).await;
    let pid = s.child.id().unwrap();
    let before = peak_rss_kib(pid);
    let e = s
        .execute_err(r#"async () => forge.callTool("faulty", "big", { mb: 100 })"#)
        .await;
    assert_eq!(e["forge"]["code"], "RESPONSE_TOO_LARGE", "{e:#}");
    assert!(
        e["forge"]["message"]
            .as_str()
            .unwrap()
            .contains("16777216 bytes (max_response_mb)"),
        "{e:#}"
    );
    let after = peak_rss_kib(pid);
    if before > 0 {
        assert!(
            after < before + 40 * 1024,
            "peak RSS grew from {before} KiB to {after} KiB"
        );
    }
    healthy(&s).await;
    // The server comes back for calls of a sane size.
    let v = s
        .execute_when_ready(
            Duration::from_secs(30),
            r#"async () => (await forge.callTool("faulty", "big", { mb: 0.001 })).length"#,
        )
        .await;
    assert_eq!(v, 1048);
}

#[tokio::test]
async fn garbage_on_the_wire_fails_that_server_alone() {
    let dir = scratch("malformed");
    let s = connect(&write_config(&dir, &config("circuit_breaker = false"))).await;
    let e = s
        .execute_err(r#"async () => forge.callTool("faulty", "malformed", {})"#)
        .await;
    let code = e["forge"]["code"].as_str().unwrap();
    assert!(code == "TIMEOUT" || code == "SERVER_UNAVAILABLE", "{e:#}");
    assert_eq!(e["forge"]["retryable"], true);
    healthy(&s).await;
    eventually(Duration::from_secs(30), || async {
        let r = s
            .call(
                "execute",
                r#"async () => forge.callTool("faulty", "whoami", {})"#,
            )
            .await;
        (r.is_error != Some(true)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_notification_flood_is_absorbed() {
    let dir = scratch("flood");
    // The default 20 s timeout: a flood takes node a moment to write out on
    // a loaded machine; the point is that it ends and nothing stalls.
    let text = format!(
        "[sandbox]\ntimeout_secs = 60\n\n{}\n{}",
        fixture("faulty", &[]),
        everything()
    );
    let s = connect(&write_config(&dir, &text)).await;
    let v = s
        .execute(r#"async () => forge.callTool("faulty", "flood", { count: 20000 })"#)
        .await;
    assert_eq!(v, json!({"flooded": 20000}));
    healthy(&s).await;
    let v = s
        .execute(r#"async () => (await forge.callTool("faulty", "slow", { ms: 1 })).slept"#)
        .await;
    assert_eq!(v, 1);
    let tools = s
        .search(r#"async () => manifest.servers.find(s => s.name === "faulty").tools"#)
        .await;
    assert!(tools.as_u64().unwrap() >= 9);
}

#[tokio::test]
async fn the_circuit_breaker_opens_fails_fast_and_recovers() {
    let dir = scratch("breaker");
    let s = connect(&write_config(
        &dir,
        &config("failure_threshold = 2\nrecovery_timeout_secs = 1"),
    ))
    .await;
    // A tool's own error result is an answer: it never opens the breaker.
    for _ in 0..3 {
        let e = s
            .execute_err(r#"async () => forge.callTool("faulty", "fail", {})"#)
            .await;
        assert_eq!(e["forge"]["code"], "TOOL_ERROR");
        assert!(
            e["forge"]["message"]
                .as_str()
                .unwrap()
                .contains("the fixture failed on purpose")
        );
    }
    for _ in 0..2 {
        let e = s
            .execute_err(r#"async () => forge.callTool("faulty", "hang", {})"#)
            .await;
        assert_eq!(e["forge"]["code"], "TIMEOUT");
    }
    let started = Instant::now();
    let e = s
        .execute_err(r#"async () => forge.callTool("faulty", "whoami", {})"#)
        .await;
    assert_eq!(e["forge"]["code"], "CIRCUIT_OPEN", "{e:#}");
    assert!(started.elapsed() < Duration::from_secs(1), "fails at once");
    assert!(
        e["forge"]["message"]
            .as_str()
            .unwrap()
            .contains("next attempt is allowed in")
    );
    healthy(&s).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let v: Value = s
        .execute(r#"async () => typeof (await forge.callTool("faulty", "whoami", {})).pid"#)
        .await;
    assert_eq!(v, "number", "the probe went through and closed the breaker");
    s.execute(r#"async () => forge.callTool("faulty", "whoami", {})"#)
        .await;
}

fn alive(pid: u64) -> bool {
    // A zombie has exited; count it as gone only once reaped.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok()
}

#[cfg(unix)]
#[tokio::test]
async fn shutdown_leaves_no_child_processes() {
    for signal in [None, Some(libc::SIGTERM), Some(libc::SIGINT)] {
        let dir = scratch("shutdown");
        let text = format!(
            "{}\n{}\n{}",
            fixture("one", &[]),
            fixture("two", &[]),
            fixture("three", &[])
        );
        let s = connect(&write_config(&dir, &text)).await;
        let pids = s
            .execute(r#"async () => Promise.all(["one", "two", "three"].map(async s => (await forge.callTool(s, "whoami", {})).pid))"#)
            .await;
        let pids: Vec<u64> = pids
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_u64().unwrap())
            .collect();
        assert!(pids.iter().all(|&p| alive(p)));
        let Session { client, mut child } = s;
        match signal {
            None => drop(client),
            Some(sig) => {
                // SAFETY: signals our own child.
                unsafe { libc::kill(child.id().unwrap() as i32, sig) };
            }
        }
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .expect("the gateway exits")
            .unwrap();
        assert!(status.success() || signal.is_some(), "{status}");
        eventually(Duration::from_secs(10), || async {
            pids.iter().all(|&p| !alive(p)).then_some(())
        })
        .await;
    }
}

#[cfg(unix)]
#[tokio::test]
async fn sigterm_lets_running_executions_finish() {
    let dir = scratch("drain");
    let s = connect(&write_config(&dir, &fixture("faulty", &[]))).await;
    let pid = s.child.id().unwrap() as i32;
    let terminate = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        // SAFETY: signals our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    };
    let (r, ()) = tokio::join!(
        s.call(
            "execute",
            r#"async () => (await forge.callTool("faulty", "slow", { ms: 1500 })).slept"#
        ),
        terminate
    );
    assert_eq!(ok_value(&r), 1500, "the running execution finished");
    let Session { client, mut child } = s;
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the gateway exits")
        .unwrap();
    assert!(status.success(), "{status}");
    drop(client);
}

/// A client may write its requests and close stdin at once. Every request
/// read before the end of input is answered, even by an execution longer than
/// the five seconds rmcp itself waits for running handlers, and then the
/// gateway exits.
#[tokio::test]
async fn requests_written_before_stdin_closes_are_all_answered() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let dir = scratch("eof");
    let config = format!("{}\n[sandbox]\ntimeout_secs = 20\n", fixture("faulty", &[]));
    let mut child = quickforge_cmd(Some(&write_config(&dir, &config)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let call = |id: u32, code: &str| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "execute", "arguments": { "code": code } } })
    };
    let lines = [
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": { "name": "eof-test", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        call(
            1,
            r#"async () => (await forge.callTool("faulty", "slow", { ms: 6500 })).slept"#,
        ),
        call(2, "async () => 1 + 1"),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    drop(stdin);
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = std::collections::BTreeMap::new();
    let read_all = async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            let message: Value = serde_json::from_str(&line).unwrap();
            if let Some(id) = message["id"].as_u64() {
                answers.insert(id, message);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read_all)
        .await
        .expect("the gateway ends its output once everything is answered");
    let value = |id: u64| -> Value {
        let a = &answers[&id];
        assert_ne!(a["result"]["isError"], true, "{a:#}");
        a["result"]["structuredContent"]["result"].clone()
    };
    assert_eq!(answers.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(value(1), 6500, "the long execution finished and answered");
    assert_eq!(value(2), 2);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the gateway exits")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_stderr_flood_is_rate_bounded_in_the_log() {
    let dir = scratch("stderr");
    let log = dir.join("gateway.log");
    let s = connect_logging_to(
        quickforge_cmd(Some(&write_config(&dir, &config("")))),
        std::fs::File::create(&log).unwrap().into(),
    )
    .await;
    let v = s
        .execute(r#"async () => (await forge.callTool("faulty", "stderr_flood", { count: 20000 })).wrote"#)
        .await;
    assert_eq!(v, 20000);
    healthy(&s).await;
    // Closing stdin ends the gateway, which ends the fixture: its stderr
    // reaches EOF and the drop count is reported.
    s.close().await;
    let text = std::fs::read_to_string(&log).unwrap();
    let kept = text.lines().filter(|l| l.contains("noise ")).count();
    assert!(kept >= 100, "the first lines are kept: {kept}");
    assert!(
        kept < 2000,
        "a flood is not copied whole: {kept} of 20000 lines kept"
    );
    let dropped: u64 = text
        .lines()
        .filter(|l| l.contains("stderr lines dropped"))
        .filter_map(|l| l.split_whitespace().find_map(|w| w.parse::<u64>().ok()))
        .sum();
    assert_eq!(
        dropped as usize + kept,
        20000,
        "every line is either kept or counted as dropped"
    );
}

/// Starts the fixture serving `mode` (`--http` for streamable HTTP, `--sse`
/// for legacy HTTP+SSE) on a free port.
async fn fixture_http(mode: &str) -> (tokio::process::Child, u16) {
    node_listening(
        "fixture.mjs",
        &[mode.as_ref(), "0".as_ref()],
        "fixture: listening on ",
    )
    .await
}

#[tokio::test]
async fn an_expired_http_session_is_initialized_again() {
    let (_fixture, port) = fixture_http("--http").await;
    let dir = scratch("expiry");
    let s = connect(&write_config(
        &dir,
        &format!(
            "[servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_secs = 20\n\n{}",
            everything()
        ),
    ))
    .await;
    let before = s
        .execute(r#"async () => (await forge.callTool("remote", "stats", {})).initialized"#)
        .await;
    let v = s
        .execute(r#"async () => (await forge.callTool("remote", "expire_sessions", {})).expired"#)
        .await;
    assert!(v.as_u64().unwrap() >= 1, "the fixture had a session: {v}");
    // The next call meets a 404 for its session, and the gateway
    // initializes a new one; calls go on succeeding.
    let after = s
        .execute_when_ready(
            Duration::from_secs(30),
            r#"async () => (await forge.callTool("remote", "stats", {})).initialized"#,
        )
        .await;
    assert_eq!(
        after.as_u64().unwrap(),
        before.as_u64().unwrap() + 1,
        "one new session"
    );
    let pid = s
        .execute(r#"async () => typeof (await forge.callTool("remote", "whoami", {})).pid"#)
        .await;
    assert_eq!(pid, "number");
    healthy(&s).await;
}

/// Over streamable HTTP (`/mcp`) or legacy HTTP+SSE (`/sse`), an answer
/// over `max_response_mb` fails naming the limit, and the server serves
/// again once the gateway has reconnected.
async fn oversized_over(mode: &str, url: &str) {
    let (_fixture, port) = fixture_http(mode).await;
    let dir = scratch("httpbig");
    let transport = if mode == "--sse" {
        "transport = \"sse\"\n"
    } else {
        ""
    };
    let s = connect(&write_config(
        &dir,
        &format!(
            "[sandbox]\ntimeout_secs = 60\n\n[servers.remote]\n{transport}url = \"http://127.0.0.1:{port}{url}\"\ntimeout_secs = 30\nmax_response_mb = 1\n\n{}",
            everything()
        ),
    ))
    .await;
    let e = s
        .execute_err(r#"async () => forge.callTool("remote", "big", { mb: 4 })"#)
        .await;
    assert_eq!(e["forge"]["code"], "RESPONSE_TOO_LARGE", "{e:#}");
    assert!(
        e["forge"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("limit of 1048576 bytes (max_response_mb)"),
        "{e:#}"
    );
    healthy(&s).await;
    let v = s
        .execute_when_ready(
            Duration::from_secs(30),
            r#"async () => (await forge.callTool("remote", "slow", { ms: 1 })).slept"#,
        )
        .await;
    assert_eq!(v, 1, "the server serves again after the oversized answer");
}

#[tokio::test]
async fn an_oversized_streamable_http_answer_fails_with_the_limit() {
    oversized_over("--http", "/mcp").await;
}

#[tokio::test]
async fn an_oversized_legacy_sse_answer_fails_with_the_limit() {
    oversized_over("--sse", "/sse").await;
}

/// Whether `pid` is still running: a zombie has been killed, whoever reaps it
/// (a grandchild of the gateway is reaped by init, not by the gateway).
#[cfg(unix)]
fn running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // the state follows the command name, which is in parentheses
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// A stdio server started through a wrapper (as npx, uvx and `sh -c` do) runs
/// as the gateway's grandchild, beside helpers the wrapper started; when the
/// connection goes (here an oversized answer resets it) and when the gateway
/// exits, the whole process group goes, not only the wrapper. Guards issue
/// 17's move of the process-group spawn and kill to process-wrap: the helper
/// (`sleep`) does not read stdin, so closing the pipes does not end it and
/// only a kill of the group does; killing the leader alone (tokio's
/// `kill_on_drop`, process-wrap's `KillOnDrop`) leaves it running.
#[cfg(unix)]
#[tokio::test]
async fn a_wrapped_servers_whole_process_group_dies_with_its_connection() {
    install_servers();
    let dir = scratch("wrapped");
    let pidfile = dir.join("helper.pid");
    // `exit` after node keeps the shell as node's parent (no exec of the
    // last command), as npx stays the parent of the server it starts.
    let script = r#"sleep 300 & echo $! > "$0"; node "$1"; exit $?"#;
    let text = format!(
        "[servers.wrapped]\ncommand = \"sh\"\nargs = [{}, {}, {}, {}]\ntimeout_secs = 20\nmax_response_mb = 1\n",
        toml_str("-c"),
        toml_str(script),
        toml_str(&pidfile.to_string_lossy()),
        toml_str(&servers_dir().join("fixture.mjs").to_string_lossy()),
    );
    let helper = || {
        std::fs::read_to_string(&pidfile)
            .expect("the wrapper wrote its helper's pid")
            .trim()
            .parse::<u64>()
            .expect("a pid")
    };
    let whoami = r#"async () => (await forge.callTool("wrapped", "whoami", {})).pid"#;
    let s = connect(&write_config(&dir, &text)).await;
    let server = s.execute(whoami).await.as_u64().expect("a pid");
    let first = helper();
    assert!(running(server) && running(first), "{server} {first}");

    let e = s
        .execute_err(r#"async () => forge.callTool("wrapped", "big", { mb: 4 })"#)
        .await;
    assert_eq!(e["forge"]["code"], "RESPONSE_TOO_LARGE", "{e:#}");
    eventually(Duration::from_secs(10), || async {
        (!running(server) && !running(first)).then_some(())
    })
    .await;

    // The gateway starts the server again: a new group, killed at exit.
    let server = s
        .execute_when_ready(Duration::from_secs(30), whoami)
        .await
        .as_u64()
        .expect("a pid");
    let second = helper();
    assert_ne!(first, second, "a new wrapper ran");
    assert!(running(server) && running(second), "{server} {second}");
    let Session { client, mut child } = s;
    drop(client);
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the gateway exits")
        .unwrap();
    eventually(Duration::from_secs(10), || async {
        (!running(server) && !running(second)).then_some(())
    })
    .await;
}
