//! Every route case in compat-vectors/ (each made by running a real peer; see FORMAT.md there)
//! through the library's own API: `parse_server_list`, `Ring::with_options`, then `route` key by
//! key and `route_each` over the whole batch, against the server the peer chose.
//! `cli/tests/compat_vectors.rs` checks the same cases through `memshard route`; this one needs
//! no binary, so the ring's mutation runs (`scripts/mutants.sh ring`) can use it.

use memshard::{Flavor, HashTag, KeyHash, Ring, parse_server_list};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn cases_of(peer: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("compat-vectors")
        .join(peer)
        .join("cases");
    let mut cases: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "{}: no case", dir.display());
    cases
}

fn meta(case: &Path) -> BTreeMap<String, String> {
    fs::read_to_string(case.join("meta.txt"))
        .expect("meta.txt")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The ring a case describes, and each server's address as its servers.txt line writes it.
fn ring_of(case: &Path) -> (Ring, Vec<String>) {
    let text = fs::read_to_string(case.join("servers.txt")).expect("servers.txt");
    let servers = parse_server_list(&text).expect("servers.txt parses");
    let addrs: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(addrs.len(), servers.len(), "{}", case.display());
    let m = meta(case);
    let flavor: Flavor = m["flavor"].parse().expect("flavor");
    let hash: Option<KeyHash> = m.get("hash").map(|h| h.parse().expect("hash"));
    let tag: Option<HashTag> = m.get("hash_tag").map(|t| t.parse().expect("hash_tag"));
    let ring = Ring::with_options(servers, flavor, hash, tag)
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    (ring, addrs)
}

/// Checks every case of `peer` and returns the number of keys checked.
fn check(peer: &str) -> usize {
    let mut total = 0;
    for case in cases_of(peer) {
        let (ring, addrs) = ring_of(&case);
        let expected = fs::read(case.join("expected.tsv")).expect("expected.tsv");
        let rows: Vec<(&[u8], &str)> = expected
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let tab = l.iter().rposition(|&b| b == b'\t').expect("KEY<TAB>ADDR");
                let addr = std::str::from_utf8(&l[tab + 1..]).expect("ADDR is text");
                (&l[..tab], addr)
            })
            .collect();
        let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| *k).collect();
        let mut batch = vec![usize::MAX; keys.len()];
        ring.route_each(&keys, |i, s| batch[i] = s);
        for (i, (key, want)) in rows.iter().enumerate() {
            let one = ring.route(key).expect("a built ring routes every key");
            assert_eq!(
                addrs[one],
                *want,
                "{}: key {:?}",
                case.display(),
                String::from_utf8_lossy(key)
            );
            assert_eq!(batch[i], one, "{}: route_each, key {i}", case.display());
        }
        total += rows.len();
    }
    total
}

// One test per peer: nextest runs them side by side, and a failure names the peer. The counts
// are README's (compat-vectors/README.md), so a case that goes missing fails too.

#[test]
fn aws_java_ketama() {
    assert_eq!(check("aws-java-ketama"), 17_076);
}

#[test]
fn dalli() {
    assert_eq!(check("dalli"), 18_065);
}

#[test]
fn gomemcache() {
    assert_eq!(check("gomemcache"), 12_000);
}

#[test]
fn libketama() {
    assert_eq!(check("libketama"), 29_000);
}

#[test]
fn libmemcached() {
    assert_eq!(check("libmemcached"), 60_000);
}

#[test]
fn node_hashring() {
    assert_eq!(check("node-hashring"), 30_000);
}

#[test]
fn php_memcached() {
    assert_eq!(check("php-memcached"), 16_000);
}

#[test]
fn php_memcached_modula() {
    assert_eq!(check("php-memcached-modula"), 25_000);
}

#[test]
fn pylibmc() {
    assert_eq!(check("pylibmc"), 10_000);
}

#[test]
fn pylibmc_modula() {
    assert_eq!(check("pylibmc-modula"), 17_000);
}

#[test]
fn pymemcache() {
    assert_eq!(check("pymemcache"), 24_000);
}

#[test]
fn spymemcached() {
    assert_eq!(check("spymemcached"), 32_118);
}

#[test]
fn spymemcached_modula() {
    assert_eq!(check("spymemcached-modula"), 23_460);
}

#[test]
fn twemproxy() {
    assert_eq!(check("twemproxy"), 49_400);
}

#[test]
fn uhashring() {
    assert_eq!(check("uhashring"), 33_000);
}

/// compat-vectors/pymemcache/ranking/: the order in which pymemcache's own `RendezvousHash`
/// picks every server for a key as each pick is removed, against `distinct_servers` (and
/// `route`, its first). The first key of each case ties two servers for the same score: the
/// greater node string must come first whatever the list order, in the pick and in the
/// ranking.
#[test]
fn pymemcache_ranking_with_ties() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat-vectors/pymemcache/ranking");
    let mut cases: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    cases.sort();
    let (mut keys, mut ties) = (0, 0);
    for case in &cases {
        let (ring, addrs) = ring_of(case);
        let expected = fs::read_to_string(case.join("expected.tsv")).expect("expected.tsv");
        for (n, line) in expected.lines().enumerate() {
            let (key, order) = line.split_once('\t').expect("KEY<TAB>NODES");
            let want: Vec<&str> = order.split(' ').collect();
            let got: Vec<&str> = ring
                .distinct_indexes(key.as_bytes())
                .map(|i| addrs[i].as_str())
                .collect();
            assert_eq!(got, want, "{}: key {key:?}", case.display());
            let one = ring
                .route(key.as_bytes())
                .expect("a built ring routes every key");
            assert_eq!(addrs[one], want[0], "{}: key {key:?}", case.display());
            ties += usize::from(n == 0);
            keys += 1;
        }
    }
    // the cases README.md names, none gone missing
    assert_eq!((cases.len(), keys, ties), (5, 1000, 5));
}
