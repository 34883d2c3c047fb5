//! The async client (`memshard::aio`, feature `async`) against real memcached servers started
//! here on loopback, what is its own or compares it with the blocking client: Send futures,
//! placement equal to the real libmemcached's, auto-eject routing equal to the blocking
//! client's and libmemcached's, cancellation safety under thousands of dropped futures,
//! interop with the blocking client, and servers added and removed under concurrent load.
//! Commands, multi-key operations, key checks, timeouts and the failure policy run for both
//! clients in tests/scenarios.rs.
//!
//! No assertion is about time: waits are for a state (with a generous deadline that only a
//! state that never comes exceeds), load phases run for a number of operations, and timing
//! figures are printed.
#![cfg(feature = "async")]

mod common;

use common::{decode, value_for};
use memshard::Expiry;

use common::servers::{Cluster, Memcached, require};
use common::silent::Silent;
use memshard::aio;
use memshard::plan::{Keys, Method};
use memshard::{Client, Error, FailurePolicy, Server, StoreOutcome};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn cluster() -> Option<&'static Cluster> {
    static C: OnceLock<Option<Cluster>> = OnceLock::new();
    C.get_or_init(|| require("memcached").then(Cluster::four))
        .as_ref()
}

fn aclient(list: &str) -> aio::Client {
    aio::Client::builder()
        .server_list(list)
        .unwrap()
        .pool_size(4)
        .build()
        .unwrap()
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

/// How long a wait for a state may take before the state is taken to never come: far beyond
/// anything a loaded machine needs.
const GENEROUS: Duration = Duration::from_secs(120);

/// Polls `done` until it holds (yielding to the runtime between polls); fails only if it never
/// does within [`GENEROUS`]. Returns how long it took, for printing.
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < GENEROUS,
            "{what}: not reached within {GENEROUS:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    t.elapsed()
}

/// Which server holds each of `keys` (with `wire` in front on the wire), read raw from every
/// server of `servers`: `(address, value)`, and a failure if a key is on more than one server
/// or on none.
fn holders<K: AsRef<str>>(servers: &[Memcached], wire: &str, keys: &[K]) -> Vec<(String, Vec<u8>)> {
    let names: Vec<String> = keys
        .iter()
        .map(|k| format!("{wire}{}", k.as_ref()))
        .collect();
    let held: Vec<HashMap<Vec<u8>, Vec<u8>>> =
        servers.iter().map(|m| m.text().get_many(&names)).collect();
    names
        .iter()
        .map(|n| {
            let on: Vec<(String, Vec<u8>)> = servers
                .iter()
                .zip(&held)
                .filter_map(|(m, h)| h.get(n.as_bytes()).map(|v| (m.addr(), v.clone())))
                .collect();
            assert_eq!(on.len(), 1, "{n} is held by {} servers", on.len());
            on.into_iter().next().unwrap()
        })
        .collect()
}

/// Every key held by the server libmemcached picks for it, with `value(i)`; the number of keys
/// per server (every server of `servers` must own some).
fn assert_placed_like_libmemcached<K: AsRef<str>>(
    servers: &[Memcached],
    list: &str,
    wire: &str,
    keys: &[K],
    value: impl Fn(usize) -> String,
) -> Option<HashMap<String, usize>> {
    let names: Vec<&str> = keys.iter().map(|k| k.as_ref()).collect();
    let owners = common::libmemcached::route(list, &names)?;
    let mut per_server: HashMap<String, usize> = HashMap::new();
    for (i, ((k, owner), (on, v))) in keys
        .iter()
        .zip(&owners)
        .zip(holders(servers, wire, keys))
        .enumerate()
    {
        assert_eq!(
            &on,
            owner,
            "{}: libmemcached puts it on {owner}",
            k.as_ref()
        );
        assert_eq!(v, value(i).into_bytes(), "{}", k.as_ref());
        *per_server.entry(on).or_default() += 1;
    }
    assert_eq!(per_server.values().sum::<usize>(), keys.len());
    for m in servers {
        assert!(
            per_server.get(&m.addr()).is_some_and(|&n| n > 0),
            "{} owns none of {} keys: {per_server:?}",
            m.addr(),
            keys.len()
        );
    }
    Some(per_server)
}

