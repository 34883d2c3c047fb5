//! Large values against real memcached at its default 1 MB item size limit, on 127.0.48.x (no
//! other test binary uses those addresses): values of 1 MB + 1 byte, 5 MB and 50 MB stored in
//! chunks and read back whole through both clients and both protocols; the format as the
//! servers hold it; delete, touch and expiry of the whole; a chunk deleted or of another
//! write reads as a miss; writers and readers racing on one key for 10 s see 0 mixed or
//! truncated values; a server down holding a chunk fails the read, never half of it; and,
//! without large values, a value over a server's limit refused before a byte is sent.

mod common;

use common::servers::{Memcached, require};
use memshard::{Error, Expiry, Protocol, StoreOutcome, TouchOutcome};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const MAGIC: &[u8] = b"\0memshard-large/1 ";

fn servers(first: u8, n: u8) -> Vec<Memcached> {
    (first..first + n)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 48, i), 11211, "-m 256"))
        .collect()
}

fn list(servers: &[Memcached]) -> String {
    servers.iter().map(|s| format!("{}\n", s.addr())).collect()
}

fn builder<C>(servers: &[Memcached]) -> memshard::Builder<C> {
    over(&list(servers))
}

/// A builder of either client over `list`, large values on.
fn over<C>(list: &str) -> memshard::Builder<C> {
    memshard::Builder::<C>::default()
        .server_list(list)
        .expect("list")
        .read_timeout(Duration::from_secs(5))
        .large_values(memshard::LARGE_VALUE_CHUNK)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// `len` bytes that tell their seed and length: a reader can check any value it is given
/// without knowing which write made it.
fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&seed.to_le_bytes());
    out.extend_from_slice(&(len as u64).to_le_bytes());
    let mut x = seed | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Whether `v` is exactly one write's value (see [`value`]).
fn whole(v: &[u8]) -> bool {
    v.len() >= 16
        && u64::from_le_bytes(v[8..16].try_into().expect("8 bytes")) == v.len() as u64
        && v == value(
            u64::from_le_bytes(v[..8].try_into().expect("8 bytes")),
            v.len(),
        )
}

/// The index of `key` as stored: (length, count, id in hex).
fn index_on(servers: &[Memcached], ring: &memshard::Ring, key: &str) -> (usize, usize, String) {
    let owner = ring.server_for(key.as_bytes()).expect("owner").addr.clone();
    let s = servers.iter().find(|s| s.addr() == owner).expect("server");
    let raw = s
        .raw_get(key.as_bytes())
        .expect("the index is on its owner");
    let fields = raw.strip_prefix(MAGIC).expect("an index");
    let text = String::from_utf8(fields.to_vec()).expect("ASCII");
    let f: Vec<&str> = text.split(' ').collect();
    assert_eq!(f.len(), 5, "{text}");
    assert_eq!(f[1], memshard::LARGE_VALUE_CHUNK.to_string());
    (
        f[0].parse().expect("len"),
        f[2].parse().expect("count"),
        f[3].to_owned(),
    )
}

/// The server holding chunk `i` of `key` written under `id`.
fn chunk_server<'s>(
    servers: &'s [Memcached],
    ring: &memshard::Ring,
    key: &str,
    id: &str,
    i: usize,
) -> (&'s Memcached, String) {
    let chunk = format!("{key}:{id}:{i}");
    let owner = ring
        .server_for(chunk.as_bytes())
        .expect("owner")
        .addr
        .clone();
    (
        servers.iter().find(|s| s.addr() == owner).expect("server"),
        chunk,
    )
}

fn items(servers: &[Memcached]) -> u64 {
    servers.iter().map(|s| s.settled_stat("curr_items")).sum()
}

/// The TTL memcached reports for `key` on `s` (`mg key t`): -1 for none.
fn ttl(s: &Memcached, key: &str) -> i64 {
    let reply = s.raw(format!("mg {key} t\r\n").as_bytes(), b"\r\n");
    let text = String::from_utf8_lossy(&reply);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('t'))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no ttl in {text:?}"))
}

