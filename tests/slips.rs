//! Slips, each with the behaviour it must have; no server is contacted (clients are
//! built on loopback addresses nobody listens on, and building opens no connection).
//!
//! (a) `Client::plan_servers` planned on rings built with `Ring::with_options`, dropping the
//!     point hash of a client built from a libmemcached configuration whose `--HASH` comes after
//!     its servers: the plan's figures were those of another ring than the one the client
//!     routes on.
//! (c) With `hash_with_prefix`, the client places `prefix + key`, but `plan_servers` planned
//!     the bare keys (982 planned moves against 1,033 actual of 5,000 keys).
//! (b) A weight of 0 (or a total weight of 0) is refused with `RingError::ZeroWeight`, naming the
//!     first such server, by every flavor and every way a ring is built or planned; nothing
//!     panics.

use memshard::plan::{Keys, Method, Plan, RingChoice, plan, plan_ring};
use memshard::{Client, FLAVORS, Flavor, KeyHash, Ring, RingError, Server};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicU64;

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("user:{i}").into_bytes()).collect()
}

/// Keys per server address and the keys whose server address changed, counted on two rings.
fn actual_change(before: &Ring, after: &Ring, keys: &[Vec<u8>]) -> (HashMap<String, u64>, u64) {
    let mut after_counts = HashMap::new();
    let mut moved = 0;
    for k in keys {
        let (b, a) = (before.server_for(k).unwrap(), after.server_for(k).unwrap());
        *after_counts.entry(a.addr.clone()).or_default() += 1;
        moved += u64::from(a.addr != b.addr);
    }
    (after_counts, moved)
}

/// The ketama figures of a plan, per server address.
fn planned(p: &Plan) -> (HashMap<String, u64>, HashMap<String, u64>, u64) {
    let k = p
        .methods
        .iter()
        .find(|m| m.method == Method::Ketama)
        .unwrap();
    let per = |counts: &[u64]| -> HashMap<String, u64> {
        p.servers
            .iter()
            .zip(counts)
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| (s.addr.clone(), *n))
            .collect()
    };
    (per(&k.keys_before), per(&k.keys_after), k.moved)
}

fn counts(ring: &Ring, keys: &[Vec<u8>]) -> HashMap<String, u64> {
    let mut c = HashMap::new();
    for k in keys {
        *c.entry(ring.server_for(k).unwrap().addr.clone())
            .or_default() += 1;
    }
    c
}

/// libmemcached builds an unweighted ring when a server is added, with the hash in effect then
/// (one-at-a-time here); a later `--HASH=FNV1A_32` changes only the key hash: the builder's
/// `point_hash` (what `Builder::peer_config` sets from such a string, see the next test). The
/// client routes on that ring; its plan must be about that ring and the one `set_servers`
/// builds.
#[test]
fn plan_servers_plans_the_ring_the_client_routes_on() {
    let client = Client::builder()
        .servers((1..=4).map(|i| Server::new(format!("127.0.0.{i}"), 1)))
        .flavor(Flavor::LibmemcachedUnweighted)
        .hash(KeyHash::Fnv1a_32)
        .point_hash(KeyHash::OneAtATime)
        .build()
        .unwrap();
    let before = client.ring();
    assert_eq!(before.point_hash(), KeyHash::OneAtATime);
    // the point hash matters: the same list with points hashed by the key hash places
    // thousands of these keys elsewhere
    let keys = keys(20_000);
    let plain = Ring::with_options(
        before.servers().to_vec(),
        before.flavor(),
        Some(before.key_hash()),
        None,
    )
    .unwrap();
    assert!(
        keys.iter()
            .filter(|k| plain.server_for(k).unwrap().addr != before.server_for(k).unwrap().addr)
            .count()
            > 1_000
    );

    let mut new_list = before.servers().to_vec();
    new_list.remove(1);
    new_list.push(Server::new("127.0.0.5", 1));
    let p = client
        .plan_servers(&new_list, &Keys::List(keys.clone()))
        .unwrap();
    client.set_servers(new_list.clone()).unwrap();
    let after = client.ring();
    assert_eq!(after.point_hash(), KeyHash::OneAtATime);

    let (plan_before, plan_after, plan_moved) = planned(&p);
    let (after_counts, moved) = actual_change(&before, &after, &keys);
    assert_eq!(
        plan_before,
        counts(&before, &keys),
        "keys per server before"
    );
    assert_eq!(plan_after, after_counts, "keys per server after");
    assert_eq!(plan_moved, moved, "keys moved");

    // the same figures from the library's ring form of the planner
    let q = plan_ring(
        &before,
        &new_list,
        &Keys::List(keys.clone()),
        2,
        &AtomicU64::new(0),
    )
    .unwrap();
    assert_eq!(planned(&q), planned(&p));
}

