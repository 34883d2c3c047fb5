//! What each peer stores: flags + payload ↔ a typed [`Value`], read and written as the peer does.
//!
//! Pure and sans-IO: nothing here talks to a server. A client hands [`decode`] the flags and the
//! bytes a `get` returned, with the [`Codec`] of the peer that wrote them, and the maximum value
//! size it accepts; [`Transcoder::encode`] gives the flags and bytes that peer would store for a
//! value, with the peer's write settings. [`FromValue`] and [`ToValue`] connect Rust types. The flag layouts and every quirk are those verified against the running
//! peers in `value-vectors/` (README.md, README-dalli.md, README-spymemcached.md,
//! README-node.md); each peer's module cites the peer's source files.
//!
//! | codec | module | flags it knows |
//! |---|---|---|
//! | [`Codec::Raw`] | — | none: every payload is [`Value::Bytes`] |
//! | [`Codec::PhpMemcached`] | `php` | type bits 0-3, compression bits 4-6, user flags 16-31 |
//! | [`Codec::Pylibmc`] | `pylibmc` | 1 pickle, 2 bool, 4 int, 8 zlib, 16 text |
//! | [`Codec::Dalli`] | `dalli` | 1 serialized (Marshal or JSON), 2 compressed (zlib or gzip) |
//! | [`Codec::Spymemcached`] | `spymemcached` | 1 Java-serialized, 2 gzip, 0xff00 special type |
//! | [`Codec::NodeMemcached`] | `node` | exactly 0, 2, 4 or 8 |
//!
//! Decisions:
//! - **Unknown flags**: flags outside what the peer's layout defines (bits the peer would
//!   ignore, or reject) come back as [`Value::Unknown`] with the flags and the payload as stored,
//!   never guessed at. So a PHP FastLZ string (0x50) read with the pylibmc codec is `Unknown`,
//!   where pylibmc itself would return the compressed bytes as a `str`.
//! - **Serialized formats** are read into values for the JSON-like subset (null, bools,
//!   numbers, text, lists, maps with text keys): PHP `serialize()` and msgpack (`serial/`),
//!   pickle (serde-pickle behind an opcode walk), Ruby `Marshal` (hand-written). Each payload is
//!   read to its end and is exactly one of:
//!   - a value, when it is valid and inside the subset;
//!   - [`Value::Foreign`] (the *decompressed* bytes and the [`Encoding`] named, never a guess),
//!     when it is a **valid** payload holding something the subset has no value for: objects,
//!     class instances, sets, references and recursive structures, symbols as keys, igbinary,
//!     Java serialization;
//!   - [`ValueError::Malformed`] when it is not a valid payload of its format (truncated, an
//!     unknown tag or opcode, a reference to nothing, bytes after the value) or goes beyond a
//!     documented limit (nesting depth, reference expansion, integer length), with a detail
//!     naming the format, what and the byte offset;
//!   - [`ValueError::TooLarge`] when a declared length or count is beyond `max_value`.
//!
//!   | format | nesting limit | other limits |
//!   |---|---|---|
//!   | PHP `serialize()` | 512 arrays/objects | references (`r:`, `R:`) are never followed (`Foreign`) |
//!   | msgpack | 256 arrays/maps | — |
//!   | pickle | 128 lists/tuples/dicts | memo references expand to at most 16 × the pickle's size; integers ≤ 4096 bytes / 10,000 digits |
//!   | Ruby `Marshal` | 128 levels | links (`@`) copy at most 16 × the payload's size; bignums ≤ 4096 bytes |
//! - **JSON**: a JSON array or object is [`Value::Json`]; a JSON scalar comes back as its typed
//!   variant (`42` → [`Value::Int`], `"abc"` → [`Value::String`], `null` → [`Value::Null`]), as
//!   the peer's own `JSON.parse` / `JSON.load` / `json_decode` gives it. Integers beyond 64 bits
//!   are [`Value::BigInt`], never rounded through `f64`.
//! - **Text**: where a peer's "string" is bytes (PHP, dalli raw, spymemcached, node), valid UTF-8
//!   is [`Value::String`] and anything else [`Value::Bytes`]; pylibmc's `str` (flags 16) must be
//!   UTF-8 or it is an error, as in pylibmc.
//! - **Stricter than the peer** where the peer reads garbage silently: a PHP long or double that
//!   is not a number (PHP: `strtol`/`zend_strtod` → 0), broken PHP JSON (PHP: null), a node
//!   Buffer that node would corrupt are [`ValueError::Malformed`], not a made-up value.
//! - **Bombs**: every decompressed size is capped at `max_value`; FastLZ's and PHP zlib's
//!   4-byte length prefix is checked before anything is allocated, zlib and gzip are read
//!   through `take(max_value + 1)`. Too large is [`ValueError::TooLarge`].
//!
//! Layer: codecs. May import: `std` and the codec crates. Nothing here knows
//! sockets, placement or a client.

