//! The Lua scripts against a real `redis-server` (Debian's package; the
//! tests start their own on a free loopback port, without persistence, and
//! kill it at the end): the same answers as the memory store, caps held by
//! two stores racing on one Redis, Redis's clock for TTL and idleness, and
//! `STATE_UNAVAILABLE` when Redis is gone or full. Time is real: Redis's
//! `TIME` cannot be paused.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::testing::RedisServer;
use super::*;
use crate::state::Handle;
use crate::state::memory::tests::{at, value};

/// The memory store's test caps, with eviction after 1 s of Redis time
/// (Redis's clock cannot be paused).
fn limits() -> StashLimits {
    StashLimits {
        evict_idle_secs: 1,
        ..crate::state::memory::tests::limits()
    }
}

fn connect(server: &RedisServer, timeout_ms: u64) -> Arc<Redis> {
    let backend = StateConfig {
        backend: server.url(),
        timeout_ms,
        key_prefix: format!("t{}:", Handle::random().as_str()),
        ..StateConfig::default()
    }
    .backend()
    .unwrap();
    Redis::open(&backend).unwrap().unwrap()
}

/// The operations answer as the memory store does, spaces included: a
/// group reads the public space, cannot delete there, and its own keys are
/// its own; TTLs end on Redis's clock.
#[tokio::test]
async fn operations_answer_as_the_memory_store_does() {
    let server = RedisServer::start(&[]);
    let s = RedisStore::new(connect(&server, 500), limits());
    let h = Handle::random();
    let alpha: Arc<str> = "alpha".into();
    s.put(at(&h, None), "pub", "1".into(), None).await.unwrap();
    s.put(at(&h, Some(&alpha)), "a", "2".into(), None)
        .await
        .unwrap();
    assert_eq!(s.get(at(&h, None), "pub").await.unwrap(), Some("1".into()));
    assert_eq!(
        s.get(at(&h, Some(&alpha)), "pub").await.unwrap(),
        Some("1".into())
    );
    assert_eq!(s.get(at(&h, None), "a").await.unwrap(), None);
    assert_eq!(s.keys(at(&h, Some(&alpha))).await.unwrap(), ["a", "pub"]);
    assert_eq!(s.keys(at(&h, None)).await.unwrap(), ["pub"]);
    assert!(!s.delete(at(&h, Some(&alpha)), "pub").await.unwrap());
    assert!(s.delete(at(&h, Some(&alpha)), "a").await.unwrap());
    assert_eq!(s.keys(at(&h, Some(&alpha))).await.unwrap(), ["pub"]);
    // TTL.
    s.put(
        at(&h, None),
        "short",
        "3".into(),
        Some(Duration::from_millis(300)),
    )
    .await
    .unwrap();
    assert!(s.get(at(&h, None), "short").await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.get(at(&h, None), "short").await.unwrap(), None);
    assert!(!s.delete(at(&h, None), "short").await.unwrap());
    // The checks that need no state, and the stash's own caps, word their
    // refusals as memory does.
    let memory = crate::state::MemoryStore::new(limits());
    let m = Handle::random();
    for k in ["w", "x", "y"] {
        s.put(at(&h, None), k, "1".into(), None).await.unwrap();
        memory.put(at(&m, None), k, "1".into(), None).await.unwrap();
    }
    memory
        .put(at(&m, None), "pub", "1".into(), None)
        .await
        .unwrap();
    let from_redis = s
        .put(at(&h, None), "z", "1".into(), None)
        .await
        .unwrap_err();
    let from_memory = memory
        .put(at(&m, None), "z", "1".into(), None)
        .await
        .unwrap_err();
    assert_eq!(from_redis, from_memory);
    let e = s
        .put(
            at(&h, None),
            "w",
            "1".into(),
            Some(Duration::from_secs(601)),
        )
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashTtlTooLong), "{e:?}");
    let h2 = Handle::random();
    s.put(at(&h2, None), "k", value(100), None).await.unwrap();
    s.put(at(&h2, None), "j", value(100), None).await.unwrap();
    let e = s
        .put(at(&h2, None), "i", "1".into(), None)
        .await
        .unwrap_err();
    assert!(e.message.contains("200-byte limit"), "{}", e.message);
    assert_eq!(s.get(at(&h2, None), "k").await.unwrap(), Some(value(100)));
}

