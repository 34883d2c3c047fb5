//! The keys a gutter route wrote to the gutter, per main server. When that server is back,
//! they are deleted from the gutter: otherwise a second failure of the server within the
//! gutter TTL would serve the values from the first one, older than what was written to the
//! server in between. (The server's own copies are dealt with by its client's rejoin log.)

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Keys remembered per server before the log gives up on the list and the whole gutter is
/// to be flushed when the server returns.
pub(crate) const GUTTER_LOG_LIMIT: usize = 100_000;

/// What to do to the gutter for a returned server.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GutterCleanup {
    Delete(Vec<Vec<u8>>),
    Flush,
}

#[derive(Debug, Default)]
struct Entry {
    keys: HashSet<Vec<u8>>,
    overflowed: bool,
}

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct GutterLog {
    /// Fast path: false while nothing is recorded.
    any: AtomicBool,
    by_server: Mutex<HashMap<String, Entry>>,
}

impl GutterLog {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.by_server.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `key` (as the caller gave it) of main server `server` was written to the gutter.
    pub(crate) fn record(&self, server: &str, key: &[u8]) {
        let mut map = self.map();
        let e = map.entry(server.to_string()).or_default();
        if !e.overflowed && !e.keys.contains(key) {
            if e.keys.len() >= GUTTER_LOG_LIMIT {
                e.keys = HashSet::new();
                e.overflowed = true;
            } else {
                e.keys.insert(key.to_vec());
            }
        }
        self.any.store(true, Ordering::Release);
    }

    /// Whether anything is recorded (cheap).
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Take what is recorded for the servers not in `down()`: those returned. `down` is asked
    /// under the log's lock, after any key recorded so far (a server is held down before its
    /// key is recorded), so a key recorded for a failing server is never taken as returned.
    pub(crate) fn take_returned(
        &self,
        down: impl FnOnce() -> Vec<String>,
    ) -> Vec<(String, GutterCleanup)> {
        let mut map = self.map();
        let down = down();
        let back: Vec<String> = map.keys().filter(|s| !down.contains(s)).cloned().collect();
        let out = back
            .into_iter()
            .filter_map(|s| map.remove(&s).map(|e| (s, e)))
            .map(|(s, e)| {
                let c = if e.overflowed {
                    GutterCleanup::Flush
                } else {
                    GutterCleanup::Delete(e.keys.into_iter().collect())
                };
                (s, c)
            })
            .collect();
        self.any.store(!map.is_empty(), Ordering::Release);
        out
    }

    /// The flush for `server` failed: flush again next time.
    pub(crate) fn overflow(&self, server: &str) {
        self.map().entry(server.to_string()).or_default().overflowed = true;
        self.any.store(true, Ordering::Release);
    }

    /// The cleanup of `server` failed for `keys`: keep them for the next try.
    pub(crate) fn put_back(&self, server: &str, keys: impl IntoIterator<Item = Vec<u8>>) {
        for k in keys {
            self.record(server, &k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returned_servers_are_taken_once() {
        let log = GutterLog::default();
        assert!(!log.any());
        log.record("s1:1", b"a");
        log.record("s1:1", b"a");
        log.record("s2:1", b"b");
        assert!(log.any());
        let taken = log.take_returned(|| vec!["s2:1".to_string()]);
        assert_eq!(
            taken,
            vec![(
                "s1:1".to_string(),
                GutterCleanup::Delete(vec![b"a".to_vec()])
            )]
        );
        assert!(log.any(), "s2 is still down");
        assert!(log.take_returned(|| vec!["s2:1".to_string()]).is_empty());
        log.put_back("s1:1", [b"a".to_vec()]);
        assert_eq!(log.take_returned(Vec::new).len(), 2);
        assert!(!log.any());
    }

    /// At the limit a key already listed keeps the list; a new one gives it up for a flush,
    /// and nothing more is kept for that server.
    #[test]
    fn the_list_gives_way_to_a_flush_only_for_a_new_key_past_the_limit() {
        let log = GutterLog::default();
        for i in 0..GUTTER_LOG_LIMIT {
            log.record("s1:1", format!("k{i}").as_bytes());
        }
        log.record("s1:1", b"k0");
        let kept = |log: &GutterLog| log.map().get("s1:1").map(|e| (e.keys.len(), e.overflowed));
        assert_eq!(kept(&log), Some((GUTTER_LOG_LIMIT, false)));
        log.record("s1:1", b"new");
        assert_eq!(kept(&log), Some((0, true)));
        log.record("s1:1", b"later");
        assert_eq!(kept(&log), Some((0, true)), "nothing is kept once flushing");
        assert_eq!(
            log.take_returned(Vec::new),
            vec![("s1:1".to_string(), GutterCleanup::Flush)]
        );
    }

    #[test]
    fn a_failed_flush_is_flushed_again() {
        let log = GutterLog::default();
        log.overflow("s1:1");
        assert!(log.any());
        assert_eq!(
            log.take_returned(Vec::new),
            vec![("s1:1".to_string(), GutterCleanup::Flush)]
        );
        assert!(!log.any());
    }
}
