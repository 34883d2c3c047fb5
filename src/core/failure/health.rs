//! Failure counting, marking down, and coming back: a state machine with the clock passed in.
//!
//! The semantics follow libmemcached (`SERVER_FAILURE_LIMIT`, `RETRY_TIMEOUT`,
//! `REMOVE_FAILED_SERVERS`) and twemproxy (`server_failure_limit`, `server_retry_timeout`,
//! `auto_eject_hosts`): after `failure_limit` consecutive failures a server is down for
//! `retry_timeout`; requests for its keys fail fast (or, with auto-eject, its keys move to the
//! ring over the live servers). When the timeout has passed the server is probed; it is up again
//! once it answers.

use crate::settings::FailurePolicy;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What a request may do with a server right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Availability {
    /// Use it.
    Up,
    /// Down: fail fast; this long until it is probed again.
    Down(Duration),
    /// Down, but its retry timeout has passed: it should be probed.
    Probe,
}

/// One server's health. Lock-free: two atomics.
#[derive(Debug)]
pub(crate) struct Health {
    failures: AtomicU32,
    /// Nanoseconds after `epoch` until which the server is down; 0 = up.
    down_until: AtomicU64,
}

/// What a recorded failure did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    /// Nothing changed state.
    None,
    /// The server just went down.
    WentDown,
    /// The server just came back.
    CameBack,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            failures: AtomicU32::new(0),
            down_until: AtomicU64::new(0),
        }
    }
}

fn nanos(epoch: Instant, t: Instant) -> u64 {
    // at least 1 so that "down" is never confused with the 0 that means up; saturating, so
    // that a far-off time stays far off
    u64::try_from(t.saturating_duration_since(epoch).as_nanos())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl Health {
    /// Whether requests may use the server at `now`.
    pub(crate) fn availability(&self, epoch: Instant, now: Instant) -> Availability {
        let until = self.down_until.load(Ordering::Acquire);
        if until == 0 {
            return Availability::Up;
        }
        let now = nanos(epoch, now);
        if now >= until {
            Availability::Probe
        } else {
            Availability::Down(Duration::from_nanos(until - now))
        }
    }

    /// True while marked down (whether or not its retry timeout has passed).
    pub(crate) fn is_down(&self) -> bool {
        self.down_until.load(Ordering::Acquire) != 0
    }

    /// A request to the server failed at `now`.
    pub(crate) fn failure(
        &self,
        policy: &FailurePolicy,
        epoch: Instant,
        now: Instant,
    ) -> Transition {
        if policy.failure_limit == 0 {
            return Transition::None;
        }
        let n = self
            .failures
            .fetch_add(1, Ordering::AcqRel)
            .saturating_add(1);
        let was_down = self.is_down();
        // A failed probe, or the limit reached: down (again) for a whole retry timeout.
        if was_down || n >= policy.failure_limit {
            // saturating: a retry timeout too long to add to `now` means "down for good"
            let until = now
                .checked_add(policy.retry_timeout)
                .map_or(u64::MAX, |t| nanos(epoch, t));
            self.down_until.store(until, Ordering::Release);
            if !was_down {
                return Transition::WentDown;
            }
        }
        Transition::None
    }

    /// Mark the server down for a whole retry timeout from `now`, whatever its failure count
    /// (a returning server whose rejoin cleanup failed, or that came back before it was done).
    /// Returns [`Transition::WentDown`] if it was up.
    pub(crate) fn hold_down(
        &self,
        policy: &FailurePolicy,
        epoch: Instant,
        now: Instant,
    ) -> Transition {
        let until = now
            .checked_add(policy.retry_timeout)
            .map_or(u64::MAX, |t| nanos(epoch, t));
        if self.down_until.swap(until, Ordering::AcqRel) == 0 {
            Transition::WentDown
        } else {
            Transition::None
        }
    }

    /// A request to the server succeeded (the server answered, whatever it said).
    pub(crate) fn success(&self) -> Transition {
        self.failures.store(0, Ordering::Release);
        if self.down_until.swap(0, Ordering::AcqRel) != 0 {
            Transition::CameBack
        } else {
            Transition::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_then_retry_then_back() {
        let p = FailurePolicy {
            failure_limit: 2,
            retry_timeout: Duration::from_secs(5),
            auto_eject: false,
        };
        let h = Health::default();
        let t0 = Instant::now();
        assert_eq!(h.availability(t0, t0), Availability::Up);
        assert_eq!(h.failure(&p, t0, t0), Transition::None);
        assert_eq!(h.availability(t0, t0), Availability::Up);
        assert_eq!(h.success(), Transition::None, "a success resets the count");
        assert_eq!(h.failure(&p, t0, t0), Transition::None);
        assert_eq!(h.failure(&p, t0, t0), Transition::WentDown);
        assert_eq!(
            h.availability(t0, t0 + Duration::from_secs(1)),
            Availability::Down(Duration::from_secs(4))
        );
        assert_eq!(
            h.availability(t0, t0 + Duration::from_secs(5)),
            Availability::Probe
        );
        // a failed probe: down for another whole timeout
        let t1 = t0 + Duration::from_secs(6);
        assert_eq!(h.failure(&p, t0, t1), Transition::None);
        assert_eq!(
            h.availability(t0, t1 + Duration::from_secs(4)),
            Availability::Down(Duration::from_secs(1))
        );
        assert_eq!(
            h.availability(t0, t1 + Duration::from_secs(5)),
            Availability::Probe
        );
        assert_eq!(h.success(), Transition::CameBack);
        assert_eq!(h.availability(t0, t1), Availability::Up);
    }

    /// `Duration::MAX` as the retry timeout: `now + retry_timeout` overflowed `Instant` (a
    /// panic) before the arithmetic saturated.
    #[test]
    fn longest_retry_timeout_saturates() {
        let p = FailurePolicy {
            failure_limit: 1,
            retry_timeout: Duration::MAX,
            auto_eject: false,
        };
        let h = Health::default();
        let t0 = Instant::now();
        assert_eq!(h.failure(&p, t0, t0), Transition::WentDown);
        let later = t0 + Duration::from_secs(3600 * 24 * 365);
        assert!(matches!(h.availability(t0, later), Availability::Down(_)));
        // a failed probe far in the future saturates too
        assert_eq!(h.failure(&p, t0, later), Transition::None);
        assert!(matches!(h.availability(t0, later), Availability::Down(_)));
        assert_eq!(h.success(), Transition::CameBack);
    }

    #[test]
    fn limit_zero_never_marks_down() {
        let p = FailurePolicy {
            failure_limit: 0,
            ..FailurePolicy::default()
        };
        let h = Health::default();
        let t0 = Instant::now();
        for _ in 0..100 {
            assert_eq!(h.failure(&p, t0, t0), Transition::None);
        }
        assert_eq!(h.availability(t0, t0), Availability::Up);
    }
}
