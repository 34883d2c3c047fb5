//! Peer profiles: which client the cache is shared with, and how that client is configured, in
//! one setting ([`Builder::peer`](crate::Builder::peer)).
//!
//! A [`Peer`] is that client **at its defaults**, as its users get it when they set nothing:
//! `Builder::peer(Peer::PhpMemcached)` is `new Memcached()` + `addServer()`, which places keys
//! by modula with one-at-a-time (not php-memcached's ketama mode, `OPT_LIBKETAMA_COMPATIBLE`).
//! [`PeerProfile::option`] then applies the peer's own options, spelled as the peer spells
//! them, in the order the peer's code would apply them.
//!
//! The defaults, each stated here and nowhere else (read from each peer's source; checked live
//! by the peers' own drivers):
//!
//! | peer | flavor | key hash | codec (with the `codecs` feature) | compression | key prefix |
//! |---|---|---|---|---|---|
//! | `php-memcached` | `libmemcached-modula` | one-at-a-time | `php-memcached`: `serialize()` | FastLZ from 2000 bytes, factor 1.3 | none |
//! | `pylibmc` | `libmemcached-modula` | one-at-a-time | `pylibmc` | none (`min_compress_len=0`) | none |
//! | `spymemcached` | `spymemcached-modula` (`DefaultConnectionFactory`) | `NATIVE_HASH` | `spymemcached` | gzip above 16384 bytes | none |
//! | `dalli` | `dalli` | crc32 | `dalli`: Marshal | zlib from 4096 bytes | none |
//! | `pymemcache` | `pymemcache` (`HashClient`) | murmur3, seed 0 | `raw` (no serde: bytes and text) | none | none |
//! | `gomemcache` | `gomemcache` | crc32 (IEEE) | `raw` (`Item.Value` bytes) | none | none |
//! | `node-memcached` | `node-hashring` | md5 | `node-memcached` | none | none |
//! | `aws-php` | `libmemcached-modula` | one-at-a-time | `php-memcached` | FastLZ from 2000 bytes, factor 1.3 | none |
//! | `aws-java` | `spymemcached-modula` (`DefaultConnectionFactory`) | `NATIVE_HASH` | `spymemcached` | gzip above 16384 bytes | none |
//!
//! ```
//! use memshard::peer::{Peer, PeerProfile};
//! use memshard::{Flavor, KeyHash};
//!
//! let php = PeerProfile::from(Peer::PhpMemcached);
//! assert_eq!((php.flavor(), php.hash()), (Flavor::LibmemcachedModula, KeyHash::OneAtATime));
//! // The ketama mode is an option of the peer, spelled as the peer spells it.
//! let ketama = php.option("OPT_LIBKETAMA_COMPATIBLE", "true")?;
//! assert_eq!((ketama.flavor(), ketama.hash()), (Flavor::Libmemcached, KeyHash::Md5));
//! # Ok::<(), memshard::peer::PeerError>(())
//! ```
//!
//! Options each peer takes ([`Peer::options`] lists them):
//!
//! | peer | options that change placement or values |
//! |---|---|
//! | php-memcached, aws-php | `OPT_LIBKETAMA_COMPATIBLE` (`true`/`false`), `OPT_DISTRIBUTION` (`DISTRIBUTION_MODULA`, `DISTRIBUTION_CONSISTENT`), `OPT_HASH` (`HASH_DEFAULT`, `HASH_MD5`, `HASH_CRC`, `HASH_FNV1_64`, `HASH_FNV1A_64`, `HASH_FNV1_32`, `HASH_FNV1A_32`, `HASH_HSIEH`, `HASH_MURMUR`), `OPT_PREFIX_KEY`, `OPT_SERIALIZER` (`SERIALIZER_PHP`, `SERIALIZER_JSON`, `SERIALIZER_JSON_ARRAY`), `OPT_COMPRESSION`, `OPT_COMPRESSION_TYPE` (`COMPRESSION_FASTLZ`, `COMPRESSION_ZLIB`), `OPT_USER_FLAGS`, INI `memcached.compression_threshold`, `memcached.compression_factor` |
//! | pylibmc | behaviors `ketama`, `ketama_weighted`, `distribution` (`modula`, `consistent`), `hash` (`default`, `md5`, `crc`, `fnv1_64`, `fnv1a_64`, `fnv1_32`, `fnv1a_32`, `hsieh`, `murmur`); `set()`'s `min_compress_len`, `compress_level` |
//! | spymemcached, aws-java | `ConnectionFactory` (`DefaultConnectionFactory`, `KetamaConnectionFactory`), `HashAlgorithm` (`NATIVE_HASH`, `CRC_HASH`, `FNV1_64_HASH`, `FNV1A_64_HASH`, `FNV1_32_HASH`, `FNV1A_32_HASH`, `KETAMA_HASH`), `compressionThreshold` |
//! | dalli | `namespace`, `serializer` (`Marshal`, `JSON`), `compress`, `compressor` (`Dalli::Compressor`, `Dalli::GzipCompressor`), `compression_min_size`, `raw` |
//! | pymemcache | `key_prefix` |
//! | gomemcache | none |
//! | node-memcached | `namespace`, `algorithm` (`md5` only), `compatibility` (`ketama` only) |
//!
//! **Options that change neither placement nor values** (timeouts, the binary protocol, TCP
//! settings, pool sizes...) are accepted and change nothing, so a configuration can be copied
//! as it is; the accepted names are listed per peer in [`Peer::options`]. Anything else, and a
//! value the peer does not have or memshard cannot follow (libmemcached's virtual buckets, the
//! igbinary serializer), is a [`PeerError`] naming the valid ones. Without the `codecs`
//! feature the value options are checked the same way and have no codec to change.
//!
//! Notes on the peers' own behaviour:
//! - libmemcached (php-memcached, pylibmc, aws-php): `OPT_LIBKETAMA_COMPATIBLE` and pylibmc's
//!   `ketama_weighted` set md5 (`MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED`); a later `OPT_HASH` /
//!   `hash` changes the key hash only. `DISTRIBUTION_CONSISTENT` and pylibmc's `ketama` are
//!   libmemcached's unweighted ring (`libmemcached-unweighted`); libmemcached switches to the
//!   weighted ring when a server of weight above 1 is added afterwards, which a profile cannot
//!   see: use `OPT_LIBKETAMA_COMPATIBLE` for weighted servers. Setting
//!   `OPT_LIBKETAMA_COMPATIBLE=false` goes back to modula (`php_memcached.c`,
//!   `MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED` case).
//! - `OPT_PREFIX_KEY` is not hashed (libmemcached hashes the namespace only with
//!   `HASH_WITH_PREFIX_KEY`), nor is pymemcache's `key_prefix` (`HashClient._get_client` hashes
//!   the key as given); dalli's `namespace` (`key_manager.rb`, `namespace:key`) and node
//!   memcached's (`memcached.js`, `namespace + key`) are part of the key the ring hashes.
//! - node memcached names a server on port 11211 by its host alone (hashring's `default port`
//!   under `compatibility: 'ketama'`); the `node-hashring` flavor names every server
//!   `host:port`, so placement matches on other ports only.

