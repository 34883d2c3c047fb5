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
//! earlier value in its place.
//!
//! Valid but outside the subset (`Ok(None)`: the caller keeps the bytes as
//! [`Value::Foreign`](crate::value::Value::Foreign)), each read to its end so that the rest of
//! the payload is checked too: objects (`O:`), custom-serialized objects (`C:`), enums (`E:`),
//! references (`r:`, `R:`) to a value read before, escaped strings (`S:`), and inside a list or
//! map a string that is not UTF-8 or a float that is not finite.
//!
//! Malformed ([`Bad`]): anything else PHP's grammar refuses or `serialize()` never writes — an
//! unknown tag, a truncated value, a string or count the input cannot hold (`TooLarge` when it is
//! beyond the maximum value size: a count of n entries is at least 6n bytes), `b:` other than
//! 0 or 1, an integer beyond 64 bits (PHP saturates with a warning), a key that is not `i:` or
//! `s:`, a class name PHP would refuse, a reference to a value not read yet (`r:0;`, or beyond
//! the values read), arrays and objects nested deeper than [`MAX_DEPTH`], bytes after the value
//! (PHP 8.3 warns), an empty payload. References are never followed, so they cannot expand.
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
use super::{Bad, Outcome, declared, malformed};
use crate::value::Value;

/// Nesting limit for reading and writing: `serde_json`'s own parser stops at 128, PHP's
/// `unserialize_max_depth` at 4096; 512 is PHP's `json_encode` default and keeps the recursion
/// (and `serde_json::Value`'s recursive drop) far from the stack's end.
pub(crate) const MAX_DEPTH: usize = 512;

/// The value; `Ok(None)` when valid but outside the subset.
pub(crate) fn decode(bytes: &[u8], max: usize) -> Outcome {
    let mut r = Reader {
        data: bytes,
        pos: 0,
        max,
        slots: 0,
    };
    let v = r.value(0)?;
    if r.pos != bytes.len() {
        return Err(malformed(format!(
            "{} bytes after the value",
            bytes.len() - r.pos
        )));
    }
    Ok(match v {
        Item::Null => Some(Value::Null),
        Item::Bool(b) => Some(Value::Bool(b)),
        Item::Int(i) => Some(Value::Int(i)),
        Item::Float(f) => Some(Value::Float(f)),
        Item::Str(s) => Some(super::super::text_or_bytes(s)),
        array @ Item::Array(_) => to_json(array).map(Value::Json),
        Item::Foreign => None,
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
    /// Valid, outside the subset (an object, a reference...).
    Foreign,
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
        Item::Foreign => return None,
    })
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// The maximum value size: a longer declared string is `TooLarge`.
    max: usize,
    /// Values read so far that a reference may name (PHP's `var_hash`: every value but `R:`
    /// and array keys, numbered from 1).
    slots: usize,
}

type Read<T> = Result<T, Bad>;

