//! Placement read from a peer's own configuration equals the peer's own placement.
//!
//! 1. libmemcached configuration strings: generated `--SERVER=... --DISTRIBUTION=... --HASH=...`
//!    strings (plus a fixed list of edge cases) are given to the real `memcached()` through the
//!    C harness tests/config/lmc_cfg.c, which prints the server of every key; memshard reads
//!    the same string with `memshard::config::libmemcached` and must name the same server for
//!    every key. A string libmemcached rejects must be rejected by memshard too.
//! 2. twemproxy: a real `nutcracker.yml` with several pools is served by a real nutcracker in
//!    front of real memcached servers (loopback only); keys are stored through nutcracker, every
//!    memcached is asked which keys it holds, and `memshard::config::twemproxy(file, pool)` must
//!    place every key on that server. `memshard route --twemproxy-config FILE --pool NAME` is
//!    checked over the same keys when the binary has that flag.
//!
//! Needs `cc` + libmemcached (Debian: libmemcached-dev) and `nutcracker` + `memcached` (Debian:
//! nutcracker, memcached; nutcracker lives in /usr/sbin). Without them each test prints a
//! SKIPPED line, or panics when the `CI` environment variable is set.
//! Seed: CONFIG_LIVE_SEED (default below).

use memshard::Ring;
use memshard::config::{libmemcached, twemproxy, twemproxy_pools};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../../tests/common/mod.rs"]
mod common;
use common::servers::{Memcached, Nutcracker, Text, require};

const DEFAULT_SEED: u64 = 0x636f_6e66_6967_6c76;
const LMC_CONFIGS: usize = 48;
const KEYS: usize = 1000;

// ---------------------------------------------------------------------------------------
// shared helpers
// ---------------------------------------------------------------------------------------

/// splitmix64
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

