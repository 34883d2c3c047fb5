//! Every client setting, its default and its validation, and the one [`Builder`] both clients
//! are built with.

use super::FailurePolicy;
use crate::KeyHash;
use crate::error::{MAX_POOL_SIZE, MAX_TIMEOUT, Result, SettingError};
#[cfg(feature = "near-cache")]
use crate::near::NearCacheConfig;
use crate::proto;
use crate::ring::{Flavor, HashTag, Ring};
use crate::servers::{Server, parse_server_list};
use crate::settings::ConnOptions;
use std::marker::PhantomData;
use std::time::Duration;

/// Keys remembered per ejected server before its rejoin turns to `flush_all`: 100,000.
pub const DEFAULT_REJOIN_LIMIT: usize = 100_000;

/// A chunk size for [`Builder::large_values`] that fits memcached's default 1 MiB item with
/// any key: 1,000,000 bytes (the largest value memcached 1.6 stores under a 250-byte key at
/// `-I 1m` is 1,048,267 bytes).
pub const LARGE_VALUE_CHUNK: usize = 1_000_000;

/// The smallest chunk size [`Builder::large_values`] takes: 1,024 bytes, memcached's
/// smallest `-I`.
pub const MIN_LARGE_VALUE_CHUNK: usize = 1024;

/// Pool settings, kept to make pools for servers added later.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolSettings {
    pub(crate) size: u32,
    pub(crate) min_idle: u32,
    pub(crate) checkout_timeout: Duration,
    pub(crate) ping: bool,
}

/// What a builder collected.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) servers: Vec<Server>,
    pub(crate) discovery: Option<crate::settings::Discovery>,
    pub(crate) flavor: Flavor,
    /// libmemcached's rule for its consistent distribution: a server added with weight > 1
    /// turns weighted ketama on (`memcached_server_add_with_weight`). Set by a profile whose
    /// peer runs libmemcached; the ring then takes [`Flavor::Libmemcached`] when a weight > 1.
    pub(crate) weights_turn_ketama_weighted: bool,
    pub(crate) hash: Option<KeyHash>,
    pub(crate) point_hash: Option<KeyHash>,
    pub(crate) tag: Option<HashTag>,
    pub(crate) pool: PoolSettings,
    pub(crate) conn: ConnOptions,
    pub(crate) prefix: Vec<u8>,
    pub(crate) hash_with_prefix: bool,
    pub(crate) shorten_long_keys: bool,
    /// The chunk size of large values, when on ([`Builder::large_values`]).
    pub(crate) large_values: Option<usize>,
    pub(crate) policy: FailurePolicy,
    pub(crate) rejoin_limit: usize,
    pub(crate) stampede: crate::Stampede,
    #[cfg(feature = "near-cache")]
    pub(crate) near: Option<NearCacheConfig>,
    pub(crate) hot: Option<super::hot_keys::HotKeys>,
    /// Keys per server `build` checks placement with ([`Builder::check_placement_at_start`]).
    pub(crate) placement_check: Option<usize>,
    #[cfg(feature = "codecs")]
    pub(crate) transcoder: crate::value::Transcoder,
    /// A TLS configuration that could not be set up, reported by `build`.
    #[cfg(feature = "tls")]
    pub(crate) tls_error: Option<SettingError>,
    /// The level of the commands' spans and whether they name keys.
    #[cfg(feature = "tracing")]
    pub(crate) trace: crate::settings::Trace,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            servers: Vec::new(),
            discovery: None,
            flavor: Flavor::Libmemcached,
            weights_turn_ketama_weighted: false,
            hash: None,
            point_hash: None,
            tag: None,
            pool: PoolSettings {
                size: 64,
                min_idle: 0,
                checkout_timeout: Duration::from_millis(1000),
                ping: false,
            },
            conn: ConnOptions::default(),
            prefix: Vec::new(),
            hash_with_prefix: false,
            shorten_long_keys: false,
            large_values: None,
            policy: FailurePolicy::default(),
            rejoin_limit: DEFAULT_REJOIN_LIMIT,
            stampede: crate::Stampede::default(),
            #[cfg(feature = "near-cache")]
            near: None,
            hot: None,
            placement_check: None,
            #[cfg(feature = "codecs")]
            transcoder: crate::value::Transcoder::default(),
            #[cfg(feature = "tls")]
            tls_error: None,
            #[cfg(feature = "tracing")]
            trace: crate::settings::Trace::default(),
        }
    }
}

