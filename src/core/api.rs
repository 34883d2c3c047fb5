//! The public methods both clients have word for word, defined once and expanded into each
//! client's `impl`: builder, rings, membership, watchers and near-cache counters (no I/O), and
//! the commands. Each body is one call into ordinary code: the core, the client's own I/O
//! helpers, or a flow written once for both clients over their
//! [`Transport`](super::transport::Transport) ([`super::ops`], [`super::leased`],
//! [`super::replicated`]), run with [`drive!`](super::transport::drive): the blocking client
//! polls it once ([`now`](super::transport::now)), the async client `.await`s it.
//!
//! The contract the macros rely on is that trait: the client implements `Transport` and has a
//! `core: Arc<Core<_>>` field.

/// Expands, inside `impl Client`, the client methods that are the same for both clients. The
/// client must have a `core: Arc<Core<_>>` field.
macro_rules! membership_methods {
    () => {
        /// A builder with every default.
        pub fn builder() -> $crate::Builder<Self> {
            $crate::Builder::default()
        }

        /// The ring over every configured server (placement when all servers are up).
        pub fn ring(&self) -> std::sync::Arc<$crate::Ring> {
            self.core.ring()
        }

        /// The ring in force now: with auto-eject and a server down, the ring over the live
        /// servers.
        pub fn current_ring(&self) -> std::sync::Arc<$crate::Ring> {
            self.core.current_ring()
        }

        /// Servers currently marked down.
        pub fn down_servers(&self) -> Vec<$crate::Server> {
            self.core.down_servers()
        }

        /// Replace the server list while the client runs. The new ring is swapped in
        /// atomically; requests in flight finish on the ring they started with; servers that
        /// stay keep their pools (and health), new servers get pools, removed servers' pools
        /// are dropped once their last request returns. Flavor, key hash and hash tag stay as
        /// built. `plan_servers` tells beforehand what the change costs.
        pub fn set_servers(&self, servers: Vec<$crate::Server>) -> $crate::Result<()> {
            self.core.set_servers(servers)
        }

        /// What `set_servers` with `servers` would cost, on `keys` (see
        /// [`plan`](crate::plan::plan)): the share of keys that move, per pair of servers, and
        /// the imbalance before and after, on the ring this client routes with.
        pub fn plan_servers(
            &self,
            servers: &[$crate::Server],
            keys: &$crate::plan::Keys,
        ) -> $crate::Result<$crate::plan::Plan> {
            self.core.plan_servers(servers, keys)
        }

        /// The hottest keys read so far, hottest first, at most `k` of them (with
        /// [`Builder::hot_keys`](crate::Builder::hot_keys); empty without it). Each count is
        /// at least the true number of reads, at most [`HotKey::error`](crate::HotKey::error)
        /// more.
        pub fn hot_keys(&self) -> Vec<$crate::HotKey> {
            self.core.hot_keys()
        }

        /// Forget the hot-key counts: what `hot_keys` reports from now on counts only later
        /// reads (to report per period, or after the traffic changed).
        pub fn reset_hot_keys(&self) {
            self.core.reset_hot_keys()
        }

        /// Near-cache counters, when the near cache is on.
        #[cfg(feature = "near-cache")]
        #[cfg_attr(docsrs, doc(cfg(feature = "near-cache")))]
        pub fn near_cache_stats(&self) -> Option<$crate::near::NearCacheStats> {
            self.core.near.as_ref().map($crate::near::NearCache::stats)
        }

        /// What cluster discovery has done so far: the version and nodes in force, polls,
        /// and the last problem met. `None` for a client built without
        /// [`Builder::discover`](crate::Builder::discover).
        pub fn discovery(&self) -> Option<$crate::outcome::DiscoveryStatus> {
            self.discovery.as_ref().map(|p| p.status())
        }

        /// Re-read the server-list file at `path` every `interval` (on a thread of its own);
        /// when its servers change, apply them with `set_servers`. A file that cannot be read
        /// or parsed leaves the servers as they are (see
        /// [`Watcher::last_error`](crate::watch::Watcher::last_error)).
        pub fn watch_server_file(
            &self,
            path: impl Into<std::path::PathBuf>,
            interval: std::time::Duration,
        ) -> $crate::watch::Watcher {
            $crate::core::ops::watch_server_file(&self.core, path.into(), interval)
        }

        /// Resolve `name` every `interval` (on a thread of its own); its A/AAAA addresses,
        /// each with `port` and `weight`, are the servers, applied with `set_servers` when
        /// they change.
        pub fn watch_dns(
            &self,
            name: &str,
            port: u16,
            weight: u32,
            interval: std::time::Duration,
        ) -> $crate::watch::Watcher {
            $crate::core::ops::watch_dns(&self.core, name, (port, weight), interval)
        }
    };
}

