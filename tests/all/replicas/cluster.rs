//! The deployment of deploy/ started for real on loopback: Debian's
//! `redis-server` with deploy/redis.conf, three `quickforge serve --http`
//! replicas with deploy/forge.toml and deploy/replica.env, and Debian's
//! `haproxy` with deploy/haproxy.cfg in front of them. Only addresses,
//! directories and secrets are the test's own (ports are free ones, the
//! data lives in a scratch directory); every other setting is the recipe's.
//!
//! benches/replicas.rs includes this file (`#[path]`) to measure the same
//! cluster; it needs only crate::processes (included there too).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::processes::{eventually, install_servers, module, quickforge_cmd, scratch};

/// The recipe's directory.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// A free loopback port (bound, then released for the process that takes it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether `program` is installed; the replica tests need Debian's
/// `redis-server` and `haproxy` (`.ci/run` installs both). Without them
/// the tests fail with a message saying how to get them.
pub fn require(program: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(program).is_file();
    assert!(
        found,
        "{program} is not installed: `apt-get install redis-server haproxy` (as .ci/run does)"
    );
}

/// `redis-server` with deploy/redis.conf on a free port, its data in `dir`.
pub struct Redis {
    child: Option<Child>,
    /// Its port.
    pub port: u16,
    dir: PathBuf,
}

impl Redis {
    /// Starts Redis and waits until it answers `PING`.
    pub async fn start(dir: &Path) -> Redis {
        require("redis-server");
        let dir = dir.join("redis");
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = Redis {
            child: None,
            port: free_port(),
            dir,
        };
        redis.spawn().await;
        redis
    }

    async fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .arg(deploy_dir().join("redis.conf"))
            .args(["--port", &self.port.to_string()])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let port = self.port;
        eventually(Duration::from_secs(20), || async move {
            ping(port).await.then_some(())
        })
        .await;
    }

    /// Its URL for `[state] backend`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Stops Redis with SIGTERM (it writes its append-only file first)
    /// and waits for it to exit.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&child);
            let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
        }
    }

    /// Starts it again on the same port and data directory.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }
}

/// Whether Redis on `port` answers `PING` with `+PONG`.
async fn ping(port: u16) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if s.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    matches!(
        tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut buf)).await,
        Ok(Ok(_)) if &buf == b"+PONG\r\n"
    )
}

/// SIGTERM to `child`.
fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on a child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    }
}

/// The variables of deploy/replica.env (`KEY=value` lines; `#` comments).
pub fn replica_env() -> Vec<(String, String)> {
    std::fs::read_to_string(deploy_dir().join("replica.env"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("KEY=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// One `quickforge serve --http` replica.
pub struct Replica {
    child: Option<Child>,
    /// Its name (`QUICKFORGE_REPLICA`).
    pub name: String,
    /// Its port.
    pub port: u16,
    /// Its audit log (one JSON line per execution).
    pub audit: PathBuf,
}

impl Replica {
    /// Kills it with SIGKILL: no drain, connections cut.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }

    /// The audit lines it has written.
    pub fn audit_lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// What a cluster is started with.
pub struct Settings {
    /// Replicas behind the balancer (the recipe has three).
    pub replicas: usize,
    /// `[state] backend`: Redis, or `memory` for the one-replica baseline.
    pub redis: bool,
    /// Extra environment for every replica (the recipe's variables).
    pub env: Vec<(String, String)>,
    /// Text replaced in deploy/forge.toml (a limit a test needs lower),
    /// each `(from, to)`; the file must contain `from`.
    pub edits: Vec<(&'static str, &'static str)>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            replicas: 3,
            redis: true,
            env: Vec::new(),
            edits: Vec::new(),
        }
    }
}

/// Redis, replicas and the balancer, stopped on drop.
pub struct Cluster {
    /// Redis (when the settings asked for it).
    pub redis: Option<Redis>,
    /// The replicas, in the balancer's order.
    pub replicas: Vec<Replica>,
    /// The balancer's `/mcp` URL.
    pub url: String,
    _haproxy: Option<Child>,
}

/// Alice's bearer token (the test's own secret; the recipe holds only
/// its hash, in the replicas' environment).
pub const ALICE: &str = "qf-replicas-alice-token-0123456789abcdef";
/// Bob's.
pub const BOB: &str = "qf-replicas-bob-token-0123456789abcdef0123";

/// The SHA-256 of `token`, as `quickforge auth hash-token` prints it.
fn token_hash(token: &str) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()))
}

