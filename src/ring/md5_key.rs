//! The first md5 digest word of one short key: what every md5 ketama routes a key by.
//!
//! An md5 key hash is the digest's first four bytes read little-endian (libmemcached's
//! `hashkit_md5` in libhashkit, spymemcached's `KETAMA_HASH`).
//! That word is `a` plus its initial value, and `a` is final after the 61st of md5's 64 steps:
//! the last three steps only move `b`, `c` and `d`. md5 is one chain of dependent steps, so a
//! route's time is that chain's length. Stopping at step 61, with each step ordered so that its
//! one input from the step before enters last, took a weighted route over 10 servers from 846
//! to 690 instructions (callgrind) and from ~142 to ~136 ns (`memshard-perf weighted 10`, six
//! runs of each, alternating). The full digest stays with md-5 (`crate::hash::md5_words`); the
//! tests compare the two at every length.

use super::md5x4::{INIT, K, MAX_ONE_BLOCK, S, padded, rounds, word};

/// The first digest word of `key`, for keys of at most [`MAX_ONE_BLOCK`] bytes; `None` for
/// longer ones, which need more than one block.
#[inline]
pub(crate) fn first_word(key: &[u8]) -> Option<u32> {
    if key.len() > MAX_ONE_BLOCK {
        return None;
    }
    let m = padded(key);
    let mut st = INIT;
    rounds!(st, m; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
        29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58
        59 60);
    // Step 61 (index 60) wrote `a` into the second place; the rotation would have carried it
    // back to the first over the three steps skipped.
    Some(st[1].wrapping_add(INIT[0]))
}

/// One step. The step before's output `b` is added last: the message word, the constant, `a`
/// and whatever part of the round function does not read `b` are summed while `b` is computed.
#[inline(always)]
fn round<const I: usize>(st: &mut [u32; 4], m: &[u32; 16]) {
    let [a, b, c, d] = *st;
    let early = a.wrapping_add(K[I]).wrapping_add(m[word(I)]);
    let sum = match I / 16 {
        0 => early.wrapping_add(d ^ (b & (c ^ d))),
        // (b & d) | (c & !d): the two halves share no bit, so the OR is an addition, and the
        // half without `b` joins the early sum.
        1 => early.wrapping_add(c & !d).wrapping_add(b & d),
        2 => early.wrapping_add(b ^ (c ^ d)),
        _ => early.wrapping_add(c ^ (b | !d)),
    };
    *st = [d, b.wrapping_add(sum.rotate_left(S[I])), b, c];
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every one-block length, over bytes that vary with the length and the place, against
    /// md-5's whole digest; and no word for a key that takes two blocks.
    #[test]
    fn the_first_word_is_md5s_at_every_one_block_length() {
        for len in 0..=MAX_ONE_BLOCK {
            for seed in [0u8, 0x5a, 0xff] {
                let key: Vec<u8> = (0..len)
                    .map(|i| seed ^ (i as u8).wrapping_mul(37).wrapping_add(len as u8))
                    .collect();
                assert_eq!(
                    first_word(&key),
                    Some(crate::hash::md5_words(&key)[0]),
                    "length {len}, seed {seed}"
                );
            }
        }
        assert_eq!(first_word(&[b'k'; MAX_ONE_BLOCK + 1]), None);
    }
}
