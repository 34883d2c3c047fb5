//! Python pickle (pylibmc flags 1), read and written with `serde-pickle` (value-vectors/CRATES.md,
//! section 4: 25/25 of pylibmc's pickles, protocols 0-5).
//!
//! Reading: the JSON-like subset only. `None`, `bool`, `int`, `float`, `str` and, at the top,
//! `bytes` are their typed variants; a `list` or `tuple` is a JSON array, a `dict` whose keys are
//! all `str` a JSON object. Sets, class instances, other keys, and inside a list or dict `bytes`,
//! non-finite floats and integers beyond 64 bits give `None` (the peer's module then returns
//! `Foreign`).
//!
//! Before serde-pickle sees a byte, [`check`] walks the opcodes, because serde-pickle trusts the
//! stream where a cache value must not be trusted:
//! - it allocates a `bytes`/`str` from its length field before reading it (`BINBYTES8` of
//!   2^60 bytes aborts the process): every length is checked against the input left;
//! - it resolves memo references (`GET`) by cloning, so a list that holds the same list twice,
//!   nested 40 times, is 2^40 values from a few hundred bytes. Python writes `GET` for any
//!   object it meets twice, and `json.loads` shares the keys of a list of records, so a `GET`
//!   of a scalar is kept (its copies are counted, at most [`COPY_FACTOR`] times the pickle's
//!   size), a `GET` of a list, tuple or dict gives `None`; so do `DUP` and a `PUT` of an
//!   object already in the memo, which also clone in serde-pickle and which Python never writes;
//! - it recurses once per level of nesting: more than [`MAX_DEPTH`] levels give `None`;
//! - it would resolve `GLOBAL` and `REDUCE` for sets: every opcode outside the data subset
//!   (globals, instances, sets, extensions, buffers, persistent ids, Python 2 `str`) gives
//!   `None` before any of them runs. Nothing is ever imported or called.
//!
//! Writing: serde-pickle's protocol 3 (pylibmc 1.6.3 writes protocol 5 with Python 3.11, and
//! reads any protocol: `pickle.loads`). So memshard's pickles are not pylibmc's bytes, they are
//! its values.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value as J;
use serde_pickle::{DeOptions, HashableValue, SerOptions, Value as P};

use crate::value::Value;

/// Nesting levels of lists, tuples and dicts read (serde-pickle and the conversion recurse).
const MAX_DEPTH: usize = 128;

/// The bytes serde-pickle may copy for memo references, as a multiple of the pickle's size.
const COPY_FACTOR: usize = 16;

/// The longest integer read, in bytes (`LONG1`/`LONG4`) or digits (`INT`/`LONG`): turning it
/// into decimal text is quadratic. Python 3.11 itself refuses `str()` of an int beyond 4300
/// digits.
const MAX_INT_BYTES: usize = 4096;
const MAX_INT_DIGITS: usize = 10_000;

/// The value, or `None` when the bytes hold something outside the JSON-like subset.
pub(crate) fn decode(bytes: &[u8]) -> Option<Value> {
    check(bytes)?;
    let v = serde_pickle::value_from_slice(bytes, DeOptions::new()).ok()?;
    top(v)
}

fn top(v: P) -> Option<Value> {
    Some(match v {
        P::None => Value::Null,
        P::Bool(b) => Value::Bool(b),
        P::I64(i) => Value::Int(i),
        P::Int(b) => match i64::try_from(&b) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt(b.to_string()),
        },
        P::F64(f) => Value::Float(f),
        P::Bytes(b) => Value::Bytes(b),
        P::String(s) => Value::String(s),
        v @ (P::List(_) | P::Tuple(_) | P::Dict(_)) => Value::Json(json(v)?),
        P::Set(_) | P::FrozenSet(_) => return None,
    })
}

fn json(v: P) -> Option<J> {
    Some(match v {
        P::None => J::Null,
        P::Bool(b) => J::Bool(b),
        P::I64(i) => J::from(i),
        P::Int(b) => match (i64::try_from(&b), u64::try_from(&b)) {
            (Ok(i), _) => J::from(i),
            (_, Ok(u)) => J::from(u),
            _ => return None,
        },
        P::F64(f) => J::Number(serde_json::Number::from_f64(f)?),
        P::String(s) => J::String(s),
        P::List(items) | P::Tuple(items) => {
            J::Array(items.into_iter().map(json).collect::<Option<_>>()?)
        }
        P::Dict(map) => J::Object(
            map.into_iter()
                .map(|(k, v)| match k {
                    HashableValue::String(k) => Some((k, json(v)?)),
                    _ => None,
                })
                .collect::<Option<_>>()?,
        ),
        P::Bytes(_) | P::Set(_) | P::FrozenSet(_) => return None,
    })
}

