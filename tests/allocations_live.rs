//! A multi-get allocates a constant number of times, whatever the number of keys: values
//! share the read buffer they arrived in, and each server's group is sized once. Counted with
//! a counting global allocator, so this binary holds this one test and nothing runs beside it.

mod common;

use common::servers::Cluster;
use memshard::{Client, Expiry};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (and reallocations) of one `get_multi` of `keys`, every key a hit: the count
/// most calls of 7 make (see [`usual`]).
fn allocations(client: &Client, keys: &[String]) -> usize {
    usual(|| {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let got = client.get_multi(keys);
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
        after - before
    })
}

/// `n` of `keys`, taken from each server's share in turn, so that every server gets at least
/// two (or all it has). The first 40 of 100 keys would leave a server one key, or none, now and
/// then (the ring follows the servers' ports, which are free ones): one key's retrieval makes
/// fewer allocations than many keys', and a server with none makes none.
fn spread(ring: &memshard::Ring, keys: &[String], n: usize) -> Vec<String> {
    let mut shares: Vec<Vec<&String>> = vec![Vec::new(); ring.servers().len()];
    for k in keys {
        shares[ring.route(k.as_bytes()).expect("routed")].push(k);
    }
    let mut out = Vec::with_capacity(n);
    for round in 0.. {
        if out.len() >= n || shares.iter().all(|s| s.len() <= round) {
            break;
        }
        out.extend(
            shares
                .iter()
                .filter_map(|s| s.get(round))
                .map(|k| (*k).clone()),
        );
    }
    out.truncate(n);
    assert!(
        shares.iter().all(|s| s.len() >= 2),
        "every server holds at least two of the keys"
    );
    out
}

/// The count that most of 7 calls of `count` give (the smallest of equally frequent ones),
/// the first call aside as a warm-up: a call now and then makes more (a pooled connection's
/// read buffer is renewed when the values taken from it used it up), which is not the rule.
fn usual(mut count: impl FnMut() -> usize) -> usize {
    let _warm_up = count();
    let mut counts: Vec<usize> = (0..7).map(|_| count()).collect();
    counts.sort_unstable();
    let mut best = (0, usize::MAX);
    for c in &counts {
        let n = counts.iter().filter(|x| *x == c).count();
        if n > best.0 {
            best = (n, *c);
        }
    }
    eprintln!("allocations per call: {counts:?}");
    best.1
}

#[test]
fn a_multi_get_allocates_as_often_for_40_keys_as_for_100_and_not_per_value() {
    blocking();
    #[cfg(feature = "async")]
    nonblocking();
}

fn blocking() {
    for servers in [&[1][..], &[3, 1, 2, 1]] {
        let c = Cluster::on_free_ports(servers);
        let client = Client::builder()
            .server_list(&c.server_list())
            .unwrap()
            .build()
            .unwrap();
        let keys: Vec<String> = (0..1000).map(|i| format!("user:{i}")).collect();
        let items: Vec<(&String, [u8; 32])> = keys.iter().map(|k| (k, [b'v'; 32])).collect();
        for r in client.set_multi(&items, 0, Expiry::NEVER) {
            assert!(r.is_ok(), "{r:?}");
        }
        let forty = allocations(&client, &spread(&client.ring(), &keys[..100], 40));
        let hundred = allocations(&client, &keys[..100]);
        let thousand = allocations(&client, &keys);
        let n = servers.len();
        eprintln!("{n} servers: 40 keys {forty}, 100 keys {hundred}, 1000 keys {thousand}");
        assert_eq!(forty, hundred, "{n} servers");
        #[cfg(feature = "metrics")]
        with_a_recorder(n, hundred, || allocations(&client, &keys[..100]));
        // 1,000 values (55 KB of replies) fill more than one 16 KiB read buffer, and the
        // requests outgrow the write buffer: a few allocations more, not one per value
        assert!(
            thousand < hundred + 20,
            "{n} servers: {thousand} for 1,000 keys"
        );
    }
}

/// With the `metrics` feature, the count of `measure` (`without`: with no recorder installed)
/// again with the Prometheus exporter's recorder installed: its labels are made when the
/// client meets a server, not per call, so at most 2 more (a histogram's sample block now and
/// then).
#[cfg(feature = "metrics")]
fn with_a_recorder(n: usize, without: usize, measure: impl Fn() -> usize) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let with = metrics::with_local_recorder(&recorder, measure);
    eprintln!("{n} servers, 100 keys: {with} with a recorder, {without} without");
    assert!(
        with <= without + 2,
        "{n} servers: {with} with a recorder, {without} without"
    );
}

/// The async client's `get_multi`, as [`allocations`] counts the blocking one's, on a
/// current-thread runtime (no other thread allocates meanwhile).
#[cfg(feature = "async")]
fn nonblocking() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = Cluster::on_free_ports(&[3, 1, 2, 1]);
    let client = rt.block_on(async {
        memshard::aio::Client::builder()
            .server_list(&c.server_list())
            .unwrap()
            .build()
            .unwrap()
    });
    let keys: Vec<String> = (0..100).map(|i| format!("user:{i}")).collect();
    let items: Vec<(&String, [u8; 32])> = keys.iter().map(|k| (k, [b'v'; 32])).collect();
    for r in rt.block_on(client.set_multi(&items, 0, Expiry::NEVER)) {
        assert!(r.is_ok(), "{r:?}");
    }
    let forty_keys = spread(&client.ring(), &keys, 40);
    let count = |n: usize| {
        let asked = if n == 40 { &forty_keys[..] } else { &keys[..n] };
        usual(|| {
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            let got = rt.block_on(client.get_multi(asked));
            let after = ALLOCATIONS.load(Ordering::Relaxed);
            assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
            after - before
        })
    };
    let (forty, hundred) = (count(40), count(100));
    eprintln!("async, 4 servers: 40 keys {forty}, 100 keys {hundred}");
    assert_eq!(forty, hundred, "async, 4 servers");
    #[cfg(feature = "metrics")]
    with_a_recorder(4, hundred, || count(100));
}
