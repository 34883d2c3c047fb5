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
