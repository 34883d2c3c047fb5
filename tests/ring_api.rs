//! Ring API properties: empty input, the distinct-server walk, point counts, sharing across
//! threads, and routing without heap allocation (counted by a global allocator).

mod common;

use memshard::{FLAVORS, Flavor, HashTag, Ring, RingError, Server};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static COUNT_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

// SAFETY: forwards to the system allocator; only counts calls made on a thread that asked.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNT_HERE.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn servers(n: usize) -> Vec<Server> {
    (0..n)
        .map(|i| {
            Server::new(
                format!("10.1.{}.{}", i / 200, i % 200 + 1),
                11211 + (i % 3) as u16,
            )
            .with_weight(1 + i as u32 % 4)
        })
        .collect()
}

/// Every flavour (the loops below must not pass by running over nothing).
fn flavors() -> &'static [(&'static str, Flavor)] {
    assert_eq!(FLAVORS.len(), 18, "{FLAVORS:?}");
    FLAVORS
}

#[test]
fn empty_server_list_is_an_error_not_a_panic() {
    for &(_, f) in flavors() {
        assert!(matches!(Ring::new(vec![], f), Err(RingError::NoServers)));
    }
}

#[test]
fn distinct_walk_starts_at_the_owner_and_visits_every_server_with_points_once() {
    for &(name, f) in flavors() {
        for n in [1, 2, 5, 40] {
            let ring = Ring::new(servers(n), f).unwrap();
            // modulo and rendezvous have no points: every server is in the walk
            let with_points = if f.is_ketama() {
                ring.point_counts().iter().filter(|&&c| c > 0).count()
            } else {
                n
            };
            assert!(with_points >= 1, "{name}");
            for i in 0..50 {
                let key = format!("walk:{i}");
                let walk: Vec<&Server> = ring.distinct_servers(key.as_bytes()).collect();
                assert_eq!(walk.len(), with_points, "{name} n={n}");
                assert_eq!(
                    walk[0],
                    ring.server_for(key.as_bytes()).unwrap(),
                    "{name} n={n} {key}"
                );
                let mut addrs: Vec<&str> = walk.iter().map(|s| s.addr.as_str()).collect();
                addrs.sort();
                addrs.dedup();
                assert_eq!(addrs.len(), walk.len(), "{name}: a server repeated");
            }
        }
    }
}

#[test]
fn point_counts_follow_each_peers_arithmetic() {
    // Counts observed in the peers while making compat-vectors/: nutcracker 0.5.0 and
    // spymemcached 2.12.3 give 156 points per server at 25 equal weights (single-float
    // arithmetic) and 228/128/120 for weights 29/16/15; uhashring 2.1 gives 160 (exact
    // integers); dalli 3.0.6 gives 232/128/120.
    let eq: Vec<Server> = (0..25)
        .map(|i| Server::new(format!("10.0.0.{i}"), 11211))
        .collect();
    assert_eq!(
        Ring::new(eq.clone(), Flavor::Libmemcached)
            .unwrap()
            .point_counts(),
        &[156; 25]
    );
    assert_eq!(
        Ring::new(eq, Flavor::Uhashring).unwrap().point_counts(),
        &[160; 25]
    );
    let w: Vec<Server> = [29, 16, 15]
        .iter()
        .enumerate()
        .map(|(i, &w)| Server::new(format!("10.0.0.{i}"), 11211).with_weight(w))
        .collect();
    assert_eq!(
        Ring::new(w.clone(), Flavor::Twemproxy)
            .unwrap()
            .point_counts(),
        &[228, 128, 120]
    );
    assert_eq!(
        Ring::new(w.clone(), Flavor::Uhashring)
            .unwrap()
            .point_counts(),
        &[232, 128, 120]
    );
    assert_eq!(
        Ring::new(w, Flavor::Dalli).unwrap().point_counts(),
        &[232, 128, 120]
    );
}

/// One ring shared by four threads routes every key of a committed libmemcached case (made by
/// running libmemcached 1.1.4) to the server libmemcached picked.
#[test]
fn ring_is_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Ring>();
    let case = common::compat_case("libmemcached/cases/w-n10-random-weights");
    assert_eq!(case.meta["flavor"], "libmemcached");
    assert_eq!(case.expected.len(), 1000);
    let servers = memshard::parse_server_list(&case.servers).unwrap();
    let ring = std::sync::Arc::new(Ring::new(servers, Flavor::Libmemcached).unwrap());
    let checked = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (ring, case, checked) = (ring.clone(), &case, &checked);
            s.spawn(move || {
                for (k, addr) in &case.expected {
                    assert_eq!(&ring.server_for(k).unwrap().addr, addr, "{k:?}");
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(checked.load(Ordering::Relaxed), 4000);
}

#[test]
fn routing_allocates_nothing() {
    let keys: Vec<Vec<u8>> = (0..2000)
        .map(|i| format!("user:{i}:{}", "x".repeat(i % 300)).into_bytes())
        .collect();
    for &(name, f) in flavors() {
        let ring =
            Ring::with_options(servers(100), f, None, Some(HashTag::new(b'{', b'}'))).unwrap();
        // the counter counts: an allocation made while counting is seen
        ALLOCS.store(0, Ordering::Relaxed);
        COUNT_HERE.with(|c| c.set(true));
        std::hint::black_box(Vec::<u8>::with_capacity(1));
        COUNT_HERE.with(|c| c.set(false));
        assert_eq!(
            ALLOCS.load(Ordering::Relaxed),
            1,
            "the counting allocator is in use"
        );
        ALLOCS.store(0, Ordering::Relaxed);
        COUNT_HERE.with(|c| c.set(true));
        let mut sum = 0usize;
        for k in &keys {
            sum = sum.wrapping_add(ring.route(k).unwrap());
        }
        COUNT_HERE.with(|c| c.set(false));
        assert_eq!(
            ALLOCS.load(Ordering::Relaxed),
            0,
            "{name} allocated while routing"
        );
        std::hint::black_box(sum);
    }
}

#[test]
fn route_each_equals_route_for_every_flavor_key_length_and_tag() {
    let keys: Vec<Vec<u8>> = (0..403)
        .map(|i| {
            let mut k = format!("k{i}:{}", "é".repeat(i % 40)).into_bytes();
            if i % 7 == 0 {
                k.extend_from_slice(b"{tag}");
            }
            k
        })
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    for &(name, f) in flavors() {
        for tag in [None, Some(HashTag::new(b'{', b'}'))] {
            let ring = Ring::with_options(servers(13), f, None, tag).unwrap();
            let mut seen = 0;
            ring.route_each(&refs, |i, s| {
                assert_eq!(Some(s), ring.route(refs[i]), "{name} key {i}");
                seen += 1;
            });
            assert_eq!(seen, refs.len());
        }
    }
}
