//! The metrics themselves (feature `metrics`): their descriptions in one table, and each
//! server's series made once, when the server joins the client.
//!
//! The `metrics` macros build their labels on every call (a `String` per label value and a
//! `Vec` for the key), with or without a recorder installed, and the Prometheus exporter
//! wraps the handle of every registration in a new `Arc`: 48 of the 78 allocations of a
//! 4-server multi-get. A [`Series`] makes its key once and keeps the handle of the recorder
//! that answered last, so a call allocates nothing.

use arc_swap::{ArcSwap, ArcSwapOption};
use metrics::{Counter, Gauge, Histogram, Key, Label, Metadata, Recorder, SharedString, Unit};
use std::sync::{Arc, Mutex};

use super::names::*;

/// What a metric is, for `describe_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every metric: name, kind, unit and the `# HELP` text a Prometheus scrape shows.
pub(crate) const METRICS: &[(&str, Kind, Option<Unit>, &str)] = &[
    (
        REQUESTS,
        Kind::Counter,
        None,
        "Requests to a server by command, failed ones and those refused at once because the server is marked down included.",
    ),
    (
        REQUEST_DURATION,
        Kind::Histogram,
        Some(Unit::Seconds),
        "Time from a request's start to its last reply byte, per server and command; requests refused at once because the server is marked down are not in it.",
    ),
    (
        ERRORS,
        Kind::Counter,
        None,
        "Failed requests by server, command and kind (io, timeout, protocol, server, pool, server_down, ...).",
    ),
    (
        TIMEOUTS,
        Kind::Counter,
        None,
        "Requests to a server that timed out connecting, writing or reading.",
    ),
    (
        HITS,
        Kind::Counter,
        None,
        "Keys a retrieval found, per server.",
    ),
    (
        MISSES,
        Kind::Counter,
        None,
        "Keys a retrieval did not find, per server.",
    ),
    (
        POOL_WAIT,
        Kind::Histogram,
        Some(Unit::Seconds),
        "Time a request waited for a pooled connection to a server.",
    ),
    (
        SERVER_UP,
        Kind::Gauge,
        None,
        "1 while a server of the list is taking requests, 0 while it is marked down; NaN once it left the list.",
    ),
    (
        EJECTIONS,
        Kind::Counter,
        None,
        "Times a server was marked down after repeated failures.",
    ),
    (
        REJOINS,
        Kind::Counter,
        None,
        "Times a server marked down answered a probe and took its keys back.",
    ),
    (
        PROBES,
        Kind::Counter,
        None,
        "Probes sent to a server marked down, to learn whether it answers again.",
    ),
    (
        DISCOVERY_CHANGES,
        Kind::Counter,
        None,
        "Cluster configurations applied from a discovery endpoint, the first included.",
    ),
    (
        SERVED_WITHOUT_CACHE,
        Kind::Counter,
        None,
        "get_or_compute calls answered by their recompute because the server could not answer.",
    ),
    (
        HOT_KEY,
        Kind::Gauge,
        None,
        "Reads of each of the hottest keys (only when hot-key metrics are turned on: the key is a label).",
    ),
    (
        PLACEMENT_AGREEMENT,
        Kind::Gauge,
        None,
        "Share of the keys sampled on the servers that sit where this client places them (0 to 1).",
    ),
    (
        LEGACY_REQUEST_SECONDS,
        Kind::Histogram,
        Some(Unit::Seconds),
        "Deprecated: memshard_request_duration_seconds.",
    ),
    (
        LEGACY_POOL_WAIT,
        Kind::Histogram,
        Some(Unit::Seconds),
        "Deprecated: memshard_pool_wait_duration_seconds.",
    ),
    (
        LEGACY_RETRIES,
        Kind::Counter,
        None,
        "Deprecated: memshard_probes_total.",
    ),
];

/// Every metric's description and unit to the recorder installed now (each client does it
/// when built, so that a recorder installed before it prints `# HELP`).
pub(crate) fn describe() {
    metrics::with_recorder(|r| {
        for &(name, kind, unit, help) in METRICS {
            let name = metrics::KeyName::from_const_str(name);
            let help = SharedString::const_str(help);
            match kind {
                Kind::Counter => r.describe_counter(name, unit, help),
                Kind::Gauge => r.describe_gauge(name, unit, help),
                Kind::Histogram => r.describe_histogram(name, unit, help),
            }
        }
    });
}

static META: Metadata<'static> =
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// One series: its key, made once, and its handle from the recorder that was installed when
/// it was last recorded. Registering again on every call would cost the Prometheus exporter
/// an allocation each time (its handles are wrapped in a new `Arc` per registration,
/// metrics-util `registry/recency.rs`); the handle is kept for as long as the same recorder
/// answers, so a recorder installed later (or a thread's local one) is still the one used.
pub(crate) struct Series<H> {
    key: Key,
    last: ArcSwapOption<(usize, H)>,
}

/// A handle a recorder gives for a key.
pub(crate) trait Register: Sized {
    fn register(r: &dyn Recorder, key: &Key) -> Self;
}