/// The configuration of the test above, as libmemcached users write it.
#[cfg(feature = "peer-config")]
#[test]
fn a_libmemcached_hash_after_the_servers_changes_only_the_key_hash() {
    let cfg = memshard::config::libmemcached(
        "--DISTRIBUTION=consistent --SERVER=127.0.0.1:1 --SERVER=127.0.0.2:1 \
         --SERVER=127.0.0.3:1 --SERVER=127.0.0.4:1 --HASH=FNV1A_32",
    )
    .unwrap();
    assert_eq!(cfg.flavor, Flavor::LibmemcachedUnweighted);
    assert_eq!(cfg.hash, KeyHash::Fnv1a_32);
    assert_eq!(cfg.point_hash, Some(KeyHash::OneAtATime));
    let ring = Client::builder().peer_config(cfg).build().unwrap().ring();
    assert_eq!(ring.key_hash(), KeyHash::Fnv1a_32);
    assert_eq!(ring.point_hash(), KeyHash::OneAtATime);
}

fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| panic!("{what}: panicked"))
}

fn zero_weight(what: &str, r: Result<impl std::fmt::Debug, RingError>, server: &str) {
    match r {
        Err(RingError::ZeroWeight { server: s }) => assert_eq!(s, server, "{what}"),
        other => panic!("{what}: expected ZeroWeight for {server}, got {other:?}"),
    }
}

/// Every flavor, every way to build or plan a ring: a weight of 0 anywhere in the list (all
/// of them, the first, the last, beside a weight that would ask for too many points) is
/// `ZeroWeight` naming the first server of weight 0, never a panic, a division by zero or a
/// ring that places keys on it.
#[test]
fn weight_zero_is_refused_by_every_flavor_and_every_path() {
    let s = |i: u8, w: u32| Server::new(format!("127.0.3.{i}"), 11211).with_weight(w);
    let lists: Vec<(Vec<Server>, &str)> = vec![
        (vec![s(1, 0)], "127.0.3.1:11211"),
        (vec![s(1, 0), s(2, 0)], "127.0.3.1:11211"),
        (vec![s(1, 0), s(2, 5)], "127.0.3.1:11211"),
        (vec![s(1, 5), s(2, 1), s(3, 0)], "127.0.3.3:11211"),
        (vec![s(1, u32::MAX), s(2, 0)], "127.0.3.2:11211"),
    ];
    let good = vec![s(7, 1), s(8, 2)];
    let few = Keys::Synthetic(100);
    for &(name, f) in FLAVORS {
        let good_ring = Ring::new(good.clone(), f).unwrap();
        let choice = RingChoice {
            flavor: f,
            hash: None,
            tag: None,
        };
        for (list, first_zero) in &lists {
            let what = |how: &str| format!("{name} {how} {list:?}");
            zero_weight(
                &what("new"),
                no_panic(&what("new"), || Ring::new(list.clone(), f)),
                first_zero,
            );
            zero_weight(
                &what("with_point_hash"),
                no_panic(&what("with_point_hash"), || {
                    Ring::with_point_hash(list.clone(), f, None, Some(KeyHash::Crc32), None)
                }),
                first_zero,
            );
            zero_weight(
                &what("with_servers"),
                no_panic(&what("with_servers"), || {
                    good_ring.with_servers(list.clone())
                }),
                first_zero,
            );
            zero_weight(
                &what("plan to"),
                no_panic(&what("plan to"), || {
                    plan(&good, list, choice, &few, 1, &AtomicU64::new(0))
                }),
                first_zero,
            );
            zero_weight(
                &what("plan from"),
                no_panic(&what("plan from"), || {
                    plan(list, &good, choice, &few, 1, &AtomicU64::new(0))
                }),
                first_zero,
            );
            zero_weight(
                &what("plan_ring"),
                no_panic(&what("plan_ring"), || {
                    plan_ring(&good_ring, list, &few, 1, &AtomicU64::new(0))
                }),
                first_zero,
            );
            let client = Client::builder()
                .servers(good.clone())
                .flavor(f)
                .build()
                .unwrap();
            match no_panic(&what("plan_servers"), || client.plan_servers(list, &few)) {
                Err(memshard::Error::Ring(RingError::ZeroWeight { server })) => {
                    assert_eq!(&server, first_zero, "{}", what("plan_servers"))
                }
                other => panic!("{}: {other:?}", what("plan_servers")),
            }
            match no_panic(&what("set_servers"), || client.set_servers(list.clone())) {
                Err(memshard::Error::Ring(RingError::ZeroWeight { server })) => {
                    assert_eq!(&server, first_zero, "{}", what("set_servers"))
                }
                other => panic!("{}: {other:?}", what("set_servers")),
            }
            // the refused list left the client on its ring
            assert_eq!(client.ring().servers(), &good[..]);
        }
        // The per-server arithmetic itself, with a weight of 0 and a total of 0 (what a list
        // of weights 0 would give it): no panic, and no digests for a weighted flavor.
        for (w, total) in [(0u32, 0u64), (0, 7)] {
            let d = no_panic(name, || f.digests(w, total, 2));
            // only these ignore weights (a fixed number of point names per server)
            if !matches!(
                f,
                Flavor::LibmemcachedUnweighted | Flavor::Spymemcached | Flavor::AwsJavaKetama
            ) {
                assert_eq!(d, 0, "{name}: digests({w}, {total}, 2)");
            }
        }
    }
    // uhashring's and hash_ring's exact arithmetic, a total of 0: 0, not a division by zero
    assert_eq!(memshard::ring::flavor::exact_digests(0, 0, 2), 0);
    assert_eq!(memshard::ring::flavor::exact_digests(5, 0, 2), 0);
    assert_eq!(memshard::ring::flavor::exact_digests(1, 1, 2), 80);
}

