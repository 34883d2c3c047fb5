//! PHP `serialize()` / `unserialize()` (php-memcached type 4) for the JSON-like subset, written by
//! hand (`value-vectors/CRATES.md` section 6: no crate is both mature and complete).
//!
//! | PHP | bytes | [`Value`] |
//! |---|---|---|
//! | null | `N;` | `Null` |
//! | bool | `b:1;` / `b:0;` | `Bool` |
//! | int | `i:42;` | `Int` |
//! | float | `d:0.5;`, `d:1.0E+25;`, `d:-0;`, `d:INF;`, `d:NAN;` | `Float` |
//! | string | `s:5:"hello";` (length in bytes) | `String` if UTF-8, else `Bytes` |
//! | array 0..n-1 | `a:2:{i:0;…i:1;…}` | `Json` list |
//! | other array | `a:1:{s:1:"k";…}` | `Json` object, integer keys as decimal text |
//!
//! Reading: PHP's grammar (`ext/standard/var_unserializer.re`): `i:` takes an optional sign and
//! leading zeros, `d:` decimals with an optional exponent or the three words, keys are `i:` or
//! `s:` only, and a string key that is a canonical integer becomes that integer
//! (`zend_symtable_update`: `a:1:{s:1:"0";…}` is the list `[…]`); a repeated key replaces the
//! earlier value in its place. Anything else — objects (`O:`, `C:`, enums `E:`), references
//! (`r:`, `R:`), escaped strings (`S:`), an integer out of range (PHP saturates with a warning),
//! bytes after the value (PHP 8.2 ignores them), nesting deeper than [`MAX_DEPTH`], inside a
//! list or map a string that is not UTF-8 or a float that is not finite — is `None`, and the
//! caller keeps the bytes as [`Value::Foreign`](crate::value::Value::Foreign).
//!
//! Writing: floats are spelled as `serialize()` spells them with `serialize_precision = -1`
//! ([`gcvt`](super::super::php_float::gcvt) with `E`), and a map key that is a canonical decimal
//! integer within 64 bits is written as `i:` (PHP arrays hold such keys as integers:
//! `"5"` → `i:5;`, but `"05"`, `"-0"`, `"+1"`, `" 1"` and `"9223372036854775808"` stay strings),
//! checked against php-memcached's own output (`testdata/php-extra.json`, `int-like-keys-php`).
//! Map entries come in `serde_json::Map`'s order (sorted by key; PHP keeps insertion order), so
//! a map PHP built in another order has the same entries in other bytes.

use std::collections::HashMap;

use super::super::php_float::gcvt;
use crate::value::Value;

/// Nesting limit for reading and writing: `serde_json`'s own parser stops at 128, PHP's
/// `unserialize_max_depth` at 4096; 512 is PHP's `json_encode` default and keeps the recursion
/// (and `serde_json::Value`'s recursive drop) far from the stack's end.
pub(crate) const MAX_DEPTH: usize = 512;

/// The value, or `None` when the bytes hold something outside the JSON-like subset.
pub(crate) fn decode(bytes: &[u8]) -> Option<Value> {
    let mut r = Reader {
        data: bytes,
        pos: 0,
    };
    let v = r.value(0)?;
    if r.pos != bytes.len() {
        return None;
    }
    Some(match v {
        Item::Null => Value::Null,
        Item::Bool(b) => Value::Bool(b),
        Item::Int(i) => Value::Int(i),
        Item::Float(f) => Value::Float(f),
        Item::Str(s) => super::super::text_or_bytes(s),
        array @ Item::Array(_) => Value::Json(to_json(array)?),
    })
}

/// The value's bytes in this format; `Err` names what the format cannot hold.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match value {
        Value::Null => out.extend_from_slice(b"N;"),
        Value::Bool(b) => bool_into(&mut out, *b),
        Value::Int(i) => int_into(&mut out, *i),
        Value::Float(f) => float_into(&mut out, *f),
        Value::String(s) => str_into(&mut out, s.as_bytes()),
        Value::Bytes(b) => str_into(&mut out, b),
        Value::Json(j) => json_into(&mut out, j, 0)?,
        other => {
            return Err(format!(
                "a {} value has no PHP serialize form",
                other.kind()
            ));
        }
    }
    Ok(out)
}

