//! php-memcached 3.2.0: flags = type (bits 0-3) | internal (bits 4-15) | user flags (bits 16-31)
//! (`php_memcached.c:91-93`); rules verified in `value-vectors/README.md`, "php-memcached 3.2.0:
//! verified rules" and "Reading" (`s_memcached_result_to_zval`, `:3716-3788`;
//! `s_decompress_value`, `:3604-3649`; writing: `s_zval_to_payload`, `:1022-1103`,
//! `s_compress_value`, `:872-938`).
//!
//! | type | stored as | decoded as |
//! |---|---|---|
//! | 0 string | bytes as is | `String` if UTF-8, else `Bytes` |
//! | 1 long | decimal ASCII (`smart_str_append_long`, `:1035-1045`) | `Int`; anything but an optional sign and digits is `Malformed` (PHP: `strtol`, junk → 0) |
//! | 2 double | `php_memcached_g_fmt` (`g_fmt.c`): `.5`, `1e+06`, `-0`, `Infinity`, `-Infinity`, `NaN` | `Float`; `inf`, `nan`, `INF` are `Malformed` (PHP: 0.0) |
//! | 3 bool | `1` / empty (`:1057-1067`) | `Bool`: true iff the first byte is `1`, as PHP reads it |
//! | 4 serialize | `serialize()` (`serial/phpser.rs`) | null, bool, int, float, text; arrays as `Json` (lists for keys 0..n-1); valid objects (`O:`, `C:`, `E:`), references (`r:`, `R:`), `S:` strings, non-UTF-8 text or non-finite floats inside an array `Foreign`; anything PHP's grammar refuses, an integer beyond 64 bits, bytes after the value, nesting over 512 `Malformed`; a length over the maximum `TooLarge` |
//! | 5 igbinary | — (not written) | `Foreign` |
//! | 6 JSON (`json` and `json_array`) | `json_encode` (`\/`, `\u00e9`, `1.0e+25`) | `Json` / a scalar; broken JSON is `Malformed` (PHP: null) |
//! | 7 msgpack | — (not written) | scalars typed, arrays and maps `Msgpack` (`serial/msgpack.rs`); a valid ext, a class other than `stdClass`, msgpack-php's reference markers, bin / non-UTF-8 str / non-finite floats inside a container `Foreign`; truncated, `0xc1`, bytes after the value, nesting over 256 `Malformed`; a length over the maximum `TooLarge` |
//! | 8-15 | — | `Unknown` (PHP: "unknown payload type") |
//!
//! Internal bits (`:107-114`): 0x10 compressed, 0x20 zlib, 0x40 FastLZ; a compressed payload is
//! a 4-byte little-endian length then the block (`:925-929`). With both methods set FastLZ is
//! tried first, as PHP 3.2 does. 0x10 without a method is `Malformed` (PHP: "unrecognised
//! compression type"); 0x20/0x40 without 0x10 are ignored (PHP does not decompress). zstd
//! (0x80 with 0x10) exists from php-memcached 3.3.0 (`MEMC_VAL_COMPRESSION_ZSTD (1<<3)`, v3.3.0
//! `:116`): the prefix then one zstd frame (`ZSTD_compress`, `:934-947`), which 3.3 refuses
//! without a content size in the frame header and decompresses into exactly the prefix's length
//! (`:3753-3766`); read here with `ruzstd`, the output capped at that length. Other internal
//! bits and the user flags (bits 16-31, `OPT_USER_FLAGS`) are ignored, as by PHP; the caller
//! still has them in `flags`.
//!
//! Writing follows `s_zval_to_payload`: only strings (type 0) and serialized values (4, 6) are
//! compressed, only when `len != 0 && len >= compression_threshold`; the block is kept only when
//! `len > block_len × compression_factor` (equality stays plain, `:918`) and when it fits PHP's
//! buffer of `len × 1.05 + 1` bytes (`:880`). FastLZ is level 1 below 65,536 bytes and level 2
//! from there (`fastlz.c:130-152`, `fastlz_rs::CompressionLevel::Default` does the same); zlib
//! is `compress()`, level 6 (`:903`). The blocks are valid for PHP's decoders but not
//! byte-identical to the C libraries' (CRATES.md sections 1 and 2), so at the factor's edge the
//! decision can differ from PHP's for the same value — it is taken on our block by PHP's rule.

