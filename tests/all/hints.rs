//! Hints for the usual mistakes (issue 18, item 2), in the text the model
//! reads: the `isError` result's text content, which every client shows
//! (some drop `structuredContent` on errors). Before the hints, a forgotten
//! `await` returned `{"r":{}}` as a success, `r.split` said only "not a
//! function", a dotted tool name said "tool must be a non-empty string",
//! an unknown server got no list of names, `fetch` was a bare
//! `ReferenceError` and every `ForgeError` carried the prelude's frames.

use serde_json::json;

use crate::mcp::*;

/// The text content of `execute`'s result for `code`, and whether it is an
/// error.
async fn text(s: &Session, code: &str) -> (String, bool) {
    let r = s.call("execute", code).await;
    let text = r
        .content
        .iter()
        .filter_map(|c| {
            serde_json::to_value(c).ok()?["text"]
                .as_str()
                .map(String::from)
        })
        .collect::<Vec<_>>()
        .join("\n");
    (text, r.is_error == Some(true))
}

async fn session(name: &str) -> Session {
    let dir = scratch(name);
    connect(&write_config(
        &dir,
        &format!("{}\n{}", fixture("faulty", &[]), everything()),
    ))
    .await
}

#[tokio::test]
async fn a_forgotten_await_is_named() {
    let s = session("hint-await").await;
    // A Promise in the result: an error naming where it is.
    let (t, err) = text(
        &s,
        r#"async () => { const r = forge.callTool("everything", "echo", { message: "x" }); return { items: [1, { r }] }; }"#,
    )
    .await;
    assert!(err, "{t}");
    assert!(
        t.contains("result.items[1].r") && t.contains("await"),
        "{t}"
    );
    // A method, and a property, read on a Promise.
    for code in [
        r#"async () => { const r = forge.callTool("everything", "echo", { message: "a b" }); return r.split(" "); }"#,
        r#"async () => { const r = forge.callTool("everything", "echo", { message: "x" }); return r.entities.length; }"#,
    ] {
        let (t, err) = text(&s, code).await;
        assert!(err, "{t}");
        assert!(t.contains("is a Promise") && t.contains("await"), "{t}");
        assert!(t.contains("script.js:1:"), "the script's own position: {t}");
    }
    // Awaited, the same values work, and conversions of a Promise still do.
    let v = s
        .execute(r#"async () => [String(Promise.resolve(1)), JSON.stringify({ p: 1 }), typeof (await forge.callTool("everything", "echo", { message: "x" }))]"#)
        .await;
    assert_eq!(v, json!(["[object Promise]", "{\"p\":1}", "string"]));
}

#[tokio::test]
async fn a_forgotten_return_after_calls_is_noted() {
    let s = session("hint-return").await;
    let (t, err) = text(
        &s,
        r#"async () => { await forge.callTool("everything", "echo", { message: "x" }); }"#,
    )
    .await;
    assert!(!err, "returning nothing is not an error: {t}");
    assert!(
        t.contains("returned undefined") && t.contains("return"),
        "{t}"
    );
    // Without tool calls there is nothing to note.
    let (t, _) = text(&s, "async () => { const x = 1; }").await;
    assert!(!t.contains("returned undefined"), "{t}");
}

#[tokio::test]
async fn misplaced_names_suggest_the_call_meant() {
    let s = session("hint-names").await;
    // Dotted `server.tool` with the args second.
    let (t, err) = text(
        &s,
        r#"async () => forge.callTool("everything.echo", { message: "x" })"#,
    )
    .await;
    assert!(err);
    assert!(
        t.contains(r#"forge.callTool("everything", "echo", args)"#),
        "{t}"
    );
    // Dotted, with a tool name after it.
    let (t, _) = text(
        &s,
        r#"async () => forge.callTool("everything.echo", "echo", {})"#,
    )
    .await;
    assert!(
        t.contains(r#"forge.callTool("everything", "echo", args)"#),
        "{t}"
    );
    // Server and tool swapped.
    let (t, _) = text(
        &s,
        r#"async () => forge.callTool("echo", "everything", { message: "x" })"#,
    )
    .await;
    assert!(
        t.contains(r#"forge.callTool("everything", "echo", args)"#),
        "{t}"
    );
    // A server that is no near-miss: the configured names.
    let (t, _) = text(
        &s,
        r#"async () => forge.callTool("github", "create_issue", {})"#,
    )
    .await;
    assert!(t.contains("SERVER_NOT_FOUND"), "{t}");
    assert!(
        t.contains(r#""everything""#) && t.contains(r#""faulty""#),
        "{t}"
    );
    // No prelude frames in what the model reads.
    assert!(!t.contains("prelude.js") && !t.contains("makeError"), "{t}");
}

#[tokio::test]
async fn names_that_never_exist_say_what_to_do() {
    let s = session("hint-never").await;
    let (t, err) = text(
        &s,
        r#"async () => { const r = await fetch("https://example.com"); return r.status; }"#,
    )
    .await;
    assert!(err);
    assert!(
        t.contains("fetch is not defined") && t.contains("forge.callTool"),
        "{t}"
    );
    let (t, _) = text(&s, "async () => process.env.HOME").await;
    assert!(t.contains("there is no process"), "{t}");
    // Feature checks still see them as undefined.
    let v = s
        .execute(r#"async () => [typeof fetch, typeof require, typeof process, typeof Deno, typeof Bun, typeof fs, typeof setTimeout]"#)
        .await;
    assert_eq!(
        v,
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "function"
        ])
    );
}
