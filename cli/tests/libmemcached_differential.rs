//! Differential test: random server lists and keys, placed by the real libmemcached (through the C
//! harness in compat-vectors/libmemcached/harness) and by `memshard route`; any difference fails.
//!
//! Needs `cc` and libmemcached (Debian: libmemcached-dev). Without them the test prints a loud
//! SKIPPED line, or panics when the `CI` environment variable is set.
//! Seed: MEMSHARD_DIFF_SEED (default below); printed on failure.
//! Server counts stay within 1..=100: libmemcached 1.1.4 aborts (assertion in update_continuum)
//! for more than 100 servers in any ketama mode.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const DEFAULT_SEED: u64 = 0x6d65_6d73_6861_7264;
const CONFIGS: usize = 2000;
const KEYS_PER_CONFIG: usize = 150;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

fn build_harness() -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat-vectors/libmemcached/harness/libmemcached_route.c");
    let dir =
        std::env::temp_dir().join(format!("memshard-libmemcached-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("libmemcached_route");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lmemcached")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match status {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => {
            eprintln!(
                "harness build failed:\n{}",
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

fn random_servers(r: &mut Rng) -> String {
    let n = 1 + r.below(100) as usize;
    let mut seen = std::collections::HashSet::new();
    let mut s = String::new();
    while seen.len() < n {
        let host = match r.below(4) {
            0 | 1 => format!("10.{}.{}.{}", r.below(256), r.below(256), 1 + r.below(254)),
            2 => format!(
                "{}-{}.{}",
                r.pick(&["cache", "mc", "memcached", "node"]),
                r.below(100_000),
                r.pick(&["example.com", "svc.local", "internal"])
            ),
            _ => format!(
                "[{}::{:x}]",
                r.pick(&["2001:db8", "fd00", "fe80:1"]),
                1 + r.below(0xffff)
            ),
        };
        let port = match r.below(4) {
            0 | 1 => 11211,
            2 => *r.pick(&[11212, 11213, 22122, 1, 65535]),
            _ => 1 + r.below(65535),
        };
        let weight = match r.below(6) {
            0 | 1 => 1,
            2 => 1 + r.below(10),
            3 => 1 + r.below(1000),
            4 => *r.pick(&[1_000_000, 65_535, 21, 29, 4_000_000_000]),
            _ => 1 + r.below(100),
        };
        let addr = format!("{host}:{port}");
        if seen.insert(addr.clone()) {
            s.push_str(&format!("{addr} {weight}\n"));
        }
    }
    s
}

fn random_keys(r: &mut Rng) -> Vec<u8> {
    const UTF: &[&str] = &[
        "é", "ü", "ß", "中", "文", "日本", "한", "Ω", "Ж", "😀", "🚀", "\u{80}", "\u{7ff}",
        "\u{ffff}",
    ];
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while seen.len() < KEYS_PER_CONFIG {
        let max = if r.below(20) == 0 { 300 } else { 40 };
        let len = 1 + r.below(max) as usize;
        let mut k: Vec<u8> = Vec::with_capacity(len);
        while k.len() < len {
            match r.below(10) {
                0 | 1 => {
                    let u = *r.pick(UTF);
                    k.extend_from_slice(u.as_bytes())
                }
                2 => k.push(0x80 + r.below(0x80) as u8), // raw high byte, not UTF-8
                _ => k.push(0x21 + r.below(0x5e) as u8),
            }
        }
        if seen.insert(k.clone()) {
            out.extend_from_slice(&k);
            out.push(b'\n');
        }
    }
    out
}

fn run(bin: &Path, args: &[&str], stdin: &[u8]) -> Vec<u8> {
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
    if !out.status.success() {
        panic!(
            "{} {:?} failed ({}): {}",
            bin.display(),
            args,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.stdout
}

#[test]
fn libmemcached_differential() {
    let have_headers = Path::new("/usr/include/libmemcached-1.0/memcached.h").exists()
        || Path::new("/usr/local/include/libmemcached-1.0/memcached.h").exists();
    let harness = if have_headers { build_harness() } else { None };
    let Some(harness) = harness else {
        common::skip(
            "libmemcached_differential",
            "libmemcached (headers + library, Debian libmemcached-dev) or cc is missing",
        );
        return;
    };
    let memshard = Path::new(env!("CARGO_BIN_EXE_memshard"));
    let seed = std::env::var("MEMSHARD_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let mut r = Rng(seed | 1);
    let dir = harness.parent().unwrap().to_path_buf();
    let hashes = [
        None,
        Some("md5"),
        Some("one-at-a-time"),
        Some("crc32"),
        Some("fnv1_64"),
        Some("fnv1a_64"),
        Some("fnv1_32"),
        Some("fnv1a_32"),
        Some("murmur"),
        Some("murmur3"),
        Some("jenkins"),
    ];
    let mut failures = Vec::new();
    let mut compared = 0usize;
    for i in 0..CONFIGS {
        let servers = random_servers(&mut r);
        let flavor = *r.pick(&[
            "libmemcached",
            "libmemcached-unweighted",
            "libmemcached-spy",
        ]);
        let hash = if flavor == "libmemcached-unweighted" {
            *r.pick(&hashes)
        } else {
            None
        };
        let keys = random_keys(&mut r);
        let sp = dir.join(format!("servers-{i}.txt"));
        std::fs::write(&sp, &servers).unwrap();
        let sps = sp.to_str().unwrap();
        let mut args = vec!["--servers", sps, "--flavor", flavor];
        if let Some(h) = hash {
            args.extend(["--hash", h]);
        }
        let want = run(&harness, &args, &keys);
        let mut margs = vec!["route"];
        margs.extend(&args);
        let got = run(memshard, &margs, &keys);
        compared += keys.iter().filter(|&&b| b == b'\n').count();
        if want != got {
            let diffs: Vec<String> = want
                .split(|&b| b == b'\n')
                .zip(got.split(|&b| b == b'\n'))
                .filter(|(a, b)| a != b)
                .take(5)
                .map(|(a, b)| {
                    format!(
                        "    libmemcached: {}\n    memshard:     {}",
                        String::from_utf8_lossy(a),
                        String::from_utf8_lossy(b)
                    )
                })
                .collect();
            failures.push(format!(
                "config #{i}: flavor={flavor} hash={hash:?} servers file {} ({} lines, memshard output {} lines)\n{}",
                sp.display(), want.split(|&b| b == b'\n').count(), got.split(|&b| b == b'\n').count(), diffs.join("\n")));
            if failures.len() >= 5 {
                break;
            }
        } else {
            let _ = std::fs::remove_file(&sp);
        }
    }
    if !failures.is_empty() {
        panic!(
            "libmemcached_differential: seed={seed} (set MEMSHARD_DIFF_SEED to reproduce); differences:\n{}\n(server files kept in {})",
            failures.join("\n"),
            dir.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "libmemcached_differential: seed={seed}, {CONFIGS} server lists, {compared} keys, 0 differences"
    );
}
