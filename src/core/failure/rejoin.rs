//! Rejoin without stale data: the bookkeeping both clients share (no I/O here).
//!
//! With auto-eject, a key whose owner on the full ring is an ejected server is written to (or
//! deleted from) another server while it is out. A server that was only unreachable
//! (partition, SIGSTOP) still holds its old copy of the key when it returns, and would serve it
//! as soon as it takes reads again. libmemcached (`REMOVE_FAILED_SERVERS`) and twemproxy
//! (`auto_eject_hosts`) have this hole; memshard closes it:
//!
//! - while a server is out, every write or delete routed away from it (set, add, replace,
//!   append, prepend, cas, incr, decr, touch, delete, single and multi-key, noreply too) records
//!   the key (as sent, with the prefix) in that server's [`RejoinLog`];
//! - when a probe finds the server answering again, and **before** it takes reads, the client
//!   deletes those keys on it (pipelined, checked deletes) on the probe connection; if that
//!   fails the server stays out, its keys still recorded, and is probed again;
//! - the log is bounded ([`Builder::rejoin_limit`](crate::Builder::rejoin_limit), default
//!   [`DEFAULT_REJOIN_LIMIT`](crate::settings::DEFAULT_REJOIN_LIMIT) keys per server). Once more distinct keys than that were changed,
//!   the key list is dropped and the server is **flushed** (`flush_all`) before it rejoins. That
//!   loses its other data too, which is the price of never serving a stale value; it is what
//!   a restarted server would have lost anyway, and it needs no operator to notice (keeping the
//!   server out until someone calls a method would leave a healthy server unused, and its keys
//!   on the wrong servers, for as long as nobody looks).
//!
//! Memory: at most `limit` keys (up to 250 bytes each) per server that is out; nothing while
//! every server is up.

use std::collections::HashSet;
use std::sync::Mutex;

/// What must be done on a returning server before it takes reads again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cleanup {
    /// Nothing was changed while it was out.
    Nothing,
    /// Delete these keys (as sent: prefixed) on it.
    Delete(Vec<Vec<u8>>),
    /// More keys changed than the bound: `flush_all` on it.
    Flush,
}

#[derive(Debug, Default)]
struct State {
    /// Ejected: writes routed away from the server are recorded.
    out: bool,
    keys: HashSet<Vec<u8>>,
    /// More than `limit` distinct keys were recorded: the server must be flushed.
    overflowed: bool,
}

/// One server's record of the keys changed elsewhere while it was out.
#[derive(Debug)]
pub(crate) struct RejoinLog {
    limit: usize,
    state: Mutex<State>,
}

