//! Dalli 3.0.6: flags 0x1 serialized, 0x2 compressed; verified in
//! `value-vectors/README-dalli.md` (sources: `lib/dalli/protocol/value_serializer.rb`,
//! `value_compressor.rb`, `value_marshaller.rb`, `compressor.rb` at tag v3.0.6).
//!
//! Reading follows Dalli (`value_marshaller.rb:42-45`): 0x2 is decompressed first, then 0x1
//! deserialized.
//!
//! | flags | stored as | decoded as |
//! |---|---|---|
//! | 0 | `raw: true`: `value.to_s` | `String` if UTF-8, else `Bytes` (Dalli: an ASCII-8BIT String) |
//! | 1, Marshal (`04 08 …`, the default serializer) | `Marshal.dump` | the value (`serial::marshal`: nil, booleans, integers, floats, strings, symbols, arrays, hashes with string or symbol keys); valid objects, structs, user classes, Regexps, other encodings, recursive structures `Foreign` (`ruby-marshal`); truncated, unknown type bytes, links to nothing, bytes after the value, nesting over 128, links copying over 16 × the payload `Malformed`; a length over the maximum `TooLarge` |
//! | 1, anything else | `JSON.dump` (the `serializer: JSON` option) | `Json` / a scalar; the bare tokens `NaN`, `Infinity`, `-Infinity` that Ruby's JSON writes are `Float` |
//! | 0x2 | `Dalli::Compressor` (zlib, `78 …`) or `Dalli::GzipCompressor` (gzip, `1f 8b`) | inflated (capped), then as above |
//!
//! The flag does not say which compressor or serializer wrote the value (a Dalli client must be
//! configured alike); the bytes do, unambiguously: a gzip member starts `1f 8b`, a zlib stream
//! never does; Marshal 4.8 starts `04 08`, which no JSON text can. Bits other than 0x1 and 0x2
//! (Dalli ignores them; 4.x/5.x use 0x2/0x4 for `FLAG_UTF8`) come back `Unknown`.

use std::io::Write;

use super::compress;
use super::serial::{self, marshal};
use super::{
    Codec, DalliCompressor, DalliSerializer, Encoding, Value, ValueError, decimal_integer, json,
    malformed, text_or_bytes, unknown, unsupported,
};

const SERIALIZED: u32 = 0x1;
const COMPRESSED: u32 = 0x2;

pub(super) fn decode(flags: u32, payload: &[u8], max: usize) -> Result<Value, ValueError> {
    if flags & !(SERIALIZED | COMPRESSED) != 0 {
        return Ok(unknown(flags, payload));
    }
    let data = if flags & COMPRESSED != 0 {
        if payload.starts_with(&[0x1f, 0x8b]) {
            compress::gzip(payload, max)?
        } else {
            compress::zlib(payload, max)?
        }
    } else {
        payload.to_vec()
    };
    if flags & SERIALIZED == 0 {
        return Ok(text_or_bytes(data));
    }
    if data.starts_with(&[0x04, 0x08]) {
        let outcome = marshal::decode(&data, max);
        return serial::finish(
            outcome,
            Codec::Dalli,
            flags,
            max,
            Encoding::RubyMarshal,
            data,
        );
    }
    Ok(match data.trim_ascii() {
        b"NaN" => Value::Float(f64::NAN),
        b"Infinity" => Value::Float(f64::INFINITY),
        b"-Infinity" => Value::Float(f64::NEG_INFINITY),
        _ => json(&data).map_err(|e| {
            malformed(
                Codec::Dalli,
                flags,
                format!("serialized, neither Marshal nor JSON: {e}"),
            )
        })?,
    })
}