/// Every future of the async client is Send (usable in `tokio::spawn`, axum handlers). The
/// commands' outcomes run for both clients in tests/scenarios.rs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_future_is_send() {
    let Some(c) = cluster() else { return };
    let m = aclient(&c.server_list());
    let k = "aio:send:1";
    assert_eq!(
        assert_send(m.set_multi(&[(k, "v")], 0, Expiry::NEVER))
            .await
            .len(),
        1
    );
    assert_eq!(assert_send(m.get_multi(&[k])).await.len(), 1);
    assert_eq!(assert_send(m.delete_multi(&[k])).await.len(), 1);
    assert_send(m.set(k, "v", Expiry::NEVER)).await.unwrap();
    assert_send(m.get(k)).await.unwrap();
    assert_send(m.gats(k, Expiry::NEVER)).await.unwrap();
    assert_send(m.incr(k, 1)).await.ok();
    assert_send(m.delete(k)).await.unwrap();
    assert_send(m.stats(None)).await;
    assert_send(m.version()).await;
}

/// Each key the async client writes (one `set` at a time, and batched with `set_multi`) lands on
/// the server the real libmemcached picks on the same server list (weights 3/1/2/1, two servers
/// on port 11211), read raw from the servers. (The flavours' placement runs for both clients in
/// tests/scenarios.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placement_equals_libmemcached() {
    let Some(c) = cluster() else { return };
    let m = aclient(&c.server_list());
    let keys: Vec<String> = (0..400)
        .map(|i| format!("aio:placement:{i}:ключ"))
        .collect();
    let value = |i: usize| format!("v{i}");
    for (i, k) in keys[..200].iter().enumerate() {
        assert_eq!(
            m.set(k, value(i), Expiry::NEVER).await.unwrap(),
            StoreOutcome::Stored
        );
    }
    let batch: Vec<(&str, String)> = (200..400).map(|i| (keys[i].as_str(), value(i))).collect();
    let stored = m.set_multi(&batch, 0, Expiry::NEVER).await;
    assert_eq!(stored.len(), 200);
    assert!(
        stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{stored:?}"
    );
    if let Some(per_server) =
        assert_placed_like_libmemcached(&c.servers, &c.server_list(), "", &keys, value)
    {
        println!("aio placement: 400 keys where libmemcached puts them: {per_server:?}");
    }
}

/// With auto-eject, once a silent server is down both clients route its keys over the live
/// servers exactly as libmemcached does over those servers, with no connection attempt to it.
/// (The failure limit and fail fast themselves run for both clients in tests/scenarios.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_eject_routes_like_the_blocking_client_and_libmemcached() {
    if !require("memcached") {
        return;
    }
    let live = Cluster::on_free_ports(&[1, 1, 1]);
    let silent = Silent::start();
    let dead_addr = silent.addr();
    let list = format!("{}{dead_addr} 1\n", live.server_list());
    // down for the rest of the test, however slow the machine
    let policy = FailurePolicy::new(2, Duration::from_secs(3600), true);
    let keys: Vec<String> = (0..200).map(|i| format!("aio:dead:{i}")).collect();
    let Some(owners) = common::libmemcached::route(&list, &keys) else {
        return;
    };
    let on_dead: Vec<bool> = owners.iter().map(|o| *o == dead_addr).collect();
    let dead_key = keys[on_dead
        .iter()
        .position(|&d| d)
        .expect("a key on the dead server")]
    .clone();
    // auto-eject: the down server's keys move to the ring over the live servers, as libmemcached
    // places them over those servers; the async and the blocking client alike
    let a = aio::Client::builder()
        .server_list(&list)
        .unwrap()
        .read_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_secs(5))
        .failure_policy(policy)
        .build()
        .unwrap();
    let b = Client::builder()
        .server_list(&list)
        .unwrap()
        .read_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_secs(5))
        .failure_policy(policy)
        .build()
        .unwrap();
    for _ in 0..2 {
        assert!(a.get(&dead_key).await.is_err());
        let (b2, k) = (b.clone(), dead_key.clone());
        let r = tokio::task::spawn_blocking(move || b2.get(&k))
            .await
            .unwrap();
        assert!(r.is_err(), "{r:?}");
    }
    let attempts = silent.attempts();
    let mut live_addrs: Vec<String> = live.servers.iter().map(|s| s.addr()).collect();
    live_addrs.sort();
    for ring in [a.current_ring(), b.current_ring()] {
        let mut in_ring: Vec<String> = ring.servers().iter().map(|s| s.addr.clone()).collect();
        in_ring.sort();
        assert_eq!(in_ring, live_addrs, "the ring over the live servers");
    }
    let moved: Vec<String> = (0..300)
        .map(|i| format!("aio:eject:{i}"))
        .chain([dead_key.clone()])
        .collect();
    let written = |who: &str, i: usize| format!("{}={who}", moved[i]);
    let items: Vec<(String, String)> = (0..moved.len())
        .map(|i| (moved[i].clone(), written("async", i)))
        .collect();
    let stored = a.set_multi(&items, 0, Expiry::NEVER).await;
    assert_eq!(stored.len(), moved.len());
    assert!(stored.iter().all(|r| r.is_ok()), "{stored:?}");
    assert_placed_like_libmemcached(&live.servers, &live.server_list(), "", &moved, |i| {
        written("async", i)
    });
    let items: Vec<(String, String)> = (0..moved.len())
        .map(|i| (moved[i].clone(), written("blocking", i)))
        .collect();
    let b2 = b.clone();
    let stored = tokio::task::spawn_blocking(move || b2.set_multi(&items, 0, Expiry::NEVER))
        .await
        .unwrap();
    assert_eq!(stored.len(), moved.len());
    assert!(stored.iter().all(|r| r.is_ok()), "{stored:?}");
    assert_placed_like_libmemcached(&live.servers, &live.server_list(), "", &moved, |i| {
        written("blocking", i)
    });
    assert_eq!(
        a.get(&dead_key).await.unwrap().unwrap().value,
        written("blocking", moved.len() - 1).as_bytes()
    );
    assert_eq!(
        silent.attempts(),
        attempts,
        "no connection attempt to an ejected server"
    );
}

