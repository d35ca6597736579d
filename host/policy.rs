//! Who may call what, and how often: per-server tool policy, the strict
//! server-group lock of one execution, and rate limits.
//!
//! All three are checked by the router before a call leaves the gateway;
//! none depends on the script's cooperation.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::Value;

use serde::Deserialize;

use crate::error::{ErrorCode, ForgeError};

/// What a server's policy says about tools annotated `destructiveHint:
/// true` (`allow_destructive`): `false` refuses them, `true` allows them,
/// `"ask"` puts each call to the person first (see
/// [`crate::relay::approve`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Destructive {
    /// Refused (the default: a model should not delete things unasked).
    #[default]
    Deny,
    /// Allowed.
    Allow,
    /// Allowed once the person approves each call.
    Ask,
}

/// What the tool policy says about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It may be called.
    Allow,
    /// It may be called once the person approves the call, for this reason.
    Ask(String),
    /// It may not be called, for this reason.
    Deny(String),
}

/// A server's tool policy: `allow` and `deny` globs over tool names, which
/// tools need the person's approval (`confirm` globs), and whether tools
/// annotated `destructiveHint: true` may be called. Built while the
/// configuration is validated, so a bad glob never gets further.
#[derive(Debug, Clone)]
pub struct ToolPolicy {
    server: String,
    allow: Option<(GlobSet, Vec<String>)>,
    deny: Option<(GlobSet, Vec<String>)>,
    confirm: Option<(GlobSet, Vec<String>)>,
    destructive: Destructive,
}

/// Compiles `patterns` into one set; `None` for an empty list.
fn glob_set(patterns: &[String]) -> Result<Option<(GlobSet, Vec<String>)>, String> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(Glob::new(p).map_err(|e| format!("bad glob {p:?}: {e}"))?);
    }
    let set = set.build().map_err(|e| e.to_string())?;
    Ok(Some((set, patterns.to_vec())))
}

impl ToolPolicy {
    /// The policy of `server`: tools matching `allow` (every tool when it
    /// is empty) and not `deny`, destructive ones as `destructive` says.
    /// Fails on a bad glob.
    pub fn new(
        server: &str,
        allow: &[String],
        deny: &[String],
        destructive: Destructive,
    ) -> Result<ToolPolicy, String> {
        Ok(ToolPolicy {
            server: server.to_string(),
            allow: glob_set(allow)?,
            deny: glob_set(deny)?,
            confirm: None,
            destructive,
        })
    }

    /// `self`, asking the person before any call to a tool matching
    /// `confirm`. Fails on a bad glob.
    pub fn with_confirm(mut self, confirm: &[String]) -> Result<ToolPolicy, String> {
        self.confirm = glob_set(confirm)?;
        Ok(self)
    }

    /// The `allow` globs, as written.
    pub fn allow(&self) -> &[String] {
        self.allow.as_ref().map_or(&[], |(_, p)| p)
    }

    /// The `deny` globs, as written.
    pub fn deny(&self) -> &[String] {
        self.deny.as_ref().map_or(&[], |(_, p)| p)
    }

    /// The `confirm` globs, as written.
    pub fn confirm(&self) -> &[String] {
        self.confirm.as_ref().map_or(&[], |(_, p)| p)
    }

    /// Checks one glob pattern, for configuration loading.
    pub fn check_glob(pattern: &str) -> Result<(), String> {
        Glob::new(pattern).map(|_| ()).map_err(|e| e.to_string())
    }

