//! The peers at their DEFAULT placement against memshard's profile of each peer
//! (`Builder::peer`), live, both ways.
//!
//! Five memcached servers on 127.0.28.1–127.0.28.5 (free ports; no other test binary uses
//! 127.0.28.x). For each peer, through its driver in `tests/defaults/`, with the peer built as
//! its users build it when they set nothing:
//!
//! | peer | built as | memshard profile's flavor |
//! |---|---|---|
//! | php-memcached | `new Memcached()` + `addServer(host, port, weight)` | `libmemcached-modula` |
//! | pylibmc | `pylibmc.Client(["host:port:weight", ...])`, no behaviors | `libmemcached-modula` |
//! | spymemcached | `new MemcachedClient(new DefaultConnectionFactory(), addrs)` | `spymemcached-modula` |
//! | pymemcache 4.0.0 | `HashClient([(host, port), ...])`, str keys | `pymemcache` |
//! | gomemcache | `memcache.New(addrs...)` | `gomemcache` |
//!
//! and three server lists ([`scenarios`]): the four servers 127.0.28.1–4 (weights 3, 1, 2, 1
//! given to the peers that take weights, php-memcached and pylibmc, and the same to memshard:
//! libmemcached's modula ignores them), the same four in another order (placement must follow
//! the order), and one server (127.0.28.5); for php-memcached a fourth list, the four in a third
//! order over its binary protocol (see the keys below). In each, [`N`] keys each way:
//!
//! - **peer → memshard**: the peer `set`s the keys (values from [`common::value_for`]), then
//!   memshard's blocking `Client`, built with `Builder::peer(Peer::…)` and nothing else (its
//!   flavor checked against the table), reads every one: 0 misses, 0 wrong values.
//! - **memshard → peer**: memshard `set`s other keys, the peer `get`s them all: the same.
//! - In both directions every key is then looked up raw on each of the five servers (no client
//!   code): it must be on the server `Client::ring().server_for(key)` names and on no other, so
//!   a failover or a lucky read cannot hide a wrong placement.
//!
//! Keys: for pylibmc and spymemcached two keys in three hold UTF-8 characters (bytes >= 0x80,
//! which libmemcached's one-at-a-time reads as signed chars; BMP and non-BMP characters, which
//! spymemcached's `String.hashCode` reads as UTF-16 units). Printable ASCII only where the peer
//! refuses other keys at its defaults: pymemcache (non-ASCII str keys need
//! `allow_unicode_keys`), gomemcache (its `legalKey` refuses bytes above 0x7e) and php-memcached
//! on its default text protocol (its key check refuses bytes >= 0x7f); php-memcached's fourth
//! list sets `OPT_BINARY_PROTOCOL` (the wire only, placement stays the default) and takes the
//! UTF-8 keys. Values are plain strings each peer stores raw (flags 0); their bytes are
//! compared.
//!
//! One summary line per peer (and one per server list and direction); every count of misses,
//! wrong servers, wrong values and errors must be 0. A missing peer is SKIPPED (printed), or a
//! failure when `CI` is set. pymemcache comes from a venv made by `scripts/pymemcache-venv.sh`
//! (`scripts/test.sh` runs it, and this test does when the venv is missing):
//! `$PYMEMCACHE_VENV`, else `target/pymemcache-venv`. The Go driver
//! is built offline against Debian's gomemcache source (GOPATH mode), the Java one with javac
//! against Debian's spymemcached jar.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::servers::{Memcached, Text, program, require};
use common::{TempDir, drivers, hex, missing, path_string, runs, unhex};
use memshard::{Client, Expiry, Flavor, StoreOutcome};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Keys each way, per server list.
const N: usize = 300;
/// The servers: four for the lists of four, the fifth alone.
const IPS: [Ipv4Addr; 5] = [
    Ipv4Addr::new(127, 0, 28, 1),
    Ipv4Addr::new(127, 0, 28, 2),
    Ipv4Addr::new(127, 0, 28, 3),
    Ipv4Addr::new(127, 0, 28, 4),
    Ipv4Addr::new(127, 0, 28, 5),
];
/// A driver that takes longer than this is killed and fails the test.
const DRIVER_DEADLINE: Duration = Duration::from_secs(180);

// ---------------------------------------------------------------------------------------
// the peers
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// printable ASCII only
    Ascii,
    /// two keys in three with UTF-8 characters, BMP and non-BMP
    Utf8,
}

