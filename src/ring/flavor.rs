//! Flavors: each peer's whole placement recipe in one value.
//!
//! Most flavors are a peer's ketama: a flavor fixes the point-name format, the
//! points-per-server arithmetic (with the peer's own float/double/integer steps), how digest
//! bytes become points, the key hash, the order of equal points and the lookup boundary. The
//! others are the peers' defaults without a continuum: modulo (libmemcached, spymemcached,
//! gomemcache) and rendezvous (pymemcache). The caller can change only the key hash, and only
//! where the peer lets its users change it (libmemcached, twemproxy, spymemcached's modulo).

use crate::hash::{self, KeyHash};
use crate::servers::{DEFAULT_PORT, Server};
use std::fmt;
use std::str::FromStr;

/// A peer's placement recipe. See the crate docs for which peer and option each one matches.
///
/// Modulo and rendezvous are not ketama: adding a server to `n` moves about `n / (n + 1)` of
/// the keys under modulo (every key whose hash changes remainder), `1 / (n + 1)` under
/// rendezvous and ketama.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Flavor {
    /// libmemcached `MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED` (php-memcached
    /// `OPT_LIBKETAMA_COMPATIBLE`, pylibmc `ketama_weighted`: their ketama mode, also named
    /// by the aliases `php-memcached` and `pylibmc`; at their defaults those peers place as
    /// [`Flavor::LibmemcachedModula`]). The default.
    Libmemcached,
    /// libmemcached `MEMCACHED_BEHAVIOR_KETAMA` alone: 100 points per server, each the key hash
    /// of one point name (pylibmc `{"ketama": True}`).
    LibmemcachedUnweighted,
    /// libmemcached `MEMCACHED_BEHAVIOR_KETAMA_COMPAT` = `MEMCACHED_KETAMA_COMPAT_SPY`.
    LibmemcachedSpy,
    /// twemproxy (nutcracker) `distribution: ketama`.
    Twemproxy,
    /// The original last.fm libketama (also PyPI `ketama`).
    Libketama,
    /// spymemcached `KetamaNodeLocator`, unweighted, `KETAMA_HASH`.
    Spymemcached,
    /// spymemcached 2.12+ `KetamaNodeLocator` with weights.
    SpymemcachedWeighted,
    /// Python uhashring `HashRing(..., hash_fn="ketama")`.
    Uhashring,
    /// npm `hashring`.
    NodeHashring,
    /// Ruby dalli's own ring.
    Dalli,
    /// Python `hash_ring` (Amir Salihefendic): 3 points per md5 digest.
    HashRing,
    /// Go `github.com/dgryski/go-ketama`.
    GoKetama,
    /// memshard's own monotone weighted ketama (no peer has it): each server gets 160 points
    /// per unit of its own weight, whatever the other servers weigh, so adding, removing or
    /// reweighting one server moves only keys to or from that server. Ties go to the server
    /// whose address sorts first, independent of list order.
    MemshardWeighted,
    /// libmemcached `MEMCACHED_DISTRIBUTION_MODULA`, libmemcached's default and so php-memcached's
    /// and pylibmc's out of the box: the key hash (default one-at-a-time) modulo the number of
    /// servers, in the order they were added; weights are ignored.
    LibmemcachedModula,
    /// spymemcached `ArrayModNodeLocator` (`DefaultConnectionFactory`): the key hash (default
    /// `NATIVE_HASH`, Java's `String.hashCode`) modulo the number of servers; no weights.
    SpymemcachedModula,
    /// pymemcache `HashClient`: rendezvous hashing, the highest
    /// `murmur3_32("host:port-key")` wins; no weights.
    Pymemcache,
    /// gomemcache `ServerList`: `crc32.ChecksumIEEE(key) % len(servers)` in the order given;
    /// no weights.
    Gomemcache,
    /// The AWS ElastiCache cluster client for Java's `KetamaNodeLocator` (since 1.2.0): 160
    /// points per server from SHA-384 digests of `ip:port-i`, key hash SHA-384; no weights.
    AwsJavaKetama,
}

