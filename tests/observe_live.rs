//! What an operator sees through `metrics-exporter-prometheus` while a server dies under load
//! and comes back: `/metrics`, scraped over HTTP as Prometheus scrapes it, has `memshard_server_up`
//! going 1 → 0 → 1, a latency histogram that counts only the requests that reached the
//! network (not those refused at once while the server is marked down), and a `# HELP` line
//! for every memshard metric; the spans exported through `tracing-opentelemetry` carry the
//! database conventions' attributes, with `error.type` and an error status on the failures.
//! Both clients, one exporter and one subscriber (both global to the process: this binary
//! holds these tests only).

mod common;

use common::servers::{Memcached, free_port, require};
use memshard::{Expiry, FailurePolicy};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The exporter's `/metrics` address, installed once per process.
fn exporter() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let ip = Ipv4Addr::new(127, 0, 44, 1);
        let addr = SocketAddr::from((ip, free_port(ip)));
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .set_buckets_for_metric(
                metrics_exporter_prometheus::Matcher::Prefix("memshard_".into()),
                memshard::observe::names::DURATION_BUCKETS,
            )
            .expect("buckets")
            .install()
            .expect("install the exporter");
        addr
    })
}

/// The spans finished so far, from the global subscriber installed once per process.
fn spans() -> &'static opentelemetry_sdk::trace::InMemorySpanExporter {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;
    static SPANS: OnceLock<opentelemetry_sdk::trace::InMemorySpanExporter> = OnceLock::new();
    SPANS.get_or_init(|| {
        let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("observe_live"));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("the only subscriber of this binary");
        exporter
    })
}

/// The `get` spans to `server` exported so far: (error.type or "", whether the status is an
/// error), each checked for the conventions' attributes.
fn get_spans(server: SocketAddr) -> Vec<(String, bool)> {
    use opentelemetry::trace::{SpanKind, Status};
    let finished = spans().get_finished_spans().expect("spans");
    finished
        .iter()
        .filter_map(|s| {
            let a: std::collections::HashMap<String, String> = s
                .attributes
                .iter()
                .map(|kv| (kv.key.as_str().to_string(), kv.value.to_string()))
                .collect();
            let ours = a.get("server.address") == Some(&server.ip().to_string())
                && a.get("server.port") == Some(&server.port().to_string())
                && s.name == "get";
            if !ours {
                return None;
            }
            assert_eq!(s.span_kind, SpanKind::Client);
            assert_eq!(a["db.system.name"], "memcached");
            assert_eq!(a["db.operation.name"], "get");
            let error = a.get("error.type").cloned().unwrap_or_default();
            let failed = matches!(s.status, Status::Error { .. });
            assert_eq!(failed, !error.is_empty(), "{a:?} {:?}", s.status);
            Some((error, failed))
        })
        .collect()
}

/// The body of `GET /metrics`.
fn scrape() -> String {
    let addr = exporter();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = TcpStream::connect(addr).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")?;
            let mut text = String::new();
            s.read_to_string(&mut text)?;
            Ok(text)
        });
        match got {
            Ok(text) if text.starts_with("HTTP/1.") => {
                let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
                assert!(head.contains(" 200 "), "{head}");
                return body.to_string();
            }
            // the listener starts on its own thread
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            other => panic!("scrape {addr}: {other:?}"),
        }
    }
}

/// The value of the sample `name{labels}` whose labels include every one of `with`, summed
/// over the samples that match.
fn sample(text: &str, name: &str, with: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, labels) = series.split_once('{').unwrap_or((series, "}"));
            let labels = labels.strip_suffix('}')?;
            let has =
                |(k, v): &(&str, &str)| labels.split(',').any(|p| p == format!("{k}=\"{v}\""));
            (n == name && with.iter().all(has)).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// Waits until `ok(scrape)` holds (the prober and the marking down run on their own).
fn wait_for(what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape();
        if ok(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what}: never\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

type Get = Arc<dyn Fn(&str) -> Result<(), memshard::Error> + Send + Sync>;

/// `per_thread` gets of `keys` from each of 4 threads at once: the load. Errors are expected
/// while a server is down.
fn load(get: &Get, keys: &[String], per_thread: usize) {
    std::thread::scope(|s| {
        for t in 0..4 {
            let get = get.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    let _ = get(&keys[(t * 7 + i) % keys.len()]);
                }
            });
        }
    });
}

