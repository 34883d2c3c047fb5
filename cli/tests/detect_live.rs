//! `memshard detect` against keys the real peers wrote, live.
//!
//! For each peer and setting, four fresh memcached servers on 127.0.41.1–127.0.41.4 (free
//! ports; no other test binary uses 127.0.41.x), the peer writes [`N`] keys through its
//! driver in `tests/detect/` (weights 3, 1, 2, 1 to the peers that take weights, and the same
//! in memshard's server list), then `memshard detect --json` must find every key (metadump)
//! and rank the peer's true placement first at 100%: alone, or tied only with candidates
//! that place each of those keys on the same server (checked here with the library's rings,
//! not taken from detect). One `DETECT-ROW` line per peer and setting: the table of the
//! closing note.
//!
//! The other way round, for each setting too: a client built from the peer's profile and
//! options sets [`N`] fresh keys, typed for the peer's codec (text, a 32-bit and a 64-bit
//! integer in turn; the key as bytes for the peers that store only bytes), and the peer's
//! driver, built as when it wrote, must get each one with the value and type memshard stored.
//!
//! | peer | settings | expected |
//! |---|---|---|
//! | php-memcached | default / `OPT_LIBKETAMA_COMPATIBLE` | libmemcached-modula / libmemcached |
//! | pylibmc | default / `ketama_weighted` / `ketama` | libmemcached-modula / libmemcached / libmemcached-unweighted |
//! | spymemcached | `DefaultConnectionFactory` / `KetamaConnectionFactory` | spymemcached-modula / spymemcached |
//! | dalli | its ring (it has no other) | dalli |
//! | node memcached | its hashring (no other) | node-hashring |
//! | pymemcache | `HashClient` rendezvous (no ketama) | pymemcache |
//! | gomemcache | `ServerList` modulo (no ketama) | gomemcache |
//! | nutcracker | `distribution: ketama`, default hash / `hash: murmur` | twemproxy |
//!
//! Also: a server that refuses metadump (memcached `-o no_lru_crawler`, and a fake that
//! answers `ERROR` to everything) makes detect fail with a message naming the reply and
//! `--key-file`; `--key-file` then finds the keys by looking them up; and
//! `Client::check_placement` (blocking and async) on keys written by another placement.
//!
//! A missing peer is SKIPPED (printed), or a failure when `CI` is set.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::servers::{Memcached, Nutcracker, Text, program, require};
use common::{TempDir, drivers, missing, path_string, runs, write_file};
use memshard::value::Value;
use memshard::{Client, Expiry, Flavor, KeyHash, Ring, StoreOutcome};
use serde_json::Value as J;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{memshard, memshard_in};

/// Keys each peer writes per setting.
const N: usize = 400;
const IPS: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 0, 41, 1),
    Ipv4Addr::new(127, 0, 41, 2),
    Ipv4Addr::new(127, 0, 41, 3),
    Ipv4Addr::new(127, 0, 41, 4),
];
const WEIGHTS: [u32; 4] = [3, 1, 2, 1];
const DRIVER_DEADLINE: Duration = Duration::from_secs(180);

fn script(file: &str) -> String {
    common::repo_file(&format!("tests/detect/{file}"))
}

fn temp_dir(what: &str) -> TempDir {
    TempDir::new(&format!("detect-{what}"))
}

/// How a peer is run: program and leading arguments, then `MODE HOST:PORT:WEIGHT...`;
/// `DETECT_ACTION` ([`Action`]) says whether it writes the keys or reads back memshard's.
struct Driver {
    cmd: Vec<String>,
    env: Vec<(String, String)>,
    /// Whether the peer takes weights.
    weights: bool,
}

/// One setting of a peer: the driver's mode, and the placement memshard must find.
struct Setting {
    /// Weight 1 for every server, even for a peer that takes weights.
    unit_weights: bool,
    mode: &'static str,
    describe: &'static str,
    flavor: Flavor,
    hash: KeyHash,
    /// The peer's own options for this setting, as `--peer-option` takes them (none: its
    /// defaults).
    options: &'static [(&'static str, &'static str)],
}

fn setting(mode: &'static str, describe: &'static str, flavor: Flavor, hash: KeyHash) -> Setting {
    Setting {
        unit_weights: false,
        mode,
        describe,
        flavor,
        hash,
        options: &[],
    }
}

impl Setting {
    fn with(self, options: &'static [(&'static str, &'static str)]) -> Setting {
        Setting { options, ..self }
    }
}

