//! Meta reply parser: a pure function over the bytes received so far, like the text parser
//! (`Incomplete`, `Done(item, used)`, or an error for bytes memcached never sends), with the
//! data length of `VA` checked against the limit before anything waits for it.

use super::super::reply::{ParseError, Parsed, Reply};
use std::ops::Range;

/// The status of a meta reply: its first two letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaStatus {
    /// `HD`: success without a value.
    Header,
    /// `VA <len>`: success with a value.
    Value,
    /// `EN`: `mg` miss.
    Miss,
    /// `NF`: not found (`md`, `ma`, `ms` with `C`).
    NotFound,
    /// `NS`: not stored (`ms` add on a present key, replace/append/prepend on a missing one).
    NotStored,
    /// `EX`: the CAS did not match.
    Exists,
    /// `MN`: the answer to `mn`.
    Noop,
}

/// The return tokens of a meta reply; ranges index the buffer given to the parser.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetaTokens {
    /// `c`: CAS unique.
    pub cas: Option<u64>,
    /// `f`: client flags.
    pub flags: Option<u32>,
    /// `s`: item size.
    pub size: Option<u64>,
    /// `t`: TTL left in seconds (`-1`: none).
    pub ttl: Option<i64>,
    /// `k`: the key (base64 when [`MetaTokens::base64`]).
    pub key: Option<Range<usize>>,
    /// `b`: the returned key is base64.
    pub base64: bool,
    /// `O`: the opaque token.
    pub opaque: Option<Range<usize>>,
    /// `h`: fetched before this request.
    pub hit_before: Option<bool>,
    /// `l`: seconds since the last access.
    pub last_access: Option<u64>,
    /// `W`: this client won the right to recompute the item.
    pub win: bool,
    /// `X`: the item is stale (invalidated).
    pub stale: bool,
    /// `Z`: another client already won.
    pub won_elsewhere: bool,
}

/// One meta reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaReply {
    /// What it says.
    pub status: MetaStatus,
    /// The data of `VA`.
    pub data: Option<Range<usize>>,
    /// Its return tokens.
    pub tokens: MetaTokens,
}

impl MetaReply {
    /// The opaque token's bytes, if any.
    pub fn opaque<'b>(&self, buf: &'b [u8]) -> Option<&'b [u8]> {
        self.tokens.opaque.clone().map(|r| &buf[r])
    }
}

/// What a meta connection reads: a meta reply, or an error line (`ERROR`, `CLIENT_ERROR`,
/// `SERVER_ERROR`: they carry no opaque token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaItem {
    /// A meta reply.
    Reply(MetaReply),
    /// An error line.
    Failed(Reply),
}

fn number<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn bad(l: &[u8]) -> ParseError {
    ParseError::BadMetaReply(String::from_utf8_lossy(l).into_owned())
}

