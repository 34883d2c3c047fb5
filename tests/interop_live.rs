//! Live interop with the peers memshard claims to place keys like: pylibmc, php-memcached and
//! twemproxy (nutcracker), all in front of the same four weighted memcached servers
//! (`Cluster::four()`: two of them on port 11211, weights 3, 1, 2, 1).
//!
//! Each peer writes keys that memshard must read straight from the servers, and reads keys that
//! memshard wrote: a single miss in either direction fails the test. Run with `--nocapture` to
//! see the figures.
//!
//! Needs memcached, /usr/bin/python3 with pylibmc, php with the memcached extension and
//! nutcracker (Debian: `apt-get install memcached python3-pylibmc php-memcached nutcracker`).
//! A missing peer is SKIPPED (printed), or a failure when `CI` is set.

mod common;

use common::servers::{Cluster, Nutcracker, Text, require};
use common::{hex, runs, skip as skipped, unhex};
use memshard::Expiry;
use memshard::{Client, Flavor, Item, KeyHash, StoreOutcome};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Keys per peer and direction.
const N: usize = 2000;

/// A `(key, value)` pair.
type Pair = (Vec<u8>, Vec<u8>);
type Items = Vec<Pair>;

// ---------------------------------------------------------------------------------------------
// keys and values
// ---------------------------------------------------------------------------------------------

/// splitmix64: deterministic keys, so a failure can be rerun as is.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const UTF8_BITS: &[&str] = &[
    "é",
    "ü",
    "ñ",
    "ß",
    "ø",
    "ключ",
    "中文",
    "한",
    "ж",
    "Ω",
    "ℵ",
    "😀",
    "🚀",
    "Ünïcödé",
];

/// `prefix` + index + a random tail: short ASCII, UTF-8, and long keys (200–250 bytes, some
/// exactly 250), all valid memcached text-protocol keys.
fn make_keys(prefix: &str, seed: u64) -> Items {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(N);
    for i in 0..N {
        let kind = i % 6;
        let mut key = format!("{prefix}{i}:");
        let target = match kind {
            0 | 1 => key.len() + 1 + rng.below(30),
            2 => key.len() + 4 + rng.below(60),
            3 => 250,
            _ => 200 + rng.below(51),
        };
        let utf8 = kind == 2 || kind == 4;
        loop {
            let piece = if utf8 && rng.below(3) == 0 {
                UTF8_BITS[rng.below(UTF8_BITS.len())].to_string()
            } else {
                char::from(0x21 + rng.below(0x7e - 0x21 + 1) as u8).to_string()
            };
            if key.len() + piece.len() > target {
                if utf8 && !key.bytes().any(|b| b >= 0x80) {
                    key.truncate(key.len().min(240));
                    key.push('é');
                }
                break;
            }
            key.push_str(&piece);
        }
        assert!(key.len() <= 250, "{key}");
        let len = match rng.below(10) {
            0 => 0,
            1 => 500 + rng.below(500),
            _ => 1 + rng.below(60),
        };
        let value: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        out.push((key.into_bytes(), value));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// files, processes
// ---------------------------------------------------------------------------------------------

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write_pairs(path: &Path, items: &[Pair]) {
    let text: String = items
        .iter()
        .map(|(k, v)| format!("{}\t{}\n", hex(k), hex(v)))
        .collect();
    fs::write(path, text).unwrap();
}

fn read_pairs(path: &Path) -> HashMap<Vec<u8>, Vec<u8>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap_or((l, ""));
            (unhex(k), unhex(v))
        })
        .collect()
}

/// Run a driver (`tests/interop/…`) in `mode` on `input`; returns the output file's path.
fn driver(
    program: &str,
    script: &str,
    mode: &str,
    dir: &Path,
    tag: &str,
    servers: &Path,
) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(script);
    let input = dir.join(format!("{tag}.in"));
    let output = dir.join(format!("{tag}.{mode}.out"));
    let out = Command::new(program)
        .arg(&script)
        .arg(mode)
        .arg(servers)
        .arg(&input)
        .arg(&output)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {program} {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{program} {} {mode} failed: {}\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    output
}

