//! Key validation: the ASCII protocol separates fields with spaces and ends lines with CRLF,
//! so a key holding either would let its sender inject a command.

/// memcached's limit on key length (`KEY_MAX_LENGTH`).
pub const MAX_KEY_LEN: usize = 250;

/// Why a key cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key is empty.
    #[error("key is empty")]
    Empty,
    /// The key (with any prefix) is longer than memcached accepts.
    #[error(
        "key is {0} bytes; memcached keys are at most 250 bytes (prefix included): shorten it, or have the client send long keys shortened (Builder::shorten_long_keys)"
    )]
    TooLong(usize),
    /// A space or control character (including CR, LF, NUL, DEL) at this byte offset.
    #[error(
        "key holds byte 0x{byte:02x} at offset {at}: spaces and control characters are not allowed in memcached keys"
    )]
    BadByte {
        /// The offending byte.
        byte: u8,
        /// Its offset in the key.
        at: usize,
    },
}

/// Check that `key` can be sent as a memcached ASCII key: 1 to 250 bytes, none of them a space
/// or control character. Bytes ≥ 0x80 (UTF-8) are allowed, as memcached allows them.
///
/// ```
/// use memshard::proto::validate_key;
/// assert!(validate_key(b"user:42").is_ok());
/// assert!(validate_key("clé".as_bytes()).is_ok());
/// assert!(validate_key(b"x\r\nflush_all").is_err());
/// assert!(validate_key(b"").is_err());
/// ```
pub fn validate_key(key: &[u8]) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(KeyError::TooLong(key.len()));
    }
    if all_allowed(key) {
        return Ok(());
    }
    match key.iter().position(|&b| refused(b)) {
        Some(at) => Err(KeyError::BadByte { byte: key[at], at }),
        None => Ok(()),
    }
}

/// Whether `key` can be sent as it is: what [`validate_key`] accepts, as a yes or no for the
/// common path (a multi-get checks every key; the reason is looked up only for a refusal).
#[inline]
pub(crate) fn sendable(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN && all_allowed(key)
}

/// A byte memcached's text protocol cannot carry in a key: a space or a control character.
fn refused(b: u8) -> bool {
    b <= b' ' || b == 0x7f
}

/// No byte of `key` is [`refused`], tested sixteen at a time as two words: a key of 8 bytes or
/// more is read as pairs of words, its last pair ending at its last byte and overlapping the
/// pair before it, instead of a byte loop over the rest. Byte by byte the check was 60 of a
/// multi-get's ~1,600 instructions per key; a word at a time, ~36 for a key of 10 bytes.
#[inline]
fn all_allowed(key: &[u8]) -> bool {
    let n = key.len();
    if n < 8 {
        return !key.iter().any(|&b| refused(b));
    }
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&key[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let mut at = 0;
    while at + 16 < n {
        if !pair_allowed(word(at), word(at + 8)) {
            return false;
        }
        at += 16;
    }
    pair_allowed(word(n.saturating_sub(16)), word(n - 8))
}

/// No byte of the two little-endian words `a` and `b` is [`refused`]: with SSE2, both in one
/// vector. A 100-key multi-get of 10-byte keys took 22 instructions a key more with two words
/// tests (callgrind).
#[cfg(target_arch = "x86_64")]
#[inline]
fn pair_allowed(a: u64, b: u64) -> bool {
    // SAFETY: `sse2::pair_allowed` only needs SSE2, which every x86-64 CPU has (it is in the
    // target's baseline: `cfg(target_feature = "sse2")` holds for every x86_64 target).
    unsafe { sse2::pair_allowed(a, b) }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        _mm_andnot_si128, _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_set_epi64x,
        _mm_set1_epi8,
    };

    #[target_feature(enable = "sse2")]
    #[inline]
    pub(super) fn pair_allowed(a: u64, b: u64) -> bool {
        let v = _mm_set_epi64x(b as i64, a as i64);
        // a byte is at least 0x21 when the larger of it and 0x21 is itself (unsigned)
        let high_enough = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x21)), v);
        let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
        _mm_movemask_epi8(_mm_andnot_si128(del, high_enough)) == 0xffff
    }
}

/// No byte of the two words `a` and `b` is [`refused`].
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn pair_allowed(a: u64, b: u64) -> bool {
    word_allowed(a) && word_allowed(b)
}

/// No byte of the word `x` is [`refused`]: a byte below 0x21, or one equal to 0x7f, sets its
/// high bit in one of two words (the "has less" and "has zero" tests of bit-twiddling lore; a
/// borrow can only mark bytes above one truly marked, so "none marked" is exact).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline]
fn word_allowed(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_0x21 = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
    let del = x ^ (ONES * 0x7f);
    let is_del = del.wrapping_sub(ONES) & !del & HIGH;
    below_0x21 == 0 && is_del == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word test (the check where SSE2 is not there) agrees with the byte rule for every
    /// byte value at every place of a word.
    #[test]
    fn a_word_is_allowed_as_its_bytes_are() {
        for at in 0..8 {
            for fill in [b'k', 0x80, 0xff] {
                for b in 0..=255u8 {
                    let mut w = [fill; 8];
                    w[at] = b;
                    assert_eq!(word_allowed(u64::from_le_bytes(w)), !refused(b), "{w:?}");
                }
            }
        }
    }

    /// The word-at-a-time check agrees with the byte rule for every byte value at every
    /// place of keys of 1 to 40 bytes (the words and the remainder), among allowed bytes of
    /// both halves of the byte range.
    #[test]
    fn words_and_bytes_agree_on_every_byte() {
        for len in 1..=40 {
            for at in 0..len {
                for fill in [b'k', 0x80, 0xff] {
                    for b in 0..=255u8 {
                        let mut key = vec![fill; len];
                        key[at] = b;
                        assert_eq!(all_allowed(&key), !refused(b), "{key:?}");
                        let want = if refused(b) {
                            Err(KeyError::BadByte { byte: b, at })
                        } else {
                            Ok(())
                        };
                        assert_eq!(validate_key(&key), want, "{key:?}");
                        assert_eq!(sendable(&key), want.is_ok(), "{key:?}");
                    }
                }
            }
        }
        assert!(refused(b' ') && refused(0) && refused(0x7f));
        assert!(sendable(&[b'k'; MAX_KEY_LEN]) && !sendable(&[b'k'; MAX_KEY_LEN + 1]));
        assert!(!sendable(b""));
        assert!(!refused(b'!') && !refused(0x80));
    }
}
