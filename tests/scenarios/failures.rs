//! Servers that die, refuse, stall or never answer: the failure policy (failure limit, fail
//! fast, auto-eject, rejoin), refused connections, and timeouts.

use crate::api::{Api, Settings, build, by_protocol};
use crate::common::proxy::{FaultProxy, Mode};
use crate::common::servers::{Cluster, Memcached};
use crate::support::{HOUR, LO, Silent, assert_placed, refs, same, value, wait_for};
use memshard::Expiry;
use memshard::{Error, FailurePolicy, Ring, Server, StoreOutcome};
use std::io::ErrorKind;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Auto-eject on, four servers; one is killed mid-run. Its keys fail until the failure limit,
/// then `down_servers` lists it and its keys move to the ring over the three live servers
/// (written there, read back); the other keys keep working throughout. The server is started
/// again on its address: a probe finds it, it rejoins (`down_servers` empty, the full ring
/// again) and takes its keys back.
pub async fn a_killed_server_is_ejected_and_rejoins_when_revived<C: Api>() {
    let mut c = Cluster::on_free_ports(&[1, 1, 1, 1]);
    // retry: how often the down server is probed; the waits below are for states
    let policy = FailurePolicy::new(2, Duration::from_millis(50), true);
    let m = build::<C>(|b| {
        b.server_list(&c.server_list())
            .failure_policy(policy)
            .connect_timeout(Duration::from_secs(5))
    });
    let full = m.current_ring();
    let items: Vec<(String, String)> = (0..400)
        .map(|i| (format!("{i}:eject"), format!("v{i}")))
        .collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    assert_placed(&refs(&c.servers), &full, &items, same, same);

    let victim = c.servers[2].addr();
    let (ip, port) = (c.servers[2].ip, c.servers[2].port);
    let on_victim = |k: &str| full.server_for(k.as_bytes()).unwrap().addr == victim;
    let dead_key = items
        .iter()
        .map(|(k, _)| k.as_str())
        .find(|k| on_victim(k))
        .unwrap();
    let live_items: Vec<&(String, String)> = items.iter().filter(|(k, _)| !on_victim(k)).collect();
    c.servers[2].signal("KILL");

    // its keys fail until it is down; the others never do
    let mut failures = 0;
    wait_for("the killed server is marked down", async || {
        if let Err(e) = m.get(dead_key).await {
            assert!(e.is_server_failure(), "{e:?}");
            failures += 1;
        }
        let (k, v) = live_items[failures % live_items.len()];
        assert_eq!(value(&m.get(k).await, k), v.as_bytes());
        !m.down_servers().is_empty()
    })
    .await;
    assert_eq!(
        failures, policy.failure_limit as usize,
        "down after exactly failure_limit failures"
    );
    let down = m.down_servers();
    assert_eq!(down.len(), 1);
    assert_eq!(down[0].addr, victim);
    let live: Vec<&Memcached> = c.servers.iter().filter(|s| s.addr() != victim).collect();
    let mut live_addrs: Vec<String> = live.iter().map(|s| s.addr()).collect();
    live_addrs.sort();
    let routing = m.current_ring();
    let mut in_ring: Vec<String> = routing.servers().iter().map(|s| s.addr.clone()).collect();
    in_ring.sort();
    assert_eq!(in_ring, live_addrs, "the ring over the live servers");
    // the same ring as one built over the live servers alone
    let over_live = Ring::new(routing.servers().to_vec(), full.flavor()).unwrap();
    for (k, _) in &items {
        assert_eq!(
            routing.server_for(k.as_bytes()),
            over_live.server_for(k.as_bytes()),
            "{k}"
        );
    }

    // the live keys still read; the victim's keys are written to and read from the live ring
    let keys: Vec<&str> = live_items.iter().map(|(k, _)| k.as_str()).collect();
    for ((k, v), r) in live_items.iter().zip(m.get_multi(&keys).await) {
        assert_eq!(value(&r, k), v.as_bytes());
    }
    let moved: Vec<(String, String)> = items
        .iter()
        .filter(|(k, _)| on_victim(k))
        .map(|(k, _)| (k.clone(), format!("{k}=moved")))
        .collect();
    assert!(!moved.is_empty());
    let stored = m.set_multi(&moved, 0, Expiry::NEVER).await;
    assert!(
        stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{stored:?}"
    );
    assert_placed(&live, &routing, &moved, same, same);
    assert_eq!(
        value(&m.get(dead_key).await, dead_key),
        format!("{dead_key}=moved").as_bytes()
    );

    // revived on its address: it rejoins and owns its keys again
    c.servers[2] = Memcached::start(ip, port, "");
    wait_for("the revived server rejoins", async || {
        m.down_servers().is_empty()
    })
    .await;
    wait_for("the full ring routes again", async || {
        m.current_ring().servers().len() == 4
    })
    .await;
    let back: Vec<(String, String)> = items
        .iter()
        .map(|(k, _)| (k.clone(), format!("{k}=back")))
        .collect();
    let stored = m.set_multi(&back, 0, Expiry::NEVER).await;
    assert!(stored.iter().all(|r| r.is_ok()), "{stored:?}");
    // the keys that never moved: on their owner alone; the victim's: on it again (the copies
    // written on the live ring while it was out stay there, unread)
    let (theirs, stayed): (Vec<_>, Vec<_>) = back.iter().cloned().partition(|(k, _)| on_victim(k));
    assert_placed(&refs(&c.servers), &full, &stayed, same, same);
    for (k, v) in &theirs {
        assert_eq!(
            c.servers[2].raw_get(k.as_bytes()).as_deref(),
            Some(v.as_bytes()),
            "{k}"
        );
    }
    let keys: Vec<&str> = theirs.iter().map(|(k, _)| k.as_str()).collect();
    for ((k, v), r) in theirs.iter().zip(m.get_multi(&keys).await) {
        assert_eq!(value(&r, k), v.as_bytes());
    }
    assert_eq!(
        value(&m.get(dead_key).await, dead_key),
        format!("{dead_key}=back").as_bytes()
    );
}

