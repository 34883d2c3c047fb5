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

/// `privates.setters` (`memcached.js:912-935`): a Buffer with flags 4, a number with flags 8,
/// a string with flags 0, anything else through `JSON.stringify` with flags 2; then a
/// backslash before every CR and LF (`utils.js:150-158`). node checks its `maxValue` on the
/// escaped length (`:931-934`), as [`encode`](super::encode) does on the returned bytes.
///
/// | value | node value | flags | payload |
/// |---|---|---|---|
/// | `String` | string | 0 | UTF-8 |
/// | `Float`, `Int` | number | 8 | `Number.prototype.toString` (`1e+21`, `NaN`, `-0` → `0`) |
/// | `Bool`, `Null`, `Json` | boolean, null, Array, Object | 2 | `JSON.stringify` |
/// | `Bytes` | Buffer | 4 | latin1 text as UTF-8 (`80` → `c2 80`) |
///
/// Every node number is a double: an `Int` beyond ±2^53 (here or inside `Json`) would be
/// rounded, and is refused. A `BigInt` is refused as node refuses it (`JSON.stringify` throws
/// `TypeError: Do not know how to serialize a BigInt`). Object keys are written in the order
/// `serde_json` keeps them, which is the order node reads back.
pub(super) fn encode(value: &Value) -> Result<(u32, Vec<u8>), ValueError> {
    let unsupported = |why: &str| super::unsupported(Codec::NodeMemcached, value, why);
    let (flags, text) = match value {
        Value::String(s) => (0, s.clone()),
        Value::Float(f) => (8, js_number_to_string(*f)),
        Value::Int(i) => (8, js_int(*i).ok_or_else(|| unsupported(DOUBLES))?),
        Value::Bool(b) => (2, b.to_string()),
        Value::Null => (2, "null".to_owned()),
        Value::Json(j) => {
            let mut out = String::new();
            stringify(j, &mut out).map_err(|()| unsupported(DOUBLES))?;
            (2, out)
        }
        Value::Bytes(b) => (4, b.iter().map(|&byte| char::from(byte)).collect()),
        Value::BigInt(_) => {
            return Err(unsupported(
                "node throws TypeError (JSON.stringify of a BigInt); store it as a string",
            ));
        }
        Value::Msgpack(_) => {
            return Err(unsupported(
                "node has no MessagePack; store it as a JSON value",
            ));
        }
        Value::Foreign { .. } => {
            return Err(unsupported(
                "node reads a serialized value as a string; store it as bytes (a Buffer)",
            ));
        }
        Value::Unknown { .. } => {
            return Err(unsupported(
                "its flags are not node's; copy it with the raw codec",
            ));
        }
    };
    Ok((flags, escape(&text)))
}

const DOUBLES: &str =
    "node reads numbers as doubles (beyond 2^53 they are rounded); store it as a string";

/// 2^53: every integer up to it in magnitude is a double exactly.
const SAFE: i64 = 1 << 53;

