//! php-memcached 3.2.0: flags = type (bits 0-3) | internal (bits 4-15) | user flags (bits 16-31)
//! (`php_memcached.c:91-93`); rules verified in `value-vectors/README.md`, "php-memcached 3.2.0:
//! verified rules" and "Reading" (`s_memcached_result_to_zval`, `:3716-3788`;
//! `s_decompress_value`, `:3604-3649`).
//!
//! | type | stored as | decoded as |
//! |---|---|---|
//! | 0 string | bytes as is | `String` if UTF-8, else `Bytes` |
//! | 1 long | decimal ASCII (`smart_str_append_long`, `:1035-1045`) | `Int`; anything but an optional sign and digits is `Malformed` (PHP: `strtol`, junk → 0) |
//! | 2 double | `php_memcached_g_fmt` (`g_fmt.c`): `.5`, `1e+06`, `-0`, `Infinity`, `-Infinity`, `NaN` | `Float`; `inf`, `nan`, `INF` are `Malformed` (PHP: 0.0) |
//! | 3 bool | `1` / empty (`:1057-1067`) | `Bool`: true iff the first byte is `1`, as PHP reads it |
//! | 4 serialize, 5 igbinary, 7 msgpack | the serializer's bytes | `Foreign` |
//! | 6 JSON (`json` and `json_array`) | `json_encode` | `Json` / a scalar; broken JSON is `Malformed` (PHP: null) |
//! | 8-15 | — | `Unknown` (PHP: "unknown payload type") |
//!
//! Internal bits (`:107-114`): 0x10 compressed, 0x20 zlib, 0x40 FastLZ; a compressed payload is
//! a 4-byte little-endian length then the block (`:925-929`). With both methods set FastLZ is
//! tried first, as PHP does. 0x10 without a method is `Malformed` (PHP: "unrecognised
//! compression type"); 0x20/0x40 without 0x10 are ignored (PHP does not decompress). zstd
//! (0x80 with 0x10, php-memcached 3.3 only) is not supported here: `Unknown`. Other internal
//! bits and the user flags (bits 16-31, `OPT_USER_FLAGS`) are ignored, as by PHP; the caller
//! still has them in `flags`.

use super::compress::{self, Compression};
use super::{Codec, Encoding, Value, ValueError, json, malformed, text_or_bytes, unknown};

const TYPE_MASK: u32 = 0xf;
const COMPRESSED: u32 = 0x10;
const ZLIB: u32 = 0x20;
const FASTLZ: u32 = 0x40;
const ZSTD: u32 = 0x80;

pub(super) fn decode(flags: u32, payload: &[u8], max: usize) -> Result<Value, ValueError> {
    let ty = flags & TYPE_MASK;
    if ty > 7 {
        return Ok(unknown(flags, payload));
    }
    let data = if flags & COMPRESSED != 0 {
        if flags & FASTLZ != 0 {
            let (len, block) = compress::php_prefix(Compression::FastLz, payload, max)?;
            compress::fastlz(block, len)?
        } else if flags & ZLIB != 0 {
            let (len, block) = compress::php_prefix(Compression::Zlib, payload, max)?;
            let out = compress::zlib(block, max)?;
            // PHP: a prefix smaller than the real length fails ("could not decompress value"),
            // a larger one is accepted (uncompress sets the length).
            if out.len() > len {
                return Err(ValueError::Decompress {
                    method: Compression::Zlib,
                    detail: format!("length prefix says {len} bytes, the stream holds more"),
                });
            }
            out
        } else if flags & ZSTD != 0 {
            return Ok(unknown(flags, payload));
        } else {
            return Err(malformed(
                Codec::PhpMemcached,
                flags,
                "compressed (0x10) without a compression method",
            ));
        }
    } else {
        payload.to_vec()
    };
    let bad = |what: &str| malformed(Codec::PhpMemcached, flags, what);
    Ok(match ty {
        0 => text_or_bytes(data),
        1 => Value::Int(
            std::str::from_utf8(&data)
                .ok()
                .filter(|s| !s.starts_with('+'))
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| bad("a long that is not a decimal integer"))?,
        ),
        2 => Value::Float(double(&data).ok_or_else(|| bad("a double that is not a number"))?),
        3 => Value::Bool(data.first() == Some(&b'1')),
        4 => foreign(Encoding::PhpSerialize, data),
        5 => foreign(Encoding::Igbinary, data),
        6 => json(&data).map_err(|e| bad(&format!("broken JSON: {e}")))?,
        _ => foreign(Encoding::Msgpack, data),
    })
}

fn foreign(encoding: Encoding, bytes: Vec<u8>) -> Value {
    Value::Foreign { encoding, bytes }
}

/// A double as `php_memcached_g_fmt` writes it: the three words exactly (`:3760`), else a
/// decimal number with an optional exponent. Words Rust would accept but `zend_strtod` does not
/// (`inf`, `nan`, `infinity`) are refused.
fn double(data: &[u8]) -> Option<f64> {
    match data {
        b"Infinity" => return Some(f64::INFINITY),
        b"-Infinity" => return Some(f64::NEG_INFINITY),
        b"NaN" => return Some(f64::NAN),
        _ => {}
    }
    if !data
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        return None;
    }
    std::str::from_utf8(data).ok()?.parse::<f64>().ok()
}

pub(super) fn encode(
    value: &Value,
    _options: &super::PhpOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    Err(super::unsupported(
        Codec::PhpMemcached,
        value,
        "not written yet",
    ))
}
