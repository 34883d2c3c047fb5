//! What the client reports about its work: metrics through the `metrics` facade (feature
//! `metrics`), and with the feature `tracing` a span per operation and an event per health
//! change. Without the features every function here compiles to nothing.
//!
//! | `tracing` span (target `memshard`, name `memshard`) | level | fields |
//! |---|---|---|
//! | each command of one key: its request | `Builder::trace_level` (INFO) | `otel.name` and `db.operation.name` (the command), `otel.kind = "client"`, `db.system.name = "memcached"`, `server.address`, `server.port` (none for a Unix socket), `db.memcached.key_count`; after the reply `db.memcached.hit_count` and `db.memcached.miss_count` (reads), or on failure `error.type` (the error's kind, as in `memshard_errors_total`) and `otel.status_code = "ERROR"`; `db.query.text` only with `Builder::trace_keys` |
//! | each command of many keys or servers (`get_multi`, `set_multi`, `delete_multi`, `set_multi_noreply`, `version`, `flush_all`, `stats`, `verbosity`) | the same | the same without a server, `db.operation.batch.size` from two keys, the hits and misses summed, the first failure's `error.type`; the parent of one span per server, as above |
//!
//! | `tracing` event (target `memshard`) | level | fields |
//! |---|---|---|
//! | `memshard: server marked down` | warn | `server` |
//! | `memshard: server back` | info | `server`, `keys_cleaned` or `flushed` |
//! | `memshard: server list changed` | info | `servers` |
//! | `memshard: the cache could not answer; the recompute did` | warn | `server`, `key`, `error` |
//! | `memshard: cluster configuration applied` | info | `endpoint`, `version`, `nodes` |
//! | `memshard: keys on the servers are not where this client places them` | warn | `sampled`, `agree` |
//! | `memshard: placement check could not read the server's keys` | warn | `server`, `error` |
//!
//! Every message is constant; what varies is in the fields, so that logs group by message.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `memshard_requests_total` | counter | `server`, `command` (every request, those refused at once because the server is marked down included) |
//! | `memshard_request_duration_seconds` | histogram | `server`, `command` (requests that reached the network: not those refused at once) |
//! | `memshard_errors_total` | counter | `server`, `command`, `kind` (io, timeout, protocol, server, pool, server_down, auth, ...) |
//! | `memshard_timeouts_total` | counter | `server` |
//! | `memshard_hits_total`, `memshard_misses_total` | counter | `server` |
//! | `memshard_pool_wait_duration_seconds` | histogram | `server` |
//! | `memshard_server_up` | gauge | `server` (1 taking requests, 0 marked down, NaN once out of the list) |
//! | `memshard_ejections_total` | counter | `server` (a server marked down) |
//! | `memshard_rejoins_total` | counter | `server` (a server back, its stale keys cleaned) |
//! | `memshard_probes_total` | counter | `server` (probes of a server marked down) |
//! | `memshard_discovery_changes_total` | counter | `endpoint` (a discovered cluster configuration applied, the first included) |
//! | `memshard_served_without_cache_total` | counter | `server` (`get_or_compute` answered by its recompute because the server could not) |
//! | `memshard_placement_agreement` | gauge | none (`check_placement`: the share of sampled keys where the client places them) |
//! | `memshard_hot_key_requests` | gauge | `key` (only with [`HotKeys::key_metrics`](crate::HotKeys::key_metrics): the top keys' counts, every 4,096 counted reads and on each `hot_keys()`; 0 once a key leaves the top) |
//! | `memshard_request_seconds`, `memshard_pool_wait_seconds`, `memshard_retries_total` | as their successors | deprecated names, recorded alongside `..._duration_seconds` and `memshard_probes_total` until the next release |
//!
//! A client makes each server's series when it meets the server and keeps the handle of the
//! recorder that answered last, so recording allocates nothing, with or without a recorder.
//! A recorder installed later is noticed; a thread's local recorder
//! (`metrics::with_local_recorder`) replaced by another at the same address, while the same
//! client goes on recording, is not: give each local recorder its own client. Each client
//! describes every metric (`# HELP`) to the recorder installed when it is built.
//! [`names::DURATION_BUCKETS`] are the histograms' buckets, and
//! `docs/observability.md` (in the repository) the dashboard and alert queries.
#![allow(unused_variables)]

use crate::error::Error;
use std::time::Duration;