use std::io::{Read, Write};

use super::compress::{self, Compression};
use super::php_float::g_fmt;
use super::serial::{self, msgpack, phpser};
use super::{
    Codec, Encoding, PhpCompression, PhpOptions, PhpSerializer, Value, ValueError, json, malformed,
    text_or_bytes, unknown, unsupported,
};

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
            zstd(payload, max)?
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
        4 => {
            let outcome = phpser::decode(&data, max);
            serial::finish(
                outcome,
                Codec::PhpMemcached,
                flags,
                max,
                Encoding::PhpSerialize,
                data,
            )?
        }
        5 => foreign(Encoding::Igbinary, data),
        6 => json(&data).map_err(|e| bad(&format!("broken JSON: {e}")))?,
        _ => {
            let outcome = msgpack::decode(&data, max);
            serial::finish(
                outcome,
                Codec::PhpMemcached,
                flags,
                max,
                Encoding::Msgpack,
                data,
            )?
        }
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

/// A zstd frame after php-memcached 3.3's prefix: the prefix (already checked against `max`) is
/// the exact output length, and the frame must say its content size, as 3.3 requires.
fn zstd(payload: &[u8], max: usize) -> Result<Vec<u8>, ValueError> {
    let bad = |detail: String| ValueError::Decompress {
        method: Compression::Zstd,
        detail,
    };
    if payload.len() < 4 {
        return Err(bad("shorter than the 4-byte length prefix".into()));
    }
    let (len, frame) = compress::php_prefix(Compression::Zstd, payload, max)?;
    // Frame header: magic, then the descriptor; no content size when its size flag (bits 6-7)
    // is 0 and the single-segment bit (5) is clear (RFC 8878, 3.1.1.1.1).
    match frame {
        [0x28, 0xb5, 0x2f, 0xfd, descriptor, ..] => {
            if descriptor >> 6 == 0 && descriptor & 0x20 == 0 {
                return Err(bad(
                    "zstd frame without a content size (php-memcached 3.3 refuses it)".into(),
                ));
            }
        }
        _ => return Err(bad("not a zstd frame".into())),
    }
    let mut source = frame;
    // The decoder reserves the frame's window up front: no more than the value needs (libzstd's
    // one-shot `ZSTD_compress` sizes the window to the input), with room for small values.
    let window = (len as u64).saturating_mul(2).max(1 << 20);
    let mut decoder =
        ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut source, window)
            .map_err(|e| bad(format!("{e}")))?;
    let mut out = Vec::new();
    (&mut decoder)
        .take(len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(format!("{e}")))?;
    // PHP 3.3 decompresses into exactly `len` bytes: more fails, fewer leaves the tail
    // uninitialised (as its FastLZ path does); both are refused.
    if out.len() != len {
        let held = if out.len() > len {
            "more".to_owned()
        } else {
            out.len().to_string()
        };
        return Err(bad(format!(
            "zstd: length prefix says {len} bytes, the frame holds {held}"
        )));
    }
    let frame_decoder = decoder.into_frame_decoder();
    if let (Some(stored), Some(computed)) = (
        frame_decoder.get_checksum_from_data(),
        frame_decoder.get_calculated_checksum(),
    ) && stored != computed
    {
        return Err(bad("content checksum mismatch".into()));
    }
    if !source.is_empty() {
        return Err(bad("data after the frame".into()));
    }
    Ok(out)
}

const TYPE_STRING: u32 = 0;
const TYPE_LONG: u32 = 1;
const TYPE_DOUBLE: u32 = 2;
const TYPE_BOOL: u32 = 3;
const TYPE_SERIALIZED: u32 = 4;
const TYPE_JSON: u32 = 6;

