//! A peer at its defaults, named once, live: php-memcached as its users get it with
//! `new Memcached()` and `addServer()` (the driver `tests/defaults/php_defaults.php`, which
//! checks that its distribution is modula and its hash the default) writes [`N`] keys to four
//! real memcached servers on free ports of 127.0.0.1. Then:
//!
//! - a client built with `Builder::peer(Peer::PhpMemcached)` reads all [`N`], values equal;
//! - `memshard get --peer php-memcached` does too;
//! - a client at memshard's default flavor (`libmemcached`, which is php-memcached's ketama
//!   mode) reads fewer: the trap the profile exists for, shown (its count is printed);
//! - `--flavor php-memcached` prints one warning naming both choices;
//! - a PHP array php-memcached stored (`serialize()`, flags 4), read from the right server with
//!   the default codec, is an error naming the php-memcached codec; with the profile it reads as the array.
//!
//! A missing php-memcached is SKIPPED (printed), or a failure when `CI` is set.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::servers::{Cluster, program};
use common::{TempDir, hex};
use memshard::peer::Peer;
use memshard::value::{Value, ValueError};
use memshard::{Client, Error};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use support::{memshard_in, parts};

/// Keys the PHP app writes.
const N: usize = 200;

fn php() -> Option<PathBuf> {
    let skip = |why: &str| {
        common::skip("php-memcached", why);
        None
    };
    let Some(php) = program("php") else {
        return skip("php is not installed");
    };
    let loaded = Command::new(&php)
        .args(["-r", "exit(extension_loaded('memcached') ? 0 : 1);"])
        .status()
        .is_ok_and(|s| s.success());
    if !loaded {
        return skip("php's memcached extension is not loaded");
    }
    Some(php)
}

/// Runs the defaults driver (`write` mode) with `lines` on its standard input; every line of
/// its answer must be `KEYHEX ok`.
fn php_writes(php: &PathBuf, specs: &[String], items: &[(String, String)]) {
    let driver = common::repo_root().join("tests/defaults/php_defaults.php");
    let mut child = Command::new(php)
        .arg(driver)
        .arg("write")
        .args(specs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the php driver");
    let mut input = String::new();
    for (k, v) in items {
        input.push_str(&format!("{} {}\n", hex(k.as_bytes()), hex(v.as_bytes())));
    }
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to the driver");
    let out = child.wait_with_output().expect("driver output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = text.lines().filter(|l| l.ends_with(" ok")).count();
    assert_eq!(ok, items.len(), "{text}");
}

fn keys() -> Vec<(String, String)> {
    (0..N)
        .map(|i| {
            let k = format!("peer-live:{i}");
            let v = common::value_for(&k, 1);
            (k, v)
        })
        .collect()
}

/// How many of `items` `client` reads back with the same value.
fn found(client: &Client, items: &[(String, String)]) -> usize {
    items
        .iter()
        .filter(|(k, v)| {
            client
                .get(k)
                .ok()
                .flatten()
                .is_some_and(|item| item.value == v.as_bytes())
        })
        .count()
}

fn memshard(args: &[&str], stdin: &str) -> (i32, String, String) {
    parts(&memshard_in(args, stdin.as_bytes()))
}

#[test]
fn php_memcached_at_its_defaults_is_read_whole_by_its_profile() {
    let Some(php) = php() else { return };
    let cluster = Cluster::on_free_ports(&[1, 1, 1, 1]);
    let addrs: Vec<String> = cluster.servers.iter().map(|s| s.addr()).collect();
    let specs: Vec<String> = addrs.iter().map(|a| format!("{a}:1")).collect();
    let items = keys();
    php_writes(&php, &specs, &items);

    let servers = addrs.join("\n");
    let builder = || {
        Client::builder()
            .server_list(&servers)
            .expect("server list")
    };
    let profile = builder().peer(Peer::PhpMemcached).build().expect("client");
    let mut equal = 0;
    for (k, v) in &items {
        let got: Option<String> = profile.get_as(k).expect("get_as");
        equal += usize::from(got.as_deref() == Some(v.as_str()));
    }
    let default = builder().build().expect("client");
    let trap = found(&default, &items);
    println!("peer php-memcached: {equal}/{N} with the profile, {trap}/{N} at the default flavor");
    assert_eq!(equal, N);
    assert!(trap < N, "the default flavor read all {N}: no trap shown");

    // The command line, keys on standard input.
    let dir = TempDir::new("peer-live");
    let list = &dir.file("servers.txt", &format!("{servers}\n"));
    let stdin: String = items.iter().map(|(k, _)| format!("{k}\n")).collect();
    let (code, out, err) = memshard(
        &["get", "--servers", list, "--peer", "php-memcached"],
        &stdin,
    );
    assert_eq!(code, 0, "{err}");
    let expected: String = items.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
    assert_eq!(out, expected, "{err}");
    assert!(
        err.contains(&format!("{N} hits, 0 misses, 0 errors")),
        "{err}"
    );
    // The alias: still the ketama mode, said once, with both ways out.
    let (_, _, err) = memshard(
        &["get", "--servers", list, "--flavor", "php-memcached"],
        &stdin,
    );
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("ketama mode")
            && warnings[0].contains("libmemcached-modula")
            && warnings[0].contains("--peer php-memcached"),
        "{err}"
    );

    // A PHP array, as php-memcached stores it at its defaults: serialize(), flags 4.
    let set_array = "$m = new Memcached(); \
                     foreach (array_slice($argv, 1) as $a) { [$h, $p] = explode(':', $a); $m->addServer($h, (int)$p); } \
                     exit($m->set('peer-live:array', ['a' => 1, 'b' => [1, 2]]) ? 0 : 1);";
    let stored = Command::new(&php)
        .args(["-r", set_array, "--"])
        .args(&addrs)
        .status()
        .expect("php");
    assert!(stored.success());
    let raw = profile
        .get("peer-live:array")
        .expect("get")
        .expect("stored");
    assert_eq!(raw.flags, 4);
    // Placed right (php-memcached's modula), read with the default codec.
    let placed = builder()
        .flavor(memshard::Flavor::LibmemcachedModula)
        .build()
        .expect("client");
    let e = placed
        .get_value("peer-live:array")
        .expect_err("the default codec must not read PHP's serialize()");
    let text = e.to_string();
    println!("default codec on a PHP array: {text}");
    assert!(
        matches!(
            &e,
            Error::Value {
                source: ValueError::OtherPeer { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(text.contains("use the php-memcached codec"), "{text}");
    assert!(text.len() < 200, "{text}");
    let v = profile.get_value("peer-live:array").expect("get_value");
    let expected = serde_json::json!({"a": 1, "b": [1, 2]});
    assert_eq!(v, Some(Value::Json(expected)));
}
