//! Metrics counted by the client next to the servers' own `stats` (feature `metrics`).
#![cfg(feature = "metrics")]

mod common;

use common::servers::{Cluster, require};
use memshard::Client;
use memshard::Expiry;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use std::collections::HashMap;

#[test]
fn metrics_match_server_stats() {
    if !require("memcached") {
        return;
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::set_global_recorder(recorder).expect("the only recorder in this test binary");
    let c = Cluster::on_free_ports(&[2, 1, 1]);
    let client = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .build()
        .unwrap();
    let before: Vec<(u64, u64, u64)> = c
        .servers
        .iter()
        .map(|s| (s.stat("cmd_get"), s.stat("cmd_set"), s.stat("get_hits")))
        .collect();
    for i in 0..600 {
        client.set(format!("m:{i}"), "v", Expiry::NEVER).unwrap();
    }
    for i in 0..900 {
        // 600 hits, 300 misses
        let got = client.get(format!("m:{i}")).unwrap();
        assert_eq!(
            got.map(|item| item.value.to_vec()),
            (i < 600).then(|| b"v".to_vec()),
            "m:{i}"
        );
    }
    let keys: Vec<String> = (0..200).map(|i| format!("m:{i}")).collect();
    let got = client.get_multi(&keys);
    assert_eq!(got.len(), 200);
    for (k, r) in keys.iter().zip(&got) {
        assert_eq!(
            r.as_ref().unwrap().as_ref().map(|i| &i.value[..]),
            Some(&b"v"[..]),
            "{k}"
        );
    }

    // counters by (name, server, command)
    let mut counters: HashMap<(String, String, String), u64> = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if let DebugValue::Counter(n) = value {
            let labels: HashMap<String, String> = key
                .key()
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            let server = labels.get("server").cloned().unwrap_or_default();
            let command = labels.get("command").cloned().unwrap_or_default();
            *counters
                .entry((key.key().name().to_string(), server, command))
                .or_default() += n;
        }
    }
    let get = |name: &str, server: &str, command: &str| {
        counters
            .get(&(name.into(), server.into(), command.into()))
            .copied()
            .unwrap_or(0)
    };
    let (mut total_hits, mut total_sets, mut busy) = (0, 0, 0);
    for (s, (g0, s0, h0)) in c.servers.iter().zip(before) {
        let addr = s.addr();
        let server_gets = s.stat("cmd_get") - g0; // one per key, also inside a multi-get
        let server_sets = s.stat("cmd_set") - s0;
        let server_hits = s.stat("get_hits") - h0;
        let sets = get("memshard_requests_total", &addr, "set");
        let hits = get("memshard_hits_total", &addr, "");
        let misses = get("memshard_misses_total", &addr, "");
        println!(
            "{addr}: client set requests {sets} / server cmd_set {server_sets}; client hits {hits} + misses {misses} / server cmd_get {server_gets}, get_hits {server_hits}"
        );
        assert_eq!(sets, server_sets);
        assert_eq!(
            hits + misses,
            server_gets,
            "every key asked for is a hit or a miss"
        );
        assert_eq!(hits, server_hits);
        total_hits += hits;
        total_sets += sets;
        busy += usize::from(server_sets > 0 && server_gets > 0);
    }
    assert_eq!(busy, 3, "every server saw sets and gets");
    assert_eq!(total_sets, 600);
    assert_eq!(total_hits, 600 + 200);
    let gets: u64 = c
        .servers
        .iter()
        .map(|s| get("memshard_requests_total", &s.addr(), "get"))
        .sum();
    assert_eq!(gets, 900);

    // check_placement_at_start sets memshard_placement_agreement: below 1 for a client whose
    // placement did not write the keys (modula over keys the default ketama wrote), 1 for one
    // whose did
    let gauge = || {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find_map(|(key, _, _, value)| match value {
                DebugValue::Gauge(g) if key.key().name() == "memshard_placement_agreement" => {
                    Some(g.into_inner())
                }
                _ => None,
            })
    };
    assert_eq!(gauge(), None, "no check yet");
    let _modula = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .flavor(memshard::Flavor::LibmemcachedModula)
        .check_placement_at_start(1000)
        .build()
        .unwrap();
    let off = gauge().expect("the gauge after a check");
    assert!(off < 0.9, "modula over ketama's keys: {off}");
    let _same = Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .check_placement_at_start(1000)
        .build()
        .unwrap();
    assert_eq!(gauge(), Some(1.0));
}