    /// Whether `tool` (with its MCP `annotations`) may be called: `deny`
    /// first, then `allow`, then `confirm`, then the destructive rule.
    pub fn verdict(&self, tool: &str, annotations: Option<&Value>) -> Verdict {
        let server = &self.server;
        if let Some((set, patterns)) = &self.deny
            && let Some(&i) = set.matches(tool).first()
        {
            return Verdict::Deny(format!(
                "tool {tool:?} matches servers.{server}.deny pattern {:?}",
                patterns[i]
            ));
        }
        if let Some((set, _)) = &self.allow
            && !set.is_match(tool)
        {
            return Verdict::Deny(format!("tool {tool:?} is not in servers.{server}.allow"));
        }
        if let Some((set, patterns)) = &self.confirm
            && let Some(&i) = set.matches(tool).first()
        {
            return Verdict::Ask(format!(
                "it matches servers.{server}.confirm pattern {:?}",
                patterns[i]
            ));
        }
        let destructive = annotations
            .and_then(|a| a.get("destructiveHint"))
            .and_then(Value::as_bool)
            == Some(true);
        match (destructive, self.destructive) {
            (false, _) | (true, Destructive::Allow) => Verdict::Allow,
            (true, Destructive::Ask) => Verdict::Ask(format!(
                "the tool is marked destructive (destructiveHint) and servers.{server}.allow_destructive is \"ask\""
            )),
            (true, Destructive::Deny) => Verdict::Deny(format!(
                "tool {tool:?} is marked destructive (destructiveHint) and servers.{server}.allow_destructive is false"
            )),
        }
    }
}

impl PartialEq for ToolPolicy {
    /// Equal when written the same way: the compiled sets follow.
    fn eq(&self, other: &Self) -> bool {
        self.server == other.server
            && self.allow() == other.allow()
            && self.deny() == other.deny()
            && self.confirm() == other.confirm()
            && self.destructive == other.destructive
    }
}

/// `[servers.NAME] expose`: which of a server's tools quickforge also lists
/// on its own `tools/list`, to be called directly beside `search` and
/// `execute` (see `crate::server::direct`). None by default: every tool
/// costs context on every turn, which is what code mode avoids.
#[derive(Debug, Clone, Default)]
pub struct Expose(Option<(GlobSet, Vec<String>)>);

impl Expose {
    /// Tools matching any of `patterns` (`["*"]`: all of them; empty: none).
    /// Fails on a bad glob.
    pub fn globs(patterns: &[String]) -> Result<Expose, String> {
        glob_set(patterns).map(Expose)
    }

    /// Whether `tool` is listed directly.
    pub fn matches(&self, tool: &str) -> bool {
        self.0.as_ref().is_some_and(|(set, _)| set.is_match(tool))
    }

    /// Whether no tool is listed directly (the default).
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }

    /// The globs, as written.
    pub fn patterns(&self) -> &[String] {
        self.0.as_ref().map_or(&[], |(_, p)| p)
    }
}

impl PartialEq for Expose {
    /// Equal when written the same way.
    fn eq(&self, other: &Self) -> bool {
        self.patterns() == other.patterns()
    }
}

/// How a group's servers may share data within one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// The first call into the group locks the execution to it.
    Strict,
    /// A label only; no lock.
    Open,
}

/// `POLICY_DENIED` for calling `what` (`server.tool`), which a tool policy
/// refuses for reason `why`.
pub fn denied(what: &str, why: &str) -> ForgeError {
    ForgeError::new(
        ErrorCode::PolicyDenied,
        format!("calling {what} is not allowed: {why}"),
    )
    .suggest("the gateway's configuration refuses this tool; do the task another way or ask the user to allow it")
}

/// A server's group, as the router needs it.
#[derive(Debug, Clone)]
pub struct ServerGroup {
    /// The group's name.
    pub name: Arc<str>,
    /// Whether it locks executions.
    pub isolation: Isolation,
}

/// The strict group one execution is locked to, if any. The first call
/// into a strict group's server locks the execution to that group; calls
/// into another strict group are refused for the rest of the execution.
/// Open groups and ungrouped servers stay reachable. The lock also scopes
/// the stash (see [`crate::state`]).
#[derive(Debug, Default)]
pub struct GroupLock {
    locked: Mutex<Option<Arc<str>>>,
}

