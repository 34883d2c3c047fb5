//! Incremental reply parser: a pure function over the bytes received so far.
//!
//! Every function answers `Ok(Parsed::Incomplete)` when more bytes are needed,
//! `Ok(Parsed::Done(value, consumed))` for a whole reply, and `Err` for bytes no memcached
//! sends. Lengths a server claims are checked against limits *before* anything waits for or
//! allocates them.

use std::ops::Range;

/// The longest reply line accepted (a `VALUE` header is under 320 bytes).
pub const MAX_LINE: usize = 8192;

/// Result of parsing a buffer that may hold only part of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<T> {
    /// Not enough bytes yet.
    Incomplete,
    /// A whole reply and the number of bytes it took.
    Done(T, usize),
}

/// Bytes that are not a memcached reply. The connection that read them must be dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// No line end within [`MAX_LINE`] bytes.
    #[error("reply line longer than {MAX_LINE} bytes without CRLF")]
    LineTooLong,
    /// A line that is not a reply we know.
    #[error("unexpected reply line {0:?}")]
    Unexpected(String),
    /// A meta reply line that does not parse (unknown status, bad token).
    #[error("malformed meta reply {0:?}")]
    BadMetaReply(String),
    /// A `VALUE` header that does not parse.
    #[error("malformed VALUE header {0:?}")]
    BadValueHeader(String),
    /// A value larger than the configured limit.
    #[error("server announced a {announced}-byte value; the limit is {limit} bytes")]
    ValueTooLarge {
        /// What the server claimed.
        announced: u64,
        /// The client's limit.
        limit: usize,
    },
    /// The data block was not followed by CRLF.
    #[error("value data not terminated by CRLF")]
    BadTerminator,
}

/// A one-line reply (or one line of a `stats` reply).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// `STORED`
    Stored,
    /// `NOT_STORED`
    NotStored,
    /// `EXISTS`
    Exists,
    /// `NOT_FOUND`
    NotFound,
    /// `DELETED`
    Deleted,
    /// `TOUCHED`
    Touched,
    /// `OK`
    Ok,
    /// `END` (end of `stats` or of a retrieval)
    End,
    /// The value after `incr`/`decr`.
    Number(u64),
    /// `VERSION x`
    Version(String),
    /// `STAT name value`
    Stat(String, String),
    /// `ERROR`: the server did not know the command.
    Error,
    /// `CLIENT_ERROR msg`: the server refused the request.
    ClientError(String),
    /// `SERVER_ERROR msg`: the server failed (out of memory, object too large, ...).
    ServerError(String),
}

/// One item of a `get`/`gets`/`gat`/`gats` reply; ranges index the buffer given to the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetrievalItem {
    /// `VALUE key flags bytes [cas]` and its data.
    Value {
        /// The key's bytes.
        key: Range<usize>,
        /// Client flags.
        flags: u32,
        /// The data's bytes.
        data: Range<usize>,
        /// CAS unique (`gets`/`gats`).
        cas: Option<u64>,
    },
    /// `END`: no more items.
    End,
    /// An error line instead of items.
    Failed(Reply),
}

