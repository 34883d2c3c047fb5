//! The cost of switching keys from one pool to another: a cold switch against a warm-up
//! route ([`Router::warm_up`](crate::Router::warm_up)), on the user's keys.
//!
//! A key keeps its cached value across the switch only when its copy stays: the same server
//! (address as written) and the same key as sent (prefix included). Every other key is a
//! miss after a cold switch. A warm-up route turns each of those misses into one read of the
//! old pool and one `add` into the new pool, the first time the key is read; keys absent from
//! both pools miss either way (and a moved one costs the route one extra read of the old
//! pool).

use super::Keys;
use crate::ring::Ring;
use std::collections::HashMap;

/// A pool as placement sees it: its ring, and the prefix its client puts in front of keys.
#[derive(Clone, Copy, Debug)]
pub struct PoolPlacement<'r> {
    /// The ring.
    pub ring: &'r Ring,
    /// The key prefix (empty: none).
    pub prefix: &'r [u8],
    /// Placement hashes the prefix and the key (libmemcached `--HASH-WITH-NAMESPACE`).
    pub hash_with_prefix: bool,
}

impl<'r> PoolPlacement<'r> {
    /// A pool over `ring` without a prefix.
    pub fn new(ring: &'r Ring) -> PoolPlacement<'r> {
        PoolPlacement {
            ring,
            prefix: &[],
            hash_with_prefix: false,
        }
    }

    /// This pool with key prefix `prefix` (hashed with the key when `hashed`).
    pub fn with_prefix(self, prefix: &'r [u8], hashed: bool) -> PoolPlacement<'r> {
        PoolPlacement {
            prefix,
            hash_with_prefix: hashed,
            ..self
        }
    }

    /// The server index of `key` (what placement hashes: the key, or prefix and key).
    fn owner(&self, key: &[u8], scratch: &mut Vec<u8>) -> Option<usize> {
        if self.hash_with_prefix && !self.prefix.is_empty() {
            scratch.clear();
            scratch.extend_from_slice(self.prefix);
            scratch.extend_from_slice(key);
            self.ring.route(scratch)
        } else {
            self.ring.route(key)
        }
    }
}

/// Keys per server.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ServerLoad {
    /// The server's address as written.
    pub addr: String,
    /// Keys.
    pub keys: u64,
    /// `keys` over all the keys planned.
    pub share: f64,
}

/// What a cold switch costs, and what a warm-up route costs instead ([`plan_migration`]).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct MigrationPlan {
    /// Keys planned.
    pub keys: u64,
    /// Keys whose copy stays (same server, same key as sent): both pools read and write it.
    pub same_copy: u64,
    /// Keys whose copy changes (another server, or another key as sent).
    pub moved: u64,
    /// `moved / keys`.
    pub moved_share: f64,
    /// Of the moved keys, those whose server stays but whose key as sent changes (prefix).
    pub moved_by_prefix: u64,
    /// Cold switch: the keys that miss on their first read after it (every moved key that
    /// was cached) and their share; each is a read from the database.
    pub cold_misses: u64,
    /// `cold_misses / keys`.
    pub cold_miss_share: f64,
    /// Warm-up route: the keys that miss on their first read because of the switch: none;
    /// only keys absent from both pools miss, as they would without a switch.
    pub warm_misses: u64,
    /// Warm-up route: reads of the old pool during the first pass, one per moved key.
    pub fallback_reads: u64,
    /// Warm-up route: `add`s into the new pool during the first pass, one per moved key.
    pub backfills: u64,
    /// The fallback reads by old server, in the old pool's server order.
    pub fallback_reads_by_server: Vec<ServerLoad>,
    /// The backfills by new server, in the new pool's server order.
    pub backfills_by_server: Vec<ServerLoad>,
}

