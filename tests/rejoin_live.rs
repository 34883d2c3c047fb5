//! Rejoin without stale data, for the blocking and the async client: with
//! auto-eject, the keys written or deleted while a server was out go to other servers; when it
//! comes back (SIGSTOP then SIGCONT: its data intact) it must not serve its old copies.
//!
//! Four memcached servers on loopback, failure limit 1, a short retry timeout. Keys are written;
//! one server is stopped; once it is ejected (polled), keys it owns are overwritten (single and
//! multi-key sets, add, incr) and deleted (single and multi-key); it is continued; once it is back
//! in the ring (polled), every key is read through the client (each must give its newest value,
//! or a miss when deleted: no stale read) and the returned server is read raw (its copies of the
//! changed keys are gone, its untouched keys are still there). With a bound smaller than the
//! changed keys, the returned server is flushed before it rejoins.
//!
//! No assertion is about time: waits are for states with a generous deadline.

mod common;
mod either;

use common::proxy::{FaultProxy, Mode};
use common::servers::{Cluster, Memcached, require};
use common::{decode, value_for};
use either::Api;
use memshard::{Client, FailurePolicy};
use std::collections::BTreeMap;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);
const KEYS: usize = 800;

fn policy() -> FailurePolicy {
    FailurePolicy::new(1, Duration::from_millis(200), true)
}

fn blocking_builder(c: &Cluster, limit: usize) -> memshard::Builder<memshard::Client> {
    Client::builder()
        .server_list(&c.server_list())
        .expect("server list")
        .failure_policy(policy())
        .read_timeout(Duration::from_millis(300))
        .rejoin_limit(limit)
}

#[cfg(feature = "async")]
fn async_builder(c: &Cluster, limit: usize) -> memshard::aio::Builder {
    memshard::aio::Client::builder()
        .server_list(&c.server_list())
        .expect("server list")
        .failure_policy(policy())
        .read_timeout(Duration::from_millis(300))
        .rejoin_limit(limit)
}

/// What the newest write left for a key.
#[derive(Clone, Debug, PartialEq)]
enum Newest {
    Value(Vec<u8>),
    Deleted,
}

struct Outcome {
    /// Client reads that gave anything but the newest value (or a miss for a deleted key).
    stale_reads: usize,
    /// Keys with a newest value that read as a miss (the value is on the interim owner).
    misses: usize,
    /// Changed keys of the returned server of which it still holds an old copy.
    stale_on_server: usize,
    changed: usize,
    /// Unchanged keys of the returned server that it still holds.
    untouched_kept: usize,
    untouched: usize,
}