/// `value` as dalli 3.0.6 stores it: `ValueSerializer#store` (`value_serializer.rb:29-34`) then
/// `ValueCompressor#store` (`value_compressor.rb:41-47`, `:77-83`).
///
/// - Unless `raw`: `Marshal.dump` (`serial::marshal`, byte-exact) or `JSON.dump` (Ruby's
///   spelling: `1.0e+100`, `2.0`, bare `NaN` / `Infinity`), flags 1. A `Foreign` Ruby Marshal
///   value is stored as it is with the Marshal serializer.
/// - `raw: true`: `value.to_s` with flags 0; only text and bytes are stored, since `to_s` of
///   anything else is Ruby's rendering of it (`[1, "two"]`, `{:a=>1}`), not a value a reader
///   gets back.
/// - Then, when `compress` and the stored size is `>= compression_min_size`: zlib
///   (`Zlib::Deflate.deflate`) or gzip (`GzipWriter`), flags |= 2, with no check that it got
///   smaller (an incompressible value grows). memshard's gzip header has MTIME 0 where Ruby
///   writes the current time (readers ignore it), OS 3 as Ruby's.
pub(super) fn encode(
    value: &Value,
    options: &super::DalliOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    let value = super::json_scalar(value);
    let value = value.as_ref();
    let refuse = |detail: String| unsupported(Codec::Dalli, value, detail);
    let (flags, data) = if options.raw {
        match value {
            Value::String(s) => (0, s.as_bytes().to_vec()),
            Value::Bytes(b) => (0, b.clone()),
            other => {
                return Err(refuse(format!(
                    "raw: true stores value.to_s, Ruby's rendering of a {}, not the value; store \
                     it as text, or without raw",
                    other.kind()
                )));
            }
        }
    } else {
        match (options.serializer, value) {
            (
                DalliSerializer::Marshal,
                Value::Foreign {
                    encoding: Encoding::RubyMarshal,
                    bytes,
                },
            ) => (SERIALIZED, bytes.clone()),
            (_, Value::Foreign { .. } | Value::Unknown { .. } | Value::Msgpack(_)) => {
                return Err(refuse(
                    "dalli stores Ruby values; convert the value, or store it with the codec of \
                     the peer that wrote it (or the raw codec)"
                        .into(),
                ));
            }
            (DalliSerializer::Marshal, v) => (SERIALIZED, marshal::encode(v).map_err(refuse)?),
            (DalliSerializer::Json, v) => {
                let mut out = String::new();
                ruby_json(&mut out, v).map_err(refuse)?;
                (SERIALIZED, out.into_bytes())
            }
        }
    };
    if options.compress && data.len() >= options.compression_min_size {
        let level = flate2::Compression::default();
        let packed = match options.compressor {
            DalliCompressor::Zlib => {
                let mut z = flate2::write::ZlibEncoder::new(Vec::new(), level);
                z.write_all(&data).and_then(|()| z.finish())
            }
            DalliCompressor::Gzip => {
                let mut g = flate2::GzBuilder::new()
                    .mtime(0)
                    .operating_system(3)
                    .write(Vec::new(), level);
                g.write_all(&data).and_then(|()| g.finish())
            }
        };
        // Only the writer's I/O can fail, and a Vec takes every write.
        let packed = packed.expect("deflating into a Vec");
        return Ok((flags | COMPRESSED, packed));
    }
    Ok((flags, data))
}

/// `JSON.dump` (json 2.6.1, `allow_nan: true`): strings escaped as serde_json does (`"`, `\\`,
/// `\n`-style for five controls, `\u00xx` lowercase for the others, nothing else), numbers in
/// Ruby's spelling. Bytes are text to Ruby's JSON when they are UTF-8, else it raises.
fn ruby_json(out: &mut String, value: &Value) -> Result<(), String> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::BigInt(d) => match decimal_integer(d.as_bytes()) {
            Some(Value::Int(i)) => out.push_str(&i.to_string()),
            Some(Value::BigInt(d)) => out.push_str(&d),
            _ => return Err(format!("{d:?} is not a decimal integer")),
        },
        Value::Float(f) => out.push_str(&ruby_float_to_s(*f)),
        Value::String(s) => json_string(out, s),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => json_string(out, s),
            Err(_) => {
                return Err(
                    "JSON.dump raises on bytes that are not UTF-8; use the Marshal serializer"
                        .into(),
                );
            }
        },
        Value::Json(j) => json_value(out, j),
        other => return Err(format!("a {} value has no JSON form", other.kind())),
    }
    Ok(())
}

fn json_value(out: &mut String, j: &serde_json::Value) {
    use serde_json::Value as J;
    match j {
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&ruby_float_to_s(f)),
            _ => out.push_str(&n.to_string()),
        },
        J::String(s) => json_string(out, s),
        J::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_value(out, item);
            }
            out.push(']');
        }
        J::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(out, k);
                out.push(':');
                json_value(out, v);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn json_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::from(s).to_string());
}

/// Ruby's `Float#to_s` (`numeric.c` `flo_to_s`), which `JSON.dump` writes: `NaN`, `Infinity`,
/// `-Infinity`, `0.0`, `-0.0`; else the shortest digits as `ddd.0` / `ddd.ddd` while the integer
/// part has at most 15 digits (`100000000000000.0`, but `1.0e+15`), `0.000ddd` with at most 3
/// zeros after the point (`0.0001`), and `d.ddde±XX` otherwise (`1.0e+100`, `1.0e-05`).
fn ruby_float_to_s(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let (negative, digits, decpt) = marshal::shortest(f);
    let digs = digits.len() as i32;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (1..=15).contains(&decpt) {
        if decpt >= digs {
            out.push_str(&digits);
            out.push_str(&"0".repeat((decpt - digs) as usize));
            out.push_str(".0");
        } else {
            let (int, frac) = digits.split_at(decpt as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
    } else if (-3..=0).contains(&decpt) {
        out.push_str("0.");
        out.push_str(&"0".repeat((-decpt) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digs > 1 { &digits[1..] } else { "0" });
        out.push_str(&format!("e{:+03}", decpt - 1));
    }
    out
}
