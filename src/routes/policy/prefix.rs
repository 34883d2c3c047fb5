//! Prefix selector: each key to the route of the longest prefix it starts with, the rest to a
//! default (mcrouter's `PrefixSelectorRoute` with its wildcard). Sessions on one pool,
//! rendered pages on another, a tenant's keys on a third: one client, one key space. A key
//! that matches no prefix when there is no default is refused ([`Error::Route`](crate::Error::Route)), never sent
//! somewhere by guess.

use super::{Client, Count, Fut, Items, Node, Policy, Stored, gather, group, join_all};
use crate::Expiry;
use crate::error::Result;
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::routes::{Counter, RouteCas, RouteItem, Write, Written};

/// A prefix selector in a route: `prefixes` (prefix, route) and the `default` route for keys
/// that match none; each route an `N` (a [`RouteNode`](crate::routes::RouteNode) in a route).
///
/// ```
/// use memshard::routes::{RouteNode, policy::prefix::PrefixRoute};
/// let route = PrefixRoute::new(
///     [("session:", RouteNode::pool("sessions")), ("page:", RouteNode::pool("pages"))],
///     Some(RouteNode::pool("rest")),
/// );
/// assert_eq!(route.pick(b"session:42"), Some(&RouteNode::pool("sessions")));
/// assert_eq!(route.pick(b"user:7"), Some(&RouteNode::pool("rest")));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PrefixRoute<N> {
    /// Each prefix and its route, as given; the longest matching prefix wins.
    pub prefixes: Vec<(String, N)>,
    /// The route of keys that match no prefix (`None`: such keys are refused).
    pub default: Option<Box<N>>,
}

impl<N> PrefixRoute<N> {
    /// A selector over `prefixes`, keys matching none to `default`.
    pub fn new<P: Into<String>>(
        prefixes: impl IntoIterator<Item = (P, N)>,
        default: Option<N>,
    ) -> PrefixRoute<N> {
        PrefixRoute {
            prefixes: prefixes.into_iter().map(|(p, n)| (p.into(), n)).collect(),
            default: default.map(Box::new),
        }
    }

    /// The route `key` goes to: its longest matching prefix's, else the default's.
    pub fn pick(&self, key: &[u8]) -> Option<&N> {
        let at = longest(self.prefixes.iter().map(|(p, _)| p.as_bytes()), key);
        match at {
            Some(i) => Some(&self.prefixes[i].1),
            None => self.default.as_deref(),
        }
    }

    /// Every route it selects from, the default last.
    pub fn children(&self) -> Vec<&N> {
        let mut out: Vec<&N> = self.prefixes.iter().map(|(_, n)| n).collect();
        out.extend(self.default.as_deref());
        out
    }

    /// The built selector, each child built by `child`.
    pub(crate) fn build<T: Client>(
        &self,
        child: &mut dyn FnMut(&N) -> Result<Node<T>>,
        count: Count,
    ) -> Result<Node<T>> {
        let mut children = Vec::with_capacity(self.prefixes.len() + 1);
        for n in self.children() {
            children.push(child(n)?);
        }
        Ok(Box::new(Prefix {
            prefixes: self
                .prefixes
                .iter()
                .map(|(p, _)| p.clone().into_bytes())
                .collect(),
            children,
            has_default: self.default.is_some(),
            count,
        }))
    }

    /// The selector a route file gives at `at`: `prefixes` (a mapping of prefix to route) and
    /// an optional `default`, each route read by `child`.
    #[cfg(feature = "peer-config")]
    pub(crate) fn parse(
        y: &yaml_rust2::Yaml,
        at: &str,
        child: &mut dyn FnMut(&yaml_rust2::Yaml, &str) -> Result<N>,
    ) -> Result<PrefixRoute<N>> {
        use crate::routes::yaml::{bad, shown, unknown_keys};
        use yaml_rust2::Yaml;
        if let Yaml::Hash(h) = y {
            unknown_keys(h, &["policy", "prefixes", "default"], &format!("{at}."))?;
        }
        let Yaml::Hash(list) = &y["prefixes"] else {
            return bad(format!(
                "`{at}.prefixes` is {}: give a mapping of each key prefix to its route",
                shown(&y["prefixes"])
            ));
        };
        let mut prefixes = Vec::with_capacity(list.len());
        for (p, node) in list {
            let Some(p) = p.as_str() else {
                return bad(format!(
                    "`{at}.prefixes` has the key {}: give a string",
                    shown(p)
                ));
            };
            prefixes.push((p.to_string(), child(node, &format!("{at}.prefixes.{p}"))?));
        }
        let default = match &y["default"] {
            Yaml::BadValue | Yaml::Null => None,
            d => Some(Box::new(child(d, &format!("{at}.default"))?)),
        };
        Ok(PrefixRoute { prefixes, default })
    }
}

/// The index of the longest of `prefixes` that `key` starts with (the first of equals).
fn longest<'p>(prefixes: impl Iterator<Item = &'p [u8]>, key: &[u8]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, p) in prefixes.enumerate() {
        if key.starts_with(p) && best.is_none_or(|(_, len)| p.len() > len) {
            best = Some((i, p.len()));
        }
    }
    best.map(|(i, _)| i)
}

/// A built prefix selector: `children[i]` serves `prefixes[i]`, the default is last.
pub(crate) struct Prefix<T> {
    pub(crate) prefixes: Vec<Vec<u8>>,
    pub(crate) children: Vec<Node<T>>,
    pub(crate) has_default: bool,
    pub(crate) count: Count,
}

