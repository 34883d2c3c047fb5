//! The sans-IO core both clients share: keys, the live view and routing, each command's request
//! and reply interpretation, multi-key grouping, and failure handling (health, ejection,
//! probing, rejoin). Nothing here opens a socket or waits; the blocking and async clients only
//! check out a connection, move the bytes an exchange asks for, and report the outcome back
//! here.
//!
//! | module | its one job |
//! |---|---|
//! | `keys` | prefix, key as sent, key as hashed, value size |
//! | `view` | ring + members + routing over the live servers |
//! | `route` | one key to its member; many keys grouped per member |
//! | `multi` | per-group requests, results back in input order |
//! | `replica` | the copies of a replicated key |
//! | `failure` | what a failure means for a request and its server: health, ejection, probing, rejoin |
//! | `exchange` | request bytes and reply interpretation of every command |
//! | `link`, `readbuf` | a connection's stream state, buffers and drive of an exchange |
//! | `auth`, `tls` | the login of a new connection; TLS failures classified where they are seen |
//! | `transport` | the contract of the two clients for the flows written once for both |
//! | `item_limit` | each server's item size limit, learned before a value that may not fit is sent |
//! | `ops`, `leased`, `replicated` | those flows: each command, the lease loop, replicated keys |
//! | `large` | large values: chunks and their index (`format`), and the flows that store, read, touch and delete them |
//! | `typed` | the typed-value flows: a codec around the commands |
//! | `api` | the public methods both clients share word for word, defined once: each a call into a flow |
//!
//! Layer: the sans-IO core. May import: `proto`, `ring`, `settings`,
//! `value`, `error`, `observe`, and the in-process helpers it drives
//! (`hotkeys`, `near`, `plan`). Never a client, a socket or a runtime.

pub(crate) mod exchange;
pub(crate) mod failure;
#[cfg(test)]
pub(crate) mod fake;
pub(crate) mod item_limit;
pub(crate) mod keys;
pub(crate) mod large;
pub(crate) mod leased;
pub(crate) mod link;
pub(crate) mod multi;
pub(crate) mod ops;
#[macro_use]
pub(crate) mod api;
pub(crate) mod aside;
pub(crate) mod auth;
pub(crate) mod readbuf;
pub(crate) mod replica;
pub(crate) mod replicated;
pub(crate) mod resolve;
pub(crate) mod route;
#[cfg(feature = "tls")]
pub(crate) mod tls;
pub(crate) mod transport;
#[cfg(feature = "codecs")]
pub(crate) mod typed;
pub(crate) mod view;

use crate::error::Result;
#[cfg(feature = "near-cache")]
use crate::near::NearCache;
use crate::ring::Ring;
use crate::servers::Server;
use crate::settings::Settings;
use arc_swap::ArcSwap;
use failure::Failures;
use failure::health::Health;
use failure::rejoin::RejoinLog;
use keys::KeyRules;
use std::sync::{Arc, Mutex};
use view::{Member, View};

/// Makes the pool of a server (added at build or by `set_servers`).
pub(crate) type MakePool<P> = Box<dyn Fn(&Server) -> P + Send + Sync>;

/// The state a client shares between its requests, over the client's pool type `P`.
pub(crate) struct Core<P> {
    /// Ring, members and routing in force.
    view: ArcSwap<View<P>>,
    /// One rebuild of the view at a time.
    rebuild: Mutex<()>,
    /// Failure handling: the policy, the health clock, the down servers being probed.
    pub(crate) failures: Failures<P>,
    pub(crate) settings: Settings,
    pub(crate) keys: KeyRules,
    #[cfg(feature = "near-cache")]
    pub(crate) near: Option<NearCache>,
    /// Hot-key counters, when asked for.
    hot: Option<crate::hotkeys::Detector>,
    /// What `get_or_compute` did: recomputes, answers without the cache.
    pub(crate) aside: aside::AsideCounters,
    make_pool: MakePool<P>,
}

