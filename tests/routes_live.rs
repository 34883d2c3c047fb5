//! Routes between pools under a verified load, against real memcached on
//! 127.0.18.x (no other test binary uses those addresses).
//!
//! The load: 4 threads, each reading keys chosen at random over all 20,000 and, every 10th
//! operation, writing a key of its own stripe (so each key has one writer) with the next
//! version. A ledger keeps the last acknowledged version of each key. A **wrong value** is a
//! value for another key, or one whose version is below the ledger's when the read started
//! (a stale read). Hit ratios and server counters are compared between runs; nothing here
//! asserts on time (waits are for states, with generous deadlines).
//!
//! - Migration from a twemproxy fnv1a_64 ring to an md5 libmemcached ring over the same 4
//!   servers, and from 4 to 5 servers: one pass of reads after a cold switch against the same
//!   pass through `Router::warm_up`.
//! - Gutter: one main server killed under load, then restarted: the others' load during the
//!   outage against a plain client with auto-eject; stopped and continued (its data intact),
//!   twice within the gutter TTL: no stale read.
//! - Mirror: both servers of pool `a` stopped under load: reads keep succeeding from `b`.
//!
//! Each figure is printed (`cargo test --test routes_live -- --nocapture`).

mod common;

use common::servers::{Memcached, require};
use common::{decode, value_for, wait_until};
use memshard::routes::{ReadPolicy, RouteStats};
use memshard::{Client, Expiry, FailurePolicy, Flavor, Item, KeyHash, Router};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const KEYS: usize = 20_000;
const THREADS: usize = 4;
const WRITE_EVERY: u64 = 10;
const DEADLINE: Duration = Duration::from_secs(60);

fn key(i: usize) -> String {
    format!("route:{i}")
}

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 18, last)
}

/// Servers on port 11211 of 127.0.18.`first`.. (one per address): fixed addresses, so the
/// rings, and the shares of keys that move, are the same on every run.
fn servers(first: u8, n: u8) -> Vec<Memcached> {
    (first..first + n)
        .map(|i| Memcached::start(ip(i), 11211, ""))
        .collect()
}

fn list(servers: &[&Memcached]) -> String {
    servers
        .iter()
        .map(|s| format!("{} 1\n", s.addr()))
        .collect()
}

fn client(servers: &[&Memcached], flavor: Flavor, hash: KeyHash) -> Client {
    Client::builder()
        .server_list(&list(servers))
        .expect("server list")
        .flavor(flavor)
        .hash(hash)
        .build()
        .expect("client")
}

/// A client that notices a stopped server quickly and probes it often: one failure marks it
/// down, probed every 300 ms.
fn quick_client(servers: &[&Memcached], auto_eject: bool) -> Client {
    let t = Duration::from_millis(200);
    Client::builder()
        .server_list(&list(servers))
        .expect("server list")
        .connect_timeout(t)
        .read_timeout(t)
        .write_timeout(t)
        .failure_policy(FailurePolicy::new(
            1,
            Duration::from_millis(300),
            auto_eject,
        ))
        .build()
        .expect("client")
}

/// What the load runs on: a plain client (a cold switch, auto-eject) or a route.
trait Store: Sync {
    fn get(&self, k: &str) -> memshard::Result<Option<Item>>;
    fn set(&self, k: &str, v: &str) -> memshard::Result<()>;
}

impl Store for Client {
    fn get(&self, k: &str) -> memshard::Result<Option<Item>> {
        Client::get(self, k)
    }
    fn set(&self, k: &str, v: &str) -> memshard::Result<()> {
        Client::set(self, k, v, Expiry::NEVER).map(drop)
    }
}

impl Store for Router {
    fn get(&self, k: &str) -> memshard::Result<Option<Item>> {
        Router::get(self, k)
    }
    fn set(&self, k: &str, v: &str) -> memshard::Result<()> {
        Router::set(self, k, v, Expiry::NEVER).map(drop)
    }
}

/// The last acknowledged version of each key, and what the load saw.
struct Load {
    versions: Vec<AtomicU64>,
    reads: AtomicU64,
    hits: AtomicU64,
    wrong: AtomicU64,
    read_errors: AtomicU64,
    writes: AtomicU64,
    write_errors: AtomicU64,
    ops: AtomicU64,
    stop: AtomicBool,
}

/// A snapshot of the load's counters.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    reads: u64,
    hits: u64,
    wrong: u64,
    read_errors: u64,
    writes: u64,
    write_errors: u64,
}