#[test]
fn values_over_the_item_limit_round_trip_whole_through_both_clients() {
    if !require("memcached") {
        return;
    }
    let s = servers(1, 3);
    let sizes = [(1 << 20) + 1, 5 << 20, 50 << 20];
    for protocol in [Protocol::Text, Protocol::Meta] {
        let client = builder::<memshard::Client>(&s)
            .protocol(protocol)
            .build()
            .expect("client");
        let ring = client.ring();
        for (n, &len) in sizes.iter().enumerate() {
            let key = format!("big:{protocol:?}:{n}");
            let v = value(n as u64 + 1, len);
            assert_eq!(
                client.set(&key, &v, Expiry::NEVER).expect("set"),
                StoreOutcome::Stored
            );
            let got = client.get(&key).expect("get").expect("a hit");
            assert!(got.value == v, "{protocol:?} {len}: read back whole");
            let (stored_len, count, _) = index_on(&s, &ring, &key);
            assert_eq!(
                (stored_len, count),
                (len, len.div_ceil(memshard::LARGE_VALUE_CHUNK))
            );
            let gets = client.gets(&key).expect("gets").expect("a hit");
            assert!(gets.cas.is_some() && gets.value == v);
        }
        // a value of at most the chunk size is stored as it is
        let at_chunk = value(77, memshard::LARGE_VALUE_CHUNK);
        for (key, v) in [("small", &b"s"[..]), ("at-chunk", &at_chunk[..])] {
            client.set(key, v, Expiry::NEVER).expect("set");
            let owner = ring.server_for(key.as_bytes()).expect("owner").addr.clone();
            let holder = s.iter().find(|m| m.addr() == owner).expect("server");
            assert!(
                holder.raw_get(key.as_bytes()).as_deref() == Some(v),
                "{key} as it is"
            );
        }
        client.delete("at-chunk").expect("delete");
        // set_multi and set_multi_noreply: large values in chunks, the others as they are
        let mixed = value(88, 2_500_000);
        let items = [("multi:big", &mixed[..]), ("multi:small", &b"m"[..])];
        for r in client.set_multi(&items, 0, Expiry::NEVER) {
            assert_eq!(r.expect("set_multi"), StoreOutcome::Stored);
        }
        let quiet = [("quiet:big", &mixed[..]), ("quiet:small", &b"m"[..])];
        let sent = client.set_multi_noreply(&quiet, 0, Expiry::NEVER);
        assert_eq!(sent.len(), 2);
        for r in sent {
            r.expect("set_multi_noreply");
        }
        // the overwrite leaves the first write's chunks behind (counted below)
        for r in client.set_multi(&items, 0, Expiry::NEVER) {
            r.expect("set_multi again");
        }
        let all = ["multi:big", "multi:small", "quiet:big", "quiet:small"];
        let got = client.get_multi(&all);
        for (i, want) in [&mixed[..], b"m", &mixed[..], b"m"].into_iter().enumerate() {
            let item = got[i].as_ref().expect("ok").as_ref().expect("hit");
            assert!(item.value == want, "{}", all[i]);
        }
        for r in client.delete_multi(&all) {
            r.expect("delete_multi");
        }
        // one multi-get: large values, an ordinary one and a miss
        let keys: Vec<String> = (0..sizes.len())
            .map(|n| format!("big:{protocol:?}:{n}"))
            .chain(["small".to_owned(), "missing".to_owned()])
            .collect();
        let got = client.get_multi(&keys);
        for (n, &len) in sizes.iter().enumerate() {
            let item = got[n].as_ref().expect("ok").as_ref().expect("hit");
            assert!(item.value == value(n as u64 + 1, len), "get_multi {n}");
        }
        assert_eq!(
            got[3].as_ref().expect("ok").as_ref().map(|i| &i.value[..]),
            Some(&b"s"[..])
        );
        assert!(matches!(got[4], Ok(None)));
        for d in client.delete_multi(&keys) {
            d.expect("delete");
        }
    }
    // every chunk went with its index but those of the overwritten "multi:big" (3 chunks in
    // each protocol's pass): the documented cost of an overwrite, left to expiry or the LRU
    assert_eq!(items(&s), 6, "only the overwritten value's chunks are left");
    for m in &s {
        m.raw(b"flush_all\r\n", b"\r\n");
    }
    runtime().block_on(async {
        let client = builder::<memshard::aio::Client>(&s)
            .build()
            .expect("client");
        for (n, &len) in sizes.iter().enumerate() {
            let key = format!("async:{n}");
            let v = value(n as u64 + 10, len);
            client.set(&key, &v, Expiry::NEVER).await.expect("set");
            let got = client.get(&key).await.expect("get").expect("hit");
            assert!(got.value == v, "async {len}");
        }
        let keys: Vec<String> = (0..sizes.len()).map(|n| format!("async:{n}")).collect();
        let got = client.get_multi(&keys).await;
        for (n, &len) in sizes.iter().enumerate() {
            let item = got[n].as_ref().expect("ok").as_ref().expect("hit");
            assert!(item.value == value(n as u64 + 10, len));
        }
        for k in &keys {
            client.delete(k).await.expect("delete");
            assert!(client.get(k).await.expect("get").is_none());
        }
    });
    assert_eq!(items(&s), 0);
}

