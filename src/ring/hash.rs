//! Key hash functions, bit-exact with the peers that offer them.
//!
//! libmemcached (libhashkit) and twemproxy (`src/hashkit/`) share most of these. Their C code
//! reads the key through a `const char *`, which is *signed* on x86-64 Linux, so several hashes
//! sign-extend bytes ≥ 0x80 before mixing them in (`(uint32_t)key[x]`). We reproduce that
//! through `sx`: a UTF-8 key hashes here exactly as it does in the C peers.

use md5::block_api::compress;
use std::fmt;
use std::str::FromStr;

/// A key hash, as offered by libmemcached (`MEMCACHED_BEHAVIOR_HASH`) and twemproxy (`hash:`).
///
/// ```
/// use memshard::KeyHash;
/// let h: KeyHash = "md5".parse().unwrap();
/// // libmemcached's hash table (tests/hash_results.h): md5("apple")
/// assert_eq!(h.hash(b"apple"), 3195025439);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
// The FNV variant names follow the peers' own spelling (fnv1a_64, ...).
#[allow(non_camel_case_types)]
#[non_exhaustive]
pub enum KeyHash {
    /// First four md5 digest bytes, little-endian (ketama's key hash).
    Md5,
    /// Bob Jenkins' one-at-a-time; libmemcached's default key hash.
    OneAtATime,
    /// libmemcached/twemproxy `crc`: `(crc32 >> 16) & 0x7fff`.
    Crc32,
    /// twemproxy `crc32a`: the full IEEE crc32.
    Crc32a,
    /// twemproxy `crc16` (XMODEM table, state not masked to 16 bits, as twemproxy does).
    Crc16,
    /// FNV-1 with 64-bit parameters, truncated to 32 bits.
    Fnv1_64,
    /// FNV-1a with 64-bit parameters computed in 32 bits (libhashkit/twemproxy quirk).
    Fnv1a_64,
    /// FNV-1, 32-bit.
    Fnv1_32,
    /// FNV-1a, 32-bit.
    Fnv1a_32,
    /// Paul Hsieh's SuperFastHash as libhashkit has it (initial hash 0).
    Hsieh,
    /// MurmurHash2 with libhashkit's length-derived seed.
    Murmur,
    /// MurmurHash3 x86_32 with libhashkit's length-derived seed.
    Murmur3,
    /// Bob Jenkins' lookup3 `hashlittle` with initval 13.
    Jenkins,
    /// Java's `String.hashCode()` of the key's UTF-8 decoding, read unsigned: spymemcached's
    /// `NATIVE_HASH`, the default of its modulo placement.
    Native,
    /// MurmurHash3 x86_32 with seed 0 (pymemcache's `murmur3_32`; libhashkit's `murmur3` seeds
    /// with the key length).
    Murmur3Seed0,
    /// The first four bytes of the key's SHA-384 digest, little-endian (the AWS ElastiCache
    /// Java client's ketama key hash).
    Sha384,
}

/// Every hash with its CLI name, in the order `--help` lists them.
pub const KEY_HASHES: &[(&str, KeyHash)] = &[
    ("md5", KeyHash::Md5),
    ("one-at-a-time", KeyHash::OneAtATime),
    ("crc32", KeyHash::Crc32),
    ("crc32a", KeyHash::Crc32a),
    ("crc16", KeyHash::Crc16),
    ("fnv1_64", KeyHash::Fnv1_64),
    ("fnv1a_64", KeyHash::Fnv1a_64),
    ("fnv1_32", KeyHash::Fnv1_32),
    ("fnv1a_32", KeyHash::Fnv1a_32),
    ("hsieh", KeyHash::Hsieh),
    ("murmur", KeyHash::Murmur),
    ("murmur3", KeyHash::Murmur3),
    ("jenkins", KeyHash::Jenkins),
    ("native", KeyHash::Native),
    ("murmur3-seed0", KeyHash::Murmur3Seed0),
    ("sha384", KeyHash::Sha384),
];