/// How a flavor picks a key's server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// The first point at or after the key hash on a continuum of points.
    Continuum,
    /// The key hash modulo the number of servers.
    Modulo,
    /// The server with the highest score for the key (pymemcache's rendezvous).
    Rendezvous,
}

/// Every flavor with its CLI name, then the accepted aliases.
pub const FLAVORS: &[(&str, Flavor)] = &[
    ("libmemcached", Flavor::Libmemcached),
    ("libmemcached-unweighted", Flavor::LibmemcachedUnweighted),
    ("libmemcached-spy", Flavor::LibmemcachedSpy),
    ("twemproxy", Flavor::Twemproxy),
    ("libketama", Flavor::Libketama),
    ("spymemcached", Flavor::Spymemcached),
    ("spymemcached-weighted", Flavor::SpymemcachedWeighted),
    ("uhashring", Flavor::Uhashring),
    ("node-hashring", Flavor::NodeHashring),
    ("dalli", Flavor::Dalli),
    ("hash-ring", Flavor::HashRing),
    ("go-ketama", Flavor::GoKetama),
    ("memshard-weighted", Flavor::MemshardWeighted),
    ("libmemcached-modula", Flavor::LibmemcachedModula),
    ("spymemcached-modula", Flavor::SpymemcachedModula),
    ("pymemcache", Flavor::Pymemcache),
    ("gomemcache", Flavor::Gomemcache),
    ("aws-java-ketama", Flavor::AwsJavaKetama),
];

/// Other names. `php-memcached` and `pylibmc` are those peers' **ketama mode**
/// (`OPT_LIBKETAMA_COMPATIBLE`, `ketama_weighted`), not their defaults (`libmemcached-modula`);
/// `memshard::peer::Peer` is a peer at its defaults.
const FLAVOR_ALIASES: &[(&str, Flavor)] = &[
    ("php-memcached", Flavor::Libmemcached),
    ("pylibmc", Flavor::Libmemcached),
    ("ketama-weighted", Flavor::Libmemcached),
    ("nutcracker", Flavor::Twemproxy),
    ("ketama", Flavor::Libketama),
    ("modula", Flavor::LibmemcachedModula),
    ("libmemcached-modulo", Flavor::LibmemcachedModula),
    ("spymemcached-modulo", Flavor::SpymemcachedModula),
    ("spymemcached-array-mod", Flavor::SpymemcachedModula),
    ("pymemcache-rendezvous", Flavor::Pymemcache),
    ("go-memcache", Flavor::Gomemcache),
    ("elasticache-java", Flavor::AwsJavaKetama),
];

/// The name given to `--flavor` was not one we know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown flavor {0:?}; known flavors: {list}", list = FLAVORS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))]
pub struct UnknownFlavor(pub String);

impl FromStr for Flavor {
    type Err = UnknownFlavor;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase().replace('_', "-");
        FLAVORS
            .iter()
            .chain(FLAVOR_ALIASES)
            .find(|(n, _)| *n == lower)
            .map(|(_, f)| *f)
            .ok_or_else(|| UnknownFlavor(s.to_string()))
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one point name becomes points on the continuum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PointScheme {
    /// The first `n` little-endian words of the name's md5 digest.
    Md5Words(usize),
    /// One point: the configured key hash of the name.
    KeyHash,
    /// One point: the first four bytes of the name's SHA-1, big-endian.
    Sha1BigEndian,
    /// The first `n` little-endian words of the name's SHA-384 digest.
    Sha384Words(usize),
}

/// Which of several equal points a lookup can land on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ties {
    /// The point inserted first wins: a stable sort followed by a lower-bound search
    /// (glibc `qsort` is a merge sort; V8 `Array.prototype.sort` is TimSort).
    FirstInserted,
    /// The point inserted last wins: a map keyed by point (Java `TreeMap.put`, Python dict).
    LastInserted,
}