/// Under pressure the least recently used idle stash goes, never the one
/// being written; with every other stash in use the write is refused as
/// retryable and nothing is lost (idleness on Redis's clock).
#[tokio::test]
async fn idle_stashes_are_evicted_least_recently_used_first() {
    let server = RedisServer::start(&[]);
    let s = RedisStore::new(connect(&server, 500), limits());
    let [a, b, c, d] = [(); 4].map(|()| Handle::random());
    for h in [&a, &b, &c] {
        s.put(at(h, None), "k", value(100), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let e = s
        .put(at(&d, None), "k", value(100), None)
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashFull) && e.retryable, "{e:?}");
    assert!(e.message.contains("3 stashes"), "{}", e.message);
    assert_eq!(
        s.usage().await,
        Usage {
            stashes: 3,
            bytes: 300
        }
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    s.get(at(&a, None), "k").await.unwrap();
    s.put(at(&d, None), "k", value(100), None).await.unwrap();
    assert_eq!(
        s.get(at(&b, None), "k").await.unwrap(),
        None,
        "b was evicted"
    );
    assert!(s.get(at(&a, None), "k").await.unwrap().is_some());
    assert_eq!(
        s.usage().await,
        Usage {
            stashes: 3,
            bytes: 300
        }
    );
}

/// Two stores on one Redis (two gateways) racing to fill one stash and one
/// space never take either past its caps: each put is one script.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_gateways_racing_never_pass_the_caps() {
    let server = RedisServer::start(&[]);
    let redis = connect(&server, 2000);
    let limits = StashLimits {
        max_keys: 5,
        max_total_size: 10_000,
        max_gateway_size: 100_000,
        max_stashes: 3,
        evict_idle_secs: 3600,
        ..limits()
    };
    let stores: Vec<Arc<RedisStore>> = (0..2)
        .map(|_| Arc::new(RedisStore::new(redis.clone(), limits.clone())))
        .collect();
    let shared = Handle::random();
    // The shared stash first, so that it is one of the space's three.
    stores[0]
        .put(at(&shared, None), "first", "1".into(), None)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = stores[i % 2].clone();
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            let mine = Handle::random();
            let mut stored = 0;
            for j in 0..10 {
                if s.put(at(&shared, None), &format!("k{i}-{j}"), "1".into(), None)
                    .await
                    .is_ok()
                {
                    stored += 1;
                }
                let _ = s.put(at(&mine, None), "k", "1".into(), None).await;
            }
            stored
        }));
    }
    let mut stored = 0;
    for t in tasks {
        stored += t.await.unwrap();
    }
    assert_eq!(stored, 4, "exactly max_keys puts of new keys succeeded");
    assert_eq!(stores[0].keys(at(&shared, None)).await.unwrap().len(), 5);
    let u = stores[1].usage().await;
    assert_eq!(u.stashes, 3, "max_stashes across both: {u:?}");
}

