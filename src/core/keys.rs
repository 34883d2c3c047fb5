//! Keys as the caller gives them, as sent (prefix in front, validated) and as hashed for
//! placement (the key alone, or with the prefix when `hash_with_prefix` is set).

use crate::error::{Error, Result};
use crate::proto;
use std::borrow::Cow;

/// The prefix and what placement hashes.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyRules {
    pub(crate) prefix: Vec<u8>,
    pub(crate) hash_with_prefix: bool,
    /// Keys over memcached's limit are sent shortened ([`shortened`]).
    pub(crate) shorten_long: bool,
    pub(crate) max_value: usize,
}

/// memcached's longest key (`KEY_MAX_LENGTH`, memcached.h).
const KEY_MAX: usize = 250;
/// The bytes of a long key kept in front of its digest: dalli's 212 (`Dalli::KeyManager`).
const KEPT: usize = 212;

/// `wire` as sent when it is longer than memcached accepts: its first 212 bytes, cut back to
/// a UTF-8 character boundary, `:md5:` and the md5 hex of the whole of it (dalli's rule, which
/// counts characters; the same key for an ASCII key).
#[cold]
#[inline(never)]
pub(crate) fn shortened(wire: &[u8]) -> Vec<u8> {
    let mut cut = KEPT.min(wire.len());
    // a UTF-8 continuation byte (0b10xx_xxxx) would split a character
    while cut > 0 && cut < wire.len() && wire[cut] & 0xc0 == 0x80 {
        cut -= 1;
    }
    let mut out = Vec::with_capacity(cut + 5 + 32);
    out.extend_from_slice(&wire[..cut]);
    out.extend_from_slice(b":md5:");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in crate::ring::hash::md5(wire) {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
    out
}

impl KeyRules {
    /// The key as sent: validated, with the prefix in front.
    // Inlined, with its common case first: as a call, with the prefix, shortening and error
    // paths in it, this was ~34 of a multi-get's ~1,190 instructions a key (callgrind).
    #[inline]
    pub(crate) fn wire<'k>(&self, key: &'k [u8]) -> Result<Cow<'k, [u8]>> {
        if self.sent_as_is(key) {
            return Ok(Cow::Borrowed(key));
        }
        self.wire_slow(key)
    }

    /// Whether `key` is sent as it is: [`KeyRules::wire`] borrows it, valid and unchanged.
    #[inline]
    pub(crate) fn sent_as_is(&self, key: &[u8]) -> bool {
        self.prefix.is_empty() && proto::sendable(key)
    }

    /// [`KeyRules::wire`] with a prefix, a key to shorten, or a key refused.
    #[inline(never)]
    fn wire_slow<'k>(&self, key: &'k [u8]) -> Result<Cow<'k, [u8]>> {
        let mut wire: Cow<'k, [u8]> = if self.prefix.is_empty() {
            Cow::Borrowed(key)
        } else {
            Cow::Owned([&self.prefix[..], key].concat())
        };
        if self.shorten_long && wire.len() > KEY_MAX {
            wire = Cow::Owned(shortened(&wire));
        }
        proto::validate_key(&wire).map_err(|e| Error::invalid_key(key, e))?;
        Ok(wire)
    }

    /// Whether placement hashes each key as given (not as sent, with the prefix).
    pub(crate) fn hashes_key(&self) -> bool {
        !self.hash_with_prefix
    }

    /// What placement hashes for `key`, given its wire form.
    pub(crate) fn hashed<'a>(&self, key: &'a [u8], wire: &'a [u8]) -> &'a [u8] {
        if self.hash_with_prefix { wire } else { key }
    }

    /// What placement hashes for a key as sent (a server's dump lists keys so); `None` for
    /// one without the prefix: not this client's.
    pub(crate) fn hashed_of_wire<'a>(&self, wire: &'a [u8]) -> Option<&'a [u8]> {
        let key = wire.strip_prefix(&self.prefix[..])?;
        Some(if self.hash_with_prefix { wire } else { key })
    }

    /// What placement hashes for `key`, without validating it.
    pub(crate) fn hashed_owned<'k>(&self, key: &'k [u8]) -> Cow<'k, [u8]> {
        if self.hash_with_prefix {
            Cow::Owned([&self.prefix[..], key].concat())
        } else {
            Cow::Borrowed(key)
        }
    }

    /// `Err(ValueTooLarge)` for a value over the configured item size; nothing is sent.
    pub(crate) fn check_value(&self, value: &[u8]) -> Result<()> {
        if value.len() > self.max_value {
            return Err(Error::ValueTooLarge {
                len: value.len(),
                limit: self.max_value,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(hash_with_prefix: bool) -> KeyRules {
        KeyRules {
            prefix: b"app:".to_vec(),
            hash_with_prefix,
            shorten_long: false,
            max_value: 4,
        }
    }

    #[test]
    fn placement_hashes_the_prefix_only_when_asked() {
        let (plain, with) = (rules(false), rules(true));
        assert_eq!(&*plain.wire(b"k").unwrap(), b"app:k");
        assert_eq!(plain.hashed(b"k", b"app:k"), b"k");
        assert_eq!(with.hashed(b"k", b"app:k"), b"app:k");
        assert_eq!(&*plain.hashed_owned(b"k"), b"k");
        assert_eq!(&*with.hashed_owned(b"k"), b"app:k");
        assert!(plain.wire(b"a key").is_err());
    }

    #[test]
    fn a_value_of_exactly_the_item_size_is_sent() {
        let r = rules(false);
        assert!(r.check_value(b"four").is_ok());
        assert!(matches!(
            r.check_value(b"fives"),
            Err(Error::ValueTooLarge { len: 5, limit: 4 })
        ));
    }

    /// A long key is sent shortened only when asked, as dalli sends an ASCII one (its
    /// 212-character head, `:md5:`, the md5 hex of the whole key), never cut inside a
    /// character; a key that fits is sent as it is.
    #[test]
    fn long_keys_are_shortened_only_when_asked() {
        let mut r = rules(false);
        let long = "k".repeat(300);
        assert!(matches!(
            r.wire(long.as_bytes()),
            Err(Error::InvalidKey {
                reason: proto::KeyError::TooLong(304),
                ..
            })
        ));
        r.shorten_long = true;
        let sent = r.wire(long.as_bytes()).expect("shortened");
        let whole = format!("app:{long}");
        let digest: String = crate::ring::hash::md5(whole.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(&*sent, format!("{}:md5:{digest}", &whole[..212]).as_bytes());
        assert_eq!(sent.len(), 249);
        assert_eq!(&*r.wire(b"short").expect("fits"), b"app:short");
        let fits = "k".repeat(246);
        assert_eq!(r.wire(fits.as_bytes()).expect("250 bytes").len(), 250);
        // 'é' is 2 bytes: byte 212 falls inside a character, so the head stops before it
        let accented = format!("{}{}", "a".repeat(207), "é".repeat(100));
        let sent = r.wire(accented.as_bytes()).expect("shortened");
        let head = sent.split(|&b| b == b':').nth(1).expect("after the prefix");
        assert!(
            std::str::from_utf8(&sent[..sent.len() - 37]).is_ok(),
            "{head:?}"
        );
        assert_eq!(sent.len() - 37, 211);
    }
}
