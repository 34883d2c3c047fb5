//! Python pickle (pylibmc flags 1), read and written with `serde-pickle` (value-vectors/CRATES.md,
//! section 4: 25/25 of pylibmc's pickles, protocols 0-5).
//!
//! Reading: the JSON-like subset only. `None`, `bool`, `int`, `float`, `str` and, at the top,
//! `bytes` are their typed variants; a `list` or `tuple` is a JSON array, a `dict` whose keys are
//! all `str` a JSON object. A `list` or `dict` referenced twice (memo `GET`) is copied.
//!
//! Before serde-pickle sees a byte, [`check`] walks every opcode of protocols 0-5 with its
//! effect on the stack, the marks and the memo, because serde-pickle trusts the stream where a
//! cache value must not be trusted. Its verdict:
//! - **valid, outside the subset** (`Ok(None)`, the caller returns `Foreign`): globals, `REDUCE`,
//!   `BUILD`, instances (`INST`, `OBJ`, `NEWOBJ`, `NEWOBJ_EX`), sets, extension codes,
//!   persistent ids, buffers, Python 2 `str` (`STRING`, `BINSTRING`, `SHORT_BINSTRING`: Python 3
//!   reads them as str or bytes depending on the reader), a structure that contains itself, and
//!   what Python's pickler never writes and serde-pickle would read differently from Python
//!   (`DUP`, a `PUT` of a memo reference, a memo id stored twice); after serde-pickle, sets,
//!   tuple keys and inside a list or dict `bytes`, non-finite floats and integers beyond 64
//!   bits, and a list or dict shared inside a shared one (serde-pickle counts the references
//!   and refuses the extra copies as recursive). Nothing is ever imported or called:
//!   serde-pickle never sees the pickles that name globals.
//! - **malformed** ([`Bad`]): an unknown opcode, a truncated argument, a stack or mark
//!   underflow, `APPEND`/`SETITEM` on a scalar, a `GET` of a memo id never stored, anything but
//!   one value on the stack at `STOP`, bytes after `STOP`, a protocol above 5, and the limits:
//!   a `bytes`/`str` length the input cannot hold (`TooLarge` beyond the maximum value size;
//!   serde-pickle allocates it before reading: `BINBYTES8` of 2^60 bytes would abort the
//!   process), lists, tuples and dicts nested deeper than [`MAX_DEPTH`] (serde-pickle recurses
//!   once per level), memo references that expand to more than [`COPY_FACTOR`] times the
//!   pickle's size (serde-pickle clones each one: a list holding the same list twice, nested 40
//!   times, is 2^40 values from a few hundred bytes), integers longer than [`MAX_INT_BYTES`]
//!   bytes or [`MAX_INT_DIGITS`] digits (decimal text is quadratic); then what serde-pickle
//!   itself refuses (text that is not UTF-8, a bad literal, an unhashable key).
//!
//! The walk keeps one 8-byte node per list, tuple, dict or object and one 8-byte edge per item
//! put in one; the expansion and the depth are then counted once per node (a node referenced
//! twice is counted from a cache), recursing at most [`MAX_DEPTH`] levels.
//!
//! Writing: serde-pickle's protocol 3 (pylibmc 1.6.3 writes protocol 5 with Python 3.11, and
//! reads any protocol: `pickle.loads`). So memshard's pickles are not pylibmc's bytes, they are
//! its values.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value as J;
use serde_pickle::{DeOptions, ErrorCode, HashableValue, SerOptions, Value as P};

use super::{Bad, Outcome, declared, malformed};
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