mod compress;
mod dalli;
mod native;
mod node;
mod php;
mod php_float;
mod pylibmc;
mod serial;
mod sniff;
mod spymemcached;
mod transcoder;
mod typed;

use std::fmt;
use std::str::FromStr;

pub use compress::Compression;
pub use sniff::sniff;
pub use transcoder::{
    DalliCompressor, DalliOptions, DalliSerializer, Encoded, PhpCompression, PhpOptions,
    PhpSerializer, PylibmcOptions, SpymemcachedOptions, Transcoder,
};
#[cfg(feature = "serde")]
pub use typed::Json;
pub use typed::{Bytes, FromValue, ToValue};

/// A value as the peer that stored it sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// Text (UTF-8).
    String(String),
    /// Bytes that are not text, or a peer's explicit binary type (pylibmc `bytes`, Java `byte[]`,
    /// node `Buffer`), or anything read with [`Codec::Raw`].
    Bytes(Vec<u8>),
    /// An integer that fits in 64 bits (also Java `Date` as epoch milliseconds).
    Int(i64),
    /// An integer beyond 64 bits (pylibmc, dalli JSON), as its decimal text: an optional `-`,
    /// then digits without leading zeros.
    BigInt(String),
    /// A float (`f64`; a Java `Float` widened).
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// null / nil / None.
    Null,
    /// A JSON array or object (PHP's JSON serializers, node's JSON values, dalli's JSON
    /// serializer), or a list or map decoded from a serialization format (pickle, Ruby Marshal,
    /// PHP serialize) whose every element JSON can hold.
    Json(serde_json::Value),
    /// A MessagePack value (php-memcached's msgpack serializer), shown as JSON.
    Msgpack(serde_json::Value),
    /// A serialized value this module does not turn into a value (yet): the decompressed bytes
    /// and their encoding. Never a silent misread.
    Foreign {
        /// The serialization format.
        encoding: Encoding,
        /// The serialized bytes, decompressed.
        bytes: Vec<u8>,
    },
    /// Flags the codec's peer does not define: the flags and the payload exactly as stored.
    Unknown {
        /// The flags as stored.
        flags: u32,
        /// The payload as stored (not decompressed).
        bytes: Vec<u8>,
    },
}

impl Value {
    /// The value's kind as the CLI's `--json` output spells it (`string`, `bytes`, `int`,
    /// `float`, `bool`, `null`, `json`, `msgpack`, `foreign`, `unknown`).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Null => "null",
            Value::Json(_) => "json",
            Value::Msgpack(_) => "msgpack",
            Value::Foreign { .. } => "foreign",
            Value::Unknown { .. } => "unknown",
        }
    }
}

/// A serialization format returned as [`Value::Foreign`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// PHP `serialize()` (php-memcached type 4).
    PhpSerialize,
    /// igbinary (php-memcached type 5).
    Igbinary,
    /// MessagePack (php-memcached type 7).
    Msgpack,
    /// Python pickle (pylibmc flags 1).
    Pickle,
    /// Ruby `Marshal` 4.8 (dalli flags 1, default serializer).
    RubyMarshal,
    /// Java serialization (spymemcached flags 1).
    JavaSerialized,
}

