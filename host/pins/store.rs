//! Where pins are kept, and the two operations on them: [`Pins::observe`]
//! (what the gateway does with each listing) and [`Pins::trust`] (what
//! `quickforge trust` does).
//!
//! Both are read-modify-write over one server's records, done as one step
//! per backend: under a file lock for `pins.json` (gateways of several
//! clients on one machine share the cache directory), per tool with a
//! compare-and-set script on Redis (replicas list the same server at once),
//! in a mutex in memory. Each operation is idempotent, so a compare-and-set
//! that lost a race is simply run again on what won.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use quickforge_filters::integrity::ToolHash;
use serde::{Deserialize, Serialize};

use super::{Change, Pin, Trusted, now, observed, trusted};
use crate::state::redis::Redis;

/// Name of the record file in the cache directory.
pub const PINS_FILE: &str = "pins.json";

/// Name of the lock file beside it: the records are replaced by renaming a
/// new file over them, so the lock cannot be on the records themselves.
const LOCK_FILE: &str = "pins.lock";

/// Rounds a Redis update is tried when another replica's write lands
/// between its read and its write: each round reads what won, so two are
/// enough unless a dozen replicas list one server in the same millisecond.
const REDIS_ROUNDS: usize = 4;

/// The pin records of every server, and where they are kept.
#[derive(Clone)]
pub struct Pins {
    backend: Arc<Backend>,
    audit: Option<Arc<crate::audit::AuditLog>>,
}

enum Backend {
    /// `pins.json` in this directory.
    File(PathBuf),
    /// This process only: no cache directory.
    Memory(Mutex<BTreeMap<String, BTreeMap<String, Pin>>>),
    /// A hash per server in the shared Redis.
    Redis(Arc<Redis>),
}

impl std::fmt::Debug for Pins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.place())
    }
}

/// `pins.json`: a version, then each server's records by tool name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct PinsFile {
    version: u32,
    servers: BTreeMap<String, BTreeMap<String, Pin>>,
}

/// The format version `pins.json` is written in.
const FILE_VERSION: u32 = 1;

/// The compare-and-set of one tool's record: written only if the field
/// still holds what was read (`""`: nothing).
static CAS: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"local cur = redis.call('HGET', KEYS[1], ARGV[2])
if cur == false then cur = '' end
if cur ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[4])
return 1",
    )
});

impl Pins {
    /// Pins kept in `dir`'s `pins.json`, or for this process only when
    /// there is no cache directory.
    pub fn in_dir(dir: Option<PathBuf>) -> Pins {
        let backend = match dir {
            Some(dir) => Backend::File(dir),
            None => Backend::Memory(Mutex::default()),
        };
        Pins {
            backend: Arc::new(backend),
            audit: None,
        }
    }

    /// Pins kept in `redis`, shared by every replica.
    pub fn in_redis(redis: Arc<Redis>) -> Pins {
        Pins {
            backend: Arc::new(Backend::Redis(redis)),
            audit: None,
        }
    }

    /// The same pins, with each change found written to `audit`.
    pub fn with_audit(mut self, audit: Option<Arc<crate::audit::AuditLog>>) -> Pins {
        self.audit = audit;
        self
    }

    /// Where the records are, for `quickforge doctor` and messages.
    pub fn place(&self) -> String {
        match &*self.backend {
            Backend::File(dir) => dir.join(PINS_FILE).display().to_string(),
            Backend::Memory(_) => "memory (no cache directory: kept for this process only)".into(),
            Backend::Redis(r) => format!("Redis, keys {}pins:*", r.prefix()),
        }
    }

