//! Both clients behind one trait for the TLS tests, and the client they build (included by
//! tests/tls_auth_live.rs and cli/tests/tls_live.rs as `mod tls_clients;` through `#[path]`).
#![allow(dead_code)]

use memshard::{
    Builder, Credentials, DeleteOutcome, Expiry, FailurePolicy, Item, Ring, StoreOutcome,
    TlsConfig, aio,
};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The operations the tests use, on both clients (the blocking one calls straight through).
pub trait Kind: Sized + Sync {
    const NAME: &'static str;
    fn builder() -> Builder<Self>;
    fn build(b: Builder<Self>) -> memshard::Result<Self>;
    async fn get(&self, key: &str) -> memshard::Result<Option<Item>>;
    async fn set(&self, key: &str, value: &[u8]) -> memshard::Result<StoreOutcome>;
    async fn delete(&self, key: &str) -> memshard::Result<DeleteOutcome>;
    async fn get_multi(&self, keys: &[String]) -> Vec<memshard::Result<Option<Item>>>;
    async fn set_multi(&self, items: &[(String, Vec<u8>)]) -> Vec<memshard::Result<StoreOutcome>>;
    fn ring(&self) -> Arc<Ring>;
    /// `f(0)` .. `f(n - 1)` at the same time: threads for the blocking client, futures for the
    /// async one.
    async fn concurrently<F, Fut>(n: usize, f: F)
    where
        F: Fn(usize) -> Fut + Sync,
        Fut: Future<Output = ()>;
}

impl Kind for memshard::Client {
    const NAME: &'static str = "memshard::Client";
    fn builder() -> Builder<Self> {
        memshard::Client::builder()
    }
    fn build(b: Builder<Self>) -> memshard::Result<Self> {
        b.build()
    }
    async fn get(&self, key: &str) -> memshard::Result<Option<Item>> {
        memshard::Client::get(self, key)
    }
    async fn set(&self, key: &str, value: &[u8]) -> memshard::Result<StoreOutcome> {
        memshard::Client::set(self, key, value, Expiry::NEVER)
    }
    async fn delete(&self, key: &str) -> memshard::Result<DeleteOutcome> {
        memshard::Client::delete(self, key)
    }
    async fn get_multi(&self, keys: &[String]) -> Vec<memshard::Result<Option<Item>>> {
        memshard::Client::get_multi(self, keys)
    }
    async fn set_multi(&self, items: &[(String, Vec<u8>)]) -> Vec<memshard::Result<StoreOutcome>> {
        memshard::Client::set_multi(self, items, 0, Expiry::NEVER)
    }
    fn ring(&self) -> Arc<Ring> {
        memshard::Client::ring(self)
    }
    async fn concurrently<F, Fut>(n: usize, f: F)
    where
        F: Fn(usize) -> Fut + Sync,
        Fut: Future<Output = ()>,
    {
        std::thread::scope(|s| {
            for i in 0..n {
                let f = &f;
                s.spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("worker runtime")
                        .block_on(f(i))
                });
            }
        });
    }
}

impl Kind for aio::Client {
    const NAME: &'static str = "memshard::aio::Client";
    fn builder() -> Builder<Self> {
        aio::Client::builder()
    }
    fn build(b: Builder<Self>) -> memshard::Result<Self> {
        b.build()
    }
    async fn get(&self, key: &str) -> memshard::Result<Option<Item>> {
        aio::Client::get(self, key).await
    }
    async fn set(&self, key: &str, value: &[u8]) -> memshard::Result<StoreOutcome> {
        aio::Client::set(self, key, value, Expiry::NEVER).await
    }
    async fn delete(&self, key: &str) -> memshard::Result<DeleteOutcome> {
        aio::Client::delete(self, key).await
    }
    async fn get_multi(&self, keys: &[String]) -> Vec<memshard::Result<Option<Item>>> {
        aio::Client::get_multi(self, keys).await
    }
    async fn set_multi(&self, items: &[(String, Vec<u8>)]) -> Vec<memshard::Result<StoreOutcome>> {
        aio::Client::set_multi(self, items, 0, Expiry::NEVER).await
    }
    fn ring(&self) -> Arc<Ring> {
        aio::Client::ring(self)
    }
    async fn concurrently<F, Fut>(n: usize, f: F)
    where
        F: Fn(usize) -> Fut + Sync,
        Fut: Future<Output = ()>,
    {
        futures_util::future::join_all((0..n).map(f)).await;
    }
}

/// A client of the servers in `list` with generous timeouts, one connection per server, and
/// the TLS and credentials given.
pub fn client<C: Kind>(list: &str, tls: Option<TlsConfig>, creds: Option<Credentials>) -> C {
    try_client(list, tls, creds).unwrap_or_else(|e| panic!("{}: build: {e}", C::NAME))
}

pub fn try_client<C: Kind>(
    list: &str,
    tls: Option<TlsConfig>,
    creds: Option<Credentials>,
) -> memshard::Result<C> {
    let mut b = C::builder()
        .server_list(list)
        .expect("server list")
        .pool_size(2)
        .connect_timeout(Duration::from_secs(5))
        .read_timeout(Duration::from_secs(5))
        .write_timeout(Duration::from_secs(5))
        .checkout_timeout(Duration::from_secs(5))
        // every request reaches the server: a refusal is never turned into ServerDown
        .failure_policy(FailurePolicy::default().with_failure_limit(0));
    if let Some(t) = tls {
        b = b.tls(t);
    }
    if let Some(c) = creds {
        b = b.credentials(c);
    }
    C::build(b)
}
