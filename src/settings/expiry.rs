//! When an item expires, as a type: memcached's `exptime` field means seconds from now up to 30
//! days and a Unix time above that (`doc/protocol.txt`, "Expiration times"), so a TTL of 40 days
//! passed through as 3,456,000 is read as a date in 1970 and the item is gone at once. [`Expiry`]
//! keeps what the caller meant and spells it for the wire when the request is made.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// memcached reads an `exptime` above this many seconds (30 days) as a Unix time.
pub(crate) const RELATIVE_LIMIT: u64 = 60 * 60 * 24 * 30;

/// When a stored item expires.
///
/// Built from a [`Duration`] (from now) or a [`SystemTime`] (absolute), or [`Expiry::NEVER`].
/// A duration beyond 30 days is sent as the absolute time it ends at, by this machine's clock;
/// a duration below a second is rounded up to one second (0 would mean "never").
///
/// ```
/// use memshard::Expiry;
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// assert_eq!(Expiry::after(Duration::from_secs(300)).exptime(now), 300);
/// // 40 days: memcached would read 3,456,000 as a date in 1970, so the end time is sent.
/// assert_eq!(Expiry::after(Duration::from_secs(40 * 86_400)).exptime(now), 1_803_456_000);
/// assert_eq!(Expiry::NEVER.exptime(now), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Expiry(When);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum When {
    #[default]
    Never,
    After(Duration),
    At(SystemTime),
}

impl Expiry {
    /// Never expires (exptime 0); the item may still be evicted.
    pub const NEVER: Expiry = Expiry(When::Never);

    /// Expires `ttl` from the time of the request.
    pub fn after(ttl: Duration) -> Expiry {
        Expiry(When::After(ttl))
    }

    /// Expires at `time` (by the server's clock: keep the clocks in sync). A time already
    /// past expires the item at once.
    pub fn at(time: SystemTime) -> Expiry {
        Expiry(When::At(time))
    }

    /// The `exptime` to send for a request made at `now`.
    pub fn exptime(self, now: SystemTime) -> u32 {
        match self.0 {
            When::Never => 0,
            When::After(ttl) => {
                let secs = ttl
                    .as_secs()
                    .saturating_add(u64::from(ttl.subsec_nanos() > 0));
                if secs <= RELATIVE_LIMIT {
                    secs.max(1) as u32
                } else {
                    unix_exptime(now.checked_add(ttl))
                }
            }
            When::At(time) => unix_exptime(Some(time)),
        }
    }

    /// The `exptime` to send for a request made now.
    pub fn exptime_now(self) -> u32 {
        self.exptime(SystemTime::now())
    }
}

/// A Unix time for the wire: above the 30-day limit so it is never read as relative (a time
/// before 1970-01-31 is long past either way), at most `u32::MAX` (2106).
fn unix_exptime(time: Option<SystemTime>) -> u32 {
    let secs = match time.map(|t| t.duration_since(UNIX_EPOCH)) {
        Some(Ok(d)) => d.as_secs(),
        Some(Err(_)) => 0,
        None => u64::MAX,
    };
    secs.clamp(RELATIVE_LIMIT + 1, u64::from(u32::MAX)) as u32
}

impl From<Duration> for Expiry {
    fn from(ttl: Duration) -> Self {
        Expiry::after(ttl)
    }
}

/// Whole seconds from now, as memcached's own `exptime` up to 30 days reads; 0 never expires
/// (beyond 30 days the end time is sent, as for a [`Duration`]).
///
/// ```
/// use memshard::Expiry;
/// use std::time::{Duration, UNIX_EPOCH};
/// let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// // a bare integer is seconds: `client.set(key, value, 300)`
/// let e: Expiry = 300.into();
/// assert_eq!(e.exptime(now), 300);
/// assert_eq!(Expiry::from(0), Expiry::NEVER);
/// ```
impl From<u32> for Expiry {
    fn from(secs: u32) -> Self {
        match secs {
            0 => Expiry::NEVER,
            s => Expiry::after(Duration::from_secs(u64::from(s))),
        }
    }
}

impl From<SystemTime> for Expiry {
    fn from(time: SystemTime) -> Self {
        Expiry::at(time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thirty_day_rule() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let after = |s| Expiry::after(Duration::from_secs(s)).exptime(now);
        assert_eq!(after(RELATIVE_LIMIT), RELATIVE_LIMIT as u32);
        assert_eq!(
            after(RELATIVE_LIMIT + 1),
            1_800_000_000 + RELATIVE_LIMIT as u32 + 1
        );
        assert_eq!(Expiry::after(Duration::ZERO).exptime(now), 1);
        assert_eq!(Expiry::after(Duration::from_millis(1500)).exptime(now), 2);
        assert_eq!(Expiry::after(Duration::MAX).exptime(now), u32::MAX);
        assert_eq!(
            Expiry::at(UNIX_EPOCH).exptime(now),
            RELATIVE_LIMIT as u32 + 1
        );
        let t = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        assert_eq!(Expiry::at(t).exptime(now), 1_900_000_000);
        assert_eq!(Expiry::default(), Expiry::NEVER);
    }

    /// memcached's `REALTIME_MAXDELTA` (memcached.h): 60*60*24*30 seconds.
    #[test]
    fn thirty_days_are_the_last_relative_time() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(RELATIVE_LIMIT, 2_592_000);
        let from = |s| Expiry::from(Duration::from_secs(s)).exptime(now);
        assert_eq!(from(2_592_000), 2_592_000);
        assert_eq!(from(2_592_001), 1_802_592_001);
        assert_eq!(from(7), 7);
        assert_eq!(
            Expiry::from(Duration::from_secs(7)),
            Expiry::after(Duration::from_secs(7))
        );
    }

    /// A bare integer is seconds from now (0: never); a `SystemTime` is an end time; a
    /// relative expiry sent now is its seconds, whatever the clock says.
    #[test]
    fn integers_and_times_convert() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(Expiry::from(0u32), Expiry::NEVER);
        assert_eq!(
            Expiry::from(300u32),
            Expiry::after(Duration::from_secs(300))
        );
        assert_eq!(Expiry::from(300u32).exptime(now), 300);
        let t = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        assert_eq!(Expiry::from(t), Expiry::at(t));
        assert_eq!(Expiry::from(t).exptime(now), 1_900_000_000);
        assert_eq!(Expiry::after(Duration::from_secs(300)).exptime_now(), 300);
        assert_eq!(Expiry::NEVER.exptime_now(), 0);
    }
}
