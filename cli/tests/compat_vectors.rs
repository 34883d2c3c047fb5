//! Every case in compat-vectors/ (made by running the real peers; see each folder's README)
//! must come out of `memshard route` byte for byte.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Case {
    dir: PathBuf,
    meta: BTreeMap<String, String>,
}

/// Every peer folder and the number of cases and keys it holds (README's totals: 396 cases,
/// 396,119 keys). A folder or case that goes missing, or appears unlisted, fails the test.
const PEERS: &[(&str, usize, usize)] = &[
    ("aws-java-ketama", 17, 17_076),
    ("dalli", 18, 18_065),
    ("gomemcache", 12, 12_000),
    ("libketama", 29, 29_000),
    ("libmemcached", 60, 60_000),
    ("node-hashring", 30, 30_000),
    ("php-memcached", 16, 16_000),
    ("php-memcached-modula", 25, 25_000),
    ("pylibmc", 10, 10_000),
    ("pylibmc-modula", 17, 17_000),
    ("pymemcache", 24, 24_000),
    ("spymemcached", 32, 32_118),
    ("spymemcached-modula", 23, 23_460),
    ("twemproxy", 50, 49_400),
    ("uhashring", 33, 33_000),
];

/// Folders of compat-vectors/ that hold no route cases of their own: aws-discovery's cases are
/// discovery replies, checked through `route --discover` by `managed_live.rs`.
const NOT_PEERS: &[&str] = &["aws-discovery", "published", "shared-tools"];

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat-vectors");
    let mut out = Vec::new();
    for peer in std::fs::read_dir(&root).expect("compat-vectors/ exists") {
        let peer = peer.expect("dir entry").path();
        if !peer.is_dir() {
            continue;
        }
        let name = peer.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        if NOT_PEERS.contains(&name.as_str()) {
            continue;
        }
        assert!(
            PEERS.iter().any(|p| p.0 == name),
            "compat-vectors/{name} is not listed in PEERS"
        );
        let cases_dir = peer.join("cases");
        let entries = std::fs::read_dir(&cases_dir)
            .unwrap_or_else(|e| panic!("{}: {e}", cases_dir.display()));
        for e in entries {
            let dir = e.expect("dir entry").path();
            let meta_text = std::fs::read_to_string(dir.join("meta.txt"))
                .unwrap_or_else(|e| panic!("{}: meta.txt: {e}", dir.display()));
            let meta = meta_text
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect();
            out.push(Case { dir, meta });
        }
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

fn run_case(c: &Case) -> Result<usize, String> {
    let expected = std::fs::read(c.dir.join("expected.tsv")).map_err(|e| e.to_string())?;
    let mut keys = Vec::with_capacity(expected.len());
    for line in expected.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let tab = line
            .iter()
            .rposition(|&b| b == b'\t')
            .ok_or("line without TAB")?;
        keys.extend_from_slice(&line[..tab]);
        keys.push(b'\n');
    }
    let flavor = c.meta.get("flavor").ok_or("meta.txt has no flavor=")?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memshard"));
    cmd.arg("route")
        .arg("--servers")
        .arg(c.dir.join("servers.txt"))
        .arg("--flavor")
        .arg(flavor);
    if let Some(h) = c.meta.get("hash") {
        cmd.arg("--hash").arg(h);
    }
    if let Some(t) = c.meta.get("hash_tag") {
        cmd.arg("--hash-tag").arg(t);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let writer = std::thread::spawn(move || stdin.write_all(&keys));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    writer
        .join()
        .map_err(|_| "writer panicked")?
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "exit {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if out.stdout == expected {
        return Ok(expected
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count());
    }
    let got: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').collect();
    let want: Vec<&[u8]> = expected.split(|&b| b == b'\n').collect();
    let diffs: Vec<String> = want
        .iter()
        .zip(got.iter().chain(std::iter::repeat(&&b""[..])))
        .filter(|(w, g)| w != g)
        .take(5)
        .map(|(w, g)| {
            format!(
                "  want {:?}\n  got  {:?}",
                String::from_utf8_lossy(w),
                String::from_utf8_lossy(g)
            )
        })
        .collect();
    let n = want.iter().zip(got.iter()).filter(|(w, g)| w != g).count();
    Err(format!(
        "{n} lines differ, first ones:\n{}",
        diffs.join("\n")
    ))
}

#[test]
fn every_compat_vector_case() {
    let cases = cases();
    let mut failures = Vec::new();
    let mut per_peer: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in &cases {
        let peer = c
            .dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        match run_case(c) {
            Ok(keys) => {
                let e = per_peer.entry(peer).or_default();
                e.0 += 1;
                e.1 += keys;
            }
            Err(e) => failures.push(format!("{}: {e}", c.dir.display())),
        }
    }
    for (peer, (n, keys)) in &per_peer {
        println!("{peer}: {n} cases, {keys} keys agree");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let agreed: Vec<(&str, usize, usize)> = per_peer
        .iter()
        .map(|(p, &(n, k))| (p.as_str(), n, k))
        .collect();
    assert_eq!(agreed, PEERS, "cases and keys per peer");
}