/// A client built with nothing but the peer's profile and the setting's options (the peer's
/// own vocabulary), checked to place as the setting says; `None` for a peer without a profile.
fn profile_client(peer: &str, set: &Setting, s: &Servers) -> Option<Client> {
    let who = peer.parse::<memshard::peer::Peer>().ok()?;
    let profile = memshard::peer::PeerProfile::from(who)
        .options(set.options.iter().copied())
        .expect("the peer's options");
    let client = Client::builder()
        .server_list(&s.list())
        .expect("list")
        .peer(profile)
        .build()
        .expect("builds");
    assert_eq!(
        (client.ring().flavor(), client.ring().key_hash()),
        (set.flavor, set.hash),
        "{peer} {}: the profile's placement",
        set.mode
    );
    Some(client)
}

/// The profile's client places as the peer did and reads every key it wrote, each value
/// decoded by the profile's codec; `memshard get --peer` with `--peer-option`s finds them all
/// too.
fn read_through_profile(peer: &str, set: &Setting, s: &Servers, keys: &[String], list: &str) {
    let Some(client) = profile_client(peer, set, s) else {
        return;
    };
    let mut read = 0;
    for k in keys {
        match client.get_value(k) {
            Ok(Some(_)) => read += 1,
            Ok(None) => panic!("{peer} {}: {k} not found through the profile", set.mode),
            Err(e) => panic!("{peer} {}: {k}: {e}", set.mode),
        }
    }
    assert_eq!(read, keys.len());
    let mut args = vec!["get", "--servers", list, "--peer", peer];
    let opts: Vec<String> = set
        .options
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for o in &opts {
        args.extend(["--peer-option", o.as_str()]);
    }
    let out = memshard_in(&args, keys.join("\n").as_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{} hits, 0 misses, 0 errors", keys.len())),
        "{peer} {}: {stderr}",
        set.mode
    );
}

/// The servers of one run, with the weights the peer was given.
struct Servers {
    all: Vec<Memcached>,
    weights: Vec<u32>,
}

impl Servers {
    fn start(weights: bool) -> Servers {
        Servers {
            all: IPS.iter().map(|&ip| Memcached::start(ip, 0, "")).collect(),
            weights: if weights {
                WEIGHTS.to_vec()
            } else {
                vec![1; 4]
            },
        }
    }

    fn specs(&self) -> Vec<String> {
        self.all
            .iter()
            .zip(&self.weights)
            .map(|(m, w)| format!("{}:{w}", m.addr()))
            .collect()
    }

    fn list(&self) -> String {
        self.all
            .iter()
            .zip(&self.weights)
            .map(|(m, w)| format!("{} {w}\n", m.addr()))
            .collect()
    }
}

