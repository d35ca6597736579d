//! End to end: a real MCP client drives the real binary, which drives the
//! reference servers from npm (server-everything, server-memory) and the
//! fixture server.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp::*;

fn both(dir: &std::path::Path) -> std::path::PathBuf {
    write_config(dir, &format!("{}\n{}", everything(), memory(dir)))
}

#[tokio::test]
async fn initialize_shows_exactly_search_and_execute_with_the_api_types() {
    let dir = scratch("init");
    let s = connect(&both(&dir)).await;
    let info = s.client.peer_info().expect("server info");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains(quickforge::FORGE_D_TS),
        "instructions carry forge.d.ts"
    );
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("quickforge")
    );
    let tools = s.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["search", "execute"]);
    for t in &tools {
        let schema = serde_json::to_value(&t.input_schema).unwrap();
        assert_eq!(schema["required"], json!(["code"]), "{}", t.name);
        assert_eq!(schema["properties"]["code"]["type"], "string");
        assert!(t.description.as_deref().unwrap_or("").len() > 40);
    }
}

#[tokio::test]
async fn search_finds_tools_across_both_servers() {
    let dir = scratch("search");
    let s = connect(&both(&dir)).await;
    let servers = s.search("async () => manifest.servers").await;
    let names: Vec<&str> = servers
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["everything", "memory"]);
    assert!(
        servers
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["status"] == "ready"),
        "{servers:#}"
    );
    // server-memory's delete tools are destructive, hidden by default.
    assert!(servers[1]["tools"].as_u64().unwrap() >= 6);
    let hits = s
        .search(r#"async () => ({ sum: manifest.search("sum of two numbers"), graph: manifest.search("create entities knowledge graph", { limit: 3 }) })"#)
        .await;
    assert_eq!(hits["sum"][0]["server"], "everything");
    assert_eq!(hits["sum"][0]["tool"], "get-sum");
    assert_eq!(
        hits["graph"][0],
        json!({"server": "memory", "tool": "create_entities", "description": hits["graph"][0]["description"]})
    );
    assert!(hits["graph"].as_array().unwrap().len() <= 3);
    let tool = s
        .search(r#"async () => manifest.tool("everything", "get-sum")"#)
        .await;
    assert_eq!(tool["inputSchema"]["required"], json!(["a", "b"]));
    let sig = tool["signature"].as_str().unwrap();
    assert!(
        sig.starts_with("callTool(\"everything\", \"get-sum\", args: {"),
        "{sig}"
    );
    assert!(
        sig.contains("a: number;") && sig.contains("/** First number */"),
        "{sig}"
    );
    let typed = s
        .search(r#"async () => manifest.tool("everything", "get-structured-content").signature"#)
        .await;
    assert!(typed.as_str().unwrap().contains("Promise<{\n  /** Temperature in celsius */\n  temperature: number;\n  /** Weather conditions description */"), "{typed}");
}

#[tokio::test]
async fn execute_chains_calls_across_both_servers_in_one_script() {
    let dir = scratch("chain");
    let s = connect(&both(&dir)).await;
    let value = s
        .execute(
            r#"async () => {
                const sum = await forge.callTool("everything", "get-sum", { a: 20, b: 22 });
                await forge.callTool("memory", "create_entities", { entities: [
                    { name: "answer", entityType: "number", observations: [sum] } ] });
                const graph = await forge.server("memory").read_graph({});
                const echo = await forge.callTool("everything", "echo", { message: graph.entities[0].observations[0] });
                return { sum, graph, echo };
            }"#,
        )
        .await;
    assert_eq!(value["sum"], "The sum of 20 and 22 is 42.");
    assert_eq!(value["graph"]["entities"][0]["name"], "answer");
    assert_eq!(value["echo"], "Echo: The sum of 20 and 22 is 42.");
}

#[tokio::test]
async fn results_convert_structured_images_and_resources() {
    let dir = scratch("convert");
    let s = connect(&write_config(&dir, &everything())).await;
    let value = s
        .execute(
            r#"async () => {
                const weather = await forge.callTool("everything", "get-structured-content", { location: "Chicago" });
                const image = await forge.callTool("everything", "get-tiny-image", {});
                const docs = manifest.servers;
                return { weather, image };
            }"#,
        )
        .await;
    assert!(value["weather"]["temperature"].is_number(), "{value:#}");
    let blocks = value["image"]
        .as_array()
        .expect("several blocks become an array");
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .expect("an image block");
    assert_eq!(image["mimeType"], "image/png");
    assert!(image["size"].as_u64().unwrap() > 10);
    // Forgemax's shape beside quickforge's: the base64 data itself.
    assert_eq!(image["mime_type"], "image/png");
    let data = image["data"].as_str().expect("the image's data");
    assert_eq!(
        data.len() / 4 * 3 - data.bytes().rev().take_while(|&c| c == b'=').count(),
        image["size"].as_u64().unwrap() as usize
    );
    let resources = s.search("async () => manifest.servers[0].resources").await;
    let uri = resources
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_string())
        .find(|u| u.starts_with("demo://resource/static/document/"))
        .expect("server-everything lists its static documents");
    let text = s
        .execute(&format!(
            "async () => forge.readResource(\"everything\", {uri:?})"
        ))
        .await;
    assert!(text.is_string() || text.is_object(), "{text}");
    let missing = s
        .execute_err(r#"async () => forge.readResource("everything", "demo://nope")"#)
        .await;
    assert_eq!(missing["forge"]["code"], "DOWNSTREAM_ERROR", "{missing:#}");
}

