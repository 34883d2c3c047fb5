//! The four two-pool routes (warm-up, migration, gutter, mirror) as one policy: the route
//! flows over two pools, which stay leaves (a pool mid-migration under a
//! prefix, a zone with a gutter).

use super::{Client, Fut, Items, Node, Policy, Stored};
use crate::Expiry;
use crate::core::large;
use crate::error::Result;
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::routes::flow::{Route, gutter_kind, mirror_kind};
use crate::routes::{
    Counters, Kind, Migration, Phase, ReadPolicy, RouteCas, RouteItem, State, Write, Written,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// One of the four two-pool routes, with its settings: what a [`Router`](crate::Router)'s
/// constructor of the same name takes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RouteSpec {
    /// [`Router::warm_up`](crate::Router::warm_up): pools `new` and `old`.
    WarmUp {
        /// Expiry of values copied from `old` into `new` (`backfill_ttl`).
        backfill: Expiry,
    },
    /// [`Router::migrate`](crate::Router::migrate): pools `new` and `old`.
    Migrate {
        /// The window's start (`None`: when the router is built, `start: now`).
        start: Option<SystemTime>,
        /// `window`.
        window: Duration,
        /// `tail`.
        tail: Duration,
        /// `backfill_ttl`.
        backfill: Expiry,
    },
    /// [`Router::gutter`](crate::Router::gutter): pools `main` and `gutter`.
    Gutter {
        /// `ttl`.
        ttl: Duration,
    },
    /// [`Router::mirror`](crate::Router::mirror): pools `a` and `b`.
    Mirror {
        /// `read`.
        read: ReadPolicy,
    },
}

impl RouteSpec {
    /// The route's name as the file spells it.
    pub fn name(&self) -> &'static str {
        match self {
            RouteSpec::WarmUp { .. } => "warm_up",
            RouteSpec::Migrate { .. } => "migrate",
            RouteSpec::Gutter { .. } => "gutter",
            RouteSpec::Mirror { .. } => "mirror",
        }
    }

    /// The file's keys of the two pools, first then second.
    pub fn pool_keys(&self) -> [&'static str; 2] {
        match self {
            RouteSpec::WarmUp { .. } | RouteSpec::Migrate { .. } => ["new", "old"],
            RouteSpec::Gutter { .. } => ["main", "gutter"],
            RouteSpec::Mirror { .. } => ["a", "b"],
        }
    }
}

impl RouteSpec {
    /// The names of the two-pool routes in a route file.
    pub const KINDS: [&'static str; 4] = ["warm_up", "migrate", "gutter", "mirror"];

    /// The route `route` (given at `key`) with its settings from mapping `doc`.
    #[cfg(feature = "peer-config")]
    pub(crate) fn parse(doc: &yaml_rust2::Yaml, route: &str, key: &str) -> Result<RouteSpec> {
        use crate::routes::yaml::{backfill, bad, count, seconds, string};
        use std::time::UNIX_EPOCH;
        use yaml_rust2::Yaml;
        Ok(match route {
            "warm_up" | "warm-up" => RouteSpec::WarmUp {
                backfill: backfill(doc, "warm_up")?,
            },
            "migrate" => {
                let start = match &doc["start"] {
                    Yaml::String(s) if s == "now" => None,
                    Yaml::BadValue | Yaml::Null => None,
                    Yaml::String(s) => {
                        return bad(format!(
                            "`start` is {s:?}: give now or the Unix time in seconds"
                        ));
                    }
                    y => count(y, "start")?.map(|s| UNIX_EPOCH + Duration::from_secs(s)),
                };
                let window = seconds(
                    doc,
                    "window",
                    "migrate",
                    "the seconds reads fall back to the old pool",
                )?;
                let tail = match count(&doc["tail"], "tail")? {
                    Some(s) => Duration::from_secs(s),
                    None => window,
                };
                RouteSpec::Migrate {
                    start,
                    window,
                    tail,
                    backfill: backfill(doc, "migrate")?,
                }
            }
            "gutter" => {
                let ttl = seconds(
                    doc,
                    "ttl",
                    "gutter",
                    "the longest a key lives in the gutter, in seconds (mcrouter uses 60)",
                )?;
                crate::routes::gutter_ttl(ttl).or_else(|_| {
                    bad(format!(
                        "`ttl` is {}: give seconds from 1 to 2592000 (30 days)",
                        ttl.as_secs()
                    ))
                })?;
                RouteSpec::Gutter { ttl }
            }
            "mirror" => RouteSpec::Mirror {
                read: match string(&doc["read"], "read")? {
                    Some(r) => r.parse().or_else(|_| {
                        bad(format!(
                            "`read` is {r:?}: give prefer-a, prefer-b or random"
                        ))
                    })?,
                    None => ReadPolicy::PreferA,
                },
            },
            other => {
                return bad(format!(
                    "`{key}` is {other:?}: give {}",
                    Self::KINDS.join(", ")
                ));
            }
        })
    }

    /// The keys of the route's settings in a route file, beyond its name and pools.
    pub fn keys(&self) -> &'static [&'static str] {
        match self {
            RouteSpec::WarmUp { .. } => &["backfill_ttl"],
            RouteSpec::Migrate { .. } => &["backfill_ttl", "start", "window", "tail"],
            RouteSpec::Gutter { .. } => &["ttl"],
            RouteSpec::Mirror { .. } => &["read"],
        }
    }

