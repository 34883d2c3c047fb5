//! Shared test helpers: where the vectors live, and running the `memshard` binary.
//! Used by the library's tests (`tests/`) and the CLI's (`cli/tests/`, through `#[path]`).
#![allow(dead_code)]

pub mod drivers;
pub mod libmemcached;
pub mod proxy;
pub mod servers;
pub mod silent;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// `rel` below the repository's root, as a string for a command line.
pub fn repo_file(rel: &str) -> String {
    path_string(&repo_root().join(rel))
}

/// A path as a command-line argument: the tests only make UTF-8 paths.
pub fn path_string(p: &Path) -> String {
    p.to_str().expect("UTF-8 path").to_owned()
}

/// Whether `program args` exits with success, its output thrown away: probes for a peer or a
/// module, which must not wait on the test's standard input.
pub fn runs(program: impl AsRef<OsStr>, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// [`skip`] where the caller hands back what it could not make.
pub fn missing<T>(what: &str, why: &str) -> Option<T> {
    skip(what, why);
    None
}

/// Lower-case hex, as the peers' drivers take keys and values on their command lines.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes [`hex`] spells; anything else fails the test.
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|_| panic!("hex {s:?}")))
        .collect()
}

/// `memshard-NAME-PID` in the system's temporary directory, emptied on creation (a crashed run
/// of the same pid leaves nothing behind) and removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("memshard-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `name` in the directory: its path, for a command line.
    pub fn file(&self, name: &str, text: &str) -> String {
        write_file(&self.0, name, text)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `text` to `dir/name`: its path, for a command line.
pub fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    path_string(&p)
}

/// A file in the system's temporary directory, removed on drop; the counter keeps the files
/// one test binary makes from meeting, the pid those of two binaries.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(name: &str, text: &str) -> TempFile {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("memshard-{}-{n}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        TempFile(p)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
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
