//! A route as data: a tree whose leaves are named pools and whose nodes are policies. This is
//! where each policy is registered: its variant, its name in a route file, how it is read and
//! how it is built. A new policy is its own file under [`super::policy`] plus one line in each
//! of the four `match`es below.

use super::policy::operation::OperationRoute;
use super::policy::pair::RouteSpec;
use super::policy::pool::Pool;
use super::policy::prefix::PrefixRoute;
use super::policy::zones::ZoneRoute;
use super::policy::{Client, Count, Node};
use super::stats::Counters;
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::SystemTime;

/// A route over named pools: a pool, one of the four two-pool routes, or a policy over
/// routes. Route files are read into it ([`RouteFile`](super::RouteFile)); each client's
/// `Router::compose` builds it over clients.
///
/// ```
/// use memshard::routes::{RouteNode, RouteSpec, policy::prefix::PrefixRoute};
/// use std::time::Duration;
/// let route = RouteNode::Prefix(PrefixRoute::new(
///     [("session:", RouteNode::pool("sessions"))],
///     Some(RouteNode::Pair {
///         spec: RouteSpec::Gutter { ttl: Duration::from_secs(60) },
///         pools: ["main".into(), "gutter".into()],
///     }),
/// ));
/// assert_eq!(route.pools(), ["sessions", "main", "gutter"]);
/// assert_eq!(route.name(), "prefix");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RouteNode {
    /// The pool of this name.
    Pool(String),
    /// One of the four two-pool routes over the pools of these names (first: new, main or
    /// a).
    Pair {
        /// The route and its settings.
        spec: RouteSpec,
        /// Its pools' names.
        pools: [String; 2],
    },
    /// Each key to the route of its longest prefix.
    Prefix(PrefixRoute<RouteNode>),
    /// Each command to the route named for it.
    Operation(OperationRoute<RouteNode>),
    /// Writes to every zone, reads from the local one first.
    Zones(ZoneRoute<RouteNode>),
}

impl RouteNode {
    /// The pool `name`.
    pub fn pool(name: impl Into<String>) -> RouteNode {
        RouteNode::Pool(name.into())
    }

    /// The node's name in a route file (`pool` for a pool).
    pub fn name(&self) -> &'static str {
        match self {
            RouteNode::Pool(_) => "pool",
            RouteNode::Pair { spec, .. } => spec.name(),
            RouteNode::Prefix(_) => "prefix",
            RouteNode::Operation(_) => "operation",
            RouteNode::Zones(_) => "zones",
        }
    }

    /// The routes right under this one.
    fn children(&self) -> Vec<&RouteNode> {
        match self {
            RouteNode::Pool(_) | RouteNode::Pair { .. } => Vec::new(),
            RouteNode::Prefix(p) => p.children(),
            RouteNode::Operation(o) => o.children(),
            RouteNode::Zones(z) => z.children(),
        }
    }

    /// Every pool the route names, each once, in the order they appear.
    pub fn pools(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.walk(&mut |n| {
            let names: &[String] = match n {
                RouteNode::Pool(p) => std::slice::from_ref(p),
                RouteNode::Pair { pools, .. } => pools,
                _ => &[],
            };
            for p in names {
                if !out.contains(&p.as_str()) {
                    out.push(p);
                }
            }
        });
        out
    }

    /// The pools that are a gutter route's main pool (they must not auto-eject).
    pub fn gutter_mains(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.walk(&mut |n| {
            if let RouteNode::Pair {
                spec: RouteSpec::Gutter { .. },
                pools,
            } = n
            {
                out.push(pools[0].as_str());
            }
        });
        out
    }

    fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a RouteNode)) {
        f(self);
        for c in self.children() {
            c.walk(f);
        }
    }

    /// The route built over `pools`' clients, counting into `counters`; a `start: now`
    /// migration starts at `now`.
    pub(crate) fn build<T: Client>(
        &self,
        pools: &[(String, T)],
        counters: &Arc<Counters>,
        now: SystemTime,
    ) -> Result<Node<T>> {
        let client = |name: &str| -> Result<(String, T)> {
            match pools.iter().find(|(n, _)| n == name) {
                Some((n, c)) => Ok((n.clone(), c.clone())),
                None => {
                    let names: Vec<&str> = pools.iter().map(|(n, _)| n.as_str()).collect();
                    Err(Error::Config(format!(
                        "the route names pool {name:?}, which is not one of its pools ({})",
                        names.join(", ")
                    )))
                }
            }
        };
        let count = |route: &'static str| Count {
            route,
            counters: Arc::clone(counters),
        };
        let mut child = |n: &RouteNode| n.build(pools, counters, now);
        match self {
            RouteNode::Pool(name) => {
                let (name, client) = client(name)?;
                Ok(Box::new(Pool {
                    name,
                    client,
                    count: count("pool"),
                }))
            }
            RouteNode::Pair { spec, pools: names } => {
                let both = [client(&names[0])?, client(&names[1])?];
                spec.build(both, Arc::clone(counters), now)
            }
            RouteNode::Prefix(p) => p.build(&mut child, count("prefix")),
            RouteNode::Operation(o) => o.build(&mut child),
            RouteNode::Zones(z) => z.build(&mut child, count("zones")),
        }
    }

    /// The route a route file gives at `at`: a pool's name, or a mapping whose `policy` names
    /// the route (`prefix`, `operation`, `zones`, or a two-pool route with its pools by name).
    #[cfg(feature = "peer-config")]
    pub(crate) fn parse(y: &yaml_rust2::Yaml, at: &str) -> Result<RouteNode> {
        use super::yaml::{bad, shown, string, unknown_keys};
        use yaml_rust2::Yaml;
        let mut child = |y: &Yaml, at: &str| RouteNode::parse(y, at);
        let policy = match y {
            Yaml::String(pool) => return Ok(RouteNode::Pool(pool.clone())),
            Yaml::Hash(_) => string(&y["policy"], &format!("{at}.policy"))?,
            other => {
                return bad(format!(
                    "`{at}` is {}: give a pool's name or a mapping with `policy`",
                    shown(other)
                ));
            }
        };
        let Some(policy) = policy else {
            return bad(format!(
                "`{at}` has no `policy`: give prefix, operation, zones, {}",
                RouteSpec::KINDS.join(", ")
            ));
        };
        match policy.as_str() {
            "prefix" => PrefixRoute::parse(y, at, &mut child).map(RouteNode::Prefix),
            "operation" => OperationRoute::parse(y, at, &mut child).map(RouteNode::Operation),
            "zones" => ZoneRoute::parse(y, at, &mut child).map(RouteNode::Zones),
            pair => {
                let spec = RouteSpec::parse(y, pair, &format!("{at}.policy"))?;
                let [first, second] = spec.pool_keys();
                let mut known = vec!["policy", first, second];
                known.extend(spec.keys());
                if let Yaml::Hash(h) = y {
                    unknown_keys(h, &known, &format!("{at}."))?;
                }
                let name = |k: &str| match string(&y[k], &format!("{at}.{k}")) {
                    Ok(Some(n)) => Ok(n),
                    Ok(None) => bad(format!(
                        "`{at}` needs `{k}`: the name of one of the file's pools"
                    )),
                    Err(e) => Err(e),
                };
                let pools = [name(first)?, name(second)?];
                Ok(RouteNode::Pair { spec, pools })
            }
        }
    }
}
