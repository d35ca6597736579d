//! Every JS API the guest exposes, against the in-test dispatcher.

use std::sync::atomic::Ordering;
use std::time::Duration;

use quickforge::{ErrorKind, LogLevel, Mode};
use serde_json::json;

use crate::support::{Kind, context, error, run, run_with, value};

#[tokio::test]
async fn plain_values_and_sync_functions() {
    assert_eq!(
        value(&run(Kind::Default, "async () => 1 + 1").await),
        &json!(2)
    );
    assert_eq!(
        value(&run(Kind::Default, "() => ({ a: [1, 'two', null] })").await),
        &json!({ "a": [1, "two", null] })
    );
    assert_eq!(
        value(&run(Kind::Default, "async () => {}").await),
        &json!(null)
    );
    // Leading comments are part of the expression's source.
    assert_eq!(
        value(&run(Kind::Default, "// sum\n/* two */ async () => 40 + 2").await),
        &json!(42)
    );
}

#[tokio::test]
async fn call_tool_reaches_the_dispatcher() {
    let report = run(
        Kind::Default,
        r#"async () => forge.callTool("alpha", "echo", { q: "hi", n: 3 })"#,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({ "server": "alpha", "tool": "echo", "args": { "q": "hi", "n": 3 } })
    );
    assert_eq!(report.stats.operations, 1);
    // Omitted args are an empty object.
    let report = run(
        Kind::Default,
        r#"async () => (await forge.callTool("alpha", "echo")).args"#,
    )
    .await;
    assert_eq!(value(&report), &json!({}));
}

#[tokio::test]
async fn server_proxy_builds_dotted_tool_names() {
    let report = run(
        Kind::Default,
        r#"async () => {
            const a = await forge.server("alpha").echo({ x: 1 });
            const b = await forge.server("beta").docs.search({ q: "wit" });
            return [a.tool, b.tool, b.args.q];
        }"#,
    )
    .await;
    assert_eq!(value(&report), &json!(["echo", "docs.search", "wit"]));
    // Awaiting the proxy itself does not call a tool named "then".
    let report = run(
        Kind::Default,
        r#"async () => { const s = await forge.server("alpha"); return typeof s; }"#,
    )
    .await;
    assert_eq!(value(&report), &json!("function"));
}

#[tokio::test]
async fn forge_errors_carry_code_message_retryable_suggestion() {
    let report = run(
        Kind::Default,
        r#"async () => {
            try { await forge.callTool("alpha", "fail", {}); return "no error"; }
            catch (e) { return { isForgeError: e instanceof ForgeError, isError: e instanceof Error, name: e.name,
                                 code: e.code, message: e.message, retryable: e.retryable, suggestion: e.suggestion }; }
        }"#,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({ "isForgeError": true, "isError": true, "name": "ForgeError", "code": "TOOL_FAILED",
                 "message": "the tool failed on purpose", "retryable": true, "suggestion": "try again" })
    );
    // Uncaught, it ends the execution as `thrown` and keeps the forge fields.
    let report = run(
        Kind::Default,
        r#"async () => forge.callTool("nowhere", "x", {})"#,
    )
    .await;
    let err = error(&report);
    assert_eq!(err.kind, ErrorKind::Thrown);
    assert_eq!(err.forge.as_ref().unwrap().code, "SERVER_NOT_FOUND");
    assert!(err.message.contains("SERVER_NOT_FOUND"), "{}", err.message);
}

#[tokio::test]
async fn bad_arguments_are_forge_errors() {
    let report = run(
        Kind::Default,
        r#"async () => {
            const out = [];
            for (const f of [() => forge.callTool("alpha", "echo", [1]), () => forge.callTool("", "echo"),
                             () => forge.callTool("alpha", "echo", { n: 1n }), () => forge.callTool(),
                             () => forge.callTool("alpha", 7), () => forge.callTool("alpha", "echo", "text"),
                             () => forge.callTool("\ud800", "echo"), () => forge.callTool("alpha", "echo", new Date(0)),
                             () => forge.readResource("alpha"), () => forge.readResource(null, "x://y")]) {
                // A refusal rejects the promise, never throws synchronously.
                let p;
                try { p = f(); } catch (e) { out.push("sync throw: " + e); continue; }
                try { await p; out.push("resolved"); } catch (e) { out.push(e.code + ": " + e.message); }
            }
            return out;
        }"#,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!([
            "INVALID_ARGUMENT: tool arguments must be an object, got an array",
            "INVALID_ARGUMENT: server must be a non-empty string, got a string",
            "INVALID_ARGUMENT: tool arguments are not serializable to JSON: BigInt are forbidden in JSON.stringify",
            "INVALID_ARGUMENT: server must be a non-empty string, got undefined",
            "INVALID_ARGUMENT: tool must be a non-empty string, got a number",
            "INVALID_ARGUMENT: tool arguments must be an object, got a string",
            "INVALID_ARGUMENT: server must be valid Unicode, not a lone UTF-16 surrogate",
            "INVALID_ARGUMENT: tool arguments must be a JSON object",
            "INVALID_ARGUMENT: uri must be a non-empty string, got undefined",
            "INVALID_ARGUMENT: server must be a non-empty string, got null",
        ])
    );
}

