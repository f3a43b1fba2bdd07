//! The answer cache's behaviour, through its public face and paused time: expiry, bounds,
//! coalescing, cancellation, stale-if-error and refresh-ahead.

#![allow(clippy::unwrap_used)]

use super::entry::REFRESH_MIN_HITS;
use super::*;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tracing::Span;

const MINUTE: Duration = Duration::from_secs(60);
const STALE: Duration = Duration::from_secs(600);

fn cache(capacity: usize) -> AnswerCache<&'static str, u32> {
    AnswerCache::new(capacity, STALE, CacheCounters::default())
}

#[tokio::test(start_paused = true)]
async fn entries_expire_after_their_ttl() {
    let c = cache(10);
    c.insert(&"k", 1, Keep::Complete(Duration::from_secs(60)));
    c.insert(&"p", 2, Keep::Partial(Duration::from_secs(60)));
    assert_eq!(c.get_live(&"k"), Some(1));
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!((c.get_live(&"k"), c.get_live(&"p")), (None, None));
    assert_eq!(c.counters.size.get(), 1, "the gauge follows the expiry");
    tokio::time::advance(STALE).await;
    assert_eq!(c.get_live(&"k"), None);
    assert_eq!(c.counters.size.get(), 0, "and the end of the stale window");
}

#[tokio::test(start_paused = true)]
async fn a_weighted_cache_keeps_at_most_its_bytes_least_recently_used_first() {
    let counters = CacheCounters::default();
    let c: AnswerCache<&'static str, u32> =
        AnswerCache::weighted(100, |v| *v as usize, STALE, counters.clone());
    c.insert(&"a", 40, Keep::Complete(MINUTE));
    c.insert(&"b", 40, Keep::Complete(MINUTE));
    assert_eq!(counters.bytes.get(), 80);
    c.get_live(&"a");
    c.insert(&"c", 30, Keep::Complete(MINUTE));
    assert_eq!(
        (c.get_live(&"a"), c.get_live(&"b"), c.get_live(&"c")),
        (Some(40), None, Some(30))
    );
    assert_eq!((counters.bytes.get(), counters.size.get()), (70, 2));
    c.insert(&"a", 10, Keep::Complete(MINUTE));
    assert_eq!(
        counters.bytes.get(),
        40,
        "a replaced value gives its weight back"
    );
    c.insert(&"huge", 500, Keep::Complete(MINUTE));
    assert_eq!(
        c.get_live(&"huge"),
        None,
        "a value over the bound is not kept"
    );
    assert_eq!(counters.bytes.get(), 0);
    c.insert(&"d", 20, Keep::Complete(MINUTE));
    assert_eq!(c.purge(|_| true), 1);
    assert_eq!(counters.bytes.get(), 0);
    let off: AnswerCache<&'static str, u32> =
        AnswerCache::weighted(0, |v| *v as usize, STALE, CacheCounters::default());
    off.insert(&"a", 1, Keep::Complete(MINUTE));
    assert_eq!(off.get_live(&"a"), None);
}

