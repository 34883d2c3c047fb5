//! Live cross-check against a real twemproxy (nutcracker).
//!
//! For a few random pools (random weights, server names, port 11211, hash md5 and the
//! default fnv1a_64, a hash_tag) this test starts memcached servers and nutcracker on
//! loopback, stores ~500 keys through nutcracker, asks every memcached which keys it
//! holds, and checks that `memshard route --flavor twemproxy` names the same server for
//! every key.
//!
//! Needs `nutcracker` and `memcached` on PATH (Debian: `apt-get install nutcracker
//! memcached`). Without them the test prints a SKIPPED line, or panics when `CI` is set.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------------------------------
// small deterministic PRNG (splitmix64)
// ---------------------------------------------------------------------------------------
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------------------
// child processes, killed on drop
// ---------------------------------------------------------------------------------------
struct Procs {
    children: Vec<Child>,
    dir: PathBuf,
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    // Debian installs nutcracker in /usr/sbin, which is not on every user's PATH.
    dirs.push(PathBuf::from("/usr/sbin"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn free_port(ip: Ipv4Addr) -> u16 {
    TcpListener::bind(SocketAddr::from((ip, 0)))
        .expect("bind a free loopback port")
        .local_addr()
        .unwrap()
        .port()
}

fn port_is_free(ip: Ipv4Addr, port: u16) -> bool {
    TcpListener::bind(SocketAddr::from((ip, port))).is_ok()
}

/// Waits until `addr` accepts connections; false if the child exits or time runs out.
fn wait_listening(child: &mut Child, addr: SocketAddr, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[derive(Clone, Debug)]
struct Server {
    ip: Ipv4Addr,
    port: u16,
    weight: u32,
    name: Option<String>,
}

impl Server {
    fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }
    fn sock(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }
}

fn start_memcached(bin: &Path, procs: &mut Procs, ip: Ipv4Addr, port: u16) -> bool {
    let mut child = Command::new(bin)
        .args(["-l", &ip.to_string(), "-p", &port.to_string()])
        .args(["-m", "8", "-t", "1", "-U", "0", "-c", "64", "-u", "root"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn memcached");
    let ok = wait_listening(
        &mut child,
        SocketAddr::from((ip, port)),
        Duration::from_secs(5),
    );
    procs.children.push(child);
    ok
}

// ---------------------------------------------------------------------------------------
// memcached text protocol
// ---------------------------------------------------------------------------------------
struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }
    fn line(&mut self) -> Vec<u8> {
        let mut l = Vec::new();
        self.r.read_until(b'\n', &mut l).expect("read reply line");
        assert!(
            l.ends_with(b"\r\n"),
            "truncated reply {:?}",
            String::from_utf8_lossy(&l)
        );
        l.truncate(l.len() - 2);
        l
    }
}

fn set_all(addr: SocketAddr, keys: &[Vec<u8>]) {
    let mut c = Conn::open(addr);
    for chunk in keys.chunks(50) {
        let mut req = Vec::new();
        for k in chunk {
            req.extend_from_slice(b"set ");
            req.extend_from_slice(k);
            req.extend_from_slice(b" 0 0 1\r\nv\r\n");
        }
        c.w.write_all(&req).unwrap();
        for k in chunk {
            let r = c.line();
            assert_eq!(
                r,
                b"STORED",
                "set {:?} via nutcracker",
                String::from_utf8_lossy(k)
            );
        }
    }
}

fn held_keys(addr: SocketAddr, keys: &[Vec<u8>]) -> HashSet<Vec<u8>> {
    let mut c = Conn::open(addr);
    let mut got = HashSet::new();
    let mut i = 0;
    while i < keys.len() {
        let mut req = b"get".to_vec();
        while i < keys.len() && req.len() + keys[i].len() + 3 < 1900 {
            req.push(b' ');
            req.extend_from_slice(&keys[i]);
            i += 1;
        }
        req.extend_from_slice(b"\r\n");
        c.w.write_all(&req).unwrap();
        loop {
            let l = c.line();
            if l == b"END" {
                break;
            }
            let parts: Vec<&[u8]> = l.split(|&b| b == b' ').collect();
            assert!(
                parts.len() >= 4 && parts[0] == b"VALUE",
                "bad reply {:?}",
                String::from_utf8_lossy(&l)
            );
            let n: usize = std::str::from_utf8(parts[3]).unwrap().parse().unwrap();
            let mut data = vec![0u8; n + 2];
            c.r.read_exact(&mut data).unwrap();
            got.insert(parts[1].to_vec());
        }
    }
    got
}

// ---------------------------------------------------------------------------------------
// random pools and keys
// ---------------------------------------------------------------------------------------
const UTF8_BITS: &[&str] = &[
    "é", "ü", "ñ", "ß", "ø", "中", "文", "한", "ж", "Ω", "ℵ", "😀", "🚀",
];
const NAME_WORDS: &[&str] = &[
    "alpha", "cache", "node", "shard", "west", "rack", "nöde", "缓存", "db", "x",
];

fn random_part(rng: &mut Rng, max_bytes: usize, exclude: &[u8]) -> String {
    let target = rng.range(1, max_bytes as u64) as usize;
    let mut s = String::new();
    loop {
        let piece = if rng.chance(30) {
            rng.pick(UTF8_BITS).to_string()
        } else {
            let c = rng.range(0x21, 0x7e) as u8;
            if exclude.contains(&c) {
                continue;
            }
            (c as char).to_string()
        };
        if s.len() + piece.len() > target {
            break;
        }
        s.push_str(&piece);
    }
    if s.is_empty() {
        s.push('k');
    }
    s
}

fn random_key(rng: &mut Rng, tag: Option<&str>, contents: &[String]) -> Vec<u8> {
    let max = if rng.chance(10) { 200 } else { 30 };
    let Some(tag) = tag else {
        return random_part(rng, max, b"").into_bytes();
    };
    let (o, c) = (&tag[..1], &tag[1..2]);
    let ex = tag.as_bytes();
    let t = rng.pick(contents).clone();
    let mut p = || random_part(rng, 20, ex);
    let k = match p().len() % 8 {
        0 => format!("{}{o}{t}{c}{}", p(), p()),
        1 => format!("{o}{t}{c}{}", p()),
        2 => format!("{}{o}{c}{}", p(), p()), // empty tag: whole key is hashed
        3 => format!("{}{o}{}", p(), p()),    // opening char only
        4 => format!("{}{o}{t}{c}{}{o}{}{c}", p(), p(), p()), // several tags: first wins
        5 => format!("{}{c}{}{o}{t}{c}", p(), p()), // closing char before the opening
        6 => format!("{o}{c}{}{o}{t}{c}", p()), // empty first tag, then a real one
        _ => p(),
    };
    k.into_bytes()
}

struct Pool {
    servers: Vec<Server>,
    hash: Option<&'static str>,
    tag: Option<&'static str>,
}

fn random_pool(rng: &mut Rng, memcached: &Path, procs: &mut Procs, round: usize) -> Pool {
    let n = rng.range(3, 8) as usize;
    let mut servers: Vec<Server> = Vec::new();
    let mut used_names = HashSet::new();
    for i in 0..n {
        let weight = if rng.chance(50) {
            1
        } else {
            rng.range(1, 300) as u32
        };
        let name = if rng.chance(40) {
            loop {
                let nm = format!("{}-{}{}", rng.pick(NAME_WORDS), round, rng.range(0, 999));
                if used_names.insert(nm.clone()) {
                    break Some(nm);
                }
            }
        } else {
            None
        };
        // try port 11211 on a random 127.x.y.z for a couple of servers (name rule: host only)
        let mut started = None;
        if i < 2 && rng.chance(60) {
            for _ in 0..5 {
                let ip = Ipv4Addr::new(
                    127,
                    rng.range(100, 250) as u8,
                    rng.range(1, 254) as u8,
                    rng.range(1, 254) as u8,
                );
                if servers.iter().any(|s| s.ip == ip) || !port_is_free(ip, 11211) {
                    continue;
                }
                if start_memcached(memcached, procs, ip, 11211) {
                    started = Some((ip, 11211));
                    break;
                }
            }
        }
        if started.is_none() {
            for _ in 0..10 {
                let ip = Ipv4Addr::new(127, 0, 0, 1);
                let port = free_port(ip);
                if start_memcached(memcached, procs, ip, port) {
                    started = Some((ip, port));
                    break;
                }
            }
        }
        let (ip, port) = started.expect("could not start memcached on loopback");
        servers.push(Server {
            ip,
            port,
            weight,
            name,
        });
    }
    let hash = match round % 4 {
        0 => None,
        1 => Some("md5"),
        2 => None,
        _ => Some("md5"),
    };
    let tag = match round % 4 {
        2 => Some("{}"),
        3 => Some("$$"),
        _ => None,
    };
    Pool { servers, hash, tag }
}

fn yaml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

// ---------------------------------------------------------------------------------------
// the test
// ---------------------------------------------------------------------------------------
#[test]
fn twemproxy_live_placement_matches_memshard_route() {
    let (Some(nutcracker), Some(memcached)) =
        (find_program("nutcracker"), find_program("memcached"))
    else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "twemproxy_live: nutcracker and/or memcached not found on PATH (CI is set); install them: apt-get install -y nutcracker memcached"
            );
        }
        eprintln!(
            "\n*** SKIPPED twemproxy_live: nutcracker and/or memcached not on PATH (apt-get install nutcracker memcached) ***\n"
        );
        return;
    };
    let memshard = env!("CARGO_BIN_EXE_memshard");
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        ^ std::process::id() as u64;
    let seed = std::env::var("TWEMPROXY_LIVE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
    eprintln!("twemproxy_live: seed {seed} (rerun with TWEMPROXY_LIVE_SEED={seed})");
    let mut rng = Rng(seed);
    let started = Instant::now();

    for round in 0..4 {
        let dir = std::env::temp_dir().join(format!(
            "memshard-twemproxy-live-{}-{seed}-{round}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).unwrap();
        let mut procs = Procs {
            children: Vec::new(),
            dir: dir.clone(),
        };
        let pool = random_pool(&mut rng, &memcached, &mut procs, round);

        // nutcracker.yml
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port(Ipv4Addr::LOCALHOST)));
        let mut yml = format!("live:\n  listen: {listen}\n  distribution: ketama\n");
        if let Some(h) = pool.hash {
            yml += &format!("  hash: {h}\n");
        }
        if let Some(t) = pool.tag {
            yml += &format!("  hash_tag: {}\n", yaml_quote(t));
        }
        yml += "  timeout: 5000\n  auto_eject_hosts: false\n  server_connections: 1\n  servers:\n";
        let mut servers_txt = String::from("# written by tests/twemproxy_live.rs\n");
        for s in &pool.servers {
            let mut v = format!("{}:{}", s.addr(), s.weight);
            servers_txt += &format!("{} {}", s.addr(), s.weight);
            if let Some(n) = &s.name {
                v += &format!(" {n}");
                servers_txt += &format!(" {n}");
            }
            yml += &format!("    - {}\n", yaml_quote(&v));
            servers_txt += "\n";
        }
        let conf = dir.join("nutcracker.yml");
        fs::write(&conf, &yml).unwrap();
        let servers_file = dir.join("servers.txt");
        fs::write(&servers_file, &servers_txt).unwrap();

        let stats = free_port(Ipv4Addr::LOCALHOST);
        let mut nc = Command::new(&nutcracker)
            .arg("-c")
            .arg(&conf)
            .arg("-o")
            .arg(dir.join("nutcracker.log"))
            .args(["-s", &stats.to_string(), "-a", "127.0.0.1", "-v", "4"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nutcracker");
        let up = wait_listening(&mut nc, listen, Duration::from_secs(10));
        procs.children.push(nc);
        assert!(
            up,
            "nutcracker did not start; config:\n{yml}\nlog: {}",
            fs::read_to_string(dir.join("nutcracker.log")).unwrap_or_default()
        );

        // keys
        let contents: Vec<String> = (0..15).map(|_| random_part(&mut rng, 12, b"{}$")).collect();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut seen = HashSet::new();
        while keys.len() < 500 {
            let k = random_key(&mut rng, pool.tag, &contents);
            if k.len() <= 250 && seen.insert(k.clone()) {
                keys.push(k);
            }
        }

        // ask the real peer
        set_all(listen, &keys);
        let mut owner: HashMap<Vec<u8>, String> = HashMap::new();
        for s in &pool.servers {
            for k in held_keys(s.sock(), &keys) {
                if let Some(prev) = owner.insert(k.clone(), s.addr()) {
                    panic!(
                        "key {:?} held by {prev} and {}",
                        String::from_utf8_lossy(&k),
                        s.addr()
                    );
                }
            }
        }
        assert_eq!(
            owner.len(),
            keys.len(),
            "some keys were stored on no memcached"
        );

        // ask memshard
        let mut cmd = Command::new(memshard);
        cmd.arg("route")
            .arg("--servers")
            .arg(&servers_file)
            .args(["--flavor", "twemproxy"]);
        if let Some(h) = pool.hash {
            cmd.args(["--hash", h]);
        }
        if let Some(t) = pool.tag {
            cmd.args(["--hash-tag", t]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn memshard");
        let mut input = Vec::new();
        for k in &keys {
            input.extend_from_slice(k);
            input.push(b'\n');
        }
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            stdin.write_all(&input).unwrap();
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(
            out.status.success(),
            "memshard route failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let lines: Vec<&[u8]> = out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(
            lines.len(),
            keys.len(),
            "memshard route printed {} lines for {} keys",
            lines.len(),
            keys.len()
        );
        let mut wrong = Vec::new();
        for (k, l) in keys.iter().zip(&lines) {
            let tab = l.iter().rposition(|&b| b == b'\t').expect("KEY<TAB>ADDR");
            assert_eq!(&l[..tab], &k[..], "memshard route output out of order");
            let got = String::from_utf8_lossy(&l[tab + 1..]).to_string();
            let want = &owner[k];
            if &got != want {
                wrong.push(format!(
                    "{:?}: nutcracker {want}, memshard {got}",
                    String::from_utf8_lossy(k)
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "round {round} (seed {seed}): {} of {} keys placed differently\nconfig:\n{yml}\nfirst: {:#?}",
            wrong.len(),
            keys.len(),
            &wrong[..wrong.len().min(10)]
        );
        eprintln!(
            "twemproxy_live round {round}: servers [{}], hash {}, hash_tag {:?}: {} keys agree",
            servers_txt.lines().skip(1).collect::<Vec<_>>().join(", "),
            pool.hash.unwrap_or("fnv1a_64 (default)"),
            pool.tag,
            keys.len()
        );
        drop(procs);
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "twemproxy_live is too slow"
        );
    }
}
