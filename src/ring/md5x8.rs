//! Eight MD5s at once with AVX2, for short inputs (one 64-byte block each): [`super::md5x4`]'s
//! rounds on 256-bit vectors, used when the CPU has AVX2 (checked at run time; most x86-64
//! CPUs since 2013 do). Measured: a 100-key get_multi over 4 servers spent ~250 user-space
//! instructions a key in the four-lane rounds and ~100 in these (callgrind).

use super::md5x4::{INIT, K, MAX_ONE_BLOCK, S, fill_blocks, rounds, word};

/// The first digest word (the ketama point / key hash) of eight inputs of at most
/// [`MAX_ONE_BLOCK`] bytes each, or `None` on a CPU without AVX2 (and on other targets).
pub(crate) fn md5_first_words(inputs: [&[u8]; 8]) -> Option<[u32; 8]> {
    debug_assert!(inputs.iter().all(|i| i.len() <= MAX_ONE_BLOCK));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        let mut m = [[0u32; 8]; 16];
        fill_blocks(&mut m, inputs);
        // SAFETY: `rounds` needs AVX2, which the CPU was just found to have.
        let first = unsafe { avx2::first_words(&m) };
        return Some(first.map(|a| a.wrapping_add(INIT[0])));
    }
    let _ = inputs;
    None
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{INIT, K, S};
    use std::arch::x86_64::{
        __m256i, _mm_cvtsi32_si128, _mm256_add_epi32, _mm256_and_si256, _mm256_andnot_si256,
        _mm256_extract_epi32, _mm256_or_si256, _mm256_set_epi32, _mm256_set1_epi32,
        _mm256_sll_epi32, _mm256_srl_epi32, _mm256_xor_si256,
    };

    type Lanes = [u32; 8];

    /// The first 61 steps, after which the first digest word is final, in place 1 (see
    /// `super::super::md5_key`); that word of each lane.
    #[target_feature(enable = "avx2")]
    pub(super) fn first_words(m: &[Lanes; 16]) -> Lanes {
        let m: [__m256i; 16] = std::array::from_fn(|w| {
            let [l0, l1, l2, l3, l4, l5, l6, l7] = m[w].map(|x| x as i32);
            _mm256_set_epi32(l7, l6, l5, l4, l3, l2, l1, l0)
        });
        let mut st = INIT.map(|x| _mm256_set1_epi32(x as i32));
        super::rounds!(st, m; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25
            26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53
            54 55 56 57 58 59 60);
        let v = st[1];
        [
            _mm256_extract_epi32::<0>(v) as u32,
            _mm256_extract_epi32::<1>(v) as u32,
            _mm256_extract_epi32::<2>(v) as u32,
            _mm256_extract_epi32::<3>(v) as u32,
            _mm256_extract_epi32::<4>(v) as u32,
            _mm256_extract_epi32::<5>(v) as u32,
            _mm256_extract_epi32::<6>(v) as u32,
            _mm256_extract_epi32::<7>(v) as u32,
        ]
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn round<const I: usize>(st: &mut [__m256i; 4], m: &[__m256i; 16]) {
        let [a, b, c, d] = *st;
        let ones = _mm256_set1_epi32(-1);
        let f = match I / 16 {
            0 => _mm256_or_si256(_mm256_and_si256(b, c), _mm256_andnot_si256(b, d)),
            1 => _mm256_or_si256(_mm256_and_si256(d, b), _mm256_andnot_si256(d, c)),
            2 => _mm256_xor_si256(_mm256_xor_si256(b, c), d),
            _ => _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, ones))),
        };
        let sum = _mm256_add_epi32(
            _mm256_add_epi32(a, f),
            _mm256_add_epi32(_mm256_set1_epi32(K[I] as i32), m[super::word(I)]),
        );
        let rotated = _mm256_or_si256(
            _mm256_sll_epi32(sum, _mm_cvtsi32_si128(S[I] as i32)),
            _mm256_srl_epi32(sum, _mm_cvtsi32_si128(32 - S[I] as i32)),
        );
        *st = [d, _mm256_add_epi32(b, rotated), b, c];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane's first word is md5's, for every one-block length, where AVX2 is there.
    #[test]
    fn equals_md5_for_every_one_block_length() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in 0..=MAX_ONE_BLOCK {
            let ins: [&[u8]; 8] = std::array::from_fn(|l| &data[l..l + len * (l % 3 + 1) / 3]);
            let Some(first) = md5_first_words(ins) else {
                // no AVX2 here: every call says so, whatever the input
                #[cfg(target_arch = "x86_64")]
                assert!(!std::arch::is_x86_feature_detected!("avx2"));
                return;
            };
            for lane in 0..8 {
                let md5 = crate::hash::md5_words(ins[lane]);
                assert_eq!(first[lane], md5[0], "len {len} lane {lane}");
            }
        }
    }
}
