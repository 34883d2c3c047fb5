//! Commands and their outcomes, key and value checks, multi-key operations, prefixes, flavours,
//! the commands sent to every server, settings refused at build, noreply sets and peer
//! configurations.

use crate::api::{Api, ParityApi, ParitySettings, Settings, build, try_build};
use crate::common::proxy::FaultProxy;
use crate::common::servers::{Cluster, Memcached};
use crate::support::{LO, assert_placed, holders, refs, same, ttl, value};
use memshard::Expiry;
use memshard::{
    DeleteOutcome, Error, FLAVORS, FailurePolicy, MAX_POOL_SIZE, MAX_TIMEOUT, RingError, Server,
    SettingError, StoreOutcome, TouchOutcome,
};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Every single-key command's outcomes, each checked against what the key's server holds:
/// stored / not stored / exists / not found, flags and CAS uniques, binary and empty values,
/// incr/decr on a missing key, on a non-numeric value and across the 64-bit edge, touch, and
/// the expiry `touch`, `gat` and `gats` leave on the server (`mg <key> t`).
pub async fn outcomes_of_every_command<C: Api>() {
    let c = Cluster::four();
    let m = build::<C>(|b| b.server_list(&c.server_list()).pool_size(4));
    let owner = |k: &str| c.by_addr(&m.ring().server_for(k.as_bytes()).unwrap().addr);
    let k = "outcomes:1";
    let on = owner(k);

    assert_eq!(m.delete(k).await.unwrap(), DeleteOutcome::NotFound);
    assert_eq!(m.get(k).await.unwrap(), None);
    assert_eq!(m.gets(k).await.unwrap(), None);
    assert_eq!(m.gat(k, Duration::from_secs(10)).await.unwrap(), None);
    assert_eq!(m.gats(k, Duration::from_secs(10)).await.unwrap(), None);
    assert_eq!(
        m.replace(k, "x", Expiry::NEVER).await.unwrap(),
        StoreOutcome::NotStored
    );
    assert_eq!(m.append(k, "x").await.unwrap(), StoreOutcome::NotStored);
    assert_eq!(m.prepend(k, "x").await.unwrap(), StoreOutcome::NotStored);
    assert_eq!(on.raw_get(k.as_bytes()), None, "nothing was stored");
    assert_eq!(
        m.add_raw(k, "v1", 7, Expiry::NEVER).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(
        m.add(k, "v2", Expiry::NEVER).await.unwrap(),
        StoreOutcome::NotStored
    );
    assert_eq!(on.raw_get(k.as_bytes()).as_deref(), Some(&b"v1"[..]));
    let item = m.get(k).await.unwrap().unwrap();
    assert_eq!(
        (&item.value[..], item.flags, item.cas),
        (&b"v1"[..], 7, None)
    );
    assert_eq!(m.append(k, "+a").await.unwrap(), StoreOutcome::Stored);
    assert_eq!(m.prepend(k, "p+").await.unwrap(), StoreOutcome::Stored);
    assert_eq!(m.get(k).await.unwrap().unwrap().text(), Some("p+v1+a"));
    assert_eq!(on.raw_get(k.as_bytes()).as_deref(), Some(&b"p+v1+a"[..]));
    assert_eq!(
        m.get(k).await.unwrap().unwrap().flags,
        7,
        "append keeps flags"
    );

    // cas: a conflict, a success, a missing key
    let first = m.gets(k).await.unwrap().unwrap();
    let cas = first.cas.expect("gets returns a cas unique");
    assert_eq!(first.value, &b"p+v1+a"[..]);
    assert_eq!(
        m.cas_raw(k, "c1", 9, Expiry::NEVER, cas).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(
        m.cas(k, "c2", Expiry::NEVER, cas).await.unwrap(),
        StoreOutcome::Exists,
        "the unique changed with the first cas"
    );
    assert_eq!(on.raw_get(k.as_bytes()).as_deref(), Some(&b"c1"[..]));
    let second = m.gets(k).await.unwrap().unwrap();
    assert_eq!((&second.value[..], second.flags), (&b"c1"[..], 9));
    assert_ne!(second.cas, Some(cas), "a write changes the cas unique");
    assert_eq!(
        m.cas("outcomes:absent", "c", Expiry::NEVER, 1)
            .await
            .unwrap(),
        StoreOutcome::NotFound
    );
    assert_eq!(
        m.replace(k, "r", Expiry::NEVER).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(on.raw_get(k.as_bytes()).as_deref(), Some(&b"r"[..]));

    // expiry: none, then what touch, gat and gats set (seconds left, read on the server)
    assert_eq!(ttl(on, k), Some(-1), "stored with exptime 0");
    assert_eq!(
        m.touch(k, Duration::from_secs(1000)).await.unwrap(),
        TouchOutcome::Touched
    );
    let t = ttl(on, k).unwrap();
    assert!((1..=1000).contains(&t), "touch 1000: ttl {t}");
    assert_eq!(
        m.touch("outcomes:absent", Duration::from_secs(100))
            .await
            .unwrap(),
        TouchOutcome::NotFound
    );
    let got = m
        .gat(k, Duration::from_secs(100_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&got.value[..], got.cas), (&b"r"[..], None));
    let t = ttl(on, k).unwrap();
    assert!((1001..=100_000).contains(&t), "gat 100000: ttl {t}");
    let got = m.gats(k, Duration::from_secs(5000)).await.unwrap().unwrap();
    assert_eq!(got.value, &b"r"[..]);
    assert!(got.cas.is_some(), "gats returns a cas unique");
    let t = ttl(on, k).unwrap();
    assert!((1..=5000).contains(&t), "gats 5000: ttl {t}");
    assert_eq!(m.gets(k).await.unwrap().unwrap().cas, got.cas);

    assert_eq!(m.delete(k).await.unwrap(), DeleteOutcome::Deleted);
    assert_eq!(m.delete(k).await.unwrap(), DeleteOutcome::NotFound);
    assert_eq!(on.raw_get(k.as_bytes()), None);

    // counters
    let n = "outcomes:n";
    assert_eq!(m.incr(n, 1).await.unwrap(), None, "incr of a missing key");
    assert_eq!(m.decr(n, 1).await.unwrap(), None, "decr of a missing key");
    assert_eq!(owner(n).raw_get(n.as_bytes()), None, "incr creates nothing");
    m.set(n, "1000", Expiry::NEVER).await.unwrap();
    assert_eq!(m.incr(n, 1).await.unwrap(), Some(1001));
    assert_eq!(
        owner(n).raw_get(n.as_bytes()).as_deref(),
        Some(&b"1001"[..])
    );
    assert_eq!(m.decr(n, 2000).await.unwrap(), Some(0), "decr stops at 0");
    m.set(n, u64::MAX.to_string(), Expiry::NEVER).await.unwrap();
    assert_eq!(m.incr(n, 1).await.unwrap(), Some(0), "incr wraps at 2^64");
    let text = "outcomes:text";
    m.set(text, "abc", Expiry::NEVER).await.unwrap();
    for r in [m.incr(text, 1).await, m.decr(text, 1).await] {
        assert!(matches!(r, Err(Error::Server { .. })), "{r:?}");
    }
    // the connection stays usable after a server-side refusal
    assert_eq!(m.get(text).await.unwrap().unwrap().value, &b"abc"[..]);

    // values byte for byte: every byte value (CR, LF, NUL included), empty, extreme flags
    let binary: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    let b = "outcomes:binary";
    assert_eq!(
        m.set_raw(b, &binary, u32::MAX, Expiry::NEVER)
            .await
            .unwrap(),
        StoreOutcome::Stored
    );
    let got = m.get(b).await.unwrap().unwrap();
    assert_eq!((&got.value[..], got.flags), (&binary[..], u32::MAX));
    assert_eq!(owner(b).raw_get(b.as_bytes()), Some(binary));
    m.set("outcomes:empty", "", Expiry::NEVER).await.unwrap();
    assert_eq!(
        m.get("outcomes:empty").await.unwrap().unwrap().value,
        &b""[..],
        "an empty value is a hit"
    );
    // a key of 250 bytes (the longest allowed), UTF-8 keys
    for key in ["k".repeat(250), "ключ:中文:é".to_string()] {
        m.set(&key, &key, Expiry::NEVER).await.unwrap();
        assert_eq!(value(&m.get(&key).await, &key), key.as_bytes());
        assert_eq!(
            owner(&key).raw_get(key.as_bytes()).as_deref(),
            Some(key.as_bytes())
        );
    }
}

/// Keys memcached cannot take (empty, longer than 250 bytes with the prefix, a space, any
/// control character, CRLF injections) and values above `max_value_size` are typed errors
/// returned before anything is sent: a proxy in front of the server sees no byte and not even a
/// connection, for every command. Then a valid request goes through.
pub async fn invalid_keys_and_values_are_refused_before_anything_is_sent<C: Api>() {
    let s = Memcached::start(LO, 0, "");
    let p = FaultProxy::start(s.sock());
    let list = format!("{} 1", p.addr_string());
    let m = build::<C>(|b| b.server_list(&list));
    let mut hostile: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"x\r\nflush_all".to_vec(),
        b"x\nflush_all".to_vec(),
        b"a b".to_vec(),
        b"get\tx".to_vec(),
        b"nul\0byte".to_vec(),
        b"del\x7f".to_vec(),
        vec![b'k'; 251],
        vec![b'k'; 100_000],
        b"k 0 0 1\r\nX\r\nset y".to_vec(),
    ];
    hostile.extend((0u8..32).map(|c| vec![b'a', c, b'b']));
    let mut tried = 0;
    for k in &hostile {
        let k = k.as_slice();
        let results = [
            m.get(k).await.err(),
            m.gets(k).await.err(),
            m.gat(k, Duration::from_secs(1)).await.err(),
            m.gats(k, Duration::from_secs(1)).await.err(),
            m.set(k, "v", Expiry::NEVER).await.err(),
            m.add(k, "v", Expiry::NEVER).await.err(),
            m.replace(k, "v", Expiry::NEVER).await.err(),
            m.append(k, "v").await.err(),
            m.prepend(k, "v").await.err(),
            m.cas(k, "v", Expiry::NEVER, 1).await.err(),
            m.delete(k).await.err(),
            m.incr(k, 1).await.err(),
            m.decr(k, 1).await.err(),
            m.touch(k, Duration::from_secs(1)).await.err(),
            m.get_multi(&[k]).await.remove(0).err(),
            m.set_multi(&[(k, "v")], 0, Expiry::NEVER)
                .await
                .remove(0)
                .err(),
            m.delete_multi(&[k]).await.remove(0).err(),
        ];
        for r in results {
            assert!(
                matches!(r, Some(Error::InvalidKey { .. })),
                "{}: {k:?}: {r:?}",
                C::NAME
            );
            tried += 1;
        }
    }
    // values above the limit, for every storage command and inside a multi-set
    let big = vec![b'v'; 1024 * 1024 + 1];
    let results = [
        m.set("big", &big, Expiry::NEVER).await.err(),
        m.add("big", &big, Expiry::NEVER).await.err(),
        m.replace("big", &big, Expiry::NEVER).await.err(),
        m.append("big", &big).await.err(),
        m.prepend("big", &big).await.err(),
        m.cas("big", &big, Expiry::NEVER, 1).await.err(),
        m.set_multi(&[("big", &big)], 0, Expiry::NEVER)
            .await
            .remove(0)
            .err(),
    ];
    for r in results {
        assert!(matches!(r, Some(Error::ValueTooLarge { .. })), "{r:?}");
        tried += 1;
    }
    // the prefix counts towards the 250 bytes; a smaller max_value_size is the limit
    let ns = build::<C>(|b| b.server_list(&list).prefix("ns:").max_value_size(10));
    for r in [
        ns.get([b'k'; 248]).await.err(),
        ns.set([b'k'; 248], "v", Expiry::NEVER).await.err(),
        ns.get_multi(&[[b'k'; 248]]).await.remove(0).err(),
    ] {
        assert!(matches!(r, Some(Error::InvalidKey { .. })), "{r:?}");
    }
    let r = ns.set("k", [b'v'; 11], Expiry::NEVER).await;
    assert!(matches!(r, Err(Error::ValueTooLarge { .. })), "{r:?}");
    assert_eq!(p.state.to_server_bytes.load(Ordering::SeqCst), 0);
    assert_eq!(
        p.state.connections.load(Ordering::SeqCst),
        0,
        "not even a connection was opened"
    );
    println!(
        "{}: {} hostile keys x 17 commands and 7 large values: {tried} attempts, 0 bytes reached the server",
        C::NAME,
        hostile.len()
    );
    // the limits themselves pass: 247 bytes + "ns:", 10-byte values
    let longest = vec![b'k'; 247];
    assert_eq!(
        ns.set(&longest, [b'v'; 10], Expiry::NEVER).await.unwrap(),
        StoreOutcome::Stored
    );
    let mut wire = b"ns:".to_vec();
    wire.extend_from_slice(&longest);
    assert_eq!(s.raw_get(&wire), Some(vec![b'v'; 10]));
    m.set("survivor", "still here", Expiry::NEVER)
        .await
        .unwrap();
    assert_eq!(
        m.get("survivor").await.unwrap().unwrap().value,
        &b"still here"[..]
    );
    assert!(p.state.to_server_bytes.load(Ordering::SeqCst) > 0);
}

/// get_multi, set_multi and delete_multi over four servers (weights 3/1/2/1, two on port 11211):
/// 1,000 keys, each on the server the ring names (read raw); results in input order with
/// duplicates answered each time, invalid keys failing alone in their places, missing keys
/// `None`; zero keys; delete_multi removes from the servers.
pub async fn multi_key_operations_across_four_servers<C: Api>() {
    let c = Cluster::four();
    let m = build::<C>(|b| b.server_list(&c.server_list()).pool_size(4));
    // the varying part first (fnv-style hashes spread keys varying at their end badly)
    let items: Vec<(String, String)> = (0..1000)
        .map(|i| {
            (
                format!("{i}:multi:ключ"),
                format!("value-{i}-{}", "x".repeat(i % 50)),
            )
        })
        .collect();
    let set = m.set_multi(&items, 3, Expiry::NEVER).await;
    assert_eq!(set.len(), items.len());
    for ((k, _), r) in items.iter().zip(&set) {
        assert!(matches!(r, Ok(StoreOutcome::Stored)), "{k}: {r:?}");
    }
    let per_server = assert_placed(&refs(&c.servers), &m.ring(), &items, same, same);
    assert_eq!(
        per_server.len(),
        4,
        "every server owns keys: {per_server:?}"
    );
    // both port-11211 servers took keys: the default-port naming rule ran live
    assert!(
        c.servers[..2]
            .iter()
            .all(|s| s.port == 11211 && per_server.contains_key(&s.addr())),
        "{per_server:?}"
    );

    // a mixed list: every key, a missing one, duplicates, invalid keys, in this order
    let mut keys: Vec<String> = Vec::new();
    let mut expect: Vec<Option<Option<&str>>> = Vec::new(); // None: an invalid key
    for (i, (k, v)) in items.iter().enumerate() {
        keys.push(k.clone());
        expect.push(Some(Some(v.as_str())));
        match i % 97 {
            0 => {
                keys.push("bad key".into());
                expect.push(None);
            }
            1 => {
                keys.push(format!("{i}:absent"));
                expect.push(Some(None));
            }
            2 => {
                // a duplicate of an earlier key, answered again
                let (dk, dv) = &items[i / 2];
                keys.push(dk.clone());
                expect.push(Some(Some(dv.as_str())));
            }
            _ => {}
        }
    }
    keys.push(items[0].0.clone());
    expect.push(Some(Some(items[0].1.as_str())));
    keys.push(String::new());
    expect.push(None);
    let got = m.get_multi(&keys).await;
    assert_eq!(got.len(), keys.len());
    for ((k, e), r) in keys.iter().zip(&expect).zip(&got) {
        match (e, r) {
            (None, Err(Error::InvalidKey { .. })) => {}
            (Some(None), Ok(None)) => {}
            (Some(Some(v)), Ok(Some(item))) => {
                assert_eq!(
                    (&item.value[..], item.flags, item.cas),
                    (v.as_bytes(), 3, None),
                    "{k}"
                );
            }
            other => panic!(
                "{}: {k:?}: expected {:?}, got {:?}",
                C::NAME,
                other.0,
                other.1
            ),
        }
    }

    // zero keys
    let none: [&str; 0] = [];
    assert!(m.get_multi(&none).await.is_empty());
    assert!(m.delete_multi(&none).await.is_empty());
    let no_items: [(&str, &str); 0] = [];
    assert!(m.set_multi(&no_items, 0, Expiry::NEVER).await.is_empty());

    // delete_multi: the first 100 keys and an invalid one, in order; then again: not found
    let mut doomed: Vec<&str> = items[..100].iter().map(|(k, _)| k.as_str()).collect();
    doomed.insert(50, "bad key");
    let del = m.delete_multi(&doomed).await;
    assert_eq!(del.len(), doomed.len());
    for (k, r) in doomed.iter().zip(&del) {
        if *k == "bad key" {
            assert!(matches!(r, Err(Error::InvalidKey { .. })), "{r:?}");
        } else {
            assert!(matches!(r, Ok(DeleteOutcome::Deleted)), "{k}: {r:?}");
        }
    }
    let again = m.delete_multi(&doomed).await;
    for (k, r) in doomed.iter().zip(&again) {
        if *k != "bad key" {
            assert!(matches!(r, Ok(DeleteOutcome::NotFound)), "{k}: {r:?}");
        }
    }
    for s in &c.servers {
        let gone = s.text().get_many(&doomed);
        assert!(gone.is_empty(), "deleted keys still on {}", s.addr());
    }
    // the other 900 are untouched
    let kept = holders(
        &refs(&c.servers),
        &items[100..].iter().map(|(k, _)| k).collect::<Vec<_>>(),
    );
    assert_eq!(kept.len(), 900);

    // a set_multi with invalid keys and a value too large: they fail alone, in their places
    let too_big = vec![b'x'; 2 << 20];
    let mixed: Vec<(&str, &[u8])> = vec![
        ("mixed:a", b"A"),
        ("bad key", b"B"),
        ("mixed:huge", &too_big),
        ("mixed:c", b"C"),
    ];
    let r = m.set_multi(&mixed, 0, Expiry::NEVER).await;
    assert_eq!(r.len(), 4);
    assert!(matches!(r[0], Ok(StoreOutcome::Stored)), "{:?}", r[0]);
    assert!(matches!(r[1], Err(Error::InvalidKey { .. })), "{:?}", r[1]);
    assert!(
        matches!(r[2], Err(Error::ValueTooLarge { .. })),
        "{:?}",
        r[2]
    );
    assert!(matches!(r[3], Ok(StoreOutcome::Stored)), "{:?}", r[3]);
    let got = m.get_multi(&["mixed:c", "mixed:huge", "mixed:a"]).await;
    assert_eq!(value(&got[0], "mixed:c"), b"C");
    assert_eq!(got[1].as_ref().unwrap(), &None);
    assert_eq!(value(&got[2], "mixed:a"), b"A");
}

/// Values near the 1 MiB limit round trip byte for byte, alone and 20 at a time, and a small
/// value after them is read right (the read buffer shrinks back).
pub async fn large_values_round_trip<C: Api>() {
    let c = Cluster::on_free_ports(&[1, 1]);
    let m = build::<C>(|b| b.server_list(&c.server_list()));
    // a million bytes: near the limit, and within memcached's 1 MiB item size with its header
    let limit: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        m.set("large:limit", &limit, Expiry::NEVER).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(value(&m.get("large:limit").await, "large:limit"), limit);
    let many: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| (format!("large:m{i}"), vec![b'a' + i as u8; 200_000]))
        .collect();
    let stored = m.set_multi(&many, 0, Expiry::NEVER).await;
    assert!(stored.iter().all(|r| r.is_ok()), "{stored:?}");
    let keys: Vec<&str> = many.iter().map(|(k, _)| k.as_str()).collect();
    let got = m.get_multi(&keys).await;
    for ((k, v), r) in many.iter().zip(&got) {
        assert_eq!(&value(r, k), v, "{k}");
    }
    assert_placed(&refs(&c.servers), &m.ring(), &many, same, same);
    m.set("small", "s", Expiry::NEVER).await.unwrap();
    assert_eq!(m.get("small").await.unwrap().unwrap().value, &b"s"[..]);
}

/// A prefix is sent in front of every key and not hashed (the owner is the plain key's), unless
/// `hash_with_prefix` is on (the owner is the prefixed key's); the multi-key calls map the
/// prefixed replies back to the keys asked.
pub async fn prefix_is_sent_and_hashed_only_when_asked<C: Api>() {
    let c = Cluster::on_free_ports(&[1, 1, 1, 1]);
    let list = c.server_list();
    let items: Vec<(String, String)> = (0..200)
        .map(|i| (format!("p{i}"), format!("v{i}")))
        .collect();
    let wire = |k: &[u8]| [&b"app1:"[..], k].concat();
    let mut owners = Vec::new();
    for hash_with_prefix in [false, true] {
        let m = build::<C>(|b| {
            b.server_list(&list)
                .prefix("app1:")
                .hash_with_prefix(hash_with_prefix)
        });
        for (k, v) in &items[..100] {
            assert_eq!(
                m.set(k, v, Expiry::NEVER).await.unwrap(),
                StoreOutcome::Stored
            );
        }
        let stored = m.set_multi(&items[100..], 0, Expiry::NEVER).await;
        assert!(stored.iter().all(|r| r.is_ok()), "{stored:?}");
        let hashed = |k: &[u8]| {
            if hash_with_prefix {
                wire(k)
            } else {
                k.to_vec()
            }
        };
        assert_placed(&refs(&c.servers), &m.ring(), &items, wire, hashed);
        let keys: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
        let got = m.get_multi(&keys).await;
        for ((k, v), r) in items.iter().zip(&got) {
            assert_eq!(value(r, k), v.as_bytes(), "{k}");
        }
        // nothing under the bare key
        for s in &c.servers {
            assert!(
                s.text().get_many(&keys).is_empty(),
                "a bare key on {}",
                s.addr()
            );
        }
        owners.push(
            items
                .iter()
                .map(|(k, _)| {
                    m.ring()
                        .server_for(&hashed(k.as_bytes()))
                        .unwrap()
                        .addr
                        .clone()
                })
                .collect::<Vec<_>>(),
        );
        let del = m.delete_multi(&keys).await;
        assert!(
            del.iter().all(|r| matches!(r, Ok(DeleteOutcome::Deleted))),
            "{del:?}"
        );
    }
    let moved = owners[0]
        .iter()
        .zip(&owners[1])
        .filter(|(a, b)| a != b)
        .count();
    assert!(moved > 0, "hash_with_prefix moved no key");
}

/// Every key command and multi-key operation is sent in the protocol the client was built with
/// (read off the wire by a recording proxy): text verbs only for text; `mg`, `ms`, `md`, `ma`,
/// `mn` only for meta. `version` is allowed for both (a health probe on a new connection). This
/// is what makes the meta runners prove anything: without it, a meta setting that had no effect
/// would pass every other scenario over text.
pub async fn requests_use_the_protocol_asked_for<C: Api>() {
    let s = Memcached::start(LO, 0, "");
    let p = FaultProxy::start(s.sock());
    let m = build::<C>(|b| b.server_list(&format!("{} 1", p.addr_string())));
    p.state.start_recording();
    let k = "wire:k";
    let n = "wire:n";
    m.set(k, "v", Expiry::NEVER).await.unwrap();
    m.set(n, "5", Expiry::NEVER).await.unwrap();
    m.get(k).await.unwrap();
    m.get("wire:missing").await.unwrap();
    let cas = m.gets(k).await.unwrap().and_then(|i| i.cas).unwrap_or(1);
    m.gat(k, Duration::from_secs(100)).await.unwrap();
    m.gats(k, Duration::from_secs(100)).await.unwrap();
    m.add(k, "x", Expiry::NEVER).await.unwrap();
    m.replace(k, "v", Expiry::NEVER).await.unwrap();
    m.append(k, "+").await.unwrap();
    m.prepend(k, "+").await.unwrap();
    m.cas(k, "c", Expiry::NEVER, cas).await.unwrap();
    m.incr(n, 1).await.unwrap();
    m.decr(n, 1).await.unwrap();
    m.touch(k, Duration::from_secs(100)).await.unwrap();
    m.delete(k).await.unwrap();
    let keys = ["wire:a", "wire:b", "wire:c"];
    let items: Vec<(&str, &str)> = keys.iter().map(|k| (*k, "m")).collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    assert!(m.get_multi(&keys).await.iter().all(|r| r.is_ok()));
    assert!(m.delete_multi(&keys).await.iter().all(|r| r.is_ok()));
    let (requests, replies) = p.state.recorded();
    let verbs = request_verbs(&requests);
    let allowed: &[&str] = match C::PROTOCOL {
        memshard::Protocol::Text => &[
            "get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend", "cas",
            "delete", "incr", "decr", "touch", "version",
        ],
        memshard::Protocol::Meta => &["mg", "ms", "md", "ma", "mn", "version"],
    };
    let foreign: Vec<&String> = verbs
        .iter()
        .filter(|v| !allowed.contains(&v.as_str()))
        .collect();
    assert!(
        foreign.is_empty(),
        "{}: {:?} sent {foreign:?}\nrequests: {}\nreplies: {}",
        C::NAME,
        C::PROTOCOL,
        String::from_utf8_lossy(&requests).escape_debug(),
        String::from_utf8_lossy(&replies).escape_debug(),
    );
    let distinct: HashSet<&String> = verbs.iter().collect();
    println!("{}: {} requests, verbs {distinct:?}", C::NAME, verbs.len());
}

/// The first word of every request line in `wire`, skipping the data blocks of storage
/// commands (text: the 5th token is the length; meta `ms`: the 3rd).
fn request_verbs(wire: &[u8]) -> Vec<String> {
    let mut verbs = Vec::new();
    let mut rest = wire;
    while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 2..];
        let tokens: Vec<&str> = line.split(' ').collect();
        let data = match tokens[0] {
            "set" | "add" | "replace" | "append" | "prepend" | "cas" => tokens.get(4),
            "ms" => tokens.get(2),
            _ => None,
        };
        if let Some(len) = data {
            let len: usize = len
                .parse()
                .unwrap_or_else(|_| panic!("data length in {line:?}"));
            rest = &rest[(len + 2).min(rest.len())..];
        }
        verbs.push(tokens[0].to_string());
    }
    assert!(rest.is_empty(), "an unended request: {rest:?}");
    verbs
}

