//! The test-side view of a client: one trait, [`Api`], with every operation of the blocking
//! [`memshard::Client`] as an `async fn`, implemented once (by a macro) for the blocking client
//! (each method calls the blocking method directly) and for the async client (each method
//! awaits the async one). Scenarios are written against the trait, so each runs unchanged on
//! both clients.
//!
//! The operations the async client once lacked are in [`ParityApi`] and
//! [`ParitySettings`], implemented for both clients.
//!
//! [`Meta`] wraps either client to run the same scenarios over the meta protocol:
//! its builder starts with `.protocol(Protocol::Meta)`, so every client a scenario builds
//! speaks meta, and nothing is shared between tests running in parallel.
#![allow(async_fn_in_trait, dead_code)]
// A client method missing (or renamed) would make `<Client>::method(self)` call the trait method
// being defined: an error, not a stack overflow at run time.
#![deny(unconditional_recursion)]

use memshard::config::PeerConfig;
use memshard::near::{NearCacheConfig, NearCacheStats};
use memshard::value::{Codec, FromValue, ToValue, Transcoder, Value};
use memshard::watch::Watcher;
use memshard::{
    DeleteOutcome, FailurePolicy, Flavor, HashTag, HotKey, HotKeys, Item, KeyHash, Protocol,
    Result, Ring, Server, Stats, StoreOutcome, TouchOutcome,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Builder settings, the same names and arguments on both builders. A scenario builds its
/// client with [`build`] and a closure over this trait, so both clients get the same settings.
pub trait Settings: Sized {
    type Client;
    fn build(self) -> Result<Self::Client>;
    fn servers(self, servers: Vec<Server>) -> Self;
    /// A server list in any format `parse_server_list` reads (a bad list is a test bug).
    fn server_list(self, text: &str) -> Self;
    fn flavor(self, flavor: Flavor) -> Self;
    fn hash(self, hash: KeyHash) -> Self;
    fn hash_tag(self, tag: HashTag) -> Self;
    fn pool_size(self, n: u32) -> Self;
    fn min_idle(self, n: u32) -> Self;
    fn checkout_timeout(self, d: Duration) -> Self;
    fn ping_on_checkout(self, on: bool) -> Self;
    fn connect_timeout(self, d: Duration) -> Self;
    fn read_timeout(self, d: Duration) -> Self;
    fn write_timeout(self, d: Duration) -> Self;
    fn max_value_size(self, bytes: usize) -> Self;
    fn prefix(self, prefix: &str) -> Self;
    fn hash_with_prefix(self, on: bool) -> Self;
    fn failure_policy(self, policy: FailurePolicy) -> Self;
    fn rejoin_limit(self, keys: usize) -> Self;
    fn codec(self, codec: Transcoder) -> Self;
    fn protocol(self, protocol: Protocol) -> Self;
}

/// Builder settings the async builder once lacked, on both builders.
pub trait ParitySettings: Settings {
    fn peer_config(self, cfg: PeerConfig) -> Self;
    fn near_cache(self, cfg: NearCacheConfig) -> Self;
    fn hot_keys(self, cfg: HotKeys) -> Self;
}

macro_rules! impl_settings {
    ($builder:ty, $client:ty) => {
        impl crate::api::Settings for $builder {
            type Client = $client;
            fn build(self) -> Result<$client> {
                <$builder>::build(self)
            }
            fn servers(self, servers: Vec<Server>) -> Self {
                <$builder>::servers(self, servers)
            }
            fn server_list(self, text: &str) -> Self {
                <$builder>::server_list(self, text)
                    .unwrap_or_else(|e| panic!("server list {text:?}: {e}"))
            }
            fn flavor(self, flavor: Flavor) -> Self {
                <$builder>::flavor(self, flavor)
            }
            fn hash(self, hash: KeyHash) -> Self {
                <$builder>::hash(self, hash)
            }
            fn hash_tag(self, tag: HashTag) -> Self {
                <$builder>::hash_tag(self, tag)
            }
            fn pool_size(self, n: u32) -> Self {
                <$builder>::pool_size(self, n)
            }
            fn min_idle(self, n: u32) -> Self {
                <$builder>::min_idle(self, n)
            }
            fn checkout_timeout(self, d: Duration) -> Self {
                <$builder>::checkout_timeout(self, d)
            }
            fn ping_on_checkout(self, on: bool) -> Self {
                <$builder>::ping_on_checkout(self, on)
            }
            fn connect_timeout(self, d: Duration) -> Self {
                <$builder>::connect_timeout(self, d)
            }
            fn read_timeout(self, d: Duration) -> Self {
                <$builder>::read_timeout(self, d)
            }
            fn write_timeout(self, d: Duration) -> Self {
                <$builder>::write_timeout(self, d)
            }
            fn max_value_size(self, bytes: usize) -> Self {
                <$builder>::max_value_size(self, bytes)
            }
            fn prefix(self, prefix: &str) -> Self {
                <$builder>::prefix(self, prefix)
            }
            fn hash_with_prefix(self, on: bool) -> Self {
                <$builder>::hash_with_prefix(self, on)
            }
            fn failure_policy(self, policy: FailurePolicy) -> Self {
                <$builder>::failure_policy(self, policy)
            }
            fn rejoin_limit(self, keys: usize) -> Self {
                <$builder>::rejoin_limit(self, keys)
            }
            fn codec(self, codec: memshard::value::Transcoder) -> Self {
                <$builder>::codec(self, codec)
            }
            fn protocol(self, protocol: memshard::Protocol) -> Self {
                <$builder>::protocol(self, protocol)
            }
        }
    };
}

macro_rules! impl_parity_settings {
    ($builder:ty) => {
        impl crate::api::ParitySettings for $builder {
            fn peer_config(self, cfg: PeerConfig) -> Self {
                <$builder>::peer_config(self, cfg)
            }
            fn near_cache(self, cfg: NearCacheConfig) -> Self {
                <$builder>::near_cache(self, cfg)
            }
            fn hot_keys(self, cfg: HotKeys) -> Self {
                <$builder>::hot_keys(self, cfg)
            }
        }
    };
}

/// Every operation of a client, with the blocking client's names, arguments and results.
pub trait Api: Sized + Clone + Send + Sync + 'static {
    /// `blocking` or `async` (`blocking+meta`, `async+meta` for [`Meta`]), for messages.
    const NAME: &'static str;
    /// The protocol every client built by [`build`] speaks: what a scenario that injects
    /// bytes must fake.
    const PROTOCOL: Protocol = Protocol::Text;
    type Builder: Settings<Client = Self>;
    fn builder() -> Self::Builder;

    async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>>;
    async fn gets(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>>;
    async fn gat(
        &self,
        key: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<Option<Item>>;
    async fn gats(
        &self,
        key: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<Option<Item>>;
    async fn set_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome>;
    async fn set(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.set_raw(key, value, 0, expiry).await
    }
    async fn add_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome>;
    async fn add(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.add_raw(key, value, 0, expiry).await
    }
    async fn replace_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome>;
    async fn replace(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.replace_raw(key, value, 0, expiry).await
    }
    async fn append(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<StoreOutcome>;
    async fn prepend(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>)
    -> Result<StoreOutcome>;
    async fn cas_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
        cas: u64,
    ) -> Result<StoreOutcome>;
    async fn cas(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
        cas: u64,
    ) -> Result<StoreOutcome> {
        self.cas_raw(key, value, 0, expiry, cas).await
    }
    async fn delete(&self, key: impl AsRef<[u8]>) -> Result<DeleteOutcome>;
    async fn get_value(&self, key: impl AsRef<[u8]>) -> Result<Option<Value>>;
    async fn get_value_with(&self, codec: Codec, key: impl AsRef<[u8]>) -> Result<Option<Value>>;
    async fn get_as<T: FromValue>(&self, key: impl AsRef<[u8]>) -> Result<Option<T>>;
    async fn set_value<T: ToValue + Sync + ?Sized>(
        &self,
        key: impl AsRef<[u8]>,
        value: &T,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome>;
    async fn set_value_with<T: ToValue + Sync + ?Sized>(
        &self,
        codec: Codec,
        key: impl AsRef<[u8]>,
        value: &T,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome>;
    async fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>>;
    async fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>>;
    async fn touch(
        &self,
        key: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<TouchOutcome>;
    async fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<Option<Item>>>;
    async fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        &self,
        items: &[(K, V)],
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<StoreOutcome>>;
    async fn delete_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<DeleteOutcome>>;
    async fn version(&self) -> Vec<(Server, Result<String>)>;
    async fn flush_all(&self, delay: Option<u32>) -> Vec<(Server, Result<()>)>;
    async fn verbosity(&self, level: u32) -> Vec<(Server, Result<()>)>;
    async fn stats(&self, group: Option<&str>) -> Vec<(Server, Result<Stats>)>;
    fn set_servers(&self, servers: Vec<Server>) -> Result<()>;
    fn down_servers(&self) -> Vec<Server>;
    fn ring(&self) -> Arc<Ring>;
    /// The ring requests route on now (an `Arc` whichever the client returns).
    fn current_ring(&self) -> Arc<Ring>;

    /// `tasks` callers at once (threads for the blocking client, tokio tasks for the async
    /// one), each making `each` gets of `key`; every result.
    async fn gets_at_once(&self, key: &str, tasks: usize, each: usize)
    -> Vec<Result<Option<Item>>>;
}

/// The operations the async client once lacked, on both clients.
pub trait ParityApi: Api<Builder: ParitySettings> {
    /// `Client::replicated`'s handle, as a [`Replicated`] that calls the client's own handle
    /// (so that the tests need not name its type, which the rewrite moves).
    fn replicated(&self, key: impl AsRef<[u8]>, n: usize) -> Replicated<'_, Self> {
        Replicated {
            client: self,
            key: key.as_ref().to_vec(),
            n,
        }
    }
    fn near_cache_stats(&self) -> Option<NearCacheStats>;
    fn hot_keys(&self) -> Vec<HotKey>;
    fn reset_hot_keys(&self);
    async fn set_multi_noreply<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        &self,
        items: &[(K, V)],
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<()>>;
    fn watch_server_file(&self, path: impl Into<PathBuf>, interval: Duration) -> Watcher;
    fn watch_dns(&self, name: &str, port: u16, weight: u32, interval: Duration) -> Watcher;

    // `client.replicated(key, n).<op>(..)`, one call each
    fn replicated_servers(&self, key: &[u8], n: usize) -> Vec<Server>;
    async fn replicated_set(
        &self,
        key: &[u8],
        n: usize,
        value: &[u8],
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<StoreOutcome>>;
    async fn replicated_get(&self, key: &[u8], n: usize) -> Result<Option<Item>>;
    async fn replicated_delete(&self, key: &[u8], n: usize) -> Vec<Result<DeleteOutcome>>;
}

/// `client.replicated(key, n)`: each call makes the client's own handle and calls it.
pub struct Replicated<'c, C> {
    client: &'c C,
    key: Vec<u8>,
    n: usize,
}

impl<C: ParityApi> Replicated<'_, C> {
    pub fn servers(&self) -> Vec<Server> {
        self.client.replicated_servers(&self.key, self.n)
    }
    pub async fn set(
        &self,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<StoreOutcome>> {
        self.client
            .replicated_set(&self.key, self.n, value.as_ref(), flags, expiry)
            .await
    }
    pub async fn get(&self) -> Result<Option<Item>> {
        self.client.replicated_get(&self.key, self.n).await
    }
    pub async fn delete(&self) -> Vec<Result<DeleteOutcome>> {
        self.client.replicated_delete(&self.key, self.n).await
    }
}

/// `impl Api for $client`: every method calls the client's own, followed by `$($aw)*`
/// (nothing for the blocking client, `.await` for the async one).
macro_rules! impl_api {
    ($client:ty, $builder:ty, $name:literal, $gets_at_once:path, $($aw:tt)*) => {
        impl_settings!($builder, $client);

        impl crate::api::Api for $client {
            const NAME: &'static str = $name;
            type Builder = $builder;
            fn builder() -> $builder {
                <$client>::builder()
            }
            async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
                <$client>::get(self, key) $($aw)*
            }
            async fn gets(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
                <$client>::gets(self, key) $($aw)*
            }
            async fn gat(&self, key: impl AsRef<[u8]>, expiry: impl Into<memshard::Expiry>) -> Result<Option<Item>> {
                <$client>::gat(self, key, expiry) $($aw)*
            }
            async fn gats(&self, key: impl AsRef<[u8]>, expiry: impl Into<memshard::Expiry>) -> Result<Option<Item>> {
                <$client>::gats(self, key, expiry) $($aw)*
            }
            async fn set_raw(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
            ) -> Result<StoreOutcome> {
                <$client>::set_raw(self, key, value, flags, expiry) $($aw)*
            }
            async fn add_raw(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
            ) -> Result<StoreOutcome> {
                <$client>::add_raw(self, key, value, flags, expiry) $($aw)*
            }
            async fn replace_raw(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
            ) -> Result<StoreOutcome> {
                <$client>::replace_raw(self, key, value, flags, expiry) $($aw)*
            }
            async fn append(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
            ) -> Result<StoreOutcome> {
                <$client>::append(self, key, value) $($aw)*
            }
            async fn prepend(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
            ) -> Result<StoreOutcome> {
                <$client>::prepend(self, key, value) $($aw)*
            }
            async fn cas_raw(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
                cas: u64,
            ) -> Result<StoreOutcome> {
                <$client>::cas_raw(self, key, value, flags, expiry, cas) $($aw)*
            }
            async fn delete(&self, key: impl AsRef<[u8]>) -> Result<DeleteOutcome> {
                <$client>::delete(self, key) $($aw)*
            }
            async fn get_value(&self, key: impl AsRef<[u8]>) -> Result<Option<memshard::value::Value>> {
                <$client>::get_value(self, key) $($aw)*
            }
            async fn get_value_with(
                &self,
                codec: memshard::value::Codec,
                key: impl AsRef<[u8]>,
            ) -> Result<Option<memshard::value::Value>> {
                <$client>::get_value_with(self, codec, key) $($aw)*
            }
            async fn get_as<T: memshard::value::FromValue>(&self, key: impl AsRef<[u8]>) -> Result<Option<T>> {
                <$client>::get_as(self, key) $($aw)*
            }
            async fn set_value<T: memshard::value::ToValue + Sync + ?Sized>(
                &self,
                key: impl AsRef<[u8]>,
                value: &T,
                expiry: impl Into<memshard::Expiry>,
            ) -> Result<StoreOutcome> {
                <$client>::set_value(self, key, value, expiry) $($aw)*
            }
            async fn set_value_with<T: memshard::value::ToValue + Sync + ?Sized>(
                &self,
                codec: memshard::value::Codec,
                key: impl AsRef<[u8]>,
                value: &T,
                expiry: impl Into<memshard::Expiry>,
            ) -> Result<StoreOutcome> {
                <$client>::set_value_with(self, codec, key, value, expiry) $($aw)*
            }
            async fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
                <$client>::incr(self, key, delta) $($aw)*
            }
            async fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
                <$client>::decr(self, key, delta) $($aw)*
            }
            async fn touch(&self, key: impl AsRef<[u8]>, expiry: impl Into<memshard::Expiry>) -> Result<TouchOutcome> {
                <$client>::touch(self, key, expiry) $($aw)*
            }
            async fn get_multi<K: AsRef<[u8]> + Sync>(
                &self,
                keys: &[K],
            ) -> Vec<Result<Option<Item>>> {
                <$client>::get_multi(self, keys) $($aw)*
            }
            async fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
                &self,
                items: &[(K, V)],
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
            ) -> Vec<Result<StoreOutcome>> {
                <$client>::set_multi(self, items, flags, expiry) $($aw)*
            }
            async fn delete_multi<K: AsRef<[u8]> + Sync>(
                &self,
                keys: &[K],
            ) -> Vec<Result<DeleteOutcome>> {
                <$client>::delete_multi(self, keys) $($aw)*
            }
            async fn version(&self) -> Vec<(Server, Result<String>)> {
                <$client>::version(self) $($aw)*
            }
            async fn flush_all(&self, delay: Option<u32>) -> Vec<(Server, Result<()>)> {
                <$client>::flush_all(self, delay) $($aw)*
            }
            async fn verbosity(&self, level: u32) -> Vec<(Server, Result<()>)> {
                <$client>::verbosity(self, level) $($aw)*
            }
            async fn stats(&self, group: Option<&str>) -> Vec<(Server, Result<Stats>)> {
                <$client>::stats(self, group) $($aw)*
            }
            fn set_servers(&self, servers: Vec<Server>) -> Result<()> {
                <$client>::set_servers(self, servers)
            }
            fn down_servers(&self) -> Vec<Server> {
                <$client>::down_servers(self)
            }
            fn ring(&self) -> Arc<Ring> {
                <$client>::ring(self)
            }
            fn current_ring(&self) -> Arc<Ring> {
                Arc::<Ring>::from(<$client>::current_ring(self))
            }
            async fn gets_at_once(
                &self,
                key: &str,
                tasks: usize,
                each: usize,
            ) -> Vec<Result<Option<Item>>> {
                $gets_at_once(self, key, tasks, each) $($aw)*
            }
        }
    };
}

/// `impl ParityApi for $client` and `ParitySettings for $builder`, as [`impl_api`].
macro_rules! impl_parity_api {
    ($client:ty, $builder:ty, $($aw:tt)*) => {
        impl_parity_settings!($builder);

        impl crate::api::ParityApi for $client {
            fn near_cache_stats(&self) -> Option<NearCacheStats> {
                <$client>::near_cache_stats(self)
            }
            fn hot_keys(&self) -> Vec<HotKey> {
                <$client>::hot_keys(self)
            }
            fn reset_hot_keys(&self) {
                <$client>::reset_hot_keys(self)
            }
            async fn set_multi_noreply<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
                &self,
                items: &[(K, V)],
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
            ) -> Vec<Result<()>> {
                <$client>::set_multi_noreply(self, items, flags, expiry) $($aw)*
            }
            fn watch_server_file(&self, path: impl Into<PathBuf>, interval: Duration) -> Watcher {
                <$client>::watch_server_file(self, path, interval)
            }
            fn watch_dns(&self, name: &str, port: u16, weight: u32, interval: Duration) -> Watcher {
                <$client>::watch_dns(self, name, port, weight, interval)
            }
            fn replicated_servers(&self, key: &[u8], n: usize) -> Vec<Server> {
                <$client>::replicated(self, key, n).servers()
            }
            async fn replicated_set(
                &self,
                key: &[u8],
                n: usize,
                value: &[u8],
                flags: u32,
                expiry: impl Into<memshard::Expiry>,
            ) -> Vec<Result<StoreOutcome>> {
                <$client>::replicated(self, key, n).set(value, flags, expiry) $($aw)*
            }
            async fn replicated_get(&self, key: &[u8], n: usize) -> Result<Option<Item>> {
                <$client>::replicated(self, key, n).get() $($aw)*
            }
            async fn replicated_delete(&self, key: &[u8], n: usize) -> Vec<Result<DeleteOutcome>> {
                <$client>::replicated(self, key, n).delete() $($aw)*
            }
        }
    };
}