fn keys(peer: &str, mode: &str) -> Vec<String> {
    let seed = format!("{peer}/{mode}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    let mut rng = fastrand::Rng::with_seed(seed);
    const ASCII: &[u8] =
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/#@!~+=";
    (0..N)
        .map(|i| {
            let mut k = format!("detect/{peer}/{mode}/{i}/");
            for _ in 0..rng.usize(1..=30) {
                k.push(char::from(ASCII[rng.usize(..ASCII.len())]));
            }
            k
        })
        .collect()
}

/// What a driver does with the keys on its standard input (`DETECT_ACTION`).
#[derive(Clone, Copy, Debug)]
enum Action {
    /// Sets each key, as the driver's header says.
    Write,
    /// Gets each key and checks the value [`write_through_profile`] stored.
    Read,
}

impl Driver {
    /// The driver in `mode` over `keys`: it must say `ok` for every key within the deadline.
    fn run(&self, action: Action, mode: &str, s: &Servers, keys: &[String]) {
        let mut child = Command::new(&self.cmd[0])
            .args(&self.cmd[1..])
            .arg(mode)
            .args(s.specs())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(
                "DETECT_ACTION",
                match action {
                    Action::Write => "write",
                    Action::Read => "read",
                },
            )
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run {:?}: {e}", self.cmd));
        let mut input = child.stdin.take().expect("stdin");
        let text: String = keys.iter().map(|k| format!("{k}\n")).collect();
        let feeder = std::thread::spawn(move || {
            let _ = input.write_all(text.as_bytes());
        });
        let t = Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if t.elapsed() > DRIVER_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{:?} {action:?} {mode} ran longer than {DRIVER_DEADLINE:?}",
                    self.cmd
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = feeder.join();
        let out = child.wait_with_output().expect("driver output");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.trim() == format!("ok {}", keys.len()),
            "{:?} {action:?} {mode}: {}\n{said}\n{}",
            self.cmd,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `memshard detect --json` with `args`: the parsed document.
fn detect_json(args: &[&str]) -> J {
    let mut all = vec!["detect", "--json"];
    all.extend_from_slice(args);
    let out = memshard(&all);
    assert!(
        out.status.success(),
        "memshard {all:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: J = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys: Vec<&str> = doc
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["keys", "flavors", "codecs"], "{doc}");
    doc
}

/// The flavors of a detect document, as (flavor, hash, agree).
fn flavors(doc: &J) -> Vec<(Flavor, KeyHash, u64)> {
    doc["flavors"]
        .as_array()
        .expect("flavors")
        .iter()
        .map(|f| {
            let keys: Vec<&str> = f
                .as_object()
                .expect("entry")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, ["flavor", "hash", "agree"], "{f}");
            (
                f["flavor"]
                    .as_str()
                    .expect("flavor")
                    .parse()
                    .expect("a flavor"),
                f["hash"].as_str().expect("hash").parse().expect("a hash"),
                f["agree"].as_u64().expect("agree"),
            )
        })
        .collect()
}

/// Detect over the keys `keys` on `s` written by `want`: every key found, `want` among the
/// best at 100%, every candidate tied with it placing each key where `want` does. The row of
/// the table.
fn check(peer: &str, set: &Setting, s: &Servers, keys: &[String], tmp: &Path) -> String {
    let list = write_file(tmp, &format!("{peer}-{}.txt", set.mode), &s.list());
    read_through_profile(peer, set, s, keys, &list);
    let doc = detect_json(&["--servers", &list]);
    let found = doc["keys"].as_u64().expect("keys");
    let ranked = flavors(&doc);
    assert!(
        ranked.windows(2).all(|w| w[0].2 >= w[1].2),
        "{peer} {}: not sorted by agree: {ranked:?}",
        set.mode
    );
    let top = ranked.first().map_or(0, |f| f.2);
    let best: Vec<_> = ranked.iter().filter(|f| f.2 == top).collect();
    let servers = memshard::parse_server_list(&s.list()).expect("list");
    let ring = |f: Flavor, h: KeyHash| {
        Ring::with_options(servers.clone(), f, Some(h), None).expect("ring")
    };
    let truth = ring(set.flavor, set.hash);
    let tied_alike = best.iter().all(|&&(f, h, _)| {
        let r = ring(f, h);
        keys.iter()
            .all(|k| r.route(k.as_bytes()) == truth.route(k.as_bytes()))
    });
    let codecs: Vec<String> = doc["codecs"]
        .as_array()
        .expect("codecs")
        .iter()
        .map(|c| format!("{} {}", c["codec"].as_str().unwrap_or("?"), c["values"]))
        .collect();
    let tied: Vec<String> = best.iter().map(|(f, h, _)| format!("{f}/{h}")).collect();
    let row = format!(
        "DETECT-ROW | {peer} | {} | {} | {} of {} | {:.1}% | {found} | {}",
        set.describe,
        tied.join(" "),
        best.len(),
        ranked.len(),
        top as f64 * 100.0 / found.max(1) as f64,
        codecs.join(", ")
    );
    println!("{row}");
    assert_eq!(found, N as u64, "{row}");
    assert_eq!(top, N as u64, "{row}");
    assert!(
        best.iter()
            .any(|&&(f, h, _)| f == set.flavor && h == set.hash),
        "{row}: {} / {} is not among the best: {best:?}",
        set.flavor,
        set.hash
    );
    assert!(
        tied_alike,
        "{row}: tied candidates place the keys differently: {best:?}"
    );
    // the peer's own codec reads as many sampled values as any codec
    let counts: Vec<(&str, u64)> = doc["codecs"]
        .as_array()
        .expect("codecs")
        .iter()
        .map(|c| {
            (
                c["codec"].as_str().unwrap_or("?"),
                c["values"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    if let Some(own) = codec_of(peer) {
        let most = counts.first().map_or(0, |c| c.1);
        assert!(
            most > 0 && counts.iter().any(|&(c, n)| c == own && n == most),
            "{row}: {own} does not read the most sampled values"
        );
    }
    row
}

/// The codec of a peer that writes typed values (the others write plain bytes).
fn codec_of(peer: &str) -> Option<&'static str> {
    match peer {
        "php-memcached" => Some("php-memcached"),
        "pylibmc" => Some("pylibmc"),
        "spymemcached" => Some("spymemcached"),
        "dalli" => Some("dalli"),
        "node-memcached" => Some("node-memcached"),
        _ => None,
    }
}

fn run_peer(peer: &str, make: impl FnOnce(&Path) -> Option<Driver>, settings: &[Setting]) {
    if !require("memcached") {
        return;
    }
    let tmp = temp_dir(&format!("{peer}-{:x}", fastrand::u64(..)));
    let Some(driver) = make(&tmp.0) else {
        return;
    };
    for set in settings {
        let s = Servers::start(driver.weights && !set.unit_weights);
        let keys = keys(peer, set.mode);
        driver.run(Action::Write, set.mode, &s, &keys);
        check(peer, set, &s, &keys, &tmp.0);
        if let Some(back) = write_through_profile(peer, set, &s) {
            driver.run(Action::Read, set.mode, &s, &back);
        }
    }
}

/// The value memshard writes for the `n`th of the keys a peer reads back: for a peer with a
/// typed codec, the key as text, the integer `n`, or `2^32 + n` (a Java `Long`, a Ruby or
/// Python integer beyond 32 bits) in turn, so the peer's own decoder must recognise each
/// type; for the others the key as bytes, all they store. The drivers expect the same.
fn back_value(peer: &str, n: usize, key: &str) -> Value {
    let n = i64::try_from(n).expect("a small index");
    match (codec_of(peer), n % 3) {
        (None, _) => Value::Bytes(key.as_bytes().to_vec()),
        (Some(_), 0) => Value::String(key.to_owned()),
        (Some(_), 1) => Value::Int(n),
        (Some(_), _) => Value::Int((1 << 32) + n),
    }
}

/// The profile's client (as in [`read_through_profile`]) sets fresh keys, each to its
/// [`back_value`] through the profile's codec: the keys for the peer to read back.
fn write_through_profile(peer: &str, set: &Setting, s: &Servers) -> Option<Vec<String>> {
    let client = profile_client(peer, set, s)?;
    let keys = keys(peer, &format!("{}-back", set.mode));
    for (n, k) in keys.iter().enumerate() {
        let outcome = client
            .set_value(k, &back_value(peer, n, k), Expiry::NEVER)
            .unwrap_or_else(|e| panic!("{peer} {}: set {k}: {e}", set.mode));
        assert_eq!(outcome, StoreOutcome::Stored, "{peer} {}: {k}", set.mode);
    }
    Some(keys)
}

// ---------------------------------------------------------------------------------------
// the peers
// ---------------------------------------------------------------------------------------

fn php(_: &Path) -> Option<Driver> {
    let Some(php) = program("php") else {
        return missing("php-memcached", "php is not installed");
    };
    if !runs(
        &php,
        &["-r", "exit(extension_loaded('memcached') ? 0 : 1);"],
    ) {
        return missing("php-memcached", "php's memcached extension is not loaded");
    }
    Some(Driver {
        cmd: vec![path_string(&php), script("php_detect.php")],
        env: vec![],
        weights: true,
    })
}

fn pylibmc(_: &Path) -> Option<Driver> {
    let py = PathBuf::from("/usr/bin/python3");
    if !runs(&py, &["-c", "import pylibmc"]) {
        return missing("pylibmc", "/usr/bin/python3 cannot import pylibmc");
    }
    Some(Driver {
        cmd: vec![path_string(&py), script("pylibmc_detect.py")],
        env: vec![],
        weights: true,
    })
}

fn spymemcached(tmp: &Path) -> Option<Driver> {
    let cmd = match drivers::spymemcached(tmp, &script("SpyDetect.java"), "SpyDetect") {
        Ok(cmd) => cmd,
        Err(why) => return missing("spymemcached", &why),
    };
    Some(Driver {
        cmd,
        env: vec![],
        weights: false,
    })
}

fn dalli(_: &Path) -> Option<Driver> {
    let Some(ruby) = program("ruby") else {
        return missing("dalli", "ruby is not installed");
    };
    if !runs(&ruby, &["-e", "require 'dalli'"]) {
        return missing("dalli", "ruby cannot require dalli");
    }
    Some(Driver {
        cmd: vec![path_string(&ruby), script("dalli_detect.rb")],
        env: vec![],
        weights: true,
    })
}

fn node(_: &Path) -> Option<Driver> {
    let Some(node) = program("node") else {
        return missing("node memcached", "node is not installed");
    };
    let modules = common::repo_root().join("tests/values/node_modules");
    if !modules.join("memcached/package.json").is_file() {
        return missing(
            "node memcached",
            "tests/values/node_modules lacks memcached (npm ci in tests/values)",
        );
    }
    Some(Driver {
        cmd: vec![path_string(&node), script("node_detect.js")],
        env: vec![("NODE_PATH".into(), path_string(&modules))],
        weights: true,
    })
}

fn pymemcache(_: &Path) -> Option<Driver> {
    let venv = std::env::var_os("PYMEMCACHE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_BIN_EXE_memshard"))
                .parent()
                .and_then(Path::parent)
                .expect("target directory")
                .join("pymemcache-venv")
        });
    let py = venv.join("bin/python");
    if !runs(&py, &["-c", "import pymemcache"]) {
        return missing(
            "pymemcache",
            "no pymemcache venv (scripts/pymemcache-venv.sh)",
        );
    }
    Some(Driver {
        cmd: vec![path_string(&py), script("pymemcache_detect.py")],
        env: vec![],
        weights: false,
    })
}

fn gomemcache(tmp: &Path) -> Option<Driver> {
    let bin = match drivers::gomemcache(tmp, &script("gomemcache_detect.go"), "gomemcache_detect") {
        Ok(bin) => bin,
        Err(why) => return missing("gomemcache", &why),
    };
    Some(Driver {
        cmd: vec![bin],
        env: vec![],
        weights: false,
    })
}

#[test]
fn detect_finds_php_memcached_default_and_ketama() {
    run_peer(
        "php-memcached",
        php,
        &[
            setting(
                "default",
                "new Memcached()",
                Flavor::LibmemcachedModula,
                KeyHash::OneAtATime,
            ),
            setting(
                "ketama",
                "OPT_LIBKETAMA_COMPATIBLE",
                Flavor::Libmemcached,
                KeyHash::Md5,
            )
            .with(&[("OPT_LIBKETAMA_COMPATIBLE", "true")]),
        ],
    );
}

#[test]
fn detect_finds_pylibmc_default_and_ketama() {
    run_peer(
        "pylibmc",
        pylibmc,
        &[
            setting(
                "default",
                "no behaviors",
                Flavor::LibmemcachedModula,
                KeyHash::OneAtATime,
            ),
            setting(
                "ketama",
                "ketama_weighted",
                Flavor::Libmemcached,
                KeyHash::Md5,
            )
            .with(&[("ketama_weighted", "true")]),
            // pylibmc sets behaviors before adding servers: a server of weight > 1 added under
            // KETAMA turns libmemcached's weighted ketama on (compat-vectors/pylibmc/README.md),
            // with the key hash still one-at-a-time
            setting(
                "ketama-unweighted",
                "ketama, weights 3,1,2,1",
                Flavor::Libmemcached,
                KeyHash::OneAtATime,
            )
            .with(&[("ketama", "true")]),
            Setting {
                unit_weights: true,
                ..setting(
                    "ketama-unweighted",
                    "ketama, weights 1",
                    Flavor::LibmemcachedUnweighted,
                    KeyHash::OneAtATime,
                )
                .with(&[("ketama", "true")])
            },
        ],
    );
}

#[test]
fn detect_finds_spymemcached_default_and_ketama() {
    run_peer(
        "spymemcached",
        spymemcached,
        &[
            setting(
                "default",
                "DefaultConnectionFactory",
                Flavor::SpymemcachedModula,
                KeyHash::Native,
            ),
            setting(
                "ketama",
                "KetamaConnectionFactory",
                Flavor::Spymemcached,
                KeyHash::Md5,
            )
            .with(&[("ConnectionFactory", "KetamaConnectionFactory")]),
        ],
    );
}

#[test]
fn detect_finds_dalli() {
    run_peer(
        "dalli",
        dalli,
        &[setting(
            "default",
            "Dalli::Client (its ring)",
            Flavor::Dalli,
            KeyHash::Crc32a,
        )],
    );
}

#[test]
fn detect_finds_node_memcached() {
    run_peer(
        "node-memcached",
        node,
        &[setting(
            "default",
            "new Memcached (hashring)",
            Flavor::NodeHashring,
            KeyHash::Md5,
        )],
    );
}

#[test]
fn detect_finds_pymemcache() {
    run_peer(
        "pymemcache",
        pymemcache,
        &[setting(
            "default",
            "HashClient (rendezvous)",
            Flavor::Pymemcache,
            KeyHash::Murmur3Seed0,
        )],
    );
}

#[test]
fn detect_finds_gomemcache() {
    run_peer(
        "gomemcache",
        gomemcache,
        &[setting(
            "default",
            "memcache.New",
            Flavor::Gomemcache,
            KeyHash::Crc32a,
        )],
    );
}

/// nutcracker in front of the four servers, keys set through it by a plain text connection;
/// then keys memshard sets straight on the servers (its twemproxy flavor and the hash) are all
/// read back through the proxy.
#[test]
fn detect_finds_nutcracker_ketama() {
    if !require("memcached") || !require("nutcracker") {
        return;
    }
    let tmp = temp_dir(&format!("nutcracker-{:x}", fastrand::u64(..)));
    for (mode, hash, describe) in [
        ("ketama", None, "distribution: ketama"),
        ("ketama-murmur", Some("murmur"), "ketama, hash: murmur"),
    ] {
        let s = Servers::start(true);
        let entries: String = s.specs().iter().map(|e| format!("   - {e}\n")).collect();
        let proxy = Nutcracker::start(1, |listen| {
            let mut yml = format!("detect:\n  listen: {}\n  distribution: ketama\n", listen[0]);
            if let Some(h) = hash {
                yml += &format!("  hash: {h}\n");
            }
            yml + "  timeout: 5000\n  auto_eject_hosts: false\n  servers:\n" + &entries
        });
        let keys = keys("nutcracker", mode);
        let items: Vec<(&str, String)> = keys
            .iter()
            .map(|k| (k.as_str(), format!("v:{k}")))
            .collect();
        Text::open(proxy.listen()).store_all(&items);
        let hash = hash.map_or(KeyHash::Fnv1a_64, |h| h.parse().expect("hash"));
        let set = setting(mode, describe, Flavor::Twemproxy, hash);
        check("nutcracker", &set, &s, &keys, &tmp.0);
        // the text output says that the two best place these keys alike
        let list = write_file(&tmp.0, "text.txt", &s.list());
        let out = memshard(&["detect", "--servers", &list]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(
            text.starts_with(&format!("keys: {N}\n"))
                && text.contains(&format!(
                    "tied: libmemcached/{hash}, twemproxy/{hash} place these keys identically"
                )),
            "{text}"
        );
        // memshard writes straight to the servers; the proxy finds each key where it would
        // have put it
        let back = self::keys("nutcracker", &format!("{mode}-back"));
        let client = Client::builder()
            .server_list(&s.list())
            .expect("list")
            .flavor(Flavor::Twemproxy)
            .hash(hash)
            .build()
            .expect("client");
        for k in &back {
            let outcome = client
                .set(k, k.as_bytes(), Expiry::NEVER)
                .unwrap_or_else(|e| panic!("nutcracker {mode}: set {k}: {e}"));
            assert_eq!(outcome, StoreOutcome::Stored, "nutcracker {mode}: {k}");
        }
        let got = Text::open(proxy.listen()).get_many(&back);
        for k in &back {
            assert_eq!(
                got.get(k.as_bytes()).map(Vec::as_slice),
                Some(k.as_bytes()),
                "nutcracker {mode}: {k} read back through the proxy"
            );
        }
        assert_eq!(got.len(), N, "nutcracker {mode}");
    }
}

// ---------------------------------------------------------------------------------------
// servers that refuse metadump, --key-file, check_placement
// ---------------------------------------------------------------------------------------

/// A loopback fake of a server holding 3 items (`stats`: `curr_items 3`) whose LRU crawler is
/// in the way of the first dumps: the first `lru_crawler metadump all` answers BUSY, the second
/// lists one key and ends, the third lists all three, one of them twice (as memcached does
/// once its own crawl is over, and when its LRU maintainer moves a key mid-crawl); gets miss.
fn crawler_busy_fake() -> String {
    let l = TcpListener::bind((Ipv4Addr::new(127, 0, 41, 10), 0)).expect("bind the fake");
    let addr = l.local_addr().expect("addr").to_string();
    let dumps = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let dumps = dumps.clone();
            std::thread::spawn(move || {
                let mut w = conn.try_clone().expect("clone");
                let item = |k: &str| format!("key={k} exp=-1 la=1 cas=1 fetch=no cls=1 size=60\n");
                for line in BufReader::new(conn).lines() {
                    let Ok(line) = line else { return };
                    let reply = if line == "stats" {
                        "STAT pid 1\r\nSTAT curr_items 3\r\nEND\r\n".to_string()
                    } else if line == "lru_crawler metadump all" {
                        match dumps.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                            0 => "BUSY currently processing crawler request\r\n".to_string(),
                            1 => item("a") + "END\r\n",
                            _ => item("a") + &item("b") + &item("a") + &item("c") + "END\r\n",
                        }
                    } else if line.starts_with("get ") {
                        "END\r\n".to_string()
                    } else {
                        "ERROR\r\n".to_string()
                    };
                    if w.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A dump refused as BUSY, then one shorter than the server's `curr_items`, are read again:
/// detect counts the three keys the server holds, once each.
#[test]
fn a_busy_or_short_dump_is_read_again() {
    let tmp = temp_dir(&format!("busy-{:x}", fastrand::u64(..)));
    let list = write_file(&tmp.0, "busy.txt", &format!("{}\n", crawler_busy_fake()));
    let doc = detect_json(&["--servers", &list]);
    assert_eq!(doc["keys"].as_u64(), Some(3), "{doc}");
}

/// A loopback fake that answers `ERROR` to every line, until the test ends.
fn erroring_fake() -> String {
    let l = TcpListener::bind((Ipv4Addr::new(127, 0, 41, 9), 0)).expect("bind the fake");
    let addr = l.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut w = conn.try_clone().expect("clone");
                for line in BufReader::new(conn).lines() {
                    if line.is_err() || w.write_all(b"ERROR\r\n").is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Keys set by memshard with `flavor` over `list`.
fn store(list: &str, flavor: Flavor, keys: &[String]) {
    let c = Client::builder()
        .server_list(list)
        .expect("list")
        .flavor(flavor)
        .build()
        .expect("client");
    for k in keys {
        c.set(k, k.as_bytes(), Expiry::NEVER).expect("set");
    }
}

#[test]
fn detect_names_a_refused_metadump_and_key_file_finds_the_keys() {
    if !require("memcached") {
        return;
    }
    let tmp = temp_dir(&format!("refused-{:x}", fastrand::u64(..)));
    let open = Memcached::start(IPS[0], 0, "");
    let closed = Memcached::start(IPS[1], 0, "-o no_lru_crawler");
    let list = format!("{}\n{}\n", open.addr(), closed.addr());
    let keys: Vec<String> = (0..300).map(|i| format!("refused:{i}")).collect();
    store(&list, Flavor::LibmemcachedModula, &keys);
    let servers = write_file(&tmp.0, "servers.txt", &list);
    let out = memshard(&["detect", "--servers", &servers]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&closed.addr())
            && err.contains("CLIENT_ERROR lru crawler disabled")
            && err.contains("--key-file"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // a fake that answers ERROR
    let fake = erroring_fake();
    let with_fake = write_file(&tmp.0, "fake.txt", &format!("{}\n{fake}\n", open.addr()));
    let out = memshard(&["detect", "--servers", &with_fake]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&fake) && err.contains("ERROR") && err.contains("--key-file"),
        "{err}"
    );
    // --key-file: the keys looked up on every server, plus some no server holds
    let mut lines: Vec<String> = keys.clone();
    lines.extend((0..50).map(|i| format!("nowhere:{i}")));
    // a key listed twice is one key
    lines.extend(keys[..20].iter().cloned());
    // log lines that are no key: skipped, counted on standard error
    lines.extend(["two words".to_string(), "x".repeat(251)]);
    let key_file = write_file(&tmp.0, "keys.txt", &(lines.join("\r\n") + "\n"));
    let doc = detect_json(&["--servers", &servers, "--key-file", &key_file]);
    assert_eq!(doc["keys"].as_u64(), Some(300), "{doc}");
    let ranked = flavors(&doc);
    assert_eq!(ranked[0].2, 300, "{doc}");
    assert!(
        ranked
            .iter()
            .any(|&(f, h, a)| f == Flavor::LibmemcachedModula
                && h == KeyHash::OneAtATime
                && a == 300),
        "{doc}"
    );
    let out = memshard(&["detect", "--servers", &servers, "--key-file", &key_file]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("skipped 2 lines"),
        "{err}"
    );
    // --max-keys bounds the keys a metadump reads (the server holds more)
    let only_open = write_file(&tmp.0, "open.txt", &format!("{}\n", open.addr()));
    let doc = detect_json(&["--servers", &only_open, "--max-keys", "25"]);
    assert_eq!(doc["keys"].as_u64(), Some(25), "{doc}");
    // --max-keys bounds the keys read from the file
    let doc = detect_json(&[
        "--servers",
        &servers,
        "--key-file",
        &key_file,
        "--max-keys",
        "40",
    ]);
    assert_eq!(doc["keys"].as_u64(), Some(40), "{doc}");
}

/// `check_placement` counts the keys where the client would put them, per server; another
/// placement's keys disagree; a server that refuses the dump is reported, not raised.
#[test]
fn check_placement_counts_agreement_both_clients() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = IPS.iter().map(|&ip| Memcached::start(ip, 0, "")).collect();
    let closed = Memcached::start(Ipv4Addr::new(127, 0, 41, 5), 0, "-o no_lru_crawler");
    let list: String = servers
        .iter()
        .map(|m| format!("{} 1\n", m.addr()))
        .collect();
    // half of them UTF-8: metadump spells bytes >= 0x80 as %XX
    let keys: Vec<String> = (0..400)
        .map(|i| match i % 2 {
            0 => format!("check:{i}"),
            _ => format!("check:{i}:clé/日本"),
        })
        .collect();
    store(&list, Flavor::LibmemcachedModula, &keys);
    let client = |flavor| {
        Client::builder()
            .server_list(&list)
            .expect("list")
            .flavor(flavor)
            .build()
            .expect("client")
    };
    let same = client(Flavor::LibmemcachedModula).check_placement(1000);
    assert_eq!((same.sampled(), same.agree()), (400, 400), "{same:?}");
    assert_eq!(same.agreement(), Some(1.0));
    assert!(
        same.servers
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(|p| p.sampled > 0))
    );
    let other = client(Flavor::Libmemcached).check_placement(1000);
    assert_eq!(other.sampled(), 400);
    assert!(other.agree() < 300, "{other:?}");
    // at most n keys per server
    let few = client(Flavor::LibmemcachedModula).check_placement(10);
    assert_eq!(few.sampled(), 40, "{few:?}");
    // the client works after a dump cut short (its connection was closed, not pooled)
    let c = client(Flavor::LibmemcachedModula);
    let _ = c.check_placement(5);
    assert_eq!(
        c.get(&keys[0]).expect("get").map(|i| i.value.to_vec()),
        Some(keys[0].clone().into_bytes())
    );
    // a server refusing the dump: reported, the others counted
    let mixed = format!("{list}{} 1\n", closed.addr());
    let c = Client::builder()
        .server_list(&mixed)
        .expect("list")
        .flavor(Flavor::LibmemcachedModula)
        .check_placement_at_start(100)
        .build()
        .expect("a disagreement or a refusal does not fail the build");
    let r = c.check_placement(1000);
    let failed: Vec<_> = r
        .failed()
        .map(|(s, e)| (s.addr.clone(), e.to_string()))
        .collect();
    assert_eq!(failed.len(), 1, "{r:?}");
    assert_eq!(failed[0].0, closed.addr());
    assert!(failed[0].1.contains("lru crawler disabled"), "{failed:?}");
    // 5 servers now: modula over 5 puts most of the 4 servers' keys elsewhere
    assert_eq!(r.sampled(), 400);
    assert!(r.agree() < 400);
    // the async client: the same counts
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let build = |flavor| {
            memshard::aio::Client::builder()
                .server_list(&list)
                .expect("list")
                .flavor(flavor)
                .build()
                .expect("async client")
        };
        let same = build(Flavor::LibmemcachedModula)
            .check_placement(1000)
            .await;
        assert_eq!((same.sampled(), same.agree()), (400, 400), "{same:?}");
        let other = build(Flavor::Libmemcached).check_placement(1000).await;
        assert_eq!(other.sampled(), 400);
        assert!(other.agree() < 300, "{other:?}");
        let mut seen = 0;
        let c = build(Flavor::Libmemcached);
        let s = c
            .metadump(&servers[0].addr(), 7, |_| seen += 1)
            .await
            .expect("dump");
        assert_eq!((s.keys, s.complete, seen), (7, false, 7));
    });
}
