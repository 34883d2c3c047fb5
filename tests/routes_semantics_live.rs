//! Routes between pools, command by command, as `memshard::routes` documents them,
//! on the blocking [`memshard::Router`] and the async `memshard::aio::Router` (feature
//! `async`): each scenario is written once over [`Api`] and run on both.
//!
//! Real memcached servers on 127.0.20.x (free ports; no other test binary uses those
//! addresses). What each pool holds is read raw on its servers (`get`, and meta `mg` for
//! flags and the remaining TTL), bypassing the route. Servers fail by SIGSTOP and come back
//! by SIGCONT (data intact: the hard case for staleness). No assertion is about time: waits
//! are for states with a generous deadline, migration phases come from `SystemTime`
//! arithmetic.

mod common;

use common::servers::{Memcached, require};
use common::wait_until;
use memshard::routes::{Migration, Phase, PoolRole, ReadPolicy, RouteCas, RouteItem, RouteStats};
use memshard::{
    DeleteOutcome, Error, Expiry, FailurePolicy, Flavor, Item, KeyHash, Result, StoreOutcome,
    TouchOutcome,
};
use std::net::Ipv4Addr;
use std::time::{Duration, SystemTime};

use PoolRole::{First, Second};

const DEADLINE: Duration = Duration::from_secs(60);
const BACKFILL_SECS: i64 = 600;
const GUTTER_TTL_SECS: i64 = 30;

// ---------------------------------------------------------------------------------------
// servers and pools
// ---------------------------------------------------------------------------------------

/// memcached servers on 127.0.20.`base`, `base + 1`, ... (free ports).
struct Servers(Vec<Memcached>);

impl Servers {
    fn start(base: u8, n: u8) -> Servers {
        Servers(
            (0..n)
                .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 20, base + i), 0, ""))
                .collect(),
        )
    }

    fn list(&self) -> String {
        self.0.iter().map(|s| format!("{}\n", s.addr())).collect()
    }

    fn by(&self, addr: &str) -> &Memcached {
        self.0
            .iter()
            .find(|s| s.addr() == addr)
            .unwrap_or_else(|| panic!("no server {addr}"))
    }
}

/// One pool's client settings.
#[derive(Clone)]
struct Pool {
    list: String,
    flavor: Flavor,
    hash: Option<KeyHash>,
    policy: FailurePolicy,
}

impl Pool {
    fn new(list: String, flavor: Flavor, hash: Option<KeyHash>) -> Pool {
        Pool {
            list,
            flavor,
            hash,
            // a failed server is marked down at once and probed again soon, without auto-eject
            // (a gutter's main pool must not auto-eject; the others do not need to)
            policy: FailurePolicy::new(1, Duration::from_millis(200), false),
        }
    }

    fn conf<C>(&self, b: memshard::Builder<C>) -> memshard::Builder<C> {
        let b = b
            .server_list(&self.list)
            .expect("server list")
            .flavor(self.flavor)
            .failure_policy(self.policy)
            .read_timeout(Duration::from_millis(300))
            .connect_timeout(Duration::from_millis(300));
        match self.hash {
            Some(h) => b.hash(h),
            None => b,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Which {
    Blocking,
    #[cfg(feature = "async")]
    Async,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Blocking => "blocking",
            #[cfg(feature = "async")]
            Which::Async => "async",
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    WarmUp(Expiry),
    Migrate(Migration),
    Gutter(Duration),
    Mirror(ReadPolicy),
}

/// A route on either client.
enum Api {
    Blocking(memshard::Router),
    #[cfg(feature = "async")]
    Async(memshard::aio::Router, tokio::runtime::Runtime),
}

/// `$e` on the route `$r` of `$api`, awaited on the async client.
macro_rules! on {
    ($api:expr, $r:ident => $e:expr) => {
        match $api {
            Api::Blocking($r) => $e,
            #[cfg(feature = "async")]
            Api::Async($r, rt) => rt.block_on(async { $e.await }),
        }
    };
}

/// `$e` (not a future) on the route `$r` of `$api`.
macro_rules! plain {
    ($api:expr, $r:ident => $e:expr) => {
        match $api {
            Api::Blocking($r) => $e,
            #[cfg(feature = "async")]
            Api::Async($r, _) => $e,
        }
    };
}

/// A route's test on the blocking client and on the async one, each on servers of its own
/// (`127.0.20.<base>` and up).
macro_rules! both_clients {
    ($route:ident, $blocking:ident, $async_:ident, $b:expr, $a:expr) => {
        #[test]
        fn $blocking() {
            $route(Which::Blocking, $b);
        }

        #[cfg(feature = "async")]
        #[test]
        fn $async_() {
            $route(Which::Async, $a);
        }
    };
}

fn build(which: Which, first: &Pool, second: &Pool, kind: Kind) -> Result<Api> {
    match which {
        Which::Blocking => {
            let f = first.conf(memshard::Client::builder()).build()?;
            let s = second.conf(memshard::Client::builder()).build()?;
            use memshard::Router as R;
            Ok(Api::Blocking(match kind {
                Kind::WarmUp(b) => R::warm_up(f, s, b),
                Kind::Migrate(m) => R::migrate(f, s, m),
                Kind::Gutter(ttl) => R::gutter(f, s, ttl)?,
                Kind::Mirror(p) => R::mirror(f, s, p)?,
            }))
        }
        #[cfg(feature = "async")]
        Which::Async => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let (f, s) = rt.block_on(async {
                let f = first.conf(memshard::aio::Client::builder()).build()?;
                let s = second.conf(memshard::aio::Client::builder()).build()?;
                Ok::<_, Error>((f, s))
            })?;
            use memshard::aio::Router as R;
            let r = match kind {
                Kind::WarmUp(b) => R::warm_up(f, s, b),
                Kind::Migrate(m) => R::migrate(f, s, m),
                Kind::Gutter(ttl) => R::gutter(f, s, ttl)?,
                Kind::Mirror(p) => R::mirror(f, s, p)?,
            };
            Ok(Api::Async(r, rt))
        }
    }
}

fn route(which: Which, first: &Pool, second: &Pool, kind: Kind) -> Api {
    build(which, first, second, kind).unwrap_or_else(|e| panic!("build the route: {e}"))
}

fn ok<T>(r: Result<T>, what: impl std::fmt::Display) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn refused<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    match r {
        Err(Error::Route { .. }) => {}
        other => panic!("{what}: expected Error::Route, got {other:?}"),
    }
}

impl Api {
    fn get(&self, k: &str) -> Result<Option<Item>> {
        on!(self, r => r.get(k))
    }

    /// The value through the route (panics on an error).
    fn value(&self, k: &str) -> Option<Vec<u8>> {
        ok(self.get(k), format!("get {k}")).map(|i| i.value.to_vec())
    }

    fn gets(&self, k: &str) -> Result<Option<RouteItem>> {
        on!(self, r => r.gets(k))
    }