/// What switching `keys` from pool `old` to pool `new` costs: cold, and with a warm-up route.
/// Each key is assumed cached in the old pool (the user's sample of live keys). A key keeps
/// its cached value across a cold switch only when its copy stays: the same server (address
/// as written) and the same key as sent (prefix included). A warm-up route turns each other
/// key's miss into one read of the old pool and one `add` into the new pool, the first time
/// the key is read; keys absent from both pools miss either way.
///
/// ```
/// use memshard::plan::{Keys, PoolPlacement, plan_migration};
/// use memshard::{Flavor, KeyHash, Ring, Server};
/// let servers: Vec<Server> = (1..=4).map(|i| Server::new(format!("10.0.0.{i}"), 11211)).collect();
/// let old = Ring::with_options(servers.clone(), Flavor::Twemproxy, Some(KeyHash::Fnv1a_64), None)?;
/// let new = Ring::with_options(servers, Flavor::Libmemcached, Some(KeyHash::Md5), None)?;
/// let p = plan_migration(PoolPlacement::new(&old), PoolPlacement::new(&new), &Keys::Synthetic(10_000));
/// assert_eq!(p.moved + p.same_copy, 10_000);
/// assert!(p.moved_share > 0.6, "a hash switch moves most keys");
/// assert_eq!((p.warm_misses, p.fallback_reads, p.backfills), (0, p.moved, p.moved));
/// # Ok::<(), memshard::RingError>(())
/// ```
pub fn plan_migration(
    old: PoolPlacement<'_>,
    new: PoolPlacement<'_>,
    keys: &Keys,
) -> MigrationPlan {
    let (so, sn) = (old.ring.servers(), new.ring.servers());
    // servers are compared by address as written, as the route compares copies
    let by_addr: HashMap<&str, usize> = sn
        .iter()
        .enumerate()
        .map(|(i, s)| (s.addr.as_str(), i))
        .collect();
    let old_to_new: Vec<Option<usize>> = so
        .iter()
        .map(|s| by_addr.get(s.addr.as_str()).copied())
        .collect();
    let same_wire = old.prefix == new.prefix;
    let (mut reads, mut fills) = (vec![0u64; so.len()], vec![0u64; sn.len()]);
    let (mut same, mut by_prefix) = (0u64, 0u64);
    let (mut scratch, mut key) = (Vec::new(), Vec::new());
    let mut one = |k: &[u8]| {
        let (Some(o), Some(n)) = (old.owner(k, &mut scratch), new.owner(k, &mut scratch)) else {
            return;
        };
        let same_server = old_to_new[o] == Some(n);
        if same_server && same_wire {
            same += 1;
        } else {
            by_prefix += u64::from(same_server);
            reads[o] += 1;
            fills[n] += 1;
        }
    };
    match keys {
        Keys::Synthetic(n) => {
            for i in 0..*n {
                use std::io::Write;
                key.clear();
                let _ = write!(key, "key:{i}");
                one(&key);
            }
        }
        Keys::List(v) => v.iter().for_each(|k| one(k)),
    }
    let total = keys.len();
    let share = |n: u64| n as f64 / total.max(1) as f64;
    let moved = total - same;
    let load = |servers: &[crate::Server], counts: Vec<u64>| {
        servers
            .iter()
            .zip(counts)
            .map(|(s, keys)| ServerLoad {
                addr: s.addr.clone(),
                keys,
                share: share(keys),
            })
            .collect()
    };
    MigrationPlan {
        keys: total,
        same_copy: same,
        moved,
        moved_share: share(moved),
        moved_by_prefix: by_prefix,
        cold_misses: moved,
        cold_miss_share: share(moved),
        warm_misses: 0,
        fallback_reads: moved,
        backfills: moved,
        fallback_reads_by_server: load(so, reads),
        backfills_by_server: load(sn, fills),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Flavor, KeyHash, Server};

    fn servers(n: u8) -> Vec<Server> {
        (1..=n)
            .map(|i| Server::new(format!("10.0.0.{i}"), 11211))
            .collect()
    }

    fn keys(n: usize) -> Keys {
        Keys::List((0..n).map(|i| format!("user:{i}").into_bytes()).collect())
    }

    #[test]
    fn the_same_ring_moves_nothing() {
        let r = Ring::new(servers(4), Flavor::Libmemcached).expect("ring");
        let p = plan_migration(PoolPlacement::new(&r), PoolPlacement::new(&r), &keys(5000));
        assert_eq!((p.same_copy, p.moved, p.cold_misses), (5000, 0, 0));
        assert_eq!(
            p.fallback_reads_by_server
                .iter()
                .map(|s| s.keys)
                .sum::<u64>(),
            0
        );
    }

    #[test]
    fn moved_keys_are_counted_per_key_and_per_server() {
        let old = Ring::with_options(servers(4), Flavor::Twemproxy, Some(KeyHash::Fnv1a_64), None)
            .expect("ring");
        let new = Ring::with_options(servers(5), Flavor::Libmemcached, Some(KeyHash::Md5), None)
            .expect("ring");
        let ks = keys(20_000);
        let p = plan_migration(PoolPlacement::new(&old), PoolPlacement::new(&new), &ks);
        let Keys::List(list) = &ks else {
            unreachable!()
        };
        // key by key, as a route compares copies
        let moved = list
            .iter()
            .filter(|k| old.server_for(k).map(|s| &s.addr) != new.server_for(k).map(|s| &s.addr))
            .count() as u64;
        assert_eq!(p.moved, moved);
        assert_eq!(p.same_copy + p.moved, 20_000);
        assert!((p.moved_share - moved as f64 / 20_000.0).abs() < 1e-12);
        assert_eq!(
            (p.cold_misses, p.fallback_reads, p.backfills),
            (moved, moved, moved)
        );
        assert_eq!(p.warm_misses, 0);
        let reads: u64 = p.fallback_reads_by_server.iter().map(|s| s.keys).sum();
        let fills: u64 = p.backfills_by_server.iter().map(|s| s.keys).sum();
        assert_eq!((reads, fills), (moved, moved));
        assert_eq!(p.backfills_by_server.len(), 5);
        // the fifth server is new: every key it owns is a backfill
        let fifth = list.iter().filter(|k| new.route(k) == Some(4)).count() as u64;
        assert_eq!(p.backfills_by_server[4].keys, fifth);
        assert_eq!(p.moved_by_prefix, 0);
    }

    #[test]
    fn a_prefix_change_moves_every_key() {
        let r = Ring::new(servers(3), Flavor::Libmemcached).expect("ring");
        let p = plan_migration(
            PoolPlacement::new(&r),
            PoolPlacement::new(&r).with_prefix(b"v2:", false),
            &keys(1000),
        );
        assert_eq!((p.moved, p.moved_by_prefix), (1000, 1000));
        // hashed with the prefix: the servers change too
        let h = plan_migration(
            PoolPlacement::new(&r),
            PoolPlacement::new(&r).with_prefix(b"v2:", true),
            &keys(1000),
        );
        assert_eq!(h.moved, 1000);
        assert!(h.moved_by_prefix < 1000);
    }
}