pub(crate) use membership_methods;

/// One storage command (`set`, `add`, `replace`) in two forms, for [`command_methods`] and the
/// router: with flags 0, and `_raw` with the flags given (the escape hatch under the codecs).
/// Both call the type's own `store_for(cmd, key, value, flags, expiry)`.
macro_rules! storage_method {
    ($(#[$doc:meta])* $name:ident, $raw:ident, $cmd:ident, [$($async:tt $await:tt)?]) => {
        $(#[$doc])*
        pub $($async)? fn $name(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.$raw(key, value, 0, expiry)$(.$await)?
        }

        #[doc = concat!("`", stringify!($name), "` with the client flags `flags` stored beside the value.")]
        pub $($async)? fn $raw(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
            flags: u32,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.store_for($crate::proto::StoreCommand::$cmd, key.as_ref(), value.as_ref(), flags, expiry.into())$(.$await)?
        }
    };
}

pub(crate) use storage_method;

/// The typed-value commands (feature `codecs`), for [`command_methods`]: a value encoded and
/// decoded by the client's codec, or by the one given to a `_with` method.
macro_rules! value_methods {
    ($($async:tt $await:tt)?) => {
        /// `get`, decoded as the client's codec's peer stored it ([`Builder::codec`]); `None`
        /// on a miss.
        ///
        /// [`Builder::codec`]: crate::Builder::codec
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_value(
            &self,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<$crate::value::Value>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::get_value(self, (&self.core.settings.transcoder).into(), key.as_ref()))
        }

        /// `get`, decoded by `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_value_with(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<$crate::value::Value>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::get_value(self, codec.into(), key.as_ref()))
        }

        /// `get`, decoded by the client's codec and converted to `T` (`get_as::<i64>(key)`);
        /// a value of another type is [`ValueError::Type`](crate::value::ValueError::Type).
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_as<T: $crate::value::FromValue>(
            &self,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<T>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::get_as(self, (&self.core.settings.transcoder).into(), key.as_ref()))
        }

        /// `get_as` with `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_as_with<T: $crate::value::FromValue>(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<T>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::get_as(self, codec.into(), key.as_ref()))
        }

        /// `get_multi` of typed values: each key's hit decoded by the client's codec and
        /// converted to `T`, with its own result (a miss, a value, or its codec's or
        /// conversion's error), in input order. The write counterpart is
        /// [`set_many_values`](Self::set_many_values).
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        #[must_use = "each key has its own result"]
        pub $($async)? fn get_many_as<T: $crate::value::FromValue, K: AsRef<[u8]> + Sync>(
            &self,
            keys: &[K],
        ) -> Vec<$crate::Result<Option<T>>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::get_many_as(self, (&self.core.settings.transcoder).into(), keys))
        }

        /// `get_many_as` with `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        #[must_use = "each key has its own result"]
        pub $($async)? fn get_many_as_with<T: $crate::value::FromValue, K: AsRef<[u8]> + Sync>(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            keys: &[K],
        ) -> Vec<$crate::Result<Option<T>>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::get_many_as(self, codec.into(), keys))
        }

        /// `set_multi` of typed values, each stored as the client's codec's peer stores it: a
        /// value that cannot be encoded fails alone; results in input order.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        #[must_use = "each item has its own result"]
        pub $($async)? fn set_many_values<K: AsRef<[u8]> + Sync, T: $crate::value::ToValue>(
            &self,
            items: &[(K, T)],
            expiry: impl Into<$crate::Expiry>,
        ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::set_many_values(self, (&self.core.settings.transcoder).into(), items, expiry.into()))
        }

        /// `set_many_values` with `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        #[must_use = "each item has its own result"]
        pub $($async)? fn set_many_values_with<K: AsRef<[u8]> + Sync, T: $crate::value::ToValue>(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            items: &[(K, T)],
            expiry: impl Into<$crate::Expiry>,
        ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::set_many_values(self, codec.into(), items, expiry.into()))
        }

        /// `set` of `value` stored as the client's codec's peer stores a value of its type
        /// (flags and payload from the codec).
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn set_value<T: $crate::value::ToValue + ?Sized>(
            &self,
            key: impl AsRef<[u8]>,
            value: &T,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::set_value(self, (&self.core.settings.transcoder).into(), key.as_ref(), value, expiry.into()))
        }

        /// `set_value` with `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn set_value_with<T: $crate::value::ToValue + ?Sized>(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            key: impl AsRef<[u8]>,
            value: &T,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::typed::set_value(self, codec.into(), key.as_ref(), value, expiry.into()))
        }
    };
}

