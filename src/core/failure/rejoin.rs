//! Rejoin without stale data: the bookkeeping both clients share (no I/O here).
//!
//! With auto-eject, a key whose owner on the full ring is an ejected server is written to (or
//! deleted from) another server, a *fallback*, while it is out. Two sets of copies can then
//! serve a stale value:
//!
//! - the returning server's own: a server that was only unreachable (partition, SIGSTOP) still
//!   holds its old copy of the key when it returns, and would serve it as soon as it takes
//!   reads again;
//! - the fallbacks': once the server is back, its keys are written on it again, and a second
//!   ejection would route their reads back to the fallbacks, which still hold the values of the
//!   first outage.
//!
//! libmemcached (`REMOVE_FAILED_SERVERS`) and twemproxy (`auto_eject_hosts`) have both holes;
//! memshard closes them:
//!
//! - while a server is out, every write or delete routed away from it (set, add, replace,
//!   append, prepend, cas, incr, decr, touch, delete, single and multi-key, noreply too) records
//!   the key (as sent, with the prefix) in that server's [`RejoinLog`], together with the
//!   fallback it went to;
//! - when a probe finds the server answering again, and **before** it takes reads, the client
//!   deletes those keys on it (pipelined, checked deletes) on the probe connection; if that
//!   fails the server stays out, its keys still recorded, and is probed again. The first
//!   cleaning that deleted anything is done once more by the next probe, a retry timeout
//!   later, before anything else: a write sent before the outage whose reply timed out can
//!   still sit in the server's socket buffer (a stopped process) or be in flight, and land
//!   after the first cleaning, with a value older than the ones written elsewhere since;
//! - then, still before it takes reads, the prober connects to each fallback and deletes the
//!   copies written there. While the server is out the fallbacks' copies are the current values
//!   (a delete only turns a read into a miss); once it is back they would be stale. A fallback
//!   that cannot be reached (or is down itself) is **taken out** in turn: its copies are handed
//!   to its own log, as keys to delete on it before it takes reads again, and it is marked down
//!   until its probe has done so. So no server that takes reads ever holds a recorded copy, and
//!   a second ejection has nothing stale to serve;
//! - the server rejoins the ring, and what writes routed just before the rejoin recorded
//!   meanwhile is cleaned the same way (on the server, then on the fallbacks); a failure on the
//!   server puts it back out with all of it still recorded;
//! - a write routed on a view from before the rejoin whose record comes after it is routed
//!   again on the new view (see `Core::route`): it goes to the returned server, not to a
//!   fallback nobody will clean. A write recorded before the rejoin but delivered to its
//!   fallback only after that fallback was swept is one window left (a request that stalls
//!   for that long between routing and sending); its copy is stale only if the key is then
//!   written on the returned server and the server is ejected again before the copy expires.
//!   The other: a write to the server from before its outage that lands more than a retry
//!   timeout after the server first answered again (past its second cleaning).
//!
//! The log is bounded ([`Builder::rejoin_limit`](crate::Builder::rejoin_limit), default
//! [`DEFAULT_REJOIN_LIMIT`](crate::settings::DEFAULT_REJOIN_LIMIT)): at most that many keys to
//! delete on the server, and that many copies on its fallbacks together. Past the bound:
//!
//! - on the server, the key list is dropped and the server is **flushed** (`flush_all`) before
//!   it rejoins. That loses its other data too, which is the price of never serving a stale
//!   value; it is what a restarted server would have lost anyway, and it needs no operator to
//!   notice (keeping the server out until someone calls a method would leave a healthy server
//!   unused, and its keys on the wrong servers, for as long as nobody looks);
//! - on the fallbacks, each fallback that takes a copy the log has no room for has its list
//!   dropped and is **flushed** before the server rejoins; fallbacks whose copies all fit are
//!   only swept. The guarantee is the same as under the bound (no stale value, on a second
//!   ejection either), at the price of the flushed fallbacks' other data: size the bound for
//!   the writes an outage can take.
//!
//! A fallback is named by its address. One removed from the server list (`set_servers`) takes
//! no reads from this client any more, and its copies are forgotten.
//!
//! Memory: per server that is out, at most `limit` keys (up to 250 bytes each) to delete on it
//! and `limit` copies on its fallbacks, a key's bytes shared by both; nothing while every server
//! is up.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// What must be done on one server (the returning one, or a fallback) before the returning
/// server takes reads again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cleanup {
    /// Nothing was changed while it was out.
    Nothing,
    /// Delete these keys (as sent: prefixed) on it.
    Delete(Vec<Vec<u8>>),
    /// More keys changed than the bound: `flush_all` on it.
    Flush,
}