// ---------------------------------------------------------------------------------------------
// memshard's side
// ---------------------------------------------------------------------------------------------

fn memshard(c: &Cluster, flavor: Flavor) -> Client {
    Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .flavor(flavor)
        .hash(KeyHash::Md5)
        .pool_size(4)
        .read_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// What memshard read of keys a peer wrote.
struct ReadBack {
    multi_misses: usize,
    single_misses: usize,
    wrong: usize,
    errors: usize,
}

/// memshard reads every item with one `get_multi` and with one `get` per key.
fn memshard_reads(m: &Client, items: &[Pair]) -> ReadBack {
    let mut r = ReadBack {
        multi_misses: 0,
        single_misses: 0,
        wrong: 0,
        errors: 0,
    };
    let mut first = Vec::new();
    let mut check = |k: &[u8], v: &[u8], got: memshard::Result<Option<Item>>, multi: bool| match got
    {
        Ok(Some(item)) if item.value == v => {}
        Ok(Some(_)) => r.wrong += 1,
        Ok(None) if multi => r.multi_misses += 1,
        Ok(None) => r.single_misses += 1,
        Err(e) => {
            r.errors += 1;
            if first.len() < 5 {
                first.push(format!("{}: {e}", String::from_utf8_lossy(k)));
            }
        }
    };
    let keys: Vec<&[u8]> = items.iter().map(|(k, _)| &k[..]).collect();
    let got = m.get_multi(&keys);
    assert_eq!(got.len(), items.len());
    for ((k, v), g) in items.iter().zip(got) {
        check(k, v, g, true);
    }
    for (k, v) in items {
        check(k, v, m.get(k), false);
    }
    assert!(first.is_empty(), "memshard errors: {first:#?}");
    r
}

fn memshard_sets(m: &Client, items: &[Pair]) {
    let res = m.set_multi(items, 0, Expiry::NEVER);
    let bad: Vec<String> = items
        .iter()
        .zip(&res)
        .filter(|(_, r)| !matches!(r, Ok(StoreOutcome::Stored)))
        .take(5)
        .map(|((k, _), r)| format!("{}: {r:?}", String::from_utf8_lossy(k)))
        .collect();
    assert!(bad.is_empty(), "memshard set_multi failed: {bad:#?}");
}

/// Misses and wrong values among what a peer read back of `items`.
fn compare(items: &[Pair], got: &HashMap<Vec<u8>, Vec<u8>>) -> (usize, usize) {
    let mut misses = 0;
    let mut wrong = 0;
    for (k, v) in items {
        match got.get(k) {
            None => misses += 1,
            Some(g) if g != v => wrong += 1,
            Some(_) => {}
        }
    }
    (misses, wrong)
}

/// Keys per server as memshard routes them, "addr=count" in server order.
fn spread(m: &Client, items: &[Pair]) -> String {
    let ring = m.ring();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, _) in items {
        *count.entry(&ring.server_for(k).unwrap().addr).or_default() += 1;
    }
    m.ring()
        .servers()
        .iter()
        .map(|s| format!("{}={}", s.addr, count.get(s.addr.as_str()).unwrap_or(&0)))
        .collect::<Vec<_>>()
        .join(" ")
}

struct Figures {
    peer: &'static str,
    to_memshard: ReadBack,
    to_peer_misses: usize,
    to_peer_wrong: usize,
}