/// A server that accepts connections and never answers (a listener nobody accepts on): after
/// `failure_limit` failures it is down; its keys then fail with `ServerDown` without a
/// connection attempt (counted in its accept queue), in single and multi-key requests, while
/// the other servers' keys are stored and read where the ring says.
pub async fn a_down_server_fails_fast_without_a_connection_attempt<C: Api>() {
    let live = Cluster::on_free_ports(&[1, 1, 1]);
    let silent = Silent::start();
    let dead_addr = silent.addr();
    let list = format!("{}{dead_addr} 1\n", live.server_list());
    // down for the rest of the test, however slow the machine
    let policy = FailurePolicy::new(2, HOUR, false);
    let m = build::<C>(|b| {
        b.server_list(&list)
            .read_timeout(Duration::from_millis(200))
            .checkout_timeout(Duration::from_secs(5))
            .failure_policy(policy)
    });
    let keys: Vec<String> = (0..200).map(|i| format!("{i}:dead")).collect();
    let on_dead: Vec<bool> = keys
        .iter()
        .map(|k| m.ring().server_for(k.as_bytes()).unwrap().addr == dead_addr)
        .collect();
    let dead_key = &keys[on_dead
        .iter()
        .position(|&d| d)
        .expect("a key on the dead server")];
    for i in 0..2 {
        let e = m.get(dead_key).await.unwrap_err();
        assert!(e.is_server_failure(), "{e:?}");
        assert!(
            silent.attempts() > i,
            "failure {i} was a request to the server"
        );
        assert_eq!(
            m.down_servers().len(),
            i as usize,
            "down after {} failures",
            i + 1
        );
    }
    let attempts = silent.attempts();
    let r = m.get(dead_key).await;
    assert!(matches!(r, Err(Error::ServerDown { .. })), "{r:?}");
    assert_eq!(
        silent.attempts(),
        attempts,
        "fail fast: no connection attempt"
    );
    let down = m.down_servers();
    assert_eq!(down.len(), 1);
    assert_eq!(down[0].addr, dead_addr);
    let items: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), format!("{k}!"))).collect();
    let set = m.set_multi(&items, 0, Expiry::NEVER).await;
    let got = m.get_multi(&keys).await;
    let del = m.delete_multi(&keys[..20]).await;
    assert_eq!((set.len(), got.len(), del.len()), (200, 200, 20));
    for (i, k) in keys.iter().enumerate() {
        if on_dead[i] {
            assert!(
                matches!(got[i], Err(Error::ServerDown { .. })),
                "{k}: {:?}",
                got[i]
            );
            assert!(
                matches!(set[i], Err(Error::ServerDown { .. })),
                "{k}: {:?}",
                set[i]
            );
        } else {
            assert!(
                matches!(set[i], Ok(StoreOutcome::Stored)),
                "{k}: {:?}",
                set[i]
            );
            assert_eq!(value(&got[i], k), format!("{k}!").as_bytes());
        }
        if i < 20 {
            assert_eq!(on_dead[i], del[i].is_err(), "{k}: {:?}", del[i]);
        }
    }
    let live_items: Vec<(String, String)> = items
        .iter()
        .zip(&on_dead)
        .skip(20)
        .filter(|(_, d)| !**d)
        .map(|(kv, _)| kv.clone())
        .collect();
    assert!(!live_items.is_empty());
    assert_placed(&refs(&live.servers), &m.ring(), &live_items, same, same);
    assert_eq!(
        silent.attempts(),
        attempts,
        "no connection attempt from multi-key requests to a server that is down"
    );
}

