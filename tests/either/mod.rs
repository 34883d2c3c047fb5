//! One client API over the blocking and the async client, for the scenarios that run the same
//! steps on both (tests/rejoin_live.rs, tests/reeject_live.rs). A folder of its own, not in
//! `common`: the CLI package shares `common` and has no `async` feature.

#![allow(dead_code)] // each test binary uses its own part

use memshard::{Client, Expiry, Server};

/// The runtime an async client of these scenarios runs on.
#[cfg(feature = "async")]
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The operations the rejoin scenarios need, on either client.
pub enum Api {
    Blocking(Client),
    #[cfg(feature = "async")]
    Async(memshard::aio::Client, tokio::runtime::Runtime),
}

impl Api {
    pub fn set(&self, k: &str, v: &str) {
        self.try_set(k, v)
            .unwrap_or_else(|e| panic!("set {k}: {e}"));
    }

    pub fn try_set(&self, k: &str, v: &str) -> memshard::Result<()> {
        let r = match self {
            Api::Blocking(c) => c.set(k, v, Expiry::NEVER),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.set(k, v, Expiry::NEVER)),
        };
        r.map(drop)
    }

    pub fn add(&self, k: &str, v: &str) {
        let r = match self {
            Api::Blocking(c) => c.add(k, v, Expiry::NEVER),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.add(k, v, Expiry::NEVER)),
        };
        r.unwrap_or_else(|e| panic!("add {k}: {e}"));
    }

    pub fn incr(&self, k: &str) -> Option<u64> {
        let r = match self {
            Api::Blocking(c) => c.incr(k, 1),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.incr(k, 1)),
        };
        r.unwrap_or_else(|e| panic!("incr {k}: {e}"))
    }

    pub fn set_multi(&self, items: &[(String, String)]) {
        let r = match self {
            Api::Blocking(c) => c.set_multi(items, 0, Expiry::NEVER),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.set_multi(items, 0, Expiry::NEVER)),
        };
        for (res, (k, _)) in r.into_iter().zip(items) {
            res.unwrap_or_else(|e| panic!("set_multi {k}: {e}"));
        }
    }

    /// The blocking client's noreply sets; the async client has none: plain sets.
    pub fn set_multi_noreply(&self, items: &[(String, String)]) {
        match self {
            Api::Blocking(c) => {
                for (res, (k, _)) in c
                    .set_multi_noreply(items, 0, Expiry::NEVER)
                    .into_iter()
                    .zip(items)
                {
                    res.unwrap_or_else(|e| panic!("set_multi_noreply {k}: {e}"));
                }
            }
            #[cfg(feature = "async")]
            Api::Async(..) => self.set_multi(items),
        }
    }

    pub fn delete(&self, k: &str) {
        let r = match self {
            Api::Blocking(c) => c.delete(k),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.delete(k)),
        };
        r.unwrap_or_else(|e| panic!("delete {k}: {e}"));
    }

    pub fn delete_multi(&self, keys: &[String]) {
        let r = match self {
            Api::Blocking(c) => c.delete_multi(keys),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.delete_multi(keys)),
        };
        for (res, k) in r.into_iter().zip(keys) {
            res.unwrap_or_else(|e| panic!("delete_multi {k}: {e}"));
        }
    }

    /// `get` through the client: the value, or `None` for a miss or an error.
    pub fn get(&self, k: &str) -> Option<Vec<u8>> {
        let r = match self {
            Api::Blocking(c) => c.get(k),
            #[cfg(feature = "async")]
            Api::Async(c, rt) => rt.block_on(c.get(k)),
        };
        r.ok().flatten().map(|i| i.value.to_vec())
    }

    pub fn down(&self) -> Vec<Server> {
        match self {
            Api::Blocking(c) => c.down_servers(),
            #[cfg(feature = "async")]
            Api::Async(c, _) => c.down_servers(),
        }
    }

    pub fn live_count(&self) -> usize {
        match self {
            Api::Blocking(c) => c.current_ring().servers().len(),
            #[cfg(feature = "async")]
            Api::Async(c, _) => c.current_ring().servers().len(),
        }
    }

    pub fn owner(&self, k: &str) -> String {
        let ring = match self {
            Api::Blocking(c) => c.ring(),
            #[cfg(feature = "async")]
            Api::Async(c, _) => c.ring(),
        };
        ring.server_for(k.as_bytes())
            .expect("the ring has points")
            .addr
            .clone()
    }
}