/// For the twemproxy, spymemcached and dalli flavours the client's ring gives the peers'
/// committed answers (compat-vectors, made by running nutcracker, spymemcached and dalli), and
/// its requests go where that ring says.
pub async fn placement_follows_each_flavor<C: Api>() {
    let c = Cluster::four();
    for (flavor, case_name) in [
        (
            memshard::Flavor::Twemproxy,
            "twemproxy/cases/default-weights-29-16-15-named",
        ),
        (
            memshard::Flavor::Spymemcached,
            "spymemcached/cases/same-ip-ports",
        ),
        (memshard::Flavor::Dalli, "dalli/cases/random-10"),
    ] {
        let case = crate::common::compat_case(case_name);
        assert_eq!(
            case.meta.get("flavor"),
            Some(&flavor.to_string()),
            "{case_name}"
        );
        assert!(
            !case.meta.contains_key("hash") && !case.meta.contains_key("hash_tag"),
            "{case_name}"
        );
        assert_eq!(case.expected.len(), 1000, "{case_name}");
        let a = build::<C>(|b| b.server_list(&case.servers).flavor(flavor));
        for (k, addr) in &case.expected {
            assert_eq!(
                &a.ring().server_for(k).unwrap().addr,
                addr,
                "{case_name}: {:?}",
                String::from_utf8_lossy(k)
            );
        }
        let a = build::<C>(|b| b.server_list(&c.server_list()).flavor(flavor));
        let items: Vec<(String, String)> = (0..200)
            .map(|i| (format!("{i}:flavor:{flavor}"), format!("{i}!")))
            .collect();
        let stored = a.set_multi(&items, 0, Expiry::NEVER).await;
        assert!(stored.iter().all(|r| r.is_ok()), "{stored:?}");
        let per_server = assert_placed(&refs(&c.servers), &a.ring(), &items, same, same);
        assert!(per_server.len() >= 2, "{flavor}: keys on one server only");
    }
}