/// Where a key hash lands among the sorted points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Search {
    /// First point ≥ hash, else the first point (libmemcached, twemproxy, libketama, Java
    /// `TreeMap.ceilingKey`).
    FirstAtOrAbove,
    /// First point > hash, else the first point (Python `bisect.bisect_right`).
    FirstAbove,
    /// Last point ≤ hash, else the last point (dalli `binary_search`).
    LastAtOrBelow,
    /// As `FirstAtOrAbove`, except that hash 0 lands on the last point: the unsigned underflow
    /// of `highp = midp - 1` in Perl's Algorithm::ConsistentHash::Ketama, kept on purpose by
    /// go-ketama's `search` for compatibility.
    FirstAtOrAboveZeroLast,
}

impl Flavor {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        FLAVORS
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// How this flavor picks a key's server.
    pub(crate) fn scheme(self) -> Scheme {
        match self {
            Flavor::LibmemcachedModula | Flavor::SpymemcachedModula | Flavor::Gomemcache => {
                Scheme::Modulo
            }
            Flavor::Pymemcache => Scheme::Rendezvous,
            _ => Scheme::Continuum,
        }
    }

    /// Whether the flavor places keys on a continuum (ketama): adding a server then moves only
    /// that server's share of the keys. False for modulo and rendezvous flavors.
    pub fn is_ketama(self) -> bool {
        self.scheme() == Scheme::Continuum
    }

    /// The key hash the peer uses unless its user picks another.
    pub fn default_hash(self) -> KeyHash {
        match self {
            Flavor::LibmemcachedUnweighted | Flavor::LibmemcachedModula => KeyHash::OneAtATime,
            Flavor::SpymemcachedModula => KeyHash::Native,
            Flavor::Pymemcache => KeyHash::Murmur3Seed0,
            // selector.go: crc32.ChecksumIEEE
            Flavor::Gomemcache => KeyHash::Crc32a,
            Flavor::AwsJavaKetama => KeyHash::Sha384,
            // twemproxy conf.h: CONF_DEFAULT_HASH HASH_FNV1A_64
            Flavor::Twemproxy => KeyHash::Fnv1a_64,
            Flavor::Dalli => KeyHash::Crc32a,
            _ => KeyHash::Md5,
        }
    }

    /// Whether the peer lets its users choose the key hash.
    pub fn hash_is_configurable(self) -> bool {
        matches!(
            self,
            Flavor::Libmemcached
                | Flavor::LibmemcachedUnweighted
                | Flavor::LibmemcachedSpy
                | Flavor::LibmemcachedModula
                | Flavor::Twemproxy
                | Flavor::SpymemcachedModula
        )
    }

    /// Whether the peer offers `hash` as a key hash: its default always; for the flavors
    /// whose peer has a hash option, the hashes that option names (libmemcached and twemproxy:
    /// the libhashkit family; spymemcached: `DefaultHashAlgorithm`'s).
    pub fn offers_hash(self, hash: KeyHash) -> bool {
        if hash == self.default_hash() {
            return true;
        }
        match self {
            Flavor::SpymemcachedModula => matches!(
                hash,
                KeyHash::Native
                    | KeyHash::Crc32
                    | KeyHash::Fnv1_64
                    | KeyHash::Fnv1a_64
                    | KeyHash::Fnv1_32
                    | KeyHash::Fnv1a_32
                    | KeyHash::Md5
            ),
            f if f.hash_is_configurable() => !matches!(
                hash,
                KeyHash::Native | KeyHash::Murmur3Seed0 | KeyHash::Sha384
            ),
            _ => false,
        }
    }

