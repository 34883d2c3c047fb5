//! Hot keys: the near cache, key replicas and hot-key detection (parity list).

use crate::api::{ParityApi, ParitySettings, Settings, build};
use crate::common::servers::{Cluster, Memcached};
use crate::support::{HOUR, value};
use memshard::near::NearCacheConfig;
use memshard::{DeleteOutcome, StoreOutcome};
use memshard::{Expiry, HotKeys};
use std::time::Duration;

/// `get`s the servers of `c` have answered so far.
fn server_gets(c: &Cluster) -> u64 {
    c.servers.iter().map(|s| s.stat("cmd_get")).sum()
}

/// Overwrites `key` on `m` behind the client's back.
fn raw_set(m: &Memcached, key: &str, value: &str) {
    m.text().store_all(&[(key, value)]);
}

fn near_client<C: ParityApi>(c: &Cluster) -> C {
    build::<C>(|b| {
        b.server_list(&c.server_list())
            // an hour: nothing expires during the test, every refresh is an invalidation
            .near_cache(NearCacheConfig::prefixes(["hot:"], HOUR, 1000))
    })
}

/// Reads of a marked key are served from the process (no server get; a change made behind the
/// client's back is not seen), unmarked keys never are; `get_multi` uses the cache too. Every
/// write through the client (set, add, replace, append, prepend, cas, incr, decr, delete, the
/// multi-key writes, flush_all) drops the cached copy: the next read returns what the server
/// holds.
pub async fn near_cache_serves_hits_locally_and_client_writes_invalidate_it<C: ParityApi>() {
    let c = Cluster::on_free_ports(&[1, 1, 1]);
    let m: C = near_client(&c);
    let owner = |k: &str| c.by_addr(&m.ring().server_for(k.as_bytes()).unwrap().addr);
    m.set("hot:config", "v1", Expiry::NEVER).await.unwrap();
    m.set("cold:thing", "c", Expiry::NEVER).await.unwrap();
    let g0 = server_gets(&c);
    const READS: u64 = 100;
    for _ in 0..READS {
        assert_eq!(
            m.get("hot:config").await.unwrap().unwrap().value,
            &b"v1"[..]
        );
    }
    assert_eq!(
        server_gets(&c) - g0,
        1,
        "only the first read reaches the server"
    );
    let s = m.near_cache_stats().expect("the near cache is on");
    assert_eq!((s.hits, s.misses), (READS - 1, 1));
    // served locally: a change behind the client's back is not seen
    raw_set(owner("hot:config"), "hot:config", "behind");
    assert_eq!(
        m.get("hot:config").await.unwrap().unwrap().value,
        &b"v1"[..]
    );
    // unmarked keys are never cached
    let g1 = server_gets(&c);
    for _ in 0..10 {
        assert_eq!(m.get("cold:thing").await.unwrap().unwrap().value, &b"c"[..]);
    }
    assert_eq!(server_gets(&c) - g1, 10, "unmarked keys are never cached");
    raw_set(owner("cold:thing"), "cold:thing", "seen");
    assert_eq!(
        m.get("cold:thing").await.unwrap().unwrap().value,
        &b"seen"[..]
    );

    // each write through the client drops the cached copy. Before each: the key is cached with
    // "5", then changed to "7" behind the client's back, so a read served from a stale cache
    // returns "5" and one that reaches the server returns what the write left there.
    type Write<C> = (
        &'static str,
        for<'a> fn(
            &'a C,
            &'static str,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>>,
    );
    let writes: Vec<Write<C>> = vec![
        ("set", |m, k| {
            Box::pin(async move {
                assert_eq!(
                    m.set(k, "9", Expiry::NEVER).await.unwrap(),
                    StoreOutcome::Stored
                );
            })
        }),
        ("replace", |m, k| {
            Box::pin(async move {
                assert_eq!(
                    m.replace(k, "9", Expiry::NEVER).await.unwrap(),
                    StoreOutcome::Stored
                );
            })
        }),
        ("append", |m, k| {
            Box::pin(async move {
                assert_eq!(m.append(k, "1").await.unwrap(), StoreOutcome::Stored);
            })
        }),
        ("prepend", |m, k| {
            Box::pin(async move {
                assert_eq!(m.prepend(k, "1").await.unwrap(), StoreOutcome::Stored);
            })
        }),
        ("cas", |m, k| {
            Box::pin(async move {
                let cas = m.gets(k).await.unwrap().unwrap().cas.unwrap();
                assert_eq!(
                    m.cas(k, "9", Expiry::NEVER, cas).await.unwrap(),
                    StoreOutcome::Stored
                );
            })
        }),
        ("incr", |m, k| {
            Box::pin(async move {
                assert_eq!(m.incr(k, 2).await.unwrap(), Some(9));
            })
        }),
        ("decr", |m, k| {
            Box::pin(async move {
                assert_eq!(m.decr(k, 2).await.unwrap(), Some(5));
            })
        }),
        ("set_multi", |m, k| {
            Box::pin(async move {
                assert!(m.set_multi(&[(k, "9")], 0, Expiry::NEVER).await[0].is_ok());
            })
        }),
        ("set_multi_noreply", |m, k| {
            Box::pin(async move {
                assert!(m.set_multi_noreply(&[(k, "9")], 0, Expiry::NEVER).await[0].is_ok());
            })
        }),
        ("delete", |m, k| {
            Box::pin(async move {
                assert_eq!(m.delete(k).await.unwrap(), DeleteOutcome::Deleted);
            })
        }),
        ("delete_multi", |m, k| {
            Box::pin(async move {
                assert!(m.delete_multi(&[k]).await[0].is_ok());
            })
        }),
        ("flush_all", |m, _| {
            Box::pin(async move {
                assert!(m.flush_all(None).await.iter().all(|(_, r)| r.is_ok()));
            })
        }),
    ];
    let k = "hot:w";
    for (name, write) in writes {
        m.set(k, "5", Expiry::NEVER).await.unwrap();
        assert_eq!(
            m.get(k).await.unwrap().unwrap().value,
            &b"5"[..],
            "{name}: cached"
        );
        raw_set(owner(k), k, "7");
        assert_eq!(
            m.get(k).await.unwrap().unwrap().value,
            &b"5"[..],
            "{name}: served locally"
        );
        write(&m, k).await;
        let on_server = owner(k).raw_get(k.as_bytes());
        let read = m.get(k).await.unwrap().map(|i| i.value.to_vec());
        assert_eq!(
            read,
            on_server,
            "{}: after {name}, the near cache served a stale value",
            C::NAME
        );
    }
    // add: only where the key is missing; the cache must not hide the new value
    m.delete(k).await.unwrap();
    assert_eq!(m.get(k).await.unwrap(), None);
    assert_eq!(
        m.add(k, "added", Expiry::NEVER).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(value(&m.get(k).await, k), b"added");

    // get_multi uses the cache: after the first call (which fills it), no server get
    m.set("hot:a", "A", Expiry::NEVER).await.unwrap();
    let g2 = server_gets(&c);
    let first = m.get_multi(&["hot:a", "hot:a"]).await;
    let fill = server_gets(&c) - g2;
    assert!(
        (1..=2).contains(&fill),
        "the first get_multi reads the server: {fill}"
    );
    let g3 = server_gets(&c);
    for _ in 0..20 {
        for r in m.get_multi(&["hot:a", "hot:a"]).await {
            assert_eq!(value(&r, "hot:a"), b"A");
        }
    }
    assert_eq!(
        server_gets(&c) - g3,
        0,
        "get_multi of a cached key made server gets"
    );
    for r in first {
        assert_eq!(value(&r, "hot:a"), b"A");
    }
}

/// A `Replicated` handle's writes go through the client too: `set` and `delete` of copy 0 (the
/// key itself, on its owner) must drop the key's near-cache copy, as the near cache's docs say
/// of writes.
///
/// This failed when `Replicated::set` and `Replicated::delete` wrote the copies without
/// invalidating the near cache: the next `get` returned the old value.
pub async fn near_cache_is_invalidated_by_replicated_writes<C: ParityApi>() {
    let c = Cluster::on_free_ports(&[1, 1, 1]);
    let m: C = near_client(&c);
    let k = "hot:replicated";
    m.set(k, "v1", Expiry::NEVER).await.unwrap();
    assert_eq!(value(&m.get(k).await, k), b"v1", "cached");
    let rep = m.replicated(k, 2);
    let stored = rep.set("v2", 0, Expiry::NEVER).await;
    assert!(
        stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{stored:?}"
    );
    let owner = c.by_addr(&m.ring().server_for(k.as_bytes()).unwrap().addr);
    assert_eq!(owner.raw_get(k.as_bytes()).as_deref(), Some(&b"v2"[..]));
    assert_eq!(
        value(&m.get(k).await, k),
        b"v2",
        "{}: Replicated::set left the near cache's old copy",
        C::NAME
    );
    let deleted = rep.delete().await;
    assert!(
        deleted
            .iter()
            .all(|r| matches!(r, Ok(DeleteOutcome::Deleted))),
        "{deleted:?}"
    );
    assert_eq!(
        m.get(k).await.unwrap(),
        None,
        "{}: Replicated::delete left the near cache's old copy",
        C::NAME
    );
}

/// `replicated(key, 3)` on four servers: three distinct servers, copy 0 on the key's owner;
/// each copy is on its server under its own name (`key`, `key#r1`, `key#r2`) and on no other;
/// reads spread over the copies and go on when one copy's server dies; delete removes the live
/// copies and reports the dead one.
pub async fn replicas_sit_on_distinct_servers_and_survive_a_failure<C: ParityApi>() {
    let mut c = Cluster::on_free_ports(&[1, 1, 1, 1]);
    let m = build::<C>(|b| {
        b.server_list(&c.server_list())
            .connect_timeout(Duration::from_secs(5))
    });
    let key = "rates:EUR";
    let hot = m.replicated(key, 3);
    let servers: Vec<String> = hot.servers().iter().map(|s| s.addr.clone()).collect();
    assert_eq!(servers.len(), 3);
    let mut distinct = servers.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "copies on distinct servers: {servers:?}");
    assert_eq!(
        servers[0],
        m.ring().server_for(key.as_bytes()).unwrap().addr,
        "copy 0 on the owner"
    );
    assert_eq!(
        m.replicated(key, 9).servers().len(),
        4,
        "at most one copy per server"
    );
    let stored = hot.set("1.08", 4, Expiry::NEVER).await;
    assert_eq!(stored.len(), 3);
    assert!(
        stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{stored:?}"
    );
    for (i, addr) in servers.iter().enumerate() {
        let name = if i == 0 {
            key.to_string()
        } else {
            format!("{key}#r{i}")
        };
        for s in &c.servers {
            let want = (s.addr() == *addr).then_some(&b"1.08"[..]);
            assert_eq!(
                s.raw_get(name.as_bytes()).as_deref(),
                want,
                "{name} on {}",
                s.addr()
            );
        }
    }
    assert_eq!(
        value(&m.get(key).await, key),
        b"1.08",
        "copy 0 is the plain key"
    );
    let before: Vec<u64> = servers
        .iter()
        .map(|a| c.by_addr(a).stat("cmd_get"))
        .collect();
    const READS: u64 = 300;
    for _ in 0..READS {
        let item = hot.get().await.unwrap().unwrap();
        assert_eq!((&item.value[..], item.flags), (&b"1.08"[..], 4));
    }
    let spread: Vec<u64> = servers
        .iter()
        .zip(&before)
        .map(|(a, b)| c.by_addr(a).stat("cmd_get") - b)
        .collect();
    assert_eq!(spread.iter().sum::<u64>(), READS);
    assert!(
        spread.iter().all(|&n| n > 0),
        "reads not spread: {spread:?}"
    );
    // one copy's server dies: every read still succeeds from the others
    let victim = servers[1].clone();
    c.servers.retain(|s| s.addr() != victim);
    for _ in 0..100 {
        assert_eq!(value(&hot.get().await, key), b"1.08");
    }
    let deleted = hot.delete().await;
    assert_eq!(deleted.len(), 3);
    for (addr, r) in servers.iter().zip(&deleted) {
        if *addr == victim {
            assert!(r.is_err(), "{addr}: {r:?}");
        } else {
            assert!(matches!(r, Ok(DeleteOutcome::Deleted)), "{addr}: {r:?}");
        }
    }
    for s in &c.servers {
        assert!(
            s.text()
                .get_many(&[key, "rates:EUR#r1", "rates:EUR#r2"])
                .is_empty()
        );
    }
}

