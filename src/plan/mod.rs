//! The planner: what moves when the server list changes, how even the load is, and how
//! ketama compares with modulo, jump hash, rendezvous hashing and 16384 fixed slots on the
//! same keys; and what switching keys to another pool costs, cold or through a warm-up route
//! ([`plan_migration`]).
//!
//! The reports `memshard plan` prints (`compare_flavors`, `tag_audit`,
//! `imbalance_with_points`) need no feature; `serde::Serialize` on the results comes with the
//! feature `serde`.
//!
//! Layer: the planner. May import: `ring` (with `hash`, `servers`). No I/O.

use crate::hash::{self, KeyHash};
use crate::ring::md5x4;
use crate::ring::{Flavor, HashTag, Ring, RingError};
use crate::servers::Server;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

mod migrate;
pub use migrate::{MigrationPlan, PoolPlacement, ServerLoad, plan_migration};
mod reports;
pub use reports::{
    FlavorDiff, TagAudit, TagRow, compare_flavors, imbalance_with_points, tag_audit,
};

/// A placement method compared by the planner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "kebab-case")
)]
pub enum Method {
    /// The ring of the chosen flavor.
    Ketama,
    /// `md5(key) % n` (libmemcached MODULA; weights ignored).
    Modulo,
    /// Lamping & Veach jump consistent hash over the list order (weights ignored).
    Jump,
    /// Weighted rendezvous (highest random weight) hashing.
    Rendezvous,
    /// 16384 fixed slots (Redis Cluster style: crc16(key) & 16383), slots shared out by weight
    /// and rebalanced by moving as few slots as possible.
    Slots,
}

impl Method {
    /// Every method, in report order.
    pub const ALL: [Method; 5] = [
        Method::Ketama,
        Method::Modulo,
        Method::Jump,
        Method::Rendezvous,
        Method::Slots,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Ketama => "ketama",
            Method::Modulo => "modulo",
            Method::Jump => "jump",
            Method::Rendezvous => "rendezvous",
            Method::Slots => "slots-16384",
        }
    }
}

/// Keys to plan with.
#[derive(Clone, Debug)]
pub enum Keys {
    /// `key:0` .. `key:<n-1>`.
    Synthetic(u64),
    /// The user's own sample.
    List(Vec<Vec<u8>>),
}

impl Keys {
    /// How many keys.
    pub fn len(&self) -> u64 {
        match self {
            Keys::Synthetic(n) => *n,
            Keys::List(v) => v.len() as u64,
        }
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One server of the union of the two lists (identified by its address as written).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ServerRow {
    /// Address as written.
    pub addr: String,
    /// Weight before (None: not in the list before).
    pub weight_before: Option<u32>,
    /// Weight after (None: not in the list after).
    pub weight_after: Option<u32>,
}

impl ServerRow {
    /// In both lists with the same weight: no key should move between two such servers.
    pub fn unchanged(&self) -> bool {
        self.weight_before.is_some() && self.weight_before == self.weight_after
    }
}

/// One method's figures.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct MethodPlan {
    /// Which method.
    pub method: Method,
    /// Keys whose server changed.
    pub moved: u64,
    /// `moved / keys`.
    pub moved_share: f64,
    /// Keys per server (index into [`Plan::servers`]) before the change.
    pub keys_before: Vec<u64>,
    /// Keys per server after the change.
    pub keys_after: Vec<u64>,
    /// Moves between servers: `(from, to, keys)`, largest first.
    pub moves: Vec<(usize, usize, u64)>,
    /// Keys moved between two servers that are in both lists with unchanged weight.
    pub non_monotone: u64,
    /// Before: heaviest and lightest server relative to its weight share (1.0 = exactly its share).
    pub imbalance_before: (f64, f64),
    /// After: the same.
    pub imbalance_after: (f64, f64),
}

/// The whole plan.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Plan {
    /// Keys planned.
    pub keys: u64,
    /// Flavor of the ketama method.
    pub flavor: String,
    /// Union of both server lists.
    pub servers: Vec<ServerRow>,
    /// One entry per method.
    pub methods: Vec<MethodPlan>,
}

/// A placement over one server list, for every method.
struct Placer<'r> {
    ring: &'r Ring,
    n: usize,
    /// For rendezvous: (seed, weight) per server.
    seeds: Vec<(u64, f64)>,
    /// For slots: owner per slot.
    slots: Vec<u32>,
    /// Ketama can use the md5 key hash the other methods use.
    md5_ring: bool,
}