    /// Every key hash the peer's users can pick for this flavor, its default first: what a
    /// placement detector must try. libmemcached's flavors: the libhashkit hashes
    /// php-memcached's `OPT_HASH` and pylibmc's `hash` behavior offer (default one-at-a-time,
    /// md5, crc, fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh, murmur) and the libmemcached
    /// configuration string's `--HASH=` adds (jenkins, murmur3); twemproxy: its `hash:` names
    /// (`hashkit.h`); spymemcached's modulo: `DefaultHashAlgorithm`. The other peers have
    /// one hash.
    pub fn peer_hashes(self) -> &'static [KeyHash] {
        use KeyHash::*;
        const LIBHASHKIT: &[KeyHash] = &[
            OneAtATime, Md5, Crc32, Fnv1_64, Fnv1a_64, Fnv1_32, Fnv1a_32, Hsieh, Murmur, Jenkins,
            Murmur3,
        ];
        const LIBHASHKIT_MD5_FIRST: &[KeyHash] = &[
            Md5, OneAtATime, Crc32, Fnv1_64, Fnv1a_64, Fnv1_32, Fnv1a_32, Hsieh, Murmur, Jenkins,
            Murmur3,
        ];
        const TWEMPROXY: &[KeyHash] = &[
            Fnv1a_64, OneAtATime, Md5, Crc16, Crc32, Crc32a, Fnv1_64, Fnv1_32, Fnv1a_32, Hsieh,
            Murmur, Jenkins,
        ];
        const SPY_MODULA: &[KeyHash] = &[Native, Crc32, Fnv1_64, Fnv1a_64, Fnv1_32, Fnv1a_32, Md5];
        match self {
            Flavor::LibmemcachedUnweighted | Flavor::LibmemcachedModula => LIBHASHKIT,
            Flavor::Libmemcached | Flavor::LibmemcachedSpy => LIBHASHKIT_MD5_FIRST,
            Flavor::Twemproxy => TWEMPROXY,
            Flavor::SpymemcachedModula => SPY_MODULA,
            Flavor::Spymemcached | Flavor::SpymemcachedWeighted => &[Md5],
            Flavor::Libketama
            | Flavor::Uhashring
            | Flavor::NodeHashring
            | Flavor::HashRing
            | Flavor::GoKetama
            | Flavor::MemshardWeighted => &[Md5],
            Flavor::Dalli | Flavor::Gomemcache => &[Crc32a],
            Flavor::Pymemcache => &[Murmur3Seed0],
            Flavor::AwsJavaKetama => &[Sha384],
        }
    }

    pub(crate) fn ties(self) -> Ties {
        match self {
            Flavor::Spymemcached
            | Flavor::SpymemcachedWeighted
            | Flavor::AwsJavaKetama
            | Flavor::Uhashring
            | Flavor::HashRing
            | Flavor::Dalli => Ties::LastInserted,
            _ => Ties::FirstInserted,
        }
    }

    pub(crate) fn search(self) -> Search {
        match self {
            Flavor::Uhashring | Flavor::HashRing => Search::FirstAbove,
            Flavor::Dalli => Search::LastAtOrBelow,
            Flavor::GoKetama => Search::FirstAtOrAboveZeroLast,
            _ => Search::FirstAtOrAbove,
        }
    }

    /// Every point of every server, in the order the peer inserts them, as
    /// `(point, server index)`. `hash` is the key hash (used for points only by
    /// `libmemcached-unweighted`, as libmemcached does).
    pub(crate) fn points(self, servers: &[Server], hash: KeyHash) -> Vec<(u32, u32)> {
        use std::fmt::Write;
        let n = servers.len();
        let total: u64 = servers.iter().map(|s| s.weight as u64).sum();
        let (sep, scheme) = self.point_scheme();
        let mut out = Vec::new();
        let mut name = String::with_capacity(64);
        for idx in self.insertion_order(servers) {
            let s = &servers[idx];
            let idx = idx as u32;
            name.clear();
            name.push_str(&self.point_base(s));
            name.push(sep);
            let base_len = name.len();
            for k in 0..self.digests(s.weight, total, n) {
                name.truncate(base_len);
                // Writing to a String cannot fail.
                let _ = write!(name, "{k}");
                let bytes = name.as_bytes();
                match scheme {
                    PointScheme::Md5Words(words) => {
                        let w = hash::md5_words(bytes);
                        out.extend(w[..words].iter().map(|&p| (p, idx)));
                    }
                    PointScheme::KeyHash => out.push((hash.hash(bytes), idx)),
                    PointScheme::Sha1BigEndian => {
                        let d = sha1_digest(bytes);
                        out.push((u32::from_be_bytes([d[0], d[1], d[2], d[3]]), idx));
                    }
                    PointScheme::Sha384Words(words) => {
                        let d = hash::sha384_digest(bytes);
                        out.extend(
                            d.chunks_exact(4)
                                .take(words)
                                .map(|w| (u32::from_le_bytes([w[0], w[1], w[2], w[3]]), idx)),
                        );
                    }
                }
            }
        }
        out
    }

    /// How many point names (digests) a server gets: each peer's own arithmetic.
    pub fn digests(self, weight: u32, total_weight: u64, servers: usize) -> u64 {
        let (w, n) = (weight as u64, servers);
        match self {
            Flavor::Libmemcached
            | Flavor::LibmemcachedSpy
            | Flavor::Twemproxy
            | Flavor::SpymemcachedWeighted => libmemcached_digests(weight, total_weight, n),
            // hosts.cc: MEMCACHED_POINTS_PER_SERVER (100) names, weights ignored.
            Flavor::LibmemcachedUnweighted => 100,
            // KetamaNodeLocator: numReps (160) / 4 digests, weights ignored.
            Flavor::Spymemcached | Flavor::AwsJavaKetama => 40,
            Flavor::Libketama | Flavor::GoKetama => libketama_digests(w, total_weight, n),
            Flavor::Uhashring | Flavor::HashRing => exact_digests(w, total_weight, n),
            // hashring index.js: Math.floor(percentage * vnodes * servers.length), left to
            // right in doubles.
            Flavor::NodeHashring => {
                (w as f64 / total_weight as f64 * 40.0 * n as f64).floor() as u64
            }
            // dalli ring.rb: ((total_servers * 160 * weight) / Float(total_weight)).floor
            // (in u128: the product cannot overflow)
            Flavor::Dalli => {
                ((n as u128 * 160 * w as u128) as f64 / total_weight as f64).floor() as u64
            }
            // Own weight only: this is what makes the flavor monotone.
            Flavor::MemshardWeighted => 40 * w,
            // No continuum.
            Flavor::LibmemcachedModula
            | Flavor::SpymemcachedModula
            | Flavor::Pymemcache
            | Flavor::Gomemcache => 0,
        }
    }

    /// The first point name of server `s`, e.g. `10.0.1.1-0` (libmemcached, port 11211) or
    /// `10.0.1.1:11211:0` (dalli).
    /// Under the flavors without a continuum: the server's name in the peer (pymemcache's
    /// node name, which rendezvous scores hash), or its address under modulo, which names
    /// nothing.
    pub fn first_point_name(self, s: &Server) -> String {
        match self.scheme() {
            Scheme::Continuum => format!("{}{}0", self.point_base(s), self.point_scheme().0),
            Scheme::Modulo | Scheme::Rendezvous => self.point_base(s),
        }
    }

    /// The separator between server and index in a point name, and how a name becomes points.
    pub(crate) fn point_scheme(self) -> (char, PointScheme) {
        match self {
            Flavor::LibmemcachedUnweighted => ('-', PointScheme::KeyHash),
            // hash_ring.py uses only 3 of the 4 words of each digest.
            Flavor::HashRing => ('-', PointScheme::Md5Words(3)),
            Flavor::Dalli => (':', PointScheme::Sha1BigEndian),
            // KetamaNodeLocator (aws-elasticache-cluster-client-memcached-for-java 1.2.0+):
            // four points from the first 16 of SHA-384's 48 bytes.
            Flavor::AwsJavaKetama => ('-', PointScheme::Sha384Words(4)),
            _ => ('-', PointScheme::Md5Words(4)),
        }
    }

    /// The order in which the peer adds servers to its continuum, which decides ties.
    fn insertion_order(self, servers: &[Server]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if self == Flavor::MemshardWeighted {
            // Ties must not depend on where a server sits in the list (or adding one in the
            // middle would move keys between two others).
            order.sort_by(|&a, &b| servers[a].addr.cmp(&servers[b].addr));
        }
        if self == Flavor::Twemproxy {
            // nc_conf.c conf_validate_server sorts the pool's servers by name
            // (conf_server_name_cmp: shorter name first, then bytewise) to find duplicates, and
            // the pool is built from that sorted array. Checked against nutcracker 0.5.0.
            let names: Vec<String> = servers.iter().map(|s| self.point_base(s)).collect();
            order.sort_by(|&a, &b| {
                let (x, y) = (names[a].as_bytes(), names[b].as_bytes());
                x.len().cmp(&y.len()).then_with(|| x.cmp(y))
            });
        }
        order
    }

    /// The part of a point name that identifies the server.
    pub fn point_base(self, s: &Server) -> String {
        match self {
            // libmemcached hosts.cc and twemproxy nc_conf.c both leave out port 11211
            // "to maintain backward compatibility with libmemcached".
            Flavor::Libmemcached | Flavor::LibmemcachedUnweighted => host_port_unless_default(s),
            Flavor::Twemproxy => match &s.name {
                Some(n) => n.clone(),
                None => host_port_unless_default(s),
            },
            Flavor::LibmemcachedSpy => format!("/{}:{}", s.host, s.port),
            Flavor::Spymemcached | Flavor::SpymemcachedWeighted => super::spy_node::node_key(s),
            Flavor::AwsJavaKetama => super::spy_node::aws_node_key(s),
            Flavor::Uhashring => s.name.clone().unwrap_or_else(|| s.addr.clone()),
            // dalli: "#{hostname}:#{port}", brackets of IPv6 dropped, port 11211 kept.
            Flavor::Dalli => format!("{}:{}", s.host, s.port),
            // pymemcache `_make_client_key`: "%s:%s" % (host, port)
            Flavor::Pymemcache => format!("{}:{}", s.host, s.port),
            Flavor::Libketama
            | Flavor::GoKetama
            | Flavor::NodeHashring
            | Flavor::HashRing
            | Flavor::MemshardWeighted
            | Flavor::LibmemcachedModula
            | Flavor::SpymemcachedModula
            | Flavor::Gomemcache => s.addr.clone(),
        }
    }
}