impl Figures {
    fn print(&self, c: &Cluster, m: &Client, from_peer: &[Pair]) {
        let r = &self.to_memshard;
        println!(
            "interop {}: {N} keys each way, {} servers [{}], keys per server {}",
            self.peer,
            c.servers.len(),
            weights(c),
            spread(m, from_peer)
        );
        let utf8 = from_peer
            .iter()
            .filter(|(k, _)| k.iter().any(|&b| b >= 0x80))
            .count();
        let long = from_peer.iter().filter(|(k, _)| k.len() >= 200).count();
        let max = from_peer.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        println!("  keys each way: {utf8} UTF-8, {long} of 200-{max} bytes");
        println!(
            "  {} -> memshard: {N} keys, get_multi misses {}, get misses {}, wrong values {}",
            self.peer, r.multi_misses, r.single_misses, r.wrong
        );
        println!(
            "  memshard -> {}: {N} keys, misses {}, wrong values {}",
            self.peer, self.to_peer_misses, self.to_peer_wrong
        );
    }

    fn assert_clean(&self) {
        let r = &self.to_memshard;
        assert_eq!(
            (r.multi_misses, r.single_misses, r.wrong, r.errors),
            (0, 0, 0, 0),
            "{} -> memshard: get_multi misses, get misses, wrong values, errors",
            self.peer
        );
        assert_eq!(
            (self.to_peer_misses, self.to_peer_wrong),
            (0, 0),
            "memshard -> {}: misses, wrong values",
            self.peer
        );
    }
}