impl GroupLock {
    /// Lets a call to `server` (in `group`) through, locking the execution
    /// to the group if it is strict and nothing is locked yet.
    pub fn enter(&self, server: &str, group: Option<&ServerGroup>) -> Result<(), ForgeError> {
        let Some(group) = group.filter(|g| g.isolation == Isolation::Strict) else {
            return Ok(());
        };
        let mut locked = self.locked.lock().unwrap_or_else(|p| p.into_inner());
        match &*locked {
            None => {
                *locked = Some(group.name.clone());
                Ok(())
            }
            Some(current) if *current == group.name => Ok(()),
            Some(current) => Err(ForgeError::new(
                ErrorCode::GroupPolicyDenied,
                format!(
                    "server {server:?} is in strict group {:?}, but this execution is locked to strict group {current:?} by an earlier call; data may not flow between strict groups",
                    group.name
                ),
            )
            .suggest("do the work of each strict group in its own execution")),
        }
    }

    /// The strict group the execution is locked to.
    pub fn current(&self) -> Option<Arc<str>> {
        self.locked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A rate limit: `per_minute` events a minute, in bursts of up to
/// `per_minute / 6` (ten seconds' worth, at least one), so a client cannot
/// spend a whole minute's allowance in one instant.
pub struct RateLimit {
    limiter: DefaultDirectRateLimiter,
    /// One budget per key (an authenticated subject), when the limit is
    /// per subject ([`RateLimit::per_key`]); events without a key share
    /// `limiter`.
    keyed: Option<Keyed>,
    per_minute: u32,
    what: String,
    /// Set when the state backend is Redis: the same quota, decided in
    /// Redis for every gateway sharing it ([`RateLimit::share`]).
    shared: std::sync::OnceLock<crate::state::redis::rate::SharedRate>,
}

/// The budgets of a per-key limit, and when to drop the idle ones.
struct Keyed {
    limiter: DefaultKeyedRateLimiter<String>,
    /// Keys held above which the idle ones are dropped on the next event.
    prune_above: std::sync::atomic::AtomicUsize,
}

/// Keys a per-key limit holds before it drops idle ones: a thousand
/// subjects cost a few tens of kilobytes. Pruning walks every key, so it
/// runs only when the count has doubled since the last one. Keys are
/// authenticated subjects only (a stranger never gets one), and a key is
/// idle, and dropped, once its budget has refilled: at most a minute
/// after its last event.
const PRUNE_KEYS_ABOVE: usize = 1024;

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("per_minute", &self.per_minute)
            .field("what", &self.what)
            .finish()
    }
}

impl RateLimit {
    /// `per_minute` events a minute; `what` names the limit in errors
    /// (e.g. `servers.github.calls_per_minute`).
    pub fn new(per_minute: NonZeroU32, what: impl Into<String>) -> RateLimit {
        RateLimit {
            limiter: RateLimiter::direct(
                Quota::per_minute(per_minute).allow_burst(burst(per_minute)),
            ),
            keyed: None,
            per_minute: per_minute.get(),
            what: what.into(),
            shared: std::sync::OnceLock::new(),
        }
    }

    /// Decides through `redis` from now on (once; later calls change
    /// nothing), so that every gateway sharing it counts against one limit.
    pub fn share(&self, redis: &std::sync::Arc<crate::state::redis::Redis>) {
        let burst = burst(NonZeroU32::new(self.per_minute).unwrap_or(NonZeroU32::MIN));
        let _ = self.shared.set(crate::state::redis::rate::SharedRate::new(
            redis.clone(),
            &self.what,
            self.per_minute,
            burst.get(),
        ));
    }

    /// Whether [`RateLimit::share`] made it shared: then only
    /// [`RateLimit::take_shared`] counts it across gateways.
    pub fn is_shared(&self) -> bool {
        self.shared.get().is_some()
    }

    /// Takes one event: in Redis when shared, else as [`RateLimit::take`].
    /// When Redis does not answer, this gateway's own limiter decides (with
    /// a warning): admission keeps working while Redis is down, each
    /// replica holding to the whole limit on its own until it is back,
    /// rather than refusing every call (`STATE_UNAVAILABLE`) or admitting
    /// without any limit.
    pub async fn take_shared(&self) -> Result<(), ForgeError> {
        self.take_shared_for(None).await
    }

