//! `memshard stats` against real memcached on 127.0.46.x (no other test binary uses those
//! addresses): each row checked against the server's own counters read raw, a stopped server,
//! `--watch` samples and rates, the flag on a server holding more than its ring share, and the
//! nodes of a discovery endpoint (the fake of tests/fakes/, on 127.0.46.49).

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::servers::{Memcached, Owned, require};
use common::{TempDir, TempFile};
use serde_json::Value;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{describe, memshard, memshard_in, parts};

/// Three servers on 127.0.46.`first`.. (free ports); each test has addresses of its own.
fn three(first: u8) -> Vec<Memcached> {
    (first..first + 3)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 46, i), 0, ""))
        .collect()
}

fn list(servers: &[Memcached]) -> TempFile {
    let text: String = servers.iter().map(|s| format!("{}\n", s.addr())).collect();
    TempFile::new("stats-servers.txt", &text)
}

/// The table of one text block: each data row (by its first cell) as header → cell. A server
/// down has only its address and the reason.
fn table(block: &str) -> HashMap<String, HashMap<String, String>> {
    let mut lines = block.lines().skip(1);
    let header: Vec<&str> = lines
        .next()
        .expect("a header line")
        .split_whitespace()
        .collect();
    assert_eq!(header[0], "server", "{block}");
    let mut rows = HashMap::new();
    for l in lines {
        let cells: Vec<&str> = l.split_whitespace().collect();
        if cells.len() != header.len() && cells.get(1) != Some(&"down:") {
            continue; // the notes under the table
        }
        let row = if cells[1] == "down:" {
            HashMap::from([("down".to_string(), cells[2..].join(" "))])
        } else {
            header
                .iter()
                .zip(&cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        };
        rows.insert(cells[0].to_string(), row);
    }
    rows
}

/// The server objects of a JSON sample by address.
fn by_address(v: &Value) -> HashMap<String, Value> {
    v["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| {
            (
                s["address"].as_str().expect("address").to_string(),
                s.clone(),
            )
        })
        .collect()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(out)))
}

