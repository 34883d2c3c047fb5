//! memshard's own layout, version 1 ([`Codec::Memshard`], the default): every value
//! [`set_value`](crate::Client::set_value) takes reads back through
//! [`get_as`](crate::Client::get_as) of the same type, and other languages read it too.
//!
//! | value | flags | payload | read by |
//! |---|---|---|---|
//! | text, bytes | 0 | as they are | every client |
//! | integers (`i64`, `u64`, beyond) | 0 | decimal digits (what `incr` and `decr` count) | every client |
//! | floats, bools, `None`, serde types ([`Json`](super::Json)), lists, maps | 6 | JSON text | php-memcached (its JSON type, whatever its serializer setting), any JSON reader |
//!
//! Flags 6 is php-memcached's `MEMC_VAL_IS_JSON`. Floats are written in their shortest form
//! that reads back to the same `f64`; NaN and the infinities have no JSON spelling and are
//! refused when written, before anything is sent. A payload with flags 0 reads as bytes (typed
//! reads parse it: `get_as::<i64>` the digits, `get_as::<String>` the UTF-8); flags 6 as its
//! JSON; any other flags as the bytes stored, as the raw codec reads them.

use super::{Codec, Value, ValueError, malformed, typed, unsupported};

/// php-memcached's JSON type (`MEMC_VAL_IS_JSON`), memshard's flags for a JSON payload.
pub(crate) const JSON: u32 = 6;

/// The flags and payload of `value` in layout version 1.
pub(crate) fn encode(value: &Value) -> Result<(u32, Vec<u8>), ValueError> {
    let json = |j: &serde_json::Value| (JSON, j.to_string().into_bytes());
    Ok(match value {
        Value::String(s) => (0, s.as_bytes().to_vec()),
        Value::Bytes(b) => (0, b.clone()),
        Value::Int(i) => (0, i.to_string().into_bytes()),
        Value::BigInt(d) => (0, d.as_bytes().to_vec()),
        Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => json(&serde_json::Value::Number(n)),
            None => {
                return Err(unsupported(
                    Codec::Memshard,
                    value,
                    "NaN and infinities have no JSON spelling; store them as text",
                ));
            }
        },
        Value::Bool(b) => json(&serde_json::Value::Bool(*b)),
        Value::Null => json(&serde_json::Value::Null),
        Value::Json(j) | Value::Msgpack(j) => json(j),
        Value::Unknown { flags, bytes } => (*flags, bytes.clone()),
        Value::Foreign { .. } => {
            return Err(unsupported(
                Codec::Memshard,
                value,
                "a serialized value of another language is stored by that language's codec",
            ));
        }
    })
}

/// The value of `flags` and `payload` in layout version 1.
pub(crate) fn decode(flags: u32, payload: &[u8]) -> Result<Value, ValueError> {
    if flags != JSON {
        return Ok(Value::Bytes(payload.to_vec()));
    }
    serde_json::from_slice(payload)
        .map(typed::from_json)
        .map_err(|e| malformed(Codec::Memshard, flags, format!("broken JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_pinned() {
        let cases: &[(Value, u32, &[u8])] = &[
            (Value::String("héllo".into()), 0, "héllo".as_bytes()),
            (Value::Bytes(vec![0, 0xff]), 0, &[0, 0xff]),
            (Value::Int(-42), 0, b"-42"),
            (
                Value::BigInt("18446744073709551616".into()),
                0,
                b"18446744073709551616",
            ),
            (Value::Float(0.1), 6, b"0.1"),
            (Value::Float(2.0), 6, b"2.0"),
            (Value::Float(-1e300), 6, b"-1e+300"),
            (Value::Bool(true), 6, b"true"),
            (Value::Null, 6, b"null"),
            (
                Value::Json(serde_json::json!({"a": [1, "x"]})),
                6,
                br#"{"a":[1,"x"]}"#,
            ),
        ];
        for (v, flags, bytes) in cases {
            assert_eq!(encode(v).as_ref(), Ok(&(*flags, bytes.to_vec())), "{v:?}");
        }
    }

    #[test]
    fn what_cannot_be_read_back_is_refused() {
        for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                encode(&Value::Float(f)),
                Err(ValueError::Unsupported { .. })
            ));
        }
        assert!(matches!(
            decode(JSON, b"{broken"),
            Err(ValueError::Malformed { flags: JSON, .. })
        ));
        assert_eq!(decode(1, b"7"), Ok(Value::Bytes(b"7".to_vec())));
        assert_eq!(decode(JSON, b"1.5"), Ok(Value::Float(1.5)));
        assert_eq!(decode(JSON, b"null"), Ok(Value::Null));
    }

    /// `value` written by the codec and read back as `T`.
    fn round_trip<T: typed::ToValue + typed::FromValue>(value: &T) -> T {
        let (flags, bytes) = encode(&value.to_value().expect("to_value")).expect("encode");
        T::from_value(decode(flags, &bytes).expect("decode")).expect("from_value")
    }

    #[test]
    fn random_values_of_every_type_read_back_as_written() {
        let mut rng = fastrand::Rng::with_seed(0x6d65_6d73);
        for _ in 0..2_000 {
            let text: String = (0..rng.usize(0..12))
                .map(|_| match rng.u8(0..4) {
                    0 => rng.char('a'..='z'),
                    1 => rng.char('0'..='9'),
                    2 => rng
                        .choice(['é', '€', '😀', ' ', '"', '\\', '-', '.'])
                        .unwrap_or('x'),
                    _ => rng.char(..),
                })
                .collect();
            assert_eq!(round_trip(&text), text);
            let bytes: Vec<u8> = (0..rng.usize(0..12)).map(|_| rng.u8(..)).collect();
            assert_eq!(round_trip(&bytes), bytes);
            let i = rng.i64(..);
            assert_eq!(round_trip(&i), i);
            let u = rng.u64(..);
            assert_eq!(round_trip(&u), u);
            let f = f64::from_bits(rng.u64(..));
            if f.is_finite() {
                assert_eq!(round_trip(&f).to_bits(), f.to_bits(), "{f:e}");
            }
            let b = rng.bool();
            assert_eq!(round_trip(&b), b);
            let o = rng.bool().then(|| rng.i64(..));
            assert_eq!(round_trip(&o), o);
            #[cfg(feature = "serde")]
            {
                use crate::value::Json;
                assert_eq!(round_trip(&Json(text.clone())).0, text);
                assert_eq!(round_trip(&Json(i)).0, i);
                let list = vec![text.clone(), i.to_string()];
                assert_eq!(round_trip(&Json(list.clone())).0, list);
                let map = std::collections::BTreeMap::from([(text.clone(), o)]);
                assert_eq!(round_trip(&Json(map.clone())).0, map);
                let none: Option<Json<Vec<String>>> = None;
                assert!(round_trip(&none).is_none());
            }
        }
    }
}