/// The value's bytes in this format; `Err` names what the format cannot hold.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, String> {
    let p = match value {
        Value::Null => P::None,
        Value::Bool(b) => P::Bool(*b),
        Value::Int(i) => P::I64(*i),
        Value::BigInt(d) => big(d)?,
        Value::Float(f) => P::F64(*f),
        Value::String(s) => P::String(s.clone()),
        Value::Bytes(b) => P::Bytes(b.clone()),
        Value::Json(j) => from_json(j)?,
        other => return Err(format!("a {} value is not pickled", other.kind())),
    };
    serde_pickle::value_to_vec(&p, SerOptions::new()).map_err(|e| e.to_string())
}

/// A decimal integer as serde-pickle's `Value::Int` (the big integer type is inferred: memshard
/// does not depend on num-bigint itself).
fn big(d: &str) -> Result<P, String> {
    let digits = d.strip_prefix('-').unwrap_or(d);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{d:?} is not a decimal integer"));
    }
    Ok(P::Int(
        d.parse()
            .map_err(|_| format!("{d:?} is not a decimal integer"))?,
    ))
}

fn from_json(j: &J) -> Result<P, String> {
    Ok(match j {
        J::Null => P::None,
        J::Bool(b) => P::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => P::I64(i),
            (_, Some(u), _) => P::Int(u.into()),
            (_, _, Some(f)) => P::F64(f),
            _ => return Err(format!("the number {n} is neither an integer nor a float")),
        },
        J::String(s) => P::String(s.clone()),
        J::Array(items) => P::List(items.iter().map(from_json).collect::<Result<_, _>>()?),
        J::Object(map) => P::Dict(
            map.iter()
                .map(|(k, v)| Ok((HashableValue::String(k.clone()), from_json(v)?)))
                .collect::<Result<BTreeMap<_, _>, String>>()?,
        ),
    })
}

/// An entry of serde-pickle's stack, as far as [`check`] needs it.
#[derive(Debug, Clone, Copy)]
struct Item {
    /// serde-pickle holds a memo reference here (after `PUT`, `MEMOIZE`, `GET`).
    memo_ref: bool,
    /// Levels of lists, tuples and dicts (0: a scalar).
    depth: usize,
    /// Bytes a copy of a scalar costs.
    size: usize,
}

impl Item {
    const fn scalar(size: usize) -> Self {
        Item {
            memo_ref: false,
            depth: 0,
            size,
        }
    }

    fn container(items: &[Item]) -> Option<Self> {
        let depth = 1 + items.iter().map(|i| i.depth).max().unwrap_or(0);
        (depth <= MAX_DEPTH).then_some(Item {
            memo_ref: false,
            depth,
            size: 0,
        })
    }
}

/// A memo entry: whether it is a scalar, and its size.
#[derive(Debug, Clone, Copy)]
struct Memo {
    scalar: bool,
    size: usize,
}

