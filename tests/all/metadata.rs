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

/// Issue 38, item 4: prompt names, titles and argument titles, resource and
/// template names and titles, URI templates and MIME types reached the
/// model and the person (`manifest.servers`, `prompts/list`,
/// `resources/list`, `resources/templates/list`) with chat-template
/// markers, escapes, bidi overrides and tag characters. Text is cleaned;
/// an identifier a client passes back that cleaning would change drops its
/// entry (a MIME type, only itself); what is kept still routes.
#[tokio::test]
async fn prompts_resources_and_templates_are_cleaned_and_identifiers_kept_or_dropped() {
    let dir = scratch("hostile-surface-metadata");
    let s = connect(&write_config(&dir, &fixture("shady", &["--hostile"]))).await;
    let servers = s
        .execute_when_ready(
            CALL_BOUND,
            r#"async () => {
                const shady = manifest.servers.find(s => s.name === "shady");
                if (!shady || shady.status !== "ready") throw new Error("not ready");
                const read = await forge.readResource("shady", "fixture://report");
                return { resources: shady.resources, templates: shady.templates, read };
            }"#,
        )
        .await;
    let prompts = s.client.list_all_prompts().await.unwrap();
    let resources = s.client.list_all_resources().await.unwrap();
    let templates = s.client.list_all_resource_templates().await.unwrap();
    let everything = serde_json::to_string(&(&servers, &prompts, &resources, &templates)).unwrap();
    for never in NEVER
        .iter()
        .chain(&["<|im_start|>", "IGNORE ALL PREVIOUS", "<|im_end|>"])
    {
        assert!(!everything.contains(never), "{never:?} in {everything}");
    }
    assert!(
        !everything.chars().any(|c| hidden(c) || c == '\u{200b}'),
        "a hidden character in {everything:?}"
    );

    // Kept, with their identifiers as the server sent them.
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["fixture://report", "fixture://typed"],
        "{everything}"
    );
    let typed = resources
        .iter()
        .find(|r| r.uri == "fixture://typed")
        .unwrap();
    assert_eq!(
        typed.mime_type, None,
        "a hostile MIME type is dropped alone"
    );
    let report = resources
        .iter()
        .find(|r| r.uri == "fixture://report")
        .unwrap();
    assert_eq!(report.mime_type.as_deref(), Some("text/plain"));
    let uri_templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uri_templates, ["fixture://items/{id}"], "{everything}");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["shady.review"], "{everything}");
    let argument = &prompts[0].arguments.as_ref().unwrap()[0];
    assert_eq!(
        (argument.name.as_str(), argument.title.as_deref()),
        ("code", Some("Code"))
    );
    assert_eq!(
        servers["templates"][0]["uriTemplate"],
        "fixture://items/{id}"
    );
    assert_eq!(
        servers["resources"].as_array().map(Vec::len),
        Some(2),
        "{servers:#}"
    );

    // What is kept still routes: the resource read above, and the prompt.
    assert!(
        servers["read"]
            .to_string()
            .contains("read fixture://report"),
        "{servers:#}"
    );
    let mut arguments = serde_json::Map::new();
    arguments.insert("code".into(), "x = 1".into());
    let got = s
        .client
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("shady.review").with_arguments(arguments),
        )
        .await
        .unwrap();
    let text = serde_json::to_string(&got.messages).unwrap();
    assert!(text.contains("prompt review with"), "{text}");
}
