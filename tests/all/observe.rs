//! The log's JSON format (issue 21, item 4), through the real binary.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

use crate::mcp::*;

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

/// Runs `quickforge run -` on `code` with `config` and `args` before the
/// subcommand; its stdout and stderr.
async fn run(config: &std::path::Path, args: &[&str], code: &str) -> (String, String) {
    let mut cmd = quickforge_cmd(Some(config));
    let mut child = cmd
        .args(args)
        .args(["run", "-"])
        .env("QUICKFORGE_LOG", "quickforge=info,warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(code.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `[log] format = "json"`: every line on stderr is one JSON object with
/// the level, the message and its fields, still redacted (a secret in a
/// downstream error is masked inside the string, and the line stays valid
/// JSON); stdout still carries only the result. `--log-format text`
/// overrides the file. Reproduces: no structured log format for log
/// collectors.
#[tokio::test]
async fn json_logs_are_one_redacted_object_a_line_on_stderr() {
    let dir = scratch("log-json");
    // A command that cannot start, named like a token: its error is logged.
    let config = write_config(
        &dir,
        &format!("[log]\nformat = \"json\"\n[servers.leaky]\ncommand = \"{TOKEN}\"\n"),
    );
    let (stdout, stderr) = run(&config, &[], "async () => 1 + 1").await;
    assert_eq!(stdout.trim(), "2");
    assert!(!stderr.contains(TOKEN), "{stderr}");
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let failed = lines
        .iter()
        .find(|l| l["fields"]["server"] == "leaky")
        .unwrap_or_else(|| panic!("no line about the server: {stderr}"));
    assert_eq!(failed["level"], "WARN", "{failed}");
    let message = failed["fields"]["message"].as_str().unwrap();
    assert!(message.contains("could not connect"), "{message}");

    let (stdout, stderr) = run(&config, &["--log-format", "text"], "async () => 3").await;
    assert_eq!(stdout.trim(), "3");
    let warn = stderr
        .lines()
        .find(|l| l.contains("could not connect"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(serde_json::from_str::<Value>(warn).is_err(), "{warn}");
    assert!(!stderr.contains(TOKEN), "{stderr}");
}