fn seed() -> u64 {
    std::env::var("CONFIG_LIVE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED)
}

fn skip_or_panic(test: &str, why: &str) {
    common::skip(test, why);
}

const UTF8_BITS: &[&str] = &[
    "é", "ü", "ñ", "ß", "ø", "中", "文", "日本", "한", "ж", "Ω", "ℵ", "😀", "🚀", "\u{80}",
    "\u{7ff}", "\u{ffff}",
];

/// Printable ASCII (no space) and UTF-8, 1..=`max_bytes` bytes, none of `exclude`.
fn random_part(rng: &mut Rng, max_bytes: usize, exclude: &[u8]) -> String {
    let target = rng.range(1, max_bytes as u64) as usize;
    let mut s = String::new();
    loop {
        let piece = if rng.chance(25) {
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

/// `n` distinct keys (memcached-legal: no whitespace or control bytes, at most 250 bytes); with
/// a hash tag, most keys carry tags (several keys per tag content, empty tags, unclosed tags).
fn random_keys(rng: &mut Rng, n: usize, tag: Option<&str>) -> Vec<Vec<u8>> {
    let contents: Vec<String> = (0..40).map(|_| random_part(rng, 12, b"{}$")).collect();
    let mut keys = Vec::with_capacity(n);
    let mut seen = HashSet::new();
    while keys.len() < n {
        let max = if rng.chance(8) { 240 } else { 40 };
        let k = match tag {
            None => random_part(rng, max, b""),
            Some(tag) => {
                let (o, c) = (&tag[..1], &tag[1..2]);
                let ex = tag.as_bytes();
                let t = rng.pick(&contents).clone();
                let sel = rng.below(8);
                let mut p = || random_part(rng, 20, ex);
                match sel {
                    0 | 1 => format!("{}{o}{t}{c}{}", p(), p()),
                    2 => format!("{o}{t}{c}{}", p()),
                    3 => format!("{}{o}{c}{}", p(), p()),
                    4 => format!("{}{o}{}", p(), p()),
                    5 => format!("{}{o}{t}{c}{}{o}{}{c}", p(), p(), p()),
                    6 => format!("{}{c}{}{o}{t}{c}", p(), p()),
                    _ => p(),
                }
            }
        };
        if k.len() <= 250 && seen.insert(k.clone()) {
            keys.push(k.into_bytes());
        }
    }
    keys
}

/// Runs `bin args` with `stdin`; returns (exit code, stdout, stderr).
fn run(bin: &Path, args: &[&str], stdin: &[u8]) -> (Option<i32>, Vec<u8>, String) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let mut sin = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `KEY<TAB>host:port` lines (the harness's `#weighted=..` line, which has no TAB, skipped) as
/// (key, host, port).
fn parse_placements(out: &[u8]) -> Vec<(Vec<u8>, String, u16)> {
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && (l.contains(&b'\t') || !l.starts_with(b"#")))
        .map(|l| {
            let tab = l.iter().rposition(|&b| b == b'\t').unwrap_or_else(|| {
                panic!("no TAB in output line {:?}", String::from_utf8_lossy(l))
            });
            let addr = String::from_utf8_lossy(&l[tab + 1..]).into_owned();
            let (host, port) = host_port(&addr);
            (l[..tab].to_vec(), host, port)
        })
        .collect()
}

/// `host:port`, `[v6]:port` or `host` (port 11211).
fn host_port(addr: &str) -> (String, u16) {
    let (h, p) = match addr.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => {
            (h, p.parse().unwrap_or_else(|_| panic!("port in {addr:?}")))
        }
        _ => (addr, 11211),
    };
    (
        h.trim_start_matches('[').trim_end_matches(']').to_string(),
        p,
    )
}

fn keys_input(keys: &[Vec<u8>]) -> Vec<u8> {
    let mut input = Vec::new();
    for k in keys {
        input.extend_from_slice(k);
        input.push(b'\n');
    }
    input
}

fn show(k: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(k))
}

// ---------------------------------------------------------------------------------------
// 1. libmemcached configuration strings
// ---------------------------------------------------------------------------------------

fn build_lmc_harness(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config/lmc_cfg.c");
    let out = dir.join("lmc_cfg");
    match Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lmemcached")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => {
            eprintln!(
                "lmc_cfg build failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("cannot run cc: {e}");
            None
        }
    }
}

/// Hashes libmemcached 1.1.4 accepts in `--HASH=` (HSIEH is compiled out of Debian's build;
/// MURMUR3, ONE_AT_A_TIME and DEFAULT are not configuration-string names).
const LMC_HASHES: &[&str] = &[
    "MD5", "CRC", "FNV1_64", "FNV1A_64", "FNV1_32", "FNV1A_32", "MURMUR", "JENKINS",
];

/// Options that do not move keys.
const LMC_HARMLESS: &[&str] = &[
    "--CONNECT-TIMEOUT=100",
    "--BINARY-PROTOCOL",
    "--TCP-NODELAY",
    "--TCP-KEEPALIVE",
    "--RETRY-TIMEOUT=5",
    "--RCV-TIMEOUT=1000000",
    "--SND-TIMEOUT=500000",
    "--POLL-TIMEOUT=50",
    "--REMOVE-FAILED-SERVERS=2",
    "--VERIFY-KEY",
    "--SUPPORT-CAS",
    "--BUFFER-REQUESTS",
    "--NOREPLY",
    "--POOL-MIN=1 --POOL-MAX=4",
];

/// One generated configuration string: 1..=20 distinct servers (IPv4 or host names, port
/// left out / 11211 / other, weight left out / 1 / > 1), `--DISTRIBUTION=consistent[,HASH]`
/// before, between or after the servers (or `modula`, or none: libmemcached's default modula), maybe `--HASH`, `--NAMESPACE` and harmless options,
/// in a shuffled order.
fn random_lmc_config(rng: &mut Rng, i: usize) -> String {
    let n = match i % 5 {
        0 => 1,
        1 => rng.range(2, 4),
        _ => rng.range(1, 20),
    } as usize;
    let mut seen = HashSet::new();
    let mut servers = Vec::new();
    while servers.len() < n {
        let host = match rng.below(5) {
            0 | 1 => format!(
                "10.{}.{}.{}",
                rng.below(256),
                rng.below(256),
                rng.range(1, 254)
            ),
            2 => format!("192.168.{}.{}", rng.below(256), rng.range(1, 254)),
            3 => format!(
                "{}-{}.{}",
                rng.pick(&["cache", "mc", "memcached", "node", "Shard"]),
                rng.below(1000),
                rng.pick(&["example.com", "svc.local", "internal", "Example.ORG"])
            ),
            _ => format!(
                "{}{}",
                rng.pick(&["cache", "mc", "memcached", "localhost"]),
                rng.below(100)
            ),
        };
        let port = match rng.below(4) {
            0 => None,
            1 => Some(11211),
            2 => Some(*rng.pick(&[11212, 11213, 22122, 1, 65535])),
            _ => Some(rng.range(1, 65535) as u16),
        };
        let key = (host.to_ascii_lowercase(), port.unwrap_or(11211));
        if !seen.insert(key) {
            continue;
        }
        let weight = match rng.below(5) {
            0 | 1 => None,
            2 => Some(1),
            3 => Some(rng.range(2, 10)),
            _ => Some(rng.range(1, 1000)),
        };
        let mut s = format!("--SERVER={host}");
        if let Some(p) = port {
            s += &format!(":{p}");
        }
        if let Some(w) = weight {
            s += &format!("/?{w}");
        }
        servers.push(s);
    }
    // where --DISTRIBUTION goes among the servers (libmemcached weights only servers after it)
    let at = match rng.below(3) {
        0 => 0,
        1 => n,
        _ => rng.range(0, n as u64) as usize,
    };
    // libmemcached's default distribution is modula: no --DISTRIBUTION, or it named
    let dist = match rng.below(10) {
        0 | 1 => None,
        2 => Some("--DISTRIBUTION=modula".to_string()),
        _ if rng.chance(25) => Some(format!(
            "--DISTRIBUTION=consistent,{}",
            rng.pick(LMC_HASHES)
        )),
        _ => Some("--DISTRIBUTION=consistent".to_string()),
    };
    let mut opts: Vec<String> = servers[..at].to_vec();
    opts.extend(dist);
    opts.extend_from_slice(&servers[at..]);
    let mut extra = Vec::new();
    if rng.chance(70) {
        let h = rng.pick(LMC_HASHES);
        extra.push(if rng.chance(20) {
            format!("--HASH={}", h.to_ascii_lowercase())
        } else {
            format!("--HASH={h}")
        });
    }
    if rng.chance(30) {
        extra.push(format!(
            "--NAMESPACE={}",
            rng.pick(&["app", "myapp_v2", "tenant42", "sessions"])
        ));
    }
    for _ in 0..rng.below(4) {
        extra.push(rng.pick(LMC_HARMLESS).to_string());
    }
    for e in extra {
        // anywhere: options do not depend on their position (only the weight rule does)
        let pos = rng.range(0, opts.len() as u64) as usize;
        opts.insert(pos, e);
    }
    opts.join(" ")
}

/// Hand-written edge cases libmemcached accepts: (configuration string, memshard may reject it
/// instead of placing it). A string memshard accepts must place every key as libmemcached does.
const LMC_EDGE: &[(&str, bool)] = &[
    // weighted ketama only for weight > 1 servers added after the distribution
    (
        "--SERVER=10.0.0.1/?3 --SERVER=10.0.0.2:11212/?5 --DISTRIBUTION=consistent",
        false,
    ),
    (
        "--DISTRIBUTION=consistent --SERVER=10.0.0.1/?3 --SERVER=10.0.0.2:11212/?5",
        false,
    ),
    (
        "--SERVER=10.0.0.1/?3 --DISTRIBUTION=consistent --SERVER=10.0.0.2:11212/?1 --SERVER=10.0.0.3",
        false,
    ),
    (
        "--SERVER=10.0.0.1/?1 --DISTRIBUTION=consistent --SERVER=10.0.0.2:11212/?2 --SERVER=10.0.0.3",
        false,
    ),
    // the key hash set before the servers (the continuum is built with it)
    (
        "--HASH=CRC --DISTRIBUTION=consistent --SERVER=10.0.0.1 --SERVER=10.0.0.2 --SERVER=10.0.0.3:11212",
        false,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --HASH=MURMUR --SERVER=10.0.0.3:11212 --DISTRIBUTION=consistent,MD5",
        false,
    ),
    // the key hash set after the last continuum build (last --SERVER / --DISTRIBUTION): the
    // points keep the previous (default) hash while keys use the new one
    (
        "--DISTRIBUTION=consistent --SERVER=10.0.0.1 --SERVER=10.0.0.2 --SERVER=10.0.0.3:11212 --HASH=MD5",
        true,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --SERVER=10.0.0.3:11212 --DISTRIBUTION=consistent --HASH=FNV1A_32",
        true,
    ),
    // weighted: points are md5 whatever the key hash, so its position does not matter
    (
        "--DISTRIBUTION=consistent --SERVER=10.0.0.1/?2 --SERVER=10.0.0.2 --SERVER=10.0.0.3:11212 --HASH=CRC",
        false,
    ),
    // lower case, names as written, quoted namespace
    (
        "--distribution=consistent --server=cache-1.example.com --server=cache-2.example.com:11212/?2 --hash=md5",
        false,
    ),
    (
        "--DISTRIBUTION=consistent,MD5 --SERVER=UPPER.Example.COM:11212 --SERVER=localhost --SERVER=my_host.example",
        false,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --DISTRIBUTION=consistent --NAMESPACE=\"app:v2\"",
        false,
    ),
    // not placed by memshard (modula / random / odd values)
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --DISTRIBUTION=modula",
        true,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --DISTRIBUTION=random",
        true,
    ),
    ("--SERVER=10.0.0.1 --SERVER=10.0.0.2", true),
    (
        "--SERVER=10.0.0.1/?0 --SERVER=10.0.0.2 --DISTRIBUTION=consistent",
        true,
    ),
    (
        "--SERVER=10.0.0.1:0 --SERVER=10.0.0.2 --DISTRIBUTION=consistent",
        true,
    ),
    (
        "--SERVER=10.0.0.1:65536 --SERVER=10.0.0.2 --DISTRIBUTION=consistent",
        true,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.1 --DISTRIBUTION=consistent",
        true,
    ),
    // options that move keys or add servers: memshard must honour them or reject the string
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --SERVER=10.0.0.3 --DISTRIBUTION=consistent --NAMESPACE=foo --HASH-WITH-NAMESPACE",
        true,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --DISTRIBUTION=consistent --SOCKET=\"/tmp/memcached.sock\"",
        true,
    ),
    (
        "--SERVER=10.0.0.3 --SERVER=10.0.0.1 --SERVER=10.0.0.2:11212 --DISTRIBUTION=consistent --SORT-HOSTS",
        true,
    ),
    (
        "--SERVER=10.0.0.1 --SERVER=10.0.0.2 --DISTRIBUTION=consistent --NUMBER-OF-REPLICAS=1 --RANDOMIZE-REPLICA-READ",
        false,
    ),
];