impl Seen {
    fn since(self, before: Seen) -> Seen {
        Seen {
            reads: self.reads - before.reads,
            hits: self.hits - before.hits,
            wrong: self.wrong - before.wrong,
            read_errors: self.read_errors - before.read_errors,
            writes: self.writes - before.writes,
            write_errors: self.write_errors - before.write_errors,
        }
    }

    fn hit_ratio(&self) -> f64 {
        self.hits as f64 / self.reads.max(1) as f64
    }
}

impl Load {
    fn new() -> Load {
        let z = || AtomicU64::new(0);
        Load {
            versions: (0..KEYS).map(|_| z()).collect(),
            reads: z(),
            hits: z(),
            wrong: z(),
            read_errors: z(),
            writes: z(),
            write_errors: z(),
            ops: z(),
            stop: AtomicBool::new(false),
        }
    }

    fn seen(&self) -> Seen {
        let l = |a: &AtomicU64| a.load(Ordering::SeqCst);
        let hits = l(&self.hits);
        Seen {
            reads: l(&self.reads),
            hits,
            wrong: l(&self.wrong),
            read_errors: l(&self.read_errors),
            writes: l(&self.writes),
            write_errors: l(&self.write_errors),
        }
    }

    /// Every key at version 1, written through `c`.
    fn preload(&self, c: &Client) {
        let items: Vec<(String, String)> =
            (0..KEYS).map(|i| (key(i), value_for(&key(i), 1))).collect();
        for chunk in items.chunks(1000) {
            for (r, (k, _)) in c.set_multi(chunk, 0, Expiry::NEVER).into_iter().zip(chunk) {
                r.unwrap_or_else(|e| panic!("preload {k}: {e}"));
            }
        }
        for v in &self.versions {
            v.store(1, Ordering::SeqCst);
        }
    }

    /// One read of key `i`, checked against the ledger.
    fn read(&self, s: &dyn Store, i: usize) {
        let k = key(i);
        let floor = self.versions[i].load(Ordering::SeqCst);
        let found = s.get(&k);
        // reads before hits, and `seen` loads hits before reads: a snapshot never shows more
        // hits than reads
        self.reads.fetch_add(1, Ordering::SeqCst);
        match found {
            Ok(Some(item)) => match decode(&item.value) {
                Some((got, v)) if got == k && v >= floor => {
                    self.hits.fetch_add(1, Ordering::SeqCst);
                }
                other => {
                    eprintln!("wrong value for {k} (ledger at {floor}): {other:?}");
                    self.wrong.fetch_add(1, Ordering::SeqCst);
                }
            },
            Ok(None) => {}
            Err(_) => {
                self.read_errors.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Thread `t`'s operation `n`: a write of a key of its stripe every `WRITE_EVERY`
    /// operations, else a read of any key.
    fn op(&self, s: &dyn Store, t: usize, n: u64, rng: &mut fastrand::Rng) {
        if n % WRITE_EVERY == WRITE_EVERY - 1 {
            let i = rng.usize(..KEYS / THREADS) * THREADS + t;
            let v = self.versions[i].load(Ordering::SeqCst) + 1;
            self.writes.fetch_add(1, Ordering::SeqCst);
            match s.set(&key(i), &value_for(&key(i), v)) {
                Ok(()) => self.versions[i].store(v, Ordering::SeqCst),
                Err(_) => {
                    self.write_errors.fetch_add(1, Ordering::SeqCst);
                }
            }
        } else {
            self.read(s, rng.usize(..KEYS));
        }
        self.ops.fetch_add(1, Ordering::SeqCst);
    }

    /// `per_thread` operations on each thread (reads: one pass over the key count in all).
    fn run(&self, s: &dyn Store, per_thread: u64) -> Seen {
        let before = self.seen();
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(t as u64 + 1);
                    for n in 0..per_thread {
                        self.op(s, t, n, &mut rng);
                    }
                });
            }
        });
        self.seen().since(before)
    }

    /// Run until `stop`, while `during` (on this thread) makes its changes.
    fn run_while(&self, s: &dyn Store, during: impl FnOnce()) -> Seen {
        let before = self.seen();
        self.stop.store(false, Ordering::SeqCst);
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(t as u64 + 100);
                    let mut n = 0;
                    while !self.stop.load(Ordering::SeqCst) {
                        self.op(s, t, n, &mut rng);
                        n += 1;
                    }
                });
            }
            during();
            self.stop.store(true, Ordering::SeqCst);
        });
        self.seen().since(before)
    }

    /// Wait until `n` more operations are done.
    fn wait_ops(&self, n: u64) {
        let until = self.ops.load(Ordering::SeqCst) + n;
        wait_until("load operations", DEADLINE, || {
            self.ops.load(Ordering::SeqCst) >= until
        });
    }

    /// Each key's newest version so far.
    fn versions_now(&self) -> Vec<u64> {
        self.versions
            .iter()
            .map(|v| v.load(Ordering::SeqCst))
            .collect()
    }

    /// Read every key through `s` after the load stopped: stale reads (below the ledger) and
    /// misses.
    fn verify_all(&self, s: &dyn Store) -> (u64, u64) {
        let (mut stale, mut misses) = (0, 0);
        for i in 0..KEYS {
            let k = key(i);
            let want = self.versions[i].load(Ordering::SeqCst);
            match s.get(&k).unwrap_or_else(|e| panic!("verify {k}: {e}")) {
                Some(item) => match decode(&item.value) {
                    Some((got, v)) if got == k && v >= want => {}
                    other => {
                        eprintln!("stale {k}: {other:?}, ledger {want}");
                        stale += 1;
                    }
                },
                None => misses += 1,
            }
        }
        (stale, misses)
    }
}

