//! The planner's reports `memshard plan` prints: the imbalance of a plain ring per points count,
//! two flavors compared on one server list, and a hash-tag audit (`Serialize` with `serde`).

use super::{Keys, imbalance};
use crate::hash::{self, KeyHash};
use crate::ring::flavor::Scheme;
use crate::ring::{Flavor, Ring, RingError};
use crate::servers::Server;
use std::collections::HashMap;

/// The classic imbalance measurement: a plain ketama ring with `points` md5 points per
/// server (one point per name `addr-i`), keys `key:<i>`; returns (heaviest, lightest) / mean.
pub fn imbalance_with_points(servers: &[Server], points: usize, keys: u64) -> (f64, f64) {
    use crate::ring::flavor::{Search, Ties};
    let mut raw = Vec::with_capacity(servers.len() * points);
    for (i, s) in servers.iter().enumerate() {
        for k in 0..points {
            raw.push((
                hash::md5_words(format!("{}-{k}", s.addr).as_bytes())[0],
                i as u32,
            ));
        }
    }
    let c = crate::ring::continuum_for_planning(raw, Ties::FirstInserted, Search::FirstAtOrAbove);
    let mut counts = vec![0u64; servers.len()];
    for i in 0..keys {
        let h = hash::md5_words(format!("key:{i}").as_bytes())[0];
        if let Some(o) = c(h) {
            counts[o] += 1;
        }
    }
    let w = vec![1.0; servers.len()];
    imbalance(&counts, &w, false, keys)
}

/// Two flavors on the same server list: how many keys they place differently, and why.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct FlavorDiff {
    /// Keys compared.
    pub keys: u64,
    /// Keys the two flavors place on different servers.
    pub differ: u64,
    /// Flavor names.
    pub flavors: (String, String),
    /// Key hashes.
    pub hashes: (String, String),
    /// Per server: address, points in A, points in B, first point name in A and in B.
    pub servers: Vec<(String, u32, u32, String, String)>,
    /// Disagreements `(server in A, server in B, keys)`, largest first.
    pub pairs: Vec<(usize, usize, u64)>,
    /// Plain-language reasons found.
    pub reasons: Vec<String>,
}

/// Compare flavors `a` and `b` on one server list over `keys` (`key:<i>` when synthetic).
pub fn compare_flavors(
    servers: &[Server],
    a: Flavor,
    b: Flavor,
    hash_a: Option<KeyHash>,
    hash_b: Option<KeyHash>,
    keys: &Keys,
) -> Result<FlavorDiff, RingError> {
    let ra = Ring::with_options(servers.to_vec(), a, hash_a, None)?;
    let rb = Ring::with_options(servers.to_vec(), b, hash_b, None)?;
    let mut pairs: HashMap<(usize, usize), u64> = HashMap::new();
    let mut differ = 0;
    let mut buf = Vec::with_capacity(32);
    for i in 0..keys.len() {
        let k: &[u8] = match keys {
            Keys::Synthetic(_) => {
                use std::io::Write;
                buf.clear();
                let _ = write!(buf, "key:{i}");
                &buf
            }
            Keys::List(v) => &v[i as usize],
        };
        let (x, y) = (ra.route(k).unwrap_or(0), rb.route(k).unwrap_or(0));
        if x != y {
            differ += 1;
            *pairs.entry((x, y)).or_default() += 1;
        }
    }
    let mut pairs: Vec<(usize, usize, u64)> =
        pairs.into_iter().map(|((x, y), n)| (x, y, n)).collect();
    pairs.sort_by(|p, q| q.2.cmp(&p.2).then(p.0.cmp(&q.0)).then(p.1.cmp(&q.1)));
    let rows: Vec<(String, u32, u32, String, String)> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                s.addr.clone(),
                ra.point_counts()[i],
                rb.point_counts()[i],
                a.first_point_name(s),
                b.first_point_name(s),
            )
        })
        .collect();
    let mut reasons = Vec::new();
    let scheme = |f: Flavor| match f.scheme() {
        Scheme::Continuum => "on a ketama continuum",
        Scheme::Modulo => "by the key hash modulo the number of servers",
        Scheme::Rendezvous => "by rendezvous (the highest score of server and key)",
    };
    if a.scheme() != b.scheme() {
        reasons.push(format!(
            "placement differs: {a} places keys {}, {b} {}",
            scheme(a),
            scheme(b)
        ));
    }
    if ra.key_hash() != rb.key_hash() {
        reasons.push(format!(
            "key hash differs: {} hashes keys with {}, {} with {}",
            a,
            ra.key_hash(),
            b,
            rb.key_hash()
        ));
    }
    // Point counts, names and lookups are a continuum's; without one on both sides they
    // explain nothing.
    let both_ketama = a.is_ketama() && b.is_ketama();
    let counts_differ: Vec<&str> = rows
        .iter()
        .filter(|r| both_ketama && r.1 != r.2)
        .map(|r| r.0.as_str())
        .collect();
    if !counts_differ.is_empty() {
        reasons.push(format!(
            "point counts differ for {} of {} servers (each peer's own float/double/integer arithmetic), e.g. {}",
            counts_differ.len(),
            rows.len(),
            counts_differ.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let names_differ: Vec<&(String, u32, u32, String, String)> =
        rows.iter().filter(|r| both_ketama && r.3 != r.4).collect();
    if !names_differ.is_empty() {
        let default_port = servers
            .iter()
            .any(|s| s.port == crate::servers::DEFAULT_PORT);
        let eg = names_differ[0];
        reasons.push(format!(
            "point names differ for {} servers (e.g. first point {:?} vs {:?}){}",
            names_differ.len(),
            eg.3,
            eg.4,
            if default_port {
                "; port 11211 is left out of names by libmemcached and twemproxy only"
            } else {
                ""
            }
        ));
    }
    if both_ketama && a.point_scheme().1 != b.point_scheme().1 {
        reasons.push(format!(
            "points are computed differently: {} takes {:?}, {} takes {:?}",
            a,
            a.point_scheme().1,
            b,
            b.point_scheme().1
        ));
    }
    if both_ketama && (a.ties() != b.ties() || a.search() != b.search()) {
        reasons.push("equal points and keys hashing exactly onto a point are resolved differently (tie order / lookup boundary)".into());
    }
    if reasons.is_empty() && differ == 0 {
        reasons.push(
            "same key hash, point names, point counts and lookup: identical placement".into(),
        );
    }
    Ok(FlavorDiff {
        keys: keys.len(),
        differ,
        flavors: (a.name().into(), b.name().into()),
        hashes: (ra.key_hash().to_string(), rb.key_hash().to_string()),
        servers: rows,
        pairs,
        reasons,
    })
}

/// One hash tag in a key sample.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct TagRow {
    /// The tag's text (lossy UTF-8).
    pub tag: String,
    /// Keys that carry it.
    pub keys: u64,
    /// Share of all keys.
    pub share: f64,
    /// The one server they all land on.
    pub server: String,
}

/// What a hash tag does to a key sample.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct TagAudit {
    /// Keys read.
    pub keys: u64,
    /// Keys that carry a (non-empty) tag.
    pub tagged: u64,
    /// Tags, most keys first.
    pub tags: Vec<TagRow>,
    /// Per server: address, keys, key share, weight share.
    pub servers: Vec<(String, u64, f64, f64)>,
    /// Tags holding more than the warning share, and servers loaded well above their share.
    pub warnings: Vec<String>,
}

