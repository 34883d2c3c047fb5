//! What the scenarios share: the two runners, waits for a state, where keys sit on the servers,
//! and a few servers that misbehave on purpose.
#![allow(dead_code)]

use crate::common::servers::Memcached;
pub use crate::common::silent::{Silent, error_kind as kind};
use memshard::{Item, Ring};
use std::collections::HashMap;
use std::future::Future;
use std::net::Ipv4Addr;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

pub const LO: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// How long a wait for a state may take before the state is taken never to come: far beyond
/// anything a loaded machine needs. Never a bound on how fast something must be.
pub const GENEROUS: Duration = Duration::from_secs(120);

/// Longer than any test: a request that waited for it would hit [`GENEROUS`] first.
pub const HOUR: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------
// runners
// ---------------------------------------------------------------------------------------

/// Runs a scenario for the blocking client on the test thread, with no async runtime at all
/// (a minimal executor: the blocking client's calls never return `Pending`).
pub fn run_blocking(scenario: impl Future<Output = ()>) {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(scenario);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(()) => return,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Runs a scenario for the async client inside a multi-thread tokio runtime (2 workers). The
/// scenario itself runs on the test thread (`block_on`): the blocking helpers it calls (raw
/// server reads, signals, waits) hold only that thread, never the workers that run the
/// client's pools and probes.
#[cfg(feature = "async")]
pub fn run_async(scenario: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(scenario)
}

// ---------------------------------------------------------------------------------------
// waits
// ---------------------------------------------------------------------------------------

/// Polls `done` until it holds; fails only if it never does within [`GENEROUS`]. Returns how
/// long it took, for printing.
pub async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !done().await {
        assert!(
            t.elapsed() < GENEROUS,
            "{what}: not reached within {GENEROUS:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    t.elapsed()
}

// ---------------------------------------------------------------------------------------
// values and placement
// ---------------------------------------------------------------------------------------

/// The value of a `get`, or a failure that says what came instead.
#[track_caller]
pub fn value(r: &memshard::Result<Option<Item>>, what: &str) -> Vec<u8> {
    match r {
        Ok(Some(item)) => item.value.to_vec(),
        other => panic!("{what}: expected a value, got {other:?}"),
    }
}

/// Which server of `servers` holds each of `wire_keys` (as sent on the wire), read raw:
/// `(address, value)`. A key held by no server or by more than one is a failure.
pub fn holders<K: AsRef<[u8]>>(servers: &[&Memcached], wire_keys: &[K]) -> Vec<(String, Vec<u8>)> {
    let held: Vec<HashMap<Vec<u8>, Vec<u8>>> = servers
        .iter()
        .map(|m| m.text().get_many(wire_keys))
        .collect();
    wire_keys
        .iter()
        .map(|k| {
            let k = k.as_ref();
            let on: Vec<(String, Vec<u8>)> = servers
                .iter()
                .zip(&held)
                .filter_map(|(m, h)| h.get(k).map(|v| (m.addr(), v.clone())))
                .collect();
            assert_eq!(
                on.len(),
                1,
                "{:?} is held by {} servers: {:?}",
                String::from_utf8_lossy(k),
                on.len(),
                on.iter().map(|(a, _)| a).collect::<Vec<_>>()
            );
            on.into_iter().next().unwrap()
        })
        .collect()
}

/// Every `(key, value)` is held, byte for byte, by the server `ring` names for `hashed(key)`
/// (under `wire(key)`), and by no other server of `servers`. Returns keys per server.
pub fn assert_placed<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    servers: &[&Memcached],
    ring: &Ring,
    items: &[(K, V)],
    wire: impl Fn(&[u8]) -> Vec<u8>,
    hashed: impl Fn(&[u8]) -> Vec<u8>,
) -> HashMap<String, usize> {
    let wires: Vec<Vec<u8>> = items.iter().map(|(k, _)| wire(k.as_ref())).collect();
    let mut per_server: HashMap<String, usize> = HashMap::new();
    for ((k, v), (on, held)) in items.iter().zip(holders(servers, &wires)) {
        let k = k.as_ref();
        let owner = &ring
            .server_for(&hashed(k))
            .expect("the ring names a server")
            .addr;
        assert_eq!(
            &on,
            owner,
            "{:?}: on {on}, the ring names {owner}",
            String::from_utf8_lossy(k)
        );
        assert_eq!(held, v.as_ref(), "{:?}: value", String::from_utf8_lossy(k));
        *per_server.entry(on).or_default() += 1;
    }
    per_server
}

/// The key as is (no prefix, hashed as written).
pub fn same(k: &[u8]) -> Vec<u8> {
    k.to_vec()
}

/// A [`Memcached`] list as `&Memcached`s.
pub fn refs(ms: &[Memcached]) -> Vec<&Memcached> {
    ms.iter().collect()
}

/// The TTL memcached holds for `key` (`mg <key> t`): -1 for none; `None` when it has no such
/// item.
pub fn ttl(m: &Memcached, key: &str) -> Option<i64> {
    let reply = m.raw(format!("mg {key} t\r\n").as_bytes(), b"\r\n");
    let line = String::from_utf8(reply).expect("UTF-8 reply");
    let line = line.trim_end();
    if line == "EN" {
        return None;
    }
    let t = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix('t'))
        .unwrap_or_else(|| panic!("mg {key} t: {line:?}"));
    Some(t.parse().unwrap_or_else(|_| panic!("mg {key} t: {line:?}")))
}

// ---------------------------------------------------------------------------------------
// servers that misbehave
// ---------------------------------------------------------------------------------------