fn flush(c: &Client) {
    for (s, r) in c.flush_all(None) {
        r.unwrap_or_else(|e| panic!("flush_all {}: {e}", s.addr));
    }
}

/// The share of keys whose copy (server; the keys are sent as they are) is the same on both
/// rings: what a cold switch still hits.
fn same_copy_share(old: &Client, new: &Client) -> f64 {
    let (ro, rn) = (old.ring(), new.ring());
    let same = (0..KEYS)
        .filter(|&i| {
            let k = key(i);
            ro.server_for(k.as_bytes()).map(|s| &s.addr)
                == rn.server_for(k.as_bytes()).map(|s| &s.addr)
        })
        .count();
    same as f64 / KEYS as f64
}

/// A cold switch and a warm-up from `old` to `new` (whose servers include `old`'s), each
/// after a preload through `old`; the figures, the route's counters, and the share a cold
/// switch keeps by placement.
fn cold_and_warm(old: &Client, new: &Client) -> (Seen, Seen, RouteStats, f64) {
    let per_thread = (KEYS / THREADS) as u64 * WRITE_EVERY / (WRITE_EVERY - 1);
    let load = Load::new();
    flush(new);
    load.preload(old);
    let cold = load.run(new, per_thread);

    let load = Load::new();
    flush(new);
    load.preload(old);
    let route = Router::warm_up(new.clone(), old.clone(), Duration::from_secs(3600));
    let warm = load.run(&route, per_thread);
    let (stale, _) = load.verify_all(&route);
    assert_eq!(
        stale, 0,
        "every key read through the route after the warm-up"
    );
    (cold, warm, route.stats(), same_copy_share(old, new))
}

fn report(what: &str, cold: &Seen, warm: &Seen, stats: &RouteStats, kept: f64) {
    println!(
        "{what}: hit ratio over one pass of {} reads: cold switch {:.4} (placement keeps {kept:.4} of the keys), warm-up {:.4}; wrong values cold {} warm {}; read errors {} / {}",
        warm.reads,
        cold.hit_ratio(),
        warm.hit_ratio(),
        cold.wrong,
        warm.wrong,
        cold.read_errors,
        warm.read_errors,
    );
    println!(
        "{what}: route: {} fallback reads, {} fallback hits, {} backfills ({} lost to a newer write), {} repairs",
        stats.fallback_reads,
        stats.fallback_hits,
        stats.backfills,
        stats.backfills_lost,
        stats.repairs_recorded
    );
}