#[cfg(feature = "metrics")]
mod metric;
pub mod names;

/// When something a metric times began: a clock read with the `metrics` feature, nothing
/// without it (a read costs 30-40 ns on a virtual machine, several per request).
#[derive(Clone, Copy)]
pub(crate) struct Started {
    #[cfg(feature = "metrics")]
    at: std::time::Instant,
}

impl Started {
    #[inline]
    pub(crate) fn now() -> Started {
        Started {
            #[cfg(feature = "metrics")]
            at: std::time::Instant::now(),
        }
    }

    /// The time since [`Started::now`] (zero without the `metrics` feature: nothing reads it).
    #[inline]
    pub(crate) fn elapsed(&self) -> Duration {
        #[cfg(feature = "metrics")]
        return self.at.elapsed();
        #[cfg(not(feature = "metrics"))]
        Duration::ZERO
    }
}

/// The short name of an error kind, for labels.
#[cfg_attr(not(any(feature = "metrics", feature = "tracing")), allow(dead_code))]
pub(crate) fn kind(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "io",
        Error::Timeout { .. } => "timeout",
        Error::Protocol { .. } => "protocol",
        Error::Server { .. } => "server",
        Error::Pool { .. } => "pool",
        Error::ServerDown { .. } => "server_down",
        Error::InvalidKey { .. } => "invalid_key",
        Error::ValueTooLarge { .. } | Error::ItemTooLarge { .. } => "value_too_large",
        Error::Tls { .. } => "tls",
        Error::Auth { .. } => "auth",
        Error::Route { .. } => "route",
        _ => "other",
    }
}

/// What the client reports about one server, made once when the server joins the client:
/// its metrics' label sets with the `metrics` feature (so that a request allocates nothing
/// for them), nothing without.
pub(crate) struct PerServer {
    #[cfg(feature = "metrics")]
    m: metric::ServerMetrics,
}

impl PerServer {
    /// `server` joined the client's list: `memshard_server_up` is 1.
    pub(crate) fn joined(server: &str) -> PerServer {
        let p = PerServer {
            #[cfg(feature = "metrics")]
            m: metric::ServerMetrics::new(server),
        };
        #[cfg(feature = "metrics")]
        metric::set(&p.m.up, 1.0);
        p
    }

    /// The server left the client's list: its `memshard_server_up` is NaN from now on (the
    /// `metrics` facade cannot remove a series; NaN is neither up nor down for a query).
    pub(crate) fn left(&self) {
        #[cfg(feature = "metrics")]
        metric::set(&self.m.up, f64::NAN);
    }
}

/// Every metric's description and unit to the recorder installed now.
pub(crate) fn describe() {
    #[cfg(feature = "metrics")]
    metric::describe();
}

/// One request to a server finished. A request refused at once because the server is
/// marked down is counted, but kept out of the duration histogram: it never reached the
/// network, and its few hundred nanoseconds would pull every quantile of an outage toward
/// zero.
#[inline]
pub(crate) fn request(
    p: &PerServer,
    command: &'static str,
    elapsed: Duration,
    err: Option<&Error>,
) {
    #[cfg(feature = "metrics")]
    {
        let refused = matches!(err, Some(Error::ServerDown { .. }));
        p.m.with_command(command, |c| {
            metric::add(&c.requests, 1);
            if !refused {
                let secs = elapsed.as_secs_f64();
                c.duration.iter().for_each(|k| metric::record(k, secs));
            }
        });
        if let Some(e) = err {
            let k = kind(e);
            metrics::counter!(names::ERRORS, "server" => p.m.server().clone(), "command" => command, "kind" => k).increment(1);
            if k == "timeout" {
                metric::add(&p.m.timeouts, 1);
            }
        }
    }
}

/// Hits and misses of a retrieval on a server.
#[inline]
pub(crate) fn hits(p: &PerServer, hits: u64, misses: u64) {
    #[cfg(feature = "metrics")]
    {
        if hits > 0 {
            metric::add(&p.m.hits, hits);
        }
        if misses > 0 {
            metric::add(&p.m.misses, misses);
        }
    }
}

/// Time spent waiting for a pooled connection.
#[inline]
pub(crate) fn pool_wait(p: &PerServer, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        let secs = waited.as_secs_f64();
        p.m.pool_wait.iter().for_each(|k| metric::record(k, secs));
    }
}

