//! Composed routes against real memcached on 127.0.45.x (no other test binary uses those
//! addresses), through both clients:
//!
//! - a prefix route over three pools and a default pool, read from a route file: 10,000
//!   keys of three prefixes and 1,000 others, each counted on the server of its pool;
//! - zone replication over three zones of two servers each: every read served by the local
//!   zone while all are up (counted on the servers), no miss of 10,000 keys written before
//!   the local zone is stopped, writes answered per the acknowledgement policy while it is
//!   down, and no stale read once it is back.

mod common;

use common::servers::{Memcached, require};
use memshard::routes::policy::zones::{Ack, Zone, ZoneRoute};
use memshard::routes::{RouteFile, RouteNode};
use memshard::{Error, Expiry, FailurePolicy};
use std::net::Ipv4Addr;
use std::time::Duration;

const PREFIXES: [&str; 3] = ["session:", "page:", "tenant7:"];
const PER_PREFIX: usize = 10_000 / 3 + 1;
const OTHERS: usize = 1_000;
const ZONE_KEYS: usize = 10_000;

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 45, last)
}

/// The prefix route's file: pool `i` of PREFIXES on 127.0.45.{i+1}, the default on .4.
fn prefix_file(servers: &[Memcached]) -> RouteFile {
    let yaml = format!(
        r#"
pools:
  sessions: {{ servers: ["{}"] }}
  pages: {{ servers: ["{}"] }}
  tenant: {{ servers: ["{}"], protocol: meta }}
  rest: {{ servers: ["{}"] }}
route:
  policy: prefix
  prefixes:
    "session:": sessions
    "page:": pages
    "tenant7:": tenant
  default: rest
"#,
        servers[0].addr(),
        servers[1].addr(),
        servers[2].addr(),
        servers[3].addr()
    );
    RouteFile::parse(&yaml).expect("route file")
}

fn prefixed_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for p in PREFIXES {
        keys.extend((0..PER_PREFIX).map(|i| format!("{p}{i}")));
    }
    keys.extend((0..OTHERS).map(|i| format!("user:{i}")));
    keys
}

fn flush(servers: &[Memcached]) {
    for s in servers {
        s.raw(b"flush_all\r\n", b"OK\r\n");
    }
}

/// Each server holds exactly its pool's keys.
fn assert_items(servers: &[Memcached]) {
    let want = [PER_PREFIX, PER_PREFIX, PER_PREFIX, OTHERS];
    for (s, want) in servers.iter().zip(want) {
        assert_eq!(s.stat("curr_items"), want as u64, "items on {}", s.addr());
    }
}