/// fnv1a_64 (twemproxy) → md5 (libmemcached) over the same 4 servers.
#[test]
fn migration_from_fnv1a_64_to_md5_keeps_the_hit_ratio() {
    if !require("memcached") {
        return;
    }
    let s = servers(1, 4);
    let all: Vec<&Memcached> = s.iter().collect();
    let old = client(&all, Flavor::Twemproxy, KeyHash::Fnv1a_64);
    let new = client(&all, Flavor::Libmemcached, KeyHash::Md5);
    let (cold, warm, stats, kept) = cold_and_warm(&old, &new);
    report("fnv1a_64 → md5", &cold, &warm, &stats, kept);
    assert_eq!(cold.wrong + warm.wrong, 0, "no wrong or stale value");
    assert_eq!(warm.read_errors, 0);
    assert!(
        warm.hit_ratio() >= 0.99,
        "warm-up hit ratio {}",
        warm.hit_ratio()
    );
    assert!(
        warm.hit_ratio() > cold.hit_ratio() + 0.5,
        "cold {} warm {}",
        cold.hit_ratio(),
        warm.hit_ratio()
    );
    // a cold switch hits the keys that kept their copy, and the keys written meanwhile (at
    // most the writes' share): 4 standard deviations of a binomial draw over the reads
    let sd = (kept * (1.0 - kept) / cold.reads as f64).sqrt();
    let written = cold.writes as f64 / KEYS as f64;
    assert!(
        cold.hit_ratio() >= kept - 4.0 * sd,
        "cold {} kept {kept}",
        cold.hit_ratio()
    );
    assert!(
        cold.hit_ratio() <= kept + written + 4.0 * sd,
        "cold {} kept {kept}",
        cold.hit_ratio()
    );
    assert!(stats.backfills > 0 && stats.fallback_hits >= stats.backfills);

    counters_count_once(&old, &new);
}

/// 1,000 counters set and incremented once each through the route end at +1, whether or not
/// both rings put the counter on the same server (one copy), and the old pool's copies of
/// the others are deleted (they would be stale).
fn counters_count_once(old: &Client, new: &Client) {
    let route = Router::warm_up(new.clone(), old.clone(), Duration::from_secs(3600));
    let names: Vec<String> = (0..1000).map(|i| format!("counter:{i}")).collect();
    for c in &names {
        route.set(c, "100", Expiry::NEVER).expect("set counter");
    }
    let (ro, rn) = (old.ring(), new.ring());
    let mut shared = 0;
    for c in &names {
        assert_eq!(route.incr(c, 1).expect("incr"), Some(101), "{c}");
        assert_eq!(
            route.get(c).expect("get").map(|i| i.value.to_vec()),
            Some(b"101".to_vec()),
            "{c}"
        );
        let one_copy = ro.server_for(c.as_bytes()).map(|s| &s.addr)
            == rn.server_for(c.as_bytes()).map(|s| &s.addr);
        if one_copy {
            shared += 1;
        } else {
            assert_eq!(
                old.get(c).expect("old get"),
                None,
                "{c}: the old copy is deleted"
            );
        }
    }
    println!(
        "counters: 1000 incremented once through the route, {shared} of them one copy on both rings"
    );
    assert!(
        shared > 0,
        "some counters share their copy, or this checks nothing"
    );
}

/// 4 servers → the same 4 and a fifth.
#[test]
fn growing_from_four_to_five_servers_keeps_the_hit_ratio() {
    if !require("memcached") {
        return;
    }
    let s = servers(6, 5);
    let four: Vec<&Memcached> = s[..4].iter().collect();
    let five: Vec<&Memcached> = s.iter().collect();
    let old = client(&four, Flavor::Libmemcached, KeyHash::Md5);
    let new = client(&five, Flavor::Libmemcached, KeyHash::Md5);
    let (cold, warm, stats, kept) = cold_and_warm(&old, &new);
    report("4 → 5 servers", &cold, &warm, &stats, kept);
    assert_eq!(cold.wrong + warm.wrong, 0, "no wrong or stale value");
    assert!(
        cold.hit_ratio() <= 0.85,
        "a fifth of the keys moved: cold {}",
        cold.hit_ratio()
    );
    assert!(
        warm.hit_ratio() >= 0.99,
        "warm-up hit ratio {}",
        warm.hit_ratio()
    );
}

/// `cmd_get` summed over `servers`.
fn gets_on(servers: &[&Memcached]) -> u64 {
    servers.iter().map(|s| s.stat("cmd_get")).sum()
}

/// The others' reads per load read during an outage of `victim`, over the same before it:
/// 1.0 when the outage adds nothing to them.
struct Outage {
    others_load: f64,
    during: Seen,
}

