//! The frozen continuum: strictly increasing points, each with the index of its server.

use super::flavor::{Search, Ties};

/// Sorted, de-duplicated points and their owners, built once.
///
/// Equal points are resolved at build time by the flavor's tie rule, so every lookup is a plain
/// binary search over distinct points.
#[derive(Clone, Debug, Default)]
pub(crate) struct Continuum {
    points: Box<[u32]>,
    owners: Box<[u32]>,
    /// `index[b]` = first point whose top `bits` bits are ≥ `b`: a lookup searches only one
    /// bucket of points instead of the whole array (which for 1000 servers is 640 KB and
    /// misses cache on every step of a plain binary search).
    index: Box<[u32]>,
    shift: u32,
    search: Option<Search>,
}

impl Continuum {
    /// `raw` is `(point, server)` in the order the peer inserts them.
    pub(crate) fn build(raw: Vec<(u32, u32)>, ties: Ties, search: Search) -> Continuum {
        // Sort (point, insertion order) packed in one u64: equal points keep insertion order,
        // as a stable sort would, at the speed of an unstable sort of integers.
        let mut keys: Vec<u64> = raw
            .iter()
            .enumerate()
            .map(|(i, &(p, _))| (p as u64) << 32 | i as u64)
            .collect();
        keys.sort_unstable();
        let mut points = Vec::with_capacity(raw.len());
        let mut owners = Vec::with_capacity(raw.len());
        for k in keys {
            let (p, s) = ((k >> 32) as u32, raw[(k & 0xffff_ffff) as usize].1);
            if points.last() == Some(&p) {
                if ties == Ties::LastInserted {
                    *owners.last_mut().expect("owners parallels points") = s;
                }
                continue;
            }
            points.push(p);
            owners.push(s);
        }
        // Buckets ≈ points, at most 4096 (16 KB of index), at least 16.
        let bits = (usize::BITS - points.len().max(1).leading_zeros()).clamp(4, 12);
        let shift = 32 - bits;
        let mut index = Vec::with_capacity((1 << bits) + 1);
        let mut i = 0;
        for b in 0..=(1u64 << bits) {
            while i < points.len() && ((points[i] as u64) >> shift) < b {
                i += 1;
            }
            index.push(i as u32);
        }
        Continuum {
            points: points.into_boxed_slice(),
            owners: owners.into_boxed_slice(),
            index: index.into_boxed_slice(),
            shift,
            search: Some(search),
        }
    }

    /// Index of the first point for which `below(point)` is false, searching only the bucket
    /// of `hash` (valid because `below` is `p < hash` or `p <= hash`).
    #[inline]
    fn partition(&self, hash: u32, below: impl Fn(u32) -> bool) -> usize {
        let b = (hash >> self.shift) as usize;
        let (lo, hi) = (self.index[b] as usize, self.index[b + 1] as usize);
        lo + self.points[lo..hi].partition_point(|&p| below(p))
    }

    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    /// The position (index into the points) that `hash` lands on, or `None` when empty.
    #[inline]
    pub(crate) fn position(&self, hash: u32) -> Option<usize> {
        let n = self.points.len();
        if n == 0 {
            return None;
        }
        Some(match self.search? {
            Search::FirstAtOrAbove => {
                let i = self.partition(hash, |p| p < hash);
                if i == n { 0 } else { i }
            }
            Search::FirstAtOrAboveZeroLast if hash == 0 => n - 1,
            Search::FirstAtOrAboveZeroLast => {
                let i = self.partition(hash, |p| p < hash);
                if i == n { 0 } else { i }
            }
            Search::FirstAbove => {
                let i = self.partition(hash, |p| p <= hash);
                if i == n { 0 } else { i }
            }
            Search::LastAtOrBelow => {
                let i = self.partition(hash, |p| p <= hash);
                if i == 0 { n - 1 } else { i - 1 }
            }
        })
    }

    #[inline]
    pub(crate) fn owner_at(&self, pos: usize) -> u32 {
        self.owners[pos]
    }

    pub(crate) fn point_at(&self, pos: usize) -> u32 {
        self.points[pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucketed search against a plain binary search over the whole array.
    #[test]
    fn bucketed_search_equals_plain_search() {
        let mut x: u32 = 12345;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for n in [1usize, 2, 3, 17, 300, 5000] {
            let mut raw: Vec<(u32, u32)> = (0..n).map(|i| (next(), i as u32)).collect();
            raw.push((0, 0));
            raw.push((u32::MAX, 1));
            raw.push((raw[1].0, 2)); // a tie
            for search in [
                Search::FirstAtOrAbove,
                Search::FirstAbove,
                Search::LastAtOrBelow,
                Search::FirstAtOrAboveZeroLast,
            ] {
                let c = Continuum::build(raw.clone(), Ties::FirstInserted, search);
                let len = c.points.len();
                let mut probes: Vec<u32> = (0..2000).map(|_| next()).collect();
                probes.extend(
                    c.points
                        .iter()
                        .flat_map(|&p| [p, p.wrapping_sub(1), p.wrapping_add(1)]),
                );
                for h in probes {
                    let lower = c.points.partition_point(|&p| p < h);
                    let upper = c.points.partition_point(|&p| p <= h);
                    let want = match search {
                        Search::FirstAtOrAbove => lower % len,
                        Search::FirstAtOrAboveZeroLast if h == 0 => len - 1,
                        Search::FirstAtOrAboveZeroLast => lower % len,
                        Search::FirstAbove => upper % len,
                        Search::LastAtOrBelow => (upper + len - 1) % len,
                    };
                    assert_eq!(c.position(h), Some(want), "n={n} {search:?} h={h}");
                }
            }
        }
    }
}