/// Interop: keys set by the blocking client are read by the async one, and the other way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interop_with_the_blocking_client() {
    let Some(c) = cluster() else { return };
    let b = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .prefix("x:")
        .build()
        .unwrap();
    let a = aio::Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .prefix("x:")
        .build()
        .unwrap();
    let from_blocking: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("interop:b:{i}:é"), format!("from-blocking-{i}")))
        .collect();
    let from_async: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("interop:a:{i}:中文"), format!("from-async-{i}")))
        .collect();
    let (b2, fb) = (b.clone(), from_blocking.clone());
    let stored = tokio::task::spawn_blocking(move || b2.set_multi(&fb, 5, Expiry::NEVER))
        .await
        .unwrap();
    assert_eq!(stored.len(), from_blocking.len());
    assert!(stored.iter().all(|r| r.is_ok()));
    let keys: Vec<&str> = from_blocking.iter().map(|(k, _)| k.as_str()).collect();
    let got = a.get_multi(&keys).await;
    let mut read = 0;
    for ((_, v), r) in from_blocking.iter().zip(&got) {
        let item = r
            .as_ref()
            .unwrap()
            .as_ref()
            .expect("blocking-written key missing");
        assert_eq!((&item.value[..], item.flags), (v.as_bytes(), 5));
        read += 1;
    }
    for (k, v) in from_blocking.iter().take(50) {
        assert_eq!(a.get(k).await.unwrap().unwrap().value, v.as_bytes());
        read += 1;
    }
    let stored = a.set_multi(&from_async, 6, Expiry::NEVER).await;
    assert_eq!(stored.len(), from_async.len());
    assert!(stored.iter().all(|r| r.is_ok()));
    let (b2, fa) = (b.clone(), from_async.clone());
    let back = tokio::task::spawn_blocking(move || {
        let keys: Vec<&str> = fa.iter().map(|(k, _)| k.as_str()).collect();
        b2.get_multi(&keys)
    })
    .await
    .unwrap();
    for ((_, v), r) in from_async.iter().zip(&back) {
        let item = r
            .as_ref()
            .unwrap()
            .as_ref()
            .expect("async-written key missing");
        assert_eq!((&item.value[..], item.flags), (v.as_bytes(), 6));
        read += 1;
    }
    assert_eq!(got.len(), from_blocking.len());
    assert_eq!(back.len(), from_async.len());
    // and each key sits on the server libmemcached picks for it (the prefix is on the wire,
    // not in the hash)
    for written in [&from_blocking, &from_async] {
        let keys: Vec<&str> = written.iter().map(|(k, _)| k.as_str()).collect();
        assert_placed_like_libmemcached(&c.servers, &c.server_list(), "x:", &keys, |i| {
            written[i].1.clone()
        });
    }
    println!("interop: {read} keys read across clients, 0 misses");
}

