#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(unreachable_pub, missing_docs)]
//! memshard: a memcached client that places every key on exactly the server other clients pick.
//!
//! A PHP app on php-memcached, a Python worker on pylibmc, a twemproxy and a Rust service on
//! memshard can share one set of memcached servers only if they all agree, key by key, on which
//! server holds what. memshard builds each peer's ketama continuum exactly as the peer does —
//! point names, the peer's own float/double/integer arithmetic for point counts, digest bytes,
//! key hash, the order of equal points and the lookup boundary — and proves it against vectors
//! produced by running the peers themselves (`compat-vectors/` in the repository).
//!
//! # Routing
//!
//! ```
//! use memshard::{Flavor, KeyHash, Ring, parse_server_list};
//!
//! let servers = parse_server_list("
//!     10.0.1.1:11211 600
//!     10.0.1.2:11211 300
//! ").unwrap();
//! // php-memcached with OPT_LIBKETAMA_COMPATIBLE, pylibmc with ketama_weighted:
//! let ring = Ring::new(servers.clone(), Flavor::Libmemcached).unwrap();
//! let owner = ring.server_for(b"user:42").unwrap();
//! // twemproxy with `distribution: ketama` and `hash: md5` agrees on this list:
//! let tw = Ring::with_options(servers, Flavor::Twemproxy, Some(KeyHash::Md5), None).unwrap();
//! assert_eq!(tw.server_for(b"user:42").unwrap(), owner);
//! ```
//!
//! # Talking to servers
//!
//! ```no_run
//! use memshard::{Client, StoreOutcome};
//! let client = Client::builder().server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?.build()?;
//! assert_eq!(client.set("k", "v", std::time::Duration::from_secs(300))?, StoreOutcome::Stored);
//! let values = client.get_multi(&["k", "other"]); // one request per server, in parallel
//! assert_eq!(values[0].as_ref().unwrap().as_ref().unwrap().value, "v");
//! # Ok::<(), memshard::Error>(())
//! ```
//!
//! # Flavors
//!
//! | [`Flavor`] | peer |
//! |---|---|
//! | `Libmemcached` | libmemcached `KETAMA_WEIGHTED`, php-memcached `OPT_LIBKETAMA_COMPATIBLE`, pylibmc `ketama_weighted` |
//! | `LibmemcachedUnweighted` | libmemcached `KETAMA` alone, pylibmc `{"ketama": True}` |
//! | `LibmemcachedSpy` | libmemcached `CONSISTENT_KETAMA_SPY` |
//! | `Twemproxy` | nutcracker `distribution: ketama` |
//! | `Libketama` | last.fm libketama, PyPI `ketama` |
//! | `Spymemcached`, `SpymemcachedWeighted` | spymemcached `KetamaNodeLocator` |
//! | `Uhashring` | Python uhashring `hash_fn="ketama"` |
//! | `NodeHashring` | npm `hashring` |
//! | `Dalli` | Ruby dalli |
//! | `HashRing` | Python `hash_ring` |
//! | `GoKetama` | Go `dgryski/go-ketama` |
//! | `AwsJavaKetama` | the AWS ElastiCache Java client's `KetamaConnectionFactory` (SHA-384) |
//! | `MemshardWeighted` | no peer: a monotone weighted ketama of memshard's own |
//!
//! The peers' defaults are not ketama (adding a server moves most keys under modulo):
//!
//! | [`Flavor`] | peer, out of the box |
//! |---|---|
//! | `LibmemcachedModula` | libmemcached, php-memcached, pylibmc, the AWS PHP client: one-at-a-time % servers |
//! | `SpymemcachedModula` | spymemcached and the AWS Java client `DefaultConnectionFactory`: `String.hashCode` % servers |
//! | `Pymemcache` | pymemcache `HashClient`: rendezvous with murmur3 |
//! | `Gomemcache` | Go `bradfitz/gomemcache`: crc32 % servers |
//!
//! To share a cache with one of these clients, name it: [`Builder::peer`] with a
//! [`peer::Peer`] is that client at its defaults (flavor, key hash, key prefix, codec), and its
//! own options change it. The flavor names `php-memcached` and `pylibmc` are aliases of
//! `libmemcached`, those peers' **ketama mode**, not their defaults.
//!
//! ```
//! use memshard::{Flavor, Ring, Server};
//! let servers = vec![Server::new("10.0.0.1", 11211), Server::new("10.0.0.2", 11211)];
//! // php-memcached with no options set
//! let ring = Ring::new(servers, "libmemcached-modula".parse::<Flavor>()?)?;
//! assert!(!ring.flavor().is_ketama());
//! assert_eq!(ring.server_for(b"user:42").map(|s| s.addr.as_str()), Some("10.0.0.1:11211"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers
//!
//! | layer | in the tree | what it does |
//! |---|---|---|
//! | bytes | [`proto`] | request encoding and an incremental reply parser, pure functions |
//! | placement | [`ring`] (with [`hash`], [`servers`]) | each peer's continuum, built and indexed; key → server |
//! | codecs | [`value`] (feature `codecs`) | each peer's flags and bytes ⇄ a typed value; no sockets |
//! | settings | [`settings`] | the [`Builder`] and every setting it takes, defaults and validation |
//! | core (sans-IO) | `src/core/` | keys, the live view and routing, multi-key grouping, every command's request and reply interpretation as a state machine, failure handling (health, ejection, probing, rejoin) |
//! | blocking client | [`blocking`] ([`Client`]) | pooled sockets in the caller's thread; moves the bytes the core asks for |
//! | async client | `aio` (feature `async`) | the same over tokio and bb8 |
//! | routes | [`routes`] | two pools behind one handle; decisions sans-IO |
//! | planner | [`plan`] | what moves when servers change, how even the load is; no I/O |
//! | detector | [`detect`] | which flavor and key hash put the keys found on the servers; no I/O |
//!
//! The `memshard` command line is a separate package of the repository (`cli/`) that uses this
//! library's public API only.
//!
//! Keys are validated before anything is sent; a connection that saw an error mid-exchange is
//! never reused, and a pooled one is checked before reuse. Both clients run the same core, so
//! they route, fail, retry and answer alike.
//!
//! # Features
//!
//! None is on by default: without features the crate is the blocking client, the rings, the
//! protocol and the planner (22 crates besides memshard). The `memshard` command is a package
//! of its own (`memshard-cli`), not a feature.
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `async` | no | `memshard::aio`: the async client over tokio (tokio, bb8) |
//! | `codecs` | no | [`value`], `get_value`/`get_as`/`set_value`, `Builder::codec`: read and write what php-memcached, pylibmc, dalli, spymemcached and node memcached store (fastlz-rs, flate2, serde_json, rmpv, ruzstd, serde-pickle) |
//! | `peer-config` | no | `memshard::config`: twemproxy, libmemcached, php-memcached and pylibmc configurations (yaml-rust2) |
//! | `tls` | no | `Builder::tls` and `TlsConfig`: TLS to memcached `-Z` (rustls with ring, rustls-native-certs; tokio-rustls, and so tokio, for the async client); `Builder::credentials` (memcached `-Y`) needs no feature |
//! | `serde` | no | `value::Json<T>`, any serde type as a value (with `codecs`); `serde::Serialize` on the planner's results and reports ([`plan`]) |
//! | `near-cache` | no | `memshard::near`: an in-process cache for hot keys (moka) |
//! | `metrics` | no | request, error, hit and pool metrics through the `metrics` facade |
//! | `tracing` | no | a `tracing` span per command, shaped as OpenTelemetry's database client spans ([`Builder::trace_level`], [`Builder::trace_keys`]) |

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub mod aio;
pub mod blocking;
#[cfg(feature = "peer-config")]
#[cfg_attr(docsrs, doc(cfg(feature = "peer-config")))]
pub mod config;
mod core;
pub mod detect;
pub mod discovery;
pub mod error;
pub mod hotkeys;
#[cfg(feature = "near-cache")]
#[cfg_attr(docsrs, doc(cfg(feature = "near-cache")))]
pub mod near;
pub mod observe;
pub mod outcome;
pub mod peer;
pub mod plan;
pub mod proto;
pub mod ring;
pub mod routes;
pub mod settings;
#[cfg(feature = "codecs")]
#[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
pub mod value;
pub mod watch;

