//! `quickforge add`, `remove` and `list`: forge.toml edited through the real
//! binary, keeping comments and layout, validated before writing, and left
//! untouched on any error (issue 21, item 2).

use std::path::Path;
use std::process::{Command, Output};

use crate::mcp::scratch;
use crate::support::cache_dir;

fn quickforge(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quickforge"))
        .args(args)
        .env_remove("FORGE_CONFIG")
        .env("QUICKFORGE_CACHE_DIR", cache_dir())
        .env("QUICKFORGE_STATE_DIR", crate::processes::scratch("state"))
        .current_dir(dir)
        .output()
        .expect("the quickforge binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A commented forge.toml with a server, a group and a sandbox section.
const COMMENTED: &str = r#"# my gateway
# keep this comment

[servers.memory]   # the knowledge graph
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory"]
# lets scripts delete entities
allow_destructive = true

# --- groups ---
[groups.internal]
servers = ["memory"]

[sandbox]
timeout_secs = 5 # five seconds
"#;

/// Adding a server keeps every comment and line of the file, puts the new
/// table with the servers, and removing it again gives the file back byte
/// for byte. Reproduces: servers could only be added by editing TOML.
#[test]
fn add_and_remove_keep_comments_and_round_trip() {
    let dir = scratch("edit-round-trip");
    let file = dir.join("forge.toml");
    std::fs::write(&file, COMMENTED).unwrap();
    let out = quickforge(
        &dir,
        &[
            "add",
            "fetch",
            "--env",
            "USER_AGENT=quickforge",
            "--",
            "uvx",
            "mcp-server-fetch",
            "--ignore-robots-txt",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let added = std::fs::read_to_string(&file).unwrap();
    for line in COMMENTED.lines() {
        assert!(added.contains(line), "lost {line:?}:\n{added}");
    }
    let fetch = added.find("[servers.fetch]").expect("the new table");
    assert!(
        fetch < added.find("[groups.internal]").unwrap(),
        "with the servers:\n{added}"
    );
    assert!(
        added.contains(r#"args = ["mcp-server-fetch", "--ignore-robots-txt"]"#),
        "{added}"
    );
    let out = quickforge(
        &dir,
        &[
            "add",
            "remote",
            "https://mcp.example.com/mcp",
            "--header",
            "Authorization=Bearer ${REMOTE_TOKEN}",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let config = quickforge::Config::parse_with_env(
        &std::fs::read_to_string(&file).unwrap(),
        &file,
        &|_| Some("t".into()),
    )
    .unwrap();
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fetch", "memory", "remote"]);

    let list = quickforge(&dir, &["list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("fetch\tuvx mcp-server-fetch --ignore-robots-txt\tenv: USER_AGENT"),
        "{listed}"
    );
    assert!(
        listed.contains("remote\thttps://mcp.example.com/mcp\theaders: Authorization"),
        "{listed}"
    );
    assert!(
        !listed.contains("REMOTE_TOKEN") && !listed.contains("quickforge\n"),
        "values are not listed: {listed}"
    );

    for name in ["remote", "fetch"] {
        let out = quickforge(&dir, &["remove", name]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);
}

/// Duplicate, unknown and invalid names, a server the config loader refuses
/// and a removal that would break a group all fail with a clear message and
/// leave the file byte-identical. Reproduces: hand edits that break the
/// file only show at the next start.
#[test]
fn bad_edits_leave_the_file_unchanged() {
    let dir = scratch("edit-refusals");
    let file = dir.join("forge.toml");
    std::fs::write(&file, COMMENTED).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["add", "memory", "--", "node", "x.js"], "already in"),
        (
            &["add", "bad name", "--", "node", "x.js"],
            "names are 1 to 64",
        ),
        (
            &[
                "add",
                "plain",
                "http://mcp.example.com/mcp",
                "--header",
                "Authorization=Bearer x",
            ],
            "clear text",
        ),
        (&["add", "nothing"], "give a URL"),
        (
            &["add", "both", "--header", "A=b", "--", "node"],
            "--header is for HTTP servers",
        ),
        (&["remove", "memroy"], "did you mean \"memory\""),
        (&["remove", "memory"], "no server is named \"memory\""),
    ];
    for (args, message) in cases {
        let out = quickforge(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            COMMENTED,
            "{args:?} changed the file"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["forge.toml"], "no temporary files left behind");
}