#[test]
fn a_prefix_route_sends_each_prefix_to_its_pool() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (1..=4)
        .map(|i| Memcached::start(ip(i), 11211, ""))
        .collect();
    let file = prefix_file(&servers);
    let keys = prefixed_keys();
    let router = memshard::Router::from_file(&file).expect("router");

    // half the keys one at a time, half in set_multi batches
    let (one, many) = keys.split_at(keys.len() / 2);
    for k in one {
        router.set(k, k, Expiry::NEVER).expect("set");
    }
    for chunk in many.chunks(500) {
        let items: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), k.as_str())).collect();
        for r in router.set_multi(&items, 0, Expiry::NEVER) {
            r.expect("set_multi");
        }
    }
    assert_items(&servers);
    for chunk in keys.chunks(400) {
        for (k, r) in chunk.iter().zip(router.get_multi(chunk)) {
            let item = r
                .expect("get_multi")
                .unwrap_or_else(|| panic!("{k} missed"));
            assert_eq!(item.value, k.as_bytes());
        }
    }
    assert_eq!(
        router.stats().prefix_defaults,
        2 * OTHERS as u64,
        "set and read once each"
    );
    let deleted = router.delete_multi(&keys[..PER_PREFIX]);
    assert!(deleted.iter().all(|r| r.is_ok()));
    assert_eq!(servers[0].stat("curr_items"), 0);

    flush(&servers);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let router = memshard::aio::Router::from_file(&file).expect("async router");
        for k in one {
            router.set(k, k, Expiry::NEVER).await.expect("set");
        }
        for chunk in many.chunks(500) {
            let items: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), k.as_str())).collect();
            for r in router.set_multi(&items, 0, Expiry::NEVER).await {
                r.expect("set_multi");
            }
        }
        assert_items(&servers);
        for chunk in keys.chunks(400) {
            for (k, r) in chunk.iter().zip(router.get_multi(chunk).await) {
                let item = r
                    .expect("get_multi")
                    .unwrap_or_else(|| panic!("{k} missed"));
                assert_eq!(item.value, k.as_bytes());
            }
        }
    });

    // without a default, a key of no prefix is refused, by name
    let strict = RouteFile::parse(
        &format!(
            "pools:\n  sessions: {{ servers: [\"{}\"] }}\nroute: {{ policy: prefix, prefixes: {{ \"session:\": sessions }} }}\n",
            servers[0].addr()
        ),
    )
    .expect("route file");
    let router = memshard::Router::from_file(&strict).expect("router");
    let e = router.get("user:1");
    assert!(
        matches!(
            e,
            Err(Error::Route {
                route: "prefix",
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(router.stats().unmatched, 1);
}

/// Zone `z` (0, 1, 2)'s two servers.
fn zone_servers(all: &[Memcached], z: usize) -> &[Memcached] {
    &all[z * 2..z * 2 + 2]
}

fn zone_list(all: &[Memcached], z: usize) -> String {
    zone_servers(all, z)
        .iter()
        .map(|s| format!("{}\n", s.addr()))
        .collect()
}

fn zone_route(ack: Ack) -> RouteNode {
    let z = |n: &str| Zone::new(n, RouteNode::pool(n));
    RouteNode::Zones(ZoneRoute::new([z("a"), z("b"), z("c")], "a", ack))
}

/// A zone's settings: a stopped server is noticed within 200 ms and marked down at the first
/// failure, so that reads fall back at once instead of waiting on it key by key.
fn quick<C>(b: memshard::Builder<C>) -> memshard::Builder<C> {
    let t = Duration::from_millis(200);
    b.connect_timeout(t)
        .read_timeout(t)
        .write_timeout(t)
        .failure_policy(FailurePolicy::new(1, Duration::from_millis(300), false))
}

fn zone_key(i: usize) -> String {
    format!("z:{i}")
}

fn hits(servers: &[Memcached]) -> u64 {
    servers.iter().map(|s| s.stat("get_hits")).sum()
}

/// What the zone test runs on: the blocking or the async router, behind one face.
trait Zoned {
    fn set_all(&self, keys: &[String], value: &str);
    fn read_all(&self, keys: &[String]) -> Vec<Option<Vec<u8>>>;
    fn set_one(&self, key: &str, value: &str) -> memshard::Result<()>;
    /// Servers held out of the route's pools (down, or not yet cleaned after a repair).
    fn down(&self) -> usize;
}

impl Zoned for memshard::Router {
    fn set_all(&self, keys: &[String], value: &str) {
        for chunk in keys.chunks(500) {
            let items: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), value)).collect();
            for r in self.set_multi(&items, 0, Expiry::NEVER) {
                r.expect("set_multi");
            }
        }
    }

    fn read_all(&self, keys: &[String]) -> Vec<Option<Vec<u8>>> {
        keys.chunks(500)
            .flat_map(|c| self.get_multi(c))
            .map(|r| r.expect("get_multi").map(|i| i.value.to_vec()))
            .collect()
    }

    fn set_one(&self, key: &str, value: &str) -> memshard::Result<()> {
        self.set(key, value, Expiry::NEVER).map(drop)
    }

    fn down(&self) -> usize {
        let pools = self
            .pool_names()
            .into_iter()
            .filter_map(|n| self.pool_named(n));
        pools.map(|p| p.down_servers().len()).sum()
    }
}

/// The async router, driven on its runtime.
struct Async(memshard::aio::Router, tokio::runtime::Runtime);

impl Zoned for Async {
    fn set_all(&self, keys: &[String], value: &str) {
        self.1.block_on(async {
            for chunk in keys.chunks(500) {
                let items: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), value)).collect();
                for r in self.0.set_multi(&items, 0, Expiry::NEVER).await {
                    r.expect("set_multi");
                }
            }
        })
    }

    fn read_all(&self, keys: &[String]) -> Vec<Option<Vec<u8>>> {
        self.1.block_on(async {
            let mut out = Vec::new();
            for c in keys.chunks(500) {
                for r in self.0.get_multi(c).await {
                    out.push(r.expect("get_multi").map(|i| i.value.to_vec()));
                }
            }
            out
        })
    }

    fn set_one(&self, key: &str, value: &str) -> memshard::Result<()> {
        self.1
            .block_on(self.0.set(key, value, Expiry::NEVER))
            .map(drop)
    }

    fn down(&self) -> usize {
        let r = &self.0;
        let pools = r.pool_names().into_iter().filter_map(|n| r.pool_named(n));
        pools.map(|p| p.down_servers().len()).sum()
    }
}