/// The first line in `buf` without its CRLF, and the bytes it took with the CRLF. A line of
/// up to [`MAX_LINE`] bytes is found; past that without a CRLF, the reply is refused.
pub(super) fn line(buf: &[u8]) -> Result<Parsed<&[u8]>, ParseError> {
    let scan = &buf[..buf.len().min(MAX_LINE + 2)];
    // The first `\n` with a `\r` before it, found by memchr (SIMD): a search of two-byte
    // windows was a fifth of a 100-key multi-get's user-space instructions (callgrind).
    let end = memchr::memchr_iter(b'\n', scan).find(|&i| i > 0 && scan[i - 1] == b'\r');
    match end.map(|n| n - 1) {
        Some(i) => Ok(Parsed::Done(&buf[..i], i + 2)),
        None if buf.len() >= MAX_LINE + 2 => Err(ParseError::LineTooLong),
        None => Ok(Parsed::Incomplete),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub(super) fn error_reply(l: &[u8]) -> Option<Reply> {
    if l == b"ERROR" {
        return Some(Reply::Error);
    }
    if let Some(m) = l.strip_prefix(b"CLIENT_ERROR") {
        return Some(Reply::ClientError(text(m.trim_ascii())));
    }
    if let Some(m) = l.strip_prefix(b"SERVER_ERROR") {
        return Some(Reply::ServerError(text(m.trim_ascii())));
    }
    None
}

fn number<T: TryFrom<u64>>(b: &[u8]) -> Option<T> {
    if b.is_empty() {
        return None;
    }
    // digits folded directly: through `str::parse` each number of a reply was checked as
    // UTF-8 and as digits twice (measured as 1 % of a 100-key multi-get's CPU)
    let n = b.iter().try_fold(0u64, |n, &c| {
        let d = c.wrapping_sub(b'0');
        (d < 10).then_some(())?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })?;
    T::try_from(n).ok()
}

/// Parse one reply line (storage, delete, arithmetic, touch, flush, version, verbosity, and
/// each line of `stats`).
///
/// ```
/// use memshard::proto::{parse_reply, Parsed, Reply};
/// assert_eq!(parse_reply(b"STORED\r\n").unwrap(), Parsed::Done(Reply::Stored, 8));
/// assert_eq!(parse_reply(b"STOR").unwrap(), Parsed::Incomplete);
/// assert_eq!(parse_reply(b"1001\r\n").unwrap(), Parsed::Done(Reply::Number(1001), 6));
/// assert!(parse_reply(b"HELLO\r\n").is_err());
/// ```
pub fn parse_reply(buf: &[u8]) -> Result<Parsed<Reply>, ParseError> {
    let (l, used) = match line(buf)? {
        Parsed::Incomplete => return Ok(Parsed::Incomplete),
        Parsed::Done(l, used) => (l, used),
    };
    let r = match l {
        b"STORED" => Reply::Stored,
        b"NOT_STORED" => Reply::NotStored,
        b"EXISTS" => Reply::Exists,
        b"NOT_FOUND" => Reply::NotFound,
        b"DELETED" => Reply::Deleted,
        b"TOUCHED" => Reply::Touched,
        b"OK" => Reply::Ok,
        b"END" => Reply::End,
        _ => {
            if let Some(e) = error_reply(l) {
                e
            } else if let Some(v) = l.strip_prefix(b"VERSION ") {
                Reply::Version(text(v))
            } else if let Some(s) = l.strip_prefix(b"STAT ") {
                let mut parts = s.splitn(2, |&b| b == b' ');
                let name = parts.next().unwrap_or_default();
                let value = parts.next().unwrap_or_default();
                Reply::Stat(text(name), text(value))
            } else if let Some(n) = number::<u64>(l.trim_ascii_end()) {
                // memcached pads incr/decr results with spaces in some versions
                Reply::Number(n)
            } else {
                return Err(ParseError::Unexpected(text(l)));
            }
        }
    };
    Ok(Parsed::Done(r, used))
}

/// Parse the next item of a retrieval reply. `max_value` bounds the data length a server may
/// announce; larger announcements are an error before any byte of the data is awaited.
///
/// ```
/// use memshard::proto::{parse_retrieval, Parsed, RetrievalItem};
/// let buf = b"VALUE k 3 2\r\nhi\r\nEND\r\n";
/// let Parsed::Done(RetrievalItem::Value { key, flags, data, cas }, used) =
///     parse_retrieval(buf, 1 << 20).unwrap() else { panic!() };
/// assert_eq!((&buf[key], flags, &buf[data], cas, used), (&b"k"[..], 3, &b"hi"[..], None, 17));
/// assert_eq!(parse_retrieval(&buf[used..], 1 << 20).unwrap(), Parsed::Done(RetrievalItem::End, 5));
/// // a server claiming a 4 GB value is refused at once
/// assert!(parse_retrieval(b"VALUE k 0 4294967295\r\n", 1 << 20).is_err());
/// ```
pub fn parse_retrieval(buf: &[u8], max_value: usize) -> Result<Parsed<RetrievalItem>, ParseError> {
    // The end of every reply, and the nothing a first look after a request finds: answered
    // before the line search (a memchr call each, ~60 instructions of every get).
    if buf.starts_with(b"END\r\n") {
        return Ok(Parsed::Done(RetrievalItem::End, 5));
    }
    if buf.is_empty() {
        return Ok(Parsed::Incomplete);
    }
    let header = match plain_value_header(buf) {
        Some(h) => h,
        None => match general_value_header(buf)? {
            Header::Value(h) => h,
            Header::Other(p) => return Ok(p),
        },
    };
    value_item(buf, header, max_value)
}

/// A `VALUE` line's parts: the key's range, flags, the announced length, CAS, and the bytes
/// the line took with its CRLF.
struct ValueHeader {
    key: Range<usize>,
    flags: u32,
    announced: u64,
    cas: Option<u64>,
    used: usize,
}

/// What [`general_value_header`] found: a `VALUE` line, or a whole answer (a refusal, or more
/// bytes needed).
enum Header {
    Value(ValueHeader),
    Other(Parsed<RetrievalItem>),
}

/// The digits `s` starts with, folded into a number, and how many there are: one to 19, so
/// that no overflow is possible (a number of 20 digits is left to the general parse).
#[inline(always)]
fn leading_number(s: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    let mut n = 0;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if n == 19 {
            return None;
        }
        value = value * 10 + u64::from(d);
        n += 1;
    }
    (n > 0).then_some((value, n))
}

/// The header of a whole, plain `VALUE key flags bytes [cas]` line read in one pass: what
/// nearly every line of a multi-get's reply is. `None` for anything else (another line, a
/// line not all here, any oddity), which [`general_value_header`] then answers: the two agree
/// on every line this one reads (a test pins it), and this one skips the search for the
/// line's end and the split into fields.
fn plain_value_header(buf: &[u8]) -> Option<ValueHeader> {
    let rest = buf.strip_prefix(VALUE)?;
    // the key ends at its space; a control byte or CR/LF in it is left to the general parse
    let key_len = rest.iter().position(|&b| b <= b' ')?;
    let rest = rest.get(key_len..)?.strip_prefix(b" ")?;
    header_after_key(buf, key_len, rest)
}

/// A `VALUE` line's start.
const VALUE: &[u8] = b"VALUE ";

/// The rest of [`plain_value_header`] once the key (`key_len` bytes) and its space are read:
/// `rest` is the line from the flags on.
#[inline(always)]
fn header_after_key(buf: &[u8], key_len: usize, rest: &[u8]) -> Option<ValueHeader> {
    let (flags, n) = leading_number(rest)?;
    let flags = u32::try_from(flags).ok()?;
    let rest = rest[n..].strip_prefix(b" ")?;
    let (announced, n) = leading_number(rest)?;
    let mut rest = &rest[n..];
    let mut cas = None;
    if let Some(after) = rest.strip_prefix(b" ") {
        let (c, n) = leading_number(after)?;
        cas = Some(c);
        rest = &after[n..];
    }
    if !rest.starts_with(b"\r\n") {
        return None;
    }
    let end = buf.len() - rest.len();
    if key_len == 0 || end > MAX_LINE {
        return None;
    }
    Some(ValueHeader {
        key: VALUE.len()..VALUE.len() + key_len,
        flags,
        announced,
        cas,
        used: end + 2,
    })
}

/// A value read whole by [`value_of`]: offsets into the buffer it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KnownValue {
    pub(crate) flags: u32,
    /// The data, without its CRLF.
    pub(crate) data: Range<usize>,
    pub(crate) cas: Option<u64>,
    /// The item's bytes, header to the data's CRLF.
    pub(crate) used: usize,
}