struct Peer {
    name: &'static str,
    /// memshard's profile of the peer at its defaults: what the client is built with.
    profile: memshard::peer::Peer,
    /// The flavor that profile must place with (checked).
    flavor: Flavor,
    /// The driver: program and leading arguments; then `write|read HOST:PORT:WEIGHT...`.
    cmd: Vec<String>,
    keys: Keys,
    /// Whether the peer takes server weights (they go to the peer and to memshard alike).
    weights: bool,
}

fn driver(file: &str) -> String {
    common::repo_file(&format!("tests/defaults/{file}"))
}

/// Debian's python3 (the one python3-pylibmc installs into), not a virtualenv's.
fn debian_python() -> Option<PathBuf> {
    Some(PathBuf::from("/usr/bin/python3"))
        .filter(|p| p.is_file())
        .or_else(|| program("python3"))
}

fn php_memcached() -> Option<Peer> {
    let Some(php) = program("php") else {
        return missing("php-memcached", "php is not installed");
    };
    if !runs(
        &php,
        &["-r", "exit(extension_loaded('memcached') ? 0 : 1);"],
    ) {
        return missing("php-memcached", "php's memcached extension is not loaded");
    }
    Some(Peer {
        name: "php-memcached",
        profile: memshard::peer::Peer::PhpMemcached,
        flavor: Flavor::LibmemcachedModula,
        cmd: vec![path_string(&php), driver("php_defaults.php")],
        // and UTF-8 keys over its binary protocol (see `scenarios`)
        keys: Keys::Ascii,
        weights: true,
    })
}

fn pylibmc() -> Option<Peer> {
    let Some(py) = debian_python() else {
        return missing("pylibmc", "python3 is not installed");
    };
    if !runs(&py, &["-c", "import pylibmc"]) {
        return missing("pylibmc", "python3 cannot import pylibmc");
    }
    Some(Peer {
        name: "pylibmc",
        profile: memshard::peer::Peer::Pylibmc,
        flavor: Flavor::LibmemcachedModula,
        cmd: vec![path_string(&py), driver("pylibmc_defaults.py")],
        keys: Keys::Utf8,
        weights: true,
    })
}

fn spymemcached(tmp: &Path) -> Option<Peer> {
    let cmd = match drivers::spymemcached(tmp, &driver("SpyDefaults.java"), "SpyDefaults") {
        Ok(cmd) => cmd,
        Err(why) => return missing("spymemcached", &why),
    };
    Some(Peer {
        name: "spymemcached",
        profile: memshard::peer::Peer::Spymemcached,
        flavor: Flavor::SpymemcachedModula,
        cmd,
        keys: Keys::Utf8,
        weights: false,
    })
}

/// The venv `scripts/pymemcache-venv.sh` makes.
fn pymemcache_venv() -> PathBuf {
    if let Some(v) = std::env::var_os("PYMEMCACHE_VENV") {
        return PathBuf::from(v);
    }
    // target/<profile>/memshard: the venv sits in target/
    Path::new(env!("CARGO_BIN_EXE_memshard"))
        .parent()
        .and_then(Path::parent)
        .expect("target directory")
        .join("pymemcache-venv")
}

/// Makes the venv once per test binary when it is missing, as `scripts/test.sh` does: a plain
/// `cargo test` after the install step finds pymemcache too. Whether it worked is checked after.
fn make_pymemcache_venv(venv: &Path) {
    static MADE: std::sync::Once = std::sync::Once::new();
    MADE.call_once(|| {
        let script = common::repo_root().join("scripts/pymemcache-venv.sh");
        let _ = Command::new("bash")
            .arg(script)
            .arg(venv)
            .stdin(Stdio::null())
            .status();
    });
}

fn pymemcache() -> Option<Peer> {
    let venv = pymemcache_venv();
    let py = venv.join("bin/python");
    let check = "import pymemcache, sys; sys.exit(pymemcache.__version__ != '4.0.0')";
    if !runs(&py, &["-c", check]) {
        make_pymemcache_venv(&venv);
    }
    if !runs(&py, &["-c", check]) {
        return missing(
            "pymemcache",
            &format!(
                "{} lacks pymemcache 4.0.0 and scripts/pymemcache-venv.sh could not make it (it needs python3-venv)",
                py.display()
            ),
        );
    }
    Some(Peer {
        name: "pymemcache",
        profile: memshard::peer::Peer::Pymemcache,
        flavor: Flavor::Pymemcache,
        cmd: vec![path_string(&py), driver("pymemcache_defaults.py")],
        keys: Keys::Ascii,
        weights: false,
    })
}