/// Strings libmemcached 1.1.4's `memcached()` rejects; memshard must reject them too. (Left
/// out: lexer quirks such as one-letter host names or two-letter namespaces, and HSIEH, which
/// is only compiled out of Debian's build.)
const LMC_REJECTED: &[&str] = &[
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --HASH=MURMUR3",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --HASH=ONE_AT_A_TIME",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --HASH=DEFAULT",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --HASH=MD5 --HASH=CRC",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent,KETAMA",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent,DEFAULT",
    "--SERVER=10.0.0.1 --DISTRIBUTION=vbucket",
    "--SERVER=10.0.0.1:11211:5 --DISTRIBUTION=consistent",
    "--SERVER=10.0.0.1:11211?5 --DISTRIBUTION=consistent",
    "--SERVER=10.0.0.1/?4000000000 --DISTRIBUTION=consistent",
    "--SERVER=[::1]:11211 --DISTRIBUTION=consistent",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --REMOVE-FAILED-SERVERS",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --SERVER-FAILURE-LIMIT=3",
    "--SERVER=10.0.0.1 --DISTRIBUTION=consistent --KETAMA-WEIGHTED",
];

/// Builds the harness in a fresh temp dir: (dir, binary), or None after SKIPPED / panics in CI.
fn lmc_harness_or_skip(test: &str, tag: &str) -> Option<(PathBuf, PathBuf)> {
    let have_headers = Path::new("/usr/include/libmemcached-1.0/memcached.h").exists()
        || Path::new("/usr/local/include/libmemcached-1.0/memcached.h").exists();
    let dir =
        std::env::temp_dir().join(format!("memshard-config-live-{tag}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    match have_headers.then(|| build_lmc_harness(&dir)).flatten() {
        Some(h) => Some((dir, h)),
        None => {
            let _ = fs::remove_dir_all(&dir);
            skip_or_panic(
                test,
                "libmemcached (headers + library, Debian libmemcached-dev) or cc is missing",
            );
            None
        }
    }
}

/// The `--NAMESPACE=` value libmemcached keeps (quotes removed), if any.
fn namespace_of(cfg: &str) -> Option<String> {
    cfg.split_whitespace()
        .filter_map(|o| o.strip_prefix("--NAMESPACE="))
        .next_back()
        .map(|v| v.trim_matches('"').to_string())
}

#[test]
fn libmemcached_config_strings_place_as_libmemcached() {
    const TEST: &str = "config_live libmemcached";
    let Some((dir, harness)) = lmc_harness_or_skip(TEST, "lmc") else {
        return;
    };
    let seed = seed();
    let mut rng = Rng(seed);
    let started = Instant::now();

    // (string, memshard may reject it, generated)
    let mut configs: Vec<(String, bool, bool)> = (0..LMC_CONFIGS)
        .map(|i| (random_lmc_config(&mut rng, i), false, true))
        .collect();
    configs.extend(LMC_EDGE.iter().map(|&(s, may)| (s.to_string(), may, false)));

    let mut failures: Vec<String> = Vec::new();
    let (mut compared_configs, mut rejected_by_both, mut rejected_by_memshard) = (0, 0, 0);
    let mut keys_compared = 0usize;
    let mut generated_rejected = Vec::new();
    let memshard = Path::new(env!("CARGO_BIN_EXE_memshard"));
    let mut cli_keys = 0usize;
    for (cfg_str, may_reject, generated) in &configs {
        let keys = random_keys(&mut rng, KEYS, None);
        let (code, out, err) = run(&harness, &[cfg_str], &keys_input(&keys));
        let ours = libmemcached(cfg_str);
        match code {
            Some(0) => {}
            Some(2) => {
                if *generated {
                    generated_rejected.push(format!("{cfg_str:?}: {}", err.trim()));
                }
                match ours {
                    Err(_) => rejected_by_both += 1,
                    Ok(c) => failures.push(format!(
                        "config {cfg_str:?}: libmemcached rejects it ({}), memshard accepts it as {} servers, flavor {:?}, hash {:?}",
                        err.trim(),
                        c.servers.len(),
                        c.flavor,
                        c.hash
                    )),
                }
                continue;
            }
            other => panic!("lmc_cfg {cfg_str:?} exited {other:?}: {err}"),
        }
        let cfg = match ours {
            Ok(c) => c,
            Err(e) => {
                if *may_reject {
                    rejected_by_memshard += 1;
                } else {
                    failures.push(format!(
                        "config {cfg_str:?}: libmemcached accepts it, memshard rejects it: {e}"
                    ));
                }
                continue;
            }
        };
        if cfg.prefix != namespace_of(cfg_str) {
            failures.push(format!(
                "config {cfg_str:?}: memshard prefix {:?}, libmemcached namespace {:?}",
                cfg.prefix,
                namespace_of(cfg_str)
            ));
        }
        let (flavor, hash) = (cfg.flavor, cfg.hash);
        let (hash_with_ns, ns) = (cfg.hash_with_prefix, cfg.prefix.clone().unwrap_or_default());
        let ring =
            match Ring::with_point_hash(cfg.servers, flavor, Some(hash), cfg.point_hash, None) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!(
                        "config {cfg_str:?}: Ring::with_options({flavor:?}, {hash:?}) failed: {e}"
                    ));
                    continue;
                }
            };
        let want = parse_placements(&out);
        assert_eq!(
            want.len(),
            keys.len(),
            "lmc_cfg printed {} placements for {} keys ({cfg_str:?})",
            want.len(),
            keys.len()
        );
        let mut diffs = Vec::new();
        for (k, (wk, host, port)) in keys.iter().zip(&want) {
            assert_eq!(k, wk, "lmc_cfg output out of order");
            // --HASH-WITH-NAMESPACE: libmemcached hashes the namespace and the key
            let hashed = if hash_with_ns {
                [ns.as_bytes(), k.as_slice()].concat()
            } else {
                k.to_vec()
            };
            let s = ring
                .server_for(&hashed)
                .expect("a ring with servers places every key");
            if !(s.host.eq_ignore_ascii_case(host) && s.port == *port) {
                diffs.push(format!(
                    "{}: libmemcached {host}:{port}, memshard {}",
                    show(k),
                    s.addr
                ));
            }
        }
        keys_compared += keys.len();
        compared_configs += 1;

        // the CLI, from the same string
        {
            let args = ["route", "--libmemcached-config", cfg_str.as_str()];
            let (code, cli_out, cli_err) = run(memshard, &args, &keys_input(&keys));
            if code != Some(0) {
                failures.push(format!(
                    "config {cfg_str:?}: `memshard route --libmemcached-config` failed ({code:?}): {}",
                    cli_err.trim()
                ));
            } else {
                let got = parse_placements(&cli_out);
                let cli_diffs = keys
                    .iter()
                    .zip(&want)
                    .zip(&got)
                    .filter(|((k, (_, h, p)), (gk, gh, gp))| {
                        k != &gk || !(h.eq_ignore_ascii_case(gh) && p == gp)
                    })
                    .count()
                    + keys.len().abs_diff(got.len());
                if cli_diffs > 0 {
                    failures.push(format!(
                        "config {cfg_str:?}: `memshard route --libmemcached-config`: {cli_diffs} of {} keys differ from libmemcached",
                        keys.len()
                    ));
                }
                cli_keys += keys.len();
            }
        }
        if !diffs.is_empty() {
            failures.push(format!(
                "config {cfg_str:?} (memshard flavor {flavor:?}, hash {hash:?}; harness {}): {} of {} keys differ, e.g.\n      {}",
                String::from_utf8_lossy(&out)
                    .lines()
                    .find(|l| l.starts_with("#weighted="))
                    .unwrap_or(""),
                diffs.len(),
                keys.len(),
                diffs[..diffs.len().min(5)].join("\n      ")
            ));
        }
    }
    let _ = fs::remove_dir_all(&dir);
    assert!(
        generated_rejected.is_empty(),
        "{TEST}: the generator made strings libmemcached rejects (seed {seed}):\n  {}",
        generated_rejected.join("\n  ")
    );
    assert!(
        failures.is_empty(),
        "{TEST} (seed {seed}, CONFIG_LIVE_SEED to reproduce): {} problem(s) over {} config strings \
         ({compared_configs} placed, {keys_compared} keys compared, {rejected_by_both} rejected by both):\n  {}",
        failures.len(),
        configs.len(),
        failures.join("\n  ")
    );
    eprintln!(
        "{TEST}: seed {seed}: {} config strings ({LMC_CONFIGS} generated, {} edge): {compared_configs} placed {keys_compared} keys with 0 differences; \
         {rejected_by_both} rejected by both, {rejected_by_memshard} accepted by libmemcached but refused by memshard; \
         CLI route --libmemcached-config: {cli_keys} keys, 0 differences ({:.1}s)",
        configs.len(),
        LMC_EDGE.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn libmemcached_config_strings_libmemcached_rejects_are_rejected() {
    const TEST: &str = "config_live libmemcached rejections";
    let Some((dir, harness)) = lmc_harness_or_skip(TEST, "lmc-rej") else {
        return;
    };
    let mut wrong = Vec::new();
    for cfg_str in LMC_REJECTED {
        let (code, _, err) = run(&harness, &[cfg_str], b"k\n");
        assert_eq!(
            code,
            Some(2),
            "libmemcached accepts {cfg_str:?}; move it out of LMC_REJECTED"
        );
        if let Ok(c) = libmemcached(cfg_str) {
            wrong.push(format!(
                "{cfg_str:?}: libmemcached: {}; memshard accepts it ({} servers, flavor {:?}, hash {:?})",
                err.trim().split(" -> ").next().unwrap_or(""),
                c.servers.len(),
                c.flavor,
                c.hash
            ));
        }
    }
    let _ = fs::remove_dir_all(&dir);
    assert!(
        wrong.is_empty(),
        "{TEST}: {} of {} strings libmemcached rejects are accepted by memshard:\n  {}",
        wrong.len(),
        LMC_REJECTED.len(),
        wrong.join("\n  ")
    );
    eprintln!(
        "{TEST}: {} strings rejected by libmemcached and memshard alike",
        LMC_REJECTED.len()
    );
}

// ---------------------------------------------------------------------------------------
// 2. twemproxy nutcracker.yml
// ---------------------------------------------------------------------------------------

/// One pool of the nutcracker.yml: its servers (address, weight, name) and pool-level lines.
struct PoolSpec {
    name: &'static str,
    /// `hash:`, `hash_tag:` etc., already YAML.
    lines: &'static str,
    /// (weight, name, on port 11211 of a 127.0.0.x address)
    servers: &'static [(u32, Option<&'static str>, bool)],
    tag: Option<&'static str>,
}