/// The value of `key` (a key that passed [`validate_key`](super::validate_key)) at the start
/// of `buf`, when `buf` starts with all of it: a plain `VALUE` line for `key`, data within
/// `max_value` and its CRLF. `None` for anything else (another key's value, `END`, an error,
/// an item not all here, a value too large), which [`parse_retrieval`] then reads: where this
/// answers, it answers as `parse_retrieval` does (a test pins it). A multi-get's values come
/// in the order of its keys, so knowing the key skips the search for its end and the check
/// of which key came; and a small answer, not `parse_retrieval`'s nested enums, took a
/// multi-get of 100 keys from ~1,128 to ~1,057 instructions a key (callgrind).
#[inline(always)]
pub(crate) fn value_of(buf: &[u8], key: &[u8], max_value: usize) -> Option<KnownValue> {
    let rest = buf.strip_prefix(VALUE)?;
    if !starts_with_key(rest, key) {
        return None;
    }
    let rest = rest[key.len()..].strip_prefix(b" ")?;
    let header = header_after_key(buf, key.len(), rest)?;
    if header.announced > max_value as u64 {
        return None;
    }
    let start = header.used;
    let end = start.checked_add(usize::try_from(header.announced).ok()?)?;
    if buf.get(end..end.checked_add(2)?)? != b"\r\n" {
        return None;
    }
    Some(KnownValue {
        flags: header.flags,
        data: start..end,
        cas: header.cas,
        used: end + 2,
    })
}