impl Settings {
    /// Every setting that could not work, as a [`SettingError`] naming it, so that no setting
    /// can make a pool or a request panic later. Timeouts (connect, read, write, checkout,
    /// retry) must be at most [`MAX_TIMEOUT`], all but the retry timeout above 0; `pool_size`
    /// from 1 to [`MAX_POOL_SIZE`]; `min_idle` at most `pool_size`; the prefix a valid key
    /// start.
    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        let pool = &self.pool;
        if pool.size == 0 {
            return Err(SettingError::ZeroPoolSize);
        }
        if pool.size > MAX_POOL_SIZE {
            return Err(SettingError::PoolTooLarge(pool.size));
        }
        if pool.min_idle > pool.size {
            return Err(SettingError::MinIdleAbovePoolSize {
                min_idle: pool.min_idle,
                pool_size: pool.size,
            });
        }
        SettingError::check_timeout("checkout_timeout", pool.checkout_timeout)?;
        SettingError::check_timeout("connect_timeout", self.conn.connect_timeout)?;
        SettingError::check_timeout("read_timeout", self.conn.read_timeout)?;
        SettingError::check_timeout("write_timeout", self.conn.write_timeout)?;
        // 0 is allowed here: a down server is probed again at once.
        let retry = self.policy.retry_timeout;
        if retry > MAX_TIMEOUT {
            return Err(SettingError::TimeoutTooLong {
                setting: "failure_policy.retry_timeout",
                value: retry,
            });
        }
        self.stampede.validate()?;
        if let Some(d) = &self.discovery {
            d.validate()?;
        }
        let caps = self.conn.caps;
        if caps.keys == 0 || caps.bytes < 32 {
            return Err(SettingError::RequestCaps {
                keys: caps.keys,
                bytes: caps.bytes,
            });
        }
        if !self.prefix.is_empty() {
            proto::validate_key(&self.prefix).map_err(SettingError::BadPrefix)?;
        }
        if let Some(chunk) = self.large_values {
            let max_value = self.conn.max_value_size;
            if chunk < MIN_LARGE_VALUE_CHUNK || chunk > max_value {
                return Err(SettingError::LargeValueChunk { chunk, max_value });
            }
        }
        #[cfg(feature = "tls")]
        if let Some(e) = &self.tls_error {
            return Err(e.clone());
        }
        Ok(())
    }

    /// The ring these settings describe.
    pub(crate) fn ring(&self) -> Result<Ring> {
        Ok(Ring::with_point_hash(
            self.servers.clone(),
            weighted_if_weights(
                self.flavor,
                self.weights_turn_ketama_weighted,
                &self.servers,
            ),
            self.hash,
            self.point_hash,
            self.tag,
        )?)
    }
}

/// `flavor`, or [`Flavor::Libmemcached`] (weighted ketama) when `rule` holds, `flavor` is
/// libmemcached's unweighted consistent ring and a server has a weight above 1: what
/// libmemcached does when such a server is added to a consistent handle (libmemcached's
/// `memcached_server_add_with_weight`).
pub(crate) fn weighted_if_weights(flavor: Flavor, rule: bool, servers: &[Server]) -> Flavor {
    if rule && flavor == Flavor::LibmemcachedUnweighted && servers.iter().any(|s| s.weight > 1) {
        Flavor::Libmemcached
    } else {
        flavor
    }
}

/// Builds a client: [`Client`](crate::Client) (`Builder<Client>`, from
/// [`Client::builder`](crate::Client::builder)) or, with the `async` feature,
/// `aio::Client` (from `aio::Client::builder`). Both take the same
/// settings. Every setting documents its default.
///
/// ```no_run
/// use memshard::{Client, Flavor};
/// use std::time::Duration;
/// let client = Client::builder()
///     .server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?
///     .flavor(Flavor::Libmemcached)
///     .pool_size(4)
///     .read_timeout(Duration::from_millis(250))
///     .build()?;
/// let _ = client.set("greeting", "hello", memshard::Expiry::NEVER)?;
/// assert_eq!(client.get("greeting")?.unwrap().value, "hello");
/// # Ok::<(), memshard::Error>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder<C> {
    pub(crate) settings: Settings,
    client: PhantomData<fn() -> C>,
}

impl<C> Clone for Builder<C> {
    fn clone(&self) -> Self {
        Builder {
            settings: self.settings.clone(),
            client: PhantomData,
        }
    }
}

impl<C> std::fmt::Debug for Builder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("servers", &self.settings.servers.len())
            .field("flavor", &self.settings.flavor)
            .finish_non_exhaustive()
    }
}

impl<C> Default for Builder<C> {
    fn default() -> Self {
        Builder {
            settings: Settings::default(),
            client: PhantomData,
        }
    }
}

