//! The ring: a frozen continuum over a server list, built by one flavor's recipe.
//!
//! Layer: placement (the ring, its key hashes in [`hash`], the server list in [`servers`],
//! `md5x4` for batch routing). May import: `std` only. Nothing here knows connections,
//! settings or values.

mod continuum;
mod dalli_key;
pub mod flavor;
mod gaps;
pub mod hash;
mod java;
mod md5_key;
pub(crate) mod md5x4;
pub(crate) mod md5x8;
mod rendezvous;
pub mod servers;
mod spy_node;
mod tag;

use crate::hash::KeyHash;
use crate::servers::Server;
use continuum::Continuum;
use flavor::Scheme;
pub use flavor::{FLAVORS, Flavor, UnknownFlavor};
use java::{fnv1_chars, fnv1a_chars};
pub use tag::{BadHashTag, HashTag};

/// Why a ring could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// The server list is empty: give at least one server.
    #[error("the server list is empty: give at least one server")]
    NoServers,
    /// The peer of this flavor does not let its users choose the key hash.
    #[error(
        "flavor {flavor} always hashes keys with {fixed} (its peer has no hash option); leave the key hash unset instead of {asked}"
    )]
    HashNotConfigurable {
        /// The flavor.
        flavor: Flavor,
        /// The hash the peer always uses.
        fixed: KeyHash,
        /// The hash that was asked for.
        asked: KeyHash,
    },
    /// The peer of this flavor has a hash option, but not this hash.
    #[error(
        "flavor {flavor} has no key hash {asked} (its peer offers {offered}); pick one of those or leave the key hash unset for {default}"
    )]
    HashNotOffered {
        /// The flavor.
        flavor: Flavor,
        /// The hash that was asked for.
        asked: KeyHash,
        /// The hashes the peer offers, by name.
        offered: String,
        /// The flavor's default hash.
        default: KeyHash,
    },
    /// The server list would give the ring more points than a ring should hold.
    #[error(
        "flavor {flavor} gives these {servers} servers {points} points, more than {max}; {}",
        too_many_points_advice(*flavor)
    )]
    TooManyPoints {
        /// The flavor.
        flavor: Flavor,
        /// The number of servers.
        servers: usize,
        /// Points asked for.
        points: u64,
        /// The limit.
        max: u64,
    },
    /// More servers than a ring can index.
    #[error("{0} servers is more than a ring can hold (at most {max})", max = u32::MAX)]
    TooManyServers(usize),
    /// A server has weight 0, which no flavor can place keys with (the weighted ones would
    /// give it a share of nothing, or divide by a total weight of 0).
    #[error(
        "server {server} has weight 0; weights are whole numbers of at least 1 (leave the server out of the list to give it no keys)"
    )]
    ZeroWeight {
        /// The server's address.
        server: String,
    },
    /// The flavor placed no point at all for this list, so no key could be routed.
    #[error(
        "flavor {flavor} places no point for these {servers} servers, so no key could be routed; check the weights"
    )]
    NoPoints {
        /// The flavor.
        flavor: Flavor,
        /// How many servers were given.
        servers: usize,
    },
}

/// A bare continuum lookup over raw points, for the planner's "N points per server" table.
pub(crate) fn continuum_for_planning(
    raw: Vec<(u32, u32)>,
    ties: flavor::Ties,
    search: flavor::Search,
) -> impl Fn(u32) -> Option<usize> {
    let c = Continuum::build(raw, ties, search);
    move |h| c.owner(h).map(|o| o as usize)
}

/// Upper bound on continuum points (64 MB of points and owners).
const MAX_POINTS: u64 = 8_000_000;

/// What to change when a ring would hold too many points: only memshard-weighted's point count
/// grows with the weights themselves; the peers' flavors give each server a share of a fixed
/// number of points per server.
fn too_many_points_advice(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::MemshardWeighted => {
            "use smaller weights (memshard-weighted gives 160 points per unit of weight)"
        }
        _ => "use fewer servers in one ring",
    }
}

/// Server indexes are `u32` on the continuum.
fn check_server_count(n: usize) -> Result<(), RingError> {
    if n > u32::MAX as usize {
        return Err(RingError::TooManyServers(n));
    }
    Ok(())
}

/// Refuses a ring whose continuum would hold more than [`MAX_POINTS`] points (counted before
/// equal points merge), before any point is hashed.
fn check_points(servers: &[Server], flavor: Flavor) -> Result<(), RingError> {
    let total: u64 = servers.iter().map(|s| s.weight as u64).sum();
    let points: u64 = servers
        .iter()
        .map(|s| {
            flavor
                .digests(s.weight, total, servers.len())
                .saturating_mul(4)
        })
        .fold(0, u64::saturating_add);
    if points > MAX_POINTS {
        return Err(RingError::TooManyPoints {
            flavor,
            servers: servers.len(),
            points,
            max: MAX_POINTS,
        });
    }
    Ok(())
}

