//! Metrics (feature `metrics`): a `metrics-util` DebuggingRecorder sees the client's metric
//! families, each labelled with the server it is about.
//!
//! The recorder is global to the test binary and its snapshots drain it, so every snapshot is
//! added to one shared tally under a lock; a scenario reads only the series labelled with its
//! own servers (free ports: no other test has them).
#![cfg(feature = "metrics")]

use crate::api::{ParityApi, ParitySettings, Settings, build};
use crate::common::servers::Cluster;
use crate::support::wait_for;
use memshard::Expiry;
use memshard::FailurePolicy;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// `(name, labels sorted)` → counter total, histogram sample count, or a gauge's last value
/// other than 0 (a snapshot sets every gauge to 0, so a 0 read may only be that).
type Tally = HashMap<(String, Vec<(String, String)>), u64>;

fn tally() -> std::sync::MutexGuard<'static, (Snapshotter, Tally)> {
    static T: OnceLock<Mutex<(Snapshotter, Tally)>> = OnceLock::new();
    let t = T.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::set_global_recorder(recorder).expect("the only recorder in this test binary");
        Mutex::new((snapshotter, Tally::new()))
    });
    let mut guard = t.lock().unwrap_or_else(|e| e.into_inner());
    let (snapshotter, tally) = &mut *guard;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let mut labels: Vec<(String, String)> = key
            .key()
            .labels()
            .map(|l| (l.key().to_string(), l.value().to_string()))
            .collect();
        labels.sort();
        let entry = tally
            .entry((key.key().name().to_string(), labels))
            .or_default();
        match value {
            DebugValue::Counter(n) => *entry += n,
            DebugValue::Histogram(samples) => *entry += samples.len() as u64,
            DebugValue::Gauge(v) if v.into_inner() != 0.0 => *entry = v.into_inner() as u64,
            DebugValue::Gauge(_) => {}
        }
    }
    guard
}

/// Sum of `name` over the series whose `server` label is `server` and whose other labels
/// include `with`.
fn total(name: &str, server: &str, with: &[(&str, &str)]) -> u64 {
    let guard = tally();
    guard
        .1
        .iter()
        .filter(|((n, labels), _)| {
            n == name
                && labels.iter().any(|(k, v)| k == "server" && v == server)
                && with
                    .iter()
                    .all(|(wk, wv)| labels.iter().any(|(k, v)| k == wk && v == wv))
        })
        .map(|(_, v)| v)
        .sum()
}