/// The opcodes of the data subset, walked as serde-pickle (1.2.0, `de.rs` `parse_value`) runs
/// them, with the checks the module documentation lists. `None` as soon as one fails.
fn check(b: &[u8]) -> Option<()> {
    struct Walk<'a> {
        b: &'a [u8],
        pos: usize,
    }
    impl<'a> Walk<'a> {
        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
            self.pos += n;
            Some(s)
        }
        fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
            self.take(N)?.try_into().ok()
        }
        fn line(&mut self) -> Option<&'a [u8]> {
            let rest = self.b.get(self.pos..)?;
            let n = rest.iter().position(|&c| c == b'\n')?;
            self.pos += n + 1;
            Some(&rest[..n])
        }
        /// A length-prefixed string or integer: the length is checked against the input left
        /// before anything else.
        fn counted(&mut self, prefix: usize) -> Option<usize> {
            let n = match prefix {
                1 => usize::from(self.array::<1>()?[0]),
                4 => usize::try_from(u32::from_le_bytes(self.array()?)).ok()?,
                8 => usize::try_from(u64::from_le_bytes(self.array()?)).ok()?,
                _ => return None,
            };
            self.take(n)?;
            Some(n)
        }
    }

    let budget = b.len().saturating_mul(COPY_FACTOR);
    let mut copied = 0usize;
    let mut w = Walk { b, pos: 0 };
    let mut stack: Vec<Item> = Vec::new();
    let mut marks: Vec<Vec<Item>> = Vec::new();
    let mut memo: HashMap<u32, Memo> = HashMap::new();

    fn memoize(stack: &mut [Item], memo: &mut HashMap<u32, Memo>, id: u32) -> Option<()> {
        let top = stack.last_mut()?;
        // serde-pickle clones the referenced value to memoize a reference; a memo id used twice
        // makes earlier references point at the new value. Python writes neither.
        if top.memo_ref || memo.contains_key(&id) {
            return None;
        }
        memo.insert(
            id,
            Memo {
                scalar: top.depth == 0,
                size: top.size,
            },
        );
        top.memo_ref = true;
        Some(())
    }
    fn decimal_id(line: &[u8]) -> Option<u32> {
        std::str::from_utf8(line).ok()?.parse().ok()
    }
    fn into_top(stack: &mut [Item], items: &[Item]) -> Option<()> {
        let deepest = items.iter().map(|i| i.depth).max()?;
        let top = stack.last_mut()?;
        top.depth = top.depth.max(deepest + 1);
        (top.depth <= MAX_DEPTH).then_some(())
    }

    loop {
        let op = w.array::<1>()?[0];
        match op {
            // PROTO, FRAME
            0x80 => {
                w.take(1)?;
            }
            0x95 => {
                w.take(8)?;
            }
            // STOP: one value, nothing after it.
            b'.' => {
                stack.pop()?;
                return (w.pos == b.len()).then_some(());
            }
            b'(' => marks.push(std::mem::take(&mut stack)),
            b'0' => {
                if stack.pop().is_none() {
                    stack = marks.pop()?;
                }
            }
            b'1' => stack = marks.pop()?,
            // PUT, BINPUT, LONG_BINPUT, MEMOIZE
            b'p' => {
                let id = decimal_id(w.line()?)?;
                memoize(&mut stack, &mut memo, id)?;
            }
            b'q' => memoize(&mut stack, &mut memo, u32::from(w.array::<1>()?[0]))?,
            b'r' => memoize(&mut stack, &mut memo, u32::from_le_bytes(w.array()?))?,
            0x94 => {
                let id = u32::try_from(memo.len()).ok()?;
                memoize(&mut stack, &mut memo, id)?;
            }
            // GET, BINGET, LONG_BINGET: scalars only, copies counted.
            b'g' | b'h' | b'j' => {
                let id = match op {
                    b'g' => decimal_id(w.line()?)?,
                    b'h' => u32::from(w.array::<1>()?[0]),
                    _ => u32::from_le_bytes(w.array()?),
                };
                let m = memo.get(&id)?;
                if !m.scalar {
                    return None;
                }
                copied = copied.saturating_add(m.size + 1);
                if copied > budget {
                    return None;
                }
                stack.push(Item {
                    memo_ref: true,
                    ..Item::scalar(m.size)
                });
            }
            // NONE, NEWTRUE, NEWFALSE, BININT1, BININT2, BININT, BINFLOAT
            b'N' | 0x88 | 0x89 => stack.push(Item::scalar(1)),
            b'K' => stack.push(Item::scalar(w.take(1)?.len())),
            b'M' => stack.push(Item::scalar(w.take(2)?.len())),
            b'J' => stack.push(Item::scalar(w.take(4)?.len())),
            b'G' => stack.push(Item::scalar(w.take(8)?.len())),
            // INT, LONG, FLOAT: decimal text
            b'I' | b'L' | b'F' => {
                let line = w.line()?;
                if line.len() > MAX_INT_DIGITS {
                    return None;
                }
                stack.push(Item::scalar(line.len()));
            }
            // LONG1, LONG4: little-endian two's complement
            0x8a | 0x8b => {
                let n = w.counted(if op == 0x8a { 1 } else { 4 })?;
                if n > MAX_INT_BYTES {
                    return None;
                }
                stack.push(Item::scalar(n));
            }
            // UNICODE (raw-unicode-escape text)
            b'V' => stack.push(Item::scalar(w.line()?.len())),
            // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, SHORT_BINBYTES, BINBYTES, BINBYTES8
            0x8c | b'C' => stack.push(Item::scalar(w.counted(1)?)),
            b'X' | b'B' => stack.push(Item::scalar(w.counted(4)?)),
            0x8d | 0x8e => stack.push(Item::scalar(w.counted(8)?)),
            // EMPTY_LIST, EMPTY_DICT, EMPTY_TUPLE
            b']' | b'}' | b')' => stack.push(Item::container(&[])?),
            // LIST, DICT, TUPLE
            b'l' | b'd' | b't' => {
                let items = std::mem::replace(&mut stack, marks.pop()?);
                stack.push(Item::container(&items)?);
            }
            // TUPLE1, TUPLE2, TUPLE3
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let items = stack.split_off(stack.len().checked_sub(n)?);
                stack.push(Item::container(&items)?);
            }
            // APPEND, SETITEM
            b'a' | b's' => {
                let n = if op == b'a' { 1 } else { 2 };
                let items = stack.split_off(stack.len().checked_sub(n)?);
                into_top(&mut stack, &items)?;
            }
            // APPENDS, SETITEMS
            b'e' | b'u' => {
                let items = std::mem::replace(&mut stack, marks.pop()?);
                if !items.is_empty() {
                    into_top(&mut stack, &items)?;
                }
            }
            // Everything else: DUP, globals, REDUCE, BUILD, instances, sets, extensions,
            // persistent ids, buffers, Python 2 `str` (`STRING`, `BINSTRING`,
            // `SHORT_BINSTRING`: Python 3 reads them as str or bytes depending on the reader).
            _ => return None,
        }
    }
}
