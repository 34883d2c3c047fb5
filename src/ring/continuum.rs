//! The frozen continuum: strictly increasing points, each with the index of its server.

use super::flavor::{Search, Ties};

/// Sorted, de-duplicated points and their owners, built once.
///
/// Equal points are resolved at build time by the flavour's tie rule, so every lookup is a plain
/// binary search over distinct points.
#[derive(Clone, Debug, Default)]
pub(crate) struct Continuum {
    points: Box<[u32]>,
    owners: Box<[u32]>,
    search: Option<Search>,
}

impl Continuum {
    /// `raw` is `(point, server)` in the order the peer inserts them.
    pub(crate) fn build(mut raw: Vec<(u32, u32)>, ties: Ties, search: Search) -> Continuum {
        // A stable sort keeps insertion order among equal points; the tie rule then keeps the
        // first or the last of each run.
        raw.sort_by_key(|&(p, _)| p);
        let mut points = Vec::with_capacity(raw.len());
        let mut owners = Vec::with_capacity(raw.len());
        for (p, s) in raw {
            if points.last() == Some(&p) {
                if ties == Ties::LastInserted {
                    *owners.last_mut().expect("owners parallels points") = s;
                }
                continue;
            }
            points.push(p);
            owners.push(s);
        }
        Continuum {
            points: points.into_boxed_slice(),
            owners: owners.into_boxed_slice(),
            search: Some(search),
        }
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
                let i = self.points.partition_point(|&p| p < hash);
                if i == n { 0 } else { i }
            }
            Search::FirstAtOrAboveZeroLast if hash == 0 => n - 1,
            Search::FirstAtOrAboveZeroLast => {
                let i = self.points.partition_point(|&p| p < hash);
                if i == n { 0 } else { i }
            }
            Search::FirstAbove => {
                let i = self.points.partition_point(|&p| p <= hash);
                if i == n { 0 } else { i }
            }
            Search::LastAtOrBelow => {
                let i = self.points.partition_point(|&p| p <= hash);
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