#[derive(Default)]
struct Tally {
    started: AtomicU64,
    cancelled: AtomicU64,
    completed: AtomicU64,
    checked: AtomicU64,
    wrong: AtomicU64,
    errors: AtomicU64,
}

type Read = Vec<(usize, Vec<u8>)>;

async fn yields(n: u32) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

/// Thousands of requests cancelled at random points — `tokio::time::timeout` with tiny random
/// durations (zero: after the first poll), a `select!` lost to a few yields, a task aborted
/// after a few yields — on pools of 2 connections, so that a
/// connection left with a reply on its way would be handed to the next request at once. Every
/// value read (during and after) must encode its own key and a version written for it, and no
/// request that completed may fail (a foreign reply would be a Protocol error or a wrong value).
///
/// The load runs until enough happened to mean something, counted, not timed: 10,000 requests
/// cancelled, 10,000 completed, 10,000 values checked, and 2000 connections opened (each beyond
/// the pools' first four is one dropped because a cancelled request left it mid-exchange). Only
/// if 16 x 25,000 requests never get there does the test fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_requests_never_leave_a_reply_for_the_next_one() {
    cancelled_over(memshard::Protocol::Text).await
}

/// The same over the meta protocol: a cancelled meta exchange (a quiet pipeline
/// cut before its `mn`, a reply half read) must not leave a reply the next request takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_meta_requests_never_leave_a_reply_for_the_next_one() {
    cancelled_over(memshard::Protocol::Meta).await
}