#[test]
fn delete_touch_and_expiry_apply_to_every_chunk() {
    if !require("memcached") {
        return;
    }
    let s = servers(11, 3);
    let client = builder::<memshard::Client>(&s).build().expect("client");
    let ring = client.ring();
    let v = value(7, 3 << 20);
    client
        .set("ttl", &v, Expiry::after(Duration::from_secs(100)))
        .expect("set");
    let (_, count, id) = index_on(&s, &ring, "ttl");
    assert_eq!(count, 4);
    for i in 0..count {
        let (server, chunk) = chunk_server(&s, &ring, "ttl", &id, i);
        assert!(
            (95..=100).contains(&ttl(server, &chunk)),
            "chunk {i} expires with the value"
        );
    }
    assert_eq!(
        client
            .touch("ttl", Expiry::after(Duration::from_secs(1000)))
            .expect("touch"),
        TouchOutcome::Touched
    );
    for i in 0..count {
        let (server, chunk) = chunk_server(&s, &ring, "ttl", &id, i);
        assert!(
            (995..=1000).contains(&ttl(server, &chunk)),
            "chunk {i} touched"
        );
    }
    let owner = ring.server_for(b"ttl").expect("owner").addr.clone();
    let index_server = s.iter().find(|m| m.addr() == owner).expect("server");
    assert!((995..=1000).contains(&ttl(index_server, "ttl")));
    // gat touches the whole too
    let got = client
        .gat("ttl", Expiry::after(Duration::from_secs(500)))
        .expect("gat");
    assert!(got.is_some_and(|i| i.value == v));
    let (server, chunk) = chunk_server(&s, &ring, "ttl", &id, count - 1);
    assert!((495..=500).contains(&ttl(server, &chunk)));
    // expiry: a value written to expire in 1 s is gone, chunks and all
    client
        .set(
            "short",
            value(8, 2 << 20),
            Expiry::after(Duration::from_secs(1)),
        )
        .expect("set");
    assert!(client.get("short").expect("get").is_some());
    std::thread::sleep(Duration::from_millis(2100));
    assert!(client.get("short").expect("get").is_none());
    assert_eq!(
        client.delete("ttl").expect("delete"),
        memshard::DeleteOutcome::Deleted
    );
    assert!(client.get("ttl").expect("get").is_none());
    assert_eq!(
        client.touch("ttl", Expiry::NEVER).expect("touch"),
        TouchOutcome::NotFound
    );
    // nothing left but what expired (memcached reclaims those lazily)
    for i in 0..count {
        let (server, chunk) = chunk_server(&s, &ring, "ttl", &id, i);
        assert!(
            server.raw_get(chunk.as_bytes()).is_none(),
            "chunk {i} deleted"
        );
    }
}