/// `utils.js:150-158`: `value.replace(/(\r|\n)/g, '\\$1')`.
fn escape(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for &b in text.as_bytes() {
        if matches!(b, b'\r' | b'\n') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

/// An integer as the number node would hold, or None beyond ±2^53, where doubles skip integers.
fn js_int(i: i64) -> Option<String> {
    (-SAFE..=SAFE).contains(&i).then(|| i.to_string())
}

/// ECMAScript `Number::toString(x)` (ECMA-262 §6.1.6.1.20): the shortest digits that read back
/// as `x` ([`shortest`]), then plain notation for exponents -7 < n <= 21 and `d.ddde±n`
/// otherwise.
fn js_number_to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x == 0.0 {
        // -0 too: `(-0).toString()` is "0".
        return "0".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let (digits, n) = shortest(x.abs());
    let k = digits.len() as i32;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}

/// `{:e}` as digits and the exponent of the digit before the point.
fn scientific(text: &str) -> (String, i32) {
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let digits = mantissa.chars().filter(char::is_ascii_digit).collect();
    // `{:e}` always writes a decimal exponent; 0 is a fallback that is not reached.
    (digits, exp.parse().unwrap_or(0))
}

/// The shortest digits `d1…dk` and the exponent `n` with `0.d1…dk × 10^n` reading back as
/// `x` (finite, > 0). Rust's `{:e}` finds them, but where two k-digit strings are equally
/// near `x` (`87649686767781.125`: `…81.12` and `…81.13` both read back) it takes the upper
/// one, and ECMA-262 the even one. That happens only when `x`'s exact decimal expansion is
/// the k digits and a 5; the exact expansion (at most 767 significant digits) settles it.
fn shortest(x: f64) -> (String, i32) {
    let (digits, exp) = scientific(&format!("{x:e}"));
    let k = digits.len();
    let (exact, exact_exp) = scientific(&format!("{x:.800e}"));
    let (below, tail) = exact.split_at(k.min(exact.len()));
    let tie = exact_exp == exp
        && tail
            .strip_prefix('5')
            .is_some_and(|rest| rest.bytes().all(|b| b == b'0'));
    let even = |d: &str| {
        d.bytes()
            .last()
            .is_some_and(|b| (b - b'0').is_multiple_of(2))
    };
    if tie {
        let want = if even(below) {
            Some(below.to_owned())
        } else {
            increment(below)
        };
        if let Some(want) = want
            && want != digits
            && format!("{want}e{}", exp + 1 - k as i32)
                .parse::<f64>()
                .is_ok_and(|y| y == x)
        {
            return (want, exp + 1);
        }
    }
    (digits, exp + 1)
}

/// A digit string plus one in its last place; None when it carries into a new digit.
fn increment(digits: &str) -> Option<String> {
    let mut out = digits.as_bytes().to_vec();
    for b in out.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return String::from_utf8(out).ok();
        }
    }
    None
}

/// `JSON.stringify` without spaces: strings escaped as `serde_json` does, which is what V8
/// does for well-formed strings (`"`, `\\`, `\b \f \n \r \t`, other controls as `\u00xx`;
/// not `/`, not non-ASCII); numbers spelled by `Number::toString`. Err for an integer beyond
/// ±2^53.
fn stringify(v: &serde_json::Value, out: &mut String) -> Result<(), ()> {
    use serde_json::Value as J;
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&js_int(i).ok_or(())?);
            } else if n.is_u64() {
                // Above i64::MAX, so above 2^53.
                return Err(());
            } else {
                // Finite: serde_json holds no NaN or infinity.
                out.push_str(&js_number_to_string(n.as_f64().ok_or(())?));
            }
        }
        J::String(s) => out.push_str(&J::String(s.clone()).to_string()),
        J::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                stringify(item, out)?;
            }
            out.push(']');
        }
        J::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&J::String(key.clone()).to_string());
                out.push(':');
                stringify(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `utils.js` `unescapeValue`: `value.replace(/\\(\r|\n)/g, '$1')`, so a backslash goes
    /// only where a CR or LF follows it, a doubled one keeps its first, and a last one stays.
    #[test]
    fn a_backslash_goes_only_before_cr_or_lf() {
        assert_eq!(unescape(b"a\\\r\\\nb"), b"a\r\nb");
        assert_eq!(unescape(b"\\\\\n\\x\\"), b"\\\n\\x\\");
        assert_eq!(
            decode(0, b"line one\\\nline two").expect("decode"),
            Value::String("line one\nline two".into())
        );
    }

    /// One in the last place, carrying through nines; a carry past the first digit is None
    /// (the tie rule then keeps Rust's digits).
    #[test]
    fn increment_carries_through_nines() {
        assert_eq!(
            increment("8764968676778112").as_deref(),
            Some("8764968676778113")
        );
        assert_eq!(increment("1299").as_deref(), Some("1300"));
        assert_eq!(increment("999"), None);
    }
}