fn gomemcache(tmp: &Path) -> Option<Peer> {
    let built = drivers::gomemcache(
        tmp,
        &driver("gomemcache_defaults.go"),
        "gomemcache_defaults",
    );
    let bin = match built {
        Ok(bin) => bin,
        Err(why) => return missing("gomemcache", &why),
    };
    Some(Peer {
        name: "gomemcache",
        profile: memshard::peer::Peer::Gomemcache,
        flavor: Flavor::Gomemcache,
        cmd: vec![bin],
        keys: Keys::Ascii,
        weights: false,
    })
}

/// What a driver said of one key.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    Ok,
    Hit(Vec<u8>),
    Miss,
    Error(String),
}

impl Peer {
    /// The driver in `mode` for `servers`, fed `lines`; what it said of each key, in order.
    fn run(&self, list: &List, mode: &str, s: &Servers, lines: &[String]) -> Vec<(Vec<u8>, Said)> {
        let servers = list.specs(s);
        let mut child = Command::new(&self.cmd[0])
            .args(&self.cmd[1..])
            .args(&list.args)
            .arg(mode)
            .args(servers)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: run {:?}: {e}", self.name, self.cmd));
        let mut input = child.stdin.take().expect("stdin");
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let feeder = std::thread::spawn(move || {
            let _ = input.write_all(text.as_bytes());
        });
        let drain = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = r.read_to_end(&mut v);
                v
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
        let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for driver") {
                break s;
            }
            if t.elapsed() > DRIVER_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} driver {mode} ran longer than {DRIVER_DEADLINE:?}",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = feeder.join();
        let out = String::from_utf8(stdout.join().expect("stdout reader")).expect("UTF-8 out");
        let err = String::from_utf8_lossy(&stderr.join().expect("stderr reader")).into_owned();
        assert!(
            status.success(),
            "{} driver {mode} failed ({status}):\n{out}\n{err}",
            self.name
        );
        let said: Vec<(Vec<u8>, Said)> = out
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let mut f = l.splitn(3, ' ');
                let key = unhex(f.next().unwrap_or_default());
                let said = match (f.next(), f.next()) {
                    (Some("ok"), None) => Said::Ok,
                    (Some("miss"), None) => Said::Miss,
                    (Some("hit"), Some(v)) => Said::Hit(unhex(v)),
                    (Some("hit"), None) => Said::Hit(Vec::new()),
                    (Some("error"), why) => Said::Error(why.unwrap_or_default().to_owned()),
                    _ => panic!("{} driver printed {l:?}\n{err}", self.name),
                };
                (key, said)
            })
            .collect();
        assert_eq!(
            said.len(),
            lines.len(),
            "{} driver {mode}: {} lines for {} keys\n{err}",
            self.name,
            said.len(),
            lines.len()
        );
        said
    }
}

// ---------------------------------------------------------------------------------------
// keys, server lists
// ---------------------------------------------------------------------------------------

const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/#@!~+=";
/// 2-, 3- and 4-byte UTF-8, the lowest non-ASCII (U+0080) and the highest code point; the
/// last four are outside the BMP (UTF-16 surrogate pairs).
const WIDE: &[char] = &[
    '\u{80}',
    'é',
    'ü',
    'ÿ',
    'Ā',
    'Ł',
    'ж',
    'Ω',
    '€',
    '中',
    '日',
    '語',
    '\u{ffff}',
    '🚀',
    '😀',
    '𝄞',
    '\u{10ffff}',
];

