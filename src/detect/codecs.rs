//! Which codecs read the values found: each sampled value's flags and bytes through
//! [`value::sniff`](crate::value::sniff), counted per codec.

use crate::value::{Codec, sniff};

/// Per codec, the sampled values it reads (a value several codecs read counts for each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodecTally {
    values: u64,
    counts: Vec<(Codec, u64)>,
}

impl CodecTally {
    /// A tally of no value.
    pub fn new() -> CodecTally {
        CodecTally::default()
    }

    /// One value read: its flags and its bytes (the whole value: a codec reads it whole).
    pub fn observe(&mut self, flags: u32, payload: &[u8]) {
        self.values += 1;
        for codec in sniff(flags, payload) {
            match self.counts.iter_mut().find(|(c, _)| *c == codec) {
                Some((_, n)) => *n += 1,
                None => self.counts.push((codec, 1)),
            }
        }
    }

    /// Values observed.
    pub fn values(&self) -> u64 {
        self.values
    }

    /// Each codec that read any value, with how many it read, most first (ties in
    /// [`Codec::ALL`] order).
    pub fn ranked(&self) -> Vec<(Codec, u64)> {
        let mut v = self.counts.clone();
        let order = |c: Codec| Codec::ALL.iter().position(|&x| x == c);
        v.sort_by(|a, b| b.1.cmp(&a.1).then(order(a.0).cmp(&order(b.0))));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_count_for_each_codec_that_reads_them_most_first() {
        let mut t = CodecTally::new();
        // php-memcached's serialize() of an array, twice; plain bytes once
        t.observe(4, br#"a:1:{s:1:"a";i:1;}"#);
        t.observe(4, br#"a:1:{s:1:"b";i:2;}"#);
        t.observe(0, b"hello");
        assert_eq!(t.values(), 3);
        let ranked = t.ranked();
        assert_eq!(
            ranked.first(),
            Some(&(Codec::PhpMemcached, 3)),
            "{ranked:?}"
        );
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1), "{ranked:?}");
        assert!(ranked.iter().all(|(c, _)| *c != Codec::Raw));
        assert!(CodecTally::new().ranked().is_empty());
    }

    /// Plain bytes under flags 0 read for several codecs once each: a tie, kept in
    /// `Codec::ALL` order.
    #[test]
    fn ties_keep_the_codecs_order() {
        let mut t = CodecTally::new();
        t.observe(0, b"hello");
        let ranked = t.ranked();
        assert!(ranked.len() > 1, "{ranked:?}");
        let position = |c: Codec| Codec::ALL.iter().position(|&x| x == c);
        assert!(
            ranked
                .windows(2)
                .all(|w| position(w[0].0) < position(w[1].0)),
            "{ranked:?}"
        );
        assert!(ranked.iter().all(|&(_, n)| n == 1), "{ranked:?}");
    }
}
