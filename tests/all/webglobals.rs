//! The web-platform globals (issue 18, item 1): before them, `setTimeout`,
//! `URL`, `TextEncoder`, `structuredClone`, `crypto`, `performance` and
//! `AbortController` were `ReferenceError`s, so the scripts models write
//! against the web platform failed. Each test runs real scripts in the real
//! sandbox; without the globals every one of them fails on the first name.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use quickforge::ErrorKind;
use serde_json::json;

use crate::mcp::*;
use crate::support::{Kind, context, error, run, run_with, value};

/// Timers fire in order of their delay, ties in the order they were set,
/// with promise jobs between two timers; `clearTimeout` stops one and
/// `setInterval` repeats until cleared.
#[tokio::test]
async fn timers_fire_in_order_and_clear() {
    let v = value(
        &run(
            Kind::Default,
            r#"async () => {
                const order = [];
                setTimeout(() => order.push("late"), 30);
                setTimeout(() => order.push("early"), 5);
                setTimeout(() => { order.push("zero-a"); Promise.resolve().then(() => order.push("job")); }, 0);
                setTimeout(() => order.push("zero-b"), 0);
                const gone = setTimeout(() => order.push("cleared"), 1);
                clearTimeout(gone);
                queueMicrotask(() => order.push("micro"));
                let ticks = 0;
                await new Promise((done) => {
                    const id = setInterval((step) => { ticks += step; if (ticks === 3) { clearInterval(id); done(); } }, 2, 1);
                });
                await new Promise((r) => setTimeout(r, 60));
                return { order, ticks };
            }"#,
        )
        .await,
    )
    .clone();
    assert_eq!(
        v,
        json!({ "order": ["micro", "zero-a", "job", "zero-b", "early", "late"], "ticks": 3 })
    );
}

/// `await sleep(200)` really waits, and a retry with backoff between calls
/// works; timers are not tool calls, so they do not count against
/// `max_tool_calls` (5 on the tight sandbox) and are not operations.
#[tokio::test]
async fn sleeping_between_calls_spends_no_call_budget() {
    let started = Instant::now();
    let report = run(
        Kind::Tight,
        r#"async () => {
            const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
            const t0 = performance.now();
            for (let i = 0; i < 20; i++) await sleep(1);
            await sleep(200);
            const waited = performance.now() - t0;
            const r = await forge.callTool("alpha", "echo", { n: 1 });
            return { waited: waited >= 200, tool: r.tool };
        }"#,
    )
    .await;
    assert_eq!(value(&report), &json!({ "waited": true, "tool": "echo" }));
    assert_eq!(report.stats.operations, 1, "only the tool call counts");
    assert!(started.elapsed() >= Duration::from_millis(200));
}

/// More pending timers than the host allows is a clear `RangeError`, and
/// clearing timers frees their places.
#[tokio::test]
async fn pending_timers_are_capped() {
    let v = value(
        &run(
            Kind::Default,
            r#"async () => {
                const ids = [];
                let message = null;
                try { for (let i = 0; i < 5000; i++) ids.push(setTimeout(() => {}, 60000)); }
                catch (e) { message = `${e.name}: ${e.message}`; }
                const reached = ids.length;
                for (const id of ids) clearTimeout(id);
                const again = setTimeout(() => {}, 60000);
                clearTimeout(again);
                return { reached, message };
            }"#,
        )
        .await,
    )
    .clone();
    assert_eq!(v["reached"], 1000, "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.starts_with("RangeError: too many pending timers"),
        "{message}"
    );
}

/// A timer that would fire past the wall deadline ends the execution as a
/// timeout; one the script does not wait for does not hold it.
#[tokio::test]
async fn a_timer_cannot_outlive_its_execution() {
    let report = run(
        Kind::ShortTimeout,
        "async () => { await new Promise((r) => setTimeout(r, 5000)); return 1; }",
    )
    .await;
    assert_eq!(error(&report).kind, ErrorKind::Timeout);
    assert!(Duration::from_micros(report.stats.micros) < Duration::from_secs(3));
    let report = run(
        Kind::ShortTimeout,
        "async () => { setTimeout(() => {}, 5000); setInterval(() => {}, 1); return 'done'; }",
    )
    .await;
    assert_eq!(value(&report), &json!("done"));
    assert!(Duration::from_micros(report.stats.micros) < Duration::from_millis(300));
}

