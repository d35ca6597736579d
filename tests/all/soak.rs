//! 10,000 sequential executions do not grow the host's memory.

use quickforge::Mode;
use serde_json::json;

use crate::support::{EXCLUSIVE, Kind, context, sandbox, value};

/// Resident set size of this process, in bytes (Linux).
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm is readable");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Growth allowed over 10,000 executions after warm-up: 16 MiB, against the
/// 64 MiB one leaked instance memory alone would cost.
const BOUND: usize = 16 * 1024 * 1024;

#[tokio::test]
#[ignore = "slow (10,000 executions): .ci/run runs it with --ignored"]
async fn ten_thousand_executions_do_not_grow_memory() {
    let sandbox = sandbox(Kind::Default);
    // Nothing else runs while this holds the lock, so RSS is this test's.
    let _alone = EXCLUSIVE.write().await;
    let code = r#"async () => { const r = await forge.callTool("alpha", "echo", { s: "x".repeat(1000) }); console.log(r.tool); return [1, 2, 3].map(x => x * 2); }"#;
    for _ in 0..500 {
        let (cx, _) = context();
        value(&sandbox.run(Mode::Execute, code, cx).await);
    }
    let before = rss();
    for _ in 0..10_000 {
        let (cx, _) = context();
        let report = sandbox.run(Mode::Execute, code, cx).await;
        assert_eq!(value(&report), &json!([2, 4, 6]));
    }
    let after = rss();
    let growth = after.saturating_sub(before);
    eprintln!(
        "rss before {} KiB, after {} KiB, growth {} KiB",
        before / 1024,
        after / 1024,
        growth / 1024
    );
    assert!(
        growth < BOUND,
        "RSS grew by {} KiB over 10,000 executions",
        growth / 1024
    );
}
