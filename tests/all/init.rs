//! `quickforge init`: a client's server list into forge.toml, the client
//! pointed at quickforge, and back, driven through the real binary against
//! the client formats in tests/fixtures/clients (issue 21, item 1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::mcp::{CALL_BOUND, connect_with, module, scratch, test_env};
use crate::support::cache_dir;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clients")
}

/// A fake home and project folder, with one client's file in place.
struct Place {
    home: PathBuf,
    project: PathBuf,
}

impl Place {
    fn new(name: &str) -> Place {
        let root = scratch(name);
        let place = Place {
            home: root.join("home"),
            project: root.join("project"),
        };
        std::fs::create_dir_all(&place.home).unwrap();
        std::fs::create_dir_all(&place.project).unwrap();
        place
    }

    /// Puts `client`'s fixture where that client keeps it; returns the file.
    fn install(&self, client: &str) -> PathBuf {
        let f = fixtures();
        let (from, to) = match client {
            "claude-desktop" => (
                f.join("claude-desktop/claude_desktop_config.json"),
                self.home.join(".config/Claude/claude_desktop_config.json"),
            ),
            "claude-code" => (
                f.join("claude-code/.mcp.json"),
                self.project.join(".mcp.json"),
            ),
            "claude-code-user" => (
                f.join("claude-code-user/.claude.json"),
                self.home.join(".claude.json"),
            ),
            "cursor" => (
                f.join("cursor/.cursor/mcp.json"),
                self.project.join(".cursor/mcp.json"),
            ),
            "vscode" => {
                std::fs::copy(f.join("vscode/.env"), self.project.join(".env")).unwrap();
                (
                    f.join("vscode/.vscode/mcp.json"),
                    self.project.join(".vscode/mcp.json"),
                )
            }
            "codex" => (
                f.join("codex/config.toml"),
                self.home.join(".codex/config.toml"),
            ),
            other => panic!("no fixture for {other}"),
        };
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(from).unwrap();
        // ~/.claude.json keys local servers by the project's absolute path.
        let text = text.replace("/path/to/project", &self.project.to_string_lossy());
        std::fs::write(&to, text).unwrap();
        to
    }

    /// Runs `quickforge ARGS` with this home, in this project.
    fn quickforge(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_quickforge"))
            .args(args)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODEX_HOME")
            .env_remove("FORGE_CONFIG")
            .env("QUICKFORGE_CACHE_DIR", cache_dir())
            .current_dir(&self.project)
            .output()
            .expect("the quickforge binary runs")
    }

    fn forge(&self) -> PathBuf {
        self.project.join("forge.toml")
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
}

/// What one fixture must give.
struct Case {
    client: &'static str,
    /// forge.toml server names.
    servers: &'static [&'static str],
    /// Client names reported as not carried over.
    skipped: &'static [&'static str],
    /// Secret values written in clear in the client's file.
    secrets: &'static [&'static str],
    /// Variables the snippet must pass by reference, with the reference.
    references: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        client: "claude-desktop",
        servers: &["filesystem", "github", "postgres", "memory"],
        skipped: &[],
        secrets: &[
            "ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue",
            // Only the URL's password moves; the rest stays readable.
            "correct-horse-battery",
        ],
        references: &[],
    },
    Case {
        client: "claude-code",
        servers: &["sentry", "events", "db"],
        skipped: &["linear"],
        secrets: &["sk_live_51Hx9QkLmN2pR7sT4uV8wY3zA6bC1dE0fG"],
        references: &[
            ("SENTRY_TOKEN", "${SENTRY_TOKEN}"),
            ("DATABASE_URL", "${DATABASE_URL}"),
            ("LOG_LEVEL", "${LOG_LEVEL:-info}"),
        ],
    },
    Case {
        client: "claude-code-user",
        servers: &["airtable", "everything"],
        skipped: &[],
        secrets: &[
            "patQ7rT2vX9yZ4aB.6c1d8e3f0a5b2c7d9e4f1a6b3c8d0e5f2a7b4c9d1e6f3a8b5c0d7e2f9a4b1c6d3",
        ],
        references: &[],
    },
    Case {
        client: "cursor",
        servers: &["notes", "search"],
        skipped: &["socket"],
        secrets: &["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"],
        references: &[("NOTES_API_TOKEN", "${env:NOTES_API_TOKEN}")],
    },
    Case {
        client: "vscode",
        servers: &["perplexity", "fetch", "github"],
        skipped: &[],
        // Stays in the .env file, which the snippet's envFile keeps passing.
        secrets: &[],
        references: &[("PERPLEXITY_KEY", "${input:perplexity-key}")],
    },
    Case {
        client: "codex",
        servers: &["context7", "figma", "tracker"],
        skipped: &["old"],
        secrets: &["ctx7sk-9f8e7d6c-5b4a-3f2e-1d0c-b9a8f7e6d5c4"],
        references: &[],
    },
];

