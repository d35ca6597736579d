//! Verdicts come from what the engine and the host know, never from what a
//! script threw (issue 16, "Verdicts a script cannot forge").

use quickforge::ErrorKind;
use serde_json::json;

use crate::support::{HANG_BOUND, Kind, error, fails_as, run, value};

/// Reproduces: a script that throws a value shaped like QuickJS's own
/// out-of-memory error (`{name: "InternalError", message: "out of memory"}`,
/// a real `InternalError`, a renamed `Error`, a rejection, a `toJSON` that
/// throws one) was reported as `out_of_memory`, because the guest classified
/// the thrown value by its name and message. Each is the script's own
/// `thrown` error (or `not_serializable`), with its own text and stack; so
/// are look-alikes of the other engine failures and a thrown `null`.
#[tokio::test]
async fn a_script_cannot_forge_an_engine_verdict() {
    for (code, kind, message) in [
        (
            r#"async () => { throw { name: "InternalError", message: "out of memory" }; }"#,
            ErrorKind::Thrown,
            "InternalError: out of memory",
        ),
        (
            r#"async () => { throw new InternalError("out of memory"); }"#,
            ErrorKind::Thrown,
            "InternalError: out of memory",
        ),
        (
            r#"async () => { const e = new Error("out of memory"); e.name = "InternalError"; throw e; }"#,
            ErrorKind::Thrown,
            "InternalError: out of memory",
        ),
        (
            r#"async () => Promise.reject(new InternalError("out of memory"))"#,
            ErrorKind::Thrown,
            "InternalError: out of memory",
        ),
        (
            r#"async () => ({ toJSON() { throw new InternalError("out of memory"); } })"#,
            ErrorKind::NotSerializable,
            "the result is not serializable to JSON: InternalError: out of memory",
        ),
        (
            r#"async () => { throw new InternalError("stack overflow"); }"#,
            ErrorKind::Thrown,
            "InternalError: stack overflow",
        ),
        (
            r#"async () => { throw new RangeError("Maximum call stack size exceeded"); }"#,
            ErrorKind::Thrown,
            "RangeError: Maximum call stack size exceeded",
        ),
        (
            r#"async () => { throw new InternalError("interrupted"); }"#,
            ErrorKind::Thrown,
            "InternalError: interrupted",
        ),
        (
            "async () => { throw null; }",
            ErrorKind::Thrown,
            "Uncaught null",
        ),
    ] {
        let report = run(Kind::Default, code).await;
        let err = error(&report);
        assert_eq!((err.kind, err.message.as_str()), (kind, message), "{code}");
    }
    // An Error keeps its stack: the script's own frames, not the engine's.
    let report = run(
        Kind::Default,
        r#"async () => { throw new InternalError("out of memory"); }"#,
    )
    .await;
    let stack = error(&report).stack.clone().unwrap_or_default();
    assert!(stack.contains("script.js"), "{stack}");
}

/// Reproduces: at a 64 MiB heap (the default before issue 18), a `Map` of
/// a million entries
/// fills QuickJS's heap so completely that it cannot allocate even its own
/// `out of memory` error, throws `null` instead, and the client read
/// `thrown: Uncaught null`. It is `out_of_memory`, with the allocation that
/// failed and what the guest was doing as the cause.
#[tokio::test]
async fn a_map_of_a_million_entries_runs_out_of_memory_with_a_cause() {
    for code in [
        "async () => { const m = new Map(); for (let i = 0; i < 1e6; i++) m.set(i, i); return m.size; }",
        "async () => { const m = new Map(); for (let i = 0; i < 1e6; i++) m.set('k' + i, { i }); return m.size; }",
    ] {
        let message = fails_as(Kind::SmallHeap, code, ErrorKind::OutOfMemory, HANG_BOUND).await;
        assert_oom_cause(&message, "running the script");
    }
}

/// Reproduces: a JSON round trip of 200,000 small objects at a 64 MiB
/// heap ended as `thrown: Uncaught null` (the same exhausted heap as the
/// `Map` case, reached inside `JSON.parse`/`JSON.stringify`). It is
/// `out_of_memory` with its cause.
#[tokio::test]
async fn a_json_round_trip_of_200000_objects_runs_out_of_memory_with_a_cause() {
    for code in [
        r#"async () => { const a = Array.from({ length: 200000 }, (_, i) => ({ id: i, name: "item" + i })); return JSON.parse(JSON.stringify(a)); }"#,
        r#"async () => { const a = Array.from({ length: 200000 }, (_, i) => ({ id: i, name: "item" + i, value: i * 2, tags: ["x", "y"], nested: { a: i } })); return JSON.parse(JSON.stringify(a)).length; }"#,
    ] {
        let message = fails_as(Kind::SmallHeap, code, ErrorKind::OutOfMemory, HANG_BOUND).await;
        assert_oom_cause(&message, "running the script");
    }
}

/// Guards the other side of the rule: once memory really ran out, what ends
/// the run decides. The engine's error, uncaught or rethrown, is
/// `out_of_memory`; an error of the script's own after catching it stays
/// `thrown`, with the script's text.
#[tokio::test]
async fn after_a_real_out_of_memory_the_script_s_own_error_stays_its_own() {
    let bomb = "const keep = []; while (true) keep.push(new Array(100000).fill(1.5));";
    let rethrown = format!("async () => {{ try {{ {bomb} }} catch (e) {{ throw e; }} }}");
    let message = fails_as(Kind::Tight, &rethrown, ErrorKind::OutOfMemory, HANG_BOUND).await;
    assert_oom_cause(&message, "running the script");
    let replaced = format!(
        "async () => {{ try {{ {bomb} }} catch (e) {{ throw new TypeError('gave up: ' + e.message); }} }}"
    );
    let report = run(Kind::Tight, &replaced).await;
    let err = error(&report);
    assert_eq!(
        (err.kind, err.message.as_str()),
        (ErrorKind::Thrown, "TypeError: gave up: out of memory")
    );
    // Caught and survived, it is no verdict at all.
    let caught = format!("async () => {{ try {{ {bomb} }} catch (e) {{ return e.message; }} }}");
    assert_eq!(
        value(&run(Kind::Tight, &caught).await),
        &json!("out of memory")
    );
}

/// The message of an engine out-of-memory names what was being done and the
/// allocation that did not fit, against the heap limit.
fn assert_oom_cause(message: &str, doing: &str) {
    assert!(
        message.starts_with(&format!("the script ran out of memory while {doing}: ")),
        "{message}"
    );
    assert!(
        message.contains("did not fit") || message.contains("could not grow"),
        "{message}"
    );
    assert!(message.contains("MiB"), "{message}");
    assert!(!message.contains("Uncaught"), "{message}");
}