/// A server of three is killed under load, then started again on the same address.
fn outage(client: &str, ips: [Ipv4Addr; 3], build: impl Fn(&str) -> (Get, Box<dyn Fn(&str)>)) {
    let mut servers: Vec<Memcached> = ips.iter().map(|&ip| Memcached::start(ip, 0, "")).collect();
    let list: String = servers.iter().map(|m| m.addr() + "\n").collect();
    let (get, set) = build(&list);
    let keys: Vec<String> = (0..300).map(|i| format!("{client}:{i}")).collect();
    keys.iter().for_each(|k| set(k));
    let victim = servers[1].addr();
    let sock = servers[1].sock();
    let get_on_victim = [("server", victim.as_str()), ("command", "get")];

    load(&get, &keys, 200);
    let before = scrape();
    assert_eq!(
        sample(&before, "memshard_server_up", &[("server", &victim)]),
        1.0,
        "{client}"
    );
    for m in &servers {
        assert_eq!(
            sample(&before, "memshard_server_up", &[("server", &m.addr())]),
            1.0
        );
    }

    // killed: its requests fail, it is marked down, then refused at once
    servers.remove(1);
    load(&get, &keys, 200);
    let down = wait_for("marked down", |t| {
        sample(t, "memshard_server_up", &[("server", &victim)]) == 0.0
    });
    let requests = |t: &str| sample(t, "memshard_requests_total", &get_on_victim);
    let timed = |t: &str| sample(t, "memshard_request_duration_seconds_count", &get_on_victim);
    let refused = |t: &str| {
        sample(
            t,
            "memshard_errors_total",
            &[
                ("server", &victim),
                ("command", "get"),
                ("kind", "server_down"),
            ],
        )
    };
    load(&get, &keys, 300);
    let during = scrape();
    let (asked, timed_more, refused_more) = (
        requests(&during) - requests(&down),
        timed(&during) - timed(&down),
        refused(&during) - refused(&down),
    );
    assert!(
        refused_more > 50.0,
        "{client}: {refused_more} refused at once"
    );
    assert_eq!(
        timed_more,
        asked - refused_more,
        "{client}: the histogram counts every request but those refused at once"
    );
    assert_eq!(
        sample(&during, "memshard_request_seconds_count", &get_on_victim),
        timed(&during),
        "{client}: the deprecated name holds the same samples"
    );

    // back on the same address: probed, rejoined, up again, timed again
    let again = Memcached::start(
        match sock.ip() {
            std::net::IpAddr::V4(ip) => ip,
            std::net::IpAddr::V6(_) => unreachable!("the servers are on IPv4 loopback"),
        },
        sock.port(),
        "",
    );
    // Both in one scrape: the prober counts the rejoin and then sets the gauge, but a scrape
    // renders the counters before the gauges, so one taken between the two reads the
    // rejoin's count from before it and the gauge from after.
    let back = wait_for("back", |t| {
        sample(t, "memshard_server_up", &[("server", &victim)]) == 1.0
            && sample(t, "memshard_rejoins_total", &[("server", &victim)]) >= 1.0
    });
    assert!(sample(&back, "memshard_probes_total", &[("server", &victim)]) >= 1.0);
    assert!(sample(&back, "memshard_rejoins_total", &[("server", &victim)]) >= 1.0);
    assert!(sample(&back, "memshard_ejections_total", &[("server", &victim)]) >= 1.0);
    load(&get, &keys, 100);
    let after = scrape();
    assert!(
        timed(&after) > timed(&back),
        "{client}: the server's gets are timed again"
    );
    drop(again);

    // the spans: answered gets without error.type, the failures with theirs
    let kinds = get_spans(sock);
    let count = |k: &str| kinds.iter().filter(|(e, _)| e == k).count();
    let failed_on_the_wire = kinds
        .iter()
        .filter(|(e, _)| !e.is_empty() && e != "server_down")
        .count();
    assert!(count("") > 100, "{client}: answered gets: {}", count(""));
    assert!(
        count("server_down") as f64 >= refused_more,
        "{client}: a span with error.type server_down for each refused get"
    );
    assert!(
        failed_on_the_wire >= 2,
        "{client}: the failures that marked it down (io, timeout or pool): {failed_on_the_wire}"
    );
}

/// Every memshard family the exporter prints has its `# HELP`.
fn every_family_is_described(text: &str) {
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .filter(|n| n.starts_with("memshard_"))
        .collect();
    for want in [
        "memshard_requests_total",
        "memshard_request_duration_seconds",
        "memshard_errors_total",
        "memshard_hits_total",
        "memshard_server_up",
        "memshard_ejections_total",
        "memshard_rejoins_total",
        "memshard_probes_total",
        "memshard_pool_wait_duration_seconds",
    ] {
        assert!(families.contains(&want), "{want} missing:\n{text}");
    }
    for f in families {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("# HELP {f} "))),
            "no # HELP for {f}"
        );
    }
}

/// Marked down after 2 failures, probed every 200 ms, its keys not moved (so that its
/// requests are refused at once while it is down).
fn settings<C>(b: memshard::Builder<C>, list: &str) -> memshard::Builder<C> {
    b.server_list(list)
        .expect("list")
        .failure_policy(FailurePolicy::new(2, Duration::from_millis(200), false))
        .connect_timeout(Duration::from_millis(200))
        .read_timeout(Duration::from_millis(500))
}

#[test]
fn a_server_killed_and_restarted_under_load_as_prometheus_sees_it() {
    if !require("memcached") {
        return;
    }
    exporter();
    spans();
    outage(
        "blocking",
        [2, 3, 4].map(|d| Ipv4Addr::new(127, 0, 44, d)),
        |list| {
            let c = settings(memshard::Client::builder(), list)
                .build()
                .expect("client");
            let c = Arc::new(c);
            let w = c.clone();
            (
                Arc::new(move |k: &str| c.get(k).map(drop)),
                Box::new(move |k: &str| {
                    w.set(k, "v", Expiry::NEVER).expect("set");
                }),
            )
        },
    );
    #[cfg(feature = "async")]
    {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let handle = rt.handle().clone();
        outage(
            "async",
            [5, 6, 7].map(|d| Ipv4Addr::new(127, 0, 44, d)),
            |list| {
                let c = handle.block_on(async {
                    settings(memshard::aio::Client::builder(), list)
                        .build()
                        .expect("client")
                });
                let c = Arc::new(c);
                let (h1, h2, w) = (handle.clone(), handle.clone(), c.clone());
                (
                    Arc::new(move |k: &str| h1.block_on(c.get(k)).map(drop)),
                    Box::new(move |k: &str| {
                        h2.block_on(w.set(k, "v", Expiry::NEVER)).expect("set");
                    }),
                )
            },
        );
    }
    every_family_is_described(&scrape());
}
