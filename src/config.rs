//! Configurations teams already have: a twemproxy `nutcracker.yml` pool and libmemcached
//! configuration strings, read into a server list, a flavor, a key hash, a hash tag and a
//! failure policy that place keys as the peer does.

use crate::hash::KeyHash;
use crate::ring::{Flavor, HashTag};
use crate::servers::{Server, parse_server_list};
use crate::settings::FailurePolicy;
use std::time::Duration;
use yaml_rust2::{Yaml, YamlLoader};

/// A placement configuration read from a peer's own format.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PeerConfig {
    /// Servers, in the peer's order.
    pub servers: Vec<Server>,
    /// The flavor that places keys as the peer does.
    pub flavor: Flavor,
    /// The key hash.
    pub hash: KeyHash,
    /// Hash tag (twemproxy `hash_tag`).
    pub hash_tag: Option<HashTag>,
    /// Failure handling (`auto_eject_hosts`, `server_failure_limit`, `server_retry_timeout`;
    /// libmemcached `--REMOVE-FAILED-SERVERS`, `--SERVER-FAILURE-LIMIT`, `--RETRY-TIMEOUT`).
    pub failure_policy: FailurePolicy,
    /// Request timeout (twemproxy `timeout`; libmemcached `--RCV-TIMEOUT`), if given. A value
    /// of 0 means what it means to the peer, no timeout of its own (libmemcached sets
    /// `SO_RCVTIMEO` only when `rcv_timeout` is not 0; twemproxy waits forever without
    /// `timeout`): `None` here, so the client's own timeouts apply.
    pub timeout: Option<Duration>,
    /// libmemcached `--NAMESPACE` (the key prefix).
    pub prefix: Option<String>,
    /// libmemcached `--HASH-WITH-NAMESPACE`: placement hashes the namespace and the key.
    pub hash_with_prefix: bool,
    /// The hash libmemcached built its (unweighted) ring with, when a later `--HASH` changed
    /// only the key hash: see [`crate::Ring::with_point_hash`].
    pub point_hash: Option<KeyHash>,
}

