//! The `Router` handle, defined once and expanded in each client's module. Each method is one
//! call: a constructor, or a command of the route's root [`Policy`](super::policy::Policy),
//! run with [`drive!`](crate::core::transport::drive) (polled once for the blocking client,
//! `.await`ed by the async one). What to do with each command is decided by the policies of
//! [`crate::routes`].

/// Expands, in a client's module, `Router` over `$client` (`async await` for the async
/// client). The client implements [`Transport`](crate::core::transport::Transport).
macro_rules! router_handle {
    ($client:ty, $example:literal $(, $async:tt $await:tt)?) => {
        /// A route over pools (each a client: a ring and its servers): warm-up or migration
        /// from an old ring to a new one, a gutter pool for failed servers, two mirrored
        /// pools, or a composed route over any number of pools (by key prefix, by command,
        /// replicated across zones). What each command does under each route is in
        /// [`memshard::routes`](crate::routes).
        ///
        #[doc = $example]
        #[derive(Clone)]
        pub struct Router {
            tree: std::sync::Arc<$crate::routes::policy::Tree<$client>>,
        }

        impl std::fmt::Debug for Router {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct("Router").field("route", &self.tree.root.describe()).finish()
            }
        }

        impl Router {
            fn with(kind: $crate::routes::Kind, first: $client, second: $client) -> Router {
                let names = kind.pool_names().map(String::from);
                let counters = std::sync::Arc::<$crate::routes::Counters>::default();
                let pools = vec![(names[0].clone(), first.clone()), (names[1].clone(), second.clone())];
                let state = $crate::routes::State::counting(kind, std::sync::Arc::clone(&counters));
                let root = Box::new($crate::routes::policy::pair::Pair { pools: [first, second], names, state });
                Router { tree: std::sync::Arc::new($crate::routes::policy::Tree { root, pools, counters }) }
            }

            /// Read `new`, fall back to `old` on a miss and copy what `old` had into `new`
            /// (with `add`, expiring at `backfill`); write both. For a cluster, ring flavour
            /// or hash change without a miss storm.
            pub fn warm_up(new: $client, old: $client, backfill: impl Into<$crate::Expiry>) -> Router {
                Router::with($crate::routes::Kind::WarmUp { backfill: backfill.into() }, new, old)
            }

            /// A warm-up for the window of `migration`, then `new` alone (see
            /// [`Migration`]($crate::routes::Migration)).
            pub fn migrate(new: $client, old: $client, migration: $crate::routes::Migration) -> Router {
                Router::with($crate::routes::Kind::Migrate(migration), new, old)
            }

            /// `main`'s keys served from `gutter` while their server fails, stored there for
            /// at most `ttl`. `main` must not auto-eject (rehashing a failed server's keys
            /// onto its neighbours is what a gutter avoids): [`Error::Config`]($crate::Error::Config)
            /// otherwise, and for a `ttl` under a second or over 30 days.
            pub fn gutter(main: $client, gutter: $client, ttl: std::time::Duration) -> $crate::Result<Router> {
                Ok(Router::with($crate::routes::flow::gutter_kind(main.core.failures.policy.auto_eject, ttl)?, main, gutter))
            }

            /// Every key in both `a` and `b`, read as `policy` says. Two pools that share a
            /// server would hold one copy where the route counts two:
            /// [`Error::Config`]($crate::Error::Config).
            pub fn mirror(a: $client, b: $client, policy: $crate::routes::ReadPolicy) -> $crate::Result<Router> {
                Ok(Router::with($crate::routes::flow::mirror_kind(&a.ring(), &b.ring(), policy)?, a, b))
            }

            /// The route `route` over `pools`, each a name and its client: a prefix selector,
            /// an operation selector, zones, or any of the two-pool routes, nested.
            /// [`Error::Config`]($crate::Error::Config) when the route names a pool not
            /// given, or a policy's settings do not hold (zones sharing a server, a gutter's
            /// main pool that auto-ejects, a command with no route).
            pub fn compose<N: Into<String>>(
                route: &$crate::routes::RouteNode,
                pools: impl IntoIterator<Item = (N, $client)>,
            ) -> $crate::Result<Router> {
                let pools: Vec<(String, $client)> = pools.into_iter().map(|(n, c)| (n.into(), c)).collect();
                if pools.is_empty() {
                    return Err($crate::Error::Config("a route needs at least one pool".into()));
                }
                let counters = std::sync::Arc::<$crate::routes::Counters>::default();
                let root = route.build(&pools, &counters, std::time::SystemTime::now())?;
                Ok(Router { tree: std::sync::Arc::new($crate::routes::policy::Tree { root, pools, counters }) })
            }

            /// The router a route file describes, each pool's client built from the file's
            /// settings and the library's defaults.
            #[cfg(feature = "peer-config")]
            #[cfg_attr(docsrs, doc(cfg(feature = "peer-config")))]
            pub fn from_file(file: &$crate::routes::RouteFile) -> $crate::Result<Router> {
                Router::from_file_with(file, |_, b| b)
            }

            /// [`from_file`](Self::from_file), each pool's client starting from
            /// `base(pool name, builder)` (settings the file does not give, such as
            /// credentials, TLS or pool size); the file's settings are applied over it.
            #[cfg(feature = "peer-config")]
            #[cfg_attr(docsrs, doc(cfg(feature = "peer-config")))]
            pub fn from_file_with(
                file: &$crate::routes::RouteFile,
                mut base: impl FnMut(&str, $crate::Builder<$client>) -> $crate::Builder<$client>,
            ) -> $crate::Result<Router> {
                let mut pools = Vec::with_capacity(file.pools.len());
                for (name, _) in &file.pools {
                    let b = file.builder(name, base(name, <$client>::builder()));
                    pools.push((name.clone(), b.build()?));
                }
                Router::compose(&file.route, pools)
            }

            /// The route's counters so far (every policy of a composed route counts into
            /// them).
            pub fn stats(&self) -> $crate::routes::RouteStats {
                self.tree.counters.snapshot()
            }

            /// The client of pool `role` of a two-pool route (of a composed route: its first
            /// and second pool).
            pub fn pool(&self, role: $crate::routes::PoolRole) -> &$client {
                self.tree.pool(role.index())
            }

            /// The client of the pool named `name` (`new`, `old`, `main`, `gutter`, `a` or `b`
            /// for a two-pool route; a composed route's own names).
            pub fn pool_named(&self, name: &str) -> Option<&$client> {
                self.tree.named(name)
            }

            /// The route's pool names, in order.
            pub fn pool_names(&self) -> Vec<&str> {
                self.tree.pools.iter().map(|(n, _)| n.as_str()).collect()
            }

            /// Where a warm-up or migration stands now (`None` for another route; a composed
            /// route's first migration).
            pub fn phase(&self) -> Option<$crate::routes::Phase> {
                self.tree.root.phase()
            }

            /// `get`: see [the table](crate::routes) for each route.
            pub $($async)? fn get(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.get(key.as_ref()))
            }

            /// `gets`: the value and a token naming the copy it came from, for
            /// [`cas`](Self::cas).
            pub $($async)? fn gets(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::routes::RouteItem>> {
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.gets(key.as_ref()))
            }

            /// Get many keys: see [the table](crate::routes) for each route. A backfill
            /// (warm-up) is one `add` per key that only the old pool had.
            #[must_use = "each key has its own result"]
            pub $($async)? fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<$crate::Result<Option<$crate::Item>>> {
                let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.get_multi(&keys))
            }

            /// A storage command of `key` with `flags` and `expiry` (what `storage_method`
            /// calls).
            $($async)? fn store_for(&self, cmd: $crate::proto::StoreCommand, key: &[u8], value: &[u8], flags: u32, expiry: $crate::Expiry) -> $crate::Result<$crate::StoreOutcome> {
                let w = $crate::routes::Write::Store { cmd, value, flags, exptime: expiry.exptime_now() };
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.write(key, w)).and_then($crate::routes::Written::into_store)
            }

            $crate::core::api::storage_method!(
                /// `set`: see [the table](crate::routes) for each route.
                set, set_raw, Set, [$($async $await)?]
            );
            $crate::core::api::storage_method!(
                /// `add`: see [the table](crate::routes) for each route.
                add, add_raw, Add, [$($async $await)?]
            );
            $crate::core::api::storage_method!(
                /// `replace`: see [the table](crate::routes) for each route.
                replace, replace_raw, Replace, [$($async $await)?]
            );

            /// `append`: see [the table](crate::routes) for each route.
            pub $($async)? fn append(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> $crate::Result<$crate::StoreOutcome> {
                self.store_for($crate::proto::StoreCommand::Append, key.as_ref(), value.as_ref(), 0, $crate::Expiry::NEVER)$(.$await)?
            }

            /// `prepend`: see [the table](crate::routes) for each route.
            pub $($async)? fn prepend(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> $crate::Result<$crate::StoreOutcome> {
                self.store_for($crate::proto::StoreCommand::Prepend, key.as_ref(), value.as_ref(), 0, $crate::Expiry::NEVER)$(.$await)?
            }

            /// `delete`: see [the table](crate::routes) for each route.
            pub $($async)? fn delete(&self, key: impl AsRef<[u8]>) -> $crate::Result<$crate::DeleteOutcome> {
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.write(key.as_ref(), $crate::routes::Write::Delete)).and_then($crate::routes::Written::into_delete)
            }

            /// `touch`: see [the table](crate::routes) for each route.
            pub $($async)? fn touch(&self, key: impl AsRef<[u8]>, expiry: impl Into<$crate::Expiry>) -> $crate::Result<$crate::TouchOutcome> {
                let w = $crate::routes::Write::Touch(expiry.into().exptime_now());
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.write(key.as_ref(), w)).and_then($crate::routes::Written::into_touch)
            }

            /// `incr`: see [the table](crate::routes) for each route.
            pub $($async)? fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
                let w = $crate::routes::Write::Arith { incr: true, delta };
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.write(key.as_ref(), w)).and_then($crate::routes::Written::into_arith)
            }

            /// `decr`: see [the table](crate::routes) for each route.
            pub $($async)? fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
                let w = $crate::routes::Write::Arith { incr: false, delta };
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.write(key.as_ref(), w)).and_then($crate::routes::Written::into_arith)
            }

            /// `cas` with a token from this route's [`gets`](Self::gets), on the copy it came
            /// from only: [`Error::Route`]($crate::Error::Route) when the route would not write
            /// that copy now.
            pub $($async)? fn cas(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                expiry: impl Into<$crate::Expiry>,
                token: &$crate::routes::RouteCas,
            ) -> $crate::Result<$crate::StoreOutcome> {
                self.cas_raw(key, value, 0, expiry, token)$(.$await)?
            }

            /// `cas` with the client flags `flags`.
            pub $($async)? fn cas_raw(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<$crate::Expiry>,
                token: &$crate::routes::RouteCas,
            ) -> $crate::Result<$crate::StoreOutcome> {
                let v = $crate::routes::policy::Stored { value: value.as_ref(), flags, expiry: expiry.into() };
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.cas(key.as_ref(), v, token))
            }

            /// Read `key` from both pools and compare value and flags: false (and counted as a
            /// divergence) when both have it and the copies differ. A copy missing from one
            /// pool is not a divergence (it was deleted, or never reached it).
            pub $($async)? fn verify(&self, key: impl AsRef<[u8]>) -> $crate::Result<bool> {
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.verify(key.as_ref()))
            }

            /// Set many items: see [the table](crate::routes) for each route. Results in
            /// input order.
            #[must_use = "each item has its own result"]
            pub $($async)? fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
                &self,
                items: &[(K, V)],
                flags: u32,
                expiry: impl Into<$crate::Expiry>,
            ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
                let items: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.set_multi(&items, flags, expiry.into()))
            }

            /// Delete many keys: see [the table](crate::routes) for each route. Results in
            /// input order.
            #[must_use = "each key has its own result"]
            pub $($async)? fn delete_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
                let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
                $crate::core::transport::drive!($($await)?; self.tree.pool(0); self.tree.root.delete_multi(&keys))
            }
        }
    };
}

pub(crate) use router_handle;
