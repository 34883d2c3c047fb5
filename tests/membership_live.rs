//! Live membership: servers added and removed while clients run, against real memcached.

mod common;

use common::servers::{Memcached, require};
use memshard::plan::{Keys, Method};
use memshard::{Client, Server};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn server(m: &Memcached) -> Server {
    Server::new(m.ip.to_string(), m.port)
}

#[test]
fn servers_added_and_removed_under_load() {
    if !require("memcached") {
        return;
    }
    let ms: Vec<Memcached> = (0..5)
        .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
        .collect();
    let four: Vec<Server> = ms[..4].iter().map(server).collect();
    let client = Client::builder()
        .servers(four.clone())
        .pool_size(4)
        .build()
        .unwrap();
    let keys: Vec<String> = (0..20_000).map(|i| format!("member:{i}")).collect();
    let value = |k: &str| format!("{k}=value");
    let items: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), value(k))).collect();
    assert!(client.set_multi(&items, 0, 0).iter().all(|r| r.is_ok()));
    let conns_before = ms[0].stat("total_connections");

    // what the change will cost, from the planner, on these very keys
    let mut five = four.clone();
    five.push(server(&ms[4]));
    let key_bytes: Vec<Vec<u8>> = keys.iter().map(|k| k.clone().into_bytes()).collect();
    let plan = client
        .plan_servers(&five, &Keys::List(key_bytes.clone()))
        .unwrap();
    let expected_add = plan
        .methods
        .iter()
        .find(|m| m.method == Method::Ketama)
        .unwrap()
        .moved;

    let stop = AtomicBool::new(false);
    let (wrong, ops) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..3 {
            let (client, keys, stop, wrong, ops) = (&client, &keys, &stop, &wrong, &ops);
            s.spawn(move || {
                let mut i = t * 7919;
                while !stop.load(Ordering::Relaxed) {
                    i = (i + 104_729) % keys.len();
                    let k = &keys[i];
                    // every value read must be this key's
                    if let Ok(Some(item)) = client.get(k)
                        && item.value != value(k).as_bytes()
                    {
                        wrong.fetch_add(1, Ordering::Relaxed);
                    }
                    ops.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(Duration::from_millis(200));
        client.set_servers(five.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
    });
    let misses_after_add = client
        .get_multi(&keys)
        .iter()
        .filter(|r| matches!(r, Ok(None)))
        .count() as u64;
    println!(
        "add a 5th server under load: {} reads by 3 threads, {} wrong values; {} of {} keys now miss (planner expected {})",
        ops.load(Ordering::Relaxed),
        wrong.load(Ordering::Relaxed),
        misses_after_add,
        keys.len(),
        expected_add
    );
    assert_eq!(wrong.load(Ordering::Relaxed), 0);
    assert_eq!(
        misses_after_add, expected_add,
        "exactly the keys the planner said move now miss"
    );
    // the servers that stayed kept their pools: no reconnect storm
    let new_conns = ms[0].stat("total_connections") - conns_before;
    assert!(
        new_conns <= 4,
        "{new_conns} new connections to a server that stayed"
    );

    // refill, then remove the second server
    assert!(client.set_multi(&items, 0, 0).iter().all(|r| r.is_ok()));
    let mut without = five.clone();
    let gone = without.remove(1);
    let plan = client
        .plan_servers(&without, &Keys::List(key_bytes))
        .unwrap();
    let expected_remove = plan
        .methods
        .iter()
        .find(|m| m.method == Method::Ketama)
        .unwrap()
        .moved;
    client.set_servers(without).unwrap();
    let got = client.get_multi(&keys);
    let misses_after_remove = got.iter().filter(|r| matches!(r, Ok(None))).count() as u64;
    let errors = got.iter().filter(|r| r.is_err()).count();
    println!(
        "remove {}: {misses_after_remove} of {} keys miss (planner expected {expected_remove}), {errors} errors",
        gone.addr,
        keys.len()
    );
    assert_eq!(errors, 0);
    assert_eq!(misses_after_remove, expected_remove);
    assert!(got.iter().all(|r| match r {
        Ok(Some(item)) => std::str::from_utf8(&item.value).is_ok_and(|v| v.ends_with("=value")),
        _ => true,
    }));
    assert_eq!(client.ring().servers().len(), 4);
}

#[test]
fn watchers_follow_a_server_file_and_a_dns_name() {
    if !require("memcached") {
        return;
    }
    let ms: Vec<Memcached> = (0..3)
        .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
        .collect();
    let client = Client::builder().servers([server(&ms[0])]).build().unwrap();
    let file = std::env::temp_dir().join(format!("memshard-watch-{}.txt", std::process::id()));
    let write = |n: usize| {
        std::fs::write(
            &file,
            ms[..n]
                .iter()
                .map(|m| format!("{} 1\n", m.addr()))
                .collect::<String>(),
        )
        .unwrap()
    };
    let wait_for = |n: usize| {
        let t = std::time::Instant::now();
        while client.ring().servers().len() != n {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "watcher did not apply {n} servers"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        t.elapsed()
    };
    write(2);
    let w = client.watch_server_file(&file, Duration::from_millis(50));
    let took = wait_for(2);
    write(3);
    let took3 = wait_for(3);
    std::fs::write(&file, "not a server list ::::\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        client.ring().servers().len(),
        3,
        "a bad file keeps the servers"
    );
    assert!(
        w.last_error().is_some_and(|e| e.contains("line 1")),
        "{:?}",
        w.last_error()
    );
    println!(
        "file watcher: 2 servers applied after {took:?}, 3 after {took3:?}; bad file kept 3 ({:?})",
        w.last_error()
    );
    drop(w);
    let _ = std::fs::remove_file(&file);
    // the client works on the servers the watcher gave it
    client.set("watched", "yes", 0, 0).unwrap();
    assert_eq!(client.get("watched").unwrap().unwrap().value, b"yes");

    // DNS: localhost comes from the hosts file
    let dns = Client::builder().servers([server(&ms[1])]).build().unwrap();
    let w = dns.watch_dns("localhost", ms[2].port, 1, Duration::from_millis(50));
    let t = std::time::Instant::now();
    while !dns.ring().servers().iter().any(|s| s.port == ms[2].port) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "dns watcher did not apply: {:?}",
            w.last_error()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    println!(
        "dns watcher: localhost -> {:?}",
        dns.ring()
            .servers()
            .iter()
            .map(|s| s.addr.clone())
            .collect::<Vec<_>>()
    );
    assert!(w.applied() >= 1);
    dns.set("dns", "ok", 0, 0).unwrap();
    assert_eq!(ms[2].raw_get(b"dns").as_deref(), Some(&b"ok"[..]));
}