async fn cancelled_over(protocol: memshard::Protocol) {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (0..2)
        .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
        .collect();
    let list: String = servers
        .iter()
        .map(|s| format!("{} 1\n", s.addr()))
        .collect();
    let client = aio::Client::builder()
        .server_list(&list)
        .unwrap()
        .pool_size(2)
        .checkout_timeout(Duration::from_secs(5))
        .read_timeout(Duration::from_secs(5))
        .protocol(protocol)
        .build()
        .unwrap();
    // memcached counts every connection it accepted, our `stats` connections included
    let stat_calls = AtomicU64::new(0);
    let connections = || {
        stat_calls.fetch_add(1, Ordering::Relaxed);
        servers
            .iter()
            .map(|s| s.stat("total_connections") - 1)
            .sum::<u64>()
    };
    let conns_before = connections();
    let tally = std::sync::Arc::new(Tally::default());
    let done = Arc::new(AtomicBool::new(false));
    const TASKS: u64 = 16;
    const KEYS: usize = 40;
    const MAX_ROUNDS: u64 = 25_000;
    const ENOUGH: u64 = 10_000;
    const ENOUGH_CONNECTIONS: u64 = 2000;
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let client = client.clone();
        let tally = tally.clone();
        let done = done.clone();
        handles.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(0xC0FFEE + t);
            let keys: Vec<String> = (0..KEYS).map(|i| format!("cancel:{t}:{i}")).collect();
            let mut sent: Vec<Vec<u64>> = vec![Vec::new(); KEYS];
            let mut version = 0u64;
            let check = |k: usize, v: &[u8], sent: &[Vec<u64>]| {
                tally.checked.fetch_add(1, Ordering::Relaxed);
                let ok =
                    decode(v).is_some_and(|(key, ver)| key == keys[k] && sent[k].contains(&ver));
                if !ok {
                    tally.wrong.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "WRONG value for {}: {:?}",
                        keys[k],
                        String::from_utf8_lossy(v)
                    );
                }
            };
            for _ in 0..MAX_ROUNDS {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                let k = rng.usize(..KEYS);
                let op = rng.u8(..10);
                let how = rng.u8(..5);
                let budget = Duration::from_micros(rng.u64(0..1500));
                let polls = rng.u32(0..24);
                tally.started.fetch_add(1, Ordering::Relaxed);
                if op < 4 {
                    version += 1;
                    sent[k].push(version);
                }
                let ver = version;
                let c2 = client.clone();
                let key = keys[k].clone();
                let multi: Vec<usize> = (0..5).map(|_| rng.usize(..KEYS)).collect();
                let multi_keys: Vec<String> = multi.iter().map(|&i| keys[i].clone()).collect();
                let fut = async move {
                    let mut read: Read = Vec::new();
                    match op {
                        0..=3 => {
                            c2.set(&key, value_for(&key, ver), Expiry::NEVER).await?;
                        }
                        4..=7 => {
                            if let Some(item) = c2.get(&key).await? {
                                read.push((k, item.value.to_vec()));
                            }
                        }
                        _ => {
                            let got = c2.get_multi(&multi_keys).await;
                            for (j, r) in got.into_iter().enumerate() {
                                if let Some(item) = r? {
                                    read.push((multi[j], item.value.to_vec()));
                                }
                            }
                        }
                    }
                    Ok::<_, Error>(read)
                };
                // Cancelled at a random point, or (how == 4) run to the end. tokio's timers
                // tick in milliseconds, longer than most loopback exchanges, so most
                // cancellation points are set by yields: the request is polled while the
                // other tasks run, then dropped.
                let outcome: Option<Result<Read, Error>> = match how {
                    0 => tokio::time::timeout(budget, fut).await.ok(),
                    1 => tokio::select! {
                        biased;
                        r = fut => Some(r),
                        _ = yields(polls) => None,
                    },
                    2 => tokio::time::timeout(Duration::ZERO, fut).await.ok(),
                    3 => {
                        let h = tokio::spawn(fut);
                        yields(polls).await;
                        h.abort();
                        match h.await {
                            Ok(r) => Some(r),
                            Err(e) if e.is_cancelled() => None,
                            Err(e) => panic!("{e}"),
                        }
                    }
                    _ => Some(fut.await),
                };
                match outcome {
                    None => {
                        tally.cancelled.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(Ok(read)) => {
                        tally.completed.fetch_add(1, Ordering::Relaxed);
                        for (i, v) in read {
                            check(i, &v, &sent);
                        }
                    }
                    Some(Err(e)) => {
                        tally.errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!("error: {e}");
                    }
                }
            }
            // afterwards: every key written once more and read back exactly
            for (k, key) in keys.iter().enumerate() {
                version += 1;
                sent[k].push(version);
                let set = client
                    .set(key, value_for(key, version), Expiry::NEVER)
                    .await;
                match (set, client.get(key).await) {
                    (Ok(StoreOutcome::Stored), Ok(Some(item))) => {
                        check(k, &item.value, &sent);
                        if decode(&item.value).map(|d| d.1) != Some(version) {
                            tally.wrong.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    other => {
                        tally.errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!("after: {key}: {other:?}");
                    }
                }
            }
            let names: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
            for (k, r) in client.get_multi(&names).await.into_iter().enumerate() {
                match r {
                    Ok(Some(item)) => check(k, &item.value, &sent),
                    other => {
                        tally.errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!("after: {}: {other:?}", keys[k]);
                    }
                }
            }
        }));
    }
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    // the connections memcached accepted, less one per `stats` connection of ours since before
    let opened = || {
        let now = connections();
        let ours = (g(&stat_calls) - 1) * servers.len() as u64;
        now - conns_before - ours
    };
    let enough = || {
        g(&tally.cancelled) >= ENOUGH
            && g(&tally.completed) >= ENOUGH
            && g(&tally.checked) >= ENOUGH
            && opened() >= ENOUGH_CONNECTIONS
    };
    let mut reached = false;
    while !reached && handles.iter().any(|h| !h.is_finished()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        reached = enough();
    }
    done.store(true, Ordering::Relaxed);
    for h in handles {
        h.await.unwrap();
    }
    let conns = opened();
    println!(
        "cancellation over {protocol}: {} requests started, {} cancelled, {} completed, {} values checked, {} wrong values, {} errors; {} connections opened",
        g(&tally.started),
        g(&tally.cancelled),
        g(&tally.completed),
        g(&tally.checked),
        g(&tally.wrong),
        g(&tally.errors),
        conns
    );
    assert_eq!(g(&tally.wrong), 0, "wrong values");
    assert_eq!(g(&tally.errors), 0, "a completed request failed");
    assert!(
        reached || enough(),
        "{} requests never made {ENOUGH} cancellations, completions and checked values and {ENOUGH_CONNECTIONS} abandoned connections",
        TASKS * MAX_ROUNDS
    );
}

/// Reads a key's value must carry: the key itself.
fn member_value(k: &str) -> String {
    format!("{k}=value")
}