/// `server` was marked down (and, with auto-eject, its keys moved to the others).
#[inline]
pub(crate) fn ejected(p: &PerServer, server: &str) {
    #[cfg(feature = "metrics")]
    {
        metric::add(&p.m.ejections, 1);
        metric::set(&p.m.up, 0.0);
    }
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "memshard", server, "memshard: server marked down");
}

/// `server` answers again and takes its keys back; `cleaned` is what was deleted on it first:
/// `Some(n)` keys, or `None` when it was flushed (more keys changed than the rejoin limit).
#[inline]
pub(crate) fn rejoined(p: &PerServer, server: &str, cleaned: Option<usize>) {
    #[cfg(feature = "metrics")]
    {
        metric::add(&p.m.rejoins, 1);
        metric::set(&p.m.up, 1.0);
    }
    #[cfg(feature = "tracing")]
    match cleaned {
        Some(keys) => {
            tracing::info!(target: "memshard", server, keys_cleaned = keys, "memshard: server back")
        }
        None => tracing::info!(target: "memshard", server, flushed = true, "memshard: server back"),
    }
}

/// A server marked down was probed.
#[inline]
pub(crate) fn probed(p: &PerServer) {
    #[cfg(feature = "metrics")]
    p.m.probes.iter().for_each(|k| metric::add(k, 1));
}

/// Discovery from `endpoint` applied configuration `version` with `nodes` nodes (the first
/// configuration included).
#[inline]
pub(crate) fn discovery_applied(endpoint: &str, version: u64, nodes: usize) {
    #[cfg(feature = "metrics")]
    metrics::counter!(names::DISCOVERY_CHANGES, "endpoint" => endpoint.to_string()).increment(1);
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "memshard",
        endpoint,
        version,
        nodes,
        "memshard: cluster configuration applied"
    );
}

/// `check_placement` read each server's keys: the gauge `memshard_placement_agreement` (the
/// share of sampled keys where the client places them, 0 to 1, when any was sampled) and a
/// warning below 1 or for a server that could not list its keys.
#[cfg_attr(
    not(any(feature = "metrics", feature = "tracing")),
    allow(unused_variables)
)]
pub(crate) fn placement_checked(
    servers: &[(
        crate::servers::Server,
        crate::error::Result<crate::outcome::ServerPlacement>,
    )],
) {
    #[cfg(any(feature = "metrics", feature = "tracing"))]
    {
        let answered = servers.iter().filter_map(|(_, r)| r.as_ref().ok());
        let (sampled, agree) =
            answered.fold((0u64, 0u64), |(s, a), p| (s + p.sampled, a + p.agree));
        #[cfg(feature = "metrics")]
        if sampled > 0 {
            metrics::gauge!(names::PLACEMENT_AGREEMENT).set(agree as f64 / sampled as f64);
        }
        #[cfg(feature = "tracing")]
        {
            if agree < sampled {
                tracing::warn!(
                    target: "memshard",
                    sampled,
                    agree,
                    "memshard: keys on the servers are not where this client places them; another client writes with another placement (flavor, hash, server order or weights)"
                );
            }
            for (s, r) in servers {
                if let Err(e) = r {
                    tracing::warn!(target: "memshard", server = %s.addr, error = %e, "memshard: placement check could not read the server's keys");
                }
            }
        }
    }
}

/// A route refused `command` of `key` (a key no prefix matches, a write too few zones took,
/// a CAS token from another copy): a warning, as the caller gets an error it must handle.
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
#[inline]
pub(crate) fn route_refused(route: &str, command: &str, key: &[u8], reason: &str) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "memshard",
        route,
        command,
        key = %String::from_utf8_lossy(key),
        reason,
        "memshard: route refused a command"
    );
}

/// The server list was replaced: `servers` servers now.
#[inline]
pub(crate) fn servers_changed(servers: usize) {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "memshard", servers, "memshard: server list changed");
}

/// `get_or_compute` answered `key` by its recompute because `server` could not (`e`): a
/// warning, since every such call loads the source of truth. `p`: the server's, when the
/// request got as far as choosing one.
#[inline]
pub(crate) fn served_without_cache(p: Option<&PerServer>, server: &str, key: &[u8], e: &Error) {
    #[cfg(feature = "metrics")]
    match p {
        Some(p) => metric::add(&p.m.served_without_cache, 1),
        None => metrics::counter!(names::SERVED_WITHOUT_CACHE, "server" => server.to_string())
            .increment(1),
    }
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "memshard",
        server,
        key = %String::from_utf8_lossy(key),
        error = %e,
        "memshard: the cache could not answer; the recompute did"
    );
}