/// The `get_hits` the servers of `c` have answered so far.
fn server_hits(c: &Cluster) -> u64 {
    c.servers.iter().map(|s| s.stat("get_hits")).sum()
}

/// Hot-key detection on a skewed read load over two servers: three planted keys, one per
/// kind of read (`get`, `get_multi`, `gets`/`gat`/`gats`), on both servers, among 3,000 keys
/// read once each. The three are reported first, in order, each count within the bounds
/// Space-Saving guarantees (`count - error <= reads <= count`), and the concurrent reads of
/// `gets_at_once` are all counted. Nothing here depends on time.
pub async fn hot_keys_reports_the_planted_keys_first_within_their_bounds<C: ParityApi>() {
    let c = Cluster::on_free_ports(&[1, 1]);
    let m = build::<C>(|b| {
        b.server_list(&c.server_list())
            .hot_keys(HotKeys::top(3).counters(1024))
    });
    let ring = m.ring();
    // planted keys on both servers
    let on = |server: usize, n: usize| {
        let addr = &ring.servers()[server].addr;
        (0..10_000)
            .map(|i| format!("hot:{i}"))
            .filter(|k| &ring.server_for(k.as_bytes()).unwrap().addr == addr)
            .take(n)
            .collect::<Vec<_>>()
    };
    let (a, b) = (on(0, 2), on(1, 1));
    let (got, multi, other) = (&a[0], &b[0], &a[1]);
    for k in [got, multi, other] {
        m.set(k, "v", Expiry::NEVER).await.unwrap();
    }
    assert!(m.hot_keys().is_empty(), "writes are not counted");
    let (reads_get, reads_multi, reads_other) = (400u64, 300u64, 3 * 60 + 8 * 2);
    let mut cold = (0..3000).map(|i| format!("cold:{i}"));
    for i in 0..400 {
        m.get(got).await.unwrap();
        if i < 300 {
            let keys = [multi.clone(), cold.next().unwrap(), cold.next().unwrap()];
            let r = m.get_multi(&keys).await;
            assert!(matches!(r[0], Ok(Some(_))), "{r:?}");
        }
        if i < 60 {
            m.gets(other).await.unwrap();
            m.gat(other, Expiry::NEVER).await.unwrap();
            m.gats(other, Expiry::NEVER).await.unwrap();
        }
        m.get(cold.next().unwrap_or_else(|| format!("tail:{i}")))
            .await
            .unwrap();
    }
    let r = m.gets_at_once(other, 8, 2).await;
    assert!(r.iter().all(|r| matches!(r, Ok(Some(_)))), "{r:?}");

    let hot = m.hot_keys();
    let keys: Vec<String> = hot
        .iter()
        .map(|h| String::from_utf8_lossy(&h.key).into_owned())
        .collect();
    assert_eq!(
        keys,
        [got, multi, other].map(String::clone),
        "{}: {hot:?}",
        C::NAME
    );
    for (h, reads) in hot.iter().zip([reads_get, reads_multi, reads_other]) {
        assert!(
            h.guaranteed() <= reads && reads <= h.count,
            "{}: {reads} reads of {:?}, reported {h:?}",
            C::NAME,
            String::from_utf8_lossy(&h.key)
        );
    }
    // the bound itself: no shard saw more than all 1,896 reads, each has 128 counters
    assert!(hot.iter().all(|h| h.error <= 1896 / 128), "{hot:?}");

    m.reset_hot_keys();
    assert!(m.hot_keys().is_empty());
    m.get(multi).await.unwrap();
    assert_eq!(m.hot_keys()[0].count, 1);
}

