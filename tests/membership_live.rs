//! Live membership: servers added and removed while clients run, against real memcached.
//!
//! No assertion is about time: load phases run for a number of reads, and waits are for a
//! state (a watcher applied a list, recorded an error), with a deadline only a state that never
//! comes exceeds.

mod common;

use common::servers::{Memcached, require};
use common::wait_until;
use memshard::Expiry;
use memshard::plan::{Keys, Method};
use memshard::{Client, Server};
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Far beyond what a loaded machine needs to reach a state that comes at all.
const GENEROUS: Duration = Duration::from_secs(120);

/// Reads the reader threads make before the change and again after it.
const READS_PER_PHASE: u64 = 5000;

fn server(m: &Memcached) -> Server {
    Server::new(m.ip.to_string(), m.port)
}

fn value(k: &str) -> String {
    format!("{k}=value")
}

/// Every key read back: its own value or a miss, nothing else; the number of misses.
fn misses_of(keys: &[String], got: &[memshard::Result<Option<memshard::Item>>]) -> u64 {
    assert_eq!(got.len(), keys.len());
    let mut misses = 0;
    for (k, r) in keys.iter().zip(got) {
        match r {
            Ok(Some(item)) => assert_eq!(item.value, value(k).as_bytes(), "{k}"),
            Ok(None) => misses += 1,
            Err(e) => panic!("{k}: {e}"),
        }
    }
    misses
}

/// What the reader threads counted.
#[derive(Default)]
struct Reads {
    ops: AtomicU64,
    hits: AtomicU64,
    wrong: AtomicU64,
    errors: AtomicU64,
}

/// Runs `change` while 3 threads read `keys`: after [`READS_PER_PHASE`] reads, and stopping
/// them [`READS_PER_PHASE`] reads after it returned.
fn under_load(client: &Client, keys: &[String], change: impl FnOnce()) -> Reads {
    let stop = AtomicBool::new(false);
    let tally = Reads::default();
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    std::thread::scope(|s| {
        for t in 0..3 {
            let (stop, tally) = (&stop, &tally);
            s.spawn(move || {
                let mut i = t * 7919;
                while !stop.load(Ordering::Relaxed) {
                    i = (i + 104_729) % keys.len();
                    let k = &keys[i];
                    match client.get(k) {
                        // every value read must be this key's
                        Ok(Some(item)) => {
                            tally.hits.fetch_add(1, Ordering::Relaxed);
                            if item.value != value(k).as_bytes() {
                                tally.wrong.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tally.errors.fetch_add(1, Ordering::Relaxed);
                            eprintln!("{k}: {e}");
                        }
                    }
                    tally.ops.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // the readers stop whatever happens, so that a failed wait fails the test, not hangs it
        let phases = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_until("reads before the change", GENEROUS, || {
                g(&tally.ops) >= READS_PER_PHASE
            });
            change();
            let at_change = g(&tally.ops);
            wait_until("reads after the change", GENEROUS, || {
                g(&tally.ops) >= at_change + READS_PER_PHASE
            });
        }));
        stop.store(true, Ordering::Relaxed);
        if let Err(p) = phases {
            std::panic::resume_unwind(p);
        }
    });
    tally
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
    let items: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), value(k))).collect();
    let stored = client.set_multi(&items, 0, Expiry::NEVER);
    assert_eq!(stored.len(), items.len());
    assert!(stored.iter().all(|r| r.is_ok()));
    let conns_before = ms[0].stat("total_connections");
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);

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

    let reads = under_load(&client, &keys, || client.set_servers(five.clone()).unwrap());
    let misses_after_add = misses_of(&keys, &client.get_multi(&keys));
    println!(
        "add a 5th server under load: {} reads by 3 threads ({} hits), {} wrong values, {} errors; {} of {} keys now miss (planner expected {})",
        g(&reads.ops),
        g(&reads.hits),
        g(&reads.wrong),
        g(&reads.errors),
        misses_after_add,
        keys.len(),
        expected_add
    );
    assert_eq!(g(&reads.wrong), 0, "wrong values");
    assert_eq!(g(&reads.errors), 0, "errors");
    assert!(g(&reads.hits) > 0, "no value was read");
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

    // refill, then remove the second server under load
    let stored = client.set_multi(&items, 0, Expiry::NEVER);
    assert_eq!(stored.len(), items.len());
    assert!(stored.iter().all(|r| r.is_ok()));
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
    let reads = under_load(&client, &keys, || {
        client.set_servers(without.clone()).unwrap()
    });
    let misses_after_remove = misses_of(&keys, &client.get_multi(&keys));
    println!(
        "remove {} under load: {} reads by 3 threads ({} hits), {} wrong values, {} errors; {misses_after_remove} of {} keys miss (planner expected {expected_remove})",
        gone.addr,
        g(&reads.ops),
        g(&reads.hits),
        g(&reads.wrong),
        g(&reads.errors),
        keys.len()
    );
    assert_eq!(g(&reads.wrong), 0, "wrong values");
    assert_eq!(g(&reads.errors), 0, "errors");
    assert!(g(&reads.hits) > 0, "no value was read");
    assert!(expected_remove > 0);
    assert_eq!(misses_after_remove, expected_remove);
    assert_eq!(client.ring().servers(), &without[..]);
}