    /// As [`RateLimit::take_shared`], for `key` (a subject) as
    /// [`RateLimit::take_for`] counts it: a per-key limit keeps one shared
    /// budget per key in Redis too.
    pub async fn take_shared_for(&self, key: Option<&str>) -> Result<(), ForgeError> {
        let Some(shared) = self.shared.get() else {
            return self.take_for(key);
        };
        let key = key.filter(|_| self.keyed.is_some());
        match shared.take(key).await {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => Err(self.refused(wait)),
            Err(e) => {
                tracing::warn!(
                    limit = %self.what,
                    "shared rate limit: Redis did not answer ({}); this gateway's own limiter decides",
                    e.message
                );
                self.take_for(key)
            }
        }
    }

    /// As [`RateLimit::new`], with a budget of its own for each key given
    /// to [`RateLimit::take_for`] (`[auth] rate_limit_scope = "subject"`).
    pub fn per_key(per_minute: NonZeroU32, what: impl Into<String>) -> RateLimit {
        let mut limit = RateLimit::new(per_minute, what);
        limit.keyed = Some(Keyed {
            limiter: RateLimiter::keyed(
                Quota::per_minute(per_minute).allow_burst(burst(per_minute)),
            ),
            prune_above: PRUNE_KEYS_ABOVE.into(),
        });
        limit
    }

    /// Takes one event, or fails with `RATE_LIMITED` saying when to retry.
    pub fn take(&self) -> Result<(), ForgeError> {
        self.take_for(None)
    }

    /// Takes one event of `key` (a subject): from its own budget when the
    /// limit is per key and there is a key, else from the shared one.
    pub fn take_for(&self, key: Option<&str>) -> Result<(), ForgeError> {
        use std::sync::atomic::Ordering;
        let checked = match (&self.keyed, key) {
            (Some(keyed), Some(key)) => {
                if keyed.limiter.len() > keyed.prune_above.load(Ordering::Relaxed) {
                    keyed.limiter.retain_recent();
                    keyed.limiter.shrink_to_fit();
                    let left = keyed.limiter.len();
                    keyed
                        .prune_above
                        .store((left * 2).max(PRUNE_KEYS_ABOVE), Ordering::Relaxed);
                }
                keyed.limiter.check_key(&key.to_string())
            }
            _ => self.limiter.check(),
        };
        checked.map_err(|not_until| {
            self.refused(not_until.wait_time_from(DefaultClock::default().now()))
        })
    }

    /// The `RATE_LIMITED` refusal for a retry in `wait`.
    fn refused(&self, wait: Duration) -> ForgeError {
        {
            let wait = wait.max(Duration::from_millis(1));
            ForgeError::new(
                ErrorCode::RateLimited,
                format!(
                    "over the limit of {} per minute ({}); retry in {} ms",
                    self.per_minute,
                    self.what,
                    wait.as_millis()
                ),
            )
            .suggest(format!(
                "wait {} ms, or batch the work into fewer calls",
                wait.as_millis()
            ))
        }
    }
}