/// With `admit_to_near_cache(5)`, a key the near cache's config does not mark is read from the
/// server until it has certainly been read 5 times; from then on it is served from the
/// process (near-cache hits grow, the servers' `get_hits` do not, a change behind the client's
/// back is not seen), by `get_multi` too; a write through the client drops it. A key read
/// fewer times is never cached.
pub async fn hot_keys_admitted_to_the_near_cache_are_served_locally<C: ParityApi>() {
    let c = Cluster::on_free_ports(&[1, 1]);
    let m = build::<C>(|b| {
        b.server_list(&c.server_list())
            .near_cache(NearCacheConfig::prefixes(["marked:"], HOUR, 1000))
            .hot_keys(HotKeys::top(4).admit_to_near_cache(5))
    });
    let owner = |k: &str| c.by_addr(&m.ring().server_for(k.as_bytes()).unwrap().addr);
    m.set("hot:a", "v1", Expiry::NEVER).await.unwrap();
    m.set("warm:b", "w", Expiry::NEVER).await.unwrap();
    let h0 = server_hits(&c);
    // reads 1 to 5 go to the server; the 5th admits the key and keeps what it read
    for _ in 0..5 {
        assert_eq!(value(&m.get("hot:a").await, "hot:a"), b"v1");
    }
    for _ in 0..4 {
        assert_eq!(value(&m.get("warm:b").await, "warm:b"), b"w");
    }
    assert_eq!(server_hits(&c) - h0, 9, "{}", C::NAME);
    let s0 = m.near_cache_stats().unwrap();
    raw_set(owner("hot:a"), "hot:a", "behind");
    for _ in 0..20 {
        assert_eq!(value(&m.get("hot:a").await, "hot:a"), b"v1", "{}", C::NAME);
    }
    let r = m.get_multi(&["hot:a", "warm:b"]).await;
    assert_eq!(value(&r[0], "hot:a"), b"v1");
    assert_eq!(value(&r[1], "warm:b"), b"w");
    let s1 = m.near_cache_stats().unwrap();
    assert_eq!(s1.hits - s0.hits, 21, "{}: {s0:?} → {s1:?}", C::NAME);
    assert_eq!(
        server_hits(&c) - h0,
        10,
        "{}: only warm:b's multi-get read reached a server",
        C::NAME
    );
    // warm:b has 5 reads now, the 5th (in the multi-get) admitted it
    assert_eq!(value(&m.get("warm:b").await, "warm:b"), b"w");
    assert_eq!(server_hits(&c) - h0, 10, "{}: warm:b admitted", C::NAME);

    // a write through the client drops the admitted copy
    m.set("hot:a", "v2", Expiry::NEVER).await.unwrap();
    assert_eq!(value(&m.get("hot:a").await, "hot:a"), b"v2", "{}", C::NAME);
    assert_eq!(value(&m.get("hot:a").await, "hot:a"), b"v2");
    assert_eq!(server_hits(&c) - h0, 11, "{}: cached again", C::NAME);
    assert_eq!(m.delete("hot:a").await.unwrap(), DeleteOutcome::Deleted);
    assert_eq!(m.get("hot:a").await.unwrap(), None, "{}", C::NAME);
    let hot = m.hot_keys();
    assert_eq!(hot[0].key, b"hot:a");
    assert_eq!(hot[0].count, 5 + 20 + 1 + 2 + 1, "{hot:?}");
}
