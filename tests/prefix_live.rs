//! Key prefixes as each peer applies them, run live: every peer stores 300
//! keys with its own prefix setting on four real memcached servers (weights 3, 1, 2, 1, as each
//! peer configures weighted ketama), then memshard, built with the settings docs/prefixes.md
//! gives for that peer, reads each key *unprefixed*. Each case must give 300 hits with the
//! value stored, and memshard's ring must name the server that actually holds the prefixed key
//! (found by asking every server). The same prefix with the other `hash_with_prefix` setting is
//! run too and must miss, so the test can tell the two apart.
//!
//! Peers: php-memcached (`OPT_PREFIX_KEY`, with and without `OPT_HASH_WITH_PREFIX_KEY`),
//! libmemcached (`--NAMESPACE=` in a configuration string and `MEMCACHED_CALLBACK_NAMESPACE`,
//! each with and without hashing the namespace), pylibmc (`set_multi(key_prefix=)`), dalli
//! (`namespace:`), node `memcached` (`namespace`) and twemproxy (no prefix setting: the
//! application's own). spymemcached has no prefix setting. Run with `--nocapture` for the
//! figures. When `CI` is set, a missing peer is a failure: scripts/test.sh installs every one
//! (php-memcached, pylibmc, libmemcached-dev, nutcracker, ruby-dalli, and node's `memcached`
//! through `npm ci` in tests/values/) before `cargo test`. Outside CI a missing peer is skipped
//! and the test passes without it: each skip is written to the terminal's stderr (not captured
//! by the test harness) as `SKIPPED <peer>: ... (this run does not check <peer>)`.
//!
//! With `hash_with_prefix` flipped, memshard hashes the other string, so a key is found exactly
//! when the ring of the flipped settings names the server that holds the prefixed key: the
//! flipped client's hits must be exactly those keys (counted per key, not a tolerance), and they
//! must be fewer than all of them.
//!
//! The servers listen on free ports of 127.0.15.1-4, an address range no other test binary uses.

mod common;

use common::servers::{Memcached, Nutcracker, Text, require};
use common::{runs, skip as skipped};
use memshard::{Client, Flavor, KeyHash};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Keys per case.
const N: usize = 300;
const WEIGHTS: [u32; 4] = [3, 1, 2, 1];

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

struct Env {
    servers: Vec<Memcached>,
    dir: PathBuf,
    /// `HOST PORT WEIGHT` lines, for the drivers.
    servers_file: PathBuf,
}

impl Env {
    /// memshard's server list: `host:port weight` lines.
    fn server_list(&self) -> String {
        self.servers
            .iter()
            .zip(WEIGHTS)
            .map(|(s, w)| format!("{} {w}\n", s.addr()))
            .collect()
    }

    /// A libmemcached configuration string: the servers with their weights after
    /// `--DISTRIBUTION=consistent` (weighted ketama, md5), then `extra`.
    fn lmc_config(&self, extra: &str) -> String {
        let mut cfg = String::from("--DISTRIBUTION=consistent --HASH=MD5");
        for (s, w) in self.servers.iter().zip(WEIGHTS) {
            cfg += &format!(" --SERVER={}/?{w}", s.addr());
        }
        if !extra.is_empty() {
            cfg += " ";
            cfg += extra;
        }
        cfg
    }

    fn flush(&self) {
        for s in &self.servers {
            assert_eq!(s.raw(b"flush_all\r\n", b"\r\n"), b"OK\r\n");
        }
    }

    /// For each wire key, the servers holding it, and the value.
    fn locate(&self, wire: &[Vec<u8>]) -> HashMap<Vec<u8>, Vec<(String, Vec<u8>)>> {
        let mut at: HashMap<Vec<u8>, Vec<(String, Vec<u8>)>> = HashMap::new();
        for s in &self.servers {
            for (k, v) in s.text().get_many(wire) {
                at.entry(k).or_default().push((s.addr(), v));
            }
        }
        at
    }
}