impl<C> Builder<C> {
    /// The settings, checked: what `build` starts from.
    pub(crate) fn checked(self) -> Result<Settings> {
        self.settings.validate()?;
        Ok(self.settings)
    }

    /// Add servers. Default: none (building fails without any).
    pub fn servers(mut self, servers: impl IntoIterator<Item = Server>) -> Self {
        self.settings.servers.extend(servers);
        self
    }

    /// Add servers from a server list in any format [`parse_server_list`] reads.
    pub fn server_list(mut self, text: &str) -> Result<Self> {
        self.settings.servers.extend(parse_server_list(text)?);
        Ok(self)
    }

    /// MemCachier's environment: the servers in `MEMCACHIER_SERVERS` (`host:port`, separated by
    /// commas or spaces) and the MemCachier login of `MEMCACHIER_USERNAME` and
    /// `MEMCACHIER_PASSWORD` ([`Credentials::memcachier_from_env`](crate::Credentials::memcachier_from_env)).
    pub fn memcachier_from_env(self) -> Result<Self> {
        self.memcachier_from(|name| std::env::var(name))
    }

    /// [`Builder::memcachier_from_env`] over the variables `var` gives.
    fn memcachier_from(
        mut self,
        var: impl Fn(&str) -> std::result::Result<String, std::env::VarError>,
    ) -> Result<Self> {
        let servers = var("MEMCACHIER_SERVERS").map_err(|e| SettingError::Credentials {
            source_name: "$MEMCACHIER_SERVERS".into(),
            detail: format!("not set or not UTF-8 ({e})"),
        })?;
        let list = servers.replace([',', ' '], "\n");
        self.settings.servers.extend(parse_server_list(&list)?);
        Ok(self.credentials(crate::Credentials::memcachier_from(var)?))
    }

    /// Find the servers through cluster auto discovery (ElastiCache, Memorystore) instead of a
    /// list: `build` asks `discovery`'s endpoint for the nodes (and fails if no configuration
    /// comes), then a thread polls for new versions and applies each with `set_servers`.
    /// Servers given with [`servers`](Builder::servers) are ignored. Discovered nodes are placed
    /// with [`flavor`](Builder::flavor): `LibmemcachedModula` places as the AWS PHP client does
    /// by default, `SpymemcachedModula` as the AWS Java client does (the `discovery` module has the table).
    /// Default: no discovery.
    pub fn discover(mut self, discovery: crate::settings::Discovery) -> Self {
        self.settings.discovery = Some(discovery);
        self
    }

    /// Resolve server names with `resolver` (default: the system's, [`SystemResolver`]).
    /// Every connect resolves its server's host again, within the connect timeout.
    ///
    /// [`SystemResolver`]: crate::settings::SystemResolver
    pub fn resolver(mut self, resolver: impl crate::settings::Resolve) -> Self {
        self.settings.conn.resolver = Some(std::sync::Arc::new(resolver));
        self
    }

    /// Split multi-key retrievals into lines of at most `keys` keys and `bytes` bytes (for
    /// endpoints that cap a request, such as ElastiCache Serverless). Default: 100 keys, no
    /// byte limit. `keys` 0 or `bytes` below 32 is refused at build.
    pub fn request_caps(mut self, keys: usize, bytes: usize) -> Self {
        self.settings.conn.caps = crate::settings::RequestCaps { keys, bytes };
        self
    }

    /// Placement flavor. Default: [`Flavor::Libmemcached`].
    pub fn flavor(mut self, flavor: Flavor) -> Self {
        self.settings.flavor = flavor;
        self.settings.weights_turn_ketama_weighted = false;
        self
    }

    /// Key hash. Default: the flavor's.
    pub fn hash(mut self, hash: KeyHash) -> Self {
        self.settings.hash = Some(hash);
        self
    }

    /// The hash the ring's points are built with, when it differs from the key hash
    /// (libmemcached after a `--HASH` that changed only the key hash; see
    /// [`Ring::with_point_hash`]). Default: the flavor's.
    pub fn point_hash(mut self, hash: KeyHash) -> Self {
        self.settings.point_hash = Some(hash);
        self
    }

    /// Hash tag (twemproxy semantics). Default: none.
    pub fn hash_tag(mut self, tag: HashTag) -> Self {
        self.settings.tag = Some(tag);
        self
    }

