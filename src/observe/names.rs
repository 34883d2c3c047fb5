//! The metrics' names, for dashboards and alerts built in code, and the bucket bounds the
//! duration histograms are meant for. The [module's table](super) gives each one's labels.

/// Counter: requests to a server by command, those refused at once because the server is
/// marked down included.
pub const REQUESTS: &str = "memshard_requests_total";
/// Histogram: a request's time, per server and command; not the requests refused at once.
pub const REQUEST_DURATION: &str = "memshard_request_duration_seconds";
/// Counter: failed requests by server, command and error kind.
pub const ERRORS: &str = "memshard_errors_total";
/// Counter: requests that timed out, per server.
pub const TIMEOUTS: &str = "memshard_timeouts_total";
/// Counter: keys a retrieval found, per server.
pub const HITS: &str = "memshard_hits_total";
/// Counter: keys a retrieval did not find, per server.
pub const MISSES: &str = "memshard_misses_total";
/// Histogram: time waited for a pooled connection, per server.
pub const POOL_WAIT: &str = "memshard_pool_wait_duration_seconds";
/// Gauge: 1 while a listed server takes requests, 0 while it is marked down, NaN once it
/// left the list.
pub const SERVER_UP: &str = "memshard_server_up";
/// Counter: times a server was marked down.
pub const EJECTIONS: &str = "memshard_ejections_total";
/// Counter: times a server marked down answered again and took its keys back.
pub const REJOINS: &str = "memshard_rejoins_total";
/// Counter: probes of a server marked down.
pub const PROBES: &str = "memshard_probes_total";
/// Counter: cluster configurations applied from a discovery endpoint.
pub const DISCOVERY_CHANGES: &str = "memshard_discovery_changes_total";
/// Counter: `get_or_compute` calls its recompute answered because the server could not.
pub const SERVED_WITHOUT_CACHE: &str = "memshard_served_without_cache_total";
/// Gauge: reads of each of the hottest keys, labelled by key; only when asked for
/// ([`HotKeys::key_metrics`](crate::HotKeys::key_metrics)).
pub const HOT_KEY: &str = "memshard_hot_key_requests";
/// Gauge: the share of sampled keys that sit where the client places them.
pub const PLACEMENT_AGREEMENT: &str = "memshard_placement_agreement";

/// Deprecated name of [`REQUEST_DURATION`], recorded alongside it until the next release.
pub const LEGACY_REQUEST_SECONDS: &str = "memshard_request_seconds";
/// Deprecated name of [`POOL_WAIT`], recorded alongside it until the next release.
pub const LEGACY_POOL_WAIT: &str = "memshard_pool_wait_seconds";
/// Deprecated name of [`PROBES`], recorded alongside it until the next release.
pub const LEGACY_RETRIES: &str = "memshard_retries_total";

/// The bucket bounds, in seconds, memshard's histograms (every one a duration) are meant for:
/// 100 µs to 10 s, a loopback get near the bottom, a read timeout at the top.
///
/// The Prometheus exporter renders a histogram as a summary (quantiles, which cannot be
/// aggregated across servers or instances) unless it is given buckets:
///
/// ```
/// use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
/// use memshard::observe::names::DURATION_BUCKETS;
///
/// let builder = PrometheusBuilder::new()
///     .set_buckets_for_metric(Matcher::Prefix("memshard_".into()), DURATION_BUCKETS)?;
/// # let _ = builder;
/// # Ok::<(), metrics_exporter_prometheus::BuildError>(())
/// ```
pub const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
