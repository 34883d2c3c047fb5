//! CAS tokens that remember the copy they came from. memcached's CAS uniques are small
//! per-server counters, so two servers handing out equal numbers is likely, not rare: a token
//! read from one pool and sent to the other could match an unrelated item. mcrouter pairs
//! each lease token with the child that gave it (`mcrouter/routes/FailoverRoute.h`, its
//! `LeaseTokenMap`); a route's `gets` does the same with its CAS unique.

use crate::Item;

/// Which of a route's two pools (new/old, main/gutter, a/b).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolRole {
    /// The new pool of a warm-up or migration, the main pool of a gutter route, mirror `a`.
    First,
    /// The old pool, the gutter, mirror `b`.
    Second,
}

impl PoolRole {
    /// The other pool.
    pub fn other(self) -> PoolRole {
        match self {
            PoolRole::First => PoolRole::Second,
            PoolRole::Second => PoolRole::First,
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            PoolRole::First => 0,
            PoolRole::Second => 1,
        }
    }
}

/// A CAS unique and the copy it belongs to: the pool, and the server that pool read it from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteCas {
    /// The pool that answered the `gets`.
    pub pool: PoolRole,
    /// The server (`host:port`) that answered it.
    pub server: String,
    /// The CAS unique.
    pub unique: u64,
}

/// A value read by a route's `gets`: the item and its CAS token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteItem {
    /// The value and flags (its `cas` is the same unique as `token`'s).
    pub item: Item,
    /// What [`Router::cas`](crate::Router::cas) needs.
    pub token: RouteCas,
}
