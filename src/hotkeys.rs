//! Hot-key detection: which keys this process reads most, counted in bounded memory with the
//! Space-Saving algorithm (Metwally, Agrawal, El Abbadi, "Efficient Computation of Frequent and
//! Top-k Elements in Data Streams", 2005), sans-IO.
//!
//! A summary of `m` counters answers for a stream of `N` keys: every key it reports has a
//! count `c` and an error `e` with `c - e <= true count <= c`, `e <= N / m`, and every key read
//! more than `N / m` times is in it. Memory is `m` counters whatever the number of distinct
//! keys. The counters are split over 8 summaries, each behind its own mutex and each
//! holding the keys whose hash falls in it, so that threads reading different keys rarely
//! meet; the bounds then hold per shard (`N` and `m` of the shard), and each reported key
//! carries its own `e`.
//!
//! No time enters: the counts are since the client was built (or since the last
//! [`Client::reset_hot_keys`](crate::Client::reset_hot_keys)).

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::Mutex;

pub use crate::settings::HotKeys;
use crate::settings::hot_keys::SHARDS;

/// One hot key, from [`Client::hot_keys`](crate::Client::hot_keys).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HotKey {
    /// The key as the application gave it (without the client's prefix).
    pub key: Vec<u8>,
    /// Requests counted for it: at least the true number, at most `error` more (times the
    /// sample rate, when sampling).
    pub count: u64,
    /// How much `count` may exceed the true number: the count of the key it took the counter
    /// from (0 when it had a counter from its first request).
    pub error: u64,
}

impl HotKey {
    /// The requests certainly made for the key: `count - error`.
    pub fn guaranteed(&self) -> u64 {
        self.count - self.error
    }
}

/// A hasher for the `u64` keys of [`Summary::index`], already hashed with the detector's
/// keyed hasher: passes them through.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // only `write_u64` is used; fold anything else in so that it still hashes
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

struct Slot {
    /// Reused when the slot changes hands, so that steady-state counting does not allocate.
    key: Vec<u8>,
    hash: u64,
    count: u64,
    error: u64,
}

/// One Space-Saving summary: `cap` slots, a min-heap of them by count, and an index from key
/// hash to slot.
struct Summary {
    cap: usize,
    slots: Vec<Slot>,
    /// Slot numbers, a binary min-heap by count.
    heap: Vec<u32>,
    /// `pos[slot]`: where the slot sits in `heap`.
    pos: Vec<u32>,
    /// Keyed by the 64-bit keyed hash. Two keys of one hash cannot both have a slot: the
    /// second is not counted (a chance of about `cap / 2^64` per request, and not one a
    /// caller can aim at: the hash is keyed at random per client).
    index: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
    total: u64,
}

impl Summary {
    fn new(cap: usize) -> Summary {
        Summary {
            cap,
            slots: Vec::new(),
            heap: Vec::new(),
            pos: Vec::new(),
            index: HashMap::default(),
            total: 0,
        }
    }

    fn count_of(&self, heap_at: usize) -> u64 {
        self.slots[self.heap[heap_at] as usize].count
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a] as usize] = a as u32;
        self.pos[self.heap[b] as usize] = b as u32;
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.count_of(l) < self.count_of(least) {
                least = l;
            }
            if r < n && self.count_of(r) < self.count_of(least) {
                least = r;
            }
            if least == i {
                return;
            }
            self.swap(i, least);
            i = least;
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.count_of(parent) <= self.count_of(i) {
                return;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    /// Count `w` requests for `key` (of keyed hash `hash`). Returns its count and error now.
    fn add(&mut self, key: &[u8], hash: u64, w: u64) -> (u64, u64) {
        self.total += w;
        if let Some(&s) = self.index.get(&hash) {
            let slot = &mut self.slots[s as usize];
            if slot.key != key {
                return (0, 0);
            }
            slot.count += w;
            let now = (slot.count, slot.error);
            self.sift_down(self.pos[s as usize] as usize);
            return now;
        }
        if self.slots.len() < self.cap {
            let s = self.slots.len() as u32;
            self.slots.push(Slot {
                key: key.to_vec(),
                hash,
                count: w,
                error: 0,
            });
            self.pos.push(self.heap.len() as u32);
            self.heap.push(s);
            self.index.insert(hash, s);
            self.sift_up(self.heap.len() - 1);
            return (w, 0);
        }
        let Some(&s) = self.heap.first() else {
            return (0, 0);
        };
        let slot = &mut self.slots[s as usize];
        self.index.remove(&slot.hash);
        slot.key.clear();
        slot.key.extend_from_slice(key);
        slot.hash = hash;
        slot.error = slot.count;
        slot.count += w;
        let now = (slot.count, slot.error);
        self.index.insert(hash, s);
        self.sift_down(0);
        now
    }

    fn get(&self, key: &[u8], hash: u64) -> Option<&Slot> {
        let slot = &self.slots[*self.index.get(&hash)? as usize];
        (slot.key == key).then_some(slot)
    }

    /// The `k` highest counts, highest first.
    fn top(&self, k: usize) -> Vec<&Slot> {
        let mut all: Vec<&Slot> = self.slots.iter().collect();
        all.sort_unstable_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        all.truncate(k);
        all
    }
}

