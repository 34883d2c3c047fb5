//! The real libmemcached's placement: compat-vectors/libmemcached/harness (libmemcached 1.1.4
//! through `memcached_generate_hash`, no server contacted), built with `cc` once per source
//! version. What php-memcached and pylibmc pick, for expectations no memshard code computes.
#![allow(dead_code)]

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The built harness; `None` (with a SKIPPED line) when `cc` or libmemcached is missing outside
/// CI. Under CI a missing peer is a failure.
fn harness() -> Option<&'static Path> {
    static H: OnceLock<Option<PathBuf>> = OnceLock::new();
    H.get_or_init(build).as_deref()
}

fn build() -> Option<PathBuf> {
    if !super::servers::require("cc") {
        return None;
    }
    let src = super::repo_root().join("compat-vectors/libmemcached/harness/libmemcached_route.c");
    let text = std::fs::read(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    // One binary per source version, shared by test binaries; built under a private name and
    // renamed into place, so nobody runs a half-written file.
    let bin = std::env::temp_dir().join(format!("memshard-libmemcached-route-{:016x}", h.finish()));
    if bin.is_file() {
        return Some(bin);
    }
    let tmp = bin.with_extension(format!("build-{}", std::process::id()));
    let out = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-lmemcached")
        .output()
        .expect("run cc");
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        super::skip(
            "libmemcached",
            &format!("the harness does not build (libmemcached-dev missing?):\n{why}"),
        );
        return None;
    }
    std::fs::rename(&tmp, &bin).expect("move the harness into place");
    Some(bin)
}

/// The server libmemcached (weighted ketama, `KETAMA_WEIGHTED`) picks for each key in
/// `server_list` (`HOST:PORT [WEIGHT]` lines): the address as written there, in key order.
/// `None` when the harness is unavailable outside CI.
pub fn route<K: AsRef<[u8]>>(server_list: &str, keys: &[K]) -> Option<Vec<String>> {
    route_flavor("libmemcached", server_list, keys)
}

/// As [`route`], for `flavor` libmemcached, libmemcached-spy or libmemcached-unweighted.
pub fn route_flavor<K: AsRef<[u8]>>(
    flavor: &str,
    server_list: &str,
    keys: &[K],
) -> Option<Vec<String>> {
    let bin = harness()?;
    static N: AtomicUsize = AtomicUsize::new(0);
    let file = std::env::temp_dir().join(format!(
        "memshard-lmc-servers-{}-{}.txt",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&file, server_list).expect("write the server list");
    let mut input = Vec::new();
    for k in keys {
        let k = k.as_ref();
        assert!(
            !k.is_empty() && !k.contains(&b'\n') && !k.ends_with(b"\r"),
            "key {:?} cannot be one input line",
            String::from_utf8_lossy(k)
        );
        input.extend_from_slice(k);
        input.push(b'\n');
    }
    let mut child = Command::new(bin)
        .arg("--servers")
        .arg(&file)
        .args(["--flavor", flavor])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the libmemcached harness");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("harness output");
    writer.join().expect("writer").expect("write keys");
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "libmemcached harness: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&[u8]> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), keys.len(), "one answer per key");
    Some(
        lines
            .iter()
            .zip(keys)
            .map(|(l, k)| {
                let tab = l.iter().rposition(|&b| b == b'\t').expect("KEY<TAB>ADDR");
                assert_eq!(&l[..tab], k.as_ref(), "answers in key order");
                String::from_utf8(l[tab + 1..].to_vec()).expect("address is UTF-8")
            })
            .collect(),
    )
}