/// One of four servers refuses connections (nothing listens on its port). A multi-get returns
/// the healthy keys and, for the refused server's keys, its connect error (`Io`,
/// `ConnectionRefused`) without waiting for the checkout timeout (an hour: a request that
/// waited for it would never finish); each round counts one failure, so after
/// `failure_limit` rounds its keys fail fast with `ServerDown`. Single gets on a fresh client
/// fail with the connect error too.
pub async fn a_refused_server_fails_at_once_and_the_healthy_keys_come_back<C: Api>() {
    let live = Cluster::on_free_ports(&[1, 1, 1]);
    let dead = Server::new("127.0.0.1", crate::common::servers::free_port(LO));
    let list = format!("{}{} 1\n", live.server_list(), dead.addr);
    let settings = |b: C::Builder| b.server_list(&list).checkout_timeout(HOUR);
    let m = build::<C>(settings);
    let keys: Vec<String> = (0..400).map(|i| format!("{i}:gm")).collect();
    let on_dead = |k: &String| m.ring().server_for(k.as_bytes()).unwrap().addr == dead.addr;
    let dead_count = keys.iter().filter(|k| on_dead(k)).count();
    assert!(dead_count >= 20, "keys of the dead server: {dead_count}");
    let healthy: Vec<(String, String)> = keys
        .iter()
        .filter(|k| !on_dead(k))
        .map(|k| (k.clone(), k.clone()))
        .collect();
    for (k, v) in &healthy {
        m.set(k, v, Expiry::NEVER).await.unwrap();
    }
    // failure_limit 2 (the default): rounds 1 and 2 each count one failure, round 3 fails fast
    for round in 1..=3 {
        let got = m.get_multi(&keys).await;
        let (mut hits, mut refused, mut down) = (0, 0, 0);
        for (k, r) in keys.iter().zip(&got) {
            match r {
                Ok(Some(item)) if !on_dead(k) && item.value == k.as_bytes() => hits += 1,
                Err(Error::Io {
                    kind: ErrorKind::ConnectionRefused,
                    ..
                }) if on_dead(k) => refused += 1,
                Err(Error::ServerDown { .. }) if on_dead(k) => down += 1,
                other => panic!("{}: round {round}, {k}: {other:?}", C::NAME),
            }
        }
        assert_eq!(hits, keys.len() - dead_count, "round {round}");
        if round < 3 {
            assert_eq!(refused, dead_count, "round {round}");
            assert_eq!(m.down_servers().is_empty(), round == 1, "round {round}");
            let e = got.iter().find_map(|r| r.as_ref().err()).unwrap();
            assert!(e.is_server_failure(), "{e:?}");
        } else {
            assert_eq!(down, dead_count, "round {round}");
            assert_eq!(m.down_servers(), vec![dead.clone()]);
        }
    }
    // a multi-set: the same, healthy keys stored
    let items: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "w")).collect();
    let fresh = build::<C>(settings);
    for (k, r) in keys
        .iter()
        .zip(fresh.set_multi(&items, 0, Expiry::NEVER).await)
    {
        match r {
            Ok(StoreOutcome::Stored) => assert!(!on_dead(k), "{k}"),
            Err(Error::Io {
                kind: ErrorKind::ConnectionRefused,
                ..
            }) => assert!(on_dead(k), "{k}"),
            other => panic!("{k}: {other:?}"),
        }
    }
    // single gets of the refused server's keys, on a fresh client: the connect error
    let fresh = build::<C>(settings);
    for k in keys.iter().filter(|k| on_dead(k)).take(2) {
        let r = fresh.get(k).await;
        assert!(
            matches!(
                r,
                Err(Error::Io {
                    kind: ErrorKind::ConnectionRefused,
                    ..
                })
            ),
            "{r:?}"
        );
    }
}