impl Register for Counter {
    fn register(r: &dyn Recorder, key: &Key) -> Self {
        r.register_counter(key, &META)
    }
}

impl Register for Gauge {
    fn register(r: &dyn Recorder, key: &Key) -> Self {
        r.register_gauge(key, &META)
    }
}

impl Register for Histogram {
    fn register(r: &dyn Recorder, key: &Key) -> Self {
        r.register_histogram(key, &META)
    }
}

impl<H: Register> Series<H> {
    fn new(name: &'static str, labels: Vec<Label>) -> Series<H> {
        Series {
            // retained (labels behind an `Arc`): a recorder that keeps the key clones it
            // without allocating
            key: Key::from_parts(name, labels).to_retained(),
            last: ArcSwapOption::empty(),
        }
    }

    /// `f` on the handle of the recorder installed now.
    #[inline]
    fn with(&self, f: impl FnOnce(&H)) {
        metrics::with_recorder(|r| {
            // the recorder's address tells one recorder from another (the global one never
            // moves; a local one lives as long as the calls it covers)
            let id = std::ptr::from_ref(r).cast::<()>() as usize;
            if let Some(last) = &*self.last.load()
                && last.0 == id
            {
                return f(&last.1);
            }
            let h = H::register(r, &self.key);
            f(&h);
            self.last.store(Some(Arc::new((id, h))));
        });
    }
}

pub(crate) fn add(s: &Series<Counter>, n: u64) {
    s.with(|c| c.increment(n));
}

pub(crate) fn record(s: &Series<Histogram>, v: f64) {
    s.with(|h| h.record(v));
}

pub(crate) fn set(s: &Series<Gauge>, v: f64) {
    s.with(|g| g.set(v));
}

/// The keys of one server's metrics, made once.
pub(crate) struct ServerMetrics {
    server: SharedString,
    pub(crate) hits: Series<Counter>,
    pub(crate) misses: Series<Counter>,
    pub(crate) timeouts: Series<Counter>,
    pub(crate) pool_wait: [Series<Histogram>; 2],
    pub(crate) up: Series<Gauge>,
    pub(crate) ejections: Series<Counter>,
    pub(crate) rejoins: Series<Counter>,
    pub(crate) probes: [Series<Counter>; 2],
    pub(crate) served_without_cache: Series<Counter>,
    /// Those labelled by command too, one entry per command seen: read on every request,
    /// written the first time a command is seen (about 20 in all).
    commands: ArcSwap<Vec<(&'static str, Arc<CommandMetrics>)>>,
    adding: Mutex<()>,
}

/// The keys of one server's metrics for one command.
pub(crate) struct CommandMetrics {
    pub(crate) requests: Series<Counter>,
    pub(crate) duration: [Series<Histogram>; 2],
}

impl ServerMetrics {
    pub(crate) fn new(server: &str) -> ServerMetrics {
        let server = SharedString::from_shared(Arc::<str>::from(server));
        let labels = || vec![Label::new("server", server.clone())];
        let (counter, histogram) = (
            |name| Series::<Counter>::new(name, labels()),
            |name| Series::<Histogram>::new(name, labels()),
        );
        ServerMetrics {
            hits: counter(HITS),
            misses: counter(MISSES),
            timeouts: counter(TIMEOUTS),
            pool_wait: [histogram(POOL_WAIT), histogram(LEGACY_POOL_WAIT)],
            up: Series::new(SERVER_UP, labels()),
            ejections: counter(EJECTIONS),
            rejoins: counter(REJOINS),
            probes: [counter(PROBES), counter(LEGACY_RETRIES)],
            served_without_cache: counter(SERVED_WITHOUT_CACHE),
            commands: ArcSwap::from_pointee(Vec::new()),
            adding: Mutex::new(()),
            server,
        }
    }

    /// The server's label value.
    pub(crate) fn server(&self) -> &SharedString {
        &self.server
    }

    /// `f` with the keys for `command`, made the first time it is asked for.
    pub(crate) fn with_command<T>(
        &self,
        command: &'static str,
        f: impl FnOnce(&CommandMetrics) -> T,
    ) -> T {
        if let Some((_, m)) = self.commands.load().iter().find(|(c, _)| *c == command) {
            return f(m);
        }
        let _one_at_a_time = self.adding.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.commands.load_full();
        if let Some((_, m)) = now.iter().find(|(c, _)| *c == command) {
            return f(m);
        }
        let labels = || {
            vec![
                Label::new("server", self.server.clone()),
                Label::new("command", command),
            ]
        };
        let made = Arc::new(CommandMetrics {
            requests: Series::new(REQUESTS, labels()),
            duration: [
                Series::new(REQUEST_DURATION, labels()),
                Series::new(LEGACY_REQUEST_SECONDS, labels()),
            ],
        });
        let mut next = Vec::with_capacity(now.len() + 1);
        next.extend(now.iter().cloned());
        next.push((command, made.clone()));
        self.commands.store(Arc::new(next));
        f(&made)
    }
}