/// Parse the next meta reply. `max_value` bounds the length a `VA` may announce.
///
/// ```
/// use memshard::proto::Parsed;
/// use memshard::proto::meta::{parse_meta, MetaItem, MetaStatus};
/// let buf = b"VA 2 f5 O7 W\r\nhi\r\nMN\r\n";
/// let Parsed::Done(MetaItem::Reply(r), used) = parse_meta(buf, 1 << 20)? else { panic!() };
/// assert_eq!(r.status, MetaStatus::Value);
/// assert_eq!((&buf[r.data.clone().unwrap()], r.tokens.flags, r.opaque(buf)), (&b"hi"[..], Some(5), Some(&b"7"[..])));
/// assert!(r.tokens.win);
/// assert!(matches!(parse_meta(&buf[used..], 1 << 20)?, Parsed::Done(MetaItem::Reply(_), 4)));
/// assert_eq!(parse_meta(b"VA 2", 1 << 20)?, Parsed::Incomplete);
/// assert!(parse_meta(b"VA 99 f0\r\n", 10).is_err());
/// # Ok::<(), memshard::proto::ParseError>(())
/// ```
pub fn parse_meta(buf: &[u8], max_value: usize) -> Result<Parsed<MetaItem>, ParseError> {
    let (l, used) = match super::super::reply::line(buf)? {
        Parsed::Done(l, used) => (l, used),
        Parsed::Incomplete => return Ok(Parsed::Incomplete),
    };
    if let Some(e) = super::super::reply::error_reply(l) {
        return Ok(Parsed::Done(MetaItem::Failed(e), used));
    }
    if l.len() < 2 || (l.len() > 2 && l[2] != b' ') {
        return Err(bad(l));
    }
    let status = match &l[..2] {
        b"HD" => MetaStatus::Header,
        b"VA" => MetaStatus::Value,
        b"EN" => MetaStatus::Miss,
        b"NF" => MetaStatus::NotFound,
        b"NS" => MetaStatus::NotStored,
        b"EX" => MetaStatus::Exists,
        b"MN" => MetaStatus::Noop,
        _ => return Err(bad(l)),
    };
    let mut fields = l[2..].split(|&b| b == b' ').skip(1);
    // the offset in `l` of the end of the field read last (ranges must index what was sent,
    // so a zero-padded length like `VA 002` is counted as sent)
    let mut at = 2;
    let len = if status == MetaStatus::Value {
        let field = fields.next().ok_or_else(|| bad(l))?;
        at += 1 + field.len();
        let announced: u64 = number(field).ok_or_else(|| bad(l))?;
        if announced > max_value as u64 {
            return Err(ParseError::ValueTooLarge {
                announced,
                limit: max_value,
            });
        }
        Some(announced as usize)
    } else {
        None
    };
    let mut tokens = MetaTokens::default();
    for f in fields {
        at += 1;
        let start = at;
        at += f.len();
        if status == MetaStatus::Noop {
            // memcached 1.6.18 sends a bare `MN`
            return Err(bad(l));
        }
        let Some((&letter, rest)) = f.split_first() else {
            return Err(bad(l));
        };
        // memcached's tokens are printable: a control byte means the line is not its reply
        if rest.iter().any(|&b| b < b' ' || b == 0x7f) {
            return Err(bad(l));
        }
        let ok = match letter {
            b'c' => number(rest).map(|v| tokens.cas = Some(v)),
            b'f' => number(rest).map(|v| tokens.flags = Some(v)),
            b's' => number(rest).map(|v| tokens.size = Some(v)),
            b't' => match rest {
                b"-1" => Some(-1),
                _ => number::<u32>(rest).map(i64::from),
            }
            .map(|v| tokens.ttl = Some(v)),
            b'k' if !rest.is_empty() => {
                tokens.key = Some(start + 1..at);
                Some(())
            }
            b'O' => {
                tokens.opaque = Some(start + 1..at);
                Some(())
            }
            b'h' => match rest {
                b"0" => Some(false),
                b"1" => Some(true),
                _ => None,
            }
            .map(|v| tokens.hit_before = Some(v)),
            b'l' => number(rest).map(|v| tokens.last_access = Some(v)),
            b'b' if rest.is_empty() => {
                tokens.base64 = true;
                Some(())
            }
            b'W' if rest.is_empty() => {
                tokens.win = true;
                Some(())
            }
            b'X' if rest.is_empty() => {
                tokens.stale = true;
                Some(())
            }
            b'Z' if rest.is_empty() => {
                tokens.won_elsewhere = true;
                Some(())
            }
            _ => None,
        };
        if ok.is_none() {
            return Err(bad(l));
        }
    }
    let Some(len) = len else {
        let reply = MetaReply {
            status,
            data: None,
            tokens,
        };
        return Ok(Parsed::Done(MetaItem::Reply(reply), used));
    };
    let Some(total) = used.checked_add(len).and_then(|t| t.checked_add(2)) else {
        return Err(ParseError::ValueTooLarge {
            announced: len as u64,
            limit: max_value,
        });
    };
    if buf.len() < total {
        return Ok(Parsed::Incomplete);
    }
    if &buf[used + len..total] != b"\r\n" {
        return Err(ParseError::BadTerminator);
    }
    let reply = MetaReply {
        status,
        data: Some(used..used + len),
        tokens,
    };
    Ok(Parsed::Done(MetaItem::Reply(reply), total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::MAX_LINE;

    fn one(buf: &[u8]) -> MetaReply {
        match parse_meta(buf, 1024) {
            Ok(Parsed::Done(MetaItem::Reply(r), n)) if n == buf.len() => r,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
        }
    }

    #[test]
    fn every_prefix_is_incomplete_and_tokens_are_read() {
        let buf = b"VA 5 s5 f42 t-1 c99 kkey h1 l3 O12 X W\r\nhello\r\n";
        for cut in 0..buf.len() {
            assert_eq!(
                parse_meta(&buf[..cut], 100),
                Ok(Parsed::Incomplete),
                "{cut}"
            );
        }
        let r = one(buf);
        let t = &r.tokens;
        assert_eq!(&buf[r.data.clone().unwrap()], b"hello");
        assert_eq!(
            (t.size, t.flags, t.ttl, t.cas),
            (Some(5), Some(42), Some(-1), Some(99))
        );
        assert_eq!(&buf[t.key.clone().unwrap()], b"key");
        assert_eq!(r.opaque(buf), Some(&b"12"[..]));
        assert_eq!((t.hit_before, t.last_access), (Some(true), Some(3)));
        assert!(t.win && t.stale && !t.won_elsewhere);
        // found by fuzz/ (crashes-found/meta_reply-va-leading-zero): ranges after a zero-padded
        // length must still point at the tokens
        let buf = b"VA 002 kab O7\r\nhi\r\n";
        let r = one(buf);
        assert_eq!(&buf[r.tokens.key.clone().unwrap()], b"ab");
        assert_eq!(r.opaque(buf), Some(&b"7"[..]));
    }

    #[test]
    fn statuses_and_error_lines() {
        for (b, s) in [
            (&b"HD\r\n"[..], MetaStatus::Header),
            (b"EN\r\n", MetaStatus::Miss),
            (b"NF O3\r\n", MetaStatus::NotFound),
            (b"NS c0\r\n", MetaStatus::NotStored),
            (b"EX\r\n", MetaStatus::Exists),
            (b"MN\r\n", MetaStatus::Noop),
            (b"HD Z X\r\n", MetaStatus::Header),
        ] {
            assert_eq!(one(b).status, s);
        }
        assert_eq!(
            parse_meta(b"SERVER_ERROR object too large for cache\r\n", 10),
            Ok(Parsed::Done(
                MetaItem::Failed(Reply::ServerError("object too large for cache".into())),
                41
            ))
        );
    }

    #[test]
    fn bytes_memcached_never_sends_are_errors() {
        for b in [
            &b"STORED\r\n"[..],
            b"VALUE k 0 1\r\na\r\n",
            b"HDX\r\n",
            b"HD q\r\n",
            b"HD W1\r\n",
            b"HD c-1\r\n",
            b"HD h2\r\n",
            b"HD  c1\r\n",
            b"VA x\r\n",
            b"VA 1 f1\r\nab\r\n",
            b"MN O1\r\n",
            b"H\r\n",
            b"HD O\r1\r\n",
            b"HD k\x00a\r\n",
        ] {
            assert!(
                parse_meta(b, 100).is_err(),
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
        assert!(matches!(
            parse_meta(b"VA 18446744073709551615\r\n", usize::MAX),
            Err(ParseError::ValueTooLarge { .. })
        ));
        // the limit exactly is taken, one more byte is refused
        assert!(matches!(
            parse_meta(b"VA 3\r\nabc\r\n", 3),
            Ok(Parsed::Done(MetaItem::Reply(_), 11))
        ));
        assert!(matches!(
            parse_meta(b"VA 4\r\nabcd\r\n", 3),
            Err(ParseError::ValueTooLarge { .. })
        ));
        // numbers are digits only: Rust's parser would take "+5"
        assert!(parse_meta(b"HD f+5\r\n", 10).is_err());
        // a key token needs the key; the flag tokens take no value
        for b in [
            &b"HD k\r\n"[..],
            b"HD b1\r\n",
            b"HD W1\r\n",
            b"HD X1\r\n",
            b"HD Z1\r\n",
        ] {
            assert!(
                parse_meta(b, 10).is_err(),
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
        assert!(parse_meta(b"HD kab b W X Z\r\n", 10).is_ok());
        assert_eq!(
            parse_meta(&[b'H'; MAX_LINE + 2], 10),
            Err(ParseError::LineTooLong)
        );
        // the bound exactly: a line of MAX_LINE bytes is read, one byte more is refused
        let mut longest = b"SERVER_ERROR ".to_vec();
        longest.resize(MAX_LINE, b'x');
        longest.extend_from_slice(b"\r\n");
        assert!(matches!(
            parse_meta(&longest, 10),
            Ok(Parsed::Done(MetaItem::Failed(Reply::ServerError(_)), n)) if n == MAX_LINE + 2
        ));
        longest.insert(20, b'x');
        assert_eq!(parse_meta(&longest, 10), Err(ParseError::LineTooLong));
    }
}