    /// The route's kind over `first`'s and `second`'s clients, a `start: now` migration
    /// starting at `now`.
    pub(crate) fn kind<T: Client>(&self, first: &T, second: &T, now: SystemTime) -> Result<Kind> {
        Ok(match self {
            RouteSpec::WarmUp { backfill } => Kind::WarmUp {
                backfill: *backfill,
            },
            RouteSpec::Migrate {
                start,
                window,
                tail,
                backfill,
            } => {
                let mut m = Migration::new(start.unwrap_or(now), *window, *backfill);
                m.tail = *tail;
                Kind::Migrate(m)
            }
            RouteSpec::Gutter { ttl } => {
                gutter_kind(first.core().failures.policy.auto_eject, *ttl)?
            }
            RouteSpec::Mirror { read } => {
                mirror_kind(&first.core().ring(), &second.core().ring(), *read)?
            }
        })
    }

    /// The built route over the two named pools, counting into `counters`.
    pub(crate) fn build<T: Client>(
        &self,
        [(a, first), (b, second)]: [(String, T); 2],
        counters: Arc<Counters>,
        now: SystemTime,
    ) -> Result<Node<T>> {
        let kind = self.kind(&first, &second, now)?;
        Ok(Box::new(Pair {
            pools: [first, second],
            names: [a, b],
            state: State::counting(kind, counters),
        }))
    }
}

/// Two pools under one of the four two-pool routes.
pub(crate) struct Pair<T> {
    pub(crate) pools: [T; 2],
    pub(crate) names: [String; 2],
    pub(crate) state: State,
}

impl<T: Client> Pair<T> {
    fn route(&self) -> Route<'_, T> {
        Route::new(&self.pools, &self.state)
    }

    async fn repair(&self, key: &[u8], failed: bool) {
        for c in &self.pools {
            self.state.count(crate::routes::Counter::repairs_recorded);
            if !failed && large::delete(c, key).await.is_ok() {
                continue;
            }
            let _ = c.written_elsewhere(key);
        }
    }
}

impl<T: Client> Policy<T> for Pair<T> {
    fn get<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<Item>>> {
        Box::pin(async move { self.route().get(key).await })
    }

    fn gets<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<RouteItem>>> {
        Box::pin(async move { self.route().gets(key).await })
    }

    fn get_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<Option<Item>>>> {
        Box::pin(async move { self.route().get_multi(keys).await })
    }

    fn write<'a>(&'a self, key: &'a [u8], w: Write<'a>) -> Fut<'a, Result<Written>> {
        Box::pin(async move { self.route().write(key, w).await })
    }

    fn cas<'a>(
        &'a self,
        key: &'a [u8],
        v: Stored<'a>,
        token: &'a RouteCas,
    ) -> Fut<'a, Result<StoreOutcome>> {
        Box::pin(async move {
            let route = self.route();
            route.cas(key, v.value, v.flags, v.expiry, token).await
        })
    }

    fn set_multi<'a>(
        &'a self,
        items: &'a Items<'a>,
        flags: u32,
        expiry: Expiry,
    ) -> Fut<'a, Vec<Result<StoreOutcome>>> {
        Box::pin(async move { self.route().set_multi(items, flags, expiry).await })
    }

    fn delete_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<DeleteOutcome>>> {
        Box::pin(async move { self.route().delete_multi(keys).await })
    }

    fn verify<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<bool>> {
        Box::pin(async move { self.route().verify(key).await })
    }

    fn repair<'a>(&'a self, key: &'a [u8], failed: bool) -> Fut<'a, ()> {
        Box::pin(Pair::repair(self, key, failed))
    }

    fn owners(&self, key: &[u8]) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(2);
        for c in &self.pools {
            let owner = c.core().locate(key)?.0;
            if !out.contains(&owner) {
                out.push(owner);
            }
        }
        Ok(out)
    }

    fn phase(&self) -> Option<Phase> {
        self.state.kind.phase(std::time::SystemTime::now())
    }

    fn servers(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.pools {
            for s in c.core().ring().servers() {
                if !out.contains(&s.addr) {
                    out.push(s.addr.clone());
                }
            }
        }
        out
    }

    fn describe(&self) -> String {
        let [a, b] = self.state.kind.pool_names();
        let servers = |c: &T| {
            let ring = c.core().ring();
            let s: Vec<String> = ring.servers().iter().map(|s| s.addr.clone()).collect();
            s.join(", ")
        };
        format!(
            "{} {{ {a}: {} [{}], {b}: {} [{}] }}",
            self.state.name(),
            self.names[0],
            servers(&self.pools[0]),
            self.names[1],
            servers(&self.pools[1])
        )
    }
}
