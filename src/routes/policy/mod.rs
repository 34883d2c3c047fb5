//! Route policies: small parts that compose into a route over any number of pools. Each
//! policy is one file and one implementation of the crate's policy trait, written once for
//! both clients over the transport they share; a policy's children are pools or other
//! policies, so a prefix selector can send one prefix to a pool mid-migration and another to
//! zones that each have a gutter. What each policy is in a route file, and how a
//! [`RouteNode`](super::RouteNode) becomes a policy, is registered in one place (the module
//! that defines `RouteNode`).
//!
//! The pattern is quinn-proto's congestion controllers (`congestion.rs` and one file per
//! algorithm) and redis-rs's read-routing strategies: a small trait, one strategy per file.

pub mod operation;
pub mod pair;
pub(crate) mod pool;
pub mod prefix;
pub mod zones;

use super::{Counter, Counters, RouteCas, RouteItem, Write, Written};
use crate::core::transport::Transport;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::{Expiry, routes::Phase};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A policy's answer, later: a boxed future, so that policies nest to any depth. The blocking
/// client polls it once (every step is ready at once there); the async client awaits it.
pub(crate) type Fut<'a, O> = Pin<Box<dyn Future<Output = O> + Send + 'a>>;

/// Items of a multi-key store, as the policy sees them.
pub(crate) type Items<'a> = [(&'a [u8], &'a [u8])];

/// One route policy: what it does with each command, over its children.
pub(crate) trait Policy<T>: Send + Sync {
    /// `get`.
    fn get<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<Item>>>;

    /// `gets`: the value and the token naming its copy.
    fn gets<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<RouteItem>>>;

    /// `get_multi`, results in input order.
    fn get_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<Option<Item>>>>;

    /// One single-key write.
    fn write<'a>(&'a self, key: &'a [u8], w: Write<'a>) -> Fut<'a, Result<Written>>;

    /// `cas` with a token of this policy's `gets`.
    fn cas<'a>(
        &'a self,
        key: &'a [u8],
        value: Stored<'a>,
        token: &'a RouteCas,
    ) -> Fut<'a, Result<StoreOutcome>>;

    /// `set_multi`, results in input order.
    fn set_multi<'a>(
        &'a self,
        items: &'a Items<'a>,
        flags: u32,
        expiry: Expiry,
    ) -> Fut<'a, Vec<Result<StoreOutcome>>>;

    /// `delete_multi`, results in input order.
    fn delete_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<DeleteOutcome>>>;

    /// Whether every copy of `key` under this policy holds the same value and flags.
    fn verify<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<bool>>;

    /// This policy's copy of `key` missed a write another copy took: deleted now when its
    /// server answered (`failed` false), else kept out of reads until the key is deleted there.
    fn repair<'a>(&'a self, key: &'a [u8], failed: bool) -> Fut<'a, ()>;

    /// The servers (`host:port`) that would hold `key` under this policy.
    fn owners(&self, key: &[u8]) -> Result<Vec<String>>;

    /// Every server under this policy (`host:port`), each once.
    fn servers(&self) -> Vec<String>;

    /// Where a migration below stands now (`None` without one).
    fn phase(&self) -> Option<Phase> {
        None
    }

    /// The policy and its children, for `Debug`.
    fn describe(&self) -> String;
}

/// A value to store with its flags and expiry (a cas's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stored<'v> {
    pub(crate) value: &'v [u8],
    pub(crate) flags: u32,
    pub(crate) expiry: Expiry,
}

/// A policy of a route over clients `T`, shared by the router's clones.
pub(crate) type Node<T> = Box<dyn Policy<T>>;

/// A built route: its root policy, its named pools (for [`Router::pool`]) and the counters
/// every policy in it counts into.
///
/// [`Router::pool`]: crate::Router::pool
pub(crate) struct Tree<T> {
    pub(crate) root: Node<T>,
    pub(crate) pools: Vec<(String, T)>,
    pub(crate) counters: Arc<Counters>,
}

impl<T> Tree<T> {
    /// The client of the pool at `index` (the last one past the end: a route has one pool at
    /// least).
    pub(crate) fn pool(&self, index: usize) -> &T {
        let i = index.min(self.pools.len().saturating_sub(1));
        &self.pools[i].1
    }

    /// The client of the pool named `name`.
    pub(crate) fn named(&self, name: &str) -> Option<&T> {
        self.pools.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
}

/// A policy's counters: each counted under the policy's name.
#[derive(Clone, Debug)]
pub(crate) struct Count {
    pub(crate) route: &'static str,
    pub(crate) counters: Arc<Counters>,
}

impl Count {
    pub(crate) fn one(&self, c: Counter) {
        self.counters.one(self.route, c);
    }