/// The copies written on the fallbacks, by fallback address, each with what to do there.
pub(crate) type Copies = Vec<(String, Cleanup)>;

/// What is left to clean after the rejoin: recorded since the last cleanup of each kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Left {
    /// On the returned server.
    pub(crate) own: Cleanup,
    /// On the fallbacks.
    pub(crate) copies: Copies,
}

/// The keys to delete on one server, or a flush once more than the bound were recorded.
#[derive(Debug, Default)]
struct Todo {
    keys: HashSet<Arc<[u8]>>,
    flush: bool,
}

impl Todo {
    fn pending(&self) -> Cleanup {
        if self.flush {
            Cleanup::Flush
        } else if self.keys.is_empty() {
            Cleanup::Nothing
        } else {
            Cleanup::Delete(self.keys.iter().map(|k| k.to_vec()).collect())
        }
    }

    /// `done` succeeded: forget what it covered (a flush covers every key recorded so far).
    /// Returns how many keys were forgotten.
    fn cleaned(&mut self, done: &Cleanup) -> usize {
        let before = self.keys.len();
        match done {
            Cleanup::Nothing => {}
            Cleanup::Flush => {
                self.flush = false;
                self.keys = HashSet::new();
            }
            Cleanup::Delete(keys) => {
                for k in keys {
                    self.keys.remove(&k[..]);
                }
            }
        }
        before - self.keys.len()
    }

    fn is_empty(&self) -> bool {
        !self.flush && self.keys.is_empty()
    }
}

#[derive(Debug, Default)]
struct State {
    /// Ejected: writes routed away from the server are recorded.
    out: bool,
    /// To delete on the server itself.
    own: Todo,
    /// What was cleaned on the server since it went out, to be cleaned once more, a retry
    /// timeout later, before it takes reads (see [`RejoinLog::clean_again`]).
    again: Todo,
    /// The first cleaning is over and `again` is back in `own`: the next clean is the last.
    second_pass: bool,
    /// To delete on each fallback (by address).
    copies: BTreeMap<String, Todo>,
    /// The keys in `copies`, every fallback together (what the bound counts).
    copied: usize,
}

impl State {
    /// The key as stored: shared with the other list when it is there already.
    fn shared(&self, key: &[u8]) -> Arc<[u8]> {
        self.own
            .keys
            .get(key)
            .cloned()
            .unwrap_or_else(|| Arc::from(key))
    }

    fn add_own(&mut self, limit: usize, key: Arc<[u8]>) {
        let own = &mut self.own;
        if own.flush || own.keys.contains(&key) {
            return;
        }
        if own.keys.len() >= limit {
            // over the bound: the key list is no use any more, the server will be flushed
            self.flush_own();
        } else {
            own.keys.insert(key);
        }
    }

    fn add_copy(&mut self, limit: usize, fallback: &str, key: Arc<[u8]>) {
        let full = self.copied >= limit;
        let todo = self.copies.entry(fallback.to_string()).or_default();
        if todo.flush || todo.keys.contains(&key) {
            return;
        }
        if full {
            // no room: this fallback's list is no use any more, it will be flushed
            self.flush_copy(fallback);
        } else {
            todo.keys.insert(key);
            self.copied += 1;
        }
    }

    /// `done` was cleaned on the server in the first pass: keep it for the second.
    fn keep_for_again(&mut self, limit: usize, done: &Cleanup) {
        if self.second_pass {
            return;
        }
        let again = &mut self.again;
        match done {
            Cleanup::Nothing => {}
            Cleanup::Flush => {
                again.keys = HashSet::new();
                again.flush = true;
            }
            // after a flush, `pending` is a flush whatever the keys (at most `limit` of them)
            Cleanup::Delete(keys) => {
                for k in keys {
                    if again.keys.len() >= limit && !again.keys.contains(&k[..]) {
                        again.keys = HashSet::new();
                        again.flush = true;
                        return;
                    }
                    again.keys.insert(Arc::from(&k[..]));
                }
            }
        }
    }

    fn flush_own(&mut self) {
        self.own.keys = HashSet::new();
        self.own.flush = true;
    }