// The implementations live in modules that import the types but not the traits: a call
// `<Client>::method(self, ..)` then resolves to the client's own method or fails to compile,
// never to the trait method being defined (which would recurse).
mod blocking_impl {
    use memshard::config::PeerConfig;
    use memshard::near::{NearCacheConfig, NearCacheStats};
    use memshard::watch::Watcher;
    use memshard::{
        DeleteOutcome, FailurePolicy, Flavor, HashTag, HotKey, HotKeys, Item, KeyHash, Result,
        Ring, Server, Stats, StoreOutcome, TouchOutcome,
    };
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    impl_api!(
        memshard::Client,
        memshard::Builder<memshard::Client>,
        "blocking",
        threads,
    );
    impl_parity_api!(memshard::Client, memshard::Builder<memshard::Client>,);

    fn threads(
        c: &memshard::Client,
        key: &str,
        tasks: usize,
        each: usize,
    ) -> Vec<Result<Option<Item>>> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..tasks)
                .map(|_| s.spawn(|| (0..each).map(|_| c.get(key)).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        })
    }
}

#[cfg(feature = "async")]
mod async_impl {
    use memshard::config::PeerConfig;
    use memshard::near::{NearCacheConfig, NearCacheStats};
    use memshard::watch::Watcher;
    use memshard::{
        DeleteOutcome, FailurePolicy, Flavor, HashTag, HotKey, HotKeys, Item, KeyHash, Result,
        Ring, Server, Stats, StoreOutcome, TouchOutcome,
    };
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    impl_api!(memshard::aio::Client, memshard::aio::Builder, "async", tasks, .await);

