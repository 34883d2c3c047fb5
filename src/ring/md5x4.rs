//! Four MD5s at once, for short inputs (one 64-byte block each).
//!
//! MD5 is one long chain of dependent additions, so a single hash leaves most of the CPU idle.
//! Running four independent hashes in lock-step, lane by lane, lets the compiler keep four
//! chains in flight (on x86-64 as SSE2 vectors, see `sse2`); routing a batch of keys — a multi-get, the
//! planner's million keys — then costs a fraction of four separate hashes. One `unsafe` call (SSE2, in every x86-64 CPU); the
//! result is checked against md-5 in the tests below.

pub(super) const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15,
    21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

pub(super) const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

/// The longest input hashed in one block (55 bytes + 0x80 + 8 length bytes = 64).
pub(crate) const MAX_ONE_BLOCK: usize = 55;

type Lanes = [u32; 4];

/// The first digest word (the ketama point / key hash) of four inputs of at most
/// [`MAX_ONE_BLOCK`] bytes each. Longer inputs must go through [`crate::hash::md5_words`].
///
/// The first word is final after step 61 of 64 (see `super::md5_key`), so the last three
/// steps are left out.
pub(crate) fn md5_first_words(inputs: [&[u8]; 4]) -> Lanes {
    let mut m = [[0u32; 4]; 16];
    fill_blocks(&mut m, inputs);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `md5_x4`.
    let st = unsafe { sse2::rounds::<false>(&m) };
    #[cfg(not(target_arch = "x86_64"))]
    let st = scalar::rounds::<false>(&m);
    st[1].map(|a| a.wrapping_add(INIT[0]))
}

