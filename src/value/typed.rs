//! Rust types to and from [`Value`]: what `get_as::<T>` and `set_value(key, &T, ..)` use.
//!
//! Conversions are exact or refused: a `String` is not read as an `i64`, an `i64` beyond
//! `i32` is not truncated, a float is not an integer. The one leniency is for untyped bytes
//! (what the raw codec, or a peer's plain string type, returns): `get_as::<String>` takes UTF-8
//! bytes, and `get_as::<i64>` takes bytes that are a decimal integer (what `incr` leaves).

use super::{Value, ValueError};

/// A Rust value a codec can store: `set_value(key, &value, expiry)`.
///
/// Implemented for text (`str`, `String`), bytes (`[u8]`, `Vec<u8>`, [`Bytes`],
/// [`bytes::Bytes`]), integers,
/// floats, `bool`, `Option<T>` (`None` is null), [`Value`], `serde_json::Value`, and with the
/// `serde` feature any `Serialize` type through [`Json`].
pub trait ToValue {
    /// The value to store.
    fn to_value(&self) -> Result<Value, ValueError>;
}

/// A Rust value a decoded [`Value`] converts to: `get_as::<T>(key)`.
///
/// ```
/// use memshard::value::{FromValue, Value};
///
/// assert_eq!(i64::from_value(Value::Int(42))?, 42);
/// assert_eq!(Option::<bool>::from_value(Value::Null)?, None);
/// assert!(u8::from_value(Value::Int(300)).is_err());
/// # Ok::<(), memshard::value::ValueError>(())
/// ```
pub trait FromValue: Sized {
    /// The Rust value, or [`ValueError::Type`] when the value is of another type or out of
    /// range.
    fn from_value(value: Value) -> Result<Self, ValueError>;
}

/// Bytes to store as bytes (a `Vec<u8>` or `&[u8]` already are; this names the intent for
/// generic code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

fn wrong(expected: &'static str, found: &Value) -> ValueError {
    ValueError::Type {
        expected,
        found: found.kind().to_owned(),
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(self.clone())
    }
}

impl FromValue for Value {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        Ok(value)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(Value::String(self.to_owned()))
    }
}

impl ToValue for String {
    fn to_value(&self) -> Result<Value, ValueError> {
        self.as_str().to_value()
    }
}

impl FromValue for String {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::String(s) => Ok(s),
            Value::Bytes(b) => String::from_utf8(b).map_err(|e| ValueError::Type {
                expected: "string",
                found: format!("bytes that are not UTF-8 ({e})"),
            }),
            other => Err(wrong("string", &other)),
        }
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(Value::Bytes(self.to_vec()))
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Result<Value, ValueError> {
        self.as_slice().to_value()
    }
}

impl ToValue for Bytes {
    fn to_value(&self) -> Result<Value, ValueError> {
        self.0.to_value()
    }
}

impl FromValue for Vec<u8> {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Bytes(b) => Ok(b),
            Value::String(s) => Ok(s.into_bytes()),
            other => Err(wrong("bytes", &other)),
        }
    }
}

impl FromValue for Bytes {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        Vec::from_value(value).map(Bytes)
    }
}

impl ToValue for bytes::Bytes {
    fn to_value(&self) -> Result<Value, ValueError> {
        self[..].to_value()
    }
}

/// Bytes as [`Item::value`](crate::Item::value) holds them: the decoded bytes, not copied
/// again.
impl FromValue for bytes::Bytes {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        Vec::from_value(value).map(bytes::Bytes::from)
    }
}

/// An integer from `Int`, `BigInt` or untyped decimal bytes, as `i128` (every `BigInt` beyond
/// `i128` is out of range for every Rust integer type anyway).
fn integer(value: &Value) -> Result<i128, ValueError> {
    let out_of_range = || ValueError::Type {
        expected: "int",
        found: format!("{value:?} out of range"),
    };
    match value {
        Value::Int(i) => Ok(i128::from(*i)),
        Value::BigInt(d) => d.parse().map_err(|_| out_of_range()),
        Value::Bytes(b) => std::str::from_utf8(b)
            .ok()
            .filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit() || c == b'-'))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| wrong("int", value)),
        other => Err(wrong("int", other)),
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Result<Value, ValueError> {
                let wide = i128::from(*self);
                Ok(match i64::try_from(wide) {
                    Ok(i) => Value::Int(i),
                    Err(_) => Value::BigInt(wide.to_string()),
                })
            }
        }

        impl FromValue for $t {
            fn from_value(value: Value) -> Result<Self, ValueError> {
                let wide = integer(&value)?;
                <$t>::try_from(wide).map_err(|_| ValueError::Type {
                    expected: stringify!($t),
                    found: format!("{wide}, out of range"),
                })
            }
        }
    )*};
}

integers!(i8, i16, i32, i64, u8, u16, u32, u64);

