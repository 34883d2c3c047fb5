//! What a route is: its kind and settings, the migration clock's phases, and the TTL cap of
//! the gutter. No I/O.

use crate::Expiry;
use crate::error::{Error, Result};
use crate::settings::expiry::RELATIVE_LIMIT;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Which pool a mirror reads first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReadPolicy {
    /// Read pool `a`; on a failure (not a miss) read `b`.
    #[default]
    PreferA,
    /// Read pool `b`; on a failure (not a miss) read `a`.
    PreferB,
    /// Pick a pool at random per read (spreads reads over both); the other on a failure.
    Random,
}

impl std::str::FromStr for ReadPolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<ReadPolicy> {
        match s {
            "a" | "prefer-a" | "prefer_a" => Ok(ReadPolicy::PreferA),
            "b" | "prefer-b" | "prefer_b" => Ok(ReadPolicy::PreferB),
            "random" => Ok(ReadPolicy::Random),
            other => Err(Error::Config(format!(
                "unknown read policy {other:?}: use prefer-a, prefer-b or random"
            ))),
        }
    }
}

/// The window of a [`migrate`](crate::Router::migrate) route: before `start` every request
/// goes to the old pool; during `[start, start + window)` the route is a warm-up (reads the
/// new pool, falls back to the old one, writes both); during the `tail` after it the new pool
/// serves alone but deletes still go to both (for processes whose switch came late); after
/// that, the new pool alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// When the warm-up starts (this machine's clock).
    pub start: SystemTime,
    /// How long reads fall back to the old pool.
    pub window: Duration,
    /// How long deletes still go to both pools after the window (default: `window`).
    pub tail: Duration,
    /// The expiry of a value copied from the old pool into the new one (see
    /// [`Router::warm_up`](crate::Router::warm_up)).
    pub backfill: Expiry,
}

impl Migration {
    /// A migration starting at `start` for `window`, with the tail as long as the window.
    pub fn new(start: SystemTime, window: Duration, backfill: impl Into<Expiry>) -> Migration {
        Migration {
            start,
            window,
            tail: window,
            backfill: backfill.into(),
        }
    }
}

/// Where a migration stands at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the start: the old pool alone.
    Old,
    /// The window: warm-up.
    WarmUp,
    /// The tail: the new pool alone, deletes to both.
    NewDeletesBoth,
    /// After the tail: the new pool alone.
    New,
}

impl Phase {
    /// The phase's number for the `memshard_route_migrate_phase` gauge (0 to 3, in order).
    pub fn number(self) -> u8 {
        match self {
            Phase::Old => 0,
            Phase::WarmUp => 1,
            Phase::NewDeletesBoth => 2,
            Phase::New => 3,
        }
    }
}

/// The kind of a route and its settings.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    WarmUp { backfill: Expiry },
    Migrate(Migration),
    Gutter { ttl: u32 },
    Mirror { policy: ReadPolicy },
}

impl Kind {
    /// The route's name, for errors and metrics.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Kind::WarmUp { .. } => "warm_up",
            Kind::Migrate(_) => "migrate",
            Kind::Gutter { .. } => "gutter",
            Kind::Mirror { .. } => "mirror",
        }
    }

    /// The names of the two pools, first then second.
    pub(crate) fn pool_names(&self) -> [&'static str; 2] {
        match self {
            Kind::WarmUp { .. } | Kind::Migrate(_) => ["new", "old"],
            Kind::Gutter { .. } => ["main", "gutter"],
            Kind::Mirror { .. } => ["a", "b"],
        }
    }

    /// The migration phase at `now` (a warm-up route is always in its window).
    pub(crate) fn phase(&self, now: SystemTime) -> Option<Phase> {
        match self {
            Kind::WarmUp { .. } => Some(Phase::WarmUp),
            Kind::Migrate(m) => Some(migration_phase(m, now)),
            _ => None,
        }
    }

    /// The expiry of a value copied into the new pool.
    pub(crate) fn backfill(&self) -> Expiry {
        match self {
            Kind::WarmUp { backfill } => *backfill,
            Kind::Migrate(m) => m.backfill,
            _ => Expiry::NEVER,
        }
    }
}

fn migration_phase(m: &Migration, now: SystemTime) -> Phase {
    let Ok(since) = now.duration_since(m.start) else {
        return Phase::Old;
    };
    if since < m.window {
        Phase::WarmUp
    } else if since < m.window.saturating_add(m.tail) {
        Phase::NewDeletesBoth
    } else {
        Phase::New
    }
}

/// The gutter TTL in whole seconds (at least 1, at most 30 days: a gutter holds keys for
/// minutes, and above 30 days memcached would read the number as a date).
pub(crate) fn gutter_ttl(ttl: Duration) -> Result<u32> {
    let secs = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    if secs == 0 || secs > RELATIVE_LIMIT {
        return Err(Error::Config(format!(
            "gutter TTL of {ttl:?}: give between 1 second and 30 days (mcrouter uses 60 s)"
        )));
    }
    Ok(secs as u32)
}