    /// Connections per server at most, from 1 to [`MAX_POOL_SIZE`]. Default: 64.
    ///
    /// A pool opens a connection only when every open one is in use, so one thread keeps one
    /// connection per server, and 64 threads (or tasks) at once open up to 64, which then
    /// stay for the next burst. With fewer connections than concurrent callers, callers wait
    /// for one: measured on 2 cores with 64 threads, a pool of 8 had a 99th percentile 2.2
    /// times a socket per thread's, a pool of 64 none higher. memcached accepts 1,024
    /// connections from all its clients by default (`-c`): lower this when many processes
    /// share the servers.
    ///
    /// Every connection of a request counts against it in both clients, the one made for the
    /// retry after a stale connection too (it takes the slot of one that is closed first).
    /// The only connections outside it are the prober's: while a down server is probed, one
    /// to it, and with auto-eject one at a time to each server that took copies of its keys.
    pub fn pool_size(mut self, n: u32) -> Self {
        self.settings.pool.size = n;
        self
    }

    /// Idle connections each pool keeps open, at most `pool_size`. Default: 0 (connect on
    /// demand).
    pub fn min_idle(mut self, n: u32) -> Self {
        self.settings.pool.min_idle = n;
        self
    }

    /// Longest wait for a free connection when all `pool_size` are in use (connecting is
    /// bounded by the connect timeout alone), above 0 and at most [`MAX_TIMEOUT`]. Default:
    /// 1 s.
    pub fn checkout_timeout(mut self, d: Duration) -> Self {
        self.settings.pool.checkout_timeout = d;
        self
    }

    /// Send `version` on every checkout to test the connection. Default: off (it doubles the
    /// round trips; broken connections are already never reused).
    pub fn ping_on_checkout(mut self, on: bool) -> Self {
        self.settings.pool.ping = on;
        self
    }