use crate::hash::KeyHash;
use crate::ring::{Flavor, HashTag};
use std::fmt;
use std::str::FromStr;

/// A client the cache is shared with, at its defaults. See the [module](self) table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Peer {
    /// PHP `Memcached` (php-memcached 3.x over libmemcached).
    PhpMemcached,
    /// Python pylibmc (over libmemcached).
    Pylibmc,
    /// Java spymemcached.
    Spymemcached,
    /// Ruby dalli.
    Dalli,
    /// Python pymemcache's `HashClient`.
    Pymemcache,
    /// Go `github.com/bradfitz/gomemcache`.
    Gomemcache,
    /// npm `memcached` (3rd-Eden).
    NodeMemcached,
    /// The AWS ElastiCache cluster client for PHP (a php-memcached fork).
    AwsPhp,
    /// The AWS ElastiCache cluster client for Java (a spymemcached fork).
    AwsJava,
}

/// What a peer is at its defaults: one row per peer, the single statement of each default.
struct Defaults {
    peer: Peer,
    name: &'static str,
    flavor: Flavor,
    #[cfg(feature = "codecs")]
    codec: crate::value::Codec,
}

macro_rules! defaults {
    ($($peer:ident, $name:literal, $flavor:ident, $codec:ident;)*) => {
        const DEFAULTS: &[Defaults] = &[$(Defaults {
            peer: Peer::$peer,
            name: $name,
            flavor: Flavor::$flavor,
            #[cfg(feature = "codecs")]
            codec: crate::value::Codec::$codec,
        }),*];
    };
}

// Key hashes are each flavor's `default_hash`, compression settings each codec's defaults
// (`value::PhpOptions` and the others, which cite the peers' sources).
defaults! {
    PhpMemcached, "php-memcached", LibmemcachedModula, PhpMemcached;
    Pylibmc, "pylibmc", LibmemcachedModula, Pylibmc;
    Spymemcached, "spymemcached", SpymemcachedModula, Spymemcached;
    Dalli, "dalli", Dalli, Dalli;
    Pymemcache, "pymemcache", Pymemcache, Raw;
    Gomemcache, "gomemcache", Gomemcache, Raw;
    NodeMemcached, "node-memcached", NodeHashring, NodeMemcached;
    AwsPhp, "aws-php", LibmemcachedModula, PhpMemcached;
    AwsJava, "aws-java", SpymemcachedModula, Spymemcached;
}

/// The placement- and value-neutral options each family accepts and ignores.
const PHP_NEUTRAL: &[&str] = &[
    "OPT_BINARY_PROTOCOL",
    "OPT_CONNECT_TIMEOUT",
    "OPT_RECV_TIMEOUT",
    "OPT_SEND_TIMEOUT",
    "OPT_POLL_TIMEOUT",
    "OPT_RETRY_TIMEOUT",
    "OPT_TCP_NODELAY",
    "OPT_NO_BLOCK",
    "OPT_BUFFER_WRITES",
    "OPT_TCP_KEEPALIVE",
    "OPT_SOCKET_SEND_SIZE",
    "OPT_SOCKET_RECV_SIZE",
    "OPT_CLIENT_MODE",
];
const PHP_OPTIONS: &[&str] = &[
    "OPT_LIBKETAMA_COMPATIBLE",
    "OPT_DISTRIBUTION",
    "OPT_HASH",
    "OPT_PREFIX_KEY",
    "OPT_SERIALIZER",
    "OPT_COMPRESSION",
    "OPT_COMPRESSION_TYPE",
    "OPT_USER_FLAGS",
    "memcached.compression_threshold",
    "memcached.compression_factor",
];
const PYLIBMC_NEUTRAL: &[&str] = &[
    "binary",
    "tcp_nodelay",
    "tcp_keepalive",
    "no_block",
    "cas",
    "buffer_requests",
    "connect_timeout",
    "receive_timeout",
    "send_timeout",
    "retry_timeout",
    "dead_timeout",
    "verify_keys",
];
const PYLIBMC_OPTIONS: &[&str] = &[
    "ketama",
    "ketama_weighted",
    "distribution",
    "hash",
    "min_compress_len",
    "compress_level",
];
const SPY_NEUTRAL: &[&str] = &["OperationTimeout", "Protocol", "Daemon", "ClientMode"];
const SPY_OPTIONS: &[&str] = &["ConnectionFactory", "HashAlgorithm", "compressionThreshold"];
const DALLI_NEUTRAL: &[&str] = &[
    "socket_timeout",
    "failover",
    "expires_in",
    "protocol",
    "socket_max_failures",
    "socket_failure_delay",
    "down_retry_delay",
    "keepalive",
    "value_max_bytes",
];
const DALLI_OPTIONS: &[&str] = &[
    "namespace",
    "serializer",
    "compress",
    "compressor",
    "compression_min_size",
    "raw",
];
const PYMEMCACHE_NEUTRAL: &[&str] = &[
    "connect_timeout",
    "timeout",
    "no_delay",
    "ignore_exc",
    "retry_attempts",
    "retry_timeout",
    "dead_timeout",
    "use_pooling",
    "max_pool_size",
    "allow_unicode_keys",
];
const PYMEMCACHE_OPTIONS: &[&str] = &["key_prefix"];
const GO_NEUTRAL: &[&str] = &["Timeout", "MaxIdleConns"];
const NODE_NEUTRAL: &[&str] = &[
    "timeout",
    "retries",
    "retry",
    "remove",
    "failures",
    "reconnect",
    "idle",
    "poolSize",
];
const NODE_OPTIONS: &[&str] = &["namespace", "algorithm", "compatibility"];

impl Peer {
    /// Every peer, in the order of the [module](self) table.
    pub const ALL: [Peer; 9] = [
        Peer::PhpMemcached,
        Peer::Pylibmc,
        Peer::Spymemcached,
        Peer::Dalli,
        Peer::Pymemcache,
        Peer::Gomemcache,
        Peer::NodeMemcached,
        Peer::AwsPhp,
        Peer::AwsJava,
    ];