/// The scenario: write, stop one server, wait for its ejection, change its keys, continue it,
/// wait for its return, read everything.
fn scenario(name: &str, c: &Cluster, api: &Api) -> Outcome {
    let keys: Vec<String> = (0..KEYS).map(|i| format!("{name}:rejoin:{i}")).collect();
    let mut newest: BTreeMap<String, Newest> = BTreeMap::new();
    for k in &keys {
        let v = value_for(k, 1);
        api.set(k, &v);
        newest.insert(k.clone(), Newest::Value(v.into_bytes()));
    }
    let victim_addr = api.owner(&keys[0]);
    let victim: &Memcached = c.by_addr(&victim_addr);
    let owned: Vec<String> = keys
        .iter()
        .filter(|k| api.owner(k) == victim_addr)
        .cloned()
        .collect();
    assert!(owned.len() >= 60, "{} keys on the victim", owned.len());

    victim.signal("STOP");
    // a read of its key times out (failure limit 1): ejected
    let waited = common::wait_until("the stopped server is ejected", DEADLINE, || {
        let _ = api.get(&owned[0]);
        api.down().iter().any(|s| s.addr == victim_addr) && api.live_count() == 3
    });
    println!("{name}: ejected after {waited:?}");

    // Change 5/6 of its keys, in every way; the last sixth stays as it was.
    let part = owned.len() / 6;
    let (singles, rest) = owned.split_at(part);
    let (multi, rest) = rest.split_at(part);
    let (noreply, rest) = rest.split_at(part);
    let (deleted, rest) = rest.split_at(part);
    let (deleted_multi, rest) = rest.split_at(part);
    let untouched = rest;
    // a counter: incr on the new owner misses (the key is not there), then it is set to a
    // number and incremented
    let counter = &singles[0];
    assert_eq!(api.incr(counter), None, "incr of a key the new owner lacks");
    api.set(counter, "41");
    assert_eq!(api.incr(counter), Some(42));
    newest.insert(counter.clone(), Newest::Value(b"42".to_vec()));
    for (i, k) in singles.iter().enumerate().skip(1) {
        let v = value_for(k, 2);
        // the new owner does not hold these keys: add stores as set does
        if i % 2 == 0 {
            api.set(k, &v);
        } else {
            api.add(k, &v);
        }
        newest.insert(k.clone(), Newest::Value(v.into_bytes()));
    }
    let items = |ks: &[String]| -> Vec<(String, String)> {
        ks.iter().map(|k| (k.clone(), value_for(k, 3))).collect()
    };
    let multi_items = items(multi);
    api.set_multi(&multi_items);
    let noreply_items = items(noreply);
    api.set_multi_noreply(&noreply_items);
    for (k, v) in multi_items.iter().chain(&noreply_items) {
        newest.insert(k.clone(), Newest::Value(v.clone().into_bytes()));
    }
    for k in deleted {
        api.delete(k);
        newest.insert(k.clone(), Newest::Deleted);
    }
    api.delete_multi(deleted_multi);
    for k in deleted_multi {
        newest.insert(k.clone(), Newest::Deleted);
    }

    victim.signal("CONT");
    let waited = common::wait_until("the continued server is back in the ring", DEADLINE, || {
        api.down().is_empty() && api.live_count() == 4
    });
    println!("{name}: back after {waited:?}");

    // A miss is not stale: a value written while the server was out lives on the server that
    // owned the key then, and a cache may miss; an old value is what must never come back.
    let mut stale_reads = 0;
    let mut misses = 0;
    for (k, want) in &newest {
        let got = api.get(k);
        let ok = match (want, &got) {
            (_, None) => {
                misses += usize::from(matches!(want, Newest::Value(_)));
                true
            }
            (Newest::Value(v), Some(g)) => g == v,
            (Newest::Deleted, Some(_)) => false,
        };
        if !ok {
            stale_reads += 1;
            if stale_reads <= 3 {
                println!(
                    "{name}: stale read of {k}: {:?} (newest {want:?})",
                    got.as_deref().and_then(decode)
                );
            }
        }
    }
    let changed: Vec<&String> = owned.iter().filter(|k| !untouched.contains(k)).collect();
    let stale_on_server = changed
        .iter()
        .filter(|k| match (victim.raw_get(k.as_bytes()), &newest[**k]) {
            (None, _) => false,
            (Some(v), Newest::Value(n)) => &v != n,
            (Some(_), Newest::Deleted) => true,
        })
        .count();
    let untouched_kept = untouched
        .iter()
        .filter(|k| victim.raw_get(k.as_bytes()).is_some())
        .count();
    let out = Outcome {
        stale_reads,
        misses,
        stale_on_server,
        changed: changed.len(),
        untouched_kept,
        untouched: untouched.len(),
    };
    println!(
        "{name}: {} keys, {} on the returned server, {} changed while it was out: {} stale reads through the client ({} misses), {} stale copies left on it; {} of its {} untouched keys kept",
        KEYS,
        owned.len(),
        out.changed,
        out.stale_reads,
        out.misses,
        out.stale_on_server,
        out.untouched_kept,
        out.untouched
    );
    out
}

fn cluster() -> Option<Cluster> {
    cluster_of(4)
}

fn cluster_of(n: usize) -> Option<Cluster> {
    require("memcached").then(|| Cluster::on_free_ports(&vec![1; n]))
}

#[cfg(feature = "async")]
fn async_api(c: &Cluster, limit: usize) -> Api {
    let rt = either::runtime();
    let client = rt.block_on(async { async_builder(c, limit).build() });
    Api::Async(client.expect("build"), rt)
}

/// Under the bound: the changed keys are deleted on the returned server, its other data kept.
fn check_deleted(out: &Outcome) {
    assert_eq!(out.stale_reads, 0, "stale reads");
    assert_eq!(
        out.stale_on_server, 0,
        "stale copies on the returned server"
    );
    assert_eq!(
        out.untouched_kept, out.untouched,
        "under the bound, the returned server keeps its other data"
    );
}

/// Over the bound: the returned server is flushed before it rejoins.
fn check_flushed(out: &Outcome) {
    assert_eq!(out.stale_reads, 0, "stale reads");
    assert_eq!(
        out.stale_on_server, 0,
        "stale copies on the returned server"
    );
    assert_eq!(
        out.untouched_kept, 0,
        "over the bound, the returned server is flushed"
    );
}