impl Encoding {
    /// The name the `memshard` command prints: `php-serialize`, `igbinary`, `msgpack`, `pickle`,
    /// `ruby-marshal`, `java-serialized`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::PhpSerialize => "php-serialize",
            Encoding::Igbinary => "igbinary",
            Encoding::Msgpack => "msgpack",
            Encoding::Pickle => "pickle",
            Encoding::RubyMarshal => "ruby-marshal",
            Encoding::JavaSerialized => "java-serialized",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which peer's layout the flags and payload follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Codec {
    /// memshard's own layout, version 1 (the default): text, bytes and integers as they are
    /// (flags 0), every other typed value as JSON (flags 6, php-memcached's JSON type). Every
    /// value written reads back as the same type; see the table at the top of this module.
    #[default]
    Memshard,
    /// No interpretation: every payload is [`Value::Bytes`].
    Raw,
    /// php-memcached 3.2 (`php_memcached.c`).
    PhpMemcached,
    /// pylibmc 1.6 (`_pylibmcmodule.c`).
    Pylibmc,
    /// Ruby dalli 3.0 (`value_serializer.rb`, `value_compressor.rb`).
    Dalli,
    /// spymemcached 2.12 `SerializingTranscoder`.
    Spymemcached,
    /// npm `memcached` 2.2 (`lib/memcached.js`).
    NodeMemcached,
}

impl Codec {
    /// Every codec: memshard's own and raw first, then each peer's.
    pub const ALL: [Codec; 7] = [
        Codec::Memshard,
        Codec::Raw,
        Codec::PhpMemcached,
        Codec::Pylibmc,
        Codec::Dalli,
        Codec::Spymemcached,
        Codec::NodeMemcached,
    ];

    /// The codec's name on the command line: `memshard`, `raw`, `php-memcached`, `pylibmc`,
    /// `dalli`, `spymemcached`, `node-memcached`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Memshard => "memshard",
            Codec::Raw => "raw",
            Codec::PhpMemcached => "php-memcached",
            Codec::Pylibmc => "pylibmc",
            Codec::Dalli => "dalli",
            Codec::Spymemcached => "spymemcached",
            Codec::NodeMemcached => "node-memcached",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A codec name that is not one of [`Codec::ALL`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown codec {0:?} (memshard, raw, php-memcached, pylibmc, dalli, spymemcached, node-memcached)"
)]
pub struct UnknownCodec(pub String);

impl FromStr for Codec {
    type Err = UnknownCodec;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Codec::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| UnknownCodec(s.to_owned()))
    }
}

/// Why a payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The value (stored, or decompressed, or announced by a length prefix) is larger than the
    /// maximum value size. `size` is a lower bound when decompression was cut off.
    #[error("value of at least {size} bytes is larger than the maximum of {max}")]
    TooLarge {
        /// The size found (at least).
        size: u64,
        /// The maximum allowed.
        max: usize,
    },
    /// Compressed data that does not decompress.
    #[error("{method} data does not decompress: {detail}")]
    Decompress {
        /// The compression method.
        method: Compression,
        /// What went wrong.
        detail: String,
    },
    /// A value the codec's peer cannot store (a big integer for PHP, null for spymemcached, a
    /// float for the raw codec...). Choose another type or codec.
    #[error("{codec} cannot store this {kind} value: {detail}")]
    Unsupported {
        /// The codec used.
        codec: Codec,
        /// The value's kind ([`Value::kind`]).
        kind: &'static str,
        /// Why, and what to do instead.
        detail: String,
    },
    /// A decoded value of another type than the one asked for (`get_as::<i64>` on a string).
    #[error("expected a {expected} value, found {found}")]
    Type {
        /// The type asked for.
        expected: &'static str,
        /// The value's kind ([`Value::kind`]), or a description of why it does not fit.
        found: String,
    },
    /// A value another peer's codec reads (its flags and bytes are that peer's layout, see
    /// [`sniff`]) that `codec` misreads: it fails to decode it, or (memshard's own layout,
    /// which reads other flags as bytes) would return the other peer's encoding as bytes.
    /// Read it with `peer`'s codec. `source` is `codec`'s own error, when it had one.
    #[error(
        "{codec} codec: flags {flags} looks like {peer}'s {layout} value: use the {peer} codec"
    )]
    OtherPeer {
        /// The codec used.
        codec: Codec,
        /// The flags as stored.
        flags: u32,
        /// The codec whose layout the value follows, [`sniff`]'s best guess.
        peer: Codec,
        /// What the value is in that peer's terms (`serialized`, `pickled`, `JSON`...).
        layout: &'static str,
        /// `codec`'s own error.
        #[source]
        source: Option<Box<ValueError>>,
    },
    /// A payload that does not hold what its flags say.
    #[error("{codec} flags {flags:#x}: {detail}")]
    Malformed {
        /// The codec used.
        codec: Codec,
        /// The flags as stored.
        flags: u32,
        /// What is wrong.
        detail: String,
    },
}

