//! Stampede protection's settings and its waiting: how long a lease lasts, how long a caller
//! waits for another caller's recompute, and when a hot key is recomputed before it expires.
//! The meta exchanges are in `exchange::lease`; the calls, written once for both clients, in
//! `api::stampede_methods`.

use crate::error::{MAX_TIMEOUT, SettingError};
use std::time::{Duration, Instant};

/// Stampede protection for [`Client::get_or_compute`](crate::Client::get_or_compute) and
/// [`Client::invalidate`](crate::Client::invalidate), set with
/// [`Builder::stampede`](crate::Builder::stampede). Needs memcached 1.6 or later (meta
/// commands), whatever [`Protocol`](crate::Protocol) the client uses for other commands.
///
/// - On a miss, memcached hands exactly one caller, in any process on any host, a lease (`mg …
///   N`: the winner's `W`); it recomputes and stores, the others wait up to
///   [`wait`](Stampede::wait) for the value.
/// - A lease whose holder dies ends after [`lease`](Stampede::lease): the next caller wins.
/// - `invalidate` marks the value stale instead of deleting it: one caller recomputes, the
///   others are served the stale value meanwhile.
/// - With [`early_recache`](Stampede::early_recache), one caller recomputes a value that
///   expires within that time, while the others are served the current one.
///
/// ```
/// use memshard::Stampede;
/// use std::time::Duration;
/// let s = Stampede::default()
///     .lease(Duration::from_secs(10))
///     .wait(Duration::from_secs(2))
///     .early_recache(Duration::from_secs(30));
/// assert_eq!(s.lease_secs(), 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stampede {
    lease: Duration,
    wait: Duration,
    early_recache: Option<Duration>,
    recompute_when_down: bool,
    negative_ttl: Duration,
}

impl Default for Stampede {
    /// A 30 s lease, a 3 s wait, no early recache; the recompute answers when the cache cannot;
    /// "no such value" is cached for 5 s.
    fn default() -> Self {
        Stampede {
            lease: Duration::from_secs(30),
            wait: Duration::from_secs(3),
            early_recache: None,
            recompute_when_down: true,
            negative_ttl: Duration::from_secs(5),
        }
    }
}

impl Stampede {
    /// How long a caller's lease to recompute lasts (whole seconds, at least 1): the most a
    /// key stays without a value when its winner dies, and the time a stale value is kept
    /// after `invalidate`. Longer than the slowest recompute.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How long a caller that did not win waits for the winner's value before
    /// [`Error::LeaseBusy`](crate::Error::LeaseBusy). Zero: never wait.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Recompute a value that expires within `before_expiry` (whole seconds, at least 1): one
    /// caller recomputes it while the others are served the current value (memcached's `R`).
    pub fn early_recache(mut self, before_expiry: Duration) -> Self {
        self.early_recache = Some(before_expiry);
        self
    }

    /// When the cache cannot answer (its server is down, times out, refuses the connection or
    /// fails mid-reply), `get_or_compute` runs the recompute and returns its value, counted and
    /// reported; the default. `false`: fail with the cache's error instead. Errors that are not
    /// the server's (TLS, credentials, an invalid key, a value too large) always fail.
    pub fn recompute_when_down(mut self, on: bool) -> Self {
        self.recompute_when_down = on;
        self
    }

    /// Whether the recompute answers when the cache cannot ([`Stampede::recompute_when_down`]).
    pub fn recomputes_when_down(&self) -> bool {
        self.recompute_when_down
    }