pub(crate) fn md5_x4(inputs: [&[u8]; 4]) -> [[u32; 4]; 4] {
    let mut m = [[0u32; 4]; 16];
    fill_blocks(&mut m, inputs);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `rounds` only needs SSE2, which every x86-64 CPU has (it is in the target's
    // baseline: `cfg(target_feature = "sse2")` holds for every x86_64 target Rust has).
    let [a, b, c, d] = unsafe { sse2::rounds::<true>(&m) };
    #[cfg(not(target_arch = "x86_64"))]
    let [a, b, c, d] = scalar::rounds::<true>(&m);
    std::array::from_fn(|l| {
        [
            a[l].wrapping_add(INIT[0]),
            b[l].wrapping_add(INIT[1]),
            c[l].wrapping_add(INIT[2]),
            d[l].wrapping_add(INIT[3]),
        ]
    })
}

/// The padded one-block messages, word by word, lane by lane, written into `m`, which is all
/// zeros. Not returned by value: the 512 bytes of eight lanes were then built in one place and
/// copied to the caller's (~9 instructions a key of a multi-get, callgrind).
#[inline(always)]
pub(super) fn fill_blocks<const N: usize>(m: &mut [[u32; N]; 16], inputs: [&[u8]; N]) {
    for (lane, data) in inputs.iter().enumerate() {
        // only the words that are not zero: a whole block per lane, copied across, was ~20
        // instructions a key of a multi-get (callgrind)
        pad_into(data, |w, v| m[w][lane] = v);
    }
}

/// `data` (at most [`MAX_ONE_BLOCK`] bytes) padded to md5's one block, as sixteen
/// little-endian words.
///
/// Built word by word, not as 64 bytes read back as words: copying the key into a byte block
/// was a `memcpy` call, and the first word's load then waited on byte stores it could not be
/// forwarded from, at the head of md5's chain of dependent steps. A weighted route over 10
/// servers took ~9 % less time (medians 150 → 131 ns, `memshard-perf weighted 10` pinned to one
/// CPU, eight alternating runs of each build).
#[inline(always)]
pub(super) fn padded(data: &[u8]) -> [u32; 16] {
    let mut m = [0u32; 16];
    pad_into(data, |w, v| m[w] = v);
    m
}

/// Writes the words of `data`'s padded block that are not zero, by index: its whole 4-byte
/// words, the word holding its last bytes and the 0x80 after them, and the length (word 14).
#[inline(always)]
fn pad_into(data: &[u8], mut put: impl FnMut(usize, u32)) {
    debug_assert!(data.len() <= MAX_ONE_BLOCK);
    let mut words = data.chunks_exact(4);
    for (w, c) in (&mut words).enumerate() {
        put(w, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let tail = match *words.remainder() {
        [a] => u32::from(a),
        [a, b] => u32::from(u16::from_le_bytes([a, b])),
        [a, b, c] => u32::from(u16::from_le_bytes([a, b])) | (u32::from(c) << 16),
        _ => 0,
    };
    let rest = data.len() % 4;
    put((data.len() / 4) & 15, tail | (0x80 << (8 * rest)));
    // the length in bits over words 14 and 15, little-endian; at most 440 bits, so 15 is 0
    put(14, (data.len() as u32).wrapping_mul(8));
}

pub(super) const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// The 64 rounds of four lanes, as SSE2 vectors (part of every x86-64 CPU, so always there).
/// Written with the intrinsics because LLVM keeps the lane-by-lane code scalar: SSE2 has no
/// vector rotate, and it judged four scalar `rol`s cheaper than shift-shift-or. Measured: one
/// call (four keys) 3,173 instructions scalar, ~900 in SSE2 (callgrind); route_each over 100 keys
/// 7.8 -> 7.2 µs (criterion, route_100_keys); a 100-key get_multi over 4 servers 274 k -> 222 k
/// user-space instructions.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::{INIT, K, Lanes, S};
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_andnot_si128, _mm_cvtsi32_si128,
        _mm_cvtsi128_si32, _mm_or_si128, _mm_set_epi32, _mm_set1_epi32, _mm_shuffle_epi32,
        _mm_sll_epi32, _mm_srl_epi32, _mm_xor_si128,
    };

    /// All 64 steps (`ALL`), or the first 61, after which the first word is in place 1.
    #[target_feature(enable = "sse2")]
    pub(super) fn rounds<const ALL: bool>(m: &[Lanes; 16]) -> [Lanes; 4] {
        let m: [__m128i; 16] = std::array::from_fn(|w| {
            let [l0, l1, l2, l3] = m[w].map(|x| x as i32);
            _mm_set_epi32(l3, l2, l1, l0)
        });
        let mut st = INIT.map(|x| _mm_set1_epi32(x as i32));
        super::rounds!(st, m; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25
            26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53
            54 55 56 57 58 59 60);
        if ALL {
            super::rounds!(st, m; 61 62 63);
        }
        st.map(|v| {
            [
                _mm_cvtsi128_si32(v) as u32,
                _mm_cvtsi128_si32(_mm_shuffle_epi32::<0x55>(v)) as u32,
                _mm_cvtsi128_si32(_mm_shuffle_epi32::<0xaa>(v)) as u32,
                _mm_cvtsi128_si32(_mm_shuffle_epi32::<0xff>(v)) as u32,
            ]
        })
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    pub(super) fn round<const I: usize>(st: &mut [__m128i; 4], m: &[__m128i; 16]) {
        let [a, b, c, d] = *st;
        let ones = _mm_set1_epi32(-1);
        let f = match I / 16 {
            0 => _mm_or_si128(_mm_and_si128(b, c), _mm_andnot_si128(b, d)),
            1 => _mm_or_si128(_mm_and_si128(d, b), _mm_andnot_si128(d, c)),
            2 => _mm_xor_si128(_mm_xor_si128(b, c), d),
            _ => _mm_xor_si128(c, _mm_or_si128(b, _mm_xor_si128(d, ones))),
        };
        let sum = _mm_add_epi32(
            _mm_add_epi32(a, f),
            _mm_add_epi32(_mm_set1_epi32(K[I] as i32), m[super::word(I)]),
        );
        let rotated = _mm_or_si128(
            _mm_sll_epi32(sum, _mm_cvtsi32_si128(S[I] as i32)),
            _mm_srl_epi32(sum, _mm_cvtsi32_si128(32 - S[I] as i32)),
        );
        *st = [d, _mm_add_epi32(b, rotated), b, c];
    }
}

/// The same rounds lane by lane, for other targets (and compared with `sse2` in the tests).
#[cfg(any(not(target_arch = "x86_64"), test))]
mod scalar {
    use super::{INIT, K, Lanes, S};

    /// All 64 steps (`ALL`), or the first 61, as `sse2::rounds`.
    pub(super) fn rounds<const ALL: bool>(m: &[Lanes; 16]) -> [Lanes; 4] {
        let mut st: [Lanes; 4] = INIT.map(|x| [x; 4]);
        super::rounds!(st, m; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25
            26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53
            54 55 56 57 58 59 60);
        if ALL {
            super::rounds!(st, m; 61 62 63);
        }
        st
    }

    #[inline(always)]
    pub(super) fn round<const I: usize>(st: &mut [Lanes; 4], m: &[Lanes; 16]) {
        let [a, b, c, d] = *st;
        let f = match I / 16 {
            0 => lanes(|l| (b[l] & c[l]) | (!b[l] & d[l])),
            1 => lanes(|l| (d[l] & b[l]) | (!d[l] & c[l])),
            2 => lanes(|l| b[l] ^ c[l] ^ d[l]),
            _ => lanes(|l| c[l] ^ (b[l] | !d[l])),
        };
        let g = super::word(I);
        let t = lanes(|l| {
            b[l].wrapping_add(
                a[l].wrapping_add(f[l])
                    .wrapping_add(K[I])
                    .wrapping_add(m[g][l])
                    .rotate_left(S[I]),
            )
        });
        *st = [d, t, b, c];
    }

    #[inline(always)]
    fn lanes(f: impl Fn(usize) -> u32) -> Lanes {
        [f(0), f(1), f(2), f(3)]
    }
}

/// The message word round `i` adds.
#[inline(always)]
pub(super) const fn word(i: usize) -> usize {
    match i / 16 {
        0 => i,
        1 => (5 * i + 1) % 16,
        2 => (3 * i + 5) % 16,
        _ => (7 * i) % 16,
    }
}

macro_rules! rounds {
    ($st:ident, $m:ident; $($i:literal)*) => {
        $(round::<$i>(&mut $st, &$m);)*
    };
}
pub(super) use rounds;

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE2 rounds against the lane-by-lane ones other targets use.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_equals_scalar() {
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..200 {
            let m: [Lanes; 16] = std::array::from_fn(|_| {
                std::array::from_fn(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x
                })
            });
            // SAFETY: SSE2 is in every x86-64 CPU (see md5_x4).
            assert_eq!(
                unsafe { sse2::rounds::<true>(&m) },
                scalar::rounds::<true>(&m)
            );
            // SAFETY: as above.
            assert_eq!(
                unsafe { sse2::rounds::<false>(&m) },
                scalar::rounds::<false>(&m)
            );
        }
    }

    #[test]
    fn equals_md5_for_every_one_block_length() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in 0..=MAX_ONE_BLOCK {
            let ins = [
                &data[..len],
                &data[1..1 + len],
                &data[2..2 + len / 2],
                &data[3..3 + len / 3],
            ];
            let (first, whole) = (md5_first_words(ins), md5_x4(ins));
            for lane in 0..4 {
                let md5 = crate::hash::md5_words(ins[lane]);
                assert_eq!(first[lane], md5[0], "len {len} lane {lane}");
                assert_eq!(whole[lane], md5, "len {len} lane {lane}");
            }
        }
    }
}