/// An immutable ketama continuum. Cheap to share (`Arc<Ring>`), `Send + Sync`; routing a key
/// allocates nothing and takes no lock.
///
/// ```
/// use memshard::{Flavor, Ring, parse_server_list};
/// let servers = parse_server_list("10.0.1.1:11211 600\n10.0.1.2:11211 300").unwrap();
/// let ring = Ring::new(servers, Flavor::Libmemcached).unwrap();
/// let owner = ring.server_for(b"user:42").unwrap();
/// assert!(owner.addr.starts_with("10.0.1."));
/// // the key's owner is the first of the distinct servers clockwise from it
/// let walk: Vec<_> = ring.distinct_servers(b"user:42").map(|s| s.addr.clone()).collect();
/// assert_eq!(walk.len(), 2);
/// assert_eq!(walk[0], owner.addr);
/// ```
#[derive(Clone, Debug)]
pub struct Ring {
    servers: Vec<Server>,
    flavor: Flavor,
    hash: KeyHash,
    /// The hash of point names for `libmemcached-unweighted` (libmemcached builds its ring with
    /// the hash in effect at build time, which can differ from the key hash).
    point_hash: KeyHash,
    tag: Option<HashTag>,
    scheme: Scheme,
    /// Empty for the modulo and rendezvous flavors.
    continuum: Continuum,
    /// The rendezvous flavor's node names, in server order (empty for the others).
    nodes: Vec<String>,
    point_counts: Vec<u32>,
}

impl Ring {
    /// A ring over `servers` with the flavor's default key hash and no hash tag.
    pub fn new(servers: Vec<Server>, flavor: Flavor) -> Result<Ring, RingError> {
        Ring::with_options(servers, flavor, None, None)
    }

    /// A ring with an explicit key hash (`None`: the flavor's default) and hash tag.
    pub fn with_options(
        servers: Vec<Server>,
        flavor: Flavor,
        hash: Option<KeyHash>,
        tag: Option<HashTag>,
    ) -> Result<Ring, RingError> {
        Ring::with_point_hash(servers, flavor, hash, None, tag)
    }

    /// [`Ring::with_options`] where the point names of `libmemcached-unweighted` are hashed with
    /// `point_hash` (default: the key hash), as libmemcached does when `MEMCACHED_BEHAVIOR_HASH`
    /// changes after its ring was built.
    pub fn with_point_hash(
        servers: Vec<Server>,
        flavor: Flavor,
        hash: Option<KeyHash>,
        point_hash: Option<KeyHash>,
        tag: Option<HashTag>,
    ) -> Result<Ring, RingError> {
        if servers.is_empty() {
            return Err(RingError::NoServers);
        }
        check_server_count(servers.len())?;
        if let Some(s) = servers.iter().find(|s| s.weight == 0) {
            return Err(RingError::ZeroWeight {
                server: s.addr.clone(),
            });
        }
        let fixed = flavor.default_hash();
        let hash = match hash {
            Some(h) if h != fixed && !flavor.hash_is_configurable() => {
                return Err(RingError::HashNotConfigurable {
                    flavor,
                    fixed,
                    asked: h,
                });
            }
            Some(h) if !flavor.offers_hash(h) => {
                let offered: Vec<&str> = hash::KEY_HASHES
                    .iter()
                    .filter(|(_, k)| flavor.offers_hash(*k))
                    .map(|(n, _)| *n)
                    .collect();
                return Err(RingError::HashNotOffered {
                    flavor,
                    asked: h,
                    offered: offered.join(", "),
                    default: fixed,
                });
            }
            Some(h) => h,
            None => fixed,
        };
        check_points(&servers, flavor)?;
        let point_hash = point_hash.unwrap_or(hash);
        let scheme = flavor.scheme();
        let nodes = match scheme {
            Scheme::Rendezvous => servers.iter().map(|s| flavor.point_base(s)).collect(),
            Scheme::Continuum | Scheme::Modulo => Vec::new(),
        };
        let raw = flavor.points(&servers, point_hash);
        if raw.is_empty() && scheme == Scheme::Continuum {
            return Err(RingError::NoPoints {
                flavor,
                servers: servers.len(),
            });
        }
        let mut point_counts = vec![0u32; servers.len()];
        for &(_, s) in &raw {
            point_counts[s as usize] += 1;
        }
        let continuum = Continuum::build(raw, flavor.ties(), flavor.search());
        Ok(Ring {
            servers,
            flavor,
            scheme,
            hash,
            point_hash,
            tag,
            continuum,
            nodes,
            point_counts,
        })
    }

    /// The servers, in the order given.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// The flavor this ring was built with.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The key hash in use.
    pub fn key_hash(&self) -> KeyHash {
        self.hash
    }

    /// The hash of point names: the key hash, unless the ring was built by
    /// [`Ring::with_point_hash`] with another (only `libmemcached-unweighted` hashes point names
    /// with it).
    pub fn point_hash(&self) -> KeyHash {
        self.point_hash
    }