pub use crate::blocking::{Client, Replicated, Router};
pub use crate::core::exchange::{STATS_MAX_BYTES, STATS_MAX_LINES};
pub use crate::hotkeys::{HotKey, HotKeys};
pub use crate::outcome::{
    Bytes, CacheAsideStats, DeleteOutcome, DumpSummary, Item, PlacementCheck, ServerPlacement,
    Stats, StoreOutcome, TouchOutcome,
};
pub use crate::ring::{hash, servers};
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use crate::settings::TlsConfig;
pub use crate::settings::{
    AuthScheme, Builder, Credentials, Expiry, FailurePolicy, LARGE_VALUE_CHUNK,
    MIN_LARGE_VALUE_CHUNK, Protocol, Stampede, UnknownProtocol,
};
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use crate::settings::{TRACE_KEYS_SHOWN, TraceKeys};
pub use error::{AuthProblem, Error, MAX_POOL_SIZE, MAX_TIMEOUT, Result, SettingError, TlsProblem};
pub use hash::{KeyHash, UnknownHash};
pub use ring::{BadHashTag, FLAVORS, Flavor, HashTag, Ring, RingError, UnknownFlavor};
pub use servers::{Server, ServerListError, parse_server_list};

/// What the benchmarks time below the public API. Not part of the API: it may change or go
/// in any release.
#[doc(hidden)]
pub mod __bench {
    pub use crate::hotkeys::Detector as HotKeyCounter;
}

/// Every Rust snippet of README.md, compiled (and where it needs no server, run) as a doctest.
/// The snippets use the async client, the codecs, serde and TLS, so they are tested where
/// those features are on (`cargo test --all-features`).
#[cfg(all(
    doctest,
    feature = "async",
    feature = "codecs",
    feature = "serde",
    feature = "tls"
))]
#[doc = include_str!("../README.md")]
mod readme {}

/// The Rust snippet of docs/observability.md, compiled as a doctest.
#[cfg(all(doctest, feature = "metrics"))]
#[doc = include_str!("../docs/observability.md")]
mod observability_page {}
