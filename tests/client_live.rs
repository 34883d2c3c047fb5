//! The client against real memcached servers started here on loopback.

mod common;

use common::servers::{Cluster, Memcached, require};
use memshard::{Client, DeleteOutcome, Error, Flavor, StoreOutcome, TouchOutcome};
use std::net::Ipv4Addr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One four-server cluster (two of them on port 11211) shared by the tests of this file.
fn cluster() -> Option<&'static Cluster> {
    static C: OnceLock<Option<Cluster>> = OnceLock::new();
    C.get_or_init(|| require("memcached").then(Cluster::four))
        .as_ref()
}

fn client(c: &Cluster) -> Client {
    Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .pool_size(4)
        .build()
        .unwrap()
}

#[test]
fn commands_have_explicit_outcomes() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    let k = "outcomes:1";
    m.delete(k).unwrap();
    assert_eq!(m.get(k).unwrap(), None);
    assert_eq!(m.replace(k, "x", 0, 0).unwrap(), StoreOutcome::NotStored);
    assert_eq!(m.append(k, "x").unwrap(), StoreOutcome::NotStored);
    assert_eq!(m.add(k, "v1", 7, 0).unwrap(), StoreOutcome::Stored);
    assert_eq!(m.add(k, "v2", 0, 0).unwrap(), StoreOutcome::NotStored);
    let item = m.get(k).unwrap().unwrap();
    assert_eq!(
        (item.value.as_slice(), item.flags, item.cas),
        (&b"v1"[..], 7, None)
    );
    assert_eq!(m.append(k, "+a").unwrap(), StoreOutcome::Stored);
    assert_eq!(m.prepend(k, "p+").unwrap(), StoreOutcome::Stored);
    assert_eq!(m.get(k).unwrap().unwrap().text(), Some("p+v1+a"));
    let cas = m
        .gets(k)
        .unwrap()
        .unwrap()
        .cas
        .expect("gets returns a cas unique");
    assert_eq!(m.cas(k, "c1", 0, 0, cas).unwrap(), StoreOutcome::Stored);
    assert_eq!(m.cas(k, "c2", 0, 0, cas).unwrap(), StoreOutcome::Exists);
    assert_eq!(
        m.cas("outcomes:absent", "c", 0, 0, 1).unwrap(),
        StoreOutcome::NotFound
    );
    assert_eq!(m.replace(k, "r", 0, 0).unwrap(), StoreOutcome::Stored);
    assert_eq!(m.touch(k, 100).unwrap(), TouchOutcome::Touched);
    assert_eq!(
        m.touch("outcomes:absent", 100).unwrap(),
        TouchOutcome::NotFound
    );
    assert_eq!(m.gat(k, 200).unwrap().unwrap().value, b"r");
    assert!(m.gats(k, 200).unwrap().unwrap().cas.is_some());
    assert_eq!(m.delete(k).unwrap(), DeleteOutcome::Deleted);
    assert_eq!(m.delete(k).unwrap(), DeleteOutcome::NotFound);

    assert_eq!(m.incr("outcomes:n", 1).unwrap(), None);
    m.set("outcomes:n", "1000", 0, 0).unwrap();
    assert_eq!(m.incr("outcomes:n", 1).unwrap(), Some(1001));
    assert_eq!(m.decr("outcomes:n", 2000).unwrap(), Some(0));
    m.set("outcomes:text", "abc", 0, 0).unwrap();
    assert!(matches!(
        m.incr("outcomes:text", 1),
        Err(Error::Server { .. })
    ));
    // the connection stays usable after a server-side refusal
    assert_eq!(m.get("outcomes:text").unwrap().unwrap().value, b"abc");

    let versions = m.version();
    assert_eq!(versions.len(), 4);
    assert!(
        versions
            .iter()
            .all(|(_, v)| v.as_ref().is_ok_and(|v| v.starts_with("1.")))
    );
    let stats = m.stats(None);
    assert!(stats.iter().all(|(_, s)| {
        s.as_ref()
            .is_ok_and(|s| s.iter().any(|(k, _)| k == "curr_items"))
    }));
    assert!(m.verbosity(0).iter().all(|(_, r)| r.is_ok()));
}