    fn get_multi(&self, keys: &[String]) -> Vec<Result<Option<Item>>> {
        on!(self, r => r.get_multi(keys))
    }

    fn set(&self, k: &str, v: &str, flags: u32, e: Expiry) -> Result<StoreOutcome> {
        on!(self, r => r.set_raw(k, v, flags, e))
    }

    fn add(&self, k: &str, v: &str) -> Result<StoreOutcome> {
        on!(self, r => r.add(k, v, Expiry::NEVER))
    }

    fn replace(&self, k: &str, v: &str) -> Result<StoreOutcome> {
        on!(self, r => r.replace(k, v, Expiry::NEVER))
    }

    fn append(&self, k: &str, v: &str) -> Result<StoreOutcome> {
        on!(self, r => r.append(k, v))
    }

    fn prepend(&self, k: &str, v: &str) -> Result<StoreOutcome> {
        on!(self, r => r.prepend(k, v))
    }

    fn incr(&self, k: &str, d: u64) -> Result<Option<u64>> {
        on!(self, r => r.incr(k, d))
    }

    fn decr(&self, k: &str, d: u64) -> Result<Option<u64>> {
        on!(self, r => r.decr(k, d))
    }

    fn delete(&self, k: &str) -> Result<DeleteOutcome> {
        on!(self, r => r.delete(k))
    }

    fn touch(&self, k: &str, e: Expiry) -> Result<TouchOutcome> {
        on!(self, r => r.touch(k, e))
    }

    fn cas(&self, k: &str, v: &str, token: &RouteCas) -> Result<StoreOutcome> {
        on!(self, r => r.cas(k, v, Expiry::NEVER, token))
    }

    fn set_multi(&self, items: &[(String, String)]) -> Vec<Result<StoreOutcome>> {
        on!(self, r => r.set_multi(items, 0, Expiry::NEVER))
    }

    fn delete_multi(&self, keys: &[String]) -> Vec<Result<DeleteOutcome>> {
        on!(self, r => r.delete_multi(keys))
    }

    fn verify(&self, k: &str) -> Result<bool> {
        on!(self, r => r.verify(k))
    }

    fn stats(&self) -> RouteStats {
        plain!(self, r => r.stats())
    }

    fn phase(&self) -> Option<Phase> {
        plain!(self, r => r.phase())
    }

    /// The server pool `p`'s ring gives `k`.
    fn owner(&self, p: PoolRole, k: &str) -> String {
        plain!(self, r => r.pool(p).ring().server_for(k.as_bytes()).expect("points").addr.clone())
    }

    fn down(&self, p: PoolRole) -> Vec<String> {
        plain!(self, r => r.pool(p).down_servers().into_iter().map(|s| s.addr).collect())
    }

    /// `set` on pool `p` alone, bypassing the route.
    fn pool_set(&self, p: PoolRole, k: &str, v: &str, flags: u32) {
        let r = on!(self, r => r.pool(p).set_raw(k, v, flags, Expiry::NEVER));
        assert_eq!(ok(r, format!("set {k} on {p:?}")), StoreOutcome::Stored);
    }

    /// Marks `server` (of pool `p`, just stopped) down with a read of `k` it owns there that
    /// times out: the writes that follow fail at once, unsent. (A write that timed out would
    /// sit in the stopped server's socket and be applied when it continues.)
    fn mark_down(&self, p: PoolRole, server: &Memcached, k: &str) {
        assert_eq!(self.owner(p, k), server.addr());
        let r = on!(self, r => r.pool(p).get(k));
        assert!(r.is_err(), "a read of a stopped server: {r:?}");
        assert_eq!(self.down(p), [server.addr()]);
    }

    /// `gets` on pool `p` alone: the CAS unique.
    fn pool_unique(&self, p: PoolRole, k: &str) -> u64 {
        let r = on!(self, r => r.pool(p).gets(k));
        ok(r, format!("gets {k} on {p:?}"))
            .and_then(|i| i.cas)
            .unwrap_or_else(|| panic!("{k} on {p:?}: no item"))
    }

    /// `n` keys `{prefix}:{i}` held on one copy in both pools (`same`: same server, same key
    /// as sent) or on two different servers.
    fn keys(&self, prefix: &str, n: usize, same: bool) -> Vec<String> {
        let out: Vec<String> = (0..100_000)
            .map(|i| format!("{prefix}:{i}"))
            .filter(|k| (self.owner(First, k) == self.owner(Second, k)) == same)
            .take(n)
            .collect();
        assert_eq!(out.len(), n, "not enough keys of {prefix}");
        out
    }