/// Names the peers use for the same hashes (twemproxy `one_at_a_time`, libmemcached `crc`, ...).
const ALIASES: &[(&str, KeyHash)] = &[
    ("one_at_a_time", KeyHash::OneAtATime),
    ("default", KeyHash::OneAtATime),
    ("crc", KeyHash::Crc32),
    ("fnv1-64", KeyHash::Fnv1_64),
    ("fnv1a-64", KeyHash::Fnv1a_64),
    ("fnv1-32", KeyHash::Fnv1_32),
    ("fnv1a-32", KeyHash::Fnv1a_32),
    // spymemcached's DefaultHashAlgorithm names
    ("native_hash", KeyHash::Native),
    ("ketama_hash", KeyHash::Md5),
    ("crc_hash", KeyHash::Crc32),
    ("fnv1_64_hash", KeyHash::Fnv1_64),
    ("fnv1a_64_hash", KeyHash::Fnv1a_64),
    ("fnv1_32_hash", KeyHash::Fnv1_32),
    ("fnv1a_32_hash", KeyHash::Fnv1a_32),
];

/// The name given to `--hash` was not one we know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hash {0:?}; known hashes: {list}", list = KEY_HASHES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))]
pub struct UnknownHash(pub String);

impl FromStr for KeyHash {
    type Err = UnknownHash;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        KEY_HASHES
            .iter()
            .chain(ALIASES)
            .find(|(n, _)| *n == lower)
            .map(|(_, h)| *h)
            .ok_or_else(|| UnknownHash(s.to_string()))
    }
}

impl fmt::Display for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = KEY_HASHES
            .iter()
            .find(|(_, h)| h == self)
            .map(|(n, _)| *n)
            .unwrap_or("?");
        f.write_str(name)
    }
}

impl KeyHash {
    /// Hash `key` as the peer does.
    #[inline]
    pub fn hash(self, key: &[u8]) -> u32 {
        match self {
            KeyHash::Md5 => super::md5_key::first_word(key).unwrap_or_else(|| md5_words(key)[0]),
            KeyHash::OneAtATime => one_at_a_time(key),
            KeyHash::Crc32 => (crc32fast::hash(key) >> 16) & 0x7fff,
            KeyHash::Crc32a => crc32fast::hash(key),
            KeyHash::Crc16 => crc16(key),
            KeyHash::Fnv1_64 => fnv1_64(key),
            KeyHash::Fnv1a_64 => fnv1a(key, 0x8422_2325, 0x0000_01b3),
            KeyHash::Fnv1_32 => fnv1(key, 2_166_136_261, 16_777_619),
            KeyHash::Fnv1a_32 => fnv1a(key, 2_166_136_261, 16_777_619),
            KeyHash::Hsieh => hsieh(key),
            KeyHash::Murmur => murmur2(key),
            KeyHash::Murmur3 => murmur3(key),
            KeyHash::Jenkins => jenkins(key),
            KeyHash::Native => super::java::string_hash_code(key),
            KeyHash::Murmur3Seed0 => murmur3_seeded(key, 0),
            KeyHash::Sha384 => {
                let d = sha384_digest(key);
                u32::from_le_bytes([d[0], d[1], d[2], d[3]])
            }
        }
    }
}

/// The SHA-384 digest of `data`.
pub(crate) fn sha384_digest(data: &[u8]) -> [u8; 48] {
    use sha2::{Digest, Sha384};
    Sha384::digest(data).into()
}

/// The md5 state after hashing `data`: the digest as four little-endian words.
///
/// Keys and point names are short, so this drives md-5's compression function directly: one
/// block for up to 55 bytes, padding built on the stack, none of the streaming `Digest`
/// machinery (which measured ~40% slower for 10-byte keys).
#[inline]
pub(crate) fn md5_words(data: &[u8]) -> [u32; 4] {
    let mut state = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut chunks = data.chunks_exact(64);
    for c in &mut chunks {
        let block: &[u8; 64] = c
            .try_into()
            .expect("chunks_exact(64) yields 64-byte chunks");
        compress(&mut state, std::slice::from_ref(block));
    }
    let rest = chunks.remainder();
    let bits = (data.len() as u64).wrapping_mul(8).to_le_bytes();
    let mut tail = [[0u8; 64]; 2];
    let flat = tail.as_flattened_mut();
    flat[..rest.len()].copy_from_slice(rest);
    flat[rest.len()] = 0x80;
    let blocks = if rest.len() < 56 { 1 } else { 2 };
    flat[blocks * 64 - 8..blocks * 64].copy_from_slice(&bits);
    compress(&mut state, &tail[..blocks]);
    state
}

