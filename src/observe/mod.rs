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
//!
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `memshard_requests_total` | counter | `server`, `command` |
//! | `memshard_request_seconds` | histogram | `server`, `command` |
//! | `memshard_errors_total` | counter | `server`, `command`, `kind` (io, timeout, protocol, server, pool, server_down) |
//! | `memshard_timeouts_total` | counter | `server` |
//! | `memshard_hits_total`, `memshard_misses_total` | counter | `server` |
//! | `memshard_pool_wait_seconds` | histogram | `server` |
//! | `memshard_ejections_total` | counter | `server` (a server marked down) |
//! | `memshard_rejoins_total` | counter | `server` (a server back, its stale keys cleaned) |
//! | `memshard_retries_total` | counter | `server` (probes of a down server) |
//! | `memshard_discovery_changes_total` | counter | `endpoint` (a discovered cluster configuration applied, the first included) |
//! | `memshard_served_without_cache_total` | counter | `server` (`get_or_compute` answered by its recompute because the server could not) |
//! | `memshard_hot_key_requests` | gauge | `key` (with [`HotKeys`](crate::HotKeys): the top keys' counts, every 4,096 counted reads and on each `hot_keys()`; 0 once a key leaves the top) |
#![allow(unused_variables)]

use crate::error::Error;
use std::time::Duration;

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
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) fn kind(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "io",
        Error::Timeout { .. } => "timeout",
        Error::Protocol { .. } => "protocol",
        Error::Server { .. } => "server",
        Error::Pool { .. } => "pool",
        Error::ServerDown { .. } => "server_down",
        Error::InvalidKey { .. } => "invalid_key",
        Error::ValueTooLarge { .. } => "value_too_large",
        Error::Tls { .. } => "tls",
        Error::Auth { .. } => "auth",
        Error::Route { .. } => "route",
        _ => "other",
    }
}

/// One request to `server` finished.
#[inline]
pub(crate) fn request(server: &str, command: &'static str, elapsed: Duration, err: Option<&Error>) {
    #[cfg(feature = "metrics")]
    {
        let labels = [
            ("server", server.to_string()),
            ("command", command.to_string()),
        ];
        metrics::counter!("memshard_requests_total", &labels).increment(1);
        metrics::histogram!("memshard_request_seconds", &labels).record(elapsed.as_secs_f64());
        if let Some(e) = err {
            let k = kind(e);
            metrics::counter!("memshard_errors_total", "server" => server.to_string(), "command" => command, "kind" => k).increment(1);
            if k == "timeout" {
                metrics::counter!("memshard_timeouts_total", "server" => server.to_string())
                    .increment(1);
            }
        }
    }
}

/// Hits and misses of a retrieval on `server`.
#[inline]
pub(crate) fn hits(server: &str, hits: u64, misses: u64) {
    #[cfg(feature = "metrics")]
    {
        if hits > 0 {
            metrics::counter!("memshard_hits_total", "server" => server.to_string())
                .increment(hits);
        }
        if misses > 0 {
            metrics::counter!("memshard_misses_total", "server" => server.to_string())
                .increment(misses);
        }
    }
}

/// Time spent waiting for a pooled connection.
#[inline]
pub(crate) fn pool_wait(server: &str, waited: Duration) {
    #[cfg(feature = "metrics")]
    metrics::histogram!("memshard_pool_wait_seconds", "server" => server.to_string())
        .record(waited.as_secs_f64());
}

/// `server` was marked down (and, with auto-eject, its keys moved to the others).
#[inline]
pub(crate) fn ejected(server: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("memshard_ejections_total", "server" => server.to_string()).increment(1);
    #[cfg(feature = "tracing")]
    tracing::warn!(server, "memshard: server marked down");
}

/// `server` answers again and takes its keys back; `cleaned` is what was deleted on it first:
/// `Some(n)` keys, or `None` when it was flushed (more keys changed than the rejoin limit).
#[inline]
pub(crate) fn rejoined(server: &str, cleaned: Option<usize>) {
    #[cfg(feature = "metrics")]
    metrics::counter!("memshard_rejoins_total", "server" => server.to_string()).increment(1);
    #[cfg(feature = "tracing")]
    match cleaned {
        Some(keys) => tracing::info!(server, keys_cleaned = keys, "memshard: server back"),
        None => tracing::info!(server, flushed = true, "memshard: server back"),
    }
}

/// Discovery from `endpoint` applied configuration `version` with `nodes` nodes (the first
/// configuration included).
#[inline]
pub(crate) fn discovery_applied(endpoint: &str, version: u64, nodes: usize) {
    #[cfg(feature = "metrics")]
    metrics::counter!("memshard_discovery_changes_total", "endpoint" => endpoint.to_string())
        .increment(1);
    #[cfg(feature = "tracing")]
    tracing::info!(
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
            metrics::gauge!("memshard_placement_agreement").set(agree as f64 / sampled as f64);
        }
        #[cfg(feature = "tracing")]
        {
            if agree < sampled {
                tracing::warn!(
                    sampled,
                    agree,
                    "memshard: keys on the servers are not where this client places them; another client writes with another placement (flavor, hash, server order or weights)"
                );
            }
            for (s, r) in servers {
                if let Err(e) = r {
                    tracing::warn!(server = %s.addr, error = %e, "memshard: placement check could not read the server's keys");
                }
            }
        }
    }
}

/// The server list was replaced: `servers` servers now.
#[inline]
pub(crate) fn servers_changed(servers: usize) {
    #[cfg(feature = "tracing")]
    tracing::info!(servers, "memshard: server list changed");
}

/// `get_or_compute` answered `key` by its recompute because `server` could not (`e`): a
/// warning, since every such call loads the source of truth.
#[inline]
pub(crate) fn served_without_cache(server: &str, key: &[u8], e: &Error) {
    #[cfg(feature = "metrics")]
    metrics::counter!("memshard_served_without_cache_total", "server" => server.to_string())
        .increment(1);
    #[cfg(feature = "tracing")]
    tracing::warn!(
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
    metrics::gauge!("memshard_hot_key_requests", "key" => String::from_utf8_lossy(key).into_owned())
        .set(count as f64);
}

/// A down `server` was probed.
#[inline]
pub(crate) fn retried(server: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("memshard_retries_total", "server" => server.to_string()).increment(1);
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
            super::ejected("10.0.0.1:11211");
            super::rejoined("10.0.0.1:11211", Some(3));
            super::rejoined("10.0.0.2:11211", None);
            super::servers_changed(4);
            super::discovery_applied("cfg:11211", 7, 3);
        });
        let got = events.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let want = [
            (Level::WARN, "server=\"10.0.0.1:11211\"", "marked down"),
            (Level::INFO, "keys_cleaned=3", "server back"),
            (Level::INFO, "flushed=true", "server back"),
            (Level::INFO, "servers=4", "server list changed"),
            (Level::INFO, "version=7", "cluster configuration applied"),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((level, text), (l, field, message)) in got.iter().zip(want) {
            assert_eq!(*level, l, "{text}");
            assert!(text.contains(field) && text.contains(message), "{text}");
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
