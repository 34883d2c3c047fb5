//! `memshard demo`: real memcached servers on loopback, ketama against modulo after adding a
//! server (the measured hits equal to what libmemcached's placement predicts), and nothing left
//! running afterwards.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::servers::require;
use md5::{Digest, Md5};
use std::process::Command;

/// The percentage printed on the line starting with `name: `.
fn ratio(out: &str, name: &str) -> f64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no `{name}:` line in the demo output:\n{out}"));
    let rest = &line[name.len() + 2..];
    let pct = rest
        .split('%')
        .next()
        .unwrap_or_else(|| panic!("no percentage in {line:?}"));
    let v: f64 = pct
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("bad percentage in {line:?}: {e}"));
    assert!(
        line.contains("still hit after adding a server"),
        "unexpected line {line:?}"
    );
    v / 100.0
}

/// Every `127.0.0.1:PORT` the demo printed as a started server, with its pid.
fn started(out: &str) -> Vec<(String, u32)> {
    out.lines()
        .filter_map(|l| l.split("started memcached ").nth(1))
        .map(|rest| {
            let (addr, pid) = rest
                .split_once(" (pid ")
                .unwrap_or_else(|| panic!("no pid in {rest:?}"));
            let pid = pid
                .trim_end_matches(')')
                .parse()
                .unwrap_or_else(|e| panic!("bad pid in {rest:?}: {e}"));
            (addr.to_string(), pid)
        })
        .collect()
}

/// The measured hits on the line starting with `name: ` (`[hits/total ...`).
fn hits(out: &str, name: &str) -> usize {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no `{name}:` line:\n{out}"));
    let inner = line.rsplit_once('[').map(|(_, r)| r).unwrap_or("");
    inner
        .split('/')
        .next()
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("no [hits/total in {line:?}"))
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("");
        state != "Z" && state != "X"
    })
}

/// The server of `n` that md5 modulo `n` picks (libmemcached's MODULA distribution with the
/// MD5 key hash), computed here.
fn md5_modulo(key: &str, n: usize) -> usize {
    let d = Md5::digest(key.as_bytes());
    u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize % n
}

#[test]
fn demo_ketama_keeps_most_keys_modulo_loses_most() {
    if !require("memcached") {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_memshard"))
        .args(["demo", "--keys", "2000"])
        .output()
        .expect("run memshard demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "memshard demo failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    let ketama = ratio(&stdout, "ketama");
    let modulo = ratio(&stdout, "modulo");
    // What the real servers returned equals what the ring predicts without servers.
    for name in ["ketama", "modulo"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .expect("checked by ratio");
        let inner = line.rsplit_once('[').map(|(_, r)| r).unwrap_or("");
        let hits = inner.split('/').next().unwrap_or("");
        let predicted = inner
            .split("the ring predicted ")
            .nth(1)
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or_else(|| panic!("no prediction in {line:?}"));
        assert_eq!(
            hits, predicted,
            "{name}: measured hits vs the ring's prediction"
        );
    }
    assert!(
        ketama > 0.6,
        "ketama kept only {ketama} of the keys:\n{stdout}"
    );
    assert!(modulo < 0.4, "modulo kept {modulo} of the keys:\n{stdout}");

    // 4 servers, then a fifth; every key counted in the per-server table.
    let servers = started(&stdout);
    assert_eq!(servers.len(), 5, "expected 5 started servers:\n{stdout}");
    let total = stdout
        .lines()
        .find(|l| l.starts_with("total"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no total line:\n{stdout}"));
    assert_eq!(total, "2000", "keys per server must add up:\n{stdout}");

    // The figures measured on the servers are libmemcached's: keys per server (memcached's
    // curr_items), and the ketama hits after adding the fifth server; the modulo hits are md5
    // modulo the server count.
    let addrs: Vec<&str> = servers.iter().map(|(a, _)| a.as_str()).collect();
    let keys: Vec<String> = (0..2000).map(|i| format!("demo:{i}")).collect();
    let list = |n: usize| -> String { addrs[..n].iter().map(|a| format!("{a} 1\n")).collect() };
    if let Some(before) = common::libmemcached::route(&list(4), &keys) {
        let after = common::libmemcached::route(&list(5), &keys).unwrap();
        for a in &addrs[..4] {
            let row = stdout
                .lines()
                .find(|l| l.split_whitespace().next() == Some(a))
                .unwrap_or_else(|| panic!("no row for {a}:\n{stdout}"));
            let keys_on: usize = row
                .split_whitespace()
                .nth(2)
                .and_then(|k| k.parse().ok())
                .unwrap_or_else(|| panic!("no key count in {row:?}"));
            let want = before.iter().filter(|o| o == a).count();
            assert_eq!(keys_on, want, "{a}: libmemcached puts {want} keys there");
        }
        let stay = before.iter().zip(&after).filter(|(b, a)| b == a).count();
        assert_eq!(
            hits(&stdout, "ketama"),
            stay,
            "ketama hits = keys libmemcached keeps in place"
        );
    }
    let stay = keys
        .iter()
        .filter(|k| addrs[md5_modulo(k, 4)] == addrs[md5_modulo(k, 5)])
        .count();
    assert_eq!(
        hits(&stdout, "modulo"),
        stay,
        "modulo hits = keys md5 % n keeps in place"
    );

    // Everything it started is stopped by the time it exits: each memcached process is gone.
    for (a, pid) in servers {
        assert!(
            !alive(pid),
            "memcached {a} (pid {pid}) still runs after the demo exited"
        );
    }
}

#[test]
fn demo_rejects_zero_servers() {
    let out = Command::new(env!("CARGO_BIN_EXE_memshard"))
        .args(["demo", "--servers", "0"])
        .output()
        .expect("run memshard demo");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_without_memcached_runs_its_offline_part_and_says_how_to_add_the_live_one() {
    let empty = std::env::temp_dir().join(format!("memshard-demo-nopath-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("create empty dir");
    let out = Command::new(env!("CARGO_BIN_EXE_memshard"))
        .args(["demo", "--keys", "2000"])
        .env("PATH", &empty)
        .output()
        .expect("run memshard demo");
    let _ = std::fs::remove_dir(&empty);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}");
    assert!(
        stdout.contains("memcached is not installed") && stdout.contains("bash scripts/demo.sh"),
        "stdout:\n{stdout}"
    );
    let (ketama, modulo) = (stays(&stdout, "ketama"), stays(&stdout, "modulo"));
    assert!(
        ketama.0 * 10 > ketama.1 * 6,
        "ketama kept {ketama:?}:\n{stdout}"
    );
    assert!(
        modulo.0 * 10 < modulo.1 * 4,
        "modulo kept {modulo:?}:\n{stdout}"
    );
    let total = stdout
        .lines()
        .find(|l| l.starts_with("total"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no total line:\n{stdout}"));
    assert_eq!(total, "2000", "keys per server must add up:\n{stdout}");
}

/// `[stay/total]` on the offline line starting with `name: `.
fn stays(out: &str, name: &str) -> (usize, usize) {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")) && l.contains("stay on their server"))
        .unwrap_or_else(|| panic!("no offline `{name}:` line:\n{out}"));
    let inner = line
        .rsplit_once('[')
        .and_then(|(_, r)| r.strip_suffix(']'))
        .unwrap_or_else(|| panic!("no [a/b] in {line:?}"));
    let (a, b) = inner.split_once('/').expect("a/b");
    (a.parse().expect("count"), b.parse().expect("total"))
}