/// Redis gone: `STATE_UNAVAILABLE`, retryable, within the bound; Redis
/// back: the same store works again without being rebuilt.
#[tokio::test]
async fn redis_down_is_state_unavailable_within_the_bound_and_recovers() {
    let mut server = RedisServer::start(&[]);
    let s = RedisStore::new(connect(&server, 300), limits());
    let h = Handle::random();
    s.put(at(&h, None), "k", "1".into(), None).await.unwrap();
    server.kill();
    for _ in 0..3 {
        let started = Instant::now();
        let e = s.get(at(&h, None), "k").await.unwrap_err();
        assert!(
            e.code.is(ErrorCode::StateUnavailable) && e.retryable,
            "{e:?}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "answered in {:?}",
            started.elapsed()
        );
    }
    server.restart();
    let started = Instant::now();
    loop {
        match s.put(at(&h, None), "k", "2".into(), None).await {
            Ok(()) => break,
            Err(e) if started.elapsed() < Duration::from_secs(10) => {
                assert!(e.code.is(ErrorCode::StateUnavailable), "{e:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("no recovery: {e:?}"),
        }
    }
    assert_eq!(s.get(at(&h, None), "k").await.unwrap(), Some("2".into()));
}

/// Redis at `maxmemory` with `noeviction` refuses the write: a clear
/// `STATE_UNAVAILABLE` saying Redis is full, and what was stored stays.
#[tokio::test]
async fn a_full_redis_is_a_clear_error_not_a_silent_drop() {
    let server = RedisServer::start(&["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"]);
    let limits = StashLimits {
        max_keys: 100_000,
        max_value_size: 64 * 1024,
        max_total_size: 1 << 30,
        max_gateway_size: 1 << 30,
        ..limits()
    };
    let s = RedisStore::new(connect(&server, 2000), limits);
    let h = Handle::random();
    let big = format!("\"{}\"", "x".repeat(60_000));
    let mut refused = None;
    for i in 0..200 {
        if let Err(e) = s
            .put(at(&h, None), &format!("k{i}"), big.clone(), None)
            .await
        {
            refused = Some((i, e));
            break;
        }
    }
    let (i, e) = refused.expect("Redis refused at its maxmemory");
    assert!(i > 0, "the first writes fit");
    assert!(e.code.is(ErrorCode::StateUnavailable), "{e:?}");
    assert!(e.message.contains("is full"), "{}", e.message);
    assert_eq!(s.get(at(&h, None), "k0").await.unwrap(), Some(big));
}

/// The shared GCRA: two limiters on one Redis (two gateways) admit one
/// limit's burst between them, not one each.
#[tokio::test]
async fn a_shared_rate_limit_admits_one_burst_across_two_gateways() {
    let server = RedisServer::start(&[]);
    let redis = connect(&server, 500);
    let limits: Vec<_> = (0..2)
        .map(|_| {
            let l = crate::policy::RateLimit::new(60.try_into().unwrap(), "test.per_minute");
            l.share(&redis);
            l
        })
        .collect();
    let mut admitted = 0;
    let mut refusal = None;
    for i in 0..40 {
        match limits[i % 2].take_shared().await {
            Ok(()) => admitted += 1,
            Err(e) => refusal = Some(e),
        }
    }
    // 60 a minute: a burst of 10, and one more a second; the loop takes
    // well under a second.
    assert!((10..=11).contains(&admitted), "admitted {admitted}");
    let e = refusal.unwrap();
    assert!(e.code.is(ErrorCode::RateLimited), "{e:?}");
}

/// `unix://` and `redis+unix://` reach Redis over its socket.
#[tokio::test]
async fn a_unix_socket_backend_works() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("redis.sock");
    let server = RedisServer::start(&["--unixsocket", socket.to_str().unwrap()]);
    for scheme in ["unix", "redis+unix"] {
        let backend = StateConfig {
            backend: format!("{scheme}://{}", socket.display()),
            ..StateConfig::default()
        }
        .backend()
        .unwrap();
        let s = RedisStore::new(Redis::open(&backend).unwrap().unwrap(), limits());
        let h = Handle::random();
        s.put(at(&h, None), "k", scheme.into(), None).await.unwrap();
        assert_eq!(
            s.get(at(&h, None), "k").await.unwrap().as_deref(),
            Some(scheme)
        );
    }
    drop(server);
}

/// `tls_ca_file` is checked at load: only with `rediss://`, and only a
/// file that holds a PEM certificate (an empty trust store would refuse
/// every Redis, with a less clear error, at the first stash operation).
#[test]
fn tls_ca_file_needs_rediss_and_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let check = |backend: &str, file: &std::path::Path| {
        StateConfig {
            backend: backend.into(),
            tls_ca_file: Some(file.to_path_buf()),
            ..StateConfig::default()
        }
        .backend()
        .unwrap_err()
    };
    let (key, message) = check("redis://127.0.0.1:6379", &not_pem);
    assert_eq!(key, "tls_ca_file");
    assert!(message.contains("rediss://"), "{message}");
    let (key, message) = check("rediss://127.0.0.1:6379", &not_pem);
    assert_eq!(key, "tls_ca_file");
    assert!(message.contains("holds no PEM certificate"), "{message}");
    let (_, message) = check("rediss://127.0.0.1:6379", &dir.path().join("absent.pem"));
    assert!(message.contains("could not read"), "{message}");
}
