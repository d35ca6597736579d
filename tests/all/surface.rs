//! How quickforge's own two tools are listed to its client (issue 21,
//! item 3), through the real binary.

use serde_json::{Value, json};

use crate::mcp::*;

/// The `_meta` of each listed tool, by name.
async fn metas(config: &str, name: &str) -> Vec<(String, Value)> {
    let session = connect(&write_config(&scratch(name), config)).await;
    let tools = session.client.list_all_tools().await.unwrap();
    session.close().await;
    tools
        .into_iter()
        .map(|t| {
            let v = serde_json::to_value(&t).unwrap();
            (
                t.name.to_string(),
                v.get("_meta").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// Weakness: Claude Code defers every MCP tool behind its tool search
/// unless the tool's `_meta` carries `"anthropic/alwaysLoad": true`, and a
/// code-mode gateway whose two tools are deferred loses its point. Both
/// tools carry it by default; `[surface] always_load = false` leaves it out.
#[tokio::test]
async fn both_tools_ask_to_be_loaded_up_front_unless_configured_not_to() {
    let on = metas("", "surface-on").await;
    assert_eq!(
        on,
        [
            ("search".to_string(), json!({"anthropic/alwaysLoad": true})),
            ("execute".to_string(), json!({"anthropic/alwaysLoad": true})),
        ]
    );
    let off = metas("[surface]\nalways_load = false\n", "surface-off").await;
    assert_eq!(
        off,
        [
            ("search".to_string(), Value::Null),
            ("execute".to_string(), Value::Null),
        ]
    );
}
