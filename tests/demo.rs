//! `memshard demo`: real memcached servers on loopback, ketama against modulo after adding a
//! server, and nothing left running afterwards.

mod common;

use common::servers::require;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

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

/// Every `127.0.0.1:PORT` the demo printed as a started server.
fn started_addrs(out: &str) -> Vec<SocketAddr> {
    out.lines()
        .filter_map(|l| l.split("started memcached ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|a| {
            a.parse()
                .unwrap_or_else(|e| panic!("bad address {a:?}: {e}"))
        })
        .collect()
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
    let addrs = started_addrs(&stdout);
    assert_eq!(addrs.len(), 5, "expected 5 started servers:\n{stdout}");
    let total = stdout
        .lines()
        .find(|l| l.starts_with("total"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no total line:\n{stdout}"));
    assert_eq!(total, "2000", "keys per server must add up:\n{stdout}");

    // Everything it started is stopped by the time it exits.
    for a in addrs {
        assert!(
            TcpStream::connect_timeout(&a, Duration::from_millis(500)).is_err(),
            "memcached on {a} is still accepting connections after the demo exited"
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