/// FNV-1a: a seed that is the same on every toolchain.
fn seed(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `N` distinct keys of at most 250 bytes, the same on every run.
fn keys(peer: &str, list: &str, dir: &str, kind: Keys) -> Vec<String> {
    let prefix = format!("{peer}/{list}/{dir}/");
    let mut rng = fastrand::Rng::with_seed(seed(&prefix));
    (0..N)
        .map(|i| {
            let mut k = format!("{prefix}{i}/");
            let wide = kind == Keys::Utf8 && i % 3 != 0;
            for j in 0..rng.usize(1..=40) {
                if wide && (j == 0 || rng.u8(..) < 90) {
                    k.push(WIDE[rng.usize(..WIDE.len())]);
                } else {
                    k.push(char::from(ASCII[rng.usize(..ASCII.len())]));
                }
            }
            assert!(k.len() <= 250);
            k
        })
        .collect()
}

struct Servers {
    all: Vec<Memcached>,
}

/// One server list: indexes into [`Servers::all`] in the order given, and the weights; the keys
/// it is tried with, and driver arguments before the mode.
struct List {
    name: &'static str,
    order: Vec<usize>,
    weights: Vec<u32>,
    keys: Keys,
    args: Vec<&'static str>,
}

fn scenarios(peer: &Peer) -> Vec<List> {
    // weights follow the servers: server 0 weighs 3, 1 weighs 1, 2 weighs 2, 3 weighs 1
    let w = |order: &[usize]| -> Vec<u32> {
        order
            .iter()
            .map(|&i| if peer.weights { [3, 1, 2, 1][i] } else { 1 })
            .collect()
    };
    let mut lists = vec![
        List {
            name: "four",
            order: vec![0, 1, 2, 3],
            weights: w(&[0, 1, 2, 3]),
            keys: peer.keys,
            args: vec![],
        },
        List {
            name: "four-permuted",
            order: vec![2, 0, 3, 1],
            weights: w(&[2, 0, 3, 1]),
            keys: peer.keys,
            args: vec![],
        },
        List {
            name: "one",
            order: vec![4],
            weights: vec![1],
            keys: peer.keys,
            args: vec![],
        },
    ];
    if peer.name == "php-memcached" {
        // php-memcached's text-protocol key check (its default) refuses bytes >= 0x80; its
        // binary protocol takes them: the same placement, now with UTF-8 keys
        lists.push(List {
            name: "four-binary",
            order: vec![1, 3, 0, 2],
            weights: w(&[1, 3, 0, 2]),
            keys: Keys::Utf8,
            args: vec!["--binary"],
        });
    }
    lists
}

impl List {
    /// `host:port:weight` per server, for the drivers.
    fn specs(&self, s: &Servers) -> Vec<String> {
        self.order
            .iter()
            .zip(&self.weights)
            .map(|(&i, w)| format!("{}:{w}", s.all[i].addr()))
            .collect()
    }

    /// memshard's server list: `host:port weight` lines.
    fn server_list(&self, s: &Servers) -> String {
        self.order
            .iter()
            .zip(&self.weights)
            .map(|(&i, w)| format!("{} {w}\n", s.all[i].addr()))
            .collect()
    }

    fn describe(&self) -> String {
        let ws: Vec<String> = self.weights.iter().map(u32::to_string).collect();
        let ips: Vec<String> = self.order.iter().map(|&i| format!(".{}", i + 1)).collect();
        let keys = match self.keys {
            Keys::Ascii => "ASCII keys",
            Keys::Utf8 => "UTF-8 keys",
        };
        format!(
            "{} [{}] weights {}, {keys}",
            self.name,
            ips.join(","),
            ws.join(",")
        )
    }
}

/// memshard's client for `peer`, built with nothing but the peer's profile at its defaults.
fn client(peer: &Peer, list: &List, s: &Servers) -> Client {
    let client = Client::builder()
        .server_list(&list.server_list(s))
        .expect("server list")
        .peer(peer.profile)
        .build()
        .expect("build the client");
    assert_eq!(client.ring().flavor(), peer.flavor, "{}", peer.name);
    client
}

// ---------------------------------------------------------------------------------------
// counts
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Counts {
    written: usize,
    /// read back with the right value
    read: usize,
    misses: usize,
    wrong_server: usize,
    wrong_value: usize,
    errors: usize,
    /// keys with a byte >= 0x80 / a character outside the BMP
    non_ascii: usize,
    non_bmp: usize,
    /// the flags the reader saw (peer → memshard)
    flags: BTreeSet<u32>,
    /// the first few failures, for the report
    notes: Vec<String>,
}

impl Counts {
    fn note(&mut self, what: String) {
        if self.notes.len() < 8 {
            self.notes.push(what);
        }
    }

    fn add(&mut self, o: &Counts) {
        self.written += o.written;
        self.read += o.read;
        self.misses += o.misses;
        self.wrong_server += o.wrong_server;
        self.wrong_value += o.wrong_value;
        self.errors += o.errors;
        self.non_ascii += o.non_ascii;
        self.non_bmp += o.non_bmp;
        self.flags.extend(&o.flags);
        for n in &o.notes {
            self.note(n.clone());
        }
    }

    fn bad(&self) -> usize {
        self.misses + self.wrong_server + self.wrong_value + self.errors
    }

    fn line(&self) -> String {
        format!(
            "{} written, {} read, {} misses, {} wrong server, {} wrong value, {} errors",
            self.written, self.read, self.misses, self.wrong_server, self.wrong_value, self.errors
        )
    }

    fn count_keys(&mut self, keys: &[String]) {
        self.non_ascii += keys.iter().filter(|k| !k.is_ascii()).count();
        self.non_bmp += keys
            .iter()
            .filter(|k| k.chars().any(|c| u32::from(c) > 0xffff))
            .count();
    }
}

/// Every key raw on each of the five servers: on `ring`'s server for it, and on no other.
fn check_placement(c: &mut Counts, client: &Client, s: &Servers, keys: &[String]) {
    let ring = client.ring();
    let held: Vec<(String, _)> = s
        .all
        .iter()
        .map(|m| (m.addr(), Text::open(m.sock()).get_many(keys)))
        .collect();
    for key in keys {
        let want = &ring.server_for(key.as_bytes()).expect("a server").addr;
        let on: Vec<&str> = held
            .iter()
            .filter(|(_, got)| got.contains_key(key.as_bytes()))
            .map(|(addr, _)| addr.as_str())
            .collect();
        if on != [want.as_str()] {
            c.wrong_server += 1;
            c.note(format!(
                "{key:?}: memshard's ring says {want}, held by {on:?}"
            ));
        }
    }
}

fn peer_to_memshard(peer: &Peer, list: &List, s: &Servers) -> Counts {
    let mut c = Counts::default();
    let keys = keys(peer.name, list.name, "to-memshard", list.keys);
    c.count_keys(&keys);
    let lines: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let v = common::value_for(k, i as u64);
            format!("{} {}", hex(k.as_bytes()), hex(v.as_bytes()))
        })
        .collect();
    let said = peer.run(list, "write", s, &lines);
    let mut stored = Vec::new();
    for ((i, key), (echo, said)) in keys.iter().enumerate().zip(said) {
        assert_eq!(
            echo,
            key.as_bytes(),
            "{} driver echoed another key",
            peer.name
        );
        match said {
            Said::Ok => {
                c.written += 1;
                stored.push((i, key.clone()));
            }
            other => {
                c.errors += 1;
                c.note(format!("{} set {key:?}: {other:?}", peer.name));
            }
        }
    }
    let client = client(peer, list, s);
    for (i, key) in &stored {
        let want = common::value_for(key, *i as u64);
        match client.get(key) {
            Ok(Some(item)) if item.value == want.as_bytes() => {
                c.read += 1;
                c.flags.insert(item.flags);
            }
            Ok(Some(item)) => {
                c.wrong_value += 1;
                c.note(format!(
                    "memshard read {key:?}: {:?}, not {want:?}",
                    String::from_utf8_lossy(&item.value)
                ));
            }
            Ok(None) => {
                c.misses += 1;
                c.note(format!("memshard read {key:?}: a miss"));
            }
            Err(e) => {
                c.errors += 1;
                c.note(format!("memshard read {key:?}: {e}"));
            }
        }
    }
    let written: Vec<String> = stored.into_iter().map(|(_, k)| k).collect();
    check_placement(&mut c, &client, s, &written);
    c
}