    impl_parity_api!(memshard::aio::Client, memshard::aio::Builder, .await);

    async fn tasks(
        c: &memshard::aio::Client,
        key: &str,
        tasks: usize,
        each: usize,
    ) -> Vec<Result<Option<Item>>> {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let (c, key) = (c.clone(), key.to_string());
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    for _ in 0..each {
                        out.push(c.get(&key).await);
                    }
                    out
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.await.unwrap());
        }
        all
    }
}

/// A client of type `C` built with `settings` applied to a fresh builder (the same closure
/// gives both clients the same settings).
pub fn build<C: Api>(settings: impl FnOnce(C::Builder) -> C::Builder) -> C {
    settings(C::builder())
        .build()
        .unwrap_or_else(|e| panic!("{}: build: {e}", C::NAME))
}

/// Builds with `settings`, keeping the error.
pub fn try_build<C: Api>(settings: impl FnOnce(C::Builder) -> C::Builder) -> Result<C> {
    settings(C::builder()).build()
}

/// `text` or `meta` by [`Api::PROTOCOL`]: the bytes a scenario fakes for the protocol the
/// client speaks.
pub fn by_protocol<C: Api, T>(text: T, meta: T) -> T {
    match C::PROTOCOL {
        Protocol::Text => text,
        Protocol::Meta => meta,
    }
}