/// Under load on `store`: kill `s[victim]`, wait, restart it empty on its address, wait
/// until `main` has it back.
fn kill_and_restart(
    load: &Load,
    store: &dyn Store,
    main: &Client,
    s: &mut [Memcached],
    victim: usize,
) -> Outage {
    let others = |s: &[Memcached]| -> u64 {
        gets_on(
            &s.iter()
                .enumerate()
                .filter(|(i, _)| *i != victim)
                .map(|(_, m)| m)
                .collect::<Vec<_>>(),
        )
    };
    let mut out = None;
    load.run_while(store, || {
        load.wait_ops(4_000);
        let (g0, r0) = (others(s), load.seen());
        load.wait_ops(8_000);
        let (g1, r1) = (others(s), load.seen());
        let sock = s[victim].sock();
        s[victim].signal("KILL");
        load.wait_ops(8_000);
        let (g2, r2) = (others(s), load.seen());
        let std::net::SocketAddr::V4(v4) = sock else {
            panic!("v4")
        };
        s[victim] = Memcached::start(*v4.ip(), v4.port(), "");
        wait_until("the restarted server is back", DEADLINE, || {
            main.down_servers().is_empty()
        });
        load.wait_ops(2_000);
        let before = (g1 - g0) as f64 / r1.since(r0).reads as f64;
        let during = (g2 - g1) as f64 / r2.since(r1).reads as f64;
        out = Some(Outage {
            others_load: during / before,
            during: r2.since(r1),
        });
    });
    out.expect("the outage ran")
}

#[test]
fn a_gutter_takes_a_dead_servers_keys_off_its_neighbours() {
    if !require("memcached") {
        return;
    }
    let mut s = servers(11, 4);
    let gutter_server = Memcached::start(ip(15), 11211, "");
    let victim = 1;

    // with a gutter
    let load = Load::new();
    let main = quick_client(&s.iter().collect::<Vec<_>>(), false);
    let gutter = quick_client(&[&gutter_server], false);
    let route =
        Router::gutter(main.clone(), gutter, Duration::from_secs(30)).expect("gutter route");
    load.preload(&main);
    let with = kill_and_restart(&load, &route, &main, &mut s, victim);
    let with_stats = route.stats();
    let with_seen = load.seen();
    let (stale, _) = load.verify_all(&route);

    // auto-eject, no gutter, the same outage
    let load = Load::new();
    let eject = quick_client(&s.iter().collect::<Vec<_>>(), true);
    flush(&eject);
    load.preload(&eject);
    let without = kill_and_restart(&load, &eject, &eject, &mut s, victim);
    let without_seen = load.seen();

    println!(
        "gutter: the 3 other servers' gets per read during the outage, relative to before: {:.3} with the gutter, {:.3} with auto-eject",
        with.others_load, without.others_load
    );
    println!(
        "gutter: during the outage {} reads, hit ratio {:.4}, {} read errors, {} write errors (auto-eject: hit ratio {:.4}, {} read errors); route: {} gutter requests, {} gutter hits, {} cleanup deletes; wrong values {} / {}; stale after return {stale}",
        with.during.reads,
        with.during.hit_ratio(),
        with.during.read_errors,
        with.during.write_errors,
        without.during.hit_ratio(),
        without.during.read_errors,
        with_stats.gutter_requests,
        with_stats.gutter_hits,
        with_stats.gutter_cleanup_deletes,
        with_seen.wrong,
        without_seen.wrong,
    );
    assert_eq!(with_seen.wrong + without_seen.wrong, 0, "no wrong value");
    assert_eq!(stale, 0);
    assert!(with_stats.gutter_hits > 0, "{with_stats:?}");
    assert!(
        with.others_load < 1.1,
        "the gutter kept the others' load: {}",
        with.others_load
    );
    assert!(
        without.others_load > 1.15,
        "auto-eject moved the keys onto the others: {}",
        without.others_load
    );
}

