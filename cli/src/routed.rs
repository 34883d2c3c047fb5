//! Routes between pools on the command line: `--warm-from OLD_FILE` (a warm-up route from the
//! old ring to the `--servers` ring) and `--route FILE` (a route file), for get, set, delete
//! and bench.

use super::{Failure, NetArgs, RingArgs, usage};
use clap::Args;
use memshard::routes::{RouteFile, RouteStats};
use memshard::{Builder, Client, Router};
use std::path::PathBuf;
use std::time::Duration;

/// A router and its route's name (`warm_up`, `migrate`, `gutter`, `mirror`).
pub struct Routed {
    pub router: Router,
    pub name: &'static str,
}

/// The route flags of get, set, delete and bench.
#[derive(Args)]
pub struct RouteFlags {
    /// Warm-up route: --servers (with --flavor, --hash) is the new ring and OLD_FILE the old
    /// ring's server list (same format as --servers). A get that misses on the new ring reads
    /// the old one and copies the value into the new one (memcached add, expiring after
    /// --warm-backfill-ttl); sets and deletes go to both.
    #[arg(long, value_name = "OLD_FILE")]
    pub warm_from: Option<PathBuf>,
    /// The old ring's placement flavor (default libmemcached).
    #[arg(long, value_name = "F", requires = "warm_from")]
    pub warm_from_flavor: Option<String>,
    /// The old ring's key hash (default: its flavor's).
    #[arg(long, value_name = "H", requires = "warm_from")]
    pub warm_from_hash: Option<String>,
    /// With --warm-from: seconds a value copied from the old ring into the new one lives
    /// there (memcached cannot tell what is left of the original TTL; 0: never expires;
    /// default 3600).
    #[arg(long, value_name = "SECS", requires = "warm_from")]
    pub warm_backfill_ttl: Option<u32>,
    /// A route file (YAML: route warm_up, migrate, gutter or mirror and its two pools, or
    /// `pools:` by name and a composed `route:` by key prefix, by command or replicated
    /// across zones; see the README). Replaces --servers; the connection flags apply to every
    /// pool unless the file sets them.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["servers", "twemproxy_config", "libmemcached_config", "flavor", "hash", "hash_tag", "warm_from"])]
    pub route: Option<PathBuf>,
}

/// The connection settings of `net`, as a builder every pool starts from.
fn base(net: &NetArgs, pool_size: u32) -> Result<Builder<Client>, Failure> {
    net.security.apply(net.builder(pool_size))
}

impl RouteFlags {
    /// Whether a route was asked for.
    pub fn any(&self) -> bool {
        self.warm_from.is_some() || self.route.is_some()
    }

    /// The router the flags ask for (`None`: no route), its new (first) pool built with
    /// `more` (bench's hot-key detection).
    pub fn router(
        &self,
        ring: &RingArgs,
        net: &NetArgs,
        pool_size: u32,
        more: impl Fn(Builder<Client>) -> Builder<Client>,
    ) -> Result<Option<Routed>, Failure> {
        if let Some(path) = &self.route {
            let file = RouteFile::load(path).map_err(usage)?;
            if net.auto_eject && !file.route.gutter_mains().is_empty() {
                // said, not quietly dropped: the gutter exists so that nothing is rehashed
                return Err(usage(
                    "--auto-eject with a gutter route: the gutter takes a failed server's keys instead of its neighbours; drop --auto-eject",
                ));
            }
            let b = base(net, pool_size)?;
            // the first pool (new, main, a) is the one bench's hot-key detection watches
            let first = file.pools.first().map(|(n, _)| n.clone());
            return Router::from_file_with(&file, |name, _| {
                if Some(name) == first.as_deref() {
                    more(b.clone())
                } else {
                    b.clone()
                }
            })
            .map(|router| {
                Some(Routed {
                    router,
                    name: file.name(),
                })
            })
            .map_err(usage);
        }
        let Some(old_file) = &self.warm_from else {
            return Ok(None);
        };
        if old_file.as_os_str() == "-" {
            return Err(usage(
                "--warm-from needs a server list file (standard input is not read for it)",
            ));
        }
        if ring.servers_from_stdin() {
            return Err(usage(
                "--servers - with --warm-from: give the new ring's server list as a file",
            ));
        }
        let new = ring.client_with(net, pool_size, more)?;
        let old_ring = RingArgs {
            servers: Some(old_file.clone()),
            twemproxy_config: None,
            pool: None,
            libmemcached_config: None,
            flavor: self.warm_from_flavor.clone(),
            hash: self.warm_from_hash.clone(),
            hash_tag: None,
            peer: None,
            peer_option: Vec::new(),
            discover: None,
            discover_interval: 60,
            discover_kind: "elasticache".into(),
        };
        let old = old_ring.client(net, pool_size).map_err(|f| Failure {
            msg: format!("--warm-from: {}", f.msg),
            ..f
        })?;
        let backfill = match self.warm_backfill_ttl.unwrap_or(3600) {
            0 => memshard::Expiry::NEVER,
            s => memshard::Expiry::after(Duration::from_secs(u64::from(s))),
        };
        Ok(Some(Routed {
            router: Router::warm_up(new, old, backfill),
            name: "warm_up",
        }))
    }
}

