//! Support for end-to-end tests: the real `quickforge` binary serving MCP,
//! real downstream servers from npm (installed on first use by
//! scripts/install-test-servers.sh), and the rmcp client talking to it as an
//! MCP client would.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

pub use crate::processes::{
    eventually, install_servers, module, quickforge_cmd, scratch, servers_dir, test_env,
};

/// Generous bound for one MCP round trip that runs a script; only a hang
/// takes this long.
pub const CALL_BOUND: Duration = Duration::from_secs(60);

/// `s` as a TOML basic string (JSON's escapes are TOML's).
pub fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// `[servers.everything]`: the reference server-everything over stdio.
pub fn everything() -> String {
    format!(
        "[servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\ndescription = \"Reference server exercising every MCP feature\"\ntimeout_secs = 20\n",
        toml_str(&module("server-everything"))
    )
}

/// `[servers.memory]`: the reference knowledge-graph server, storing in `dir`.
pub fn memory(dir: &Path) -> String {
    format!(
        "[servers.memory]\ncommand = \"node\"\nargs = [{}]\nenv = {{ MEMORY_FILE_PATH = {} }}\ntimeout_secs = 20\n",
        toml_str(&module("server-memory")),
        toml_str(&dir.join("memory.jsonl").to_string_lossy())
    )
}

/// `[servers.NAME]`: the fixture server (tests/servers/fixture.mjs) with
/// `extra` arguments.
pub fn fixture(name: &str, extra: &[&str]) -> String {
    install_servers();
    let mut args = vec![toml_str(
        &servers_dir().join("fixture.mjs").to_string_lossy(),
    )];
    args.extend(extra.iter().map(|a| toml_str(a)));
    format!(
        "[servers.{name}]\ncommand = \"node\"\nargs = [{}]\ntimeout_secs = 20\n",
        args.join(", ")
    )
}

/// Writes `toml` as forge.toml in `dir`.
pub fn write_config(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("forge.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Runs `cmd` with `input` on its stdin, and returns what it printed and
/// how it ended.
pub async fn output_with_stdin(
    cmd: &mut tokio::process::Command,
    input: &[u8],
) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).await.unwrap();
    drop(stdin);
    child.wait_with_output().await.unwrap()
}

/// A running gateway and an MCP client session with it.
pub struct Session {
    /// The client.
    pub client: RunningService<RoleClient, ()>,
    /// The gateway process.
    pub child: tokio::process::Child,
}

/// `quickforge serve` on stdio with `config`, its stdout and stdin piped
/// for an MCP client: the child, and the client's transport.
pub fn serve_stdio(
    config: &Path,
) -> (
    tokio::process::Child,
    (tokio::process::ChildStdout, tokio::process::ChildStdin),
) {
    let mut child = quickforge_cmd(Some(config))
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the quickforge binary starts");
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (child, io)
}

/// The arguments after ERA with which tests/clients/sdk_client.py spawns
/// `quickforge serve` with `config` and speaks to it over stdio.
pub fn sdk_stdio_args(config: &Path) -> Vec<std::ffi::OsString> {
    vec![
        "--".into(),
        env!("CARGO_BIN_EXE_quickforge").into(),
        "--config".into(),
        config.into(),
        "serve".into(),
    ]
}

/// Starts `quickforge serve` over stdio with `config` and initializes.
pub async fn connect(config: &Path) -> Session {
    connect_with(quickforge_cmd(Some(config))).await
}

/// Starts `cmd` (a `quickforge serve` command) and initializes.
pub async fn connect_with(cmd: tokio::process::Command) -> Session {
    connect_logging_to(cmd, Stdio::inherit()).await
}

/// Starts `cmd` (a `quickforge serve` command) with its log (stderr) going
/// to `log`, and initializes.
pub async fn connect_logging_to(mut cmd: tokio::process::Command, log: Stdio) -> Session {
    let mut child = cmd
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("the quickforge binary starts");
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = tokio::time::timeout(CALL_BOUND, ().serve((stdout, stdin)))
        .await
        .expect("initialize answered in time")
        .expect("initialize succeeds");
    Session { client, child }
}

impl Session {
    /// Closes the client side, as a client quitting does, and waits (at
    /// most 30 s) for the gateway to exit; returns its status.
    pub async fn close(self) -> std::process::ExitStatus {
        let Session { client, mut child } = self;
        drop(client);
        tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the gateway exits")
            .unwrap()
    }