#[tokio::test]
async fn misspelled_tools_and_servers_get_did_you_mean() {
    let dir = scratch("dym");
    let s = connect(&both(&dir)).await;
    let e = s
        .execute_err(r#"async () => forge.callTool("everything", "get-summ", { a: 1, b: 2 })"#)
        .await;
    assert_eq!(e["kind"], "thrown");
    assert_eq!(e["forge"]["code"], "TOOL_NOT_FOUND");
    assert!(
        e["forge"]["suggestion"]
            .as_str()
            .unwrap()
            .contains("\"get-sum\""),
        "{e:#}"
    );
    let e = s
        .execute_err(r#"async () => forge.callTool("memroy", "read_graph", {})"#)
        .await;
    assert_eq!(e["forge"]["code"], "SERVER_NOT_FOUND");
    assert!(
        e["forge"]["suggestion"]
            .as_str()
            .unwrap()
            .contains("\"memory\""),
        "{e:#}"
    );
    // Caught, the error is data the script can act on.
    let v = s
        .execute(r#"async () => { try { await forge.callTool("everything", "ecoh", {}); } catch (e) { return [e.code, e.suggestion]; } }"#)
        .await;
    assert_eq!(v[0], "TOOL_NOT_FOUND");
    assert!(v[1].as_str().unwrap().contains("\"echo\""));
}

#[tokio::test]
async fn arguments_are_checked_against_the_input_schema() {
    let dir = scratch("schema");
    let s = connect(&write_config(&dir, &everything())).await;
    let e = s
        .execute_err(r#"async () => forge.callTool("everything", "get-sum", { a: "one" })"#)
        .await;
    let f = &e["forge"];
    assert_eq!(f["code"], "INVALID_ARGUMENTS");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("field a") && msg.contains("\"one\" is not of type \"number\""),
        "{msg}"
    );
    assert!(msg.contains("\"b\" is a required property"), "{msg}");
    // The gateway still serves.
    assert_eq!(
        s.execute(r#"async () => forge.callTool("everything", "get-sum", { a: 1, b: 2 })"#)
            .await,
        "The sum of 1 and 2 is 3."
    );
}

#[tokio::test]
async fn a_server_that_dies_mid_session_fails_calls_then_comes_back() {
    let dir = scratch("dies");
    let config = format!("{}\n{}", fixture("flaky", &[]), everything());
    let s = connect(&write_config(&dir, &config)).await;
    let pid = s
        .execute(r#"async () => (await forge.callTool("flaky", "whoami", {})).pid"#)
        .await;
    let e = s
        .execute_err(r#"async () => forge.callTool("flaky", "crash", {})"#)
        .await;
    assert_eq!(e["forge"]["code"], "SERVER_UNAVAILABLE", "{e:#}");
    assert_eq!(e["forge"]["retryable"], true);
    // The other server is unaffected.
    assert_eq!(
        s.execute(r#"async () => forge.callTool("everything", "echo", { message: "still here" })"#)
            .await,
        "Echo: still here"
    );
    // The gateway respawns it; the manifest says when it is back.
    let new_pid = s
        .execute_when_ready(
            Duration::from_secs(30),
            r#"async () => (await forge.callTool("flaky", "whoami", {})).pid"#,
        )
        .await;
    assert_ne!(new_pid, pid, "a new process");
    let status = s
        .search(r#"async () => manifest.servers.find(s => s.name === "flaky").status"#)
        .await;
    assert_eq!(status, "ready");
}

#[tokio::test]
async fn tools_list_changed_refreshes_the_manifest() {
    let dir = scratch("changed");
    let s = connect(&write_config(&dir, &fixture("dynamic", &[]))).await;
    let find =
        r#"async () => manifest.search("brand_new_tool").some(h => h.tool === "brand_new_tool")"#;
    assert_eq!(s.search(find).await, false);
    s.execute(r#"async () => forge.callTool("dynamic", "add_tool", { name: "brand_new_tool" })"#)
        .await;
    eventually(Duration::from_secs(20), || async {
        (s.search(find).await == true).then_some(())
    })
    .await;
    let v = s
        .execute(r#"async () => forge.callTool("dynamic", "brand_new_tool", {})"#)
        .await;
    assert_eq!(v["tool"], "brand_new_tool");
}

#[tokio::test]
async fn the_stash_lives_across_executions_of_one_session() {
    let dir = scratch("stash");
    let config = write_config(&dir, "");
    let s = connect(&config).await;
    s.execute(r#"async () => forge.stash.put("k", { n: 1 })"#)
        .await;
    assert_eq!(
        s.execute(r#"async () => forge.stash.get("k")"#).await,
        json!({"n": 1})
    );
    // Another session (another client) has its own stash.
    let other = connect(&config).await;
    assert_eq!(
        other.execute(r#"async () => forge.stash.get("k")"#).await,
        Value::Null
    );
}

#[tokio::test]
async fn stdio_children_get_a_minimal_environment() {
    let dir = scratch("env");
    let config = format!(
        "{}env = {{ GIVEN = \"${{QF_TEST_GIVEN}}\" }}\n",
        fixture("envcheck", &[])
    );
    let path = write_config(&dir, &config);
    let mut cmd = quickforge_cmd(Some(&path));
    cmd.env("QF_TEST_GIVEN", "yes")
        .env("QF_TEST_SECRET", "do-not-leak");
    let s = connect_with(cmd).await;
    let env = s
        .execute(r#"async () => (await forge.callTool("envcheck", "whoami", {})).env"#)
        .await;
    let keys: Vec<&str> = env
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(keys.contains(&"GIVEN"), "{keys:?}");
    assert!(keys.contains(&"PATH"), "{keys:?}");
    assert!(
        !keys.contains(&"QF_TEST_SECRET") && !keys.contains(&"QF_TEST_GIVEN"),
        "{keys:?}"
    );
    assert!(!keys.contains(&"CARGO_MANIFEST_DIR"), "{keys:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn stdio_children_inherit_no_file_descriptors() {
    use std::os::fd::AsRawFd;
    let dir = scratch("fds");
    let marker = dir.join("inherited-marker");
    let file = std::fs::File::create(&marker).unwrap();
    let raw = file.as_raw_fd();
    let mut cmd = quickforge_cmd(Some(&write_config(&dir, &fixture("fdcheck", &[]))));
    const INHERITED: i32 = 7;
    // The gateway inherits the marker as descriptor 7, without
    // close-on-exec, as a careless parent would hand it over.
    // SAFETY: dup2 is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself would keep close-on-exec set.
            let ok = if raw == INHERITED {
                libc::fcntl(raw, libc::F_SETFD, 0)
            } else {
                libc::dup2(raw, INHERITED)
            };
            if ok < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let s = connect_with(cmd).await;
    let gateway_fd = std::fs::read_link(format!("/proc/{}/fd/{INHERITED}", s.child.id().unwrap()));
    assert_eq!(
        gateway_fd.ok().as_deref(),
        Some(marker.as_path()),
        "the gateway has it"
    );
    let fds = s
        .execute(r#"async () => (await forge.callTool("fdcheck", "whoami", {})).fds"#)
        .await;
    let fds: Vec<&str> = fds
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(!fds.is_empty(), "the fixture listed its descriptors");
    assert!(
        !fds.iter().any(|f| f.contains("inherited-marker")),
        "the server did not inherit it: {fds:?}"
    );
    drop(file);
}

#[tokio::test]
async fn large_results_are_cut_with_a_marker() {
    let dir = scratch("cut");
    let s = connect(&write_config(&dir, "[sandbox]\nmax_output_size = 4096\n")).await;
    let r = s
        .call(
            "execute",
            "async () => Array.from({ length: 1000 }, (_, i) => ({ i }))",
        )
        .await;
    let v = ok_value(&r);
    let items = v.as_array().unwrap();
    assert_eq!(items[0], json!({"i": 0}));
    assert!(
        items
            .last()
            .unwrap()
            .as_str()
            .unwrap()
            .contains("more of 1000 items")
    );
    assert!(
        r.structured_content.as_ref().unwrap()["cutBytes"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn scripts_errors_and_logs_come_back_readable() {
    let dir = scratch("errors");
    let s = connect(&write_config(&dir, "")).await;
    let r = s
        .call(
            "execute",
            "async () => { console.log('step 1'); throw new Error('boom'); }",
        )
        .await;
    let e = err_value(&r);
    assert_eq!(e["kind"], "thrown");
    let logs = &r.structured_content.as_ref().unwrap()["logs"];
    assert_eq!(logs, &json!(["[info] step 1"]));
    let text: Vec<String> = r
        .content
        .iter()
        .map(|c| {
            serde_json::to_value(c).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        text[0].starts_with("thrown: ") && text[0].contains("boom"),
        "{text:?}"
    );
    assert!(text[1].contains("[info] step 1"));
    // Search mode cannot call tools.
    let e = err_value(
        &s.call("search", r#"async () => forge.callTool("x", "y", {})"#)
            .await,
    );
    assert_eq!(e["forge"]["code"], "MODE_DENIED");
    // A missing or wrong `code` is a tool error, not a protocol error.
    let params = rmcp::model::CallToolRequestParams::new("execute");
    let r = s.client.call_tool(params).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    // And the gateway keeps serving.
    assert_eq!(s.execute("async () => 1 + 1").await, 2);
}

#[tokio::test]
async fn the_surface_does_not_grow_with_downstream_tools() {
    let dir = scratch("surface");
    let empty = connect(&write_config(&dir, "")).await;
    let many_dir = scratch("surface267");
    let many = connect(&write_config(
        &many_dir,
        &fixture("big", &["--tools", "267"]),
    ))
    .await;
    let count = many
        .search(r#"async () => manifest.servers[0].tools"#)
        .await;
    let count = count.as_u64().unwrap();
    assert!(
        (267..267 + 30).contains(&count),
        "267 synthetic tools plus the fixture's own handful: {count}"
    );
    async fn payload(s: &Session) -> String {
        let tools = serde_json::to_string(&s.client.list_all_tools().await.unwrap()).unwrap();
        let instructions = s
            .client
            .peer_info()
            .unwrap()
            .instructions
            .clone()
            .unwrap_or_default();
        format!("{tools}{instructions}")
    }
    assert_eq!(payload(&empty).await, payload(&many).await);
    let tokens = quickforge::count_tokens(&quickforge::instructions()).unwrap();
    assert!(tokens < 1000, "{tokens} tokens of instructions");
}

#[tokio::test]
async fn the_process_exits_cleanly_when_stdin_closes() {
    let dir = scratch("exit");
    let s = connect(&both(&dir)).await;
    s.execute("async () => 1").await;
    let Session { client, mut child } = s;
    drop(client);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exits after stdin closes")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[cfg(unix)]
#[tokio::test]
async fn sighup_refreshes_the_manifest() {
    let dir = scratch("sighup");
    let s = connect(&write_config(&dir, &fixture("quiet", &[]))).await;
    // The server adds a tool without telling anyone.
    s.execute(
        r#"async () => forge.callTool("quiet", "add_tool", { name: "hidden_tool", quiet: true })"#,
    )
    .await;
    let find = r#"async () => manifest.search("hidden_tool").some(h => h.tool === "hidden_tool")"#;
    assert_eq!(s.search(find).await, false);
    let pid = s.child.id().unwrap() as i32;
    // SAFETY: signals our own child process.
    unsafe {
        libc::kill(pid, libc::SIGHUP);
    }
    eventually(Duration::from_secs(20), || async {
        (s.search(find).await == true).then_some(())
    })
    .await;
}

async fn cli(args: &[&str], config: &std::path::Path) -> (i32, String, String) {
    let out = quickforge_cmd(Some(config))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn doctor_checks_config_env_and_every_server() {
    let dir = scratch("doctor");
    let good = both(&dir);
    let (code, out, _) = cli(&["doctor"], &good).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok    server everything: 17 tools"), "{out}");
    // server-memory's three delete tools are destructive, hidden by default.
    assert!(out.contains("ok    server memory: 6 tools"), "{out}");
    assert!(out.contains("all checks passed"));

    let broken = format!(
        "{}\n[servers.dead]\ncommand = \"node\"\nargs = [\"-e\", \"process.exit(3)\"]\ntimeout_secs = 5\n",
        everything()
    );
    let (code, out, _) = cli(&["doctor"], &write_config(&dir, &broken)).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  server dead:"), "{out}");
    assert!(out.contains("ok    server everything"), "{out}");

    let missing = format!(
        "{}env = {{ TOKEN = \"${{QF_DOCTOR_MISSING}}\" }}\n",
        fixture("f", &[])
    );
    let (code, out, _) = cli(&["doctor"], &write_config(&dir, &missing)).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  environment variable QF_DOCTOR_MISSING is referenced but not set"),
        "{out}"
    );
    assert!(
        out.contains("FAIL  config:") && out.contains("servers.f.env.TOKEN"),
        "{out}"
    );
}

#[tokio::test]
async fn manifest_and_run_commands_use_the_configured_servers() {
    let dir = scratch("manifest-cli");
    let config = both(&dir);
    let (code, out, err) = cli(&["manifest", "--server", "memory", "--json"], &config).await;
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["name"], "memory");
    assert!(
        v[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_graph")
    );
    let (code, out, _) = cli(&["manifest"], &config).await;
    assert_eq!(code, 0);
    assert!(
        out.contains("everything (ready; 17 tools")
            && out.contains("  - get-sum: Returns the sum of two numbers"),
        "{out}"
    );
    let (code, _, err) = cli(&["manifest", "--server", "memroy"], &config).await;
    assert_eq!(code, 2);
    assert!(err.contains("did you mean \"memory\""), "{err}");
    // The examples run against the servers forge.toml.example declares.
    for (example, check) in [
        ("chain.js", "the-answer"),
        ("fan-out.js", "INVALID_ARGUMENTS"),
    ] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/").to_string() + example;
        let (code, out, err) = cli(&["run", &path], &config).await;
        assert_eq!(code, 0, "{example}: {err}");
        assert!(out.contains(check), "{example}: {out}");
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/discover.js");
    let (code, out, err) = cli(&["run", "--search", path], &config).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("get-sum"), "{out}");
}
