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
//! | 1 | a pickle (protocol 5 by default) | `Foreign` (`pickle`); empty is `Malformed` (pylibmc: TypeError) |
//! | 8 with any of the above | a bare zlib stream (`zlib.compress`), no length prefix | inflated (capped), then as above |
//!
//! pylibmc ignores every other bit and reads a combination of type bits as an error; both come
//! back `Unknown` here (so PHP's 0x50 is not misread as a `str` of compressed bytes).

use super::compress;
use super::{Codec, Encoding, Value, ValueError, decimal_integer, malformed, unknown};

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
            Value::Foreign {
                encoding: Encoding::Pickle,
                bytes: data,
            }
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

pub(super) fn encode(
    value: &Value,
    _options: &super::PylibmcOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    Err(super::unsupported(Codec::Pylibmc, value, "not written yet"))
}