/// Decodes what a peer stored: `flags` and `payload` as a `get` returned them.
///
/// `max_value` caps the payload and every decompressed size (memcached's item size limit is the
/// natural choice). Unknown flags are [`Value::Unknown`], serialized formats
/// [`Value::Foreign`]; see the module documentation for each decision.
pub fn decode(
    codec: Codec,
    flags: u32,
    payload: &[u8],
    max_value: usize,
) -> Result<Value, ValueError> {
    let decoded = decode_as(codec, flags, payload, max_value);
    other_peer(codec, flags, payload, max_value, decoded)
}

/// [`decode`] without looking for another peer's layout.
pub(crate) fn decode_as(
    codec: Codec,
    flags: u32,
    payload: &[u8],
    max_value: usize,
) -> Result<Value, ValueError> {
    if payload.len() > max_value {
        return Err(ValueError::TooLarge {
            size: payload.len() as u64,
            max: max_value,
        });
    }
    match codec {
        Codec::Memshard => native::decode(flags, payload),
        Codec::Raw => Ok(Value::Bytes(payload.to_vec())),
        Codec::PhpMemcached => php::decode(flags, payload, max_value),
        Codec::Pylibmc => pylibmc::decode(flags, payload, max_value),
        Codec::Dalli => dalli::decode(flags, payload, max_value),
        Codec::Spymemcached => spymemcached::decode(flags, payload, max_value),
        Codec::NodeMemcached => node::decode(flags, payload),
    }
}

/// `decoded` unless another peer's codec reads what `codec` could not, or (memshard's own
/// layout, whose flags other than 0 and 6 read as bytes) reads it as something else than these
/// bytes: then [`ValueError::OtherPeer`] naming that codec. A raw read and a read that worked
/// are never second-guessed otherwise.
fn other_peer(
    codec: Codec,
    flags: u32,
    payload: &[u8],
    max_value: usize,
    decoded: Result<Value, ValueError>,
) -> Result<Value, ValueError> {
    let misread = match &decoded {
        Err(ValueError::Malformed { .. } | ValueError::Decompress { .. }) => true,
        Ok(_) => codec == Codec::Memshard && flags != 0 && flags != native::JSON,
        Err(_) => false,
    };
    if !misread {
        return decoded;
    }
    let as_bytes = |v: &Value| match v {
        Value::String(s) => s.as_bytes() == payload,
        Value::Bytes(b) => b.as_slice() == payload,
        _ => false,
    };
    // A failed read is blamed on another peer only when that peer finds a typed value or a
    // structure in the bytes: text or bytes under other flags is no evidence.
    let telling = |v: &Value| match decoded {
        Ok(_) => !as_bytes(v),
        Err(_) => sniff::rank(v) >= 2,
    };
    let peer = sniff(flags, payload).into_iter().find(|&peer| {
        peer != codec && decode_as(peer, flags, payload, max_value).is_ok_and(|v| telling(&v))
    });
    match peer {
        Some(peer) => Err(ValueError::OtherPeer {
            codec,
            flags,
            peer,
            layout: sniff::layout_name(peer, flags),
            source: decoded.err().map(Box::new),
        }),
        None => decoded,
    }
}

/// Encodes `value` as `codec`'s peer stores a value of that type with the settings in `t`:
/// the flags and the payload to send. See [`Transcoder::encode`].
pub(crate) fn encode(
    t: &Transcoder,
    value: &Value,
    max_value: usize,
) -> Result<Encoded, ValueError> {
    let (flags, bytes) = match t.codec() {
        Codec::Memshard => native::encode(value)?,
        Codec::Raw => raw_encode(value)?,
        Codec::PhpMemcached => php::encode(value, t.php_options(), max_value)?,
        Codec::Pylibmc => pylibmc::encode(value, t.pylibmc_options(), max_value)?,
        Codec::Dalli => dalli::encode(value, t.dalli_options(), max_value)?,
        Codec::Spymemcached => spymemcached::encode(value, t.spymemcached_options(), max_value)?,
        Codec::NodeMemcached => node::encode(value)?,
    };
    if bytes.len() > max_value {
        return Err(ValueError::TooLarge {
            size: bytes.len() as u64,
            max: max_value,
        });
    }
    Ok(Encoded { flags, bytes })
}