pub(super) fn encode(
    value: &Value,
    options: &PhpOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    if let Value::Unknown { flags, bytes } = value {
        // Flags the caller chose: stored as given, without user flags or compression.
        return Ok((*flags, bytes.clone()));
    }
    let (ty, payload) = typed(value, options)?;
    // `s_zval_to_payload` turns compression off for longs, doubles and bools, and for empty
    // payloads.
    let compressible = matches!(ty, TYPE_STRING | TYPE_SERIALIZED | TYPE_JSON);
    let (flags, payload) = if compressible && options.compression && !payload.is_empty() {
        compress_value(ty, payload, options)
    } else {
        (ty, payload)
    };
    Ok((flags | user_flags(options), payload))
}

fn user_flags(options: &PhpOptions) -> u32 {
    u32::from(options.user_flags) << 16
}

/// Type and payload of an int, float or bool.
fn scalar(value: &Value) -> (u32, Vec<u8>) {
    match value {
        Value::Int(i) => (TYPE_LONG, i.to_string().into_bytes()),
        Value::Float(f) => (TYPE_DOUBLE, g_fmt(*f).into_bytes()),
        Value::Bool(true) => (TYPE_BOOL, b"1".to_vec()),
        _ => (TYPE_BOOL, Vec::new()),
    }
}

/// Type and payload of a value, as `s_zval_to_payload` makes them before compression; JSON
/// scalars are the PHP scalars they are.
fn typed(value: &Value, options: &PhpOptions) -> Result<(u32, Vec<u8>), ValueError> {
    use serde_json::Value as J;
    let refuse = |detail: String| unsupported(Codec::PhpMemcached, value, detail);
    Ok(match value {
        Value::String(s) => (TYPE_STRING, s.as_bytes().to_vec()),
        Value::Bytes(b) => (TYPE_STRING, b.clone()),
        Value::BigInt(_) => {
            return Err(refuse(
                "PHP integers are 64-bit; store the digits as a String (PHP reads a string)".into(),
            ));
        }
        Value::Json(J::Bool(b)) => scalar(&Value::Bool(*b)),
        Value::Json(J::Number(n)) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => scalar(&Value::Int(i)),
            _ if n.is_u64() => {
                return Err(refuse(format!(
                    "{n} is beyond PHP's 64-bit integers; store the digits as a String"
                )));
            }
            (None, Some(f)) => scalar(&Value::Float(f)),
            (None, None) => return Err(refuse(format!("{n} is not a PHP number"))),
        },
        Value::Json(J::String(s)) => (TYPE_STRING, s.as_bytes().to_vec()),
        Value::Null | Value::Json(_) => match options.serializer {
            PhpSerializer::Php => (TYPE_SERIALIZED, phpser::encode(value).map_err(&refuse)?),
            PhpSerializer::Json | PhpSerializer::JsonArray => {
                let mut out = Vec::new();
                match value {
                    Value::Json(j) => json_encode(&mut out, j, 0).map_err(&refuse)?,
                    _ => out.extend_from_slice(b"null"),
                }
                (TYPE_JSON, out)
            }
        },
        Value::Foreign {
            encoding: Encoding::PhpSerialize,
            bytes,
        } => (TYPE_SERIALIZED, bytes.clone()),
        Value::Foreign { encoding, .. } => {
            return Err(refuse(format!(
                "{encoding} bytes are not written here; decode them to a value, or store the bytes as Bytes"
            )));
        }
        Value::Msgpack(_) => {
            return Err(refuse(
                "php-memcached's msgpack serializer is read, not written; store the value as \
                 Json (PHP serialize or JSON)"
                    .into(),
            ));
        }
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => scalar(value),
        // Stored as given by `encode` before it gets here.
        Value::Unknown { flags, bytes } => (*flags, bytes.clone()),
    })
}

