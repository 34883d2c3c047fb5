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
use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[path = "../../tests/common/mod.rs"]
mod common;
use common::servers::{Memcached, Nutcracker, Text, require};

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
struct Server {
    mc: Memcached,
    weight: u32,
    name: Option<String>,
}

impl Server {
    fn addr(&self) -> String {
        self.mc.addr()
    }
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

fn random_pool(rng: &mut Rng, round: usize) -> Pool {
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
        // port 11211 on a random 127.x.y.z for a couple of servers (name rule: host only)
        let mc = if i < 2 && rng.chance(60) {
            Memcached::on_11211("")
        } else {
            Memcached::start(Ipv4Addr::LOCALHOST, 0, "")
        };
        servers.push(Server { mc, weight, name });
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
    if !require("nutcracker") || !require("memcached") {
        return;
    }
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
        let pool = random_pool(&mut rng, round);

        // nutcracker.yml and the same servers as a memshard server list
        let mut servers_txt = String::from("# written by tests/twemproxy_live.rs\n");
        let mut entries = String::new();
        for s in &pool.servers {
            let mut v = format!("{}:{}", s.addr(), s.weight);
            servers_txt += &format!("{} {}", s.addr(), s.weight);
            if let Some(n) = &s.name {
                v += &format!(" {n}");
                servers_txt += &format!(" {n}");
            }
            entries += &format!("    - {}\n", yaml_quote(&v));
            servers_txt += "\n";
        }
        let nutcracker = Nutcracker::start(1, |listen| {
            let mut yml = format!("live:\n  listen: {}\n  distribution: ketama\n", listen[0]);
            if let Some(h) = pool.hash {
                yml += &format!("  hash: {h}\n");
            }
            if let Some(t) = pool.tag {
                yml += &format!("  hash_tag: {}\n", yaml_quote(t));
            }
            yml +=
                "  timeout: 5000\n  auto_eject_hosts: false\n  server_connections: 1\n  servers:\n";
            yml + &entries
        });
        let yml = &nutcracker.yml;
        let servers_file = std::env::temp_dir().join(format!(
            "memshard-twemproxy-live-{}-{seed}-{round}.txt",
            std::process::id()
        ));
        fs::write(&servers_file, &servers_txt).unwrap();

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
        let items: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &b"v"[..])).collect();
        Text::open(nutcracker.listen()).store_all(&items);
        let mut owner: HashMap<Vec<u8>, String> = HashMap::new();
        for s in &pool.servers {
            for k in s.mc.text().get_many(&keys).into_keys() {
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
        let _ = fs::remove_file(&servers_file);
    }
    eprintln!("twemproxy_live took {:.1?}", started.elapsed());
}