impl ToValue for i128 {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(match i64::try_from(*self) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt(self.to_string()),
        })
    }
}

impl FromValue for i128 {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        integer(&value)
    }
}

impl ToValue for f64 {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(Value::Float(*self))
    }
}

impl ToValue for f32 {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(Value::Float(f64::from(*self)))
    }
}

impl FromValue for f64 {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Float(f) => Ok(f),
            // Exactly representable integers only: node stores every number as a double, and
            // a PHP float 2.0 is written `2`, which some peers read back as an int.
            Value::Int(i) if i.unsigned_abs() <= 1 << 53 => Ok(i as f64),
            other => Err(wrong("float", &other)),
        }
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(Value::Bool(*self))
    }
}

impl FromValue for bool {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Bool(b) => Ok(b),
            other => Err(wrong("bool", &other)),
        }
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Result<Value, ValueError> {
        match self {
            Some(v) => v.to_value(),
            None => Ok(Value::Null),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Result<Value, ValueError> {
        (**self).to_value()
    }
}

impl ToValue for serde_json::Value {
    fn to_value(&self) -> Result<Value, ValueError> {
        Ok(from_json(self.clone()))
    }
}

impl FromValue for serde_json::Value {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        use serde_json::Value as J;
        Ok(match value {
            Value::Json(j) | Value::Msgpack(j) => j,
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(b),
            Value::Int(i) => J::from(i),
            Value::String(s) => J::String(s),
            Value::Float(f) => {
                J::Number(
                    serde_json::Number::from_f64(f).ok_or_else(|| ValueError::Type {
                        expected: "json",
                        found: format!("{f}, which JSON cannot hold"),
                    })?,
                )
            }
            Value::BigInt(d) => J::Number(d.parse().map_err(|_| ValueError::Type {
                expected: "json",
                found: format!("the integer {d}, beyond what JSON numbers hold here"),
            })?),
            other => return Err(wrong("json", &other)),
        })
    }
}

/// A JSON value as the value enum holds it: scalars as their typed variant, lists and maps
/// as [`Value::Json`].
pub(crate) fn from_json(j: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(b),
        J::String(s) => Value::String(s),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Int(i),
            (None, _) if n.is_u64() => Value::BigInt(n.to_string()),
            (None, Some(f)) => Value::Float(f),
            (None, None) => Value::Json(J::Number(n)),
        },
        other => Value::Json(other),
    }
}

/// Any serde type stored and read as JSON: `set_value(key, &Json(&user), ..)`,
/// `get_as::<Json<User>>(key)`. Through each codec it becomes that peer's JSON-like value
/// (a PHP array, a Python dict, a Ruby Hash, a node object).
///
/// ```
/// use memshard::value::{FromValue, Json, ToValue, Value};
///
/// #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
/// struct User { name: String, age: u32 }
///
/// let v = Json(User { name: "ada".into(), age: 36 }).to_value()?;
/// assert!(matches!(v, Value::Json(_)));
/// let Json(back) = Json::<User>::from_value(v)?;
/// assert_eq!(back, User { name: "ada".into(), age: 36 });
/// # Ok::<(), memshard::value::ValueError>(())
/// ```
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

#[cfg(feature = "serde")]
impl<T: serde::Serialize> ToValue for Json<T> {
    fn to_value(&self) -> Result<Value, ValueError> {
        let j = serde_json::to_value(&self.0).map_err(|e| ValueError::Type {
            expected: "json",
            found: format!("a value serde_json cannot write: {e}"),
        })?;
        Ok(from_json(j))
    }
}

/// Text and bytes are read as JSON when they are JSON (the raw codec and memshard's layout store
/// a serde value whose JSON is a number or text as plain bytes), else as a JSON string.
#[cfg(feature = "serde")]
impl<T: serde::de::DeserializeOwned> FromValue for Json<T> {
    fn from_value(value: Value) -> Result<Self, ValueError> {
        let misfit = |e: serde_json::Error| ValueError::Type {
            expected: std::any::type_name::<T>(),
            found: format!("JSON that does not fit: {e}"),
        };
        let text = match value {
            Value::Bytes(b) => match String::from_utf8(b) {
                Ok(s) => s,
                Err(e) => {
                    return serde_json::from_slice(e.as_bytes())
                        .map(Json)
                        .map_err(misfit);
                }
            },
            Value::String(s) => s,
            other => {
                let j = serde_json::Value::from_value(other)?;
                return serde_json::from_value(j).map(Json).map_err(misfit);
            }
        };
        // the text as JSON first (`42`, `{"a":1}`), then as a JSON string (`ada`, or `42`
        // for a `String` field)
        match serde_json::from_str(&text) {
            Ok(v) => Ok(Json(v)),
            Err(first) => serde_json::from_value(serde_json::Value::String(text))
                .map(Json)
                .map_err(|_| misfit(first)),
        }
    }
}