#[tokio::test]
async fn names_keep_every_unicode_character() {
    // Names are borrowed from QuickJS as UTF-8 on the hot path: non-ASCII
    // text must reach the host intact, and a refusal must quote it intact.
    let report = run(
        Kind::Default,
        r#"async () => {
            const r = await forge.callTool("alpha", "echo", { q: "naïve 🦀", "ключ": 1 });
            const why = async (f) => { try { await f(); } catch (e) { return e.message; } };
            return { args: r.args, tool: await why(() => forge.callTool("alpha", "échø.検索")),
                     server: await why(() => forge.server("nöwhere").x()) };
        }"#,
    )
    .await;
    let got = value(&report);
    assert_eq!(got["args"], json!({ "q": "naïve 🦀", "ключ": 1 }));
    assert!(
        got["tool"].as_str().unwrap().contains("\"échø.検索\""),
        "{got}"
    );
    assert!(got["server"].as_str().unwrap().contains("nöwhere"), "{got}");
}

#[tokio::test]
async fn read_resource() {
    let report = run(
        Kind::Default,
        r#"async () => forge.readResource("alpha", "file:///notes.txt")"#,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({ "uri": "file:///notes.txt", "text": "contents of file:///notes.txt" })
    );
    let report = run(
        Kind::Default,
        r#"async () => forge.readResource("nowhere", "x://y")"#,
    )
    .await;
    assert_eq!(
        error(&report).forge.as_ref().unwrap().code,
        "SERVER_NOT_FOUND"
    );
}

#[tokio::test]
async fn stash_put_get_delete_keys_and_ttl() {
    let report = run(
        Kind::Default,
        r#"async () => {
            const put = await forge.stash.put("a", { n: 1 });
            await forge.stash.put("b/c", [1, 2], { ttl: 60 });
            const got = await forge.stash.get("a");
            const missing = await forge.stash.get("nope");
            const keys = await forge.stash.keys();
            const del = await forge.stash.delete("a");
            const delAgain = await forge.stash.delete("a");
            let bad;
            try { await forge.stash.put("no spaces", 1); } catch (e) { bad = e.code; }
            let badTtl;
            try { await forge.stash.put("k", 1, { ttl: -1 }); } catch (e) { badTtl = e.code; }
            return { put, got, missing, keys, del, delAgain, bad, badTtl, after: await forge.stash.keys() };
        }"#,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({ "put": { "ok": true }, "got": { "n": 1 }, "missing": null, "keys": ["a", "b/c"],
                 "del": { "deleted": true }, "delAgain": { "deleted": false },
                 "bad": "INVALID_STASH_KEY", "badTtl": "INVALID_ARGUMENT", "after": ["b/c"] })
    );
}

#[tokio::test]
async fn promise_all_overlaps_tool_calls() {
    let (cx, tools) = context();
    let report = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => Promise.all([1, 2, 3, 4, 5].map(() => forge.callTool("alpha", "sleep", { ms: 200 })))"#,
        cx,
    )
    .await;
    let elapsed = Duration::from_micros(report.stats.micros);
    assert_eq!(
        value(&report),
        &json!([{ "slept": 200 }, { "slept": 200 }, { "slept": 200 }, { "slept": 200 }, { "slept": 200 }])
    );
    assert_eq!(tools.counters.max_in_flight.load(Ordering::SeqCst), 5);
    // Serialized calls would take 1 s; overlapping ones about 200 ms.
    assert!(
        elapsed < Duration::from_millis(800),
        "five 200 ms calls took {elapsed:?}"
    );
}