/// What the membership test's readers counted: reads, hits (values checked), wrong values and
/// errors.
#[derive(Default)]
struct Reads {
    ops: AtomicU64,
    hits: AtomicU64,
    wrong: AtomicU64,
    errors: AtomicU64,
}

/// Reader tasks for the membership test: each loops over `keys` (single gets, and every
/// fourth round a 10-key get_multi) until `stop`, counting reads, hits, wrong values and errors.
fn spawn_readers(
    client: &aio::Client,
    keys: &Arc<Vec<String>>,
    stop: &Arc<AtomicBool>,
    tally: &Arc<Reads>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..8)
        .map(|t| {
            let (client, keys, stop, tally) =
                (client.clone(), keys.clone(), stop.clone(), tally.clone());
            tokio::spawn(async move {
                let mut i = t * 7919;
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    i = (i + 104_729) % keys.len();
                    let batch: Vec<&String> = if round.is_multiple_of(4) {
                        (0..10).map(|j| &keys[(i + j * 31) % keys.len()]).collect()
                    } else {
                        vec![&keys[i]]
                    };
                    let got = if batch.len() == 1 {
                        vec![client.get(batch[0]).await]
                    } else {
                        client.get_multi(&batch).await
                    };
                    assert_eq!(got.len(), batch.len());
                    for (k, r) in batch.iter().zip(got) {
                        tally.ops.fetch_add(1, Ordering::Relaxed);
                        match r {
                            // every value read must be this key's
                            Ok(Some(item)) => {
                                tally.hits.fetch_add(1, Ordering::Relaxed);
                                if item.value != member_value(k).as_bytes() {
                                    tally.wrong.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Ok(None) => {}
                            Err(e) => {
                                tally.errors.fetch_add(1, Ordering::Relaxed);
                                eprintln!("{k}: {e}");
                            }
                        }
                    }
                }
            })
        })
        .collect()
}

/// Reads the readers make before a change and after it: the change happens under load, and
/// the load goes on over the new servers for as many reads again.
const READS_PER_PHASE: u64 = 5000;