/// The raw codec stores bytes with flags 0: text and bytes as they are, integers in decimal
/// (what `incr` reads), JSON as its text. A float, bool or null has no spelling every reader
/// agrees on, so it is refused rather than guessed.
fn raw_encode(value: &Value) -> Result<(u32, Vec<u8>), ValueError> {
    Ok(match value {
        Value::String(s) => (0, s.as_bytes().to_vec()),
        Value::Bytes(b) => (0, b.clone()),
        Value::Int(i) => (0, i.to_string().into_bytes()),
        Value::BigInt(d) => (0, d.as_bytes().to_vec()),
        Value::Json(j) | Value::Msgpack(j) => (0, j.to_string().into_bytes()),
        Value::Foreign { bytes, .. } => (0, bytes.clone()),
        Value::Unknown { flags, bytes } => (*flags, bytes.clone()),
        other => {
            return Err(unsupported(
                Codec::Raw,
                other,
                "the raw codec stores bytes; format the value as text, or choose a peer's codec",
            ));
        }
    })
}

pub(crate) fn unsupported(codec: Codec, value: &Value, detail: impl Into<String>) -> ValueError {
    ValueError::Unsupported {
        codec,
        kind: value.kind(),
        detail: detail.into(),
    }
}

/// A [`Value::Json`] holding a scalar (`42`, `"a"`, `null`) as its typed variant, so that every
/// encoder sees one spelling of each scalar; lists and maps as they are.
fn json_scalar(value: &Value) -> std::borrow::Cow<'_, Value> {
    match value {
        Value::Json(j) if !j.is_array() && !j.is_object() => {
            std::borrow::Cow::Owned(typed::from_json(j.clone()))
        }
        _ => std::borrow::Cow::Borrowed(value),
    }
}

/// Text if it is UTF-8, else the bytes.
fn text_or_bytes(data: Vec<u8>) -> Value {
    match String::from_utf8(data) {
        Ok(s) => Value::String(s),
        Err(e) => Value::Bytes(e.into_bytes()),
    }
}

fn unknown(flags: u32, payload: &[u8]) -> Value {
    Value::Unknown {
        flags,
        bytes: payload.to_vec(),
    }
}

fn malformed(codec: Codec, flags: u32, detail: impl Into<String>) -> ValueError {
    ValueError::Malformed {
        codec,
        flags,
        detail: detail.into(),
    }
}

/// A decimal integer literal: optional sign, ASCII digits, nothing else. `Int` when it fits in
/// 64 bits, else `BigInt` (normalised: no leading zeros, no `+`, no `-0`).
fn decimal_integer(text: &[u8]) -> Option<Value> {
    let (neg, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let s = std::str::from_utf8(text).ok()?;
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::Int(i));
    }
    let first = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    let digits = std::str::from_utf8(&digits[first..]).ok()?;
    // Fits in i64 after all only with leading zeros, which `parse` accepts: not reached.
    Some(Value::BigInt(if neg {
        format!("-{digits}")
    } else {
        digits.to_owned()
    }))
}

/// JSON text as the peers' parsers read it: arrays and objects as [`Value::Json`], scalars as
/// their typed variant, integer literals beyond 64 bits as [`Value::BigInt`].
fn json(text: &[u8]) -> Result<Value, serde_json::Error> {
    let trimmed = text.trim_ascii();
    let digits = trimmed.strip_prefix(b"-").unwrap_or(trimmed);
    let json_integer = digits.first().is_some_and(|&b| b != b'0') || digits == b"0";
    if json_integer && let Some(v) = decimal_integer(trimmed) {
        return Ok(v);
    }
    let v: serde_json::Value = serde_json::from_slice(text)?;
    Ok(match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::String(s) => Value::String(s),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => match n.as_f64() {
                Some(f) => Value::Float(f),
                None => Value::Json(serde_json::Value::Number(n)),
            },
        },
        other => Value::Json(other),
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dalli;
#[cfg(test)]
mod tests_php;
#[cfg(test)]
mod tests_pylibmc;
#[cfg(test)]
mod tests_spynode;