    /// Records `server`'s tools as listed now (`listed`: name and hash):
    /// a tool seen for the first time is trusted as it is; one whose hash
    /// differs from the trusted one is returned as changed (and recorded as
    /// seen, and audited the first time).
    pub async fn observe(
        &self,
        server: &str,
        listed: &[(&str, &ToolHash)],
    ) -> Result<BTreeMap<String, Change>, String> {
        let at = now();
        let mut first_seen = Vec::new();
        let changes = self
            .update(server, |pins| {
                first_seen.clear();
                let mut changes = BTreeMap::new();
                for (name, hash) in listed {
                    let before = pins.get(*name);
                    let (pin, change) = observed(before, hash, &at);
                    if let Some(change) = change {
                        if before
                            .and_then(|b| b.seen.as_ref())
                            .is_none_or(|s| s.hash != hash.whole)
                        {
                            first_seen.push(name.to_string());
                        }
                        changes.insert(name.to_string(), change);
                    }
                    pins.insert(name.to_string(), pin);
                }
                changes
            })
            .await?;
        for name in &first_seen {
            let change = &changes[name];
            tracing::warn!(server, tool = %name, "tool changed: {}", change.sentence());
            if let Some(audit) = &self.audit {
                audit.write_tool_event("tool_changed", server, name, &change.trusted, &change.now);
            }
        }
        Ok(changes)
    }

    /// Trusts the version of `server`'s `tool` (or of every tool of it)
    /// last listed, where it differs from the trusted one; what was
    /// accepted.
    pub async fn trust(&self, server: &str, tool: Option<&str>) -> Result<Vec<Trusted>, String> {
        let at = now();
        let done = self
            .update(server, |pins| {
                let mut done = Vec::new();
                for (name, pin) in pins.iter_mut() {
                    if tool.is_some_and(|t| t != name) {
                        continue;
                    }
                    if let Some((new, t)) = trusted(name, pin, &at) {
                        *pin = new;
                        done.push(t);
                    }
                }
                done
            })
            .await?;
        for t in &done {
            if let Some(audit) = &self.audit {
                audit.write_tool_event("tool_trusted", server, &t.tool, &t.from, &t.to);
            }
        }
        Ok(done)
    }

    /// `server`'s records as they are.
    pub async fn records(&self, server: &str) -> Result<BTreeMap<String, Pin>, String> {
        self.update(server, |pins| pins.clone()).await
    }

    /// Runs `f` on `server`'s records and keeps what it leaves, as one
    /// step (see the module documentation); `f` may run more than once.
    async fn update<R>(
        &self,
        server: &str,
        mut f: impl FnMut(&mut BTreeMap<String, Pin>) -> R,
    ) -> Result<R, String> {
        match &*self.backend {
            Backend::Memory(all) => {
                let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
                Ok(f(all.entry(server.to_string()).or_default()))
            }
            // Small files, read and written in well under a millisecond:
            // not worth a blocking-pool hop. The lock is held only as long.
            Backend::File(dir) => update_file(dir, server, f),
            Backend::Redis(redis) => {
                let key = format!("{}pins:{server}", redis.prefix());
                for _ in 0..REDIS_ROUNDS {
                    let raw: BTreeMap<String, String> = redis
                        .query(redis::cmd("HGETALL").arg(&key).clone())
                        .await
                        .map_err(|e| e.message)?;
                    let mut pins = BTreeMap::new();
                    for (tool, json) in &raw {
                        let pin = serde_json::from_str::<Pin>(json).map_err(|e| {
                            format!("the pin of {server}.{tool} in Redis ({key}) is not valid: {e}")
                        })?;
                        pins.insert(tool.clone(), pin);
                    }
                    let before = pins.clone();
                    let out = f(&mut pins);
                    let mut lost = false;
                    for (tool, pin) in &pins {
                        if before.get(tool) == Some(pin) {
                            continue;
                        }
                        let new = serde_json::to_string(pin).map_err(|e| e.to_string())?;
                        let old = raw.get(tool).cloned().unwrap_or_default();
                        let set: i64 = redis
                            .eval(
                                &CAS,
                                &[&key],
                                vec![
                                    tool.clone().into_bytes(),
                                    old.into_bytes(),
                                    new.into_bytes(),
                                ],
                            )
                            .await
                            .map_err(|e| e.message)?;
                        lost |= set == 0;
                    }
                    if !lost {
                        return Ok(out);
                    }
                }
                Err(format!(
                    "the pins of {server} kept changing under this gateway ({REDIS_ROUNDS} rounds)"
                ))
            }
        }
    }
}

