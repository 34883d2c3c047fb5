//! Near cache: an in-process cache in front of the client for keys the user marks (hot keys),
//! with a short TTL and a size bound, on moka. Off by default. Writes and deletes through the
//! client invalidate it; reads of a cached key make no network call.

use crate::Item;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A test on a key, shared between threads.
pub type KeyPredicate = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// Which keys go through the near cache.
#[derive(Clone)]
pub enum KeyMatcher {
    /// Keys starting with any of these prefixes.
    Prefixes(Vec<Vec<u8>>),
    /// Keys for which the predicate is true.
    Predicate(KeyPredicate),
}

impl std::fmt::Debug for KeyMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyMatcher::Prefixes(p) => f
                .debug_tuple("Prefixes")
                .field(
                    &p.iter()
                        .map(|p| String::from_utf8_lossy(p))
                        .collect::<Vec<_>>(),
                )
                .finish(),
            KeyMatcher::Predicate(_) => f.write_str("Predicate(..)"),
        }
    }
}

impl KeyMatcher {
    fn matches(&self, key: &[u8]) -> bool {
        match self {
            KeyMatcher::Prefixes(ps) => ps.iter().any(|p| key.starts_with(p)),
            KeyMatcher::Predicate(f) => f(key),
        }
    }
}

/// Near-cache settings.
///
/// ```
/// use memshard::near::NearCacheConfig;
/// use std::time::Duration;
/// // cache keys starting with "config:" or "rates:" for 2 s, at most 10,000 of them
/// let cfg = NearCacheConfig::prefixes(["config:", "rates:"], Duration::from_secs(2), 10_000);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NearCacheConfig {
    /// Which keys are cached.
    pub matcher: KeyMatcher,
    /// How long a value may be served from the process after it was read. Keep it short:
    /// writes by *other* clients are not seen until it expires.
    pub ttl: Duration,
    /// Most entries held.
    pub max_entries: u64,
}

impl NearCacheConfig {
    /// Cache keys with these prefixes.
    pub fn prefixes<P: AsRef<[u8]>>(
        prefixes: impl IntoIterator<Item = P>,
        ttl: Duration,
        max_entries: u64,
    ) -> Self {
        NearCacheConfig {
            matcher: KeyMatcher::Prefixes(
                prefixes.into_iter().map(|p| p.as_ref().to_vec()).collect(),
            ),
            ttl,
            max_entries,
        }
    }

    /// Cache no key of its own accord: only those hot-key detection admits
    /// ([`HotKeys::admit_to_near_cache`](crate::HotKeys::admit_to_near_cache)).
    ///
    /// ```
    /// use memshard::HotKeys;
    /// use memshard::near::NearCacheConfig;
    /// use std::time::Duration;
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .near_cache(NearCacheConfig::hot_only(Duration::from_secs(1), 1000))
    ///     .hot_keys(HotKeys::top(10).admit_to_near_cache(100))
    ///     .build()?;
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn hot_only(ttl: Duration, max_entries: u64) -> Self {
        NearCacheConfig {
            matcher: KeyMatcher::Prefixes(Vec::new()),
            ttl,
            max_entries,
        }
    }

    /// Cache keys for which `f` is true.
    pub fn predicate(
        f: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
        ttl: Duration,
        max_entries: u64,
    ) -> Self {
        NearCacheConfig {
            matcher: KeyMatcher::Predicate(Arc::new(f)),
            ttl,
            max_entries,
        }
    }
}

/// Near-cache counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NearCacheStats {
    /// Reads served from the process.
    pub hits: u64,
    /// Reads of marked keys that went to the server.
    pub misses: u64,
    /// Entries held now (approximate, as moka counts them).
    pub entries: u64,
}

pub(crate) struct NearCache {
    cache: moka::sync::Cache<Vec<u8>, Item>,
    matcher: KeyMatcher,
    /// Drop every key written, marked or not (keys admitted as hot are not marked).
    invalidate_all: bool,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl NearCache {
    pub(crate) fn new(cfg: NearCacheConfig) -> NearCache {
        NearCache {
            cache: moka::sync::Cache::builder()
                .max_capacity(cfg.max_entries)
                .time_to_live(cfg.ttl)
                .build(),
            matcher: cfg.matcher,
            invalidate_all: false,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// With `on`, writes drop any key from the cache, not only marked ones.
    pub(crate) fn invalidate_all_keys(mut self, on: bool) -> NearCache {
        self.invalidate_all = on;
        self
    }

    pub(crate) fn wants(&self, key: &[u8]) -> bool {
        self.matcher.matches(key)
    }

    /// A cached value for a marked key (counts a hit or a miss).
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Item> {
        let r = self.cache.get(key);
        let counter = if r.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        r
    }

    pub(crate) fn store(&self, key: &[u8], item: &Item) {
        self.cache.insert(key.to_vec(), item.clone());
    }

    pub(crate) fn invalidate(&self, key: &[u8]) {
        if self.invalidate_all || self.wants(key) {
            self.cache.invalidate(key);
        }
    }

    pub(crate) fn clear(&self) {
        self.cache.invalidate_all();
    }

    pub(crate) fn stats(&self) -> NearCacheStats {
        NearCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: self.cache.entry_count(),
        }
    }
}