const POOLS: &[PoolSpec] = &[
    // md5, names on some servers, auto ejection on (no server fails)
    PoolSpec {
        name: "sessions",
        lines: "  hash: md5\n  distribution: ketama\n  auto_eject_hosts: true\n  server_retry_timeout: 2000\n  server_failure_limit: 3\n  timeout: 4000\n",
        servers: &[
            (1, Some("sess-a"), false),
            (1, None, false),
            (1, Some("sess-c"), false),
            (1, None, false),
            (1, Some("backup.1"), false),
        ],
        tag: None,
    },
    // default hash (fnv1a_64), hash tag {}
    PoolSpec {
        name: "tagged",
        lines: "  distribution: ketama\n  hash_tag: \"{}\"\n  auto_eject_hosts: false\n  preconnect: true\n  timeout: 4000\n",
        servers: &[
            (1, None, false),
            (1, None, false),
            (1, None, false),
            (1, None, false),
        ],
        tag: Some("{}"),
    },
    // weights, port 11211 on distinct 127.0.0.x addresses, no distribution line (ketama default)
    PoolSpec {
        name: "weighted",
        lines: "  hash: fnv1a_64\n  backlog: 1024\n  server_connections: 2\n  timeout: 4000\n",
        servers: &[
            (1, None, true),
            (3, None, true),
            (10, None, true),
            (1, None, false),
            (250, None, false),
            (2, None, true),
        ],
        tag: None,
    },
    // another hash and tag, names on every server
    PoolSpec {
        name: "murmur-dollar",
        lines: "  hash: murmur\n  hash_tag: \"$$\"\n  distribution: ketama\n  timeout: 4000\n",
        servers: &[
            (2, Some("m1"), false),
            (1, Some("m2"), true),
            (5, Some("m3"), false),
        ],
        tag: Some("$$"),
    },
];

