//! How a client reacts to failing servers: when a server is marked down, for how long, and
//! whether its keys move to the live servers meanwhile.

use std::time::Duration;

/// How the client reacts to failing servers.
///
/// ```
/// use memshard::FailurePolicy;
/// use std::time::Duration;
/// let twemproxy_like = FailurePolicy::new(2, Duration::from_secs(30), true);
/// let never_down = FailurePolicy::default().with_failure_limit(0);
/// assert!(twemproxy_like.auto_eject && never_down.retry_timeout == Duration::from_secs(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailurePolicy {
    /// Consecutive failures (I/O error, timeout, protocol error, failed connect) that mark a
    /// server down. Default: 2 (twemproxy's `server_failure_limit` default). 0 disables
    /// marking servers down.
    pub failure_limit: u32,
    /// How long a down server is left alone before it is probed again. Default: 2 s
    /// (libmemcached's retry timeout). Under 10 ms (0 included), requests may try the server
    /// again at once, but the background prober still waits 10 ms between its rounds, so a
    /// refused server never costs a busy loop.
    pub retry_timeout: Duration,
    /// Rebuild the ring over the live servers while a server is down, as libmemcached's
    /// `REMOVE_FAILED_SERVERS` and twemproxy's `auto_eject_hosts` do (point counts change with
    /// the live count and weight). Default: off: the down server's keys get errors.
    pub auto_eject: bool,
}

impl Default for FailurePolicy {
    fn default() -> Self {
        FailurePolicy {
            failure_limit: 2,
            retry_timeout: Duration::from_secs(2),
            auto_eject: false,
        }
    }
}

impl FailurePolicy {
    /// A policy: `failure_limit` consecutive failures mark a server down (0: never),
    /// `retry_timeout` until it is probed again, `auto_eject` to move its keys meanwhile.
    pub fn new(failure_limit: u32, retry_timeout: Duration, auto_eject: bool) -> FailurePolicy {
        FailurePolicy {
            failure_limit,
            retry_timeout,
            auto_eject,
        }
    }

    /// This policy with another failure limit.
    pub fn with_failure_limit(self, failure_limit: u32) -> FailurePolicy {
        FailurePolicy {
            failure_limit,
            ..self
        }
    }

    /// This policy with another retry timeout.
    pub fn with_retry_timeout(self, retry_timeout: Duration) -> FailurePolicy {
        FailurePolicy {
            retry_timeout,
            ..self
        }
    }

    /// This policy with auto-eject on or off.
    pub fn with_auto_eject(self, auto_eject: bool) -> FailurePolicy {
        FailurePolicy { auto_eject, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `with_` changes its own field and keeps the other two.
    #[test]
    fn each_with_changes_one_field() {
        let p = FailurePolicy::new(5, Duration::from_secs(7), true);
        assert_eq!(
            p.with_failure_limit(9),
            FailurePolicy::new(9, Duration::from_secs(7), true)
        );
        assert_eq!(
            p.with_retry_timeout(Duration::from_secs(3)),
            FailurePolicy::new(5, Duration::from_secs(3), true)
        );
        assert_eq!(
            p.with_auto_eject(false),
            FailurePolicy::new(5, Duration::from_secs(7), false)
        );
        assert_eq!(
            FailurePolicy::default().with_auto_eject(true),
            FailurePolicy::new(2, Duration::from_secs(2), true)
        );
    }
}
