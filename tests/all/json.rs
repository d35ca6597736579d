//! Tool arguments and results are encoded exactly as `JSON.stringify` encodes
//! them, whether the guest's fast encoder for plain data takes them or gives
//! them to `JSON.stringify` (getters, `toJSON`, exotic objects, lone
//! surrogates, cycles, ...), and giving up is unobservable: no getter or
//! `toJSON` runs twice.

use std::sync::{Arc, Mutex};

use quickforge::Trail;
use quickforge::{ErrorKind, Mode};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::support::{HANG_BOUND, Kind, context, fails_as, run, run_with, value};

/// Expressions covering the plain-data fast path and every reason to leave it.
const CASES: &[&str] = &[
    // plain data
    "({})",
    "({ a: 1, b: 'x', c: true, d: false, e: null })",
    "({ nested: { deeper: { list: [1, [2, [3, {}]], []] } } })",
    "[1, 'two', null, [], {}]",
    "({ b: 1, 2: 'two', a: 2, 1: 'one', [-1]: 'minus' })",
    "({ s: 'quote\" back\\\\ nl\\n cr\\r tab\\t bs\\b ff\\f nul\\u0000 us\\u001f del\\u007f' })",
    "({ s: 'é 漢字 😀 \\u2028 \\u2029', 'ключ': 'значение', '\"k\\n': 1 })",
    "({ n: [0, -0, 1, -1, 2147483647, -2147483648, 2147483648, 2 ** 53, -(2 ** 53), 1e15, 1e15 - 1] })",
    "({ f: [1.5, 0.1, 0.1 + 0.2, -1e300, 1e21, 1e-7, 123456789012345680000, 999999999999999.9, 5e-324] })",
    "({ f: [NaN, Infinity, -Infinity] })",
    "({ skipped: undefined, fn() {}, [Symbol('s')]: 1, sym: Symbol('t'), kept: 1 })",
    "[undefined, () => 1, Symbol('s')]",
    "new (class Point { constructor() { this.x = 1; this.y = 2; } })()",
    "Object.assign(Object.create(null), { bare: true })",
    "Object.defineProperty({ shown: 1 }, 'hidden', { value: 2, enumerable: false })",
    "Object.assign([1, 2], { extra: 'ignored' })",
    "({ long: 'x'.repeat(10000), many: Array.from({ length: 1000 }, (_, i) => i) })",
    // left to JSON.stringify
    "({ get g() { return 5; } })",
    "({ toJSON() { return { replaced: true }; } })",
    "({ when: new Date(0) })",
    "({ boxed: [new String('s'), new Number(3), new Boolean(false)] })",
    "({ sparse: [1, , 3] })",
    "({ lone: '\\ud800', pair: 'a\\udc00b' })",
    "({ ['\\ud800key']: 1 })",
    "({ map: new Map([[1, 2]]), set: new Set([1]), bytes: new Uint8Array([1, 2]) })",
    "({ args: (function () { return arguments; })(1, 2) })",
    "({ err: new Error('e'), re: /x/g })",
    "(() => { let o = {}; for (let i = 0; i < 100; i++) o = { o }; return o; })()",
    "(() => { const o = { a: 1 }; Object.prototype.toJSON = function () { return 'proto'; }; return o; })()",
    "(() => { const a = [1]; Array.prototype.toJSON = function () { return 'array proto'; }; return { a }; })()",
];

/// The `[code, message]` of the error `forge.callTool` rejects with when its
/// arguments are `args` (a JS expression); panics if the call goes through.
async fn refused_arguments(args: &str) -> Value {
    let code = format!(
        "async () => {{ try {{ await forge.callTool('alpha', 'echo', {args}); return 'sent'; }} \
         catch (e) {{ return [e.code, e.message]; }} }}"
    );
    value(&run(Kind::Default, &code).await).clone()
}

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

