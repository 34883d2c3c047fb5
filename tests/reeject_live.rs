//! A second ejection serves no stale value, for the blocking and the async client.
//!
//! With auto-eject, the keys of a stopped (SIGSTOP) server are written to other servers, the
//! fallbacks, while it is out. When it comes back, its own old copies are deleted before it
//! takes reads, and so must the copies on the fallbacks be: once its keys are written again on
//! it, a second ejection routes their reads back to the fallbacks, which must not answer with
//! the values of the first outage.
//!
//! Four memcached servers on free ports of 127.0.27.1 to 127.0.27.4 (no other test binary uses
//! 127.0.27.x), failure limit 1, a short retry timeout. Over a thousand keys of one server are
//! written (version 1); it is stopped and, once ejected (polled), they are written again
//! (version 2, half one by one, half multi-key: on the fallbacks); it is continued and, once
//! back in the ring (polled), no other server holds any of them (read raw) and they are
//! written a third time (version 3, on it); it is stopped
//! again and, once ejected (polled), every key is read through the client: each must give
//! version 3 or a miss, never 1 or 2.
//!
//! No assertion is about time: waits are for states with a generous deadline.

mod common;
mod either;

use common::servers::{Cluster, Memcached, require};
use common::{decode, value_for};
use either::Api;
use memshard::{Client, FailurePolicy};
use std::net::Ipv4Addr;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);
/// Keys owned by the stopped server.
const KEYS: usize = 1_100;

fn policy() -> FailurePolicy {
    FailurePolicy::new(1, Duration::from_millis(200), true)
}

fn cluster() -> Option<Cluster> {
    require("memcached").then(|| Cluster {
        servers: (1..=4)
            .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 27, i), 0, ""))
            .collect(),
        weights: vec![1; 4],
    })
}

/// Stop `victim` and wait until the client has ejected it (a read of its key times out).
fn eject(api: &Api, victim: &Memcached, probe_key: &str, what: &str) {
    victim.signal("STOP");
    let waited = common::wait_until(what, DEADLINE, || {
        let _ = api.get(probe_key);
        api.down().iter().any(|s| s.addr == victim.addr()) && api.live_count() == 3
    });
    println!("{what}: after {waited:?}");
}

/// The scenario; returns (stale reads, misses, keys read).
fn scenario(name: &str, c: &Cluster, api: &Api) -> (usize, usize, usize) {
    let victim_addr = api.owner(&format!("{name}:reeject:0"));
    let victim = c.by_addr(&victim_addr);
    let keys: Vec<String> = (0..1000 * KEYS)
        .map(|i| format!("{name}:reeject:{i}"))
        .filter(|k| api.owner(k) == victim_addr)
        .take(KEYS)
        .collect();
    assert_eq!(keys.len(), KEYS, "{KEYS} keys of {victim_addr}");
    for k in &keys {
        api.set(k, &value_for(k, 1));
    }

    eject(api, victim, &keys[0], &format!("{name}: first ejection"));
    // version 2 on the fallbacks: half one by one, half multi-key
    let (singles, multi) = keys.split_at(keys.len() / 2);
    for k in singles {
        api.set(k, &value_for(k, 2));
    }
    let items: Vec<(String, String)> = multi.iter().map(|k| (k.clone(), value_for(k, 2))).collect();
    for chunk in items.chunks(100) {
        api.set_multi(chunk);
    }

    victim.signal("CONT");
    let waited = common::wait_until("the continued server is back in the ring", DEADLINE, || {
        api.down().is_empty() && api.live_count() == 4
    });
    println!("{name}: back after {waited:?}");
    // the fallbacks hold no copy any more
    let copies: usize = c
        .servers
        .iter()
        .filter(|s| s.addr() != victim_addr)
        .map(|s| {
            keys.iter()
                .filter(|k| s.raw_get(k.as_bytes()).is_some())
                .count()
        })
        .sum();
    println!("{name}: {copies} copies left on the fallbacks after the rejoin");
    assert_eq!(copies, 0, "copies left on the fallbacks after the rejoin");
    // version 3 on the returned server
    for k in &keys {
        api.set(k, &value_for(k, 3));
    }

    eject(api, victim, &keys[0], &format!("{name}: second ejection"));
    let (mut stale, mut misses) = (0, 0);
    for k in &keys {
        match api.get(k).as_deref().map(decode) {
            None => misses += 1,
            Some(Some((key, 3))) if key == *k => {}
            Some(got) => {
                stale += 1;
                if stale <= 3 {
                    println!("{name}: stale read of {k}: {got:?}");
                }
            }
        }
    }
    victim.signal("CONT");
    println!(
        "{name}: {} keys of the twice-ejected server read during its second ejection: {stale} stale, {misses} misses",
        keys.len()
    );
    (stale, misses, keys.len())
}

#[test]
fn blocking_second_ejection_serves_no_stale_value() {
    let Some(c) = cluster() else { return };
    let client = Client::builder()
        .server_list(&c.server_list())
        .expect("server list")
        .failure_policy(policy())
        .read_timeout(Duration::from_millis(300))
        .build()
        .expect("build");
    let (stale, _, read) = scenario("blocking", &c, &Api::Blocking(client));
    assert!(read >= 1_000);
    assert_eq!(stale, 0, "stale reads during the second ejection");
}

#[cfg(feature = "async")]
#[test]
fn async_second_ejection_serves_no_stale_value() {
    let Some(c) = cluster() else { return };
    let rt = either::runtime();
    let client = rt.block_on(async {
        memshard::aio::Client::builder()
            .server_list(&c.server_list())
            .expect("server list")
            .failure_policy(policy())
            .read_timeout(Duration::from_millis(300))
            .build()
    });
    let (stale, _, read) = scenario("async", &c, &Api::Async(client.expect("build"), rt));
    assert!(read >= 1_000);
    assert_eq!(stale, 0, "stale reads during the second ejection");
}