/// A client's hot-key counters: [`SHARDS`] summaries by key hash. Public only for the
/// benchmarks (`memshard::__bench`); not part of the API.
#[doc(hidden)]
pub struct Detector {
    cfg: HotKeys,
    hasher: RandomState,
    shards: Box<[Mutex<Summary>]>,
    /// The keys last published as gauges, to zero those that leave the top.
    #[cfg(feature = "metrics")]
    published: Mutex<Vec<Vec<u8>>>,
}

/// Publish the gauges after this many counted requests in a shard.
#[cfg(feature = "metrics")]
const PUBLISH_EVERY: u64 = 1 << 12;

impl Detector {
    pub fn new(cfg: HotKeys) -> Detector {
        let per = cfg.per_shard();
        Detector {
            cfg,
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(Summary::new(per))).collect(),
            #[cfg(feature = "metrics")]
            published: Mutex::new(Vec::new()),
        }
    }

    fn locate(&self, key: &[u8]) -> (u64, &Mutex<Summary>) {
        let hash = self.hasher.hash_one(key);
        // the top bits pick the shard; the index uses the low bits
        let shard = &self.shards[(hash >> 61) as usize % SHARDS];
        (hash, shard)
    }

    /// Count one request for `key` (or, sampling, one in `sample` requests as `sample`).
    #[inline]
    pub fn record(&self, key: &[u8]) {
        if self.cfg.k == 0 {
            return;
        }
        let n = self.cfg.sample;
        if n > 1 && fastrand::u32(..n) != 0 {
            return;
        }
        let (hash, shard) = self.locate(key);
        let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
        s.add(key, hash, u64::from(n));
        #[cfg(feature = "metrics")]
        let publish = self.cfg.key_metrics && s.total % (PUBLISH_EVERY * u64::from(n)) == 0;
        drop(s);
        #[cfg(feature = "metrics")]
        if publish {
            self.publish();
        }
    }

    /// Whether `key` was certainly read at least the admission threshold times.
    #[cfg_attr(not(feature = "near-cache"), allow(dead_code))]
    pub(crate) fn admits(&self, key: &[u8]) -> bool {
        let Some(min) = self.cfg.admit else {
            return false;
        };
        let (hash, shard) = self.locate(key);
        let s = shard.lock().unwrap_or_else(|p| p.into_inner());
        s.get(key, hash)
            .is_some_and(|slot| slot.count - slot.error >= min)
    }

    /// The `k` hottest keys, hottest first (ties by key).
    pub fn report(&self) -> Vec<HotKey> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let s = shard.lock().unwrap_or_else(|p| p.into_inner());
            all.extend(s.top(self.cfg.k).into_iter().map(|slot| HotKey {
                key: slot.key.clone(),
                count: slot.count,
                error: slot.error,
            }));
        }
        all.sort_unstable_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        all.truncate(self.cfg.k);
        #[cfg(feature = "metrics")]
        if self.cfg.key_metrics {
            self.set_gauges(&all);
        }
        all
    }

    /// Forget every count.
    pub(crate) fn clear(&self) {
        let per = self.cfg.per_shard();
        for shard in self.shards.iter() {
            *shard.lock().unwrap_or_else(|p| p.into_inner()) = Summary::new(per);
        }
    }

    #[cfg(feature = "metrics")]
    fn publish(&self) {
        self.report();
    }

    /// `memshard_hot_key_requests{key}` for each key of `top`; 0 for the keys published before
    /// that are no longer in it, so that at most `k` series are non-zero.
    #[cfg(feature = "metrics")]
    fn set_gauges(&self, top: &[HotKey]) {
        let mut published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        for old in published.iter() {
            if !top.iter().any(|h| &h.key == old) {
                crate::observe::hot_key(old, 0);
            }
        }
        for h in top {
            crate::observe::hot_key(&h.key, h.count);
        }
        *published = top.iter().map(|h| h.key.clone()).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skewed stream: key `hot:i` (i < 5) `1000 × (5 - i)` times, interleaved with
    /// `tail` distinct cold keys read once each.
    fn skewed(tail: usize) -> Vec<Vec<u8>> {
        let mut hot: Vec<Vec<u8>> = Vec::new();
        for i in 0..5u64 {
            for _ in 0..1000 * (5 - i) {
                hot.push(format!("hot:{i}").into_bytes());
            }
        }
        // deterministic interleave: a cold key after each hot one, the rest at the end
        let mut out = Vec::new();
        let mut cold = (0..tail).map(|i| format!("cold:{i}").into_bytes());
        let mut rng = fastrand::Rng::with_seed(7);
        rng.shuffle(&mut hot);
        for h in hot {
            out.push(h);
            if let Some(c) = cold.next() {
                out.push(c);
            }
        }
        out.extend(cold);
        out
    }

    #[test]
    fn a_skewed_stream_reports_the_planted_keys_first_within_the_bounds() {
        // 128 counters per shard: a shard sees at most ~19,000 requests, so no count is off
        // by more than ~150, far less than the 1,000 between two planted keys
        let cfg = HotKeys::top(5).counters(1024);
        let d = Detector::new(cfg);
        let stream = skewed(30_000);
        for k in &stream {
            d.record(k);
        }
        let top = d.report();
        assert_eq!(top.len(), 5);
        for (i, h) in top.iter().enumerate() {
            assert_eq!(h.key, format!("hot:{i}").into_bytes(), "{top:?}");
            let truth = 1000 * (5 - i as u64);
            assert!(h.guaranteed() <= truth && truth <= h.count, "{h:?}");
            // the bound of the algorithm: error at most N / m of the key's shard, and N of a
            // shard is at most the whole stream
            let per = cfg.per_shard() as u64;
            assert!(h.error <= stream.len() as u64 / per, "{h:?}");
        }
        // every cold key was read once: whatever counter it holds, its guaranteed part is
        // at most 1
        for shard in d.shards.iter() {
            let s = shard.lock().unwrap();
            for slot in s.slots.iter().filter(|x| x.key.starts_with(b"cold:")) {
                assert!(
                    slot.count - slot.error <= 1,
                    "{} {}",
                    slot.count,
                    slot.error
                );
            }
        }
    }

    #[test]
    fn every_key_above_n_over_m_is_found() {
        // 64 counters in all, 8 per shard; 6 keys of 10% each and a long tail: every shard
        // sees far fewer than 10 × its counters' worth, so all six must be there
        let d = Detector::new(HotKeys::top(6).counters(64));
        let mut n = 0u64;
        for round in 0..10_000u64 {
            let k = if round % 10 < 6 {
                format!("big:{}", round % 10)
            } else {
                format!("tail:{round}")
            };
            d.record(k.as_bytes());
            n += 1;
        }
        let top = d.report();
        let mut keys: Vec<_> = top.iter().map(|h| h.key.clone()).collect();
        keys.sort();
        let want: Vec<Vec<u8>> = (0..6).map(|i| format!("big:{i}").into_bytes()).collect();
        assert_eq!(keys, want, "{top:?}");
        for h in &top {
            assert!(h.guaranteed() <= 1000 && 1000 <= h.count, "{h:?} of {n}");
        }
    }

    #[test]
    fn a_million_distinct_keys_stay_in_bounded_memory() {
        let cfg = HotKeys::top(10);
        let d = Detector::new(cfg);
        for i in 0..1_000_000u64 {
            d.record(format!("key:{i}").as_bytes());
        }
        let per = cfg.per_shard();
        for shard in d.shards.iter() {
            let s = shard.lock().unwrap();
            assert!(
                s.slots.len() <= per && s.index.len() <= per,
                "{}",
                s.slots.len()
            );
            assert!(s.slots.capacity() <= 2 * per);
            assert!(s.index.capacity() <= 4 * per);
            assert!(s.slots.iter().all(|slot| slot.key.capacity() <= 32));
        }
        let total: u64 = d.shards.iter().map(|s| s.lock().unwrap().total).sum();
        assert_eq!(total, 1_000_000);
        assert_eq!(d.report().len(), 10);
    }

    #[test]
    fn the_heap_keeps_the_least_count_on_top() {
        let mut s = Summary::new(16);
        let mut rng = fastrand::Rng::with_seed(3);
        let h = RandomState::new();
        for _ in 0..20_000 {
            let k = format!("k{}", rng.u32(..40) * rng.u32(..3));
            s.add(k.as_bytes(), h.hash_one(k.as_bytes()), 1);
            let min = s.slots.iter().map(|x| x.count).min().unwrap();
            assert_eq!(s.count_of(0), min);
            for (i, &slot) in s.heap.iter().enumerate() {
                assert_eq!(s.pos[slot as usize] as usize, i);
            }
            for (slot, x) in s.slots.iter().enumerate() {
                assert_eq!(s.index.get(&x.hash), Some(&(slot as u32)));
            }
        }
        // counts add up to the stream: Space-Saving's sum invariant
        assert_eq!(s.slots.iter().map(|x| x.count).sum::<u64>(), 20_000);
    }

    #[test]
    fn sampling_scales_the_counts() {
        let d = Detector::new(HotKeys::top(2).sample(10));
        for _ in 0..100_000 {
            d.record(b"a");
        }
        let top = d.report();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].count % 10, 0);
        // 10,000 expected samples; 9,000..11,000 is over 10 standard deviations wide
        assert!((90_000..=110_000).contains(&top[0].count), "{top:?}");
    }

    #[test]
    fn admission_needs_the_guaranteed_count() {
        let d = Detector::new(HotKeys::top(1).counters(8).admit_any_feature(3));
        for _ in 0..2 {
            d.record(b"x");
        }
        assert!(!d.admits(b"x"));
        d.record(b"x");
        assert!(d.admits(b"x"));
        assert!(!d.admits(b"y"));
        d.clear();
        assert!(!d.admits(b"x"));
        assert!(d.report().is_empty());
    }

    #[test]
    fn top_zero_counts_nothing() {
        let d = Detector::new(HotKeys::top(0));
        d.record(b"a");
        assert!(d.report().is_empty());
    }

    /// The gauges of the top keys; a key that leaves the top is set to 0 (one snapshot at
    /// the end: the debugging recorder sets gauges to 0 when it reads them).
    #[cfg(feature = "metrics")]
    #[test]
    fn gauges_follow_the_top_and_zero_the_keys_that_leave_it() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let d = Detector::new(HotKeys::top(2).key_metrics(true));
            for (k, n) in [("a", 5), ("b", 3), ("c", 1)] {
                (0..n).for_each(|_| d.record(k.as_bytes()));
            }
            d.report();
            d.clear();
            d.record(b"c");
            d.report();
        });
        let mut gauges: Vec<(String, f64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(k, ..)| k.key().name() == "memshard_hot_key_requests")
            .map(|(k, _, _, v)| {
                let key = k.key().labels().next().unwrap().value().to_string();
                let DebugValue::Gauge(v) = v else {
                    panic!("{v:?}")
                };
                (key, v.into_inner())
            })
            .collect();
        gauges.sort_by(|a, b| a.0.cmp(&b.0));
        let want = [("a", 0.0), ("b", 0.0), ("c", 1.0)].map(|(k, v)| (k.to_string(), v));
        assert_eq!(gauges, want);
    }

    impl HotKeys {
        /// `admit_to_near_cache` without the feature gate, for the tests above.
        fn admit_any_feature(mut self, min: u64) -> HotKeys {
            self.admit = Some(min);
            self
        }
    }
}
