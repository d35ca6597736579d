//! The memory store: TTL, the caps of a stash and of a space, LRU eviction
//! of idle stashes, refusals that change nothing, and spaces that cannot
//! see, delete or sense one another. Time is tokio's paused clock.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::error::ErrorCode;
use crate::state::Handle;

/// Small caps, so each test reaches them in a few puts (the Redis
/// backend's tests use them too).
pub(in crate::state) fn limits() -> StashLimits {
    StashLimits {
        max_keys: 4,
        max_value_size: 100,
        max_total_size: 200,
        default_ttl_secs: 60,
        max_ttl_secs: 600,
        max_stashes: 3,
        max_gateway_size: 350,
        evict_idle_secs: 10,
        secret: None,
    }
}

pub(in crate::state) fn at<'a>(handle: &'a Handle, space: Option<&'a Arc<str>>) -> At<'a> {
    At { handle, space }
}

fn usage(stashes: usize, bytes: usize) -> Usage {
    Usage { stashes, bytes }
}

/// A value whose entry costs exactly `n` bytes under the one-byte key "k".
pub(in crate::state) fn value(n: usize) -> String {
    format!("\"{}\"", "x".repeat(n - 3))
}

#[tokio::test(start_paused = true)]
async fn values_expire_after_their_ttl() {
    let s = MemoryStore::new(limits());
    let h = Handle::random();
    s.put(at(&h, None), "a", "1".into(), Some(Duration::from_secs(5)))
        .await
        .unwrap();
    s.put(at(&h, None), "b", "2".into(), None).await.unwrap();
    tokio::time::advance(Duration::from_secs(6)).await;
    assert_eq!(s.get(at(&h, None), "a").await.unwrap(), None);
    assert_eq!(s.keys(at(&h, None)).await.unwrap(), ["b"]);
    assert!(
        !s.delete(at(&h, None), "a").await.unwrap(),
        "an expired key is not live"
    );
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(
        s.get(at(&h, None), "b").await.unwrap(),
        None,
        "the default TTL"
    );
    let e = s
        .put(
            at(&h, None),
            "c",
            "1".into(),
            Some(Duration::from_secs(601)),
        )
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashTtlTooLong), "{e:?}");
}

#[tokio::test(start_paused = true)]
async fn a_stash_refuses_past_its_keys_and_bytes_and_keeps_what_it_had() {
    let s = MemoryStore::new(limits());
    let h = Handle::random();
    for k in ["a", "b", "c", "d"] {
        s.put(at(&h, None), k, "1".into(), None).await.unwrap();
    }
    let e = s
        .put(at(&h, None), "e", "1".into(), None)
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashFull), "{e:?}");
    assert!(!e.retryable, "only deleting keys helps");
    // Replacing an existing key is not a new key.
    s.put(at(&h, None), "a", "2".into(), None).await.unwrap();
    let h2 = Handle::random();
    s.put(at(&h2, None), "k", value(100), None).await.unwrap();
    s.put(at(&h2, None), "j", value(100), None).await.unwrap();
    let e = s
        .put(at(&h2, None), "i", "1".into(), None)
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashFull), "{e:?}");
    assert!(e.message.contains("200-byte limit"), "{}", e.message);
    assert_eq!(s.get(at(&h2, None), "k").await.unwrap(), Some(value(100)));
    let e = s
        .put(at(&h2, None), "big", value(200), None)
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashValueTooLarge), "{e:?}");
}

/// Under pressure, the least recently used idle stash goes first; the stash
/// being written never does; when every other stash is in use, the write
/// is refused as retryable and nothing is lost.
#[tokio::test(start_paused = true)]
async fn idle_stashes_are_evicted_least_recently_used_first() {
    let s = MemoryStore::new(limits());
    let [a, b, c, d] = [(); 4].map(|()| Handle::random());
    s.put(at(&a, None), "k", value(100), None).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    s.put(at(&b, None), "k", value(100), None).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    s.put(at(&c, None), "k", value(100), None).await.unwrap();
    // Three stashes: the space's limit. All used in the last 10 s.
    let e = s
        .put(at(&d, None), "k", value(100), None)
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashFull), "{e:?}");
    assert!(e.retryable, "{e:?}");
    assert!(e.message.contains("3 stashes"), "{}", e.message);
    assert_eq!(s.usage().await, usage(3, 300));
    tokio::time::advance(Duration::from_secs(20)).await;
    // Reading `a` makes `b` the least recently used.
    s.get(at(&a, None), "k").await.unwrap();
    s.put(at(&d, None), "k", value(100), None).await.unwrap();
    assert_eq!(
        s.get(at(&b, None), "k").await.unwrap(),
        None,
        "b was evicted"
    );
    assert!(s.get(at(&a, None), "k").await.unwrap().is_some());
    assert_eq!(s.usage().await, usage(3, 300));
    // Bytes: a grows to 200, and 400 > 350 evicts the least recently used
    // idle stash other than a (c), not a itself.
    tokio::time::advance(Duration::from_secs(20)).await;
    s.put(at(&a, None), "j", value(100), None).await.unwrap();
    assert_eq!(
        s.get(at(&c, None), "k").await.unwrap(),
        None,
        "c was evicted"
    );
    assert_eq!(s.keys(at(&a, None)).await.unwrap(), ["j", "k"]);
    assert_eq!(s.usage().await, usage(2, 300));
}

