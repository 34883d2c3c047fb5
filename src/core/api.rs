//! The public methods both clients have word for word, defined once and expanded into each
//! client's `impl`: builder, rings, membership, watchers and near-cache counters (no I/O), and
//! the single-key and server-wide commands, whose bodies only call the client's own I/O
//! helpers — the blocking client's plainly, the async client's with `.await`.

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

        /// Re-read the server-list file at `path` every `interval` (on a thread of its own);
        /// when its servers change, apply them with `set_servers`. A file that cannot be read
        /// or parsed leaves the servers as they are (see
        /// [`Watcher::last_error`](crate::watch::Watcher::last_error)).
        pub fn watch_server_file(
            &self,
            path: impl Into<std::path::PathBuf>,
            interval: std::time::Duration,
        ) -> $crate::watch::Watcher {
            let core = self.core.clone();
            $crate::watch::server_file(move |list| core.set_servers(list), path.into(), interval)
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
            let core = self.core.clone();
            let apply = move |list| core.set_servers(list);
            $crate::watch::dns(apply, name, (port, weight), interval)
        }
    };
}

pub(crate) use membership_methods;

/// One storage command (`set`, `add`, `replace`) in two forms, for [`command_methods`]: with
/// flags 0, and `_raw` with the flags given (the escape hatch under the codecs).
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
            let (k, v) = (key.as_ref(), value.as_ref());
            let meta = (flags, expiry.into().exptime_now());
            self.store($crate::proto::StoreCommand::$cmd, k, v, meta)$(.$await)?
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
            self.get_value_with(&self.core.settings.transcoder, key)$(.$await)?
        }

        /// `get`, decoded by `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_value_with(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<$crate::value::Value>> {
            let key = key.as_ref();
            let item = self.get(key)$(.$await)??;
            item.map(|item| self.core.decode_item(&codec.into(), key, &item)).transpose()
        }

        /// `get`, decoded by the client's codec and converted to `T` (`get_as::<i64>(key)`);
        /// a value of another type is [`ValueError::Type`](crate::value::ValueError::Type).
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_as<T: $crate::value::FromValue>(
            &self,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<T>> {
            self.get_as_with(&self.core.settings.transcoder, key)$(.$await)?
        }

        /// `get_as` with `codec`.
        #[cfg(feature = "codecs")]
        #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
        pub $($async)? fn get_as_with<T: $crate::value::FromValue>(
            &self,
            codec: impl Into<$crate::value::Transcoder>,
            key: impl AsRef<[u8]>,
        ) -> $crate::Result<Option<T>> {
            let key = key.as_ref();
            let value = self.get_value_with(codec, key)$(.$await)??;
            value.map(|v| $crate::core::typed_as(key, v)).transpose()
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
            self.set_value_with(&self.core.settings.transcoder, key, value, expiry)$(.$await)?
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
            let key = key.as_ref();
            let stored = self.core.encode_value(&codec.into(), key, value)?;
            self.set_raw(key, stored.bytes, stored.flags, expiry)$(.$await)?
        }
    };
}

pub(crate) use value_methods;

