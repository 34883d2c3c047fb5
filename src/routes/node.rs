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
    pub(crate) fn build<T: Client + Clone>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fake::Fake;
    use crate::core::transport::{Transport, now};
    use crate::error::Error;
    use crate::outcome::StoreOutcome;
    use crate::proto::StoreCommand;
    use crate::routes::policy::operation::OperationRoute;
    use crate::routes::policy::zones::{Ack, Zone};
    use crate::routes::{Write, Written};

    type Pools = Vec<(String, Arc<Fake>)>;

    /// Pools `names`, each one server `127.0.9.{i + 1}:{port}`: a port per test, as a
    /// server's health is the process's.
    fn pools(names: &[&str], port: u16) -> Pools {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let f = Fake::new(&format!("127.0.9.{}:{port}", i + 1), |b| b);
                (n.to_string(), Arc::new(f))
            })
            .collect()
    }

    fn set(w: &'static [u8]) -> Write<'static> {
        Write::Store {
            cmd: StoreCommand::Set,
            value: w,
            flags: 0,
            exptime: 0,
        }
    }

    fn held(p: &Pools, pool: usize, key: &str) -> Option<Vec<u8>> {
        let server = p[pool].1.core().ring().servers()[0].addr.clone();
        p[pool].1.held(&server, key)
    }

    /// Pool `pool`'s next requests are answered `replies`, in order.
    fn answer_next(p: &Pools, pool: usize, replies: &[&'static [u8]]) {
        let mut script = crate::core::fake::lock(&p[pool].1.script);
        for &r in replies {
            script.push_back(Box::new(move |_| r.to_vec()));
        }
    }

    /// The one server of pool `pool`.
    fn fail(p: &Pools, pool: usize) {
        let server = p[pool].1.core().ring().servers()[0].addr.clone();
        p[pool].1.fail(&server);
    }

    #[test]
    fn a_prefix_route_sends_each_key_to_its_prefix_s_pool() {
        let p = pools(&["sessions", "pages", "rest"], 1);
        let route = RouteNode::Prefix(PrefixRoute::new(
            [
                ("session:", RouteNode::pool("sessions")),
                ("page:", RouteNode::pool("pages")),
                ("page:admin:", RouteNode::pool("sessions")),
            ],
            Some(RouteNode::pool("rest")),
        ));
        let counters = Arc::default();
        let root = route
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        for key in ["session:1", "page:2", "user:3", "page:admin:4"] {
            let r = now(&p[0].1, root.write(key.as_bytes(), set(b"v")));
            assert_eq!(r.ok(), Some(Written::Store(StoreOutcome::Stored)));
        }
        assert!(held(&p, 0, "session:1").is_some());
        assert!(held(&p, 1, "page:2").is_some());
        assert!(held(&p, 2, "user:3").is_some());
        assert!(
            held(&p, 0, "page:admin:4").is_some(),
            "the longest prefix wins"
        );
        assert!(held(&p, 1, "page:admin:4").is_none());
        let keys: Vec<&[u8]> = vec![b"user:3", b"session:1", b"none", b"page:2"];
        let got = now(&p[0].1, root.get_multi(&keys));
        let hits: Vec<bool> = got.iter().map(|r| matches!(r, Ok(Some(_)))).collect();
        assert_eq!(hits, [true, true, false, true], "answers in input order");
        assert_eq!(counters.snapshot().prefix_defaults, 3);

        let strict = RouteNode::Prefix(PrefixRoute::new([("a:", RouteNode::pool("rest"))], None));
        let root = strict
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        let e = now(&p[0].1, root.get(b"b:1"));
        assert!(
            matches!(&e, Err(Error::Route { route: "prefix", reason, .. }) if reason.contains("\"a:\"")),
            "{e:?}"
        );
        let multi = now(&p[0].1, root.get_multi(&[&b"a:1"[..], b"b:1"]));
        assert!(multi[0].is_ok() && multi[1].is_err());
        assert_eq!(counters.snapshot().unmatched, 2);
    }

    /// Zones a, b (local) and c, each one pool of one server on `port`, a quorum
    /// acknowledging: the pools, the route's counters and the built route.
    fn quorum_zones(port: u16) -> (Pools, Arc<Counters>, super::super::policy::Node<Arc<Fake>>) {
        let p = pools(&["a", "b", "c"], port);
        let counters: Arc<Counters> = Arc::default();
        let root = zones(Ack::Quorum)
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        (p, counters, root)
    }

    fn zones(ack: Ack) -> RouteNode {
        let z = |n: &str| Zone::new(n, RouteNode::pool(n));
        RouteNode::Zones(ZoneRoute::new([z("a"), z("b"), z("c")], "b", ack))
    }

    #[test]
    fn zones_write_everywhere_and_read_the_local_zone_first() {
        let (p, counters, root) = quorum_zones(2);
        let r = now(&p[0].1, root.write(b"k", set(b"v1")));
        assert_eq!(r.ok(), Some(Written::Store(StoreOutcome::Stored)));
        for z in 0..3 {
            assert_eq!(held(&p, z, "k").as_deref(), Some(&b"v1"[..]), "zone {z}");
        }
        let before: Vec<usize> = p.iter().map(|(_, f)| f.sent().len()).collect();
        let got = now(&p[0].1, root.get(b"k")).expect("read");
        assert_eq!(got.map(|i| i.value.to_vec()), Some(b"v1".to_vec()));
        let after: Vec<usize> = p.iter().map(|(_, f)| f.sent().len()).collect();
        assert_eq!(
            [
                after[0] - before[0],
                after[1] - before[1],
                after[2] - before[2]
            ],
            [0, 1, 0],
            "read from the local zone only"
        );

        // the local zone fails: reads fall back, writes meet a quorum of 2 and the failed
        // zone's server is held out of reads until it is repaired
        fail(&p, 1);
        let r = now(&p[0].1, root.write(b"k", set(b"v2")));
        assert_eq!(r.ok(), Some(Written::Store(StoreOutcome::Stored)));
        let got = now(&p[0].1, root.get(b"k")).expect("fallback");
        assert_eq!(got.map(|i| i.value.to_vec()), Some(b"v2".to_vec()));
        let s = counters.snapshot();
        assert_eq!((s.zone_fallback_reads, s.zone_fallback_hits), (1, 1));
        assert!(s.repairs_recorded >= 1);
        lock_down_cleared(&p[1].1);
        let got = now(&p[0].1, root.get(b"k")).expect("read");
        assert_eq!(
            got.map(|i| i.value.to_vec()),
            Some(b"v2".to_vec()),
            "the zone that missed the write is not read before it is repaired"
        );

        let all = zones(Ack::All)
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        fail(&p, 2);
        let e = now(&p[0].1, all.write(b"k2", set(b"v")));
        assert!(
            matches!(&e, Err(Error::Route { route: "zones", reason, .. }) if reason.contains("of 3 zones took it and the route needs 3")),
            "{e:?}"
        );
        let fresh = pools(&["a", "b", "c"], 3);
        let one = zones(Ack::One)
            .build(&fresh, &counters, SystemTime::now())
            .expect("builds");
        fail(&fresh, 0);
        fail(&fresh, 1);
        let e = now(&fresh[0].1, one.write(b"k3", set(b"v")));
        assert!(e.is_ok(), "one zone is enough: {e:?}");
        assert!(counters.snapshot().zone_short_writes >= 1);
    }

    fn lock_down_cleared(f: &Fake) {
        f.down.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    #[test]
    fn zones_may_not_share_a_server_and_the_local_zone_must_be_read() {
        let mut p = pools(&["a", "b"], 5);
        p.push(("c".into(), Arc::new(Fake::new("127.0.9.1:5", |b| b))));
        let counters = Arc::default();
        let e = zones(Ack::One).build(&p, &counters, SystemTime::now());
        assert!(matches!(e, Err(Error::Config(m)) if m.contains("share server 127.0.9.1:5")));
        let z = |n: &str| Zone::new(n, RouteNode::pool(n));
        let warming = RouteNode::Zones(ZoneRoute::new([z("a"), z("b").warming()], "b", Ack::One));
        assert!(warming.build(&p, &counters, SystemTime::now()).is_err());
        let missing = RouteNode::pool("nope").build(&p, &counters, SystemTime::now());
        assert!(matches!(missing, Err(Error::Config(m)) if m.contains("\"nope\"")));
    }

    #[test]
    fn an_operation_route_sends_deletes_to_every_zone_and_reads_to_one_pool() {
        let p = pools(&["a", "b", "c"], 4);
        let counters = Arc::default();
        let route = OperationRoute::new(Some(RouteNode::pool("b")))
            .with("delete", zones(Ack::All))
            .expect("an operation");
        let root = RouteNode::Operation(route)
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        let z = zones(Ack::All)
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        let r = now(&p[0].1, z.write(b"k", set(b"v")));
        assert!(r.is_ok());
        let r = now(&p[0].1, root.write(b"k", set(b"w")));
        assert!(r.is_ok());
        assert_eq!(
            held(&p, 1, "k").as_deref(),
            Some(&b"w"[..]),
            "set: the default"
        );
        assert_eq!(held(&p, 0, "k").as_deref(), Some(&b"v"[..]));
        let r = now(&p[0].1, root.write(b"k", Write::Delete));
        assert_eq!(r.ok(), Some(Written::Delete(crate::DeleteOutcome::Deleted)));
        assert!(
            (0..3).all(|z| held(&p, z, "k").is_none()),
            "delete: every zone"
        );
        let none = OperationRoute::new(None)
            .with("get", RouteNode::pool("a"))
            .expect("get");
        let e = RouteNode::Operation(none).build(&p, &counters, SystemTime::now());
        assert!(matches!(e, Err(Error::Config(m)) if m.contains("no route for set")));
    }

    #[test]
    fn a_route_names_its_pools_and_gutter_mains() {
        let route = RouteNode::Zones(ZoneRoute::new(
            [
                Zone::new("a", RouteNode::pool("a")),
                Zone::new(
                    "b",
                    RouteNode::Pair {
                        spec: RouteSpec::Gutter {
                            ttl: std::time::Duration::from_secs(60),
                        },
                        pools: ["b".into(), "g".into()],
                    },
                ),
            ],
            "a",
            Ack::All,
        ));
        assert_eq!(route.pools(), ["a", "b", "g"]);
        assert_eq!(route.gutter_mains(), ["b"]);
        assert_eq!(route.name(), "zones");
    }

    fn server(p: &Pools, pool: usize) -> String {
        p[pool].1.core().ring().servers()[0].addr.clone()
    }

    /// Each kind of node names the servers under it, each once, and the owners of a key.
    #[test]
    fn every_node_names_its_servers_and_a_key_s_owners() {
        let p = pools(&["a", "b", "c"], 6);
        let [a, b, c] = [0, 1, 2].map(|i| server(&p, i));
        let counters = Arc::default();
        let build = |n: RouteNode| n.build(&p, &counters, SystemTime::now()).expect("builds");

        let pool = build(RouteNode::pool("a"));
        assert_eq!(pool.servers(), vec![a.clone()]);
        assert_eq!(pool.owners(b"k").expect("owners"), vec![a.clone()]);

        let prefix = build(RouteNode::Prefix(PrefixRoute::new(
            [("x:", RouteNode::pool("a"))],
            Some(RouteNode::pool("b")),
        )));
        assert_eq!(prefix.servers(), [a.clone(), b.clone()]);
        assert_eq!(prefix.owners(b"x:1").expect("owners"), vec![a.clone()]);
        assert_eq!(prefix.owners(b"y:1").expect("owners"), vec![b.clone()]);

        let pair = build(RouteNode::Pair {
            spec: RouteSpec::Mirror {
                read: crate::routes::ReadPolicy::PreferA,
            },
            pools: ["a".into(), "c".into()],
        });
        assert_eq!(pair.servers(), [a.clone(), c.clone()]);
        assert_eq!(pair.owners(b"k").expect("owners"), [a.clone(), c.clone()]);

        // the default and the delete route share pool b: named once
        let operation = build(RouteNode::Operation(
            OperationRoute::new(Some(RouteNode::pool("b")))
                .with("delete", zones(Ack::All))
                .expect("an operation"),
        ));
        let mut servers = operation.servers();
        servers.sort();
        assert_eq!(servers, [a.clone(), b.clone(), c.clone()]);
        let mut owners = operation.owners(b"k").expect("owners");
        owners.sort();
        assert_eq!(owners, [a.clone(), b.clone(), c.clone()]);

        let tree = super::super::policy::Tree {
            root: pool,
            pools: p.clone(),
            counters,
        };
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            let named = tree.named(name).expect("a pool of that name");
            assert!(Arc::ptr_eq(named, &p[i].1), "pool {name}");
        }
        assert!(tree.named("d").is_none());
    }

    /// A pool node's `gets` answers the value with a token naming the pool's server.
    #[test]
    fn a_pool_s_gets_names_the_server_that_holds_the_key() {
        let p = pools(&["a"], 7);
        let counters = Arc::default();
        let pool = RouteNode::pool("a")
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        assert!(now(&p[0].1, pool.gets(b"k")).expect("gets").is_none());
        let r = now(&p[0].1, pool.write(b"k", set(b"v")));
        assert!(r.is_ok());
        let got = now(&p[0].1, pool.gets(b"k")).expect("gets").expect("a hit");
        assert_eq!(&got.item.value[..], b"v");
        assert_eq!(got.token.server, server(&p, 0));
        assert_eq!(Some(got.token.unique), got.item.cas);
    }

    /// A cas in the zone the token came from: the other zones' copies are repaired (deleted),
    /// the new value kept.
    #[test]
    fn a_zones_cas_repairs_the_other_zones() {
        let (p, _, root) = quorum_zones(8);
        assert!(now(&p[0].1, root.write(b"k", set(b"v1"))).is_ok());
        let got = now(&p[0].1, root.gets(b"k")).expect("gets").expect("a hit");
        assert_eq!(got.token.server, server(&p, 1), "the local zone answers");
        let v = crate::routes::policy::Stored {
            value: b"v2",
            flags: 0,
            expiry: crate::Expiry::NEVER,
        };
        let r = now(&p[0].1, root.cas(b"k", v, &got.token));
        assert_eq!(r.ok(), Some(StoreOutcome::Stored));
        assert_eq!(held(&p, 1, "k").as_deref(), Some(&b"v2"[..]));
        assert_eq!((held(&p, 0, "k"), held(&p, 2, "k")), (None, None));
    }

    /// Zones holding different values: `verify` says so; a read-modify command that
    /// answers differently in a zone deletes that zone's copy.
    #[test]
    fn zones_that_differ_are_found_and_a_divergent_answer_is_repaired() {
        let (p, counters, root) = quorum_zones(9);
        assert!(now(&p[0].1, root.write(b"n", set(b"1"))).is_ok());
        assert_eq!(now(&p[0].1, root.verify(b"n")).ok(), Some(true));
        assert_eq!(counters.snapshot().zone_divergences, 0, "copies agree");
        let c = RouteNode::pool("c")
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        assert!(now(&p[0].1, c.write(b"n", set(b"5"))).is_ok());
        assert_eq!(now(&p[0].1, root.verify(b"n")).ok(), Some(false));
        let divergences = counters.snapshot().zone_divergences;
        assert_eq!(divergences, 1, "verify counts the copies that differ");

        let incr = Write::Arith {
            incr: true,
            delta: 1,
        };
        let r = now(&p[0].1, root.write(b"n", incr));
        assert_eq!(
            r.ok(),
            Some(Written::Arith(Some(2))),
            "the local zone's answer"
        );
        assert_eq!(counters.snapshot().zone_divergences, divergences + 1);
        assert_eq!(
            held(&p, 2, "n"),
            None,
            "zone c's copy, which answered 6, deleted"
        );
        assert_eq!(held(&p, 0, "n").as_deref(), Some(&b"2"[..]));
    }

    /// A zones multi-get counts as fallback hits only the keys a zone after the local one
    /// answered.
    #[test]
    fn a_zones_multi_get_counts_only_the_fallback_zones_hits() {
        let (p, counters, root) = quorum_zones(10);
        assert!(now(&p[0].1, root.write(b"k", set(b"v"))).is_ok());
        let keys: Vec<&[u8]> = vec![b"k", b"missing"];
        let got = now(&p[0].1, root.get_multi(&keys));
        assert!(matches!(got[..], [Ok(Some(_)), Ok(None)]));
        let s = counters.snapshot();
        assert_eq!(
            (s.zone_fallback_reads, s.zone_fallback_hits),
            (2, 0),
            "the local zone's hit is not a fallback's; the miss is asked of each other zone"
        );
        fail(&p, 1);
        let got = now(&p[0].1, root.get_multi(&keys));
        assert!(matches!(got[..], [Ok(Some(_)), Ok(None)]));
        let s = counters.snapshot();
        // both keys of zone a, the miss of zone c; the hit is zone a's
        assert_eq!((s.zone_fallback_reads, s.zone_fallback_hits), (5, 1));
    }

    /// A read that one zone answered with a miss is a miss, whatever another zone's failure;
    /// only when no zone answered is it the failure.
    #[test]
    fn a_zones_miss_beats_another_zone_s_failure() {
        let (p, _, root) = quorum_zones(11);
        fail(&p, 0);
        let got = now(&p[0].1, root.get(b"missing"));
        assert!(matches!(got, Ok(None)), "{got:?}");
        fail(&p, 1);
        fail(&p, 2);
        let got = now(&p[0].1, root.get(b"missing"));
        assert!(got.is_err(), "no zone answered: {got:?}");
    }

    /// A zone that answers a read with an error about the request (not a failed server) gives
    /// that error: the other zones are not asked.
    #[test]
    fn a_zones_read_refused_by_the_local_zone_is_that_refusal() {
        let (p, counters, root) = quorum_zones(13);
        assert!(now(&p[0].1, root.write(b"k", set(b"v"))).is_ok());
        answer_next(&p, 1, &[b"SERVER_ERROR out of memory\r\n"]);
        let got = now(&p[0].1, root.get(b"k"));
        assert!(
            matches!(&got, Err(e) if !e.is_server_failure()),
            "the local zone's refusal: {got:?}"
        );
        assert_eq!(counters.snapshot().zone_fallback_reads, 0);
    }

    /// A zone that is a pair of pools repairs both of them: a cas in another zone deletes
    /// the pair's two copies.
    #[test]
    fn a_pair_in_a_zone_repairs_both_its_pools() {
        let p = pools(&["a", "b", "d"], 14);
        let counters: Arc<Counters> = Arc::default();
        let mirror = RouteNode::Pair {
            spec: RouteSpec::Mirror {
                read: crate::routes::ReadPolicy::PreferA,
            },
            pools: ["a".into(), "d".into()],
        };
        let root = RouteNode::Zones(ZoneRoute::new(
            [Zone::new("a", mirror), Zone::new("b", RouteNode::pool("b"))],
            "b",
            Ack::All,
        ))
        .build(&p, &counters, SystemTime::now())
        .expect("builds");
        assert!(now(&p[0].1, root.write(b"k", set(b"v1"))).is_ok());
        assert_eq!(held(&p, 2, "k").as_deref(), Some(&b"v1"[..]), "pool d");
        let got = now(&p[0].1, root.gets(b"k")).expect("gets").expect("a hit");
        let v = crate::routes::policy::Stored {
            value: b"v2",
            flags: 0,
            expiry: crate::Expiry::NEVER,
        };
        let repairs = counters.snapshot().repairs_recorded;
        let r = now(&p[0].1, root.cas(b"k", v, &got.token));
        assert_eq!(r.ok(), Some(StoreOutcome::Stored));
        assert_eq!(held(&p, 1, "k").as_deref(), Some(&b"v2"[..]));
        assert_eq!((held(&p, 0, "k"), held(&p, 2, "k")), (None, None));
        assert_eq!(counters.snapshot().repairs_recorded, repairs + 2);
    }

    /// A zones multi-key write answers every key, as each zone took it.
    #[test]
    fn zones_multi_key_writes_answer_every_key() {
        let (p, _, root) = quorum_zones(15);
        let items: Vec<(&[u8], &[u8])> = vec![(b"x", b"1"), (b"y", b"2")];
        let set = now(&p[0].1, root.set_multi(&items, 0, crate::Expiry::NEVER));
        assert!(
            matches!(
                set[..],
                [Ok(StoreOutcome::Stored), Ok(StoreOutcome::Stored)]
            ),
            "{set:?}"
        );
        assert_eq!(held(&p, 2, "y").as_deref(), Some(&b"2"[..]));
        let keys: Vec<&[u8]> = vec![b"x", b"nothing"];
        let deleted = now(&p[0].1, root.delete_multi(&keys));
        use crate::outcome::DeleteOutcome;
        assert!(
            matches!(
                deleted[..],
                [Ok(DeleteOutcome::Deleted), Ok(DeleteOutcome::NotFound)]
            ),
            "{deleted:?}"
        );
        assert_eq!(held(&p, 0, "x"), None);
    }

    /// A warming zone is written but does not count toward the acknowledgement: with every
    /// read zone required and one of them down, a write is refused though the warming zone
    /// took it.
    #[test]
    fn a_warming_zone_does_not_acknowledge_a_write() {
        let p = pools(&["a", "b", "c"], 16);
        let counters = Arc::default();
        let z = |n: &str| Zone::new(n, RouteNode::pool(n));
        let root = RouteNode::Zones(ZoneRoute::new(
            [z("a"), z("b"), z("c").warming()],
            "b",
            Ack::All,
        ))
        .build(&p, &counters, SystemTime::now())
        .expect("builds");
        fail(&p, 0);
        let r = now(&p[0].1, root.write(b"k", set(b"v")));
        assert!(r.is_err(), "one of two read zones took it: {r:?}");
        assert_eq!(held(&p, 2, "k").as_deref(), Some(&b"v"[..]), "warming zone");
    }

    /// A route describes itself with each pool's name and servers.
    #[test]
    fn a_route_describes_its_pools_and_servers() {
        let p = pools(&["a"], 17);
        let counters = Arc::default();
        let pool = RouteNode::pool("a")
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        assert_eq!(pool.describe(), format!("a [{}]", server(&p, 0)));
    }

    /// A read that the local zone answers counts no fallback; one that a later zone answers
    /// counts a fallback read and hit.
    #[test]
    fn only_a_later_zone_s_hit_counts_as_a_fallback_hit() {
        let (p, counters, root) = quorum_zones(18);
        assert!(now(&p[0].1, root.write(b"k", set(b"v"))).is_ok());
        assert!(matches!(now(&p[0].1, root.get(b"k")), Ok(Some(_))));
        let s = counters.snapshot();
        assert_eq!((s.zone_fallback_reads, s.zone_fallback_hits), (0, 0));
        fail(&p, 1);
        assert!(matches!(now(&p[0].1, root.get(b"k")), Ok(Some(_))));
        let s = counters.snapshot();
        assert_eq!((s.zone_fallback_reads, s.zone_fallback_hits), (1, 1));
    }

    /// A zones multi-get whose local zone refuses it (an error about the request, not a
    /// failed server) answers that refusal, without asking the other zones.
    #[test]
    fn a_zones_multi_get_refused_by_the_local_zone_is_that_refusal() {
        let (p, counters, root) = quorum_zones(19);
        assert!(now(&p[0].1, root.write(b"k", set(b"v"))).is_ok());
        answer_next(&p, 1, &[b"SERVER_ERROR out of memory\r\n"]);
        let keys: Vec<&[u8]> = vec![b"k"];
        let got = now(&p[0].1, root.get_multi(&keys));
        assert!(
            matches!(&got[..], [Err(e)] if !e.is_server_failure()),
            "the local zone's refusal: {got:?}"
        );
        assert_eq!(counters.snapshot().zone_fallback_reads, 0);
    }

    /// Zones whose multi-key writes answer differently: the caller gets the answer of a zone
    /// that took the write (stored, deleted), not the local zone's other answer.
    #[test]
    fn a_zones_multi_key_write_answers_as_the_zone_that_took_it() {
        let (p, counters, root) = quorum_zones(20);
        // the local zone b does not store it; a fake connection's first write goes after a
        // `version`, the login probe (`Link::advance`)
        answer_next(&p, 1, &[b"VERSION 1.6.21\r\n", b"NOT_STORED\r\n"]);
        let items: Vec<(&[u8], &[u8])> = vec![(b"x", b"1")];
        let stored = now(&p[0].1, root.set_multi(&items, 0, crate::Expiry::NEVER));
        assert!(
            matches!(stored[..], [Ok(StoreOutcome::Stored)]),
            "{stored:?}"
        );
        // only zone a holds `y`
        let a = RouteNode::pool("a")
            .build(&p, &counters, SystemTime::now())
            .expect("builds");
        assert!(now(&p[0].1, a.write(b"y", set(b"2"))).is_ok());
        let keys: Vec<&[u8]> = vec![b"y"];
        let deleted = now(&p[0].1, root.delete_multi(&keys));
        assert!(
            matches!(deleted[..], [Ok(crate::outcome::DeleteOutcome::Deleted)]),
            "{deleted:?}"
        );
    }

    /// A multi-get's key that a zone answered with a miss stays a miss when a zone read after
    /// it fails; a key no zone answered gets the failure.
    #[test]
    fn a_zones_multi_get_keeps_a_miss_over_a_later_zone_s_failure() {
        let (p, _, root) = quorum_zones(12);
        // zone c is read last (the local zone b, then a, then c)
        fail(&p, 2);
        let keys: Vec<&[u8]> = vec![b"missing", b"gone"];
        let got = now(&p[0].1, root.get_multi(&keys));
        assert!(matches!(got[..], [Ok(None), Ok(None)]), "{got:?}");
        fail(&p, 0);
        fail(&p, 1);
        let got = now(&p[0].1, root.get_multi(&keys));
        assert!(got.iter().all(Result::is_err), "no zone answered: {got:?}");
    }
}