pub(crate) use value_methods;

/// Expands, inside `impl Client`, the single-key, multi-write and server-wide commands: `()`
/// for the blocking client, `(async await)` for the async one. Each body runs one flow of
/// [`super::ops`] over the client (its [`Transport`](super::transport::Transport)); `get` and
/// the storage commands, the blocking client's hot path, call its `get_now` and `store_now`
/// instead (the same steps, without a future to poll).
macro_rules! command_methods {
    ($($async:tt $await:tt)?) => {
        /// A storage command of `key` with `flags` and `expiry` (what [`storage_method`] calls).
        $($async)? fn store_for(
            &self,
            cmd: $crate::proto::StoreCommand,
            key: &[u8],
            value: &[u8],
            flags: u32,
            expiry: $crate::Expiry,
        ) -> $crate::Result<$crate::StoreOutcome> {
            $crate::core::transport::hot!($($await)?; self.store_now(cmd, key, value, flags, expiry); $crate::core::large::store(self, cmd, key, value, (flags, expiry.exptime_now())))
        }

        /// `get`: the value, or `None` on a miss. Keys marked for the near cache are served
        /// from the process while their cached copy is fresh.
        pub $($async)? fn get(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
            $crate::core::transport::hot!($($await)?; self.get_now(key.as_ref()); $crate::core::large::get(self, key.as_ref()))
        }

        /// `gets`: the value with its CAS unique.
        pub $($async)? fn gets(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::retrieve(self, key.as_ref(), true, None))
        }

        /// `gat`: get and set a new expiry.
        pub $($async)? fn gat(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<Option<$crate::Item>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::retrieve(self, key.as_ref(), false, Some(expiry.into().exptime_now())))
        }

        /// `gats`: get with CAS unique and set a new expiry.
        pub $($async)? fn gats(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<Option<$crate::Item>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::retrieve(self, key.as_ref(), true, Some(expiry.into().exptime_now())))
        }

        $crate::core::api::value_methods!($($async $await)?);

        $crate::core::api::storage_method!(
            /// `set`: store unconditionally, with flags 0.
            set, set_raw, Set, [$($async $await)?]
        );
        $crate::core::api::storage_method!(
            /// `add`: store only if absent (`NotStored` otherwise).
            add, add_raw, Add, [$($async $await)?]
        );
        $crate::core::api::storage_method!(
            /// `replace`: store only if present (`NotStored` otherwise).
            replace, replace_raw, Replace, [$($async $await)?]
        );

        /// `append` to an existing value (`NotStored` if absent).
        pub $($async)? fn append(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.store_for($crate::proto::StoreCommand::Append, key.as_ref(), value.as_ref(), 0, $crate::Expiry::NEVER)$(.$await)?
        }

        /// `prepend` to an existing value (`NotStored` if absent).
        pub $($async)? fn prepend(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.store_for($crate::proto::StoreCommand::Prepend, key.as_ref(), value.as_ref(), 0, $crate::Expiry::NEVER)$(.$await)?
        }

        /// `cas`: store only if the item's CAS unique is still `cas` (`Exists` if it changed,
        /// `NotFound` if it is gone).
        pub $($async)? fn cas(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
            cas: u64,
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.cas_raw(key, value, 0, expiry, cas)$(.$await)?
        }

        /// `cas` with the client flags `flags` stored beside the value.
        pub $($async)? fn cas_raw(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
            flags: u32,
            expiry: impl Into<$crate::Expiry>,
            cas: u64,
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.store_for($crate::proto::StoreCommand::Cas(cas), key.as_ref(), value.as_ref(), flags, expiry.into())$(.$await)?
        }

        /// `delete`.
        pub $($async)? fn delete(&self, key: impl AsRef<[u8]>) -> $crate::Result<$crate::DeleteOutcome> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::delete(self, key.as_ref()))
        }

        /// `incr`: the new value, or `None` if the key does not exist.
        pub $($async)? fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::arith(self, true, key.as_ref(), delta))
        }

        /// `decr` (memcached stops at 0): the new value, or `None` if the key does not exist.
        pub $($async)? fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::arith(self, false, key.as_ref(), delta))
        }

        /// `touch`: set a new expiry.
        pub $($async)? fn touch(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<$crate::TouchOutcome> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::touch(self, key.as_ref(), expiry.into().exptime_now()))
        }

        /// Set many items: pipelined per server, servers in parallel. Results in input order.
        #[must_use = "each item has its own result"]
        pub $($async)? fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
            &self,
            items: &[(K, V)],
            flags: u32,
            expiry: impl Into<$crate::Expiry>,
        ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::set_multi(self, items, flags, expiry.into()))
        }

        /// Delete many keys: pipelined per server, servers in parallel. Results in input order.
        #[must_use = "each key has its own result"]
        pub $($async)? fn delete_multi<K: AsRef<[u8]>>(
            &self,
            keys: &[K],
        ) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::delete_multi(self, keys))
        }

        /// Set many items with `noreply`, then one `version` per server to learn that the
        /// server has read them all. A server that answers an error line anyway (`ERROR`, a
        /// `CLIENT_ERROR` for a malformed line) gives an error for each of its keys (which key
        /// failed is not knowable). memcached 1.6 answers nothing to a noreply set it refuses
        /// (a value too large, out of memory): such a key reads `Ok(())` here and is simply not
        /// stored, so use `set_multi` where every outcome matters. Over
        /// [`Protocol::Meta`]($crate::Protocol::Meta) (quiet `ms`, then `mn`) memcached does
        /// answer such a refusal, without saying for which key: each key of that server then
        /// reports the error, though the others were stored.
        #[must_use = "each item has its own result"]
        pub $($async)? fn set_multi_noreply<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
            &self,
            items: &[(K, V)],
            flags: u32,
            expiry: impl Into<$crate::Expiry>,
        ) -> Vec<$crate::Result<()>> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::large::set_multi_noreply(self, items, flags, expiry.into()))
        }

        /// `version` of every server, in server order.
        pub $($async)? fn version(&self) -> Vec<($crate::Server, $crate::Result<String>)> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::on_all(self, $crate::core::exchange::Single::version))
        }

        /// `flush_all [delay]` on every server (and the near cache emptied).
        pub $($async)? fn flush_all(&self, delay: Option<u32>) -> Vec<($crate::Server, $crate::Result<()>)> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::flush_all(self, delay))
        }

        /// `verbosity level` on every server.
        pub $($async)? fn verbosity(&self, level: u32) -> Vec<($crate::Server, $crate::Result<()>)> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::on_all(self, || $crate::core::exchange::Single::verbosity(level)))
        }

        /// Every key of the server whose address is `server` (as [`Server::addr`]($crate::Server::addr)
        /// spells it), streamed to `each` as the server lists it (`lru_crawler metadump all`,
        /// memcached 1.4.31 and later), at most `max_keys` of them; nothing is kept. A dump cut
        /// at `max_keys` closes its connection (the rest of the dump is still on the wire). A
        /// server that refuses dumps (`-o no_lru_crawler`, `-o no_dump`, a proxy, an older
        /// memcached) fails with [`Error::Server`]($crate::Error::Server) naming its reply.
        /// Each read of the dump has the read timeout.
        ///
        /// A key can be listed twice: memcached's crawler walks each sub-LRU (hot, warm, cold)
        /// in turn, and a key its LRU maintainer moves to another sub-LRU mid-walk is met
        /// again there (crawler.c, items.c). A caller counting keys keeps the ones it saw.
        pub $($async)? fn metadump(
            &self,
            server: &str,
            max_keys: usize,
            mut each: impl FnMut($crate::proto::metadump::DumpedKey) + Send,
        ) -> $crate::Result<$crate::outcome::DumpSummary> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::metadump(self, server, max_keys, &mut each))
        }

        /// Whether the keys on the servers sit where this client places them: up to
        /// `keys_per_server` keys of each server's dump (see [`metadump`](Self::metadump)),
        /// each routed by the client's own ring over every configured server (prefix and hash
        /// tag applied as for any key). Below 100% another client writes with another
        /// placement (flavor, key hash, server order or weights). A server that cannot list
        /// its keys is reported in the result, not raised. Also sets the gauge
        /// `memshard_placement_agreement` (feature `metrics`) and warns below 100% (feature
        /// `tracing`).
        pub $($async)? fn check_placement(&self, keys_per_server: usize) -> $crate::outcome::PlacementCheck {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::check_placement(self, keys_per_server))
        }

        /// `stats [group]` of every server, as `(name, value)` pairs. The whole reply must
        /// come within one read timeout and hold at most
        /// [`STATS_MAX_LINES`]($crate::STATS_MAX_LINES) lines and
        /// [`STATS_MAX_BYTES`]($crate::STATS_MAX_BYTES) bytes.
        pub $($async)? fn stats(&self, group: Option<&str>) -> Vec<($crate::Server, $crate::Result<$crate::Stats>)> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::stats(self, group))
        }
    };
}

