//! Forgemax drop-in (issue 18, item 4), against Forgemax's own files in
//! `tests/fixtures/forgemax/` (see its README for their source).
//!
//! Before: 16 of Forgemax's accepted configs were refused over documented
//! keys (`max_resource_size_mb`, `max_parallel`, `[sandbox.pool]`, the
//! stash's `*_mb` keys, ...), so none of its sample configs loaded; all of
//! its `examples/*.js` failed on their trailing `;`; `categories` was a
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

/// Forgemax's files, as copied.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/forgemax")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// The tokens Forgemax's sample configs reference, as a user would have
/// them in the environment.
fn tokens(name: &str) -> Option<String> {
    name.ends_with("_TOKEN")
        .then(|| format!("value-of-{name}"))
        .or_else(|| (name == "STRIPE_SECRET_KEY").then(|| "sk_test_x".into()))
}

fn load(name: &str) -> Config {
    Config::parse_with_env(&read(name), &fixtures().join(name), &tokens)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Forgemax's three sample configs and its two group-isolation examples
/// load unchanged, each of its keys mapped to its meaning here. Before,
/// `max_resource_size_mb` (example), `max_ipc_message_size_mb`,
/// `[sandbox.pool]` and `max_value_size_mb` (production) were unknown keys.
#[test]
fn forgemax_sample_configs_load_unchanged() {
    let example = load("forge.toml.example");
    assert_eq!(example.servers.len(), 11);
    assert_eq!(example.sandbox.max_parallel, 8);
    // max_resource_size_mb = 64: the default of every server's message cap
    assert!(
        example
            .servers
            .iter()
            .all(|s| s.max_response_bytes == 64 << 20)
    );

    let production = load("forge.toml.example.production");
    assert!(
        production
            .servers
            .iter()
            .all(|s| s.max_response_bytes == 7 << 20 && s.failure_threshold == 3)
    );
    assert_eq!(production.startup_concurrency, 4);
    assert_eq!(production.sandbox.max_parallel, 8);
    assert_eq!(production.stash.max_value_size, 16 << 20);
    assert_eq!(production.stash.max_total_size, 128 << 20);
    assert_eq!(production.stash.max_keys, 256);
    assert_eq!(production.groups.len(), 2);
    assert_eq!(production.sandbox.max_stash_calls, None);

    for name in [
        "group-isolation/forge.toml.open",
        "group-isolation/forge.toml.strict",
    ] {
        let c = load(name);
        assert!(!c.groups.is_empty(), "{name}");
        assert_eq!(c.sandbox.timeout, Duration::from_secs(5));
    }
    let strict = load("group-isolation/forge.toml.strict");
    let Transport::Http { url, .. } = &strict.servers[0].transport else {
        panic!("linear is an SSE server");
    };
    assert_eq!(url, "https://mcp.linear.app/sse");
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

/// A gateway on Forgemax's production config, its `[sandbox]`,
/// `[sandbox.pool]`, `[sandbox.stash]` and `[manifest]` tables as shipped,
/// with its servers replaced by the fixture server standing in for the
/// narsil, github and postgres servers its examples call; and
/// `[sandbox.stash] max_calls` set to 7, what its stash pipeline example
/// needs.
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

/// Each of Forgemax's `examples/*.js`, unchanged (comment header, trailing
/// `;` and all), with what it returns from the stand-in servers.
#[tokio::test]
async fn forgemax_examples_run_unchanged() {
    let s = gateway("forgemax-examples").await;
    let run = |name: &'static str| {
        let s = &s;
        async move {
            let code = read(&format!("examples/{name}"));
            assert!(code.trim_end().ends_with("};"), "{name} ends as shipped");
            let r = s.call("execute", &code).await;
            assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
            ok_value(&r)
        }
    };
    let details = run("basic-tool-chaining.js").await;
    let names: Vec<&str> = details
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["handleRequest", "parseArgs"]);

    let errors = run("error-handling.js").await;
    let errors = errors["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["type"], "tool_not_found");
    // (In Forgemax these two calls resolve to error objects instead of
    // throwing, so its own run of this example returns no errors at all.)
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("find_symbls"),
        "{errors:?}"
    );
    assert_eq!(errors[1]["type"], "server_not_found");
    assert!(
        errors[1]["message"].as_str().unwrap().contains("narsill"),
        "{errors:?}"
    );

    assert_eq!(
        run("multi-server-pipeline.js").await,
        json!({"symbols_found": 1, "open_issues": 2})
    );
    // Its `results[0]` reads the object forge.parallel resolves to (as in
    // Forgemax), so every field is undefined and dropped.
    assert_eq!(run("parallel-fan-out.js").await, json!({}));
    // Likewise its `discoveries[0]`: it stashes and counts nothing, on
    // Forgemax as here, but every stash step runs.
    let pipeline = run("parallel-stash-pipeline.js").await;
    assert_eq!(
        pipeline["summary"],
        json!({"total": 0, "functions": 0, "classes": 0, "interfaces": 0})
    );
    let keys = pipeline["stash_keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(
        run("resource-reading.js").await,
        json!({"total_lines": 5, "error_count": 2, "recent_errors": ["ERROR db timeout", "FATAL out of disk"]})
    );
    let stash = run("stash-workflow.js").await;
    assert_eq!(
        stash["cached_schema"]["tables"],
        json!(["users", "orders", "products"])
    );
    assert!(
        stash["all_keys"]
            .as_array()
            .unwrap()
            .contains(&json!("last_query"))
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

    // max_parallel = 8 (the production config): sixteen 300 ms calls asked
    // to run all at once take two waves.
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
    assert!(waves["ms"].as_u64().unwrap() >= 590, "{waves}");

    // [sandbox.stash] max_calls = 7: the eighth operation is refused.
    let e = s
        .execute_err(
            r#"async () => { for (let i = 0; i < 8; i++) await forge.stash.get("k" + i); }"#,
        )
        .await;
    assert!(e.to_string().contains("7 stash operations"), "{e}");
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
