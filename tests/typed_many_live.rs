//! Typed many-key calls against real memcached on 127.0.47.x (no other test binary uses those
//! addresses), through both clients: 100 typed values written with `set_many_values` and
//! read back with `get_many_as`, each key with its own result (a value, a miss, a codec or
//! type error), with memshard's codec and with a peer's (php-memcached: an integer and a
//! compressed string carry different flags, so they are sent in two batches). And a value
//! over the servers' item size limit, refused by name.

mod common;

use common::servers::{Memcached, require};
use memshard::value::{Codec, ValueError};
use memshard::{Error, Expiry, StoreOutcome};
use std::net::Ipv4Addr;

fn servers() -> Vec<Memcached> {
    (1..=3)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 47, i), 11211, ""))
        .collect()
}

fn list(servers: &[Memcached]) -> String {
    servers.iter().map(|s| format!("{}\n", s.addr())).collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A builder of either client over `list`.
fn over<C>(list: &str) -> memshard::Builder<C> {
    memshard::Builder::<C>::default()
        .server_list(list)
        .expect("list")
}

fn keys(tag: &str) -> Vec<String> {
    (0..100).map(|i| format!("{tag}:n:{i}")).collect()
}

/// Each key's result: 100 values, then a miss, then a string read as an integer.
fn check(tag: &str, got: Vec<memshard::Result<Option<i64>>>) {
    assert_eq!(got.len(), 102);
    for (i, r) in got.iter().take(100).enumerate() {
        assert_eq!(
            r.as_ref().ok(),
            Some(&Some(i as i64 * 1_000_003)),
            "{tag} key {i}"
        );
    }
    assert!(matches!(got[100], Ok(None)), "{tag}: the miss");
    assert!(
        matches!(
            &got[101],
            Err(Error::Value {
                source: ValueError::Type { .. },
                ..
            })
        ),
        "{tag}: a string is not an i64: {:?}",
        got[101]
    );
}

#[test]
fn many_typed_values_round_trip_with_each_key_s_own_result() {
    if !require("memcached") {
        return;
    }
    let s = servers();
    let client = over::<memshard::Client>(&list(&s)).build().expect("client");
    let ks = keys("b");
    let items: Vec<(&str, i64)> = ks
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i as i64 * 1_000_003))
        .collect();
    let stored = client.set_many_values(&items, Expiry::NEVER);
    assert!(stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))));
    client
        .set_value("b:text", "not a number", Expiry::NEVER)
        .expect("set");
    let mut read: Vec<&str> = ks.iter().map(String::as_str).collect();
    read.extend(["b:absent", "b:text"]);
    check("blocking", client.get_many_as::<i64, _>(&read));

    // php-memcached: integers as text with its long flag, a long string compressed: two
    // flags, two batches, every value as php-memcached reads it
    let long = "x".repeat(4_000);
    let php: Vec<(&str, memshard::value::Value)> = vec![
        ("php:int", memshard::value::Value::Int(42)),
        ("php:long", memshard::value::Value::String(long.clone())),
        ("php:short", memshard::value::Value::String("hi".into())),
    ];
    let stored = client.set_many_values_with(Codec::PhpMemcached, &php, Expiry::NEVER);
    assert!(
        stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{stored:?}"
    );
    let flags: Vec<u32> = ["php:int", "php:long", "php:short"]
        .iter()
        .map(|k| client.get(k).expect("get").expect("hit").flags)
        .collect();
    assert!(flags[0] != flags[1] && flags[1] != flags[2], "{flags:?}");
    let back: Vec<memshard::Result<Option<memshard::value::Value>>> =
        client.get_many_as_with(Codec::PhpMemcached, &["php:int", "php:long", "php:short"]);
    let back: Vec<Option<memshard::value::Value>> =
        back.into_iter().map(|r| r.expect("decoded")).collect();
    assert_eq!(
        back,
        [
            Some(memshard::value::Value::Int(42)),
            Some(memshard::value::Value::String(long)),
            Some(memshard::value::Value::String("hi".into()))
        ]
    );

    let rt = runtime();
    rt.block_on(async {
        let client = over::<memshard::aio::Client>(&list(&s))
            .build()
            .expect("client");
        let ks = keys("a");
        let items: Vec<(&str, i64)> = ks
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i as i64 * 1_000_003))
            .collect();
        let stored = client.set_many_values(&items, Expiry::NEVER).await;
        assert!(stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))));
        client
            .set_value("a:text", "not a number", Expiry::NEVER)
            .await
            .expect("set");
        let mut read: Vec<&str> = ks.iter().map(String::as_str).collect();
        read.extend(["a:absent", "a:text"]);
        check("async", client.get_many_as::<i64, _>(&read).await);
    });
}

