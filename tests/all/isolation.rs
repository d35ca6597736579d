//! Nothing leaks between executions, and no capability is reachable.

use std::sync::Arc;

use quickforge::{ExecutionContext, Mode, Stash};
use serde_json::json;

use crate::support::{Kind, TestTools, error, run, run_with, value};

#[tokio::test]
async fn globals_do_not_survive_an_execution() {
    let first = run(Kind::Default, "async () => { globalThis.leak = 42; Object.prototype.polluted = 1; Array.prototype.push = null; return 'set'; }").await;
    assert_eq!(value(&first), &json!("set"));
    let second = run(
        Kind::Default,
        "async () => [typeof leak, ({}).polluted === undefined, typeof [].push]",
    )
    .await;
    assert_eq!(value(&second), &json!(["undefined", true, "function"]));
}

#[tokio::test]
async fn the_stash_is_the_only_channel_between_executions() {
    let tools = Arc::new(TestTools::default());
    let cx = ExecutionContext {
        servers: tools.clone(),
        manifest: tools,
        stash: Arc::new(Stash::default()),
        audit: None,
        ..ExecutionContext::default()
    };
    let first = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => { await forge.stash.put("carry", { n: 7 }); globalThis.lost = 1; }"#,
        cx.clone(),
    )
    .await;
    value(&first);
    let second = run_with(
        Kind::Default,
        Mode::Execute,
        r#"async () => [await forge.stash.get("carry"), typeof lost]"#,
        cx,
    )
    .await;
    assert_eq!(value(&second), &json!([{ "n": 7 }, "undefined"]));
    // Another session's stash does not see it.
    let other = run(Kind::Default, r#"async () => forge.stash.get("carry")"#).await;
    assert_eq!(value(&other), &json!(null));
}

/// (`setTimeout`, `setInterval` and `performance` exist since issue 18 on
/// purpose: timers are host completions held to the execution's deadline,
/// and `performance.now` is coarsened to 100 µs; see `webglobals.rs`.)
#[tokio::test]
async fn no_host_capabilities_are_reachable() {
    let report = run(
        Kind::Default,
        r#"async () => {
            const names = ["process", "require", "module", "exports", "fetch", "XMLHttpRequest", "WebSocket", "Deno", "Bun",
                           "std", "os", "scriptArgs", "importScripts", "WebAssembly", "eval",
                           "Proxy", "SharedArrayBuffer", "Atomics"];
            return names.filter(n => typeof globalThis[n] !== "undefined");
        }"#,
    )
    .await;
    assert_eq!(value(&report), &json!([]));
    // A dynamic import has no loader to reach files or the network.
    let report = run(Kind::Default, r#"async () => { try { await import("/etc/passwd"); return "imported"; } catch (e) { return e.name; } }"#).await;
    assert_ne!(value(&report), &json!("imported"));
}

#[tokio::test]
async fn every_path_to_a_function_constructor_throws() {
    let report = run(
        Kind::Default,
        r#"async () => {
            const attempts = {
                functionCtor: () => (function () {}).constructor("return 1")(),
                arrowCtor: () => (() => 1).constructor("return 1")(),
                asyncCtor: () => (async function () {}).constructor("return 1")(),
                generatorCtor: () => (function* () {}).constructor("yield 1")().next(),
                asyncGeneratorCtor: () => (async function* () {}).constructor("yield 1")(),
                viaPrototype: () => Object.getPrototypeOf(async () => {}).constructor("return 1")(),
                viaObject: () => ({}).constructor.constructor("return 1")(),
                viaReflect: () => Reflect.construct(Object.getPrototypeOf(function* () {}).constructor, ["return 1"]),
                viaBind: () => Function.prototype.constructor.bind(null, "return 1")()(),
                globalFunction: () => Function("return 1")(),
                indirectEval: () => (0, globalThis["ev" + "al"])("1"),
            };
            const escaped = [];
            for (const [name, attempt] of Object.entries(attempts)) {
                try { attempt(); escaped.push(name); } catch (e) { /* refused */ }
            }
            return escaped;
        }"#,
    )
    .await;
    assert_eq!(value(&report), &json!([]));
    let report = run(
        Kind::Default,
        r#"async () => (function () {}).constructor("return 1")()"#,
    )
    .await;
    let err = error(&report);
    assert!(err.message.contains("eval is not supported"), "{err:?}");
}

#[tokio::test]
async fn math_random_differs_between_runs() {
    let a = run(Kind::Default, "async () => [Math.random(), Math.random()]").await;
    let b = run(Kind::Default, "async () => [Math.random(), Math.random()]").await;
    let (a, b) = (value(&a).clone(), value(&b).clone());
    assert_ne!(a, b);
    for x in a.as_array().unwrap().iter().chain(b.as_array().unwrap()) {
        let x = x.as_f64().unwrap();
        assert!((0.0..1.0).contains(&x), "{x}");
    }
    assert_ne!(a[0], a[1]);
}