impl Reader<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    fn truncated(&self, what: &str) -> Bad {
        malformed(format!("{what} expected at byte {}", self.pos))
    }

    fn eat(&mut self, b: u8) -> Read<()> {
        if self.data.get(self.pos) == Some(&b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.truncated(&format!("{:?}", char::from(b))))
        }
    }

    /// Bytes up to (not including) `end`, which is consumed.
    fn until(&mut self, end: u8) -> Read<&[u8]> {
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .position(|&b| b == end)
            .ok_or_else(|| self.truncated(&format!("{:?}", char::from(end))))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    /// An unsigned length or count (`uiv`: digits only).
    fn len(&mut self, end: u8) -> Read<u64> {
        let at = self.pos;
        let t = self.until(end)?;
        if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
            return Err(malformed(format!("a length expected at byte {at}")));
        }
        // Digits only: not a number only when beyond u64, which no input holds.
        Ok(std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX))
    }

    fn int(&mut self) -> Read<i64> {
        let at = self.pos;
        let t = self.until(b';')?;
        let digits = t.strip_prefix(b"-").or(t.strip_prefix(b"+")).unwrap_or(t);
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(malformed(format!("an integer expected at byte {at}")));
        }
        let s = std::str::from_utf8(t).unwrap_or_default();
        s.strip_prefix('+')
            .unwrap_or(s)
            .parse()
            .map_err(|_| malformed(format!("the integer at byte {at} is beyond 64 bits")))
    }

    fn float(&mut self) -> Read<f64> {
        let at = self.pos;
        let t = self.until(b';')?;
        match t {
            b"INF" => return Ok(f64::INFINITY),
            b"-INF" => return Ok(f64::NEG_INFINITY),
            b"NAN" => return Ok(f64::NAN),
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
        let bad = || malformed(format!("a float expected at byte {at}"));
        if !mantissa_ok || !exp_ok {
            return Err(bad());
        }
        std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    }

    /// `len:"bytes"` (after the tag): the quoted bytes.
    fn quoted(&mut self) -> Read<&[u8]> {
        let at = self.pos;
        let n = self.len(b':')?;
        self.eat(b'"')?;
        let n = declared(n, 1, self.left(), self.max, "the string", at)?;
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        self.eat(b'"')?;
        Ok(s)
    }

    fn string(&mut self) -> Read<Vec<u8>> {
        let s = self.quoted()?.to_vec();
        self.eat(b';')?;
        Ok(s)
    }

    /// `S:len:"…";`: `len` characters, each a byte or `\` and two hex digits.
    fn escaped(&mut self) -> Read<()> {
        let at = self.pos;
        let n = self.len(b':')?;
        self.eat(b'"')?;
        let n = declared(n, 1, self.left(), self.max, "the string", at)?;
        for _ in 0..n {
            match self.data.get(self.pos) {
                Some(b'\\') => {
                    let hex = self.data.get(self.pos + 1..self.pos + 3);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return Err(malformed(format!("a bad escape at byte {}", self.pos)));
                    }
                    self.pos += 3;
                }
                Some(_) => self.pos += 1,
                None => return Err(self.truncated("a character")),
            }
        }
        self.eat(b'"')?;
        self.eat(b';')
    }

    /// A class name as PHP accepts it (`var_unserializer.re`: `[a-zA-Z0-9_\x80-\xff\\]`).
    fn class_name(&mut self) -> Read<()> {
        let at = self.pos;
        let name = self.quoted()?;
        let ok = !name.is_empty()
            && name
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'\\' || b >= 0x80);
        if ok {
            Ok(())
        } else {
            Err(malformed(format!("a bad class name at byte {at}")))
        }
    }

    /// A reference's target: a value read before (1-based).
    fn target(&mut self, slots: usize) -> Read<()> {
        let at = self.pos;
        let n = self.int()?;
        if n < 1 || n as u64 > slots as u64 {
            return Err(malformed(format!(
                "the reference at byte {at} names value {n}, {slots} were read"
            )));
        }
        Ok(())
    }

    /// A key of an array or object: `i:` or `s:`.
    fn key(&mut self) -> Read<Key> {
        match self.data.get(self.pos) {
            Some(b'i') => {
                self.pos += 1;
                self.eat(b':')?;
                Ok(Key::Int(self.int()?))
            }
            Some(b's') => {
                self.pos += 1;
                self.eat(b':')?;
                let s = self.string()?;
                Ok(match int_key(&s) {
                    Some(i) => Key::Int(i),
                    None => Key::Str(s),
                })
            }
            Some(_) => Err(malformed(format!("a key expected at byte {}", self.pos))),
            None => Err(self.truncated("a key")),
        }
    }

    /// `count:{` key value … `}` (after the tag), at `depth`; `None` when `collect` is false.
    fn entries(&mut self, depth: usize, collect: bool) -> Read<Option<Vec<(Key, Item)>>> {
        if depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        let at = self.pos;
        let n = self.len(b':')?;
        self.eat(b'{')?;
        // Each entry takes at least 6 bytes (`i:0;N;`).
        let n = declared(n, 6, self.left(), self.max, "the array", at)?;
        let mut entries: Vec<(Key, Item)> = Vec::with_capacity(if collect { n } else { 0 });
        let mut index: HashMap<Key, usize> = HashMap::new();
        for _ in 0..n {
            let key = self.key()?;
            let v = self.value(depth + 1)?;
            if !collect {
                continue;
            }
            match index.get(&key) {
                Some(&at) => entries[at].1 = v,
                None => {
                    index.insert(key.clone(), entries.len());
                    entries.push((key, v));
                }
            }
        }
        self.eat(b'}')?;
        Ok(collect.then_some(entries))
    }

    fn value(&mut self, depth: usize) -> Read<Item> {
        let tag = *self
            .data
            .get(self.pos)
            .ok_or_else(|| self.truncated("a value"))?;
        let at = self.pos;
        // The slots a reference here may name: those before this value.
        let before = self.slots;
        if tag != b'R' {
            self.slots += 1;
        }
        self.pos += 1;
        if tag == b'N' {
            self.eat(b';')?;
            return Ok(Item::Null);
        }
        self.eat(b':')?;
        Ok(match tag {
            b'b' => match self.until(b';')? {
                b"0" => Item::Bool(false),
                b"1" => Item::Bool(true),
                _ => return Err(bad_bool(at)),
            },
            b'i' => Item::Int(self.int()?),
            b'd' => Item::Float(self.float()?),
            b's' => Item::Str(self.string()?),
            b'a' => Item::Array(self.entries(depth, true)?.unwrap_or_default()),
            b'O' => {
                self.class_name()?;
                self.eat(b':')?;
                self.entries(depth, false)?;
                Item::Foreign
            }
            b'C' | b'E' | b'r' | b'R' | b'S' => self.outside(tag, at, before)?,
            _ => return Err(unknown_tag(tag, at)),
        })
    }

    /// The values outside the subset that hold no values, read to their end (kept out of
    /// [`Reader::value`] so that its frame, once per level of nesting, stays small).
    #[inline(never)]
    fn outside(&mut self, tag: u8, at: usize, before: usize) -> Read<Item> {
        match tag {
            b'C' => {
                self.class_name()?;
                self.eat(b':')?;
                let n = self.len(b':')?;
                self.eat(b'{')?;
                let n = declared(n, 1, self.left(), self.max, "the object", at)?;
                self.pos += n;
                self.eat(b'}')?;
            }
            b'E' => {
                let name = self.quoted()?;
                if !name.contains(&b':') {
                    return Err(malformed(format!("an enum without a case at byte {at}")));
                }
                self.eat(b';')?;
            }
            b'r' | b'R' => self.target(before)?,
            _ => self.escaped()?,
        }
        Ok(Item::Foreign)
    }
}

#[cold]
#[inline(never)]
fn unknown_tag(tag: u8, at: usize) -> Bad {
    malformed(format!("unknown tag {:?} at byte {at}", char::from(tag)))
}

#[cold]
#[inline(never)]
fn too_deep() -> Bad {
    malformed(format!(
        "arrays and objects nested deeper than {MAX_DEPTH} levels"
    ))
}

#[cold]
#[inline(never)]
fn bad_bool(at: usize) -> Bad {
    malformed(format!("a bool other than 0 or 1 at byte {at}"))
}