/// `exptime` (as sent) capped at `cap` seconds, as mcrouter's `ModifyExptimeRoute` in `min`
/// mode does for its failover children (`mcrouter/routes/ModifyExptimeRoute.h`): 0 (never) and
/// anything later than `cap` become `cap`; an absolute time is compared by what is left of it.
pub(crate) fn cap_exptime(exptime: u32, cap: u32, now: SystemTime) -> u32 {
    if exptime == 0 {
        return cap;
    }
    if u64::from(exptime) <= RELATIVE_LIMIT {
        return exptime.min(cap);
    }
    let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    match u64::from(exptime).checked_sub(now) {
        // already past: keep it, the server drops the item at once
        None | Some(0) => exptime,
        Some(left) if left > u64::from(cap) => cap,
        Some(_) => exptime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_follow_the_clock() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let m = Migration::new(start, Duration::from_secs(100), Duration::from_secs(60));
        let at = |s: u64| migration_phase(&m, UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(999_999), Phase::Old);
        assert_eq!(at(1_000_000), Phase::WarmUp);
        assert_eq!(at(1_000_099), Phase::WarmUp);
        assert_eq!(at(1_000_100), Phase::NewDeletesBoth);
        assert_eq!(at(1_000_199), Phase::NewDeletesBoth);
        assert_eq!(at(1_000_200), Phase::New);
        let long = Migration::new(start, Duration::MAX, Expiry::NEVER);
        assert_eq!(
            migration_phase(&long, UNIX_EPOCH + Duration::from_secs(u32::MAX as u64)),
            Phase::WarmUp
        );
    }

    #[test]
    fn the_gutter_caps_every_ttl() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(cap_exptime(0, 60, now), 60, "never becomes the cap");
        assert_eq!(cap_exptime(30, 60, now), 30);
        assert_eq!(cap_exptime(3600, 60, now), 60);
        assert_eq!(
            cap_exptime(1_800_000_030, 60, now),
            1_800_000_030,
            "absolute, 30 s left"
        );
        assert_eq!(
            cap_exptime(1_800_003_600, 60, now),
            60,
            "absolute, an hour left"
        );
        assert_eq!(
            cap_exptime(1_700_000_000, 60, now),
            1_700_000_000,
            "already past"
        );
        assert_eq!(
            cap_exptime(1_800_000_060, 60, now),
            1_800_000_060,
            "absolute, the cap left exactly: kept as sent"
        );
    }

    #[test]
    fn gutter_ttl_bounds() {
        assert!(gutter_ttl(Duration::ZERO).is_err());
        assert_eq!(gutter_ttl(Duration::from_millis(1)).ok(), Some(1));
        assert_eq!(gutter_ttl(Duration::from_secs(60)).ok(), Some(60));
        assert_eq!(
            gutter_ttl(Duration::from_secs(RELATIVE_LIMIT)).ok(),
            Some(RELATIVE_LIMIT as u32),
            "30 days exactly"
        );
        assert!(gutter_ttl(Duration::from_secs(RELATIVE_LIMIT + 1)).is_err());
    }

    #[test]
    fn read_policies_parse() {
        assert_eq!(
            "prefer-b".parse::<ReadPolicy>().ok(),
            Some(ReadPolicy::PreferB)
        );
        assert!("fastest".parse::<ReadPolicy>().is_err());
    }

    #[test]
    fn each_kind_names_its_pools_phase_and_backfill() {
        let backfill = Expiry::after(Duration::from_secs(60));
        let later = Expiry::after(Duration::from_secs(120));
        let m = Migration::new(UNIX_EPOCH, Duration::from_secs(100), later);
        let kinds = [
            Kind::WarmUp { backfill },
            Kind::Migrate(m),
            Kind::Gutter { ttl: 10 },
            Kind::Mirror {
                policy: ReadPolicy::PreferA,
            },
        ];
        let names: Vec<(&str, [&str; 2])> =
            kinds.iter().map(|k| (k.name(), k.pool_names())).collect();
        assert_eq!(
            names,
            [
                ("warm_up", ["new", "old"]),
                ("migrate", ["new", "old"]),
                ("gutter", ["main", "gutter"]),
                ("mirror", ["a", "b"]),
            ]
        );
        let backfills: Vec<Expiry> = kinds.iter().map(Kind::backfill).collect();
        assert_eq!(backfills, [backfill, later, Expiry::NEVER, Expiry::NEVER]);
        let numbers: Vec<u8> = [Phase::Old, Phase::WarmUp, Phase::NewDeletesBoth, Phase::New]
            .into_iter()
            .map(Phase::number)
            .collect();
        assert_eq!(numbers, [0, 1, 2, 3]);
    }
}