impl<T: Client> Prefix<T> {
    /// The child of `key` for `command`, the default counted; a refusal when none.
    fn pick(&self, command: &'static str, key: &[u8]) -> Result<usize> {
        if let Some(i) = longest(self.prefixes.iter().map(Vec::as_slice), key) {
            return Ok(i);
        }
        if self.has_default {
            self.count.one(Counter::prefix_defaults);
            return Ok(self.prefixes.len());
        }
        self.count.one(Counter::unmatched);
        let shown: Vec<String> = self
            .prefixes
            .iter()
            .map(|p| format!("{:?}", String::from_utf8_lossy(p)))
            .collect();
        let reason = format!(
            "the key starts with none of the prefixes {} and the route has no default: give it a default route or a prefix for this key",
            shown.join(", ")
        );
        Err(self.count.refusal(command, key, reason))
    }

    fn child(&self, command: &'static str, key: &[u8]) -> Result<&Node<T>> {
        Ok(&self.children[self.pick(command, key)?])
    }

    /// A multi-key command of `n` keys (`key(i)`), split by child: `call(child, indexes)`
    /// for each, together; answers in input order, a refused key's error in its place.
    async fn split<'a, O: Send + 'a>(
        &'a self,
        command: &'static str,
        n: usize,
        key: impl Fn(usize) -> &'a [u8],
        call: impl Fn(&'a Node<T>, &[usize]) -> Fut<'a, Vec<Result<O>>>,
    ) -> Vec<Result<O>> {
        let (groups, refused) = group(n, |i| self.pick(command, key(i)));
        let calls = groups
            .iter()
            .map(|(c, at)| call(&self.children[*c], at))
            .collect();
        gather(n, &groups, join_all(calls).await, refused)
    }
}

impl<T: Client> Policy<T> for Prefix<T> {
    fn get<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<Item>>> {
        match self.child("get", key) {
            Ok(c) => c.get(key),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }

    fn gets<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<RouteItem>>> {
        match self.child("gets", key) {
            Ok(c) => c.gets(key),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }

    fn get_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<Option<Item>>>> {
        let call = move |c: &'a Node<T>, at: &[usize]| -> Fut<'a, _> {
            let sub: Vec<&[u8]> = at.iter().map(|&i| keys[i]).collect();
            Box::pin(async move { c.get_multi(&sub).await })
        };
        Box::pin(self.split("get_multi", keys.len(), |i| keys[i], call))
    }

    fn write<'a>(&'a self, key: &'a [u8], w: Write<'a>) -> Fut<'a, Result<Written>> {
        match self.child(w.command(), key) {
            Ok(c) => c.write(key, w),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }

    fn cas<'a>(
        &'a self,
        key: &'a [u8],
        value: Stored<'a>,
        token: &'a RouteCas,
    ) -> Fut<'a, Result<StoreOutcome>> {
        match self.child("cas", key) {
            Ok(c) => c.cas(key, value, token),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }

    fn set_multi<'a>(
        &'a self,
        items: &'a Items<'a>,
        flags: u32,
        expiry: Expiry,
    ) -> Fut<'a, Vec<Result<StoreOutcome>>> {
        let call = move |c: &'a Node<T>, at: &[usize]| -> Fut<'a, _> {
            let sub: Vec<(&[u8], &[u8])> = at.iter().map(|&i| items[i]).collect();
            Box::pin(async move { c.set_multi(&sub, flags, expiry).await })
        };
        Box::pin(self.split("set_multi", items.len(), |i| items[i].0, call))
    }

    fn delete_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<DeleteOutcome>>> {
        let call = move |c: &'a Node<T>, at: &[usize]| -> Fut<'a, _> {
            let sub: Vec<&[u8]> = at.iter().map(|&i| keys[i]).collect();
            Box::pin(async move { c.delete_multi(&sub).await })
        };
        Box::pin(self.split("delete_multi", keys.len(), |i| keys[i], call))
    }

    fn verify<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<bool>> {
        match self.child("verify", key) {
            Ok(c) => c.verify(key),
            Err(e) => Box::pin(async { Err(e) }),
        }
    }

    fn repair<'a>(&'a self, key: &'a [u8], failed: bool) -> Fut<'a, ()> {
        match self.child("repair", key) {
            Ok(c) => c.repair(key, failed),
            Err(_) => Box::pin(async {}),
        }
    }

    fn owners(&self, key: &[u8]) -> Result<Vec<String>> {
        self.child("locate", key)?.owners(key)
    }

    fn servers(&self) -> Vec<String> {
        super::servers_of(&self.children)
    }

    fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .prefixes
            .iter()
            .zip(&self.children)
            .map(|(p, c)| format!("{:?}: {}", String::from_utf8_lossy(p), c.describe()))
            .collect();
        if self.has_default
            && let Some(d) = self.children.last()
        {
            parts.push(format!("default: {}", d.describe()));
        }
        format!("prefix {{ {} }}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_the_rest_go_to_the_default() {
        let p = |s: &'static str| s.as_bytes();
        let prefixes = [p("a:"), p("a:b:"), p("c")];
        assert_eq!(longest(prefixes.into_iter(), b"a:b:1"), Some(1));
        assert_eq!(longest(prefixes.into_iter(), b"a:c"), Some(0));
        assert_eq!(longest(prefixes.into_iter(), b"c"), Some(2));
        assert_eq!(longest(prefixes.into_iter(), b"a"), None);
        assert_eq!(longest([p(""), p("x")].into_iter(), b"y"), Some(0));
        assert_eq!(longest([p("x"), p("x")].into_iter(), b"x1"), Some(0));
        let route = PrefixRoute::new([("a:", 1)], None);
        assert_eq!(route.pick(b"b:1"), None);
        assert_eq!(route.pick(b"a:1"), Some(&1));
    }
}