#[test]
fn a_chunk_gone_or_of_another_write_reads_as_a_miss() {
    if !require("memcached") {
        return;
    }
    let s = servers(21, 3);
    let client = builder::<memshard::Client>(&s).build().expect("client");
    let ring = client.ring();
    for (case, mutate) in ["deleted", "replaced", "cut"].into_iter().enumerate() {
        let key = format!("k{case}");
        client
            .set(&key, value(case as u64, 2_500_000), Expiry::NEVER)
            .expect("set");
        let (_, count, id) = index_on(&s, &ring, &key);
        assert_eq!(count, 3);
        let (server, chunk) = chunk_server(&s, &ring, &key, &id, 1);
        match mutate {
            "deleted" => {
                server.raw(format!("delete {chunk}\r\n").as_bytes(), b"\r\n");
            }
            // the same length, other bytes: only the CRC tells
            "replaced" => {
                let other = value(99, memshard::LARGE_VALUE_CHUNK);
                let mut req = format!("set {chunk} 0 0 {}\r\n", other.len()).into_bytes();
                req.extend_from_slice(&other);
                req.extend_from_slice(b"\r\n");
                server.raw(&req, b"\r\n");
            }
            _ => {
                server.raw(format!("set {chunk} 0 0 3\r\nabc\r\n").as_bytes(), b"\r\n");
            }
        }
        assert!(client.get(&key).expect("get").is_none(), "{mutate}: a miss");
        let many = client.get_multi(&[key.as_str()]);
        assert!(matches!(many[0], Ok(None)), "{mutate}: a miss in get_multi");
        runtime().block_on(async {
            let client = builder::<memshard::aio::Client>(&s)
                .build()
                .expect("client");
            assert!(client.get(&key).await.expect("get").is_none());
        });
    }
    // a damaged index is a miss too
    client
        .set("k9", value(9, 1_500_000), Expiry::NEVER)
        .expect("set");
    let owner = ring.server_for(b"k9").expect("owner").addr.clone();
    let index_server = s.iter().find(|m| m.addr() == owner).expect("server");
    index_server.raw(b"append k9 0 0 1\r\nx\r\n", b"\r\n");
    assert!(client.get("k9").expect("get").is_none());
    // an ordinary value that begins as an index does is stored in chunks, read back as given
    let tricky = [MAGIC, b"1 1024 1 0000000000000000 00000000"].concat();
    client.set("tricky", &tricky, Expiry::NEVER).expect("set");
    assert_eq!(
        client.get("tricky").expect("get").expect("hit").value,
        tricky
    );
    // with large values off, an index is an ordinary value: read as stored, never assembled
    let whole = value(5, 1_500_000);
    client.set("whole", &whole, Expiry::NEVER).expect("set");
    let off = list(&s);
    let plain = memshard::Builder::<memshard::Client>::default()
        .server_list(&off)
        .expect("list")
        .build()
        .expect("client");
    let raw = plain.get("whole").expect("get").expect("the index").value;
    assert!(raw.starts_with(MAGIC) && raw.len() < 100, "{raw:?}");
    assert_eq!(plain.gets("whole").expect("gets").expect("hit").value, raw);
    runtime().block_on(async {
        let plain = memshard::Builder::<memshard::aio::Client>::default()
            .server_list(&off)
            .expect("list")
            .build()
            .expect("client");
        assert_eq!(
            plain.get("whole").await.expect("get").expect("hit").value,
            raw
        );
        let gets = plain.gets("whole").await.expect("gets").expect("hit");
        assert_eq!(gets.value, raw);
    });
}