#[tokio::test]
async fn parallel_bounds_concurrency_and_reports_errors() {
    let (cx, tools) = context();
    let report = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => forge.parallel([
            () => forge.callTool("alpha", "sleep", { ms: 50 }),
            { fn: () => forge.callTool("alpha", "fail") },
            () => forge.callTool("alpha", "sleep", { ms: 50 }),
            () => forge.callTool("alpha", "echo", { i: 3 }),
        ], { concurrency: 2 })"#,
        cx,
    )
    .await;
    let v = value(&report);
    assert_eq!(v["aborted"], json!(false));
    assert_eq!(v["results"][0], json!({ "slept": 50 }));
    assert_eq!(v["results"][1], json!(null));
    assert_eq!(v["results"][3]["args"], json!({ "i": 3 }));
    assert_eq!(
        v["errors"],
        json!([{ "index": 1, "error": "the tool failed on purpose", "code": "TOOL_FAILED",
        "retryable": true, "suggestion": "try again" }])
    );
    assert_eq!(tools.counters.max_in_flight.load(Ordering::SeqCst), 2);

    // failFast stops starting new calls after the first failure.
    let (cx, tools) = context();
    let report = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => forge.parallel([
            () => forge.callTool("alpha", "fail"),
            () => forge.callTool("alpha", "echo"),
            () => forge.callTool("alpha", "echo"),
        ], { concurrency: 1, failFast: true })"#,
        cx,
    )
    .await;
    let v = value(&report);
    assert_eq!(v["aborted"], json!(true));
    assert_eq!(v["results"], json!([null, null, null]));
    assert_eq!(tools.counters.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn logs_are_captured_with_levels() {
    let report = run(
        Kind::Default,
        r#"async () => {
            console.log("hello", 1, { a: 2 }, [3]);
            console.info("info"); console.debug("debug"); console.warn("warn"); console.error(new TypeError("bad"));
            forge.log("via forge");
            return 0;
        }"#,
    )
    .await;
    let lines: Vec<(LogLevel, &str)> = report
        .logs
        .iter()
        .map(|l| (l.level, l.message.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (LogLevel::Info, r#"hello 1 {"a":2} [3]"#),
            (LogLevel::Info, "info"),
            (LogLevel::Debug, "debug"),
            (LogLevel::Warn, "warn"),
            (LogLevel::Error, "TypeError: bad"),
            (LogLevel::Info, "via forge"),
        ]
    );
}

#[tokio::test]
async fn logs_survive_a_failed_execution() {
    let report = run(
        Kind::Tight,
        r#"async () => { console.log("before the loop"); while (true) {} }"#,
    )
    .await;
    assert_eq!(error(&report).kind, ErrorKind::CpuBudget);
    assert_eq!(report.logs[0].message, "before the loop");
}

#[tokio::test]
async fn manifest_in_search_mode() {
    let (cx, _) = context();
    let report = run_with(
        Kind::Default,
        Mode::Search,
        r#"async () => ({
            servers: manifest.servers.map(s => s.name),
            hits: manifest.search("sleep").map(h => `${h.server}/${h.tool}`),
            limited: manifest.search("", { limit: 2 }).length,
            tool: manifest.tool("beta", "docs.search").description,
        })"#,
        cx,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({ "servers": ["alpha", "beta"], "hits": ["alpha/sleep"], "limited": 2, "tool": "Search the documentation" })
    );
    let (cx, _) = context();
    let report = run_with(
        Kind::Default,
        Mode::Search,
        r#"async () => manifest.tool("alpha", "nope")"#,
        cx,
    )
    .await;
    assert_eq!(
        error(&report).forge.as_ref().unwrap().code,
        "TOOL_NOT_FOUND"
    );
}

#[tokio::test]
async fn search_mode_refuses_tool_calls_and_stash() {
    for code in [
        r#"async () => forge.callTool("alpha", "echo", {})"#,
        r#"async () => forge.readResource("alpha", "x://y")"#,
        r#"async () => forge.stash.put("k", 1)"#,
    ] {
        let (cx, tools) = context();
        let report = run_with(Kind::Default, Mode::Search, code, cx).await;
        assert_eq!(
            error(&report).forge.as_ref().unwrap().code,
            "MODE_DENIED",
            "{code}"
        );
        assert_eq!(tools.counters.calls.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn api_objects_are_frozen() {
    let report = run(
        Kind::Default,
        r#"async () => {
            "use strict";
            const frozen = [forge, forge.stash, manifest, console, ForgeError, ForgeError.prototype].every(Object.isFrozen);
            let assign;
            try { forge.callTool = () => "hijacked"; assign = "allowed"; } catch (e) { assign = e.name; }
            let redefine;
            try { globalThis.forge = {}; redefine = "allowed"; } catch (e) { redefine = e.name; }
            return { frozen, assign, redefine, stillWorks: (await forge.callTool("alpha", "echo")).tool };
        }"#,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({ "frozen": true, "assign": "TypeError", "redefine": "TypeError", "stillWorks": "echo" })
    );
}

#[tokio::test]
async fn missing_call_arguments_reject_instead_of_throwing() {
    // A script that only uses .catch() must see the error.
    let code = r#"async () => Promise.all([
        forge.callTool().catch(e => [e.code, e.message]),
        forge.callTool("alpha").catch(e => [e.code, e.message]),
        forge.readResource("alpha").catch(e => [e.code, e.message]),
    ])"#;
    let value = run(Kind::Default, code).await.result.unwrap();
    assert_eq!(
        value[0],
        json!([
            "INVALID_ARGUMENT",
            "server must be a non-empty string, got undefined"
        ])
    );
    assert_eq!(
        value[1],
        json!([
            "INVALID_ARGUMENT",
            "tool must be a non-empty string, got undefined"
        ])
    );
    assert_eq!(
        value[2],
        json!([
            "INVALID_ARGUMENT",
            "uri must be a non-empty string, got undefined"
        ])
    );
}
