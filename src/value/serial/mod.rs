//! The serialization formats peers use for values that are not text or numbers, decoded into
//! [`Value`](super::Value) and encoded from it for the JSON-like subset (null, bool, int, big
//! int, float, text, bytes, list, map).
//!
//! Each decoder reads the whole payload and gives one of three outcomes ([`Outcome`]):
//! - `Ok(Some(value))`: a valid payload inside the subset;
//! - `Ok(None)`: a **valid** payload holding something the subset has no value for (an object,
//!   a class instance, a set, a reference graph...): the peer's module returns it as
//!   [`Value::Foreign`](super::Value::Foreign) with the bytes, never a guess;
//! - `Err(`[`Bad`]`)`: not a valid payload of the format (truncated, an unknown tag, a
//!   reference to nothing, bytes after the value), or one beyond a documented limit (nesting,
//!   reference expansion, a declared length over the maximum value size): the peer's module
//!   returns [`ValueError::Malformed`] or [`ValueError::TooLarge`].
//!
//! No decoder allocates from a declared length before checking it against the input left and
//! the maximum value size ([`declared`]), and none recurses deeper than its documented limit.
//!
//! | module | format | peers |
//! |---|---|---|
//! | `marshal` | Ruby `Marshal` 4.8 | dalli (default serializer) |
//! | `pickle` | Python pickle | pylibmc (flags 1) |
//! | `phpser` | PHP `serialize()` | php-memcached (type 4) |
//! | `msgpack` | MessagePack | php-memcached (type 7, read only) |

pub(super) mod marshal;
pub(super) mod msgpack;
pub(super) mod phpser;
pub(super) mod pickle;

use super::{Codec, Encoding, Value, ValueError};

/// Why serialized bytes are not a value of their format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bad {
    /// Not a valid payload, or beyond a documented limit: what and where.
    Malformed(String),
    /// A declared length, in bytes (at least), beyond the maximum value size.
    TooLarge(u64),
}

/// A decoder's answer: a value, valid but outside the subset (`Ok(None)`), or [`Bad`].
pub(crate) type Outcome = Result<Option<Value>, Bad>;

/// `Malformed` with a formatted detail.
pub(crate) fn malformed(detail: impl Into<String>) -> Bad {
    Bad::Malformed(detail.into())
}

/// A declared count of `n` units of at least `per` bytes each (`what` at byte `at`), with `left`
/// bytes of input left:
/// [`Bad::TooLarge`] when `n × per` is over `max` (the maximum value size), `Malformed` when it
/// is over what is left, else `n`.
pub(crate) fn declared(
    n: u64,
    per: u64,
    left: usize,
    max: usize,
    what: &str,
    at: usize,
) -> Result<usize, Bad> {
    let size = n.saturating_mul(per);
    if size > max as u64 {
        return Err(Bad::TooLarge(size));
    }
    if size > left as u64 {
        return Err(malformed(format!(
            "{what} at byte {at} declares {n}, more than the {left} bytes left"
        )));
    }
    Ok(n as usize)
}

/// The peer's answer for an outcome: the value, `Foreign` with the bytes, or the typed error.
pub(crate) fn finish(
    outcome: Outcome,
    codec: Codec,
    flags: u32,
    max: usize,
    encoding: Encoding,
    bytes: Vec<u8>,
) -> Result<Value, ValueError> {
    match outcome {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Ok(Value::Foreign { encoding, bytes }),
        Err(Bad::TooLarge(size)) => Err(ValueError::TooLarge { size, max }),
        Err(Bad::Malformed(detail)) => Err(ValueError::Malformed {
            codec,
            flags,
            detail: format!("{encoding}: {detail}"),
        }),
    }
}