/// The count of a hot `key` (0: no longer among the hottest).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
#[inline]
pub(crate) fn hot_key(key: &[u8], count: u64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(names::HOT_KEY, "key" => String::from_utf8_lossy(key).into_owned())
        .set(count as f64);
}

pub(crate) mod span;
pub(crate) use span::Span;

#[cfg(all(test, feature = "tracing"))]
mod tests {
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    /// Every event as (level, "field=value" pairs, message last).
    #[derive(Clone, Default)]
    struct Events(Arc<Mutex<Vec<(Level, String)>>>);

    struct Fields(String);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0 += &format!("{}={value:?} ", field.name());
        }
    }

    impl Subscriber for Events {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut f = Fields(String::new());
            event.record(&mut f);
            let level = *event.metadata().level();
            // the documented target, which filters such as `memshard=info` select
            f.0 += &format!("target={} ", event.metadata().target());
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((level, f.0));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn each_health_change_is_an_event_with_the_server() {
        let events = Events::default();
        tracing::subscriber::with_default(events.clone(), || {
            let p = super::PerServer::joined("10.0.0.1:11211");
            super::ejected(&p, "10.0.0.1:11211");
            super::rejoined(&p, "10.0.0.1:11211", Some(3));
            super::rejoined(&p, "10.0.0.2:11211", None);
            super::servers_changed(4);
            super::discovery_applied("cfg:11211", 7, 3);
            super::route_refused("zones", "set", b"k1", "1 of 3 zones took it");
        });
        let got = events.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let want = [
            (Level::WARN, "server=\"10.0.0.1:11211\"", "marked down"),
            (Level::INFO, "keys_cleaned=3", "server back"),
            (Level::INFO, "flushed=true", "server back"),
            (Level::INFO, "servers=4", "server list changed"),
            (Level::INFO, "version=7", "cluster configuration applied"),
            (
                Level::WARN,
                "reason=\"1 of 3 zones took it\"",
                "route refused",
            ),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((level, text), (l, field, message)) in got.iter().zip(want) {
            assert_eq!(*level, l, "{text}");
            assert!(text.contains(field) && text.contains(message), "{text}");
            assert!(text.contains("target=memshard "), "{text}");
        }
    }

    fn events(f: impl FnOnce()) -> Vec<(Level, String)> {
        let events = Events::default();
        tracing::subscriber::with_default(events.clone(), f);
        events.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn placement(
        sampled: u64,
        agree: u64,
    ) -> crate::error::Result<crate::outcome::ServerPlacement> {
        Ok(crate::outcome::ServerPlacement {
            sampled,
            agree,
            foreign: 0,
        })
    }

    /// A warning when some sampled key is elsewhere (its counts summed over the servers that
    /// answered), none when every one agrees, and one per server that could not list its keys.
    #[test]
    fn placement_warns_below_full_agreement_and_for_each_silent_server() {
        let a = crate::servers::Server::new("10.0.0.1", 11211);
        let b = crate::servers::Server::new("10.0.0.2", 11211);
        let all_agree = events(|| {
            super::placement_checked(&[(a.clone(), placement(3, 3)), (b.clone(), placement(2, 2))])
        });
        assert!(all_agree.is_empty(), "{all_agree:?}");
        let down = crate::error::Error::Config("no dump".into());
        let got = events(|| {
            super::placement_checked(&[(a.clone(), placement(3, 2)), (b.clone(), Err(down))])
        });
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, Level::WARN);
        assert!(
            got[0].1.contains("sampled=3 ") && got[0].1.contains("agree=2 "),
            "{got:?}"
        );
        assert!(
            got[0].1.contains("not where this client places them"),
            "{got:?}"
        );
        assert!(
            got[1].1.contains("server=10.0.0.2:11211") && got[1].1.contains("no dump"),
            "{got:?}"
        );
    }

    #[test]
    fn a_get_or_compute_served_without_the_cache_warns_with_server_key_and_error() {
        let e = crate::error::Error::Config("down".into());
        let got = events(|| super::served_without_cache(None, "10.0.0.1:11211", b"k1", &e));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, Level::WARN);
        for field in [
            "server=\"10.0.0.1:11211\"",
            "key=k1",
            "error=configuration: down",
        ] {
            assert!(got[0].1.contains(field), "{field}: {got:?}");
        }
    }
}

