//! Faults injected between the client and real memcached servers: never a stale, lost or
//! foreign reply, timeouts surface as Timeout, hostile input never reaches a server, each
//! malformed reply gives its own Protocol error, an exhausted pool answers with a Pool error.
//!
//! No wall-clock bound is asserted here: waits are for a state (polled, with a generous
//! deadline that only fails if the state never comes); sleeps only hold a fault for a while.

mod common;

use common::{decode, value_for};
use memshard::Expiry;

use common::proxy::{FaultProxy, Mode};
use common::servers::{Memcached, require};
use memshard::{Client, Error, FailurePolicy, Protocol};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Mutex;
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

/// Polls `done` until it holds; fails only if it never does within `deadline` (generous: this
/// waits for a state, it does not bound how long the state takes).
fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < deadline,
            "{what}: not reached within {deadline:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The server side of the established TCP connections on `addr` (an IPv4 listen address):
/// for each, the bytes received that the server process has not read yet (`/proc/net/tcp`'s
/// rx_queue). A stopped server leaves a request there, which proves the request was sent.
fn server_side_unread(addr: SocketAddr) -> Vec<u64> {
    let SocketAddr::V4(v4) = addr else {
        panic!("IPv4 only: {addr}")
    };
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_le_bytes(v4.ip().octets()),
        v4.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // f[1] local address, f[3] state (01 = ESTABLISHED), f[4] tx_queue:rx_queue
            (f.len() > 4 && f[1] == local && f[3] == "01")
                .then(|| f[4].split_once(':'))
                .flatten()
                .and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok())
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    ops: AtomicU64,
    checked_values: AtomicU64,
    misses: AtomicU64,
    /// Values read that were a write whose outcome was unknown (it failed after sending).
    unknown_reads: AtomicU64,
    /// Wrong answers, by what was wrong.
    stale: AtomicU64,
    lost: AtomicU64,
    foreign: AtomicU64,
    /// Error results (one per key of a multi-key operation), by kind.
    timeouts: AtomicU64,
    io: AtomicU64,
    /// Operations that got at least one Io error.
    io_ops: AtomicU64,
    protocol: AtomicU64,
    pool: AtomicU64,
    server_down: AtomicU64,
    other_errors: AtomicU64,
    stalls: AtomicU64,
    delays: AtomicU64,
    sigstops: AtomicU64,
    truncations: AtomicU64,
    restarts: AtomicU64,
    /// Misses of a key of the restarted server acknowledged before a restart (its data went
    /// with the killed process: not a lost write).
    restart_misses: AtomicU64,
    /// Timeout and Io errors from the restarted server (refused while it is down, reset or
    /// cut when it is killed): apart from the counts the proxies' faults explain.
    restart_errors: AtomicU64,
}

/// What may be read for one key. Each key is written by one worker thread only, and that
/// thread reads it only between its own writes, so no write of it is in flight during a read
/// except those whose outcome stayed unknown.
#[derive(Default)]
struct KeyState {
    /// The last write the server acknowledged: what a read must return, unless...
    acked: Option<u64>,
    /// ...one of these lands: writes that failed after they may have reached the server
    /// (timeout, I/O). A stalled proxy or a stopped server can apply one late, even after a
    /// later acknowledged write, so they stay possible for good.
    unknown: Vec<u64>,
    /// The highest version ever sent for the key.
    newest: u64,
    /// Kills of the restarted server done before the acknowledged write was sent: a miss is
    /// a lost write only if none was done since.
    acked_restarts: u64,
}

enum Verdict {
    Acked,
    Unknown,
    Miss,
    /// An older acknowledged version: a stale reply.
    Stale,
    /// A miss after an acknowledged write (nothing is deleted or evicted here).
    Lost,
    /// Another key's value, a version never sent, or garbage.
    Foreign,
}

impl KeyState {
    fn judge(&self, key: &str, got: Option<&[u8]>) -> Verdict {
        let Some(v) = got else {
            return if self.acked.is_some() {
                Verdict::Lost
            } else {
                Verdict::Miss
            };
        };
        match decode(v) {
            Some((k, ver)) if k == key => {
                if self.acked == Some(ver) {
                    Verdict::Acked
                } else if self.unknown.contains(&ver) {
                    Verdict::Unknown
                } else if ver <= self.newest {
                    Verdict::Stale
                } else {
                    Verdict::Foreign
                }
            }
            _ => Verdict::Foreign,
        }
    }
}