/// Whether `buf` starts with `key`. A key of 8 to 32 bytes is compared a word at a time,
/// inline, its last word overlapping the one before: with `strip_prefix` and its call to
/// `memcmp` a multi-get of 10-byte keys took ~8 instructions a key more (callgrind).
#[inline(always)]
fn starts_with_key(buf: &[u8], key: &[u8]) -> bool {
    let n = key.len();
    let Some(head) = buf.get(..n) else {
        return false;
    };
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    match n {
        8..=32 => {
            let mut at = 0;
            while at + 8 < n {
                if word(head, at) != word(key, at) {
                    return false;
                }
                at += 8;
            }
            word(head, n - 8) == word(key, n - 8)
        }
        _ => head == key,
    }
}

/// The first line of `buf` as a retrieval reply's line, read as a line and then split into
/// fields: every line [`plain_value_header`] leaves, errors included.
fn general_value_header(buf: &[u8]) -> Result<Header, ParseError> {
    let (l, used) = match line(buf)? {
        Parsed::Incomplete => return Ok(Header::Other(Parsed::Incomplete)),
        Parsed::Done(l, used) => (l, used),
    };
    // `END` never gets here: a line that is `END` starts the buffer with `END\r\n`, which
    // `parse_retrieval` answers first.
    let Some(rest) = l.strip_prefix(b"VALUE ") else {
        if let Some(e) = error_reply(l) {
            return Ok(Header::Other(Parsed::Done(RetrievalItem::Failed(e), used)));
        }
        return Err(ParseError::Unexpected(text(l)));
    };
    let bad = || ParseError::BadValueHeader(text(l));
    // No Vec: this runs once per value of a multi-get.
    let mut fields = rest.split(|&b| b == b' ');
    let (Some(key), Some(flags), Some(len)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(bad());
    };
    let cas = match (fields.next(), fields.next()) {
        (None, _) => None,
        (Some(c), None) => Some(number::<u64>(c).ok_or_else(bad)?),
        (Some(_), Some(_)) => return Err(bad()),
    };
    if key.is_empty() {
        return Err(bad());
    }
    let flags: u32 = number(flags).ok_or_else(bad)?;
    let announced: u64 = number(len).ok_or_else(bad)?;
    let key_start = b"VALUE ".len();
    Ok(Header::Value(ValueHeader {
        key: key_start..key_start + key.len(),
        flags,
        announced,
        cas,
        used,
    }))
}