fn bool_into(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"b:1;" } else { b"b:0;" });
}

fn int_into(out: &mut Vec<u8>, i: i64) {
    out.extend_from_slice(format!("i:{i};").as_bytes());
}

fn float_into(out: &mut Vec<u8>, f: f64) {
    out.extend_from_slice(format!("d:{};", gcvt(f, 'E')).as_bytes());
}

fn str_into(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(format!("s:{}:\"", s.len()).as_bytes());
    out.extend_from_slice(s);
    out.extend_from_slice(b"\";");
}

fn json_into(out: &mut Vec<u8>, j: &serde_json::Value, depth: usize) -> Result<(), String> {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    match j {
        J::Null => out.extend_from_slice(b"N;"),
        J::Bool(b) => bool_into(out, *b),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                int_into(out, i);
            } else if n.is_u64() {
                return Err(format!(
                    "{n} is beyond PHP's 64-bit integers; store it as a string"
                ));
            } else {
                // Not an integer: serde_json numbers are then finite f64s.
                float_into(out, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        J::String(s) => str_into(out, s.as_bytes()),
        J::Array(items) => {
            out.extend_from_slice(format!("a:{}:{{", items.len()).as_bytes());
            for (i, item) in items.iter().enumerate() {
                int_into(out, i as i64);
                json_into(out, item, depth + 1)?;
            }
            out.push(b'}');
        }
        J::Object(map) => {
            out.extend_from_slice(format!("a:{}:{{", map.len()).as_bytes());
            for (k, v) in map {
                match int_key(k.as_bytes()) {
                    Some(i) => int_into(out, i),
                    None => str_into(out, k.as_bytes()),
                }
                json_into(out, v, depth + 1)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// A key PHP stores as an integer (`ZEND_HANDLE_NUMERIC_STR`): `0`, or an optional `-` and
/// digits without a leading zero, within 64 bits; `-0` is not one.
fn int_key(k: &[u8]) -> Option<i64> {
    let digits = k.strip_prefix(b"-").unwrap_or(k);
    let canonical = match digits {
        [b'0'] => k.len() == 1,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !canonical {
        return None;
    }
    std::str::from_utf8(k).ok()?.parse().ok()
}

#[derive(Debug, PartialEq, Eq, Hash, Clone)]
enum Key {
    Int(i64),
    Str(Vec<u8>),
}

enum Item {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Vec<u8>),
    Array(Vec<(Key, Item)>),
}

/// An array as JSON: a list when its keys are exactly 0..n-1 in order, else an object with the
/// keys as text. `None` for a non-UTF-8 string or key, or a float JSON cannot hold.
fn to_json(item: Item) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match item {
        Item::Null => J::Null,
        Item::Bool(b) => J::Bool(b),
        Item::Int(i) => J::from(i),
        Item::Float(f) => J::Number(serde_json::Number::from_f64(f)?),
        Item::Str(s) => J::String(String::from_utf8(s).ok()?),
        Item::Array(entries) => {
            let is_list = entries
                .iter()
                .enumerate()
                .all(|(i, (k, _))| *k == Key::Int(i as i64));
            if is_list {
                J::Array(
                    entries
                        .into_iter()
                        .map(|(_, v)| to_json(v))
                        .collect::<Option<_>>()?,
                )
            } else {
                let mut map = serde_json::Map::new();
                for (k, v) in entries {
                    let k = match k {
                        Key::Int(i) => i.to_string(),
                        Key::Str(s) => String::from_utf8(s).ok()?,
                    };
                    map.insert(k, to_json(v)?);
                }
                J::Object(map)
            }
        }
    })
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.data.get(self.pos) == Some(&b)).then(|| self.pos += 1)
    }

    /// Bytes up to (not including) `end`, which is consumed.
    fn until(&mut self, end: u8) -> Option<&[u8]> {
        let rest = self.data.get(self.pos..)?;
        let n = rest.iter().position(|&b| b == end)?;
        self.pos += n + 1;
        Some(&rest[..n])
    }

    /// An unsigned length (`uiv`: digits only).
    fn len(&mut self, end: u8) -> Option<usize> {
        let t = self.until(end)?;
        if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(t).ok()?.parse().ok()
    }

    fn int(&mut self) -> Option<i64> {
        let t = self.until(b';')?;
        let digits = t.strip_prefix(b"-").or(t.strip_prefix(b"+")).unwrap_or(t);
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let s = std::str::from_utf8(t).ok()?;
        s.strip_prefix('+').unwrap_or(s).parse().ok()
    }

    fn float(&mut self) -> Option<f64> {
        let t = self.until(b';')?;
        match t {
            b"INF" => return Some(f64::INFINITY),
            b"-INF" => return Some(f64::NEG_INFINITY),
            b"NAN" => return Some(f64::NAN),
            _ => {}
        }
        // `[+-]? (digits | digits? "." digits | digits "." digits?) ([eE] [+-]? digits)?`; the
        // character check keeps out the words Rust's parser knows and PHP's does not (`inf`).
        let (mantissa, exp) = match t.iter().position(|&b| b == b'e' || b == b'E') {
            Some(i) => (&t[..i], Some(&t[i + 1..])),
            None => (t, None),
        };
        let mantissa = mantissa
            .strip_prefix(b"-")
            .or(mantissa.strip_prefix(b"+"))
            .unwrap_or(mantissa);
        let dots = mantissa.iter().filter(|&&b| b == b'.').count();
        let mantissa_ok = dots <= 1
            && mantissa.iter().any(u8::is_ascii_digit)
            && mantissa.iter().all(|&b| b == b'.' || b.is_ascii_digit());
        let exp_ok = exp.is_none_or(|e| {
            let e = e.strip_prefix(b"-").or(e.strip_prefix(b"+")).unwrap_or(e);
            !e.is_empty() && e.iter().all(u8::is_ascii_digit)
        });
        if !mantissa_ok || !exp_ok {
            return None;
        }
        std::str::from_utf8(t).ok()?.parse().ok()
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        let n = self.len(b':')?;
        self.eat(b'"')?;
        let end = self.pos.checked_add(n)?;
        let s = self.data.get(self.pos..end)?.to_vec();
        self.pos = end;
        self.eat(b'"')?;
        self.eat(b';')?;
        Some(s)
    }

    fn value(&mut self, depth: usize) -> Option<Item> {
        let tag = *self.data.get(self.pos)?;
        if tag == b'N' {
            self.pos += 1;
            self.eat(b';')?;
            return Some(Item::Null);
        }
        self.pos += 1;
        self.eat(b':')?;
        Some(match tag {
            b'b' => {
                let b = match self.until(b';')? {
                    b"0" => false,
                    b"1" => true,
                    _ => return None,
                };
                Item::Bool(b)
            }
            b'i' => Item::Int(self.int()?),
            b'd' => Item::Float(self.float()?),
            b's' => Item::Str(self.string()?),
            b'a' if depth < MAX_DEPTH => {
                let n = self.len(b':')?;
                self.eat(b'{')?;
                // Each element takes at least 4 bytes (`i:0;N;` is 6): `n` is not trusted for
                // the allocation.
                let mut entries: Vec<(Key, Item)> =
                    Vec::with_capacity(n.min(self.data.len().saturating_sub(self.pos) / 4));
                let mut index: HashMap<Key, usize> = HashMap::new();
                for _ in 0..n {
                    let key = match self.data.get(self.pos)? {
                        b'i' => {
                            self.pos += 1;
                            self.eat(b':')?;
                            Key::Int(self.int()?)
                        }
                        b's' => {
                            self.pos += 1;
                            self.eat(b':')?;
                            let s = self.string()?;
                            match int_key(&s) {
                                Some(i) => Key::Int(i),
                                None => Key::Str(s),
                            }
                        }
                        _ => return None,
                    };
                    let v = self.value(depth + 1)?;
                    match index.get(&key) {
                        Some(&at) => entries[at].1 = v,
                        None => {
                            index.insert(key.clone(), entries.len());
                            entries.push((key, v));
                        }
                    }
                }
                self.eat(b'}')?;
                Item::Array(entries)
            }
            _ => return None,
        })
    }
}