/// `key:<i>:<hex>`: short ASCII keys, deterministic.
fn keys() -> Vec<String> {
    let mut x: u64 = 0x1505_2024;
    (0..N)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            format!("key:{i}:{:x}", x >> 40)
        })
        .collect()
}

/// Runs a peer's driver; its failure fails the test with its stderr.
fn run(what: &str, cmd: &mut Command) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What memshard is built with for a case.
struct Settings {
    flavor: Flavor,
    hash: Option<KeyHash>,
    /// A libmemcached configuration string handed to `Builder::peer_config` (the prefix then
    /// comes from its `--NAMESPACE=`), instead of the server list and flavor.
    peer_config: Option<String>,
    prefix: Option<&'static str>,
    hash_with_prefix: bool,
}

impl Settings {
    /// What memshard's ring hashes for `key` with these settings (`flip`: with the other
    /// `hash_with_prefix`): the configuration string's namespace and flag for a `peer_config`
    /// case, else the explicit calls.
    fn hashed(&self, key: &str, flip: bool) -> Vec<u8> {
        let (prefix, with) = match &self.peer_config {
            Some(cfg) => {
                let c = memshard::config::libmemcached(cfg).expect("config");
                (c.prefix.unwrap_or_default(), c.hash_with_prefix)
            }
            None => (
                self.prefix.unwrap_or_default().to_owned(),
                self.hash_with_prefix,
            ),
        };
        if with != flip {
            format!("{prefix}{key}").into_bytes()
        } else {
            key.as_bytes().to_vec()
        }
    }

    /// The client; `flip` builds it with the other `hash_with_prefix`.
    fn build(&self, env: &Env, flip: bool) -> Client {
        let mut b = Client::builder();
        if let Some(cfg) = &self.peer_config {
            b = b.peer_config(memshard::config::libmemcached(cfg).expect("config"));
        } else {
            b = b
                .server_list(&env.server_list())
                .expect("server list")
                .flavor(self.flavor);
            if let Some(h) = self.hash {
                b = b.hash(h);
            }
        }
        if let Some(p) = self.prefix {
            b = b.prefix(p).hash_with_prefix(self.hash_with_prefix);
        }
        if flip {
            b = b.hash_with_prefix(!self.hash_with_prefix);
        }
        b.pool_size(2)
            .read_timeout(Duration::from_secs(5))
            .build()
            .expect("client")
    }
}

/// One case's figures.
struct Figures {
    case: String,
    /// The prefix the peer put on the wire.
    wire_prefix: String,
    hits: usize,
    right_value: usize,
    same_server: usize,
    other_hits: usize,
    /// With `hash_with_prefix` flipped: keys whose ring names the server holding them.
    other_same_server: usize,
}

/// The peer has stored `keys` with `wire_prefix` in front; memshard with `s` must find all of
/// them where they are, and with `hash_with_prefix` flipped must miss some.
fn check(env: &Env, case: &str, wire_prefix: &str, keys: &[String], s: Settings) -> Figures {
    let wire: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| format!("{wire_prefix}{k}").into_bytes())
        .collect();
    let at = env.locate(&wire);
    let stored: Vec<&(String, Vec<u8>)> = wire
        .iter()
        .map(|w| match at.get(w).map(Vec::as_slice) {
            Some([one]) => one,
            other => panic!(
                "{case}: {} is on {} servers, not one: the peer did not store it with the prefix \
                 {wire_prefix:?}",
                String::from_utf8_lossy(w),
                other.map_or(0, <[_]>::len)
            ),
        })
        .collect();

    let m = s.build(env, false);
    let ring = m.ring();
    let mut f = Figures {
        case: case.to_owned(),
        wire_prefix: wire_prefix.to_owned(),
        hits: 0,
        right_value: 0,
        same_server: 0,
        other_hits: 0,
        other_same_server: 0,
    };
    for (k, (addr, value)) in keys.iter().zip(&stored) {
        if let Some(item) = m.get(k).expect("memshard get") {
            f.hits += 1;
            if item.value == value {
                f.right_value += 1;
            }
        }
        if ring
            .server_for(&s.hashed(k, false))
            .is_some_and(|srv| &srv.addr == addr)
        {
            f.same_server += 1;
        }
    }
    let other = s.build(env, true);
    let other_ring = other.ring();
    for (k, (addr, _)) in keys.iter().zip(&stored) {
        let there = other_ring
            .server_for(&s.hashed(k, true))
            .is_some_and(|srv| &srv.addr == addr);
        let hit = other.get(k).expect("memshard get").is_some();
        assert_eq!(
            hit, there,
            "{case}, hash_with_prefix flipped, {k}: a hit must be exactly a key whose flipped \
             ring names the server holding it"
        );
        f.other_hits += usize::from(hit);
        f.other_same_server += usize::from(there);
    }
    println!(
        "{case}: wire prefix {wire_prefix:?}; memshard with the matching settings: {}/{N} hits, \
         {}/{N} same value, {}/{N} on the server its ring names; with hash_with_prefix flipped: \
         {}/{N} hits",
        f.hits, f.right_value, f.same_server, f.other_hits
    );
    f
}