impl<'r> Placer<'r> {
    fn new(ring: &'r Ring, slots: Vec<u32>) -> Placer<'r> {
        let seeds = ring
            .servers()
            .iter()
            .map(|s| {
                let w = hash::md5_words(s.addr.as_bytes());
                ((w[0] as u64) << 32 | w[1] as u64, s.weight as f64)
            })
            .collect();
        let md5_ring = ring.routes_by_md5();
        Placer {
            n: ring.servers().len(),
            ring,
            seeds,
            slots,
            md5_ring,
        }
    }

    /// Server index for each method, given the key and its md5 words and crc16 slot.
    fn place(&self, key: &[u8], md5: &[u32; 4], slot: usize) -> [usize; 5] {
        let ketama = if self.md5_ring {
            self.ring.route_hash(md5[0]).unwrap_or(0)
        } else {
            self.ring.route(key).unwrap_or(0)
        };
        let modulo = (md5[0] % self.n as u32) as usize;
        let k64 = (md5[1] as u64) << 32 | md5[2] as u64;
        let jump = jump_hash(k64, self.n);
        let mut best = (f64::NEG_INFINITY, 0);
        for (i, &(seed, w)) in self.seeds.iter().enumerate() {
            // Weighted rendezvous (Schindelhauer & Schomaker): score = -w / ln(u), u in (0,1).
            let u = ((mix64(k64 ^ seed) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let score = -w / u.ln();
            if score > best.0 {
                best = (score, i);
            }
        }
        [ketama, modulo, jump, best.1, self.slots[slot] as usize]
    }
}

/// Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014).
pub fn jump_hash(mut key: u64, buckets: usize) -> usize {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < buckets as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b.max(0) as usize
}

/// splitmix64's finaliser: a strong 64-bit mix.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const SLOTS: usize = 16384;

/// Slot counts proportional to weight (largest remainder), as contiguous ranges in list order.
fn slot_targets(weights: &[u32]) -> Vec<usize> {
    let total: u64 = weights.iter().map(|&w| w as u64).sum();
    let exact: Vec<f64> = weights
        .iter()
        .map(|&w| SLOTS as f64 * w as f64 / total as f64)
        .collect();
    let mut t: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut rest = SLOTS - t.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        (exact[b] - t[b] as f64)
            .total_cmp(&(exact[a] - t[a] as f64))
            .then(a.cmp(&b))
    });
    for i in order {
        if rest == 0 {
            break;
        }
        t[i] += 1;
        rest -= 1;
    }
    t
}

fn initial_slots(weights: &[u32]) -> Vec<u32> {
    let mut owner = Vec::with_capacity(SLOTS);
    for (i, n) in slot_targets(weights).into_iter().enumerate() {
        owner.extend(std::iter::repeat_n(i as u32, n));
    }
    owner
}

/// Rebalance `before` (owners over the old list) onto the new list, moving as few slots as
/// possible: kept servers keep their slots up to their new share; the rest are handed out.
fn rebalanced_slots(before: &[u32], old_to_new: &[Option<usize>], new_weights: &[u32]) -> Vec<u32> {
    let targets = slot_targets(new_weights);
    let mut have = vec![0usize; new_weights.len()];
    let mut owner: Vec<Option<u32>> = vec![None; SLOTS];
    for (slot, &o) in before.iter().enumerate() {
        if let Some(n) = old_to_new[o as usize].filter(|&n| have[n] < targets[n]) {
            have[n] += 1;
            owner[slot] = Some(n as u32);
        }
    }
    let mut next = 0;
    for o in owner.iter_mut().filter(|o| o.is_none()) {
        while have[next] >= targets[next] {
            next += 1;
        }
        have[next] += 1;
        *o = Some(next as u32);
    }
    owner.into_iter().map(|o| o.unwrap_or(0)).collect()
}

/// How the ketama method's ring is built.
#[derive(Clone, Copy, Debug)]
pub struct RingChoice {
    /// The flavor.
    pub flavor: Flavor,
    /// Key hash (None: the flavor's default).
    pub hash: Option<KeyHash>,
    /// Hash tag.
    pub tag: Option<HashTag>,
}

/// Per-thread tallies.
struct Tally {
    before: [Vec<u64>; 5],
    after: [Vec<u64>; 5],
    moves: [HashMap<(u32, u32), u64>; 5],
}

/// Plan a change from `before` to `after` on `keys`, both rings built as `ring` says.
/// `progress` counts keys done (for a progress bar); the work is split over `threads` threads.
pub fn plan(
    before: &[Server],
    after: &[Server],
    ring: RingChoice,
    keys: &Keys,
    threads: usize,
    progress: &AtomicU64,
) -> Result<Plan, RingError> {
    let RingChoice { flavor, hash, tag } = ring;
    let rb = Ring::with_options(before.to_vec(), flavor, hash, tag)?;
    plan_ring(&rb, after, keys, threads, progress)
}

/// Plan changing `ring`'s server list to `after` on `keys`: the ring after the change is
/// `ring.with_servers(after)`, with every option of `ring` (flavor, key hash, point hash,
/// hash tag), so the plan is about the ring a client built with those options routes on.
/// `progress` and `threads` as in [`plan`].
pub fn plan_ring(
    ring: &Ring,
    after: &[Server],
    keys: &Keys,
    threads: usize,
    progress: &AtomicU64,
) -> Result<Plan, RingError> {
    let (rb, before, flavor, tag) = (ring, ring.servers(), ring.flavor(), ring.hash_tag());
    let ra = ring.with_servers(after.to_vec())?;
    // the union of both lists, by address as written
    let mut rows: Vec<ServerRow> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut union_of = |s: &Server, is_before: bool, rows: &mut Vec<ServerRow>| -> usize {
        let i = *index.entry(s.addr.clone()).or_insert_with(|| {
            rows.push(ServerRow {
                addr: s.addr.clone(),
                weight_before: None,
                weight_after: None,
            });
            rows.len() - 1
        });
        if is_before {
            rows[i].weight_before = Some(s.weight);
        } else {
            rows[i].weight_after = Some(s.weight);
        }
        i
    };
    let ub: Vec<usize> = before
        .iter()
        .map(|s| union_of(s, true, &mut rows))
        .collect();
    let ua: Vec<usize> = after
        .iter()
        .map(|s| union_of(s, false, &mut rows))
        .collect();
    let slots_b = initial_slots(&before.iter().map(|s| s.weight).collect::<Vec<_>>());
    let old_to_new: Vec<Option<usize>> =
        ub.iter().map(|u| ua.iter().position(|a| a == u)).collect();
    let slots_a = rebalanced_slots(
        &slots_b,
        &old_to_new,
        &after.iter().map(|s| s.weight).collect::<Vec<_>>(),
    );
    let (pb, pa) = (Placer::new(rb, slots_b), Placer::new(&ra, slots_a));
    let n_union = rows.len();
    let total = keys.len();
    let threads = threads.max(1);
    let unchanged: Vec<bool> = rows.iter().map(ServerRow::unchanged).collect();

    let work = |t: usize| -> Tally {
        let mut tally = Tally {
            before: std::array::from_fn(|_| vec![0; n_union]),
            after: std::array::from_fn(|_| vec![0; n_union]),
            moves: std::array::from_fn(|_| HashMap::new()),
        };
        let (lo, hi) = (
            total * t as u64 / threads as u64,
            total * (t as u64 + 1) / threads as u64,
        );
        let mut bufs: [Vec<u8>; 4] = std::array::from_fn(|_| Vec::with_capacity(32));
        let mut i = lo;
        while i < hi {
            let m = ((hi - i) as usize).min(4);
            let mut ks: [&[u8]; 4] = [&[]; 4];
            for j in 0..m {
                match keys {
                    Keys::Synthetic(_) => {
                        use std::io::Write;
                        bufs[j].clear();
                        let _ = write!(bufs[j], "key:{}", i + j as u64);
                    }
                    Keys::List(v) => {
                        bufs[j].clear();
                        bufs[j].extend_from_slice(&v[(i + j as u64) as usize]);
                    }
                }
            }
            for (j, k) in ks.iter_mut().enumerate().take(m) {
                *k = &bufs[j];
            }
            let tagged: [&[u8]; 4] = std::array::from_fn(|j| match &tag {
                Some(t) => t.apply(ks[j]),
                None => ks[j],
            });
            let words: [[u32; 4]; 4] =
                if m == 4 && tagged.iter().all(|k| k.len() <= md5x4::MAX_ONE_BLOCK) {
                    md5x4::md5_x4(tagged)
                } else {
                    std::array::from_fn(|j| {
                        if j < m {
                            hash::md5_words(tagged[j])
                        } else {
                            [0; 4]
                        }
                    })
                };
            for j in 0..m {
                let slot = (KeyHash::Crc16.hash(tagged[j]) & 0x3fff) as usize;
                let b = pb.place(ks[j], &words[j], slot);
                let a = pa.place(ks[j], &words[j], slot);
                for mi in 0..5 {
                    let (from, to) = (ub[b[mi]], ua[a[mi]]);
                    tally.before[mi][from] += 1;
                    tally.after[mi][to] += 1;
                    if from != to {
                        *tally.moves[mi].entry((from as u32, to as u32)).or_default() += 1;
                    }
                }
            }
            i += m as u64;
            if i % 65536 < 4 {
                progress.fetch_add(65536, Ordering::Relaxed);
            }
        }
        tally
    };
    let tallies: Vec<Tally> = if threads == 1 {
        vec![work(0)]
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads).map(|t| s.spawn(move || work(t))).collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };

    let wb: Vec<f64> = rows
        .iter()
        .map(|r| r.weight_before.unwrap_or(0) as f64)
        .collect();
    let wa: Vec<f64> = rows
        .iter()
        .map(|r| r.weight_after.unwrap_or(0) as f64)
        .collect();
    let methods = Method::ALL
        .iter()
        .enumerate()
        .map(|(mi, &method)| {
            let mut kb = vec![0; n_union];
            let mut ka = vec![0; n_union];
            let mut moves: HashMap<(u32, u32), u64> = HashMap::new();
            for t in &tallies {
                for u in 0..n_union {
                    kb[u] += t.before[mi][u];
                    ka[u] += t.after[mi][u];
                }
                for (&k, &v) in &t.moves[mi] {
                    *moves.entry(k).or_default() += v;
                }
            }
            let mut moves: Vec<(usize, usize, u64)> = moves
                .into_iter()
                .map(|((f, t), n)| (f as usize, t as usize, n))
                .collect();
            moves.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
            let moved: u64 = moves.iter().map(|m| m.2).sum();
            let non_monotone = moves
                .iter()
                .filter(|m| unchanged[m.0] && unchanged[m.1])
                .map(|m| m.2)
                .sum();
            // modulo and jump ignore weights: judge them against equal shares
            let weighted = matches!(method, Method::Ketama | Method::Rendezvous | Method::Slots);
            MethodPlan {
                method,
                moved,
                moved_share: if total == 0 {
                    0.0
                } else {
                    moved as f64 / total as f64
                },
                imbalance_before: imbalance(&kb, &wb, weighted, total),
                imbalance_after: imbalance(&ka, &wa, weighted, total),
                keys_before: kb,
                keys_after: ka,
                moves,
                non_monotone,
            }
        })
        .collect();
    Ok(Plan {
        keys: total,
        flavor: flavor.name().to_string(),
        servers: rows,
        methods,
    })
}

/// (heaviest, lightest) server load relative to its share, over servers in the list.
fn imbalance(counts: &[u64], weights: &[f64], weighted: bool, total: u64) -> (f64, f64) {
    let present: Vec<usize> = (0..counts.len()).filter(|&i| weights[i] > 0.0).collect();
    if present.is_empty() || total == 0 {
        return (0.0, 0.0);
    }
    let wsum: f64 = present.iter().map(|&i| weights[i]).sum();
    let mut hi = f64::MIN;
    let mut lo = f64::MAX;
    for &i in &present {
        let share = if weighted {
            weights[i] / wsum
        } else {
            1.0 / present.len() as f64
        };
        let r = counts[i] as f64 / (total as f64 * share);
        hi = hi.max(r);
        lo = lo.min(r);
    }
    (hi, lo)
}

/// What changing `ring`'s server list to `servers` would cost on `keys`, with every option of
/// the ring (flavor, key hash, point hash, hash tag), on every core (the clients'
/// `plan_servers`).
pub(crate) fn plan_change(ring: &Ring, servers: &[Server], keys: &Keys) -> Result<Plan, RingError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    plan_ring(ring, servers, keys, threads, &AtomicU64::new(0))
}