/// `s_compress_value` for a string or serialized payload of type `ty`: the flags and the payload
/// to store, compressed (prefix + block) or as it was.
fn compress_value(ty: u32, payload: Vec<u8>, options: &PhpOptions) -> (u32, Vec<u8>) {
    if payload.len() < options.compression_threshold {
        return (ty, payload);
    }
    let (method, block) = match options.compression_type {
        PhpCompression::FastLz => (FASTLZ, fastlz_block(&payload)),
        PhpCompression::Zlib => (ZLIB, zlib_block(&payload)),
    };
    // PHP compresses into `len × 1.05 + 1` bytes (`:880`); a block that needs more fails there.
    let room = (payload.len() as f64 * 1.05 + 1.0) as usize;
    let Some(block) = block.filter(|b| b.len() <= room) else {
        return (ty, payload);
    };
    if payload.len() as f64 <= block.len() as f64 * options.compression_factor {
        return (ty, payload);
    }
    // `len >= threshold` of a payload held in memory; php-memcached stores it as a uint32_t.
    let Ok(len) = u32::try_from(payload.len()) else {
        return (ty, payload);
    };
    let mut out = Vec::with_capacity(4 + block.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&block);
    (ty | COMPRESSED | method, out)
}

/// FastLZ as PHP's `fastlz_compress` picks the level: 1 below 64 KiB, 2 from there.
pub(super) fn fastlz_block(plain: &[u8]) -> Option<Vec<u8>> {
    let mut state = Box::new(fastlz_rs::CompressState::new());
    // FastLZ's worst case is about 1/32 larger than the input (a literal run marker every 32
    // bytes); anything larger than PHP's buffer is dropped by the caller anyway.
    let mut block = vec![0u8; plain.len() + plain.len() / 16 + 16];
    let n = state
        .compress_to_buf(plain, &mut block, fastlz_rs::CompressionLevel::Default)
        .ok()?;
    block.truncate(n);
    Some(block)
}

/// zlib's `compress()`: a zlib stream at level 6.
pub(super) fn zlib_block(plain: &[u8]) -> Option<Vec<u8>> {
    let mut e = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(plain.len() / 2),
        flate2::Compression::new(6),
    );
    e.write_all(plain).ok()?;
    e.finish().ok()
}

/// `json_encode($value)` with no options, as `s_serialize_value` calls it (`:975`): `/` as
/// `\/`, every non-ASCII character as `\uXXXX` (UTF-16, lowercase hex), control characters as
/// `\b \f \n \r \t` or `\u00XX`, DEL as is; floats as `serialize_precision = -1` spells them
/// with `e` (`2`, `-0`, `1.0e+25`); an empty object stays `{}` (PHP's `stdClass`: a JSON
/// object is written as the object it is, not as the PHP array it could also be). Checked
/// against php-memcached's own output (`testdata/php-extra.json`, `strings-json`, `nested-json`).
fn json_encode(out: &mut Vec<u8>, j: &serde_json::Value, depth: usize) -> Result<(), String> {
    use serde_json::Value as J;
    if depth > phpser::MAX_DEPTH {
        return Err(format!("nested deeper than {} levels", phpser::MAX_DEPTH));
    }
    match j {
        J::Null => out.extend_from_slice(b"null"),
        J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.extend_from_slice(i.to_string().as_bytes());
            } else if n.is_u64() {
                return Err(format!(
                    "{n} is beyond PHP's 64-bit integers; store it as a string"
                ));
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                out.extend_from_slice(super::php_float::gcvt(f, 'e').as_bytes());
            }
        }
        J::String(s) => json_string(out, s),
        J::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_encode(out, item, depth + 1)?;
            }
            out.push(b']');
        }
        J::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(out, k);
                out.push(b':');
                json_encode(out, v, depth + 1)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '/' => out.extend_from_slice(b"\\/"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            ' '..='\u{7f}' => out.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
            }
        }
    }
    out.push(b'"');
}
