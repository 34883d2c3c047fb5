//! Shared test helpers: where the vectors live, and running the `memshard` binary.
//! Used by the library's tests (`tests/`) and the CLI's (`cli/tests/`, through `#[path]`).
#![allow(dead_code)]

pub mod libmemcached;
pub mod proxy;
pub mod servers;
pub mod silent;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A test that cannot run here because `what` is missing: a failure when `CI` is set (the
/// project's scripts install everything the tests use), else a `SKIPPED` line on the real
/// stderr, seen without `--nocapture`: libtest captures `eprintln!`, not a direct write.
pub fn skip(what: &str, why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{what} is not available ({why}); scripts/test.sh must install it");
    }
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {what}: {why} (scripts/test.sh installs it; under CI=true this fails)"
    );
}

/// The repository's root, where compat-vectors/ and the fixtures live: the library's manifest
/// directory, the parent of the CLI's (`cli/`).
pub fn repo_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    if env!("CARGO_PKG_NAME") == "memshard" {
        dir.to_path_buf()
    } else {
        dir.parent().expect("cli/ has a parent").to_path_buf()
    }
}

/// The upstream projects' own test tables, kept in the repository
/// (`compat-vectors/published/`, sources and licences in its README).
pub fn published_dir() -> PathBuf {
    repo_root().join("compat-vectors/published")
}

pub fn published_json(rel: &str) -> serde_json::Value {
    let p = published_dir().join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn published_text(rel: &str) -> String {
    let p = published_dir().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A value that names its key and the version written, padded by the version: a value read
/// back for another key, or a version never written, is caught by [`decode`].
pub fn value_for(key: &str, version: u64) -> String {
    format!("{key}|{version}|{}", "p".repeat((version % 64) as usize))
}

/// The key and version a [`value_for`] value encodes.
pub fn decode(v: &[u8]) -> Option<(String, u64)> {
    let s = std::str::from_utf8(v).ok()?;
    let mut parts = s.splitn(3, '|');
    let key = parts.next()?.to_string();
    let version = parts.next()?.parse().ok()?;
    let pad = parts.next()?;
    (pad.len() == (version % 64) as usize && pad.bytes().all(|b| b == b'p'))
        .then_some((key, version))
}

/// Polls `done` (every few milliseconds) until it holds and returns how long that took; fails
/// only if it never holds within `deadline`, which is meant to be generous: the wait is for a
/// state, not a timing bound.
pub fn wait_until(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < deadline,
            "{what}: not reached within {deadline:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    t.elapsed()
}

/// One committed compat-vectors case (made by running the peer, see its README).
pub struct CompatCase {
    /// servers.txt as committed.
    pub servers: String,
    /// meta.txt's `key=value` lines.
    pub meta: std::collections::HashMap<String, String>,
    /// expected.tsv: each key and the address the peer picked, in file order.
    pub expected: Vec<(Vec<u8>, String)>,
}

/// `compat-vectors/<rel>` (e.g. `libmemcached/cases/w-ipv6`).
pub fn compat_case(rel: &str) -> CompatCase {
    let dir = repo_root().join("compat-vectors").join(rel);
    let read = |f: &str| {
        std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{}/{f}: {e}", dir.display()))
    };
    let text = |f: &str| String::from_utf8(read(f)).expect("UTF-8");
    let meta = text("meta.txt")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let expected = read("expected.tsv")
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let tab = l.iter().rposition(|&b| b == b'\t').expect("KEY<TAB>ADDR");
            let addr = String::from_utf8(l[tab + 1..].to_vec()).expect("UTF-8 address");
            (l[..tab].to_vec(), addr)
        })
        .collect();
    CompatCase {
        servers: text("servers.txt"),
        meta,
        expected,
    }
}