/// A configuration that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// `value`, given for `what`, as a whole number from `min` to `max` (in `unit`): a value that
/// is not a whole number and one out of range are told apart, with the range to give.
fn whole(what: &str, value: &str, (min, max): (u64, u64), unit: &str) -> Result<u64, ConfigError> {
    let out_of_range = || {
        ConfigError(format!(
            "{what}: {value} is out of range; give {min} to {max}{unit}"
        ))
    };
    match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(_) => Err(out_of_range()),
        // digits, yet no u64: negative or too large
        Err(_) if is_digits(value.strip_prefix('-').unwrap_or(value)) => Err(out_of_range()),
        Err(_) => err(format!("{what}: {value:?} is not a whole number")),
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The longest timeout a builder accepts, in milliseconds.
const MAX_TIMEOUT_MS: u64 = crate::error::MAX_TIMEOUT.as_millis() as u64;

/// twemproxy's hash names (nc_hashkit.h), mapped to ours.
fn twemproxy_hash(name: &str) -> Result<KeyHash, ConfigError> {
    Ok(match name {
        "one_at_a_time" => KeyHash::OneAtATime,
        "md5" => KeyHash::Md5,
        "crc16" => KeyHash::Crc16,
        "crc32" => KeyHash::Crc32,
        "crc32a" => KeyHash::Crc32a,
        "fnv1_64" => KeyHash::Fnv1_64,
        "fnv1a_64" => KeyHash::Fnv1a_64,
        "fnv1_32" => KeyHash::Fnv1_32,
        "fnv1a_32" => KeyHash::Fnv1a_32,
        "hsieh" => KeyHash::Hsieh,
        "murmur" => KeyHash::Murmur,
        "jenkins" => KeyHash::Jenkins,
        other => {
            return err(format!(
                "twemproxy hash {other:?} is not one twemproxy knows"
            ));
        }
    })
}

/// The pools of a `nutcracker.yml`, in file order.
pub fn twemproxy_pools(yaml: &str) -> Result<Vec<String>, ConfigError> {
    let docs =
        YamlLoader::load_from_str(yaml).map_err(|e| ConfigError(format!("nutcracker.yml: {e}")))?;
    let Some(Yaml::Hash(h)) = docs.first() else {
        return err("nutcracker.yml: expected a mapping of pool names to pools");
    };
    Ok(h.keys()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect())
}

/// Read pool `pool` of a twemproxy `nutcracker.yml` (`None`: the only pool).
///
/// ```
/// let yml = "alpha:\n  listen: 127.0.0.1:22121\n  hash: md5\n  distribution: ketama\n  \
///            auto_eject_hosts: true\n  server_retry_timeout: 2000\n  servers:\n   \
///            - 10.0.0.1:11211:1 cache-a\n   - 10.0.0.2:11211:2\n";
/// let cfg = memshard::config::twemproxy(yml, Some("alpha")).unwrap();
/// assert_eq!(cfg.flavor, memshard::Flavor::Twemproxy);
/// assert_eq!(cfg.hash, memshard::KeyHash::Md5);
/// assert_eq!(cfg.servers[0].name.as_deref(), Some("cache-a"));
/// assert!(cfg.failure_policy.auto_eject);
/// ```
pub fn twemproxy(yaml: &str, pool: Option<&str>) -> Result<PeerConfig, ConfigError> {
    let docs =
        YamlLoader::load_from_str(yaml).map_err(|e| ConfigError(format!("nutcracker.yml: {e}")))?;
    let Some(Yaml::Hash(pools)) = docs.first() else {
        return err("nutcracker.yml: expected a mapping of pool names to pools");
    };
    let names: Vec<&str> = pools.keys().filter_map(Yaml::as_str).collect();
    let name = match (pool, names.as_slice()) {
        (Some(p), _) => p,
        (None, [only]) => only,
        (None, _) => {
            return err(format!(
                "nutcracker.yml has {} pools ({}); name one with --pool",
                names.len(),
                names.join(", ")
            ));
        }
    };
    let Some(p) = pools.get(&Yaml::String(name.to_string())) else {
        return err(format!(
            "nutcracker.yml has no pool {name:?}; pools: {}",
            names.join(", ")
        ));
    };
    let field = |k: &str| p[k].clone();
    if field("redis").as_bool() == Some(true) {
        return err(format!(
            "pool {name:?} is a redis pool; memshard speaks memcached"
        ));
    }
    match field("distribution").as_str().unwrap_or("ketama") {
        "ketama" => {}
        other => {
            return err(format!(
                "pool {name:?} uses distribution {other:?}; memshard places keys with ketama only (twemproxy's default)"
            ));
        }
    }
    let hash = match field("hash").as_str() {
        Some(h) => twemproxy_hash(h)?,
        None => KeyHash::Fnv1a_64, // conf.h CONF_DEFAULT_HASH
    };
    let hash_tag = match field("hash_tag").as_str() {
        Some(t) => Some(
            t.parse::<HashTag>()
                .map_err(|e| ConfigError(format!("pool {name:?}: {e}")))?,
        ),
        None => None,
    };
    let Some(list) = field("servers").as_vec().cloned() else {
        return err(format!("pool {name:?} has no servers list"));
    };
    let mut text = String::new();
    for (i, s) in list.iter().enumerate() {
        let Some(line) = s.as_str() else {
            return err(format!(
                "pool {name:?}: server {} is not a string like host:port:weight [name]",
                i + 1
            ));
        };
        if line
            .split_whitespace()
            .next()
            .is_some_and(|a| a.matches(':').count() != 2)
        {
            return err(format!(
                "pool {name:?}: server {:?} is not host:port:weight [name]",
                line
            ));
        }
        text.push_str(line);
        text.push('\n');
    }
    let servers =
        parse_server_list(&text).map_err(|e| ConfigError(format!("pool {name:?}: {e}")))?;
    if servers.is_empty() {
        return err(format!("pool {name:?} has no servers"));
    }
    let int = |k: &str| field(k).as_i64();
    let mut policy = FailurePolicy {
        auto_eject: field("auto_eject_hosts").as_bool().unwrap_or(false),
        failure_limit: 2,
        retry_timeout: Duration::from_millis(30_000),
    };
    let bounded = |k: &str, n: i64, range: (u64, u64), unit: &str| {
        whole(&format!("pool {name:?}: {k}"), &n.to_string(), range, unit)
    };
    if let Some(n) = int("server_failure_limit") {
        let n = bounded("server_failure_limit", n, (0, u32::MAX.into()), "")?;
        policy.failure_limit = n as u32;
    }
    if let Some(ms) = int("server_retry_timeout") {
        let ms = bounded("server_retry_timeout", ms, (0, MAX_TIMEOUT_MS), " ms")?;
        policy.retry_timeout = Duration::from_millis(ms);
    }
    // nutcracker: a timeout of 0 or less is no timeout of its own
    let timeout = match int("timeout") {
        Some(ms) if ms > 0 => Some(Duration::from_millis(bounded(
            "timeout",
            ms,
            (1, MAX_TIMEOUT_MS),
            " ms",
        )?)),
        _ => None,
    };
    Ok(PeerConfig {
        servers,
        flavor: Flavor::Twemproxy,
        hash,
        hash_tag,
        failure_policy: policy,
        timeout,
        prefix: None,
        hash_with_prefix: false,
        point_hash: None,
    })
}

/// libmemcached's `--HASH` names.
fn libmemcached_hash(name: &str) -> Result<KeyHash, ConfigError> {
    Ok(match name.to_ascii_uppercase().as_str() {
        "MD5" => KeyHash::Md5,
        "CRC" => KeyHash::Crc32,
        "FNV1_64" => KeyHash::Fnv1_64,
        "FNV1A_64" => KeyHash::Fnv1a_64,
        "FNV1_32" => KeyHash::Fnv1_32,
        "FNV1A_32" => KeyHash::Fnv1a_32,
        "HSIEH" => KeyHash::Hsieh,
        "MURMUR" => KeyHash::Murmur,
        "JENKINS" => KeyHash::Jenkins,
        // the configuration grammar (libmemcached/csl) names no others, not even the default
        other => {
            return err(format!(
                "libmemcached configuration strings know no hash {other:?} (MD5, CRC, FNV1_64, FNV1A_64, FNV1_32, FNV1A_32, HSIEH, MURMUR, JENKINS)"
            ));
        }
    })
}

/// Options of libmemcached 1.1.4's configuration grammar that do not change placement.
const PLACEMENT_NEUTRAL: &[&str] = &[
    "--BINARY-PROTOCOL",
    "--BUFFER-REQUESTS",
    "--CONNECT-TIMEOUT",
    "--IO-BYTES-WATERMARK",
    "--IO-KEY-PREFETCH",
    "--IO-MSG-WATERMARK",
    "--NOREPLY",
    "--NUMBER-OF-REPLICAS",
    "--POLL-TIMEOUT",
    "--POOL-MAX",
    "--POOL-MIN",
    "--RANDOMIZE-REPLICA-READ",
    "--SND-TIMEOUT",
    "--SOCKET-RECV-SIZE",
    "--SOCKET-SEND-SIZE",
    "--SORT-HOSTS",
    "--SUPPORT-CAS",
    "--TCP-NODELAY",
    "--TCP-KEEPALIVE",
    "--TCP-KEEPIDLE",
    "--USE-UDP",
    "--VERIFY-KEY",
];

/// Read a libmemcached configuration string (`memcached()` / `memcached_parse_configuration`):
/// `--SERVER=host[:port][/?weight]` (repeatable), `--DISTRIBUTION=consistent[,HASH]` or
/// `modula` (the default when no `--DISTRIBUTION` is given, as in libmemcached),
/// `--HASH=...`, `--NAMESPACE=...`, `--HASH-WITH-NAMESPACE`, `--REMOVE-FAILED-SERVERS=n`,
/// `--RETRY-TIMEOUT=s`, `--RCV-TIMEOUT=us`, and the options that do not change placement.
/// What libmemcached rejects is rejected here too.
///
/// Order matters as it does in libmemcached 1.1.4 (checked against `memcached()` itself,
/// `cli/tests/config_live.rs`): libmemcached builds its ring when a server is added to a consistent
/// handle or the distribution is set, with the hash in effect *then*; a later `--HASH` changes
/// only the key hash. A server with weight > 1 switches to weighted ketama (md5 points) only
/// when it comes after `--DISTRIBUTION=consistent`.
pub fn libmemcached(config: &str) -> Result<PeerConfig, ConfigError> {
    let mut servers: Vec<Server> = Vec::new();
    let mut consistent = false;
    let mut weighted = false;
    let mut hash = KeyHash::OneAtATime;
    let mut hash_given = false;
    // the hash the (unweighted) ring was last built with
    let mut point_hash = None;
    let mut policy = FailurePolicy::default();
    let mut timeout = None;
    let mut prefix = None;
    let mut hash_with_prefix = false;
    fn need<'a>(v: Option<&'a str>, k: &str) -> Result<&'a str, ConfigError> {
        let v = v.ok_or_else(|| ConfigError(format!("{k} needs a value")))?;
        // the grammar allows a quoted value
        Ok(v.strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v))
    }
    for opt in config.split_whitespace() {
        let (k, v) = match opt.split_once('=') {
            Some((k, v)) => (k.to_ascii_uppercase().replace('_', "-"), Some(v)),
            None => (opt.to_ascii_uppercase().replace('_', "-"), None),
        };
        match k.as_str() {
            "--SERVER" => {
                let v = need(v, &k)?;
                let (addr, weight) = match v.split_once("/?") {
                    Some((a, w)) => (a, Some(w)),
                    None => (v, None),
                };
                if addr.starts_with('[') || addr.matches(':').count() > 1 {
                    return err(format!(
                        "--SERVER={v}: libmemcached takes host[:port][/?weight] here"
                    ));
                }
                let weight = match weight {
                    Some(w) => match w.parse::<u32>() {
                        Ok(w) if w <= i32::MAX as u32 => Some(w),
                        _ => {
                            return err(format!(
                                "--SERVER={v}: weight {w:?} is not one libmemcached accepts"
                            ));
                        }
                    },
                    None => None,
                };
                let line = match weight {
                    Some(w) => format!("{addr} {w}"),
                    None => addr.to_string(),
                };
                let added = parse_server_list(&line)
                    .map_err(|e| ConfigError(format!("--SERVER={v}: {e}")))?;
                if consistent {
                    // memcached_server_add_with_weight: weight > 1 on a consistent handle turns
                    // weighted ketama on; every add rebuilds the ring with the current hash
                    weighted |= added.iter().any(|s| s.weight > 1);
                    point_hash = Some(hash);
                }
                servers.extend(added);
            }
            "--SOCKET" => {
                return err(
                    "--SOCKET: unix-socket servers are not supported by memshard's placement; list TCP servers",
                );
            }
            "--DISTRIBUTION" => {
                let v = need(v, &k)?.to_ascii_lowercase();
                let mut parts = v.split(',');
                match parts.next() {
                    Some("consistent") => consistent = true,
                    // libmemcached's default (memcached.cc: MEMCACHED_DISTRIBUTION_MODULA)
                    Some("modula") => consistent = false,
                    Some(other) => {
                        return err(format!(
                            "--DISTRIBUTION={other}: memshard places keys with consistent (ketama) or modula distribution only"
                        ));
                    }
                    None => return err("--DISTRIBUTION needs a value"),
                }
                if let Some(h) = parts.next() {
                    // the distribution hash: checked, but it does not change placement
                    libmemcached_hash(h)?;
                }
                if !servers.is_empty() {
                    point_hash = Some(hash);
                }
            }
            "--HASH" => {
                if hash_given {
                    return err("--HASH given twice (libmemcached refuses that)");
                }
                hash_given = true;
                hash = libmemcached_hash(need(v, &k)?)?;
            }
            "--NAMESPACE" => prefix = Some(need(v, &k)?.to_string()),
            "--HASH-WITH-NAMESPACE" => hash_with_prefix = true,
            "--REMOVE-FAILED-SERVERS" => {
                policy.auto_eject = true;
                let n = whole(&k, need(v, &k)?, (0, u32::MAX.into()), "")?;
                policy.failure_limit = n as u32;
            }
            "--RETRY-TIMEOUT" => {
                let max = MAX_TIMEOUT_MS / 1000;
                policy.retry_timeout =
                    Duration::from_secs(whole(&k, need(v, &k)?, (0, max), " s")?);
            }
            "--RCV-TIMEOUT" => {
                // libmemcached sets SO_RCVTIMEO only when rcv_timeout is not 0 (connect.cc
                // set_socket_options): 0 is "no receive timeout of its own". memshard's
                // timeouts are 1 ms to a day.
                let us = whole(&k, need(v, &k)?, (0, MAX_TIMEOUT_MS * 1000), " µs")?;
                timeout = match us {
                    0 => None,
                    1..1000 => {
                        return err(format!(
                            "{k}: {us} µs is shorter than the shortest timeout (1 ms); give 0 (none) or at least 1000"
                        ));
                    }
                    us => Some(Duration::from_micros(us)),
                };
            }
            k if PLACEMENT_NEUTRAL.contains(&k) => {}
            _ => {
                return err(format!(
                    "unexpected {opt:?}: not an option of libmemcached's configuration strings"
                ));
            }
        }
    }
    // An unweighted ring hashes its point names with the hash in effect when it was built; a
    // later --HASH changes only the key hash.
    let point_hash = if weighted {
        None
    } else {
        point_hash.filter(|&h| h != hash)
    };
    if servers.is_empty() {
        return err("the configuration string has no --SERVER");
    }
    // Without --DISTRIBUTION libmemcached places keys by modula, as php-memcached and pylibmc
    // do out of the box: the key hash modulo the server count, weights ignored.
    let flavor = if !consistent {
        Flavor::LibmemcachedModula
    } else if weighted {
        Flavor::Libmemcached
    } else {
        Flavor::LibmemcachedUnweighted
    };
    let point_hash = point_hash.filter(|_| consistent);
    Ok(PeerConfig {
        servers,
        flavor,
        hash,
        hash_tag: None,
        failure_policy: policy,
        timeout,
        prefix,
        hash_with_prefix,
        point_hash,
    })
}