/// The nine metric families, counted next to the servers' own `stats`: requests per command,
/// their durations, hits and misses (equal to the servers' get_hits and cmd_get), pool waits,
/// errors and timeouts, an ejection and the probes of the down server.
pub async fn metrics_families_are_recorded<C: ParityApi>() {
    // the recorder is installed before any client works (without one the facade drops all)
    drop(tally());
    let c = Cluster::on_free_ports(&[2, 1, 1]);
    let m = build::<C>(|b| {
        b.server_list(&c.server_list())
            .read_timeout(Duration::from_millis(200))
            .failure_policy(FailurePolicy::new(1, Duration::from_millis(20), false))
    });
    let before: Vec<(u64, u64, u64)> = c
        .servers
        .iter()
        .map(|s| (s.stat("cmd_get"), s.stat("cmd_set"), s.stat("get_hits")))
        .collect();
    // What the tally already holds for these addresses: a port freed by an earlier test of
    // this binary (while the recorder was installed) can be one of ours now.
    let series = |addr: &str| {
        [
            total("memshard_requests_total", addr, &[("command", "set")]),
            total("memshard_hits_total", addr, &[]),
            total("memshard_misses_total", addr, &[]),
            total("memshard_requests_total", addr, &[("command", "get")]),
            total("memshard_timeouts_total", addr, &[]),
            total(
                "memshard_errors_total",
                addr,
                &[("kind", "timeout"), ("command", "get")],
            ),
            total("memshard_ejections_total", addr, &[]),
            total("memshard_probes_total", addr, &[]),
        ]
    };
    let base: Vec<[u64; 8]> = c.servers.iter().map(|s| series(&s.addr())).collect();
    for i in 0..300 {
        m.set(format!("m:{i}"), "v", Expiry::NEVER).await.unwrap();
    }
    for i in 0..450 {
        let got = m.get(format!("m:{i}")).await.unwrap();
        assert_eq!(
            got.map(|item| item.value.to_vec()),
            (i < 300).then(|| b"v".to_vec()),
            "m:{i}"
        );
    }
    let keys: Vec<String> = (0..100).map(|i| format!("m:{i}")).collect();
    assert!(
        m.get_multi(&keys)
            .await
            .iter()
            .all(|r| matches!(r, Ok(Some(_))))
    );
    let (mut total_sets, mut total_hits) = (0, 0);
    for ((s, (g0, s0, h0)), b) in c.servers.iter().zip(before).zip(&base) {
        let addr = s.addr();
        let server_gets = s.stat("cmd_get") - g0;
        let server_sets = s.stat("cmd_set") - s0;
        let server_hits = s.stat("get_hits") - h0;
        let sets = total("memshard_requests_total", &addr, &[("command", "set")]) - b[0];
        let hits = total("memshard_hits_total", &addr, &[]) - b[1];
        let misses = total("memshard_misses_total", &addr, &[]) - b[2];
        assert_eq!(sets, server_sets, "{}: {addr} sets", C::NAME);
        assert_eq!(
            hits + misses,
            server_gets,
            "{addr}: every key asked is a hit or a miss"
        );
        assert_eq!(hits, server_hits, "{addr}");
        assert!(server_sets > 0 && server_gets > 0, "{addr} saw no work");
        assert!(
            total(
                "memshard_request_duration_seconds",
                &addr,
                &[("command", "set")]
            ) >= sets
        );
        assert!(
            total("memshard_pool_wait_duration_seconds", &addr, &[]) > 0,
            "{addr}: pool waits"
        );
        // the deprecated names still carry the same samples
        for (old, new) in [
            (
                "memshard_request_seconds",
                "memshard_request_duration_seconds",
            ),
            (
                "memshard_pool_wait_seconds",
                "memshard_pool_wait_duration_seconds",
            ),
            ("memshard_retries_total", "memshard_probes_total"),
        ] {
            assert_eq!(
                total(old, &addr, &[]),
                total(new, &addr, &[]),
                "{addr}: {old} and {new}"
            );
        }
        total_sets += sets;
        total_hits += hits;
    }
    assert_eq!(total_sets, 300);
    assert_eq!(total_hits, 300 + 100);
    let gets: u64 = c
        .servers
        .iter()
        .zip(&base)
        .map(|(s, b)| total("memshard_requests_total", &s.addr(), &[("command", "get")]) - b[3])
        .sum();
    assert_eq!(gets, 450);

    // a stalled server: a timeout, an error, an ejection, then probes
    let stalled = &c.servers[1];
    let addr = stalled.addr();
    let key = (0..10_000)
        .map(|i| format!("t:{i}"))
        .find(|k| m.ring().server_for(k.as_bytes()).unwrap().addr == addr)
        .expect("a key of the stalled server");
    stalled.signal("STOP");
    let r = m.get(&key).await;
    assert!(matches!(r, Err(memshard::Error::Timeout { .. })), "{r:?}");
    let b = &base[1];
    assert_eq!(total("memshard_timeouts_total", &addr, &[]) - b[4], 1);
    assert_eq!(
        total(
            "memshard_errors_total",
            &addr,
            &[("kind", "timeout"), ("command", "get")]
        ) - b[5],
        1
    );
    assert_eq!(
        total("memshard_ejections_total", &addr, &[]) - b[6],
        1,
        "marked down"
    );
    wait_for("the down server is probed", async || {
        total("memshard_probes_total", &addr, &[]) > b[7]
    })
    .await;
    stalled.signal("CONT");
}

/// The last value of the gauge `name` labelled `key`, if it was ever set.
fn gauge(name: &str, key: &str) -> Option<u64> {
    let guard = tally();
    guard
        .1
        .iter()
        .find(|((n, labels), _)| n == name && labels == &[("key".to_string(), key.to_string())])
        .map(|(_, v)| *v)
}

/// `memshard_hot_key_requests{key}`: a gauge per key among the top `k`, set to its count, none
/// for the others. (That keys leaving the top are set to 0 cannot be seen here, where every
/// snapshot sets gauges to 0: src/hotkeys.rs tests it.)
pub async fn hot_key_gauges_follow_the_top<C: ParityApi>() {
    drop(tally());
    let c = Cluster::on_free_ports(&[1]);
    let m = build::<C>(|b| {
        b.server_list(&c.server_list())
            .hot_keys(memshard::HotKeys::top(2).key_metrics(true))
    });
    // keys of this test alone: the recorder is shared by the whole binary
    let k = |name: &str| format!("gauge:{}:{name}", c.servers[0].addr());
    for (name, reads) in [("a", 5), ("b", 3), ("c", 1)] {
        for _ in 0..reads {
            m.get(k(name)).await.unwrap();
        }
    }
    let top = m.hot_keys();
    assert_eq!(top.len(), 2, "{top:?}");
    let name = "memshard_hot_key_requests";
    assert_eq!(gauge(name, &k("a")), Some(5), "{}", C::NAME);
    assert_eq!(gauge(name, &k("b")), Some(3));
    assert_eq!(gauge(name, &k("c")), None, "not in the top 2");
    m.reset_hot_keys();
    m.get(k("c")).await.unwrap();
    m.hot_keys();
    assert_eq!(gauge(name, &k("c")), Some(1), "{}", C::NAME);
}
