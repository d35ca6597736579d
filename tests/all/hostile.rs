//! Scripts that try to turn the guest's own machinery against it.

use std::sync::atomic::Ordering;

use quickforge::{ErrorKind, Mode};
use serde_json::json;

use crate::support::{Kind, context, error, run, run_with, value};

#[tokio::test]
async fn replacing_promise_resolve_does_not_break_the_run() {
    let report = run(
        Kind::Default,
        "async () => { Promise.resolve = () => 1; Promise.prototype.then = null; return 2; }",
    )
    .await;
    assert_eq!(value(&report), &json!(2));
}

#[tokio::test]
async fn converting_a_server_proxy_calls_no_tool() {
    let (cx, tools) = context();
    let report = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => {
            const s = forge.server("alpha");
            for (const convert of [() => String(s), () => `${s}`, () => s + 1, () => JSON.stringify(s), () => console.log(s), () => s.name.length]) {
                try { convert(); } catch (e) { /* a TypeError is fine */ }
            }
            return "done";
        }"#,
        cx,
    )
    .await;
    assert_eq!(value(&report), &json!("done"));
    assert_eq!(tools.counters.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn prepare_stack_trace_cannot_expose_prelude_functions() {
    let report = run(
        Kind::Default,
        r#"async () => {
            try { Error.prepareStackTrace = (e, frames) => frames.map(f => f.getFunction()); } catch (e) {}
            let leaked = [];
            try { await forge.callTool("alpha", "fail"); } catch (e) { leaked = Array.isArray(e.stack) ? e.stack : []; }
            return { hook: typeof Error.prepareStackTrace, leaked: leaked.filter(f => typeof f === "function").length };
        }"#,
    )
    .await;
    assert_eq!(value(&report), &json!({ "hook": "undefined", "leaked": 0 }));
}

#[tokio::test]
async fn object_prototype_setters_do_not_change_forge_errors() {
    let report = run(
        Kind::Default,
        r#"async () => {
            Object.defineProperty(Object.prototype, "code", { get() { return "HIJACKED"; }, set(v) {}, configurable: true });
            Object.defineProperty(Object.prototype, "retryable", { value: "fixed", writable: false, configurable: true });
            try { await forge.callTool("alpha", "fail"); } catch (e) { return [e.code, e.retryable]; }
        }"#,
    )
    .await;
    assert_eq!(value(&report), &json!(["TOOL_FAILED", true]));
}

#[tokio::test]
async fn a_forged_budget_error_is_just_a_thrown_error() {
    let report = run(
        Kind::Default,
        r#"async () => { throw new ForgeError("TOOL_CALL_BUDGET", "fake", true, null); }"#,
    )
    .await;
    let err = error(&report);
    assert_eq!(err.kind, ErrorKind::Thrown);
    assert_eq!(err.forge.as_ref().unwrap().code, "TOOL_CALL_BUDGET");
}