/// A `VALUE` item once its header is read: its length checked against `max_value` before any
/// of it is awaited, then the data and its CRLF.
// Marked: once `Retrieve::step` became generic over its keys, LLVM stopped inlining this into
// it, which cost ~14 instructions a key of a multi-get (callgrind).
#[inline]
fn value_item(
    buf: &[u8],
    header: ValueHeader,
    max_value: usize,
) -> Result<Parsed<RetrievalItem>, ParseError> {
    let ValueHeader {
        key,
        flags,
        announced,
        cas,
        used,
    } = header;
    if announced > max_value as u64 {
        return Err(ParseError::ValueTooLarge {
            announced,
            limit: max_value,
        });
    }
    let len = announced as usize;
    let data_start = used;
    // A limit near usize::MAX ("no limit") must not let the claimed length wrap the sum.
    let Some(total) = data_start.checked_add(len).and_then(|t| t.checked_add(2)) else {
        return Err(ParseError::ValueTooLarge {
            announced,
            limit: max_value,
        });
    };
    if buf.len() < total {
        return Ok(Parsed::Incomplete);
    }
    if &buf[data_start + len..total] != b"\r\n" {
        return Err(ParseError::BadTerminator);
    }
    Ok(Parsed::Done(
        RetrievalItem::Value {
            key,
            flags,
            data: data_start..data_start + len,
            cas,
        },
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of the expected key is read whole up to the size limit; one over it, or one
    /// not all here, or another key's, is left to `parse_retrieval`, which refuses the first.
    #[test]
    fn a_known_value_is_read_only_whole_and_within_the_limit() {
        let buf = b"VALUE k 3 5 9\r\nhello\r\nEND\r\n";
        let whole = KnownValue {
            flags: 3,
            data: 15..20,
            cas: Some(9),
            used: 22,
        };
        assert_eq!(value_of(buf, b"k", 5), Some(whole));
        assert_eq!(value_of(buf, b"k", 4), None);
        assert!(matches!(
            parse_retrieval(buf, 4),
            Err(ParseError::ValueTooLarge { announced: 5, .. })
        ));
        assert_eq!(value_of(&buf[..21], b"k", 5), None);
        assert_eq!(value_of(buf, b"j", 5), None);
        assert_eq!(value_of(b"VALUE k 0 1\r\nxx\r\n", b"k", 5), None);
    }

    /// The word-at-a-time prefix test agrees with `starts_with` for keys of 1 to 40 bytes,
    /// with one byte changed at each place, and for a buffer shorter than the key.
    #[test]
    fn a_key_prefix_is_found_as_starts_with_finds_it() {
        for n in 1..=40 {
            let key: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let mut buf = key.clone();
            buf.extend_from_slice(b" 0 1\r\n");
            assert!(starts_with_key(&buf, &key), "{n}");
            assert!(!starts_with_key(&buf[..n - 1], &key), "{n}: short");
            for at in 0..n {
                let mut other = buf.clone();
                other[at] ^= 0x20;
                assert!(!starts_with_key(&other, &key), "{n} at {at}");
            }
        }
        assert!(starts_with_key(b"k", b""));
    }

    /// A line ends at the first `\r\n`: a bare `\n`, first in the buffer or inside the
    /// line, ends nothing.
    #[test]
    fn a_bare_newline_does_not_end_a_line() {
        assert_eq!(
            line(b"STORED\nX\r\n").unwrap(),
            Parsed::Done(&b"STORED\nX"[..], 10)
        );
        assert_eq!(
            line(b"\nSTORED\r\n").unwrap(),
            Parsed::Done(&b"\nSTORED"[..], 9)
        );
        assert_eq!(line(b"\n\r\n").unwrap(), Parsed::Done(&b"\n"[..], 3));
        assert_eq!(line(b"\r\n").unwrap(), Parsed::Done(&b""[..], 2));
        assert_eq!(line(b"\nSTORED\n").unwrap(), Parsed::Incomplete);
        assert!(parse_reply(b"STORED\nX\r\n").is_err());
    }

    #[test]
    fn every_prefix_of_a_reply_is_incomplete() {
        let buf = b"VALUE key 42 5 99\r\nhello\r\n";
        for cut in 0..buf.len() {
            assert_eq!(
                parse_retrieval(&buf[..cut], 100).unwrap(),
                Parsed::Incomplete,
                "cut {cut}"
            );
        }
        let Parsed::Done(
            RetrievalItem::Value {
                key,
                flags,
                data,
                cas,
            },
            n,
        ) = parse_retrieval(buf, 100).unwrap()
        else {
            panic!("not a value")
        };
        assert_eq!(
            (&buf[key], flags, &buf[data], cas, n),
            (&b"key"[..], 42, &b"hello"[..], Some(99), buf.len())
        );
    }

    /// The one-pass header reader answers the plain lines, and on every line it answers it
    /// agrees with the general reader: lines of every shape, each byte of them replaced by
    /// each byte that matters to a parse, and each of them cut short.
    #[test]
    fn the_one_pass_header_agrees_with_the_general_parse() {
        let read = |buf: &[u8]| {
            plain_value_header(buf).map(|h| (h.key, h.flags, h.announced, h.cas, h.used))
        };
        assert_eq!(
            read(b"VALUE profile:7 4294967295 32 9999999999999999999\r\n"),
            Some((6..15, u32::MAX, 32, Some(9_999_999_999_999_999_999), 51))
        );
        // 20 digits: left to the general parse, which reads them
        let cas20 = b"VALUE k 0 1 18446744073709551615\r\nx\r\n";
        assert_eq!(read(cas20), None);
        assert!(matches!(
            parse_retrieval(cas20, 1),
            Ok(Parsed::Done(
                RetrievalItem::Value {
                    cas: Some(u64::MAX),
                    ..
                },
                37
            ))
        ));
        assert_eq!(read(b"VALUE k 0 1\r\nx\r\n"), Some((6..7, 0, 1, None, 13)));
        // the CR at MAX_LINE: the longest line the general reader finds
        let long_key = format!("VALUE {} 1 2\r\n", "k".repeat(MAX_LINE - 10));
        assert_eq!(read(long_key.as_bytes()).map(|h| h.4), Some(MAX_LINE + 2));
        let too_long = format!("VALUE {} 1 2\r\n", "k".repeat(MAX_LINE - 9));
        assert_eq!(read(too_long.as_bytes()), None, "past MAX_LINE");
        assert_eq!(
            general_value_header(too_long.as_bytes()).err(),
            Some(ParseError::LineTooLong)
        );
        let lines: [&[u8]; 9] = [
            b"VALUE k 0 1\r\nx\r\n",
            b"VALUE key 42 5 99\r\nhello\r\n",
            b"VALUE a:b 4294967296 1\r\nx\r\n",
            b"VALUE k 0 18446744073709551616\r\n",
            b"VALUE k 0 1 18446744073709551616\r\nx\r\n",
            b"VALUE k 1 2 3 4\r\nxx\r\n",
            b"END\r\n",
            b"SERVER_ERROR out of memory\r\n",
            b"VALUE \xc3\xa9 7 0\r\n\r\n",
        ];
        let bytes = [
            b' ', b'\r', b'\n', b'\t', b'0', b'9', b'a', b'-', 0, 0x7f, 0xff,
        ];
        let (mut agreed, mut known) = (0, 0);
        let mut check = |buf: &[u8]| {
            // the reader told the key agrees with the general one too, on every valid key
            for key in [&b"k"[..], b"key", b"a:b", "\u{e9}".as_bytes()] {
                if let Some(told) = value_of(buf, key, 100) {
                    let item = RetrievalItem::Value {
                        key: VALUE.len()..VALUE.len() + key.len(),
                        flags: told.flags,
                        data: told.data,
                        cas: told.cas,
                    };
                    let general = parse_retrieval(buf, 100);
                    assert_eq!(
                        general,
                        Ok(Parsed::Done(item, told.used)),
                        "{:?}",
                        text(buf)
                    );
                    known += 1;
                }
            }
            let Some(fast) = read(buf) else { return };
            let Ok(Header::Value(h)) = general_value_header(buf) else {
                panic!("{:?}: only the one-pass reader reads it", text(buf));
            };
            assert_eq!(
                fast,
                (h.key, h.flags, h.announced, h.cas, h.used),
                "{:?}",
                text(buf)
            );
            agreed += 1;
        };
        for line in lines {
            for cut in 0..=line.len() {
                check(&line[..cut]);
            }
            for at in 0..line.len() {
                for b in bytes {
                    let mut changed = line.to_vec();
                    changed[at] = b;
                    check(&changed);
                    changed.insert(at, b);
                    check(&changed);
                }
            }
        }
        assert!(agreed > 400, "{agreed} lines read by both");
        assert!(known > 100, "{known} whole values read knowing the key");
    }

    #[test]
    fn hostile_replies_are_errors() {
        for bad in [
            &b"VALUE k x 1\r\na\r\n"[..],
            b"VALUE k 1 -1\r\n",
            b"VALUE  1 1\r\na\r\n",
            b"VALUE k 1 1 2 3\r\na\r\n",
            b"VALUE k 1 1\r\nab\r\n",
            b"VALUE k 99999999999 1\r\na\r\n",
            b"GARBAGE\r\n",
        ] {
            assert!(
                parse_retrieval(bad, 100).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(
            parse_retrieval(b"VALUE k 0 101\r\n", 100),
            Err(ParseError::ValueTooLarge { .. })
        ));
        // exactly the limit is taken
        assert!(matches!(
            parse_retrieval(b"VALUE k 0 3\r\nabc\r\n", 3),
            Ok(Parsed::Done(..))
        ));
        assert_eq!(
            parse_reply(&vec![b'a'; MAX_LINE + 2]),
            Err(ParseError::LineTooLong)
        );
        // the bound exactly: a line of MAX_LINE bytes is read, one byte more is refused even
        // when its CRLF follows
        let mut longest = b"SERVER_ERROR ".to_vec();
        longest.resize(MAX_LINE, b'x');
        longest.extend_from_slice(b"\r\n");
        assert!(matches!(
            parse_reply(&longest),
            Ok(Parsed::Done(Reply::ServerError(_), n)) if n == MAX_LINE + 2
        ));
        longest.insert(20, b'x');
        assert_eq!(parse_reply(&longest), Err(ParseError::LineTooLong));
        // MAX_LINE bytes and a lone CR: the LF may still come
        let mut pending = vec![b'a'; MAX_LINE];
        pending.push(b'\r');
        assert_eq!(parse_reply(&pending), Ok(Parsed::Incomplete));
        // ':' is the byte after '9': not a digit
        assert!(parse_reply(b"1:\r\n").is_err());
        assert!(parse_reply(b"/\r\n").is_err());
        assert!(parse_reply(b"-1\r\n").is_err());
        // found by fuzz/ (crashes-found/reply-huge-*): a claimed length that wrapped usize
        // when the limit was near usize::MAX
        for huge in [
            &b"VALUE k 0 18446744073709551614\r\n"[..],
            b"VALUE k 0 18446744073709551615\r\n",
        ] {
            for limit in [usize::MAX, usize::MAX - 1] {
                assert!(matches!(
                    parse_retrieval(huge, limit),
                    Err(ParseError::ValueTooLarge { .. })
                ));
            }
        }
    }

    #[test]
    fn one_line_replies() {
        let cases: &[(&[u8], Reply)] = &[
            (b"NOT_STORED\r\n", Reply::NotStored),
            (b"EXISTS\r\n", Reply::Exists),
            (b"NOT_FOUND\r\n", Reply::NotFound),
            (b"DELETED\r\n", Reply::Deleted),
            (b"TOUCHED\r\n", Reply::Touched),
            (b"OK\r\n", Reply::Ok),
            (b"END\r\n", Reply::End),
            (b"STORED\r\n", Reply::Stored),
            (b"ERROR\r\n", Reply::Error),
            (
                b"CLIENT_ERROR bad data chunk\r\n",
                Reply::ClientError("bad data chunk".into()),
            ),
            (
                b"SERVER_ERROR object too large for cache\r\n",
                Reply::ServerError("object too large for cache".into()),
            ),
            (b"VERSION 1.6.18\r\n", Reply::Version("1.6.18".into())),
            (b"STAT pid 42\r\n", Reply::Stat("pid".into(), "42".into())),
            (b"18446744073709551615\r\n", Reply::Number(u64::MAX)),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                parse_reply(bytes).unwrap(),
                Parsed::Done(want.clone(), bytes.len())
            );
        }
    }
}
