//! `memshard set --large-values KEY -` and `memshard get --large-values --raw KEY` against real
//! memcached at its default 1 MB item limit, on 127.0.48.6x (no other test binary uses those
//! addresses): values of 1 MB + 1 byte, 5 MB and 50 MB of any bytes from standard input come
//! back byte for byte; a miss writes nothing and exits 1; without `--large-values` such a value
//! is refused and names the fix.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::TempFile;
use common::servers::{Memcached, require};
use std::net::Ipv4Addr;
use support::{describe, memshard, memshard_in};

/// Bytes of every value 0..=255, newlines and NULs included, from `seed`.
fn bytes(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn large_values_go_in_from_stdin_and_come_out_byte_for_byte() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (61..=63)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 48, i), 0, "-m 256"))
        .collect();
    let text: String = servers.iter().map(|s| format!("{}\n", s.addr())).collect();
    let list = TempFile::new("large-servers.txt", &text);
    let list = list.path();
    for (n, len) in [(1usize << 20) + 1, 5 << 20, 50 << 20]
        .into_iter()
        .enumerate()
    {
        let key = format!("big{n}");
        let value = bytes(n as u32 + 1, len);
        let set = memshard_in(
            &["set", "--servers", list, "--large-values", &key, "-"],
            &value,
        );
        assert_eq!(set.status.code(), Some(0), "{}", describe(&set));
        let get = memshard(&["get", "--servers", list, "--large-values", "--raw", &key]);
        assert_eq!(get.status.code(), Some(0), "{}", describe(&get));
        assert!(
            get.stdout == value,
            "{len} bytes back byte for byte (got {})",
            get.stdout.len()
        );
    }
    // the value alone, as stored: the index, without --large-values
    let index = memshard(&["get", "--servers", list, "--raw", "big0"]);
    assert!(
        index.stdout.starts_with(b"\0memshard-large/1 "),
        "{}",
        describe(&index)
    );
    // a miss: nothing on standard output, exit 1, counted as a miss
    let miss = memshard(&[
        "get",
        "--servers",
        list,
        "--large-values",
        "--raw",
        "nothing",
    ]);
    assert_eq!(miss.status.code(), Some(1), "{}", describe(&miss));
    assert!(miss.stdout.is_empty());
    assert!(String::from_utf8_lossy(&miss.stderr).contains("0 hits, 1 misses, 0 errors"));
    // --raw takes one key
    let two = memshard(&["get", "--servers", list, "--raw", "a", "b"]);
    assert_eq!(two.status.code(), Some(2), "{}", describe(&two));
    // a custom chunk size reads values written with another
    let small_chunks = memshard_in(
        &["set", "--servers", list, "--large-values=4096", "c", "-"],
        &bytes(9, 100_000),
    );
    assert_eq!(
        small_chunks.status.code(),
        Some(0),
        "{}",
        describe(&small_chunks)
    );
    let back = memshard(&["get", "--servers", list, "--large-values", "--raw", "c"]);
    assert!(back.stdout == bytes(9, 100_000));
    // delete takes every chunk with it
    let del = memshard(&[
        "delete",
        "--servers",
        list,
        "--large-values",
        "big0",
        "big1",
        "big2",
        "c",
    ]);
    assert_eq!(del.status.code(), Some(0), "{}", describe(&del));
    let left: u64 = servers.iter().map(|s| s.settled_stat("curr_items")).sum();
    assert_eq!(left, 0);
    // without --large-values, a value over the limit is refused and the fix named
    let refused = memshard_in(&["set", "--servers", list, "big", "-"], &bytes(3, 2 << 20));
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("large_values"),
        "{}",
        describe(&refused)
    );
}