/// A read timeout surfaces as `Timeout { op: "read" }` and never leaves its late reply for the
/// next request: on a SIGSTOPped server (the late incr reply goes to a dropped connection),
/// behind a stalled proxy (single and multi-key gets), and a malformed reply is a `Protocol`
/// error that drops its connection.
pub async fn timeouts_never_leave_a_reply_for_the_next_request<C: Api>() {
    let s = Memcached::start(LO, 0, "");
    let never_down = FailurePolicy::default().with_failure_limit(0);
    let m = build::<C>(|b| {
        b.server_list(&format!("{} 1\n", s.addr()))
            .pool_size(1)
            .read_timeout(Duration::from_millis(200))
            .failure_policy(never_down)
    });
    m.set("counter", "1000", Expiry::NEVER).await.unwrap();
    m.set("other", "other-value", Expiry::NEVER).await.unwrap();
    s.signal("STOP");
    // the reply never comes while the server is stopped: only the client's read timer ends this
    let r = m.incr("counter", 1).await;
    assert!(matches!(r, Err(Error::Timeout { op: "read", .. })), "{r:?}");
    s.signal("CONT");
    // the stalled incr's late reply (1001) went to a connection that was dropped
    assert_eq!(
        m.get("other").await.unwrap().unwrap().value,
        &b"other-value"[..]
    );
    // memcached runs the stalled incr when it continues, on the old connection's worker
    // thread: a new connection can be served first, so wait for it (on the test's own
    // connection) before reading it through the client
    wait_for("the stalled incr applied", async || {
        s.raw_get(b"counter").as_deref() == Some(&b"1001"[..])
    })
    .await;
    assert_eq!(m.get("counter").await.unwrap().unwrap().value, &b"1001"[..]);
    assert_eq!(m.incr("counter", 1).await.unwrap(), Some(1002));

    // a stalled proxy
    let p = FaultProxy::start(s.sock());
    let m = build::<C>(|b| {
        b.server_list(&format!("{} 1\n", p.addr_string()))
            .pool_size(1)
            .read_timeout(Duration::from_millis(150))
            .failure_policy(never_down)
    });
    m.set("k", "v", Expiry::NEVER).await.unwrap();
    p.state.set(Mode::Stall);
    let r = m.get("k").await;
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    let r = m.get_multi(&["k", "other"]).await;
    assert_eq!(r.len(), 2);
    assert!(
        r.iter().all(|r| matches!(r, Err(Error::Timeout { .. }))),
        "{r:?}"
    );
    p.state.set(Mode::Pass);
    assert_eq!(m.get("k").await.unwrap().unwrap().value, &b"v"[..]);
    assert_eq!(
        m.get("other").await.unwrap().unwrap().value,
        &b"other-value"[..]
    );

    // a malformed reply is a Protocol error and drops the connection
    let before = p.state.connections.load(Ordering::SeqCst);
    p.state.corrupt_next(by_protocol::<C, &[u8]>(
        b"VALUE other 0 11\r\nother-value\r\nEND\r\n",
        b"VA 11 f0 kother Ostray\r\nother-value\r\n",
    ));
    let r = m.get("k").await;
    assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
    assert_eq!(m.get("k").await.unwrap().unwrap().value, &b"v"[..]);
    assert_eq!(p.state.connections.load(Ordering::SeqCst), before + 1);
}