    fn flush_copy(&mut self, fallback: &str) {
        let todo = self.copies.entry(fallback.to_string()).or_default();
        self.copied -= todo.keys.len();
        todo.keys = HashSet::new();
        todo.flush = true;
    }

    /// `left` is to be done on the server itself again.
    fn restore_own(&mut self, limit: usize, left: Cleanup) {
        match left {
            Cleanup::Nothing => {}
            Cleanup::Flush => self.flush_own(),
            Cleanup::Delete(keys) => {
                for k in keys {
                    let k = self.shared(&k);
                    self.add_own(limit, k);
                }
            }
        }
    }

    /// `left` is to be done on `fallback` again.
    fn restore_copies(&mut self, limit: usize, fallback: &str, left: Cleanup) {
        match left {
            Cleanup::Nothing => {}
            Cleanup::Flush => self.flush_copy(fallback),
            Cleanup::Delete(keys) => {
                for k in keys {
                    let k = self.shared(&k);
                    self.add_copy(limit, fallback, k);
                }
            }
        }
    }
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

    /// The first cleaning of the server is over: whether it must be cleaned once more before
    /// it takes reads. A write that timed out while the server was unreachable (stopped,
    /// partitioned) can still be in its socket buffer, or in flight, and land after the first
    /// cleaning deleted the key, with the value the key had before the writes recorded here:
    /// a stale copy. So what the first cleaning did is done again by the next probe, a retry
    /// timeout later, and only then does the server rejoin. True once, when there was
    /// something to clean (the caller holds the server down until its next probe); false for
    /// a server that has nothing to clean, or whose second cleaning this is.
    pub(crate) fn clean_again(&self) -> bool {
        let mut guard = self.state();
        let s = &mut *guard;
        if s.second_pass || s.again.is_empty() {
            return false;
        }
        s.second_pass = true;
        let again = std::mem::take(&mut s.again);
        s.restore_own(self.limit, again.pending());
        true
    }

    /// Whether the server is out (ejected and not cleaned up yet).
    pub(crate) fn is_out(&self) -> bool {
        self.state().out
    }

    /// A write or delete of `key` (as sent) went to another pool while this server is out
    /// (no copy in this client). Returns false if the server is not out (nothing recorded).
    pub(crate) fn record(&self, key: &[u8]) -> bool {
        let mut s = self.state();
        if !s.out {
            return false;
        }
        let k = s.shared(key);
        s.add_own(self.limit, k);
        true
    }

    /// A write or delete of `key` (as sent) went to the fallback at address `fallback` while
    /// this server is out: delete it on both before this server takes reads again. Returns
    /// false if the server is not out (nothing recorded) unless `anyway`: the caller knows the
    /// server is being ejected right now (its routing is in force, its log not yet out).
    pub(crate) fn record_copy(&self, key: &[u8], fallback: &str, anyway: bool) -> bool {
        let mut s = self.state();
        if !s.out && !anyway {
            return false;
        }
        let k = s.shared(key);
        s.add_own(self.limit, k.clone());
        s.add_copy(self.limit, fallback, k);
        true
    }

    /// What must be done now on the server before it rejoins. Keys recorded meanwhile stay
    /// recorded until [`RejoinLog::cleaned`] is told this cleanup was done.
    pub(crate) fn pending(&self) -> Cleanup {
        self.state().own.pending()
    }

    /// `done` (from [`RejoinLog::pending`]) succeeded on the server: forget what it covered.
    /// A flush covers every key recorded so far (the server lost them all).
    pub(crate) fn cleaned(&self, done: &Cleanup) {
        let mut s = self.state();
        s.own.cleaned(done);
        s.keep_for_again(self.limit, done);
    }

    /// What must be done now on each fallback before the server rejoins (fallbacks with
    /// nothing to do left out), in address order.
    pub(crate) fn pending_copies(&self) -> Copies {
        self.state()
            .copies
            .iter()
            .filter(|(_, t)| !t.is_empty())
            .map(|(addr, t)| (addr.clone(), t.pending()))
            .collect()
    }

    /// `done` (from [`RejoinLog::pending_copies`]) on `fallback` succeeded, or is no longer
    /// this log's to do (handed to the fallback's own log, or the fallback is gone): forget
    /// what it covered.
    pub(crate) fn copies_cleaned(&self, fallback: &str, done: &Cleanup) {
        let mut guard = self.state();
        let s = &mut *guard;
        let Some(todo) = s.copies.get_mut(fallback) else {
            return;
        };
        let forgotten = todo.cleaned(done);
        if todo.is_empty() {
            s.copies.remove(fallback);
        }
        s.copied -= forgotten;
    }

