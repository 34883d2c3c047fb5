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
    match key.iter().position(|&b| b <= b' ' || b == 0x7f) {
        Some(at) => Err(KeyError::BadByte { byte: key[at], at }),
        None => Ok(()),
    }
}