#[tokio::test]
async fn tool_arguments_are_the_bytes_json_stringify_gives() {
    for case in CASES {
        let (mut cx, _tools) = context();
        let trail = Arc::new(Mutex::new(Trail::new(100)));
        cx.audit = Some(trail.clone());
        // Stringified first: a case that changes a prototype changes how
        // both encoders see everything after it. The text goes back as a
        // string, which no `toJSON` a case installs can replace. Arguments
        // that a `toJSON` turns into a non-object are refused, as they should
        // be, after being recorded.
        let code = format!(
            "async () => {{ const args = {{ v: {case} }}; const text = JSON.stringify(args); \
             try {{ await forge.callTool('alpha', 'echo', args); }} \
             catch (e) {{ if (text.startsWith('{{')) throw e; }} return text; }}"
        );
        let report = run_with(Kind::Default, Mode::Execute, &code, cx).await;
        let text = value(&report)
            .as_str()
            .expect("the script returns a string");
        let (ops, _) = trail.lock().unwrap().snapshot();
        assert_eq!(ops.len(), 1, "{case}");
        assert_eq!(
            ops[0].args_sha256.as_deref(),
            Some(sha256(text).as_str()),
            "{case}: the host got other bytes than {text:?}"
        );
        assert_eq!(ops[0].args_bytes, Some(text.len() as u64), "{case}");
    }
}

#[tokio::test]
async fn results_are_what_json_stringify_gives() {
    for case in CASES {
        let returned = run(Kind::Default, &format!("async () => ({case})")).await;
        let stringified = run(
            Kind::Default,
            &format!("async () => JSON.stringify({case})"),
        )
        .await;
        let text = value(&stringified).as_str().expect("a string");
        // The host reads a lone surrogate (the two cases with one) as U+FFFD.
        let text = text
            .replace("\\ud800", "\\ufffd")
            .replace("\\udc00", "\\ufffd");
        let expected: Value = serde_json::from_str(&text).expect("JSON.stringify gives JSON");
        assert_eq!(value(&returned), &expected, "{case}");
    }
}

#[tokio::test]
async fn getters_and_to_json_run_once_per_encoding() {
    let code = r#"async () => {
        let getter = 0, toJSON = 0;
        const args = {
            plain: 1,
            get g() { getter++; return 'g'; },
            nested: { toJSON() { toJSON++; return 'j'; } },
        };
        await forge.callTool('alpha', 'echo', args);
        return { getter, toJSON, back: { get g() { getter++; return getter; } } };
    }"#;
    let report = run(Kind::Default, code).await;
    assert_eq!(
        value(&report),
        &json!({ "getter": 1, "toJSON": 1, "back": { "g": 2 } })
    );
}

#[tokio::test]
async fn unencodable_arguments_and_results_fail_as_before() {
    // A cycle and a BigInt: the fast encoder gives up, JSON.stringify throws.
    for (args, says) in [
        (
            "(() => { const o = { a: 1 }; o.self = o; return o; })()",
            "circular",
        ),
        ("({ big: 10n })", "BigInt"),
    ] {
        let got = refused_arguments(args).await;
        assert_eq!(got[0], json!("INVALID_ARGUMENT"), "{args}: {got}");
        assert!(got[1].as_str().unwrap().contains(says), "{args}: {got}");

        let code = format!("async () => ({args})");
        let message = fails_as(Kind::Default, &code, ErrorKind::NotSerializable, HANG_BOUND).await;
        assert!(message.contains(says), "{args}: {message}");
    }
}

#[tokio::test]
async fn long_prototype_chains_and_huge_values_go_to_json_stringify() {
    // 100,000 prototypes: walked by JSON.stringify's loop, not by recursion.
    let code = r#"async () => {
        let p = {};
        for (let i = 0; i < 100000; i++) p = Object.create(p);
        const args = { x: Object.create(p) };
        await forge.callTool('alpha', 'echo', args);
        return args;
    }"#;
    assert_eq!(value(&run(Kind::Default, code).await), &json!({ "x": {} }));

    // 600 MiB of JSON: past what the guest encodes outside QuickJS's memory
    // limit and past the default heap (512 MiB), so JSON.stringify runs out
    // of memory as a catchable error...
    let got = refused_arguments("{ v: Array(600).fill('x'.repeat(1 << 20)) }").await;
    assert_eq!(got[0], json!("INVALID_ARGUMENT"), "{got}");
    assert!(got[1].as_str().unwrap().contains("out of memory"), "{got}");

    // ...and a result that size fails as out of memory, not as a killed
    // instance; the next execution runs.
    let code = "async () => Array(600).fill('x'.repeat(1 << 20))";
    fails_as(Kind::Default, code, ErrorKind::OutOfMemory, HANG_BOUND).await;
}