// ---------------------------------------------------------------------------------------
// the same client over the meta protocol
// ---------------------------------------------------------------------------------------

/// A client of type `C` whose builder starts with `.protocol(Protocol::Meta)`: a scenario run
/// on `Meta<C>` builds every client with meta commands and is otherwise unchanged. Per type,
/// not per thread or process, so parallel tests and the async client's worker threads cannot
/// see another test's protocol.
#[derive(Clone)]
pub struct Meta<C>(pub C);

/// [`Meta`]'s builder: the client's own, started with meta.
pub struct MetaBuilder<B>(B);

/// The name of a client in messages when it speaks meta (a const cannot be concatenated from
/// a generic one).
pub trait MetaName {
    const META_NAME: &'static str;
}

impl MetaName for memshard::Client {
    const META_NAME: &'static str = "blocking+meta";
}

#[cfg(feature = "async")]
impl MetaName for memshard::aio::Client {
    const META_NAME: &'static str = "async+meta";
}

impl<B: Settings> Settings for MetaBuilder<B> {
    type Client = Meta<B::Client>;
    fn build(self) -> Result<Meta<B::Client>> {
        self.0.build().map(Meta)
    }
    fn servers(self, servers: Vec<Server>) -> Self {
        MetaBuilder(self.0.servers(servers))
    }
    fn server_list(self, text: &str) -> Self {
        MetaBuilder(self.0.server_list(text))
    }
    fn flavor(self, flavor: Flavor) -> Self {
        MetaBuilder(self.0.flavor(flavor))
    }
    fn hash(self, hash: KeyHash) -> Self {
        MetaBuilder(self.0.hash(hash))
    }
    fn hash_tag(self, tag: HashTag) -> Self {
        MetaBuilder(self.0.hash_tag(tag))
    }
    fn pool_size(self, n: u32) -> Self {
        MetaBuilder(self.0.pool_size(n))
    }
    fn min_idle(self, n: u32) -> Self {
        MetaBuilder(self.0.min_idle(n))
    }
    fn checkout_timeout(self, d: Duration) -> Self {
        MetaBuilder(self.0.checkout_timeout(d))
    }
    fn ping_on_checkout(self, on: bool) -> Self {
        MetaBuilder(self.0.ping_on_checkout(on))
    }
    fn connect_timeout(self, d: Duration) -> Self {
        MetaBuilder(self.0.connect_timeout(d))
    }
    fn read_timeout(self, d: Duration) -> Self {
        MetaBuilder(self.0.read_timeout(d))
    }
    fn write_timeout(self, d: Duration) -> Self {
        MetaBuilder(self.0.write_timeout(d))
    }
    fn max_value_size(self, bytes: usize) -> Self {
        MetaBuilder(self.0.max_value_size(bytes))
    }
    fn prefix(self, prefix: &str) -> Self {
        MetaBuilder(self.0.prefix(prefix))
    }
    fn hash_with_prefix(self, on: bool) -> Self {
        MetaBuilder(self.0.hash_with_prefix(on))
    }
    fn failure_policy(self, policy: FailurePolicy) -> Self {
        MetaBuilder(self.0.failure_policy(policy))
    }
    fn rejoin_limit(self, keys: usize) -> Self {
        MetaBuilder(self.0.rejoin_limit(keys))
    }
    fn codec(self, codec: Transcoder) -> Self {
        MetaBuilder(self.0.codec(codec))
    }
    fn protocol(self, protocol: Protocol) -> Self {
        MetaBuilder(self.0.protocol(protocol))
    }
}

