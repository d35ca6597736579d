//! A `redis-server` of a test's own: Debian's package, started on a free
//! loopback port with a scratch folder and no snapshots, killed when
//! dropped. Used by the Redis backend's unit tests and the integration
//! tests (tests/all/redis_state.rs), which run the real server rather than
//! a mock: the scripts' atomicity, `TIME` and `OOM` refusals are Redis's.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of a test's own.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    tls: bool,
}

impl RedisServer {
    /// Starts one on a free port, `extra` added to its command line (e.g.
    /// `--appendonly yes`, `--maxmemory 2mb`); panics when
    /// `redis-server` is not installed.
    pub fn start(extra: &[&str]) -> RedisServer {
        RedisServer::start_with(extra.iter().map(|s| s.to_string()).collect(), false)
    }

    /// Starts one that speaks TLS only (`--port 0`, `--tls-port`), with
    /// the server certificate and its key in the PEM files `cert` and
    /// `key`, `ca` the CA it trusts for clients (Redis wants one even when
    /// clients need no certificate, as here: `--tls-auth-clients no`).
    /// Its URL is `rediss://`.
    pub fn start_tls(cert: &Path, key: &Path, ca: &Path, extra: &[&str]) -> RedisServer {
        let mut args = Vec::new();
        for (flag, file) in [
            ("--tls-cert-file", cert),
            ("--tls-key-file", key),
            ("--tls-ca-cert-file", ca),
        ] {
            args.push(flag.to_string());
            args.push(file.to_string_lossy().into_owned());
        }
        args.extend(["--tls-auth-clients".into(), "no".into()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        RedisServer::start_with(args, true)
    }

    fn start_with(extra: Vec<String>, tls: bool) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = spawn(port, tls, dir.path(), &extra);
        RedisServer {
            child,
            port,
            dir,
            extra,
            tls,
        }
    }

    /// Its `redis://` URL (`rediss://` when started with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// Its scratch folder (its `--dir`: snapshots, the append-only file, a
    /// `--unixsocket` placed there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills it (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same port and folder.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port, self.tls, self.dir.path(), &self.extra);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `redis-server` on `port` (its TLS port, the plain one off, when `tls`).
fn spawn(port: u16, tls: bool, dir: &Path, extra: &[String]) -> Child {
    let text = port.to_string();
    let ports: &[&str] = if tls {
        &["--port", "0", "--tls-port", &text]
    } else {
        &["--port", &text]
    };
    let child = Command::new("redis-server")
        .args(ports)
        .args(["--bind", "127.0.0.1", "--save", ""])
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is installed (apt-get install redis-server)");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}