/// A value the servers cannot hold (over memcached's default 1 MB `item_size_max`) with the
/// client's own limit raised: the typed `ItemTooLarge` naming the server, the size and the
/// limit it learned, in both protocols and both clients, and the connection stays usable.
#[test]
fn a_value_over_the_server_s_item_size_is_refused_by_name() {
    if !require("memcached") {
        return;
    }
    let s = Memcached::start(Ipv4Addr::new(127, 0, 47, 9), 11211, "");
    let big = vec![b'v'; 1024 * 1024 + 1];
    for protocol in [memshard::Protocol::Text, memshard::Protocol::Meta] {
        let client = over::<memshard::Client>(&s.addr())
            .protocol(protocol)
            .max_value_size(8 * 1024 * 1024)
            .build()
            .expect("client");
        let e = client.set("big", &big, Expiry::NEVER);
        assert!(
            matches!(&e, Err(Error::ItemTooLarge { server, len: Some(1_048_577), limit: Some(1_048_576) }) if *server == s.addr()),
            "{protocol:?}: {e:?}"
        );
        assert!(
            e.err()
                .map(|e| e.to_string())
                .is_some_and(|m| m.contains("-I"))
        );
        client
            .set("small", "ok", Expiry::NEVER)
            .expect("the connection is in step");
        assert_eq!(
            client.get("small").expect("get").map(|i| i.value.to_vec()),
            Some(b"ok".to_vec())
        );
        let rt = runtime();
        rt.block_on(async {
            let client = over::<memshard::aio::Client>(&s.addr())
                .protocol(protocol)
                .max_value_size(8 * 1024 * 1024)
                .build()
                .expect("client");
            let e = client.set("big", &big, Expiry::NEVER).await;
            assert!(
                matches!(e, Err(Error::ItemTooLarge { .. })),
                "async {protocol:?}: {e:?}"
            );
            client
                .set("small", "ok", Expiry::NEVER)
                .await
                .expect("in step");
        });
    }
}

/// A key over memcached's 250 bytes: refused by default, saying how to have it shortened;
/// with `shorten_long_keys`, stored under dalli's shortened form (read raw from the server)
/// and read back by the long key, in both clients.
#[test]
fn long_keys_are_stored_shortened_when_asked() {
    use md5::Digest;
    if !require("memcached") {
        return;
    }
    let s = Memcached::start(Ipv4Addr::new(127, 0, 47, 10), 11211, "");
    let long = format!("session:{}", "x".repeat(300));
    let plain = over::<memshard::Client>(&s.addr()).build().expect("client");
    let e = plain.set(&long, "v", Expiry::NEVER);
    assert!(
        e.as_ref()
            .err()
            .map(|e| e.to_string())
            .is_some_and(|m| m.contains("Builder::shorten_long_keys")),
        "{e:?}"
    );
    let client = over::<memshard::Client>(&s.addr())
        .shorten_long_keys(true)
        .build()
        .expect("client");
    client.set(&long, "long value", Expiry::NEVER).expect("set");
    let digest: String = md5::Md5::digest(long.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let sent = format!("{}:md5:{digest}", &long[..212]);
    assert_eq!(
        s.raw_get(sent.as_bytes()).as_deref(),
        Some(&b"long value"[..])
    );
    assert_eq!(
        client.get(&long).expect("get").map(|i| i.value.to_vec()),
        Some(b"long value".to_vec())
    );
    let rt = runtime();
    rt.block_on(async {
        let client = over::<memshard::aio::Client>(&s.addr())
            .shorten_long_keys(true)
            .build()
            .expect("client");
        let got = client.get(&long).await.expect("get");
        assert_eq!(got.map(|i| i.value.to_vec()), Some(b"long value".to_vec()));
    });
}
