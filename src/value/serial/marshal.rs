//! Ruby `Marshal` 4.8 (dalli's default serializer), the subset dalli stores for plain data, read
//! and written by hand: the two crates that read all 35 of dalli's Marshal payloads
//! (value-vectors/CRATES.md, section 5) are `marshal-rs` (WTFPL) and `alox-48` (MPL-2.0), and
//! neither licence was judged fit for a MIT/Apache-2.0 crate; the third, `thurgood`, misreads
//! binary strings and big integers.
//!
//! Format: Ruby's `marshal.c` (`w_object` / `r_object`), checked against Ruby 3.1's
//! `Marshal.dump` by the fixtures `value-vectors/dalli.json` (`default/*`).
//!
//! | bytes | Ruby | [`Value`] |
//! |---|---|---|
//! | `0` `T` `F` | nil, true, false | `Null`, `Bool` |
//! | `i` + packed long | Integer within ±2^30 | `Int` |
//! | `l` + sign + length in 16-bit words + little-endian magnitude | any other Integer | `Int`, or `BigInt` beyond 64 bits |
//! | `f` + length + text (`3.14`, `1e100`, `-0`, `inf`, `nan`) | Float | `Float` |
//! | `"` + length + bytes | binary (ASCII-8BIT) String | `Bytes` |
//! | `I"` … + ivars `E` true / false | UTF-8 / US-ASCII String | `String` |
//! | `:` / `;` (symbol, symbol link) | Symbol | `String` |
//! | `[` / `{` | Array / Hash with String or Symbol keys | `Json` |
//! | `@` + index | a link to an object written before | that object |
//!
//! Valid but outside the subset (`Ok(None)`: the caller keeps the bytes as `Foreign`), each
//! read to its end so that the rest of the payload is checked too: objects (`o`), structs
//! (`S`), `_dump` / `marshal_dump` objects (`u`, `U`), classes and modules (`c`, `m`, `M`),
//! extended objects (`e`), user subclasses (`C`), Regexps (`/`), Data (`d`), objects with
//! instance variables (`I` around anything but a String or Symbol), a String with another
//! encoding or other ivars, a binary Symbol, a Hash with a default (`}`) or keys that are not
//! Strings or Symbols or two keys of the same text, a link to an object still being read (a
//! recursive structure), and inside an Array or Hash: binary strings, non-finite floats,
//! integers beyond 64 bits.
//!
//! Malformed ([`Bad`]): a version other than 4.8, an unknown type byte, a truncated value, a
//! negative length, a length or count the input cannot hold (`TooLarge` beyond the maximum
//! value size), a link (`@`) or symbol link (`;`) to nothing read yet, a float that is not
//! Ruby's text, a bignum sign other than `+` / `-`, and the limits: nesting deeper than
//! [`MAX_DEPTH`], links copying more than [`COPY_FACTOR`] times the input's size (a link is 2
//! bytes, the object it copies need not be), a bignum beyond [`MAX_BIGNUM_BYTES`] (its decimal
//! text is quadratic), bytes after the value (`Marshal.load` ignores them; dalli never writes
//! them).
//!
//! Untrusted input: every length is checked against the input left and the maximum value size
//! before anything is allocated.

use std::collections::HashMap;

use serde_json::Value as J;

use super::{Bad, Outcome, declared, malformed};
use crate::value::Value;

/// Nesting levels of Arrays, Hashes and ivars read.
const MAX_DEPTH: usize = 128;

/// The bytes links may copy, as a multiple of the input's size.
const COPY_FACTOR: usize = 16;

/// The largest bignum magnitude read, in bytes (about 9,860 decimal digits).
const MAX_BIGNUM_BYTES: usize = 4096;

/// The value; `Ok(None)` when valid but outside the subset.
pub(crate) fn decode(bytes: &[u8], max: usize) -> Outcome {
    let rest = bytes
        .strip_prefix(&[4, 8])
        .ok_or_else(|| malformed("not Marshal 4.8 (04 08)"))?;
    let mut r = Reader {
        data: rest,
        pos: 0,
        max,
        symbols: Vec::new(),
        objects: Vec::new(),
        budget: bytes.len().saturating_mul(COPY_FACTOR),
    };
    let v = r.object(0)?;
    // Marshal.load ignores what follows the object; dalli never writes it.
    if r.pos != r.data.len() {
        return Err(malformed(format!(
            "{} bytes after the value",
            r.data.len() - r.pos
        )));
    }
    Ok(v)
}