    /// Waits until pool `p` has no server marked down (its prober brought it back).
    fn wait_back(&self, p: PoolRole, what: &str) {
        let waited = wait_until(what, DEADLINE, || self.down(p).is_empty());
        println!("{what}: after {waited:?}");
    }
}

/// The value of `k` on server `s` alone.
fn raw(s: &Memcached, k: &str) -> Option<String> {
    s.raw_get(k.as_bytes())
        .map(|v| String::from_utf8(v).expect("UTF-8 value"))
}

/// Flags and remaining TTL in seconds (-1: never expires) of `k` on `s` alone (meta `mg`).
fn meta(s: &Memcached, k: &str) -> Option<(u32, i64)> {
    let out = s.raw(format!("mg {k} f t\r\n").as_bytes(), b"\r\n");
    let line = String::from_utf8(out).expect("UTF-8 reply");
    let line = line.trim_end();
    if line == "EN" {
        return None;
    }
    let mut words = line.split(' ');
    assert_eq!(words.next(), Some("HD"), "mg {k}: {line}");
    let (mut flags, mut ttl) = (None, None);
    for w in words {
        match w.split_at(1) {
            ("f", n) => flags = n.parse().ok(),
            ("t", n) => ttl = n.parse().ok(),
            _ => {}
        }
    }
    Some((flags.expect("f flag"), ttl.expect("t flag")))
}

fn some(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Counter differences `after - before`, by name.
macro_rules! grew {
    ($before:expr, $after:expr, $($name:ident),+) => {
        ($($after.$name - $before.$name),+)
    };
}

// ---------------------------------------------------------------------------------------
// warm-up
// ---------------------------------------------------------------------------------------

/// Old pool: twemproxy's fnv1a_64 ring; new pool: libmemcached's md5 ketama ring; the same
/// three servers, so that about a third of the keys stay where they were (one copy).
fn flavour_switch(s: &Servers) -> (Pool, Pool) {
    let old = Pool::new(s.list(), Flavor::Twemproxy, Some(KeyHash::Fnv1a_64));
    let new = Pool::new(s.list(), Flavor::Libmemcached, Some(KeyHash::Md5));
    (new, old)
}

fn warm_up(which: Which, base: u8) {
    if !require("memcached") {
        return;
    }
    let s = Servers::start(base, 3);
    let (new, old) = flavour_switch(&s);
    let backfill = Expiry::after(Duration::from_secs(BACKFILL_SECS as u64));
    let api = route(which, &new, &old, Kind::WarmUp(backfill));
    assert_eq!(api.phase(), Some(Phase::WarmUp));
    let name = which.name();
    let mut moved = api.keys(&format!("{name}:w"), 60, false).into_iter();
    let mut next = move || moved.next().expect("enough moved keys");
    let same = api.keys(&format!("{name}:w"), 8, true);
    let on_new = |k: &str| s.by(&api.owner(First, k));
    let on_old = |k: &str| s.by(&api.owner(Second, k));

    // get: a miss on the new pool is read from the old one and copied into the new one with
    // its flags, expiring at the backfill expiry; the old copy stays
    let k = next();
    api.pool_set(Second, &k, "old-v", 7);
    let st0 = api.stats();
    let item = ok(api.get(&k), "get").expect("the old pool's value");
    assert_eq!((&item.value[..], item.flags), (&b"old-v"[..], 7));
    assert_eq!(
        raw(on_new(&k), &k),
        some("old-v"),
        "backfilled into the new pool"
    );
    let (flags, ttl) = meta(on_new(&k), &k).expect("backfilled");
    assert_eq!(flags, 7, "the backfill keeps the flags");
    assert!(
        ttl > 0 && ttl <= BACKFILL_SECS,
        "the backfill expires at the setting: ttl {ttl}"
    );
    assert_eq!(
        raw(on_old(&k), &k),
        some("old-v"),
        "a read keeps the old copy"
    );
    let st1 = api.stats();
    assert_eq!(
        grew!(st0, st1, fallback_reads, fallback_hits, backfills),
        (1, 1, 1)
    );
    // now a new-pool hit: no fallback
    assert_eq!(api.value(&k), Some(b"old-v".to_vec()));
    assert_eq!(api.stats().fallback_reads, st1.fallback_reads);

    // a new-pool hit wins over the old pool's value
    let k = next();
    api.pool_set(First, &k, "new-v", 0);
    api.pool_set(Second, &k, "old-v", 0);
    assert_eq!(api.value(&k), Some(b"new-v".to_vec()));
    // a miss on both: None, one fallback read, no backfill
    let k = next();
    let st0 = api.stats();
    assert_eq!(api.value(&k), None);
    assert_eq!(raw(on_new(&k), &k), None);
    let st1 = api.stats();
    assert_eq!(
        grew!(st0, st1, fallback_reads, fallback_hits, backfills),
        (1, 0, 0)
    );

    // add with the key only in the old pool: NotStored (the key exists for the route), the old
    // value copied into the new pool; the add's value is stored nowhere
    let k = next();
    api.pool_set(Second, &k, "old-a", 3);
    let st0 = api.stats();
    assert_eq!(ok(api.add(&k, "added"), "add"), StoreOutcome::NotStored);
    assert_eq!(raw(on_new(&k), &k), some("old-a"));
    assert_eq!(meta(on_new(&k), &k).map(|m| m.0), Some(3));
    assert_eq!(raw(on_old(&k), &k), some("old-a"));
    assert_eq!(api.stats().backfills - st0.backfills, 1);
    // add with the key in neither: stored in the new pool only
    let k = next();
    assert_eq!(ok(api.add(&k, "added"), "add"), StoreOutcome::Stored);
    assert_eq!(raw(on_new(&k), &k), some("added"));
    assert_eq!(raw(on_old(&k), &k), None);
    // a value in the new pool is never overwritten by a backfill (backfills_lost): add finds
    // the old pool's value and copies it with `add`, which the new pool refuses
    let k = next();
    api.pool_set(First, &k, "newer", 0);
    api.pool_set(Second, &k, "older", 0);
    let st0 = api.stats();
    assert_eq!(ok(api.add(&k, "added"), "add"), StoreOutcome::NotStored);
    assert_eq!(raw(on_new(&k), &k), some("newer"), "a backfill overwrote");
    let st1 = api.stats();
    assert_eq!(grew!(st0, st1, backfills, backfills_lost), (0, 1));

    // set and touch: both pools
    let k = next();
    assert_eq!(
        ok(api.set(&k, "both", 9, Expiry::NEVER), "set"),
        StoreOutcome::Stored
    );
    for srv in [on_new(&k), on_old(&k)] {
        assert_eq!(raw(srv, &k), some("both"));
        assert_eq!(meta(srv, &k), Some((9, -1)));
    }
    let t = Expiry::after(Duration::from_secs(120));
    assert_eq!(ok(api.touch(&k, t), "touch"), TouchOutcome::Touched);
    for srv in [on_new(&k), on_old(&k)] {
        let ttl = meta(srv, &k).expect("touched, not deleted").1;
        assert!(
            ttl > 0 && ttl <= 120,
            "touch reached {}: ttl {ttl}",
            srv.addr()
        );
    }
    let items: Vec<(String, String)> = (0..4).map(|i| (next(), format!("m{i}"))).collect();
    for r in api.set_multi(&items) {
        assert_eq!(ok(r, "set_multi"), StoreOutcome::Stored);
    }
    for (k, v) in &items {
        assert_eq!(raw(on_new(k), k).as_ref(), Some(v));
        assert_eq!(raw(on_old(k), k).as_ref(), Some(v));
    }

    // delete: both pools; the new pool's result
    let k = next();
    api.pool_set(First, &k, "n", 0);
    api.pool_set(Second, &k, "o", 0);
    assert_eq!(ok(api.delete(&k), "delete"), DeleteOutcome::Deleted);
    assert_eq!((raw(on_new(&k), &k), raw(on_old(&k), &k)), (None, None));
    let k = next();
    api.pool_set(Second, &k, "o", 0);
    assert_eq!(
        ok(api.delete(&k), "delete"),
        DeleteOutcome::Deleted,
        "only the old pool had it: for the route the key existed"
    );
    assert_eq!(raw(on_old(&k), &k), None, "the old copy is deleted too");
    let k = next();
    api.pool_set(Second, &k, "o", 0);
    assert_eq!(
        ok(api.touch(&k, t), "touch"),
        TouchOutcome::Touched,
        "found in the old pool"
    );
    let k = next();
    assert_eq!(
        ok(api.delete(&k), "delete"),
        DeleteOutcome::NotFound,
        "in neither pool"
    );
    let only_old: Vec<String> = (0..3).map(|_| next()).collect();
    for k in &only_old {
        api.pool_set(Second, k, "o", 0);
    }
    for r in api.delete_multi(&only_old) {
        assert_eq!(
            ok(r, "delete_multi"),
            DeleteOutcome::Deleted,
            "only the old pool had it"
        );
    }
    let keys: Vec<String> = items.iter().map(|(k, _)| k.clone()).collect();
    for r in api.delete_multi(&keys) {
        assert_eq!(ok(r, "delete_multi"), DeleteOutcome::Deleted);
    }
    for k in &keys {
        assert_eq!((raw(on_new(k), k), raw(on_old(k), k)), (None, None));
    }

    // read-modify commands with the key only in the old pool: copied, applied once on the
    // new pool, the old copy deleted
    let st0 = api.stats();
    let k = next();
    api.pool_set(Second, &k, "10", 0);
    assert_eq!(ok(api.incr(&k, 5), "incr"), Some(15), "incr applied once");
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("15"), None)
    );
    let k = next();
    api.pool_set(Second, &k, "10", 0);
    assert_eq!(ok(api.decr(&k, 3), "decr"), Some(7));
    // memcached keeps a decremented number's length: "10" - 3 is "7 "
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("7 "), None)
    );
    let k = next();
    api.pool_set(Second, &k, "ab", 0);
    assert_eq!(ok(api.append(&k, "cd"), "append"), StoreOutcome::Stored);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("abcd"), None),
        "append applied once"
    );
    let k = next();
    api.pool_set(Second, &k, "ab", 0);
    assert_eq!(ok(api.prepend(&k, "zz"), "prepend"), StoreOutcome::Stored);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("zzab"), None)
    );
    let k = next();
    api.pool_set(Second, &k, "x", 4);
    assert_eq!(ok(api.replace(&k, "y"), "replace"), StoreOutcome::Stored);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("y"), None)
    );
    let st1 = api.stats();
    assert_eq!(grew!(st0, st1, backfills, old_copies_deleted), (5, 5));
    // in neither pool: nothing anywhere
    let k = next();
    assert_eq!(ok(api.incr(&k, 1), "incr"), None);
    assert_eq!(ok(api.replace(&k, "y"), "replace"), StoreOutcome::NotStored);
    assert_eq!((raw(on_new(&k), &k), raw(on_old(&k), &k)), (None, None));
    // in the new pool: applied there, the old copy (older) deleted, not rewritten
    let k = next();
    api.pool_set(First, &k, "100", 0);
    api.pool_set(Second, &k, "1", 0);
    assert_eq!(ok(api.incr(&k, 1), "incr"), Some(101));
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("101"), None)
    );

    // gets after a backfill: the new pool's token; cas with it writes the new pool and
    // deletes the old copy
    let k = next();
    api.pool_set(Second, &k, "old-g", 0);
    let got = ok(api.gets(&k), "gets").expect("the old pool's value");
    assert_eq!(got.item.value, &b"old-g"[..]);
    assert_eq!(got.token.pool, First, "the token is the new pool's");
    assert_eq!(got.token.server, api.owner(First, &k));
    assert_eq!(Some(got.token.unique), got.item.cas);
    assert_eq!(got.token.unique, api.pool_unique(First, &k));
    let st0 = api.stats();
    assert_eq!(
        ok(api.cas(&k, "cas-v", &got.token), "cas"),
        StoreOutcome::Stored
    );
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("cas-v"), None)
    );
    assert_eq!(api.stats().old_copies_deleted - st0.old_copies_deleted, 1);
    // a stale token: EXISTS, nothing deleted
    let again = ok(api.gets(&k), "gets").expect("value");
    assert_eq!(
        ok(api.set(&k, "moved-on", 0, Expiry::NEVER), "set"),
        StoreOutcome::Stored
    );
    assert_eq!(
        ok(api.cas(&k, "late", &again.token), "cas"),
        StoreOutcome::Exists
    );
    assert_eq!(raw(on_new(&k), &k), some("moved-on"));

    // an old-pool token is refused, and nothing is written
    let k = next();
    api.pool_set(Second, &k, "old-c", 0);
    let old_token = RouteCas {
        pool: Second,
        server: api.owner(Second, &k),
        unique: api.pool_unique(Second, &k),
    };
    let st0 = api.stats();
    refused(api.cas(&k, "c", &old_token), "cas with an old-pool token");
    // a new-pool token naming another server than the new pool's owner (the key moved)
    let wrong_server = RouteCas {
        pool: First,
        server: api.owner(Second, &k),
        unique: old_token.unique,
    };
    refused(
        api.cas(&k, "c", &wrong_server),
        "cas with a token of another server",
    );
    assert_eq!(api.stats().refused - st0.refused, 2);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (None, some("old-c")),
        "a refused cas writes nothing"
    );

    // one copy (same server, same key as sent in both rings): written and read once
    let st0 = api.stats();
    let k = &same[0];
    let one = s.by(&api.owner(First, k));
    assert_eq!(
        ok(api.set(k, "10", 0, Expiry::NEVER), "set"),
        StoreOutcome::Stored
    );
    assert_eq!(ok(api.incr(k, 1), "incr"), Some(11), "counted once");
    assert_eq!(
        raw(one, k),
        some("11"),
        "the one copy is kept, counted once"
    );
    assert_eq!(
        ok(api.delete(k), "delete"),
        DeleteOutcome::Deleted,
        "one delete (a second would answer NOT_FOUND)"
    );
    assert_eq!(raw(one, k), None);
    assert_eq!(api.value(k), None);
    assert_eq!(ok(api.add(k, "a"), "add"), StoreOutcome::Stored);
    assert_eq!(ok(api.append(k, "b"), "append"), StoreOutcome::Stored);
    assert_eq!(raw(one, k), some("ab"), "append kept the one copy");
    let got = ok(api.gets(k), "gets").expect("value");
    assert_eq!(ok(api.cas(k, "c", &got.token), "cas"), StoreOutcome::Stored);
    assert_eq!(raw(one, k), some("c"), "cas kept the one copy");
    // a token said to be the old pool's is refused even where the old pool's copy is the
    // new pool's (same server: only the pool tells a token of another key as sent apart)
    let old_token = RouteCas {
        pool: Second,
        server: one.addr(),
        unique: api.pool_unique(Second, k),
    };
    refused(
        api.cas(k, "d", &old_token),
        "cas with an old-pool token, one copy",
    );
    assert_eq!(raw(one, k), some("c"), "a refused cas writes nothing");
    let items: Vec<(String, String)> = same[1..4].iter().map(|k| (k.clone(), "s".into())).collect();
    for r in api.set_multi(&items) {
        assert_eq!(ok(r, "set_multi"), StoreOutcome::Stored);
    }
    let keys: Vec<String> = same[1..4].to_vec();
    for r in api.delete_multi(&keys) {
        assert_eq!(
            ok(r, "delete_multi"),
            DeleteOutcome::Deleted,
            "one delete per key"
        );
    }
    let st1 = api.stats();
    assert_eq!(
        grew!(st0, st1, fallback_reads, backfills, old_copies_deleted),
        (0, 0, 0),
        "one copy: no fallback, no backfill, no old copy"
    );

    // get_multi: new hits, old hits (backfilled), misses, one-copy hits and misses
    let new_hits: Vec<String> = (0..3).map(|_| next()).collect();
    let old_hits: Vec<String> = (0..4).map(|_| next()).collect();
    let misses: Vec<String> = (0..2).map(|_| next()).collect();
    for k in &new_hits {
        api.pool_set(First, k, &format!("n-{k}"), 1);
    }
    for k in &old_hits {
        api.pool_set(Second, k, &format!("o-{k}"), 2);
    }
    api.pool_set(First, &same[4], "one", 5);
    let mut keys = Vec::new();
    for i in 0..4 {
        keys.extend(new_hits.get(i).cloned());
        keys.extend(old_hits.get(i).cloned());
        keys.extend(misses.get(i).cloned());
    }
    keys.push(same[4].clone());
    keys.push(same[5].clone());
    let st0 = api.stats();
    let got = api.get_multi(&keys);
    assert_eq!(got.len(), keys.len());
    for (k, r) in keys.iter().zip(got) {
        let item = ok(r, format!("get_multi {k}"));
        let want = if new_hits.contains(k) {
            Some((format!("n-{k}"), 1))
        } else if old_hits.contains(k) {
            Some((format!("o-{k}"), 2))
        } else if k == &same[4] {
            Some(("one".to_string(), 5))
        } else {
            None
        };
        let item = item.map(|i| (String::from_utf8(i.value.to_vec()).expect("UTF-8"), i.flags));
        assert_eq!(item, want, "get_multi {k}");
    }
    for k in &old_hits {
        assert_eq!(raw(on_new(k), k), Some(format!("o-{k}")), "backfilled");
    }
    for k in &misses {
        assert_eq!(raw(on_new(k), k), None);
    }
    let st1 = api.stats();
    assert_eq!(
        grew!(st0, st1, fallback_reads, fallback_hits, backfills),
        (6, 4, 4),
        "old hits and two-copy misses fall back; one-copy misses do not"
    );

    // the old copy misses a delete (its server stopped): it is never read again, so never
    // copied back, before its server deleted the key on return
    let k = next();
    api.pool_set(First, &k, "v1", 0);
    api.pool_set(Second, &k, "v1", 0);
    let old_srv = on_old(&k);
    old_srv.signal("STOP");
    api.mark_down(Second, old_srv, &k);
    let st0 = api.stats();
    assert_eq!(
        ok(api.delete(&k), "delete, the old copy's server stopped"),
        DeleteOutcome::Deleted
    );
    assert_eq!(api.stats().repairs_recorded - st0.repairs_recorded, 1);
    assert_eq!(api.value(&k), None, "the deleted value came back");
    old_srv.signal("CONT");
    api.wait_back(Second, &format!("{name}: the old pool's server is back"));
    assert_eq!(raw(old_srv, &k), None, "the missed delete was repaired");
    assert_eq!(api.value(&k), None, "the deleted value came back");
    assert_eq!(
        raw(on_new(&k), &k),
        None,
        "the deleted value was copied back"
    );
    println!("{name}: warm-up {:?}", api.stats());
}

