//! Failure handling against real servers on loopback: ejection placement compared with a real
//! twemproxy (nutcracker) and with libmemcached's own auto-eject (a C harness,
//! tests/eject/lmc_eject.c), fail-fast and coming back without ejection, and memshard's own
//! auto-eject around a stopped (SIGSTOP) server.
//!
//! Nothing here is judged by the clock: waits are for states (with generous deadlines that fail
//! only when the state never comes), and what is asserted are counts and outcomes; timings are
//! printed.
//!
//! Needs `memcached`, `nutcracker` (Debian installs it in /usr/sbin) and `cc` + libmemcached
//! (Debian: libmemcached-dev). Without them the tests print a SKIPPED line, or panic when `CI`
//! is set.

mod common;
use common::silent::error_kind as kind;
use memshard::Expiry;

use common::servers::{Memcached, Nutcracker, Text, require};
use memshard::{Client, FailurePolicy, Flavor, KeyHash, Ring, Server, StoreOutcome};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const LO: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// How long a wait for a state may take before the state is taken never to come. Only a
/// broken client or peer gets near it; the figures printed show how long the waits really took.
const STATE_DEADLINE: Duration = Duration::from_secs(60);

/// Polls `state` (every few milliseconds) until it returns `Some`; panics with `what` and the
/// `context` if it has not within [`STATE_DEADLINE`]. Returns the value and how long it took.
fn wait_for<T>(
    what: &str,
    mut state: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> (T, Duration) {
    let started = Instant::now();
    loop {
        if let Some(v) = state() {
            return (v, started.elapsed());
        }
        assert!(
            started.elapsed() < STATE_DEADLINE,
            "{what}: not within {STATE_DEADLINE:?}; {}",
            context()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kills `m` and waits until its port refuses connections (`signal` returns once the main
/// thread is a zombie; its other threads may still hold the listening socket a moment).
fn kill(m: &Memcached) {
    m.signal("KILL");
    wait_for(
        "the killed server's port refuses connections",
        || {
            TcpStream::connect_timeout(&m.sock(), Duration::from_secs(2))
                .is_err()
                .then_some(())
        },
        || m.addr(),
    );
}

/// `get key` on a raw connection: the first reply line (`END`, `VALUE ...`,
/// `SERVER_ERROR ...`), the rest of a hit consumed; `None` when the peer closed the connection.
fn get_first_line(t: &mut Text, key: &[u8]) -> Option<String> {
    let mut req = b"get ".to_vec();
    req.extend_from_slice(key);
    req.extend_from_slice(b"\r\n");
    t.send(&req);
    let first = t.try_line()?;
    if first.starts_with(b"VALUE ") {
        while t.try_line()? != b"END" {}
    }
    Some(s(&first))
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------------------------------
// keys, rings, errors
// ---------------------------------------------------------------------------------------

/// `n` distinct printable keys of varied shapes and lengths.
fn make_keys(tag: &str, n: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ tag.len() as u64;
    for b in tag.bytes() {
        x = x.rotate_left(7) ^ b as u64;
    }
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let pad = "x".repeat((x >> 58) as usize);
            match i % 4 {
                0 => format!("{tag}:user:{i}"),
                1 => format!("{tag}/session/{:x}", x >> 20),
                2 => format!("{i}-{tag}-{pad}"),
                _ => format!("k{:016x}.{tag}.{i}", x),
            }
            .into_bytes()
        })
        .collect()
}

/// Same servers, point counts, continuum size, and the same owner and point for every key.
fn same_ring(a: &Ring, b: &Ring, keys: &[Vec<u8>]) -> bool {
    assert!(!keys.is_empty(), "same_ring over no keys proves nothing");
    a.servers() == b.servers()
        && a.point_counts() == b.point_counts()
        && a.len() == b.len()
        && a.flavor() == b.flavor()
        && a.key_hash() == b.key_hash()
        && keys
            .iter()
            .all(|k| a.route(k) == b.route(k) && a.point_for(k) == b.point_for(k))
}

/// memcached servers on free ports of 127.0.0.1 (server `i` with the extra arguments
/// `extra(i)`), and the same list as memshard servers with the weights.
fn start_servers(
    weights: &[u32],
    extra: impl Fn(usize) -> &'static str,
) -> (Vec<Memcached>, Vec<Server>) {
    let mems: Vec<Memcached> = (0..weights.len())
        .map(|i| Memcached::start(LO, 0, extra(i)))
        .collect();
    let servers = mems
        .iter()
        .zip(weights)
        .map(|(m, &w)| Server::new("127.0.0.1", m.port).with_weight(w))
        .collect();
    (mems, servers)
}

// ---------------------------------------------------------------------------------------
// libmemcached's own auto-eject (tests/eject/lmc_eject.c)
// ---------------------------------------------------------------------------------------

/// The harness, built with `cc ... -lmemcached` into a fresh temp folder; `None` after a
/// SKIPPED line (a panic when `CI` is set) when cc or libmemcached is missing.
fn build_lmc_eject() -> Option<PathBuf> {
    if !require("cc") {
        return None;
    }
    let have_headers = Path::new("/usr/include/libmemcached-1.0/memcached.h").exists()
        || Path::new("/usr/local/include/libmemcached-1.0/memcached.h").exists();
    if !have_headers {
        common::skip("libmemcached", "headers missing (Debian: libmemcached-dev)");
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eject/lmc_eject.c");
    let dir = std::env::temp_dir().join(format!("memshard-eject-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("harness folder");
    let out = dir.join("lmc_eject");
    let built = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lmemcached")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run cc");
    assert!(
        built.status.success(),
        "{} does not build:\n{}",
        src.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    Some(out)
}

/// What libmemcached did: where every key went with all servers up, the server it marked dead
/// itself, where every key went after it rebuilt its continuum, and how its gets ended.
struct LmcEject {
    before: HashMap<Vec<u8>, String>,
    ejected: String,
    after: HashMap<Vec<u8>, String>,
    codes: Vec<String>,
    took: Duration,
}

/// Runs the harness over `servers` (host:port:weight, in ring order) and `keys`.
fn lmc_eject(harness: &Path, failure_limit: u32, servers: &[Server], keys: &[Vec<u8>]) -> LmcEject {
    let mut cmd = Command::new(harness);
    cmd.arg(failure_limit.to_string());
    for sv in servers {
        cmd.arg(format!("{}:{}:{}", sv.host, sv.port, sv.weight));
    }
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lmc_eject");
    let mut input = Vec::new();
    for k in keys {
        input.extend_from_slice(k);
        input.push(b'\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("lmc_eject output");
    writer.join().expect("writer").expect("write keys");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "lmc_eject failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut r = LmcEject {
        before: HashMap::new(),
        ejected: String::new(),
        after: HashMap::new(),
        codes: Vec::new(),
        took,
    };
    for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let f: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
        match f[0] {
            b"before" | b"after" if f.len() == 3 => {
                let map = if f[0] == b"before" {
                    &mut r.before
                } else {
                    &mut r.after
                };
                assert!(
                    map.insert(f[1].to_vec(), s(f[2])).is_none(),
                    "key {} twice in the {} section",
                    s(f[1]),
                    s(f[0])
                );
            }
            b"#ejected" if f.len() == 2 => r.ejected = s(f[1]),
            b"#code" if f.len() == 3 => r.codes.push(format!("{} x {}", s(f[1]), s(f[2]))),
            _ => panic!("unexpected lmc_eject line {:?}", s(line)),
        }
    }
    assert_eq!(
        r.before.len(),
        keys.len(),
        "lmc_eject: keys placed before ejection"
    );
    assert_eq!(
        r.after.len(),
        keys.len(),
        "lmc_eject: keys placed after ejection"
    );
    assert!(!r.ejected.is_empty(), "lmc_eject named no ejected server");
    r
}

// ---------------------------------------------------------------------------------------
// a dead server's port that records what still reaches it
// ---------------------------------------------------------------------------------------

/// Takes over a killed server's port: accepts every connection, records the first request
/// line that arrives on it, then closes it, so the client sees the server fail and every
/// request that still reaches the dead server's address is on record.
struct Recorder {
    addr: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Recorder {
    fn bind(addr: SocketAddr) -> Recorder {
        let listener = TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, a, st) = (lines.clone(), accepted.clone(), stop.clone());
        let acceptor = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let (l, st) = (l.clone(), st.clone());
                std::thread::spawn(move || record_first_line(conn, &l, &st));
            }
        });
        Recorder {
            addr,
            lines,
            accepted,
            stop,
            acceptor: Some(acceptor),
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Records the first line `conn` carries, then drops (closes) it. The line is on record before
/// the client can see the close.
fn record_first_line(conn: TcpStream, lines: &Mutex<Vec<String>>, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
    let mut r = BufReader::new(conn);
    let mut line = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match r.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) if line.ends_with(b"\n") => {
                let text = s(&line).trim_end().to_string();
                lines.lock().unwrap().push(text);
                return;
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2));
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------------------
// 1. twemproxy ejection placement
// ---------------------------------------------------------------------------------------

#[test]
fn twemproxy_ejection_placement_matches_memshard_current_ring() {
    if !(require("nutcracker") && require("memcached")) {
        return;
    }
    let started = Instant::now();
    // round 0: both peers hold a connection to the server that dies (they notice its close);
    // round 1: neither ever connected to it (they notice failed connects).
    twemproxy_round(0, &[3, 1, 2, 5, 1], false, 2, true);
    twemproxy_round(1, &[40, 100, 60, 25, 80], true, 1, false);
    println!(
        "eject_live twemproxy: both rounds in {} ms",
        started.elapsed().as_millis()
    );
}

/// nutcracker with one pool over `servers` that ejects a server at its first failure and
/// keeps it out (retry timeout 600 s).
fn nutcracker_for(servers: &[Server]) -> Nutcracker {
    Nutcracker::start(1, |listens| {
        let mut yml = format!(
            "eject:\n  listen: {}\n  distribution: ketama\n  hash: md5\n  timeout: 2000\n  \
             auto_eject_hosts: true\n  server_failure_limit: 1\n  server_retry_timeout: 600000\n  \
             server_connections: 1\n  servers:\n",
            listens[0]
        );
        for sv in servers {
            let mut v = format!("{}:{}:{}", sv.host, sv.port, sv.weight);
            if let Some(n) = &sv.name {
                v += &format!(" {n}");
            }
            yml += &format!("    - \"{v}\"\n");
        }
        yml
    })
}

fn twemproxy_round(round: usize, weights: &[u32], names: bool, dead: usize, warm_dead: bool) {
    let (mems, mut servers) = start_servers(weights, |_| "");
    if names {
        // names on three of the five: a name replaces the address in the point names
        for i in [0, 2, 3] {
            servers[i].name = Some(format!("cache-{round}-{i}"));
        }
    }
    let nc = nutcracker_for(&servers);
    let policy = FailurePolicy::new(1, Duration::from_secs(600), true);
    let client = Client::builder()
        .servers(servers.clone())
        .flavor(Flavor::Twemproxy)
        .hash(KeyHash::Md5)
        .failure_policy(policy)
        .pool_size(4)
        .connect_timeout(Duration::from_millis(300))
        .checkout_timeout(Duration::from_millis(300))
        .read_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let full = client.ring().clone();
    let mut proxy = Text::open(nc.listen());
    let owners_of = |mems: &[Memcached], skip: Option<usize>, keys: &[Vec<u8>]| {
        let mut owner: HashMap<Vec<u8>, usize> = HashMap::new();
        for (i, m) in mems.iter().enumerate() {
            if Some(i) == skip {
                continue;
            }
            let held = m.text().get_many(keys);
            for k in held.into_keys() {
                if let Some(prev) = owner.insert(k.clone(), i) {
                    panic!("{} held by servers {prev} and {i}", s(&k));
                }
            }
        }
        assert_eq!(owner.len(), keys.len(), "some keys were stored nowhere");
        owner
    };

    // All up: nutcracker and memshard agree, and memshard reads what nutcracker wrote (this
    // also leaves pooled connections on both sides, to the server that will die only when
    // `warm_dead`).
    let mut pre = make_keys(&format!("pre{round}"), 300);
    let mut dead_keys = Vec::new();
    if !warm_dead {
        (dead_keys, pre) = pre.into_iter().partition(|k| full.route(k) == Some(dead));
    }
    let items: Vec<(Vec<u8>, Vec<u8>)> = pre.iter().map(|k| (k.clone(), k.clone())).collect();
    proxy.store_all(&items);
    let owner = owners_of(&mems, None, &pre);
    let pre_diff = pre
        .iter()
        .filter(|k| full.route(k) != Some(owner[*k]))
        .count();
    assert_eq!(pre_diff, 0, "round {round}: placement differs with all up");
    let got = client.get_multi(&pre);
    assert_eq!(got.len(), pre.len(), "get_multi answered for every key");
    for (k, r) in pre.iter().zip(got) {
        assert_eq!(r.unwrap().expect("hit").value, *k);
    }
    if warm_dead {
        dead_keys = pre.iter().filter(|k| owner[*k] == dead).cloned().collect();
    } else {
        assert!(!owner.values().any(|&o| o == dead));
    }
    assert!(dead_keys.len() >= 10, "too few keys on the server to kill");

    // Kill one server.
    kill(&mems[dead]);

    // nutcracker notices: its keys get SERVER_ERROR until the server is ejected, then a
    // live server answers (a miss).
    let mut nc_errors = 0;
    let mut nc_requests = 0;
    let (_, nc_took) = wait_for(
        "nutcracker ejects the dead server",
        || {
            let k = &dead_keys[nc_requests % dead_keys.len()];
            nc_requests += 1;
            match get_first_line(&mut proxy, k) {
                Some(l) if l.starts_with("SERVER_ERROR") => nc_errors += 1,
                Some(l) if l == "END" || l.starts_with("VALUE ") => return Some(()),
                Some(l) => panic!("unexpected nutcracker reply {l}"),
                None => proxy = Text::open(nc.listen()),
            }
            None
        },
        || format!("log:\n{}", nc.log()),
    );
    if !warm_dead {
        // server_failure_limit 1: the first failed connect ejects
        assert_eq!(nc_errors, 1, "nutcracker SERVER_ERRORs before ejection");
    }

    // memshard notices: a request for a key of the dead server fails, then it is down.
    let mut ms_errors: BTreeMap<&str, usize> = BTreeMap::new();
    let noticed = Instant::now();
    for k in dead_keys.iter().take(5) {
        match client.get(k) {
            Err(e) => *ms_errors.entry(kind(&e)).or_default() += 1,
            Ok(v) => panic!("get of a dead server's key succeeded: {v:?}"),
        }
        if !client.down_servers().is_empty() {
            break;
        }
    }
    let ms_noticed = noticed.elapsed();
    assert_eq!(
        client.down_servers(),
        vec![servers[dead].clone()],
        "round {round}: memshard did not mark the dead server down"
    );
    assert_eq!(ms_errors.values().sum::<usize>(), 1, "failure_limit 1");

    // The ring in force is the ring over the live servers, point counts recomputed.
    let live: Vec<Server> = servers
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != dead)
        .map(|(_, s)| s.clone())
        .collect();
    let live_idx: Vec<usize> = (0..servers.len()).filter(|&i| i != dead).collect();
    let expected =
        Ring::with_options(live.clone(), Flavor::Twemproxy, Some(KeyHash::Md5), None).unwrap();
    let current = client.current_ring();
    let keys = make_keys(&format!("eject{round}"), 1000);
    assert!(
        same_ring(&current, &expected, &keys),
        "round {round}: current_ring differs from Ring::with_options(live servers)"
    );
    let full_live_counts: Vec<u32> = live_idx.iter().map(|&i| full.point_counts()[i]).collect();
    assert_ne!(
        current.point_counts(),
        &full_live_counts[..],
        "point counts were not recomputed over the live servers"
    );

    // Ask the real peer where each key goes now.
    let items: Vec<(Vec<u8>, Vec<u8>)> = keys.iter().map(|k| (k.clone(), b"nc".to_vec())).collect();
    proxy.store_all(&items);
    let owner = owners_of(&mems, Some(dead), &keys);
    let mut differences = Vec::new();
    let mut moved_from_dead = 0;
    let mut naive_differs = 0;
    for k in &keys {
        let got = live_idx[current.route(k).unwrap()];
        let want = owner[k];
        if got != want {
            differences.push(format!(
                "{}: nutcracker {}, memshard {}",
                s(k),
                servers[want].addr,
                servers[got].addr
            ));
        }
        if full.route(k) == Some(dead) {
            moved_from_dead += 1;
        }
        // dropping only the dead server's points (no recomputation) would give:
        let naive = full
            .distinct_servers(k)
            .find(|sv| **sv != servers[dead])
            .unwrap();
        if *naive != servers[want] {
            naive_differs += 1;
        }
    }
    assert!(
        differences.is_empty(),
        "round {round}: {} of {} keys placed differently after ejection; first: {:#?}",
        differences.len(),
        keys.len(),
        &differences[..differences.len().min(10)]
    );
    assert!(moved_from_dead > 0, "no key was on the dead server");

    // memshard writes land on live servers and nutcracker reads them back.
    let values: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), format!("ms-{round}-{i}").into_bytes()))
        .collect();
    let stored = client.set_multi(&values, 0, Expiry::NEVER);
    assert_eq!(
        stored.len(),
        values.len(),
        "set_multi answered for every item"
    );
    let set_errors = stored
        .into_iter()
        .filter(|r| !matches!(r, Ok(StoreOutcome::Stored)))
        .count();
    assert_eq!(set_errors, 0, "memshard set after ejection");
    let got = client.get_multi(&keys);
    assert_eq!(got.len(), keys.len(), "get_multi answered for every key");
    let get_errors = values
        .iter()
        .zip(&got)
        .filter(|((_, v), r)| !matches!(r, Ok(Some(item)) if item.value == *v))
        .count();
    assert_eq!(get_errors, 0, "memshard get after ejection");
    let via_proxy = proxy.get_many(&keys);
    let proxy_mismatch = values
        .iter()
        .filter(|(k, v)| via_proxy.get(k) != Some(v))
        .count();
    assert_eq!(
        proxy_mismatch, 0,
        "values written by memshard not read back by nutcracker"
    );

    println!(
        "eject_live twemproxy round {round} (names: {names}, weights {weights:?}, killed #{dead} {}): \
         nutcracker: {nc_errors} SERVER_ERROR, a live server answered request #{nc_requests} (within {} ms); \
         memshard errors before down: {ms_errors:?} in {} ms; point counts full {:?} -> live {:?}; \
         keys checked {}, differences {}, moved off the dead server {moved_from_dead}, \
         naive point removal would misplace {naive_differs}; memshard set/get errors {}/{}, \
         read back via nutcracker {}/{}",
        servers[dead].addr,
        nc_took.as_millis(),
        ms_noticed.as_millis(),
        full.point_counts(),
        current.point_counts(),
        keys.len(),
        differences.len(),
        set_errors,
        get_errors,
        keys.len() - proxy_mismatch,
        keys.len()
    );
    drop(client);
    drop(nc);
}

// ---------------------------------------------------------------------------------------
// 2. no ejection: fail fast, come back on the same port
// ---------------------------------------------------------------------------------------

#[test]
fn without_ejection_dead_server_fails_fast_then_comes_back() {
    if !require("memcached") {
        return;
    }
    let started = Instant::now();
    let (mut mems, servers) = start_servers(&[3, 1, 2, 1], |_| "");
    let policy = FailurePolicy::new(2, Duration::from_millis(300), false);
    let client = Client::builder()
        .servers(servers.clone())
        .failure_policy(policy)
        .pool_size(4)
        .connect_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_millis(300))
        .read_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let dead = 2;
    let keys = make_keys("ff", 800);
    let (dead_keys, live_keys): (Vec<Vec<u8>>, Vec<Vec<u8>>) = keys
        .iter()
        .cloned()
        .partition(|k| client.ring().route(k) == Some(dead));
    assert!(dead_keys.len() >= 20 && live_keys.len() >= 250);
    for k in &keys {
        assert_eq!(
            client.set(k, k, Expiry::NEVER).unwrap(),
            StoreOutcome::Stored
        );
    }

    // Kill it; its port is then taken by a recorder that accepts, records the request line
    // and closes: every request that still reaches the dead server's address is on record.
    let dead_sock = mems[dead].sock();
    kill(&mems[dead]);
    let recorder = Recorder::bind(dead_sock);

    // Keys of the dead server: errors; after failure_limit of them, ServerDown at once.
    const REQUESTS: usize = 30;
    let mut errors_per_server: BTreeMap<String, usize> = BTreeMap::new();
    let mut seq = Vec::new();
    // lines on record when each request returned
    let mut recorded_at = Vec::new();
    for (i, k) in dead_keys.iter().cycle().take(REQUESTS).enumerate() {
        let t = Instant::now();
        let r = if i % 2 == 0 {
            client.get(k).map(|_| ())
        } else {
            client.set(k, "x", Expiry::NEVER).map(|_| ())
        };
        let took = t.elapsed();
        recorded_at.push(recorder.lines().len());
        let e = r.expect_err("a request for a key of the dead server succeeded");
        *errors_per_server
            .entry(servers[dead].addr.clone())
            .or_default() += 1;
        seq.push((kind(&e), took));
    }
    assert_eq!(seq.len(), REQUESTS);
    let first_down = seq
        .iter()
        .position(|(k, _)| *k == "ServerDown")
        .expect("never failed fast");
    let before: Vec<_> = seq[..first_down]
        .iter()
        .map(|(k, t)| (*k, t.as_millis()))
        .collect();
    assert_eq!(
        first_down, policy.failure_limit as usize,
        "failures before ServerDown: {before:?}"
    );
    assert!(
        seq[..first_down]
            .iter()
            .all(|(k, _)| matches!(*k, "Io" | "Pool" | "Timeout")),
        "errors before marking down: {before:?}"
    );
    let fast = &seq[first_down..];
    assert_eq!(fast.len(), REQUESTS - policy.failure_limit as usize);
    assert!(fast.iter().all(|(k, _)| *k == "ServerDown"), "{seq:?}");
    // ServerDown without contacting the server: from the moment it was marked down to the
    // last request, no request line reached its address (the prober's `version` may).
    let lines = recorder.lines();
    let after_down = &lines[recorded_at[first_down - 1]..recorded_at[REQUESTS - 1]];
    let requests_after_down: Vec<&String> = after_down.iter().filter(|l| *l != "version").collect();
    assert!(
        requests_after_down.is_empty(),
        "requests reached the dead server after it was marked down: {requests_after_down:?}"
    );
    let reached_before_down = lines[..recorded_at[first_down - 1]]
        .iter()
        .filter(|l| *l != "version")
        .count();
    let slowest_fast = fast.iter().map(|(_, t)| *t).max().unwrap();
    assert_eq!(client.down_servers(), vec![servers[dead].clone()]);

    // Keys of the live servers: no error at all.
    let mut live_ops = 0;
    for (i, k) in live_keys.iter().take(250).enumerate() {
        for op in 0..2 {
            live_ops += 1;
            let r = if op == 0 {
                client.set(k, format!("v{i}"), Expiry::NEVER).map(|_| ())
            } else {
                match client.get(k) {
                    Ok(Some(item)) if item.value == format!("v{i}").as_bytes() => Ok(()),
                    Ok(other) => panic!("live key {} read back {other:?}", s(k)),
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = r {
                let owner = client.ring().server_for(k).unwrap().addr.clone();
                *errors_per_server.entry(owner).or_default() += 1;
                eprintln!("live key {}: {e}", s(k));
            }
        }
    }
    assert_eq!(live_ops, 500);
    let live_errors: usize = errors_per_server
        .iter()
        .filter(|(a, _)| **a != servers[dead].addr)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        live_errors, 0,
        "errors on live servers: {errors_per_server:?}"
    );
    let recorded = recorder.lines();
    let probes = recorded.iter().filter(|l| *l == "version").count();
    let accepted = recorder.accepted();

    // Restart memcached on the same port: once its retry timeout has passed the prober finds
    // it, and requests for its keys are served again.
    drop(recorder);
    drop(mems.remove(dead));
    mems.insert(dead, Memcached::start(LO, dead_sock.port(), ""));
    let mut polls = 0;
    let ((), recovered) = wait_for(
        "the restarted server comes back",
        || {
            polls += 1;
            (client.down_servers().is_empty() && client.get(&dead_keys[0]).is_ok()).then_some(())
        },
        || format!("down: {:?}", client.down_servers()),
    );
    for k in &dead_keys {
        assert_eq!(
            client.set(k, "back", Expiry::NEVER).unwrap(),
            StoreOutcome::Stored
        );
        assert_eq!(client.get(k).unwrap().unwrap().value, &b"back"[..]);
    }
    for k in &dead_keys {
        assert_eq!(
            mems[dead].raw_get(k).as_deref(),
            Some(&b"back"[..]),
            "{} not on the restarted server",
            s(k)
        );
    }
    assert!(client.down_servers().is_empty());

    println!(
        "eject_live fail-fast: killed {} ({} of {} keys); errors before down {before:?} (kind, ms); \
         then {} ServerDown, slowest {} us, request lines reaching the dead address before down \
         {reached_before_down}, after down 0; its address accepted {accepted} connections, \
         {probes} probes; live-server ops {live_ops}, errors per server {errors_per_server:?}; \
         restarted on port {}, back after {} ms ({polls} polls, retry timeout {} ms); total {} ms",
        servers[dead].addr,
        dead_keys.len(),
        keys.len(),
        fast.len(),
        slowest_fast.as_micros(),
        dead_sock.port(),
        recovered.as_millis(),
        policy.retry_timeout.as_millis(),
        started.elapsed().as_millis()
    );
}

// ---------------------------------------------------------------------------------------
// 3. auto-eject around a stopped server, compared with libmemcached's own auto-eject
// ---------------------------------------------------------------------------------------

#[test]
fn auto_eject_serves_every_key_while_a_server_is_stopped() {
    if !require("memcached") {
        return;
    }
    let Some(harness) = build_lmc_eject() else {
        return;
    };
    let started = Instant::now();
    let stopped = 2;
    // libmemcached counts a failure only when a connect fails or times out (a read timeout
    // just closes the connection), and the kernel completes connects to a stopped server
    // until its accept queue is full. A short queue (-b 8: 9 connections) lets libmemcached
    // meet failing connects after a few timed-out requests, as it would after 1025 with the
    // default backlog.
    let (mems, servers) = start_servers(&[2, 1, 3, 1], |i| if i == stopped { "-b 8" } else { "" });
    let policy = FailurePolicy::new(2, Duration::from_millis(500), true);
    let client = Client::builder()
        .servers(servers.clone())
        .flavor(Flavor::Libmemcached)
        .failure_policy(policy)
        .pool_size(4)
        .connect_timeout(Duration::from_millis(100))
        .read_timeout(Duration::from_millis(100))
        .write_timeout(Duration::from_millis(100))
        .checkout_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let full = client.ring().clone();
    let keys = make_keys("ae", 600);
    let stopped_keys: Vec<Vec<u8>> = keys
        .iter()
        .filter(|k| full.route(k) == Some(stopped))
        .cloned()
        .collect();
    assert!(stopped_keys.len() >= 20);
    for k in &keys {
        assert_eq!(
            client.set(k, "before", Expiry::NEVER).unwrap(),
            StoreOutcome::Stored
        );
    }

    mems[stopped].signal("STOP");
    let stopped_at = Instant::now();
    let mut errors: BTreeMap<&str, usize> = BTreeMap::new();
    for k in stopped_keys.iter().take(10) {
        if let Err(e) = client.get(k) {
            *errors.entry(kind(&e)).or_default() += 1;
        }
        if !client.down_servers().is_empty() {
            break;
        }
    }
    let ejected_after = stopped_at.elapsed();
    assert_eq!(client.down_servers(), vec![servers[stopped].clone()]);
    assert_eq!(
        errors.values().sum::<usize>(),
        policy.failure_limit as usize,
        "errors before ejection: {errors:?}"
    );
    let current = client.current_ring();

    // libmemcached, given the same servers, meets the same stopped server and ejects it
    // itself; where it puts every key, before and after, is where memshard does.
    let lmc = lmc_eject(&harness, policy.failure_limit, &servers, &keys);
    assert_eq!(
        lmc.ejected, servers[stopped].addr,
        "libmemcached ejected another server"
    );
    let mut before_differ = Vec::new();
    let mut after_differ = Vec::new();
    for k in &keys {
        let ms_full = &full.server_for(k).unwrap().addr;
        if lmc.before[k] != *ms_full {
            before_differ.push(format!(
                "{}: libmemcached {}, memshard {ms_full}",
                s(k),
                lmc.before[k]
            ));
        }
        let ms_now = &current.server_for(k).unwrap().addr;
        if lmc.after[k] != *ms_now {
            after_differ.push(format!(
                "{}: libmemcached {}, memshard {ms_now}",
                s(k),
                lmc.after[k]
            ));
        }
    }
    assert!(
        before_differ.is_empty(),
        "{} of {} keys placed differently with every server up; first: {:#?}",
        before_differ.len(),
        keys.len(),
        &before_differ[..before_differ.len().min(10)]
    );
    assert!(
        after_differ.is_empty(),
        "{} of {} keys placed differently after ejection; first: {:#?}",
        after_differ.len(),
        keys.len(),
        &after_differ[..after_differ.len().min(10)]
    );
    // the comparison covered the keys that had to move
    let lmc_moved = keys
        .iter()
        .filter(|k| lmc.before[*k] != lmc.after[*k])
        .count();
    assert!(
        lmc_moved >= stopped_keys.len(),
        "libmemcached moved {lmc_moved} keys"
    );
    assert!(
        !lmc.after.values().any(|a| *a == servers[stopped].addr),
        "libmemcached still places keys on the ejected server"
    );

    let live_idx: Vec<usize> = (0..servers.len()).filter(|&i| i != stopped).collect();
    let live_moved = keys
        .iter()
        .filter(|k| {
            let was = full.route(k).unwrap();
            was != stopped && live_idx[current.route(k).unwrap()] != was
        })
        .count();

    // Every key is served: writes, then reads, and each value sits on its live owner.
    let mut op_errors = 0;
    for (i, k) in keys.iter().enumerate() {
        match client.set(k, format!("during-{i}"), Expiry::NEVER) {
            Ok(StoreOutcome::Stored) => {}
            other => {
                op_errors += 1;
                eprintln!("set {} while stopped: {other:?}", s(k));
            }
        }
    }
    for (i, k) in keys.iter().enumerate() {
        match client.get(k) {
            Ok(Some(item)) if item.value == format!("during-{i}").as_bytes() => {}
            other => {
                op_errors += 1;
                eprintln!("get {} while stopped: {other:?}", s(k));
            }
        }
    }
    assert_eq!(op_errors, 0, "keys not served while a server is stopped");
    let mut on_owner = 0;
    for &i in &live_idx {
        let mine: Vec<(usize, &Vec<u8>)> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| live_idx[current.route(k).unwrap()] == i)
            .collect();
        let names: Vec<&Vec<u8>> = mine.iter().map(|(_, k)| *k).collect();
        let held = mems[i].text().get_many(&names);
        on_owner += mine
            .iter()
            .filter(|(j, k)| {
                held.get(*k).map(Vec::as_slice) == Some(format!("during-{j}").as_bytes())
            })
            .count();
    }
    assert_eq!(on_owner, keys.len(), "values not on their live owners");

    // SIGCONT: after the retry timeout the prober finds it and the full ring returns.
    mems[stopped].signal("CONT");
    let ((), recovered) = wait_for(
        "the resumed server comes back",
        || {
            (client.down_servers().is_empty() && same_ring(&client.current_ring(), &full, &keys))
                .then_some(())
        },
        || format!("down: {:?}", client.down_servers()),
    );
    for k in &stopped_keys {
        assert_eq!(
            client.set(k, "after", Expiry::NEVER).unwrap(),
            StoreOutcome::Stored
        );
        assert_eq!(client.get(k).unwrap().unwrap().value, &b"after"[..]);
    }
    let held = mems[stopped].text().get_many(&stopped_keys);
    let back_on_owner = stopped_keys
        .iter()
        .filter(|k| held.get(*k).map(Vec::as_slice) == Some(&b"after"[..]))
        .count();
    assert_eq!(
        back_on_owner,
        stopped_keys.len(),
        "values not on the resumed server"
    );

    println!(
        "eject_live auto-eject: stopped {} ({} of {} keys); memshard: errors before ejection {errors:?}, \
         ejected after {} ms; point counts full {:?} -> live {:?}, keys of live servers moved {live_moved}; \
         libmemcached ejected {} itself in {} ms ({}); keys compared {} before + {} after ejection, \
         differences {} + {}, moved by libmemcached {lmc_moved}; served {} writes + {} reads with \
         {op_errors} errors, {on_owner} values on their live owner; back {} ms after SIGCONT \
         (retry timeout {} ms); total {} ms",
        servers[stopped].addr,
        stopped_keys.len(),
        keys.len(),
        ejected_after.as_millis(),
        full.point_counts(),
        current.point_counts(),
        lmc.ejected,
        lmc.took.as_millis(),
        lmc.codes.join(", "),
        keys.len(),
        keys.len(),
        before_differ.len(),
        after_differ.len(),
        keys.len(),
        keys.len(),
        recovered.as_millis(),
        policy.retry_timeout.as_millis(),
        started.elapsed().as_millis()
    );
    let _ = std::fs::remove_dir_all(harness.parent().expect("harness folder"));
}