/// Keys written and read through `memshard`: every row's items equal `curr_items` read raw,
/// its hit ratio the server's own hits over gets, and the totals add up (the 30 hits and 10
/// misses made here); no server is flagged when the ring placed every key.
#[test]
fn rows_are_the_servers_own_counters() {
    if !require("memcached") {
        return;
    }
    let s = three(1);
    let file = list(&s);
    let lines: String = (0..600).map(|i| format!("user:{i}\tvalue-{i}\n")).collect();
    let out = memshard_in(&["set", "--servers", file.path()], lines.as_bytes());
    assert!(out.status.success(), "{}", describe(&out));
    let mut get = vec!["get", "--servers", file.path()];
    let keys: Vec<String> = (0..30)
        .map(|i| format!("user:{i}"))
        .chain((0..10).map(|i| format!("absent:{i}")))
        .collect();
    get.extend(keys.iter().map(String::as_str));
    let out = memshard(&get);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));

    let out = memshard(&["stats", "--servers", file.path()]);
    let (code, text, _) = parts(&out);
    assert_eq!(code, 0, "{}", describe(&out));
    assert!(text.contains("3 servers, 3 answered"), "{text}");
    let rows = table(&text);
    let (mut hits, mut misses) = (0, 0);
    for m in &s {
        let row = &rows[&m.addr()];
        let (h, g) = (m.stat("get_hits"), m.stat("get_misses"));
        (hits, misses) = (hits + h, misses + g);
        assert_eq!(
            row["curr_items"],
            m.stat("curr_items").to_string(),
            "{text}"
        );
        let version = String::from_utf8_lossy(&m.raw(b"version\r\n", b"\r\n")).into_owned();
        assert_eq!(version, format!("VERSION {}\r\n", row["version"]), "{text}");
        let want = if h + g == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", h as f64 / (h + g) as f64)
        };
        assert_eq!(row["hit_ratio"], want, "{text}");
        assert_eq!(row["item_size_max"], "1048576", "{text}");
        assert_eq!(row["limit_maxbytes"], (32u64 << 20).to_string(), "{text}");
        assert_eq!(row["evictions"], "0", "{text}");
    }
    assert_eq!((hits, misses), (30, 10));
    let total = &rows["total"];
    assert_eq!(total["curr_items"], "600", "{text}");
    assert_eq!(total["hit_ratio"], "0.750", "{text}");
    assert_eq!(total["limit_maxbytes"], (96u64 << 20).to_string(), "{text}");
    assert!(!text.contains("ring share"), "{text}");

    let out = memshard(&["stats", "--servers", file.path(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let v = json(&out);
    let servers = by_address(&v);
    assert_eq!(servers.len(), 3);
    let mut ring = 0.0;
    for m in &s {
        let j = &servers[&m.addr()];
        assert_eq!(j["curr_items"], m.stat("curr_items"), "{j}");
        assert_eq!(j["get_hits"], m.stat("get_hits"), "{j}");
        assert_eq!(j["get_misses"], m.stat("get_misses"), "{j}");
        assert_eq!(j["item_size_max"], 1_048_576, "{j}");
        assert_eq!(j["skewed"], false, "{j}");
        assert!(j.get("error").is_none(), "{j}");
        ring += j["ring_share"].as_f64().expect("ring_share");
    }
    assert!((ring - 1.0).abs() < 1e-9, "ring shares add up to 1: {ring}");
    assert_eq!(v["totals"]["curr_items"], 600);
    assert_eq!(v["totals"]["hit_ratio"], 0.75);
    assert_eq!(v["totals"]["answered"], 3);
}

/// A server stopped (SIGSTOP: it takes connections and never answers) shows as down within
/// the default 1 s timeout, in text and JSON; the others still have their rows; exit status 1.
#[test]
fn a_stopped_server_is_down_within_seconds_and_exits_1() {
    if !require("memcached") {
        return;
    }
    let s = three(11);
    let file = list(&s);
    s[1].signal("STOP");
    let started = Instant::now();
    let out = memshard(&["stats", "--servers", file.path()]);
    let took = started.elapsed();
    let (code, text, err) = parts(&out);
    assert_eq!(code, 1, "{}", describe(&out));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(text.contains("3 servers, 2 answered"), "{text}");
    let rows = table(&text);
    assert!(rows[&s[1].addr()]["down"].contains("timeout"), "{text}");
    for m in [&s[0], &s[2]] {
        assert_eq!(rows[&m.addr()]["curr_items"], "0", "{text}");
    }
    assert!(err.contains("1 server(s) gave no `stats`"), "{err}");

    let started = Instant::now();
    let out = memshard(&["stats", "--servers", file.path(), "--json"]);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let v = json(&out);
    let servers = by_address(&v);
    assert!(servers[&s[1].addr()]["error"].is_string(), "{v}");
    assert_eq!(servers[&s[1].addr()]["down"], true, "{v}");
    assert!(servers[&s[1].addr()].get("curr_items").is_none(), "{v}");
    assert_eq!(servers[&s[0].addr()]["curr_items"], 0, "{v}");
    assert_eq!(v["totals"]["answered"], 2, "{v}");
    s[1].signal("CONT");
}

/// `--watch 1 --count 2`: two time-stamped blocks a second apart, the second with the rates
/// of the gets made meanwhile; in JSON one object per line, the first without rates.
#[test]
fn watch_prints_samples_with_rates() {
    if !require("memcached") {
        return;
    }
    let s = three(21);
    let file = list(&s);
    // gets on the first server all through the run, so its gets/s is above 0 in sample 2
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (addr, done) = (s[0].sock(), done.clone());
        std::thread::spawn(move || {
            let mut t = common::servers::Text::open(addr);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                t.get_many(&["nothing-here"]);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let started = Instant::now();
    let out = memshard(&[
        "stats",
        "--servers",
        file.path(),
        "--watch",
        "1",
        "--count",
        "2",
    ]);
    let took = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    load.join().expect("load thread");
    let (code, text, _) = parts(&out);
    assert_eq!(code, 0, "{}", describe(&out));
    assert!(took >= Duration::from_secs(1), "took {took:?}");
    let blocks: Vec<&str> = text.split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "{text}");
    for b in &blocks {
        assert!(b.contains("Z  3 servers, 3 answered"), "{text}");
        assert!(b.lines().nth(1).is_some_and(|h| h.contains("gets/s")));
    }
    let first = table(blocks[0]);
    let second = table(blocks[1]);
    assert_eq!(first[&s[0].addr()]["gets/s"], "-", "{text}");
    let rate: f64 = second[&s[0].addr()]["gets/s"].parse().expect("gets/s");
    assert!(rate > 10.0, "{text}");
    let hits: f64 = second["total"]["hits/s"].parse().expect("hits/s");
    assert_eq!(hits, 0.0, "{text}");
    assert_eq!(second[&s[1].addr()]["gets/s"], "0.0", "{text}");

    let out = memshard(&[
        "stats",
        "--servers",
        file.path(),
        "--json",
        "--watch",
        "1",
        "--count",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let samples: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(samples.len(), 2, "{text}");
    assert!(samples[0]["totals"]["rates"].is_null(), "{text}");
    assert!(samples[1]["totals"]["rates"]["gets"].is_number(), "{text}");
    assert!(by_address(&samples[1])[&s[2].addr()]["rates"]["sets"].is_number());
}

/// Keys written raw to one server (placement bypassed): it holds every item and about a third
/// of the ring, so it is flagged; not while there are fewer items than --skew-min-items.
#[test]
fn a_server_holding_more_than_its_ring_share_is_flagged() {
    if !require("memcached") {
        return;
    }
    let s = three(31);
    let file = list(&s);
    let heavy = &s[2];
    let items: Vec<(String, String)> = (0..300).map(|i| (format!("raw:{i}"), "x".into())).collect();
    heavy.text().store_all(&items);
    s[0].text().store_all(&items[..30]);

    let out = memshard(&["stats", "--servers", file.path()]);
    let (code, text, _) = parts(&out);
    assert_eq!(code, 0, "{}", describe(&out));
    let flags: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("its ring share of items"))
        .collect();
    assert_eq!(flags.len(), 1, "{text}");
    assert!(
        flags[0].starts_with(&format!("{} holds ", heavy.addr())),
        "{text}"
    );
    let ratio: f64 = table(&text)[&heavy.addr()]["items/ring"]
        .parse()
        .expect("items/ring");
    assert!(ratio > 2.0, "{text}");

    let out = memshard(&["stats", "--servers", file.path(), "--json"]);
    let v = json(&out);
    let servers = by_address(&v);
    assert_eq!(servers[&heavy.addr()]["skewed"], true, "{v}");
    assert_eq!(servers[&s[0].addr()]["skewed"], false, "{v}");
    assert_eq!(servers[&s[1].addr()]["items_per_ring"], 0.0, "{v}");

    let out = memshard(&[
        "stats",
        "--servers",
        file.path(),
        "--skew-min-items",
        "1000",
    ]);
    let (code, text, _) = parts(&out);
    assert_eq!(code, 0, "{}", describe(&out));
    assert!(!text.contains("ring share"), "{text}");
}

/// The fake ElastiCache configuration endpoint (tests/fakes/elasticache_config.py) serving
/// `config` on 127.0.46.49: its address, once it printed `READY <port>`.
fn discovery_endpoint(dir: &Path, config: &str) -> (Owned, String) {
    let file = dir.join("config.txt");
    std::fs::write(&file, config).expect("write config");
    let ready = dir.join("ready");
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fakes/elasticache_config.py"))
        .args(["--listen", "127.0.46.49:0", "--config"])
        .arg(&file)
        .stdout(std::fs::File::create(&ready).expect("ready file"))
        .stderr(Stdio::null());
    let owned = Owned::spawn(cmd).expect("python3 runs the fake");
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(&ready).unwrap_or_default();
        // the whole line: a port read while it is being written could be cut short
        if let Some(port) = text.strip_prefix("READY ").map(str::trim)
            && !port.is_empty()
            && text.ends_with('\n')
        {
            return (owned, format!("127.0.46.49:{port}"));
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the fake never got ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--discover`: the nodes the endpoint lists, each shown at the address it is reached at,
/// with the items written through the same discovery.
#[test]
fn discovered_nodes_are_the_rows() {
    if !require("memcached") || !require("python3") {
        return;
    }
    let s = three(41);
    let dir = TempDir::new("stats-discovery");
    let nodes: Vec<String> = s
        .iter()
        .enumerate()
        .map(|(i, m)| format!("node-{i}.cache|{}|{}", m.ip, m.port))
        .collect();
    let (_fake, ep) = discovery_endpoint(dir.path(), &format!("1\n{}\n", nodes.join(" ")));
    let ring = ["--discover", ep.as_str(), "--flavor", "libmemcached-modula"];
    let lines: String = (0..200).map(|i| format!("k:{i}\tv\n")).collect();
    let mut set = vec!["set"];
    set.extend(ring);
    let out = memshard_in(&set, lines.as_bytes());
    assert!(out.status.success(), "{}", describe(&out));

    let mut stats = vec!["stats", "--json"];
    stats.extend(ring);
    let out = memshard(&stats);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let v = json(&out);
    let servers = by_address(&v);
    assert_eq!(servers.len(), 3, "{v}");
    for m in &s {
        assert_eq!(
            servers[&m.addr()]["curr_items"],
            m.stat("curr_items"),
            "{v}"
        );
    }
    assert_eq!(v["totals"]["curr_items"], 200, "{v}");
}

/// Arguments clap refuses: exit status 2, before any server is asked.
#[test]
fn bad_arguments_are_usage_errors() {
    let file = TempFile::new("stats-unused.txt", "127.0.46.250:1\n");
    for args in [
        &["--count", "2"][..],
        &["--watch", "0"],
        &["--watch", "-1"],
        &["--watch", "NaN"],
        &["--watch", "inf"],
        &["--watch", "86401"],
        &["--skew-ratio", "NaN"],
        &["--watch", "1", "--count", "0"],
        &["--share-keys", "0"],
        &["--skew-ratio", "0"],
    ] {
        let mut a = vec!["stats", "--servers", file.path()];
        a.extend(args);
        let out = memshard(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }
}
