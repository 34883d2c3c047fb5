//! A route in a file, in YAML (the format twemproxy's `nutcracker.yml` uses), read into a
//! [`RouteFile`] that each client's `Router::from_file` builds. Two forms: one of the four
//! two-pool routes with its pools inline, or `pools:` by name and a composed `route:`.
//!
//! ```yaml
//! route: warm_up              # warm_up | migrate | gutter | mirror
//! backfill_ttl: 3600          # warm_up, migrate: expiry of values copied into `new` (seconds, or never)
//! new:                        # warm_up, migrate: new and old; gutter: main and gutter; mirror: a and b
//!   servers: ["10.0.0.1:11211 1", "10.0.0.2:11211 1"]
//!   flavor: libmemcached      # default libmemcached
//!   hash: md5                 # default: the flavor's
//! old:
//!   servers: ["10.0.0.1:11211", "10.0.0.2:11211"]
//!   flavor: twemproxy
//!   hash: fnv1a_64
//! ```
//!
//! | key | routes | meaning |
//! |---|---|---|
//! | `route` | all | `warm_up`, `migrate`, `gutter` or `mirror` |
//! | `backfill_ttl` | warm_up, migrate | required: seconds (above 0), or `never` |
//! | `start` | migrate | `now` (when the router is built) or Unix seconds; default `now` |
//! | `window` | migrate | required: seconds the route reads the old pool after a miss |
//! | `tail` | migrate | seconds deletes still go to both pools after the window; default `window` |
//! | `ttl` | gutter | required: seconds, from 1 to 2592000 (30 days) |
//! | `read` | mirror | `prefer-a` (default), `prefer-b` or `random` |
//!
//! Each pool takes `servers` (a list of `host:port [weight] [name]` lines in any spelling
//! [`parse_server_list`] reads, or one string of such lines), and optionally `flavor`, `hash`,
//! `hash_tag`, `prefix`, `hash_with_prefix`, `protocol` (`text` or `meta`), `timeout_ms`,
//! `failure_limit`, `retry_timeout_ms` and `auto_eject`. A gutter's main pool never
//! auto-ejects (rehashing a failed server's keys onto its neighbours is what a gutter avoids):
//! `auto_eject: true` there is an error. Unknown keys are errors too: a misspelt setting must
//! not fall back to a default silently.
//!
//! The second form names its pools and composes routes over them:
//!
//! ```yaml
//! pools:
//!   east: { servers: ["10.0.1.1:11211", "10.0.1.2:11211"] }
//!   west: { servers: ["10.0.2.1:11211", "10.0.2.2:11211"] }
//!   rest: { servers: ["10.0.3.1:11211"], flavor: twemproxy }
//! route:                       # a pool's name, or a mapping with `policy`
//!   policy: prefix
//!   prefixes:
//!     "session:": { policy: zones, local: east, ack: quorum, zones: { east: east, west: west } }
//!   default: rest
//! ```
//!
//! | policy | keys |
//! |---|---|
//! | `prefix` | `prefixes` (a mapping of key prefix to route), `default` (a route; optional) |
//! | `operation` | a route per command: `get`, `set`, `add`, `replace`, `append`, `prepend`, `cas`, `touch`, `incr`, `decr`, `delete`; `default` |
//! | `zones` | `zones` (a mapping of zone name to route, in fallback order), `local` (required), `ack` (`one`, `quorum` (default) or `all`), `warming` (a list of zone names) |
//! | `warm_up`, `migrate`, `gutter`, `mirror` | the route's settings as above, its two pools by name (`new`/`old`, `main`/`gutter`, `a`/`b`) |
//!
//! Every pool must be used by the route and every pool the route names must be under `pools`.

use super::yaml::{bad, count, flag, shown, string, unknown_keys};
use super::{RouteNode, RouteSpec};
use crate::error::{Error, Result};
use crate::servers::{Server, parse_server_list};
use crate::{Builder, FailurePolicy, Flavor, HashTag, KeyHash, Protocol};
use std::path::Path;
use std::time::Duration;
use yaml_rust2::{Yaml, YamlLoader};