pub(crate) use command_methods;

/// Expands, inside `impl Client`, stampede protection: `get_or_compute` and `invalidate`.
/// `[$($gen)*]`: the generics of `get_or_compute`'s recompute function `F` returning
/// `Result<V, E>` (directly, or through a future for the async client); `$recompute`: what
/// turns it into the function of a future that the lease loop ([`super::leased`]) takes
/// (`ready_now` for the blocking client, `as_is` for the async one).
macro_rules! stampede_methods {
    ([$($gen:tt)*], $recompute:ident $(, $async:tt $await:tt)?) => {
        /// The value of `key`, recomputed by `recompute` and stored for `expiry` when it is
        /// missing — by exactly one caller across every process and host (memcached's lease,
        /// `mg … N`). The callers that did not win wait for the winner's value up to
        /// [`Stampede::wait`]($crate::Stampede::wait), then fail with
        /// [`Error::LeaseBusy`]($crate::Error::LeaseBusy); a winner that dies holds the key at
        /// most [`Stampede::lease`]($crate::Stampede::lease). After
        /// [`invalidate`](Self::invalidate) one caller recomputes while the others are served
        /// the stale value; with [`Stampede::early_recache`]($crate::Stampede::early_recache)
        /// one caller recomputes a value about to expire while the others are served it.
        ///
        /// Needs memcached 1.6 or later (meta commands, whatever the client's
        /// [`Protocol`]($crate::Protocol)). The value is stored with flags 0 and only if the
        /// lease still stands: a value written meanwhile by a plain `set` wins. A failing
        /// `recompute` stores nothing, gives the lease back and returns
        /// [`Error::Recompute`]($crate::Error::Recompute) with its error.
        ///
        /// When the cache cannot answer (the key's server is down, times out, refuses the
        /// connection or fails mid-reply: [`Error::is_server_failure`]($crate::Error::is_server_failure)),
        /// the recompute runs and its value is returned, counted in
        /// [`cache_aside_stats`](Self::cache_aside_stats), the metric
        /// `memshard_served_without_cache_total` and a `tracing` warning;
        /// [`Stampede::recompute_when_down`]($crate::Stampede::recompute_when_down)`(false)`
        /// fails instead. Errors about the request or the settings (an invalid key, TLS,
        /// credentials) always fail.
        pub $($async)? fn get_or_compute<$($gen)*>(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
            recompute: F,
        ) -> $crate::Result<$crate::Item>
        where
            V: AsRef<[u8]>,
            E: Into<Box<dyn std::error::Error + Send + Sync>>,
        {
            $crate::core::transport::drive!($($await)?; self; $crate::core::leased::get_or_compute(self, key.as_ref(), expiry.into(), $crate::core::leased::$recompute(recompute)))
        }

        /// [`get_or_compute`](Self::get_or_compute) of a typed value: stored as the client's
        /// codec stores it ([`Builder::codec`]($crate::Builder::codec)), and read back
        /// through the codec, so a PHP or Python service sharing the key reads it too.
        ///
        /// Negative caching: a recompute of an `Option` value that finds nothing returns
        /// `Ok(None)`; the "no such value" is stored for
        /// [`Stampede::negative_ttl`]($crate::Stampede::negative_ttl) (default 5 s), and the
        /// callers waiting for the lease, and those that come before it expires, get `None`
        /// without loading again.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_or_compute_as<$($gen)*>(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
            recompute: F,
        ) -> $crate::Result<V>
        where
            V: $crate::value::ToValue + $crate::value::FromValue,
            E: Into<Box<dyn std::error::Error + Send + Sync>>,
        {
            $crate::core::transport::drive!($($await)?; self; $crate::core::leased::get_or_compute_as(self, key.as_ref(), expiry.into(), $crate::core::leased::$recompute(recompute)))
        }

        /// What [`get_or_compute`](Self::get_or_compute) and `get_or_compute_as` did since
        /// the client was built: recomputes, calls answered by the recompute because the cache
        /// could not ([`Stampede::recompute_when_down`]($crate::Stampede::recompute_when_down)),
        /// and "no such value" results kept for the negative TTL.
        pub fn cache_aside_stats(&self) -> $crate::outcome::CacheAsideStats {
            $crate::core::transport::Transport::core(self).aside.snapshot()
        }

        /// Mark `key`'s value stale instead of deleting it (memcached `md … I`): the next
        /// [`get_or_compute`](Self::get_or_compute) recomputes it while the others are served
        /// the stale value, which memcached keeps for [`Stampede::lease`]($crate::Stampede::lease).
        /// Plain `get`s keep returning the stale value until it is replaced. `NotFound`: there
        /// was no value. Needs memcached 1.6 or later.
        pub $($async)? fn invalidate(&self, key: impl AsRef<[u8]>) -> $crate::Result<$crate::DeleteOutcome> {
            $crate::core::transport::drive!($($await)?; self; $crate::core::ops::invalidate(self, key.as_ref()))
        }
    };
}