/// The md5 digest of `data`.
#[inline]
pub(crate) fn md5(data: &[u8]) -> [u8; 16] {
    let w = md5_words(data);
    let mut d = [0u8; 16];
    for (i, word) in w.iter().enumerate() {
        d[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    d
}

/// A byte read through a signed `char` and widened to `uint32_t`, as the C peers do.
#[inline]
fn sx(b: u8) -> u32 {
    b as i8 as i32 as u32
}

fn one_at_a_time(key: &[u8]) -> u32 {
    let mut v: u32 = 0;
    for &b in key {
        v = v.wrapping_add(sx(b));
        v = v.wrapping_add(v << 10);
        v ^= v >> 6;
    }
    v = v.wrapping_add(v << 3);
    v ^= v >> 11;
    v.wrapping_add(v << 15)
}

// libhashkit fnv1_64 works in 64 bits and returns the low 32; the low 32 bits of a 64-bit
// product depend only on the low 32 bits of its factors, so 32-bit arithmetic is exact.
fn fnv1_64(key: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= b as i8 as i64 as u64;
    }
    h as u32
}

fn fnv1(key: &[u8], init: u32, prime: u32) -> u32 {
    key.iter().fold(init, |h, &b| h.wrapping_mul(prime) ^ sx(b))
}

fn fnv1a(key: &[u8], init: u32, prime: u32) -> u32 {
    key.iter()
        .fold(init, |h, &b| (h ^ sx(b)).wrapping_mul(prime))
}

const fn crc16_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 8;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000 != 0 {
                (c << 1) ^ 0x1021
            } else {
                c << 1
            };
            k += 1;
        }
        t[i] = c & 0xffff;
        i += 1;
    }
    t
}
static CRC16: [u32; 256] = crc16_table();

// twemproxy nc_crc16.c: `crc = (crc << 8) ^ crc16tab[((crc >> 8) ^ *key++) & 0x00FF]` on a
// uint32_t that is never masked, so the result is wider than 16 bits.
fn crc16(key: &[u8]) -> u32 {
    key.iter().fold(0u32, |crc, &b| {
        (crc << 8) ^ CRC16[(((crc >> 8) ^ sx(b)) & 0xff) as usize]
    })
}

fn get16(k: &[u8]) -> u32 {
    (k[1] as u32) << 8 | k[0] as u32
}

fn hsieh(key: &[u8]) -> u32 {
    if key.is_empty() {
        return 0;
    }
    let mut h: u32 = 0;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        h = h.wrapping_add(get16(c));
        let tmp = (get16(&c[2..]) << 11) ^ h;
        h = (h << 16) ^ tmp;
        h = h.wrapping_add(h >> 11);
    }
    let rem = chunks.remainder();
    match rem.len() {
        3 => {
            h = h.wrapping_add(get16(rem));
            h ^= h << 16;
            h ^= sx(rem[2]) << 18;
            h = h.wrapping_add(h >> 11);
        }
        2 => {
            h = h.wrapping_add(get16(rem));
            h ^= h << 11;
            h = h.wrapping_add(h >> 17);
        }
        1 => {
            h = h.wrapping_add(rem[0] as u32);
            h ^= h << 10;
            h = h.wrapping_add(h >> 1);
        }
        _ => {}
    }
    h ^= h << 3;
    h = h.wrapping_add(h >> 5);
    h ^= h << 4;
    h = h.wrapping_add(h >> 17);
    h ^= h << 25;
    h.wrapping_add(h >> 6)
}