/// One pool of a [`RouteFile`]: what its client is built with. Settings the file leaves out
/// are `None` and keep the builder's value.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// The servers, in the file's order.
    pub servers: Vec<Server>,
    /// The placement flavor (default [`Flavor::Libmemcached`]).
    pub flavor: Flavor,
    /// The key hash (`None`: the flavor's).
    pub hash: Option<KeyHash>,
    /// The hash tag.
    pub hash_tag: Option<HashTag>,
    /// The key prefix (namespace).
    pub prefix: Option<String>,
    /// Placement hashes the prefix and the key.
    pub hash_with_prefix: bool,
    /// The protocol.
    pub protocol: Option<Protocol>,
    /// Connect, read, write and checkout timeout.
    pub timeout: Option<Duration>,
    /// Failure handling, when the file sets any of `failure_limit`, `retry_timeout_ms` or
    /// `auto_eject` (the others keep [`FailurePolicy::default`]'s values).
    pub failure_policy: Option<FailurePolicy>,
}

impl PoolConfig {
    /// `b` with every setting the file gives for this pool.
    pub fn apply<C>(&self, mut b: Builder<C>) -> Builder<C> {
        b = b
            .servers(self.servers.iter().cloned())
            .flavor(self.flavor)
            .hash_with_prefix(self.hash_with_prefix);
        if let Some(h) = self.hash {
            b = b.hash(h);
        }
        if let Some(t) = self.hash_tag {
            b = b.hash_tag(t);
        }
        if let Some(p) = &self.prefix {
            b = b.prefix(p);
        }
        if let Some(p) = self.protocol {
            b = b.protocol(p);
        }
        if let Some(t) = self.timeout {
            b = b
                .connect_timeout(t)
                .read_timeout(t)
                .write_timeout(t)
                .checkout_timeout(t);
        }
        if let Some(p) = self.failure_policy {
            b = b.failure_policy(p);
        }
        b
    }
}

/// A route read from a YAML file: its pools by name and the route over them.
///
/// ```
/// use memshard::routes::{RouteFile, RouteNode};
/// let yaml = r#"
/// route: warm_up
/// backfill_ttl: 3600
/// new: { servers: ["127.0.0.1:11211 1", "127.0.0.1:11212 1"], flavor: libmemcached, hash: md5 }
/// old: { servers: ["127.0.0.1:11211", "127.0.0.1:11212"], flavor: twemproxy, hash: fnv1a_64 }
/// "#;
/// let file = RouteFile::parse(yaml)?;
/// assert_eq!(file.name(), "warm_up");
/// assert_eq!(file.pool("old").map(|p| p.flavor), Some(memshard::Flavor::Twemproxy));
/// // building connects lazily: no server is needed yet
/// let router = memshard::Router::from_file(&file)?;
/// assert_eq!(router.stats().fallback_reads, 0);
/// # Ok::<(), memshard::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RouteFile {
    /// The pools, by name, in the file's order (a two-pool route's: new/old, main/gutter or
    /// a/b).
    pub pools: Vec<(String, PoolConfig)>,
    /// The route over them.
    pub route: RouteNode,
}

const TOP_KEYS: [&str; 7] = [
    "route",
    "backfill_ttl",
    "start",
    "window",
    "tail",
    "ttl",
    "read",
];
const POOL_KEYS: [&str; 11] = [
    "servers",
    "flavor",
    "hash",
    "hash_tag",
    "prefix",
    "hash_with_prefix",
    "protocol",
    "timeout_ms",
    "failure_limit",
    "retry_timeout_ms",
    "auto_eject",
];