/// `AbortController` gives up on a slow call: the script stops waiting at
/// once with an `AbortError`, and the host drops the call instead of
/// draining it at the end of the run.
#[tokio::test]
async fn an_abort_signal_gives_up_on_a_slow_call() {
    let (cx, tools) = context();
    let report = run_with(
        Kind::Default,
        quickforge::Mode::Execute,
        r#"async () => {
            const c = new AbortController();
            const slow = forge.callTool("alpha", "sleep", { ms: 3000 }, { signal: c.signal });
            setTimeout(() => c.abort(), 50);
            let caught;
            try { await slow; } catch (e) { caught = [e.name, e instanceof DOMException, c.signal.aborted]; }
            let pre;
            try { await forge.callTool("alpha", "echo", {}, { signal: AbortSignal.abort("why") }); } catch (e) { pre = e; }
            const t = AbortSignal.timeout(10);
            await new Promise((r) => setTimeout(r, 30));
            let thrown;
            try { t.throwIfAborted(); } catch (e) { thrown = e.name; }
            return { caught, pre, timeout: [t.aborted, t.reason.name, thrown] };
        }"#,
        cx,
    )
    .await;
    assert_eq!(
        value(&report),
        &json!({
            "caught": ["AbortError", true, true],
            "pre": "why",
            "timeout": [true, "TimeoutError", "TimeoutError"],
        })
    );
    assert!(
        Duration::from_micros(report.stats.micros) < Duration::from_millis(2000),
        "the aborted call was not waited for"
    );
    assert_eq!(tools.counters.completed.load(Ordering::SeqCst), 0);
}

/// `URL` and `URLSearchParams` follow the WHATWG URL Standard (the `url`
/// crate): normalization, relative resolution, IDNA, setters, and search
/// params that stay in sync with their URL.
#[tokio::test]
async fn urls_parse_and_serialize_as_the_standard_says() {
    let v = value(
        &run(
            Kind::Default,
            r#"async () => {
                const u = new URL("HTTPS://user:pw@Example.COM:443/a/./b/../c?x=1&y=a%20b#top");
                u.searchParams.append("z", "1 2&3");
                u.searchParams.delete("x");
                const rel = new URL("../d?q", "https://h.test/a/b/c");
                const p = new URLSearchParams({ b: "2", a: "1" });
                p.sort();
                let bad;
                try { new URL("not a url"); } catch (e) { bad = e.name; }
                u.pathname = "/new path";
                return {
                    href: u.href, host: u.host, origin: u.origin, y: u.searchParams.get("y"),
                    rel: rel.href, idn: new URL("http://münchen.test/").hostname,
                    p: p.toString(), entries: [...new URLSearchParams("?a=1&a=2&b")], all: new URLSearchParams("a=1&a=2").getAll("a"),
                    bad, canParse: [URL.canParse("x:y"), URL.canParse("nope")], json: JSON.stringify({ u: new URL("http://a.test") }),
                };
            }"#,
        )
        .await,
    )
    .clone();
    assert_eq!(
        v,
        json!({
            "href": "https://user:pw@example.com/new%20path?y=a+b&z=1+2%263#top",
            "host": "example.com",
            "origin": "https://example.com",
            "y": "a b",
            "rel": "https://h.test/a/d?q",
            "idn": "xn--mnchen-3ya.test",
            "p": "a=1&b=2",
            "entries": [["a", "1"], ["a", "2"], ["b", ""]],
            "all": ["1", "2"],
            "bad": "TypeError",
            "canParse": [true, false],
            "json": "{\"u\":\"http://a.test/\"}",
        })
    );
}

/// UTF-8 both ways, `fatal` and `ignoreBOM`, and base64 with the
/// standard's `InvalidCharacterError`.
#[tokio::test]
async fn text_codecs_and_base64() {
    let v = value(
        &run(
            Kind::Default,
            r#"async () => {
                const bytes = new TextEncoder().encode("é€😀\uD800");
                const lossy = new TextDecoder().decode(new Uint8Array([0x61, 0xff, 0x62]));
                let fatal;
                try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xc3])); } catch (e) { fatal = e.name; }
                const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0x69]);
                let b64err;
                try { btoa("€"); } catch (e) { b64err = [e.name, e.code]; }
                let a64err;
                try { atob("a"); } catch (e) { a64err = e.name; }
                return {
                    bytes: [...bytes], back: new TextDecoder().decode(bytes.buffer), lossy, fatal,
                    bom: [new TextDecoder().decode(bom).length, new TextDecoder("utf8", { ignoreBOM: true }).decode(bom).length],
                    b64: btoa("\x00\xffhi"), unb64: atob(" AP9o aQ== "), b64err, a64err,
                };
            }"#,
        )
        .await,
    )
    .clone();
    assert_eq!(
        v,
        json!({
            "bytes": [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xef, 0xbf, 0xbd],
            "back": "é€😀\u{fffd}",
            "lossy": "a\u{fffd}b",
            "fatal": "TypeError",
            "bom": [2, 3],
            "b64": "AP9oaQ==",
            "unb64": "\u{0}\u{ff}hi",
            "b64err": ["InvalidCharacterError", 5],
            "a64err": "InvalidCharacterError",
        })
    );
}