/// The value; `Ok(None)` when valid but outside the subset.
pub(crate) fn decode(bytes: &[u8], max: usize) -> Outcome {
    if !check(bytes, max)? {
        return Ok(None);
    }
    match serde_pickle::value_from_slice(bytes, DeOptions::new()) {
        Ok(v) => Ok(top(v)),
        Err(e) => match e {
            serde_pickle::Error::Eval(code, _) | serde_pickle::Error::Syntax(code) => match code {
                ErrorCode::Unsupported(_)
                | ErrorCode::UnsupportedGlobal(..)
                | ErrorCode::UnresolvedGlobal
                | ErrorCode::Recursive => Ok(None),
                other => Err(malformed(format!("serde-pickle: {other}"))),
            },
            serde_pickle::Error::Io(e) => Err(malformed(format!("serde-pickle: {e}"))),
        },
    }
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

/// An entry of the stack or the memo, as far as [`check`] needs it: a scalar of some size, or
/// a node (a list, tuple, dict or object).
#[derive(Debug, Clone, Copy)]
struct Item {
    /// The node's index, or the scalar's size in bytes (saturated).
    v: u32,
    node: bool,
    /// serde-pickle holds a memo reference here (after `PUT`, `MEMOIZE`, `GET`).
    memo_ref: bool,
}

impl Item {
    fn scalar(size: usize) -> Self {
        Item {
            v: u32::try_from(size).unwrap_or(u32::MAX),
            node: false,
            memo_ref: false,
        }
    }
}

/// The nodes and their items: each node's scalar bytes (plus one for itself) and the head of
/// its list of child nodes in `edges` (`NONE` for none).
struct Graph {
    own: Vec<u32>,
    head: Vec<u32>,
    /// (child node, next edge)
    edges: Vec<(u32, u32)>,
    /// Nodes a memo entry holds (the only ones with more than one parent).
    shared: HashSet<u32>,
    /// Their expansion and depth once counted, `None` while being counted.
    counted: HashMap<u32, Option<(u64, usize)>>,
}

const NONE: u32 = u32::MAX;

impl Graph {
    fn node(&mut self, items: &[Item]) -> Read<Item> {
        let id = u32::try_from(self.own.len())
            .ok()
            .filter(|&id| id != NONE)
            .ok_or_else(|| malformed("too many objects"))?;
        self.own.push(1);
        self.head.push(NONE);
        self.add(id, items);
        Ok(Item {
            v: id,
            node: true,
            memo_ref: false,
        })
    }

    fn add(&mut self, id: u32, items: &[Item]) {
        for i in items {
            if i.node {
                self.edges.push((i.v, self.head[id as usize]));
                self.head[id as usize] = (self.edges.len() - 1) as u32;
            } else {
                let own = &mut self.own[id as usize];
                *own = own.saturating_add(i.v);
            }
        }
    }

    /// The bytes serde-pickle builds for `id` with every reference copied, and the levels of
    /// nesting; `Ok(None)` for a node that contains itself. Stops past `budget` bytes.
    fn expand(&mut self, id: u32, depth: usize, budget: u64) -> Read<Option<(u64, usize)>> {
        if depth > MAX_DEPTH {
            return Err(malformed(format!(
                "lists, tuples and dicts nested deeper than {MAX_DEPTH} levels"
            )));
        }
        let shared = self.shared.contains(&id);
        if shared {
            match self.counted.get(&id) {
                Some(Some(done)) => return Ok(Some(*done)),
                Some(None) => return Ok(None),
                None => {}
            }
            // Being counted: a reference back to it is a cycle.
            self.counted.insert(id, None);
        }
        let mut size = u64::from(self.own[id as usize]);
        let mut levels = 1;
        let mut e = self.head[id as usize];
        while e != NONE {
            let (child, next) = self.edges[e as usize];
            let Some((s, l)) = self.expand(child, depth + 1, budget)? else {
                return Ok(None);
            };
            size = size.saturating_add(s);
            levels = levels.max(l + 1);
            e = next;
        }
        if size > budget {
            return Err(malformed(format!(
                "memo references expand to more than {COPY_FACTOR} times the pickle's size"
            )));
        }
        if shared {
            self.counted.insert(id, Some((size, levels)));
        }
        Ok(Some((size, levels)))
    }
}

type Read<T> = Result<T, Bad>;

struct Walk<'a> {
    b: &'a [u8],
    pos: usize,
    max: usize,
}

