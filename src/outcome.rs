//! What commands return: values and the outcome of each kind of command.

pub use bytes::Bytes;

/// A value read from memcached.
///
/// The value is a [`Bytes`]: a reply's values share the buffer they were read into, so a
/// multi-get of a hundred keys makes no allocation per value. A value kept for long keeps
/// that buffer (at least 16 KiB) alive too; `Bytes::copy_from_slice(&item.value)` keeps just
/// the value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Item {
    /// The value's bytes.
    pub value: Bytes,
    /// The client flags stored with it.
    pub flags: u32,
    /// The CAS unique (`gets`, `gats`).
    pub cas: Option<u64>,
}

impl Item {
    /// An item as a server would return it.
    ///
    /// ```
    /// let item = memshard::Item::new(b"hi".to_vec(), 0, None);
    /// assert_eq!(item.text(), Some("hi"));
    /// assert_eq!(item.value, b"hi"[..]);
    /// ```
    pub fn new(value: impl Into<Bytes>, flags: u32, cas: Option<u64>) -> Item {
        Item {
            value: value.into(),
            flags,
            cas,
        }
    }

    /// The value as UTF-8 text, if it is.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.value).ok()
    }
}

/// What a storage command did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// `STORED`
    Stored,
    /// `NOT_STORED`: the condition of `add`/`replace`/`append`/`prepend` failed.
    NotStored,
    /// `EXISTS`: a `cas` found the item changed since it was read.
    Exists,
    /// `NOT_FOUND`: a `cas` found no item.
    NotFound,
}

/// What `delete` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// `DELETED`
    Deleted,
    /// `NOT_FOUND`
    NotFound,
}

/// What `touch` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchOutcome {
    /// `TOUCHED`
    Touched,
    /// `NOT_FOUND`
    NotFound,
}

/// A server's statistics as `(name, value)` pairs.
pub type Stats = Vec<(String, String)>;

/// What `get_or_compute` and `get_or_compute_as` did since the client was built: how often
/// the recompute ran, and how often it answered because the cache could not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheAsideStats {
    /// Recomputes run (after a miss, an early recache, or a cache that could not answer).
    pub recomputes: u64,
    /// Calls the cache could not answer (server down, timeout, refused connection, I/O
    /// error), answered by the recompute instead of failing.
    pub served_without_cache: u64,
    /// Recomputes that found no value (`Ok(None)`), kept for the negative TTL.
    pub negative_stored: u64,
}

/// What discovery has done so far (`Client::discovery`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiscoveryStatus {
    /// The version of the configuration in force.
    pub version: u64,
    /// Its number of nodes.
    pub nodes: usize,
    /// Configurations applied, the first included.
    pub applied: u64,
    /// Polls made since the build (each asks nodes until one answers).
    pub polls: u64,
    /// Configurations answered but not applied: an older or equal version, or the same nodes.
    pub ignored: u64,
    /// The last problem met (a node that did not answer, a malformed reply, a refused change);
    /// the nodes in force stay meanwhile.
    pub last_error: Option<String>,
}

/// What one server's key dump (`lru_crawler metadump`) gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpSummary {
    /// Keys handed to the caller.
    pub keys: usize,
    /// Whether the dump reached its end; false when it was cut at the most keys asked for.
    pub complete: bool,
}

/// How many of a server's keys sit where the client's own placement puts them
/// (`check_placement`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerPlacement {
    /// Keys read from the server's dump, each counted once.
    pub sampled: u64,
    /// Of those, the keys the client places on this server.
    pub agree: u64,
    /// Keys without the client's prefix: another application's, not counted in `sampled`.
    pub foreign: u64,
}

/// The outcome of `check_placement`: per server, its keys' agreement with the client's
/// placement, or why the server could not list its keys.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PlacementCheck {
    /// Each configured server, in server order.
    pub servers: Vec<(crate::Server, crate::Result<ServerPlacement>)>,
}

impl PlacementCheck {
    /// Keys sampled over every server that answered.
    pub fn sampled(&self) -> u64 {
        self.answered().map(|p| p.sampled).sum()
    }

    /// Keys that sit where the client places them, over every server that answered.
    pub fn agree(&self) -> u64 {
        self.answered().map(|p| p.agree).sum()
    }

    /// `agree / sampled`, from 0 to 1; `None` when no key was sampled.
    pub fn agreement(&self) -> Option<f64> {
        let sampled = self.sampled();
        (sampled > 0).then(|| self.agree() as f64 / sampled as f64)
    }

    /// The servers that could not list their keys, with why.
    pub fn failed(&self) -> impl Iterator<Item = (&crate::Server, &crate::Error)> {
        self.servers
            .iter()
            .filter_map(|(s, r)| r.as_ref().err().map(|e| (s, e)))
    }

    fn answered(&self) -> impl Iterator<Item = &ServerPlacement> {
        self.servers.iter().filter_map(|(_, r)| r.as_ref().ok())
    }
}