#[tokio::test(start_paused = true)]
async fn capacity_evicts_the_least_recently_used() {
    let c = cache(2);
    c.insert(&"a", 1, Keep::Complete(Duration::from_secs(60)));
    c.insert(&"b", 2, Keep::Complete(Duration::from_secs(60)));
    c.get_live(&"a");
    c.insert(&"c", 3, Keep::Complete(Duration::from_secs(60)));
    assert_eq!(
        (c.get_live(&"a"), c.get_live(&"b"), c.get_live(&"c")),
        (Some(1), None, Some(3))
    );
    assert_eq!(c.counters.size.get(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_entry_counted_cache_can_keep_its_weight_through_evictions() {
    let counters = CacheCounters::default();
    let c: AnswerCache<&'static str, u32> =
        AnswerCache::new_weighed(2, |v| *v as usize, STALE, counters.clone());
    c.insert(&"a", 10, Keep::Complete(MINUTE));
    c.insert(&"b", 20, Keep::Complete(MINUTE));
    c.insert(&"c", 300, Keep::Complete(MINUTE));
    assert_eq!(c.get_live(&"a"), None, "bounded by entries, not bytes");
    assert_eq!((c.weight(), counters.bytes.get()), (320, 320));
    c.insert(&"c", 5, Keep::Complete(MINUTE));
    assert_eq!(c.weight(), 25);
    c.purge(|_| true);
    assert_eq!((c.weight(), counters.bytes.get()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn purge_drops_expired_entries_and_updates_the_gauge() {
    let c = cache(10);
    c.insert(&"short", 1, Keep::Partial(Duration::from_secs(5)));
    c.insert(&"long", 2, Keep::Complete(Duration::from_secs(500)));
    c.insert(&"stale", 3, Keep::Complete(Duration::from_secs(1)));
    tokio::time::advance(Duration::from_secs(6)).await;
    c.purge_expired();
    assert_eq!(
        c.len(),
        2,
        "an expired complete answer stays as the stale fallback"
    );
    tokio::time::advance(STALE).await;
    c.purge_expired();
    assert_eq!(c.len(), 1);
    assert_eq!(c.counters.size.get(), 1);
}

#[tokio::test(start_paused = true)]
async fn identical_misses_share_one_computation() {
    let c = cache(10);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let c = c.clone();
        let calls = Arc::clone(&calls);
        tasks.push(tokio::spawn(async move {
            c.get_or_compute(&"k", &Span::none(), move || async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                (7, Keep::Complete(MINUTE))
            })
            .await
            .unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().0, 7);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(c.counters.coalesced.get(), 19);
    assert_eq!(
        c.get_or_compute(&"k", &Span::none(), || async { (0, Keep::Never) })
            .await
            .unwrap(),
        (7, CacheStatus::Hit)
    );
}

#[tokio::test(start_paused = true)]
async fn uncacheable_results_are_shared_but_not_stored() {
    let c = cache(10);
    let (v, status) = c
        .get_or_compute(&"k", &Span::none(), || async { (5, Keep::Never) })
        .await
        .unwrap();
    assert_eq!((v, status), (5, CacheStatus::Miss));
    assert_eq!(c.get_live(&"k"), None);
    assert_eq!(c.counters.size.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn computation_is_cancelled_when_every_waiter_leaves() {
    let c = cache(10);
    let finished = Arc::new(AtomicUsize::new(0));
    let f = Arc::clone(&finished);
    let waiter = tokio::spawn({
        let c = c.clone();
        async move {
            c.get_or_compute(&"k", &Span::none(), move || async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                f.fetch_add(1, Ordering::SeqCst);
                (1, Keep::Complete(MINUTE))
            })
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    waiter.abort();
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert!(c.lock().in_flight.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_follower_takes_over_when_the_leader_hangs_up() {
    let c = cache(10);
    let leader = tokio::spawn({
        let c = c.clone();
        async move {
            c.get_or_compute(&"k", &Span::none(), || async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                (1, Keep::Complete(MINUTE))
            })
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let follower = tokio::spawn({
        let c = c.clone();
        async move {
            c.get_or_compute(&"k", &Span::none(), || async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                (2, Keep::Complete(MINUTE))
            })
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    leader.abort();
    let (value, status) = follower.await.unwrap().unwrap();
    assert_eq!((value, status), (2, CacheStatus::Miss));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_computation_does_not_wedge_its_key() {
    let c = cache(10);
    let lost = c
        .get_or_compute(&"k", &Span::none(), || async { panic!("computation bug") })
        .await;
    assert_eq!(lost, Err(ComputationLost));
    let (v, status) = c
        .get_or_compute(&"k", &Span::none(), || async {
            (3, Keep::Complete(MINUTE))
        })
        .await
        .unwrap();
    assert_eq!(
        (v, status),
        (3, CacheStatus::Miss),
        "the next request computes afresh"
    );
}

#[tokio::test(start_paused = true)]
async fn zero_capacity_disables_storage() {
    let c = cache(0);
    c.insert(&"k", 1, Keep::Complete(Duration::from_secs(60)));
    assert_eq!(c.get_live(&"k"), None);
    assert_eq!(c.len(), 0);
}

async fn failing(c: &AnswerCache<&'static str, u32>) -> (u32, CacheStatus) {
    c.get_or_compute(&"k", &Span::none(), || async { (0, Keep::Never) })
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn when_every_upstream_fails_the_last_complete_answer_is_served_stale() {
    let c = cache(10);
    c.insert(&"k", 1, Keep::Complete(MINUTE));
    tokio::time::advance(MINUTE + Duration::from_secs(5)).await;
    assert_eq!(
        failing(&c).await,
        (
            1,
            CacheStatus::Stale {
                expired_for: Duration::from_secs(5)
            }
        )
    );
    tokio::time::advance(STALE).await;
    assert_eq!(
        failing(&c).await,
        (0, CacheStatus::Miss),
        "past the stale window the failure is what the client gets"
    );
}

#[tokio::test(start_paused = true)]
async fn a_zero_stale_window_never_serves_stale() {
    let c = AnswerCache::new(10, Duration::ZERO, CacheCounters::default());
    c.insert(&"k", 1, Keep::Complete(MINUTE));
    tokio::time::advance(MINUTE).await;
    assert_eq!(failing(&c).await, (0, CacheStatus::Miss));
}

#[tokio::test(start_paused = true)]
async fn a_partial_answer_never_replaces_a_live_complete_one_and_keeps_it_as_fallback() {
    let c = cache(10);
    c.insert(&"k", 1, Keep::Complete(MINUTE));
    c.insert(&"k", 2, Keep::Partial(Duration::from_secs(30)));
    assert_eq!(
        c.get_live(&"k"),
        Some(1),
        "the complete answer stays while it lives"
    );
    tokio::time::advance(MINUTE).await;
    c.insert(&"k", 2, Keep::Partial(Duration::from_secs(30)));
    assert_eq!(c.get_live(&"k"), Some(2));
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(
        failing(&c).await,
        (
            1,
            CacheStatus::Stale {
                expired_for: Duration::from_secs(30)
            }
        ),
        "a partial answer is never served stale; the complete one is"
    );
}

#[tokio::test(start_paused = true)]
async fn followers_of_a_failed_computation_get_the_stale_answer_too() {
    let c = cache(10);
    c.insert(&"k", 1, Keep::Complete(MINUTE));
    tokio::time::advance(MINUTE).await;
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.get_or_compute(&"k", &Span::none(), || async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                (0, Keep::Never)
            })
            .await
            .unwrap()
        }));
    }
    for t in tasks {
        let (value, status) = t.await.unwrap();
        assert_eq!(value, 1);
        assert!(matches!(status, CacheStatus::Stale { .. }), "{status:?}");
    }
}

fn counting(calls: &Arc<AtomicUsize>, value: u32) -> impl Future<Output = Computed<u32>> {
    let calls = Arc::clone(calls);
    async move {
        calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(2)).await;
        (value, Keep::Complete(Duration::from_secs(100)))
    }
}

#[tokio::test(start_paused = true)]
async fn a_popular_entry_is_refreshed_in_the_background_shortly_before_it_expires() {
    let c = cache(10);
    let calls = Arc::new(AtomicUsize::new(0));
    c.insert(&"k", 1, Keep::Complete(Duration::from_secs(100)));
    for _ in 0..REFRESH_MIN_HITS {
        let hit = c
            .get_or_compute(&"k", &Span::none(), || counting(&calls, 2))
            .await
            .unwrap();
        assert_eq!(hit, (1, CacheStatus::Hit));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "not yet near its expiry");
    // The last tenth of its life: the next hits are answered at once, one refresh starts.
    tokio::time::advance(Duration::from_secs(91)).await;
    for _ in 0..5 {
        let hit = c
            .get_or_compute(&"k", &Span::none(), || counting(&calls, 2))
            .await
            .unwrap();
        assert_eq!(hit, (1, CacheStatus::Hit));
    }
    assert_eq!(c.counters.refreshes.get(), 1);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Past the old expiry the refreshed answer is live: the query never fell off the cache.
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(c.get_live(&"k"), Some(2));
}

#[tokio::test(start_paused = true)]
async fn an_unpopular_entry_simply_expires() {
    let c = cache(10);
    let calls = Arc::new(AtomicUsize::new(0));
    c.insert(&"k", 1, Keep::Complete(Duration::from_secs(100)));
    tokio::time::advance(Duration::from_secs(95)).await;
    let hit = c
        .get_or_compute(&"k", &Span::none(), || counting(&calls, 2))
        .await
        .unwrap();
    assert_eq!(hit, (1, CacheStatus::Hit));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(c.counters.refreshes.get(), 0);
}