fn host_port_unless_default(s: &Server) -> String {
    if s.port == DEFAULT_PORT {
        s.host.clone()
    } else {
        format!("{}:{}", s.host, s.port)
    }
}

fn sha1_digest(data: &[u8]) -> [u8; 20] {
    use sha1::{Digest, Sha1};
    Sha1::digest(data).into()
}

/// Digests (4 points each) per server in libmemcached `update_continuum` (hosts.cc), twemproxy
/// `ketama_update` (nc_ketama.c) and spymemcached's weighted `setKetamaNodes`:
///
/// ```c
/// float pct = (float)weight / (float)total_weight;
/// floorf((float)(pct * 160 / 4 * (float)live_servers + 0.0000000001))
/// ```
///
/// Every step is IEEE single precision except the `+ 1e-10`, done in double and rounded back.
pub fn libmemcached_digests(weight: u32, total_weight: u64, live_servers: usize) -> u64 {
    let pct = weight as f32 / total_weight as f32;
    let v = pct * 160.0f32 / 4.0f32 * live_servers as f32;
    let v = (v as f64 + 0.000_000_000_1) as f32;
    v.floor() as u64
}

/// Digests per server in libketama `ketama_create_continuum` (ketama.c):
/// `floorf(pct * 40.0 * (float)numservers)` with `pct = (float)memory / (float)total` — the
/// product is a double (40.0 is a double literal) rounded to float by `floorf`'s argument.
pub fn libketama_digests(weight: u64, total: u64, servers: usize) -> u64 {
    let pct = weight as f32 / total as f32;
    let v = pct as f64 * 40.0 * (servers as f32) as f64;
    (v as f32).floor() as u64
}

/// Digests per server with exact integer arithmetic: `(40 * n * weight) // total`
/// (uhashring `_hashi_weight_generator`, Python 2 hash_ring). A total weight of 0 gives 0
/// (no share of nothing), where the peers would divide by zero.
pub fn exact_digests(weight: u64, total: u64, servers: usize) -> u64 {
    let digests = 40 * servers as u128 * weight as u128;
    digests
        .checked_div(total as u128)
        .map_or(0, |d| u64::try_from(d).unwrap_or(u64::MAX))
}
