//! MessagePack as php-memcached's msgpack serializer (type 7, the `msgpack` extension 2.x)
//! writes it, read with `rmpv` (`value-vectors/CRATES.md` section 7).
//!
//! A top-level scalar is its typed variant (nil → `Null`, an integer → `Int`, or `BigInt` above
//! `i64::MAX`, str → `String`, or `Bytes` when not UTF-8, bin → `Bytes`); an array or map is
//! [`Value::Msgpack`] holding it as JSON. PHP arrays that are not lists are maps with integer
//! keys: those keys become decimal text. PHP's msgpack writes a `stdClass` object as a map whose
//! **nil key holds the class name** (`83 c0 a8 "stdClass" …` in `object-msgpack`): that entry is
//! dropped, leaving the properties. `None` (the caller keeps the bytes as
//! [`Value::Foreign`](crate::value::Value::Foreign)) for anything JSON cannot hold inside an
//! array or map: bin, ext, a str that is not UTF-8, a float that is not finite, a key that is not
//! a str or an integer, a nil key holding anything but `"stdClass"` (another class, or msgpack's
//! reference and custom-serializer markers, which hold integers), and for bytes after the value
//! or nesting deeper than [`MAX_DEPTH`].
//!
//! `rmpv` reads the reserved marker `0xc1` as nil; no PHP writer produces it.

use rmpv::Value as M;
use serde_json::Value as J;

use super::phpser::MAX_DEPTH;
use crate::value::Value;

/// The value, or `None` when the bytes are not one MessagePack value.
pub(crate) fn decode(bytes: &[u8]) -> Option<Value> {
    let mut rest = bytes;
    let v = rmpv::decode::read_value_with_max_depth(&mut rest, MAX_DEPTH).ok()?;
    if !rest.is_empty() {
        return None;
    }
    Some(match v {
        M::Nil => Value::Null,
        M::Boolean(b) => Value::Bool(b),
        M::Integer(i) => match i.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::BigInt(i.as_u64()?.to_string()),
        },
        M::F32(f) => Value::Float(f64::from(f)),
        M::F64(f) => Value::Float(f),
        M::String(s) => crate::value::text_or_bytes(s.into_bytes()),
        M::Binary(b) => Value::Bytes(b),
        M::Ext(..) => return None,
        container @ (M::Array(_) | M::Map(_)) => Value::Msgpack(to_json(container)?),
    })
}

fn to_json(v: M) -> Option<J> {
    Some(match v {
        M::Nil => J::Null,
        M::Boolean(b) => J::Bool(b),
        M::Integer(i) => match i.as_i64() {
            Some(i) => J::from(i),
            None => J::from(i.as_u64()?),
        },
        M::F32(f) => J::Number(serde_json::Number::from_f64(f64::from(f))?),
        M::F64(f) => J::Number(serde_json::Number::from_f64(f)?),
        M::String(s) => J::String(s.into_str()?),
        M::Array(items) => J::Array(items.into_iter().map(to_json).collect::<Option<_>>()?),
        M::Map(entries) => {
            let mut map = serde_json::Map::new();
            for (k, v) in entries {
                let key = match k {
                    M::String(s) => s.into_str()?,
                    M::Integer(i) => i.to_string(),
                    // msgpack-php's object header: `nil => class name`.
                    M::Nil if v.as_str() == Some("stdClass") => continue,
                    _ => return None,
                };
                map.insert(key, to_json(v)?);
            }
            J::Object(map)
        }
        M::Binary(_) | M::Ext(..) => return None,
    })
}
