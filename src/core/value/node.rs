//! npm `memcached` 2.2.2: flags exactly 0 string, 2 JSON, 4 binary, 8 number, never combined,
//! no compression; verified in `value-vectors/README-node.md` (sources `lib/memcached.js`
//! `:108-110`, `:497-524`, `:912-935` and `lib/utils.js:150-158` at tag 2.2.2).
//!
//! On write node puts a backslash before every CR and LF (`utils.js:150-158`); on read it
//! removes a backslash before CR or LF (`memcached.js:741`). That is undone first, for every
//! flags value.
//!
//! | flags | stored as | decoded as |
//! |---|---|---|
//! | 0 | the string's UTF-8 | `String` if UTF-8, else `Bytes` (node would put U+FFFD in) |
//! | 2 | `JSON.stringify` (booleans, null, arrays, objects, Date as a string) | `Json` / a scalar; not JSON is `Malformed` (node throws in its socket handler) |
//! | 4 | a Buffer as latin1 text written as UTF-8 (`80` → `c2 80`) | `Bytes`, the latin1 undone; anything that is not such text is `Malformed` (node corrupts it) |
//! | 8 | `Number.prototype.toString` | `Float` by JavaScript's unary `+` (`0x10` → 16, empty → 0, `inf` → NaN) |
//! | other | — | `Unknown` (node: a string) |

use super::{Codec, Value, ValueError, json, malformed, text_or_bytes, unknown};

pub(super) fn decode(flags: u32, payload: &[u8]) -> Result<Value, ValueError> {
    if !matches!(flags, 0 | 2 | 4 | 8) {
        return Ok(unknown(flags, payload));
    }
    let data = unescape(payload);
    let bad = |what: &str| malformed(Codec::NodeMemcached, flags, what);
    Ok(match flags {
        0 => text_or_bytes(data),
        2 => json(&data).map_err(|e| bad(&format!("not JSON: {e}")))?,
        4 => {
            let text = String::from_utf8(data).map_err(|_| bad("binary that is not UTF-8"))?;
            let bytes: Option<Vec<u8>> = text.chars().map(|c| u8::try_from(c).ok()).collect();
            Value::Bytes(bytes.ok_or_else(|| bad("binary with a character above U+00FF"))?)
        }
        _ => Value::Float(js_number(&data)),
    })
}

/// Removes the backslash node puts before each CR and LF.
fn unescape(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len());
    let mut i = 0;
    while i < payload.len() {
        let b = payload[i];
        if b == b'\\' && matches!(payload.get(i + 1), Some(b'\r' | b'\n')) {
            i += 1;
            continue;
        }
        out.push(b);
        i += 1;
    }
    out
}

/// JavaScript's `+string` (ToNumber on a string), for the ASCII forms node writes and reads.
fn js_number(data: &[u8]) -> f64 {
    let t = data.trim_ascii();
    if t.is_empty() {
        return 0.0;
    }
    match t {
        b"Infinity" | b"+Infinity" => return f64::INFINITY,
        b"-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let radix = match t.get(..2) {
        Some(b"0x" | b"0X") => Some(16),
        Some(b"0o" | b"0O") => Some(8),
        Some(b"0b" | b"0B") => Some(2),
        _ => None,
    };
    if let Some(radix) = radix {
        let digits = &t[2..];
        if digits.is_empty() {
            return f64::NAN;
        }
        let mut v = 0.0f64;
        for &b in digits {
            match char::from(b).to_digit(radix) {
                Some(d) => v = v * f64::from(radix) + f64::from(d),
                None => return f64::NAN,
            }
        }
        return v;
    }
    let numeric = t
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if !numeric {
        return f64::NAN;
    }
    std::str::from_utf8(t)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

pub(super) fn encode(value: &Value) -> Result<(u32, Vec<u8>), ValueError> {
    Err(super::unsupported(
        Codec::NodeMemcached,
        value,
        "not written yet",
    ))
}