/// A route's counters, one `name=value` each, for reports.
pub fn counters(s: &RouteStats) -> Vec<(&'static str, u64)> {
    vec![
        ("fallback_reads", s.fallback_reads),
        ("fallback_hits", s.fallback_hits),
        ("fallback_errors", s.fallback_errors),
        ("backfills", s.backfills),
        ("backfills_lost", s.backfills_lost),
        ("backfill_errors", s.backfill_errors),
        ("repairs_recorded", s.repairs_recorded),
        ("old_copies_deleted", s.old_copies_deleted),
        ("refused", s.refused),
        ("gutter_requests", s.gutter_requests),
        ("gutter_hits", s.gutter_hits),
        ("gutter_cleanup_deletes", s.gutter_cleanup_deletes),
        ("mirror_partial_writes", s.mirror_partial_writes),
        ("mirror_divergences", s.mirror_divergences),
    ]
}

/// The counters of the composing policies (prefix, zones), for a composed route's reports.
pub fn composed_counters(s: &RouteStats) -> Vec<(&'static str, u64)> {
    vec![
        ("prefix_defaults", s.prefix_defaults),
        ("unmatched", s.unmatched),
        ("zone_fallback_reads", s.zone_fallback_reads),
        ("zone_fallback_hits", s.zone_fallback_hits),
        ("zone_short_writes", s.zone_short_writes),
        ("zone_divergences", s.zone_divergences),
    ]
}

/// The counters on one line: `route warm_up: fallback_reads=3 ...`.
pub fn counters_line(r: &Routed) -> String {
    let stats = r.router.stats();
    let mut all = counters(&stats);
    if !memshard::routes::RouteSpec::KINDS.contains(&r.name) {
        all.extend(composed_counters(&stats));
    }
    let list: Vec<String> = all.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("route {}: {}", r.name, list.join(" "))
}

/// What get, set and delete send to: one client, or a route over two.
pub enum Target {
    Client(Client),
    Route(Routed),
}

impl Target {
    /// The route asked for by `flags`, else the client of `ring`.
    pub fn new(
        flags: &RouteFlags,
        ring: &RingArgs,
        net: &NetArgs,
        pool_size: u32,
    ) -> Result<Target, Failure> {
        match flags.router(ring, net, pool_size, |b| b)? {
            Some(r) => Ok(Target::Route(r)),
            None => ring.client(net, pool_size).map(Target::Client),
        }
    }

    pub fn get_multi(&self, keys: &[Vec<u8>]) -> Vec<memshard::Result<Option<memshard::Item>>> {
        match self {
            Target::Client(c) => c.get_multi(keys),
            Target::Route(r) => r.router.get_multi(keys),
        }
    }

    pub fn set_multi(
        &self,
        items: &[(Vec<u8>, Vec<u8>)],
        flags: u32,
        expiry: memshard::Expiry,
    ) -> Vec<memshard::Result<memshard::StoreOutcome>> {
        match self {
            Target::Client(c) => c.set_multi(items, flags, expiry),
            Target::Route(r) => r.router.set_multi(items, flags, expiry),
        }
    }

    pub fn delete_multi(&self, keys: &[&[u8]]) -> Vec<memshard::Result<memshard::DeleteOutcome>> {
        match self {
            Target::Client(c) => c.delete_multi(keys),
            Target::Route(r) => r.router.delete_multi(keys),
        }
    }

    /// `value` stored as `codec`'s peer stores it.
    pub fn set_value(
        &self,
        codec: &memshard::value::Transcoder,
        key: &[u8],
        value: &memshard::value::Value,
        expiry: memshard::Expiry,
    ) -> Result<memshard::StoreOutcome, String> {
        match self {
            Target::Client(c) => c
                .set_value_with(codec, key, value, expiry)
                .map_err(|e| e.to_string()),
            Target::Route(r) => {
                // the new pool's limit: a route writes there first
                let enc = codec.encode(value, MAX_VALUE).map_err(|e| e.to_string())?;
                r.router
                    .set_raw(key, enc.bytes, enc.flags, expiry)
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Print the route's counters on standard error, after `command`'s summary.
    pub fn report(&self, command: &str) {
        if let Target::Route(r) = self {
            eprintln!("memshard {command}: {}", counters_line(r));
        }
    }
}

/// memcached's default item size limit, the client's default too.
const MAX_VALUE: usize = 1024 * 1024;