pub(crate) use stampede_methods;

/// Expands, in a client's module, its `Replicated` handle: the struct over `$client` and
/// `$pool`, its `Debug`, `Client::replicated`, and its methods, each one flow of
/// [`super::replicated`] (`async await` for the async client).
macro_rules! replicated_handle {
    ($client:ty, $pool:ty $(, $async:tt $await:tt)?) => {
        /// `n` copies of one key on distinct servers: read one at random, write all. Made by
        /// `Client::replicated`.
        #[must_use]
        pub struct Replicated<'c> {
            client: &'c $client,
            copies: $crate::core::replica::Copies<$pool>,
        }

        impl std::fmt::Debug for Replicated<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct("Replicated")
                    .field("servers", &self.copies.servers())
                    .finish()
            }
        }

        impl $client {
            /// `n` copies of `key` on distinct servers (fewer when there are fewer servers).
            /// Copy 0 is the key itself on its owner, so other clients still find it; copy
            /// `i > 0` is stored as `key#r<i>` on the next distinct server of the ring's walk.
            pub fn replicated(&self, key: impl AsRef<[u8]>, n: usize) -> Replicated<'_> {
                Replicated {
                    client: self,
                    copies: self.core.copies(key.as_ref(), n),
                }
            }
        }

        impl Replicated<'_> {
            /// The servers holding the copies, copy 0 (the key's owner) first.
            pub fn servers(&self) -> Vec<$crate::Server> {
                self.copies.servers()
            }

            /// Write every copy (and drop the key from the near cache). One result per copy.
            pub $($async)? fn set(
                &self,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<$crate::Expiry>,
            ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
                $crate::core::transport::drive!($($await)?; self.client; $crate::core::replicated::set(self.client, &self.copies, value.as_ref(), flags, expiry.into()))
            }

            /// Read one copy chosen at random; on a miss or an error try the others in turn. A
            /// miss everywhere is `Ok(None)`; errors everywhere return the last error.
            pub $($async)? fn get(&self) -> $crate::Result<Option<$crate::Item>> {
                $crate::core::transport::drive!($($await)?; self.client; $crate::core::replicated::get(self.client, &self.copies))
            }

            /// Delete every copy (and drop the key from the near cache). One result per copy.
            pub $($async)? fn delete(&self) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
                $crate::core::transport::drive!($($await)?; self.client; $crate::core::replicated::delete(self.client, &self.copies))
            }
        }
    };
}

pub(crate) use replicated_handle;