/// Expands, inside `impl Client`, the single-key, multi-write and server-wide commands: `()`
/// for the blocking client, `(async await)` for the async one. The client provides the helpers
/// they call, with these names and arguments: `retrieve`, `store`, `delete_on`, `arith`, `on`,
/// `on_all`, `each_group` (servers in parallel: threads, or concurrent futures).
macro_rules! command_methods {
    ($($async:tt $await:tt)?) => {
        /// The retrieval `ex` (of one key) on `m`.
        pub(crate) $($async)? fn retrieve_on(
            &self,
            m: &std::sync::Arc<$crate::core::view::Member<Pool>>,
            ex: &mut $crate::core::exchange::Retrieve<'_>,
        ) -> $crate::Result<Option<$crate::Item>> {
            self.on(m, ex)$(.$await)??;
            Ok(self.core.single_hit(m, ex))
        }

        $($async)? fn retrieve(
            &self,
            key: &[u8],
            cas: bool,
            touch: Option<u32>,
        ) -> $crate::Result<Option<$crate::Item>> {
            let r = self.core.route(key, false)?;
            let keys = [&r.wire[..]];
            let mut ex = $crate::core::exchange::Retrieve::new(&keys, cas, touch);
            self.retrieve_on(&r.member, &mut ex)$(.$await)?
        }

        /// One storage command of `wire` on `m`.
        pub(crate) $($async)? fn store_on(
            &self,
            m: &std::sync::Arc<$crate::core::view::Member<Pool>>,
            cmd: $crate::proto::StoreCommand,
            wire: &[u8],
            value: &[u8],
            (flags, exptime): (u32, u32),
        ) -> $crate::Result<$crate::StoreOutcome> {
            self.core.keys.check_value(value)?;
            let mut ex = $crate::core::exchange::Single::store(cmd, wire, value, flags, exptime);
            self.on(m, &mut ex)$(.$await)?
        }

        pub(crate) $($async)? fn store(
            &self,
            cmd: $crate::proto::StoreCommand,
            key: &[u8],
            value: &[u8],
            meta: (u32, u32),
        ) -> $crate::Result<$crate::StoreOutcome> {
            let r = self.core.route(key, true)?;
            let res = self.store_on(&r.member, cmd, &r.wire, value, meta)$(.$await)?;
            self.core.forget([key]);
            res
        }

        /// `delete` of `wire` on `m`.
        pub(crate) $($async)? fn delete_on(
            &self,
            m: &std::sync::Arc<$crate::core::view::Member<Pool>>,
            wire: &[u8],
        ) -> $crate::Result<$crate::DeleteOutcome> {
            self.on(m, &mut $crate::core::exchange::Single::delete(wire))$(.$await)?
        }

        pub(crate) $($async)? fn arith(&self, incr: bool, key: &[u8], delta: u64) -> $crate::Result<Option<u64>> {
            let r = self.core.route(key, true)?;
            let mut ex = $crate::core::exchange::Single::arith(incr, &r.wire, delta);
            let res = self.on(&r.member, &mut ex)$(.$await)?;
            self.core.forget([key]);
            res
        }

        /// `get`: the value, or `None` on a miss. Keys marked for the near cache are served
        /// from the process while their cached copy is fresh.
        pub $($async)? fn get(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
            let key = key.as_ref();
            self.core.note_key(key);
            if let Some(item) = self.core.near_lookup(key) {
                return Ok(Some(item));
            }
            let found = self.retrieve(key, false, None)$(.$await)??;
            if let Some(item) = &found {
                self.core.near_keep(key, item);
            }
            Ok(found)
        }

        /// `gets`: the value with its CAS unique.
        pub $($async)? fn gets(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
            self.core.note_key(key.as_ref());
            self.retrieve(key.as_ref(), true, None)$(.$await)?
        }

        /// `gat`: get and set a new expiry.
        pub $($async)? fn gat(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<Option<$crate::Item>> {
            let exptime = expiry.into().exptime_now();
            self.core.note_key(key.as_ref());
            self.retrieve(key.as_ref(), false, Some(exptime))$(.$await)?
        }

        /// `gats`: get with CAS unique and set a new expiry.
        pub $($async)? fn gats(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<Option<$crate::Item>> {
            let exptime = expiry.into().exptime_now();
            self.core.note_key(key.as_ref());
            self.retrieve(key.as_ref(), true, Some(exptime))$(.$await)?
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
            let (k, v) = (key.as_ref(), value.as_ref());
            self.store($crate::proto::StoreCommand::Append, k, v, (0, 0))$(.$await)?
        }

        /// `prepend` to an existing value (`NotStored` if absent).
        pub $($async)? fn prepend(
            &self,
            key: impl AsRef<[u8]>,
            value: impl AsRef<[u8]>,
        ) -> $crate::Result<$crate::StoreOutcome> {
            let (k, v) = (key.as_ref(), value.as_ref());
            self.store($crate::proto::StoreCommand::Prepend, k, v, (0, 0))$(.$await)?
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
            let (k, v) = (key.as_ref(), value.as_ref());
            let meta = (flags, expiry.into().exptime_now());
            self.store($crate::proto::StoreCommand::Cas(cas), k, v, meta)$(.$await)?
        }

        /// `delete`.
        pub $($async)? fn delete(&self, key: impl AsRef<[u8]>) -> $crate::Result<$crate::DeleteOutcome> {
            let key = key.as_ref();
            let r = self.core.route(key, true)?;
            let res = self.delete_on(&r.member, &r.wire)$(.$await)?;
            self.core.forget([key]);
            res
        }

        /// `incr`: the new value, or `None` if the key does not exist.
        pub $($async)? fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
            self.arith(true, key.as_ref(), delta)$(.$await)?
        }

        /// `decr` (memcached stops at 0): the new value, or `None` if the key does not exist.
        pub $($async)? fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
            self.arith(false, key.as_ref(), delta)$(.$await)?
        }

        /// `touch`: set a new expiry.
        pub $($async)? fn touch(
            &self,
            key: impl AsRef<[u8]>,
            expiry: impl Into<$crate::Expiry>,
        ) -> $crate::Result<$crate::TouchOutcome> {
            self.touch_exptime(key.as_ref(), expiry.into().exptime_now())$(.$await)?
        }

        /// `touch` with `exptime` as sent.
        pub(crate) $($async)? fn touch_exptime(&self, key: &[u8], exptime: u32) -> $crate::Result<$crate::TouchOutcome> {
            let r = self.core.route(key, true)?;
            let mut ex = $crate::core::exchange::Single::touch(&r.wire, exptime);
            self.on(&r.member, &mut ex)$(.$await)?
        }

        /// Set many items: pipelined per server, servers in parallel. Results in input order.
        #[must_use = "each item has its own result"]
        pub $($async)? fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
            &self,
            items: &[(K, V)],
            flags: u32,
            expiry: impl Into<$crate::Expiry>,
        ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
            use $crate::core::exchange::{WriteMany, store_outcome};
            let batch = self.core.set_batch(items, (flags, expiry.into().exptime_now()));
            let sets = |g| WriteMany::new("set_multi", batch.sets(g, false), store_outcome);
            let results = self
                .each_group(&batch.groups, sets, |ex, r, _| ex.results(r.err().as_ref()))
                $(.$await)?;
            batch.finish_writes(&self.core, results)
        }

        /// Delete many keys: pipelined per server, servers in parallel. Results in input order.
        #[must_use = "each key has its own result"]
        pub $($async)? fn delete_multi<K: AsRef<[u8]>>(
            &self,
            keys: &[K],
        ) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
            use $crate::core::exchange::{WriteMany, delete_outcome};
            let batch = self.core.delete_batch(keys);
            let deletes = |g| WriteMany::new("delete_multi", batch.deletes(g), delete_outcome);
            let results = self
                .each_group(&batch.groups, deletes, |ex, r, _| ex.results(r.err().as_ref()))
                $(.$await)?;
            batch.finish_writes(&self.core, results)
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
            use $crate::core::exchange::NoreplySets;
            let batch = self.core.set_batch(items, (flags, expiry.into().exptime_now()));
            let sets = |g| NoreplySets::new(batch.sets(g, true));
            let results = self
                .each_group(&batch.groups, sets, |_, r, g| vec![r; g.idx.len()])
                $(.$await)?;
            batch.finish_writes(&self.core, results)
        }

        /// `version` of every server, in server order.
        pub $($async)? fn version(&self) -> Vec<($crate::Server, $crate::Result<String>)> {
            self.on_all($crate::core::exchange::Single::version)$(.$await)?
        }

        /// `flush_all [delay]` on every server (and the near cache emptied).
        pub $($async)? fn flush_all(&self, delay: Option<u32>) -> Vec<($crate::Server, $crate::Result<()>)> {
            self.core.near_clear();
            self.on_all(|| $crate::core::exchange::Single::flush_all(delay))$(.$await)?
        }

        /// `verbosity level` on every server.
        pub $($async)? fn verbosity(&self, level: u32) -> Vec<($crate::Server, $crate::Result<()>)> {
            self.on_all(|| $crate::core::exchange::Single::verbosity(level))$(.$await)?
        }

        /// `stats [group]` of every server, as `(name, value)` pairs. The whole reply must
        /// come within one read timeout and hold at most
        /// [`STATS_MAX_LINES`]($crate::STATS_MAX_LINES) lines and
        /// [`STATS_MAX_BYTES`]($crate::STATS_MAX_BYTES) bytes.
        pub $($async)? fn stats(&self, group: Option<&str>) -> Vec<($crate::Server, $crate::Result<$crate::Stats>)> {
            use $crate::core::exchange::StatsExchange;
            if let Err(e) = StatsExchange::check_group(group) {
                let servers = self.core.ring().servers().to_vec();
                return servers.into_iter().map(|s| (s, Err(e.clone()))).collect();
            }
            self.on_all(|| StatsExchange::new(group))$(.$await)?
        }
    };
}

