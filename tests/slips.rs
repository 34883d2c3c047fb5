//! Slips of issue 14, each with the behaviour it must have; no server is contacted (clients are
//! built on loopback addresses nobody listens on, and building opens no connection).
//!
//! (a) `Client::plan_servers` planned on rings built with `Ring::with_options`, dropping the
//!     point hash of a client built from a libmemcached configuration whose `--HASH` comes after
//!     its servers: the plan's figures were those of another ring than the one the client
//!     routes on.

use memshard::plan::{Keys, Method, Plan, plan_ring};
use memshard::{Client, Flavor, KeyHash, Ring, Server};
use std::collections::HashMap;
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
