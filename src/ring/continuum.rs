//! The frozen continuum: strictly increasing points, each with the index of its server.

use super::flavor::{Search, Ties};
use super::gaps::Gaps;

/// One point and the index of the server that owns it, side by side: the point a lookup
/// stops at and its owner are read from the same cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(super) struct Entry {
    pub(super) point: u32,
    pub(super) owner: u32,
}

/// Sorted, de-duplicated points and their owners, built once.
///
/// Equal points are resolved at build time by the flavor's tie rule, so every lookup is a plain
/// search over distinct points.
///
/// A lookup reads two cache lines after the hash: one `index` entry (the bucket of the hash's
/// top bits), then the entries of that one bucket, which hold on average one to two points
/// (the index has between half as many and as many buckets as there are points). A plain
/// binary search over 1.6 M points (10,000 servers) touches some 20 lines, each a cache miss.
#[derive(Clone, Debug, Default)]
pub(crate) struct Continuum {
    entries: Box<[Entry]>,
    /// `index[b]` = first entry whose point's top `32 - shift` bits are ≥ `b`, for
    /// `b` in `0..=2^bits`: bucket `b` is `entries[index[b]..index[b + 1]]`.
    index: Box<[u32]>,
    shift: u32,
    search: Option<Search>,
    /// For rings past the last-level-cache-friendly size only (see [`Lines`]): each hash's
    /// owner from one cache line.
    lines: Option<Lines>,
    /// For small rings: the owner of each hash that no point is near, from one read.
    gaps: Option<Gaps>,
}

/// Points one [`Line`] holds.
const LINE_POINTS: usize = 15;
/// [`Line::count`] of a bucket with more points than a line holds: looked up the long way.
const OVERFLOW: u8 = u8::MAX;
/// Fewest bucket bits for lines: with 16 or more, a point's bits below its bucket fit a
/// `u16`. That is past 262,144 points (about 1,640 servers of 160 points): below, the points
/// and the index fit the 2 MB L2 cache and a lookup's two reads are both hits.
const LINE_MIN_BITS: u32 = 16;

/// One bucket of the continuum in one 64-byte cache line: its points' low bits, their
/// owners, and the owner a hash past the bucket's points (or before them, for
/// [`Search::LastAtOrBelow`]) lands on. At 10,000 servers the points and the index are
/// 16.6 MB, past the 2 MB L2 cache, so the index read and the entries read were two misses
/// to the L3 cache, which other tenants share; with lines a lookup is one.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line {
    /// Points' bits below the bucket's, ascending; `u16::MAX` past `count`.
    low: [u16; LINE_POINTS],
    owner: [u16; LINE_POINTS],
    /// The owner when no point of this bucket is the answer: the first point after the
    /// bucket (wrapping to the first point), or for `LastAtOrBelow` the last one before it
    /// (wrapping to the last point).
    edge: u16,
    /// Points in the bucket, or [`OVERFLOW`].
    count: u8,
}

/// The continuum's points again, as one [`Line`] per bucket of the top `32 - shift` bits of
/// a hash (between 4 and 8 points a bucket on average; 1 % of them overflow when 8).
#[derive(Clone, Debug)]
struct Lines {
    lines: Box<[Line]>,
    shift: u32,
}

impl Lines {
    /// Lines for `entries`, when they are many enough to need them and every owner fits a
    /// `u16`.
    fn build(entries: &[Entry], search: Search) -> Option<Lines> {
        let n = entries.len();
        // ⌈log2(n / 8)⌉: between 4 and 8 points a bucket
        let bits = usize::BITS - (n / 8).max(1).saturating_sub(1).leading_zeros();
        if !(LINE_MIN_BITS..=24).contains(&bits)
            || entries.iter().any(|e| e.owner > u32::from(u16::MAX))
        {
            return None;
        }
        let shift = 32 - bits;
        let buckets = 1usize << bits;
        let mut start = vec![0usize; buckets + 1];
        for e in entries {
            start[(e.point >> shift) as usize + 1] += 1;
        }
        for b in 1..=buckets {
            start[b] += start[b - 1];
        }
        let owner = |i: usize| entries[i].owner as u16;
        let lines = (0..buckets)
            .map(|b| {
                let (lo, hi) = (start[b], start[b + 1]);
                let edge = match search {
                    Search::LastAtOrBelow => owner(lo.checked_sub(1).unwrap_or(n - 1)),
                    _ => owner(if hi == n { 0 } else { hi }),
                };
                let mut line = Line {
                    low: [u16::MAX; LINE_POINTS],
                    owner: [0; LINE_POINTS],
                    edge,
                    count: OVERFLOW,
                };
                if hi - lo <= LINE_POINTS {
                    line.count = (hi - lo) as u8;
                    for (j, e) in entries[lo..hi].iter().enumerate() {
                        // the bits below the bucket's: fewer than 17, as bits >= 16
                        line.low[j] = e.point as u16;
                        line.owner[j] = e.owner as u16;
                    }
                }
                line
            })
            .collect();
        Some(Lines { lines, shift })
    }