    /// Connect timeout, above 0 and at most [`MAX_TIMEOUT`]. Default: 500 ms.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.settings.conn.connect_timeout = d;
        self
    }

    /// Longest wait for the replies to one write, above 0 and at most [`MAX_TIMEOUT`].
    /// Default: 1 s.
    pub fn read_timeout(mut self, d: Duration) -> Self {
        self.settings.conn.read_timeout = d;
        self
    }

    /// Longest wait to write one request, above 0 and at most [`MAX_TIMEOUT`]. Default: 1 s.
    pub fn write_timeout(mut self, d: Duration) -> Self {
        self.settings.conn.write_timeout = d;
        self
    }

    /// Largest value sent or accepted. Default: 1 MiB (memcached's default `-I`).
    pub fn max_value_size(mut self, bytes: usize) -> Self {
        self.settings.conn.max_value_size = bytes;
        self
    }

    /// Prefix sent in front of every key, like libmemcached's `MEMCACHED_CALLBACK_PREFIX_KEY`
    /// and php-memcached's `OPT_PREFIX_KEY`: the server sees `prefix + key`; placement hashes
    /// only `key` unless [`Builder::hash_with_prefix`] is set. Default: none.
    pub fn prefix(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.settings.prefix = prefix.as_ref().to_vec();
        self
    }

    /// Hash `prefix + key` for placement (libmemcached `HASH_WITH_PREFIX_KEY`, pylibmc's
    /// `key_prefix`). Default: off.
    pub fn hash_with_prefix(mut self, on: bool) -> Self {
        self.settings.hash_with_prefix = on;
        self
    }

    /// Send a key longer than memcached's 250 bytes (prefix included) as its first 212 bytes
    /// (cut back to a UTF-8 character boundary), `:md5:` and the 32 hex digits of the md5 of
    /// the whole key: at most 249 bytes, and for an ASCII key the very key dalli sends
    /// (`Dalli::KeyManager`). Placement still hashes the key as given. Every client that reads
    /// such keys must shorten them the same way. Default: off (a long key is an
    /// [`Error::InvalidKey`](crate::Error::InvalidKey)).
    ///
    /// ```
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .shorten_long_keys(true)
    ///     .build()?;
    /// let long = "k".repeat(300);
    /// let _ = client.set(&long, "v", memshard::Expiry::NEVER); // sent as kkk…k:md5:<32 hex>
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn shorten_long_keys(mut self, on: bool) -> Self {
        self.settings.shorten_long_keys = on;
        self
    }

    /// Store a value over `chunk` bytes as chunks of `chunk` bytes under keys of their own,
    /// then an index under its key, written last: values of any size, past the servers' item
    /// size limit. `chunk` is from [`MIN_LARGE_VALUE_CHUNK`] to
    /// [`max_value_size`](Builder::max_value_size); [`LARGE_VALUE_CHUNK`] fits memcached's
    /// default `-I`. Default: off (a value over `max_value_size` is
    /// [`Error::ValueTooLarge`](crate::Error::ValueTooLarge)).
    ///
    /// `get`, `gets`, `gat`, `gats`, `get_multi` (every chunk in one pipelined request per
    /// server), the typed reads and writes, `set`, `add`, `replace`, `cas`, `set_multi`,
    /// `touch`, `delete` and `delete_multi` apply to the whole value. A read returns the value
    /// whole or a miss: a missing chunk (evicted, expired, deleted), one of another write, or a
    /// damaged index reads as a miss, and a server down holding a chunk as its error. `delete`
    /// and `touch` read the index first (one more round trip per call). `append` and `prepend`
    /// take at most `chunk` bytes. Chunks go where their own keys route, spreading a value
    /// over the servers. `get_or_compute` and replicated keys store values as they are.
    ///
    /// Every memshard client that reads these keys needs large values on (any chunk size);
    /// other clients see the index's bytes. The stored format, a contract between memshard
    /// versions:
    ///
    /// | item | key | value | flags, expiry |
    /// |---|---|---|---|
    /// | index | the key | `\0memshard-large/1 ` then `LEN CHUNK COUNT ID CRC`: decimal length, chunk size and chunk count, the write's random 64-bit id in 16 hex digits, the CRC-32 (IEEE) of the whole value in 8 hex digits, one space apart | the value's |
    /// | chunk `i` (from 0) | `KEY:ID:i` (the prefix in front as for any key); when that would pass 250 bytes, the 32-hex md5 of the key in place of `KEY` | bytes `i × CHUNK` to `(i + 1) × CHUNK` of the value | 0, the value's expiry |
    ///
    /// The cost: `COUNT + 1` items per value, written chunks first; a value overwritten,
    /// deleted while a server holding a chunk is down, or whose write failed half-way leaves
    /// chunks no index points to until they expire or memcached's LRU evicts them. A value of
    /// at most `chunk` bytes is stored as it is, unless it begins as an index does.
    ///
    /// ```no_run
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .large_values(memshard::LARGE_VALUE_CHUNK)
    ///     .build()?;
    /// let big = vec![7u8; 5 << 20];
    /// client.set("report", &big, memshard::Expiry::NEVER)?;
    /// assert_eq!(client.get("report")?.map(|i| i.value.len()), Some(5 << 20));
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn large_values(mut self, chunk: usize) -> Self {
        self.settings.large_values = Some(chunk);
        self
    }

    /// Failure handling: failure limit, retry timeout (at most [`MAX_TIMEOUT`]), auto-eject.
    /// Default: [`FailurePolicy::default`] (2 failures, 2 s, no ejection).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.settings.policy = policy;
        self
    }

    /// With auto-eject, the keys written or deleted elsewhere while a server is out that are
    /// remembered for it, at most: when it returns they are deleted on it before it takes reads
    /// again (twice, a retry timeout apart, for writes that land late), so that it never
    /// serves the old copies it kept. Past this bound it is flushed
    /// (`flush_all`) before it rejoins instead, losing its other data too (see
    /// the rejoin cleanup). Default: [`DEFAULT_REJOIN_LIMIT`] (100,000 keys per server).
    pub fn rejoin_limit(mut self, keys: usize) -> Self {
        self.settings.rejoin_limit = keys;
        self
    }

    /// Text or meta commands for every request ([`Protocol`](crate::Protocol)). Default:
    /// text, which every memcached and proxy speaks; meta needs memcached 1.6 or later.
    ///
    /// ```
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .protocol(memshard::Protocol::Meta)
    ///     .build()?;
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn protocol(mut self, protocol: crate::Protocol) -> Self {
        self.settings.conn.protocol = protocol;
        self
    }

    /// Stampede protection for `get_or_compute` and `invalidate`: the lease, the wait of the
    /// callers that did not win, early recache ([`Stampede`](crate::Stampede); default: a 30 s
    /// lease, a 3 s wait, no early recache).
    pub fn stampede(mut self, stampede: crate::Stampede) -> Self {
        self.settings.stampede = stampede;
        self
    }

    /// Log in with these credentials on every new connection (memcached `-Y`), before any
    /// request. The secret is sent only to a server that asks for it (one that answers
    /// "unauthenticated"), and never appears in errors or debug output.
    pub fn credentials(mut self, credentials: crate::Credentials) -> Self {
        self.settings.conn.credentials = Some(std::sync::Arc::new(credentials));
        self
    }

    /// Speak TLS to every server (feature `tls`): verified certificates, an optional client
    /// certificate, session resumption across reconnects, never a plaintext fallback. A
    /// configuration that cannot work (an unreadable CA, a bad name) fails `build`.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, config: crate::TlsConfig) -> Self {
        match config.setup() {
            Ok(setup) => {
                self.settings.conn.tls = Some(std::sync::Arc::new(setup));
                self.settings.tls_error = None;
            }
            Err(e) => self.settings.tls_error = Some(e),
        }
        self
    }

    /// The codec `get_value`, `get_as` and `set_value` use: which peer's way of storing typed
    /// values to follow, with its settings (default
    /// [`Codec::Memshard`](crate::value::Codec::Memshard), memshard's own layout: text, bytes
    /// and integers as they are, other values as JSON). Each call can use another with the
    /// `_with` methods. [`Builder::peer`] sets the codec with the rest of a peer's settings.
    ///
    /// ```
    /// use memshard::value::Codec;
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .codec(Codec::PhpMemcached)
    ///     .build()?;
    /// # Ok::<(), memshard::Error>(())
    /// ```
    #[cfg(feature = "codecs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
    pub fn codec(mut self, codec: impl Into<crate::value::Transcoder>) -> Self {
        self.settings.transcoder = codec.into();
        self
    }

    /// An in-process near cache for the keys the config marks (hot keys). Default: off.
    #[cfg(feature = "near-cache")]
    #[cfg_attr(docsrs, doc(cfg(feature = "near-cache")))]
    pub fn near_cache(mut self, config: NearCacheConfig) -> Self {
        self.settings.near = Some(config);
        self
    }

    /// Count the keys read (`get`, `gets`, `gat`, `gats`, `get_multi`, `get_or_compute`) in
    /// bounded memory and report the hottest with `hot_keys()`; optionally cache them in the
    /// near cache ([`HotKeys::admit_to_near_cache`](crate::HotKeys::admit_to_near_cache)).
    /// Default: off.
    ///
    /// ```
    /// use memshard::HotKeys;
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .hot_keys(HotKeys::top(10).sample(4))
    ///     .build()?;
    /// assert!(client.hot_keys().is_empty());
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn hot_keys(mut self, config: super::HotKeys) -> Self {
        self.settings.hot = Some(config);
        self
    }

    /// At build, check that the keys already on the servers sit where this client places
    /// them: `check_placement(keys_per_server)` (see [`Client::check_placement`](crate::Client::check_placement)),
    /// which warns (feature `tracing`) and sets the gauge `memshard_placement_agreement`
    /// (feature `metrics`) when they do not. The build never fails for it: a disagreement or a
    /// server that cannot list its keys is only reported. The blocking client checks before
    /// `build` returns (each server's dump within the read timeout); the async client checks
    /// in a task of its runtime. Default: off.
    pub fn check_placement_at_start(mut self, keys_per_server: usize) -> Self {
        self.settings.placement_check = Some(keys_per_server);
        self
    }

    /// The level of the `tracing` spans of commands. Default: [`INFO`](tracing::Level::INFO).
    ///
    /// Each command is a span named `memshard` (target `memshard`) with OpenTelemetry's
    /// database client attributes: `otel.name` (the command), `otel.kind = "client"`,
    /// `db.system.name = "memcached"`, `db.operation.name`, `server.address` and
    /// `server.port`, and on failure `error.type` and `otel.status_code = "ERROR"`; a command
    /// of many keys or servers is a parent span with a child span per server. Below the
    /// subscriber's level the spans cost a level check and are never built.
    ///
    /// ```
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .trace_level(tracing::Level::DEBUG)
    ///     .build()?;
    /// # drop(client);
    /// # Ok::<(), memshard::Error>(())
    /// ```
    #[cfg(feature = "tracing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
    pub fn trace_level(mut self, level: tracing::Level) -> Self {
        self.settings.trace.level = level;
        self
    }

    /// Whether the spans of commands name their keys in `db.query.text`, and how: not at all
    /// (the default), as sent, or hashed ([`TraceKeys`](crate::TraceKeys)).
    ///
    /// ```
    /// use memshard::TraceKeys;
    /// // spans read `db.query.text = "get #…"`: a stable hash of each key, never the key
    /// let client = memshard::Client::builder()
    ///     .server_list("127.0.0.1:11211")?
    ///     .trace_keys(TraceKeys::Hashed)
    ///     .build()?;
    /// # drop(client);
    /// # Ok::<(), memshard::Error>(())
    /// ```
    #[cfg(feature = "tracing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
    pub fn trace_keys(mut self, keys: crate::settings::TraceKeys) -> Self {
        self.settings.trace.keys = keys;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcachier_variables_give_servers_and_login() {
        let env = |name: &str| match name {
            "MEMCACHIER_SERVERS" => Ok("mc1.example:11211,mc2.example:11212 mc3.example".into()),
            "MEMCACHIER_USERNAME" => Ok("app".into()),
            "MEMCACHIER_PASSWORD" => Ok("pw".into()),
            _ => Err(std::env::VarError::NotPresent),
        };
        let b = Builder::<crate::Client>::default()
            .memcachier_from(env)
            .expect("all set");
        let addrs: Vec<&str> = b.settings.servers.iter().map(|s| s.addr.as_str()).collect();
        assert_eq!(
            addrs,
            ["mc1.example:11211", "mc2.example:11212", "mc3.example"]
        );
        let c = b.settings.conn.credentials.as_ref().expect("credentials");
        assert_eq!(c.auth_scheme(), crate::AuthScheme::MemCachier);
        let none = |_: &str| Err(std::env::VarError::NotPresent);
        let e = Builder::<crate::Client>::default()
            .memcachier_from(none)
            .map(|_| ())
            .expect_err("no servers");
        assert!(e.to_string().contains("$MEMCACHIER_SERVERS"), "{e}");
    }

    #[test]
    fn request_caps_without_room_are_refused() {
        let b = |keys, bytes| {
            Builder::<crate::Client>::default()
                .request_caps(keys, bytes)
                .checked()
                .map(|_| ())
        };
        assert!(b(0, 100).is_err());
        assert!(b(1, 31).is_err());
        assert!(b(1, 32).is_ok());
        assert!(b(100, usize::MAX).is_ok());
    }

    /// The documented default pool size: 64 connections per server per client.
    #[test]
    fn the_default_pool_size_is_64() {
        assert_eq!(Settings::default().pool.size, 64);
        assert_eq!(Builder::<crate::Client>::default().settings.pool.size, 64);
        #[cfg(feature = "async")]
        assert_eq!(
            Builder::<crate::aio::Client>::default().settings.pool.size,
            64
        );
    }

    #[test]
    fn the_retry_timeout_may_be_zero_or_the_longest_timeout() {
        let b = |retry| {
            Builder::<crate::Client>::default()
                .failure_policy(FailurePolicy::new(2, retry, true))
                .checked()
                .map(|_| ())
        };
        assert!(b(Duration::ZERO).is_ok());
        assert!(b(MAX_TIMEOUT).is_ok());
        let e = b(MAX_TIMEOUT + Duration::from_nanos(1)).expect_err("too long");
        assert!(e.to_string().contains("retry_timeout"), "{e}");
    }

    /// A point hash set apart from the key hash builds the ring's points with it
    /// (`libmemcached-unweighted`, the flavor that has one).
    #[test]
    fn the_point_hash_reaches_the_ring() {
        let servers = || (1..=3).map(|i| Server::new("127.0.0.1", 1100 + i));
        let ring = |b: Builder<crate::Client>| b.checked().expect("settings").ring().expect("ring");
        let with = ring(
            Builder::default()
                .servers(servers())
                .flavor(Flavor::LibmemcachedUnweighted)
                .point_hash(KeyHash::Crc32),
        );
        let direct = Ring::with_point_hash(
            servers().collect(),
            Flavor::LibmemcachedUnweighted,
            None,
            Some(KeyHash::Crc32),
            None,
        )
        .expect("ring");
        let plain = ring(
            Builder::default()
                .servers(servers())
                .flavor(Flavor::LibmemcachedUnweighted),
        );
        let routes = |r: &Ring| -> Vec<Option<usize>> {
            (0..200)
                .map(|i| r.route(format!("k{i}").as_bytes()))
                .collect()
        };
        assert_eq!(routes(&with), routes(&direct));
        assert_ne!(routes(&with), routes(&plain));
    }

    /// Each setter records its own value and keeps everything set before it: a builder is
    /// a chain, and a setter that started over would drop the server list silently.
    #[test]
    fn every_setter_keeps_the_settings_made_before_it() {
        type B = Builder<crate::Client>;
        let base = || {
            B::default()
                .server_list("127.0.0.1:1\n127.0.0.1:2")
                .expect("list")
        };
        let kept = |b: B| {
            let debug = format!("{:?}", b.clone());
            assert!(debug.contains("servers: 2"), "{debug}");
            assert_eq!(b.settings.servers.len(), 2);
            b.settings
        };
        let ms = Duration::from_millis;
        assert_eq!(
            kept(base().checkout_timeout(ms(7))).pool.checkout_timeout,
            ms(7)
        );
        assert_eq!(
            kept(base().connect_timeout(ms(8))).conn.connect_timeout,
            ms(8)
        );
        assert_eq!(kept(base().read_timeout(ms(9))).conn.read_timeout, ms(9));
        assert_eq!(
            kept(base().write_timeout(ms(10))).conn.write_timeout,
            ms(10)
        );
        assert_eq!(kept(base().max_value_size(4096)).conn.max_value_size, 4096);
        assert_eq!(kept(base().pool_size(3)).pool.size, 3);
        assert_eq!(kept(base().min_idle(3)).pool.min_idle, 3);
        assert!(kept(base().ping_on_checkout(true)).pool.ping);
        assert_eq!(kept(base().rejoin_limit(5)).rejoin_limit, 5);
        assert_eq!(kept(base().prefix("app:")).prefix, b"app:");
        assert!(kept(base().hash_with_prefix(true)).hash_with_prefix);
        assert_eq!(kept(base().hash(KeyHash::Crc32)).hash, Some(KeyHash::Crc32));
        let caps = kept(base().request_caps(7, 64)).conn.caps;
        assert_eq!((caps.keys, caps.bytes), (7, 64));
        assert!(
            kept(base().resolver(crate::settings::SystemResolver))
                .conn
                .resolver
                .is_some()
        );
        let discovery = crate::settings::Discovery::new("127.0.0.1:11211").expect("endpoint");
        assert!(kept(base().discover(discovery)).discovery.is_some());
        let login = crate::Credentials::new("user", "secret").expect("credentials");
        assert!(kept(base().credentials(login)).conn.credentials.is_some());
        #[cfg(feature = "tls")]
        {
            let tls = kept(base().tls(crate::TlsConfig::new()));
            assert!(tls.conn.tls.is_some() || tls.tls_error.is_some());
        }
        #[cfg(feature = "codecs")]
        {
            use crate::value::Codec;
            let codec = kept(base().codec(Codec::PhpMemcached)).transcoder.codec();
            assert_eq!(codec, Codec::PhpMemcached);
        }
        #[cfg(feature = "near-cache")]
        {
            let near = NearCacheConfig::hot_only(ms(100), 10);
            assert!(kept(base().near_cache(near)).near.is_some());
        }
        // a clone is the same builder, not a fresh one
        let cloned = base().pool_size(5).clone();
        assert_eq!(kept(cloned).pool.size, 5);
    }

    /// The defaults a builder starts from, each in one row: what the setters' docs promise.
    #[test]
    fn the_defaults_the_setters_document() {
        let s = Builder::<crate::Client>::default().settings;
        let table: &[(&str, bool)] = &[
            ("flavor libmemcached", s.flavor == Flavor::Libmemcached),
            ("no key hash of its own", s.hash.is_none()),
            ("no hash tag", s.tag.is_none()),
            (
                "no prefix, not hashed",
                s.prefix.is_empty() && !s.hash_with_prefix,
            ),
            ("pool of 64", s.pool.size == 64),
            #[cfg(feature = "codecs")]
            (
                "codec memshard, its own settings",
                s.transcoder == crate::value::Transcoder::new(crate::value::Codec::Memshard),
            ),
        ];
        for (what, holds) in table {
            assert!(holds, "default: {what}");
        }
    }

    /// `pool_size` may be [`MAX_POOL_SIZE`] and `min_idle` may equal it; one more is refused.
    #[test]
    fn pool_bounds_include_their_limits() {
        let b = |size, min_idle| {
            Builder::<crate::Client>::default()
                .pool_size(size)
                .min_idle(min_idle)
                .checked()
                .map(|_| ())
        };
        assert!(b(MAX_POOL_SIZE, MAX_POOL_SIZE).is_ok());
        assert!(b(MAX_POOL_SIZE + 1, 0).is_err());
        assert!(b(4, 4).is_ok());
        assert!(b(4, 5).is_err());
        assert!(b(0, 0).is_err());
    }

    /// Without `MEMCACHIER_SERVERS` the environment gives no servers, and says which variable
    /// is missing; with it, its servers.
    #[test]
    fn memcachier_from_env_reads_the_process_environment() {
        let b = Builder::<crate::Client>::default().memcachier_from_env();
        match std::env::var("MEMCACHIER_SERVERS") {
            Err(_) => {
                let e = b.map(|_| ()).expect_err("no servers");
                assert!(e.to_string().contains("$MEMCACHIER_SERVERS"), "{e}");
            }
            Ok(_) => assert!(!b.expect("servers").settings.servers.is_empty()),
        }
    }

    #[test]
    fn hot_key_detection_is_kept_in_the_settings() {
        let b = Builder::<crate::Client>::default();
        assert!(b.settings.hot.is_none());
        let b = b.hot_keys(crate::HotKeys::top(10).sample(4));
        assert!(b.checked().expect("settings").hot.is_some());
    }
}
