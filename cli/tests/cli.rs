//! The `memshard` command line: the contract other tools call (route, get, set, delete).

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::TempFile;
use common::servers::{Cluster, require};
use std::process::{Command, Stdio};
use support::memshard_in as memshard;

fn server_file(text: &str) -> TempFile {
    TempFile::new("cli-servers.txt", text)
}

/// Each key is printed with the server the real libmemcached picked for it (committed cases:
/// IPv6 in brackets, host names, `localhost` next to 127.0.0.1, weights and ports), the address
/// spelled as in the server file, in input order: keys on standard input (LF or CRLF lines, in
/// another order than the case's) and keys as arguments. The server file also carries a
/// comment, a blank line and a server name, which libmemcached placement ignores.
#[test]
fn route_prints_the_peers_server_as_written_in_input_order() {
    use std::os::unix::ffi::OsStrExt;
    for case_name in ["w-ipv6", "w-hostnames", "w-localhost-names"] {
        let case = common::compat_case(&format!("libmemcached/cases/{case_name}"));
        assert_eq!(
            case.meta.get("flavor").map(String::as_str),
            Some("libmemcached"),
            "{case_name}: the CLI's default flavor"
        );
        assert!(!case.meta.contains_key("hash"), "{case_name}");
        assert_eq!(case.expected.len(), 1000, "{case_name}");
        let lines: Vec<&str> = case
            .servers
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        let used: std::collections::BTreeSet<&str> =
            case.expected.iter().map(|(_, a)| a.as_str()).collect();
        assert_eq!(
            used.len(),
            lines.len(),
            "{case_name}: every server owns keys"
        );
        let mut text = String::from("# cache\n\n");
        for (i, l) in lines.iter().enumerate() {
            let weight = if l.split_whitespace().count() == 1 {
                " 1"
            } else {
                ""
            };
            let name = if i == 0 { " named" } else { "" };
            text.push_str(&format!("{l}{weight}{name}\n"));
        }
        let f = server_file(&text);

        // stdin: the case's keys last to first, every other line ending in CRLF
        let mut input = Vec::new();
        let mut want = Vec::new();
        for (i, (k, addr)) in case.expected.iter().rev().enumerate() {
            input.extend_from_slice(k);
            input.extend_from_slice(if i % 2 == 0 { b"\r\n" } else { b"\n" });
            want.extend_from_slice(k);
            want.push(b'\t');
            want.extend_from_slice(addr.as_bytes());
            want.push(b'\n');
        }
        let out = memshard(&["route", "--servers", f.path()], &input);
        assert!(
            out.status.success(),
            "{case_name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').collect();
        let exp: Vec<&[u8]> = want.split(|&b| b == b'\n').collect();
        assert_eq!(got.len(), exp.len(), "{case_name}: one line per key");
        for (g, e) in got.iter().zip(&exp) {
            assert_eq!(
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(e),
                "{case_name}"
            );
        }

        // arguments: three keys that cannot be taken for options
        let picked: Vec<&(Vec<u8>, String)> = case
            .expected
            .iter()
            .filter(|(k, _)| !k.starts_with(b"-"))
            .take(3)
            .collect();
        assert_eq!(picked.len(), 3);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memshard"));
        cmd.args(["route", "--servers", f.path()]);
        for (k, _) in &picked {
            cmd.arg(std::ffi::OsStr::from_bytes(k));
        }
        let out = cmd.stdin(Stdio::null()).output().expect("run memshard");
        assert!(out.status.success(), "{case_name}");
        let want: Vec<u8> = picked
            .iter()
            .flat_map(|(k, a)| [&k[..], b"\t", a.as_bytes(), b"\n"].concat())
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&want),
            "{case_name}: keys as arguments"
        );
        println!(
            "route {case_name}: 1000 keys over {} servers as libmemcached placed them",
            used.len()
        );
    }
}