/// A peer configuration applied to a client's settings. Defined here, beside what it reads, so
/// the settings know nothing of peer configurations.
impl<C> crate::Builder<C> {
    /// Everything a peer configuration says: servers, flavor, key hash, point hash, hash tag,
    /// failure policy, timeout (connect/read/write) and namespace prefix.
    ///
    /// ```
    /// let cfg = memshard::config::libmemcached("--SERVER=127.0.0.1:11211 --DISTRIBUTION=consistent --HASH=MD5").unwrap();
    /// let client = memshard::Client::builder().peer_config(cfg).build().unwrap();
    /// assert_eq!(client.ring().flavor(), memshard::Flavor::LibmemcachedUnweighted);
    /// ```
    pub fn peer_config(mut self, cfg: PeerConfig) -> Self {
        let s = &mut self.settings;
        s.servers.extend(cfg.servers);
        s.flavor = cfg.flavor;
        s.hash = Some(cfg.hash);
        s.point_hash = cfg.point_hash;
        s.tag = cfg.hash_tag;
        s.policy = cfg.failure_policy;
        if let Some(t) = cfg.timeout {
            s.conn.connect_timeout = t;
            s.conn.read_timeout = t;
            s.conn.write_timeout = t;
        }
        if let Some(p) = cfg.prefix {
            s.prefix = p.into_bytes();
        }
        s.hash_with_prefix = cfg.hash_with_prefix;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn libmemcached_error(options: &str) -> String {
        let config = format!("--SERVER=127.0.0.1:11211 --DISTRIBUTION=consistent {options}");
        match libmemcached(&config) {
            Ok(_) => panic!("{options} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn numbers_out_of_range_name_the_option_and_the_range() {
        let e = libmemcached_error("--RCV-TIMEOUT=18446744073709551615");
        assert!(
            e.contains("--RCV-TIMEOUT") && e.contains("out of range"),
            "{e}"
        );
        let e = libmemcached_error("--RCV-TIMEOUT=9999999999999999999999999999999999999999");
        assert!(
            e.contains("--RCV-TIMEOUT") && e.contains("out of range"),
            "{e}"
        );
        let e = libmemcached_error("--RCV-TIMEOUT=500");
        assert!(e.contains("shorter than the shortest timeout"), "{e}");
        let e = libmemcached_error("--REMOVE-FAILED-SERVERS=18446744073709551615");
        assert!(
            e.contains("--REMOVE-FAILED-SERVERS") && e.contains("give 0 to 4294967295"),
            "{e}"
        );
        let e = libmemcached_error("--REMOVE-FAILED-SERVERS=4294967296");
        assert!(e.contains("out of range"), "{e}");
        let e = libmemcached_error("--REMOVE-FAILED-SERVERS=two");
        assert!(e.contains("not a whole number"), "{e}");
        let e = libmemcached_error("--RETRY-TIMEOUT=86401");
        assert!(
            e.contains("--RETRY-TIMEOUT") && e.contains("give 0 to 86400 s"),
            "{e}"
        );
    }

    #[test]
    fn without_a_distribution_libmemcached_places_by_modula() {
        let cfg = libmemcached("--SERVER=10.0.0.1/?3 --SERVER=10.0.0.2:11212").expect("modula");
        assert_eq!(cfg.flavor, Flavor::LibmemcachedModula);
        assert_eq!(cfg.hash, KeyHash::OneAtATime);
        assert_eq!(cfg.point_hash, None);
        let cfg = libmemcached("--SERVER=10.0.0.1 --DISTRIBUTION=modula --HASH=MD5").expect("md5");
        assert_eq!(
            (cfg.flavor, cfg.hash),
            (Flavor::LibmemcachedModula, KeyHash::Md5)
        );
        // the last --DISTRIBUTION counts
        let cfg = libmemcached("--DISTRIBUTION=modula --SERVER=10.0.0.1 --DISTRIBUTION=consistent")
            .expect("consistent");
        assert_eq!(cfg.flavor, Flavor::LibmemcachedUnweighted);
        let e = libmemcached("--SERVER=10.0.0.1 --DISTRIBUTION=random").expect_err("random");
        assert!(
            e.to_string().contains("consistent (ketama) or modula"),
            "{e}"
        );
    }

    #[test]
    fn numbers_in_range_are_taken_as_libmemcached_takes_them() {
        let base = "--SERVER=127.0.0.1:11211 --DISTRIBUTION=consistent";
        let cfg = |o: &str| libmemcached(&format!("{base} {o}")).expect(o);
        assert_eq!(cfg("--RCV-TIMEOUT=0").timeout, None);
        assert_eq!(
            cfg("--RCV-TIMEOUT=1000").timeout,
            Some(Duration::from_millis(1))
        );
        assert_eq!(
            cfg("--RCV-TIMEOUT=86400000000").timeout,
            Some(crate::error::MAX_TIMEOUT)
        );
        let p = cfg("--REMOVE-FAILED-SERVERS=4294967295").failure_policy;
        assert_eq!((p.failure_limit, p.auto_eject), (u32::MAX, true));
        let p = cfg("--RETRY-TIMEOUT=86400").failure_policy;
        assert_eq!(p.retry_timeout, crate::error::MAX_TIMEOUT);
    }

    #[test]
    fn twemproxy_numbers_out_of_range_name_the_field() {
        let yaml = |field: &str| {
            format!(
                "alpha:\n  distribution: ketama\n  {field}\n  servers:\n   - 127.0.0.1:11211:1\n"
            )
        };
        for (field, name) in [
            ("timeout: 86400001", "timeout"),
            ("server_retry_timeout: 86400001", "server_retry_timeout"),
            ("server_failure_limit: 4294967296", "server_failure_limit"),
            ("server_failure_limit: -1", "server_failure_limit"),
        ] {
            let e = twemproxy(&yaml(field), None).expect_err(field).to_string();
            assert!(
                e.contains(name) && e.contains("out of range"),
                "{field}: {e}"
            );
        }
        let ok = twemproxy(&yaml("timeout: 86400000"), None).expect("a day");
        assert_eq!(ok.timeout, Some(crate::error::MAX_TIMEOUT));
        let none = twemproxy(&yaml("timeout: 0"), None).expect("no timeout");
        assert_eq!(none.timeout, None);
    }
}