/// A write sent before the outage whose reply timed out lands on the server after its first
/// cleaning deleted the key: held back until then by a proxy, as a stopped server's socket
/// buffer holds it. Its value is older than the one written on the fallback since, so the
/// server must clean again before it takes reads: the client then reads the newest value or
/// a miss, never the late one. (The proxy holds every connection opened before the server
/// came back, so the write cannot reach it on a new connection either.)
fn late_write(name: &str, c: &Cluster, api: &Api, proxy: &FaultProxy) {
    let proxied = proxy.addr_string();
    let key = (0..)
        .map(|i| format!("{name}:late:{i}"))
        .find(|k| api.owner(k) == proxied)
        .expect("a key of the proxied server");
    api.set(&key, "v0");

    proxy.state.set(Mode::Stall);
    let late = api.try_set(&key, "late");
    assert!(late.is_err(), "the set times out: {late:?}");
    common::wait_until("the stalled server is ejected", DEADLINE, || {
        api.down().iter().any(|s| s.addr == proxied)
    });
    api.set(&key, "newest");

    let server = &c.servers[0];
    let deletes = |s: &Memcached| s.stat("delete_hits") + s.stat("delete_misses");
    let before = deletes(server);
    proxy.state.pass_new_only();
    common::wait_until("the first cleaning deletes the key", DEADLINE, || {
        server.stat("delete_hits") >= 1
    });
    proxy.state.release_held();
    common::wait_until("the late set lands", DEADLINE, || {
        server.raw_get(key.as_bytes()).as_deref() == Some(&b"late"[..])
    });
    common::wait_until("the server is back", DEADLINE, || api.down().is_empty());
    let read = api.get(&key);
    println!(
        "{name}: {} deletes while it came back; then read {:?}",
        deletes(server) - before,
        read.as_deref().map(String::from_utf8_lossy)
    );
    assert!(
        read.is_none() || read.as_deref() == Some(&b"newest"[..]),
        "the late write is read: {read:?}"
    );
    assert_eq!(server.raw_get(key.as_bytes()), None, "cleaned again");
}

/// Two servers, the first behind a proxy; a retry timeout long enough that the late write
/// lands between the two cleanings.
fn late_write_setup() -> Option<(Cluster, FaultProxy, String)> {
    let c = cluster_of(2)?;
    let proxy = FaultProxy::start(c.servers[0].sock());
    let list = format!("{} 1\n{} 1\n", proxy.addr_string(), c.servers[1].addr());
    Some((c, proxy, list))
}

fn late_policy() -> FailurePolicy {
    FailurePolicy::new(1, Duration::from_secs(1), true)
}

#[test]
fn blocking_a_late_write_is_cleaned_before_the_rejoin() {
    let Some((c, proxy, list)) = late_write_setup() else {
        return;
    };
    let client = Client::builder()
        .server_list(&list)
        .expect("server list")
        .failure_policy(late_policy())
        .read_timeout(Duration::from_millis(200))
        .build()
        .expect("build");
    late_write("blocking", &c, &Api::Blocking(client), &proxy);
}

#[cfg(feature = "async")]
#[test]
fn async_a_late_write_is_cleaned_before_the_rejoin() {
    let Some((c, proxy, list)) = late_write_setup() else {
        return;
    };
    let rt = either::runtime();
    let client = rt.block_on(async {
        memshard::aio::Client::builder()
            .server_list(&list)
            .expect("server list")
            .failure_policy(late_policy())
            .read_timeout(Duration::from_millis(200))
            .build()
    });
    late_write("async", &c, &Api::Async(client.expect("build"), rt), &proxy);
}

#[test]
fn blocking_rejoin_deletes_changed_keys() {
    let Some(c) = cluster() else { return };
    let api = Api::Blocking(blocking_builder(&c, 100_000).build().expect("build"));
    check_deleted(&scenario("blocking", &c, &api));
}

#[test]
fn blocking_rejoin_over_the_bound_flushes() {
    let Some(c) = cluster() else { return };
    let api = Api::Blocking(blocking_builder(&c, 10).build().expect("build"));
    check_flushed(&scenario("blocking-flush", &c, &api));
}

#[cfg(feature = "async")]
#[test]
fn async_rejoin_deletes_changed_keys() {
    let Some(c) = cluster() else { return };
    check_deleted(&scenario("async", &c, &async_api(&c, 100_000)));
}

#[cfg(feature = "async")]
#[test]
fn async_rejoin_over_the_bound_flushes() {
    let Some(c) = cluster() else { return };
    check_flushed(&scenario("async-flush", &c, &async_api(&c, 10)));
}
