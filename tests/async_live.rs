//! The async client (`memshard::aio`, feature `async`) against real memcached servers started
//! here on loopback: commands and outcomes, placement equal to the blocking client's ring,
//! multi-key operations, hostile keys, timeouts, failure policy, cancellation safety under
//! thousands of dropped futures, interop with the blocking client, and servers added and
//! removed under concurrent load.
#![cfg(feature = "async")]

mod common;

use common::{decode, value_for};

use common::proxy::{FaultProxy, Mode};
use common::servers::{Cluster, Memcached, free_port, require};
use memshard::aio;
use memshard::plan::{Keys, Method};
use memshard::{Client, DeleteOutcome, Error, FailurePolicy, Server, StoreOutcome, TouchOutcome};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
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

fn sock(m: &Memcached) -> SocketAddr {
    SocketAddr::from((m.ip, m.port))
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_have_explicit_outcomes() {
    let Some(c) = cluster() else { return };
    let m = aclient(&c.server_list());
    let k = "aio:outcomes:1";
    // every future is Send (usable in tokio::spawn, axum handlers)
    assert_send(m.set_multi(&[(k, "v")], 0, 0)).await;
    assert_send(m.get_multi(&[k])).await;
    assert_send(m.delete(k)).await.unwrap();
    assert_eq!(m.get(k).await.unwrap(), None);
    assert_eq!(
        m.replace(k, "x", 0, 0).await.unwrap(),
        StoreOutcome::NotStored
    );
    assert_eq!(m.append(k, "x").await.unwrap(), StoreOutcome::NotStored);
    assert_eq!(m.add(k, "v1", 7, 0).await.unwrap(), StoreOutcome::Stored);
    assert_eq!(m.add(k, "v2", 0, 0).await.unwrap(), StoreOutcome::NotStored);
    let item = m.get(k).await.unwrap().unwrap();
    assert_eq!(
        (item.value.as_slice(), item.flags, item.cas),
        (&b"v1"[..], 7, None)
    );
    assert_eq!(m.append(k, "+a").await.unwrap(), StoreOutcome::Stored);
    assert_eq!(m.prepend(k, "p+").await.unwrap(), StoreOutcome::Stored);
    assert_eq!(m.get(k).await.unwrap().unwrap().text(), Some("p+v1+a"));
    let cas = m.gets(k).await.unwrap().unwrap().cas.expect("cas unique");
    assert_eq!(
        m.cas(k, "c1", 0, 0, cas).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(
        m.cas(k, "c2", 0, 0, cas).await.unwrap(),
        StoreOutcome::Exists
    );
    assert_eq!(
        m.cas("aio:outcomes:absent", "c", 0, 0, 1).await.unwrap(),
        StoreOutcome::NotFound
    );
    assert_eq!(m.replace(k, "r", 0, 0).await.unwrap(), StoreOutcome::Stored);
    assert_eq!(m.touch(k, 100).await.unwrap(), TouchOutcome::Touched);
    assert_eq!(
        m.touch("aio:outcomes:absent", 100).await.unwrap(),
        TouchOutcome::NotFound
    );
    assert_eq!(m.gat(k, 200).await.unwrap().unwrap().value, b"r");
    assert!(m.gats(k, 200).await.unwrap().unwrap().cas.is_some());
    assert_eq!(m.delete(k).await.unwrap(), DeleteOutcome::Deleted);
    assert_eq!(m.delete(k).await.unwrap(), DeleteOutcome::NotFound);

    assert_eq!(m.incr("aio:outcomes:n", 1).await.unwrap(), None);
    m.set("aio:outcomes:n", "1000", 0, 0).await.unwrap();
    assert_eq!(m.incr("aio:outcomes:n", 1).await.unwrap(), Some(1001));
    assert_eq!(m.decr("aio:outcomes:n", 2000).await.unwrap(), Some(0));
    m.set("aio:outcomes:text", "abc", 0, 0).await.unwrap();
    assert!(matches!(
        m.incr("aio:outcomes:text", 1).await,
        Err(Error::Server { .. })
    ));
    // the connection stays usable after a server-side refusal
    assert_eq!(
        m.get("aio:outcomes:text").await.unwrap().unwrap().value,
        b"abc"
    );
    let versions = m.version().await;
    assert_eq!(versions.len(), 4);
    assert!(
        versions
            .iter()
            .all(|(_, v)| v.as_ref().is_ok_and(|v| v.starts_with("1.")))
    );
    let stats = m.stats(None).await;
    assert!(stats.iter().all(|(_, s)| {
        s.as_ref()
            .is_ok_and(|s| s.iter().any(|(k, _)| k == "curr_items"))
    }));
    assert!(matches!(
        m.stats(Some("a b")).await[0].1,
        Err(Error::Config(_))
    ));
    assert!(m.verbosity(0).await.iter().all(|(_, r)| r.is_ok()));
    let big = vec![0u8; 1024 * 1024 + 1];
    assert!(matches!(
        m.set("aio:big", &big, 0, 0).await,
        Err(Error::ValueTooLarge { .. })
    ));
    // flush_all on a dedicated server, not on the shared cluster
    let s = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let one = aclient(&format!("{} 1", s.addr()));
    one.set("f", "1", 0, 0).await.unwrap();
    assert!(one.flush_all(None).await.iter().all(|(_, r)| r.is_ok()));
    assert_eq!(one.get("f").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placement_equals_the_blocking_clients_ring() {
    let Some(c) = cluster() else { return };
    let m = aclient(&c.server_list());
    let blocking = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(m.ring().servers(), blocking.ring().servers());
    let mut per_server: HashMap<String, usize> = HashMap::new();
    for i in 0..300 {
        let key = format!("aio:placement:{i}:ключ");
        let owner = blocking
            .ring()
            .server_for(key.as_bytes())
            .unwrap()
            .addr
            .clone();
        assert_eq!(m.ring().server_for(key.as_bytes()).unwrap().addr, owner);
        m.set(&key, format!("v{i}"), 0, 0).await.unwrap();
        for s in &c.servers {
            let held = s.raw_get(key.as_bytes());
            assert_eq!(
                held.is_some(),
                s.addr() == owner,
                "{key}: on {} (owner {owner})",
                s.addr()
            );
        }
        *per_server.entry(owner).or_default() += 1;
    }
    assert_eq!(per_server.len(), 4, "{per_server:?}");
    // other flavours: the same ring as the blocking client's, key by key
    for flavor in [
        memshard::Flavor::Twemproxy,
        memshard::Flavor::Spymemcached,
        memshard::Flavor::Dalli,
    ] {
        let a = aio::Client::builder()
            .server_list(&c.server_list())
            .unwrap()
            .flavor(flavor)
            .build()
            .unwrap();
        let b = Client::builder()
            .server_list(&c.server_list())
            .unwrap()
            .flavor(flavor)
            .build()
            .unwrap();
        for i in 0..500 {
            let key = format!("flavor:{i}");
            assert_eq!(
                a.ring().route(key.as_bytes()),
                b.ring().route(key.as_bytes()),
                "{flavor:?} {key}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_key_operations_across_servers() {
    let Some(c) = cluster() else { return };
    let m = aclient(&c.server_list());
    let items: Vec<(String, String)> = (0..500)
        .map(|i| (format!("aio:multi:{i}"), format!("v{i}")))
        .collect();
    let set = m.set_multi(&items, 3, 0).await;
    assert!(
        set.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{set:?}"
    );
    let mut keys: Vec<String> = items.iter().map(|(k, _)| k.clone()).collect();
    keys.push("aio:multi:absent".into());
    keys.push("aio:multi:7".into());
    keys.push("bad key".into());
    let got = m.get_multi(&keys).await;
    assert_eq!(got.len(), keys.len());
    for (i, (k, v)) in items.iter().enumerate() {
        let item = got[i]
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap_or_else(|| panic!("{k} missing"));
        assert_eq!((item.value.as_slice(), item.flags), (v.as_bytes(), 3));
    }
    assert_eq!(got[500].as_ref().unwrap(), &None);
    assert_eq!(got[501].as_ref().unwrap().as_ref().unwrap().value, b"v7");
    assert!(matches!(got[502], Err(Error::InvalidKey { .. })));
    let del = m.delete_multi(&keys[..10]).await;
    assert!(del.iter().all(|r| matches!(r, Ok(DeleteOutcome::Deleted))));
    assert!(
        m.delete_multi(&keys[..10])
            .await
            .iter()
            .all(|r| matches!(r, Ok(DeleteOutcome::NotFound)))
    );
    // a value too large fails alone; large values round trip
    let big: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    let mixed = vec![
        ("aio:multi:big".to_string(), big.clone()),
        ("aio:multi:huge".to_string(), vec![0u8; 2 << 20]),
        ("aio:multi:small".to_string(), b"s".to_vec()),
    ];
    let r = m.set_multi(&mixed, 0, 0).await;
    assert!(r[0].is_ok() && r[2].is_ok());
    assert!(matches!(r[1], Err(Error::ValueTooLarge { .. })));
    let got = m
        .get_multi(&["aio:multi:big", "aio:multi:small", "aio:multi:huge"])
        .await;
    assert_eq!(got[0].as_ref().unwrap().as_ref().unwrap().value, big);
    assert_eq!(got[1].as_ref().unwrap().as_ref().unwrap().value, b"s");
    assert_eq!(got[2].as_ref().unwrap(), &None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_keys_never_reach_a_server() {
    if !require("memcached") {
        return;
    }
    let s = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let p = FaultProxy::start(sock(&s));
    let m = aclient(&format!("{} 1", p.addr_string()));
    let mut hostile: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"x\r\nflush_all".to_vec(),
        b"x\nflush_all".to_vec(),
        b"a b".to_vec(),
        b"get\tx".to_vec(),
        b"nul\0byte".to_vec(),
        b"del\x7f".to_vec(),
        vec![b'k'; 251],
        b"k 0 0 1\r\nX\r\nset y".to_vec(),
    ];
    hostile.extend((0u8..32).map(|c| vec![b'a', c, b'b']));
    let mut tried = 0;
    for k in &hostile {
        let results = [
            m.get(k).await.err(),
            m.gets(k).await.err(),
            m.gat(k, 1).await.err(),
            m.set(k, "v", 0, 0).await.err(),
            m.add(k, "v", 0, 0).await.err(),
            m.cas(k, "v", 0, 0, 1).await.err(),
            m.delete(k).await.err(),
            m.incr(k, 1).await.err(),
            m.touch(k, 1).await.err(),
            m.get_multi(&[k.as_slice()]).await.remove(0).err(),
            m.set_multi(&[(k.as_slice(), "v")], 0, 0)
                .await
                .remove(0)
                .err(),
            m.delete_multi(&[k.as_slice()]).await.remove(0).err(),
        ];
        for r in results {
            assert!(matches!(r, Some(Error::InvalidKey { .. })), "{k:?}: {r:?}");
            tried += 1;
        }
    }
    assert_eq!(p.state.to_server_bytes.load(Ordering::SeqCst), 0);
    assert_eq!(
        p.state.connections.load(Ordering::SeqCst),
        0,
        "not even a connection was opened"
    );
    // the prefix counts towards the 250 bytes
    let ns = aio::Client::builder()
        .server_list(&format!("{} 1", p.addr_string()))
        .unwrap()
        .prefix("ns:")
        .build()
        .unwrap();
    assert!(matches!(
        ns.get([b'k'; 248]).await,
        Err(Error::InvalidKey { .. })
    ));
    assert_eq!(p.state.to_server_bytes.load(Ordering::SeqCst), 0);
    println!(
        "aio hostile keys: {} keys x 12 commands = {tried} attempts, 0 bytes reached the server",
        hostile.len()
    );
    m.set("ok", "fine", 0, 0).await.unwrap();
    assert!(p.state.to_server_bytes.load(Ordering::SeqCst) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_surface_as_timeout_and_never_leave_a_reply_behind() {
    if !require("memcached") {
        return;
    }
    // a SIGSTOPped server
    let s = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let m = aio::Client::builder()
        .server_list(&format!("{} 1\n", s.addr()))
        .unwrap()
        .pool_size(1)
        .read_timeout(Duration::from_millis(200))
        .failure_policy(FailurePolicy {
            failure_limit: 0,
            ..FailurePolicy::default()
        })
        .build()
        .unwrap();
    m.set("counter", "1000", 0, 0).await.unwrap();
    m.set("other", "other-value", 0, 0).await.unwrap();
    s.signal("STOP");
    let t = Instant::now();
    let r = m.incr("counter", 1).await;
    assert!(matches!(r, Err(Error::Timeout { op: "read", .. })), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    s.signal("CONT");
    // the stalled incr's late reply (1001) went to a connection that was dropped
    assert_eq!(m.get("other").await.unwrap().unwrap().value, b"other-value");
    assert_eq!(m.get("counter").await.unwrap().unwrap().value, b"1001");
    assert_eq!(m.incr("counter", 1).await.unwrap(), Some(1002));

    // a stalled proxy
    let p = FaultProxy::start(sock(&s));
    let m = aio::Client::builder()
        .server_list(&format!("{} 1\n", p.addr_string()))
        .unwrap()
        .pool_size(1)
        .read_timeout(Duration::from_millis(150))
        .failure_policy(FailurePolicy {
            failure_limit: 0,
            ..FailurePolicy::default()
        })
        .build()
        .unwrap();
    m.set("k", "v", 0, 0).await.unwrap();
    p.state.set(Mode::Stall);
    let t = Instant::now();
    let r = m.get("k").await;
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    let r = m.get_multi(&["k", "other"]).await;
    assert!(
        r.iter().all(|r| matches!(r, Err(Error::Timeout { .. }))),
        "{r:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(2));
    p.state.set(Mode::Pass);
    assert_eq!(m.get("k").await.unwrap().unwrap().value, b"v");
    assert_eq!(m.get("other").await.unwrap().unwrap().value, b"other-value");

    // a malformed reply is a Protocol error and drops the connection
    let before = p.state.connections.load(Ordering::SeqCst);
    p.state
        .corrupt_next(b"VALUE other 0 11\r\nother-value\r\nEND\r\n");
    let r = m.get("k").await;
    assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
    assert_eq!(m.get("k").await.unwrap().unwrap().value, b"v");
    assert_eq!(p.state.connections.load(Ordering::SeqCst), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_limit_then_fail_fast_and_auto_eject_like_the_blocking_client() {
    if !require("memcached") {
        return;
    }
    let live = Cluster::on_free_ports(&[1, 1, 1]);
    let dead_port = free_port(Ipv4Addr::LOCALHOST);
    let dead_addr = format!("127.0.0.1:{dead_port}");
    let list = format!("{}{dead_addr} 1\n", live.server_list());
    let policy = FailurePolicy {
        failure_limit: 2,
        retry_timeout: Duration::from_secs(30),
        auto_eject: false,
    };
    let m = aio::Client::builder()
        .server_list(&list)
        .unwrap()
        .connect_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_millis(300))
        .failure_policy(policy)
        .build()
        .unwrap();
    let keys: Vec<String> = (0..200).map(|i| format!("aio:dead:{i}")).collect();
    let on_dead = |k: &String| m.ring().server_for(k.as_bytes()).unwrap().addr == dead_addr;
    let dead_key = keys.iter().find(|k| on_dead(k)).unwrap().clone();
    for _ in 0..2 {
        let e = m.get(&dead_key).await.unwrap_err();
        assert!(e.is_server_failure(), "{e:?}");
    }
    let t = Instant::now();
    let r = m.get(&dead_key).await;
    assert!(matches!(r, Err(Error::ServerDown { .. })), "{r:?}");
    assert!(t.elapsed() < Duration::from_millis(50), "fail fast");
    assert_eq!(m.down_servers().len(), 1);
    let items: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), format!("{k}!"))).collect();
    let set = m.set_multi(&items, 0, 0).await;
    let got = m.get_multi(&keys).await;
    for (i, k) in keys.iter().enumerate() {
        if on_dead(k) {
            assert!(matches!(got[i], Err(Error::ServerDown { .. })), "{k}");
            assert!(set[i].is_err());
        } else {
            assert_eq!(
                got[i].as_ref().unwrap().as_ref().unwrap().value,
                format!("{k}!").as_bytes()
            );
        }
    }

    // auto-eject: the dead server's keys move to the ring over the live servers, the very ring
    // the blocking client uses in the same state
    let policy = FailurePolicy {
        auto_eject: true,
        ..policy
    };
    let a = aio::Client::builder()
        .server_list(&list)
        .unwrap()
        .checkout_timeout(Duration::from_millis(300))
        .failure_policy(policy)
        .build()
        .unwrap();
    let b = Client::builder()
        .server_list(&list)
        .unwrap()
        .checkout_timeout(Duration::from_millis(300))
        .failure_policy(policy)
        .build()
        .unwrap();
    for _ in 0..2 {
        assert!(a.get(&dead_key).await.is_err());
        let (b2, k) = (b.clone(), dead_key.clone());
        let _ = tokio::task::spawn_blocking(move || b2.get(&k))
            .await
            .unwrap();
    }
    assert_eq!(a.current_ring().servers().len(), 3);
    assert_eq!(a.current_ring().servers(), b.current_ring().servers());
    for k in &keys {
        assert_eq!(
            a.current_ring().route(k.as_bytes()),
            b.current_ring().route(k.as_bytes())
        );
    }
    assert_eq!(
        a.set(&dead_key, "moved", 0, 0).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(a.get(&dead_key).await.unwrap().unwrap().value, b"moved");
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
    let stored = tokio::task::spawn_blocking(move || b2.set_multi(&fb, 5, 0))
        .await
        .unwrap();
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
        assert_eq!((item.value.as_slice(), item.flags), (v.as_bytes(), 5));
        read += 1;
    }
    for (k, v) in from_blocking.iter().take(50) {
        assert_eq!(a.get(k).await.unwrap().unwrap().value, v.as_bytes());
        read += 1;
    }
    let stored = a.set_multi(&from_async, 6, 0).await;
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
        assert_eq!((item.value.as_slice(), item.flags), (v.as_bytes(), 6));
        read += 1;
    }
    // and each key sits on the server the ring names (with the prefix on the wire)
    let ring = b.ring();
    let owner = ring.server_for(from_async[0].0.as_bytes()).unwrap();
    assert_eq!(
        c.by_addr(&owner.addr)
            .raw_get(format!("x:{}", from_async[0].0).as_bytes())
            .as_deref(),
        Some(from_async[0].1.as_bytes())
    );
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
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_requests_never_leave_a_reply_for_the_next_one() {
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
        .build()
        .unwrap();
    let conns_before: u64 = servers.iter().map(|s| s.stat("total_connections")).sum();
    let tally = std::sync::Arc::new(Tally::default());
    const TASKS: u64 = 16;
    const KEYS: usize = 40;
    const ROUNDS: u64 = 2500;
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let client = client.clone();
        let tally = tally.clone();
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
            for _ in 0..ROUNDS {
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
                            c2.set(&key, value_for(&key, ver), 0, 0).await?;
                        }
                        4..=7 => {
                            if let Some(item) = c2.get(&key).await? {
                                read.push((k, item.value));
                            }
                        }
                        _ => {
                            let got = c2.get_multi(&multi_keys).await;
                            for (j, r) in got.into_iter().enumerate() {
                                if let Some(item) = r? {
                                    read.push((multi[j], item.value));
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
                let set = client.set(key, value_for(key, version), 0, 0).await;
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
    for h in handles {
        h.await.unwrap();
    }
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let conns_after: u64 = servers.iter().map(|s| s.stat("total_connections")).sum();
    println!(
        "cancellation: {} requests started, {} cancelled, {} completed, {} values checked, {} wrong values, {} errors; {} connections opened",
        g(&tally.started),
        g(&tally.cancelled),
        g(&tally.completed),
        g(&tally.checked),
        g(&tally.wrong),
        g(&tally.errors),
        conns_after - conns_before
    );
    assert_eq!(g(&tally.wrong), 0, "wrong values");
    assert_eq!(g(&tally.errors), 0, "a completed request failed");
    assert!(
        g(&tally.cancelled) >= 2000,
        "too few cancellations to mean anything"
    );
    assert!(g(&tally.checked) >= 2000);
}

/// Reads a key's value must carry: the key itself.
fn member_value(k: &str) -> String {
    format!("{k}=value")
}

/// Reader tasks for the membership test: each loops over `keys` (single gets, and every
/// fourth round a 10-key get_multi) until `stop`, counting reads, wrong values and errors.
fn spawn_readers(
    client: &aio::Client,
    keys: &Arc<Vec<String>>,
    stop: &Arc<AtomicBool>,
    tally: &Arc<[AtomicU64; 3]>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..8)
        .map(|t| {
            let (client, keys, stop, tally) =
                (client.clone(), keys.clone(), stop.clone(), tally.clone());
            tokio::spawn(async move {
                let [ops, wrong, errors] = &*tally;
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
                    for (k, r) in batch.iter().zip(got) {
                        ops.fetch_add(1, Ordering::Relaxed);
                        match r {
                            // every value read must be this key's
                            Ok(Some(item)) if item.value != member_value(k).as_bytes() => {
                                wrong.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => {}
                            Err(e) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                                eprintln!("{k}: {e}");
                            }
                        }
                    }
                }
            })
        })
        .collect()
}

/// Live membership on the async client (the blocking `membership_live` test's scenario):
/// a 5th server added, then the 2nd removed, each while 8 tokio tasks read keys whose values
/// encode the key. No read may return another key's value or fail; afterwards exactly the keys
/// the planner says move miss; the servers that stay keep their pools; the removed server's
/// pool (and its connections) goes once its last request ends; the removal is applied from a
/// thread outside the runtime.
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
    assert!(
        client
            .set_multi(&items, 0, 0)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
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
    let misses = |got: &[memshard::Result<Option<memshard::Item>>]| {
        got.iter().filter(|r| matches!(r, Ok(None))).count() as u64
    };
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);

    // add a 5th server under load
    let mut five = four.clone();
    five.push(server(&ms[4]));
    let expected_add = planned(&client, &five);
    let stop = Arc::new(AtomicBool::new(false));
    let tally: Arc<[AtomicU64; 3]> = Arc::default();
    let readers = spawn_readers(&client, &keys, &stop, &tally);
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.set_servers(five.clone()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    for h in readers {
        h.await.unwrap();
    }
    let got = client.get_multi(&keys).await;
    let misses_after_add = misses(&got);
    let [ops, wrong, errors] = &*tally;
    println!(
        "aio: add a 5th server under load: {} reads by 8 tasks, {} wrong values, {} errors; {} of {} keys now miss (planner expected {})",
        g(ops),
        g(wrong),
        g(errors),
        misses_after_add,
        keys.len(),
        expected_add
    );
    assert_eq!(g(wrong), 0, "wrong values");
    assert_eq!(g(errors), 0, "errors");
    assert!(g(ops) >= 1000, "too few reads to mean anything");
    assert_eq!(
        misses_after_add, expected_add,
        "exactly the keys the planner said move now miss"
    );
    assert_eq!(client.ring().servers().len(), 5);
    // the servers that stayed kept their pools: no reconnect storm
    let new_conns = ms[0].stat("total_connections") - conns_before;
    assert!(
        new_conns <= 4,
        "{new_conns} new connections to a server that stayed"
    );

    // refill, then remove the second server under load, from a thread outside the runtime
    assert!(
        client
            .set_multi(&items, 0, 0)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    let mut without = five.clone();
    let gone = without.remove(1);
    let expected_remove = planned(&client, &without);
    let stop = Arc::new(AtomicBool::new(false));
    let tally: Arc<[AtomicU64; 3]> = Arc::default();
    let readers = spawn_readers(&client, &keys, &stop, &tally);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let busy_conns = ms[1].stat("curr_connections");
    let c = client.clone();
    tokio::task::spawn_blocking(move || {
        std::thread::spawn(move || c.set_servers(without))
            .join()
            .unwrap()
    })
    .await
    .unwrap()
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    for h in readers {
        h.await.unwrap();
    }
    let got = client.get_multi(&keys).await;
    let misses_after_remove = misses(&got);
    let [ops, wrong, errors] = &*tally;
    let final_errors = got.iter().filter(|r| r.is_err()).count();
    // the removed server's pool is gone with its last request: its connections close
    let t = Instant::now();
    let mut gone_conns = ms[1].stat("curr_connections");
    while gone_conns > idle_conns && t.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        gone_conns = ms[1].stat("curr_connections");
    }
    println!(
        "aio: remove {} under load: {} reads by 8 tasks, {} wrong values, {} errors; {} of {} keys miss (planner expected {}), {} errors after; its connections {} idle, {} in use, {} after {:?}",
        gone.addr,
        g(ops),
        g(wrong),
        g(errors),
        misses_after_remove,
        keys.len(),
        expected_remove,
        final_errors,
        idle_conns,
        busy_conns,
        gone_conns,
        t.elapsed()
    );
    assert_eq!(g(wrong), 0, "wrong values");
    assert_eq!(g(errors), 0, "errors");
    assert!(g(ops) >= 1000, "too few reads to mean anything");
    assert_eq!(final_errors, 0);
    assert_eq!(misses_after_remove, expected_remove);
    assert!(got.iter().all(|r| match r {
        Ok(Some(item)) => std::str::from_utf8(&item.value).is_ok_and(|v| v.ends_with("=value")),
        _ => true,
    }));
    assert_eq!(client.ring().servers().len(), 4);
    assert!(
        !client.ring().servers().iter().any(|s| s.port == gone.port),
        "the removed server is out of the ring"
    );
    assert!(
        busy_conns > idle_conns,
        "the pool was in use before the removal"
    );
    assert!(
        gone_conns <= idle_conns,
        "the removed server's pool still holds {} connections",
        gone_conns - idle_conns
    );
}
