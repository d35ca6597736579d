//! The processes the end-to-end tests start and where they keep their
//! files: the real `quickforge` binary with the test cache, the npm
//! reference servers, scratch folders, and a poll-until helper. Shared by
//! this test binary and benches/replicas.rs (`#[path]`-included there with
//! tests/all/replicas/cluster.rs), so the bench starts the very cluster the
//! replica suite tests; it uses nothing from the rest of tests/all.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The compiled-guest cache shared by every test (and the CLI tests).
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("quickforge-cache")
}

/// The repository's tests/servers folder.
pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers")
}

/// Installs the npm servers and the Python SDK once per test run.
pub fn install_servers() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-test-servers.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .status()
            .expect("bash runs scripts/install-test-servers.sh");
        assert!(
            status.success(),
            "scripts/install-test-servers.sh failed: the end-to-end tests need node and npm, and Python 3.10+ with pip"
        );
    });
}

/// The entry point of the reference server `package` from npm.
pub fn module(package: &str) -> String {
    install_servers();
    servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
        .to_string_lossy()
        .into_owned()
}

/// A fresh scratch directory under the target dir.
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e")
        .join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A `quickforge` command with the test cache and no inherited config.
pub fn quickforge_cmd(config: Option<&Path>) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_quickforge"));
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    test_env(&mut cmd);
    cmd
}

/// The environment a gateway under test runs in, set on `cmd` (the gateway
/// itself, or a client that spawns it and passes its environment on): the
/// test cache, no inherited config, logs at info.
pub fn test_env(cmd: &mut tokio::process::Command) -> &mut tokio::process::Command {
    cmd.env("QUICKFORGE_CACHE_DIR", cache_dir())
        .env_remove("FORGE_CONFIG")
        .env("QUICKFORGE_LOG", "quickforge=info,warn")
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .kill_on_drop(true)
}

/// Polls `check` until it returns `Some`, or panics after `bound`.
pub async fn eventually<T, F, Fut>(bound: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached within {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