both_clients!(warm_up, warm_up_blocking, warm_up_async, 1, 4);

// ---------------------------------------------------------------------------------------
// migration
// ---------------------------------------------------------------------------------------

fn migrate(which: Which, base: u8) {
    if !require("memcached") {
        return;
    }
    let s = Servers::start(base, 3);
    let (new, old) = flavour_switch(&s);
    let name = which.name();
    let hour = Duration::from_secs(3600);
    let now = SystemTime::now();
    let backfill = Expiry::after(Duration::from_secs(BACKFILL_SECS as u64));

    // before the start: the old pool alone
    let api = route(
        which,
        &new,
        &old,
        Kind::Migrate(Migration::new(now + hour, hour, backfill)),
    );
    assert_eq!(api.phase(), Some(Phase::Old));
    let mut moved = api.keys(&format!("{name}:m"), 30, false).into_iter();
    let mut next = move || moved.next().expect("enough moved keys");
    let on_new = |k: &str| s.by(&api.owner(First, k));
    let on_old = |k: &str| s.by(&api.owner(Second, k));
    let k = next();
    assert_eq!(
        ok(api.set(&k, "v", 0, Expiry::NEVER), "set"),
        StoreOutcome::Stored
    );
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (None, some("v"))
    );
    let k = next();
    api.pool_set(Second, &k, "o", 0);
    api.pool_set(First, &k, "n", 0);
    assert_eq!(api.value(&k), Some(b"o".to_vec()), "reads the old pool");
    assert_eq!(ok(api.delete(&k), "delete"), DeleteOutcome::Deleted);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("n"), None),
        "deletes the old pool only"
    );
    let k = next();
    api.pool_set(Second, &k, "o", 0);
    let old_token = ok(api.gets(&k), "gets").expect("value").token;
    assert_eq!(old_token.pool, Second);
    assert_eq!(old_token.server, api.owner(Second, &k));
    assert_eq!(
        ok(api.cas(&k, "cas-old", &old_token), "cas"),
        StoreOutcome::Stored
    );
    assert_eq!(raw(on_old(&k), &k), some("cas-old"));
    let stats = api.stats();
    assert_eq!((stats.fallback_reads, stats.backfills), (0, 0));
    // the old pool's token, given to a route that writes the new pool: refused
    let token_key = k;
    let token = ok(api.gets(&token_key), "gets").expect("value").token;
    let warm = route(which, &new, &old, Kind::WarmUp(backfill));
    refused(
        warm.cas(&token_key, "x", &token),
        "cas with an Old-phase token",
    );
    assert_eq!(
        (
            raw(on_new(&token_key), &token_key),
            raw(on_old(&token_key), &token_key)
        ),
        (None, some("cas-old"))
    );

    // the tail: the new pool alone, deletes to both
    let m = Migration {
        tail: 2 * hour,
        ..Migration::new(now - 2 * hour, hour, backfill)
    };
    let api = route(which, &new, &old, Kind::Migrate(m));
    assert_eq!(api.phase(), Some(Phase::NewDeletesBoth));
    let k = next();
    api.pool_set(Second, &k, "o", 0);
    assert_eq!(api.value(&k), None, "no fallback after the window");
    assert_eq!(raw(on_new(&k), &k), None, "no backfill after the window");
    assert_eq!(ok(api.incr(&k, 1), "incr"), None);
    assert_eq!(raw(on_old(&k), &k), some("o"));
    let k = next();
    assert_eq!(
        ok(api.set(&k, "v", 0, Expiry::NEVER), "set"),
        StoreOutcome::Stored
    );
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("v"), None)
    );
    let k = next();
    api.pool_set(First, &k, "n", 0);
    api.pool_set(Second, &k, "o", 0);
    assert_eq!(ok(api.delete(&k), "delete"), DeleteOutcome::Deleted);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (None, None),
        "the tail deletes both"
    );
    let keys: Vec<String> = (0..3).map(|_| next()).collect();
    for k in &keys {
        api.pool_set(First, k, "n", 0);
        api.pool_set(Second, k, "o", 0);
    }
    for r in api.delete_multi(&keys) {
        assert_eq!(ok(r, "delete_multi"), DeleteOutcome::Deleted);
    }
    for k in &keys {
        assert_eq!((raw(on_new(k), k), raw(on_old(k), k)), (None, None));
    }
    let k = next();
    api.pool_set(First, &k, "n", 0);
    let t = ok(api.gets(&k), "gets").expect("value").token;
    assert_eq!(t.pool, First);
    let stats = api.stats();
    assert_eq!((stats.fallback_reads, stats.backfills), (0, 0));

    // after the tail: the new pool alone
    let m = Migration {
        tail: hour,
        ..Migration::new(now - 3 * hour, hour, backfill)
    };
    let api = route(which, &new, &old, Kind::Migrate(m));
    assert_eq!(api.phase(), Some(Phase::New));
    let k = next();
    api.pool_set(First, &k, "n", 0);
    api.pool_set(Second, &k, "o", 0);
    assert_eq!(api.value(&k), Some(b"n".to_vec()));
    assert_eq!(ok(api.delete(&k), "delete"), DeleteOutcome::Deleted);
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (None, some("o")),
        "after the tail, deletes go to the new pool only"
    );
    assert_eq!(api.value(&k), None);
    let k = next();
    assert_eq!(
        ok(api.set(&k, "v", 0, Expiry::NEVER), "set"),
        StoreOutcome::Stored
    );
    assert_eq!(
        (raw(on_new(&k), &k), raw(on_old(&k), &k)),
        (some("v"), None)
    );
    let stats = api.stats();
    assert_eq!((stats.fallback_reads, stats.backfills), (0, 0));
    println!("{name}: migration phases checked");
}