    fn row(self) -> &'static Defaults {
        // DEFAULTS has one row per variant, pinned by a test; the fallback is never taken.
        DEFAULTS
            .iter()
            .find(|d| d.peer == self)
            .unwrap_or(&DEFAULTS[0])
    }

    /// The peer's name: `php-memcached`, `pylibmc`, `spymemcached`, `dalli`, `pymemcache`,
    /// `gomemcache`, `node-memcached`, `aws-php`, `aws-java`.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The flavor that places keys as the peer does at its defaults.
    pub fn default_flavor(self) -> Flavor {
        self.row().flavor
    }

    /// The codec of the peer's values at its defaults.
    #[cfg(feature = "codecs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
    pub fn default_codec(self) -> crate::value::Codec {
        self.row().codec
    }

    /// The options [`PeerProfile::option`] takes for this peer: first those that change
    /// placement or values, then those accepted as changing neither.
    pub fn options(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Peer::PhpMemcached | Peer::AwsPhp => (PHP_OPTIONS, PHP_NEUTRAL),
            Peer::Pylibmc => (PYLIBMC_OPTIONS, PYLIBMC_NEUTRAL),
            Peer::Spymemcached | Peer::AwsJava => (SPY_OPTIONS, SPY_NEUTRAL),
            Peer::Dalli => (DALLI_OPTIONS, DALLI_NEUTRAL),
            Peer::Pymemcache => (PYMEMCACHE_OPTIONS, PYMEMCACHE_NEUTRAL),
            Peer::Gomemcache => (&[], GO_NEUTRAL),
            Peer::NodeMemcached => (NODE_OPTIONS, NODE_NEUTRAL),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Peer {
    type Err = PeerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Peer::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| PeerError::UnknownPeer(s.to_owned()))
    }
}

/// A peer name, option or option value that a profile cannot follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// Not one of [`Peer::ALL`]'s names.
    #[error(
        "unknown peer {0:?}; known peers: php-memcached, pylibmc, spymemcached, dalli, \
         pymemcache, gomemcache, node-memcached, aws-php, aws-java"
    )]
    UnknownPeer(String),
    /// An option the peer does not have, or one that changes placement in a way memshard
    /// does not follow.
    #[error("{peer} has no option {option:?} memshard follows; its options: {valid}")]
    UnknownOption {
        /// The peer.
        peer: String,
        /// The option given.
        option: String,
        /// The options that change placement or values, comma-separated.
        valid: String,
    },
    /// A value the option does not take.
    #[error("{peer} option {option}: {value:?} is not one memshard follows; give {valid}")]
    BadValue {
        /// The peer.
        peer: String,
        /// The option.
        option: String,
        /// The value given.
        value: String,
        /// The values it takes.
        valid: String,
    },
}

/// Where the profile came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Peer(Peer),
    #[cfg(feature = "peer-config")]
    Twemproxy,
}

/// A peer with its settings: flavor, key hash, hash tag, key prefix and (feature `codecs`) the
/// codec with its compression settings. Made from a [`Peer`] (its defaults) and changed by
/// [`PeerProfile::option`]; applied by [`Builder::peer`](crate::Builder::peer).
#[derive(Clone, Debug, PartialEq)]
pub struct PeerProfile {
    source: Source,
    flavor: Flavor,
    hash: KeyHash,
    tag: Option<HashTag>,
    prefix: Vec<u8>,
    hash_with_prefix: bool,
    #[cfg(feature = "codecs")]
    transcoder: crate::value::Transcoder,
}

impl From<Peer> for PeerProfile {
    fn from(peer: Peer) -> Self {
        let flavor = peer.default_flavor();
        PeerProfile {
            source: Source::Peer(peer),
            flavor,
            hash: flavor.default_hash(),
            tag: None,
            prefix: Vec::new(),
            hash_with_prefix: false,
            #[cfg(feature = "codecs")]
            transcoder: crate::value::Transcoder::new(peer.default_codec()),
        }
    }
}

/// twemproxy through its `nutcracker.yml` ([`crate::config::twemproxy`]): its flavor, key hash,
/// `hash_tag`; values pass through twemproxy untouched, so the codec is
/// [`Codec::Raw`](crate::value::Codec::Raw). The servers stay in the configuration (use
/// [`Builder::peer_config`](crate::Builder::peer_config) for them).
#[cfg(feature = "peer-config")]
#[cfg_attr(docsrs, doc(cfg(feature = "peer-config")))]
impl From<&crate::config::PeerConfig> for PeerProfile {
    fn from(cfg: &crate::config::PeerConfig) -> Self {
        PeerProfile {
            source: Source::Twemproxy,
            flavor: cfg.flavor,
            hash: cfg.hash,
            tag: cfg.hash_tag,
            prefix: cfg.prefix.clone().unwrap_or_default().into_bytes(),
            hash_with_prefix: cfg.hash_with_prefix,
            #[cfg(feature = "codecs")]
            transcoder: crate::value::Transcoder::new(crate::value::Codec::Raw),
        }
    }
}

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => Some(true),
        "false" | "0" | "off" | "no" => Some(false),
        _ => None,
    }
}

impl PeerProfile {
    /// The peer, or `None` for a twemproxy configuration.
    pub fn peer(&self) -> Option<Peer> {
        match self.source {
            Source::Peer(p) => Some(p),
            #[cfg(feature = "peer-config")]
            Source::Twemproxy => None,
        }
    }