/// `version`, `stats`, `verbosity` and `flush_all` answer once per server, in the ring's
/// server order, each answer from that server (its pid, its version, its settings); a server
/// that is gone fails its own entry only.
pub async fn server_wide_commands_answer_per_server<C: Api>() {
    let c = Cluster::on_free_ports(&[1, 1, 1]);
    let m = build::<C>(|b| b.server_list(&c.server_list()));
    let order: Vec<Server> = m.ring().servers().to_vec();
    let versions = m.version().await;
    assert_eq!(versions.len(), 3);
    for ((s, v), want) in versions.iter().zip(&order) {
        assert_eq!(s, want);
        let raw = c.by_addr(&s.addr).raw(b"version\r\n", b"\r\n");
        let raw = String::from_utf8(raw).unwrap();
        assert_eq!(
            Some(v.as_ref().unwrap().as_str()),
            raw.trim_end().strip_prefix("VERSION "),
            "{}",
            s.addr
        );
    }
    let stats = m.stats(None).await;
    assert_eq!(stats.len(), 3);
    for ((s, st), want) in stats.iter().zip(&order) {
        assert_eq!(s, want);
        let st = st.as_ref().unwrap();
        let pid = st.iter().find(|(k, _)| k == "pid").map(|(_, v)| v.clone());
        assert_eq!(pid, Some(c.by_addr(&s.addr).pid.to_string()), "{}", s.addr);
    }
    let settings = m.stats(Some("settings")).await;
    for (s, st) in &settings {
        let st = st.as_ref().unwrap();
        let maxbytes = st
            .iter()
            .find(|(k, _)| k == "maxbytes")
            .map(|(_, v)| v.as_str());
        assert_eq!(maxbytes, Some("33554432"), "{}: -m 32", s.addr);
    }
    let bad = m.stats(Some("a b")).await;
    assert_eq!(bad.len(), 3);
    assert!(
        bad.iter().all(|(_, r)| matches!(r, Err(Error::Config(_)))),
        "{bad:?}"
    );
    for level in [1, 0] {
        let v = m.verbosity(level).await;
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|(_, r)| r.is_ok()), "{v:?}");
    }

    let items: Vec<(String, String)> = (0..60).map(|i| (format!("f{i}"), format!("{i}"))).collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    let keys: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
    for delay in [None, Some(0)] {
        let flushed = m.flush_all(delay).await;
        assert_eq!(flushed.len(), 3);
        assert!(flushed.iter().all(|(_, r)| r.is_ok()), "{flushed:?}");
        for s in &c.servers {
            assert!(
                s.text().get_many(&keys).is_empty(),
                "{} not flushed",
                s.addr()
            );
        }
        assert!(
            m.get_multi(&keys)
                .await
                .iter()
                .all(|r| matches!(r, Ok(None)))
        );
        assert!(
            m.set_multi(&items, 0, Expiry::NEVER)
                .await
                .iter()
                .all(|r| r.is_ok())
        );
    }

    // one server gone: its entry fails, the others answer
    let gone = &c.servers[1];
    gone.signal("KILL");
    let versions = m.version().await;
    for (s, v) in &versions {
        assert_eq!(v.is_err(), s.addr == gone.addr(), "{}: {v:?}", s.addr);
    }
    let stats = m.stats(None).await;
    for (s, v) in &stats {
        assert_eq!(v.is_err(), s.addr == gone.addr(), "{}", s.addr);
    }
}

