//! Failure handling against real servers on loopback: ejection placement compared with a real
//! twemproxy (nutcracker), fail-fast and coming back without ejection, and memshard's own
//! auto-eject around a stopped (SIGSTOP) server.
//!
//! Needs `memcached` (and `nutcracker`, which Debian installs in /usr/sbin). Without them the
//! tests print a SKIPPED line, or panic when `CI` is set.

mod common;

use common::servers::{Memcached, free_port};
use memshard::{Client, Error, FailurePolicy, Flavor, KeyHash, Ring, Server, StoreOutcome};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LO: Ipv4Addr = Ipv4Addr::LOCALHOST;

// ---------------------------------------------------------------------------------------
// programs
// ---------------------------------------------------------------------------------------

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    // Debian installs nutcracker in /usr/sbin, which is not on every user's PATH.
    dirs.push(PathBuf::from("/usr/sbin"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The programs' paths, or `None` after printing SKIPPED (a panic when `CI` is set).
fn programs(test: &str, names: &[&str]) -> Option<Vec<PathBuf>> {
    let found: Vec<Option<PathBuf>> = names.iter().map(|n| find_program(n)).collect();
    if found.iter().all(Option::is_some) {
        return Some(found.into_iter().flatten().collect());
    }
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(n, _)| *n)
        .collect();
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {missing:?} not installed (CI is set); apt-get install -y {missing:?}");
    }
    println!("SKIPPED {test}: {missing:?} not installed (apt-get install nutcracker memcached)");
    None
}