/// Audit `keys` under the ring's hash tag (`ring` must have been built with it): per tag, how
/// many keys and which server they pile onto; per server, the resulting share; a warning for
/// each tag holding more than `warn_share` of the keys.
pub fn tag_audit(ring: &Ring, keys: &[Vec<u8>], warn_share: f64) -> TagAudit {
    let tag = ring.hash_tag();
    let mut per_tag: HashMap<&[u8], (u64, usize)> = HashMap::new();
    let mut per_server = vec![0u64; ring.servers().len()];
    let mut tagged = 0;
    for k in keys {
        let Some(s) = ring.route(k) else { continue };
        per_server[s] += 1;
        if let Some(span) = tag.map(|t| t.apply(k)).filter(|span| span.len() != k.len()) {
            tagged += 1;
            per_tag.entry(span).or_insert((0, s)).0 += 1;
        }
    }
    let total = keys.len() as u64;
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 / total as f64
        }
    };
    let mut tags: Vec<TagRow> = per_tag
        .into_iter()
        .map(|(t, (n, s))| TagRow {
            tag: String::from_utf8_lossy(t).into_owned(),
            keys: n,
            share: share(n),
            server: ring.servers()[s].addr.clone(),
        })
        .collect();
    tags.sort_by(|a, b| b.keys.cmp(&a.keys).then(a.tag.cmp(&b.tag)));
    let wsum: u64 = ring.servers().iter().map(|s| s.weight as u64).sum();
    let servers: Vec<(String, u64, f64, f64)> = ring
        .servers()
        .iter()
        .zip(&per_server)
        .map(|(s, &n)| (s.addr.clone(), n, share(n), s.weight as f64 / wsum as f64))
        .collect();
    let mut warnings: Vec<String> = tags
        .iter()
        .filter(|t| t.share > warn_share)
        .map(|t| {
            format!(
                "tag {:?} holds {:.1}% of the keys ({} keys), all on {}: too wide a tag fills one server while the others sit empty",
                t.tag,
                t.share * 100.0,
                t.keys,
                t.server
            )
        })
        .collect();
    for (addr, n, ks, ws) in &servers {
        if total > 0 && *ks > 1.5 * ws {
            warnings.push(format!(
                "server {addr} holds {:.1}% of the keys ({n}) against a weight share of {:.1}%",
                ks * 100.0,
                ws * 100.0
            ));
        }
    }
    TagAudit {
        keys: total,
        tagged,
        tags,
        servers,
        warnings,
    }
}