/// (c): the plan of a client that hashes its prefix is the change of its own placement.
#[test]
fn plan_servers_hashes_the_keys_as_the_client_places_them() {
    let list: Vec<Server> = (1..=4)
        .map(|i| Server::new(format!("127.0.0.{i}"), 1))
        .collect();
    let client = Client::builder()
        .servers(list.clone())
        .prefix("app1:")
        .hash_with_prefix(true)
        .build()
        .unwrap();
    let keys = keys(5_000);
    let hashed: Vec<Vec<u8>> = keys.iter().map(|k| [&b"app1:"[..], k].concat()).collect();
    let before = client.ring();
    let mut new_list = list;
    new_list.push(Server::new("127.0.0.5", 1));
    let p = client
        .plan_servers(&new_list, &Keys::List(keys.clone()))
        .unwrap();
    let after = before.with_servers(new_list).unwrap();
    let (after_counts, moved) = actual_change(&before, &after, &hashed);
    let (plan_before, plan_after, plan_moved) = planned(&p);
    assert_eq!(
        plan_before,
        counts(&before, &hashed),
        "keys per server before"
    );
    assert_eq!(plan_after, after_counts, "keys per server after");
    assert_eq!(plan_moved, moved, "keys moved");
}

/// scripts/test.sh runs the suite in the `ci` profile, with overflow checks on, and sets
/// MEMSHARD_OVERFLOW_CHECKS=1: there an overflow must panic (a profile that lost the setting
/// fails here). Without the variable (`cargo test --release`, checks off) there is nothing to
/// check, and the test says so on the terminal.
#[test]
fn overflow_checks_are_on_where_the_suite_asks_for_them() {
    if std::env::var_os("MEMSHARD_OVERFLOW_CHECKS").is_none() {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "overflow checks not asked for (MEMSHARD_OVERFLOW_CHECKS unset): not checked"
        );
        return;
    }
    let wrapped =
        std::panic::catch_unwind(|| std::hint::black_box(u8::MAX) + std::hint::black_box(1u8));
    assert!(
        wrapped.is_err(),
        "u8::MAX + 1 gave {wrapped:?}: overflow checks are off in this profile"
    );
}