/// Expired entries make room before anything live is evicted.
#[tokio::test(start_paused = true)]
async fn expired_entries_go_before_live_stashes() {
    let s = MemoryStore::new(limits());
    let [a, b, c, d] = [(); 4].map(|()| Handle::random());
    s.put(at(&a, None), "k", value(100), Some(Duration::from_secs(5)))
        .await
        .unwrap();
    s.put(at(&b, None), "k", value(100), None).await.unwrap();
    s.put(at(&c, None), "k", value(100), None).await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    s.put(at(&d, None), "k", value(100), None).await.unwrap();
    assert!(s.get(at(&b, None), "k").await.unwrap().is_some(), "b kept");
    assert!(s.get(at(&c, None), "k").await.unwrap().is_some(), "c kept");
}

/// One group's space: its own keys, deletions and capacity. A group reads
/// the public space but cannot delete there or refresh it, and nothing one
/// space does changes what another can store.
#[tokio::test(start_paused = true)]
async fn spaces_cannot_see_delete_or_sense_one_another() {
    let s = MemoryStore::new(limits());
    let h = Handle::random();
    let (alpha, beta): (Arc<str>, Arc<str>) = ("alpha".into(), "beta".into());
    s.put(at(&h, None), "pub", "1".into(), None).await.unwrap();
    s.put(at(&h, Some(&alpha)), "a", "2".into(), None)
        .await
        .unwrap();
    assert_eq!(s.keys(at(&h, Some(&beta))).await.unwrap(), ["pub"]);
    assert_eq!(s.get(at(&h, Some(&beta)), "a").await.unwrap(), None);
    assert_eq!(
        s.get(at(&h, Some(&beta)), "pub").await.unwrap(),
        Some("1".into())
    );
    assert!(!s.delete(at(&h, Some(&beta)), "a").await.unwrap());
    assert!(
        !s.delete(at(&h, Some(&beta)), "pub").await.unwrap(),
        "no deletion in public"
    );
    assert_eq!(s.get(at(&h, None), "pub").await.unwrap(), Some("1".into()));
    assert_eq!(s.keys(at(&h, Some(&alpha))).await.unwrap(), ["a", "pub"]);
    assert_eq!(s.keys(at(&h, None)).await.unwrap(), ["pub"]);
    // Beta fills its space's stashes and most of its bytes ...
    for _ in 0..3 {
        let other = Handle::random();
        s.put(at(&other, Some(&beta)), "k", value(100), None)
            .await
            .unwrap();
    }
    let e = s
        .put(at(&Handle::random(), Some(&beta)), "k", "1".into(), None)
        .await
        .unwrap_err();
    assert!(e.code.is(ErrorCode::StashFull), "{e:?}");
    // ... and alpha and the public space can still store exactly as much.
    for space in [Some(&alpha), None] {
        s.put(at(&Handle::random(), space), "k", value(100), None)
            .await
            .unwrap();
    }
    for space in [Some(&alpha), None] {
        for k in ["w", "x", "y"] {
            s.put(at(&h, space), k, "1".into(), None).await.unwrap();
        }
        let e = s
            .put(at(&h, space), "z", "1".into(), None)
            .await
            .unwrap_err();
        assert!(e.message.contains("4 keys"), "{}", e.message);
    }
    assert!(s.get(at(&h, Some(&alpha)), "a").await.unwrap().is_some());
}

/// A public stash that only strict-group scripts read stays least recently
/// used: their reads do not refresh it (which would be a channel from the
/// group to the public space's eviction order).
#[tokio::test(start_paused = true)]
async fn group_reads_do_not_refresh_the_public_space() {
    let s = MemoryStore::new(limits());
    let [a, b, c, d] = [(); 4].map(|()| Handle::random());
    let beta: Arc<str> = "beta".into();
    for h in [&a, &b, &c] {
        s.put(at(h, None), "k", "1".into(), None).await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    tokio::time::advance(Duration::from_secs(20)).await;
    s.get(at(&a, Some(&beta)), "k").await.unwrap();
    s.keys(at(&a, Some(&beta))).await.unwrap();
    s.put(at(&d, None), "k", "1".into(), None).await.unwrap();
    assert_eq!(
        s.get(at(&a, None), "k").await.unwrap(),
        None,
        "a was still the LRU"
    );
}

/// Concurrent writers never take a space over its caps: each put is one
/// atomic step.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_puts_stay_within_the_caps() {
    let s = Arc::new(MemoryStore::new(StashLimits {
        evict_idle_secs: 0,
        ..limits()
    }));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move {
                let h = Handle::random();
                for i in 0..50 {
                    let _ = s
                        .put(at(&h, None), &format!("k{}", i % 6), value(50), None)
                        .await;
                    let u = s.usage().await;
                    assert!(u.bytes <= 350 && u.stashes <= 3, "{u:?}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let u = s.usage().await;
    assert!(u.bytes <= 350 && u.stashes <= 3, "{u:?}");
}