impl<P> Core<P> {
    /// The core over checked `settings`; `make_pool` makes each server's pool.
    pub(crate) fn new(settings: Settings, make_pool: MakePool<P>) -> Result<Core<P>> {
        let ring = Arc::new(settings.ring()?);
        let keys = KeyRules {
            prefix: settings.prefix.clone(),
            hash_with_prefix: settings.hash_with_prefix,
            shorten_long: settings.shorten_long_keys,
            max_value: settings.conn.max_value_size,
        };
        let core = Core {
            view: ArcSwap::from_pointee(View::new(ring.clone(), Vec::new(), false)),
            rebuild: Mutex::new(()),
            failures: Failures::new(settings.policy),
            keys,
            #[cfg(feature = "near-cache")]
            near: settings.near.clone().map(|cfg| {
                // keys admitted as hot are not marked: every write must drop them
                let admitting = settings.hot.is_some_and(|h| h.admit.is_some());
                NearCache::new(cfg).invalidate_all_keys(admitting)
            }),
            hot: settings.hot.map(crate::hotkeys::Detector::new),
            aside: aside::AsideCounters::default(),
            settings,
            make_pool,
        };
        crate::observe::describe();
        let members = ring.servers().iter().map(|s| core.new_member(s)).collect();
        core.view.store(Arc::new(View::new(ring, members, false)));
        Ok(core)
    }

    fn new_member(&self, s: &Server) -> Arc<Member<P>> {
        Arc::new(Member {
            server: s.clone(),
            pool: (self.make_pool)(s),
            health: Health::default(),
            rejoin: RejoinLog::new(self.settings.rejoin_limit),
            observe: crate::observe::PerServer::joined(&s.addr),
            limit: item_limit::ItemLimit::default(),
        })
    }

    /// `name { servers, flavor, .. }`, the client's `Debug`.
    pub(crate) fn describe(
        &self,
        name: &'static str,
        f: &mut std::fmt::Formatter<'_>,
    ) -> std::fmt::Result {
        let view = self.view.load();
        f.debug_struct(name)
            .field("servers", &view.members.len())
            .field("flavor", &view.full.flavor())
            .finish_non_exhaustive()
    }

    /// `item` (of `key`) decoded by `codec`, capped at the maximum value size.
    #[cfg(feature = "codecs")]
    pub(crate) fn decode_item(
        &self,
        codec: &crate::value::Transcoder,
        key: &[u8],
        item: &crate::Item,
    ) -> Result<crate::value::Value> {
        codec
            .decode(item.flags, &item.value, self.keys.max_value)
            .map_err(|source| value_error(key, source))
    }

    /// `value` (for `key`) encoded by `codec`.
    #[cfg(feature = "codecs")]
    pub(crate) fn encode_value<T: crate::value::ToValue + ?Sized>(
        &self,
        codec: &crate::value::Transcoder,
        key: &[u8],
        value: &T,
    ) -> Result<crate::value::Encoded> {
        value
            .to_value()
            .and_then(|v| codec.encode(&v, self.keys.max_value))
            .map_err(|source| value_error(key, source))
    }

    /// The view in force.
    pub(crate) fn view(&self) -> Arc<View<P>> {
        self.view.load_full()
    }

    /// The ring over every configured server.
    pub(crate) fn ring(&self) -> Arc<Ring> {
        self.view.load().full.clone()
    }

    /// The ring in force now (with auto-eject and a server down, the one over the live ones).
    pub(crate) fn current_ring(&self) -> Arc<Ring> {
        self.view.load().routing.clone()
    }

    /// Servers currently marked down.
    pub(crate) fn down_servers(&self) -> Vec<Server> {
        self.view
            .load()
            .members
            .iter()
            .filter(|m| m.health.is_down())
            .map(|m| m.server.clone())
            .collect()
    }

    /// Replace the server list (see the clients' `set_servers`).
    pub(crate) fn set_servers(&self, servers: Vec<Server>) -> Result<()> {
        let _one_at_a_time = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.view.load_full();
        let ring = cur.full.with_servers(servers)?;
        crate::observe::servers_changed(ring.servers().len());
        let members = cur.keep_or_make(&ring, |s| self.new_member(s));
        for gone in cur.members.iter().filter(|m| {
            !members
                .iter()
                .any(|n| Arc::ptr_eq(n, m) || n.server.addr == m.server.addr)
        }) {
            gone.observe.left();
        }
        self.view.store(Arc::new(View::new(
            Arc::new(ring),
            members,
            self.failures.policy.auto_eject,
        )));
        Ok(())
    }

    /// What `set_servers(servers)` would cost on `keys`.
    pub(crate) fn plan_servers(
        &self,
        servers: &[Server],
        keys: &crate::plan::Keys,
    ) -> Result<crate::plan::Plan> {
        use crate::plan::Keys;
        if !self.keys.hash_with_prefix || self.keys.prefix.is_empty() {
            return Ok(crate::plan::plan_change(&self.ring(), servers, keys)?);
        }
        // placement hashes prefix + key: plan on the keys as hashed
        let hashed: Vec<Vec<u8>> = match keys {
            Keys::List(v) => v
                .iter()
                .map(|k| self.keys.hashed_owned(k).into_owned())
                .collect(),
            Keys::Synthetic(n) => (0..*n)
                .map(|i| {
                    self.keys
                        .hashed_owned(format!("key:{i}").as_bytes())
                        .into_owned()
                })
                .collect(),
        };
        Ok(crate::plan::plan_change(
            &self.ring(),
            servers,
            &Keys::List(hashed),
        )?)
    }

