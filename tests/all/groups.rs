//! What a strict group hides from `manifest.*` (issue 16, item 3c): the
//! manifest is data from the servers, so an execution locked to one strict
//! group must not read another's, and an unlocked one must not read a strict
//! group's resource list and carry it into another group's first call.

use serde_json::{Value, json};

use crate::mcp::*;

/// server-everything (it lists resources) in strict group alpha, a fixture
/// server in strict group beta, another with no group.
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let toml = format!(
        "{}{}{}\n[groups.alpha]\nservers = [\"everything\"]\nisolation = \"strict\"\n\n[groups.beta]\nservers = [\"b1\"]\n",
        everything(),
        fixture("b1", &[]),
        fixture("free", &[]),
    );
    write_config(dir, &toml)
}

fn names(servers: &Value) -> Vec<&str> {
    servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

/// Reproduces: `manifest.servers` was readable after the lock and listed
/// the other group's resources; `manifest.search` and `manifest.tool`
/// answered about the other group's tools.
#[tokio::test]
async fn a_locked_execution_does_not_see_other_strict_groups() {
    let dir = scratch("group-view");
    let s = connect(&config(&dir)).await;
    s.execute_when_ready(
        CALL_BOUND,
        r#"async () => { if (!manifest.servers.every((s) => s.status === "ready")) throw new Error("not yet"); return true; }"#,
    )
    .await;
    let locked_to_beta = s
        .execute(
            r#"async () => {
                await forge.callTool("b1", "slow", { ms: 0 });
                let tool;
                try { manifest.tool("everything", "echo"); tool = "read"; } catch (e) { tool = [e.code, e.message]; }
                return {
                    servers: manifest.servers,
                    search: manifest.search("echo", { limit: 100 }).map((h) => h.server),
                    tool,
                };
            }"#,
        )
        .await;
    assert_eq!(names(&locked_to_beta["servers"]), ["b1", "free"]);
    assert!(
        !locked_to_beta["search"]
            .as_array()
            .unwrap()
            .contains(&json!("everything")),
        "{locked_to_beta}"
    );
    assert_eq!(locked_to_beta["tool"][0], "GROUP_POLICY_DENIED");
    assert!(
        locked_to_beta["tool"][1]
            .as_str()
            .unwrap()
            .contains("locked to"),
        "{locked_to_beta}"
    );
    // The lock's own group is fully visible, resources included.
    let locked_to_alpha = s
        .execute(
            r#"async () => {
                await forge.callTool("everything", "echo", { message: "x" });
                return manifest.servers.find((s) => s.name === "everything");
            }"#,
        )
        .await;
    assert!(
        !locked_to_alpha["resources"].as_array().unwrap().is_empty(),
        "{locked_to_alpha}"
    );
    assert!(locked_to_alpha.get("resourcesHidden").is_none());
}

/// Reproduces the path around the lock: an unlocked `execute` could read a
/// strict group's resource list, then hand it to another group's first
/// call. Unlocked, the list is hidden with a note; `search` (no calls, no
/// stash) sees it.
#[tokio::test]
async fn a_strict_groups_resources_are_listed_only_inside_the_group() {
    let dir = scratch("group-resources");
    let s = connect(&config(&dir)).await;
    s.execute_when_ready(
        CALL_BOUND,
        r#"async () => { if (!manifest.servers.every((s) => s.status === "ready")) throw new Error("not yet"); return true; }"#,
    )
    .await;
    let unlocked = s
        .execute(r#"async () => manifest.servers.find((s) => s.name === "everything")"#)
        .await;
    assert_eq!(unlocked["resources"], json!([]), "{unlocked}");
    assert!(
        unlocked["resourcesHidden"]
            .as_str()
            .unwrap()
            .contains("strict group"),
        "{unlocked}"
    );
    assert!(unlocked["tools"].as_u64().unwrap() > 0, "tools stay listed");
    let in_search = s
        .search(r#"async () => manifest.servers.find((s) => s.name === "everything")"#)
        .await;
    assert!(
        !in_search["resources"].as_array().unwrap().is_empty(),
        "{in_search}"
    );
}