/// STOP then CONT keeps the server's data: what was written to the gutter meanwhile must
/// neither be shadowed by the server's old copies nor come back from the gutter in a second
/// outage within the gutter TTL.
#[test]
fn a_stopped_server_returns_without_stale_reads_even_when_it_flaps() {
    if !require("memcached") {
        return;
    }
    let s = servers(21, 4);
    let gutter_server = Memcached::start(ip(25), 11211, "");
    let main = quick_client(&s.iter().collect::<Vec<_>>(), false);
    let gutter = quick_client(&[&gutter_server], false);
    let route =
        Router::gutter(main.clone(), gutter, Duration::from_secs(30)).expect("gutter route");
    let load = Load::new();
    load.preload(&main);
    let victim = &s[2];
    let back = || {
        wait_until("the server is back", DEADLINE, || {
            main.down_servers().is_empty()
        })
    };
    let seen = load.run_while(&route, || {
        load.wait_ops(4_000);
        victim.signal("STOP");
        load.wait_ops(6_000);
        victim.signal("CONT");
        back();
        // writes between the outages go to the server; the gutter still holds the first
        // outage's values unless it was cleaned
        load.wait_ops(6_000);
        victim.signal("STOP");
        load.wait_ops(6_000);
        victim.signal("CONT");
        back();
        load.wait_ops(2_000);
    });
    let (stale, misses) = load.verify_all(&route);
    let stats = route.stats();
    println!(
        "gutter flap: {} reads under load, {} wrong, hit ratio {:.4}; after return {stale} stale, {misses} misses of {KEYS}; route: {} gutter requests, {} gutter hits, {} cleanup deletes",
        seen.reads,
        seen.wrong,
        seen.hit_ratio(),
        stats.gutter_requests,
        stats.gutter_hits,
        stats.gutter_cleanup_deletes
    );
    assert_eq!(seen.wrong, 0, "no wrong or stale value under load");
    assert_eq!(stale, 0, "no stale value after the returns");
    assert!(
        stats.gutter_requests > 0 && stats.gutter_cleanup_deletes > 0,
        "{stats:?}"
    );
}

#[test]
fn a_mirror_keeps_reading_when_one_pool_stops() {
    if !require("memcached") {
        return;
    }
    let s = servers(31, 4);
    let a = quick_client(&[&s[0], &s[1]], false);
    let b = quick_client(&[&s[2], &s[3]], false);
    let route = Router::mirror(a.clone(), b, ReadPolicy::PreferA).expect("mirror");
    let load = Load::new();
    load.preload(&a);
    load.preload(route.pool(memshard::routes::PoolRole::Second));
    let mut during = Seen::default();
    let (mut at_stop, mut at_cont) = (Vec::new(), Vec::new());
    let all = load.run_while(&route, || {
        load.wait_ops(4_000);
        at_stop = load.versions_now();
        s[0].signal("STOP");
        s[1].signal("STOP");
        let r0 = load.seen();
        load.wait_ops(8_000);
        during = load.seen().since(r0);
        at_cont = load.versions_now();
        s[0].signal("CONT");
        s[1].signal("CONT");
        wait_until("pool a is back", DEADLINE, || a.down_servers().is_empty());
        load.wait_ops(2_000);
    });
    let (stale, misses) = load.verify_all(&route);
    let version = |c: &Client, k: &str| {
        let item = c.get(k).unwrap_or_else(|e| panic!("get {k}: {e}"));
        item.and_then(|i| decode(&i.value)).map(|(_, v)| v)
    };
    let diverged = (0..KEYS)
        .filter(|&i| {
            let k = key(i);
            let same = route.verify(&k).expect("verify");
            if !same {
                // which write each copy holds, against the versions when the pool stopped
                // and when it was continued: where a stale copy came from
                eprintln!(
                    "divergent {k}: a holds version {:?}, b {:?}; newest {}, at the stop {}, at the continue {}",
                    version(&a, &k),
                    version(route.pool(memshard::routes::PoolRole::Second), &k),
                    load.versions[i].load(Ordering::SeqCst),
                    at_stop[i],
                    at_cont[i]
                );
            }
            !same
        })
        .count();
    let stats = route.stats();
    println!(
        "mirror: pool a stopped: {} reads, hit ratio {:.4}, {} read errors, {} writes, {} write errors; overall {} wrong; after return {stale} stale, {misses} misses (copies deleted on a: written while it was out), {diverged} divergent; route: {} fallback reads, {} partial writes",
        during.reads,
        during.hit_ratio(),
        during.read_errors,
        during.writes,
        during.write_errors,
        all.wrong,
        stats.fallback_reads,
        stats.mirror_partial_writes
    );
    assert_eq!(
        during.read_errors + during.write_errors,
        0,
        "reads and writes keep succeeding"
    );
    assert!(
        during.hit_ratio() >= 0.99,
        "hit ratio {}",
        during.hit_ratio()
    );
    assert_eq!(all.wrong + stale, 0);
    assert_eq!(diverged, 0);
    assert!(stats.mirror_partial_writes > 0);
}