/// `structuredClone` copies Map, Set, Date, RegExp, typed arrays and
/// cycles, and refuses functions and symbols with a `DataCloneError`.
#[tokio::test]
async fn structured_clone_copies_graphs_and_refuses_functions() {
    let v = value(
        &run(
            Kind::Default,
            r#"async () => {
                const shared = new Uint8Array([1, 2, 3]);
                const o = { m: new Map([["k", { d: new Date(86400000) }]]), s: new Set([1, "x"]), r: /a+b/gi, a: shared, b: shared };
                o.self = o;
                const c = structuredClone(o);
                c.a[0] = 9;
                const errs = [];
                for (const bad of [{ f() {} }, Symbol("s"), Promise.resolve()]) {
                    try { structuredClone(bad); } catch (e) { errs.push([e.name, e.code]); }
                }
                return {
                    cycle: c.self === c && c !== o, date: c.m.get("k").d.toISOString(), set: [...c.s],
                    re: [c.r.source, c.r.flags], aliased: c.a === c.b, original: shared[0], copied: c.a[0], errs,
                };
            }"#,
        )
        .await,
    )
    .clone();
    assert_eq!(
        v,
        json!({
            "cycle": true, "date": "1970-01-02T00:00:00.000Z", "set": [1, "x"],
            "re": ["a+b", "gi"], "aliased": true, "original": 1, "copied": 9,
            "errs": [["DataCloneError", 25], ["DataCloneError", 25], ["DataCloneError", 25]],
        })
    );
}

/// `crypto.subtle.digest` gives the FIPS test vectors for "abc";
/// `randomUUID` is a version-4 UUID that differs from run to run (the
/// snapshot would otherwise freeze it); `getRandomValues` fills and refuses
/// over 64 KiB; `performance.now` never goes backwards.
#[tokio::test]
async fn crypto_and_performance() {
    let script = r#"async () => {
        const hex = (b) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
        const abc = new TextEncoder().encode("abc");
        const d = {};
        for (const alg of ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]) d[alg] = hex(await crypto.subtle.digest(alg, abc));
        let unsupported;
        try { await crypto.subtle.digest("MD5", abc); } catch (e) { unsupported = e.name; }
        let quota;
        try { crypto.getRandomValues(new Uint8Array(65537)); } catch (e) { quota = e.name; }
        const filled = crypto.getRandomValues(new Uint32Array(64)).some((x) => x !== 0);
        let last = performance.now(), monotonic = true;
        for (let i = 0; i < 10000; i++) { const t = performance.now(); if (t < last) monotonic = false; last = t; }
        return { d, unsupported, quota, filled, monotonic, uuid: crypto.randomUUID() };
    }"#;
    let a = value(&run(Kind::Default, script).await).clone();
    let b = value(&run(Kind::Default, script).await).clone();
    assert_eq!(a["d"]["SHA-1"], "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert_eq!(
        a["d"]["SHA-256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        a["d"]["SHA-384"],
        "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
    );
    assert_eq!(
        a["d"]["SHA-512"],
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
    );
    assert_eq!(a["unsupported"], "NotSupportedError");
    assert_eq!(a["quota"], "QuotaExceededError");
    assert_eq!(a["filled"], true);
    assert_eq!(a["monotonic"], true);
    let uuid = a["uuid"].as_str().unwrap();
    let shape = regex_lite_uuid(uuid);
    assert!(shape, "not a v4 UUID: {uuid}");
    assert_ne!(a["uuid"], b["uuid"], "each run has its own randomness");
}

/// Whether `s` is a lowercase version-4, variant-1 UUID.
fn regex_lite_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && s.chars()
            .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        && groups[2].starts_with('4')
        && groups[3].starts_with(['8', '9', 'a', 'b'])
}

/// Through the real binary: `AbortSignal.timeout` gives up on the fixture's
/// slow tool, the execution ends at once instead of waiting 15 s for it,
/// and the server hears the call cancelled.
#[tokio::test]
async fn abort_signal_timeout_gives_up_on_a_slow_server() {
    let dir = scratch("abort");
    let s = connect(&write_config(&dir, &fixture("faulty", &[]))).await;
    let started = Instant::now();
    let v = s
        .execute(
            r#"async () => {
                try { await forge.callTool("faulty", "slow", { ms: 15000 }, { signal: AbortSignal.timeout(200) }); return "answered"; }
                catch (e) { return e.name; }
            }"#,
        )
        .await;
    assert_eq!(v, "TimeoutError");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
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
}