    /// A ring over another server list with every other option of this one.
    pub fn with_servers(&self, servers: Vec<Server>) -> Result<Ring, RingError> {
        Ring::with_point_hash(
            servers,
            self.flavor,
            Some(self.hash),
            Some(self.point_hash),
            self.tag,
        )
    }

    /// The hash tag in use, if any.
    pub fn hash_tag(&self) -> Option<HashTag> {
        self.tag
    }

    /// Points each server placed on the continuum (before equal points are merged), in server
    /// order. A server can have 0 points when its weight share is tiny; every server has 0
    /// under the flavors without a continuum (modulo, rendezvous).
    pub fn point_counts(&self) -> &[u32] {
        &self.point_counts
    }

    /// Distinct points on the continuum (0 for the flavors without one: modulo, rendezvous).
    pub fn len(&self) -> usize {
        self.continuum.len()
    }

    /// Heap bytes the continuum holds: each distinct point with its server's index (8 bytes)
    /// and the bucket index that keeps a lookup to two cache lines (4 bytes per bucket, between
    /// half as many and as many buckets as points). Divide by [`Ring::servers`]`.len()` for the
    /// memory per server; the server list itself is not counted.
    ///
    /// ```
    /// use memshard::{Flavor, Ring, Server};
    /// let ring = Ring::new(vec![Server::new("10.0.0.1", 11211)], Flavor::Libmemcached).unwrap();
    /// assert_eq!(ring.len(), 160);
    /// assert!(ring.continuum_bytes() >= 160 * 8);
    /// ```
    pub fn continuum_bytes(&self) -> usize {
        self.continuum.heap_bytes()
    }

    /// True when no key could be routed (never the case for a ring that was built).
    pub fn is_empty(&self) -> bool {
        self.scheme == Scheme::Continuum && self.continuum.len() == 0
    }