/// ≥ 10^6 mixed get / set / get_multi while proxies stall, delay and truncate traffic, a
/// real memcached is stopped with SIGSTOP and another is killed and restarted on its port.
/// Every value read must be the key's last acknowledged write or a write whose outcome was
/// unknown; a miss after an acknowledged write is a lost write (unless a restart of its server
/// began since). Errors must be what the faults give: timeouts, I/O errors only from truncated
/// connections and from the restarted server.
#[test]
fn a_million_operations_under_injected_faults_return_no_wrong_value() {
    faults_over(Kind::Blocking, Protocol::Text, 1_000_000);
}

/// The same run over the meta protocol (0 wrong values over meta as over text); 300,000 operations by default to keep CI time (`MEMSHARD_FAULT_OPS` sets all).
#[test]
fn operations_over_meta_under_injected_faults_return_no_wrong_value() {
    faults_over(Kind::Blocking, Protocol::Meta, 300_000);
}

/// The same run on the async client (its calls made from the same worker threads through a
/// tokio runtime), over text.
#[cfg(feature = "async")]
#[test]
fn async_operations_under_injected_faults_return_no_wrong_value() {
    faults_over(Kind::Async, Protocol::Text, 300_000);
}

/// The async client over meta.
#[cfg(feature = "async")]
#[test]
fn async_operations_over_meta_under_injected_faults_return_no_wrong_value() {
    faults_over(Kind::Async, Protocol::Meta, 300_000);
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Blocking,
    #[cfg(feature = "async")]
    Async,
}

/// The client of a fault run: the blocking one, or the async one driven from plain threads
/// by `block_on` on a runtime of its own.
enum Faulted {
    Blocking(Client),
    #[cfg(feature = "async")]
    Async(memshard::aio::Client, tokio::runtime::Runtime),
}

impl Faulted {
    fn build(kind: Kind, b: impl FnOnce(BuilderBoth) -> BuilderBoth) -> Faulted {
        match kind {
            Kind::Blocking => match b(BuilderBoth::Blocking(Client::builder())) {
                BuilderBoth::Blocking(b) => Faulted::Blocking(b.build().unwrap()),
                #[cfg(feature = "async")]
                BuilderBoth::Async(_) => unreachable!(),
            },
            #[cfg(feature = "async")]
            Kind::Async => {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                match b(BuilderBoth::Async(memshard::aio::Client::builder())) {
                    BuilderBoth::Async(b) => {
                        let c = rt.block_on(async { b.build() }).unwrap();
                        Faulted::Async(c, rt)
                    }
                    BuilderBoth::Blocking(_) => unreachable!(),
                }
            }
        }
    }
    fn ring(&self) -> std::sync::Arc<memshard::Ring> {
        match self {
            Faulted::Blocking(c) => c.ring(),
            #[cfg(feature = "async")]
            Faulted::Async(c, _) => c.ring(),
        }
    }
    fn get(&self, key: &str) -> memshard::Result<Option<memshard::Item>> {
        match self {
            Faulted::Blocking(c) => c.get(key),
            #[cfg(feature = "async")]
            Faulted::Async(c, rt) => rt.block_on(c.get(key)),
        }
    }
    fn set(&self, key: &str, value: String) -> memshard::Result<memshard::StoreOutcome> {
        match self {
            Faulted::Blocking(c) => c.set(key, value, Expiry::NEVER),
            #[cfg(feature = "async")]
            Faulted::Async(c, rt) => rt.block_on(c.set(key, value, Expiry::NEVER)),
        }
    }
    fn get_multi(&self, keys: &[&str]) -> Vec<memshard::Result<Option<memshard::Item>>> {
        match self {
            Faulted::Blocking(c) => c.get_multi(keys),
            #[cfg(feature = "async")]
            Faulted::Async(c, rt) => rt.block_on(c.get_multi(keys)),
        }
    }
}

/// Either builder, for one chain of settings.
enum BuilderBoth {
    Blocking(memshard::Builder<memshard::Client>),
    #[cfg(feature = "async")]
    Async(memshard::aio::Builder),
}