both_clients!(migrate, migrate_blocking, migrate_async, 7, 10);

// ---------------------------------------------------------------------------------------
// gutter
// ---------------------------------------------------------------------------------------

fn gutter(which: Which, base: u8) {
    if !require("memcached") {
        return;
    }
    let s = Servers::start(base, 3);
    let g = Servers::start(base + 3, 1);
    let gs = &g.0[0];
    let main = Pool::new(s.list(), Flavor::Libmemcached, Some(KeyHash::Md5));
    let gut = Pool::new(g.list(), Flavor::Libmemcached, Some(KeyHash::Md5));
    let ttl = Duration::from_secs(GUTTER_TTL_SECS as u64);
    let ejecting = Pool {
        policy: main.policy.with_auto_eject(true),
        ..main.clone()
    };
    match build(which, &ejecting, &gut, Kind::Gutter(ttl)) {
        Err(Error::Config(_)) => {}
        Err(e) => panic!("a main pool with auto-eject: {e}"),
        Ok(_) => panic!("a main pool with auto-eject was accepted"),
    }
    let api = route(which, &main, &gut, Kind::Gutter(ttl));
    let name = which.name();
    let victim = &s.0[0];
    let all: Vec<String> = (0..400).map(|i| format!("{name}:g:{i}")).collect();
    let (vk, others): (Vec<String>, Vec<String>) = all
        .into_iter()
        .partition(|k| api.owner(First, k) == victim.addr());
    assert!(vk.len() >= 20 && others.len() >= 20);
    // 10 keys of the other servers are used; the rest stay unwritten for the killed server's
    // part (10 keys alone leave one server fewer than 2 of them one run in ten)
    let (others, unwritten) = others.split_at(10);
    let owner = |k: &str| s.by(&api.owner(First, k));

    // v1 everywhere, on the main pool
    for k in vk.iter().chain(others) {
        assert_eq!(
            ok(api.set(k, "v1", 0, Expiry::NEVER), "set"),
            StoreOutcome::Stored
        );
        assert_eq!(raw(owner(k), k), some("v1"));
        assert_eq!(raw(gs, k), None);
    }
    let counter = &vk[10];
    ok(api.set(counter, "5", 0, Expiry::NEVER), "set");
    let main_token = ok(api.gets(&vk[11]), "gets").expect("value").token;
    assert_eq!(main_token.pool, First);

    victim.signal("STOP");
    api.mark_down(First, victim, &vk[19]);
    let st0 = api.stats();
    // writes of its keys go to the gutter, their TTL capped
    let written = &vk[0..6];
    for (i, k) in written.iter().enumerate() {
        let e = if i % 2 == 0 {
            Expiry::NEVER
        } else {
            Expiry::after(Duration::from_secs(3600))
        };
        assert_eq!(
            ok(api.set(k, "v2", 0, e), "set during the outage"),
            StoreOutcome::Stored
        );
        assert_eq!(raw(gs, k), some("v2"));
        let ttl = meta(gs, k).expect("on the gutter").1;
        assert!(
            ttl > 0 && ttl <= GUTTER_TTL_SECS,
            "the gutter TTL is capped: {ttl}"
        );
    }
    // a shorter expiry is kept
    let short = &vk[6];
    ok(
        api.set(short, "v2", 0, Expiry::after(Duration::from_secs(10))),
        "set",
    );
    let ttl = meta(gs, short).expect("on the gutter").1;
    assert!(ttl > 0 && ttl <= 10, "a shorter TTL is kept: {ttl}");
    // other servers' keys: the main pool, as always
    for k in others {
        ok(api.set(k, "v2", 0, Expiry::NEVER), "set");
        assert_eq!(raw(owner(k), k), some("v2"));
        assert_eq!(raw(gs, k), None, "another server's key went to the gutter");
        assert_eq!(api.value(k), Some(b"v2".to_vec()));
    }
    // reads of its keys: the gutter
    for k in written {
        assert_eq!(api.value(k), Some(b"v2".to_vec()), "{k} from the gutter");
    }
    assert_eq!(api.value(&vk[12]), None, "a gutter miss is a miss, not v1");
    let multi: Vec<String> = vk[0..3].iter().chain(&others[0..2]).cloned().collect();
    for (k, r) in multi.iter().zip(api.get_multi(&multi)) {
        assert_eq!(
            ok(r, "get_multi").map(|i| i.value.to_vec()),
            Some(b"v2".to_vec()),
            "{k}"
        );
    }
    // a delete during the outage reaches the gutter, and the key is recorded
    let deleted = &vk[7];
    ok(api.delete(deleted), "delete during the outage");
    let multi_set: Vec<(String, String)> =
        vk[8..10].iter().map(|k| (k.clone(), "v2".into())).collect();
    for r in api.set_multi(&multi_set) {
        assert_eq!(ok(r, "set_multi during the outage"), StoreOutcome::Stored);
    }
    for (k, _) in &multi_set {
        assert_eq!(raw(gs, k), some("v2"));
    }
    // counters and appends: refused, nothing on the gutter
    refused(api.incr(counter, 1), "incr during the outage");
    refused(api.decr(counter, 1), "decr during the outage");
    refused(api.append(&vk[11], "x"), "append during the outage");
    refused(api.prepend(&vk[11], "x"), "prepend during the outage");
    assert_eq!((raw(gs, counter), raw(gs, &vk[11])), (None, None));
    // a token from the main server: refused while it is down
    refused(
        api.cas(&vk[11], "x", &main_token),
        "cas with a main token, main down",
    );
    // a token from the gutter: works while the server is down
    let gt = ok(api.gets(&written[1]), "gets")
        .expect("from the gutter")
        .token;
    assert_eq!(gt.pool, Second);
    assert_eq!(
        ok(api.cas(&written[1], "v3", &gt), "cas on the gutter"),
        StoreOutcome::Stored
    );
    assert_eq!(raw(gs, &written[1]), some("v3"));
    assert!(meta(gs, &written[1]).expect("on the gutter").1 <= GUTTER_TTL_SECS);
    let gutter_token = ok(api.gets(&written[2]), "gets")
        .expect("from the gutter")
        .token;
    let st1 = api.stats();
    println!("{name}: gutter during the outage {st1:?}");
    assert!(st1.gutter_requests > st0.gutter_requests);
    assert!(st1.gutter_hits - st0.gutter_hits >= written.len() as u64 + 3);
    assert_eq!(st1.refused - st0.refused, 5);

    // it returns: what was written to the gutter is deleted there, and its own old copies
    // were deleted by the prober before it served reads
    victim.signal("CONT");
    api.wait_back(First, &format!("{name}: the main server is back"));
    let changed: Vec<&String> = written
        .iter()
        .chain([short, deleted])
        .chain(multi_set.iter().map(|(k, _)| k))
        .collect();
    for k in &changed {
        let got = api.value(k);
        assert!(
            got.is_none() || got == Some(b"v2".to_vec()) || got == Some(b"v3".to_vec()),
            "{k}: a stale read after the return: {:?}",
            got.as_deref().map(String::from_utf8_lossy)
        );
        assert_eq!(got, None, "{k}: main lost the value written to the gutter");
        assert_eq!(
            raw(victim, k),
            None,
            "{k}: the returned server kept its old copy"
        );
        assert_eq!(raw(gs, k), None, "{k}: still on the gutter");
    }
    let st2 = api.stats();
    assert_eq!(
        st2.gutter_cleanup_deletes - st1.gutter_cleanup_deletes,
        changed.len() as u64,
        "each key written to the gutter is deleted there once"
    );
    // untouched keys of the returned server are still there
    assert_eq!(api.value(&vk[12]), Some(b"v1".to_vec()));
    assert_eq!(ok(api.incr(counter, 1), "incr after the return"), Some(6));
    refused(
        api.cas(&written[2], "x", &gutter_token),
        "cas with a gutter token after the return",
    );
    assert_eq!(raw(victim, &written[2]), None);
    assert_eq!(raw(gs, &written[2]), None);

    // a flap: written on the main server after the return, stopped again: the first outage's
    // gutter values never come back
    let k = &written[0];
    ok(api.set(k, "v4", 0, Expiry::NEVER), "set after the return");
    assert_eq!(raw(victim, k), some("v4"));
    victim.signal("STOP");
    for k in &changed {
        let got = api.value(k);
        assert_eq!(
            got,
            None,
            "{k}: the second outage served {:?}",
            got.as_deref().map(String::from_utf8_lossy)
        );
    }
    victim.signal("CONT");
    api.wait_back(First, &format!("{name}: back after the flap"));
    assert_eq!(
        api.value(k),
        Some(b"v4".to_vec()),
        "reads alone change nothing"
    );

    // a killed server (connections refused, not timed out): the same
    let dead = &s.0[1];
    let dk: Vec<&String> = unwritten
        .iter()
        .filter(|k| api.owner(First, k) == dead.addr())
        .take(2)
        .collect();
    assert_eq!(dk.len(), 2, "keys of {}", dead.addr());
    dead.signal("KILL");
    let st0 = api.stats();
    assert_eq!(
        ok(api.set(dk[0], "v5", 0, Expiry::NEVER), "set, server killed"),
        StoreOutcome::Stored
    );
    assert_eq!(raw(gs, dk[0]), some("v5"));
    assert!(meta(gs, dk[0]).expect("on the gutter").1 <= GUTTER_TTL_SECS);
    assert_eq!(api.value(dk[0]), Some(b"v5".to_vec()));
    assert_eq!(api.value(dk[1]), None, "a gutter miss");
    refused(api.incr(dk[1], 1), "incr, server killed");
    let st1 = api.stats();
    assert_eq!(grew!(st0, st1, gutter_requests, gutter_hits), (3, 1));
    println!("{name}: gutter {:?}", api.stats());
}

