//! Policy between the script and the servers: per-server tool allow/deny
//! globs and the destructive-tool rule, strict server groups (calls and the
//! stash), and rate limits. Each refusal is precise and the gateway keeps
//! serving.

use serde_json::{Value, json};

use crate::mcp::*;

#[tokio::test]
async fn tool_policy_refuses_and_hides_tools() {
    let dir = scratch("toolpolicy");
    let memory = memory(&dir);
    let config = format!(
        "{memory}allow = [\"create_*\", \"read_graph\", \"delete_*\", \"search_nodes\"]\ndeny = [\"search_*\"]\n\n{}allow_destructive = true\n",
        memory
            .replace("[servers.memory]", "[servers.trusted]")
            .replace("memory.jsonl", "trusted.jsonl")
    );
    let s = connect(&write_config(&dir, &config)).await;
    let call = |tool: &str| {
        format!(
            r#"async () => {{ try {{ await forge.callTool("memory", "{tool}", {{ names: ["x"], query: "x", entityNames: ["x"] }}); return "ok"; }} catch (e) {{ return [e.code, e.message]; }} }}"#
        )
    };
    let denied = s.execute(&call("search_nodes")).await;
    assert_eq!(denied[0], "POLICY_DENIED", "{denied}");
    assert!(
        denied[1]
            .as_str()
            .unwrap()
            .contains("servers.memory.deny pattern \"search_*\""),
        "{denied}"
    );
    let not_allowed = s.execute(&call("open_nodes")).await;
    assert_eq!(not_allowed[0], "POLICY_DENIED");
    assert!(
        not_allowed[1]
            .as_str()
            .unwrap()
            .contains("not in servers.memory.allow"),
        "{not_allowed}"
    );
    // server-memory marks its delete tools destructiveHint: true.
    let destructive = s.execute(&call("delete_entities")).await;
    assert_eq!(destructive[0], "POLICY_DENIED");
    assert!(
        destructive[1].as_str().unwrap().contains("destructive"),
        "{destructive}"
    );
    assert_eq!(s.execute(&call("read_graph")).await, "ok");
    // A server whose config allows destructive tools runs them.
    let v = s
        .execute(r#"async () => { await forge.callTool("trusted", "delete_entities", { entityNames: ["x"] }); return "ok"; }"#)
        .await;
    assert_eq!(v, "ok");
    // Refused tools are absent from every manifest answer.
    let seen = s
        .search(
            r#"async () => ({
                tools: manifest.servers.find(s => s.name === "memory").tools,
                search: manifest.search("search nodes delete entities open", { limit: 50 }).filter(h => h.server === "memory").map(h => h.tool),
                one: (() => { try { manifest.tool("memory", "delete_entities"); return "found"; } catch (e) { return e.code; } })(),
                trusted: manifest.servers.find(s => s.name === "trusted").tools,
            })"#,
        )
        .await;
    assert_eq!(
        seen["tools"], 3,
        "create_entities, create_relations, read_graph: {seen}"
    );
    let search: Vec<&str> = seen["search"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for hidden in [
        "search_nodes",
        "open_nodes",
        "delete_entities",
        "delete_relations",
    ] {
        assert!(!search.contains(&hidden), "{hidden} hidden: {search:?}");
    }
    assert_ne!(seen["one"], "found");
    assert_eq!(seen["trusted"], 9, "{seen}");
}

/// Four fixture servers: `a1` in strict group alpha, `b1` in strict group
/// beta, `o1` in open group shared, `free` in none.
pub(crate) fn grouped(dir: &std::path::Path) -> std::path::PathBuf {
    let config = format!(
        "{}{}{}{}\n[groups.alpha]\nservers = [\"a1\"]\nisolation = \"strict\"\n\n[groups.beta]\nservers = [\"b1\"]\n\n[groups.shared]\nservers = [\"o1\"]\nisolation = \"open\"\n",
        fixture("a1", &[]),
        fixture("b1", &[]),
        fixture("o1", &[]),
        fixture("free", &[]),
    );
    write_config(dir, &config)
}

#[tokio::test]
async fn a_strict_group_locks_the_execution() {
    let dir = scratch("groups");
    let s = connect(&grouped(&dir)).await;
    let v = s
        .execute(
            r#"async () => {
                const who = async (s) => { try { await forge.callTool(s, "slow", { ms: 0 }); return "ok"; } catch (e) { return [e.code, e.message]; } };
                const out = [await who("free"), await who("o1"), await who("a1"), await who("a1"), await who("o1"), await who("free"), await who("b1")];
                try { await forge.readResource("b1", "fixture://x"); out.push("read"); } catch (e) { out.push(e.code); }
                return out;
            }"#,
        )
        .await;
    assert_eq!(v.as_array().unwrap()[..6], vec![json!("ok"); 6], "{v}");
    assert_eq!(v[6][0], "GROUP_POLICY_DENIED", "{v}");
    let message = v[6][1].as_str().unwrap();
    assert!(
        message.contains("strict group \"beta\"") && message.contains("strict group \"alpha\""),
        "{message}"
    );
    assert_eq!(
        v[7], "GROUP_POLICY_DENIED",
        "resource reads obey the lock too"
    );
    // The lock belongs to one execution: the next may start with beta.
    let v = s
        .execute(r#"async () => (await forge.callTool("b1", "slow", { ms: 0 })).slept"#)
        .await;
    assert_eq!(v, 0);
}