fn write_keys(env: &Env, keys: &[String]) -> PathBuf {
    let p = env.dir.join("keys.txt");
    fs::write(&p, keys.join("\n") + "\n").expect("write keys");
    p
}

// ---------------------------------------------------------------------------------------------
// the peers' drivers
// ---------------------------------------------------------------------------------------------

/// php-memcached 3.2: `OPT_LIBKETAMA_COMPATIBLE`, `OPT_PREFIX_KEY` = argv[3], and
/// `OPT_HASH_WITH_PREFIX_KEY` when argv[4] is 1; `set(key, key)` for every key.
const PHP: &str = r##"<?php
[, $serversPath, $keysPath, $prefix, $hashWith] = $argv;
$list = [];
foreach (file($serversPath, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
    $t = preg_split('/\s+/', trim($line));
    $list[] = [$t[0], (int)$t[1], (int)$t[2]];
}
$m = new Memcached();
if (!$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true)
    || !$m->setOption(Memcached::OPT_PREFIX_KEY, $prefix)
    || ($hashWith === '1' && !$m->setOption(Memcached::OPT_HASH_WITH_PREFIX_KEY, true))
    || !$m->addServers($list)) {
    fwrite(STDERR, "setup: " . $m->getResultMessage() . "\n");
    exit(2);
}
$bad = 0;
foreach (file($keysPath, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $k) {
    if (!$m->set($k, $k)) {
        fwrite(STDERR, "set $k: " . $m->getResultMessage() . "\n");
        $bad++;
    }
}
exit($bad ? 1 : 0);
"##;

/// libmemcached 1.1.4: `memcached(CONFIG)`, then `MEMCACHED_CALLBACK_NAMESPACE` = argv[2] and
/// `MEMCACHED_BEHAVIOR_HASH_WITH_PREFIX_KEY` (the flag `--HASH-WITH-NAMESPACE` sets; 1.1.4 has
/// no `..._HASH_WITH_NAMESPACE` name) = argv[3] unless they are `-`; keys on stdin, each set with
/// itself as the value.
const LMC: &str = r##"#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  if (argc != 4) return 2;
  memcached_st *m = memcached(argv[1], strlen(argv[1]));
  if (!m) { fprintf(stderr, "bad config %s\n", argv[1]); return 2; }
  if (strcmp(argv[2], "-") && memcached_callback_set(m, MEMCACHED_CALLBACK_NAMESPACE, argv[2]) != MEMCACHED_SUCCESS) {
    fprintf(stderr, "namespace refused\n"); return 2;
  }
  if (strcmp(argv[3], "-")) memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH_WITH_PREFIX_KEY, atoi(argv[3]));
  char line[4096]; int bad = 0;
  while (fgets(line, sizeof line, stdin)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (!n) continue;
    memcached_return_t rc = memcached_set(m, line, n, line, n, 0, 0);
    if (rc != MEMCACHED_SUCCESS) { fprintf(stderr, "set %s: %s\n", line, memcached_strerror(m, rc)); bad++; }
  }
  memcached_free(m);
  return bad ? 1 : 0;
}
"##;

