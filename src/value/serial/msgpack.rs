//! MessagePack as php-memcached's msgpack serializer (type 7, the `msgpack` extension 2.x)
//! writes it, read with `rmpv` (`value-vectors/CRATES.md` section 7).
//!
//! A top-level scalar is its typed variant (nil → `Null`, an integer → `Int`, or `BigInt` above
//! `i64::MAX`, str → `String`, or `Bytes` when not UTF-8, bin → `Bytes`); an array or map is
//! [`Value::Msgpack`] holding it as JSON. PHP arrays that are not lists are maps with integer
//! keys: those keys become decimal text. PHP's msgpack writes a `stdClass` object as a map whose
//! **nil key holds the class name** (`83 c0 a8 "stdClass" …` in `object-msgpack`): that entry is
//! dropped, leaving the properties.
//!
//! Valid but outside the subset (`Ok(None)`, the caller keeps the bytes as
//! [`Value::Foreign`](crate::value::Value::Foreign)): at the top an ext; inside an array or map
//! bin, ext, a str that is not UTF-8, a float that is not finite, a key that is not a str or an
//! integer, a nil key holding anything but `"stdClass"` (another class, or msgpack's reference
//! and custom-serializer markers, which hold integers).
//!
//! Malformed ([`Bad`]), found by [`check`] before `rmpv` reads a byte: a truncated value, the
//! reserved byte `0xc1` (`rmpv` would read it as nil), a declared length or count the input
//! cannot hold (`TooLarge` beyond the maximum value size), arrays and maps nested deeper than
//! [`MAX_DEPTH`], bytes after the value, an empty payload. `rmpv` then only sees a
//! well-formed value of bounded depth, and it allocates no more than the input announces.

use rmpv::Value as M;
use serde_json::Value as J;

use super::{Bad, Outcome, declared, malformed};
use crate::value::Value;

/// Nesting levels of arrays and maps read. rmpv counts two levels of recursion per container
/// (the value and its contents): 256 containers are the 512 levels it was given before, which a
/// debug build's 2 MB thread stack holds.
pub(crate) const MAX_DEPTH: usize = 256;

/// The value; `Ok(None)` when valid but outside the subset.
pub(crate) fn decode(bytes: &[u8], max: usize) -> Outcome {
    check(bytes, max)?;
    let mut rest = bytes;
    // Containers nest at most MAX_DEPTH deep (checked); rmpv also counts its inner reads.
    let v = rmpv::decode::read_value_with_max_depth(&mut rest, 2 * MAX_DEPTH + 8)
        .map_err(|e| malformed(format!("rmpv: {e}")))?;
    Ok(Some(match v {
        M::Nil => Value::Null,
        M::Boolean(b) => Value::Bool(b),
        M::Integer(i) => match i.as_i64() {
            Some(i) => Value::Int(i),
            None => match i.as_u64() {
                Some(u) => Value::BigInt(u.to_string()),
                None => return Ok(None),
            },
        },
        M::F32(f) => Value::Float(f64::from(f)),
        M::F64(f) => Value::Float(f),
        M::String(s) => crate::value::text_or_bytes(s.into_bytes()),
        M::Binary(b) => Value::Bytes(b),
        M::Ext(..) => return Ok(None),
        container @ (M::Array(_) | M::Map(_)) => match to_json(container) {
            Some(j) => Value::Msgpack(j),
            None => return Ok(None),
        },
    }))
}

/// Walks the bytes as one MessagePack value, without allocating more than a stack of
/// [`MAX_DEPTH`] counts: every length against the input left and `max`, the nesting against
/// [`MAX_DEPTH`], nothing after the value.
fn check(b: &[u8], max: usize) -> Result<(), Bad> {
    let mut pos = 0usize;
    // Values still to read in each open array or map.
    let mut open: Vec<u64> = Vec::new();
    let mut pending: u64 = 1;
    let take = |pos: &mut usize, n: usize| -> Result<u64, Bad> {
        let s = b
            .get(*pos..pos.saturating_add(n))
            .ok_or_else(|| malformed(format!("truncated at byte {}", *pos)))?;
        *pos += n;
        Ok(s.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    };
    loop {
        while pending == 0 {
            match open.pop() {
                Some(p) => pending = p,
                None => {
                    return if pos == b.len() {
                        Ok(())
                    } else {
                        Err(malformed(format!(
                            "{} bytes after the value",
                            b.len() - pos
                        )))
                    };
                }
            }
        }
        pending -= 1;
        let at = pos;
        let m = take(&mut pos, 1)? as u8;
        // (bytes that follow, or values that follow for a container)
        let (bytes, values): (u64, u64) = match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, 2 * u64::from(m & 0x0f)),
            0x90..=0x9f => (0, u64::from(m & 0x0f)),
            0xa0..=0xbf => (u64::from(m & 0x1f), 0),
            0xc1 => return Err(malformed(format!("the reserved byte 0xc1 at byte {at}"))),
            0xc4 | 0xd9 => (take(&mut pos, 1)?, 0),
            0xc5 | 0xda => (take(&mut pos, 2)?, 0),
            0xc6 | 0xdb => (take(&mut pos, 4)?, 0),
            0xc7 => (take(&mut pos, 1)? + 1, 0),
            0xc8 => (take(&mut pos, 2)? + 1, 0),
            0xc9 => (take(&mut pos, 4)? + 1, 0),
            0xca => (4, 0),
            0xcb => (8, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xce | 0xd2 => (4, 0),
            0xcf | 0xd3 => (8, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc => (0, take(&mut pos, 2)?),
            0xdd => (0, take(&mut pos, 4)?),
            0xde => (0, 2 * take(&mut pos, 2)?),
            0xdf => (0, 2 * take(&mut pos, 4)?),
        };
        let left = b.len() - pos;
        if bytes > 0 {
            let n = declared(bytes, 1, left, max, "the value", at)?;
            pos += n;
        }
        if values > 0 {
            // Every value takes at least one byte.
            declared(values, 1, left, max, "the container", at)?;
            if open.len() >= MAX_DEPTH {
                return Err(malformed(format!(
                    "arrays and maps nested deeper than {MAX_DEPTH} levels"
                )));
            }
            open.push(pending);
            pending = values;
        }
    }
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