/// [`Pins::update`] on `dir`'s `pins.json`, under `pins.lock`.
fn update_file<R>(
    dir: &std::path::Path,
    server: &str,
    f: impl FnOnce(&mut BTreeMap<String, Pin>) -> R,
) -> Result<R, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = crate::files::open_append(&lock_path).map_err(|e| e.to_string())?;
    lock.lock()
        .map_err(|e| format!("could not lock {}: {e}", lock_path.display()))?;
    let path = dir.join(PINS_FILE);
    let mut file = match crate::files::read(&path) {
        Ok(bytes) => serde_json::from_slice::<PinsFile>(&bytes).map_err(|e| {
            format!(
                "{} is not a valid pin file ({e}); move it away to start pinning afresh",
                path.display()
            )
        })?,
        Err(crate::files::FileError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            PinsFile::default()
        }
        Err(e) => return Err(e.to_string()),
    };
    if file.version > FILE_VERSION {
        return Err(format!(
            "{} was written by a newer quickforge (format {}); this one reads format {FILE_VERSION}",
            path.display(),
            file.version
        ));
    }
    let pins = file.servers.entry(server.to_string()).or_default();
    let before = pins.clone();
    let out = f(pins);
    if *pins != before {
        file.version = FILE_VERSION;
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        crate::files::write_atomic(&path, &bytes).map_err(|e| e.to_string())?;
    }
    // the lock goes with `lock`
    Ok(out)
}

#[cfg(test)]
mod tests {
    use quickforge_filters::integrity::tool_hash;
    use serde_json::json;

    use super::*;

    fn hash(description: &str) -> ToolHash {
        tool_hash(&json!({"name": "t", "description": description}))
    }

    async fn round_trip(pins: &Pins) {
        let (a, b) = (hash("a"), hash("b"));
        assert!(pins.observe("s", &[("t", &a)]).await.unwrap().is_empty());
        let changed = pins.observe("s", &[("t", &b)]).await.unwrap();
        assert_eq!(changed["t"].fields, ["description"]);
        // another server's tool of the same name is its own
        assert!(
            pins.observe("other", &[("t", &b)])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(pins.trust("s", Some("u")).await.unwrap().is_empty());
        let done = pins.trust("s", None).await.unwrap();
        assert_eq!(
            (done[0].from.as_str(), done[0].to.as_str()),
            (a.whole.as_str(), b.whole.as_str())
        );
        assert!(pins.observe("s", &[("t", &b)]).await.unwrap().is_empty());
        assert!(pins.trust("s", None).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn memory_and_file_keep_pins_alike() {
        round_trip(&Pins::in_dir(None)).await;
        let dir = tempfile::tempdir().unwrap();
        round_trip(&Pins::in_dir(Some(dir.path().to_path_buf()))).await;
        // what the file keeps, a second gateway on the machine reads
        let again = Pins::in_dir(Some(dir.path().to_path_buf()));
        let c = again.observe("s", &[("t", &hash("c"))]).await.unwrap();
        assert_eq!(c["t"].trusted, hash("b").whole);
    }

    #[tokio::test]
    async fn a_broken_or_linked_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let pins = Pins::in_dir(Some(dir.path().to_path_buf()));
        std::fs::write(dir.path().join(PINS_FILE), b"{not json").unwrap();
        let e = pins.observe("s", &[("t", &hash("a"))]).await.unwrap_err();
        assert!(
            e.contains("is not a valid pin file") && e.contains("move it away"),
            "{e}"
        );
        // nothing was lost: the file is as it was
        assert_eq!(
            std::fs::read(dir.path().join(PINS_FILE)).unwrap(),
            b"{not json"
        );
        std::fs::remove_file(dir.path().join(PINS_FILE)).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/nonexistent/target", dir.path().join(PINS_FILE)).unwrap();
            let e = pins.observe("s", &[("t", &hash("a"))]).await.unwrap_err();
            assert!(e.contains("symbolic link"), "{e}");
        }
    }
}