fn memshard_to_peer(peer: &Peer, list: &List, s: &Servers) -> Counts {
    let mut c = Counts::default();
    let keys = keys(peer.name, list.name, "from-memshard", list.keys);
    c.count_keys(&keys);
    let client = client(peer, list, s);
    let mut stored = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        match client.set(key, common::value_for(key, i as u64), Expiry::NEVER) {
            Ok(StoreOutcome::Stored) => {
                c.written += 1;
                stored.push((i, key.clone()));
            }
            other => {
                c.errors += 1;
                c.note(format!("memshard set {key:?}: {other:?}"));
            }
        }
    }
    let written: Vec<String> = stored.iter().map(|(_, k)| k.clone()).collect();
    check_placement(&mut c, &client, s, &written);
    let lines: Vec<String> = written.iter().map(|k| hex(k.as_bytes())).collect();
    let said = peer.run(list, "read", s, &lines);
    for ((i, key), (echo, said)) in stored.iter().zip(said) {
        assert_eq!(
            echo,
            key.as_bytes(),
            "{} driver echoed another key",
            peer.name
        );
        let want = common::value_for(key, *i as u64);
        match said {
            Said::Hit(v) if v == want.as_bytes() => c.read += 1,
            Said::Hit(v) => {
                c.wrong_value += 1;
                c.note(format!(
                    "{} read {key:?}: {:?}, not {want:?}",
                    peer.name,
                    String::from_utf8_lossy(&v)
                ));
            }
            Said::Miss => {
                c.misses += 1;
                c.note(format!("{} read {key:?}: a miss", peer.name));
            }
            other => {
                c.errors += 1;
                c.note(format!("{} read {key:?}: {other:?}", peer.name));
            }
        }
    }
    c
}