    /// This server is a fallback that could not be swept: `left` (copies of another server's
    /// keys) must be deleted on it before it takes reads again, as if its own keys had been
    /// written elsewhere. The caller takes it out (marks it down).
    pub(crate) fn hand_over(&self, left: Cleanup) {
        let mut s = self.state();
        s.out = true;
        // an outage of its own: what a cleaning of it deletes is deleted twice
        s.second_pass = false;
        s.restore_own(self.limit, left);
    }

    /// The server rejoins the ring: stop recording. Returns what was recorded since the last
    /// cleanups (by writes routed on the view from before the rejoin), to be cleaned up too.
    pub(crate) fn rejoined(&self) -> Left {
        let mut s = self.state();
        let s = std::mem::take(&mut *s);
        Left {
            own: s.own.pending(),
            copies: s
                .copies
                .iter()
                .filter(|(_, t)| !t.is_empty())
                .map(|(addr, t)| (addr.clone(), t.pending()))
                .collect(),
        }
    }

    /// The cleanup after the rejoin failed on the server: it is out again with `left` still
    /// to clean (on it and on the fallbacks).
    pub(crate) fn back_out(&self, left: Left) {
        let mut s = self.state();
        s.out = true;
        s.restore_own(self.limit, left.own);
        for (addr, todo) in left.copies {
            s.restore_copies(self.limit, &addr, todo);
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

    fn del(keys: &[&[u8]]) -> Cleanup {
        Cleanup::Delete(keys.iter().map(|k| k.to_vec()).collect())
    }

    fn copies(log: &RejoinLog) -> Copies {
        log.pending_copies()
            .into_iter()
            .map(|(a, c)| (a, sorted(c)))
            .collect()
    }

    fn copied(log: &RejoinLog) -> usize {
        log.state().copied
    }

    #[test]
    fn records_only_while_out() {
        let log = RejoinLog::new(10);
        assert!(!log.record(b"a"), "not out: nothing recorded");
        assert!(!log.record_copy(b"a", "f", false));
        assert_eq!(log.pending(), Cleanup::Nothing);
        assert_eq!(log.pending_copies(), vec![]);
        assert!(!log.is_out());
        log.went_out();
        assert!(log.is_out());
        assert!(log.record(b"a"));
        assert!(log.record(b"b"));
        assert!(log.record(b"a"), "a key twice is one key");
        let p = sorted(log.pending());
        assert_eq!(p, del(&[b"a", b"b"]));
        assert_eq!(
            log.pending_copies(),
            vec![],
            "written to another pool: no copy here"
        );
        // recorded while the cleanup runs: kept for the next round
        log.record(b"c");
        log.cleaned(&p);
        assert_eq!(log.pending(), del(&[b"c"]));
        log.cleaned(&log.pending());
        assert_eq!(log.pending(), Cleanup::Nothing);
        log.record(b"d");
        let left = log.rejoined();
        assert_eq!(left.own, del(&[b"d"]));
        assert_eq!(left.copies, vec![]);
        assert!(!log.is_out());
        assert!(!log.record(b"e"));
        assert_eq!(log.pending(), Cleanup::Nothing);
    }

    #[test]
    fn copies_are_recorded_per_fallback() {
        let log = RejoinLog::new(10);
        log.went_out();
        assert!(log.record_copy(b"a", "f1:1", false));
        assert!(log.record_copy(b"b", "f2:1", false));
        assert!(
            log.record_copy(b"a", "f2:1", false),
            "routing changed meanwhile"
        );
        assert!(
            log.record_copy(b"a", "f2:1", false),
            "a copy twice is one copy"
        );
        assert_eq!(sorted(log.pending()), del(&[b"a", b"b"]));
        assert_eq!(
            copies(&log),
            vec![
                ("f1:1".to_string(), del(&[b"a"])),
                ("f2:1".to_string(), del(&[b"a", b"b"]))
            ]
        );
        assert_eq!(copied(&log), 3);
        // the server's own cleanup leaves the fallbacks' copies to do
        log.cleaned(&log.pending());
        assert_eq!(log.pending(), Cleanup::Nothing);
        assert_eq!(copies(&log).len(), 2);
        // a sweep forgets what it covered; a copy written meanwhile stays
        let todo = sorted(copies(&log)[1].1.clone());
        log.record_copy(b"c", "f2:1", false);
        log.copies_cleaned("f2:1", &todo);
        assert_eq!(
            copies(&log),
            vec![
                ("f1:1".to_string(), del(&[b"a"])),
                ("f2:1".to_string(), del(&[b"c"]))
            ]
        );
        assert_eq!(copied(&log), 2);
        log.copies_cleaned("f1:1", &del(&[b"a"]));
        log.copies_cleaned("gone:1", &del(&[b"a"]));
        log.copies_cleaned("f2:1", &Cleanup::Nothing);
        assert_eq!(copies(&log), vec![("f2:1".to_string(), del(&[b"c"]))]);
        assert_eq!(copied(&log), 1);
        // the rejoin takes everything left; nothing is recorded after it
        let left = log.rejoined();
        assert_eq!(left.own, del(&[b"c"]));
        assert_eq!(left.copies, vec![("f2:1".to_string(), del(&[b"c"]))]);
        assert!(!log.record_copy(b"d", "f1:1", false));
        assert_eq!(log.pending_copies(), vec![]);
        assert_eq!(copied(&log), 0);
        // unless the caller knows the server is being ejected right now
        assert!(log.record_copy(b"d", "f1:1", true));
        assert_eq!(log.pending(), del(&[b"d"]));
        assert_eq!(copies(&log), vec![("f1:1".to_string(), del(&[b"d"]))]);
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
        assert_eq!(log.rejoined().own, Cleanup::Nothing);
    }

    #[test]
    fn copies_over_the_bound_flush_the_fallback_that_takes_more() {
        let log = RejoinLog::new(2);
        log.went_out();
        log.record_copy(b"a", "f1:1", false);
        log.record_copy(b"b", "f1:1", false);
        log.record_copy(b"a", "f1:1", false);
        assert_eq!(
            copied(&log),
            2,
            "a copy already recorded does not count twice"
        );
        log.record_copy(b"c", "f2:1", false);
        assert_eq!(
            copies(&log),
            vec![
                ("f1:1".to_string(), del(&[b"a", b"b"])),
                ("f2:1".to_string(), Cleanup::Flush)
            ],
            "no room: the fallback taking more is flushed, the others only swept"
        );
        assert_eq!(log.pending(), Cleanup::Flush, "and the server too");
        log.record_copy(b"d", "f2:1", false);
        assert_eq!(copies(&log)[1].1, Cleanup::Flush);
        log.record_copy(b"e", "f1:1", false);
        assert_eq!(
            copies(&log),
            vec![
                ("f1:1".to_string(), Cleanup::Flush),
                ("f2:1".to_string(), Cleanup::Flush)
            ]
        );
        assert_eq!(copied(&log), 0, "a flushed fallback's keys are dropped");
        // a flush covers whatever was copied there
        log.copies_cleaned("f1:1", &Cleanup::Flush);
        assert_eq!(copies(&log), vec![("f2:1".to_string(), Cleanup::Flush)]);
        log.record_copy(b"f", "f3:1", false);
        log.record_copy(b"g", "f3:1", false);
        assert_eq!(
            copies(&log)[1],
            ("f3:1".to_string(), del(&[b"f", b"g"])),
            "room again"
        );
        log.copies_cleaned("f3:1", &del(&[b"f"]));
        assert_eq!(copied(&log), 1);
        log.record_copy(b"h", "f1:1", false);
        assert_eq!(copies(&log)[0], ("f1:1".to_string(), del(&[b"h"])));
        assert_eq!(copied(&log), 2);
    }

    #[test]
    fn limit_zero_flushes_on_any_change() {
        let log = RejoinLog::new(0);
        log.went_out();
        assert_eq!(log.pending(), Cleanup::Nothing);
        log.record(b"a");
        assert_eq!(log.pending(), Cleanup::Flush);
        assert_eq!(log.pending_copies(), vec![]);
        log.record_copy(b"a", "f:1", false);
        assert_eq!(
            log.pending_copies(),
            vec![("f:1".to_string(), Cleanup::Flush)]
        );
    }

    #[test]
    fn failed_final_cleanup_goes_back_out() {
        let log = RejoinLog::new(2);
        log.went_out();
        log.record_copy(b"a", "f:1", false);
        let left = log.rejoined();
        assert_eq!(left.own, del(&[b"a"]));
        assert_eq!(left.copies, vec![("f:1".to_string(), del(&[b"a"]))]);
        log.back_out(left);
        assert!(log.is_out());
        assert_eq!(
            log.pending_copies(),
            vec![("f:1".to_string(), del(&[b"a"]))]
        );
        assert_eq!(copied(&log), 1);
        log.record(b"b");
        log.record(b"c");
        assert_eq!(
            log.pending(),
            Cleanup::Flush,
            "restored keys count for the bound"
        );
        log.record_copy(b"b", "f:1", false);
        log.record_copy(b"c", "g:1", false);
        assert_eq!(
            log.pending_copies()[1],
            ("g:1".to_string(), Cleanup::Flush),
            "restored copies count too"
        );
        log.back_out(Left {
            own: Cleanup::Flush,
            copies: vec![
                ("h:1".to_string(), Cleanup::Flush),
                ("i:1".to_string(), Cleanup::Nothing),
            ],
        });
        assert_eq!(log.pending(), Cleanup::Flush);
        let fallbacks: Vec<String> = log.pending_copies().into_iter().map(|(a, _)| a).collect();
        assert_eq!(fallbacks, ["f:1", "g:1", "h:1"]);
    }

    #[test]
    fn a_fallback_that_was_not_swept_takes_the_copies_as_its_own() {
        let log = RejoinLog::new(2);
        log.hand_over(Cleanup::Nothing);
        assert!(log.is_out(), "out until its probe has deleted them");
        assert_eq!(log.pending(), Cleanup::Nothing);
        log.hand_over(del(&[b"a", b"b"]));
        assert_eq!(sorted(log.pending()), del(&[b"a", b"b"]));
        assert_eq!(log.pending_copies(), vec![]);
        log.hand_over(del(&[b"c"]));
        assert_eq!(log.pending(), Cleanup::Flush, "bounded as its own keys are");
        let log = RejoinLog::new(10);
        log.hand_over(Cleanup::Flush);
        assert_eq!(log.pending(), Cleanup::Flush);
    }

    #[test]
    fn what_the_first_cleaning_did_is_done_once_more() {
        let log = RejoinLog::new(3);
        assert!(!log.clean_again(), "nothing cleaned: nothing to do again");
        log.went_out();
        log.record(b"a");
        log.record(b"b");
        let first = sorted(log.pending());
        log.cleaned(&first);
        log.record(b"c");
        log.cleaned(&log.pending());
        assert_eq!(log.pending(), Cleanup::Nothing);
        assert!(log.clean_again());
        assert_eq!(sorted(log.pending()), del(&[b"a", b"b", b"c"]));
        log.cleaned(&log.pending());
        assert!(!log.clean_again(), "the second cleaning is the last");
        assert_eq!(log.pending(), Cleanup::Nothing);

        // a new outage starts over: after a rejoin, or as a fallback handed copies (in the
        // middle of its own second cleaning, here)
        let _ = log.rejoined();
        log.went_out();
        log.record(b"d");
        log.cleaned(&log.pending());
        assert!(log.clean_again());
        log.hand_over(del(&[b"e"]));
        log.cleaned(&log.pending());
        assert!(log.clean_again(), "handed copies: cleaned twice too");
        assert_eq!(sorted(log.pending()), del(&[b"d", b"e"]));
    }

    #[test]
    fn what_is_cleaned_again_has_the_same_bound() {
        let log = RejoinLog::new(3);
        log.went_out();
        for round in [&[b"a", b"b"], &[b"c", b"d"]] {
            for k in round {
                log.record(*k);
            }
            log.cleaned(&log.pending());
        }
        assert!(log.clean_again());
        assert_eq!(
            log.pending(),
            Cleanup::Flush,
            "four keys over a bound of three"
        );
        log.cleaned(&Cleanup::Flush);
        let _ = log.rejoined();

        // a key cleaned twice in the first pass is one key of the bound
        log.went_out();
        for k in [&b"a"[..], b"b", b"c", b"a"] {
            log.record(k);
            log.cleaned(&log.pending());
        }
        assert!(log.clean_again());
        assert_eq!(sorted(log.pending()), del(&[b"a", b"b", b"c"]));
        log.cleaned(&log.pending());
        let _ = log.rejoined();
        log.went_out();
        log.record(b"a");
        log.cleaned(&Cleanup::Flush);
        assert!(log.clean_again());
        assert_eq!(log.pending(), Cleanup::Flush, "a flush is done again");
    }
}