#[tokio::test]
async fn the_stash_obeys_the_group_lock() {
    let dir = scratch("groupstash");
    let s = connect(&grouped(&dir)).await;
    let run = |code: &'static str| s.execute(code);
    // Written while locked to alpha: alpha's space.
    run(r#"async () => { await forge.callTool("a1", "slow", { ms: 0 }); await forge.stash.put("secret", "alpha data"); }"#).await;
    // Written unlocked: the public space.
    run(r#"async () => { await forge.stash.put("public", "for all"); }"#).await;
    let unlocked =
        run(r#"async () => [await forge.stash.get("secret"), await forge.stash.keys()]"#).await;
    assert_eq!(unlocked, json!([null, ["public"]]), "not visible unlocked");
    let beta = run(r#"async () => { await forge.callTool("b1", "slow", { ms: 0 }); return [await forge.stash.get("secret"), await forge.stash.get("public"), await forge.stash.keys()]; }"#).await;
    assert_eq!(
        beta,
        json!([null, "for all", ["public"]]),
        "not visible to beta"
    );
    let alpha = run(r#"async () => { await forge.callTool("a1", "slow", { ms: 0 }); return [await forge.stash.get("secret"), await forge.stash.get("public"), await forge.stash.keys()]; }"#).await;
    assert_eq!(
        alpha,
        json!(["alpha data", "for all", ["public", "secret"]])
    );
    // Beta cannot delete alpha's entry either.
    let deleted = run(r#"async () => { await forge.callTool("b1", "slow", { ms: 0 }); return forge.stash.delete("secret"); }"#).await;
    assert_eq!(deleted, json!({ "deleted": false }));
    let still = run(r#"async () => { await forge.callTool("a1", "slow", { ms: 0 }); return forge.stash.get("secret"); }"#).await;
    assert_eq!(still, "alpha data");
}

#[tokio::test]
async fn rate_limits_refuse_with_a_retry_time() {
    let dir = scratch("rates");
    let config = format!(
        "[sandbox]\nmax_executions_per_minute = 30\n\n{}calls_per_minute = 60\n",
        fixture("limited", &[])
    );
    let s = connect(&write_config(&dir, &config)).await;
    // 60 a minute allows a burst of ten calls, then refuses.
    let v = s
        .execute(
            r#"async () => {
                const out = [];
                for (let i = 0; i < 12; i++) {
                    try { await forge.callTool("limited", "slow", { ms: 0 }); out.push("ok"); }
                    catch (e) { out.push([e.code, e.retryable, e.message]); }
                }
                return out;
            }"#,
        )
        .await;
    let oks = v.as_array().unwrap().iter().filter(|o| *o == "ok").count();
    assert_eq!(oks, 10, "{v}");
    let refused = &v[11];
    assert_eq!(refused[0], "RATE_LIMITED", "{v}");
    assert_eq!(refused[1], true);
    let message = refused[2].as_str().unwrap();
    assert!(
        message.contains("servers.limited.calls_per_minute") && message.contains("retry in"),
        "{message}"
    );
    // 30 executions a minute: a burst of five (one of them above), one
    // more every two seconds, then a typed, retryable refusal.
    let started = std::time::Instant::now();
    let mut oks = 1;
    let mut refused = None;
    for _ in 0..30 {
        let r = s.call("execute", "async () => 1").await;
        if r.is_error == Some(true) {
            refused = Some(r);
            break;
        }
        assert_eq!(ok_value(&r), 1);
        oks += 1;
    }
    let last = refused.expect("refused within 30 executions");
    let refills = (started.elapsed().as_secs() / 2) as usize + 1;
    assert!(oks >= 5 && oks <= 5 + refills, "{oks} executions passed");
    let e = err_value(&last);
    assert_eq!(e["kind"], "rate_limited", "{e:#}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("sandbox.max_executions_per_minute"),
        "{e:#}"
    );
    assert_eq!(e["forge"]["code"], "RATE_LIMITED", "{e:#}");
    assert_eq!(e["forge"]["retryable"], Value::Bool(true), "{e:#}");
}

/// Secrets in a downstream error never reach the script (and so the
/// model), nor the gateway's log; names and the gist survive.
#[tokio::test]
async fn downstream_secrets_are_redacted_from_errors_and_logs() {
    let dir = scratch("redact");
    let log = dir.join("gateway.log");
    let s = connect_logging_to(
        quickforge_cmd(Some(&write_config(&dir, &fixture("leaky", &[])))),
        std::fs::File::create(&log).unwrap().into(),
    )
    .await;
    let seen = s
        .execute(r#"async () => { try { await forge.callTool("leaky", "leak", {}); } catch (e) { return [e.code, e.message]; } }"#)
        .await;
    let message = seen[1].as_str().unwrap();
    for secret in [
        "hunter2",
        "10.1.2.3",
        "ghp_R4nd0m",
        "sk-proj-Ab12",
        "/home/app",
        "/srv/app",
        "db.internal:5432",
    ] {
        assert!(!message.contains(secret), "{secret} leaked: {message}");
    }
    assert!(message.contains("leaky.leak"), "names stay: {message}");
    assert!(message.contains("[REDACTED"), "{message}");
    // An uncaught one: the execution's error is redacted the same way.
    let e = s
        .execute_err(r#"async () => { await forge.callTool("leaky", "leak", {}); }"#)
        .await;
    assert!(!e.to_string().contains("hunter2"), "{e:#}");
    s.close().await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("server=leaky"),
        "the server's stderr was logged: {text}"
    );
    for secret in ["hunter2", "ghp_R4nd0m", "sk-proj-Ab12", "/home/app"] {
        assert!(!text.contains(secret), "{secret} in the log");
    }
}

/// A script the validator refuses gets a precise error naming the rule,
/// line, column and text; the next one runs.
#[tokio::test]
async fn the_validator_refuses_with_rule_and_position() {
    let dir = scratch("validate");
    let s = connect(&write_config(&dir, "")).await;
    let e = s
        .execute_err("async () => {\n  const f = eval;\n  return f('1');\n}")
        .await;
    assert_eq!(e["kind"], "validation", "{e:#}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("rule eval")
            && message.contains("line 2")
            && message.contains("column 13"),
        "{message}"
    );
    assert_eq!(s.execute("async () => 1 + 1").await, 2);
}

/// A server whose tool metadata attacks the model: unsafe names are
/// dropped, escapes and invisible characters removed, injection markers
/// neutralised and flagged, sizes bounded; validation strings survive.
#[tokio::test]
async fn hostile_tool_metadata_is_sanitized() {
    let dir = scratch("hostile-meta");
    let s = connect(&write_config(&dir, &fixture("shady", &["--hostile"]))).await;
    let seen = s
        .search(
            r#"async () => {
                const bad = ["two words", "rtl\u202etxt.exe", "x".repeat(200)].map(n => {
                    try { manifest.tool("shady", n); return "found"; } catch (e) { return e.code; }
                });
                return {
                    bad,
                    poisoned: manifest.tool("shady", "poisoned"),
                    wordy: manifest.tool("shady", "wordy").description.length,
                    huge: JSON.stringify(manifest.tool("shady", "huge_schema").inputSchema).length,
                };
            }"#,
        )
        .await;
    let poisoned = &seen["poisoned"];
    let text = poisoned.to_string();
    for gone in [
        "\\u001b",
        "\\u200b",
        "\\u202e",
        "\\u0007",
        "<|im_start|>",
        "IGNORE ALL PREVIOUS",
        "<system>",
        "</user>",
    ] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
    assert!(text.contains("[removed: instruction-like text]"), "{text}");
    assert!(
        poisoned["warning"]
            .as_str()
            .unwrap()
            .contains("instruction-like"),
        "{text}"
    );
    assert_eq!(poisoned["title"], "Poisoned");
    assert_eq!(
        poisoned["inputSchema"]["properties"]["url"]["pattern"], "^https://",
        "validation strings are kept"
    );
    assert!(seen["wordy"].as_u64().unwrap() < 2200, "{}", seen["wordy"]);
    assert!(seen["huge"].as_u64().unwrap() < 1000, "{}", seen["huge"]);
    // The unsafe names never reach the manifest; calls to them cannot be made.
    assert_eq!(
        seen["bad"],
        json!(["TOOL_NOT_FOUND", "TOOL_NOT_FOUND", "TOOL_NOT_FOUND"])
    );
    // Validation still applies to the sanitized tool, and calls work.
    let e = s
        .execute_err(r#"async () => forge.callTool("shady", "poisoned", { url: "ftp://x" })"#)
        .await;
    assert_eq!(e["forge"]["code"], "INVALID_ARGUMENTS", "{e:#}");
    let v = s
        .execute(
            r#"async () => (await forge.callTool("shady", "poisoned", { url: "https://x" })).tool"#,
        )
        .await;
    assert_eq!(v, "poisoned");
}