/// An object Ruby registers for links (`r_entry`).
enum Slot {
    /// Still being read: a link to it is a cycle.
    Reading,
    /// Read: its value, `None` when outside the subset.
    Read(Option<Value>),
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// The maximum value size.
    max: usize,
    /// Symbols in the order read (`;` + index), `None` for one that is not UTF-8 text.
    symbols: Vec<Option<String>>,
    /// Objects in the order Ruby registers them.
    objects: Vec<Slot>,
    /// Bytes links may still copy.
    budget: usize,
}

type Read<T> = Result<T, Bad>;

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Read<u8> {
        let b = *self
            .data
            .get(self.pos)
            .ok_or_else(|| malformed(format!("truncated at byte {}", self.pos + 2)))?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        let s = self
            .data
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| malformed(format!("truncated at byte {}", self.pos + 2)))?;
        self.pos += n;
        Ok(s)
    }

    /// `r_long`: 0; 5..=127 → n − 5; −128..=−5 → n + 5; 1..=4: that many little-endian
    /// bytes follow; −1..=−4: that many low bytes of a negative number.
    fn long(&mut self) -> Read<i64> {
        let c = self.byte()? as i8;
        Ok(match c {
            0 => 0,
            5..=127 => i64::from(c) - 5,
            -128..=-5 => i64::from(c) + 5,
            1..=4 => {
                let mut x: i64 = 0;
                for (i, &b) in self.take(c as usize)?.iter().enumerate() {
                    x |= i64::from(b) << (8 * i);
                }
                x
            }
            -4..=-1 => {
                let n = c.unsigned_abs() as usize;
                let mut x: u64 = u64::MAX;
                for (i, &b) in self.take(n)?.iter().enumerate() {
                    x &= !(0xff_u64 << (8 * i));
                    x |= u64::from(b) << (8 * i);
                }
                x as i64
            }
        })
    }

    /// A length of units of at least `per` bytes: not negative, within the input left and the
    /// maximum value size.
    fn len(&mut self, per: u64) -> Read<usize> {
        let at = self.pos + 2;
        let n = self.long()?;
        let n = u64::try_from(n)
            .map_err(|_| malformed(format!("a negative length ({n}) at byte {at}")))?;
        let left = self.data.len() - self.pos;
        declared(n, per, left, self.max, "the length", at)
    }

    fn bytes(&mut self) -> Read<&'a [u8]> {
        let n = self.len(1)?;
        self.take(n)
    }

    fn register(&mut self) -> usize {
        self.objects.push(Slot::Reading);
        self.objects.len() - 1
    }

    /// Registers `v` (read) in slot `at` and gives it back.
    fn done(&mut self, at: usize, v: Option<Value>) -> Option<Value> {
        self.objects[at] = Slot::Read(v.clone());
        v
    }

    fn object(&mut self, depth: usize) -> Read<Option<Value>> {
        if depth > MAX_DEPTH {
            return Err(malformed(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let at_byte = self.pos + 2;
        Ok(match self.byte()? {
            b'0' => Some(Value::Null),
            b'T' => Some(Value::Bool(true)),
            b'F' => Some(Value::Bool(false)),
            b'i' => Some(Value::Int(self.long()?)),
            b':' | b';' => {
                self.pos -= 1;
                self.symbol(depth)?.map(Value::String)
            }
            b'l' => {
                let at = self.register();
                let sign = self.byte()?;
                let words = self.len(2)?;
                let v = bignum(sign, self.take(words * 2)?)?;
                self.done(at, Some(v))
            }
            b'f' => {
                let at = self.register();
                let text = self.bytes()?;
                let f = float(text).ok_or_else(|| {
                    malformed(format!("a float that is not a number at byte {at_byte}"))
                })?;
                self.done(at, Some(Value::Float(f)))
            }
            b'"' => {
                let at = self.register();
                let v = Value::Bytes(self.bytes()?.to_vec());
                self.done(at, Some(v))
            }
            b'I' => self.with_ivars(depth)?,
            b'[' => {
                let at = self.register();
                let n = self.len(1)?;
                let mut items = Some(Vec::with_capacity(n));
                for _ in 0..n {
                    let item = self.object(depth + 1)?.and_then(json);
                    items = items.zip(item).map(|(mut items, item)| {
                        items.push(item);
                        items
                    });
                }
                self.done(at, items.map(|i| Value::Json(J::Array(i))))
            }
            tag @ (b'{' | b'}') => {
                let at = self.register();
                let n = self.len(2)?;
                let mut map = Some(serde_json::Map::new());
                for _ in 0..n {
                    let k = self.object(depth + 1)?;
                    let v = self.object(depth + 1)?.and_then(json);
                    map = match (map, k, v) {
                        // "a" and :a are two keys to Ruby, one to JSON.
                        (Some(mut map), Some(Value::String(k)), Some(v)) => {
                            map.insert(k, v).is_none().then_some(map)
                        }
                        _ => None,
                    };
                }
                if tag == b'}' {
                    self.object(depth + 1)?; // the default
                    map = None;
                }
                self.done(at, map.map(|m| Value::Json(J::Object(m))))
            }
            b'@' => {
                let n = self.long()?;
                let slot = usize::try_from(n).ok().and_then(|i| self.objects.get(i));
                match slot {
                    None => {
                        return Err(malformed(format!(
                            "a link to object {n} at byte {at_byte}, {} were read",
                            self.objects.len()
                        )));
                    }
                    Some(Slot::Reading | Slot::Read(None)) => None,
                    Some(Slot::Read(Some(v))) => {
                        let cost = weight(v);
                        self.budget = self.budget.checked_sub(cost).ok_or_else(|| {
                            malformed(format!(
                                "links copy more than {COPY_FACTOR} times the payload's size"
                            ))
                        })?;
                        Some(v.clone())
                    }
                }
            }
            // An object, a struct: class, then ivars or members.
            b'o' | b'S' => {
                let at = self.register();
                self.symbol(depth)?;
                self.ivars(depth)?;
                self.done(at, None)
            }
            // _dump: class and bytes; registered after.
            b'u' => {
                self.symbol(depth)?;
                self.bytes()?;
                let at = self.register();
                self.done(at, None)
            }
            // marshal_dump, Data: class and an object.
            b'U' | b'd' => {
                let at = self.register();
                self.symbol(depth)?;
                self.object(depth + 1)?;
                self.done(at, None)
            }
            // extended, user subclass: a module or class, then the object.
            b'e' | b'C' => {
                self.symbol(depth)?;
                self.object(depth + 1)?;
                None
            }
            // class, module, old module: the name.
            b'c' | b'm' | b'M' => {
                let at = self.register();
                self.bytes()?;
                self.done(at, None)
            }
            // Regexp: source and options.
            b'/' => {
                let at = self.register();
                self.bytes()?;
                self.byte()?;
                self.done(at, None)
            }
            other => {
                return Err(malformed(format!(
                    "unknown type byte {other:#04x} at byte {at_byte}"
                )));
            }
        })
    }

    /// A count, then that many (symbol, object) pairs, all read and dropped.
    fn ivars(&mut self, depth: usize) -> Read<()> {
        let n = self.len(2)?;
        for _ in 0..n {
            self.symbol(depth)?;
            self.object(depth + 1)?;
        }
        Ok(())
    }

    /// `:` + name (a new symbol), `;` + index (one read before), or `I:` + name + ivars; `None`
    /// for a symbol that is not UTF-8 text.
    fn symbol(&mut self, depth: usize) -> Read<Option<String>> {
        if depth > MAX_DEPTH {
            return Err(malformed(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let at_byte = self.pos + 2;
        match self.byte()? {
            b':' => {
                let name = String::from_utf8(self.bytes()?.to_vec()).ok();
                self.symbols.push(name.clone());
                Ok(name)
            }
            b';' => {
                let n = self.long()?;
                match usize::try_from(n).ok().and_then(|i| self.symbols.get(i)) {
                    Some(s) => Ok(s.clone()),
                    None => Err(malformed(format!(
                        "a link to symbol {n} at byte {at_byte}, {} were read",
                        self.symbols.len()
                    ))),
                }
            }
            b'I' if self.data.get(self.pos) == Some(&b':') => {
                self.pos += 1;
                let raw = self.bytes()?;
                let at = self.symbols.len();
                self.symbols.push(None);
                let name = self.encoded(raw, false, depth)?;
                let name = match name {
                    Some(Value::String(s)) => Some(s),
                    _ => None,
                };
                self.symbols[at] = name.clone();
                Ok(name)
            }
            other => Err(malformed(format!(
                "a symbol expected at byte {at_byte}, found {other:#04x}"
            ))),
        }
    }

    /// The ivars of a String (`binary`) or Symbol: only the encoding flag `E` (true: UTF-8,
    /// false: US-ASCII) makes text; `encoding` (another encoding) or any other ivar is outside
    /// the subset. A String without ivars is `Bytes`.
    fn encoded(&mut self, raw: &[u8], binary: bool, depth: usize) -> Read<Option<Value>> {
        let n = self.len(2)?;
        let mut encoding = None;
        let mut plain = true;
        for _ in 0..n {
            let name = self.symbol(depth + 1)?;
            let flag = self.object(depth + 1)?;
            match (name.as_deref(), flag) {
                (Some("E"), Some(Value::Bool(utf8))) if encoding.is_none() => {
                    encoding = Some(utf8);
                }
                _ => plain = false,
            }
        }
        let text = || String::from_utf8(raw.to_vec()).ok().map(Value::String);
        Ok(match encoding {
            _ if !plain => None,
            Some(true) => text(),
            Some(false) if raw.is_ascii() => text(),
            Some(false) => None,
            None if binary => Some(Value::Bytes(raw.to_vec())),
            None => text(),
        })
    }

    /// `I` + an object + its instance variables: a String or Symbol with its encoding, or
    /// anything else (outside the subset).
    fn with_ivars(&mut self, depth: usize) -> Read<Option<Value>> {
        match self.data.get(self.pos) {
            Some(b'"') => {
                self.pos += 1;
                let at = self.register();
                let raw = self.bytes()?;
                let v = self.encoded(raw, true, depth)?;
                Ok(self.done(at, v))
            }
            Some(b':') => {
                self.pos -= 1;
                Ok(self.symbol(depth)?.map(Value::String))
            }
            _ => {
                self.object(depth + 1)?;
                self.ivars(depth)?;
                Ok(None)
            }
        }
    }
}

/// A scalar or nested value as an element of a JSON array or object.
fn json(v: Value) -> Option<J> {
    Some(match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(b),
        Value::Int(i) => J::from(i),
        Value::BigInt(d) => J::from(d.parse::<u64>().ok()?),
        Value::Float(f) => J::Number(serde_json::Number::from_f64(f)?),
        Value::String(s) => J::String(s),
        Value::Json(j) => j,
        _ => return None,
    })
}

/// About the bytes a copy of `v` takes.
fn weight(v: &Value) -> usize {
    fn j(v: &J) -> usize {
        match v {
            J::String(s) => s.len() + 1,
            J::Array(a) => a.iter().map(j).sum::<usize>() + 1,
            J::Object(m) => m.iter().map(|(k, v)| k.len() + j(v)).sum::<usize>() + 1,
            _ => 1,
        }
    }
    match v {
        Value::String(s) | Value::BigInt(s) => s.len() + 1,
        Value::Bytes(b) => b.len() + 1,
        Value::Json(v) => j(v),
        _ => 1,
    }
}

/// `f`: Ruby writes `inf`, `-inf`, `nan`, or the shortest decimal that reads back (`strtod`).
fn float(text: &[u8]) -> Option<f64> {
    match text {
        b"inf" => Some(f64::INFINITY),
        b"-inf" => Some(f64::NEG_INFINITY),
        b"nan" => Some(f64::NAN),
        _ => {
            // Only a decimal number: Rust also reads `inf`, `NaN` and `infinity`, which Ruby
            // spells otherwise.
            if text.is_empty()
                || !text
                    .iter()
                    .all(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
            {
                return None;
            }
            std::str::from_utf8(text).ok()?.parse().ok()
        }
    }
}

/// `l`: a sign byte (`+` / `-`) and the little-endian magnitude.
fn bignum(sign: u8, le: &[u8]) -> Read<Value> {
    let negative = match sign {
        b'+' => false,
        b'-' => true,
        _ => return Err(malformed(format!("a bignum sign {sign:#04x}"))),
    };
    let significant = le.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    if significant > MAX_BIGNUM_BYTES {
        return Err(malformed(format!(
            "a bignum of {significant} bytes, beyond the limit of {MAX_BIGNUM_BYTES}"
        )));
    }
    let le = &le[..significant];
    if le.len() <= 8 {
        let mut m = [0u8; 8];
        m[..le.len()].copy_from_slice(le);
        let m = u64::from_le_bytes(m);
        let i = if negative {
            0i64.checked_sub_unsigned(m)
        } else {
            i64::try_from(m).ok()
        };
        if let Some(i) = i {
            return Ok(Value::Int(i));
        }
    }
    let digits = le_to_decimal(le);
    Ok(Value::BigInt(if negative {
        format!("-{digits}")
    } else {
        digits
    }))
}

/// A little-endian magnitude as decimal text (schoolbook division by 10^9).
fn le_to_decimal(le: &[u8]) -> String {
    let mut limbs: Vec<u32> = le
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect();
    let mut groups = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem: u64 = 0;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*l);
            *l = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        groups.push(rem as u32);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut out = match groups.pop() {
        Some(g) => g.to_string(),
        None => return "0".to_owned(),
    };
    for g in groups.iter().rev() {
        out.push_str(&format!("{g:09}"));
    }
    out
}

/// Decimal digits (no sign) as a little-endian magnitude, without trailing zero bytes.
fn decimal_to_le(digits: &str) -> Vec<u8> {
    let mut limbs: Vec<u32> = Vec::new();
    let bytes = digits.as_bytes();
    let first = bytes.len() % 9;
    let chunks = std::iter::once(&bytes[..first])
        .filter(|c| !c.is_empty())
        .chain(bytes[first..].chunks(9));
    for chunk in chunks {
        let mut mul = 1u64;
        let mut add = 0u64;
        for &d in chunk {
            mul *= 10;
            add = add * 10 + u64::from(d - b'0');
        }
        let mut carry = add;
        for l in &mut limbs {
            let cur = u64::from(*l) * mul + carry;
            *l = cur as u32;
            carry = cur >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    let mut out: Vec<u8> = limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
    while out.last() == Some(&0) {
        out.pop();
    }
    out
}

/// The value's bytes in this format; `Err` names what the format cannot hold.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, String> {
    let mut w = Writer {
        out: vec![4, 8],
        objects: 0,
        flonums: HashMap::new(),
        keys: HashMap::new(),
        wrote_e: false,
    };
    w.value(value)?;
    Ok(w.out)
}

/// `Marshal.dump` of the value as Ruby builds it from JSON-like data (`JSON.parse`, literals):
/// which objects are the same object decides where Ruby writes a link (`@`) instead.
struct Writer {
    out: Vec<u8>,
    /// Objects written so far: the next one's index (`w_remember`).
    objects: usize,
    /// Floats that are flonums (immediates: equal ones are the same object) → their index.
    flonums: HashMap<u64, usize>,
    /// Hash keys → their index: Ruby deduplicates String keys (`rb_hash_key_str` freezes them
    /// into the fstring table), so `[{"id"=>1}, {"id"=>2}]` links the second `"id"`.
    keys: HashMap<String, usize>,
    /// The symbol `:E` was written (later strings link it: `;\0`).
    wrote_e: bool,
}

impl Writer {
    /// `w_long`: Ruby refuses anything beyond 32 bits ("long too big to dump").
    fn long(&mut self, x: i32) {
        match x {
            0 => self.out.push(0),
            1..=122 => self.out.push((x + 5) as u8),
            -123..=-1 => self.out.push((x - 5) as u8),
            _ => {
                let bytes = x.to_le_bytes();
                let mut n: u8 = 0;
                let mut rest = x;
                while n < 4 {
                    n += 1;
                    rest >>= 8;
                    if rest == 0 || rest == -1 {
                        break;
                    }
                }
                self.out.push(if x < 0 { n.wrapping_neg() } else { n });
                self.out.extend_from_slice(&bytes[..usize::from(n)]);
            }
        }
    }

    fn len(&mut self, n: usize) -> Result<(), String> {
        let n = i32::try_from(n).map_err(|_| "longer than Marshal's 32-bit lengths".to_owned())?;
        self.long(n);
        Ok(())
    }

    fn remember(&mut self) -> usize {
        self.objects += 1;
        self.objects - 1
    }

    fn link(&mut self, at: usize) -> Result<(), String> {
        self.out.push(b'@');
        self.len(at)
    }

    fn value(&mut self, v: &Value) -> Result<(), String> {
        match v {
            Value::Null => self.out.push(b'0'),
            Value::Bool(true) => self.out.push(b'T'),
            Value::Bool(false) => self.out.push(b'F'),
            Value::Int(i) => self.int(*i)?,
            Value::BigInt(d) => {
                let (negative, digits) = match d.strip_prefix('-') {
                    Some(digits) => (true, digits),
                    None => (false, d.as_str()),
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!("{d:?} is not a decimal integer"));
                }
                let le = decimal_to_le(digits);
                // A BigInt that fits is an Integer like any other: fixnum or bignum by size.
                if le.len() <= 8 {
                    let mut m = [0u8; 8];
                    m[..le.len()].copy_from_slice(&le);
                    let m = u64::from_le_bytes(m);
                    let i = if negative {
                        0i64.checked_sub_unsigned(m)
                    } else {
                        i64::try_from(m).ok()
                    };
                    if let Some(i) = i {
                        return self.int(i);
                    }
                }
                self.bignum(negative, &le)?;
            }
            Value::Float(f) => self.float(*f)?,
            Value::String(s) => self.string(s)?,
            Value::Bytes(b) => {
                self.remember();
                self.out.push(b'"');
                self.len(b.len())?;
                self.out.extend_from_slice(b);
            }
            Value::Json(j) => self.json(j)?,
            other => return Err(format!("a {} value has no Marshal form", other.kind())),
        }
        Ok(())
    }

    fn json(&mut self, j: &J) -> Result<(), String> {
        match j {
            J::Null => self.out.push(b'0'),
            J::Bool(b) => self.out.push(if *b { b'T' } else { b'F' }),
            J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => self.int(i)?,
                (_, Some(u), _) => self.bignum(false, &trimmed(u.to_le_bytes().to_vec()))?,
                (_, _, Some(f)) => self.float(f)?,
                _ => return Err(format!("the number {n} is neither an integer nor a float")),
            },
            J::String(s) => self.string(s)?,
            J::Array(items) => {
                self.remember();
                self.out.push(b'[');
                self.len(items.len())?;
                for item in items {
                    self.json(item)?;
                }
            }
            J::Object(map) => {
                self.remember();
                self.out.push(b'{');
                self.len(map.len())?;
                for (k, v) in map {
                    match self.keys.get(k) {
                        Some(&at) => self.link(at)?,
                        None => {
                            let at = self.objects;
                            self.string(k)?;
                            self.keys.insert(k.clone(), at);
                        }
                    }
                    self.json(v)?;
                }
            }
        }
        Ok(())
    }

    /// Ruby writes an Integer as a fixnum (`i`) only within 31 bits (`marshal.c`: `RSHIFT(obj,
    /// 31)` of the tagged VALUE), else as a bignum: `2**30` is `l`.
    fn int(&mut self, i: i64) -> Result<(), String> {
        if let Ok(small) = i32::try_from(i)
            && (-(1 << 30)..(1 << 30)).contains(&small)
        {
            self.out.push(b'i');
            self.long(small);
            Ok(())
        } else {
            self.bignum(i < 0, &trimmed(i.unsigned_abs().to_le_bytes().to_vec()))
        }
    }

    /// `l`, sign, the length in 16-bit words, the magnitude padded to whole words.
    fn bignum(&mut self, negative: bool, le: &[u8]) -> Result<(), String> {
        self.remember();
        self.out.push(b'l');
        self.out.push(if negative { b'-' } else { b'+' });
        let words = le.len().div_ceil(2);
        self.len(words)?;
        self.out.extend_from_slice(le);
        if le.len() % 2 == 1 {
            self.out.push(0);
        }
        Ok(())
    }

    /// `I"` + the bytes + one ivar, `E` = true (UTF-8): `:\x06E` the first time, `;\0` after.
    fn string(&mut self, s: &str) -> Result<(), String> {
        self.remember();
        self.out.extend_from_slice(b"I\"");
        self.len(s.len())?;
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(6); // one ivar
        if self.wrote_e {
            self.out.extend_from_slice(b";\x00");
        } else {
            self.out.extend_from_slice(b":\x06E");
            self.wrote_e = true;
        }
        self.out.push(b'T');
        Ok(())
    }

    /// `f` + Ruby's text (`w_float`). A flonum (Ruby's immediate floats) seen before is a link.
    fn float(&mut self, f: f64) -> Result<(), String> {
        if is_flonum(f) {
            if let Some(&at) = self.flonums.get(&f.to_bits()) {
                return self.link(at);
            }
            let at = self.remember();
            self.flonums.insert(f.to_bits(), at);
        } else {
            self.remember();
        }
        let text = ruby_float(f);
        self.out.push(b'f');
        self.len(text.len())?;
        self.out.extend_from_slice(text.as_bytes());
        Ok(())
    }
}

fn trimmed(mut le: Vec<u8>) -> Vec<u8> {
    while le.last() == Some(&0) {
        le.pop();
    }
    le
}

/// Ruby's `rb_float_new_inline` (`internal/numeric.h`, 64-bit): a float is an immediate
/// "flonum" when bits 62..60 of its IEEE bits are 0b011 or 0b100 (exponents near 0; not the
/// one value 0x3000000000000000), or it is +0.0. Others (−0.0, ±inf, NaN, very large or small
/// magnitudes) are heap objects: two equal ones are two objects.
fn is_flonum(f: f64) -> bool {
    let v = f.to_bits();
    let bits = (v >> 60) & 0x7;
    (v != 0x3000_0000_0000_0000 && (bits == 3 || bits == 4)) || v == 0
}

/// `w_float` (`marshal.c`): `inf`, `-inf`, `nan`, `0` / `-0`, else the shortest round-trip
/// digits (`ruby_dtoa` mode 0) as `ddd`, `ddd.ddd`, `0.000ddd`, or `d.ddde±x` when the decimal
/// point is more than 3 places before the digits or after them (`1e2` for 100.0, `1e-5`).
pub(crate) fn ruby_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (negative, digits, decpt) = shortest(f);
    let digs = digits.len() as i32;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if decpt < -3 || decpt > digs {
        out.push_str(&digits[..1]);
        if digs > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!("e{}", decpt - 1));
    } else if decpt > 0 {
        let (int, frac) = digits.split_at(decpt as usize);
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
    } else {
        out.push_str("0.");
        out.push_str(&"0".repeat((-decpt) as usize));
        out.push_str(&digits);
    }
    out
}

/// The shortest digits that read back as `f` (finite, not zero), and the decimal point's
/// position (`ruby_dtoa`'s `decpt`: 0.314e1 → ("314", 1)). Rust's `{:e}` prints the shortest
/// round-trip digits, as dtoa mode 0 does.
pub(crate) fn shortest(f: f64) -> (bool, String, i32) {
    let text = format!("{:e}", f.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (f.is_sign_negative(), digits, exp + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy limit counts what a copy holds: each key's bytes and each value's.
    #[test]
    fn a_copy_weighs_its_keys_and_values() {
        let v = Value::Json(serde_json::json!({"abc": "de", "f": [null, 1]}));
        // the object 1, "abc" 3, "de" 2 + 1, "f" 1, the Array 1 + its two scalars 1 each
        assert_eq!(weight(&v), 1 + 3 + 3 + 1 + 3);
        assert_eq!(weight(&Value::String("abcd".into())), 5);
        assert_eq!(weight(&Value::Bytes(vec![0; 9])), 10);
    }
}
