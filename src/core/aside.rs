//! Cache-aside bookkeeping: when `get_or_compute` answers without the cache, and what it
//! counts. The decision is here, sans-IO; the lease flow (`core/leased.rs`) follows it.

use crate::error::Error;
use crate::outcome::CacheAsideStats;
use crate::settings::stampede::Stampede;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Whether a cache error `e` is answered by the recompute under `stampede`: only errors that
/// mean the server could not answer, never those about the request or the settings.
pub(crate) fn recompute_instead(stampede: &Stampede, e: &Error) -> bool {
    stampede.recomputes_when_down() && e.is_server_failure()
}

/// The counters behind [`CacheAsideStats`].
#[derive(Debug, Default)]
pub(crate) struct AsideCounters {
    recomputes: AtomicU64,
    served_without_cache: AtomicU64,
    negative_stored: AtomicU64,
}

impl AsideCounters {
    pub(crate) fn recomputed(&self) {
        self.recomputes.fetch_add(1, Relaxed);
    }

    pub(crate) fn served_without_cache(&self) {
        self.served_without_cache.fetch_add(1, Relaxed);
    }

    pub(crate) fn negative_stored(&self) {
        self.negative_stored.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> CacheAsideStats {
        CacheAsideStats {
            recomputes: self.recomputes.load(Relaxed),
            served_without_cache: self.served_without_cache.load(Relaxed),
            negative_stored: self.negative_stored.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_server_that_could_not_answer_is_recomputed_around() {
        let on = Stampede::default();
        let off = Stampede::default().recompute_when_down(false);
        let down = Error::ServerDown {
            server: "10.0.0.1:11211".into(),
            retry_in: Duration::from_secs(1),
        };
        let timeout = Error::Timeout {
            server: "10.0.0.1:11211".into(),
            op: "read",
            after: Duration::from_millis(100),
        };
        assert!(recompute_instead(&on, &down) && recompute_instead(&on, &timeout));
        assert!(!recompute_instead(&off, &down) && !recompute_instead(&off, &timeout));
        let key = Error::invalid_key(b"", crate::proto::KeyError::Empty);
        assert!(!recompute_instead(&on, &key));
        let c = AsideCounters::default();
        c.recomputed();
        c.served_without_cache();
        c.recomputed();
        c.negative_stored();
        let s = c.snapshot();
        assert_eq!(
            (s.recomputes, s.served_without_cache, s.negative_stored),
            (2, 1, 1)
        );
    }
}