fn weights(c: &Cluster) -> String {
    c.servers
        .iter()
        .zip(&c.weights)
        .map(|(s, w)| format!("{} w{w}", s.addr()))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------
// pylibmc and php-memcached: driver scripts
// ---------------------------------------------------------------------------------------------

fn via_driver(
    peer: &'static str,
    program: &str,
    script: &str,
    m: &Client,
    dir: &Path,
    servers: &Path,
    seed: u64,
) -> (Figures, Items) {
    // the peer writes, memshard reads from the servers
    let from_peer = make_keys(&format!("{peer}2ms:"), seed);
    let tag = format!("{peer}-to-memshard");
    write_pairs(&dir.join(format!("{tag}.in")), &from_peer);
    let failed = driver(program, script, "set", dir, &tag, servers);
    let failed = fs::read_to_string(failed).unwrap();
    assert!(
        failed.trim().is_empty(),
        "{peer} could not set {} keys",
        failed.lines().count()
    );
    let to_memshard = memshard_reads(m, &from_peer);

    // memshard writes, the peer reads
    let from_memshard = make_keys(&format!("ms2{peer}:"), seed + 1);
    memshard_sets(m, &from_memshard);
    let tag = format!("memshard-to-{peer}");
    write_pairs(&dir.join(format!("{tag}.in")), &from_memshard);
    let got = read_pairs(&driver(program, script, "get", dir, &tag, servers));
    let (to_peer_misses, to_peer_wrong) = compare(&from_memshard, &got);
    (
        Figures {
            peer,
            to_memshard,
            to_peer_misses,
            to_peer_wrong,
        },
        from_peer,
    )
}

// ---------------------------------------------------------------------------------------------
// twemproxy: text protocol over TcpStream
// ---------------------------------------------------------------------------------------------

/// nutcracker in front of `c`: ketama, md5, the cluster's weights, no names.
fn twemproxy(c: &Cluster, seed: u64) -> Items {
    let nutcracker = Nutcracker::start(1, |listen| {
        let mut yml = format!(
            "interop:\n  listen: {}\n  distribution: ketama\n  hash: md5\n  timeout: 5000\n  \
             auto_eject_hosts: false\n  server_connections: 1\n  servers:\n",
            listen[0]
        );
        for (s, w) in c.servers.iter().zip(&c.weights) {
            yml += &format!("    - \"{}:{w}\"\n", s.addr());
        }
        yml
    });
    let m = memshard(c, Flavor::Twemproxy);
    let mut proxy = Text::open(nutcracker.listen());

    let from_peer = make_keys("tw2ms:", seed);
    proxy.store_all(&from_peer);
    let to_memshard = memshard_reads(&m, &from_peer);

    let from_memshard = make_keys("ms2tw:", seed + 1);
    memshard_sets(&m, &from_memshard);
    let keys: Vec<&[u8]> = from_memshard.iter().map(|(k, _)| &k[..]).collect();
    let got = proxy.get_many(&keys);
    let (to_peer_misses, to_peer_wrong) = compare(&from_memshard, &got);
    let f = Figures {
        peer: "twemproxy",
        to_memshard,
        to_peer_misses,
        to_peer_wrong,
    };
    f.print(c, &m, &from_peer);
    f.assert_clean();
    from_peer
}

// ---------------------------------------------------------------------------------------------
// the test (one function: the port-11211 servers can be bound once per address)
// ---------------------------------------------------------------------------------------------

#[test]
fn peers_and_memshard_read_each_others_keys() {
    if !require("memcached") {
        return;
    }
    let started = Instant::now();
    let c = Cluster::four();
    let dir =
        Scratch(std::env::temp_dir().join(format!("memshard-interop-live-{}", std::process::id())));
    fs::create_dir_all(&dir.0).unwrap();
    let servers = dir.0.join("servers.txt");
    let servers_text: String = c
        .servers
        .iter()
        .zip(&c.weights)
        .map(|(s, w)| format!("{} {} {w}\n", s.ip, s.port))
        .collect();
    fs::write(&servers, servers_text).unwrap();
    let m = memshard(&c, Flavor::Libmemcached);
    let mut all_keys: Items = Vec::new();

    // 1. pylibmc
    let python = "/usr/bin/python3";
    if runs(python, &["-c", "import pylibmc"]) {
        let (f, keys) = via_driver(
            "pylibmc",
            python,
            "pylibmc_driver.py",
            &m,
            &dir.0,
            &servers,
            1,
        );
        f.print(&c, &m, &keys);
        f.assert_clean();
        all_keys.extend(keys);
    } else {
        skipped("pylibmc", "/usr/bin/python3 cannot import pylibmc");
    }

    // 2. php-memcached
    if runs("php", &["-r", "exit(class_exists('Memcached') ? 0 : 1);"]) {
        let (f, keys) = via_driver("php", "php", "php_driver.php", &m, &dir.0, &servers, 3);
        f.print(&c, &m, &keys);
        f.assert_clean();
        all_keys.extend(keys);
    } else {
        skipped(
            "php-memcached",
            "php with the memcached extension not found",
        );
    }

    // 3. twemproxy
    if require("nutcracker") {
        all_keys.extend(twemproxy(&c, 5));
    }

    // libmemcached and twemproxy-md5 place alike on this list (no names, port 11211 rule)
    let tw = memshard(&c, Flavor::Twemproxy);
    let mut extra = Rng(7);
    let mut checked = 0;
    let mut differ = Vec::new();
    let mut differ_count = 0;
    let more: Vec<Vec<u8>> = (0..20_000)
        .map(|i| format!("ring-check:{i}:{}", extra.next()).into_bytes())
        .collect();
    let (mring, twring) = (m.ring(), tw.ring());
    for k in all_keys.iter().map(|(k, _)| k).chain(&more) {
        let a = &mring.server_for(k).unwrap().addr;
        let b = &twring.server_for(k).unwrap().addr;
        checked += 1;
        if a != b {
            differ_count += 1;
        }
        if a != b && differ.len() < 10 {
            differ.push(format!(
                "{}: libmemcached {a}, twemproxy {b}",
                String::from_utf8_lossy(k)
            ));
        }
    }
    println!(
        "libmemcached vs twemproxy-md5 rings on [{}]: {checked} keys, {} placed differently; points per server {:?} vs {:?}",
        weights(&c),
        differ_count,
        m.ring().point_counts(),
        tw.ring().point_counts()
    );
    assert!(differ.is_empty(), "{differ:#?}");
    println!("interop_live took {:.1?}", started.elapsed());
}
