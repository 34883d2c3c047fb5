//! Hash tags with twemproxy's semantics (nc_server.c `server_pool_idx`).

/// A two-character hash tag such as `{}`: only the part of the key between the first opening
/// character and the next closing character after it is hashed, if that part is not empty.
///
/// ```
/// use memshard::HashTag;
/// let tag: HashTag = "{}".parse().unwrap();
/// assert_eq!(tag.apply(b"user:{42}:name"), b"42");
/// assert_eq!(tag.apply(b"user:{}:name"), b"user:{}:name"); // empty tag: whole key
/// assert_eq!(tag.apply(b"plain"), b"plain");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HashTag {
    open: u8,
    close: u8,
}

/// A hash tag must be exactly two bytes, like twemproxy's `hash_tag: "{}"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hash tag {0:?} must be exactly two characters, like \"{{}}\" (twemproxy hash_tag)")]
pub struct BadHashTag(pub String);

impl std::str::FromStr for HashTag {
    type Err = BadHashTag;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.as_bytes() {
            [open, close] => Ok(HashTag {
                open: *open,
                close: *close,
            }),
            _ => Err(BadHashTag(s.to_string())),
        }
    }
}

impl HashTag {
    /// A tag from its opening and closing bytes.
    pub fn new(open: u8, close: u8) -> HashTag {
        HashTag { open, close }
    }

    /// The part of `key` that is hashed.
    #[inline]
    pub fn apply<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        // twemproxy: tag_start = first `open`; tag_end = first `close` after it; the span is
        // used only when tag_end - tag_start > 1 (non-empty).
        if let Some(start) = key.iter().position(|&b| b == self.open) {
            let inner = &key[start + 1..];
            if let Some(len) = inner.iter().position(|&b| b == self.close)
                && len > 0
            {
                return &inner[..len];
            }
        }
        key
    }
}

impl std::fmt::Display for HashTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.open as char, self.close as char)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_prints_as_written_and_parses_back() {
        for text in ["{}", "$$", "[]"] {
            let tag: HashTag = text.parse().expect(text);
            let b = text.as_bytes();
            assert_eq!(tag, HashTag::new(b[0], b[1]));
            assert_eq!(tag.to_string(), text);
        }
        for bad in ["", "{", "{}}"] {
            assert_eq!(bad.parse::<HashTag>(), Err(BadHashTag(bad.into())));
        }
    }
}
