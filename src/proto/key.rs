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

/// No byte of `key` is [`refused`], tested eight at a time: a byte below 0x21, or one equal
/// to 0x7f, sets its high bit in one of two words (the "has less" and "has zero" tests of
/// bit-twiddling lore; a borrow can only mark bytes above one truly marked, so "none marked"
/// is exact). Byte by byte the check was 60 of a multi-get's ~1,600 instructions per key.
/// A key of 8 bytes or more ends with its last 8 bytes as one more word, overlapping the
/// words before it, instead of a byte loop over the rest.
#[inline]
fn all_allowed(key: &[u8]) -> bool {
    for w in key.chunks_exact(8) {
        if !word_allowed(w) {
            return false;
        }
    }
    // one rule for every length from 8 on: a multiple of 8 checks its last word twice
    match key.len().checked_sub(8) {
        Some(last) => word_allowed(&key[last..]),
        None => !key.iter().any(|&b| refused(b)),
    }
}

/// No byte of the 8 bytes `w` is [`refused`].
#[inline]
fn word_allowed(w: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut b = [0u8; 8];
    b.copy_from_slice(w);
    let x = u64::from_le_bytes(b);
    let below_0x21 = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
    let del = x ^ (ONES * 0x7f);
    let is_del = del.wrapping_sub(ONES) & !del & HIGH;
    below_0x21 == 0 && is_del == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time check agrees with the byte rule for every byte value at every
    /// place of keys of 1 to 24 bytes (the words and the remainder), among allowed bytes of
    /// both halves of the byte range.
    #[test]
    fn words_and_bytes_agree_on_every_byte() {
        for len in 1..=24 {
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
