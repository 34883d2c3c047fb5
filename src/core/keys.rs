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
    pub(crate) max_value: usize,
}

impl KeyRules {
    /// The key as sent: validated, with the prefix in front.
    pub(crate) fn wire<'k>(&self, key: &'k [u8]) -> Result<Cow<'k, [u8]>> {
        let wire: Cow<'k, [u8]> = if self.prefix.is_empty() {
            Cow::Borrowed(key)
        } else {
            Cow::Owned([&self.prefix[..], key].concat())
        };
        proto::validate_key(&wire).map_err(|e| Error::invalid_key(key, e))?;
        Ok(wire)
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
}