    /// How long `get_or_compute_as` keeps a recompute's "no such value" (`Ok(None)` of an
    /// `Option` value) so that the callers waiting for it, and the next ones, are answered
    /// without loading again (whole seconds, at least 1; default 5 s).
    pub fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.negative_ttl = ttl;
        self
    }

    /// The negative TTL in whole seconds (rounded up).
    pub fn negative_ttl_secs(&self) -> u32 {
        secs(self.negative_ttl)
    }

    /// The lease in whole seconds (rounded up).
    pub fn lease_secs(&self) -> u32 {
        secs(self.lease)
    }

    /// The early recache threshold in whole seconds (rounded up), if on.
    pub fn early_recache_secs(&self) -> Option<u32> {
        self.early_recache.map(secs)
    }

    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        for (setting, d) in [
            ("stampede lease", Some(self.lease)),
            ("stampede early_recache", self.early_recache),
            ("stampede negative_ttl", Some(self.negative_ttl)),
        ] {
            match d {
                Some(d) if d.is_zero() => return Err(SettingError::ZeroTimeout { setting }),
                Some(value) if value > MAX_TIMEOUT => {
                    return Err(SettingError::TimeoutTooLong { setting, value });
                }
                _ => {}
            }
        }
        if self.wait > MAX_TIMEOUT {
            return Err(SettingError::TimeoutTooLong {
                setting: "stampede wait",
                value: self.wait,
            });
        }
        Ok(())
    }

    /// The waiting of one caller that did not win.
    pub(crate) fn waiting(&self) -> Waiting {
        Waiting {
            started: Instant::now(),
            wait: self.wait,
            pause: Duration::from_millis(2),
        }
    }
}

fn secs(d: Duration) -> u32 {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    u32::try_from(s.max(1)).unwrap_or(u32::MAX)
}

/// A caller waiting for another caller's recompute: pauses from 2 ms doubling to 50 ms (with
/// jitter, so that the waiters of many processes do not read in step), until the wait is over.
#[derive(Debug)]
pub(crate) struct Waiting {
    started: Instant,
    wait: Duration,
    pause: Duration,
}

impl Waiting {
    /// The pause before the next read, or `Err(waited)` when the wait is over.
    pub(crate) fn next_pause(&mut self) -> Result<Duration, Duration> {
        let waited = self.started.elapsed();
        let Some(left) = self.wait.checked_sub(waited).filter(|l| !l.is_zero()) else {
            return Err(waited);
        };
        let pause = self.pause.mul_f64(0.5 + fastrand::f64()).min(left);
        self.pause = (self.pause * 2).min(Duration::from_millis(50));
        Ok(pause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up_and_bad_settings_are_refused() {
        let s = Stampede::default().lease(Duration::from_millis(1500));
        assert_eq!(s.lease_secs(), 2);
        assert!(s.validate().is_ok());
        assert!(
            Stampede::default()
                .lease(Duration::ZERO)
                .validate()
                .is_err()
        );
        assert!(
            Stampede::default()
                .early_recache(Duration::from_secs(u64::MAX))
                .validate()
                .is_err()
        );
        let mut w = Stampede::default().wait(Duration::ZERO).waiting();
        assert!(w.next_pause().is_err());
    }

    #[test]
    fn whole_seconds_and_the_bounds_exactly() {
        assert_eq!(Stampede::default().early_recache_secs(), None);
        let s = Stampede::default()
            .early_recache(Duration::from_millis(2500))
            .lease(Duration::from_secs(2));
        assert_eq!((s.early_recache_secs(), s.lease_secs()), (Some(3), 2));
        assert_eq!(Stampede::default().negative_ttl_secs(), 5);
        let over = MAX_TIMEOUT + Duration::from_nanos(1);
        for ok in [
            Stampede::default().lease(MAX_TIMEOUT),
            Stampede::default().wait(MAX_TIMEOUT),
            Stampede::default().early_recache(MAX_TIMEOUT),
            Stampede::default().negative_ttl(MAX_TIMEOUT),
        ] {
            assert!(ok.validate().is_ok(), "{ok:?}");
        }
        for bad in [
            Stampede::default().lease(over),
            Stampede::default().wait(over),
            Stampede::default().negative_ttl(over),
            Stampede::default().negative_ttl(Duration::ZERO),
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pauses_start_near_two_milliseconds_and_grow_to_about_fifty() {
        let mut w = Stampede::default().wait(Duration::from_secs(60)).waiting();
        let pauses: Vec<Duration> = (0..8).map(|_| w.next_pause().expect("waiting")).collect();
        // jitter: each pause is its step's 0.5 to 1.5 times
        assert!(
            (Duration::from_millis(1)..Duration::from_millis(3)).contains(&pauses[0]),
            "{pauses:?}"
        );
        assert!(pauses[7] >= Duration::from_millis(25), "{pauses:?}");
        assert!(
            pauses.iter().all(|p| *p < Duration::from_millis(75)),
            "{pauses:?}"
        );
    }
}
