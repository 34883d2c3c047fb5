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

/// `SerializingTranscoder.encode` (ST `:129-177`): the special type of the value's Java class,
/// then gzip when the bytes are longer than `compression_threshold` and gzip makes them smaller.
///
/// | value | Java class it stands for | flags | payload |
/// |---|---|---|---|
/// | `String` | `String` | 0 | UTF-8 |
/// | `Bool` | `Boolean` | 0x100 | `1` / `0` |
/// | `Int` in `i32` range | `Integer` | 0x200 | big-endian, leading zero bytes stripped |
/// | `Int` beyond `i32` | `Long` | 0x300 | the same, 64 bits |
/// | `Float` | `Double` | 0x700 | `doubleToRawLongBits`, stripped (0.0 is empty) |
/// | `Bytes` | `byte[]` | 0x800 | as is |
/// | `Foreign` (`java-serialized`) | any `Serializable` | 0x1 | as is |
///
/// `Value::Int` does not say whether a Java program held an `int` or a `long`; the rule is by
/// range, so a Java reader gets an `Integer` for what fits in 32 bits (what `set(k, 0, 42)`
/// stores, autoboxed) and a `Long` beyond (what `set(k, 0, 4294967296L)` stores). A Java reader
/// that casts a small value stored here to `Long` gets a `ClassCastException`. `Value::Float` is a
/// Java `Double`, never a `Float`.
///
/// Not storable: null (spymemcached throws `NullPointerException("Can't serialize null")`,
/// BST `:96-98`); big integers, lists and maps, which spymemcached stores only as Java
/// serialization (0x1, a `BigInteger` or an `ArrayList`), which memshard does not write.
///
/// A `String` that `StringUtils.isJsonObject` calls JSON (starts with `{` or `[`, is `true`,
/// `false` or `null`, or matches `^-?\d+$`, `StringUtils.java:102-114`) is returned before the
/// compression step (ST `:132-136`): never compressed, however long.
pub(super) fn encode(
    value: &Value,
    options: &super::SpymemcachedOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    let unsupported = |why: String| Err(super::unsupported(Codec::Spymemcached, value, why));
    let (flags, data) = match value {
        Value::String(s) if json_looking(s) => return Ok((0, s.as_bytes().to_vec())),
        Value::String(s) => (0, s.as_bytes().to_vec()),
        Value::Bool(b) => (0x100, vec![if *b { b'1' } else { b'0' }]),
        Value::Int(i) => match i32::try_from(*i) {
            Ok(small) => (0x200, stripped(&small.to_be_bytes())),
            Err(_) => (0x300, stripped(&i.to_be_bytes())),
        },
        Value::Float(f) => (0x700, stripped(&f.to_bits().to_be_bytes())),
        Value::Bytes(b) => (0x800, b.clone()),
        Value::Foreign {
            encoding: Encoding::JavaSerialized,
            bytes,
        } => (SERIALIZED, bytes.clone()),
        Value::Null => {
            return unsupported(
                "spymemcached throws NullPointerException for null; store a marker string or delete the key"
                    .into(),
            );
        }
        Value::BigInt(_) | Value::Json(_) | Value::Msgpack(_) => {
            return unsupported(
                "spymemcached stores it only as Java serialization (flags 1), which memshard does not write; store it as a JSON string"
                    .into(),
            );
        }
        Value::Foreign { encoding, .. } => {
            return unsupported(format!(
                "flags 1 holds Java serialization; a Java reader cannot read {encoding}"
            ));
        }
        Value::Unknown { .. } => {
            return unsupported(
                "its flags are not spymemcached's; copy it with the raw codec".into(),
            );
        }
    };
    if data.len() > options.compression_threshold
        && let Some(packed) = gzip(&data)
        && packed.len() < data.len()
    {
        return Ok((flags | COMPRESSED, packed));
    }
    Ok((flags, data))
}

/// `StringUtils.isJsonObject` (2.12.3, `StringUtils.java:102-114`). Java's `\d` without
/// `UNICODE_CHARACTER_CLASS` is ASCII digits, and `Matcher.matches` needs the whole string, so a
/// trailing newline does not match.
pub(super) fn json_looking(s: &str) -> bool {
    if s.starts_with('{') || s.starts_with('[') || matches!(s, "true" | "false" | "null") {
        return true;
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `TranscoderUtils.encodeNum` with `packZeros` (TU `:42-77`; ST builds its `TranscoderUtils`
/// with `true`, ST `:51`): big-endian, leading zero bytes dropped, so 0 is empty and a negative
/// number keeps all its bytes.
fn stripped(be: &[u8]) -> Vec<u8> {
    let first = be.iter().position(|&b| b != 0).unwrap_or(be.len());
    be[first..].to_vec()
}

/// `BaseSerializingTranscoder.compress` writes through `java.util.zip.GZIPOutputStream` (BST
/// `:149-167`). The header (JDK 17 writes OS 255) and the deflate blocks may differ from
/// flate2's; spymemcached only inflates, so a Java reader gets the same bytes.
/// Writing into a `Vec` does not fail; if it did, the value is stored uncompressed.
fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).ok()?;
    e.finish().ok()
}