    /// The part of `key` that is hashed: the whole key, or what its hash tag encloses.
    #[inline]
    fn tagged<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        match &self.tag {
            Some(t) => t.apply(key),
            None => key,
        }
    }

    /// The key hash of `key`, after the hash tag.
    #[inline]
    pub fn hash_key(&self, key: &[u8]) -> u32 {
        let k = self.tagged(key);
        match self.flavor {
            Flavor::Dalli => dalli_key::with_hashed_key(k, |k| self.hash.hash(k)),
            Flavor::SpymemcachedModula => spymemcached_hash(self.hash, k),
            _ => self.hash.hash(k),
        }
    }

    /// Index (into [`Ring::servers`]) of the server that owns `key`.
    #[inline]
    pub fn route(&self, key: &[u8]) -> Option<usize> {
        if self.single() {
            return Some(0);
        }
        match self.scheme {
            Scheme::Continuum => Some(self.continuum.owner(self.hash_key(key))? as usize),
            Scheme::Modulo => Some((self.hash_key(key) % self.servers.len() as u32) as usize),
            Scheme::Rendezvous => rendezvous::owner(&self.nodes, self.tagged(key)),
        }
    }

    /// One server with points: every key is its, so no key is hashed (libmemcached does the
    /// same: `_generate_hash_wrapper` in libmemcached/hash.cc returns 0 for one server; so do
    /// gomemcache's `PickServer` and every modulo by 1). The md5 of a key is ~670 of the ~8,700
    /// user-space instructions of an async get (callgrind).
    #[inline]
    pub(crate) fn single(&self) -> bool {
        self.servers.len() == 1 && !self.is_empty()
    }

    /// Route many keys: calls `f(i, server index)` for each `keys[i]`, in order. Same answers
    /// as [`Ring::route`]; for md5-hashed flavors four short keys are hashed at once, which is
    /// what makes a multi-get's routing cheaper than key-by-key routing.
    ///
    /// ```
    /// use memshard::{Flavor, Ring, Server};
    /// let ring = Ring::new(vec![Server::new("10.0.0.1", 11211), Server::new("10.0.0.2", 11211)], Flavor::Libmemcached).unwrap();
    /// let keys: Vec<&[u8]> = vec![b"a", b"b", b"c", b"d", b"e"];
    /// ring.route_each(&keys, |i, server| assert_eq!(Some(server), ring.route(keys[i])));
    /// ```
    pub fn route_each(&self, keys: &[&[u8]], mut f: impl FnMut(usize, usize)) {
        if self.is_empty() {
            return;
        }
        if self.single() {
            (0..keys.len()).for_each(|i| f(i, 0));
            return;
        }

        let batchable = self.routes_by_md5();
        let one_block = |ks: &[&[u8]]| {
            ks.iter()
                .all(|k| self.tagged(k).len() <= crate::ring::md5x4::MAX_ONE_BLOCK)
        };
        let mut i = 0;
        if batchable {
            // on a CPU without AVX2 the first call says so, and the four-lane loop takes over
            while i + 8 <= keys.len() && one_block(&keys[i..i + 8]) {
                let ks: [&[u8]; 8] = std::array::from_fn(|j| self.tagged(keys[i + j]));
                let Some(hashes) = crate::ring::md5x8::md5_first_words(ks) else {
                    break;
                };
                for (j, h) in hashes.into_iter().enumerate() {
                    if let Some(s) = self.route_hash(h) {
                        f(i + j, s);
                    }
                }
                i += 8;
            }
        }
        while i < keys.len() {
            if batchable && i + 4 <= keys.len() && one_block(&keys[i..i + 4]) {
                let ks: [&[u8]; 4] = std::array::from_fn(|j| self.tagged(keys[i + j]));
                let hashes = crate::ring::md5x4::md5_first_words(ks);
                for (j, h) in hashes.into_iter().enumerate() {
                    if let Some(s) = self.route_hash(h) {
                        f(i + j, s);
                    }
                }
                i += 4;
            } else {
                if let Some(s) = self.route(keys[i]) {
                    f(i, s);
                }
                i += 1;
            }
        }
    }

    /// Whether a key's server follows from the first word of the md5 of the (tagged) key
    /// alone, so that callers may hash keys in batches and call [`Ring::route_hash`].
    pub(crate) fn routes_by_md5(&self) -> bool {
        // dalli (crc32a of a possibly shortened key) and pymemcache (a score of server and
        // key) never take md5 as their key hash: the hash alone decides
        self.hash == KeyHash::Md5
    }

    /// Index of the server a key hash picks (for callers that hashed already; not for the
    /// rendezvous flavor, whose score hashes the server's name with the key).
    #[inline]
    pub(crate) fn route_hash(&self, hash: u32) -> Option<usize> {
        match self.scheme {
            Scheme::Modulo => Some((hash % self.servers.len() as u32) as usize),
            Scheme::Continuum | Scheme::Rendezvous => Some(self.continuum.owner(hash)? as usize),
        }
    }

    /// The server that owns `key`.
    #[inline]
    pub fn server_for(&self, key: &[u8]) -> Option<&Server> {
        self.route(key).map(|i| &self.servers[i])
    }

    /// The continuum point a key lands on (`None` for an empty ring, and for the flavors
    /// without a continuum: modulo, rendezvous).
    pub fn point_for(&self, key: &[u8]) -> Option<u32> {
        let pos = self.continuum.position(self.hash_key(key))?;
        Some(self.continuum.point_at(pos))
    }

    /// Distinct servers in ring order starting at the key's owner: the owner first, then each
    /// server the first time the walk meets one of its points. For failover and replicas.
    /// Without a continuum: under modulo the servers after the owner in list order, wrapping;
    /// under rendezvous the servers by falling score (the order in which pymemcache would
    /// pick them as servers are removed).
    pub fn distinct_servers<'r>(&'r self, key: &[u8]) -> DistinctServers<'r> {
        DistinctServers {
            walk: self.distinct_indexes(key),
        }
    }

    /// [`Ring::distinct_servers`] as indexes into [`Ring::servers`].
    pub fn distinct_indexes<'r>(&'r self, key: &[u8]) -> DistinctIndexes<'r> {
        let n = self.servers.len();
        let (start, left, ranked) = match self.scheme {
            Scheme::Continuum => {
                let start = self.continuum.position(self.hash_key(key));
                let left = match start {
                    Some(_) => self.point_counts.iter().filter(|&&c| c > 0).count(),
                    None => 0,
                };
                (start.unwrap_or(0), left, Vec::new())
            }
            Scheme::Modulo => (self.route(key).unwrap_or(0), n, Vec::new()),
            Scheme::Rendezvous => (0, n, rendezvous::ranking(&self.nodes, self.tagged(key))),
        };
        DistinctIndexes {
            ring: self,
            start,
            step: 0,
            seen: vec![0u64; n.div_ceil(64)],
            left,
            ranked,
        }
    }
}

/// Iterator returned by [`Ring::distinct_servers`].
#[derive(Debug)]
pub struct DistinctServers<'r> {
    walk: DistinctIndexes<'r>,
}

impl<'r> Iterator for DistinctServers<'r> {
    type Item = &'r Server;
    fn next(&mut self) -> Option<&'r Server> {
        let ring = self.walk.ring;
        self.walk.next().map(|i| &ring.servers[i])
    }
}

/// Iterator returned by [`Ring::distinct_indexes`].
#[derive(Debug)]
pub struct DistinctIndexes<'r> {
    ring: &'r Ring,
    start: usize,
    step: usize,
    seen: Vec<u64>,
    left: usize,
    /// The rendezvous order, whole (empty for the other schemes).
    ranked: Vec<usize>,
}

impl Iterator for DistinctIndexes<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        match self.ring.scheme {
            Scheme::Continuum => self.next_on_continuum(),
            Scheme::Modulo => {
                let n = self.ring.servers.len();
                (self.step < n).then(|| {
                    self.step += 1;
                    (self.start + self.step - 1) % n
                })
            }
            Scheme::Rendezvous => {
                let i = self.ranked.get(self.step).copied();
                self.step += 1;
                i
            }
        }
    }
}