    /// The owner `hash` lands on, or `None` when its bucket overflowed (then the entries
    /// answer).
    #[inline]
    fn owner(&self, hash: u32, search: Search) -> Option<u32> {
        let line = &self.lines[(hash >> self.shift) as usize];
        if line.count == OVERFLOW {
            return None;
        }
        let count = usize::from(line.count);
        let low = hash as u16;
        // points below the hash (or at or below it), counted over the whole line: no branch
        // per point, and the padding (u16::MAX) never counts but for a hash of u16::MAX low
        // bits, which `min` takes out
        let before = |at: bool| {
            let c = line.low.iter().filter(|&&p| p < low || (at && p == low));
            c.count().min(count)
        };
        let pick = |i: usize| Some(u32::from(if i < count { line.owner[i] } else { line.edge }));
        match search {
            Search::FirstAtOrAbove | Search::FirstAtOrAboveZeroLast => pick(before(false)),
            Search::FirstAbove => pick(before(true)),
            Search::LastAtOrBelow => match before(true) {
                0 => Some(u32::from(line.edge)),
                c => Some(u32::from(line.owner[c - 1])),
            },
        }
    }

    fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.lines)
    }
}

/// Bucket-index bits for `n` points: ⌊log2 n⌋, so the buckets number between n/2 and n.
/// At least 4 bits; at most 24 (a ring holds at most 8 M points, 22 bits).
fn index_bits(n: usize) -> u32 {
    (usize::BITS - 1 - n.max(1).leading_zeros()).clamp(4, 24)
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
        let mut entries: Vec<Entry> = Vec::with_capacity(raw.len());
        for k in keys {
            let (point, owner) = ((k >> 32) as u32, raw[(k & 0xffff_ffff) as usize].1);
            match entries.last_mut() {
                Some(last) if last.point == point => {
                    if ties == Ties::LastInserted {
                        last.owner = owner;
                    }
                }
                _ => entries.push(Entry { point, owner }),
            }
        }
        let bits = index_bits(entries.len());
        let shift = 32 - bits;
        let buckets = 1usize << bits;
        // Count the points of each bucket, then turn the counts into starts (prefix sums).
        let mut index = vec![0u32; buckets + 1];
        for e in &entries {
            index[(e.point >> shift) as usize + 1] += 1;
        }
        for b in 1..=buckets {
            index[b] += index[b - 1];
        }
        Continuum {
            lines: Lines::build(&entries, search),
            gaps: Gaps::build(&entries, search),
            entries: entries.into_boxed_slice(),
            index: index.into_boxed_slice(),
            shift,
            search: Some(search),
        }
    }

    /// Index of the first entry whose point `below` is false for, searching only the bucket of
    /// `hash` (valid because `below` is `p < hash` or `p <= hash`: every point of an earlier
    /// bucket is below, none of a later one is).
    #[inline]
    fn partition(&self, hash: u32, below: impl Fn(u32) -> bool) -> usize {
        let b = (hash >> self.shift) as usize;
        let (lo, hi) = (self.index[b] as usize, self.index[b + 1] as usize);
        lo + self.entries[lo..hi].partition_point(|e| below(e.point))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Heap bytes of the points, their owners and the bucket index.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.entries)
            + std::mem::size_of_val(&*self.index)
            + self.lines.as_ref().map_or(0, Lines::heap_bytes)
            + self.gaps.as_ref().map_or(0, Gaps::heap_bytes)
    }

    /// The owner of the point `hash` lands on ([`Continuum::position`]'s owner), or `None`
    /// when empty: from the hash's line when the ring has lines, else from the entries.
    #[inline]
    pub(crate) fn owner(&self, hash: u32) -> Option<u32> {
        if let Some(gaps) = &self.gaps
            && let Some(owner) = gaps.owner(hash)
        {
            return Some(owner);
        }
        self.owner_searched(hash)
    }

    /// [`Continuum::owner`] where the gaps do not answer: from the hash's line, or a search.
    #[inline(never)]
    fn owner_searched(&self, hash: u32) -> Option<u32> {
        let search = self.search?;
        // FirstAtOrAboveZeroLast's hash 0 is the one answer a line does not hold
        if let Some(lines) = &self.lines
            && (hash != 0 || search != Search::FirstAtOrAboveZeroLast)
            && let Some(owner) = lines.owner(hash, search)
        {
            return Some(owner);
        }
        self.position(hash).map(|p| self.owner_at(p))
    }

    /// The position (index into the points) that `hash` lands on, or `None` when empty.
    #[inline]
    pub(crate) fn position(&self, hash: u32) -> Option<usize> {
        let n = self.entries.len();
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
        self.entries[pos].owner
    }

    pub(crate) fn point_at(&self, pos: usize) -> u32 {
        self.entries[pos].point
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCHES: [Search; 4] = [
        Search::FirstAtOrAbove,
        Search::FirstAbove,
        Search::LastAtOrBelow,
        Search::FirstAtOrAboveZeroLast,
    ];

    fn xorshift(seed: u32) -> impl FnMut() -> u32 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        }
    }

    /// The points the plain way: a stable sort of `raw`, equal points merged by `ties`.
    fn reference_points(raw: &[(u32, u32)], ties: Ties) -> Vec<(u32, u32)> {
        let mut sorted = raw.to_vec();
        sorted.sort_by_key(|&(p, _)| p);
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (p, s) in sorted {
            match merged.last_mut() {
                Some(last) if last.0 == p => {
                    if ties == Ties::LastInserted {
                        last.1 = s;
                    }
                }
                _ => merged.push((p, s)),
            }
        }
        merged
    }

    /// The owner `hash` lands on, the plain way: one binary search over all of `merged`, with
    /// each search's boundary and wrap.
    fn reference(merged: &[(u32, u32)], search: Search, hash: u32) -> u32 {
        let n = merged.len();
        let lower = merged.partition_point(|&(p, _)| p < hash);
        let upper = merged.partition_point(|&(p, _)| p <= hash);
        let pos = match search {
            Search::FirstAtOrAbove => lower % n,
            Search::FirstAtOrAboveZeroLast if hash == 0 => n - 1,
            Search::FirstAtOrAboveZeroLast => lower % n,
            Search::FirstAbove => upper % n,
            Search::LastAtOrBelow => (upper + n - 1) % n,
        };
        merged[pos].1
    }

    /// Every search and tie rule on `raw`, for random hashes, 0, `u32::MAX`, and each point,
    /// its neighbours and its bucket's first and last hash.
    fn check(raw: &[(u32, u32)], next: &mut impl FnMut() -> u32) {
        for ties in [Ties::FirstInserted, Ties::LastInserted] {
            let merged = reference_points(raw, ties);
            for search in SEARCHES {
                let c = Continuum::build(raw.to_vec(), ties, search);
                let mut probes: Vec<u32> = (0..500).map(|_| next()).collect();
                probes.extend([0, 1, u32::MAX, u32::MAX - 1]);
                let low_mask = (1u64 << c.shift) as u32 - 1;
                // the ends of each point's stretch of the gaps, and of the stretches beside it
                let gap = c.gaps.as_ref().map_or(0, Gaps::span_mask);
                probes.extend(raw.iter().flat_map(|&(p, _)| {
                    [
                        p,
                        p.wrapping_sub(1),
                        p.wrapping_add(1),
                        p & !low_mask,
                        p | low_mask,
                        p & !gap,
                        p | gap,
                        (p & !gap).wrapping_sub(1),
                        (p | gap).wrapping_add(1),
                    ]
                }));
                for h in probes {
                    assert_eq!(c.owner(h), Some(reference(&merged, search, h)));
                    let got = c.position(h).map(|pos| c.owner_at(pos));
                    let want = reference(&merged, search, h);
                    assert_eq!(
                        got,
                        Some(want),
                        "{} points {ties:?} {search:?} hash {h:#x}",
                        raw.len()
                    );
                    let pos = c.position(h).unwrap_or(usize::MAX);
                    assert!(pos < c.len(), "position {pos} out of {}", c.len());
                }
            }
        }
    }

    /// The bucketed search against a plain binary search over the whole array, on rings of
    /// many sizes (either side of each change of index size), with equal points, points at 0
    /// and `u32::MAX`, and hashes below the first point and above the last (the wrap).
    #[test]
    fn bucketed_search_equals_plain_search() {
        let mut next = xorshift(12345);
        let sizes = [
            1usize, 2, 3, 15, 16, 17, 31, 32, 33, 300, 1023, 1024, 1025, 5000, 40_000,
        ];
        for n in sizes {
            // n points, one server per 4 points, as a 4-words-per-digest flavor inserts them
            let raw: Vec<(u32, u32)> = (0..n).map(|i| (next(), (i / 4) as u32)).collect();
            check(&raw, &mut next);
            // and with ties (two servers on one point, inserted in both orders) and the ends
            let mut tied = raw.clone();
            tied.push((0, 7));
            tied.push((u32::MAX, 8));
            tied.push((raw[0].0, 9));
            tied.insert(0, (raw[n / 2].0, 10));
            check(&tied, &mut next);
        }
    }

    /// Rings large enough for lines: each hash's owner from its line equals the plain
    /// search's, on random points, points crowded into a few lines (which overflow and are
    /// answered from the entries), ties, and hashes at each point, beside it and at its
    /// bucket's ends; and rings with an owner past `u16` have no lines and still answer.
    #[test]
    fn lines_answer_as_the_plain_search() {
        let mut next = xorshift(4242);
        for (n, crowded, owners) in [
            (300_000usize, 0usize, 65_536u32),
            (1_100_000, 20_000, 10_000),
            (300_000, 0, 70_000),
        ] {
            let mut raw: Vec<(u32, u32)> = (0..n).map(|i| (next(), i as u32 % owners)).collect();
            // a run of points inside one line's range, and ties with the ones before them
            raw.extend((0..crowded).map(|i| (0x4000_0000 | (next() & 0x3ff), i as u32 % 7)));
            let tied: Vec<(u32, u32)> = (0..1000u32)
                .map(|i| (raw[i as usize * 3].0, i % 5))
                .collect();
            raw.extend(tied);
            raw.extend([(0, 1), (u32::MAX, 2)]);
            for ties in [Ties::FirstInserted, Ties::LastInserted] {
                let merged = reference_points(&raw, ties);
                for search in SEARCHES {
                    let c = Continuum::build(raw.clone(), ties, search);
                    let lines = c.lines.as_ref();
                    assert_eq!(lines.is_some(), owners <= 65_536, "{n} points");
                    let mask = lines.map_or(0, |l| (1u64 << l.shift) as u32 - 1);
                    if let Some(l) = lines {
                        // between 4 and 8 points a line on average, and counted in the bytes
                        let (b, pts) = (l.lines.len(), merged.len());
                        assert!(4 * b < pts && pts <= 8 * b, "{pts} points, {b} lines");
                        let rest = c.entries.len() * 8 + c.index.len() * 4;
                        assert_eq!(c.heap_bytes(), rest + b * 64);
                        let over = l.lines.iter().filter(|l| l.count == OVERFLOW).count();
                        assert!(over > 0 || crowded == 0, "{n} points: none overflowed");
                        assert!(over * 50 < l.lines.len(), "{over} of {}", l.lines.len());
                    }
                    let mut probes: Vec<u32> = (0..20_000).map(|_| next()).collect();
                    probes.extend([0, 1, u32::MAX, u32::MAX - 1, 0x4000_0000, 0x4000_0200]);
                    probes.extend(merged.iter().step_by(97).flat_map(|&(p, _)| {
                        [p, p.wrapping_sub(1), p.wrapping_add(1), p & !mask, p | mask]
                    }));
                    for h in probes {
                        let want = reference(&merged, search, h);
                        assert_eq!(c.owner(h), Some(want), "{ties:?} {search:?} {h:#x}");
                    }
                }
            }
        }
    }

    /// A ring with lines answers from them, not from the entries: a line whose owners are
    /// overwritten gives the overwritten owner, under every search (for
    /// `FirstAtOrAboveZeroLast`, but for hash 0, which the entries answer).
    #[test]
    fn a_ring_with_lines_answers_from_them() {
        let mut next = xorshift(77);
        let raw: Vec<(u32, u32)> = (0..300_000u32).map(|i| (next(), i % 1000)).collect();
        for search in SEARCHES {
            let mut c = Continuum::build(raw.clone(), Ties::FirstInserted, search);
            let Some(lines) = c.lines.as_mut() else {
                panic!("300,000 points have lines")
            };
            let shift = lines.shift;
            for line in lines.lines.iter_mut() {
                line.owner = [4242; LINE_POINTS];
                line.edge = 4242;
            }
            for h in [1, 0x1234_5678, u32::MAX, next()] {
                let via_lines = lines_count_ok(&c, h >> shift);
                assert_eq!(
                    c.owner(h),
                    Some(if via_lines {
                        4242
                    } else {
                        c.owner_at(c.position(h).unwrap())
                    }),
                    "{search:?} {h:#x}"
                );
            }
            if search == Search::FirstAtOrAboveZeroLast {
                assert_ne!(c.owner(0), Some(4242), "hash 0: from the entries");
            }
        }
    }

    fn lines_count_ok(c: &Continuum, bucket: u32) -> bool {
        c.lines
            .as_ref()
            .is_some_and(|l| l.lines[bucket as usize].count != OVERFLOW)
    }

    /// A small ring answers from its gaps where a hash's stretch holds no point, and from the
    /// search where it holds one (or for `FirstAtOrAboveZeroLast`'s hash 0): gaps overwritten
    /// with one owner give that owner exactly there, under every search. A ring with an owner
    /// that does not fit the gaps has none, and one past 8,192 points neither.
    #[test]
    fn a_small_ring_answers_from_its_gaps() {
        let mut next = xorshift(31);
        let raw: Vec<(u32, u32)> = (0..640).map(|i| (next(), i / 160)).collect();
        for search in SEARCHES {
            let mut c = Continuum::build(raw.clone(), Ties::FirstInserted, search);
            let plain = c.clone();
            let Some(gaps) = c.gaps.as_mut() else {
                panic!("640 points have gaps")
            };
            let mask = gaps.span_mask();
            gaps.overwrite(4242);
            let mut empty = 0;
            for h in (0..2000).map(|_| next()).chain([0, 1, u32::MAX]) {
                let stretch = h & !mask..=h | mask;
                let holds_point = c.entries.iter().any(|e| stretch.contains(&e.point));
                let first_stretch = h <= mask;
                let searched = (holds_point
                    || (first_stretch && search == Search::FirstAtOrAboveZeroLast))
                    .then(|| plain.owner(h));
                empty += usize::from(searched.is_none());
                assert_eq!(
                    c.owner(h),
                    searched.unwrap_or(Some(4242)),
                    "{search:?} {h:#x}"
                );
            }
            assert!(empty > 1600, "{empty} of 2003 hashes in empty stretches");
        }
        for (n, owner) in [(10, 65_535), (10, 70_000), (8_193, 1)] {
            let raw: Vec<(u32, u32)> = (0..n).map(|_| (next(), owner)).collect();
            let c = Continuum::build(raw, Ties::FirstInserted, Search::FirstAtOrAbove);
            assert!(c.gaps.is_none(), "{n} points, owner {owner}");
            assert_eq!(c.owner(next()), Some(owner));
        }
        let c = Continuum::build(vec![(1, 1); 8_192], Ties::FirstInserted, Search::FirstAbove);
        assert!(c.gaps.is_some(), "one point");
        let most: Vec<(u32, u32)> = (0..8_192).map(|i| (i << 19, 1)).collect();
        let c = Continuum::build(most, Ties::FirstInserted, Search::FirstAbove);
        assert!(c.gaps.is_some(), "8,192 points");
    }

    /// One point: every hash lands on it.
    #[test]
    fn single_point() {
        let mut next = xorshift(7);
        for p in [0, 1, 0x8000_0000, u32::MAX] {
            check(&[(p, 3)], &mut next);
        }
    }

    /// Points crowded into a few buckets (a key hash with a narrow range, such as
    /// libmemcached's 15-bit crc, hashing the point names of `libmemcached-unweighted`): the
    /// one full bucket is binary-searched, and the empty buckets around it still answer.
    #[test]
    fn crowded_buckets() {
        let mut next = xorshift(99);
        for n in [100usize, 1000, 20_000] {
            let narrow: Vec<(u32, u32)> = (0..n).map(|i| (next() & 0x7fff, i as u32)).collect();
            check(&narrow, &mut next);
            let high: Vec<(u32, u32)> = (0..n)
                .map(|i| (u32::MAX - (next() & 0xffff), i as u32))
                .collect();
            check(&high, &mut next);
            let all_equal: Vec<(u32, u32)> = (0..n).map(|i| (0x1234_5678, i as u32)).collect();
            check(&all_equal, &mut next);
        }
    }

    /// The index has between n/2 and n buckets, so a bucket holds one to two points on
    /// average (what keeps a lookup to one line of entries).
    #[test]
    fn index_sized_to_the_points() {
        for n in [16usize, 17, 1000, 160_000, 1_600_000] {
            let buckets = 1usize << index_bits(n);
            assert!(
                buckets <= n && 2 * buckets > n,
                "{n} points, {buckets} buckets"
            );
        }
        assert_eq!(index_bits(0), 4);
        assert_eq!(index_bits(1), 4);
        assert_eq!(index_bits(usize::MAX), 24);
    }
}
