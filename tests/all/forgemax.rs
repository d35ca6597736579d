//! Forgemax drop-in (issue 18, item 4), against configs and scripts in
//! `tests/fixtures/forgemax/` written here from Forgemax's documentation
//! (see the README there): its config keys and its script API.
//!
//! Before: 16 of Forgemax's accepted configs were refused over documented
//! keys (`max_resource_size_mb`, `max_parallel`, `[sandbox.pool]`, the
//! stash's `*_mb` keys, ...); a script ending in the `;` after its arrow
//! function, as Forgemax's documented scripts do, failed; `categories` was a
//! list of names, so its documented `Object.entries(s.categories)` scripts
//! threw; `forge.server(s).general.tool()` called a tool named
//! `general.tool`; `forge.parallel`'s `errors[i].error` was an object; a
//! thrown error had no `suggested_fix`; images and blobs came without their
//! data.

use std::path::{Path, PathBuf};
use std::time::Duration;

use quickforge::{Config, Transport};
use serde_json::{Value, json};

use crate::mcp::*;

/// The configs and scripts written from Forgemax's documentation.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/forgemax")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// The tokens the configs reference, as a user would have them in the
/// environment.
fn tokens(name: &str) -> Option<String> {
    name.ends_with("_TOKEN").then(|| format!("value-of-{name}"))
}