    /// The peer's name (`twemproxy` for a twemproxy configuration).
    pub fn name(&self) -> &'static str {
        match self.source {
            Source::Peer(p) => p.name(),
            #[cfg(feature = "peer-config")]
            Source::Twemproxy => "twemproxy",
        }
    }

    /// The flavor.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The flavor for `servers`: [`PeerProfile::flavor`], except where the peer runs
    /// libmemcached with its consistent distribution (pylibmc `ketama` or `distribution`
    /// `consistent`, php-memcached `OPT_DISTRIBUTION` `DISTRIBUTION_CONSISTENT`): a server
    /// given a weight above 1 turns libmemcached's weighted ketama on
    /// (`memcached_server_add_with_weight`), so the flavor is then
    /// [`Flavor::Libmemcached`], with the same key hash.
    ///
    /// ```
    /// use memshard::{Flavor, parse_server_list};
    /// use memshard::peer::{Peer, PeerProfile};
    /// let ketama = PeerProfile::from(Peer::Pylibmc).option("ketama", "true")?;
    /// let even = parse_server_list("127.0.0.1:11211\n127.0.0.1:11212")?;
    /// let weighted = parse_server_list("127.0.0.1:11211 3\n127.0.0.1:11212 1")?;
    /// assert_eq!(ketama.flavor_for(&even), Flavor::LibmemcachedUnweighted);
    /// assert_eq!(ketama.flavor_for(&weighted), Flavor::Libmemcached);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flavor_for(&self, servers: &[crate::Server]) -> Flavor {
        crate::settings::weighted_if_weights(
            self.flavor,
            self.weights_turn_ketama_weighted(),
            servers,
        )
    }

    /// Whether the peer runs libmemcached, whose consistent distribution turns weighted with
    /// a weight above 1 (see [`PeerProfile::flavor_for`]).
    fn weights_turn_ketama_weighted(&self) -> bool {
        matches!(
            self.source,
            Source::Peer(Peer::PhpMemcached | Peer::Pylibmc | Peer::AwsPhp)
        )
    }

    /// The key hash.
    pub fn hash(&self) -> KeyHash {
        self.hash
    }

    /// The hash tag the peer applies (twemproxy `hash_tag`), if any.
    pub fn hash_tag(&self) -> Option<HashTag> {
        self.tag
    }

    /// The key prefix (`OPT_PREFIX_KEY`, dalli's and node's `namespace`, pymemcache's
    /// `key_prefix`), empty for none.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// Whether placement hashes the prefix with the key.
    pub fn hash_with_prefix(&self) -> bool {
        self.hash_with_prefix
    }

    /// The codec and its write settings.
    #[cfg(feature = "codecs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
    pub fn transcoder(&self) -> &crate::value::Transcoder {
        &self.transcoder
    }

    /// Applies each `(option, value)` in order: see [`PeerProfile::option`].
    pub fn options<K, V>(self, options: impl IntoIterator<Item = (K, V)>) -> Result<Self, PeerError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        options
            .into_iter()
            .try_fold(self, |p, (k, v)| p.option(k.as_ref(), v.as_ref()))
    }

    /// The profile with the peer's option `option` set to `value`, both spelled as the peer
    /// spells them (see the [module](self) tables). An option that changes neither placement
    /// nor values is accepted and changes nothing.
    ///
    /// ```
    /// use memshard::peer::{Peer, PeerProfile};
    ///
    /// let dalli = PeerProfile::from(Peer::Dalli).option("namespace", "app")?;
    /// assert_eq!(dalli.prefix(), b"app:");
    /// let err = PeerProfile::from(Peer::Pylibmc).option("ketama", "maybe").unwrap_err();
    /// assert!(err.to_string().contains("true"), "{err}");
    /// # Ok::<(), memshard::peer::PeerError>(())
    /// ```
    pub fn option(mut self, option: &str, value: &str) -> Result<Self, PeerError> {
        // a twemproxy configuration has no options of its own here
        let Some(peer) = self.peer() else {
            return Err(self.unknown_option(option, &[]));
        };
        let (placing, neutral) = peer.options();
        if neutral.contains(&option) {
            return Ok(self);
        }
        if !placing.contains(&option) {
            return Err(self.unknown_option(option, placing));
        }
        let bad = |valid: &str| PeerError::BadValue {
            peer: peer.name().to_owned(),
            option: option.to_owned(),
            value: value.to_owned(),
            valid: valid.to_owned(),
        };
        let flag = || boolean(value).ok_or_else(|| bad("true or false"));
        let number = || value.parse::<usize>().map_err(|_| bad("a whole number"));
        match (peer, option) {
            (Peer::PhpMemcached | Peer::AwsPhp, _) => self.php(option, value, &bad)?,
            (Peer::Pylibmc, "ketama") => {
                if flag()? {
                    self.flavor = Flavor::LibmemcachedUnweighted;
                }
            }
            (Peer::Pylibmc, "ketama_weighted") => {
                if flag()? {
                    self.flavor = Flavor::Libmemcached;
                    self.hash = KeyHash::Md5;
                }
            }
            (Peer::Pylibmc, "distribution") => {
                self.flavor = match value {
                    "modula" => Flavor::LibmemcachedModula,
                    "consistent" => Flavor::LibmemcachedUnweighted,
                    _ => return Err(bad("modula or consistent")),
                }
            }
            (Peer::Pylibmc, "hash") => {
                self.hash = libmemcached_hash(value).ok_or_else(|| {
                    bad("default, md5, crc, fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh or murmur")
                })?
            }
            (Peer::Pylibmc, "min_compress_len") => {
                let n = number()?;
                #[cfg(feature = "codecs")]
                self.pylibmc(|o| o.min_compress_len = n);
                let _ = n;
            }
            (Peer::Pylibmc, "compress_level") => {
                let n = value
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n <= 9)
                    .ok_or_else(|| bad("0 to 9"))?;
                #[cfg(feature = "codecs")]
                self.pylibmc(|o| o.compress_level = n);
                let _ = n;
            }
            (Peer::Spymemcached | Peer::AwsJava, "ConnectionFactory") => {
                self.flavor = match (value, peer) {
                    ("DefaultConnectionFactory", _) => Flavor::SpymemcachedModula,
                    ("KetamaConnectionFactory", Peer::AwsJava) => Flavor::AwsJavaKetama,
                    ("KetamaConnectionFactory", _) => Flavor::Spymemcached,
                    _ => return Err(bad("DefaultConnectionFactory or KetamaConnectionFactory")),
                };
                self.hash = self.flavor.default_hash();
            }
            (Peer::Spymemcached | Peer::AwsJava, "HashAlgorithm") => {
                let valid = "NATIVE_HASH, CRC_HASH, FNV1_64_HASH, FNV1A_64_HASH, FNV1_32_HASH, \
                             FNV1A_32_HASH or KETAMA_HASH";
                let hash = match value {
                    "NATIVE_HASH" | "CRC_HASH" | "FNV1_64_HASH" | "FNV1A_64_HASH"
                    | "FNV1_32_HASH" | "FNV1A_32_HASH" | "KETAMA_HASH" => value
                        .to_ascii_lowercase()
                        .parse::<KeyHash>()
                        .map_err(|_| bad(valid))?,
                    _ => return Err(bad(valid)),
                };
                // KetamaConnectionFactory fixes its hash (KETAMA_HASH; AWS: SHA-384).
                if !self.flavor.offers_hash(hash) {
                    return Err(bad(&format!(
                        "{} (the only hash of {})",
                        self.flavor.default_hash(),
                        self.flavor
                    )));
                }
                self.hash = hash;
            }
            (Peer::Spymemcached | Peer::AwsJava, _) => {
                let n = number()?;
                #[cfg(feature = "codecs")]
                {
                    let mut o = self.transcoder.spymemcached_options().clone();
                    o.compression_threshold = n;
                    self.transcoder = self.transcoder.clone().with_spymemcached(o);
                }
                let _ = n;
            }
            (Peer::Dalli, "namespace") => {
                // key_manager.rb: "#{namespace}:#{key}", hashed by the ring as a whole.
                self.prefix = format!("{value}:").into_bytes();
                self.hash_with_prefix = true;
            }
            (Peer::Dalli, _) => self.dalli(option, value, &bad)?,
            (Peer::Pymemcache, _) => {
                self.prefix = value.as_bytes().to_vec();
                self.hash_with_prefix = false;
            }
            (Peer::NodeMemcached, "namespace") => {
                self.prefix = value.as_bytes().to_vec();
                self.hash_with_prefix = true;
            }
            (Peer::NodeMemcached, "algorithm") if value != "md5" => return Err(bad("md5")),
            (Peer::NodeMemcached, "compatibility") if value != "ketama" => {
                return Err(bad("ketama"));
            }
            (Peer::NodeMemcached, _) => {}
            (_, _) => return Err(self.unknown_option(option, placing)),
        }
        Ok(self)
    }

    fn unknown_option(&self, option: &str, placing: &[&str]) -> PeerError {
        PeerError::UnknownOption {
            peer: self.name().to_owned(),
            option: option.to_owned(),
            valid: if placing.is_empty() {
                "none".to_owned()
            } else {
                placing.join(", ")
            },
        }
    }

    fn php(
        &mut self,
        option: &str,
        value: &str,
        bad: &dyn Fn(&str) -> PeerError,
    ) -> Result<(), PeerError> {
        let flag = || boolean(value).ok_or_else(|| bad("true or false"));
        match option {
            "OPT_LIBKETAMA_COMPATIBLE" => {
                // php_memcached.c, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED: true is weighted ketama
                // with md5; false puts the distribution back to modula.
                if flag()? {
                    self.flavor = Flavor::Libmemcached;
                    self.hash = KeyHash::Md5;
                } else {
                    self.flavor = Flavor::LibmemcachedModula;
                }
            }
            "OPT_DISTRIBUTION" => {
                self.flavor = match value {
                    "DISTRIBUTION_MODULA" => Flavor::LibmemcachedModula,
                    "DISTRIBUTION_CONSISTENT" => Flavor::LibmemcachedUnweighted,
                    _ => return Err(bad("DISTRIBUTION_MODULA or DISTRIBUTION_CONSISTENT")),
                }
            }
            "OPT_HASH" => {
                self.hash = value
                    .strip_prefix("HASH_")
                    .and_then(|h| libmemcached_hash(&h.to_ascii_lowercase()))
                    .ok_or_else(|| {
                        bad(
                            "HASH_DEFAULT, HASH_MD5, HASH_CRC, HASH_FNV1_64, HASH_FNV1A_64, \
                             HASH_FNV1_32, HASH_FNV1A_32, HASH_HSIEH or HASH_MURMUR",
                        )
                    })?
            }
            // OPT_PREFIX_KEY is libmemcached's namespace, not hashed by default.
            "OPT_PREFIX_KEY" => {
                self.prefix = value.as_bytes().to_vec();
                self.hash_with_prefix = false;
            }
            _ => self.php_value(option, value, bad)?,
        }
        Ok(())
    }

    #[cfg(feature = "codecs")]
    fn pylibmc(&mut self, f: impl FnOnce(&mut crate::value::PylibmcOptions)) {
        let mut o = self.transcoder.pylibmc_options().clone();
        f(&mut o);
        self.transcoder = self.transcoder.clone().with_pylibmc(o);
    }

    /// php-memcached's value options, checked with or without the `codecs` feature.
    fn php_value(
        &mut self,
        option: &str,
        value: &str,
        bad: &dyn Fn(&str) -> PeerError,
    ) -> Result<(), PeerError> {
        #[cfg(feature = "codecs")]
        use crate::value::{PhpCompression, PhpSerializer};
        #[cfg(feature = "codecs")]
        let mut o = self.transcoder.php_options().clone();
        let flag = || boolean(value).ok_or_else(|| bad("true or false"));
        match option {
            "OPT_SERIALIZER" => {
                let s = match value {
                    "SERIALIZER_PHP" => 0,
                    "SERIALIZER_JSON" => 1,
                    "SERIALIZER_JSON_ARRAY" => 2,
                    _ => {
                        return Err(bad(
                            "SERIALIZER_PHP, SERIALIZER_JSON or SERIALIZER_JSON_ARRAY (igbinary \
                             and msgpack are read, not written)",
                        ));
                    }
                };
                #[cfg(feature = "codecs")]
                {
                    o.serializer = [
                        PhpSerializer::Php,
                        PhpSerializer::Json,
                        PhpSerializer::JsonArray,
                    ][s];
                }
                let _ = s;
            }
            "OPT_COMPRESSION" => {
                let on = flag()?;
                #[cfg(feature = "codecs")]
                {
                    o.compression = on;
                }
                let _ = on;
            }
            "OPT_COMPRESSION_TYPE" => {
                let zlib = match value {
                    "COMPRESSION_FASTLZ" => false,
                    "COMPRESSION_ZLIB" => true,
                    _ => return Err(bad("COMPRESSION_FASTLZ or COMPRESSION_ZLIB")),
                };
                #[cfg(feature = "codecs")]
                {
                    o.compression_type = if zlib {
                        PhpCompression::Zlib
                    } else {
                        PhpCompression::FastLz
                    };
                }
                let _ = zlib;
            }
            "OPT_USER_FLAGS" => {
                let n = value.parse::<u16>().map_err(|_| bad("0 to 65535"))?;
                #[cfg(feature = "codecs")]
                {
                    o.user_flags = n;
                }
                let _ = n;
            }
            "memcached.compression_threshold" => {
                let n = value.parse::<usize>().map_err(|_| bad("a whole number"))?;
                #[cfg(feature = "codecs")]
                {
                    o.compression_threshold = n;
                }
                let _ = n;
            }
            _ => {
                let f = value
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| bad("a number of at least 0, like 1.3"))?;
                #[cfg(feature = "codecs")]
                {
                    o.compression_factor = f;
                }
                let _ = f;
            }
        }
        #[cfg(feature = "codecs")]
        {
            self.transcoder = self.transcoder.clone().with_php(o);
        }
        Ok(())
    }

    /// dalli's value options (`value_serializer.rb`, `value_compressor.rb`).
    fn dalli(
        &mut self,
        option: &str,
        value: &str,
        bad: &dyn Fn(&str) -> PeerError,
    ) -> Result<(), PeerError> {
        #[cfg(feature = "codecs")]
        use crate::value::{DalliCompressor, DalliSerializer};
        #[cfg(feature = "codecs")]
        let mut o = self.transcoder.dalli_options().clone();
        let flag = || boolean(value).ok_or_else(|| bad("true or false"));
        match option {
            "serializer" => {
                let json = match value {
                    "Marshal" => false,
                    "JSON" => true,
                    _ => return Err(bad("Marshal or JSON")),
                };
                #[cfg(feature = "codecs")]
                {
                    o.serializer = if json {
                        DalliSerializer::Json
                    } else {
                        DalliSerializer::Marshal
                    };
                }
                let _ = json;
            }
            "compressor" => {
                let gzip = match value {
                    "Dalli::Compressor" => false,
                    "Dalli::GzipCompressor" => true,
                    _ => return Err(bad("Dalli::Compressor or Dalli::GzipCompressor")),
                };
                #[cfg(feature = "codecs")]
                {
                    o.compressor = if gzip {
                        DalliCompressor::Gzip
                    } else {
                        DalliCompressor::Zlib
                    };
                }
                let _ = gzip;
            }
            "compression_min_size" => {
                let n = value.parse::<usize>().map_err(|_| bad("a whole number"))?;
                #[cfg(feature = "codecs")]
                {
                    o.compression_min_size = n;
                }
                let _ = n;
            }
            "compress" => {
                let on = flag()?;
                #[cfg(feature = "codecs")]
                {
                    o.compress = on;
                }
                let _ = on;
            }
            _ => {
                let raw = flag()?;
                #[cfg(feature = "codecs")]
                {
                    o.raw = raw;
                }
                let _ = raw;
            }
        }
        #[cfg(feature = "codecs")]
        {
            self.transcoder = self.transcoder.clone().with_dalli(o);
        }
        Ok(())
    }
}