#[test]
fn every_key_lands_on_the_server_the_ring_names() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    let mut per_server = std::collections::HashMap::new();
    for i in 0..400 {
        let key = format!("placement:{i}:ключ");
        let value = format!("value-{i}");
        assert_eq!(m.set(&key, &value, 0, 0).unwrap(), StoreOutcome::Stored);
        let owner = m.ring().server_for(key.as_bytes()).unwrap().addr.clone();
        for s in &c.servers {
            let held = s.raw_get(key.as_bytes());
            if s.addr() == owner {
                assert_eq!(
                    held.as_deref(),
                    Some(value.as_bytes()),
                    "{key} missing on its owner {owner}"
                );
            } else {
                assert_eq!(
                    held,
                    None,
                    "{key} found on {} but belongs to {owner}",
                    s.addr()
                );
            }
        }
        *per_server.entry(owner).or_insert(0) += 1;
    }
    // both port-11211 servers took keys: the default-port naming rule ran live
    assert!(
        c.servers[..2]
            .iter()
            .all(|s| s.port == 11211 && per_server.contains_key(&s.addr())),
        "{per_server:?}"
    );
}

#[test]
fn multi_key_operations_across_servers() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    let items: Vec<(String, String)> = (0..500)
        .map(|i| (format!("multi:{i}"), format!("v{i}")))
        .collect();
    let set = m.set_multi(&items, 3, 0);
    assert!(
        set.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{set:?}"
    );
    let mut keys: Vec<String> = items.iter().map(|(k, _)| k.clone()).collect();
    keys.push("multi:absent".into());
    keys.push("multi:7".into()); // duplicate keys are answered twice
    keys.push("bad key".into());
    let got = m.get_multi(&keys);
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
    let del = m.delete_multi(&keys[..10]);
    assert!(del.iter().all(|r| matches!(r, Ok(DeleteOutcome::Deleted))));
    assert!(
        m.delete_multi(&keys[..10])
            .iter()
            .all(|r| matches!(r, Ok(DeleteOutcome::NotFound)))
    );

    let noreply: Vec<(String, String)> = (0..300)
        .map(|i| (format!("nr:{i}"), "x".repeat(i)))
        .collect();
    assert!(
        m.set_multi_noreply(&noreply, 0, 0)
            .iter()
            .all(|r| r.is_ok())
    );
    let back = m.get_multi(&noreply.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
    assert!(
        back.iter()
            .zip(&noreply)
            .all(|(r, (_, v))| r.as_ref().unwrap().as_ref().unwrap().value == v.as_bytes())
    );
}

#[test]
fn hostile_keys_and_values_are_refused_before_sending() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    for key in [
        &b""[..],
        b"x\r\nflush_all",
        b"a b",
        b"tab\tkey",
        b"nul\0",
        &[b'k'; 251],
    ] {
        assert!(
            matches!(m.get(key), Err(Error::InvalidKey { .. })),
            "{key:?}"
        );
        assert!(
            matches!(m.set(key, "v", 0, 0), Err(Error::InvalidKey { .. })),
            "{key:?}"
        );
    }
    let big = vec![0u8; 1024 * 1024 + 1];
    assert!(matches!(
        m.set("big", &big, 0, 0),
        Err(Error::ValueTooLarge { .. })
    ));
    m.set("survivor", "still here", 0, 0).unwrap();
    assert_eq!(m.get("survivor").unwrap().unwrap().value, b"still here");
}

#[test]
fn prefix_is_sent_but_not_hashed() {
    let Some(c) = cluster() else { return };
    let plain = client(c);
    let ns = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .prefix("app1:")
        .build()
        .unwrap();
    for i in 0..50 {
        let key = format!("p{i}");
        ns.set(&key, "v", 0, 0).unwrap();
        let owner = plain
            .ring()
            .server_for(key.as_bytes())
            .unwrap()
            .addr
            .clone();
        assert_eq!(
            c.by_addr(&owner)
                .raw_get(format!("app1:{key}").as_bytes())
                .as_deref(),
            Some(&b"v"[..])
        );
    }
}