both_clients!(gutter, gutter_blocking, gutter_async, 13, 17);

// ---------------------------------------------------------------------------------------
// mirror
// ---------------------------------------------------------------------------------------

fn mirror(which: Which, base: u8) {
    if !require("memcached") {
        return;
    }
    let sa = Servers::start(base, 2);
    let sb = Servers::start(base + 2, 2);
    let a = Pool::new(sa.list(), Flavor::Libmemcached, Some(KeyHash::Md5));
    let b = Pool::new(sb.list(), Flavor::Libmemcached, Some(KeyHash::Md5));
    let shared = Pool {
        list: format!("{}\n{}\n", sb.0[0].addr(), sa.0[1].addr()),
        ..b.clone()
    };
    match build(which, &a, &shared, Kind::Mirror(ReadPolicy::PreferA)) {
        Err(Error::Config(_)) => {}
        Err(e) => panic!("pools sharing a server: {e}"),
        Ok(_) => panic!("mirrored pools sharing a server were accepted"),
    }
    let api = route(which, &a, &b, Kind::Mirror(ReadPolicy::PreferA));
    let name = which.name();
    let on_a = |k: &str| sa.by(&api.owner(First, k));
    let on_b = |k: &str| sb.by(&api.owner(Second, k));
    let victim = &sa.0[0];
    let all: Vec<String> = (0..200).map(|i| format!("{name}:mi:{i}")).collect();
    let (vk, others): (Vec<String>, Vec<String>) = all
        .into_iter()
        .partition(|k| api.owner(First, k) == victim.addr());
    assert!(vk.len() >= 20 && others.len() >= 20);

    // writes reach both
    for k in vk.iter().chain(&others) {
        assert_eq!(
            ok(api.set(k, "v1", 0, Expiry::NEVER), "set"),
            StoreOutcome::Stored
        );
    }
    for k in vk.iter().chain(&others).take(40) {
        assert_eq!((raw(on_a(k), k), raw(on_b(k), k)), (some("v1"), some("v1")));
    }
    // incr on both, each once; a's value
    let c = &others[0];
    ok(api.set(c, "10", 0, Expiry::NEVER), "set");
    assert_eq!(ok(api.incr(c, 5), "incr"), Some(15));
    assert_eq!((raw(on_a(c), c), raw(on_b(c), c)), (some("15"), some("15")));
    // the counters differ: a's result, b's copy deleted, a divergence
    let d = &others[1];
    api.pool_set(First, d, "10", 0);
    api.pool_set(Second, d, "20", 0);
    let st0 = api.stats();
    assert_eq!(ok(api.incr(d, 1), "incr"), Some(11), "a's value");
    assert_eq!((raw(on_a(d), d), raw(on_b(d), d)), (some("11"), None));
    assert_eq!(api.stats().mirror_divergences - st0.mirror_divergences, 1);
    // add where only b has it: a stores, b refuses: b's copy deleted
    let k = &others[2];
    ok(api.delete(k), "delete");
    api.pool_set(Second, k, "b-only", 0);
    assert_eq!(ok(api.add(k, "added"), "add"), StoreOutcome::Stored);
    assert_eq!((raw(on_a(k), k), raw(on_b(k), k)), (some("added"), None));
    // cas: the token's pool only, the other copy deleted
    let k = &others[3];
    let t = ok(api.gets(k), "gets").expect("value").token;
    assert_eq!(t.pool, First);
    assert_eq!(ok(api.cas(k, "cas-v", &t), "cas"), StoreOutcome::Stored);
    assert_eq!((raw(on_a(k), k), raw(on_b(k), k)), (some("cas-v"), None));
    // verify compares the copies
    let k = &others[4];
    assert!(ok(api.verify(k), "verify"));
    api.pool_set(Second, k, "other", 0);
    let st0 = api.stats();
    assert!(!ok(api.verify(k), "verify"));
    assert_eq!(api.stats().mirror_divergences - st0.mirror_divergences, 1);
    api.pool_set(Second, k, "v1", 9);
    assert!(!ok(api.verify(k), "verify"), "the flags differ");

    // a's server stopped: reads from b, writes Ok, a's copies repaired on its return
    victim.signal("STOP");
    api.mark_down(First, victim, &vk[19]);
    let st0 = api.stats();
    assert_eq!(api.value(&vk[0]), Some(b"v1".to_vec()), "read from b");
    let written = &vk[1..5];
    for k in written {
        assert_eq!(
            ok(api.set(k, "v2", 0, Expiry::NEVER), "set, a down"),
            StoreOutcome::Stored
        );
        assert_eq!(raw(on_b(k), k), some("v2"));
        assert_eq!(api.value(k), Some(b"v2".to_vec()), "read from b");
    }
    let deleted = &vk[5];
    assert_eq!(
        ok(api.delete(deleted), "delete, a down"),
        DeleteOutcome::Deleted
    );
    assert_eq!(raw(on_b(deleted), deleted), None);
    let counter = &vk[6];
    ok(api.set(counter, "v2", 0, Expiry::NEVER), "set");
    let items: Vec<(String, String)> = vk[7..9].iter().map(|k| (k.clone(), "v2".into())).collect();
    for r in api.set_multi(&items) {
        assert_eq!(ok(r, "set_multi, a down"), StoreOutcome::Stored);
    }
    let st1 = api.stats();
    println!("{name}: mirror during the outage {st1:?}");
    let changed = written.len() as u64 + 4;
    assert_eq!(
        st1.mirror_partial_writes - st0.mirror_partial_writes,
        changed
    );
    assert_eq!(st1.repairs_recorded - st0.repairs_recorded, changed);
    assert_eq!(
        st1.fallback_hits - st0.fallback_hits,
        written.len() as u64 + 1
    );
    for (k, r) in vk[0..4].iter().zip(api.get_multi(&vk[0..4])) {
        let want: &[u8] = if k == &vk[0] { b"v1" } else { b"v2" };
        assert_eq!(
            ok(r, "get_multi, a down").map(|i| i.value.to_vec()),
            Some(want.to_vec()),
            "{k}"
        );
    }

    victim.signal("CONT");
    api.wait_back(First, &format!("{name}: a's server is back"));
    let changed: Vec<&String> = written
        .iter()
        .chain([deleted, counter])
        .chain(items.iter().map(|(k, _)| k))
        .collect();
    for k in &changed {
        assert_eq!(raw(victim, k), None, "{k}: a kept its old copy");
        let got = api.value(k);
        assert_ne!(got, Some(b"v1".to_vec()), "{k}: a stale read");
    }
    assert_eq!(api.value(&vk[0]), Some(b"v1".to_vec()), "an untouched key");
    assert_eq!(raw(victim, &vk[0]), some("v1"));
    println!("{name}: mirror {:?}", api.stats());
}

