//! What a route counts: a snapshot ([`RouteStats`]) for tests, the CLI and dashboards without
//! a metrics stack, and the same counters through the `metrics` facade (feature `metrics`) as
//! `memshard_route_<name>_total{route}`, plus the gauge `memshard_route_migrate_phase{route}`.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// A route's counters since it was built.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct RouteStats {
            $($(#[$doc])* pub $name: u64,)*
        }

        /// What a route counts (one atomic per counter).
        #[derive(Debug, Default)]
        pub(crate) struct Counters {
            $($name: AtomicU64,)*
        }

        /// A counter of [`Counters`].
        #[derive(Clone, Copy, Debug)]
        #[allow(non_camel_case_types)]
        pub(crate) enum Counter { $($name,)* }

        impl Counters {
            fn cell(&self, c: Counter) -> (&AtomicU64, &'static str) {
                match c {
                    $(Counter::$name => (&self.$name, concat!("memshard_route_", stringify!($name), "_total")),)*
                }
            }

            pub(crate) fn snapshot(&self) -> RouteStats {
                RouteStats { $($name: self.$name.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters! {
    /// Reads sent to the second pool: the old pool after a miss or failure on the new one
    /// (warm-up), the other mirror after a failure or miss.
    fallback_reads,
    /// Fallback reads that found the key.
    fallback_hits,
    /// Fallback reads that failed (counted as misses).
    fallback_errors,
    /// Values copied into the new (or preferred) pool with `add` and stored.
    backfills,
    /// Backfills the target refused because a value was written there meanwhile (it wins).
    backfills_lost,
    /// Backfills that failed.
    backfill_errors,
    /// Writes or deletes that failed on one copy while the other took them; the failed
    /// copy's key was recorded and its server is kept out of reads until the key is deleted
    /// there.
    repairs_recorded,
    /// Copies deleted because a read-modify command (cas, incr, decr, append, prepend,
    /// replace) changed only the authoritative one.
    old_copies_deleted,
    /// Commands the route refused (a CAS token from another copy, a counter on the gutter).
    refused,
    /// Requests the gutter took for a failed main server.
    gutter_requests,
    /// Gutter reads that found the key.
    gutter_hits,
    /// Keys deleted from the gutter after their main server returned.
    gutter_cleanup_deletes,
    /// Mirror writes that reached one pool only.
    mirror_partial_writes,
    /// Mirror copies found to differ (by `verify`, or two results of one command).
    mirror_divergences,
    /// Keys a prefix route sent to its default route (they matched no prefix).
    prefix_defaults,
    /// Keys a prefix route refused: they matched no prefix and it has no default.
    unmatched,
    /// Reads a zone route sent past the local zone, after a miss or a failure there.
    zone_fallback_reads,
    /// Those reads that found the key.
    zone_fallback_hits,
    /// Writes a zone route refused because fewer zones took them than its acknowledgement
    /// policy needs (the zones that took them keep them).
    zone_short_writes,
    /// Zone copies found to differ (by `verify`, or two results of one read-modify command;
    /// the copy the caller was not told about is deleted).
    zone_divergences,
}

impl Counters {
    /// Count one `c` of route `route`.
    pub(crate) fn add(&self, route: &'static str, c: Counter, n: u64) {
        let (cell, name) = self.cell(c);
        cell.fetch_add(n, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        metrics::counter!(name, "route" => route).increment(n);
        #[cfg(not(feature = "metrics"))]
        let _ = (route, name);
    }

    /// Count one `c`.
    pub(crate) fn one(&self, route: &'static str, c: Counter) {
        self.add(route, c, 1);
    }
}

/// The migration phase `n` of route `route`, for the gauge.
pub(crate) fn phase(route: &'static str, n: u8) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("memshard_route_migrate_phase", "route" => route).set(f64::from(n));
    #[cfg(not(feature = "metrics"))]
    let _ = (route, n);
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    #[test]
    fn the_phase_gauge_holds_the_last_phase() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            super::phase("migrate", 1);
            super::phase("migrate", 2);
        });
        let gauges: Vec<(String, f64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(k, _, _, v)| match v {
                DebugValue::Gauge(g) => Some((k.key().name().to_string(), g.into_inner())),
                _ => None,
            })
            .collect();
        assert_eq!(gauges, [("memshard_route_migrate_phase".to_string(), 2.0)]);
    }
}