#[test]
fn a_dead_server_fails_only_its_own_keys() {
    if !require("memcached") {
        return;
    }
    let live = Cluster::on_free_ports(&[1, 1, 1]);
    let dead_port = common::servers::free_port(Ipv4Addr::LOCALHOST);
    let list = format!("{}127.0.0.1:{dead_port} 1\n", live.server_list());
    let m = Client::builder()
        .server_list(&list)
        .unwrap()
        .connect_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let keys: Vec<String> = (0..200).map(|i| format!("dead:{i}")).collect();
    let dead_addr = format!("127.0.0.1:{dead_port}");
    let on_dead = |k: &String| m.ring().server_for(k.as_bytes()).unwrap().addr == dead_addr;
    assert!(keys.iter().any(on_dead) && !keys.iter().all(on_dead));
    let items: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), format!("{k}!"))).collect();
    let set = m.set_multi(&items, 0, 0);
    let got = m.get_multi(&keys);
    for (i, k) in keys.iter().enumerate() {
        if on_dead(k) {
            assert!(set[i].is_err() && got[i].is_err(), "{k}");
            assert!(got[i].as_ref().unwrap_err().is_server_failure());
        } else {
            assert_eq!(set[i].as_ref().unwrap(), &StoreOutcome::Stored);
            assert_eq!(
                got[i].as_ref().unwrap().as_ref().unwrap().value,
                format!("{k}!").as_bytes()
            );
        }
    }
}

#[test]
fn a_timeout_never_leaves_a_reply_for_the_next_caller() {
    if !require("memcached") {
        return;
    }
    let s = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let m = Client::builder()
        .server_list(&format!("{} 1\n", s.addr()))
        .unwrap()
        .pool_size(1)
        .read_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    m.set("counter", "1000", 0, 0).unwrap();
    m.set("other", "other-value", 0, 0).unwrap();
    s.signal("STOP");
    let t = Instant::now();
    let r = m.incr("counter", 1);
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(2));
    s.signal("CONT");
    // The stalled incr's reply (1001) arrives late on the old connection; that connection was
    // dropped, so this get reads its own reply.
    assert_eq!(m.get("other").unwrap().unwrap().value, b"other-value");
    assert_eq!(m.get("counter").unwrap().unwrap().value, b"1001");
    assert_eq!(m.incr("counter", 1).unwrap(), Some(1002));
}

#[test]
fn client_is_shared_across_threads() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    let flavor_is_default = m.ring().flavor() == Flavor::Libmemcached;
    assert!(flavor_is_default);
    std::thread::scope(|s| {
        for t in 0..8 {
            let m = m.clone();
            s.spawn(move || {
                for i in 0..200 {
                    let k = format!("thread:{t}:{i}");
                    m.set(&k, &k, 0, 0).unwrap();
                    assert_eq!(m.get(&k).unwrap().unwrap().value, k.as_bytes());
                }
            });
        }
    });
}

#[test]
fn large_values_round_trip_and_the_buffer_shrinks_back() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(m.set("large:1", &big, 0, 0).unwrap(), StoreOutcome::Stored);
    assert_eq!(m.get("large:1").unwrap().unwrap().value, big);
    let many: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| (format!("large:m{i}"), vec![b'a' + i as u8; 200_000]))
        .collect();
    assert!(m.set_multi(&many, 0, 0).iter().all(|r| r.is_ok()));
    let got = m.get_multi(&many.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
    for ((_, v), r) in many.iter().zip(got) {
        assert_eq!(&r.unwrap().unwrap().value, v);
    }
    assert_eq!(m.get("large:1").unwrap().unwrap().value.len(), 1_000_000);
    m.set("small", "s", 0, 0).unwrap();
    assert_eq!(m.get("small").unwrap().unwrap().value, b"s");
}