impl RejoinLog {
    /// An empty log remembering at most `limit` keys (0: any change while out means a flush).
    pub(crate) fn new(limit: usize) -> RejoinLog {
        RejoinLog {
            limit,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The server was ejected: record from now on (what was recorded before is kept).
    pub(crate) fn went_out(&self) {
        self.state().out = true;
    }

    /// Whether the server is out (ejected and not cleaned up yet).
    pub(crate) fn is_out(&self) -> bool {
        self.state().out
    }

    /// A write or delete of `key` (as sent) went to another server while this one is out.
    /// Returns false if the server is not out (nothing recorded).
    pub(crate) fn record(&self, key: &[u8]) -> bool {
        let mut s = self.state();
        if !s.out {
            return false;
        }
        if s.overflowed || s.keys.contains(key) {
            return true;
        }
        if s.keys.len() >= self.limit {
            // over the bound: the key list is no use any more, the server will be flushed
            s.keys = HashSet::new();
            s.overflowed = true;
        } else {
            s.keys.insert(key.to_vec());
        }
        true
    }

    /// What must be done now before the server rejoins. Keys recorded meanwhile stay
    /// recorded until [`RejoinLog::cleaned`] is told this cleanup was done.
    pub(crate) fn pending(&self) -> Cleanup {
        let s = self.state();
        if s.overflowed {
            Cleanup::Flush
        } else if s.keys.is_empty() {
            Cleanup::Nothing
        } else {
            Cleanup::Delete(s.keys.iter().cloned().collect())
        }
    }

    /// `done` (from [`RejoinLog::pending`]) succeeded on the server: forget what it covered.
    /// A flush covers every key recorded so far (the server lost them all).
    pub(crate) fn cleaned(&self, done: &Cleanup) {
        let mut s = self.state();
        match done {
            Cleanup::Nothing => {}
            Cleanup::Flush => {
                s.overflowed = false;
                s.keys = HashSet::new();
            }
            Cleanup::Delete(keys) => {
                for k in keys {
                    s.keys.remove(k);
                }
            }
        }
    }

    /// The server rejoins the ring: stop recording. Returns what was recorded since the last
    /// [`RejoinLog::pending`] (by writes routed on the view from before the rejoin), to be
    /// cleaned up too.
    pub(crate) fn rejoined(&self) -> Cleanup {
        let mut s = self.state();
        s.out = false;
        let left = if s.overflowed {
            Cleanup::Flush
        } else if s.keys.is_empty() {
            Cleanup::Nothing
        } else {
            Cleanup::Delete(s.keys.drain().collect())
        };
        s.overflowed = false;
        s.keys = HashSet::new();
        left
    }

    /// The cleanup `left` (from [`RejoinLog::rejoined`]) failed: the server is out again with
    /// those keys still to clean.
    pub(crate) fn back_out(&self, left: Cleanup) {
        let mut s = self.state();
        s.out = true;
        match left {
            Cleanup::Nothing => {}
            Cleanup::Flush => s.overflowed = true,
            Cleanup::Delete(keys) => {
                for k in keys {
                    if s.overflowed || s.keys.contains(&k) {
                        continue;
                    }
                    if s.keys.len() >= self.limit {
                        s.keys = HashSet::new();
                        s.overflowed = true;
                    } else {
                        s.keys.insert(k);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(c: Cleanup) -> Cleanup {
        match c {
            Cleanup::Delete(mut k) => {
                k.sort();
                Cleanup::Delete(k)
            }
            c => c,
        }
    }

    #[test]
    fn records_only_while_out() {
        let log = RejoinLog::new(10);
        assert!(!log.record(b"a"), "not out: nothing recorded");
        assert_eq!(log.pending(), Cleanup::Nothing);
        log.went_out();
        assert!(log.record(b"a"));
        assert!(log.record(b"b"));
        assert!(log.record(b"a"), "a key twice is one key");
        let p = sorted(log.pending());
        assert_eq!(p, Cleanup::Delete(vec![b"a".to_vec(), b"b".to_vec()]));
        // recorded while the cleanup runs: kept for the next round
        log.record(b"c");
        log.cleaned(&p);
        assert_eq!(log.pending(), Cleanup::Delete(vec![b"c".to_vec()]));
        log.cleaned(&log.pending());
        assert_eq!(log.pending(), Cleanup::Nothing);
        log.record(b"d");
        assert_eq!(log.rejoined(), Cleanup::Delete(vec![b"d".to_vec()]));
        assert!(!log.is_out());
        assert!(!log.record(b"e"));
        assert_eq!(log.pending(), Cleanup::Nothing);
    }

    #[test]
    fn overflow_means_flush() {
        let log = RejoinLog::new(3);
        log.went_out();
        for k in [&b"a"[..], b"b", b"c"] {
            log.record(k);
        }
        assert!(matches!(log.pending(), Cleanup::Delete(k) if k.len() == 3));
        log.record(b"a");
        assert!(
            matches!(log.pending(), Cleanup::Delete(k) if k.len() == 3),
            "a key already recorded does not count twice"
        );
        log.record(b"d");
        assert_eq!(log.pending(), Cleanup::Flush, "over the bound");
        log.record(b"e");
        assert_eq!(log.pending(), Cleanup::Flush);
        // a failed flush leaves it pending; a done one covers everything recorded
        log.cleaned(&Cleanup::Flush);
        assert_eq!(log.pending(), Cleanup::Nothing);
        assert!(log.is_out(), "still out until it rejoins");
        assert_eq!(log.rejoined(), Cleanup::Nothing);
    }

    #[test]
    fn limit_zero_flushes_on_any_change() {
        let log = RejoinLog::new(0);
        log.went_out();
        assert_eq!(log.pending(), Cleanup::Nothing);
        log.record(b"a");
        assert_eq!(log.pending(), Cleanup::Flush);
    }

    #[test]
    fn failed_final_cleanup_goes_back_out() {
        let log = RejoinLog::new(2);
        log.went_out();
        log.record(b"a");
        let left = log.rejoined();
        assert_eq!(left, Cleanup::Delete(vec![b"a".to_vec()]));
        log.back_out(left);
        assert!(log.is_out());
        log.record(b"b");
        log.record(b"c");
        assert_eq!(
            log.pending(),
            Cleanup::Flush,
            "restored keys count for the bound"
        );
        log.back_out(Cleanup::Flush);
        assert_eq!(log.pending(), Cleanup::Flush);
    }
}
