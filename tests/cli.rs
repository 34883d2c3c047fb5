//! The `memshard` command line: the contract other tools call (route, get, set, delete).

mod common;

use common::servers::{Cluster, require};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn memshard(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memshard"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run memshard");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("memshard output")
}

fn server_file(text: &str) -> tempfile_path::Path {
    tempfile_path::Path::new(text)
}

/// A file removed on drop (no extra crate needed).
mod tempfile_path {
    pub struct Path(pub std::path::PathBuf);
    impl Path {
        pub fn new(text: &str) -> Path {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p =
                std::env::temp_dir().join(format!("memshard-cli-{}-{n}.txt", std::process::id()));
            std::fs::write(&p, text).expect("write server file");
            Path(p)
        }
        pub fn as_str(&self) -> &str {
            self.0.to_str().expect("utf-8 temp path")
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

#[test]
fn route_prints_addresses_as_written_in_input_order() {
    let f = server_file("# cache\n10.0.1.1:11211 600\n[::1]:11212 300 named\ncache-b 1\n");
    let out = memshard(
        &["route", "--servers", f.as_str()],
        "k1\nk2\r\nclé\n".as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    for (line, key) in lines.iter().zip(["k1", "k2", "clé"]) {
        let (k, addr) = line.split_once('\t').unwrap();
        assert_eq!(k, key);
        assert!(
            ["10.0.1.1:11211", "[::1]:11212", "cache-b"].contains(&addr),
            "{addr}"
        );
    }
    let args = memshard(&["route", "--servers", f.as_str(), "k1", "k2"], b"");
    assert_eq!(
        String::from_utf8(args.stdout).unwrap(),
        lines[..2]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
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
        let mut a = vec!["route", "--servers", f.as_str()];
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
    let out = memshard(&["route", "--servers", bad.as_str(), "k"], b"");
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
    let s = f.as_str();
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