fn murmur2(key: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    let len = key.len() as u32;
    let seed = 0xdead_beefu32.wrapping_mul(len);
    let mut h = seed ^ len;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let rem = chunks.remainder();
    if rem.len() >= 3 {
        h ^= (rem[2] as u32) << 16;
    }
    if rem.len() >= 2 {
        h ^= (rem[1] as u32) << 8;
    }
    if !rem.is_empty() {
        h ^= rem[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

fn murmur3(key: &[u8]) -> u32 {
    murmur3_seeded(key, 0xdead_beefu32.wrapping_mul(key.len() as u32))
}

/// MurmurHash3 x86_32 with `seed` (libhashkit seeds it with the length; pymemcache with 0).
pub(crate) fn murmur3_seeded(key: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        h = murmur3_round(h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rem = chunks.remainder();
    if !rem.is_empty() {
        let k = rem.iter().rev().fold(0u32, |k, &b| (k << 8) | u32::from(b));
        h ^= murmur3_scramble(k);
    }
    murmur3_finish(h, key.len() as u32)
}

/// MurmurHash3's scramble of one little-endian block (or of the tail's bytes).
#[inline]
pub(crate) fn murmur3_scramble(k: u32) -> u32 {
    k.wrapping_mul(0xcc9e_2d51)
        .rotate_left(15)
        .wrapping_mul(0x1b87_3593)
}

/// One full 4-byte block mixed into the state `h`.
#[inline]
pub(crate) fn murmur3_round(h: u32, block: u32) -> u32 {
    (h ^ murmur3_scramble(block))
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

/// The length folded in and the final avalanche (`fmix32`).
#[inline]
pub(crate) fn murmur3_finish(h: u32, len: u32) -> u32 {
    let mut h = h ^ len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

fn jenkins(key: &[u8]) -> u32 {
    fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(4);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(6);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(8);
        *b = b.wrapping_add(*a);
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(16);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(19);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(4);
        *b = b.wrapping_add(*a);
    }
    fn fin(a: &mut u32, b: &mut u32, c: &mut u32) {
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(14));
        *a ^= *c;
        *a = a.wrapping_sub(c.rotate_left(11));
        *b ^= *a;
        *b = b.wrapping_sub(a.rotate_left(25));
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(16));
        *a ^= *c;
        *a = a.wrapping_sub(c.rotate_left(4));
        *b ^= *a;
        *b = b.wrapping_sub(a.rotate_left(14));
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(24));
    }
    let word = |k: &[u8]| {
        let mut w = [0u8; 4];
        w[..k.len()].copy_from_slice(k);
        u32::from_le_bytes(w)
    };
    let init = 0xdead_beefu32
        .wrapping_add(key.len() as u32)
        .wrapping_add(13);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(word(&k[0..4]));
        b = b.wrapping_add(word(&k[4..8]));
        c = c.wrapping_add(word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    a = a.wrapping_add(word(&k[..k.len().min(4)]));
    if k.len() > 4 {
        b = b.wrapping_add(word(&k[4..k.len().min(8)]));
    }
    if k.len() > 8 {
        c = c.wrapping_add(word(&k[8..]));
    }
    fin(&mut a, &mut b, &mut c);
    c
}

#[cfg(test)]
mod md5_tests {
    use super::*;
    use md5::{Digest, Md5};

    #[test]
    fn matches_the_streaming_digest_at_every_length() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..data.len() {
            let want: [u8; 16] = Md5::digest(&data[..len]).into();
            assert_eq!(md5(&data[..len]), want, "length {len}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest, Md5};

    #[test]
    fn the_one_block_md5_is_md5_at_every_length() {
        // every padding case: 0..=200 bytes crosses the 55/56/64-byte block boundaries
        for len in 0..=200usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 131 + len) as u8).collect();
            let reference: [u8; 16] = Md5::digest(&data).into();
            assert_eq!(md5(&data), reference, "{len} bytes");
            for i in 0..4 {
                let w = &reference[4 * i..4 * i + 4];
                assert_eq!(
                    md5_words(&data)[i],
                    u32::from_le_bytes([w[0], w[1], w[2], w[3]])
                );
            }
        }
    }
}