pub(crate) use command_methods;

/// Expands, inside `impl Client`, stampede protection: `get_or_compute` and `invalidate`.
/// `[$($gen)*]`: the generics of `get_or_compute`'s recompute function `F` returning
/// `Result<V, E>` (directly, or through a future for the async client). The client provides
/// `on` and `pause(duration)`.
macro_rules! stampede_methods {
    ([$($gen:tt)*] $(, $async:tt $await:tt)?) => {
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
            let store = |v: V| Ok((v.as_ref().to_vec(), 0));
            self.leased(key.as_ref(), expiry.into(), recompute, store)$(.$await)?
        }

        /// [`get_or_compute`](Self::get_or_compute) of a typed value: stored as the client's
        /// codec's peer stores it ([`Builder::codec`]($crate::Builder::codec)), and read back
        /// through the codec, so a PHP or Python service sharing the key reads it too.
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
            let (key, codec) = (key.as_ref(), &self.core.settings.transcoder);
            let store = |v: V| {
                let stored = self.core.encode_value(codec, key, &v)?;
                Ok((stored.bytes, stored.flags))
            };
            let item = self.leased(key, expiry.into(), recompute, store)$(.$await)??;
            let value = self.core.decode_item(codec, key, &item)?;
            $crate::core::typed_as(key, value)
        }

        /// The lease loop of `get_or_compute`: `store` turns the recomputed value into the
        /// bytes and flags stored.
        $($async)? fn leased<$($gen)*>(
            &self,
            key: &[u8],
            expiry: $crate::Expiry,
            recompute: F,
            store: impl FnOnce(V) -> $crate::Result<(Vec<u8>, u32)>,
        ) -> $crate::Result<$crate::Item>
        where
            E: Into<Box<dyn std::error::Error + Send + Sync>>,
        {
            use $crate::core::exchange::{Lookup, MetaOne};
            self.core.note_key(key);
            let exptime = expiry.exptime_now();
            let st = &self.core.settings.stampede;
            let r = self.core.route(key, true)?;
            let mut recompute = Some(recompute);
            let mut waiting = None;
            loop {
                let mut ex = MetaOne::lookup(&r.wire, st.lease_secs(), st.early_recache_secs());
                let (cas, current) = match self.on(&r.member, &mut ex)$(.$await)?? {
                    Lookup::Fresh(item) | Lookup::Pending { stale: Some(item) } => return Ok(item),
                    Lookup::Won { cas, current } => (cas, current),
                    Lookup::Pending { stale: None } => {
                        match waiting.get_or_insert_with(|| st.waiting()).next_pause() {
                            Ok(pause) => self.pause(pause)$(.$await)?,
                            Err(waited) => {
                                return Err($crate::Error::LeaseBusy {
                                    server: r.member.server.addr.clone(),
                                    key: String::from_utf8_lossy(key).into_owned(),
                                    waited,
                                });
                            }
                        }
                        continue;
                    }
                };
                // a caller wins once: it returns below
                let Some(recompute) = recompute.take() else {
                    return Err($crate::Error::protocol(&r.member.server.addr, "a second lease won by one caller"));
                };
                let stored = match recompute()$(.$await)? {
                    Ok(value) => store(value),
                    Err(e) => Err($crate::Error::Recompute {
                        key: String::from_utf8_lossy(key).into_owned(),
                        source: std::sync::Arc::from(e.into()),
                    }),
                };
                let (value, flags) = match stored.and_then(|s| self.core.keys.check_value(&s.0).map(|()| s)) {
                    Ok(stored) => stored,
                    Err(e) => {
                        if current.is_none() {
                            // best effort: a placeholder left behind only delays the next
                            // caller until the lease ends
                            let _ = self.on(&r.member, &mut MetaOne::release(&r.wire, cas))$(.$await)?;
                        }
                        return Err(e);
                    }
                };
                let mut ex = MetaOne::store_leased(&r.wire, &value, (flags, exptime), cas);
                self.on(&r.member, &mut ex)$(.$await)??;
                self.core.forget([key]);
                return Ok($crate::Item::new(value, flags, None));
            }
        }

        /// Mark `key`'s value stale instead of deleting it (memcached `md … I`): the next
        /// [`get_or_compute`](Self::get_or_compute) recomputes it while the others are served
        /// the stale value, which memcached keeps for [`Stampede::lease`]($crate::Stampede::lease).
        /// Plain `get`s keep returning the stale value until it is replaced. `NotFound`: there
        /// was no value. Needs memcached 1.6 or later.
        pub $($async)? fn invalidate(&self, key: impl AsRef<[u8]>) -> $crate::Result<$crate::DeleteOutcome> {
            let key = key.as_ref();
            let r = self.core.route(key, true)?;
            let lease = self.core.settings.stampede.lease_secs();
            let mut ex = $crate::core::exchange::MetaOne::invalidate(&r.wire, lease);
            let res = self.on(&r.member, &mut ex)$(.$await)?;
            self.core.forget([key]);
            res
        }
    };
}

