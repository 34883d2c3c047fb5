//! The owner of each stretch of a small continuum's hash space that holds no point: there,
//! every hash lands on the same point, so one read answers it.

use super::continuum::Entry;
use super::flavor::Search;

/// [`Gaps`]' mark for a stretch with a point in it (the search answers those).
const MIXED: u16 = u16::MAX;
/// Most stretch bits: 65,536 stretches, 128 KB.
const MAX_BITS: u32 = 16;
/// Stretch bits over the bits that count the points: eight stretches a point, so that seven
/// in eight hold none (or more, as points share stretches).
const SPARE_BITS: u32 = 3;

/// For each of `2^(32 - shift)` equal stretches of the hash space, by a hash's top bits: the
/// owner every hash in it lands on when it holds no point, else [`MIXED`].
///
/// With eight stretches a point, 7 in 8 lookups end here. The continuum's bucketed search
/// after it was ~56 instructions a key of a 100-key multi-get over 4 weighted servers
/// (callgrind).
#[derive(Clone, Debug)]
pub(super) struct Gaps {
    owners: Box<[u16]>,
    shift: u32,
}

impl Gaps {
    /// Gaps for the sorted, distinct `entries` found by `search`; `None` when empty, when an
    /// owner does not fit below [`MIXED`], or when the points are too many for stretches to be
    /// mostly empty (past 8,192: such rings have lines, or a bucket search that fits the
    /// cache).
    pub(super) fn build(entries: &[Entry], search: Search) -> Option<Gaps> {
        let n = entries.len();
        if n == 0
            || n > 1 << (MAX_BITS - SPARE_BITS)
            || entries.iter().any(|e| e.owner >= u32::from(MIXED))
        {
            return None;
        }
        // ⌈log2 n⌉ + SPARE_BITS: at least eight stretches a point
        let bits = usize::BITS - (n - 1).leading_zeros() + SPARE_BITS;
        let shift = 32 - bits;
        let mut owners = vec![MIXED; 1 << bits];
        // the first entry not in an earlier stretch
        let mut next = 0;
        for (s, owner) in owners.iter_mut().enumerate() {
            let first = next;
            while next < n && (entries[next].point >> shift) as usize == s {
                next += 1;
            }
            if first < next {
                continue;
            }
            // no point here: the first point after the stretch (wrapping to the first), or the
            // last before it (wrapping to the last)
            let at = match search {
                Search::LastAtOrBelow => first.checked_sub(1).unwrap_or(n - 1),
                _ => first % n,
            };
            *owner = entries[at].owner as u16;
        }
        if search == Search::FirstAtOrAboveZeroLast {
            // hash 0 lands on the last point, unlike the other hashes of its stretch
            owners[0] = MIXED;
        }
        Some(Gaps {
            owners: owners.into_boxed_slice(),
            shift,
        })
    }

    /// The owner `hash` lands on, when its stretch holds no point.
    #[inline(always)]
    pub(super) fn owner(&self, hash: u32) -> Option<u32> {
        let o = *self.owners.get((hash >> self.shift) as usize)?;
        (o != MIXED).then_some(u32::from(o))
    }

    /// The hashes of one stretch: the lowest bits a stretch spans.
    #[cfg(test)]
    pub(super) fn span_mask(&self) -> u32 {
        ((1u64 << self.shift) - 1) as u32
    }

    /// Every stretch without a point given `owner` instead (to see which lookups the gaps
    /// answer).
    #[cfg(test)]
    pub(super) fn overwrite(&mut self, owner: u16) {
        for o in self.owners.iter_mut().filter(|o| **o != MIXED) {
            *o = owner;
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.owners)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight to sixteen stretches a point (one stretch for no more than one point at a time,
    /// mostly), on either side of each power of two.
    #[test]
    fn stretches_sized_to_the_points() {
        for n in [1usize, 2, 3, 127, 128, 129, 160, 4_096, 4_097, 8_191, 8_192] {
            let entries: Vec<Entry> = (0..n)
                .map(|i| Entry {
                    point: (i as u32) << 19,
                    owner: 1,
                })
                .collect();
            let gaps = Gaps::build(&entries, Search::FirstAtOrAbove).expect("gaps");
            let stretches = gaps.owners.len();
            assert!(
                8 * n <= stretches && stretches < 16 * n,
                "{n} points, {stretches} stretches"
            );
            assert_eq!(gaps.span_mask(), u32::MAX >> stretches.ilog2());
        }
    }
}
