//! Which placement put the keys that are on a set of servers: every flavor with every key
//! hash its peer lets users pick ([`Flavor::peer_hashes`]) against where each key actually
//! is, and (feature `codecs`) which codecs read the values found.
//!
//! Sans-IO: the caller reads each server's keys (`Client::metadump`, or gets of known keys on
//! every server) and hands each `(key, server index)` to a [`Detector`], which keeps only
//! counters, never the keys, so a scan is bounded by what the caller reads.
//!
//! Layer: placement. May import: `ring` (flavors, hashes, servers), `value` for the codecs.

use crate::hash::KeyHash;
use crate::ring::{FLAVORS, Flavor, Ring, RingError};
use crate::servers::Server;

/// One placement tried: a flavor and a key hash its peer offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    /// The flavor.
    pub flavor: Flavor,
    /// The key hash.
    pub hash: KeyHash,
}

/// Every placement a detector tries: each flavor of [`FLAVORS`], in that order, with each of
/// its [`Flavor::peer_hashes`], its default first.
///
/// ```
/// use memshard::detect::candidates;
/// use memshard::{Flavor, KeyHash};
/// let all = candidates();
/// assert!(all.iter().any(|c| c.flavor == Flavor::LibmemcachedModula && c.hash == KeyHash::Murmur));
/// assert!(!all.iter().any(|c| c.flavor == Flavor::Dalli && c.hash == KeyHash::Md5));
/// ```
pub fn candidates() -> Vec<Candidate> {
    FLAVORS
        .iter()
        .flat_map(|&(_, flavor)| {
            flavor
                .peer_hashes()
                .iter()
                .map(move |&hash| Candidate { flavor, hash })
        })
        .collect()
}

/// Counts, for every [`candidate`](candidates), the keys it places where they are. Cloned to
/// take a scan of one server back (a dump that turned out partial, read again).
#[derive(Clone, Debug)]
pub struct Detector {
    rings: Vec<(Candidate, Ring)>,
    agree: Vec<u64>,
    /// Per candidate, a fingerprint of where it put every key seen so far: equal fingerprints
    /// mean the same server for each key.
    prints: Vec<u64>,
    keys: u64,
    servers: usize,
}

impl Detector {
    /// A detector over `servers`, in the order and with the weights and names the peers were
    /// given (modulo flavors follow the order, ketama ones the weights, twemproxy the names).
    pub fn new(servers: &[Server]) -> Result<Detector, RingError> {
        Detector::per_flavor(|_| servers.to_vec())
    }

    /// A detector whose rings take each flavor's own spelling of the same servers (the
    /// servers a cluster endpoint lists, named as each peer names them:
    /// `discovery::servers_for`). Each list must name the same servers
    /// in the same order.
    pub fn per_flavor(servers: impl Fn(Flavor) -> Vec<Server>) -> Result<Detector, RingError> {
        let mut rings = Vec::new();
        let mut count = None;
        for c in candidates() {
            let list = servers(c.flavor);
            count.get_or_insert(list.len());
            rings.push((c, Ring::with_options(list, c.flavor, Some(c.hash), None)?));
        }
        let n = rings.len();
        Ok(Detector {
            rings,
            agree: vec![0; n],
            prints: vec![0xcbf2_9ce4_8422_2325; n],
            keys: 0,
            servers: count.unwrap_or(0),
        })
    }

    /// `key` was found on server `server` (an index into the list given). A key on two
    /// servers is seen twice, and can agree only once.
    pub fn observe(&mut self, key: &[u8], server: usize) {
        self.keys += 1;
        for (i, (_, ring)) in self.rings.iter().enumerate() {
            let placed = ring.route(key);
            if placed == Some(server) {
                self.agree[i] += 1;
            }
            let idx = placed.map_or(u64::MAX, |p| p as u64);
            self.prints[i] = (self.prints[i] ^ idx).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Keys seen.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The servers this detector places keys on.
    pub fn server_count(&self) -> usize {
        self.servers
    }

    /// Every candidate's agreement, best first (ties in [`candidates`] order).
    pub fn detection(&self) -> Detection {
        let mut order: Vec<usize> = (0..self.rings.len()).collect();
        order.sort_by(|&a, &b| self.agree[b].cmp(&self.agree[a]).then(a.cmp(&b)));
        // a group: the first candidate in rank order with that fingerprint
        let mut group_of: Vec<(u64, usize)> = Vec::new();
        let scores = order
            .iter()
            .map(|&i| {
                let print = self.prints[i];
                let group = match group_of.iter().find(|(p, _)| *p == print) {
                    Some(&(_, g)) => g,
                    None => {
                        group_of.push((print, group_of.len()));
                        group_of.len() - 1
                    }
                };
                Score {
                    candidate: self.rings[i].0,
                    agree: self.agree[i],
                    group,
                }
            })
            .collect();
        Detection {
            keys: self.keys,
            scores,
        }
    }
}

/// One candidate's score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Score {
    /// The placement tried.
    pub candidate: Candidate,
    /// Keys it places where they are.
    pub agree: u64,
    /// Candidates of the same group placed every key seen on the same server (groups are
    /// numbered from 0 in rank order).
    pub group: usize,
}

/// Every candidate's score, best first.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Detection {
    /// Keys seen.
    pub keys: u64,
    /// Every candidate, by agreement, falling.
    pub scores: Vec<Score>,
}

impl Detection {
    /// The candidates with the best agreement (empty when nothing was tried).
    pub fn best(&self) -> &[Score] {
        let top = self.scores.first().map_or(0, |s| s.agree);
        let n = self.scores.iter().take_while(|s| s.agree == top).count();
        &self.scores[..n]
    }

    /// Whether the best candidates all placed every key alike: they cannot be told apart by
    /// these keys (true with one best candidate).
    pub fn best_place_alike(&self) -> bool {
        let best = self.best();
        best.iter()
            .all(|s| Some(s.group) == best.first().map(|f| f.group))
    }

    /// `agree / keys`, from 0 to 1 (1 with no key).
    pub fn share(&self, s: &Score) -> f64 {
        if self.keys == 0 {
            1.0
        } else {
            s.agree as f64 / self.keys as f64
        }
    }
}

#[cfg(feature = "codecs")]
mod codecs;
#[cfg(feature = "codecs")]
#[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
pub use codecs::CodecTally;

#[cfg(test)]
mod tests;