    /// With auto-eject, swap in the routing over the servers that are not down.
    pub(crate) fn rebuild_routing(&self) {
        if !self.failures.policy.auto_eject {
            return;
        }
        let _one_at_a_time = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.view.load_full();
        self.view.store(Arc::new(View::new(
            cur.full.clone(),
            cur.members.clone(),
            true,
        )));
    }

    /// Drop `keys` from the near cache (after writes to them).
    pub(crate) fn forget<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) {
        #[cfg(feature = "near-cache")]
        if let Some(near) = &self.near {
            keys.into_iter().for_each(|k| near.invalidate(k));
        }
        #[cfg(not(feature = "near-cache"))]
        let _ = keys;
    }

    /// Count a read of `key` for hot-key detection (when it is on).
    #[inline]
    pub(crate) fn note_key(&self, key: &[u8]) {
        if let Some(hot) = &self.hot {
            hot.record(key);
        }
    }

    /// Count a read of each of `keys` (a multi-get).
    #[inline]
    pub(crate) fn note_keys<K: AsRef<[u8]>>(&self, keys: &[K]) {
        if let Some(hot) = &self.hot {
            keys.iter().for_each(|k| hot.record(k.as_ref()));
        }
    }

    /// The hottest keys, hottest first (empty when detection is off).
    pub(crate) fn hot_keys(&self) -> Vec<crate::hotkeys::HotKey> {
        self.hot
            .as_ref()
            .map(crate::hotkeys::Detector::report)
            .unwrap_or_default()
    }

    /// Forget the hot-key counts.
    pub(crate) fn reset_hot_keys(&self) {
        if let Some(hot) = &self.hot {
            hot.clear();
        }
    }

    /// Whether `key` goes through the near cache: marked by its config, or admitted as hot.
    #[cfg(feature = "near-cache")]
    fn near_for(&self, key: &[u8]) -> Option<&NearCache> {
        let near = self.near.as_ref()?;
        let admitted = || self.hot.as_ref().is_some_and(|h| h.admits(key));
        (near.wants(key) || admitted()).then_some(near)
    }

    /// Whether a near cache is on (else no key is kept in one).
    pub(crate) fn near_on(&self) -> bool {
        #[cfg(feature = "near-cache")]
        return self.near.is_some();
        #[cfg(not(feature = "near-cache"))]
        false
    }

    /// A fresh near-cache copy of `key`, if the near cache holds one.
    pub(crate) fn near_lookup(&self, key: &[u8]) -> Option<crate::Item> {
        #[cfg(feature = "near-cache")]
        if let Some(near) = self.near_for(key) {
            return near.lookup(key);
        }
        let _ = key;
        None
    }

    /// Keep `item` (just read for `key`) in the near cache if the key is marked or hot.
    pub(crate) fn near_keep(&self, key: &[u8], item: &crate::Item) {
        #[cfg(feature = "near-cache")]
        if let Some(near) = self.near_for(key) {
            near.store(key, item);
        }
        let _ = (key, item);
    }

    /// The one value of the single-key retrieval `ex` on `m`, counted as a hit or miss.
    pub(crate) fn single_hit(
        &self,
        m: &Member<P>,
        ex: &mut exchange::Retrieve<'_>,
    ) -> Option<crate::Item> {
        let item = ex.take_item();
        crate::observe::hits(
            &m.observe,
            u64::from(item.is_some()),
            u64::from(item.is_none()),
        );
        item
    }

    /// Empty the near cache (flush_all).
    pub(crate) fn near_clear(&self) {
        #[cfg(feature = "near-cache")]
        if let Some(near) = &self.near {
            near.clear();
        }
    }
}

#[cfg(feature = "codecs")]
fn value_error(key: &[u8], source: crate::value::ValueError) -> crate::Error {
    crate::Error::Value {
        key: String::from_utf8_lossy(key).into_owned(),
        source,
    }
}

/// A decoded value of `key` as `T`.
#[cfg(feature = "codecs")]
pub(crate) fn typed_as<T: crate::value::FromValue>(
    key: &[u8],
    v: crate::value::Value,
) -> Result<T> {
    T::from_value(v).map_err(|source| value_error(key, source))
}