impl DistinctIndexes<'_> {
    fn next_on_continuum(&mut self) -> Option<usize> {
        let n = self.ring.continuum.len();
        // Dalli's lookup takes the last point at or below the hash, so its clockwise walk goes
        // downwards through the points; every other flavor walks upwards.
        let down = self.ring.flavor.search() == flavor::Search::LastAtOrBelow;
        while self.left > 0 && self.step < n {
            let pos = if down {
                (self.start + n - self.step % n) % n
            } else {
                (self.start + self.step) % n
            };
            self.step += 1;
            let s = self.ring.continuum.owner_at(pos) as usize;
            let (w, b) = (s / 64, 1u64 << (s % 64));
            if self.seen[w] & b == 0 {
                self.seen[w] |= b;
                self.left -= 1;
                return Some(s);
            }
        }
        None
    }
}

/// spymemcached's hash `h` of `key` (`DefaultHashAlgorithm`): the FNV variants over the key's
/// UTF-16 code units, with the low 32 bits of the 64-bit constants where they are 64-bit;
/// every other hash as libhashkit has it (its crc and md5 read the UTF-8 bytes, as
/// spymemcached's `CRC_HASH` and `KETAMA_HASH` do).
fn spymemcached_hash(h: KeyHash, key: &[u8]) -> u32 {
    const INIT_64: u32 = 0x8422_2325;
    const PRIME_64: u32 = 0x0000_01b3;
    const INIT_32: u32 = 0x811c_9dc5;
    const PRIME_32: u32 = 0x0100_0193;
    match h {
        KeyHash::Fnv1_64 => fnv1_chars(key, INIT_64, PRIME_64),
        KeyHash::Fnv1a_64 => fnv1a_chars(key, INIT_64, PRIME_64),
        KeyHash::Fnv1_32 => fnv1_chars(key, INIT_32, PRIME_32),
        KeyHash::Fnv1a_32 => fnv1a_chars(key, INIT_32, PRIME_32),
        other => other.hash(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits are checked before anything is built, so their exact bounds are cheap to
    /// test: 2^32 servers or 8,000,000 points could not be.
    #[test]
    fn server_and_point_limits_are_inclusive() {
        assert!(check_server_count(u32::MAX as usize).is_ok());
        assert!(matches!(
            check_server_count(u32::MAX as usize + 1),
            Err(RingError::TooManyServers(n)) if n == u32::MAX as usize + 1
        ));
        // spymemcached: 160 points a server, so 50,000 servers make exactly MAX_POINTS
        let spy = |n: usize| -> Vec<Server> {
            (0..n)
                .map(|i| Server::new(format!("h{i}"), 11211))
                .collect()
        };
        assert!(check_points(&spy(50_000), Flavor::Spymemcached).is_ok());
        match check_points(&spy(50_001), Flavor::Spymemcached) {
            Err(RingError::TooManyPoints {
                points,
                max,
                servers,
                ..
            }) => {
                assert_eq!((points, max, servers), (8_000_160, MAX_POINTS, 50_001));
            }
            other => panic!("expected TooManyPoints, got {other:?}"),
        }
        // memshard-weighted: 160 points per unit of weight
        let heavy = |w: u32| vec![Server::new("a", 1).with_weight(w)];
        assert!(check_points(&heavy(50_000), Flavor::MemshardWeighted).is_ok());
        assert!(check_points(&heavy(50_001), Flavor::MemshardWeighted).is_err());
    }

    /// Batches of every length from 0 to 20 (the md5 path takes eight or four keys at a
    /// time, so short batches and the tail go key by key; a key over one md5 block goes
    /// alone: here four in a row, of 56 to 59 bytes, after eight short ones, and one more of
    /// 64) route as `route` does.
    #[test]
    fn route_each_takes_batches_of_any_length() {
        let keys: Vec<Vec<u8>> = (0..20)
            .map(|i| match i {
                9..=12 => format!("k{i:02}:{}", "x".repeat(i + 43)).into_bytes(),
                17 => format!("k{i}:{}", "x".repeat(60)).into_bytes(),
                _ => format!("k{i}").into_bytes(),
            })
            .collect();
        assert!(keys[9..=12].iter().all(|k| (56..60).contains(&k.len())));
        for f in [
            Flavor::Libmemcached,
            Flavor::LibmemcachedModula,
            Flavor::Spymemcached,
        ] {
            let ring = Ring::with_options(four(), f, Some(KeyHash::Md5), None).expect("ring");
            for n in 0..=keys.len() {
                let refs: Vec<&[u8]> = keys[..n].iter().map(Vec::as_slice).collect();
                let mut got = Vec::new();
                ring.route_each(&refs, |i, s| got.push((i, s)));
                let want: Vec<(usize, usize)> = refs
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (i, ring.route(k).expect("routed")))
                    .collect();
                assert_eq!(got, want, "{f}, {n} keys");
            }
        }
    }

    /// The walk's order is the order of failover: under flavors where a server's points do not
    /// depend on the others (fixed points per server, equal weights) and under rendezvous,
    /// the walk's next server is where the key goes once the servers before it are removed.
    /// Dalli's continuum answers the last point at or below the hash, so its walk goes down.
    #[test]
    fn the_walk_is_where_the_key_goes_as_servers_are_removed() {
        let six = six_servers();
        for f in [
            Flavor::Dalli,
            Flavor::Spymemcached,
            Flavor::LibmemcachedUnweighted,
            Flavor::MemshardWeighted,
            Flavor::AwsJavaKetama,
            Flavor::Pymemcache,
        ] {
            let ring = Ring::new(six.clone(), f).expect("ring");
            for k in 0..40 {
                assert_walk_is_removal_order(&ring, &six, &format!("walk:{k}"));
            }
        }
    }

    /// Keys that start on the first and the last points: dalli's downward walk and the
    /// others' upward walk both wrap around the end of the continuum.
    #[test]
    fn walks_wrap_around_the_continuum() {
        let six = six_servers();
        for f in [Flavor::Dalli, Flavor::Spymemcached, Flavor::Libmemcached] {
            let ring = Ring::new(six.clone(), f).expect("ring");
            let n = ring.continuum.len();
            for edge in [0..3, n - 3..n] {
                let key = (0..200_000)
                    .map(|k| format!("wrap:{k}"))
                    .find(|key| edge.contains(&ring.distinct_indexes(key.as_bytes()).start))
                    .unwrap_or_else(|| panic!("{f}: no key starts at points {edge:?}"));
                assert_walk_is_removal_order(&ring, &six, &key);
            }
        }
    }

    fn six_servers() -> Vec<Server> {
        (1..=6)
            .map(|i| Server::new(format!("10.0.0.{i}"), 11211))
            .collect()
    }

    /// The walk names every server once, and its j-th server is where the key goes once the
    /// servers before it are gone.
    fn assert_walk_is_removal_order(ring: &Ring, servers: &[Server], key: &str) {
        let f = ring.flavor;
        let walk: Vec<usize> = ring.distinct_indexes(key.as_bytes()).collect();
        assert_eq!(walk.len(), servers.len(), "{f}: {key}");
        for j in 1..walk.len() {
            let left: Vec<Server> = (0..servers.len())
                .filter(|i| !walk[..j].contains(i))
                .map(|i| servers[i].clone())
                .collect();
            let smaller = Ring::new(left, f).expect("smaller ring");
            let to = smaller.server_for(key.as_bytes()).expect("routed");
            assert_eq!(to.addr, servers[walk[j]].addr, "{f}: {key}, step {j}");
        }
    }

    /// Every flavor prints as its first name in `FLAVORS`, and that name parses back to it.
    /// A flavor whose peer has no hash option offers its default hash and nothing else.
    #[test]
    fn flavor_names_and_offered_hashes() {
        assert_eq!(Flavor::Libmemcached.to_string(), "libmemcached");
        assert_eq!(Flavor::Pymemcache.to_string(), "pymemcache");
        for &(_, f) in FLAVORS {
            let first = FLAVORS.iter().find(|(_, g)| *g == f).map(|(n, _)| *n);
            assert_eq!(Some(f.name()), first);
            assert_eq!(f.to_string(), f.name());
            assert_eq!(f.name().parse::<Flavor>().ok(), Some(f), "{f}");
            if !f.hash_is_configurable() {
                for &(name, h) in hash::KEY_HASHES {
                    assert_eq!(
                        f.offers_hash(h),
                        h == f.default_hash(),
                        "{f} offers {name}?"
                    );
                }
            }
        }
        // and the key hashes the same way
        assert_eq!(KeyHash::OneAtATime.to_string(), "one-at-a-time");
        for &(_, h) in hash::KEY_HASHES {
            let first = hash::KEY_HASHES
                .iter()
                .find(|(_, g)| *g == h)
                .map(|(n, _)| *n);
            assert_eq!(Some(h.to_string().as_str()), first);
            assert_eq!(h.to_string().parse::<KeyHash>().ok(), Some(h), "{h}");
        }
    }

    /// The first point name is what the peer hashes for a server's first point: libmemcached
    /// leaves out port 11211 (`host-0`), dalli joins host, port and index with `:`; a
    /// rendezvous node is named `host:port` (pymemcache's node key).
    #[test]
    fn first_point_names_as_each_peer_writes_them() {
        let s = Server::new("10.0.1.1", 11211);
        let other = Server::new("10.0.1.1", 11212);
        let cases = [
            (Flavor::Libmemcached, &s, "10.0.1.1-0"),
            (Flavor::Libmemcached, &other, "10.0.1.1:11212-0"),
            (Flavor::Dalli, &s, "10.0.1.1:11211:0"),
            (Flavor::Pymemcache, &s, "10.0.1.1:11211"),
        ];
        for (f, server, want) in cases {
            assert_eq!(f.first_point_name(server), want, "{f}");
        }
    }

    /// A server listed twice puts its points on the same places: one copy takes them all
    /// (spymemcached's map keeps the last, libmemcached's sort the first), so the other has
    /// points counted and none on the continuum. The walk still ends, with the one found.
    #[test]
    fn a_walk_ends_when_a_server_lost_every_point_to_a_tie() {
        let twice = vec![
            Server::new("10.0.0.1", 11211),
            Server::new("10.0.0.1", 11211),
        ];
        for (f, owner) in [(Flavor::Spymemcached, 1), (Flavor::Libmemcached, 0)] {
            let ring = Ring::new(twice.clone(), f).expect("ring");
            assert_eq!(ring.point_counts(), &[160, 160], "{f}");
            for k in 0..20 {
                let key = format!("k{k}");
                let walk: Vec<usize> = ring.distinct_indexes(key.as_bytes()).collect();
                assert_eq!(walk, [owner], "{f}: {key}");
            }
        }
    }

    /// The accessors answer what the ring was built with; `continuum_bytes` counts each point
    /// (8 bytes), the bucket index (4 bytes a bucket, plus one end marker) and the gaps (2
    /// bytes a stretch, eight stretches a point or more).
    #[test]
    fn accessors_report_the_ring_as_built() {
        let one = vec![Server::new("10.0.0.1", 11211)];
        let ring = Ring::new(one.clone(), Flavor::Libmemcached).expect("ring");
        assert_eq!(ring.len(), 160);
        // 160 points: 2^7 buckets, 2^11 stretches
        assert_eq!(ring.continuum_bytes(), 160 * 8 + (128 + 1) * 4 + 2048 * 2);
        assert_eq!(ring.hash_tag(), None);
        let tag = HashTag::new(b'{', b'}');
        let tagged =
            Ring::with_options(one, Flavor::Libmemcached, None, Some(tag)).expect("tagged ring");
        assert_eq!(tagged.hash_tag(), Some(tag));
    }

    fn four() -> Vec<Server> {
        (1..=4)
            .map(|i| Server::new(format!("10.0.0.{i}"), 11211).with_weight(i))
            .collect()
    }

    #[test]
    fn rings_without_a_continuum_route_every_key_and_walk_every_server() {
        let keys: Vec<Vec<u8>> = (0..200).map(|i| format!("key:{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        for f in [
            Flavor::LibmemcachedModula,
            Flavor::SpymemcachedModula,
            Flavor::Pymemcache,
            Flavor::Gomemcache,
        ] {
            let ring = Ring::new(four(), f).expect("ring");
            // no continuum points, yet every key is routed
            assert!(!ring.is_empty(), "{f}");
            assert_eq!(ring.len(), 0, "{f}");
            assert_eq!(ring.point_counts(), &[0, 0, 0, 0], "{f}");
            assert_eq!(ring.point_for(b"k"), None, "{f}");
            let mut seen = [0usize; 4];
            ring.route_each(&refs, |i, s| {
                assert_eq!(Some(s), ring.route(refs[i]), "{f}");
                seen[s] += 1;
            });
            // weights are ignored: each server gets about a quarter, none is left out
            assert!(
                seen.iter().all(|&n| (25..=75).contains(&n)),
                "{f}: {seen:?}"
            );
            for k in &refs {
                let walk: Vec<usize> = ring.distinct_indexes(k).collect();
                assert_eq!(walk[0], ring.route(k).expect("owner"), "{f}");
                let mut sorted = walk.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, [0, 1, 2, 3], "{f}: {walk:?}");
            }
        }
    }

    #[test]
    fn each_peers_default_hash_and_scheme() {
        let cases = [
            (Flavor::LibmemcachedModula, KeyHash::OneAtATime, false),
            (Flavor::LibmemcachedUnweighted, KeyHash::OneAtATime, true),
            (Flavor::SpymemcachedModula, KeyHash::Native, false),
            (Flavor::Pymemcache, KeyHash::Murmur3Seed0, false),
            (Flavor::Gomemcache, KeyHash::Crc32a, false),
            (Flavor::AwsJavaKetama, KeyHash::Sha384, true),
            (Flavor::Libmemcached, KeyHash::Md5, true),
        ];
        for (f, hash, ketama) in cases {
            assert_eq!((f.default_hash(), f.is_ketama()), (hash, ketama), "{f}");
        }
    }

    #[test]
    fn md5_keyed_modulo_routes_batches_as_it_routes_keys() {
        let keys: Vec<Vec<u8>> = (0..64).map(|i| format!("k{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        for f in [Flavor::LibmemcachedModula, Flavor::SpymemcachedModula] {
            let ring = Ring::with_options(four(), f, Some(KeyHash::Md5), None).expect("ring");
            let mut seen = [0usize; 4];
            ring.route_each(&refs, |i, s| {
                let want = KeyHash::Md5.hash(refs[i]) % 4;
                assert_eq!(s, want as usize, "{f}");
                assert_eq!(Some(s), ring.route(refs[i]), "{f}");
                seen[s] += 1;
            });
            assert_eq!(seen.iter().sum::<usize>(), 64, "{f}");
        }
    }

    #[test]
    fn modulo_walks_the_list_from_the_owner_and_rendezvous_by_falling_score() {
        let ring = Ring::new(four(), Flavor::Gomemcache).expect("ring");
        let owner = ring.route(b"a").expect("owner");
        let walk: Vec<usize> = ring.distinct_indexes(b"a").collect();
        assert_eq!(walk, (0..4).map(|i| (owner + i) % 4).collect::<Vec<_>>());
        let ring = Ring::new(four(), Flavor::Pymemcache).expect("ring");
        for k in [&b"a"[..], b"b", b"user:42"] {
            let walk: Vec<usize> = ring.distinct_indexes(k).collect();
            // without its owner, pymemcache's next pick is the walk's second server
            let rest = Ring::new(
                walk[1..]
                    .iter()
                    .map(|&i| ring.servers()[i].clone())
                    .collect(),
                Flavor::Pymemcache,
            )
            .expect("ring");
            assert_eq!(
                rest.server_for(k).map(|s| &s.addr),
                Some(&ring.servers()[walk[1]].addr)
            );
        }
    }

    /// spymemcached 2.12.3's own answers (compat-vectors/spymemcached-modula/cases/
    /// hash-fnv1a_32-n7 and hash-native-n7): FNV over UTF-16 code units, `String.hashCode`
    /// over surrogate pairs. A hash over the UTF-8 bytes places `Ā`, `߿` and `ࠀ` elsewhere.
    #[test]
    fn spymemcached_hashes_characters_as_spymemcached_does() {
        let servers: Vec<Server> = [
            "10.105.85.114:11212",
            "10.41.187.172:11211",
            "10.29.201.140:11211",
            "10.204.92.213:11213",
            "10.113.201.235:11213",
            "10.209.56.90:22122",
            "10.103.157.71:11211",
        ]
        .iter()
        .map(|a| a.parse().expect("address"))
        .collect();
        let fnv = Ring::with_options(
            servers.clone(),
            Flavor::SpymemcachedModula,
            Some(KeyHash::Fnv1a_32),
            None,
        )
        .expect("ring");
        for (key, owner) in [
            ("é", 0),
            ("ÿ", 0),
            ("Ā", 3),
            ("߿", 1),
            ("ࠀ", 3),
            ("\u{d7ff}", 2),
        ] {
            assert_eq!(fnv.route(key.as_bytes()), Some(owner), "{key:?}");
        }
        let native = Ring::new(servers, Flavor::SpymemcachedModula).expect("ring");
        for (key, owner) in [("𐀀", 0), ("😀", 2)] {
            assert_eq!(native.route(key.as_bytes()), Some(owner), "{key:?}");
        }
    }

    #[test]
    fn a_hash_the_peer_does_not_offer_is_refused_with_the_ones_it_does() {
        let e = Ring::with_options(
            four(),
            Flavor::SpymemcachedModula,
            Some(KeyHash::Hsieh),
            None,
        )
        .expect_err("spymemcached has no hsieh");
        let text = e.to_string();
        assert!(
            text.contains("native") && text.contains("fnv1a_32") && !text.contains("hsieh,"),
            "{text}"
        );
        assert!(matches!(e, RingError::HashNotOffered { .. }), "{e:?}");
        let e = Ring::with_options(
            four(),
            Flavor::LibmemcachedModula,
            Some(KeyHash::Native),
            None,
        )
        .expect_err("libmemcached has no Java hash");
        assert!(matches!(e, RingError::HashNotOffered { .. }), "{e:?}");
        for h in [KeyHash::Md5, KeyHash::Crc32, KeyHash::Fnv1a_64] {
            Ring::with_options(four(), Flavor::SpymemcachedModula, Some(h), None).expect("offered");
            Ring::with_options(four(), Flavor::LibmemcachedModula, Some(h), None).expect("offered");
        }
        assert!(matches!(
            Ring::with_options(four(), Flavor::Gomemcache, Some(KeyHash::Md5), None),
            Err(RingError::HashNotConfigurable { .. })
        ));
    }

    #[test]
    fn too_many_points_say_what_to_change_for_the_flavor() {
        let many: Vec<Server> = (0..50_001)
            .map(|i| {
                Server::new(
                    format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255),
                    11211,
                )
            })
            .collect();
        let e = Ring::new(many, Flavor::Libmemcached).expect_err("8,000,160 points");
        assert!(
            matches!(
                e,
                RingError::TooManyPoints {
                    flavor: Flavor::Libmemcached,
                    servers: 50_001,
                    ..
                }
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("fewer servers") && !text.contains("160 points per unit"),
            "{text}"
        );
        let heavy = vec![Server::new("10.0.0.1", 11211).with_weight(50_001)];
        let e = Ring::new(heavy, Flavor::MemshardWeighted).expect_err("8,000,160 points");
        assert!(e.to_string().contains("smaller weights"), "{e}");
    }
}