/// libmemcached's hash names (`MEMCACHED_HASH_*`, pylibmc's `hash` behavior), lower case.
fn libmemcached_hash(name: &str) -> Option<KeyHash> {
    Some(match name {
        "default" => KeyHash::OneAtATime,
        "md5" => KeyHash::Md5,
        "crc" => KeyHash::Crc32,
        "fnv1_64" => KeyHash::Fnv1_64,
        "fnv1a_64" => KeyHash::Fnv1a_64,
        "fnv1_32" => KeyHash::Fnv1_32,
        "fnv1a_32" => KeyHash::Fnv1a_32,
        "hsieh" => KeyHash::Hsieh,
        "murmur" => KeyHash::Murmur,
        _ => return None,
    })
}

/// A peer profile applied to a client's settings. Defined here, beside the profiles, so the
/// settings know nothing of peers.
impl<C> crate::Builder<C> {
    /// Everything a peer profile says: flavor, key hash, hash tag, key prefix (and whether it
    /// is hashed) and (feature `codecs`) the codec with the peer's settings. A [`Peer`] is
    /// that peer at its defaults. Setters called afterwards override single settings. A peer
    /// on libmemcached's consistent distribution places with weighted ketama once a server
    /// has a weight above 1, as libmemcached does ([`PeerProfile::flavor_for`]); the servers
    /// decide that at `build`.
    ///
    /// ```
    /// use memshard::peer::Peer;
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .peer(Peer::PhpMemcached)
    ///     .build()?;
    /// assert_eq!(client.ring().flavor(), memshard::Flavor::LibmemcachedModula);
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn peer(mut self, profile: impl Into<PeerProfile>) -> Self {
        let p = profile.into();
        let s = &mut self.settings;
        s.flavor = p.flavor;
        s.weights_turn_ketama_weighted = p.weights_turn_ketama_weighted();
        s.hash = Some(p.hash);
        s.point_hash = None;
        s.tag = p.tag;
        s.prefix = p.prefix;
        s.hash_with_prefix = p.hash_with_prefix;
        #[cfg(feature = "codecs")]
        {
            s.transcoder = p.transcoder;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each peer's defaults, pinned: flavor, key hash, codec, prefix.
    #[test]
    fn each_peers_defaults() {
        use KeyHash as H;
        let table: &[(Peer, &str, Flavor, KeyHash)] = &[
            (
                Peer::PhpMemcached,
                "php-memcached",
                Flavor::LibmemcachedModula,
                H::OneAtATime,
            ),
            (
                Peer::Pylibmc,
                "pylibmc",
                Flavor::LibmemcachedModula,
                H::OneAtATime,
            ),
            (
                Peer::Spymemcached,
                "spymemcached",
                Flavor::SpymemcachedModula,
                H::Native,
            ),
            (Peer::Dalli, "dalli", Flavor::Dalli, H::Crc32a),
            (
                Peer::Pymemcache,
                "pymemcache",
                Flavor::Pymemcache,
                H::Murmur3Seed0,
            ),
            (
                Peer::Gomemcache,
                "gomemcache",
                Flavor::Gomemcache,
                H::Crc32a,
            ),
            (
                Peer::NodeMemcached,
                "node-memcached",
                Flavor::NodeHashring,
                H::Md5,
            ),
            (
                Peer::AwsPhp,
                "aws-php",
                Flavor::LibmemcachedModula,
                H::OneAtATime,
            ),
            (
                Peer::AwsJava,
                "aws-java",
                Flavor::SpymemcachedModula,
                H::Native,
            ),
        ];
        assert_eq!(table.len(), Peer::ALL.len());
        assert_eq!(DEFAULTS.len(), Peer::ALL.len());
        for (&(peer, name, flavor, hash), &listed) in table.iter().zip(&Peer::ALL) {
            assert_eq!(peer, listed);
            let p = PeerProfile::from(peer);
            assert_eq!(
                (p.name(), p.flavor(), p.hash()),
                (name, flavor, hash),
                "{name}"
            );
            assert_eq!(name.parse::<Peer>(), Ok(peer));
            assert!(p.prefix().is_empty() && !p.hash_with_prefix() && p.hash_tag().is_none());
        }
    }

    #[cfg(feature = "codecs")]
    #[test]
    fn each_peers_default_codec() {
        use crate::value::{Codec, Transcoder};
        let table = [
            (Peer::PhpMemcached, Codec::PhpMemcached),
            (Peer::Pylibmc, Codec::Pylibmc),
            (Peer::Spymemcached, Codec::Spymemcached),
            (Peer::Dalli, Codec::Dalli),
            (Peer::Pymemcache, Codec::Raw),
            (Peer::Gomemcache, Codec::Raw),
            (Peer::NodeMemcached, Codec::NodeMemcached),
            (Peer::AwsPhp, Codec::PhpMemcached),
            (Peer::AwsJava, Codec::Spymemcached),
        ];
        for (peer, codec) in table {
            // The codec with its peer's default settings, nothing changed.
            assert_eq!(
                PeerProfile::from(peer).transcoder(),
                &Transcoder::new(codec)
            );
        }
    }

    fn with(peer: Peer, options: &[(&str, &str)]) -> PeerProfile {
        PeerProfile::from(peer)
            .options(options.iter().copied())
            .expect("valid options")
    }

    /// libmemcached's consistent distribution turns weighted when a server has a weight
    /// above 1 (compat-vectors and cli/tests/detect_live.rs: pylibmc with `ketama` and weights
    /// 3,1,2,1 places as weighted ketama with one-at-a-time keys); at weight 1 it stays
    /// unweighted, and peers that do not run libmemcached never switch.
    #[test]
    fn weights_turn_libmemcached_consistent_into_weighted_ketama() {
        let even = crate::parse_server_list("127.0.0.1:1\n127.0.0.1:2").expect("list");
        let weighted = crate::parse_server_list("127.0.0.1:1 3\n127.0.0.1:2 1").expect("list");
        for profile in [
            with(Peer::Pylibmc, &[("ketama", "true")]),
            with(Peer::Pylibmc, &[("distribution", "consistent")]),
            with(
                Peer::PhpMemcached,
                &[("OPT_DISTRIBUTION", "DISTRIBUTION_CONSISTENT")],
            ),
            with(
                Peer::AwsPhp,
                &[("OPT_DISTRIBUTION", "DISTRIBUTION_CONSISTENT")],
            ),
        ] {
            assert_eq!(profile.flavor_for(&even), Flavor::LibmemcachedUnweighted);
            assert_eq!(profile.flavor_for(&weighted), Flavor::Libmemcached);
            let client = crate::Client::builder()
                .servers(weighted.clone())
                .peer(profile.clone())
                .build()
                .expect("builds");
            assert_eq!(client.ring().flavor(), Flavor::Libmemcached);
            assert_eq!(client.ring().key_hash(), profile.hash());
            // a flavor set afterwards is taken as it is
            let client = crate::Client::builder()
                .servers(weighted.clone())
                .peer(profile)
                .flavor(Flavor::LibmemcachedUnweighted)
                .build()
                .expect("builds");
            assert_eq!(client.ring().flavor(), Flavor::LibmemcachedUnweighted);
        }
        // modula ignores weights; other peers' flavors never switch
        assert_eq!(
            PeerProfile::from(Peer::Pylibmc).flavor_for(&weighted),
            Flavor::LibmemcachedModula
        );
        let spy = with(
            Peer::Spymemcached,
            &[("ConnectionFactory", "KetamaConnectionFactory")],
        );
        assert_eq!(spy.flavor_for(&weighted), Flavor::Spymemcached);
    }

    #[test]
    fn placement_options_as_the_peers_spell_them() {
        type Case<'a> = (Peer, &'a [(&'a str, &'a str)], Flavor, KeyHash);
        let cases: &[Case] = &[
            (
                Peer::PhpMemcached,
                &[("OPT_LIBKETAMA_COMPATIBLE", "true")],
                Flavor::Libmemcached,
                KeyHash::Md5,
            ),
            (
                Peer::PhpMemcached,
                &[
                    ("OPT_LIBKETAMA_COMPATIBLE", "true"),
                    ("OPT_LIBKETAMA_COMPATIBLE", "false"),
                ],
                Flavor::LibmemcachedModula,
                KeyHash::Md5,
            ),
            (
                Peer::AwsPhp,
                &[
                    ("OPT_DISTRIBUTION", "DISTRIBUTION_CONSISTENT"),
                    ("OPT_HASH", "HASH_MD5"),
                ],
                Flavor::LibmemcachedUnweighted,
                KeyHash::Md5,
            ),
            (
                Peer::PhpMemcached,
                &[("OPT_HASH", "HASH_CRC")],
                Flavor::LibmemcachedModula,
                KeyHash::Crc32,
            ),
            (
                Peer::Pylibmc,
                &[("ketama", "True")],
                Flavor::LibmemcachedUnweighted,
                KeyHash::OneAtATime,
            ),
            (
                Peer::Pylibmc,
                &[("ketama_weighted", "1")],
                Flavor::Libmemcached,
                KeyHash::Md5,
            ),
            (
                Peer::Pylibmc,
                &[("distribution", "consistent"), ("hash", "fnv1a_32")],
                Flavor::LibmemcachedUnweighted,
                KeyHash::Fnv1a_32,
            ),
            (
                Peer::Spymemcached,
                &[("ConnectionFactory", "KetamaConnectionFactory")],
                Flavor::Spymemcached,
                KeyHash::Md5,
            ),
            (
                Peer::Spymemcached,
                &[("HashAlgorithm", "CRC_HASH")],
                Flavor::SpymemcachedModula,
                KeyHash::Crc32,
            ),
            (
                Peer::AwsJava,
                &[("ConnectionFactory", "KetamaConnectionFactory")],
                Flavor::AwsJavaKetama,
                KeyHash::Sha384,
            ),
            (
                Peer::Gomemcache,
                &[("Timeout", "100ms")],
                Flavor::Gomemcache,
                KeyHash::Crc32a,
            ),
        ];
        for (peer, options, flavor, hash) in cases {
            let p = with(*peer, options);
            assert_eq!(
                (p.flavor(), p.hash()),
                (*flavor, *hash),
                "{peer} {options:?}"
            );
        }
    }

    #[test]
    fn prefixes_and_whether_they_are_hashed() {
        let cases: &[(Peer, &str, &str, &[u8], bool)] = &[
            (Peer::PhpMemcached, "OPT_PREFIX_KEY", "app:", b"app:", false),
            (Peer::Dalli, "namespace", "app", b"app:", true),
            (Peer::Pymemcache, "key_prefix", "app.", b"app.", false),
            (Peer::NodeMemcached, "namespace", "app/", b"app/", true),
        ];
        for &(peer, option, value, prefix, hashed) in cases {
            let p = with(peer, &[(option, value)]);
            assert_eq!(
                (p.prefix(), p.hash_with_prefix()),
                (prefix, hashed),
                "{peer}"
            );
        }
    }

    #[cfg(feature = "codecs")]
    #[test]
    fn value_options_change_the_codec_settings() {
        use crate::value::{DalliSerializer, PhpCompression, PhpSerializer};
        let php = with(
            Peer::PhpMemcached,
            &[
                ("OPT_SERIALIZER", "SERIALIZER_JSON"),
                ("OPT_COMPRESSION", "false"),
                ("OPT_COMPRESSION_TYPE", "COMPRESSION_ZLIB"),
                ("memcached.compression_threshold", "100"),
                ("memcached.compression_factor", "2"),
                ("OPT_USER_FLAGS", "7"),
            ],
        );
        let o = php.transcoder().php_options();
        assert_eq!(o.serializer, PhpSerializer::Json);
        assert!(!o.compression);
        assert_eq!(o.compression_type, PhpCompression::Zlib);
        assert_eq!(
            (o.compression_threshold, o.compression_factor, o.user_flags),
            (100, 2.0, 7)
        );
        let dalli = with(
            Peer::Dalli,
            &[("serializer", "JSON"), ("compress", "false")],
        );
        assert_eq!(
            dalli.transcoder().dalli_options().serializer,
            DalliSerializer::Json
        );
        assert!(!dalli.transcoder().dalli_options().compress);
        let small = with(Peer::Dalli, &[("compression_min_size", "100")]);
        assert_eq!(small.transcoder().dalli_options().compression_min_size, 100);
        let py = with(Peer::Pylibmc, &[("min_compress_len", "10")]);
        assert_eq!(py.transcoder().pylibmc_options().min_compress_len, 10);
        let spy = with(Peer::AwsJava, &[("compressionThreshold", "5")]);
        assert_eq!(
            spy.transcoder()
                .spymemcached_options()
                .compression_threshold,
            5
        );
    }

    #[test]
    fn unknown_options_and_values_name_the_valid_ones() {
        let e = PeerProfile::from(Peer::PhpMemcached)
            .option("OPT_KETAMA", "true")
            .unwrap_err();
        assert!(matches!(e, PeerError::UnknownOption { .. }), "{e:?}");
        assert!(e.to_string().contains("OPT_LIBKETAMA_COMPATIBLE"), "{e}");
        let e = PeerProfile::from(Peer::PhpMemcached)
            .option("OPT_DISTRIBUTION", "DISTRIBUTION_VIRTUAL_BUCKET")
            .unwrap_err();
        assert!(e.to_string().contains("DISTRIBUTION_CONSISTENT"), "{e}");
        let e = PeerProfile::from(Peer::Spymemcached)
            .option("ConnectionFactory", "KetamaConnectionFactory")
            .and_then(|p| p.option("HashAlgorithm", "CRC_HASH"))
            .unwrap_err();
        assert!(e.to_string().contains("the only hash"), "{e}");
        let e = PeerProfile::from(Peer::Gomemcache)
            .option("hash", "md5")
            .unwrap_err();
        assert!(e.to_string().contains("its options: none"), "{e}");
        assert!(matches!(
            "memcache".parse::<Peer>(),
            Err(PeerError::UnknownPeer(_))
        ));
        assert!(e.to_string().len() < 300, "{e}");
    }

    /// The values that put a setting back, or that only confirm what the peer does anyway, are
    /// taken, not refused: a configuration copied as it is must not fail on them.
    /// A profile made from a libmemcached configuration string keeps that string's own
    /// decision (weights count there only after `--DISTRIBUTION=consistent`): servers given
    /// apart, weighted, do not turn it weighted.
    #[cfg(feature = "peer-config")]
    #[test]
    fn a_configurations_profile_keeps_its_own_weighting() {
        let cfg = crate::config::libmemcached(
            "--DISTRIBUTION=consistent --SERVER=10.0.0.1 --SERVER=10.0.0.2",
        )
        .expect("config");
        assert_eq!(cfg.flavor, Flavor::LibmemcachedUnweighted);
        let weighted = crate::parse_server_list("127.0.0.1:1 3\n127.0.0.1:2 1").expect("list");
        assert_eq!(
            PeerProfile::from(&cfg).flavor_for(&weighted),
            Flavor::LibmemcachedUnweighted
        );
    }

    /// pylibmc's `distribution` takes both of libmemcached's names; php-memcached's
    /// compression factor is a finite number of at least 0.
    #[test]
    fn pylibmc_distributions_and_php_factors() {
        let modula = with(
            Peer::Pylibmc,
            &[("distribution", "consistent"), ("distribution", "modula")],
        );
        assert_eq!(modula.flavor(), Flavor::LibmemcachedModula);
        for bad in ["-1", "inf", "NaN", "x"] {
            assert!(
                PeerProfile::from(Peer::PhpMemcached)
                    .option("memcached.compression_factor", bad)
                    .is_err(),
                "{bad}"
            );
        }
        assert!(
            PeerProfile::from(Peer::PhpMemcached)
                .option("memcached.compression_factor", "0")
                .is_ok()
        );
    }

    #[test]
    fn values_that_restore_or_confirm_a_default_are_taken() {
        let php = with(
            Peer::PhpMemcached,
            &[
                ("OPT_DISTRIBUTION", "DISTRIBUTION_CONSISTENT"),
                ("OPT_DISTRIBUTION", "DISTRIBUTION_MODULA"),
            ],
        );
        assert_eq!(php.flavor(), Flavor::LibmemcachedModula);
        let node = with(
            Peer::NodeMemcached,
            &[("algorithm", "md5"), ("compatibility", "ketama")],
        );
        assert_eq!(node, PeerProfile::from(Peer::NodeMemcached));
        // every libmemcached hash name, as pylibmc's `hash` behavior spells it
        for (name, hash) in [
            ("default", KeyHash::OneAtATime),
            ("md5", KeyHash::Md5),
            ("crc", KeyHash::Crc32),
            ("fnv1_64", KeyHash::Fnv1_64),
            ("fnv1a_64", KeyHash::Fnv1a_64),
            ("fnv1_32", KeyHash::Fnv1_32),
            ("fnv1a_32", KeyHash::Fnv1a_32),
            ("hsieh", KeyHash::Hsieh),
            ("murmur", KeyHash::Murmur),
        ] {
            assert_eq!(
                with(Peer::Pylibmc, &[("hash", name)]).hash(),
                hash,
                "{name}"
            );
        }
    }

    /// node-memcached's `algorithm` and `compatibility` have one value memshard follows; any
    /// other is refused, naming it.
    #[test]
    fn node_takes_only_md5_and_ketama() {
        for (option, value, valid) in [
            ("algorithm", "sha1", "md5"),
            ("compatibility", "consistent", "ketama"),
        ] {
            let e = PeerProfile::from(Peer::NodeMemcached)
                .option(option, value)
                .unwrap_err();
            assert!(matches!(e, PeerError::BadValue { .. }), "{e:?}");
            assert!(e.to_string().contains(valid), "{e}");
        }
    }

    /// A twemproxy configuration's `hash_tag` is the profile's, as are its flavor and hash.
    #[cfg(feature = "peer-config")]
    #[test]
    fn a_twemproxy_profile_keeps_its_hash_tag() {
        let yml = "alpha:\n  hash: fnv1a_64\n  distribution: ketama\n  hash_tag: \"{}\"\n  \
                   servers:\n   - 10.0.0.1:11211:1\n";
        let cfg = crate::config::twemproxy(yml, Some("alpha")).expect("nutcracker.yml");
        let p = PeerProfile::from(&cfg);
        assert!(p.hash_tag().is_some());
        assert_eq!(p.hash_tag(), cfg.hash_tag);
        assert_eq!((p.peer(), p.name()), (None, "twemproxy"));
    }

    /// The compressors are told apart, and the default one can be named back.
    #[cfg(feature = "codecs")]
    #[test]
    fn each_compressor_is_taken_by_name() {
        use crate::value::{DalliCompressor, PhpCompression};
        let zlib = with(
            Peer::PhpMemcached,
            &[("OPT_COMPRESSION_TYPE", "COMPRESSION_ZLIB")],
        );
        assert_eq!(
            zlib.transcoder().php_options().compression_type,
            PhpCompression::Zlib
        );
        let fastlz = zlib
            .option("OPT_COMPRESSION_TYPE", "COMPRESSION_FASTLZ")
            .expect("FastLZ");
        assert_eq!(
            fastlz.transcoder().php_options().compression_type,
            PhpCompression::FastLz
        );
        let gzip = with(Peer::Dalli, &[("compressor", "Dalli::GzipCompressor")]);
        assert_eq!(
            gzip.transcoder().dalli_options().compressor,
            DalliCompressor::Gzip
        );
        let zlib = gzip
            .option("compressor", "Dalli::Compressor")
            .expect("zlib");
        assert_eq!(
            zlib.transcoder().dalli_options().compressor,
            DalliCompressor::Zlib
        );
    }

    #[test]
    fn the_builder_takes_the_profile() {
        let s = crate::Client::builder()
            .peer(with(Peer::Dalli, &[("namespace", "ns")]))
            .settings;
        assert_eq!((s.flavor, s.hash), (Flavor::Dalli, Some(KeyHash::Crc32a)));
        assert_eq!(
            (s.prefix.as_slice(), s.hash_with_prefix),
            (&b"ns:"[..], true)
        );
    }
}
