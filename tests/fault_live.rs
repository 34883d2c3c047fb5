//! Faults injected between the client and real memcached servers: never a stale or foreign
//! reply, timeouts surface as Timeout, hostile input never reaches a server, malformed replies
//! are Protocol errors, an exhausted pool answers within its checkout timeout.

mod common;

use common::{decode, value_for};

use common::proxy::{FaultProxy, Mode};
use common::servers::{Memcached, require};
use memshard::{Client, Error, FailurePolicy};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn sock(m: &Memcached) -> SocketAddr {
    SocketAddr::from((m.ip, m.port))
}

#[derive(Default)]
struct Tally {
    ops: AtomicU64,
    checked_values: AtomicU64,
    wrong: AtomicU64,
    timeouts: AtomicU64,
    other_errors: AtomicU64,
    stalls: AtomicU64,
    sigstops: AtomicU64,
    truncations: AtomicU64,
}

/// ≥ 10^6 mixed get / set / get_multi while proxies stall, delay and truncate traffic and a
/// real memcached is stopped with SIGSTOP; every value read is checked against what was
/// written for that key.
#[test]
fn a_million_operations_under_injected_faults_return_no_wrong_value() {
    if !require("memcached") {
        return;
    }
    let total: u64 = std::env::var("MEMSHARD_FAULT_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            100_000
        } else {
            1_000_000
        });
    let servers: Vec<Memcached> = (0..4)
        .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
        .collect();
    let proxies: Vec<FaultProxy> = servers[..3]
        .iter()
        .map(|m| FaultProxy::start(sock(m)))
        .collect();
    // three servers behind proxies, the fourth direct (it gets SIGSTOP)
    let list: String = proxies
        .iter()
        .map(|p| format!("{} 1\n", p.addr_string()))
        .chain([format!("{} 1\n", servers[3].addr())])
        .collect();
    let client = Client::builder()
        .server_list(&list)
        .unwrap()
        .pool_size(8)
        .read_timeout(Duration::from_millis(40))
        .write_timeout(Duration::from_millis(40))
        .connect_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_millis(500))
        // keep every server in play so that faults keep producing timeouts
        .failure_policy(FailurePolicy {
            failure_limit: 0,
            ..FailurePolicy::default()
        })
        .build()
        .unwrap();
    let tally = Tally::default();
    let done = AtomicBool::new(false);
    const THREADS: u64 = 4;
    const KEYS_PER_THREAD: u64 = 500;
    std::thread::scope(|s| {
        // chaos: one fault at a time, each longer than the read timeout
        s.spawn(|| {
            let mut rng = Rng(0x5eed);
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20 + rng.below(30)));
                match rng.below(10) {
                    0..=4 => {
                        let p = &proxies[rng.below(3) as usize];
                        p.state.set(Mode::Stall);
                        std::thread::sleep(Duration::from_millis(50 + rng.below(70)));
                        p.state.set(Mode::Pass);
                        tally.stalls.fetch_add(1, Ordering::Relaxed);
                    }
                    5..=6 => {
                        let p = &proxies[rng.below(3) as usize];
                        p.state.delay_ms.store(20 + rng.below(60), Ordering::SeqCst);
                        p.state.set(Mode::Delay);
                        std::thread::sleep(Duration::from_millis(60));
                        p.state.set(Mode::Pass);
                    }
                    7 => {
                        proxies[rng.below(3) as usize].state.set(Mode::Truncate);
                        tally.truncations.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        servers[3].signal("STOP");
                        std::thread::sleep(Duration::from_millis(60 + rng.below(60)));
                        servers[3].signal("CONT");
                        tally.sigstops.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (client, tally) = (&client, &tally);
                s.spawn(move || {
                    let mut rng = Rng(0x1234_5678 + t);
                    let keys: Vec<String> = (0..KEYS_PER_THREAD)
                        .map(|i| format!("fault:{t}:{i}"))
                        .collect();
                    // every version ever sent for a key (a timed-out set may or may not land)
                    let mut sent: HashMap<usize, Vec<u64>> = HashMap::new();
                    let mut version = 0u64;
                    let check = |k: usize, v: &[u8], sent: &HashMap<usize, Vec<u64>>| {
                        tally.checked_values.fetch_add(1, Ordering::Relaxed);
                        let ok = decode(v).is_some_and(|(key, ver)| {
                            key == keys[k] && sent.get(&k).is_some_and(|vs| vs.contains(&ver))
                        });
                        if !ok {
                            tally.wrong.fetch_add(1, Ordering::Relaxed);
                            eprintln!(
                                "WRONG value for {}: {:?}",
                                keys[k],
                                String::from_utf8_lossy(v)
                            );
                        }
                    };
                    let count_err = |e: &Error| {
                        if matches!(e, Error::Timeout { .. }) {
                            tally.timeouts.fetch_add(1, Ordering::Relaxed);
                        } else {
                            tally.other_errors.fetch_add(1, Ordering::Relaxed);
                        }
                    };
                    while tally.ops.load(Ordering::Relaxed) < total {
                        let k = rng.below(KEYS_PER_THREAD) as usize;
                        match rng.below(20) {
                            0..=6 => {
                                version += 1;
                                sent.entry(k).or_default().push(version);
                                if let Err(e) =
                                    client.set(&keys[k], value_for(&keys[k], version), 0, 0)
                                {
                                    count_err(&e);
                                }
                                tally.ops.fetch_add(1, Ordering::Relaxed);
                            }
                            7..=18 => {
                                match client.get(&keys[k]) {
                                    Ok(Some(item)) => check(k, &item.value, &sent),
                                    Ok(None) => {}
                                    Err(e) => count_err(&e),
                                }
                                tally.ops.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {
                                let ks: Vec<usize> = (0..10)
                                    .map(|_| rng.below(KEYS_PER_THREAD) as usize)
                                    .collect();
                                let names: Vec<&str> =
                                    ks.iter().map(|&i| keys[i].as_str()).collect();
                                for (i, r) in ks.iter().zip(client.get_multi(&names)) {
                                    match r {
                                        Ok(Some(item)) => check(*i, &item.value, &sent),
                                        Ok(None) => {}
                                        Err(e) => count_err(&e),
                                    }
                                }
                                tally.ops.fetch_add(10, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
    });
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "fault run: {} operations, {} values checked, {} wrong, {} timeouts, {} other errors; injected {} proxy stalls, {} SIGSTOPs, {} truncations",
        g(&tally.ops),
        g(&tally.checked_values),
        g(&tally.wrong),
        g(&tally.timeouts),
        g(&tally.other_errors),
        g(&tally.stalls),
        g(&tally.sigstops),
        g(&tally.truncations)
    );
    assert_eq!(g(&tally.wrong), 0, "wrong values");
    assert!(g(&tally.ops) >= total);
    assert!(
        g(&tally.timeouts) > 0,
        "faults were injected, so timeouts must have surfaced"
    );
    assert!(g(&tally.checked_values) > total / 2);
}

#[test]
fn hostile_keys_never_reach_a_server() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let p = FaultProxy::start(sock(&m));
    let client = Client::builder()
        .server_list(&format!("{} 1", p.addr_string()))
        .unwrap()
        .build()
        .unwrap();
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
            client.get(k).err(),
            client.gets(k).err(),
            client.set(k, "v", 0, 0).err(),
            client.add(k, "v", 0, 0).err(),
            client.delete(k).err(),
            client.incr(k, 1).err(),
            client.touch(k, 1).err(),
            client.get_multi(&[k.as_slice()]).remove(0).err(),
            client
                .set_multi(&[(k.as_slice(), "v")], 0, 0)
                .remove(0)
                .err(),
        ];
        for r in results {
            assert!(matches!(r, Some(Error::InvalidKey { .. })), "{k:?}: {r:?}");
            tried += 1;
        }
    }
    assert_eq!(
        p.state.to_server_bytes.load(Ordering::SeqCst),
        0,
        "a hostile key reached the server"
    );
    // the prefix counts towards the 250 bytes
    let ns = Client::builder()
        .server_list(&format!("{} 1", p.addr_string()))
        .unwrap()
        .prefix("ns:")
        .build()
        .unwrap();
    assert!(matches!(ns.get([b'k'; 248]), Err(Error::InvalidKey { .. })));
    assert_eq!(p.state.to_server_bytes.load(Ordering::SeqCst), 0);
    println!(
        "hostile keys: {} keys x 9 commands = {tried} attempts, 0 bytes reached the server",
        hostile.len()
    );
    // a value above the item size is refused before sending, too
    assert!(matches!(
        client.set("ok", vec![0u8; 2 << 20], 0, 0),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(p.state.to_server_bytes.load(Ordering::SeqCst), 0);
}

#[test]
fn malformed_replies_are_protocol_errors_and_drop_the_connection() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let p = FaultProxy::start(sock(&m));
    let client = Client::builder()
        .server_list(&format!("{} 1", p.addr_string()))
        .unwrap()
        .pool_size(1)
        .read_timeout(Duration::from_millis(300))
        .failure_policy(FailurePolicy {
            failure_limit: 0,
            ..FailurePolicy::default()
        })
        .build()
        .unwrap();
    client.set("k", "right", 0, 0).unwrap();
    client.set("other", "other-value", 0, 0).unwrap();
    let hostile: &[&[u8]] = &[
        b"VALUE k 0 4294967295\r\n",
        b"VALUE k 0 18446744073709551615\r\n",
        b"VALUE other 0 11\r\nother-value\r\nEND\r\n",
        b"VALUE k 0 5\r\nright!!\r\nEND\r\n",
        b"VALUE k x 5\r\nright\r\nEND\r\n",
        b"HELLO\r\n",
        b"STORED\r\n",
        &[b'A'; 20000],
        b"VALUE k 0 5\r\nri",
    ];
    let before = p.state.connections.load(Ordering::SeqCst);
    for (i, bytes) in hostile.iter().enumerate() {
        p.state.corrupt_next(bytes);
        let r = client.get("k");
        let is_protocol = matches!(r, Err(Error::Protocol { .. }));
        // A truncated reply waits for bytes that never come: a Timeout, also dropping the conn.
        let is_timeout = matches!(r, Err(Error::Timeout { .. }));
        assert!(is_protocol || is_timeout, "reply {i}: {r:?}");
        // the next request gets a fresh connection and its own, right reply
        assert_eq!(
            client.get("k").unwrap().unwrap().value,
            b"right",
            "after reply {i}"
        );
    }
    let after = p.state.connections.load(Ordering::SeqCst);
    assert_eq!(
        after - before,
        hostile.len() as u64,
        "every bad reply dropped its connection"
    );
    // truncation mid-value: an I/O error, then a clean connection
    p.state.set(Mode::Truncate);
    assert!(client.get("other").is_err());
    assert_eq!(client.get("other").unwrap().unwrap().value, b"other-value");
}

#[test]
fn an_exhausted_pool_answers_within_its_checkout_timeout() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let p = FaultProxy::start(sock(&m));
    let client = Client::builder()
        .server_list(&format!("{} 1", p.addr_string()))
        .unwrap()
        .pool_size(1)
        .read_timeout(Duration::from_secs(2))
        .checkout_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    client.set("k", "v", 0, 0).unwrap();
    p.state.set(Mode::Stall);
    std::thread::scope(|s| {
        let holder = s.spawn(|| client.get("k"));
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        let r = client.get("k");
        let waited = t.elapsed();
        assert!(
            matches!(
                r,
                Err(Error::Pool {
                    exhausted: true,
                    ..
                })
            ),
            "{r:?}"
        );
        assert!(
            !r.as_ref().unwrap_err().is_server_failure(),
            "a busy pool says nothing about the server"
        );
        assert!(
            waited >= Duration::from_millis(150) && waited < Duration::from_secs(1),
            "{waited:?}"
        );
        println!("pool exhausted: Pool error after {waited:?} (checkout timeout 200 ms)");
        p.state.set(Mode::Pass);
        let _ = holder.join().unwrap();
    });
    assert_eq!(client.get("k").unwrap().unwrap().value, b"v");
}
