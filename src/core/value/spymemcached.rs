//! spymemcached 2.12.3 `SerializingTranscoder`: 0x1 Java-serialized, 0x2 gzip, bits 8-15 a
//! special type; verified in `value-vectors/README-spymemcached.md` (sources under
//! `src/main/java/net/spy/memcached/transcoders/`: `SerializingTranscoder.java:41-177`,
//! `BaseSerializingTranscoder.java:95-226`, `TranscoderUtils.java:42-106`).
//!
//! | special (flags & 0xff00) | stored as | decoded as |
//! |---|---|---|
//! | 0 String | UTF-8 | `String` if UTF-8, else `Bytes` (Java would put U+FFFD in) |
//! | 0x100 Boolean | `1` / `0` | `Bool`: true only for `1`; empty is `Malformed` (Java throws) |
//! | 0x200 Integer | big-endian, leading zero bytes stripped | `Int`, zero-extended then the low 32 bits as `i32`, as Java reads it (`d6` → 214) |
//! | 0x300 Long, 0x400 Date | the same, 64 bits (Date = epoch milliseconds) | `Int` |
//! | 0x500 Byte | one byte | `Int` (signed); not one byte is `Malformed` |
//! | 0x600 Float, 0x700 Double | raw IEEE bits, stripped like Long (0.0 is empty) | `Float` |
//! | 0x800 byte[] | as is | `Bytes` |
//! | other | — | `Unknown` (spymemcached: null) |
//! | 0x1 | Java serialization (`ac ed 00 05`): Short, Character, BigInteger, collections, … | `Foreign` (`java-serialized`) |
//!
//! 0x2 (gzip, any type) is inflated first (capped). Bits outside 0xff03 (spymemcached ignores
//! them) come back `Unknown`.

use super::compress;
use super::{Codec, Encoding, Value, ValueError, malformed, text_or_bytes, unknown};

const SERIALIZED: u32 = 0x1;
const COMPRESSED: u32 = 0x2;
const SPECIAL_MASK: u32 = 0xff00;

pub(super) fn decode(flags: u32, payload: &[u8], max: usize) -> Result<Value, ValueError> {
    if flags & !(SPECIAL_MASK | SERIALIZED | COMPRESSED) != 0 {
        return Ok(unknown(flags, payload));
    }
    let special = flags & SPECIAL_MASK;
    if flags & SERIALIZED == 0 && special > 0x800 {
        return Ok(unknown(flags, payload));
    }
    let data = if flags & COMPRESSED != 0 {
        compress::gzip(payload, max)?
    } else {
        payload.to_vec()
    };
    if flags & SERIALIZED != 0 {
        return Ok(Value::Foreign {
            encoding: Encoding::JavaSerialized,
            bytes: data,
        });
    }
    let bad = |what: &str| malformed(Codec::Spymemcached, flags, what);
    Ok(match special {
        0 => text_or_bytes(data),
        0x100 => match data.first() {
            Some(&b) => Value::Bool(b == b'1'),
            None => return Err(bad("empty Boolean")),
        },
        0x200 => Value::Int(i64::from(long(&data) as u32 as i32)),
        0x300 | 0x400 => Value::Int(long(&data) as i64),
        0x500 => match data.as_slice() {
            &[b] => Value::Int(i64::from(b as i8)),
            _ => return Err(bad("a Byte that is not one byte")),
        },
        0x600 => Value::Float(f64::from(f32::from_bits(long(&data) as u32))),
        0x700 => Value::Float(f64::from_bits(long(&data))),
        _ => Value::Bytes(data),
    })
}

/// `TranscoderUtils.decodeLong`: bytes shifted in unsigned (zero-extended); more than eight keep
/// the low 64 bits, as Java's shifts do.
fn long(data: &[u8]) -> u64 {
    data.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

pub(super) fn encode(
    value: &Value,
    _options: &super::SpymemcachedOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    Err(super::unsupported(
        Codec::Spymemcached,
        value,
        "not written yet",
    ))
}