#[tokio::test]
async fn unknown_servers_are_refused_before_they_cost_a_call() {
    // Tight allows 5 calls: ten refusals first, then five real calls.
    let (cx, tools) = context();
    let report = run_with(
        Kind::Tight,
        Mode::Execute,
        r#"async () => {
            const codes = [];
            for (let i = 0; i < 10; i++) { try { await forge.callTool("nowhere", "x"); } catch (e) { codes.push(e.code); } }
            for (let i = 0; i < 5; i++) await forge.callTool("alpha", "echo", { i });
            return codes.every(c => c === "SERVER_NOT_FOUND");
        }"#,
        cx,
    )
    .await;
    assert_eq!(value(&report), &json!(true));
    assert_eq!(report.stats.operations, 5);
    assert_eq!(tools.counters.calls.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn calls_started_and_not_awaited_still_complete() {
    let (cx, tools) = context();
    let report = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => { forge.callTool("alpha", "sleep", { ms: 100 }); forge.callTool("alpha", "echo"); return "returned"; }"#,
        cx,
    )
    .await;
    assert_eq!(value(&report), &json!("returned"));
    assert_eq!(tools.counters.completed.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn lone_surrogates_become_replacement_characters() {
    let report = run(Kind::Default, r#"async () => { const half = "😀".slice(0, 1); console.log("log", half); return { half, pair: "😀" }; }"#).await;
    assert_eq!(value(&report), &json!({ "half": "\u{FFFD}", "pair": "😀" }));
    assert_eq!(report.logs[0].message, "log \u{FFFD}");
}

#[tokio::test]
async fn huge_error_messages_are_cut() {
    let report = run(
        Kind::Default,
        r#"async () => { throw new Error("x".repeat(200000)); }"#,
    )
    .await;
    let err = error(&report);
    assert!(err.message.len() < 4200, "{} bytes", err.message.len());
    assert!(err.message.contains("more bytes cut"));
    let report = run(
        Kind::Default,
        r#"async () => { await forge.callTool("x".repeat(100000), "t"); }"#,
    )
    .await;
    let err = error(&report);
    assert_eq!(err.forge.as_ref().unwrap().code, "INVALID_ARGUMENT");
    assert!(err.message.len() < 300, "{}", err.message);
}

/// The validator's whole bypass corpus, run in the sandbox with no validator
/// in front: the runtime hardening alone must keep every attempt harmless.
/// Each attempt returns "PWNED" only if it escaped; a thrown error, a
/// refused call or any other value means it was contained.
#[tokio::test]
async fn the_bypass_corpus_is_harmless_without_the_validator() {
    let mut escaped = Vec::new();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for (name, code) in crate::bypass_corpus::BYPASSES {
        let (cx, tools) = context();
        let report = run_with(Kind::Default, Mode::Execute, code, cx).await;
        let outcome = match &report.result {
            Ok(v) if v.to_string().contains("PWNED") => {
                escaped.push(format!("{name}: {v}"));
                "escaped".to_string()
            }
            Ok(_) => "contained: other value".to_string(),
            Err(e) => format!("contained: {}", e.kind),
        };
        *outcomes.entry(outcome).or_default() += 1;
        assert_eq!(
            tools.counters.calls.load(Ordering::SeqCst),
            0,
            "{name} reached no tool"
        );
    }
    eprintln!("bypass corpus without the validator: {outcomes:?}");
    assert!(escaped.is_empty(), "escaped the sandbox: {escaped:#?}");
    assert!(crate::bypass_corpus::BYPASSES.len() >= 60);
}

/// Issue 38, item 11: a script that put a getter and setter on
/// `Array.prototype[0]`, replaced `Promise.prototype.then` and
/// `constructor`, made every object thenable (`Object.prototype.then`) and
/// planted `failFast` on `Object.prototype` changed what `forge.parallel`
/// collected and what `await forge.callTool(...)` yielded. Now the glue
/// writes own properties, `Promise`'s lookups are locked, and every value a
/// call resolves with is shielded: the answers are the same as unpolluted.
/// (Options are passed as none: an options object the script passes is
/// read as JS reads it, inherited fields included; see SECURITY.md.)
#[tokio::test]
async fn prototype_pollution_does_not_change_what_calls_and_parallel_return() {
    let report = run(
        Kind::Default,
        r#"async () => {
            const calls = () => [
                () => forge.callTool("alpha", "fail"),
                () => forge.callTool("alpha", "echo", { n: 1 }),
                async () => forge.callTool("alpha", "echo", { n: 2 }),
            ];
            const clean = {
                direct: await forge.callTool("alpha", "echo", { n: 0 }),
                parallel: await forge.parallel(calls()),
                stash: (await forge.stash.put("k", [1, 2]), await forge.stash.get("k")),
            };
            let hits = 0;
            Object.defineProperty(Array.prototype, 0, { get() { hits++; return "HIJACKED"; }, set(v) { hits++; }, configurable: true });
            try { Promise.prototype.then = function (ok) { ok("HIJACKED"); }; } catch (e) {}
            try { Object.defineProperty(Promise.prototype, "constructor", { value: function Evil() {} }); } catch (e) {}
            Object.defineProperty(Object.prototype, "then", { value: function (ok) { ok("HIJACKED"); }, configurable: true, writable: true });
            Object.defineProperty(Object.prototype, "failFast", { value: true, configurable: true, writable: true });
            const polluted = {
                direct: await forge.callTool("alpha", "echo", { n: 0 }),
                parallel: await forge.parallel(calls()),
                stash: (await forge.stash.put("k", [1, 2]), await forge.stash.get("k")),
            };
            const same = JSON.stringify(polluted) === JSON.stringify(clean);
            const seen = JSON.stringify(polluted);
            delete Array.prototype[0];
            delete Object.prototype.then;
            delete Object.prototype.failFast;
            return { same, seen, clean: JSON.stringify(clean) };
        }"#,
    )
    .await;
    let v = value(&report);
    assert_eq!(v["same"], json!(true), "{v:#}");
    let clean: serde_json::Value = serde_json::from_str(v["clean"].as_str().unwrap()).unwrap();
    assert_eq!(clean["parallel"]["aborted"], json!(false), "{clean:#}");
    assert_eq!(
        clean["parallel"]["results"][1]["args"]["n"],
        json!(1),
        "{clean:#}"
    );
    assert_eq!(
        clean["parallel"]["errors"][0]["code"],
        json!("TOOL_FAILED"),
        "{clean:#}"
    );
}
