//! `get --codec/--json` and `set --codec/--type`: values as a peer stores them.

use memshard::value::{Codec, FromValue, Value};
use serde_json::{Value as J, json};
use std::fmt::Write as _;

/// The largest value a `get --codec` decodes (decompressed): the library's default maximum
/// value size (memcached's default item size, `-I 1m`).
pub const DECODE_MAX: usize = 1024 * 1024;

/// `--type` of `set`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ValueType {
    /// UTF-8 text.
    String,
    /// Bytes, given in hex.
    Bytes,
    /// A decimal integer, of any size.
    Int,
    /// A float; also `Infinity`, `-Infinity`, `NaN`.
    Float,
    /// `true` or `false`.
    Bool,
    /// Any JSON text: null, a number, a string, a list, a map.
    Json,
}

/// `--codec NAME`.
pub fn parse_codec(s: &str) -> Result<Codec, String> {
    s.parse::<Codec>().map_err(|e| e.to_string())
}

/// VALUE of `set --type T`, as the value to store.
pub fn parse_value(ty: ValueType, text: &[u8]) -> Result<Value, String> {
    let utf8 =
        || std::str::from_utf8(text).map_err(|_| format!("a {ty:?} VALUE must be UTF-8 text"));
    Ok(match ty {
        ValueType::String => Value::String(utf8()?.to_owned()),
        ValueType::Bytes => Value::Bytes(unhex(utf8()?)?),
        ValueType::Int => {
            let s = utf8()?;
            let digits = s.strip_prefix('-').unwrap_or(s);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("{s:?} is not a decimal integer"));
            }
            match s.parse::<i64>() {
                Ok(i) => Value::Int(i),
                Err(_) => {
                    let trimmed = digits.trim_start_matches('0');
                    let sign = if s.starts_with('-') { "-" } else { "" };
                    Value::BigInt(format!("{sign}{trimmed}"))
                }
            }
        }
        ValueType::Float => Value::Float(match utf8()? {
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            s => s
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| {
                    format!("{s:?} is not a float (a decimal number, Infinity, -Infinity or NaN)")
                })?,
        }),
        ValueType::Bool => Value::Bool(match utf8()? {
            "true" => true,
            "false" => false,
            s => return Err(format!("{s:?} is not a bool (true or false)")),
        }),
        ValueType::Json => {
            let j: J = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
            memshard::value::ToValue::to_value(&j).map_err(|e| e.to_string())?
        }
    })
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err("bytes in hex need an even number of digits".into());
    }
    b.chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("{s:?} is not hex"))
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn float(f: f64) -> J {
    match serde_json::Number::from_f64(f) {
        Some(n) => J::Number(n),
        None if f.is_nan() => J::from("NaN"),
        None if f > 0.0 => J::from("Infinity"),
        None => J::from("-Infinity"),
    }
}

/// One hit as `get --json` prints it: `{"key","flags","type","value"}` (+ `"encoding"` for
/// foreign values).
pub fn json_line(key: &[u8], flags: u32, value: Value) -> J {
    let kind = value.kind();
    let mut obj = json!({
        "key": String::from_utf8_lossy(key),
        "flags": flags,
        "type": kind,
    });
    let v = match value {
        Value::String(s) => J::String(s),
        Value::Bytes(b) | Value::Unknown { bytes: b, .. } => J::String(hex(&b)),
        Value::Int(i) => J::from(i),
        Value::BigInt(d) => J::String(d),
        Value::Float(f) => float(f),
        Value::Bool(b) => J::Bool(b),
        Value::Json(j) | Value::Msgpack(j) => j,
        Value::Foreign { encoding, bytes } => {
            obj["encoding"] = J::from(encoding.name());
            J::String(hex(&bytes))
        }
        // `Value` is non-exhaustive: a later kind prints through its JSON form, else null.
        other => J::from_value(other).unwrap_or(J::Null),
    };
    obj["value"] = v;
    obj
}

/// One hit as `get --codec` (without `--json`) prints it: text and bytes as they are,
/// numbers, bools and null as text, lists and maps as JSON, serialized values decompressed.
pub fn plain(value: Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.into_bytes(),
        Value::Bytes(b) | Value::Foreign { bytes: b, .. } | Value::Unknown { bytes: b, .. } => b,
        Value::Int(i) => i.to_string().into_bytes(),
        Value::BigInt(d) => d.into_bytes(),
        Value::Float(f) => match float(f) {
            J::String(s) => s.into_bytes(),
            n => n.to_string().into_bytes(),
        },
        Value::Bool(b) => b.to_string().into_bytes(),
        Value::Null => b"null".to_vec(),
        Value::Json(j) | Value::Msgpack(j) => j.to_string().into_bytes(),
        other => format!("{other:?}").into_bytes(),
    }
}