/// Runs `change` while 8 reader tasks read `keys`: after [`READS_PER_PHASE`] reads, and
/// stopping them [`READS_PER_PHASE`] reads after it returned. Returns the readers' counts, and
/// what `during` saw (called once the first reads are done, just before the change).
async fn under_load<T>(
    client: &aio::Client,
    keys: &Arc<Vec<String>>,
    during: impl FnOnce() -> T,
    change: impl AsyncFnOnce(),
) -> (Arc<Reads>, T) {
    let stop = Arc::new(AtomicBool::new(false));
    let tally: Arc<Reads> = Arc::default();
    let readers = spawn_readers(client, keys, &stop, &tally);
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    wait_for("reads before the change", || {
        g(&tally.ops) >= READS_PER_PHASE
    })
    .await;
    let seen = during();
    change().await;
    let at_change = g(&tally.ops);
    wait_for("reads after the change", || {
        g(&tally.ops) >= at_change + READS_PER_PHASE
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for h in readers {
        h.await.unwrap();
    }
    (tally, seen)
}

/// Every key read back: its own value or a miss, nothing else; the number of misses.
fn misses_of(keys: &[String], got: &[memshard::Result<Option<memshard::Item>>]) -> u64 {
    assert_eq!(got.len(), keys.len());
    let mut misses = 0;
    for (k, r) in keys.iter().zip(got) {
        match r {
            Ok(Some(item)) => assert_eq!(item.value, member_value(k).as_bytes(), "{k}"),
            Ok(None) => misses += 1,
            Err(e) => panic!("{k}: {e}"),
        }
    }
    misses
}

/// Live membership on the async client (the blocking `membership_live` test's scenario):
/// a 5th server added, then the 2nd removed, each while 8 tokio tasks read keys whose values
/// encode the key (5000 reads before the change and 5000 after). No read may return another
/// key's value or fail; afterwards exactly the keys the planner says move miss; the servers
/// that stay keep their pools; the removed server's pool (and its connections) goes once its
/// last request ends; the removal is applied from a thread outside the runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_added_and_removed_under_concurrent_load() {
    if !require("memcached") {
        return;
    }
    let ms: Vec<Memcached> = (0..5)
        .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
        .collect();
    let server = |m: &Memcached| Server::new(m.ip.to_string(), m.port);
    let idle_conns = ms[1].stat("curr_connections");
    let four: Vec<Server> = ms[..4].iter().map(server).collect();
    let client = aio::Client::builder()
        .servers(four.clone())
        .pool_size(4)
        .build()
        .unwrap();
    let keys: Arc<Vec<String>> = Arc::new((0..20_000).map(|i| format!("amember:{i}")).collect());
    let items: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), member_value(k))).collect();
    let stored = client.set_multi(&items, 0, Expiry::NEVER).await;
    assert_eq!(stored.len(), items.len());
    assert!(stored.iter().all(|r| r.is_ok()));
    let conns_before = ms[0].stat("total_connections");
    let key_bytes = Keys::List(keys.iter().map(|k| k.clone().into_bytes()).collect());
    let planned = |client: &aio::Client, list: &[Server]| {
        client
            .plan_servers(list, &key_bytes)
            .unwrap()
            .methods
            .iter()
            .find(|m| m.method == Method::Ketama)
            .unwrap()
            .moved
    };
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);

    // add a 5th server under load
    let mut five = four.clone();
    five.push(server(&ms[4]));
    let expected_add = planned(&client, &five);
    let (tally, ()) = under_load(
        &client,
        &keys,
        || (),
        async || client.set_servers(five.clone()).unwrap(),
    )
    .await;
    let got = client.get_multi(&keys).await;
    let misses_after_add = misses_of(&keys, &got);
    println!(
        "aio: add a 5th server under load: {} reads by 8 tasks ({} hits), {} wrong values, {} errors; {} of {} keys now miss (planner expected {})",
        g(&tally.ops),
        g(&tally.hits),
        g(&tally.wrong),
        g(&tally.errors),
        misses_after_add,
        keys.len(),
        expected_add
    );
    assert_eq!(g(&tally.wrong), 0, "wrong values");
    assert_eq!(g(&tally.errors), 0, "errors");
    assert!(g(&tally.hits) > 0, "no value was read");
    assert!(expected_add > 0);
    assert_eq!(
        misses_after_add, expected_add,
        "exactly the keys the planner said move now miss"
    );
    assert_eq!(client.ring().servers(), &five[..]);
    // the servers that stayed kept their pools: no reconnect storm
    let new_conns = ms[0].stat("total_connections") - conns_before;
    assert!(
        new_conns <= 4,
        "{new_conns} new connections to a server that stayed"
    );

    // refill, then remove the second server under load, from a thread outside the runtime
    let stored = client.set_multi(&items, 0, Expiry::NEVER).await;
    assert_eq!(stored.len(), items.len());
    assert!(stored.iter().all(|r| r.is_ok()));
    let mut without = five.clone();
    let gone = without.remove(1);
    let expected_remove = planned(&client, &without);
    let c = client.clone();
    let target = without.clone();
    let (tally, busy_conns) = under_load(
        &client,
        &keys,
        || ms[1].stat("curr_connections"),
        async move || {
            tokio::task::spawn_blocking(move || {
                std::thread::spawn(move || c.set_servers(target))
                    .join()
                    .unwrap()
            })
            .await
            .unwrap()
            .unwrap()
        },
    )
    .await;
    let got = client.get_multi(&keys).await;
    let misses_after_remove = misses_of(&keys, &got);
    // the removed server's pool is gone with its last request: its connections close
    let waited = wait_for("the removed server's connections close", || {
        ms[1].stat("curr_connections") <= idle_conns
    })
    .await;
    println!(
        "aio: remove {} under load: {} reads by 8 tasks ({} hits), {} wrong values, {} errors; {} of {} keys miss (planner expected {}); its connections {} idle, {} in use, back to idle after {:?}",
        gone.addr,
        g(&tally.ops),
        g(&tally.hits),
        g(&tally.wrong),
        g(&tally.errors),
        misses_after_remove,
        keys.len(),
        expected_remove,
        idle_conns,
        busy_conns,
        waited
    );
    assert_eq!(g(&tally.wrong), 0, "wrong values");
    assert_eq!(g(&tally.errors), 0, "errors");
    assert!(g(&tally.hits) > 0, "no value was read");
    assert!(expected_remove > 0);
    assert_eq!(misses_after_remove, expected_remove);
    assert_eq!(client.ring().servers(), &without[..]);
    assert!(
        busy_conns > idle_conns,
        "the pool was in use before the removal"
    );
}