    /// Calls `tool` (search or execute) with `code`.
    pub async fn call(&self, tool: &str, code: &str) -> CallToolResult {
        let mut args = serde_json::Map::new();
        args.insert("code".into(), Value::String(code.into()));
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        tokio::time::timeout(CALL_BOUND, self.client.call_tool(params))
            .await
            .expect("the call finished in time")
            .expect("the call got an answer")
    }

    /// Runs `code` with `execute` until it succeeds (a server reconnecting,
    /// a session re-initializing), at most `bound`; returns its value.
    pub async fn execute_when_ready(&self, bound: Duration, code: &str) -> Value {
        eventually(bound, || async {
            let r = self.call("execute", code).await;
            (r.is_error != Some(true)).then(|| ok_value(&r))
        })
        .await
    }

    /// Runs `code` with `execute` and returns its value; panics on an error.
    pub async fn execute(&self, code: &str) -> Value {
        ok_value(&self.call("execute", code).await)
    }

    /// Runs `code` with `search` and returns its value; panics on an error.
    pub async fn search(&self, code: &str) -> Value {
        ok_value(&self.call("search", code).await)
    }

    /// Runs `code` with `execute` and returns its error object.
    pub async fn execute_err(&self, code: &str) -> Value {
        err_value(&self.call("execute", code).await)
    }
}

/// The value of a successful result (`structuredContent.result`), checked
/// against the JSON text content.
pub fn ok_value(r: &CallToolResult) -> Value {
    let structured = r.structured_content.clone().unwrap_or(Value::Null);
    assert_ne!(
        r.is_error,
        Some(true),
        "expected success, got {structured:#}"
    );
    let value = structured["result"].clone();
    let text = serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        value,
        "text and structured content agree"
    );
    value
}

/// The error of a failed result (`structuredContent.error`).
pub fn err_value(r: &CallToolResult) -> Value {
    let structured = r.structured_content.clone().unwrap_or(Value::Null);
    assert_eq!(
        r.is_error,
        Some(true),
        "expected an error, got {structured:#}"
    );
    structured["error"].clone()
}

/// Runs the official Python SDK client `script` (in tests/clients/) with
/// `args`, `input` as its stdin, and returns its stdout, one JSON value per
/// line; fails the test when it fails or takes longer than `bound`.
pub async fn python_client(
    script: &str,
    args: &[&std::ffi::OsStr],
    input: &Value,
    bound: Duration,
) -> Vec<Value> {
    use tokio::io::AsyncWriteExt;
    install_servers();
    let mut cmd = tokio::process::Command::new(servers_dir().join(".venv/bin/python"));
    cmd.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/clients")
            .join(script),
    )
    .args(args);
    let mut child = test_env(&mut cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the venv's python runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(bound, child.wait_with_output())
        .await
        .expect("the SDK client finished in time")
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "the SDK client {script} failed: {stdout}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Starts `node SCRIPT ARGS` (a test server in tests/servers/ serving HTTP
/// on a free port) and returns it with the port it announces on stderr as
/// `PREFIX PORT`.
pub async fn node_listening(
    script: &str,
    args: &[&std::ffi::OsStr],
    prefix: &str,
) -> (tokio::process::Child, u16) {
    install_servers();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(servers_dir().join(script)).args(args);
    listening(cmd, script, prefix).await
}

/// As [`node_listening`], for a Python test server run in the test venv.
pub async fn python_listening(
    script: &str,
    args: &[&std::ffi::OsStr],
    prefix: &str,
) -> (tokio::process::Child, u16) {
    install_servers();
    let mut cmd = tokio::process::Command::new(servers_dir().join(".venv/bin/python"));
    cmd.arg(servers_dir().join(script)).args(args);
    listening(cmd, script, prefix).await
}

/// Starts `cmd` (test server `script`) and waits for the port it announces
/// on stderr as `PREFIX PORT`.
async fn listening(
    mut cmd: tokio::process::Command,
    script: &str,
    prefix: &str,
) -> (tokio::process::Child, u16) {
    use tokio::io::AsyncBufReadExt;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(port) = line.strip_prefix(prefix) {
                return port.trim().parse::<u16>().unwrap();
            }
        }
        panic!("{script} exited before listening");
    })
    .await
    .expect("the server listens in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}
