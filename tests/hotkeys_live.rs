//! Hot keys against real memcached: the near cache, key replicas, and the tag audit.

mod common;

use common::servers::{Cluster, require};
use memshard::near::NearCacheConfig;
use memshard::{Client, StoreOutcome};
use std::time::Duration;

#[test]
fn near_cache_serves_repeated_reads_without_a_network_call() {
    if !require("memcached") {
        return;
    }
    let c = Cluster::on_free_ports(&[1, 1, 1]);
    let client = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .near_cache(NearCacheConfig::prefixes(
            ["hot:"],
            Duration::from_secs(30),
            1000,
        ))
        .build()
        .unwrap();
    client.set("hot:config", "v1", 0, 0).unwrap();
    client.set("cold:thing", "c", 0, 0).unwrap();
    // server gets, counted on every server (wherever the keys live)
    let gets = || c.servers.iter().map(|s| s.stat("cmd_get")).sum::<u64>();
    let g0 = gets();
    const READS: u64 = 1000;
    for _ in 0..READS {
        assert_eq!(client.get("hot:config").unwrap().unwrap().value, b"v1");
    }
    let hot_gets = gets() - g0;
    let g1 = gets();
    for _ in 0..100 {
        assert_eq!(client.get("cold:thing").unwrap().unwrap().value, b"c");
    }
    let cold_gets = gets() - g1;
    let s = client.near_cache_stats().unwrap();
    println!(
        "near cache: {READS} reads of a hot key -> {hot_gets} server get(s) (factor {}); 100 reads of an unmarked key -> {cold_gets} server gets; counters {s:?}",
        READS / hot_gets.max(1)
    );
    assert_eq!(hot_gets, 1, "only the first read reaches the server");
    assert_eq!((s.hits, s.misses), (READS - 1, 1));
    assert_eq!(cold_gets, 100, "unmarked keys are never cached");
    // a write through the client invalidates: the next read sees it
    assert_eq!(
        client.set("hot:config", "v2", 0, 0).unwrap(),
        StoreOutcome::Stored
    );
    assert_eq!(client.get("hot:config").unwrap().unwrap().value, b"v2");
    client.delete("hot:config").unwrap();
    assert_eq!(client.get("hot:config").unwrap(), None);
    // get_multi uses it too: after the first call (which fills the cache), no server get
    client.set("hot:a", "A", 0, 0).unwrap();
    let multi = |n: usize| {
        for _ in 0..n {
            let r = client.get_multi(&["hot:a", "hot:a"]);
            assert_eq!(r.len(), 2);
            for r in &r {
                assert_eq!(r.as_ref().unwrap().as_ref().unwrap().value, b"A");
            }
        }
    };
    let g2 = gets();
    multi(1);
    let first = gets() - g2;
    let g3 = gets();
    multi(49);
    let later = gets() - g3;
    println!(
        "near cache: get_multi of a hot key: {first} server get(s) the first time, {later} in 49 more calls"
    );
    assert!(
        (1..=2).contains(&first),
        "the first get_multi reads the server: {first}"
    );
    assert_eq!(later, 0, "get_multi of a cached key made server gets");
}

#[test]
fn replicas_spread_reads_over_distinct_servers_and_survive_a_failure() {
    if !require("memcached") {
        return;
    }
    let mut c = Cluster::on_free_ports(&[1, 1, 1, 1]);
    let client = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .connect_timeout(Duration::from_millis(200))
        .checkout_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let hot = client.replicated("rates:EUR", 3);
    let servers: Vec<String> = hot.servers().iter().map(|s| s.addr.clone()).collect();
    assert_eq!(servers.len(), 3);
    let mut distinct = servers.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "copies on distinct servers: {servers:?}");
    assert_eq!(
        servers[0],
        client.ring().server_for(b"rates:EUR").unwrap().addr,
        "copy 0 is on the key's owner"
    );
    // the walk over distinct servers, as libmemcached sees it: with equal weights every server
    // keeps its points when others are removed, so copy i is libmemcached's pick for the key
    // once the servers of copies 0..i are gone
    let mut rest = c.server_list();
    for (i, addr) in servers.iter().enumerate() {
        let Some(owner) = common::libmemcached::route(&rest, &["rates:EUR"]) else {
            break;
        };
        assert_eq!(
            &owner[0], addr,
            "copy {i}: libmemcached's walk gives {}",
            owner[0]
        );
        rest = rest
            .lines()
            .filter(|l| !l.starts_with(&format!("{addr} ")))
            .map(|l| format!("{l}\n"))
            .collect();
    }
    let stored = hot.set("1.08", 0, 0);
    assert_eq!(stored.len(), 3);
    assert!(
        stored.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored))),
        "{stored:?}"
    );
    // each copy is where the walk said, under its own name, and on no other server
    for (i, addr) in servers.iter().enumerate() {
        let name = if i == 0 {
            "rates:EUR".to_string()
        } else {
            format!("rates:EUR#r{i}")
        };
        for m in &c.servers {
            let want = (m.addr() == *addr).then_some(&b"1.08"[..]);
            assert_eq!(
                m.raw_get(name.as_bytes()).as_deref(),
                want,
                "{name} on {} (copy on {addr})",
                m.addr()
            );
        }
    }
    let before: Vec<u64> = servers
        .iter()
        .map(|a| c.by_addr(a).stat("cmd_get"))
        .collect();
    const READS: u64 = 3000;
    for _ in 0..READS {
        assert_eq!(hot.get().unwrap().unwrap().value, b"1.08");
    }
    let spread: Vec<u64> = servers
        .iter()
        .zip(&before)
        .map(|(a, b)| c.by_addr(a).stat("cmd_get") - b)
        .collect();
    println!("replicas: {READS} reads of one hot key over 3 copies -> server cmd_get {spread:?}");
    assert_eq!(spread.iter().sum::<u64>(), READS);
    for n in &spread {
        assert!((700..=1300).contains(n), "reads not spread: {spread:?}");
    }
    // one copy's server dies: every read still succeeds from the others
    let victim = servers[1].clone();
    c.servers.retain(|s| s.addr() != victim);
    let mut ok = 0;
    for _ in 0..300 {
        if hot.get().unwrap().is_some_and(|i| i.value == b"1.08") {
            ok += 1;
        }
    }
    println!("replicas: after killing {victim}, {ok}/300 reads answered");
    assert_eq!(ok, 300);
}

#[test]
fn tag_audit_flags_a_planted_wide_tag() {
    let dir = std::env::temp_dir().join(format!("memshard-tags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut keys = String::new();
    for i in 0..20_000 {
        keys.push_str(&format!("user:{{{}}}:profile\n", i % 5000));
    }
    for i in 0..8_000 {
        keys.push_str(&format!("order:{{acme}}:{i}\n"));
    }
    for i in 0..10_000 {
        keys.push_str(&format!("plain:{i}\n"));
    }
    std::fs::write(dir.join("keys.txt"), keys).unwrap();
    std::fs::write(
        dir.join("servers.txt"),
        "10.1.0.1:11211\n10.1.0.2:11211\n10.1.0.3:11211\n10.1.0.4:11211\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memshard"))
        .args(["plan", "--servers"])
        .arg(dir.join("servers.txt"))
        .arg("--tag-audit")
        .arg("--key-file")
        .arg(dir.join("keys.txt"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("38000 keys, 28000 with a tag, 5001 distinct tags"),
        "{text}"
    );
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("WARNING: tag"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].contains("\"acme\"") && warnings[0].contains("21.1%"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