fn load(name: &str) -> Config {
    Config::parse_with_env(&read(name), &fixtures().join(name), &tokens)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The general and production configs and the two group-isolation
/// configs load, each Forgemax key mapped to its meaning here. Before,
/// `max_resource_size_mb`, `max_ipc_message_size_mb`, `[sandbox.pool]` and
/// `max_value_size_mb` were unknown keys.
#[test]
fn forgemax_style_configs_load() {
    let example = load("forge.toml.example");
    assert_eq!(example.servers.len(), 7);
    assert_eq!(example.sandbox.max_parallel, 6);
    assert_eq!(example.startup_concurrency, 3);
    // max_resource_size_mb = 32: the default of every server's message cap
    assert!(
        example
            .servers
            .iter()
            .all(|s| s.max_response_bytes == 32 << 20)
    );
    assert_eq!(example.stash.max_value_size, 4 << 20);
    assert_eq!(example.stash.max_total_size, 40 << 20);
    assert_eq!(example.stash.max_keys, 100);
    assert_eq!(example.groups.len(), 2);
    let postgres = example
        .servers
        .iter()
        .find(|s| s.name == "postgres")
        .unwrap();
    let Transport::Stdio { args, .. } = &postgres.transport else {
        panic!("postgres is a stdio server");
    };
    assert_eq!(args[3], "postgres://app:value-of-PG_TOKEN@localhost/app");
    let wiki = example.servers.iter().find(|s| s.name == "wiki").unwrap();
    let Transport::Stdio { env, .. } = &wiki.transport else {
        panic!("wiki is a stdio server");
    };
    assert_eq!(env["WIKI_AUTH"], "Bearer value-of-WIKI_TOKEN");

    let production = load("forge.toml.example.production");
    assert!(
        production
            .servers
            .iter()
            .all(|s| s.max_response_bytes == 12 << 20 && s.failure_threshold == 5)
    );
    assert_eq!(production.startup_concurrency, 2);
    assert_eq!(production.sandbox.max_parallel, 4);
    assert_eq!(production.sandbox.max_tool_calls, 40);
    assert_eq!(production.sandbox.timeout, Duration::from_secs(10));
    assert_eq!(production.stash.max_value_size, 2 << 20);
    assert_eq!(production.stash.max_total_size, 32 << 20);
    assert_eq!(production.stash.max_keys, 64);
    assert_eq!(production.groups.len(), 2);
    assert_eq!(production.sandbox.max_stash_calls, None);

    for name in [
        "group-isolation/forge.toml.open",
        "group-isolation/forge.toml.strict",
    ] {
        let c = load(name);
        assert!(!c.groups.is_empty(), "{name}");
        assert_eq!(c.sandbox.timeout, Duration::from_secs(6));
    }
    let strict = load("group-isolation/forge.toml.strict");
    assert_eq!(strict.groups.len(), 2);
    let tracker = strict.servers.iter().find(|s| s.name == "tracker").unwrap();
    let Transport::Http { url, .. } = &tracker.transport else {
        panic!("tracker is an SSE server");
    };
    assert_eq!(url, "https://tracker.example.com/sse");
}

/// The rest of Forgemax's documented keys: each maps, and a value out of
/// range, or a key that Forgemax does not know either, is still an error
/// naming the key.
#[test]
fn forgemax_keys_map_and_unknown_keys_stay_errors() {
    let parse = |text: &str| Config::parse_with_env(text, Path::new("forge.toml"), &tokens);
    let c = parse(
        "[servers.s]\ncommand = \"s\"\nreconnect = false\nmax_reconnect_backoff_secs = 5\n\
         [sandbox.stash]\nmax_calls = 3\nmax_value_size_mb = 2\n",
    )
    .unwrap();
    assert!(!c.servers[0].reconnect);
    assert_eq!(c.servers[0].max_reconnect_backoff, Duration::from_secs(5));
    assert_eq!(c.sandbox.max_stash_calls, Some(3));
    assert_eq!(c.stash.max_value_size, 2 << 20);
    let defaults = parse("[servers.s]\ncommand = \"s\"\n").unwrap();
    assert!(defaults.servers[0].reconnect);
    assert_eq!(defaults.startup_concurrency, 8);

    for (text, key) in [
        ("[sandbox.pool]\nmax_worker = 2\n", "max_worker"),
        ("[sandbox]\nmax_paralel = 2\n", "max_paralel"),
        (
            "[sandbox]\nstartup_concurrency = 0\n",
            "sandbox.startup_concurrency",
        ),
        ("[sandbox]\nmax_parallel = 0\n", "sandbox.max_parallel"),
        (
            "[sandbox]\nmax_resource_size_mb = 0\n",
            "sandbox.max_resource_size_mb",
        ),
        (
            "[sandbox.stash]\nmax_value_size = 10\nmax_value_size_mb = 1\n",
            "sandbox.stash.max_value_size_mb",
        ),
        (
            "[sandbox.stash]\nmax_calls = 0\n",
            "sandbox.stash.max_calls",
        ),
        (
            "[servers.s]\ncommand = \"s\"\nmax_reconnect_backoff_secs = 0\n",
            "servers.s.max_reconnect_backoff_secs",
        ),
        (
            "[servers.s]\ncommand = \"s\"\nreconect = true\n",
            "reconect",
        ),
    ] {
        let e = parse(text).expect_err(text).to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
}

/// A gateway on the production config, its `[sandbox]`, `[sandbox.pool]`,
/// `[sandbox.stash]` and `[manifest]` tables as written, with its servers
/// replaced by the fixture server standing in for the narsil, github and
/// postgres servers the scripts call; and `[sandbox.stash] max_calls` set
/// to 7 (the scripts use at most 5 stash operations each).
async fn gateway(name: &str) -> Session {
    let mut doc: toml_edit::DocumentMut = read("forge.toml.example.production").parse().unwrap();
    doc.remove("servers");
    doc.remove("groups");
    doc["sandbox"]["stash"]["max_calls"] = toml_edit::value(7);
    let servers: String = ["narsil", "github", "postgres"]
        .iter()
        .map(|n| fixture(n, &["--forgemax"]))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = scratch(name);
    connect(&write_config(&dir, &format!("{doc}\n{servers}"))).await
}

/// Each script in `examples/*.js` as written (comment header and trailing
/// `;` included), with what it returns from the stand-in servers.
#[tokio::test]
async fn forgemax_style_scripts_run() {
    let s = gateway("forgemax-examples").await;
    let run = |name: &'static str| {
        let s = &s;
        async move {
            let code = read(&format!("examples/{name}"));
            assert!(code.trim_end().ends_with("};"), "{name} ends in `;`");
            let r = s.call("execute", &code).await;
            assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
            ok_value(&r)
        }
    };
    // forge.callTool, the second call fed from the first.
    assert_eq!(
        run("basic-tool-chaining.js").await,
        json!([
            {"name": "handleRequest", "file": "src/server.ts", "line": 12},
            {"name": "parseArgs", "file": "src/cli.ts", "line": 3}
        ])
    );

    // Both calls throw; the catch reads Forgemax's `code` and
    // `suggested_fix`.
    let errors = run("error-handling.js").await;
    let errors = errors.as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0]["code"], "TOOL_NOT_FOUND", "{errors:?}");
    assert!(
        errors[0]["fix"].as_str().unwrap().contains("find_symbols"),
        "{errors:?}"
    );
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("find_symbol"),
        "{errors:?}"
    );
    assert_eq!(errors[1]["code"], "SERVER_NOT_FOUND", "{errors:?}");
    assert!(
        errors[1]["fix"].as_str().unwrap().contains("narsil"),
        "{errors:?}"
    );

    // forge.server(s).cat.tool() calls the dotted tools.
    assert_eq!(
        run("multi-server-pipeline.js").await,
        json!({"classes": ["Gateway", "Router"], "first_issue": "a bug"})
    );

    // forge.parallel's results in order; a failed call null in results,
    // its message string in errors.
    let fan = run("parallel-fan-out.js").await;
    assert_eq!(
        fan["counts"],
        json!({"export class": 1, "interface": 1, "enum": 1, "no_such_kind": 0})
    );
    assert_eq!(fan["errors"], 0);
    assert_eq!(fan["partial"], json!([false, true]));
    let failed = fan["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{fan}");
    assert_eq!(failed[0]["index"], 1);
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("missing_tool"),
        "{fan}"
    );

    // What the stash gave back is what parallel found.
    assert_eq!(
        run("parallel-stash-pipeline.js").await,
        json!({
            "summary": {"fns": ["handleRequest", "parseArgs"], "types": ["Options"]},
            "keys": ["pipeline/fns", "pipeline/types"]
        })
    );
    assert_eq!(
        run("resource-reading.js").await,
        json!({"ERROR": 1, "FATAL": 1})
    );
    // put, get, delete, keys: the deleted key is gone.
    assert_eq!(
        run("stash-workflow.js").await,
        json!({"orders": ["id", "total"], "left": ["workflow/columns"]})
    );
    s.close().await;
}

