//! Host work done for a script stays inside the script's limits (issue 16,
//! item 1), through the real binary over streamable HTTP.
//!
//! Each test runs a hostile script from two clients at once — on this
//! two-core machine the gateway has two tokio workers, so before the fix the
//! two could hold both — while a third client asks `async () => 1` again
//! and again. The third must be answered within [`LATENCY_BOUND`] every time,
//! and the hostile executions must end as timeouts (never `ok`) within
//! [`OVERRUN_BOUND`] of their limit.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;

use crate::http::serve_http;
use crate::mcp::*;

/// How long a trivial execution from another client may wait while hostile
/// ones run. Far above the ~1 ms a worker is held between yields, far below
/// the seconds a blocked worker used to cost (a bound for hangs, not a
/// timing assertion).
const LATENCY_BOUND: Duration = Duration::from_secs(2);

/// How far past its limit a hostile execution may end: the host work
/// between two deadline checks is bounded to milliseconds, so this is slack
/// for a loaded machine.
const OVERRUN_BOUND: Duration = Duration::from_secs(2);

/// The hostile executions' time limit (`[sandbox] timeout_secs`).
const LIMIT: Duration = Duration::from_secs(3);

type Client = RunningService<rmcp::RoleClient, ()>;

async fn execute(client: &Client, code: &str) -> CallToolResult {
    let mut args = serde_json::Map::new();
    args.insert("code".into(), code.into());
    client
        .call_tool(CallToolRequestParams::new("execute").with_arguments(args))
        .await
        .unwrap()
}

/// A gateway over HTTP with the fixture as server `fx` (300 synthetic tools,
/// the hostile metadata tools and the pathological schema) and three clients.
async fn gateway(name: &str) -> (tokio::process::Child, [Client; 3]) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = scratch(name);
    let config = format!(
        "[sandbox]\ntimeout_secs = {}\nmax_concurrent = 8\n\n{}",
        LIMIT.as_secs(),
        fixture("fx", &["--tools", "300", "--hostile", "--slow-schema"])
    );
    let (child, url) = serve_http(&write_config(&dir, &config)).await;
    let connect =
        || async { ().serve(StreamableHttpClientTransport::from_uri(url.as_str())).await.unwrap() };
    let clients = [connect().await, connect().await, connect().await];
    // The fixture is connected before the hostile scripts start.
    eventually(CALL_BOUND, || async {
        let r = execute(&clients[2], "async () => manifest.servers[0]?.status").await;
        (ok_value(&r) == "ready").then_some(())
    })
    .await;
    (child, clients)
}

/// Runs `hostile` from two clients while the third is served; see the
/// module doc for what must hold.
async fn stays_inside_its_limits(name: &str, hostile: &str) {
    let (_child, [a, b, c]) = gateway(name).await;
    let hostile_run = |client: Client| {
        let code = hostile.to_string();
        tokio::spawn(async move {
            let started = Instant::now();
            let r = execute(&client, &code).await;
            (started.elapsed(), r)
        })
    };
    let runs = [hostile_run(a), hostile_run(b)];
    // Give them time to take both workers.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut waits = Vec::new();
    while !runs.iter().all(|r| r.is_finished()) && waits.len() < 100 {
        let started = Instant::now();
        let r = tokio::time::timeout(CALL_BOUND, execute(&c, "async () => 1"))
            .await
            .expect("the third client is answered");
        assert_eq!(ok_value(&r), 1);
        waits.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let worst = waits.iter().max().copied().unwrap_or_default();
    assert!(
        worst < LATENCY_BOUND,
        "a trivial execution waited {worst:?} while hostile ones ran ({} samples)",
        waits.len()
    );
    for run in runs {
        let (took, r) = run.await.unwrap();
        let error = err_value(&r);
        // Whichever limit comes first: wall time, or fuel when the guest's
        // own share of the loop is large on an idle machine.
        assert!(
            error["kind"] == "timeout" || error["kind"] == "cpu_budget",
            "{error:#}"
        );
        assert!(
            took < LIMIT + OVERRUN_BOUND,
            "the hostile execution ended {took:?} after it started, its limit is {LIMIT:?}"
        );
    }
}

/// Reproduces: `manifest.search` with a huge query scored it synchronously
/// on a worker (38 s against a 5 s limit; another client waited 32 s). The
/// script tries a 256 KiB query, then the largest allowed one, in a loop.
#[tokio::test]
async fn hostile_searches_do_not_hold_the_gateway() {
    stays_inside_its_limits(
        "hostwork-search",
        r#"async () => {
            const huge = Array.from({ length: 40000 }, (_, i) => "w" + i).join(" ");
            const words = Array.from({ length: 32 }, (_, i) => "issue" + i + "x".repeat(20)).join(" ").slice(0, 1024);
            for (;;) {
                try { manifest.search(huge, { limit: 1000 }); } catch (e) {}
                manifest.search(words, { limit: 1000 });
            }
        }"#,
    )
    .await;
}

