//! pylibmc 1.6.3: flags 1 pickle, 2 "integer" (bool), 4 long, 8 zlib, 16 text
//! (`_pylibmcmodule.h:74-83`); rules verified in `value-vectors/README.md`, "pylibmc 1.6.3:
//! verified rules" (writing `_pylibmcmodule.c:1214-1298`, reading
//! `_PylibMC_deserialize_native`, `:614-654`, inflate `:357-461`).
//!
//! | flags | stored as | decoded as |
//! |---|---|---|
//! | 0 | `bytes` as is | `Bytes` |
//! | 16 | `str` as UTF-8 | `String`; invalid UTF-8 is `Malformed` (pylibmc: UnicodeDecodeError) |
//! | 4 | `str(int)`, any size | `Int`, or `BigInt` beyond 64 bits; Python's `int()` rules (surrounding whitespace, `+`, `_` between digits) |
//! | 2 | a bool as `1` / `0` | `Bool` for `1` / `0` (pylibmc itself reads an int 1 / 0), any other integer `Int` |
//! | 1 | a pickle (protocol 5 by default) | the value (`serial::pickle`: scalars, lists, tuples, str-keyed dicts; shared lists copied); a valid pickle of class instances, globals, sets, Python 2 `str`, recursive structures `Foreign` (`pickle`); empty, truncated, unknown opcodes, a memo `GET` of nothing, bytes after `STOP`, nesting over 128, memo references expanding over 16 × the pickle `Malformed`; a length over the maximum `TooLarge` |
//! | 8 with any of the above | a bare zlib stream (`zlib.compress`), no length prefix | inflated (capped), then as above |
//!
//! pylibmc ignores every other bit and reads a combination of type bits as an error; both come
//! back `Unknown` here (so PHP's 0x50 is not misread as a `str` of compressed bytes).

use std::io::Write;

use super::compress;
use super::serial::{self, pickle};
use super::{Codec, Encoding, Value, ValueError, decimal_integer, malformed, unknown, unsupported};

const PICKLE: u32 = 1;
const INTEGER: u32 = 2;
const LONG: u32 = 4;
const ZLIB: u32 = 8;
const TEXT: u32 = 16;

pub(super) fn decode(flags: u32, payload: &[u8], max: usize) -> Result<Value, ValueError> {
    if flags & !(PICKLE | INTEGER | LONG | ZLIB | TEXT) != 0 {
        return Ok(unknown(flags, payload));
    }
    let ty = flags & !ZLIB;
    if ty.count_ones() > 1 {
        return Ok(unknown(flags, payload));
    }
    let data = if flags & ZLIB != 0 {
        compress::zlib(payload, max)?
    } else {
        payload.to_vec()
    };
    let bad = |what: &str| malformed(Codec::Pylibmc, flags, what);
    Ok(match ty {
        0 => Value::Bytes(data),
        TEXT => Value::String(String::from_utf8(data).map_err(|_| bad("str that is not UTF-8"))?),
        LONG => python_int(&data).ok_or_else(|| bad("not an integer"))?,
        INTEGER => match python_int(&data).ok_or_else(|| bad("not an integer"))? {
            Value::Int(0) if data.as_slice() == b"0" => Value::Bool(false),
            Value::Int(1) if data.as_slice() == b"1" => Value::Bool(true),
            other => other,
        },
        _ => {
            if data.is_empty() {
                return Err(bad("empty pickle"));
            }
            let outcome = pickle::decode(&data, max);
            serial::finish(outcome, Codec::Pylibmc, flags, max, Encoding::Pickle, data)?
        }
    })
}

/// Python's `int(bytes, 10)`: surrounding whitespace, an optional sign, digits with single
/// underscores between them.
fn python_int(data: &[u8]) -> Option<Value> {
    let t = data.trim_ascii();
    let (sign, body) = match t.first() {
        Some(&s @ (b'-' | b'+')) => (Some(s), &t[1..]),
        _ => (None, t),
    };
    if body.first() == Some(&b'_')
        || body.last() == Some(&b'_')
        || body.windows(2).any(|w| w == b"__")
    {
        return None;
    }
    let mut text: Vec<u8> = Vec::with_capacity(t.len());
    if sign == Some(b'-') {
        text.push(b'-');
    }
    text.extend(body.iter().copied().filter(|&b| b != b'_'));
    decimal_integer(&text)
}

/// `value` as pylibmc 1.6.3 stores it: `_PylibMC_serialize_native` (`_pylibmcmodule.c:1214-1245`)
/// picks the flags by type, then `_PylibMC_RunSetCommand` (`:1286-1298`) deflates.
///
/// | value | flags | payload |
/// |---|---|---|
/// | `Bytes` | 0 | as is |
/// | `String` | 16 | UTF-8 |
/// | `Bool` | 2 | `1` / `0` (tested before int in pylibmc, as `bool` is an `int`) |
/// | `Int`, `BigInt` | 4 | `str(int)` |
/// | `Float`, `Null`, a list or map | 1 | a pickle (protocol 3 here, 5 in pylibmc: see `serial::pickle`) |
/// | `Foreign` pickle | 1 | its bytes as they are |
///
/// Then, when `compress_level != 0 && min_compress_len > 0 && len >= min_compress_len`, the
/// payload is zlib-deflated at `compress_level` and kept only if strictly shorter, flags |= 8.
/// A level above 9 makes zlib's `deflateInit` fail, which pylibmc ignores: stored plain.
pub(super) fn encode(
    value: &Value,
    options: &super::PylibmcOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    let value = super::json_scalar(value);
    let value = value.as_ref();
    let (flags, data) = match value {
        Value::Bytes(b) => (0, b.clone()),
        Value::String(s) => (TEXT, s.as_bytes().to_vec()),
        Value::Bool(b) => (INTEGER, vec![if *b { b'1' } else { b'0' }]),
        Value::Int(i) => (LONG, i.to_string().into_bytes()),
        Value::BigInt(d) => match decimal_integer(d.as_bytes()) {
            Some(Value::Int(i)) => (LONG, i.to_string().into_bytes()),
            Some(Value::BigInt(d)) => (LONG, d.into_bytes()),
            _ => {
                return Err(unsupported(
                    Codec::Pylibmc,
                    value,
                    format!("{d:?} is not a decimal integer"),
                ));
            }
        },
        Value::Float(_) | Value::Null | Value::Json(_) => (
            PICKLE,
            pickle::encode(value).map_err(|e| unsupported(Codec::Pylibmc, value, e))?,
        ),
        Value::Foreign {
            encoding: Encoding::Pickle,
            bytes,
        } => (PICKLE, bytes.clone()),
        other => {
            return Err(unsupported(
                Codec::Pylibmc,
                other,
                "pylibmc stores bytes, str, bool, int and pickles; convert the value, or store \
                 it with the codec of the peer that wrote it (or the raw codec)",
            ));
        }
    };
    let level = options.compress_level;
    if level != 0
        && options.min_compress_len > 0
        && data.len() >= options.min_compress_len
        && let Some(z) = deflate(&data, level).filter(|z| z.len() < data.len())
    {
        return Ok((flags | ZLIB, z));
    }
    Ok((flags, data))
}

/// `_PylibMC_Deflate` (`:288-345`): `deflateInit(level)` + one `deflate(Z_FINISH)`. `None`
/// where zlib refuses the level.
fn deflate(data: &[u8], level: u32) -> Option<Vec<u8>> {
    if level > 9 {
        return None;
    }
    let mut e = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(data.len() / 2),
        flate2::Compression::new(level),
    );
    e.write_all(data).ok()?;
    e.finish().ok()
}