both_clients!(mirror, mirror_blocking, mirror_async, 21, 25);

// ---------------------------------------------------------------------------------------
// metrics
// ---------------------------------------------------------------------------------------

/// The route counters through the `metrics` facade, with the recorder local to this thread
/// (the blocking client counts on the caller's thread; other tests run beside this one).
#[cfg(feature = "metrics")]
#[test]
fn warm_up_metrics() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    if !require("memcached") {
        return;
    }
    let s = Servers::start(29, 3);
    let (new, old) = flavour_switch(&s);
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let stats = metrics::with_local_recorder(&recorder, || {
        let api = route(Which::Blocking, &new, &old, Kind::WarmUp(Expiry::NEVER));
        let keys = api.keys("metrics:w", 6, false);
        for k in &keys[0..3] {
            api.pool_set(Second, k, "o", 0);
        }
        // 3 backfills, 3 misses; then hits in the new pool
        for k in &keys {
            let _ = api.value(k);
        }
        for k in &keys[0..3] {
            assert_eq!(api.value(k), Some(b"o".to_vec()));
        }
        // a lost backfill and a read-modify old copy
        api.pool_set(First, &keys[3], "n", 0);
        api.pool_set(Second, &keys[3], "o", 0);
        assert_eq!(ok(api.add(&keys[3], "x"), "add"), StoreOutcome::NotStored);
        api.pool_set(Second, &keys[4], "1", 0);
        assert_eq!(ok(api.incr(&keys[4], 1), "incr"), Some(2));
        refused(
            api.cas(
                &keys[5],
                "x",
                &RouteCas {
                    pool: Second,
                    server: api.owner(Second, &keys[5]),
                    unique: 1,
                },
            ),
            "cas with an old token",
        );
        api.stats()
    });
    let mut counters = std::collections::HashMap::new();
    let mut phase = None;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if !key.key().name().starts_with("memshard_route_") {
            continue;
        }
        let route: Vec<String> = key
            .key()
            .labels()
            .filter(|l| l.key() == "route")
            .map(|l| l.value().to_string())
            .collect();
        assert_eq!(route, ["warm_up"], "{:?}", key.key());
        match value {
            DebugValue::Counter(n) => {
                counters.insert(key.key().name().to_string(), n);
            }
            DebugValue::Gauge(g) if key.key().name() == "memshard_route_migrate_phase" => {
                phase = Some(g.into_inner());
            }
            _ => {}
        }
    }
    println!("{counters:?} {stats:?}");
    let c = |n: &str| {
        counters
            .get(&format!("memshard_route_{n}_total"))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(c("fallback_reads"), stats.fallback_reads);
    assert_eq!(
        c("fallback_reads"),
        8,
        "6 first reads, the add's, the incr's"
    );
    assert_eq!(c("fallback_hits"), 5);
    assert_eq!(c("backfills"), 4);
    assert_eq!(c("backfills_lost"), 1);
    assert_eq!(c("old_copies_deleted"), 1);
    assert_eq!(c("refused"), 1);
    assert_eq!(phase, None, "only a migrate route reports a phase");
}