#[test]
fn bad_input_is_exit_status_2_with_a_clear_message() {
    let f = server_file("10.0.1.1:11211\n");
    for (args, needle) in [
        (vec!["--flavor", "ketama-ish"], "unknown flavor"),
        (vec!["--hash", "sha9"], "unknown hash"),
        (vec!["--hash-tag", "{"], "hash tag"),
        (
            vec!["--flavor", "uhashring", "--hash", "crc32"],
            "always hashes keys",
        ),
    ] {
        let mut a = vec!["route", "--servers", f.path()];
        a.extend(args);
        a.push("k");
        let out = memshard(&a, b"");
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bad = server_file("10.0.1.1:11211\n10.0.1.2:eleven\n");
    let out = memshard(&["route", "--servers", bad.path(), "k"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    let out = memshard(
        &["route", "--servers", "/nonexistent/servers.txt", "k"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn set_get_delete_against_real_servers() {
    if !require("memcached") {
        return;
    }
    let c = Cluster::on_free_ports(&[2, 1, 1]);
    let f = server_file(&c.server_list());
    let s = f.path();
    let out = memshard(&["set", "--servers", s, "one", "1"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: String = (0..300).map(|i| format!("key:{i}\tvalue {i}\n")).collect();
    let out = memshard(&["set", "--servers", s, "--ttl", "600"], lines.as_bytes());
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("300 stored"));

    // every key sits on the one server libmemcached picks for it (read raw, server by server)
    let keys: Vec<String> = (0..300)
        .map(|i| format!("key:{i}"))
        .chain(["one".to_string()])
        .collect();
    if let Some(owners) = common::libmemcached::route(&c.server_list(), &keys) {
        check_placement(&c, &keys, &owners);
    }

    let keys: String = (0..300)
        .map(|i| format!("key:{i}\n"))
        .chain(["missing\n".to_string()])
        .collect();
    let out = memshard(&["get", "--servers", s], keys.as_bytes());
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        lines,
        "hits in input order, misses silent"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("300 hits, 1 misses"));

    let out = memshard(&["delete", "--servers", s, "one", "key:0", "missing"], b"");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 deleted, 1 not found"));
    for m in &c.servers {
        assert_eq!(m.raw_get(b"one"), None, "deleted, on {}", m.addr());
        assert_eq!(m.raw_get(b"key:0"), None, "deleted, on {}", m.addr());
    }
    let out = memshard(&["get", "--servers", s, "one", "key:0", "key:1"], b"");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "key:1\tvalue 1\n");

    // a hostile key is refused, and the command says so with a non-zero status
    let out = memshard(&["get", "--servers", s, "x\r\nflush_all"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        memshard(&["get", "--servers", s, "key:2"], b"")
            .stdout
            .starts_with(b"key:2\tvalue 2")
    );
}

/// Each of `keys` (`key:<i>` = `value <i>`, then `one` = `1`) is held by exactly the server
/// libmemcached picked, `owners`, read raw server by server.
fn check_placement(c: &Cluster, keys: &[String], owners: &[String]) {
    let held: Vec<_> = c.servers.iter().map(|m| m.text().get_many(keys)).collect();
    let mut per_server = vec![0usize; c.servers.len()];
    for (i, (k, owner)) in keys.iter().zip(owners).enumerate() {
        let want = if i < 300 {
            format!("value {i}")
        } else {
            "1".to_string()
        };
        for (j, m) in c.servers.iter().enumerate() {
            let got = held[j].get(k.as_bytes());
            if m.addr() == *owner {
                assert_eq!(got, Some(&want.clone().into_bytes()), "{k} on {owner}");
                per_server[j] += 1;
            } else {
                assert_eq!(got, None, "{k} on {} (libmemcached: {owner})", m.addr());
            }
        }
    }
    println!("memshard set: 301 keys per server {per_server:?}, each where libmemcached puts it");
    assert_eq!(per_server.iter().sum::<usize>(), 301);
    assert!(per_server.iter().all(|&n| n > 0), "{per_server:?}");
}

/// `--protocol meta`: set, get and delete round-trip against a real memcached with meta
/// commands only (read off the wire by a recording proxy), and what they store is what the
/// text protocol reads; `--protocol bogus` is refused with exit status 2 and a message naming
/// the choices.
#[test]
fn set_get_delete_over_meta_and_a_bad_protocol_is_refused() {
    if !require("memcached") {
        return;
    }
    let m = common::servers::Memcached::start(std::net::Ipv4Addr::LOCALHOST, 0, "");
    let p = common::proxy::FaultProxy::start(m.sock());
    let f = server_file(&format!("{} 1\n", p.addr_string()));
    let s = f.path();
    p.state.start_recording();
    let meta = |args: &[&str], stdin: &[u8]| {
        let mut a = vec![args[0], "--servers", s, "--protocol", "meta"];
        a.extend(&args[1..]);
        let out = memshard(&a, stdin);
        assert!(
            out.status.success(),
            "{a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let out = meta(&["set", "one", "1"], b"");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 stored"));
    let lines: String = (0..50).map(|i| format!("key:{i}\tvalue {i}\n")).collect();
    let out = meta(&["set", "--ttl", "600"], lines.as_bytes());
    assert!(String::from_utf8_lossy(&out.stderr).contains("50 stored"));
    assert_eq!(m.raw_get(b"key:7").as_deref(), Some(&b"value 7"[..]));
    let keys: String = (0..50)
        .map(|i| format!("key:{i}\n"))
        .chain(["missing\n".to_string()])
        .collect();
    let out = meta(&["get"], keys.as_bytes());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        lines,
        "hits in input order, misses silent"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("50 hits, 1 misses"));
    let out = meta(&["delete", "one", "key:0", "missing"], b"");
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 deleted, 1 not found"));
    assert_eq!(m.raw_get(b"one"), None);
    assert_eq!(m.raw_get(b"key:0"), None);
    let out = meta(&["get", "one", "key:0", "key:1"], b"");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "key:1\tvalue 1\n");

    // only meta verbs went out (and `version`, which has no meta form)
    let (requests, replies) = p.state.recorded();
    let text = String::from_utf8_lossy(&requests);
    let mut verbs = std::collections::BTreeSet::new();
    let mut lines = text.split("\r\n");
    while let Some(line) = lines.next() {
        let tokens: Vec<&str> = line.split(' ').collect();
        if tokens[0].is_empty() {
            continue;
        }
        // a data block follows `ms <key> <len>` (and the text storage commands: 5th token)
        let data = match tokens[0] {
            "ms" => tokens.get(2),
            "set" | "add" | "replace" | "append" | "prepend" | "cas" => tokens.get(4),
            _ => None,
        };
        if data.is_some() {
            lines.next();
        }
        verbs.insert(tokens[0]);
    }
    assert!(
        verbs
            .iter()
            .all(|v| ["mg", "ms", "md", "mn", "version"].contains(v)),
        "verbs {verbs:?}\nrequests: {}\nreplies: {}",
        text.escape_debug(),
        String::from_utf8_lossy(&replies).escape_debug()
    );
    assert!(
        ["mg", "ms", "md"].iter().all(|v| verbs.contains(v)),
        "{verbs:?}"
    );

    let out = memshard(&["get", "--servers", s, "--protocol", "bogus", "k"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bogus") && err.contains("text") && err.contains("meta"),
        "{err}"
    );
    println!("--protocol bogus: {}", err.trim());
}
