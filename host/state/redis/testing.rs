//! A `redis-server` of a test's own: Debian's package, started on a free
//! loopback port with a scratch folder and no snapshots, killed when
//! dropped. Used by the Redis backend's unit tests and the integration
//! tests (tests/all/redis_state.rs), which run the real server rather than
//! a mock: the scripts' atomicity, `TIME` and `OOM` refusals are Redis's.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of a test's own.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts one on a free port, `extra` added to its command line (e.g.
    /// `--appendonly yes`, `--maxmemory 2mb`); panics when
    /// `redis-server` is not installed.
    pub fn start(extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn(port, dir.path(), &extra);
        RedisServer {
            child,
            port,
            dir,
            extra,
        }
    }

    /// Its `redis://` URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its scratch folder (its `--dir`: snapshots, the append-only file, a
    /// `--unixsocket` placed there).
    pub fn dir(&self) -> &std::path::Path {
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
        self.child = spawn(self.port, self.dir.path(), &self.extra);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(port: u16, dir: &std::path::Path, extra: &[String]) -> Child {
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
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
