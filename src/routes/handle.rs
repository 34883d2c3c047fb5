//! The `Router` handle, defined once and expanded in each client's module. Each method is one
//! call: a constructor of [`crate::routes::flow`], or a flow of its [`Route`](super::flow::Route)
//! over the two clients, run with [`drive!`](crate::core::transport::drive) (polled once for
//! the blocking client, `.await`ed by the async one). What to do with each command is decided
//! by the sans-IO parts of [`crate::routes`].

/// Expands, in a client's module, `Router` over `$client` (`async await` for the async
/// client). The client implements [`Transport`](crate::core::transport::Transport).
macro_rules! router_handle {
    ($client:ty, $example:literal $(, $async:tt $await:tt)?) => {
        /// Two pools (each a client: a ring and its servers) combined by one route: warm-up
        /// or migration from an old ring to a new one, a gutter pool for failed servers, or
        /// two mirrored pools. What each command does under each route is in
        /// [`memshard::routes`](crate::routes).
        ///
        #[doc = $example]
        #[derive(Clone)]
        pub struct Router {
            /// First and second pool (new/old, main/gutter, a/b).
            pools: [$client; 2],
            state: std::sync::Arc<$crate::routes::State>,
        }

        impl std::fmt::Debug for Router {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.route().describe(f)
            }
        }

        impl Router {
            fn route(&self) -> $crate::routes::flow::Route<'_, $client> {
                $crate::routes::flow::Route::new(&self.pools, &self.state)
            }

            fn with(kind: $crate::routes::Kind, first: $client, second: $client) -> Router {
                Router {
                    pools: [first, second],
                    state: std::sync::Arc::new($crate::routes::State::new(kind)),
                }
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

            /// The route's counters so far.
            pub fn stats(&self) -> $crate::routes::RouteStats {
                self.state.counters.snapshot()
            }

            /// The client of pool `role`.
            pub fn pool(&self, role: $crate::routes::PoolRole) -> &$client {
                &self.pools[role.index()]
            }

            /// Where a warm-up or migration stands now (`None` for a gutter or mirror).
            pub fn phase(&self) -> Option<$crate::routes::Phase> {
                self.state.kind.phase(std::time::SystemTime::now())
            }

            /// `get`: see [the table](crate::routes) for each route.
            pub $($async)? fn get(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().get(key.as_ref()))
            }

            /// `gets`: the value and a token naming the copy it came from, for
            /// [`cas`](Self::cas).
            pub $($async)? fn gets(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::routes::RouteItem>> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().gets(key.as_ref()))
            }

            /// Get many keys: see [the table](crate::routes) for each route. A backfill
            /// (warm-up) is one `add` per key that only the old pool had.
            #[must_use = "each key has its own result"]
            pub $($async)? fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<$crate::Result<Option<$crate::Item>>> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().get_multi(keys))
            }

            /// A storage command of `key` with `flags` and `expiry` (what `storage_method`
            /// calls).
            $($async)? fn store_for(&self, cmd: $crate::proto::StoreCommand, key: &[u8], value: &[u8], flags: u32, expiry: $crate::Expiry) -> $crate::Result<$crate::StoreOutcome> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().store(cmd, (key, value), (flags, expiry)))
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
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().delete(key.as_ref()))
            }

            /// `touch`: see [the table](crate::routes) for each route.
            pub $($async)? fn touch(&self, key: impl AsRef<[u8]>, expiry: impl Into<$crate::Expiry>) -> $crate::Result<$crate::TouchOutcome> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().touch(key.as_ref(), expiry.into()))
            }

            /// `incr`: see [the table](crate::routes) for each route.
            pub $($async)? fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().arith(true, key.as_ref(), delta))
            }

            /// `decr`: see [the table](crate::routes) for each route.
            pub $($async)? fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().arith(false, key.as_ref(), delta))
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
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().cas(key.as_ref(), value.as_ref(), flags, expiry.into(), token))
            }

            /// Read `key` from both pools and compare value and flags: false (and counted as a
            /// divergence) when both have it and the copies differ. A copy missing from one
            /// pool is not a divergence (it was deleted, or never reached it).
            pub $($async)? fn verify(&self, key: impl AsRef<[u8]>) -> $crate::Result<bool> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().verify(key.as_ref()))
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
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().set_multi(items, flags, expiry.into()))
            }

            /// Delete many keys: see [the table](crate::routes) for each route. Results in
            /// input order.
            #[must_use = "each key has its own result"]
            pub $($async)? fn delete_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
                $crate::core::transport::drive!($($await)?; &self.pools[0]; self.route().delete_multi(keys))
            }
        }
    };
}

pub(crate) use router_handle;