impl<C: Api + MetaName> Api for Meta<C> {
    const NAME: &'static str = C::META_NAME;
    const PROTOCOL: Protocol = Protocol::Meta;
    type Builder = MetaBuilder<C::Builder>;
    fn builder() -> MetaBuilder<C::Builder> {
        MetaBuilder(C::builder().protocol(Protocol::Meta))
    }

    async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
        self.0.get(key).await
    }
    async fn gets(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
        self.0.gets(key).await
    }
    async fn gat(
        &self,
        key: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<Option<Item>> {
        self.0.gat(key, expiry).await
    }
    async fn gats(
        &self,
        key: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<Option<Item>> {
        self.0.gats(key, expiry).await
    }
    async fn set_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.0.set_raw(key, value, flags, expiry).await
    }
    async fn add_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.0.add_raw(key, value, flags, expiry).await
    }
    async fn replace_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.0.replace_raw(key, value, flags, expiry).await
    }
    async fn append(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<StoreOutcome> {
        self.0.append(key, value).await
    }
    async fn prepend(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<StoreOutcome> {
        self.0.prepend(key, value).await
    }
    async fn cas_raw(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
        cas: u64,
    ) -> Result<StoreOutcome> {
        self.0.cas_raw(key, value, flags, expiry, cas).await
    }
    async fn delete(&self, key: impl AsRef<[u8]>) -> Result<DeleteOutcome> {
        self.0.delete(key).await
    }
    async fn get_value(&self, key: impl AsRef<[u8]>) -> Result<Option<Value>> {
        self.0.get_value(key).await
    }
    async fn get_value_with(&self, codec: Codec, key: impl AsRef<[u8]>) -> Result<Option<Value>> {
        self.0.get_value_with(codec, key).await
    }
    async fn get_as<T: FromValue>(&self, key: impl AsRef<[u8]>) -> Result<Option<T>> {
        self.0.get_as(key).await
    }
    async fn set_value<T: ToValue + Sync + ?Sized>(
        &self,
        key: impl AsRef<[u8]>,
        value: &T,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.0.set_value(key, value, expiry).await
    }
    async fn set_value_with<T: ToValue + Sync + ?Sized>(
        &self,
        codec: Codec,
        key: impl AsRef<[u8]>,
        value: &T,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<StoreOutcome> {
        self.0.set_value_with(codec, key, value, expiry).await
    }
    async fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
        self.0.incr(key, delta).await
    }
    async fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
        self.0.decr(key, delta).await
    }
    async fn touch(
        &self,
        key: impl AsRef<[u8]>,
        expiry: impl Into<memshard::Expiry>,
    ) -> Result<TouchOutcome> {
        self.0.touch(key, expiry).await
    }
    async fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        self.0.get_multi(keys).await
    }
    async fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        &self,
        items: &[(K, V)],
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<StoreOutcome>> {
        self.0.set_multi(items, flags, expiry).await
    }
    async fn delete_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<DeleteOutcome>> {
        self.0.delete_multi(keys).await
    }
    async fn version(&self) -> Vec<(Server, Result<String>)> {
        self.0.version().await
    }
    async fn flush_all(&self, delay: Option<u32>) -> Vec<(Server, Result<()>)> {
        self.0.flush_all(delay).await
    }
    async fn verbosity(&self, level: u32) -> Vec<(Server, Result<()>)> {
        self.0.verbosity(level).await
    }
    async fn stats(&self, group: Option<&str>) -> Vec<(Server, Result<Stats>)> {
        self.0.stats(group).await
    }
    fn set_servers(&self, servers: Vec<Server>) -> Result<()> {
        self.0.set_servers(servers)
    }
    fn down_servers(&self) -> Vec<Server> {
        self.0.down_servers()
    }
    fn ring(&self) -> Arc<Ring> {
        self.0.ring()
    }
    fn current_ring(&self) -> Arc<Ring> {
        self.0.current_ring()
    }
    async fn gets_at_once(
        &self,
        key: &str,
        tasks: usize,
        each: usize,
    ) -> Vec<Result<Option<Item>>> {
        self.0.gets_at_once(key, tasks, each).await
    }
}