impl Cluster {
    /// Starts everything and waits until the balancer serves `/ready`.
    pub async fn start(name: &str, settings: Settings) -> Cluster {
        // Installs Debian's redis-server and haproxy too, when missing.
        install_servers();
        let dir = scratch(name);
        let redis = if settings.redis {
            Some(Redis::start(&dir).await)
        } else {
            None
        };
        let backend = redis.as_ref().map_or("memory".to_string(), Redis::url);
        let secret = hex_secret();
        let mut recipe = std::fs::read_to_string(deploy_dir().join("forge.toml")).unwrap();
        for (from, to) in &settings.edits {
            assert!(recipe.contains(from), "deploy/forge.toml has {from:?}");
            recipe = recipe.replace(from, to);
        }
        let config = dir.join("forge.toml");
        std::fs::write(&config, recipe).unwrap();
        let ports: Vec<u16> = (0..settings.replicas).map(|_| free_port()).collect();
        let lb_port = free_port();
        let url = if settings.replicas > 1 {
            format!("http://127.0.0.1:{lb_port}/mcp")
        } else {
            format!("http://127.0.0.1:{}/mcp", ports[0])
        };
        let mut replicas = Vec::new();
        for i in 1..=settings.replicas {
            let name = format!("replica{i}");
            let port = ports[i - 1];
            let audit = dir.join(format!("{name}.audit.jsonl"));
            let mut cmd = quickforge_cmd(Some(&config));
            for (k, v) in replica_env() {
                cmd.env(k, v);
            }
            cmd.env("QUICKFORGE_REPLICA", &name)
                .env("QUICKFORGE_STATE", &backend)
                .env("QUICKFORGE_STASH_SECRET", &secret)
                .env("QUICKFORGE_AUDIT", &audit)
                .env("QUICKFORGE_RESOURCE", &url)
                .env("QUICKFORGE_ALICE_SHA256", token_hash(ALICE))
                .env("QUICKFORGE_BOB_SHA256", token_hash(BOB))
                .env("EVERYTHING_JS", module("server-everything"));
            for (j, p) in ports.iter().enumerate() {
                cmd.env(
                    format!("QUICKFORGE_PEER_{}", j + 1),
                    format!("http://127.0.0.1:{p}/mcp"),
                );
            }
            for (k, v) in &settings.env {
                cmd.env(k, v);
            }
            let child = serve(cmd, port).await;
            replicas.push(Replica {
                child: Some(child),
                name,
                port,
                audit,
            });
        }
        let haproxy = (settings.replicas > 1).then(|| balance(&replicas, lb_port));
        let base = url.trim_end_matches("/mcp").to_string();
        eventually(Duration::from_secs(60), || {
            let base = base.clone();
            async move {
                let r = reqwest::get(format!("{base}/ready")).await.ok()?;
                (r.status() == 200).then_some(())
            }
        })
        .await;
        Cluster {
            redis,
            replicas,
            url,
            _haproxy: haproxy,
        }
    }
}

/// 32 random bytes as hex: the stash secret all replicas share.
fn hex_secret() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Starts `quickforge serve --http 127.0.0.1:PORT` from `cmd` and waits
/// for its "listening" line.
pub async fn serve(mut cmd: Command, port: u16) -> Child {
    let mut child = cmd
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the replica says where it listens")
        .unwrap()
        .expect("a line on stdout");
    assert!(line.contains(&format!(":{port}/mcp")), "{line}");
    // Ready before the balancer checks it, so it never starts out as down.
    eventually(Duration::from_secs(60), || async move {
        let r = reqwest::get(format!("http://127.0.0.1:{port}/ready"))
            .await
            .ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    child
}

/// haproxy with deploy/haproxy.cfg in front of `replicas`, on `port`.
fn balance(replicas: &[Replica], port: u16) -> Child {
    require("haproxy");
    let mut cmd = Command::new("haproxy");
    cmd.arg("-f")
        .arg(deploy_dir().join("haproxy.cfg"))
        // Foreground, no daemon: the test owns the process.
        .arg("-db")
        .env("QUICKFORGE_LB", format!("127.0.0.1:{port}"));
    for (i, r) in replicas.iter().enumerate() {
        cmd.env(
            format!("QUICKFORGE_REPLICA_{}", i + 1),
            format!("127.0.0.1:{}", r.port),
        );
    }
    cmd.stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("haproxy starts")
}