/// Replaces `file` in one step (write elsewhere, rename): a watcher never reads half a file.
fn write_atomically(file: &Path, text: &str) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

fn addrs(client: &Client) -> Vec<String> {
    client
        .ring()
        .servers()
        .iter()
        .map(|s| s.addr.clone())
        .collect()
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
    let first = |n: usize| -> Vec<String> { ms[..n].iter().map(|m| m.addr()).collect() };
    let write = |n: usize| {
        write_atomically(
            &file,
            &first(n)
                .iter()
                .map(|a| format!("{a} 1\n"))
                .collect::<String>(),
        )
    };
    write(2);
    let w = client.watch_server_file(&file, Duration::from_millis(50));
    let took = wait_until("the watcher applies 2 servers", GENEROUS, || {
        addrs(&client) == first(2)
    });
    write(3);
    let took3 = wait_until("the watcher applies 3 servers", GENEROUS, || {
        addrs(&client) == first(3)
    });
    assert_eq!(w.applied(), 2);
    assert_eq!(w.last_error(), None);
    write_atomically(&file, "not a server list ::::\n");
    // once the watcher has read the bad file (its error says so), the servers are unchanged
    wait_until("the watcher reports the bad file", GENEROUS, || {
        w.last_error().is_some_and(|e| e.contains("line 1"))
    });
    assert_eq!(addrs(&client), first(3), "a bad file keeps the servers");
    assert_eq!(w.applied(), 2, "nothing applied from the bad file");
    println!(
        "file watcher: 2 servers applied after {took:?}, 3 after {took3:?}; bad file kept 3 ({:?})",
        w.last_error()
    );
    drop(w);
    let _ = std::fs::remove_file(&file);
    // the client works on the servers the watcher gave it
    client.set("watched", "yes", Expiry::NEVER).unwrap();
    assert_eq!(client.get("watched").unwrap().unwrap().value, &b"yes"[..]);
    let holders: Vec<String> = ms
        .iter()
        .filter(|m| m.raw_get(b"watched").is_some())
        .map(|m| m.addr())
        .collect();
    assert_eq!(
        holders,
        [client.ring().server_for(b"watched").unwrap().addr.clone()]
    );

    // DNS: localhost comes from the hosts file
    let dns = Client::builder().servers([server(&ms[1])]).build().unwrap();
    let w = dns.watch_dns("localhost", ms[2].port, 1, Duration::from_millis(50));
    wait_until("the dns watcher applies localhost", GENEROUS, || {
        dns.ring().servers().iter().any(|s| s.port == ms[2].port)
    });
    println!("dns watcher: localhost -> {:?}", addrs(&dns));
    assert!(w.applied() >= 1);
    assert!(
        dns.ring().servers().iter().all(|s| s.port == ms[2].port),
        "only localhost's addresses: {:?}",
        addrs(&dns)
    );
    dns.set("dns", "ok", Expiry::NEVER).unwrap();
    assert_eq!(ms[2].raw_get(b"dns").as_deref(), Some(&b"ok"[..]));
}
