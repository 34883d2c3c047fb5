//! Hashes over a Java `String`: the key's UTF-16 code units, not its bytes.
//!
//! spymemcached's `DefaultHashAlgorithm` (net/spy/memcached/DefaultHashAlgorithm.java) hashes
//! `NATIVE_HASH` (`String.hashCode()`) and the four FNV variants character by character
//! (`k.charAt(i)`), while `CRC_HASH` and `KETAMA_HASH` hash the key's UTF-8 bytes
//! (`KeyUtil.getKeyBytes`). Every result is masked to 32 bits (`rv & 0xffffffffL`). memshard's
//! keys are bytes; a Java client's keys are the UTF-8 decoding of those bytes (invalid
//! sequences become U+FFFD, as `new String(bytes, UTF_8)` makes them).

/// The UTF-16 code units of the key's UTF-8 decoding.
fn chars(key: &[u8]) -> impl Iterator<Item = u16> + '_ {
    key.utf8_chunks().flat_map(|chunk| {
        let bad = (!chunk.invalid().is_empty()).then_some('\u{fffd}');
        chunk.valid().chars().chain(bad).flat_map(|c| {
            let mut units = [0u16; 2];
            let n = c.encode_utf16(&mut units).len();
            units.into_iter().take(n)
        })
    })
}

/// `String.hashCode()`: `s[0]*31^(n-1) + … + s[n-1]` in 32-bit arithmetic, read unsigned.
pub(crate) fn string_hash_code(key: &[u8]) -> u32 {
    chars(key).fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(c as u32))
}

/// FNV-1 over the key's UTF-16 code units (spymemcached's `FNV1_32_HASH`, `FNV1_64_HASH`: its
/// 64-bit arithmetic keeps its low 32 bits exact in 32 bits, so `init` and `prime` are the
/// low 32 bits of the 64-bit constants).
pub(crate) fn fnv1_chars(key: &[u8], init: u32, prime: u32) -> u32 {
    chars(key).fold(init, |h, c| h.wrapping_mul(prime) ^ c as u32)
}

/// FNV-1a over the key's UTF-16 code units (`FNV1A_32_HASH`, `FNV1A_64_HASH`).
pub(crate) fn fnv1a_chars(key: &[u8], init: u32, prime: u32) -> u32 {
    chars(key).fold(init, |h, c| (h ^ c as u32).wrapping_mul(prime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_code_is_javas() {
        // "hello".hashCode() == 99162322; "".hashCode() == 0
        assert_eq!(string_hash_code(b"hello"), 99_162_322);
        assert_eq!(string_hash_code(b""), 0);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE: read unsigned
        assert_eq!(string_hash_code(b"polygenelubricants"), 0x8000_0000);
        // a character outside the BMP is two code units: "😀" is \uD83D\uDE00
        assert_eq!(
            string_hash_code("😀".as_bytes()),
            0xD83Du32.wrapping_mul(31).wrapping_add(0xDE00)
        );
        // an invalid byte decodes as U+FFFD
        assert_eq!(string_hash_code(b"\xff"), 0xFFFD);
    }

    #[test]
    fn fnv_over_chars_counts_a_character_once() {
        let (init, prime) = (0x811c_9dc5, 0x0100_0193);
        assert_eq!(
            fnv1a_chars(b"a", init, prime),
            (init ^ 0x61).wrapping_mul(prime)
        );
        assert_eq!(
            fnv1_chars(b"a", init, prime),
            init.wrapping_mul(prime) ^ 0x61
        );
        // U+00E9 is one code unit, not the two bytes C3 A9
        assert_eq!(
            fnv1a_chars("\u{e9}".as_bytes(), init, prime),
            (init ^ 0xe9).wrapping_mul(prime)
        );
    }
}
