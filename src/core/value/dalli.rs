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
//! | 1, Marshal (`04 08 …`, the default serializer) | `Marshal.dump` | `Foreign` (`ruby-marshal`) |
//! | 1, anything else | `JSON.dump` (the `serializer: JSON` option) | `Json` / a scalar; the bare tokens `NaN`, `Infinity`, `-Infinity` that Ruby's JSON writes are `Float` |
//! | 0x2 | `Dalli::Compressor` (zlib, `78 …`) or `Dalli::GzipCompressor` (gzip, `1f 8b`) | inflated (capped), then as above |
//!
//! The flag does not say which compressor or serializer wrote the value (a Dalli client must be
//! configured alike); the bytes do, unambiguously: a gzip member starts `1f 8b`, a zlib stream
//! never does; Marshal 4.8 starts `04 08`, which no JSON text can. Bits other than 0x1 and 0x2
//! (Dalli ignores them; 4.x/5.x use 0x2/0x4 for `FLAG_UTF8`) come back `Unknown`.

use super::compress;
use super::{Codec, Encoding, Value, ValueError, json, malformed, text_or_bytes, unknown};

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
        return Ok(Value::Foreign {
            encoding: Encoding::RubyMarshal,
            bytes: data,
        });
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

pub(super) fn encode(
    value: &Value,
    _options: &super::DalliOptions,
    _max: usize,
) -> Result<(u32, Vec<u8>), ValueError> {
    Err(super::unsupported(Codec::Dalli, value, "not written yet"))
}