#[test]
fn writers_and_readers_racing_for_ten_seconds_see_no_mixed_value() {
    if !require("memcached") {
        return;
    }
    let s = servers(31, 3);
    let stop = Arc::new(AtomicBool::new(false));
    let (reads, hits, bad, writes) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let list = list(&s);
    let mut threads = Vec::new();
    for w in 0..2u64 {
        let (list, stop, writes) = (list.clone(), stop.clone(), writes.clone());
        threads.push(std::thread::spawn(move || {
            let mut seq = 0u64;
            let write = |seq: u64| {
                value(
                    (w << 32) | seq,
                    1_200_000 + ((seq as usize * 7919) % 2_000_000),
                )
            };
            if w == 0 {
                let c = over::<memshard::Client>(&list).build().expect("client");
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    if c.set("race", write(seq), Expiry::NEVER).is_ok() {
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                }
            } else {
                runtime().block_on(async {
                    let c = over::<memshard::aio::Client>(&list)
                        .build()
                        .expect("client");
                    while !stop.load(Ordering::Relaxed) {
                        seq += 1;
                        if c.set("race", &write(seq), Expiry::NEVER).await.is_ok() {
                            writes.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        }));
    }
    for r in 0..2 {
        let (list, stop, reads, hits, bad) = (
            list.clone(),
            stop.clone(),
            reads.clone(),
            hits.clone(),
            bad.clone(),
        );
        threads.push(std::thread::spawn(move || {
            let check = |got: memshard::Result<Option<memshard::Item>>| {
                reads.fetch_add(1, Ordering::Relaxed);
                if let Ok(Some(item)) = got {
                    hits.fetch_add(1, Ordering::Relaxed);
                    if !whole(&item.value) {
                        bad.fetch_add(1, Ordering::Relaxed);
                    }
                }
            };
            if r == 0 {
                let c = over::<memshard::Client>(&list).build().expect("client");
                while !stop.load(Ordering::Relaxed) {
                    check(c.get("race"));
                    let mut many = c.get_multi(&["race"]);
                    check(many.remove(0));
                }
            } else {
                runtime().block_on(async {
                    let c = over::<memshard::aio::Client>(&list)
                        .build()
                        .expect("client");
                    while !stop.load(Ordering::Relaxed) {
                        check(c.get("race").await);
                    }
                });
            }
        }));
    }
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("thread");
    }
    let (reads, hits, bad, writes) = (
        reads.load(Ordering::Relaxed),
        hits.load(Ordering::Relaxed),
        bad.load(Ordering::Relaxed),
        writes.load(Ordering::Relaxed),
    );
    eprintln!(
        "race over {:?}: {writes} writes, {reads} reads, {hits} whole hits, {bad} mixed or truncated",
        started.elapsed()
    );
    assert_eq!(bad, 0, "mixed or truncated values");
    assert!(
        writes >= 20 && hits >= 20,
        "the race ran: {writes} writes, {hits} hits of {reads} reads"
    );
}

#[test]
fn a_server_down_holding_a_chunk_fails_the_read_never_half_of_it() {
    if !require("memcached") {
        return;
    }
    let s = servers(41, 3);
    let client = builder::<memshard::Client>(&s)
        .read_timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    let ring = client.ring();
    let v = value(5, 6 << 20);
    client.set("spread", &v, Expiry::NEVER).expect("set");
    let (_, count, id) = index_on(&s, &ring, "spread");
    let owner = ring.server_for(b"spread").expect("owner").addr.clone();
    // a server holding a chunk but not the index
    let holder = (0..count)
        .map(|i| chunk_server(&s, &ring, "spread", &id, i).0)
        .find(|m| m.addr() != owner)
        .expect("chunks spread over the servers");
    holder.signal("STOP");
    let got = client.get("spread");
    assert!(
        !matches!(got, Ok(Some(_))),
        "no value while a chunk is out of reach: {got:?}"
    );
    let many = client.get_multi(&["spread"]);
    assert!(!matches!(many[0], Ok(Some(_))));
    holder.signal("CONT");
    // once the client tries the server again (its retry timeout), the value is whole
    let deadline = Instant::now() + Duration::from_secs(10);
    let again = loop {
        match client.get("spread") {
            Ok(Some(item)) => break item,
            Err(Error::ServerDown { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            other => panic!("after SIGCONT: {other:?}"),
        }
    };
    assert!(again.value == v);
}

/// Without large values: a value a server cannot hold is refused before a byte of it is
/// sent, naming the size, the server's limit (learned with `stats settings`) and the server;
/// a server that changed its limit since refuses it itself, with the same typed error, and
/// the client learns the new one.
#[test]
fn a_value_over_a_server_s_limit_fails_before_it_is_sent() {
    if !require("memcached") {
        return;
    }
    let ip = Ipv4Addr::new(127, 0, 48, 51);
    let s = Memcached::start(ip, 11211, "-I 2m -m 64");
    for protocol in [Protocol::Text, Protocol::Meta] {
        let client = memshard::Client::builder()
            .server_list(&s.addr())
            .expect("list")
            .protocol(protocol)
            .max_value_size(8 << 20)
            .build()
            .expect("client");
        let before = s.stat("cmd_set");
        let e = client.set("big", vec![b'v'; 3 << 20], Expiry::NEVER);
        match &e {
            Err(Error::ItemTooLarge {
                server,
                len: Some(len),
                limit: Some(limit),
            }) => {
                assert_eq!(
                    (server.as_str(), *len, *limit),
                    (s.addr().as_str(), 3 << 20, 2 << 20)
                );
            }
            other => panic!("{protocol:?}: {other:?}"),
        }
        let message = e.expect_err("refused").to_string();
        assert!(
            message.contains("3145728")
                && message.contains("2097152")
                && message.contains(&s.addr()),
            "{message}"
        );
        assert!(message.len() < 220, "{message}");
        assert_eq!(s.stat("cmd_set"), before, "nothing was sent");
        // the largest value that fits is sent and stored (measured: 60 bytes of header with a 1-byte key)
        let fits = (2 << 20) - 60;
        assert_eq!(
            client
                .set("b", vec![b'v'; fits], Expiry::NEVER)
                .expect("fits"),
            StoreOutcome::Stored
        );
        assert!(matches!(
            client.set("b", vec![b'v'; fits + 1], Expiry::NEVER),
            Err(Error::ItemTooLarge { .. })
        ));
        runtime().block_on(async {
            let client = memshard::aio::Client::builder()
                .server_list(&s.addr())
                .expect("list")
                .protocol(protocol)
                .max_value_size(8 << 20)
                .build()
                .expect("client");
            let e = client.set("big", vec![b'v'; 3 << 20], Expiry::NEVER).await;
            assert!(
                matches!(
                    e,
                    Err(Error::ItemTooLarge {
                        limit: Some(2097152),
                        ..
                    })
                ),
                "{e:?}"
            );
        });
        assert_eq!(
            s.stat("cmd_set"),
            before + 1,
            "only the value that fits was sent"
        );
    }
    // the server restarts with a smaller limit: it refuses the item itself (typed, sized),
    // and the client asks again before the next one
    let client = memshard::Client::builder()
        .server_list(&s.addr())
        .expect("list")
        .max_value_size(8 << 20)
        .build()
        .expect("client");
    client
        .set("warm", vec![b'v'; 1_500_000], Expiry::NEVER)
        .expect("fits 2m");
    drop(s);
    let s = Memcached::start(ip, 11211, "-I 1m -m 64");
    let mut refused = None;
    for _ in 0..3 {
        match client.set("warm", vec![b'v'; 1_500_000], Expiry::NEVER) {
            // the first try after the restart may meet the old, closed connection
            Err(Error::Io { .. }) => continue,
            r => {
                refused = Some(r);
                break;
            }
        }
    }
    assert!(
        matches!(
            &refused,
            Some(Err(Error::ItemTooLarge {
                len: Some(1_500_000),
                limit: Some(2097152),
                ..
            }))
        ),
        "the server's own refusal: {refused:?}"
    );
    let before = s.stat("cmd_set");
    let e = client.set("warm", vec![b'v'; 1_500_000], Expiry::NEVER);
    assert!(
        matches!(
            e,
            Err(Error::ItemTooLarge {
                limit: Some(1048576),
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(s.stat("cmd_set"), before, "learned again: nothing sent");
}

#[test]
fn a_chunk_size_out_of_range_is_refused_at_build() {
    for chunk in [0, 1023, (1 << 20) + 1] {
        let e = memshard::Client::builder()
            .server_list("127.0.0.1:1")
            .expect("list")
            .large_values(chunk)
            .build();
        assert!(
            matches!(
                e,
                Err(Error::Setting(
                    memshard::SettingError::LargeValueChunk { .. }
                ))
            ),
            "{chunk}: {e:?}"
        );
    }
    assert!(
        memshard::Client::builder()
            .server_list("127.0.0.1:1")
            .expect("list")
            .large_values(1024)
            .build()
            .is_ok()
    );
}

/// twemproxy closes the connection on `stats settings`: the client asks once, stores the value
/// all the same, and never counts the refusal toward marking the proxy down (with a failure
/// limit of 1, one counted failure would).
#[test]
fn a_proxy_that_refuses_stats_settings_is_not_marked_down() {
    if !require("memcached") || !require("nutcracker") {
        return;
    }
    let backend = Memcached::start(Ipv4Addr::new(127, 0, 48, 71), 11211, "");
    let proxy = common::servers::Nutcracker::start(1, |listen| {
        format!(
            "large:\n  listen: {}\n  distribution: ketama\n  hash: md5\n  timeout: 5000\n  \
             auto_eject_hosts: false\n  servers:\n    - \"{}:1\"\n",
            listen[0],
            backend.addr()
        )
    });
    let policy = memshard::FailurePolicy::new(1, Duration::from_secs(60), false);
    let client = memshard::Client::builder()
        .server_list(&proxy.listen().to_string())
        .expect("list")
        .failure_policy(policy)
        .build()
        .expect("client");
    for i in 0..3 {
        let key = format!("through:{i}");
        let stored = client.set(&key, vec![b'p'; 3000], Expiry::NEVER);
        assert!(
            matches!(stored, Ok(StoreOutcome::Stored)),
            "{i}: {stored:?}"
        );
        assert!(
            client.down_servers().is_empty(),
            "{i}: the proxy is not down"
        );
        assert_eq!(backend.raw_get(key.as_bytes()).map(|v| v.len()), Some(3000));
    }
    runtime().block_on(async {
        let client = memshard::aio::Client::builder()
            .server_list(&proxy.listen().to_string())
            .expect("list")
            .failure_policy(policy)
            .build()
            .expect("client");
        let stored = client
            .set("through:async", vec![b'p'; 3000], Expiry::NEVER)
            .await;
        assert!(matches!(stored, Ok(StoreOutcome::Stored)), "{stored:?}");
        assert!(client.down_servers().is_empty());
    });
}