/// Forgemax's documented shapes, from its README, its forge.d.ts, its
/// tools' descriptions and its tests, written here: the manifest's
/// categories, the `general` proxy, `parallel`'s error strings, the thrown
/// error's fields, binary content, `max_parallel` and `[sandbox.stash]
/// max_calls` at work.
#[tokio::test]
async fn forgemax_documented_shapes_hold() {
    let s = gateway("forgemax-shapes").await;
    // The `search` tool's own example (Forgemax's tool description), and
    // README's "Layer 1" listing.
    let cats = s
        .search(
            r#"async () => { const s = manifest.servers.find(s => s.name === "narsil"); return Object.entries(s.categories).map(([name, cat]) => ({ name, tools: cat.tools.map(t => t.name) })); }"#,
        )
        .await;
    let general = cats
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "general")
        .expect("undotted tools are in general");
    assert!(
        general["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("find_symbols"))
    );
    assert!(
        cats.as_array()
            .unwrap()
            .contains(&json!({"name": "symbols", "tools": ["find"]}))
    );
    let layer1 = s
        .search(
            "async () => { return manifest.servers.map(s => ({ name: s.name, categories: Object.keys(s.categories) })); }",
        )
        .await;
    assert_eq!(
        layer1[1],
        json!({"name": "narsil", "categories": ["general", "issues", "symbols"]})
    );
    let schemas = s
        .search(
            r#"async () => Object.values(manifest.servers[1].categories).flatMap(c => c.tools.map(t => t.input_schema.required))"#,
        )
        .await;
    assert!(schemas.as_array().unwrap().contains(&json!(["pattern"])));

    // forge.server(s).general.tool() calls `tool` (Forgemax's executor test).
    let proxied = s
        .execute(
            r#"async () => {
            const result = await forge.server("narsil").general.find_symbols({ pattern: "class" });
            return result;
        }"#,
        )
        .await;
    assert_eq!(
        proxied,
        json!({"symbols": [{"name": "Gateway", "file": "src/gateway.ts"}, {"name": "Router", "file": "src/router.ts"}]})
    );

    // parallel: a failed call's error is its message, the code beside it.
    let parallel = s
        .execute(
            r#"async () => {
            return await forge.parallel([
                () => forge.callTool("narsil", "find_symbols", { pattern: "enum" }),
                () => forge.callTool("narsil", "no_such_tool", {}),
            ]);
        }"#,
        )
        .await;
    assert_eq!(parallel["results"][1], Value::Null);
    let error = &parallel["errors"][0];
    assert_eq!(error["index"], 1);
    assert!(
        error["error"].as_str().unwrap().contains("no_such_tool"),
        "{error}"
    );
    assert_eq!(error["code"], "TOOL_NOT_FOUND");

    // The thrown error carries Forgemax's field names (README, "Structured
    // errors with fuzzy matching").
    let fields = s
        .execute(
            r#"async () => {
            try { await forge.callTool("narsil", "find_symbls", { pattern: "main" }); }
            catch (e) { return { error: e.error, code: e.code, retryable: e.retryable, suggested_fix: e.suggested_fix }; }
        }"#,
        )
        .await;
    assert_eq!(fields["error"], true);
    assert_eq!(fields["code"], "TOOL_NOT_FOUND");
    assert!(
        fields["suggested_fix"]
            .as_str()
            .unwrap()
            .contains("find_symbols"),
        "{fields}"
    );

    // Binary content in Forgemax's shapes, with the data up to 1 MiB.
    let binary = s
        .execute(
            r#"async () => ({
            blob: await forge.readResource("postgres", "file:///logs/app.bin"),
            small: await forge.callTool("narsil", "image", { bytes: 100 }),
            large: await forge.callTool("narsil", "image", { bytes: 800000 }),
        })"#,
        )
        .await;
    let blob = &binary["blob"];
    assert_eq!(
        (&blob["_type"], &blob["_encoding"], &blob["mime_type"]),
        (
            &json!("blob"),
            &json!("base64"),
            &json!("application/octet-stream")
        )
    );
    assert_eq!(blob["data"], "AAEC/f7/");
    assert_eq!(binary["small"]["type"], "image");
    assert_eq!(binary["small"]["mime_type"], "image/png");
    assert!(
        binary["small"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw")
    );
    assert_eq!(binary["large"]["truncated"], true);
    assert_eq!(binary["large"]["original_size"], 1066668);
    assert!(binary["large"].get("data").is_none());

    // max_parallel = 4 (the production config): sixteen 300 ms calls asked
    // to run all at once take four waves.
    let waves = s
        .execute(
            r#"async () => {
            const t = Date.now();
            const calls = Array.from({ length: 16 }, () => () => forge.callTool("narsil", "slow", { ms: 300 }));
            const r = await forge.parallel(calls, { concurrency: 100 });
            return { ms: Date.now() - t, errors: r.errors.length };
        }"#,
        )
        .await;
    assert_eq!(waves["errors"], 0);
    assert!(waves["ms"].as_u64().unwrap() >= 1190, "{waves}");

    // [sandbox.stash] max_calls = 7: the eighth operation is refused.
    let e = s
        .execute_err(
            r#"async () => { for (let i = 0; i < 8; i++) await forge.stash.get("k" + i); }"#,
        )
        .await;
    assert!(e.to_string().contains("7 stash operations"), "{e}");
    // Uncaught, the stash's budget ends the run as the call budget does.
    assert_eq!(e["kind"], "tool_call_budget", "{e}");
    assert_eq!(e["forge"]["code"], "TOOL_CALL_BUDGET", "{e}");
    s.close().await;
}

/// `reconnect = false`: a server whose session ended stays unavailable, and
/// says why; without it, the gateway reconnects (the other fixture).
#[tokio::test]
async fn reconnect_false_leaves_a_crashed_server_down() {
    let dir = scratch("forgemax-reconnect");
    let config = format!(
        "{}reconnect = false\n\n{}",
        fixture("fragile", &[]),
        fixture("sturdy", &[])
    );
    let s = connect(&write_config(&dir, &config)).await;
    for server in ["fragile", "sturdy"] {
        let r = s
            .call(
                "execute",
                &format!(r#"async () => forge.callTool("{server}", "crash", {{}})"#),
            )
            .await;
        assert_eq!(r.is_error, Some(true));
    }
    // The sturdy one is back within its first backoff (0.5 to 1 s).
    s.execute_when_ready(
        Duration::from_secs(20),
        r#"async () => forge.callTool("sturdy", "stats", {})"#,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = s
        .search(r#"async () => manifest.servers.find(s => s.name === "fragile")"#)
        .await;
    assert_eq!(status["status"], "unavailable", "{status}");
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .contains("reconnect = false"),
        "{status}"
    );
    s.close().await;
}