/// The snippet's env as a map, and (Codex) the variables it forwards.
fn snippet_env(client: &str, stdout: &str) -> (BTreeMap<String, String>, Vec<String>, Value) {
    let entry: Value = if client == "codex" {
        let t: toml::Table = stdout.parse().expect("the Codex snippet is TOML");
        serde_json::to_value(&t["mcp_servers"]["quickforge"]).unwrap()
    } else {
        let v: Value = serde_json::from_str(stdout).expect("the snippet is JSON");
        let key = if client == "vscode" {
            "servers"
        } else {
            "mcpServers"
        };
        let servers = v[key].as_object().unwrap();
        assert_eq!(servers.len(), 1, "only quickforge: {v}");
        servers["quickforge"].clone()
    };
    let env = entry["env"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let forwarded = entry["env_vars"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    (env, forwarded, entry)
}

/// Every string a loaded server would receive: command, args, env, URL,
/// headers.
fn received(config: &quickforge::Config) -> Vec<String> {
    let mut out = Vec::new();
    for s in &config.servers {
        match &s.transport {
            quickforge::Transport::Stdio {
                command, args, env, ..
            } => {
                out.push(command.clone());
                out.extend(args.iter().cloned());
                out.extend(env.values().cloned());
            }
            quickforge::Transport::Http { url, headers } => {
                out.push(url.clone());
                out.extend(headers.values().cloned());
            }
        }
    }
    out
}

/// Each client format gives a forge.toml with every server that loads with
/// the config loader and holds no secret in clear, and a snippet whose `env`
/// carries those secrets (and the client's own references) so the loaded
/// servers receive exactly the original values. Reproduces: no `init`, and
/// secrets that would have to be copied into forge.toml by hand.
#[test]
fn init_reads_every_client_format_and_moves_secrets_into_the_snippet() {
    for case in CASES {
        let place = Place::new(&format!("init-{}", case.client));
        place.install(case.client);
        let out = place.quickforge(&["init", "--client", case.client]);
        ok(&out);
        let forge = std::fs::read_to_string(place.forge()).unwrap();
        for secret in case.secrets {
            assert!(
                !forge.contains(secret),
                "{}: {secret} in clear:\n{forge}",
                case.client
            );
        }
        for name in case.servers {
            assert!(
                forge.contains(&format!("[servers.{name}]")),
                "{}: no {name}:\n{forge}",
                case.client
            );
        }
        for name in case.skipped {
            assert!(
                stderr(&out).contains(&format!("not carried over: {name:?}")),
                "{}: {}",
                case.client,
                stderr(&out)
            );
            assert!(!forge.contains(&format!("[servers.{name}]")));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (env, forwarded, entry) = snippet_env(case.client, &stdout);
        assert_eq!(entry["command"], env!("CARGO_BIN_EXE_quickforge"));
        assert_eq!(entry["args"][2], place.forge().to_string_lossy().as_ref());
        for secret in case.secrets {
            assert!(
                env.values().any(|v| v == secret),
                "{}: {secret} not in the snippet's env {env:?}",
                case.client
            );
        }
        for (var, reference) in case.references {
            assert_eq!(
                env.get(*var).map(String::as_str),
                Some(*reference),
                "{}: {env:?}",
                case.client
            );
        }
        // What the client would pass: its env (references resolved to a
        // stand-in), the variables Codex forwards, VS Code's envFile.
        let mut passed: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    if v.contains("${") {
                        "from-the-client".into()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect();
        for var in forwarded {
            passed.insert(var, "from-the-client".into());
        }
        if let Some(file) = entry["envFile"].as_str() {
            for line in std::fs::read_to_string(file).unwrap().lines() {
                if let Some((k, v)) = line.split_once('=')
                    && !k.starts_with('#')
                {
                    passed.insert(k.into(), v.trim_matches('"').into());
                }
            }
        }
        let config =
            quickforge::Config::parse_with_env(&forge, &place.forge(), &|v| passed.get(v).cloned())
                .unwrap_or_else(|e| {
                    panic!("{}: forge.toml does not load: {e}\n{forge}", case.client)
                });
        assert_eq!(config.servers.len(), case.servers.len());
        let got = received(&config);
        for secret in case.secrets {
            assert!(
                got.iter().any(|v| v.contains(secret)),
                "{}: {secret} does not reach its server: {got:?}",
                case.client
            );
        }
    }
}

/// `--apply` leaves the client with quickforge alone and a byte-for-byte
/// backup; `--undo` puts the file back byte-identically. Reproduces: no way
/// to switch a client over, or back.
#[test]
fn apply_then_undo_leaves_every_client_file_byte_identical() {
    for case in CASES {
        let place = Place::new(&format!("apply-{}", case.client));
        let file = place.install(case.client);
        let before = std::fs::read(&file).unwrap();
        ok(&place.quickforge(&["init", "--client", case.client, "--apply"]));
        let backup = PathBuf::from(format!("{}.quickforge-backup", file.display()));
        assert_eq!(std::fs::read(&backup).unwrap(), before, "{}", case.client);
        let after = std::fs::read_to_string(&file).unwrap();
        let (env, _, _) = snippet_env(case.client, &after);
        for secret in case.secrets {
            assert!(
                env.values().any(|v| v == secret),
                "{}: {after}",
                case.client
            );
        }
        if case.client == "codex" {
            assert!(
                after.contains("model = \"gpt-5-codex\""),
                "the rest of config.toml stays: {after}"
            );
        }
        if case.client == "claude-code-user" {
            let v: Value = serde_json::from_str(&after).unwrap();
            assert_eq!(v["numStartups"], 42);
            let project = place.project.to_string_lossy();
            assert_eq!(
                v["projects"][project.as_ref()]["mcpServers"],
                serde_json::json!({})
            );
            assert_eq!(
                v["projects"]["/some/other/project"]["mcpServers"]["not-here"]["command"],
                "other-server"
            );
        }
        // The one client with a backup is found without --client.
        ok(&place.quickforge(&["init", "--undo"]));
        assert_eq!(std::fs::read(&file).unwrap(), before, "{}", case.client);
        assert!(!backup.exists());
    }
}

/// Nothing is overwritten or half-done: an existing forge.toml needs
/// --force, a second --apply would lose the first backup, --undo needs a
/// backup, several clients need --client, and a file that is not plain JSON
/// is refused by name. Reproduces: a setup tool that clobbers files.
#[test]
fn init_refuses_rather_than_overwrite() {
    let place = Place::new("init-refusals");
    let file = place.install("claude-desktop");
    let original = std::fs::read(&file).unwrap();
    std::fs::write(place.forge(), "# mine\n").unwrap();
    let out = place.quickforge(&["init"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(place.forge()).unwrap(), "# mine\n");

    let out = place.quickforge(&["init", "--undo"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    ok(&place.quickforge(&["init", "--force", "--apply"]));
    let applied = std::fs::read(&file).unwrap();
    let forge = std::fs::read(place.forge()).unwrap();
    let out = place.quickforge(&["init", "--force", "--apply"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--undo"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        applied,
        "the client file is untouched"
    );
    assert_eq!(
        std::fs::read(place.forge()).unwrap(),
        forge,
        "forge.toml is untouched"
    );
    ok(&place.quickforge(&["init", "--undo"]));
    assert_eq!(std::fs::read(&file).unwrap(), original);

    place.install("cursor");
    let out = place.quickforge(&["init", "--force"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("claude-desktop") && stderr(&out).contains("cursor"),
        "{}",
        stderr(&out)
    );

    let jsonc = place.project.join("commented.json");
    std::fs::write(&jsonc, "{ // servers\n \"mcpServers\": {} }").unwrap();
    let out = place.quickforge(&["init", "--force", "--from", &jsonc.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not plain JSON"), "{}", stderr(&out));
}

/// `init --apply` never writes through a symbolic link in a file's own
/// name: a project that ships a dangling `.mcp.json.quickforge-backup`
/// pointing at a shell startup file, a client file or forge.toml that is a
/// link, or a backup link that `--undo` would copy from, is refused with a
/// message naming the link, and nothing is written anywhere. A link in a
/// folder above is fine. Reproduces issue 38, finding 1: the backup copied
/// the project's bytes into `~/.bashrc`.
#[cfg(unix)]
#[test]
fn init_refuses_to_write_through_a_link() {
    use std::os::unix::fs::symlink;
    let refused = |out: &Output, link: &Path, doing: &str| {
        assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(out));
        let want =
            format!("refusing to {doing} {link:?}: it is a symbolic link; remove it and run again");
        assert!(
            stderr(out).contains(&want),
            "want {want}\ngot {}",
            stderr(out)
        );
    };

    // A dangling link as the backup: its target is not created.
    let place = Place::new("init-link-backup");
    let file = place.install("claude-code");
    let before = std::fs::read(&file).unwrap();
    let bashrc = place.home.join(".bashrc");
    let backup = place.project.join(".mcp.json.quickforge-backup");
    symlink(&bashrc, &backup).unwrap();
    let out = place.quickforge(&["init", "--client", "claude-code", "--apply"]);
    refused(&out, &backup, "write");
    assert!(!bashrc.exists(), "the link's target was written");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert!(!place.forge().exists(), "nothing is half done");
    // A link to a file that exists is refused the same way, the file kept.
    std::fs::write(&bashrc, "# mine\n").unwrap();
    let out = place.quickforge(&["init", "--client", "claude-code", "--apply"]);
    refused(&out, &backup, "write");
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# mine\n");
    // Nor does --undo copy what the link names into the client's file.
    let out = place.quickforge(&["init", "--client", "claude-code", "--undo"]);
    refused(&out, &backup, "read");
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // The client's file itself a link: refused, its target untouched, the
    // link still a link.
    let place = Place::new("init-link-client");
    let real = place.install("claude-code").with_file_name("real.json");
    std::fs::rename(place.project.join(".mcp.json"), &real).unwrap();
    let file = place.project.join(".mcp.json");
    symlink(&real, &file).unwrap();
    let before = std::fs::read(&real).unwrap();
    let out = place.quickforge(&["init", "--client", "claude-code", "--apply"]);
    refused(&out, &file, "write");
    assert_eq!(std::fs::read(&real).unwrap(), before);
    assert!(file.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(!place.project.join("real.json.quickforge-backup").exists());

    // forge.toml a dangling link: refused, --force or not.
    let place = Place::new("init-link-forge");
    place.install("claude-desktop");
    let elsewhere = place.home.join(".profile");
    symlink(&elsewhere, place.forge()).unwrap();
    for args in [&["init"][..], &["init", "--force"]] {
        let out = place.quickforge(args);
        refused(&out, &place.forge(), "write");
        assert!(!elsewhere.exists());
    }

    // A linked folder above the files is normal (a dotfiles checkout).
    let place = Place::new("init-link-folder");
    let file = place.install("cursor");
    let before = std::fs::read(&file).unwrap();
    let real = place.project.join("cursor-config");
    std::fs::rename(file.parent().unwrap(), &real).unwrap();
    symlink(&real, file.parent().unwrap()).unwrap();
    ok(&place.quickforge(&["init", "--client", "cursor", "--apply"]));
    assert_eq!(
        std::fs::read(real.join("mcp.json.quickforge-backup")).unwrap(),
        before
    );
    ok(&place.quickforge(&["init", "--client", "cursor", "--undo"]));
    assert_eq!(std::fs::read(real.join("mcp.json")).unwrap(), before);
}

/// Secrets that are not under a secret-sounding key still leave forge.toml:
/// an argument after a flag that names one (`--api-key VALUE`), after `=`
/// in one (`--token=VALUE`), a key in a URL's path, a value of a
/// credential's shape under a name `init` does not know (`GH_PAT`,
/// `UPSTREAM`); while a port, a plain URL path and `DEBUG=1` stay as they
/// were. Each secret still reaches its server through the snippet's env.
/// Reproduces issue 38, finding 2.
#[test]
fn init_finds_secrets_in_flag_pairs_url_paths_and_shapes() {
    let place = Place::new("init-secret-shapes");
    let secrets = [
        "Qm2Lp7Rt4plainkey",
        "hunter2-abc",
        "sk_live_51Hx9QkLmN2pR7sT4uV8wY3zA6bC1dE0fG",
        "ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue",
        "ghp_Zx8Qm2Lp7Rt4Vw9Yb3Cd6Fg1Hj5Kn0PsAb12",
        "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5aGk",
    ];
    let config = serde_json::json!({
        "mcpServers": {
            "tool": { "command": "npx",
                "args": ["-y", "some-mcp-server", "--api-key", secrets[0], "--port", "8080",
                         format!("--token={}", secrets[1])],
                "env": { "GH_PAT": secrets[3], "UPSTREAM": secrets[5], "DEBUG": "1" } },
            "events": { "type": "sse",
                "url": format!("https://mcp.example.com/v1/{}/sse", secrets[2]) },
            "keyed": { "type": "http", "url": format!("https://api.example.com/key/{}", secrets[4]) },
            "plain": { "type": "sse", "url": "https://mcp.example.com/v1/sse" }
        }
    });
    std::fs::write(
        place.project.join(".mcp.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    let out = place.quickforge(&["init", "--client", "claude-code"]);
    ok(&out);
    let forge = std::fs::read_to_string(place.forge()).unwrap();
    for secret in secrets {
        assert!(!forge.contains(secret), "{secret} in clear:\n{forge}");
    }
    for kept in [
        r#""--port", "8080""#,
        "\"--token=${",
        "url = \"https://mcp.example.com/v1/sse\"",
        "url = \"https://mcp.example.com/v1/${",
        "url = \"https://api.example.com/key/${",
        "DEBUG = \"1\"",
    ] {
        assert!(forge.contains(kept), "{kept} not kept:\n{forge}");
    }
    let (env, _, _) = snippet_env("claude-code", &String::from_utf8_lossy(&out.stdout));
    for secret in secrets {
        assert!(env.values().any(|v| v == secret), "{secret} not in {env:?}");
    }
    let config =
        quickforge::Config::parse_with_env(&forge, &place.forge(), &|v| env.get(v).cloned())
            .unwrap_or_else(|e| panic!("forge.toml does not load: {e}\n{forge}"));
    let got = received(&config);
    for secret in secrets {
        assert!(
            got.iter().any(|v| v.contains(secret)),
            "{secret} does not reach its server: {got:?}"
        );
    }
}

/// The issue's "done when": a Claude Desktop user runs `quickforge init
/// --apply`, and the client's rewritten entry starts quickforge with all
/// their servers behind it, the secret reaching the server through the
/// entry's env. Two real reference servers from npm stand in for theirs.
#[tokio::test]
async fn a_claude_desktop_user_switches_over_with_init_apply() {
    let place = Place::new("init-done-when");
    let file = place.home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let memory_file = place.project.join("memory.jsonl");
    let config = serde_json::json!({
        "mcpServers": {
            "everything": { "command": "node", "args": [module("server-everything"), "stdio"],
                "env": { "EVERYTHING_API_KEY": "sk-ant-api03-Zx8Qm2Lp7Rt4Vw9Yb3Cd6Fg1Hj5Kn0Ps" } },
            "memory": { "command": "node", "args": [module("server-memory")],
                "env": { "MEMORY_FILE_PATH": memory_file.to_string_lossy() } }
        }
    });
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    ok(&place.quickforge(&["init", "--apply"]));

    let rewritten: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let entry = &rewritten["mcpServers"]["quickforge"];
    // Start it the way Claude Desktop does: the entry's command, args and env.
    let mut cmd = tokio::process::Command::new(entry["command"].as_str().unwrap());
    test_env(&mut cmd);
    cmd.args(
        entry["args"].as_array().unwrap()[1..]
            .iter()
            .map(|a| a.as_str().unwrap()),
    );
    for (k, v) in entry["env"].as_object().unwrap() {
        cmd.env(k, v.as_str().unwrap());
    }
    assert_eq!(entry["args"][0], "serve");
    let session = connect_with(cmd).await;
    let tools = session.client.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["search", "execute"]);
    let value = session
        .execute_when_ready(
            CALL_BOUND,
            r#"async () => {
                const echo = await forge.callTool("everything", "echo", { message: "switched" });
                const graph = await forge.callTool("memory", "read_graph", {});
                return { servers: manifest.servers.map(s => s.name).sort(), echo, graph: Object.keys(graph) };
            }"#,
        )
        .await;
    assert_eq!(
        value["servers"],
        serde_json::json!(["everything", "memory"]),
        "{value}"
    );
    assert!(value["echo"].to_string().contains("switched"), "{value}");
    session.close().await;
}