/// The zone scenario on `route` (quorum) and `all` (every zone must take a write).
fn zone_scenario(servers: &[Memcached], route: &dyn Zoned, all: &dyn Zoned, tag: &str) {
    let keys: Vec<String> = (0..ZONE_KEYS).map(zone_key).collect();
    route.set_all(&keys, tag);
    for z in 0..3 {
        let items: u64 = zone_servers(servers, z)
            .iter()
            .map(|s| s.stat("curr_items"))
            .sum();
        assert_eq!(
            items, ZONE_KEYS as u64,
            "every zone holds every key (zone {z})"
        );
    }

    // all up: reads are the local zone's
    let before: Vec<u64> = (0..3).map(|z| hits(zone_servers(servers, z))).collect();
    let got = route.read_all(&keys);
    assert!(got.iter().all(|v| v.as_deref() == Some(tag.as_bytes())));
    let after: Vec<u64> = (0..3).map(|z| hits(zone_servers(servers, z))).collect();
    assert_eq!(
        [
            after[0] - before[0],
            after[1] - before[1],
            after[2] - before[2]
        ],
        [ZONE_KEYS as u64, 0, 0],
        "reads served by the local zone"
    );

    // the local zone stopped: no read is lost
    for s in zone_servers(servers, 0) {
        s.signal("STOP");
    }
    let got = route.read_all(&keys);
    let misses = got.iter().filter(|v| v.is_none()).count();
    let wrong = got
        .iter()
        .filter(|v| v.as_deref().is_some_and(|v| v != tag.as_bytes()))
        .count();
    assert_eq!((misses, wrong), (0, 0), "reads with the local zone stopped");

    // writes while it is down: a quorum (2 of 3) is met, all is not
    let fresh = format!("{tag}-new");
    for k in &keys[..100] {
        route
            .set_one(k, &fresh)
            .expect("quorum write with a zone down");
    }
    let e = all.set_one(&keys[100], &fresh);
    assert!(
        matches!(&e, Err(Error::Route { route: "zones", reason, .. }) if reason.contains("needs 3")),
        "{e:?}"
    );

    // back: the zone that missed the writes is not read before it is repaired
    for s in zone_servers(servers, 0) {
        s.signal("CONT");
    }
    std::thread::sleep(Duration::from_millis(400));
    let got = route.read_all(&keys[..100]);
    assert!(
        got.iter().all(|v| v.as_deref() == Some(fresh.as_bytes())),
        "a stale value from the zone that was stopped"
    );
    // The stopped zone's servers are cleaned twice before they rejoin; a cleaning still to
    // come would delete keys the next scenario writes.
    common::wait_until("the stopped zone rejoins", Duration::from_secs(30), || {
        route.down() + all.down() == 0
    });
    for s in servers {
        s.raw(b"flush_all\r\n", b"OK\r\n");
    }
}

#[test]
fn zones_read_locally_lose_no_read_and_acknowledge_as_told() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (11..=16)
        .map(|i| Memcached::start(ip(i), 11211, ""))
        .collect();
    let pools = |b: &dyn Fn(&str) -> memshard::Client| {
        (0..3)
            .map(|z| (["a", "b", "c"][z], b(&zone_list(&servers, z))))
            .collect::<Vec<_>>()
    };
    let blocking = |list: &str| {
        quick(memshard::Client::builder().server_list(list).expect("list"))
            .build()
            .expect("client")
    };
    let route =
        memshard::Router::compose(&zone_route(Ack::Quorum), pools(&blocking)).expect("route");
    let all = memshard::Router::compose(&zone_route(Ack::All), pools(&blocking)).expect("route");
    zone_scenario(&servers, &route, &all, "blocking");
    let s = route.stats();
    assert!(s.zone_fallback_hits >= ZONE_KEYS as u64, "{s:?}");
    assert_eq!(all.stats().zone_short_writes, 1);

    let rt = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let make = |ack: Ack| {
        let rt = rt();
        let router = rt.block_on(async {
            let pools: Vec<(&str, memshard::aio::Client)> = (0..3)
                .map(|z| {
                    let b = memshard::aio::Client::builder()
                        .server_list(&zone_list(&servers, z))
                        .expect("list");
                    (["a", "b", "c"][z], quick(b).build().expect("client"))
                })
                .collect();
            memshard::aio::Router::compose(&zone_route(ack), pools).expect("route")
        });
        Async(router, rt)
    };
    let (route, all) = (make(Ack::Quorum), make(Ack::All));
    zone_scenario(&servers, &route, &all, "async");
    assert_eq!(all.0.stats().zone_short_writes, 1);
}