/// The burst a per-minute quota allows: a sixth of it (ten seconds' worth),
/// at least one.
fn burst(per_minute: NonZeroU32) -> NonZeroU32 {
    NonZeroU32::new((per_minute.get() / 6).max(1)).unwrap_or(NonZeroU32::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(allow: &[&str], deny: &[&str], destructive: Destructive) -> ToolPolicy {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        ToolPolicy::new("s", &list(allow), &list(deny), destructive).unwrap()
    }

    fn denied(v: Verdict) -> String {
        match v {
            Verdict::Deny(why) => why,
            other => panic!("not denied: {other:?}"),
        }
    }

    /// Issue 23 (rate limits per subject): one subject spending its
    /// budget leaves the others theirs; without a key, all share one.
    #[test]
    fn a_per_key_limit_gives_each_subject_its_own_budget() {
        let limit = RateLimit::per_key(NonZeroU32::new(6).unwrap(), "t");
        assert!(limit.take_for(Some("alice")).is_ok());
        assert!(limit.take_for(Some("alice")).is_err());
        assert!(limit.take_for(Some("bob")).is_ok());
        assert!(limit.take_for(None).is_ok());
        assert!(limit.take_for(None).is_err());
        let shared = RateLimit::new(NonZeroU32::new(6).unwrap(), "t");
        assert!(shared.take_for(Some("alice")).is_ok());
        assert!(shared.take_for(Some("bob")).is_err());
    }

    #[test]
    fn deny_wins_over_allow_and_names_the_pattern() {
        let p = policy(
            &["issues.*", "search"],
            &["issues.delete*"],
            Destructive::Deny,
        );
        assert_eq!(p.verdict("issues.create", None), Verdict::Allow);
        assert_eq!(p.verdict("search", None), Verdict::Allow);
        let why = denied(p.verdict("issues.delete_all", None));
        assert!(
            why.contains("servers.s.deny") && why.contains("issues.delete*"),
            "{why}"
        );
        let why = denied(p.verdict("repos.list", None));
        assert!(why.contains("not in servers.s.allow"), "{why}");
    }

    #[test]
    fn destructive_tools_need_consent() {
        let p = policy(&[], &[], Destructive::Deny);
        let destructive = json!({"destructiveHint": true});
        assert!(denied(p.verdict("wipe", Some(&destructive))).contains("allow_destructive"));
        assert_eq!(
            p.verdict("wipe", Some(&json!({"destructiveHint": false}))),
            Verdict::Allow
        );
        assert_eq!(p.verdict("read", None), Verdict::Allow);
        let p = policy(&[], &[], Destructive::Allow);
        assert_eq!(p.verdict("wipe", Some(&destructive)), Verdict::Allow);
        let p = policy(&[], &[], Destructive::Ask);
        assert!(
            matches!(p.verdict("wipe", Some(&destructive)), Verdict::Ask(why) if why.contains("\"ask\""))
        );
        assert_eq!(p.verdict("read", None), Verdict::Allow);
    }

    /// `confirm` asks for matching tools whatever their annotations; `deny`
    /// still wins over it.
    #[test]
    fn confirm_globs_ask_and_deny_still_wins() {
        let p = policy(&[], &["drop_*"], Destructive::Deny)
            .with_confirm(&["send_*".into(), "drop_*".into()])
            .unwrap();
        assert!(
            matches!(p.verdict("send_mail", None), Verdict::Ask(why) if why.contains("send_*"))
        );
        assert!(matches!(p.verdict("drop_table", None), Verdict::Deny(_)));
        assert_eq!(p.verdict("read", None), Verdict::Allow);
    }

    #[test]
    fn the_first_strict_group_locks_the_execution() {
        let g = |n: &str, i| ServerGroup {
            name: n.into(),
            isolation: i,
        };
        let (a, b, o) = (
            g("alpha", Isolation::Strict),
            g("beta", Isolation::Strict),
            g("open", Isolation::Open),
        );
        let lock = GroupLock::default();
        lock.enter("free", None).unwrap();
        lock.enter("o1", Some(&o)).unwrap();
        assert_eq!(lock.current(), None);
        lock.enter("a1", Some(&a)).unwrap();
        lock.enter("a2", Some(&a)).unwrap();
        lock.enter("o1", Some(&o)).unwrap();
        lock.enter("free", None).unwrap();
        let e = lock.enter("b1", Some(&b)).unwrap_err();
        assert_eq!(e.code, "GROUP_POLICY_DENIED");
        assert!(
            e.message.contains("\"beta\"") && e.message.contains("\"alpha\""),
            "{}",
            e.message
        );
        assert_eq!(lock.current().as_deref(), Some("alpha"));
    }

    #[test]
    fn rate_limits_say_when_to_retry() {
        let r = RateLimit::new(NonZeroU32::new(60).unwrap(), "servers.s.calls_per_minute");
        // A burst of ten seconds' worth, then refusals.
        for _ in 0..10 {
            r.take().unwrap();
        }
        let e = r.take().unwrap_err();
        assert_eq!(e.code, "RATE_LIMITED");
        assert!(e.retryable);
        assert!(
            e.message.contains("60 per minute") && e.message.contains("retry in"),
            "{}",
            e.message
        );
    }
}