/// Settings that could not work are errors at build, naming the setting, on both builders;
/// the limits themselves build; a weight of 0 is refused for every flavour.
pub async fn settings_that_cannot_work_are_refused_at_build<C: Api>() {
    let one = |b: C::Builder| b.servers(vec![Server::new("127.255.0.9", 9)]);
    let policy = |retry| FailurePolicy::new(1, retry, false);
    type Case<B> = (&'static str, Box<dyn FnOnce(B) -> B>);
    let timeouts: Vec<Case<C::Builder>> = vec![
        (
            "checkout_timeout",
            Box::new(|b| b.checkout_timeout(Duration::ZERO)),
        ),
        (
            "checkout_timeout",
            Box::new(|b| b.checkout_timeout(Duration::MAX)),
        ),
        ("read_timeout", Box::new(|b| b.read_timeout(Duration::MAX))),
        ("read_timeout", Box::new(|b| b.read_timeout(Duration::ZERO))),
        (
            "write_timeout",
            Box::new(|b| b.write_timeout(Duration::MAX)),
        ),
        (
            "connect_timeout",
            Box::new(|b| b.connect_timeout(Duration::ZERO)),
        ),
        (
            "connect_timeout",
            Box::new(|b| b.connect_timeout(MAX_TIMEOUT + Duration::from_nanos(1))),
        ),
        (
            "failure_policy.retry_timeout",
            Box::new(move |b| b.failure_policy(policy(Duration::MAX))),
        ),
    ];
    for (setting, f) in timeouts {
        let e = setting_error(try_build::<C>(|b| f(one(b))));
        match &e {
            SettingError::ZeroTimeout { setting: s }
            | SettingError::TimeoutTooLong { setting: s, .. } => assert_eq!(*s, setting, "{e}"),
            other => panic!("{setting}: {other:?}"),
        }
        assert!(e.to_string().contains(setting), "{e}");
    }
    // Under 1 ms no connect or round trip can finish: refused, named.
    for d in [Duration::from_nanos(1), Duration::from_micros(999)] {
        let e = setting_error(try_build::<C>(|b| one(b).read_timeout(d)));
        assert_eq!(
            e,
            SettingError::TimeoutTooShort {
                setting: "read_timeout",
                value: d
            }
        );
    }
    for d in [MAX_TIMEOUT, Duration::from_millis(1)] {
        let r = try_build::<C>(|b| {
            one(b)
                .checkout_timeout(d)
                .connect_timeout(d)
                .read_timeout(d)
                .write_timeout(d)
                .failure_policy(policy(d).with_auto_eject(true))
        });
        assert!(r.is_ok(), "{d:?}: {:?}", r.err());
    }
    assert_eq!(
        setting_error(try_build::<C>(|b| one(b).pool_size(0))),
        SettingError::ZeroPoolSize
    );
    for n in [MAX_POOL_SIZE + 1, u32::MAX] {
        assert_eq!(
            setting_error(try_build::<C>(|b| one(b).pool_size(n))),
            SettingError::PoolTooLarge(n)
        );
    }
    assert_eq!(
        setting_error(try_build::<C>(|b| one(b).pool_size(2).min_idle(3))),
        SettingError::MinIdleAbovePoolSize {
            min_idle: 3,
            pool_size: 2
        }
    );
    let e = setting_error(try_build::<C>(|b| one(b).prefix("has space")));
    assert!(
        std::error::Error::source(&e).is_some(),
        "the key error is kept as the source"
    );
    assert!(try_build::<C>(|b| one(b).pool_size(MAX_POOL_SIZE)).is_ok());
    let zero = vec![Server::new("127.255.0.1", 11211).with_weight(0)];
    for &(name, f) in FLAVORS {
        let r = try_build::<C>(|b| b.servers(zero.clone()).flavor(f));
        assert!(
            matches!(r, Err(Error::Ring(RingError::ZeroWeight { .. }))),
            "{name}: {:?}",
            r.err()
        );
    }
}

fn setting_error<C>(r: memshard::Result<C>) -> SettingError {
    match r {
        Err(Error::Setting(e)) => {
            let text = e.to_string();
            assert!(!text.is_empty() && !text.contains("--"), "{text}");
            e
        }
        Err(e) => panic!("expected a setting error, got {e}"),
        Ok(_) => panic!("expected a setting error, the client was built"),
    }
}

// ---------------------------------------------------------------------------------------
// parity list
// ---------------------------------------------------------------------------------------

/// `set_multi_noreply`: the values are stored where the ring says, byte for byte; invalid keys
/// and values above the client's limit fail alone before sending; a value the server rejects
/// (above its item size limit, with the client's limit raised) is not stored while the others
/// of the same batch are, and the connections go on. (Server error lines to noreply sets:
/// bounded.rs.)
pub async fn set_multi_noreply_stores_and_reports_server_errors<C: ParityApi>() {
    let c = Cluster::on_free_ports(&[1, 1, 1]);
    let m = build::<C>(|b| b.server_list(&c.server_list()));
    let items: Vec<(String, String)> = (0..300)
        .map(|i| (format!("{i}:nr"), "x".repeat(i)))
        .collect();
    let r = m.set_multi_noreply(&items, 5, Expiry::NEVER).await;
    assert_eq!(r.len(), items.len());
    assert!(r.iter().all(|r| r.is_ok()), "{r:?}");
    assert_placed(&refs(&c.servers), &m.ring(), &items, same, same);
    let keys: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
    for ((k, v), got) in items.iter().zip(m.get_multi(&keys).await) {
        let item = got.unwrap().unwrap_or_else(|| panic!("{k} missing"));
        assert_eq!((&item.value[..], item.flags), (v.as_bytes(), 5), "{k}");
    }
    let empty: [(&str, &str); 0] = [];
    assert!(
        m.set_multi_noreply(&empty, 0, Expiry::NEVER)
            .await
            .is_empty()
    );

    // client-side refusals, in place
    let big = vec![b'b'; 1024 * 1024 + 1];
    let mixed: Vec<(&str, &[u8])> = vec![("nr:ok", b"ok"), ("bad key", b"v"), ("nr:big", &big)];
    let r = m.set_multi_noreply(&mixed, 0, Expiry::NEVER).await;
    assert!(r[0].is_ok(), "{:?}", r[0]);
    assert!(matches!(r[1], Err(Error::InvalidKey { .. })), "{:?}", r[1]);
    assert!(
        matches!(r[2], Err(Error::ValueTooLarge { .. })),
        "{:?}",
        r[2]
    );
    assert_eq!(value(&m.get("nr:ok").await, "nr:ok"), b"ok");

    // a value the server rejects: the client allows 4 MiB, memcached stores at most 1 MiB.
    // memcached 1.6 answers nothing to a text noreply set it refuses (too large, out of
    // memory), so the client cannot know: the others are stored, that one is not, nothing is
    // stuck. Over meta it answers (below).
    let lenient = build::<C>(|b| b.server_list(&c.server_list()).max_value_size(4 << 20));
    let huge = vec![b'h'; 2 << 20];
    let rejected_key = "nr:rejected";
    let batch: Vec<(String, Vec<u8>)> = (0..60)
        .map(|i| (format!("{i}:nr2"), format!("v{i}").into_bytes()))
        .chain([(rejected_key.to_string(), huge)])
        .chain((60..80).map(|i| (format!("{i}:nr2"), format!("v{i}").into_bytes())))
        .collect();
    let r = lenient.set_multi_noreply(&batch, 0, Expiry::NEVER).await;
    assert_eq!(r.len(), batch.len());
    let owner_of = |k: &str| {
        lenient
            .ring()
            .server_for(k.as_bytes())
            .unwrap()
            .addr
            .clone()
    };
    let rejected_owner = owner_of(rejected_key);
    for ((k, v), r) in batch.iter().zip(&r) {
        let owner = owner_of(k);
        if k == rejected_key {
            for s in &c.servers {
                assert_eq!(s.raw_get(k.as_bytes()), None, "{k} on {}", s.addr());
            }
        } else if C::PROTOCOL == memshard::Protocol::Meta && owner == rejected_owner {
            // over meta, memcached does answer the refused quiet `ms`, without an opaque
            // token: which set failed is not knowable, so each set of that server reports it
            // (the others are stored all the same)
            let Err(Error::Server { message, .. }) = r else {
                panic!("{k}: {r:?}")
            };
            assert!(message.contains("object too large"), "{k}: {message}");
            assert_eq!(
                c.by_addr(&owner).raw_get(k.as_bytes()).as_ref(),
                Some(v),
                "{k}"
            );
        } else {
            assert!(r.is_ok(), "{k}: {r:?}");
            assert_eq!(
                c.by_addr(&owner).raw_get(k.as_bytes()).as_ref(),
                Some(v),
                "{k}"
            );
        }
    }
    // and the connection goes on
    assert_eq!(
        lenient.set("nr:after", "a", Expiry::NEVER).await.unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(value(&lenient.get("nr:after").await, "nr:after"), b"a");
}

/// A libmemcached configuration string and a twemproxy pool given to `peer_config`: the
/// client's ring is the one the configuration describes (flavour, key hash, hash tag), keys go
/// where that ring says under the configured namespace, and its failure policy applies. No peer
/// runs here: that the peer itself places keys so is checked against the real libmemcached, with
/// a configuration string and its `--NAMESPACE=`, in tests/prefix_live.rs (`lmc_cases`).
pub async fn peer_config_keys_go_where_the_configured_ring_says<C: ParityApi>() {
    let c = Cluster::on_free_ports(&[1, 1, 1]);
    let servers: String = c
        .servers
        .iter()
        .map(|s| format!(" --SERVER={}", s.addr()))
        .collect();
    let text = format!(
        "{servers} --HASH=MD5 --DISTRIBUTION=consistent --NAMESPACE=ns: --REMOVE-FAILED-SERVERS=1"
    );
    let cfg = memshard::config::libmemcached(&text).unwrap();
    let m = build::<C>(|b| b.peer_config(cfg.clone()));
    // (no separate point hash: the configurations here set one `--HASH` / `hash`)
    let ring = memshard::Ring::with_options(
        cfg.servers.clone(),
        cfg.flavor,
        Some(cfg.hash),
        cfg.hash_tag,
    )
    .unwrap();
    assert_eq!(m.ring().flavor(), cfg.flavor);
    assert_eq!(m.ring().servers(), ring.servers());
    let items: Vec<(String, String)> = (0..200)
        .map(|i| (format!("{i}:cfg"), format!("{i}")))
        .collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    let wire = |k: &[u8]| [&b"ns:"[..], k].concat();
    assert_placed(&refs(&c.servers), &ring, &items, wire, same);
    assert!(cfg.failure_policy.auto_eject, "--REMOVE-FAILED-SERVERS");

    // a twemproxy pool with a hash tag: keys with the same tag share a server
    let yaml = format!(
        "cache:\n  listen: 127.0.0.1:1\n  hash: fnv1a_64\n  hash_tag: \"{{}}\"\n  distribution: ketama\n  servers:\n{}",
        c.servers
            .iter()
            .map(|s| format!("    - {}:1\n", s.addr()))
            .collect::<String>()
    );
    let cfg = memshard::config::twemproxy(&yaml, Some("cache")).unwrap();
    let m = build::<C>(|b| b.peer_config(cfg.clone()));
    // (no separate point hash: the configurations here set one `--HASH` / `hash`)
    let ring = memshard::Ring::with_options(
        cfg.servers.clone(),
        cfg.flavor,
        Some(cfg.hash),
        cfg.hash_tag,
    )
    .unwrap();
    let items: Vec<(String, String)> = (0..100)
        .map(|i| (format!("user:{{{}}}:{i}", i % 7), format!("t{i}")))
        .collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    let per_server = assert_placed(&refs(&c.servers), &ring, &items, same, same);
    let tags: HashSet<(u32, String)> = items
        .iter()
        .enumerate()
        .map(|(i, (k, _))| {
            (
                (i % 7) as u32,
                ring.server_for(k.as_bytes()).unwrap().addr.clone(),
            )
        })
        .collect();
    assert_eq!(tags.len(), 7, "one server per tag: {tags:?}");
    assert!(!per_server.is_empty());
}