// ---------------------------------------------------------------------------------------
// the tests: one per peer
// ---------------------------------------------------------------------------------------

fn run(make: impl FnOnce(&Path) -> Option<Peer>) {
    if !require("memcached") {
        return;
    }
    let tmp = TempDir::new(&format!("defaults-{:x}", fastrand::u64(..)));
    let Some(peer) = make(&tmp.0) else {
        return;
    };
    let started = Instant::now();
    let s = Servers {
        all: IPS.iter().map(|&ip| Memcached::start(ip, 0, "")).collect(),
    };
    let (mut to_ms, mut from_ms) = (Counts::default(), Counts::default());
    let mut report = Vec::new();
    for list in scenarios(&peer) {
        let a = peer_to_memshard(&peer, &list, &s);
        let b = memshard_to_peer(&peer, &list, &s);
        report.push(format!(
            "  {}: {} → memshard: {}\n  {}: memshard → {}: {}",
            list.describe(),
            peer.name,
            a.line(),
            list.describe(),
            peer.name,
            b.line()
        ));
        to_ms.add(&a);
        from_ms.add(&b);
    }
    let flags: Vec<String> = to_ms.flags.iter().map(u32::to_string).collect();
    let summary = format!(
        "defaults_live {} (flavor {}): {} → memshard {}; memshard → {} {}; \
         keys with bytes >= 0x80: {}, with non-BMP characters: {}; flags seen: {}; {:.1} s",
        peer.name,
        peer.flavor,
        peer.name,
        to_ms.line(),
        peer.name,
        from_ms.line(),
        to_ms.non_ascii + from_ms.non_ascii,
        to_ms.non_bmp + from_ms.non_bmp,
        flags.join(","),
        started.elapsed().as_secs_f64()
    );
    println!("{summary}\n{}", report.join("\n"));
    let mut notes = to_ms.notes.clone();
    notes.extend(from_ms.notes.iter().cloned());
    assert!(
        to_ms.bad() == 0 && from_ms.bad() == 0,
        "{summary}\n{}\nfirst failures:\n{}",
        report.join("\n"),
        notes.join("\n")
    );
    let lists = scenarios(&peer).len();
    assert_eq!(to_ms.written, N * lists, "{summary}");
    assert_eq!(to_ms.read, N * lists, "{summary}");
    assert_eq!(from_ms.written, N * lists, "{summary}");
    assert_eq!(from_ms.read, N * lists, "{summary}");
    if scenarios(&peer).iter().any(|l| l.keys == Keys::Utf8) {
        assert!(
            to_ms.non_ascii > N / 2 && to_ms.non_bmp > 0 && from_ms.non_ascii > N / 2,
            "{summary}"
        );
    }
}

#[test]
fn php_memcached_default_placement_matches_libmemcached_modula() {
    run(|_| php_memcached());
}

#[test]
fn pylibmc_default_placement_matches_libmemcached_modula() {
    run(|_| pylibmc());
}

#[test]
fn spymemcached_default_placement_matches_spymemcached_modula() {
    run(spymemcached);
}

#[test]
fn pymemcache_default_placement_matches_pymemcache() {
    run(|_| pymemcache());
}

#[test]
fn gomemcache_default_placement_matches_gomemcache() {
    run(gomemcache);
}