/// pylibmc 1.6: `ketama_weighted`, one `set_multi(..., key_prefix=argv[3])`.
const PYLIBMC: &str = r##"
import sys, pylibmc
servers_path, keys_path, prefix = sys.argv[1:4]
servers = [f"{h}:{p}:{w}" for h, p, w in (l.split() for l in open(servers_path) if l.strip())]
mc = pylibmc.Client(servers, behaviors={"ketama_weighted": True})
keys = [l.strip() for l in open(keys_path) if l.strip()]
failed = mc.set_multi({k: k.encode() for k in keys}, key_prefix=prefix)
if failed:
    sys.exit(f"set_multi failed for {len(failed)} keys: {failed[:5]}")
"##;

/// dalli 3.0: `Dalli::Client.new(["host:port:weight", ...], namespace: ARGV[2])`,
/// `set(key, key, 0, raw: true)`.
const DALLI: &str = r##"
require 'dalli'
servers_path, keys_path, ns = ARGV
list = File.readlines(servers_path).map(&:split).reject(&:empty?).map { |h, p, w| "#{h}:#{p}:#{w}" }
dc = Dalli::Client.new(list, namespace: ns)
bad = 0
File.readlines(keys_path, chomp: true).reject(&:empty?).each do |k|
  next if dc.set(k, k, 0, raw: true)
  warn "set #{k} failed"
  bad += 1
end
exit(bad.zero? ? 0 : 1)
"##;

/// npm memcached 2.2: `new Memcached({"host:port": weight, ...}, {namespace})`, `set` one key
/// after the other. Run with `node -e`, where `process.argv[1]` is the first argument.
const NODE: &str = r##"
const [, modPath, serversPath, keysPath, ns] = process.argv;
const Memcached = require(modPath);
const fs = require('fs');
const servers = {};
for (const l of fs.readFileSync(serversPath, 'utf8').split('\n')) {
  const t = l.trim().split(/\s+/);
  if (t.length === 3) servers[t[0] + ':' + t[1]] = +t[2];
}
const mc = new Memcached(servers, { namespace: ns, retries: 0, timeout: 5000 });
const keys = fs.readFileSync(keysPath, 'utf8').split('\n').filter(Boolean);
let i = 0, bad = 0;
function next() {
  if (i === keys.length) { mc.end(); process.exit(bad ? 1 : 0); }
  const k = keys[i++];
  mc.set(k, k, 0, (err) => { if (err) { bad++; console.error('set ' + k + ': ' + err); } next(); });
}
next();
"##;

fn php_case(env: &Env, keys: &[String], out: &mut Vec<Figures>) {
    if !runs("php", &["-r", "exit(class_exists('Memcached') ? 0 : 1);"]) {
        return skipped(
            "php-memcached",
            "php with the memcached extension not found",
        );
    }
    let script = env.dir.join("prefix.php");
    fs::write(&script, PHP).expect("write php driver");
    let keys_file = write_keys(env, keys);
    for (prefix, hash_with) in [("php:", false), ("phph:", true)] {
        env.flush();
        run(
            "php driver",
            Command::new("php")
                .arg(&script)
                .arg(&env.servers_file)
                .arg(&keys_file)
                .arg(prefix)
                .arg(if hash_with { "1" } else { "0" }),
        );
        let case = format!(
            "php-memcached OPT_PREFIX_KEY{}",
            if hash_with {
                " + OPT_HASH_WITH_PREFIX_KEY"
            } else {
                ""
            }
        );
        out.push(check(
            env,
            &case,
            prefix,
            keys,
            Settings {
                flavor: Flavor::Libmemcached,
                hash: Some(KeyHash::Md5),
                peer_config: None,
                prefix: Some(prefix),
                hash_with_prefix: hash_with,
            },
        ));
    }
}