fn pool(doc: &Yaml, name: &str) -> Result<PoolConfig> {
    let p = &doc[name];
    let h = match p {
        Yaml::Hash(h) => h,
        Yaml::BadValue | Yaml::Null => {
            return bad(format!(
                "no pool `{name}`: give `{name}:` with at least `servers`"
            ));
        }
        other => {
            return bad(format!(
                "`{name}` is {}: give a mapping with `servers` and the pool's settings",
                shown(other)
            ));
        }
    };
    unknown_keys(h, &POOL_KEYS, &format!("{name}."))?;
    let key = |k: &str| format!("{name}.{k}");
    let text = match &p["servers"] {
        Yaml::Array(list) => {
            let mut text = String::new();
            for (i, s) in list.iter().enumerate() {
                let Some(line) = s.as_str() else {
                    return bad(format!(
                        "`{}` entry {} is {}: give \"host:port [weight] [name]\"",
                        key("servers"),
                        i + 1,
                        shown(s)
                    ));
                };
                text.push_str(line);
                text.push('\n');
            }
            text
        }
        Yaml::String(s) => s.clone(),
        Yaml::BadValue | Yaml::Null => {
            return bad(format!(
                "pool `{name}` has no `servers`: give a list of \"host:port [weight] [name]\""
            ));
        }
        other => {
            return bad(format!(
                "`{}` is {}: give a list of \"host:port [weight] [name]\"",
                key("servers"),
                shown(other)
            ));
        }
    };
    let servers =
        parse_server_list(&text).or_else(|e| bad(format!("`{}`: {e}", key("servers"))))?;
    if servers.is_empty() {
        return bad(format!(
            "`{}` is empty: give at least one server",
            key("servers")
        ));
    }
    let parsed = |k: &str| -> Result<Option<String>> { string(&p[k], &key(k)) };
    let flavor = match parsed("flavor")? {
        Some(f) => f
            .parse::<Flavor>()
            .or_else(|e| bad(format!("`{}`: {e}", key("flavor"))))?,
        None => Flavor::Libmemcached,
    };
    let hash = match parsed("hash")? {
        Some(h) => Some(
            h.parse::<KeyHash>()
                .or_else(|e| bad(format!("`{}`: {e}", key("hash"))))?,
        ),
        None => None,
    };
    let hash_tag = match &p["hash_tag"] {
        // `hash_tag: {}` is YAML's empty mapping; twemproxy's configs quote it, people may not
        Yaml::Hash(h) if h.is_empty() => Some(HashTag::new(b'{', b'}')),
        y => match string(y, &key("hash_tag"))? {
            Some(t) => Some(
                t.parse::<HashTag>()
                    .or_else(|e| bad(format!("`{}`: {e}", key("hash_tag"))))?,
            ),
            None => None,
        },
    };
    let prefix = parsed("prefix")?;
    let protocol = match parsed("protocol")? {
        Some(s) => Some(
            s.parse::<Protocol>()
                .or_else(|e| bad(format!("`{}`: {e}", key("protocol"))))?,
        ),
        None => None,
    };
    let timeout = match count(&p["timeout_ms"], &key("timeout_ms"))? {
        Some(0) => {
            return bad(format!(
                "`{}` is 0: give milliseconds above 0",
                key("timeout_ms")
            ));
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };
    let limit = count(&p["failure_limit"], &key("failure_limit"))?;
    let retry = count(&p["retry_timeout_ms"], &key("retry_timeout_ms"))?;
    let eject = flag(&p["auto_eject"], &key("auto_eject"))?;
    let failure_policy = if limit.is_some() || retry.is_some() || eject.is_some() {
        let d = FailurePolicy::default();
        let limit = match limit {
            Some(n) => u32::try_from(n)
                .or_else(|_| bad(format!("`{}` is {n}: too large", key("failure_limit"))))?,
            None => d.failure_limit,
        };
        Some(FailurePolicy::new(
            limit,
            retry.map_or(d.retry_timeout, Duration::from_millis),
            eject.unwrap_or(d.auto_eject),
        ))
    } else {
        None
    };
    Ok(PoolConfig {
        servers,
        flavor,
        hash,
        hash_tag,
        prefix,
        hash_with_prefix: flag(&p["hash_with_prefix"], &key("hash_with_prefix"))?.unwrap_or(false),
        protocol,
        timeout,
        failure_policy,
    })
}

impl RouteFile {
    /// Read a route from YAML text (see [the module](self) for the keys).
    /// [`Error::Config`] names the key to fix.
    pub fn parse(yaml: &str) -> Result<RouteFile> {
        let docs = YamlLoader::load_from_str(yaml).or_else(|e| bad(format!("not YAML: {e}")))?;
        let doc = match docs.as_slice() {
            [d @ Yaml::Hash(_)] => d,
            [] => return bad("it is empty: give `route:` and the route's pools"),
            [_] => return bad("expected a mapping with `route:` and the route's pools"),
            _ => return bad("it holds several YAML documents: give one route per file"),
        };
        let file = match &doc["pools"] {
            Yaml::BadValue => RouteFile::two_pools(doc)?,
            pools => RouteFile::named_pools(doc, pools)?,
        };
        for main in file.route.gutter_mains() {
            if file
                .pool(main)
                .and_then(|p| p.failure_policy)
                .is_some_and(|p| p.auto_eject)
            {
                return bad(format!(
                    "`{main}.auto_eject` is true: a gutter serves a failed main server's keys instead of moving them to its neighbours; remove it or set it to false"
                ));
            }
        }
        Ok(file)
    }

    /// A file of the first form: `route:` names one of the two-pool routes, its pools
    /// inline under their keys.
    fn two_pools(doc: &Yaml) -> Result<RouteFile> {
        let route = match &doc["route"] {
            Yaml::Hash(_) => {
                return bad(
                    "`route` is a mapping: a composed route names its pools under `pools:`",
                );
            }
            y => match string(y, "route")? {
                Some(r) => r,
                None => {
                    return bad(
                        "no `route`: give warm_up, migrate, gutter or mirror (with its two pools), or `pools:` and a composed `route:`",
                    );
                }
            },
        };
        let spec = RouteSpec::parse(doc, &route, "route")?;
        let Yaml::Hash(h) = doc else {
            return bad("expected a mapping");
        };
        let name = spec.name();
        let [first, second] = spec.pool_keys();
        let mut known: Vec<&str> = vec!["route", first, second];
        known.extend(spec.keys());
        for k in h.keys().filter_map(Yaml::as_str) {
            if TOP_KEYS.contains(&k) && !known.contains(&k) {
                return bad(format!(
                    "`{k}` is not a setting of route {name}: its keys are {}",
                    known.join(", ")
                ));
            }
        }
        unknown_keys(h, &known, "")?;
        let pools = vec![
            (first.to_string(), pool(doc, first)?),
            (second.to_string(), pool(doc, second)?),
        ];
        let route = RouteNode::Pair {
            spec,
            pools: [first.to_string(), second.to_string()],
        };
        Ok(RouteFile { pools, route })
    }

    /// A file of the second form: `pools:` by name and a `route:` over them.
    fn named_pools(doc: &Yaml, list: &Yaml) -> Result<RouteFile> {
        if let Yaml::Hash(h) = doc {
            for k in h.keys() {
                let k = k.as_str().map_or_else(|| shown(k), str::to_string);
                if k != "pools" && k != "route" {
                    return bad(format!(
                        "unknown key `{k}`: a file with `pools:` has only `pools` and `route`; a route's settings go in its mapping"
                    ));
                }
            }
        }
        let Yaml::Hash(named) = list else {
            return bad(format!(
                "`pools` is {}: give a mapping of each pool's name to its settings",
                shown(list)
            ));
        };
        let mut pools = Vec::with_capacity(named.len());
        for name in named.keys() {
            let Some(name) = name.as_str() else {
                return bad(format!(
                    "`pools` has the key {}: give a pool name",
                    shown(name)
                ));
            };
            pools.push((name.to_string(), pool(list, name)?));
        }
        let route = match &doc["route"] {
            Yaml::BadValue | Yaml::Null => {
                return bad("no `route`: give a pool's name or a mapping with `policy`");
            }
            y => RouteNode::parse(y, "route")?,
        };
        let used = route.pools();
        for name in &used {
            if !pools.iter().any(|(n, _)| n == name) {
                return bad(format!(
                    "the route names pool {name:?}, which is not under `pools`"
                ));
            }
        }
        if let Some((unused, _)) = pools.iter().find(|(n, _)| !used.contains(&n.as_str())) {
            return bad(format!(
                "pool {unused:?} is not used by the route: route some keys to it or remove it"
            ));
        }
        Ok(RouteFile { pools, route })
    }

    /// Read a route from the YAML file at `path`; errors name the file.
    pub fn load(path: impl AsRef<Path>) -> Result<RouteFile> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Config(format!("cannot read route file {}: {e}", path.display()))
        })?;
        RouteFile::parse(&text).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    /// The route's name (`warm_up`, `migrate`, `gutter`, `mirror`, `prefix`, `operation`,
    /// `zones`, or `pool` for a single pool).
    pub fn name(&self) -> &'static str {
        self.route.name()
    }

    /// The settings of pool `name`.
    pub fn pool(&self, name: &str) -> Option<&PoolConfig> {
        self.pools.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }

    /// The builder of pool `name`: `base` (the caller's defaults: timeouts, credentials, pool
    /// size...), then what the file says; a gutter's main pool without auto-eject. `base`
    /// unchanged for a name that is not one of the file's pools.
    pub fn builder<C>(&self, name: &str, base: Builder<C>) -> Builder<C> {
        let Some(config) = self.pool(name) else {
            return base;
        };
        let mut b = config.apply(base);
        if self.route.gutter_mains().contains(&name) {
            b.settings.policy.auto_eject = false;
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expiry;
    use crate::routes::{PoolRole, ReadPolicy};
    use std::time::{SystemTime, UNIX_EPOCH};

    /// The two-pool route of a file of the first form.
    fn spec(f: &RouteFile) -> RouteSpec {
        match &f.route {
            RouteNode::Pair { spec, .. } => spec.clone(),
            other => panic!("not a two-pool route: {other:?}"),
        }
    }

    const NEW: &str = "new: { servers: [\"127.0.0.1:11211 1\", \"127.0.0.1:11212 1\"], flavor: libmemcached, hash: md5 }\n";
    const OLD: &str = "old: { servers: [\"127.0.0.1:11211\", \"127.0.0.1:11212\"], flavor: twemproxy, hash: fnv1a_64 }\n";

    fn err(yaml: &str) -> String {
        match RouteFile::parse(yaml) {
            Err(Error::Config(m)) => m,
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[test]
    fn warm_up_reads_both_pools() {
        let f = RouteFile::parse(&format!("route: warm_up\nbackfill_ttl: 3600\n{NEW}{OLD}"))
            .expect("valid");
        assert_eq!(
            spec(&f),
            RouteSpec::WarmUp {
                backfill: Expiry::after(Duration::from_secs(3600))
            }
        );
        assert_eq!(f.pools[0].1.hash, Some(KeyHash::Md5));
        assert_eq!(f.pools[0].1.servers.len(), 2);
        assert_eq!(f.pools[1].1.flavor, Flavor::Twemproxy);
        assert_eq!(f.pools[1].1.hash, Some(KeyHash::Fnv1a_64));
        let r = crate::Router::from_file(&f).expect("builds without connecting");
        assert_eq!(r.phase(), Some(crate::routes::Phase::WarmUp));
        let never = RouteFile::parse(&format!("route: warm_up\nbackfill_ttl: never\n{NEW}{OLD}"))
            .expect("valid");
        assert_eq!(
            spec(&never),
            RouteSpec::WarmUp {
                backfill: Expiry::NEVER
            }
        );
    }

    #[test]
    fn migrate_takes_a_window() {
        let f = RouteFile::parse(&format!(
            "route: migrate\nstart: 1800000000\nwindow: 600\nbackfill_ttl: 60\n{NEW}{OLD}"
        ))
        .expect("valid");
        let RouteSpec::Migrate {
            start,
            window,
            tail,
            ..
        } = spec(&f)
        else {
            panic!("not a migration: {:?}", spec(&f))
        };
        assert_eq!(start, Some(UNIX_EPOCH + Duration::from_secs(1_800_000_000)));
        assert_eq!((window, tail), (Duration::from_secs(600), window));
        let r = crate::Router::from_file(&f).expect("builds");
        // 1_800_000_000 is in 2027: the window has not started
        if SystemTime::now() < UNIX_EPOCH + Duration::from_secs(1_800_000_000) {
            assert_eq!(r.phase(), Some(crate::routes::Phase::Old));
        }
        let now = RouteFile::parse(&format!(
            "route: migrate\nstart: now\nwindow: 600\ntail: 30\nbackfill_ttl: 60\n{NEW}{OLD}"
        ))
        .expect("valid");
        assert_eq!(
            crate::Router::from_file(&now).expect("builds").phase(),
            Some(crate::routes::Phase::WarmUp)
        );
        assert!(err(&format!("route: migrate\nbackfill_ttl: 60\n{NEW}{OLD}")).contains("`window`"));
    }

    #[test]
    fn gutter_and_mirror() {
        let g = RouteFile::parse(
            "route: gutter\nttl: 60\nmain: { servers: [\"127.0.0.1:11211\"], protocol: meta, prefix: \"app:\" }\ngutter: { servers: \"127.0.0.1:11311\" }\n",
        )
        .expect("valid");
        assert_eq!(
            spec(&g),
            RouteSpec::Gutter {
                ttl: Duration::from_secs(60)
            }
        );
        assert_eq!(g.pools[0].1.protocol, Some(Protocol::Meta));
        assert_eq!(g.pools[0].1.prefix.as_deref(), Some("app:"));
        crate::Router::from_file(&g).expect("main without auto-eject");
        let m = RouteFile::parse(
            "route: mirror\nread: random\na: { servers: [\"127.0.0.1:11211\"] }\nb: { servers: [\"127.0.0.1:11212\"], hash_tag: \"{}\" }\n",
        )
        .expect("valid");
        assert_eq!(
            spec(&m),
            RouteSpec::Mirror {
                read: ReadPolicy::Random
            }
        );
        assert!(m.pools[1].1.hash_tag.is_some());
        crate::Router::from_file(&m).expect("two pools of their own");
        let shared = RouteFile::parse(
            "route: mirror\na: { servers: [\"127.0.0.1:11211\"] }\nb: { servers: [\"127.0.0.1:11211\"] }\n",
        )
        .expect("parses");
        assert!(matches!(
            crate::Router::from_file(&shared),
            Err(Error::Config(_))
        ));
    }

    /// The async router comes from the same dispatch: each kind builds, the same refusals.
    #[cfg(feature = "async")]
    #[test]
    fn async_routers_as_the_blocking_ones() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let warm = RouteFile::parse(&format!("route: warm_up\nbackfill_ttl: 60\n{NEW}{OLD}"))
                .expect("valid");
            let r = crate::aio::Router::from_file(&warm).expect("builds without connecting");
            assert_eq!(r.phase(), Some(crate::routes::Phase::WarmUp));
            let shared = RouteFile::parse(
                "route: mirror\na: { servers: [\"127.0.0.1:11211\"] }\nb: { servers: [\"127.0.0.1:11211\"] }\n",
            )
            .expect("parses");
            assert!(matches!(crate::aio::Router::from_file(&shared), Err(Error::Config(_))));
        });
    }

    #[test]
    fn errors_name_the_key_to_fix() {
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("- a\n- b\n", "mapping"),
            (&format!("{NEW}{OLD}"), "no `route`"),
            (&format!("route: warm\n{NEW}{OLD}"), "`route` is \"warm\""),
            (&format!("route: warm_up\n{NEW}{OLD}"), "`backfill_ttl`"),
            (
                &format!("route: warm_up\nbackfill_ttl: 0\n{NEW}{OLD}"),
                "`backfill_ttl` is 0",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: -5\n{NEW}{OLD}"),
                "`backfill_ttl` is -5",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: 60\n{NEW}"),
                "no pool `old`",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: 60\nttl: 5\n{NEW}{OLD}"),
                "`ttl` is not a setting of route warm_up",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: 60\nmain: {{}}\n{NEW}{OLD}"),
                "unknown key `main`",
            ),
            (
                &format!(
                    "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"x:1\"], flavour: twemproxy }}\n"
                ),
                "unknown key `old.flavour`",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [] }}\n"),
                "`old.servers` is empty",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [1] }}\n"),
                "`old.servers` entry 1",
            ),
            (
                &format!("route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ flavor: twemproxy }}\n"),
                "pool `old` has no `servers`",
            ),
            (
                &format!(
                    "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"a:1\"], hash: sha3 }}\n"
                ),
                "`old.hash`",
            ),
            (
                &format!(
                    "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"a:1\"], flavor: memcachier }}\n"
                ),
                "`old.flavor`",
            ),
            (
                &format!(
                    "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"a:1\"], protocol: binary }}\n"
                ),
                "`old.protocol`",
            ),
            (
                &format!(
                    "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"a:1\"], timeout_ms: 0 }}\n"
                ),
                "`old.timeout_ms` is 0",
            ),
            (
                &format!(
                    "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"a:1\"], auto_eject: yes please }}\n"
                ),
                "`old.auto_eject`",
            ),
            (
                "route: gutter\nmain: { servers: [\"a:1\"] }\ngutter: { servers: [\"b:1\"] }\n",
                "needs `ttl`",
            ),
            (
                "route: gutter\nttl: 0\nmain: { servers: [\"a:1\"] }\ngutter: { servers: [\"b:1\"] }\n",
                "`ttl` is 0",
            ),
            (
                "route: gutter\nttl: 60\nmain: { servers: [\"a:1\"], auto_eject: true }\ngutter: { servers: [\"b:1\"] }\n",
                "`main.auto_eject` is true",
            ),
            (
                "route: mirror\nread: fastest\na: { servers: [\"a:1\"] }\nb: { servers: [\"b:1\"] }\n",
                "`read` is \"fastest\"",
            ),
            (
                "route: warm_up\nbackfill_ttl: 60\nnew: [1]\nold: { servers: [\"b:1\"] }\n",
                "`new` is a list",
            ),
            ("route: [warm_up\n", "not YAML"),
            (
                &format!("route: migrate\nstart: soon\nwindow: 60\nbackfill_ttl: 60\n{NEW}{OLD}"),
                "`start` is \"soon\"",
            ),
        ];
        for (yaml, want) in cases {
            let m = err(yaml);
            assert!(m.contains(want), "{yaml:?}: {m:?} does not say {want:?}");
            assert!(!m.contains("--"), "a library error names no CLI flag: {m}");
        }
    }

    /// A pool's failure settings reach its client, each alone or together; only a gutter's
    /// main pool has auto-eject turned off.
    #[test]
    fn failure_settings_reach_each_pools_builder() {
        let policy = |f: &RouteFile, role| {
            let names = spec(f).pool_keys();
            let role: PoolRole = role;
            f.builder(names[role.index()], Builder::<crate::Client>::default())
                .settings
                .policy
        };
        let warm = |old: &str| {
            RouteFile::parse(&format!(
                "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"127.0.0.1:11211\"], {old} }}\n"
            ))
            .expect("valid")
        };
        let d = FailurePolicy::default();
        let eject = warm("auto_eject: true");
        assert_eq!(policy(&eject, PoolRole::Second), d.with_auto_eject(true));
        assert_eq!(policy(&eject, PoolRole::First), d);
        let limit = warm("failure_limit: 5");
        assert_eq!(policy(&limit, PoolRole::Second), d.with_failure_limit(5));
        let retry = warm("retry_timeout_ms: 250");
        assert_eq!(
            policy(&retry, PoolRole::Second),
            d.with_retry_timeout(Duration::from_millis(250))
        );
        let gutter = RouteFile::parse(
            "route: gutter\nttl: 60\nmain: { servers: [\"127.0.0.1:11211\"] }\ngutter: { servers: [\"127.0.0.1:11311\"], auto_eject: true }\n",
        )
        .expect("valid");
        assert!(!policy(&gutter, PoolRole::First).auto_eject);
        assert!(policy(&gutter, PoolRole::Second).auto_eject);
    }

    /// `hash_tag: {}` (YAML's empty mapping, as an unquoted twemproxy config writes it) is the
    /// tag `{}`; a mapping with entries is refused, as is a `backfill_ttl` that is a word other
    /// than `never`.
    #[test]
    fn an_empty_mapping_is_the_brace_tag() {
        let f = RouteFile::parse(&format!(
            "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"127.0.0.1:11211\"], hash_tag: {{}} }}\n"
        ))
        .expect("valid");
        assert_eq!(f.pools[1].1.hash_tag, Some(HashTag::new(b'{', b'}')));
        let m = err(&format!(
            "route: warm_up\nbackfill_ttl: 60\n{NEW}old: {{ servers: [\"127.0.0.1:11211\"], hash_tag: {{ a: 1 }} }}\n"
        ));
        assert!(m.contains("`old.hash_tag`"), "{m}");
        let m = err(&format!("route: warm_up\nbackfill_ttl: later\n{NEW}{OLD}"));
        assert!(m.contains("`backfill_ttl`"), "{m}");
    }

    /// A router's `Debug` names its route and each pool's servers.
    #[test]
    fn a_router_shows_its_route_and_pools() {
        let f = RouteFile::parse(&format!("route: warm_up\nbackfill_ttl: 60\n{NEW}{OLD}"))
            .expect("valid");
        let shown = format!("{:?}", crate::Router::from_file(&f).expect("builds"));
        for part in ["warm_up", "new", "old", "127.0.0.1:11212"] {
            assert!(shown.contains(part), "{part} not in {shown}");
        }
    }

    const COMPOSED: &str = r#"