impl<B: ParitySettings> ParitySettings for MetaBuilder<B> {
    fn peer_config(self, cfg: PeerConfig) -> Self {
        MetaBuilder(self.0.peer_config(cfg))
    }
    fn near_cache(self, cfg: NearCacheConfig) -> Self {
        MetaBuilder(self.0.near_cache(cfg))
    }
    fn hot_keys(self, cfg: HotKeys) -> Self {
        MetaBuilder(self.0.hot_keys(cfg))
    }
}

impl<C: ParityApi + MetaName> ParityApi for Meta<C> {
    fn near_cache_stats(&self) -> Option<NearCacheStats> {
        self.0.near_cache_stats()
    }
    fn hot_keys(&self) -> Vec<HotKey> {
        self.0.hot_keys()
    }
    fn reset_hot_keys(&self) {
        self.0.reset_hot_keys()
    }
    async fn set_multi_noreply<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        &self,
        items: &[(K, V)],
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<()>> {
        self.0.set_multi_noreply(items, flags, expiry).await
    }
    fn watch_server_file(&self, path: impl Into<PathBuf>, interval: Duration) -> Watcher {
        self.0.watch_server_file(path, interval)
    }
    fn watch_dns(&self, name: &str, port: u16, weight: u32, interval: Duration) -> Watcher {
        self.0.watch_dns(name, port, weight, interval)
    }
    fn replicated_servers(&self, key: &[u8], n: usize) -> Vec<Server> {
        self.0.replicated_servers(key, n)
    }
    async fn replicated_set(
        &self,
        key: &[u8],
        n: usize,
        value: &[u8],
        flags: u32,
        expiry: impl Into<memshard::Expiry>,
    ) -> Vec<Result<StoreOutcome>> {
        self.0.replicated_set(key, n, value, flags, expiry).await
    }
    async fn replicated_get(&self, key: &[u8], n: usize) -> Result<Option<Item>> {
        self.0.replicated_get(key, n).await
    }
    async fn replicated_delete(&self, key: &[u8], n: usize) -> Vec<Result<DeleteOutcome>> {
        self.0.replicated_delete(key, n).await
    }
}
