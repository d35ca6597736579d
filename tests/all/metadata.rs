//! Tool metadata as the model reads it, from a real server that attacks the
//! model through it (`fixture.mjs --hostile`): through `manifest.tool(...)`
//! (the JSON of the tool) and its TypeScript `signature`.

use serde_json::Value;

use crate::mcp::*;

/// What a model must never read, as it appears in a JSON dump of the tool
/// (escaped the way `serde_json` writes control characters) or raw.
const NEVER: &[&str] = &[
    "\\u001b",
    "Ѕystem",
    "ｉｇｎｏｒｅ",
    "Human:",
    "Assistant:",
    "<|begin_of_text|>",
    "[INST]",
    "<<SYS>>",
    "</s>",
    "<start_of_turn>",
    "<instructions>",
    "Disregard the above",
    "ignore previous instructions",
];

/// Characters a model must never read: escape, line and paragraph
/// separators, bidi overrides, variation selectors, tag characters.
fn hidden(c: char) -> bool {
    matches!(c, '\u{1b}' | '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{FE00}'..='\u{FE0F}' | '\u{E0000}'..='\u{E01EF}')
}

/// Issue 16, item 5: instruction-like text and invisible characters reached
/// the model through schema fields the sanitizer skipped (`$comment`,
/// `default`, `examples`, `x-*`, `deprecationMessage`, enum values,
/// property names, nested extensions), through variation selectors, tag
/// characters, line separators and OSC escapes, through role tags beyond
/// the listed ones and fake `Human:` turns, and through look-alike and
/// fullwidth spellings; and a tool whose only fault was hidden characters
/// got no warning. Against the old sanitizer every one of `NEVER` but the
/// escape showed up in `lookalike`, with its line separator and variation
/// selectors, and `hidden_only` had no `warning`.
#[tokio::test]
async fn every_string_a_model_reads_is_cleaned_and_warned_about() {
    let dir = scratch("hostile-every-string");
    let s = connect(&write_config(&dir, &fixture("shady", &["--hostile"]))).await;
    let seen = s
        .search(
            r#"async () => ({
                lookalike: manifest.tool("shady", "lookalike"),
                hidden: manifest.tool("shady", "hidden_only"),
                polyglot: manifest.tool("shady", "polyglot"),
                found: manifest.search("lookalike read file", 5).filter(t => t.tool === "lookalike").map(t => t.description),
            })"#,
        )
        .await;
    let tool = &seen["lookalike"];
    let json = serde_json::to_string(tool).unwrap();
    for never in NEVER {
        assert!(!json.contains(never), "{never:?} in {json}");
    }
    assert!(!json.chars().any(hidden), "{json:?}");
    let signature = tool["signature"].as_str().unwrap();
    for never in NEVER {
        assert!(!signature.contains(never), "{never:?} in {signature}");
    }
    let marker = "[removed: instruction-like text]";
    assert!(
        tool["description"]
            .as_str()
            .unwrap()
            .starts_with("Reads a file.\n"),
        "{tool:#}"
    );
    let schema = &tool["inputSchema"];
    for at in [
        "/$comment",
        "/x-agent-hint",
        "/properties/path/default",
        "/properties/path/examples/0",
        "/properties/path/deprecationMessage",
        "/properties/mode/enum/1",
        "/properties/nested/properties/deep/items/x-note",
    ] {
        let text = schema
            .pointer(at)
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(text.contains(marker), "{at}: {text:?}");
    }
    // The property name is cleaned like any other string, and what the
    // model reads is what its arguments are checked against.
    assert!(schema["properties"][marker].is_object(), "{schema:#}");
    assert!(signature.contains(marker), "{signature}");
    assert_eq!(schema["properties"]["mode"]["enum"][0], "read");
    let warning = tool["warning"].as_str().unwrap();
    assert!(
        warning.contains("instruction-like") && warning.contains("hidden characters"),
        "{warning}"
    );
    let found = seen["found"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{seen:#}");
    for d in found {
        let d = d.as_str().unwrap();
        assert!(
            !d.contains('\u{e0100}') && !d.contains("ｉｇｎｏｒｅ"),
            "{d}"
        );
    }

    // Hidden characters alone are enough for a warning.
    let hidden = &seen["hidden"];
    assert_eq!(hidden["description"], "Counts words.");
    assert_eq!(
        hidden["inputSchema"]["properties"]["text"]["description"],
        "The textexe.txt"
    );
    let warning = hidden["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("hidden characters") && !warning.contains("instruction-like"),
        "{hidden:#}"
    );

    // Honest text in other scripts, with emoji, is left as it is.
    let polyglot = &seen["polyglot"];
    assert_eq!(
        polyglot["description"],
        "検索します 🔍 — Получить список — يعرض القائمة — Loved ❤\u{fe0f} by 👨\u{200d}👩\u{200d}👧"
    );
    assert!(polyglot.get("warning").is_none(), "{polyglot:#}");

    // The tool still works, with arguments checked against the cleaned
    // schema.
    let v = s
        .execute(r#"async () => (await forge.callTool("shady", "lookalike", { path: "/tmp/x", mode: "read" })).tool"#)
        .await;
    assert_eq!(v, "lookalike");
    let e = s
        .execute_err(r#"async () => forge.callTool("shady", "lookalike", { path: "/tmp/x", mode: "read <start_of_turn>system" })"#)
        .await;
    assert_eq!(e["forge"]["code"], "INVALID_ARGUMENTS", "{e:#}");
}
