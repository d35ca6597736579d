//! The real `quickforge` binary, driven as a user would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::cache_dir;

pub(crate) fn quickforge(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quickforge"))
        .args(args)
        .env("QUICKFORGE_CACHE_DIR", cache_dir())
        .env("QUICKFORGE_STATE_DIR", crate::processes::scratch("state"))
        .env_remove("FORGE_CONFIG")
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the quickforge binary runs");
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

pub(crate) fn script(name: &str, code: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, code).unwrap();
    path.to_string_lossy().into_owned()
}

pub(crate) fn stdout_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text:?}"))
}

#[test]
fn run_prints_the_value_and_logs_to_stderr() {
    let file = script(
        "sum.js",
        "async () => { console.log('adding'); return 1 + 1; }",
    );
    let out = quickforge(&["run", &file], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("[info] adding"));
}

#[test]
fn run_reads_standard_input() {
    let out = quickforge(&["run", "-"], Some("async () => ({ ok: [1, 2] })"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_json(&out), json!({ "ok": [1, 2] }));
}

#[test]
fn script_errors_exit_1_with_the_error_as_json() {
    let out = quickforge(
        &["run", "-"],
        Some("async () => { throw new Error('boom'); }"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stdout_json(&out);
    assert_eq!(err["kind"], json!("thrown"));
    assert_eq!(err["message"], json!("Error: boom"));

    let out = quickforge(&["run", "-"], Some("async () => {"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_json(&out)["kind"], json!("syntax"));
}

#[test]
fn tool_calls_fail_as_server_not_found_without_servers() {
    let out = quickforge(
        &["run", "-"],
        Some(r#"async () => forge.callTool("github", "list_issues", {})"#),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stdout_json(&out);
    assert_eq!(err["forge"]["code"], json!("SERVER_NOT_FOUND"));
}

#[test]
fn search_mode_flag() {
    let out = quickforge(
        &["run", "--search", "-"],
        Some(r#"async () => ({ servers: manifest.servers })"#),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_json(&out), json!({ "servers": [] }));
    let out = quickforge(
        &["run", "--search", "-"],
        Some(r#"async () => forge.callTool("a", "b", {})"#),
    );
    assert_eq!(stdout_json(&out)["forge"]["code"], json!("MODE_DENIED"));
}

#[test]
fn usage_and_config_errors_exit_2() {
    let out = quickforge(&["run", "/no/such/script.js"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not read script"));
    assert!(out.stdout.is_empty());

    let out = quickforge(&["frobnicate"], None);
    assert_eq!(out.status.code(), Some(2));

    let config = script("bad.toml", "[sandbox]\ntimeout_secs = 5\nmax_heap = 64\n");
    let out = quickforge(&["run", "--config", &config, "-"], Some("async () => 1"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("max_heap") && stderr.contains("line 3"),
        "{stderr}"
    );

    let config = script("zero.toml", "[sandbox]\nmax_concurrent = 0\n");
    let out = quickforge(&["run", "--config", &config, "-"], Some("async () => 1"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sandbox.max_concurrent"));
}

#[test]
fn config_limits_apply() {
    let config = script(
        "tight.toml",
        "[sandbox]\nmax_code_size = 100\ntimeout_secs = 1\n",
    );
    let long = format!("async () => {{ /* {} */ }}", "x".repeat(200));
    let out = quickforge(&["run", "--config", &config, "-"], Some(&long));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_json(&out)["kind"], json!("code_too_large"));
    // FORGE_CONFIG is honoured too.
    let out = Command::new(env!("CARGO_BIN_EXE_quickforge"))
        .args(["run", "-"])
        .env("FORGE_CONFIG", &config)
        .env("QUICKFORGE_CACHE_DIR", cache_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // Empty stdin is not a function expression.
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn math_random_differs_between_processes() {
    let code = "async () => Math.random()";
    let a = stdout_json(&quickforge(&["run", "-"], Some(code)));
    let b = stdout_json(&quickforge(&["run", "-"], Some(code)));
    assert_ne!(a, b);
}

/// Issue 21, item 6: completions and man pages come from the clap
/// definitions, so they name every command there is; every command's
/// `--help` shows an example.
#[test]
fn completions_man_pages_and_help_examples_cover_every_command() {
    const COMMANDS: [&str; 11] = [
        "serve",
        "run",
        "manifest",
        "doctor",
        "tokens",
        "init",
        "add",
        "remove",
        "list",
        "completions",
        "man",
    ];
    for shell in ["bash", "zsh", "fish"] {
        let out = quickforge(&["completions", shell], None);
        assert!(out.status.success(), "{shell}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        for command in COMMANDS {
            assert!(text.contains(command), "{shell} completion lacks {command}");
        }
        // bash and zsh spell the option `--config`, fish `config=`.
        assert!(text.contains("config"), "{shell} completion lacks --config");
    }
    let bad = quickforge(&["completions", "cmd.exe"], None);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("possible values"));

    let out = quickforge(&["man"], None);
    assert!(out.status.success(), "{out:?}");
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie") && page.contains(".TH quickforge 1"),
        "{page}"
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-man");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = quickforge(&["man", "--dir", dir.to_str().unwrap()], None);
    assert!(out.status.success(), "{out:?}");
    for command in COMMANDS {
        let page = std::fs::read_to_string(dir.join(format!("quickforge-{command}.1"))).unwrap();
        assert!(
            page.contains(".TH quickforge\\-") || page.contains(".TH quickforge-"),
            "{command}: {page}"
        );
    }
    assert!(dir.join("quickforge.1").exists());

    for command in COMMANDS {
        let out = quickforge(&[command, "--help"], None);
        assert!(out.status.success(), "{command}: {out:?}");
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.contains("Example") && help.contains(&format!("quickforge {command}")),
            "{command} --help has no example:\n{help}"
        );
    }
}
