//! Hot-key detection settings ([`HotKeys`]): what the client's detector (`crate::hotkeys`)
//! counts and reports. Configuration only; the counting is the detector's.

/// Summaries the counters are split over: enough that a few threads reading at once rarely
/// wait for each other, few enough that each still holds many counters.
pub(crate) const SHARDS: usize = 8;

/// The most counters a detector holds (all shards together), whatever was asked: 1,048,576
/// counters are about 64 MiB with 32-byte keys.
pub(crate) const MAX_COUNTERS: usize = 1 << 20;

/// Hot-key detection settings, for [`Builder::hot_keys`](crate::Builder::hot_keys). Off unless
/// given.
///
/// The client counts the keys of `get`, `gets`, `gat`, `gats`, `get_multi` (each key of a
/// multi-get once) and `get_or_compute` (once per call) in a fixed number of counters (Space-Saving), and
/// [`Client::hot_keys`](crate::Client::hot_keys) reports the hottest. Recording one key costs
/// a hash and a short-held lock, well under a microsecond; [`sample`](HotKeys::sample) cuts
/// that further.
///
/// ```
/// use memshard::HotKeys;
/// let client = memshard::Client::builder()
///     .server_list("127.0.0.1:1")? // nothing listens there: the reads fail, and still count
///     .hot_keys(HotKeys::top(3))
///     .build()?;
/// for key in ["a", "b", "a", "c", "a", "b"] {
///     let _ = client.get(key);
/// }
/// let hot = client.hot_keys();
/// assert_eq!(hot[0].key, b"a");
/// assert_eq!(hot[0].count, 3);
/// assert_eq!(hot[1].key, b"b");
/// # Ok::<(), memshard::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotKeys {
    pub(crate) k: usize,
    pub(crate) counters: usize,
    pub(crate) sample: u32,
    pub(crate) admit: Option<u64>,
    pub(crate) key_metrics: bool,
}

impl HotKeys {
    /// Report the `k` hottest keys, counted in `max(16 × k, 64)` counters (see
    /// [`counters`](HotKeys::counters)); every request counted. `top(0)` counts nothing.
    pub fn top(k: usize) -> HotKeys {
        HotKeys {
            k,
            counters: k.saturating_mul(16).max(64),
            sample: 1,
            admit: None,
            key_metrics: false,
        }
    }

    /// Count in `m` counters in all, split over 8 shards by key hash, at least `k` per shard
    /// and at most 1,048,576 in all (about 64 MiB with 32-byte keys). More counters, smaller
    /// error: a key's count is off by at most its shard's requests over its shard's counters.
    pub fn counters(mut self, m: usize) -> HotKeys {
        self.counters = m;
        self
    }

    /// Count one request in `n`, chosen at random, and report counts multiplied by `n`
    /// (estimates: the bounds of each [`HotKey`](crate::HotKey) then hold for the sampled requests only).
    /// `0` and `1` count every request. Default: 1.
    pub fn sample(mut self, n: u32) -> HotKeys {
        self.sample = n.max(1);
        self
    }

    /// Cache keys read at least `min_count` times (the guaranteed part, `count - error`) in the
    /// near cache, even those its [`NearCacheConfig`](crate::near::NearCacheConfig) does not
    /// mark; writes and deletes through the client still drop them. Needs the near cache
    /// ([`Builder::near_cache`](crate::Builder::near_cache)): without it nothing is admitted.
    /// Default: off.
    #[cfg(feature = "near-cache")]
    #[cfg_attr(docsrs, doc(cfg(feature = "near-cache")))]
    pub fn admit_to_near_cache(mut self, min_count: u64) -> HotKeys {
        self.admit = Some(min_count.max(1));
        self
    }

    /// Publish the top keys' counts as the gauge `memshard_hot_key_requests{key}` (every
    /// 4,096 counted reads and on each `hot_keys()`). Off by default: the label is a user's
    /// key, so every key that ever reaches the top becomes a series of its own, and the keys
    /// are seen by whoever reads the metrics.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn key_metrics(mut self, on: bool) -> HotKeys {
        self.key_metrics = on;
        self
    }

    /// Counters per shard: an even share of the total, at least `k` (so that the top `k` can
    /// all sit in one shard), within [`MAX_COUNTERS`] in all.
    pub(crate) fn per_shard(&self) -> usize {
        let total = self.counters.min(MAX_COUNTERS);
        total
            .div_ceil(SHARDS)
            .max(self.k)
            .min(MAX_COUNTERS / SHARDS)
    }
}