/// Reproduces: argument checking against a server's schema ran on the host
/// thread without a time bound (a backreference pattern kept an execution
/// 8.9 s past its limit). The script calls the pathological tool with
/// crafted strings, then tries 1 MiB arguments that the route step parses
/// before refusing them, then a resource read (those two halves pass
/// without the meter: the guest serializes its side first; they guard the
/// `tools` and `resources` imports).
#[tokio::test]
async fn hostile_tool_calls_do_not_hold_the_gateway() {
    stays_inside_its_limits(
        "hostwork-calls",
        r#"async () => {
            const words = Array.from({ length: 300 }, () => "a".repeat(28) + "c");
            const big = { blob: "x".repeat(1000000) };
            for (;;) {
                try { await forge.callTool("fx", "pathological", { words }); } catch (e) {}
                try { await forge.callTool("fx", "no_such_tool", big); } catch (e) {}
                try { await forge.readResource("fx", "fixture://" + "r".repeat(4000)); } catch (e) {}
            }
        }"#,
    )
    .await;
}

/// Guards `manifest.servers` and `manifest.tool`: each answer is built by
/// the host (the 100 KB schema of `huge_schema` rendered as TypeScript on
/// every read). Passes without the meter too (the guest parses each answer,
/// work of the same order); kept as the guard for these imports.
#[tokio::test]
async fn hostile_manifest_reads_do_not_hold_the_gateway() {
    stays_inside_its_limits(
        "hostwork-manifest",
        r#"async () => {
            for (;;) {
                manifest.servers;
                try { manifest.tool("fx", "huge_schema"); } catch (e) {}
            }
        }"#,
    )
    .await;
}

/// Guards the stash: a put parses and stores a 1 MiB value on the host.
/// (This one passes without the meter too — the guest serializes the value
/// on every put, work of the same order as the host's — and is kept so that
/// a change making the host's share disproportionate is caught.)
#[tokio::test]
async fn hostile_stash_use_does_not_hold_the_gateway() {
    stays_inside_its_limits(
        "hostwork-stash",
        r#"async () => {
            const value = "y".repeat(1000000);
            for (;;) {
                forge.stash.put("k", value);
                forge.stash.get("k");
            }
        }"#,
    )
    .await;
}

/// Guards `console.log`: lines past the cap are counted and dropped, and
/// every line, kept or not, is host work under the meter. Passes without
/// the meter too; kept as the guard for this import.
#[tokio::test]
async fn hostile_logging_does_not_hold_the_gateway() {
    stays_inside_its_limits(
        "hostwork-logging",
        r#"async () => {
            const line = "z".repeat(100000);
            for (;;) console.log(line);
        }"#,
    )
    .await;
}

/// A query over the bounds is a clear error in the script, naming the
/// limit; the largest allowed one is answered.
#[tokio::test]
async fn an_oversized_search_query_is_refused_with_the_limit() {
    let (_child, [a, _, _]) = gateway("hostwork-query").await;
    let r = execute(
        &a,
        r#"async () => {
            try { manifest.search("q".repeat(5000)); return "no error"; }
            catch (e) { return [e.code, e.message]; }
        }"#,
    )
    .await;
    let v = ok_value(&r);
    assert_eq!(v[0], "INVALID_ARGUMENT", "{v}");
    assert!(
        v[1].as_str()
            .unwrap()
            .contains("5000 bytes, over the 1024-byte limit"),
        "{v}"
    );
    let r = execute(
        &a,
        r#"async () => manifest.search("list issue " + "x".repeat(1000)).length"#,
    )
    .await;
    assert!(ok_value(&r).as_u64().is_some());
}

