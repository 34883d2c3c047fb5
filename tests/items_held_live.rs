//! Values are handed out as slices of a connection's read buffer (no copy). Slices held by the
//! caller must stay intact while the same connection goes on reading: 5,000 `Item`s of 1 B to
//! 200 KB, taken through `get` and `get_multi` on a pool of one connection, are all kept until
//! the end and then compared with what was stored, in both clients and both protocols.
//!
//! Needs memcached; without it the tests print SKIPPED (and fail when CI is set).

mod common;

use common::servers::{Memcached, random_loopback, require};
use memshard::{Expiry, Item, Protocol};

/// Distinct values stored; each is read 10 times, so 5,000 items are held at the end.
const VALUES: usize = 500;
const ROUNDS: usize = 10;

/// The size of value `i`: from 1 B to 200 KB, spread evenly on a log scale (most small, a few
/// near the top), so replies cross read-buffer boundaries at every size.
fn size(i: usize) -> usize {
    let top = 200.0 * 1024.0_f64;
    (top.powf(i as f64 / (VALUES - 1) as f64)).round() as usize
}

/// Value `i`'s bytes: its own, so a slice of another value or a reused buffer shows.
fn value(i: usize) -> Vec<u8> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..size(i))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn key(i: usize) -> String {
    format!("held:{i}")
}

/// The order of round `r`: every value once, a different order each round.
fn order(r: usize) -> Vec<usize> {
    let step = [1, 7, 13, 31, 97, 3, 11, 17, 37, 101][r % 10];
    (0..VALUES).map(|n| (n * step + r) % VALUES).collect()
}

/// Every held item against what was stored, and the count.
fn compare(who: &str, held: &[(usize, Item)]) {
    assert_eq!(held.len(), VALUES * ROUNDS, "{who}");
    assert!(size(0) == 1 && size(VALUES - 1) == 200 * 1024);
    let stored: Vec<Vec<u8>> = (0..VALUES).map(value).collect();
    let bad: Vec<usize> = held
        .iter()
        .filter(|(i, item)| item.value != stored[*i][..])
        .map(|(i, _)| *i)
        .collect();
    assert!(
        bad.is_empty(),
        "{who}: {} of {} held values changed (first: {:?})",
        bad.len(),
        held.len(),
        &bad[..bad.len().min(10)]
    );
}

fn memcached() -> Memcached {
    Memcached::start(random_loopback(), 0, "-m 256")
}

#[test]
fn held_items_stay_intact_in_the_blocking_client() {
    if !require("memcached") {
        return;
    }
    let m = memcached();
    for protocol in [Protocol::Text, Protocol::Meta] {
        let c = memshard::Client::builder()
            .server_list(&m.addr())
            .expect("server list")
            .protocol(protocol)
            .pool_size(1)
            .build()
            .expect("builds");
        for i in 0..VALUES {
            c.set(key(i), value(i), Expiry::NEVER).expect("set");
        }
        let mut held = Vec::with_capacity(VALUES * ROUNDS);
        for r in 0..ROUNDS {
            for batch in order(r).chunks(25) {
                if r % 2 == 0 {
                    for &i in batch {
                        held.push((i, c.get(key(i)).expect("get").expect("stored")));
                    }
                } else {
                    let keys: Vec<String> = batch.iter().map(|&i| key(i)).collect();
                    for (&i, got) in batch.iter().zip(c.get_multi(&keys)) {
                        held.push((i, got.expect("get_multi").expect("stored")));
                    }
                }
            }
        }
        compare(&format!("blocking, {protocol:?}"), &held);
    }
}

#[cfg(feature = "async")]
#[test]
fn held_items_stay_intact_in_the_async_client() {
    if !require("memcached") {
        return;
    }
    let m = memcached();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for protocol in [Protocol::Text, Protocol::Meta] {
        let held = rt.block_on(async {
            let c = memshard::aio::Client::builder()
                .server_list(&m.addr())
                .expect("server list")
                .protocol(protocol)
                .pool_size(1)
                .build()
                .expect("builds");
            for i in 0..VALUES {
                c.set(key(i), value(i), Expiry::NEVER).await.expect("set");
            }
            let mut held = Vec::with_capacity(VALUES * ROUNDS);
            for r in 0..ROUNDS {
                for batch in order(r).chunks(25) {
                    if r % 2 == 0 {
                        for &i in batch {
                            let got = c.get(key(i)).await.expect("get").expect("stored");
                            held.push((i, got));
                        }
                    } else {
                        let keys: Vec<String> = batch.iter().map(|&i| key(i)).collect();
                        for (&i, got) in batch.iter().zip(c.get_multi(&keys).await) {
                            held.push((i, got.expect("get_multi").expect("stored")));
                        }
                    }
                }
            }
            held
        });
        compare(&format!("async, {protocol:?}"), &held);
    }
}