/// Wait until nothing accepts on `port` any more (the killed process is gone).
fn wait_port_closed(port: u16) {
    let addr = SocketAddr::from((LO, port));
    let deadline = Instant::now() + Duration::from_secs(3);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "{addr} still accepts after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// nutcracker, killed on drop; its config folder removed.
struct Nutcracker {
    child: Child,
    dir: PathBuf,
    listen: SocketAddr,
}

impl Drop for Nutcracker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Nutcracker {
    fn start(bin: &Path, tag: &str, servers: &[Server]) -> Nutcracker {
        let dir =
            std::env::temp_dir().join(format!("memshard-eject-live-{}-{tag}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let listen = SocketAddr::from((LO, free_port(LO)));
        let mut yml = format!(
            "eject:\n  listen: {listen}\n  distribution: ketama\n  hash: md5\n  timeout: 2000\n  \
             auto_eject_hosts: true\n  server_failure_limit: 1\n  server_retry_timeout: 600000\n  \
             server_connections: 1\n  servers:\n"
        );
        for s in servers {
            let mut v = format!("{}:{}:{}", s.host, s.port, s.weight);
            if let Some(n) = &s.name {
                v += &format!(" {n}");
            }
            yml += &format!("    - \"{v}\"\n");
        }
        let conf = dir.join("nutcracker.yml");
        fs::write(&conf, &yml).unwrap();
        let stats = free_port(LO);
        let mut child = Command::new(bin)
            .arg("-c")
            .arg(&conf)
            .arg("-o")
            .arg(dir.join("nutcracker.log"))
            .args(["-s", &stats.to_string(), "-a", "127.0.0.1", "-v", "5"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nutcracker");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "nutcracker exited ({st}); config:\n{yml}\nlog: {}",
                    fs::read_to_string(dir.join("nutcracker.log")).unwrap_or_default()
                );
            }
            if TcpStream::connect_timeout(&listen, Duration::from_millis(200)).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "nutcracker did not start:\n{yml}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nutcracker { child, dir, listen }
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("nutcracker.log")).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------------------
// a raw text-protocol connection (to nutcracker or to one memcached)
// ---------------------------------------------------------------------------------------

struct Text {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Text {
    fn open(addr: SocketAddr) -> Text {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_nodelay(true).unwrap();
        Text {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    /// One reply line without its CRLF; `None` at EOF.
    fn line(&mut self) -> Option<Vec<u8>> {
        let mut l = Vec::new();
        self.r.read_until(b'\n', &mut l).expect("read reply line");
        if l.is_empty() {
            return None;
        }
        assert!(l.ends_with(b"\r\n"), "truncated reply {l:?}");
        l.truncate(l.len() - 2);
        Some(l)
    }

    fn set_all(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
        for chunk in items.chunks(50) {
            let mut req = Vec::new();
            for (k, v) in chunk {
                req.extend_from_slice(format!("set {} 0 0 {}\r\n", s(k), v.len()).as_bytes());
                req.extend_from_slice(v);
                req.extend_from_slice(b"\r\n");
            }
            self.w.write_all(&req).unwrap();
            for (k, _) in chunk {
                let r = self.line().expect("connection closed during set");
                assert_eq!(s(&r), "STORED", "set {}", s(k));
            }
        }
    }

    /// Values of the keys this peer returns (multi-gets of < 2000 bytes).
    fn get_values(&mut self, keys: &[Vec<u8>]) -> HashMap<Vec<u8>, Vec<u8>> {
        let mut got = HashMap::new();
        let mut i = 0;
        while i < keys.len() {
            let mut req = b"get".to_vec();
            while i < keys.len() && req.len() + keys[i].len() + 3 < 1900 {
                req.push(b' ');
                req.extend_from_slice(&keys[i]);
                i += 1;
            }
            req.extend_from_slice(b"\r\n");
            self.w.write_all(&req).unwrap();
            loop {
                let l = self.line().expect("connection closed during get");
                if l == b"END" {
                    break;
                }
                let parts: Vec<&[u8]> = l.split(|&b| b == b' ').collect();
                assert!(
                    parts.len() >= 4 && parts[0] == b"VALUE",
                    "bad reply {}",
                    s(&l)
                );
                let n: usize = s(parts[3]).parse().unwrap();
                let mut data = vec![0u8; n + 2];
                self.r.read_exact(&mut data).unwrap();
                data.truncate(n);
                got.insert(parts[1].to_vec(), data);
            }
        }
        got
    }

    /// `get key`: the first reply line (`END`, `VALUE ...`, `SERVER_ERROR ...`), the rest of a
    /// hit consumed; `None` when the peer closed the connection.
    fn get_first_line(&mut self, key: &[u8]) -> Option<String> {
        self.w
            .write_all(format!("get {}\r\n", s(key)).as_bytes())
            .ok()?;
        let first = self.line()?;
        if first.starts_with(b"VALUE ") {
            loop {
                if self.line()? == b"END" {
                    break;
                }
            }
        }
        Some(s(&first))
    }
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
    a.servers() == b.servers()
        && a.point_counts() == b.point_counts()
        && a.len() == b.len()
        && a.flavor() == b.flavor()
        && a.key_hash() == b.key_hash()
        && keys
            .iter()
            .all(|k| a.route(k) == b.route(k) && a.point_for(k) == b.point_for(k))
}

fn kind(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "Io",
        Error::Timeout { .. } => "Timeout",
        Error::Pool { .. } => "Pool",
        Error::ServerDown { .. } => "ServerDown",
        Error::Protocol { .. } => "Protocol",
        Error::Server { .. } => "Server",
        _ => "other",
    }
}

fn start_servers(weights: &[u32]) -> (Vec<Memcached>, Vec<Server>) {
    let mems: Vec<Memcached> = weights
        .iter()
        .map(|_| Memcached::start(LO, 0, ""))
        .collect();
    let servers = mems
        .iter()
        .zip(weights)
        .map(|(m, &w)| Server::new("127.0.0.1", m.port).with_weight(w))
        .collect();
    (mems, servers)
}

// ---------------------------------------------------------------------------------------
// 1. twemproxy ejection placement
// ---------------------------------------------------------------------------------------

#[test]
fn twemproxy_ejection_placement_matches_memshard_current_ring() {
    let Some(bins) = programs("eject_live twemproxy", &["nutcracker", "memcached"]) else {
        return;
    };
    let started = Instant::now();
    // round 0: both peers hold a connection to the server that dies (they notice its close);
    // round 1: neither ever connected to it (they notice failed connects).
    twemproxy_round(&bins[0], 0, &[3, 1, 2, 5, 1], false, 2, true);
    twemproxy_round(&bins[0], 1, &[40, 100, 60, 25, 80], true, 1, false);
    println!(
        "eject_live twemproxy: both rounds in {} ms",
        started.elapsed().as_millis()
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

fn twemproxy_round(
    nutcracker: &Path,
    round: usize,
    weights: &[u32],
    names: bool,
    dead: usize,
    warm_dead: bool,
) {
    let (mems, mut servers) = start_servers(weights);
    if names {
        // names on three of the five: a name replaces the address in the point names
        for i in [0, 2, 3] {
            servers[i].name = Some(format!("cache-{round}-{i}"));
        }
    }
    let nc = Nutcracker::start(nutcracker, &format!("r{round}"), &servers);
    let policy = FailurePolicy {
        failure_limit: 1,
        retry_timeout: Duration::from_secs(600),
        auto_eject: true,
    };
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
    let mut proxy = Text::open(nc.listen);
    let owners_of = |mems: &[Memcached], skip: Option<usize>, keys: &[Vec<u8>]| {
        let mut owner: HashMap<Vec<u8>, usize> = HashMap::new();
        for (i, m) in mems.iter().enumerate() {
            if Some(i) == skip {
                continue;
            }
            let held = Text::open(SocketAddr::from((LO, m.port))).get_values(keys);
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
    proxy.set_all(&items);
    let owner = owners_of(&mems, None, &pre);
    let pre_diff = pre
        .iter()
        .filter(|k| full.route(k) != Some(owner[*k]))
        .count();
    assert_eq!(pre_diff, 0, "round {round}: placement differs with all up");
    for (k, r) in pre.iter().zip(client.get_multi(&pre)) {
        assert_eq!(r.unwrap().expect("hit").value, *k);
    }
    if warm_dead {
        dead_keys = pre.iter().filter(|k| owner[*k] == dead).cloned().collect();
    } else {
        assert!(!owner.values().any(|&o| o == dead));
    }
    assert!(dead_keys.len() >= 10, "too few keys on the server to kill");

    // Kill one server.
    let dead_port = mems[dead].port;
    mems[dead].signal("KILL");
    wait_port_closed(dead_port);

    // nutcracker notices: its keys get SERVER_ERROR until the server is ejected, then a
    // live server answers (a miss).
    let mut nc_errors = 0;
    let mut nc_ejected_after = None;
    for (n, k) in dead_keys.iter().cycle().take(50).enumerate() {
        match proxy.get_first_line(k) {
            Some(l) if l.starts_with("SERVER_ERROR") => nc_errors += 1,
            Some(l) if l == "END" || l.starts_with("VALUE ") => {
                nc_ejected_after = Some(n);
                break;
            }
            Some(l) => panic!("unexpected nutcracker reply {l}"),
            None => proxy = Text::open(nc.listen),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let nc_requests = nc_ejected_after.unwrap_or_else(|| {
        panic!(
            "nutcracker never ejected the dead server; log:\n{}",
            nc.log()
        )
    });
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
    proxy.set_all(&items);
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
    let set_errors = client
        .set_multi(&values, 0, 0)
        .into_iter()
        .filter(|r| !matches!(r, Ok(StoreOutcome::Stored)))
        .count();
    assert_eq!(set_errors, 0, "memshard set after ejection");
    let got = client.get_multi(&keys);
    let get_errors = values
        .iter()
        .zip(&got)
        .filter(|((_, v), r)| !matches!(r, Ok(Some(item)) if item.value == *v))
        .count();
    assert_eq!(get_errors, 0, "memshard get after ejection");
    let via_proxy = proxy.get_values(&keys);
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
         nutcracker: {nc_errors} SERVER_ERROR, ejected after {nc_requests} requests; \
         memshard errors before down: {ms_errors:?} in {} ms; point counts full {:?} -> live {:?}; \
         keys checked {}, differences {}, moved off the dead server {moved_from_dead}, \
         naive point removal would misplace {naive_differs}; memshard set/get errors {}/{}, \
         read back via nutcracker {}/{}",
        servers[dead].addr,
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
    if programs("eject_live fail-fast", &["memcached"]).is_none() {
        return;
    }
    let started = Instant::now();
    let (mut mems, servers) = start_servers(&[3, 1, 2, 1]);
    let policy = FailurePolicy {
        failure_limit: 2,
        retry_timeout: Duration::from_millis(300),
        auto_eject: false,
    };
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
        assert_eq!(client.set(k, k, 0, 0).unwrap(), StoreOutcome::Stored);
    }

    let dead_port = mems[dead].port;
    mems[dead].signal("KILL");
    wait_port_closed(dead_port);

    // Keys of the dead server: errors; after failure_limit of them, ServerDown at once.
    let mut errors_per_server: BTreeMap<String, usize> = BTreeMap::new();
    let mut seq = Vec::new();
    for (i, k) in dead_keys.iter().cycle().take(30).enumerate() {
        let t = Instant::now();
        let r = if i % 2 == 0 {
            client.get(k).map(|_| ())
        } else {
            client.set(k, "x", 0, 0).map(|_| ())
        };
        let took = t.elapsed();
        let e = r.expect_err("a request for a key of the dead server succeeded");
        *errors_per_server
            .entry(servers[dead].addr.clone())
            .or_default() += 1;
        seq.push((kind(&e), took));
    }
    let first_down = seq
        .iter()
        .position(|(k, _)| *k == "ServerDown")
        .expect("never failed fast");
    let before: Vec<_> = seq[..first_down]
        .iter()
        .map(|(k, t)| (*k, t.as_millis()))
        .collect();
    assert!(
        seq[..first_down]
            .iter()
            .all(|(k, _)| matches!(*k, "Io" | "Pool" | "Timeout")),
        "errors before marking down: {before:?}"
    );
    assert_eq!(
        first_down, policy.failure_limit as usize,
        "failures before ServerDown: {before:?}"
    );
    let fast = &seq[first_down..];
    assert!(fast.iter().all(|(k, _)| *k == "ServerDown"), "{seq:?}");
    let slowest_fast = fast.iter().map(|(_, t)| *t).max().unwrap();
    assert!(
        slowest_fast < Duration::from_millis(50),
        "fail-fast took {slowest_fast:?}"
    );
    assert_eq!(client.down_servers(), vec![servers[dead].clone()]);

    // Keys of the live servers: no error at all.
    let mut live_ops = 0;
    for (i, k) in live_keys.iter().take(250).enumerate() {
        for op in 0..2 {
            live_ops += 1;
            let r = if op == 0 {
                client.set(k, format!("v{i}"), 0, 0).map(|_| ())
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
    let live_errors: usize = errors_per_server
        .iter()
        .filter(|(a, _)| **a != servers[dead].addr)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        live_errors, 0,
        "errors on live servers: {errors_per_server:?}"
    );

    // Restart memcached on the same port: after the retry timeout it is probed and back.
    drop(mems.remove(dead));
    mems.insert(dead, Memcached::start(LO, dead_port, ""));
    let restarted = Instant::now();
    std::thread::sleep(policy.retry_timeout + Duration::from_millis(20));
    let mut polls = 0;
    let recovered = loop {
        polls += 1;
        if client.down_servers().is_empty() && client.get(&dead_keys[0]).is_ok() {
            break restarted.elapsed();
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(3),
            "the restarted server did not come back; down: {:?}",
            client.down_servers()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    for k in &dead_keys {
        assert_eq!(client.set(k, "back", 0, 0).unwrap(), StoreOutcome::Stored);
        assert_eq!(client.get(k).unwrap().unwrap().value, b"back");
    }
    assert_eq!(
        mems[dead].raw_get(&dead_keys[0]).as_deref(),
        Some(&b"back"[..])
    );
    assert!(client.down_servers().is_empty());

    println!(
        "eject_live fail-fast: killed {} ({} of {} keys); errors before down {before:?} (kind, ms); \
         then {} ServerDown, slowest {} us; live-server ops {live_ops}, errors per server {errors_per_server:?}; \
         restarted on port {dead_port}, back after {} ms ({polls} polls, retry timeout {} ms); total {} ms",
        servers[dead].addr,
        dead_keys.len(),
        keys.len(),
        fast.len(),
        slowest_fast.as_micros(),
        recovered.as_millis(),
        policy.retry_timeout.as_millis(),
        started.elapsed().as_millis()
    );
}

// ---------------------------------------------------------------------------------------
// 3. memshard auto-eject around a stopped server (no twemproxy)
// ---------------------------------------------------------------------------------------

#[test]
fn auto_eject_serves_every_key_while_a_server_is_stopped() {
    if programs("eject_live auto-eject", &["memcached"]).is_none() {
        return;
    }
    let started = Instant::now();
    let (mems, servers) = start_servers(&[2, 1, 3, 1]);
    let policy = FailurePolicy {
        failure_limit: 2,
        retry_timeout: Duration::from_millis(500),
        auto_eject: true,
    };
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
    let stopped = 2;
    let keys = make_keys("ae", 600);
    let stopped_keys: Vec<Vec<u8>> = keys
        .iter()
        .filter(|k| full.route(k) == Some(stopped))
        .cloned()
        .collect();
    assert!(stopped_keys.len() >= 20);
    for k in &keys {
        assert_eq!(client.set(k, "before", 0, 0).unwrap(), StoreOutcome::Stored);
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

    // The live ring is the ring over the other three, point counts recomputed.
    let live_idx: Vec<usize> = (0..servers.len()).filter(|&i| i != stopped).collect();
    let live: Vec<Server> = live_idx.iter().map(|&i| servers[i].clone()).collect();
    let expected = Ring::new(live, Flavor::Libmemcached).unwrap();
    let current = client.current_ring();
    assert!(
        same_ring(&current, &expected, &keys),
        "current_ring differs from Ring::new(live servers)"
    );
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
        match client.set(k, format!("during-{i}"), 0, 0) {
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
        let mine: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| live_idx[current.route(k).unwrap()] == i)
            .cloned()
            .collect();
        let held = Text::open(SocketAddr::from((LO, mems[i].port))).get_values(&mine);
        on_owner += mine
            .iter()
            .enumerate()
            .filter(|(_, k)| held.get(*k).is_some_and(|v| v.starts_with(b"during-")))
            .count();
    }
    assert_eq!(on_owner, keys.len(), "values not on their live owners");

    // SIGCONT: after the retry timeout the prober finds it and the full ring returns.
    mems[stopped].signal("CONT");
    let resumed = Instant::now();
    let recovered = loop {
        if client.down_servers().is_empty() && same_ring(&client.current_ring(), &full, &keys) {
            break resumed.elapsed();
        }
        assert!(
            resumed.elapsed() < Duration::from_secs(3),
            "the resumed server did not come back; down: {:?}",
            client.down_servers()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    for k in &stopped_keys {
        assert_eq!(client.set(k, "after", 0, 0).unwrap(), StoreOutcome::Stored);
        assert_eq!(client.get(k).unwrap().unwrap().value, b"after");
    }
    assert_eq!(
        mems[stopped].raw_get(&stopped_keys[0]).as_deref(),
        Some(&b"after"[..])
    );

    println!(
        "eject_live auto-eject: stopped {} ({} of {} keys); errors before ejection {errors:?}, \
         ejected after {} ms; point counts full {:?} -> live {:?}, keys of live servers moved {live_moved}; \
         served {} writes + {} reads with {op_errors} errors, {on_owner} values on their live owner; \
         back {} ms after SIGCONT (retry timeout {} ms); total {} ms",
        servers[stopped].addr,
        stopped_keys.len(),
        keys.len(),
        ejected_after.as_millis(),
        full.point_counts(),
        current.point_counts(),
        keys.len(),
        keys.len(),
        recovered.as_millis(),
        policy.retry_timeout.as_millis(),
        started.elapsed().as_millis()
    );
}