pub(crate) use stampede_methods;

/// Expands, in a client's module, its `Replicated` handle: the struct over `$client` and
/// `$pool`, its `Debug`, `Client::replicated`, and its methods over the client's `store_on`,
/// `retrieve_on` and `delete_on` (`async await` for the async client). Copies are written one
/// after another: two or three round trips, and the first failure is never hidden by a
/// concurrent success.
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
                use $crate::proto::StoreCommand;
                if let Err(e) = self.copies.check() {
                    return vec![Err(e)];
                }
                let mut out = Vec::with_capacity(self.copies.copies.len());
                let exptime = expiry.into().exptime_now();
                for (m, wire) in &self.copies.copies {
                    let meta = (flags, exptime);
                    let r = self.client.store_on(m, StoreCommand::Set, wire, value.as_ref(), meta);
                    out.push(r$(.$await)?);
                }
                self.client.core.forget([&self.copies.key[..]]);
                out
            }

            /// Read one copy chosen at random; on a miss or an error try the others in turn. A
            /// miss everywhere is `Ok(None)`; errors everywhere return the last error.
            pub $($async)? fn get(&self) -> $crate::Result<Option<$crate::Item>> {
                use $crate::core::exchange::Retrieve;
                let mut seen = $crate::core::replica::ReadOutcome::default();
                for (m, wire) in self.copies.read_order()? {
                    let keys = [&wire[..]];
                    let mut ex = Retrieve::new(&keys, false, None);
                    if let Some(item) = seen.note(self.client.retrieve_on(m, &mut ex)$(.$await)?) {
                        return Ok(Some(item));
                    }
                }
                seen.none_found()
            }

            /// Delete every copy (and drop the key from the near cache). One result per copy.
            pub $($async)? fn delete(&self) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
                if let Err(e) = self.copies.check() {
                    return vec![Err(e)];
                }
                let mut out = Vec::with_capacity(self.copies.copies.len());
                for (m, wire) in &self.copies.copies {
                    out.push(self.client.delete_on(m, wire)$(.$await)?);
                }
                self.client.core.forget([&self.copies.key[..]]);
                out
            }
        }
    };
}

pub(crate) use replicated_handle;