#[test]
fn twemproxy_config_places_as_nutcracker() {
    const TEST: &str = "config_live twemproxy";
    if !require("nutcracker") || !require("memcached") {
        return;
    }
    let memshard = Path::new(env!("CARGO_BIN_EXE_memshard"));
    let seed = seed();
    let mut rng = Rng(seed ^ 0x7477);
    let started = Instant::now();
    // servers (some on port 11211 of a random 127.x.y.z), and the nutcracker.yml that names them
    let mut servers: Vec<Memcached> = Vec::new();
    let mut pool_servers: Vec<Vec<SocketAddr>> = Vec::new();
    for p in POOLS {
        let mut addrs = Vec::new();
        for &(_, _, on_11211) in p.servers {
            let m = if on_11211 {
                Memcached::on_11211("")
            } else {
                Memcached::start(Ipv4Addr::LOCALHOST, 0, "")
            };
            addrs.push(m.sock());
            servers.push(m);
        }
        pool_servers.push(addrs);
    }
    let nutcracker = Nutcracker::start(POOLS.len(), |listens| {
        let mut yml = String::from("# nutcracker.yml written by tests/config_live.rs\n");
        for ((p, listen), addrs) in POOLS.iter().zip(listens).zip(&pool_servers) {
            yml += &format!("{}:\n  listen: {listen}\n{}  servers:\n", p.name, p.lines);
            for (&(w, name, _), a) in p.servers.iter().zip(addrs) {
                yml += &format!("   - {a}:{w}");
                if let Some(n) = name {
                    yml += &format!(" {n}");
                }
                yml += "\n";
            }
        }
        yml
    });
    let (listens, yml, conf) = (
        &nutcracker.listens,
        &nutcracker.yml,
        nutcracker.config_path(),
    );

    let file_text = fs::read_to_string(&conf).unwrap();
    assert_eq!(
        twemproxy_pools(&file_text).expect("memshard reads the pool names"),
        POOLS.iter().map(|p| p.name).collect::<Vec<_>>()
    );

    let (mut servers_total, mut keys_total, mut cli_keys) = (0, 0, 0);
    let mut failures = Vec::new();
    for (pi, p) in POOLS.iter().enumerate() {
        let keys = random_keys(&mut rng, KEYS, p.tag);

        // the real peer: store through nutcracker, ask every memcached what it holds
        let items: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &b"v"[..])).collect();
        Text::open(listens[pi]).store_all(&items);
        let mut owner: HashMap<Vec<u8>, SocketAddr> = HashMap::new();
        for &a in &pool_servers[pi] {
            for k in Text::open(a).get_many(&keys).into_keys() {
                if let Some(prev) = owner.insert(k.clone(), a) {
                    panic!("pool {}: key {} held by {prev} and {a}", p.name, show(&k));
                }
            }
        }
        assert_eq!(
            owner.len(),
            keys.len(),
            "pool {}: some keys were stored on no memcached",
            p.name
        );

        // memshard, from the same file
        let cfg = twemproxy(&file_text, Some(p.name))
            .unwrap_or_else(|e| panic!("memshard rejects pool {}: {e}\n{file_text}", p.name));
        assert_eq!(
            cfg.servers.len(),
            p.servers.len(),
            "pool {} servers",
            p.name
        );
        let ring = Ring::with_options(cfg.servers, cfg.flavor, Some(cfg.hash), cfg.hash_tag)
            .expect("ring from the twemproxy pool");
        let mut diffs = Vec::new();
        for k in &keys {
            let s = ring.server_for(k).expect("a ring places every key");
            let want = owner[k];
            if !(s.host == want.ip().to_string() && s.port == want.port()) {
                diffs.push(format!(
                    "{}: nutcracker {want}, memshard {}",
                    show(k),
                    s.addr
                ));
            }
        }
        if !diffs.is_empty() {
            failures.push(format!(
                "pool {} (memshard hash {:?}, tag {:?}): {} of {} keys differ, e.g.\n      {}",
                p.name,
                cfg.hash,
                cfg.hash_tag,
                diffs.len(),
                keys.len(),
                diffs[..diffs.len().min(5)].join("\n      ")
            ));
        }

        // the CLI, from the same file
        let conf_s = conf.to_str().expect("temp path is UTF-8");
        let args = ["route", "--twemproxy-config", conf_s, "--pool", p.name];
        let (code, out, err) = run(memshard, &args, &keys_input(&keys));
        assert_eq!(code, Some(0), "memshard {args:?} failed: {err}");
        let got = parse_placements(&out);
        assert_eq!(got.len(), keys.len(), "memshard route: lines for keys");
        let mut cli_diffs = Vec::new();
        for (k, (gk, host, port)) in keys.iter().zip(&got) {
            assert_eq!(k, gk, "memshard route output out of order");
            let want = owner[k];
            if !(*host == want.ip().to_string() && *port == want.port()) {
                cli_diffs.push(format!(
                    "{}: nutcracker {want}, memshard route {host}:{port}",
                    show(k)
                ));
            }
        }
        cli_keys += keys.len();
        if !cli_diffs.is_empty() {
            failures.push(format!(
                "pool {} via `memshard route --twemproxy-config`: {} of {} keys differ, e.g.\n      {}",
                p.name,
                cli_diffs.len(),
                keys.len(),
                cli_diffs[..cli_diffs.len().min(5)].join("\n      ")
            ));
        }
        servers_total += p.servers.len();
        keys_total += keys.len();
    }
    assert!(
        failures.is_empty(),
        "{TEST} (seed {seed}): {} problem(s):\n  {}\nnutcracker.yml:\n{yml}",
        failures.len(),
        failures.join("\n  ")
    );
    eprintln!(
        "{TEST}: {} pools, {servers_total} servers, {keys_total} keys, 0 differences (library); CLI route --twemproxy-config: {cli_keys} keys, 0 differences ({:.1}s)",
        POOLS.len(),
        started.elapsed().as_secs_f64()
    );
}