macro_rules! both {
    ($b:expr, |$x:ident| $e:expr) => {
        match $b {
            BuilderBoth::Blocking($x) => BuilderBoth::Blocking($e),
            #[cfg(feature = "async")]
            BuilderBoth::Async($x) => BuilderBoth::Async($e),
        }
    };
}

/// The fault run on a `kind` client with every request in `protocol`: `release_ops`
/// operations in a release build, a tenth of them in a debug one, unless `MEMSHARD_FAULT_OPS`
/// says.
fn faults_over(kind: Kind, protocol: Protocol, release_ops: u64) {
    if !require("memcached") {
        return;
    }
    let total: u64 = std::env::var("MEMSHARD_FAULT_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            release_ops / 10
        } else {
            release_ops
        });
    let servers: Vec<Memcached> = (0..4)
        .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
        .collect();
    // the fifth, direct, is killed and started again on the same port
    let restartable = Mutex::new(Some(Memcached::start(Ipv4Addr::LOCALHOST, 0, "")));
    let restart_addr = restartable
        .lock()
        .unwrap()
        .as_ref()
        .map(Memcached::addr)
        .unwrap_or_default();
    let restart_port = restartable.lock().unwrap().as_ref().map_or(0, |m| m.port);
    // kills of the restarted server done so far (the process gone)
    let kills = AtomicU64::new(0);
    let proxies: Vec<FaultProxy> = servers[..3]
        .iter()
        .map(|m| FaultProxy::start(sock(m)))
        .collect();
    // three servers behind proxies, the fourth direct (it gets SIGSTOP), the fifth direct (it
    // is restarted)
    let list: String = proxies
        .iter()
        .map(|p| format!("{} 1\n", p.addr_string()))
        .chain([
            format!("{} 1\n", servers[3].addr()),
            format!("{restart_addr} 1\n"),
        ])
        .collect();
    let client = Faulted::build(kind, |b| {
        both!(b, |b| b
            .server_list(&list)
            .unwrap()
            .pool_size(8)
            .read_timeout(Duration::from_millis(40))
            .write_timeout(Duration::from_millis(40))
            .connect_timeout(Duration::from_millis(200))
            .checkout_timeout(Duration::from_millis(500))
            // keep every server in play so that faults keep producing timeouts
            .failure_policy(FailurePolicy::default().with_failure_limit(0))
            .protocol(protocol))
    });
    let tally = Tally::default();
    let done = AtomicBool::new(false);
    const THREADS: u64 = 4;
    const KEYS_PER_THREAD: u64 = 500;
    std::thread::scope(|s| {
        // chaos: one fault at a time, each held longer than the read timeout
        s.spawn(|| {
            let mut rng = Rng(0x5eed);
            let mut first = true;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20 + rng.below(30)));
                // the first fault is a restart, so that every run has one
                let fault = if std::mem::take(&mut first) {
                    10
                } else {
                    rng.below(11)
                };
                match fault {
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
                        tally.delays.fetch_add(1, Ordering::Relaxed);
                    }
                    7 => {
                        // fires on the next reply of that proxy's newest connection, once
                        proxies[rng.below(3) as usize].state.set(Mode::Truncate);
                        tally.truncations.fetch_add(1, Ordering::Relaxed);
                    }
                    8..=9 => {
                        servers[3].signal("STOP");
                        std::thread::sleep(Duration::from_millis(60 + rng.below(60)));
                        servers[3].signal("CONT");
                        tally.sigstops.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        let mut slot = restartable.lock().unwrap();
                        if let Some(m) = slot.take() {
                            m.signal("KILL");
                        }
                        // counted once the process is gone: a write that read the count
                        // before may have been applied by the killed process, one that read
                        // it after can only reach the next one
                        kills.fetch_add(1, Ordering::SeqCst);
                        // down for a while: connections refused
                        std::thread::sleep(Duration::from_millis(20 + rng.below(60)));
                        *slot = Some(Memcached::start(Ipv4Addr::LOCALHOST, restart_port, ""));
                        tally.restarts.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (client, tally, kills, restart_addr) =
                    (&client, &tally, &kills, restart_addr.as_str());
                s.spawn(move || {
                    let mut rng = Rng(0x1234_5678 + t);
                    let keys: Vec<String> = (0..KEYS_PER_THREAD)
                        .map(|i| format!("fault:{t}:{i}"))
                        .collect();
                    let ring = client.ring();
                    let on_restartable: Vec<bool> = keys
                        .iter()
                        .map(|k| {
                            ring.server_for(k.as_bytes())
                                .is_some_and(|s| s.addr == restart_addr)
                        })
                        .collect();
                    let mut state: HashMap<usize, KeyState> = HashMap::new();
                    let mut version = 0u64;
                    let check = |k: usize, got: Option<&[u8]>, state: &HashMap<usize, KeyState>| {
                        let empty = KeyState::default();
                        let st = state.get(&k).unwrap_or(&empty);
                        if got.is_some() {
                            tally.checked_values.fetch_add(1, Ordering::Relaxed);
                        }
                        let (counter, wrong) = match st.judge(&keys[k], got) {
                            Verdict::Acked => return,
                            Verdict::Miss => (&tally.misses, false),
                            Verdict::Unknown => (&tally.unknown_reads, false),
                            Verdict::Stale => (&tally.stale, true),
                            // a kill done since the write was sent took it
                            Verdict::Lost
                                if on_restartable[k]
                                    && kills.load(Ordering::SeqCst) > st.acked_restarts =>
                            {
                                (&tally.restart_misses, false)
                            }
                            Verdict::Lost => (&tally.lost, true),
                            Verdict::Foreign => (&tally.foreign, true),
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        if wrong {
                            eprintln!(
                                "WRONG for {}: {:?} (acknowledged {:?}, unknown {:?})",
                                keys[k],
                                got.map(String::from_utf8_lossy),
                                st.acked,
                                st.unknown
                            );
                        }
                    };
                    // one count per error result; true for an Io error
                    let count_err = |e: &Error| -> bool {
                        let c = match e {
                            Error::Timeout { .. } | Error::Io { .. }
                                if e.server() == Some(restart_addr) =>
                            {
                                &tally.restart_errors
                            }
                            Error::Timeout { .. } => &tally.timeouts,
                            // a truncated reply: the proxy closed the connection mid-reply
                            Error::Io {
                                kind: ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset,
                                ..
                            } => &tally.io,
                            Error::Protocol { .. } => &tally.protocol,
                            Error::Pool { .. } => &tally.pool,
                            Error::ServerDown { .. } => &tally.server_down,
                            _ => &tally.other_errors,
                        };
                        c.fetch_add(1, Ordering::Relaxed);
                        if std::ptr::eq(c, &tally.other_errors) {
                            eprintln!("unexpected error: {e:?}");
                        }
                        std::ptr::eq(c, &tally.io)
                    };
                    // at least `total` operations, and on until every kind of fault was met
                    // (a fast run would otherwise end after a handful)
                    let every_fault = || {
                        [
                            &tally.stalls,
                            &tally.delays,
                            &tally.truncations,
                            &tally.sigstops,
                            &tally.restarts,
                        ]
                        .iter()
                        .all(|n| n.load(Ordering::Relaxed) >= 3)
                    };
                    while tally.ops.load(Ordering::Relaxed) < total || !every_fault() {
                        let k = rng.below(KEYS_PER_THREAD) as usize;
                        match rng.below(20) {
                            0..=6 => {
                                version += 1;
                                let restarts_before = kills.load(Ordering::SeqCst);
                                let r = client.set(&keys[k], value_for(&keys[k], version));
                                let st = state.entry(k).or_default();
                                st.newest = version;
                                match r {
                                    Ok(_) => {
                                        st.acked = Some(version);
                                        st.acked_restarts = restarts_before;
                                    }
                                    // refused before anything was sent: cannot land
                                    Err(Error::Pool { .. } | Error::ServerDown { .. }) => {}
                                    Err(_) => st.unknown.push(version),
                                }
                                if let Err(e) = &r
                                    && count_err(e)
                                {
                                    tally.io_ops.fetch_add(1, Ordering::Relaxed);
                                }
                                tally.ops.fetch_add(1, Ordering::Relaxed);
                            }
                            7..=18 => {
                                match client.get(&keys[k]) {
                                    Ok(item) => {
                                        check(k, item.as_ref().map(|i| &i.value[..]), &state)
                                    }
                                    Err(e) => {
                                        if count_err(&e) {
                                            tally.io_ops.fetch_add(1, Ordering::Relaxed);
                                        }
                                    }
                                }
                                tally.ops.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {
                                let ks: Vec<usize> = (0..10)
                                    .map(|_| rng.below(KEYS_PER_THREAD) as usize)
                                    .collect();
                                let names: Vec<&str> =
                                    ks.iter().map(|&i| keys[i].as_str()).collect();
                                let mut io = false;
                                for (i, r) in ks.iter().zip(client.get_multi(&names)) {
                                    match r {
                                        Ok(item) => {
                                            check(*i, item.as_ref().map(|i| &i.value[..]), &state)
                                        }
                                        Err(e) => io |= count_err(&e),
                                    }
                                }
                                if io {
                                    tally.io_ops.fetch_add(1, Ordering::Relaxed);
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
        "fault run, {kind:?} client over {protocol}: {} operations, {} values checked ({} of a write whose outcome was unknown), {} misses; wrong: {} stale, {} lost, {} foreign; errors: {} Timeout, {} Io ({} operations), {} Protocol, {} Pool, {} ServerDown, {} other; injected {} proxy stalls, {} delays, {} SIGSTOPs, {} truncations ({} done), {} restarts ({} misses of data they took, {} errors from the restarted server)",
        g(&tally.ops),
        g(&tally.checked_values),
        g(&tally.unknown_reads),
        g(&tally.misses),
        g(&tally.stale),
        g(&tally.lost),
        g(&tally.foreign),
        g(&tally.timeouts),
        g(&tally.io),
        g(&tally.io_ops),
        g(&tally.protocol),
        g(&tally.pool),
        g(&tally.server_down),
        g(&tally.other_errors),
        g(&tally.stalls),
        g(&tally.delays),
        g(&tally.sigstops),
        g(&tally.truncations),
        proxies
            .iter()
            .map(|p| p.state.truncated.load(Ordering::SeqCst))
            .sum::<u64>(),
        g(&tally.restarts),
        g(&tally.restart_misses),
        g(&tally.restart_errors),
    );
    assert_eq!(
        g(&tally.stale),
        0,
        "stale values (an older acknowledged write)"
    );
    assert_eq!(g(&tally.lost), 0, "misses after an acknowledged write");
    assert_eq!(g(&tally.foreign), 0, "values never written for that key");
    assert!(g(&tally.ops) >= total);
    assert!(
        g(&tally.timeouts) > 0,
        "faults were injected, so timeouts must have surfaced"
    );
    // The proxies never corrupt bytes, so no Protocol error; pools of 8 for 4 threads, a
    // 500 ms checkout and connects that always succeed (a proxy accepts, a stopped server's
    // kernel too), so no Pool error; failure_limit 0, so no ServerDown.
    assert_eq!(
        g(&tally.protocol),
        0,
        "Protocol errors without corrupted bytes"
    );
    assert_eq!(g(&tally.pool), 0, "Pool errors");
    assert_eq!(g(&tally.server_down), 0, "ServerDown with failure_limit 0");
    assert_eq!(g(&tally.other_errors), 0, "errors of another kind");
    // An Io error comes only from a truncation done (the proxy cut a reply and closed its
    // connection, which one operation was waiting on): at most one operation per truncation.
    let truncated: u64 = proxies
        .iter()
        .map(|p| p.state.truncated.load(Ordering::SeqCst))
        .sum();
    assert!(
        g(&tally.io_ops) <= truncated,
        "{} operations with an Io error, {truncated} truncations done",
        g(&tally.io_ops),
    );
    assert!(g(&tally.checked_values) > total / 2);
    assert!(g(&tally.restarts) >= 3, "the run goes on until 3 restarts");
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
            client.set(k, "v", Expiry::NEVER).err(),
            client.add(k, "v", Expiry::NEVER).err(),
            client.delete(k).err(),
            client.incr(k, 1).err(),
            client.touch(k, Duration::from_secs(1)).err(),
            client.get_multi(&[k.as_slice()]).remove(0).err(),
            client
                .set_multi(&[(k.as_slice(), "v")], 0, Expiry::NEVER)
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
        client.set("ok", vec![0u8; 2 << 20], Expiry::NEVER),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(p.state.to_server_bytes.load(Ordering::SeqCst), 0);
}

/// A memcached behind a fault proxy, and a client over `protocol` with one connection, a 300 ms
/// read timeout and no ejection, which has stored `k` = "right" and `other` = "other-value".
fn one_proxied_server(protocol: Protocol) -> (Memcached, FaultProxy, Client) {
    let m = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let p = FaultProxy::start(sock(&m));
    let client = Client::builder()
        .server_list(&format!("{} 1", p.addr_string()))
        .unwrap()
        .pool_size(1)
        .read_timeout(Duration::from_millis(300))
        .failure_policy(FailurePolicy::default().with_failure_limit(0))
        .protocol(protocol)
        .build()
        .unwrap();
    client.set("k", "right", Expiry::NEVER).unwrap();
    client.set("other", "other-value", Expiry::NEVER).unwrap();
    (m, p, client)
}

#[test]
fn malformed_replies_are_protocol_errors_and_drop_the_connection() {
    if !require("memcached") {
        return;
    }
    let (_m, p, client) = one_proxied_server(Protocol::Text);
    // Each reply to `get k`, and the Protocol error detail it must give (src/proto/reply.rs's
    // ParseError, or the client's check that a value is for a requested key).
    let hostile: &[(&[u8], &str)] = &[
        (
            b"VALUE k 0 4294967295\r\n",
            "server announced a 4294967295-byte value; the limit is 1048576 bytes",
        ),
        (
            b"VALUE k 0 18446744073709551615\r\n",
            "server announced a 18446744073709551615-byte value; the limit is 1048576 bytes",
        ),
        (
            b"VALUE other 0 11\r\nother-value\r\nEND\r\n",
            "value for key \"other\", which was not requested",
        ),
        (
            b"VALUE k 0 5\r\nright!!\r\nEND\r\n",
            "value data not terminated by CRLF",
        ),
        (
            b"VALUE k x 5\r\nright\r\nEND\r\n",
            "malformed VALUE header \"VALUE k x 5\"",
        ),
        (b"HELLO\r\n", "unexpected reply line \"HELLO\""),
        (b"STORED\r\n", "unexpected reply line \"STORED\""),
        (
            &[b'A'; 20000],
            "reply line longer than 8192 bytes without CRLF",
        ),
    ];
    let server = p.addr_string();
    let before = p.state.connections.load(Ordering::SeqCst);
    for (i, (bytes, detail)) in hostile.iter().enumerate() {
        p.state.corrupt_next(bytes);
        let r = client.get("k");
        match &r {
            Err(Error::Protocol {
                server: s,
                detail: d,
            }) => {
                assert_eq!((s, d.as_str()), (&server, *detail), "reply {i}")
            }
            other => panic!("reply {i}: {other:?}, expected Protocol error {detail:?}"),
        }
        // the next request gets a fresh connection and its own, right reply
        assert_eq!(
            client.get("k").unwrap().unwrap().value,
            &b"right"[..],
            "after reply {i}"
        );
    }
    // A reply cut short on a connection that stays open is a valid beginning of a reply: the
    // client cannot tell it from a slow server and waits for the rest, so the precise outcome
    // is a read Timeout after the read timeout (300 ms here), which drops the connection too.
    // (Cut short and closed, below, is an I/O error at once.)
    p.state.corrupt_next(b"VALUE k 0 5\r\nri");
    let r = client.get("k");
    assert!(
        matches!(&r, Err(Error::Timeout { server: s, op: "read", after }) if *s == server && *after == Duration::from_millis(300)),
        "a truncated reply on an open connection: {r:?}"
    );
    assert_eq!(client.get("k").unwrap().unwrap().value, &b"right"[..]);
    let after = p.state.connections.load(Ordering::SeqCst);
    assert_eq!(
        after - before,
        hostile.len() as u64 + 1,
        "every bad reply dropped its connection"
    );
    // truncation mid-value, then the proxy closes: an I/O error (end of stream), then a
    // clean connection
    p.state.set(Mode::Truncate);
    let r = client.get("other");
    assert!(
        matches!(&r, Err(Error::Io { server: s, kind: ErrorKind::UnexpectedEof, .. }) if *s == server),
        "a reply cut short by a closed connection: {r:?}"
    );
    assert_eq!(
        client.get("other").unwrap().unwrap().value,
        &b"other-value"[..]
    );
    println!(
        "malformed replies: {} Protocol errors with their own detail, 1 read Timeout (cut short, open), 1 Io UnexpectedEof (cut short, closed); {} connections dropped",
        hostile.len(),
        after - before
    );
}

/// Over meta, each malformed or foreign reply to a `get` (an `mg`) is a Protocol error naming
/// the server and drops the connection; the next get is answered right on a new one. The
/// replies: sizes beyond the value limit, a hit of another key with an opaque never sent, a
/// hit of the right key and value without an opaque (it cannot be tied to the request), data
/// not ended by CRLF, a malformed header, an unknown line, a store reply, a line without end.
/// The details are the meta parser's own and are printed, not compared. A reply cut short by
/// a closed connection is an Io error.
#[test]
fn malformed_meta_replies_are_protocol_errors_and_drop_the_connection() {
    if !require("memcached") {
        return;
    }
    let (_m, p, client) = one_proxied_server(Protocol::Meta);
    let hostile: &[&[u8]] = &[
        b"VA 4294967295 f0\r\n",
        b"VA 18446744073709551615 f0\r\n",
        b"VA 11 f0 kother Ostray\r\nother-value\r\n",
        b"VA 5 f0 kk\r\nright\r\n",
        b"VA 5 f0\r\nright!!\r\n",
        b"VA x f0\r\n",
        b"HELLO\r\n",
        b"NS\r\n",
        &[b'A'; 20000],
    ];
    let server = p.addr_string();
    let before = p.state.connections.load(Ordering::SeqCst);
    for (i, bytes) in hostile.iter().enumerate() {
        let what = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into_owned();
        p.state.corrupt_next(bytes);
        let r = client.get("k");
        match &r {
            Err(Error::Protocol { server: s, detail }) => {
                assert_eq!(s, &server, "reply {i}");
                println!("meta reply {what:?}: {detail}");
            }
            other => panic!("reply {i} {what:?}: {other:?}, expected a Protocol error"),
        }
        assert_eq!(
            client.get("k").unwrap().unwrap().value,
            &b"right"[..],
            "after reply {i} {what:?}"
        );
    }
    let after = p.state.connections.load(Ordering::SeqCst);
    assert_eq!(
        after - before,
        hostile.len() as u64,
        "every bad reply dropped its connection"
    );
    p.state.set(Mode::Truncate);
    let r = client.get("other");
    assert!(
        matches!(&r, Err(Error::Io { server: s, kind: ErrorKind::UnexpectedEof, .. }) if *s == server),
        "a reply cut short by a closed connection: {r:?}"
    );
    assert_eq!(
        client.get("other").unwrap().unwrap().value,
        &b"other-value"[..]
    );
}

/// A get that finds every pooled connection busy fails with a Pool error (not a server
/// failure) once its checkout timeout passes, and the pool serves again once the connection
/// is returned. How long the wait takes is measured by benches/client.rs
/// (`pool/exhausted_checkout_200ms`), not asserted here.
#[test]
fn an_exhausted_pool_answers_within_its_checkout_timeout() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(Ipv4Addr::LOCALHOST, 0, "");
    let client = Client::builder()
        .server_list(&format!("{} 1", m.addr()))
        .unwrap()
        .pool_size(1)
        // the holder below waits for the stopped server as long as the test needs
        .read_timeout(Duration::from_secs(120))
        .checkout_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    client.set("k", "v", Expiry::NEVER).unwrap();
    m.signal("STOP");
    std::thread::scope(|s| {
        let holder = s.spawn(|| client.get("k"));
        // The holder's request sits unread in the stopped server's socket: the holder has the
        // only connection and is waiting on it.
        wait_for(
            "the holder's request reaches the stopped server",
            Duration::from_secs(60),
            || server_side_unread(m.sock()).iter().any(|&n| n > 0),
        );
        let r = client.get("k");
        assert!(
            matches!(
                &r,
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
        m.signal("CONT");
        // the holder's own reply, then the connection is back in the pool
        assert_eq!(holder.join().unwrap().unwrap().unwrap().value, &b"v"[..]);
    });
    assert_eq!(client.get("k").unwrap().unwrap().value, &b"v"[..]);
    println!("pool exhausted: Pool error (exhausted) while the only connection was held");
}