/// Reproduces: a 26 MB name passed to `manifest.tool` kept the host busy
/// 22 s past a 5 s limit (a did-you-mean folded and compared it with every
/// tool). Every import that takes a script's string is tried with one that
/// large: each refuses it at once with the size and the limit (the stash,
/// with its key rule), the log line and the progress message are dropped or
/// cut, the run ends well inside its limit, and the gateway still serves.
#[tokio::test]
async fn a_huge_name_is_refused_at_every_import_before_any_work() {
    let (_child, [a, b, _]) = gateway("hostwork-huge-name").await;
    let started = Instant::now();
    let r = execute(
        &a,
        r#"async () => {
            const big = "n".repeat(26000000);
            const tries = {
                "manifest.tool server": () => manifest.tool(big, "echo"),
                "manifest.tool name": () => manifest.tool("fx", big),
                "manifest.search": () => manifest.search(big),
                "forge.callTool server": () => forge.callTool(big, "echo", {}),
                "forge.callTool tool": () => forge.callTool("fx", big, {}),
                "forge.readResource server": () => forge.readResource(big, "fixture://a"),
                "forge.readResource uri": () => forge.readResource("fx", big),
                "forge.stash.put": () => forge.stash.put(big, 1),
                "forge.stash.get": () => forge.stash.get(big),
                "forge.stash.delete": () => forge.stash.delete(big),
            };
            const out = {};
            for (const [what, f] of Object.entries(tries)) {
                try { await f(); out[what] = "no error"; }
                catch (e) { out[what] = [e.code, e.message.slice(0, 200)]; }
            }
            console.log(big);
            forge.progress(1, 2, big);
            return out;
        }"#,
    )
    .await;
    let took = started.elapsed();
    let out = ok_value(&r);
    assert!(
        took < LIMIT,
        "the run took {took:?}, its limit is {LIMIT:?}"
    );
    let tries = out.as_object().expect("an object of outcomes");
    assert_eq!(tries.len(), 10, "{out:#}");
    for (what, outcome) in tries {
        let code = outcome[0].as_str().unwrap_or_default();
        let message = outcome[1].as_str().unwrap_or_default();
        if what.starts_with("forge.stash") {
            assert_eq!(code, "INVALID_STASH_KEY", "{what}: {outcome}");
        } else {
            assert_eq!(code, "INVALID_ARGUMENT", "{what}: {outcome}");
            assert!(
                message.contains("26000000 bytes") && message.contains("-byte limit"),
                "{what}: {message}"
            );
        }
    }
    let r = tokio::time::timeout(CALL_BOUND, execute(&b, "async () => 1"))
        .await
        .expect("the gateway still serves");
    assert_eq!(ok_value(&r), 1);
}

/// Reproduces: the pathological pattern was found per call, and its failure
/// ("Max limit for backtracking count exceeded") blamed the script's
/// arguments. Now it is found when the manifest is loaded: the tool's
/// `warning` says the pattern is not checked by quickforge, `doctor` lists
/// it, and a call with crafted strings reaches the server at once.
#[tokio::test]
async fn a_pathological_schema_pattern_is_found_at_load_and_named() {
    let (_child, [a, _, _]) = gateway("hostwork-schema").await;
    let r = execute(
        &a,
        r#"async () => manifest.tool("fx", "pathological").warning"#,
    )
    .await;
    let warning = ok_value(&r);
    let warning = warning.as_str().unwrap_or_default();
    assert!(
        warning.contains("/properties/words/items/pattern is not checked by quickforge")
            && warning.contains("backreferences or look-around"),
        "{warning}"
    );
    let started = Instant::now();
    let r = execute(
        &a,
        r#"async () => forge.callTool("fx", "pathological", { words: Array.from({ length: 300 }, () => "a".repeat(28) + "c") })"#,
    )
    .await;
    assert_eq!(ok_value(&r)["received"], 300);
    assert!(started.elapsed() < LATENCY_BOUND, "{:?}", started.elapsed());

    let dir = scratch("hostwork-doctor");
    let config = write_config(&dir, &fixture("fx", &["--slow-schema"]));
    let out = quickforge_cmd(Some(&config))
        .arg("doctor")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .contains("warn  tool fx.pathological: the pattern at /properties/words/items/pattern"),
        "{stdout}"
    );
    assert!(out.status.success(), "a warning is not a failure: {stdout}");
}

/// The gateway's resident memory, KiB.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Red team round 3, point 5: a loop of `clearTimeout(setTimeout(f, 1e9))`
/// grew the gateway by 337 MiB at `max_heap_mb = 64`, because a cleared
/// timer stayed in the run's set until the set was next polled and the cap
/// counted live ids only. Now the cap counts the set and sweeps cleared
/// timers when it is reached: 600,000 of them run to the end (the loop is
/// not refused) while the gateway's memory stays within a bound far below
/// what the entries would take (a generous bound for a leak, not a timing).
#[tokio::test]
async fn cleared_timers_do_not_grow_host_memory() {
    let dir = scratch("cleared-timers");
    let s = connect(&write_config(&dir, "[sandbox]\nmax_heap_mb = 64\n")).await;
    let pid = s.child.id().unwrap();
    s.execute("async () => 1").await;
    let before = resident_kib(pid);
    let mut call = Box::pin(s.call(
        "execute",
        r#"async () => {
            for (let i = 0; i < 600000; i++) clearTimeout(setTimeout(() => {}, 1e9));
            await new Promise((r) => setTimeout(r, 300));
            return "done";
        }"#,
    ));
    let mut peak = before;
    let result = loop {
        tokio::select! {
            r = call.as_mut() => break r,
            _ = tokio::time::sleep(Duration::from_millis(20)) => peak = peak.max(resident_kib(pid)),
        }
    };
    assert_eq!(ok_value(&result), "done");
    let grown_mib = peak.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 96,
        "the gateway grew by {grown_mib} MiB over the loop ({before} KiB before, {peak} KiB at its peak)"
    );
    drop(call);
    s.close().await;
}