#[cfg(all(test, feature = "metrics"))]
mod metric_tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    #[test]
    fn each_applied_configuration_counts_once() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            super::discovery_applied("cfg:11211", 1, 2);
            super::discovery_applied("cfg:11211", 2, 3);
        });
        let counts: Vec<(String, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(k, ..)| k.key().name() == "memshard_discovery_changes_total")
            .map(|(k, _, _, v)| {
                let label = k.key().labels().next().map(|l| l.value().to_string());
                let DebugValue::Counter(n) = v else {
                    panic!("{v:?}")
                };
                (label.unwrap_or_default(), n)
            })
            .collect();
        assert_eq!(counts, [("cfg:11211".to_string(), 2)]);
    }
}

#[cfg(all(test, feature = "metrics"))]
mod server_metric_tests {
    use super::{PerServer, names};
    use crate::error::Error;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    use std::time::Duration;

    /// Every series recorded under `recorder` while `f` ran: (name, "k=v,..." labels, value).
    fn recorded(f: impl FnOnce()) -> Vec<(String, String, DebugValue)> {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, f);
        let mut all: Vec<_> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(k, _, _, v)| {
                let labels: Vec<String> = k
                    .key()
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect();
                (k.key().name().to_string(), labels.join(","), v)
            })
            .collect();
        all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        all
    }

    #[test]
    fn server_up_is_1_then_0_when_marked_down_then_1_when_back_then_nan_once_gone() {
        let server = "10.0.0.1:11211";
        // one recorder throughout: a client keeps the handles of the recorder that answered
        // last (see `metric::Series`)
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let mut seen = Vec::new();
        let mut p = None;
        for step in 0..4 {
            metrics::with_local_recorder(&recorder, || match &p {
                None => p = Some(PerServer::joined(server)),
                Some(p) if step == 1 => super::ejected(p, server),
                Some(p) if step == 2 => super::rejoined(p, server, Some(0)),
                Some(p) => p.left(),
            });
            let (key, _, _, value) = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .find(|(k, ..)| k.key().name() == names::SERVER_UP)
                .expect("the gauge is set");
            let labels: Vec<String> = key
                .key()
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            assert_eq!(labels, ["server=10.0.0.1:11211"]);
            let DebugValue::Gauge(v) = value else {
                panic!("{value:?}")
            };
            seen.push(v.into_inner());
        }
        assert_eq!(&seen[..3], [1.0, 0.0, 1.0]);
        assert!(seen[3].is_nan(), "{seen:?}");
    }

    #[test]
    fn a_request_refused_at_once_is_counted_but_not_timed() {
        let p = PerServer::joined("10.0.0.1:11211");
        let down = Error::ServerDown {
            server: "10.0.0.1:11211".into(),
            retry_in: Duration::from_millis(5),
        };
        let all = recorded(|| {
            super::request(&p, "get", Duration::from_millis(2), None);
            super::request(&p, "get", Duration::from_nanos(127), Some(&down));
            super::request(&p, "set", Duration::from_millis(3), None);
        });
        let find = |name: &str, labels: &str| {
            all.iter()
                .find(|(n, l, _)| n == name && l == labels)
                .map(|(.., v)| v)
        };
        let get = "server=10.0.0.1:11211,command=get";
        assert_eq!(find(names::REQUESTS, get), Some(&DebugValue::Counter(2)));
        for name in [names::REQUEST_DURATION, names::LEGACY_REQUEST_SECONDS] {
            let Some(DebugValue::Histogram(samples)) = find(name, get) else {
                panic!("{name}: {all:?}")
            };
            assert_eq!(samples.len(), 1, "{name}: only the answered get");
            assert_eq!(samples[0].into_inner(), 0.002);
        }
        assert_eq!(
            find(
                names::ERRORS,
                "server=10.0.0.1:11211,command=get,kind=server_down"
            ),
            Some(&DebugValue::Counter(1))
        );
        assert_eq!(
            find(names::REQUESTS, "server=10.0.0.1:11211,command=set"),
            Some(&DebugValue::Counter(1))
        );
    }

    #[test]
    fn hits_probes_waits_and_timeouts_go_to_the_servers_series() {
        let p = PerServer::joined("h:1");
        let timeout = Error::Timeout {
            server: "h:1".into(),
            op: "read",
            after: Duration::from_millis(5),
        };
        let all = recorded(|| {
            super::hits(&p, 3, 2);
            super::hits(&p, 0, 0);
            super::probed(&p);
            super::pool_wait(&p, Duration::from_millis(1));
            super::request(&p, "get", Duration::from_millis(5), Some(&timeout));
        });
        let value = |name: &str| {
            all.iter()
                .find(|(n, l, _)| n == name && l == "server=h:1")
                .map(|(.., v)| v)
        };
        assert_eq!(value(names::HITS), Some(&DebugValue::Counter(3)));
        assert_eq!(value(names::MISSES), Some(&DebugValue::Counter(2)));
        assert_eq!(value(names::PROBES), Some(&DebugValue::Counter(1)));
        assert_eq!(value(names::LEGACY_RETRIES), Some(&DebugValue::Counter(1)));
        assert_eq!(value(names::TIMEOUTS), Some(&DebugValue::Counter(1)));
        for name in [names::POOL_WAIT, names::LEGACY_POOL_WAIT] {
            assert!(matches!(value(name), Some(DebugValue::Histogram(s)) if s.len() == 1));
        }
    }

    /// A series records to the recorder installed when it records, not to the one that
    /// answered before (two recorders alive at once: one at the same address as a dropped
    /// one is not noticed, as the module's documentation says).
    #[test]
    fn a_series_follows_the_recorder_installed_now() {
        let p = PerServer::joined("h:1");
        let (first, second) = (DebuggingRecorder::new(), DebuggingRecorder::new());
        let probes = |r: &DebuggingRecorder| {
            r.snapshotter()
                .snapshot()
                .into_vec()
                .into_iter()
                .find(|(k, ..)| k.key().name() == names::PROBES)
                .map(|(.., v)| v)
        };
        metrics::with_local_recorder(&first, || super::probed(&p));
        metrics::with_local_recorder(&second, || {
            super::probed(&p);
            super::probed(&p);
        });
        metrics::with_local_recorder(&first, || super::probed(&p));
        assert_eq!(probes(&first), Some(DebugValue::Counter(2)));
        assert_eq!(probes(&second), Some(DebugValue::Counter(2)));
    }

    /// A retrieval without hits (or misses) records nothing for them: no series is made.
    #[test]
    fn no_hits_no_series() {
        let p = PerServer::joined("h:1");
        let none = recorded(|| super::hits(&p, 0, 0));
        assert!(none.is_empty(), "{none:?}");
        let hits_only = recorded(|| super::hits(&p, 1, 0));
        let names: Vec<&str> = hits_only.iter().map(|(n, ..)| n.as_str()).collect();
        assert_eq!(names, [names::HITS]);
        let misses_only = recorded(|| super::hits(&p, 0, 1));
        let names: Vec<&str> = misses_only.iter().map(|(n, ..)| n.as_str()).collect();
        assert_eq!(names, [names::MISSES]);
    }

    /// Each error's label in `memshard_errors_total{kind}` and the spans' `error.type`.
    #[test]
    fn each_error_has_its_kind() {
        use crate::error::{AuthProblem, TlsProblem};
        use crate::proto::KeyError;
        let server = || "h:1".to_string();
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let cases = [
            (
                Error::Io {
                    server: server(),
                    op: "read",
                    kind: io.kind(),
                    message: io.to_string(),
                    source: std::sync::Arc::new(io),
                },
                "io",
            ),
            (
                Error::Timeout {
                    server: server(),
                    op: "read",
                    after: Duration::from_millis(1),
                },
                "timeout",
            ),
            (
                Error::Protocol {
                    server: server(),
                    detail: String::new(),
                },
                "protocol",
            ),
            (
                Error::Server {
                    server: server(),
                    message: String::new(),
                },
                "server",
            ),
            (
                Error::Pool {
                    server: server(),
                    message: String::new(),
                    exhausted: true,
                },
                "pool",
            ),
            (
                Error::ServerDown {
                    server: server(),
                    retry_in: Duration::ZERO,
                },
                "server_down",
            ),
            (
                Error::InvalidKey {
                    key: String::new(),
                    reason: KeyError::Empty,
                },
                "invalid_key",
            ),
            (Error::ValueTooLarge { len: 2, limit: 1 }, "value_too_large"),
            (
                Error::Tls {
                    server: server(),
                    problem: TlsProblem::UnknownCa,
                    message: String::new(),
                },
                "tls",
            ),
            (
                Error::Auth {
                    server: server(),
                    problem: AuthProblem::Rejected,
                },
                "auth",
            ),
            (
                Error::Route {
                    route: "r",
                    command: "get",
                    key: String::new(),
                    reason: String::new(),
                },
                "route",
            ),
            (Error::Config(String::new()), "other"),
        ];
        for (e, want) in cases {
            assert_eq!(super::kind(&e), want, "{e:?}");
        }
    }

    /// `memshard_placement_agreement`: the agreeing share of the keys sampled on the servers
    /// that answered, and no sample when none was sampled (0/0 is not a share).
    #[test]
    fn placement_agreement_is_the_share_over_the_servers_that_answered() {
        let a = crate::servers::Server::new("10.0.0.1", 11211);
        let b = crate::servers::Server::new("10.0.0.2", 11211);
        let c = crate::servers::Server::new("10.0.0.3", 11211);
        let p = |sampled, agree| {
            Ok(crate::outcome::ServerPlacement {
                sampled,
                agree,
                foreign: 0,
            })
        };
        let all = recorded(|| {
            super::placement_checked(&[
                (a.clone(), p(3, 2)),
                (b.clone(), p(5, 4)),
                (c.clone(), Err(Error::Config("no dump".into()))),
            ])
        });
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].0, names::PLACEMENT_AGREEMENT);
        let DebugValue::Gauge(v) = &all[0].2 else {
            panic!("{all:?}")
        };
        assert_eq!(v.into_inner(), 6.0 / 8.0);
        let none = recorded(|| {
            super::placement_checked(&[(a, p(0, 0)), (c, Err(Error::Config("no dump".into())))])
        });
        assert!(none.is_empty(), "{none:?}");
    }

    /// `memshard_served_without_cache_total`: the server's own series when the request chose
    /// one, else a series labelled with the server named in the error.
    #[test]
    fn served_without_cache_counts_per_server() {
        let p = PerServer::joined("h:1");
        let e = Error::Config("down".into());
        let all = recorded(|| {
            super::served_without_cache(Some(&p), "h:1", b"k", &e);
            super::served_without_cache(Some(&p), "h:1", b"k", &e);
            super::served_without_cache(None, "h:2", b"k", &e);
        });
        let got: Vec<(&str, &str, &DebugValue)> = all
            .iter()
            .map(|(n, l, v)| (n.as_str(), l.as_str(), v))
            .collect();
        assert_eq!(
            got,
            [
                (
                    names::SERVED_WITHOUT_CACHE,
                    "server=h:1",
                    &DebugValue::Counter(2)
                ),
                (
                    names::SERVED_WITHOUT_CACHE,
                    "server=h:2",
                    &DebugValue::Counter(1)
                ),
            ]
        );
    }

    /// The duration a request is timed with is the time since it started.
    #[test]
    fn started_measures_the_time_since() {
        let t = super::Started::now();
        std::thread::sleep(Duration::from_millis(5));
        let e = t.elapsed();
        assert!(e >= Duration::from_millis(5), "{e:?}");
    }

    /// Every metric is described (the Prometheus exporter prints `# HELP` from it), with the
    /// unit of seconds on the histograms, and listed in the module's table.
    #[test]
    fn every_metric_is_described_and_documented() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            super::describe();
            for &(name, ..) in super::metric::METRICS {
                metrics::counter!(name).increment(0);
                metrics::gauge!(name).set(0.0);
                metrics::histogram!(name).record(0.0);
            }
        });
        let described: std::collections::HashMap<String, (Option<metrics::Unit>, String)> =
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .filter_map(|(k, unit, help, _)| {
                    help.map(|h| (k.key().name().to_string(), (unit, h.to_string())))
                })
                .collect();
        let table = include_str!("mod.rs");
        for &(name, kind, unit, help) in super::metric::METRICS {
            let (u, h) = described.get(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(h, help, "{name}");
            assert!(!h.is_empty() && h.len() < 200, "{name}");
            assert_eq!(*u, unit, "{name}");
            assert_eq!(
                kind == super::metric::Kind::Histogram,
                name.ends_with("_seconds"),
                "{name}"
            );
            assert!(
                table.contains(&format!("`{name}`")),
                "{name} is not in the table"
            );
        }
    }
}