pools:
  sessions: { servers: ["127.0.0.1:11211"] }
  east: { servers: ["127.0.0.1:11212"] }
  west: { servers: ["127.0.0.1:11213"] }
  west_gutter: { servers: ["127.0.0.1:11214"] }
route:
  policy: prefix
  prefixes:
    "session:": sessions
  default:
    policy: operation
    get: east
    default:
      policy: zones
      local: east
      ack: one
      zones:
        east: east
        west: { policy: gutter, main: west, gutter: west_gutter, ttl: 60 }
"#;

    /// The second form: pools by name, a route nested to any depth, each pool built once
    /// (a gutter's main without auto-eject).
    #[test]
    fn a_composed_route_names_its_pools() {
        let f = RouteFile::parse(COMPOSED).expect("valid");
        assert_eq!(f.name(), "prefix");
        let names: Vec<&str> = f.pools.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["sessions", "east", "west", "west_gutter"]);
        assert_eq!(f.route.pools(), ["sessions", "east", "west", "west_gutter"]);
        assert_eq!(f.route.gutter_mains(), ["west"]);
        let eject = Builder::<crate::Client>::default()
            .failure_policy(FailurePolicy::default().with_auto_eject(true));
        assert!(!f.builder("west", eject.clone()).settings.policy.auto_eject);
        assert!(f.builder("east", eject).settings.policy.auto_eject);
        let r = crate::Router::from_file(&f).expect("builds without connecting");
        assert_eq!(r.pool_names(), names);
        let shown = format!("{r:?}");
        for part in [
            "prefix",
            "operation",
            "zones",
            "east (local)",
            "gutter",
            "127.0.0.1:11214",
        ] {
            assert!(shown.contains(part), "{part} not in {shown}");
        }
        let single =
            RouteFile::parse("pools:\n  a: { servers: [\"127.0.0.1:11211\"] }\nroute: a\n");
        assert_eq!(single.expect("valid").name(), "pool");
    }

    #[test]
    fn composed_route_errors_name_the_key_to_fix() {
        let p =
            "pools:\n  a: { servers: [\"127.0.0.1:1\"] }\n  b: { servers: [\"127.0.0.1:2\"] }\n";
        let cases: &[(&str, &str)] = &[
            ("route: b\n", "pool \"a\" is not used"),
            ("route: c\n", "names pool \"c\", which is not under `pools`"),
            (
                "route: { policy: prefix, prefixes: { x: a }, default: b, extra: 1 }\n",
                "unknown key `route.extra`",
            ),
            (
                "route: { policy: prefix, prefixes: [a] }\n",
                "`route.prefixes` is a list",
            ),
            ("route: { prefixes: { x: a } }\n", "`route` has no `policy`"),
            (
                "route: { policy: fastest }\n",
                "`route.policy` is \"fastest\"",
            ),
            (
                "route: { policy: operation, get: a, flush: b }\n",
                "unknown key `route.flush`",
            ),
            (
                "route: { policy: zones, zones: { a: a, b: b } }\n",
                "needs `local`",
            ),
            (
                "route: { policy: zones, local: c, zones: { a: a, b: b } }\n",
                "not one of its zones",
            ),
            (
                "route: { policy: zones, local: a, ack: most, zones: { a: a, b: b } }\n",
                "`route.ack`",
            ),
            (
                "route: { policy: zones, local: a, warming: [a], zones: { a: a, b: b } }\n",
                "is warming",
            ),
            (
                "route: { policy: zones, local: a, warming: [c], zones: { a: a, b: b } }\n",
                "names \"c\"",
            ),
            (
                "route: { policy: warm_up, new: a, old: b }\n",
                "`backfill_ttl`",
            ),
            ("route: { policy: mirror, a: a }\n", "`route` needs `b`"),
            (
                "route: { policy: gutter, main: a, gutter: b, ttl: 60, read: random }\n",
                "unknown key `route.read`",
            ),
            ("route: [a]\n", "`route` is a list"),
            ("ttl: 5\nroute: a\n", "unknown key `ttl`"),
        ];
        for (route, want) in cases {
            let yaml = format!("{p}{route}");
            let m = err(&yaml);
            assert!(m.contains(want), "{yaml:?}: {m:?} does not say {want:?}");
        }
        let m = err("pools: [a]\nroute: a\n");
        assert!(m.contains("`pools` is a list"), "{m}");
        let m = err("route: { policy: prefix }\nnew: { servers: [\"a:1\"] }\n");
        assert!(m.contains("under `pools:`"), "{m}");
        let eject = format!("{p}route: {{ policy: gutter, main: a, gutter: b, ttl: 60 }}\n")
            .replace(
                "[\"127.0.0.1:1\"] }",
                "[\"127.0.0.1:1\"], auto_eject: true }",
            );
        assert!(err(&eject).contains("`a.auto_eject` is true"));
    }

    #[test]
    fn load_names_the_file() {
        let dir = std::env::temp_dir().join(format!("memshard-route-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("route.yml");
        std::fs::write(&path, "route: warm_up\n").expect("write");
        let Err(Error::Config(m)) = RouteFile::load(&path) else {
            panic!("expected an error")
        };
        assert!(m.starts_with(&path.display().to_string()), "{m}");
        let Err(Error::Config(m)) = RouteFile::load(dir.join("absent.yml")) else {
            panic!("expected an error")
        };
        assert!(m.contains("cannot read route file"), "{m}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