/// The C driver, built once per run with `cc -lmemcached`.
fn lmc_binary(dir: &Path) -> Option<PathBuf> {
    if !require("cc") {
        return None;
    }
    let src = dir.join("prefix_set.c");
    fs::write(&src, LMC).expect("write C driver");
    let bin = dir.join("prefix_set");
    let out = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .arg("-lmemcached")
        .output()
        .expect("run cc");
    if !out.status.success() {
        skipped(
            "libmemcached",
            &format!(
                "the driver does not build (libmemcached-dev?): {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        );
        return None;
    }
    Some(bin)
}

fn lmc_cases(env: &Env, keys: &[String], out: &mut Vec<Figures>) {
    let Some(bin) = lmc_binary(&env.dir) else {
        return;
    };
    let keys_file = write_keys(env, keys);
    let set = |cfg: &str, ns: &str, hash_with: &str| {
        env.flush();
        let stdin = fs::File::open(&keys_file).expect("keys");
        let out = Command::new(&bin)
            .args([cfg, ns, hash_with])
            .stdin(stdin)
            .output()
            .expect("run the libmemcached driver");
        assert!(
            out.status.success(),
            "libmemcached driver {cfg:?} {ns:?} {hash_with:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // A configuration string: memshard reads the same string.
    for (ns, extra) in [
        ("cfg:", "--NAMESPACE=\"cfg:\""),
        ("cfgh:", "--NAMESPACE=\"cfgh:\" --HASH-WITH-NAMESPACE"),
    ] {
        let cfg = env.lmc_config(extra);
        set(&cfg, "-", "-");
        out.push(check(
            env,
            &format!("libmemcached config {extra}"),
            ns,
            keys,
            Settings {
                flavor: Flavor::Libmemcached,
                hash: None,
                peer_config: Some(cfg.clone()),
                prefix: None,
                hash_with_prefix: extra.contains("HASH-WITH"),
            },
        ));
    }
    // The callback and the behavior, set through the API.
    for (ns, hash_with) in [("cb:", false), ("cbh:", true)] {
        set(&env.lmc_config(""), ns, if hash_with { "1" } else { "0" });
        out.push(check(
            env,
            &format!(
                "libmemcached MEMCACHED_CALLBACK_NAMESPACE{}",
                if hash_with {
                    " + BEHAVIOR_HASH_WITH_PREFIX_KEY"
                } else {
                    ""
                }
            ),
            ns,
            keys,
            Settings {
                flavor: Flavor::Libmemcached,
                hash: Some(KeyHash::Md5),
                peer_config: None,
                prefix: Some(ns),
                hash_with_prefix: hash_with,
            },
        ));
    }
}

fn pylibmc_case(env: &Env, keys: &[String], out: &mut Vec<Figures>) {
    let python = "/usr/bin/python3";
    if !runs(python, &["-c", "import pylibmc"]) {
        return skipped("pylibmc", "/usr/bin/python3 cannot import pylibmc");
    }
    env.flush();
    let keys_file = write_keys(env, keys);
    run(
        "pylibmc driver",
        Command::new(python)
            .args(["-c", PYLIBMC])
            .arg(&env.servers_file)
            .arg(&keys_file)
            .arg("py:"),
    );
    out.push(check(
        env,
        "pylibmc set_multi(key_prefix=)",
        "py:",
        keys,
        Settings {
            flavor: Flavor::Libmemcached,
            hash: Some(KeyHash::Md5),
            peer_config: None,
            prefix: Some("py:"),
            hash_with_prefix: true,
        },
    ));
}

fn dalli_case(env: &Env, keys: &[String], out: &mut Vec<Figures>) {
    if !runs("ruby", &["-e", "require 'dalli'"]) {
        return skipped(
            "dalli",
            "ruby cannot require 'dalli' (apt-get install ruby-dalli)",
        );
    }
    env.flush();
    let keys_file = write_keys(env, keys);
    run(
        "dalli driver",
        Command::new("ruby")
            .args(["-e", DALLI])
            .arg(&env.servers_file)
            .arg(&keys_file)
            .arg("dal"),
    );
    // dalli writes `namespace + ":" + key` (key_manager.rb:64).
    out.push(check(
        env,
        "dalli namespace: \"dal\"",
        "dal:",
        keys,
        Settings {
            flavor: Flavor::Dalli,
            hash: None,
            peer_config: None,
            prefix: Some("dal:"),
            hash_with_prefix: true,
        },
    ));
}

fn node_case(env: &Env, keys: &[String], out: &mut Vec<Figures>) {
    // The copy scripts/test.sh installs (pinned by tests/values/package-lock.json).
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/values/node_modules/memcached");
    if !runs("node", &["--version"]) {
        return skipped("node memcached", "node is not installed");
    }
    if !module.join("package.json").is_file() {
        return skipped(
            "node memcached",
            "tests/values/node_modules lacks memcached (scripts/test.sh installs it)",
        );
    }
    env.flush();
    let keys_file = write_keys(env, keys);
    run(
        "node driver",
        Command::new("node")
            .args(["-e", NODE])
            .arg(&module)
            .arg(&env.servers_file)
            .arg(&keys_file)
            .arg("nd:"),
    );
    out.push(check(
        env,
        "node memcached namespace",
        "nd:",
        keys,
        Settings {
            flavor: Flavor::NodeHashring,
            hash: None,
            peer_config: None,
            prefix: Some("nd:"),
            hash_with_prefix: true,
        },
    ));
}

fn twemproxy_case(env: &Env, keys: &[String], out: &mut Vec<Figures>) {
    if !require("nutcracker") {
        return;
    }
    env.flush();
    let nutcracker = Nutcracker::start(1, |listen| {
        let mut yml = format!(
            "prefix:\n  listen: {}\n  distribution: ketama\n  hash: md5\n  timeout: 5000\n  \
             auto_eject_hosts: false\n  server_connections: 1\n  servers:\n",
            listen[0]
        );
        for (s, w) in env.servers.iter().zip(WEIGHTS) {
            yml += &format!("    - \"{}:{w}\"\n", s.addr());
        }
        yml
    });
    // twemproxy has no prefix setting: the application writes `tw:` + key through it.
    let items: Vec<(String, String)> = keys
        .iter()
        .map(|k| (format!("tw:{k}"), k.clone()))
        .collect();
    Text::open(nutcracker.listen()).store_all(&items);
    out.push(check(
        env,
        "twemproxy (the application's prefix)",
        "tw:",
        keys,
        Settings {
            flavor: Flavor::Twemproxy,
            hash: Some(KeyHash::Md5),
            peer_config: None,
            prefix: Some("tw:"),
            hash_with_prefix: true,
        },
    ));
}

#[test]
fn memshard_reads_what_each_peer_stored_under_its_prefix() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (1..=4)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 15, i), 0, ""))
        .collect();
    let dir =
        Scratch(std::env::temp_dir().join(format!("memshard-prefix-live-{}", std::process::id())));
    fs::create_dir_all(&dir.0).expect("scratch dir");
    let servers_file = dir.0.join("servers.txt");
    let text: String = servers
        .iter()
        .zip(WEIGHTS)
        .map(|(s, w)| format!("{} {} {w}\n", s.ip, s.port))
        .collect();
    fs::write(&servers_file, text).expect("write servers");
    let env = Env {
        servers,
        dir: dir.0.clone(),
        servers_file,
    };
    let keys = keys();
    assert_eq!(keys.iter().collect::<HashSet<_>>().len(), N);

    let mut figures = Vec::new();
    php_case(&env, &keys, &mut figures);
    lmc_cases(&env, &keys, &mut figures);
    pylibmc_case(&env, &keys, &mut figures);
    dalli_case(&env, &keys, &mut figures);
    node_case(&env, &keys, &mut figures);
    twemproxy_case(&env, &keys, &mut figures);

    let bad: Vec<String> = figures
        .iter()
        .filter(|f| {
            (f.hits, f.right_value, f.same_server) != (N, N, N)
                || f.other_hits != f.other_same_server
                || f.other_hits >= N
        })
        .map(|f| {
            format!(
                "{} (wire prefix {:?}): {} hits, {} same value, {} same server, {} hits with \
                 hash_with_prefix flipped",
                f.case, f.wire_prefix, f.hits, f.right_value, f.same_server, f.other_hits
            )
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}