impl<'a> Walk<'a> {
    fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        let s = self
            .b
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| malformed(format!("truncated at byte {}", self.pos)))?;
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Read<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn line(&mut self) -> Read<&'a [u8]> {
        let rest = &self.b[self.pos..];
        let n = rest
            .iter()
            .position(|&c| c == b'\n')
            .ok_or_else(|| malformed(format!("a line without its end at byte {}", self.pos)))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }
    /// A length-prefixed string or integer: the length is checked against the input left
    /// and the maximum value size before anything else.
    fn counted(&mut self, prefix: usize) -> Read<usize> {
        let at = self.pos;
        let n = match prefix {
            1 => u64::from(self.array::<1>()?[0]),
            4 => u64::from(u32::from_le_bytes(self.array()?)),
            _ => u64::from_le_bytes(self.array()?),
        };
        let left = self.b.len() - self.pos;
        let n = declared(n, 1, left, self.max, "the length", at)?;
        self.pos += n;
        Ok(n)
    }
}

fn decimal_id(line: &[u8]) -> Read<u32> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| malformed("a memo id that is not a number"))
}

/// Walks the opcodes as Python's unpickler runs them, with the checks the module documentation
/// lists: `Ok(true)` for the data subset serde-pickle reads, `Ok(false)` for a valid pickle
/// outside it, `Err` for a malformed one.
fn check(b: &[u8], max: usize) -> Read<bool> {
    let mut w = Walk { b, pos: 0, max };
    let mut g = Graph {
        own: Vec::new(),
        head: Vec::new(),
        edges: Vec::new(),
        shared: HashSet::new(),
        counted: HashMap::new(),
    };
    let mut stack: Vec<Item> = Vec::new();
    let mut marks: Vec<Vec<Item>> = Vec::new();
    let mut memo: HashMap<u32, Item> = HashMap::new();
    let mut data = true;

    let underflow = |at: usize| malformed(format!("stack underflow at byte {at}"));
    loop {
        let at = w.pos;
        let op = w.array::<1>()?[0];
        // Pops `n` (at most 3) items, without allocating.
        let pop = |stack: &mut Vec<Item>, n: usize| -> Read<([Item; 3], usize)> {
            let from = stack.len().checked_sub(n).ok_or_else(|| underflow(at))?;
            let mut items = [Item::scalar(0); 3];
            for (slot, item) in items.iter_mut().zip(stack.drain(from..)) {
                *slot = item;
            }
            Ok((items, n))
        };
        let pop_mark = |stack: &mut Vec<Item>, marks: &mut Vec<Vec<Item>>| -> Read<Vec<Item>> {
            let outer = marks
                .pop()
                .ok_or_else(|| malformed(format!("no mark at byte {at}")))?;
            Ok(std::mem::replace(stack, outer))
        };
        // Adds items to the node on top of the stack.
        let into_top = |g: &mut Graph, stack: &mut Vec<Item>, items: &[Item]| -> Read<()> {
            let top = *stack.last().ok_or_else(|| underflow(at))?;
            if !top.node {
                return Err(malformed(format!("items added to a scalar at byte {at}")));
            }
            g.add(top.v, items);
            Ok(())
        };
        match op {
            // PROTO, FRAME
            0x80 => {
                let p = w.array::<1>()?[0];
                if p > 5 {
                    return Err(malformed(format!("protocol {p}")));
                }
            }
            0x95 => {
                w.take(8)?;
            }
            // STOP: one value, nothing after it.
            b'.' => {
                if stack.len() != 1 || !marks.is_empty() {
                    return Err(malformed(format!(
                        "{} values and {} marks on the stack at STOP",
                        stack.len(),
                        marks.len()
                    )));
                }
                if w.pos != b.len() {
                    return Err(malformed(format!("{} bytes after STOP", b.len() - w.pos)));
                }
                let top = stack[0];
                if !top.node {
                    return Ok(data);
                }
                let budget = (b.len() as u64).saturating_mul(COPY_FACTOR as u64);
                let budget = if data { budget } else { u64::MAX };
                return match g.expand(top.v, 0, budget)? {
                    Some((_, levels)) if levels > MAX_DEPTH => Err(malformed(format!(
                        "lists, tuples and dicts nested deeper than {MAX_DEPTH} levels"
                    ))),
                    Some(_) => Ok(data),
                    None => Ok(false),
                };
            }
            // MARK, POP, POP_MARK, DUP
            b'(' => marks.push(std::mem::take(&mut stack)),
            b'0' => {
                if stack.pop().is_none() {
                    pop_mark(&mut stack, &mut marks)?;
                }
            }
            b'1' => {
                pop_mark(&mut stack, &mut marks)?;
            }
            b'2' => {
                data = false;
                let top = *stack.last().ok_or_else(|| underflow(at))?;
                // The same object twice, as for a memo reference.
                if top.node {
                    g.shared.insert(top.v);
                }
                stack.push(top);
            }
            // PUT, BINPUT, LONG_BINPUT, MEMOIZE
            b'p' | b'q' | b'r' | 0x94 => {
                let id = match op {
                    b'p' => decimal_id(w.line()?)?,
                    b'q' => u32::from(w.array::<1>()?[0]),
                    b'r' => u32::from_le_bytes(w.array()?),
                    _ => u32::try_from(memo.len()).unwrap_or(u32::MAX),
                };
                let top = stack.last_mut().ok_or_else(|| underflow(at))?;
                // serde-pickle clones the referenced value to memoize a reference, and a memo
                // id stored twice makes earlier references point at the new value.
                if top.memo_ref || memo.contains_key(&id) {
                    data = false;
                }
                top.memo_ref = true;
                if top.node {
                    g.shared.insert(top.v);
                }
                memo.insert(id, *top);
            }
            // GET, BINGET, LONG_BINGET
            b'g' | b'h' | b'j' => {
                let id = match op {
                    b'g' => decimal_id(w.line()?)?,
                    b'h' => u32::from(w.array::<1>()?[0]),
                    _ => u32::from_le_bytes(w.array()?),
                };
                let item = *memo.get(&id).ok_or_else(|| {
                    malformed(format!("memo id {id} at byte {at} was never stored"))
                })?;
                stack.push(item);
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
                    return Err(malformed(format!(
                        "a number of {} digits, beyond the limit of {MAX_INT_DIGITS}",
                        line.len()
                    )));
                }
                stack.push(Item::scalar(line.len()));
            }
            // LONG1, LONG4: little-endian two's complement
            0x8a | 0x8b => {
                let n = w.counted(if op == 0x8a { 1 } else { 4 })?;
                if n > MAX_INT_BYTES {
                    return Err(malformed(format!(
                        "an integer of {n} bytes, beyond the limit of {MAX_INT_BYTES}"
                    )));
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
            b']' | b'}' | b')' => stack.push(g.node(&[])?),
            // LIST, DICT, TUPLE
            b'l' | b'd' | b't' => {
                let items = pop_mark(&mut stack, &mut marks)?;
                if op == b'd' && items.len() % 2 == 1 {
                    return Err(malformed(format!("a dict of odd items at byte {at}")));
                }
                stack.push(g.node(&items)?);
            }
            // TUPLE1, TUPLE2, TUPLE3
            0x85..=0x87 => {
                let (items, n) = pop(&mut stack, usize::from(op - 0x84))?;
                stack.push(g.node(&items[..n])?);
            }
            // APPEND, SETITEM
            b'a' | b's' => {
                let (items, n) = pop(&mut stack, if op == b'a' { 1 } else { 2 })?;
                into_top(&mut g, &mut stack, &items[..n])?;
            }
            // APPENDS, SETITEMS
            b'e' | b'u' => {
                let items = pop_mark(&mut stack, &mut marks)?;
                if op == b'u' && items.len() % 2 == 1 {
                    return Err(malformed(format!("SETITEMS of odd items at byte {at}")));
                }
                into_top(&mut g, &mut stack, &items)?;
            }
            // Outside the subset, walked for their stack effects.
            // GLOBAL: module and name lines.
            b'c' => {
                data = false;
                w.line()?;
                w.line()?;
                stack.push(g.node(&[])?);
            }
            // INST: module and name lines, then the arguments after the mark.
            b'i' => {
                data = false;
                w.line()?;
                w.line()?;
                let items = pop_mark(&mut stack, &mut marks)?;
                stack.push(g.node(&items)?);
            }
            // OBJ: the class and the arguments after the mark; FROZENSET.
            b'o' | 0x91 => {
                data = false;
                let items = pop_mark(&mut stack, &mut marks)?;
                if op == b'o' && items.is_empty() {
                    return Err(underflow(at));
                }
                stack.push(g.node(&items)?);
            }
            // STACK_GLOBAL, REDUCE, NEWOBJ: two items; NEWOBJ_EX: three; BINPERSID: one.
            0x93 | b'R' | 0x81 | 0x92 | b'Q' => {
                data = false;
                let n = match op {
                    0x92 => 3,
                    b'Q' => 1,
                    _ => 2,
                };
                let (items, n) = pop(&mut stack, n)?;
                stack.push(g.node(&items[..n])?);
            }
            // BUILD: the state into the object.
            b'b' => {
                data = false;
                let (items, n) = pop(&mut stack, 1)?;
                into_top(&mut g, &mut stack, &items[..n])?;
            }
            // EMPTY_SET; ADDITEMS
            0x8f => {
                data = false;
                stack.push(g.node(&[])?);
            }
            0x90 => {
                data = false;
                let items = pop_mark(&mut stack, &mut marks)?;
                into_top(&mut g, &mut stack, &items)?;
            }
            // EXT1, EXT2, EXT4, PERSID, NEXT_BUFFER
            0x82 | 0x83 | 0x84 | b'P' | 0x97 => {
                data = false;
                match op {
                    0x82 => drop(w.take(1)?),
                    0x83 => drop(w.take(2)?),
                    0x84 => drop(w.take(4)?),
                    b'P' => drop(w.line()?),
                    _ => {}
                }
                stack.push(Item::scalar(1));
            }
            // READONLY_BUFFER: the top stays.
            0x98 => {
                data = false;
                stack.last().ok_or_else(|| underflow(at))?;
            }
            // STRING, BINSTRING, SHORT_BINSTRING, BYTEARRAY8
            b'S' | b'T' | b'U' | 0x96 => {
                data = false;
                let n = match op {
                    b'S' => w.line()?.len(),
                    b'T' => w.counted(4)?,
                    b'U' => w.counted(1)?,
                    _ => w.counted(8)?,
                };
                stack.push(Item::scalar(n));
            }
            other => {
                return Err(malformed(format!(
                    "unknown opcode {other:#04x} at byte {at}"
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> Graph {
        Graph {
            own: Vec::new(),
            head: Vec::new(),
            edges: Vec::new(),
            shared: HashSet::new(),
            counted: HashMap::new(),
        }
    }

    /// `n` nodes, each holding the next and 10 scalar bytes: the first's expansion is 11 × n
    /// bytes, `n` levels deep.
    fn chain(n: usize) -> (Graph, u32) {
        let mut g = graph();
        let mut inner: Vec<Item> = Vec::new();
        for _ in 0..n {
            let mut items = inner.clone();
            items.push(Item::scalar(10));
            inner = vec![g.node(&items).expect("node")];
        }
        (g, inner[0].v)
    }

    /// The budget is the most an expansion may reach: exactly it passes, a byte less fails.
    #[test]
    fn an_expansion_of_exactly_the_budget_passes() {
        let (mut g, root) = chain(3);
        assert_eq!(g.expand(root, 0, 33), Ok(Some((33, 3))));
        let (mut g, root) = chain(3);
        assert!(g.expand(root, 0, 32).is_err());
    }

    /// Nodes down to depth `MAX_DEPTH` expand (the caller then judges the levels); one deeper
    /// is refused by the walk itself, before it recurses further.
    #[test]
    fn the_walk_goes_exactly_max_depth_deep() {
        let (mut g, root) = chain(MAX_DEPTH + 1);
        assert_eq!(
            g.expand(root, 0, u64::MAX).map(|e| e.map(|(_, l)| l)),
            Ok(Some(MAX_DEPTH + 1))
        );
        let (mut g, root) = chain(MAX_DEPTH + 2);
        assert!(g.expand(root, 0, u64::MAX).is_err());
    }
}