    pub(crate) fn n(&self, c: Counter, n: usize) {
        self.counters.add(self.route, c, n as u64);
    }

    /// The refusal of `command` on `key`, counted as `refused`.
    pub(crate) fn refuse(&self, command: &'static str, key: &[u8], reason: String) -> Error {
        self.one(Counter::refused);
        self.refusal(command, key, reason)
    }

    /// The refusal of `command` on `key` (the caller counts it), as an event and an error.
    pub(crate) fn refusal(&self, command: &'static str, key: &[u8], reason: String) -> Error {
        crate::observe::route_refused(self.route, command, key, &reason);
        Error::Route {
            route: self.route,
            command,
            key: String::from_utf8_lossy(key).into_owned(),
            reason,
        }
    }
}

/// Every server under `children`, each once.
pub(crate) fn servers_of<T>(children: &[Node<T>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in children.iter().flat_map(|c| c.servers()) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Every future of `all`, run together (the async client's zones answer in parallel; the
/// blocking client's are ready at their first poll); outputs in the order given.
pub(crate) fn join_all<'a, O: Send + 'a>(all: Vec<Fut<'a, O>>) -> Fut<'a, Vec<O>> {
    let mut slots: Vec<(Fut<'a, O>, Option<O>)> = all.into_iter().map(|f| (f, None)).collect();
    Box::pin(std::future::poll_fn(move |cx: &mut Context<'_>| {
        let mut pending = false;
        for (f, out) in slots.iter_mut() {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(o) => *out = Some(o),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(slots.iter_mut().filter_map(|(_, o)| o.take()).collect())
    }))
}

/// Key indexes by child: `(child, indexes)` in first-seen order.
pub(crate) type Groups = Vec<(usize, Vec<usize>)>;

/// The indexes of `n` keys grouped by the child `child(i)` picks, children in first-seen
/// order; a key whose child is `Err` keeps its error in `refused`.
pub(crate) fn group<E>(
    n: usize,
    mut child: impl FnMut(usize) -> std::result::Result<usize, E>,
) -> (Groups, Vec<(usize, E)>) {
    let mut groups: Groups = Vec::new();
    let mut refused = Vec::new();
    for i in 0..n {
        match child(i) {
            Ok(c) => match groups.iter_mut().find(|(g, _)| *g == c) {
                Some((_, at)) => at.push(i),
                None => groups.push((c, vec![i])),
            },
            Err(e) => refused.push((i, e)),
        }
    }
    (groups, refused)
}

/// Results of `n` keys gathered from each group's answers (in the group's order) and the
/// refusals.
pub(crate) fn gather<O>(
    n: usize,
    groups: &[(usize, Vec<usize>)],
    answers: Vec<Vec<Result<O>>>,
    refused: Vec<(usize, Error)>,
) -> Vec<Result<O>> {
    let mut out: Vec<Option<Result<O>>> = (0..n).map(|_| None).collect();
    for ((_, at), answer) in groups.iter().zip(answers) {
        for (&i, r) in at.iter().zip(answer) {
            out[i] = Some(r);
        }
    }
    for (i, e) in refused {
        out[i] = Some(Err(e));
    }
    out.into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Error::protocol(
                    "route",
                    "a policy answered fewer keys than it was given",
                ))
            })
        })
        .collect()
}

/// A policy's clients for the transport, as `Send` futures need them.
pub(crate) trait Client: Transport + Send + Sync + 'static {}
impl<T: Transport + Send + Sync + 'static> Client for T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_the_input_order_and_gather_puts_answers_back() {
        let (groups, refused) = group(5, |i| if i == 3 { Err("no") } else { Ok(i % 2) });
        assert_eq!(groups, [(0, vec![0, 2, 4]), (1, vec![1])]);
        assert_eq!(refused, [(3, "no")]);
        let answers = vec![vec![Ok(0), Ok(2), Ok(4)], vec![Ok(1)]];
        let refused = vec![(3, Error::Config("no".into()))];
        let out = gather(5, &groups, answers, refused);
        let ok: Vec<Option<i32>> = out.iter().map(|r| r.as_ref().ok().copied()).collect();
        assert_eq!(ok, [Some(0), Some(1), Some(2), None, Some(4)]);
        let short = gather::<i32>(2, &[(0, vec![0, 1])], vec![vec![Ok(1)]], vec![]);
        assert!(
            short[1].is_err(),
            "a missing answer is an error, not a panic"
        );
    }

    #[test]
    fn join_all_answers_in_the_order_given() {
        let all: Vec<Fut<'_, u8>> = vec![Box::pin(async { 1 }), Box::pin(async { 2 })];
        let mut f = join_all(all);
        let cx = &mut Context::from_waker(std::task::Waker::noop());
        assert_eq!(f.as_mut().poll(cx), Poll::Ready(vec![1, 2]));
    }
}
