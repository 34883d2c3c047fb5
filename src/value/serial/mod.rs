//! The serialization formats peers use for values that are not text or numbers, decoded into
//! [`Value`](super::Value) and encoded from it for the JSON-like subset (null, bool, int, big
//! int, float, text, bytes, list, map). Anything outside the subset decodes to `None`, which the
//! peer's module returns as [`Value::Foreign`](super::Value::Foreign) with the bytes, never a
//! guess.
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
