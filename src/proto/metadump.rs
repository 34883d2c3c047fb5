//! `lru_crawler metadump all` (memcached 1.4.31 and later): the request and its reply lines.
//!
//! memcached's crawler (`crawler.c`, `crawler_metadump_eval`) writes one line per live item,
//! `key=K exp=E la=L cas=C fetch=yes|no cls=N size=S` (1.6.22 and later add `flags=F`, with
//! extstore `ext_page=` and `ext_offset=`), each ended by a bare `\n`, and ends the dump with
//! `END\r\n`; 1.6.43 and later send `OK\r\n` before the first item (`crawler_metadump_init`).
//! The key is URL-encoded by `uriencode` (util.c): every byte but ASCII letters, digits and
//! `-._~` as `%XX`, so binary keys (meta `b` keys, stored decoded; only `mgdump` spells them
//! in base64) and keys with spaces come back byte for byte. Refusals are one line:
//! `CLIENT_ERROR lru crawler disabled` (`-o no_lru_crawler`), `ERROR metadump not allowed`
//! (`-o no_dump`), `BUSY currently processing crawler request`; `NOTSTARTED no items to
//! crawl` answers a server with nothing to crawl.

/// The request: every slab class.
pub const METADUMP_ALL: &[u8] = b"lru_crawler metadump all\r\n";

/// The longest dump line accepted: a 250-byte key encoded is 750 bytes, the other fields
/// under 200.
pub const MAX_DUMP_LINE: usize = 4096;

/// One item of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpedKey {
    /// The key, decoded.
    pub key: Vec<u8>,
    /// When it expires, in Unix seconds; `None`: never (`exp=-1`).
    pub expires: Option<i64>,
    /// Its last access, in Unix seconds.
    pub last_access: u64,
    /// Its CAS unique.
    pub cas: u64,
    /// Whether it was read since it was stored.
    pub fetched: bool,
    /// Its slab class.
    pub class: u32,
    /// Its size in memory (header, key and value).
    pub size: u64,
    /// Its client flags (memcached 1.6.22 and later print them).
    pub flags: Option<u32>,
}

/// One line of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DumpLine {
    /// `OK`: the dump starts (memcached 1.6.43 and later).
    Started,
    /// An item.
    Key(DumpedKey),
    /// `END`: the dump is complete.
    End,
    /// `NOTSTARTED`: nothing to crawl, an empty server; no `END` follows.
    Empty,
    /// The server refused the dump (`ERROR ...`, `CLIENT_ERROR ...`, `BUSY ...`,
    /// `BADCLASS ...`): the whole line. Nothing follows.
    Refused(String),
}

/// A dump line that is none of the above: the stream cannot be trusted further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    /// No line end within [`MAX_DUMP_LINE`] bytes.
    #[error("metadump line longer than {MAX_DUMP_LINE} bytes without a line end")]
    LineTooLong,
    /// A line that is not an item, an end or a refusal.
    #[error("malformed metadump line {0:?}")]
    Malformed(String),
}

/// The first whole line of `buf` (without `\n` or `\r\n`) and the bytes it takes, or `None`
/// while no line end has come yet.
pub fn next_dump_line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, DumpError> {
    match memchr::memchr(b'\n', buf) {
        Some(i) if i < MAX_DUMP_LINE => {
            let line = &buf[..i];
            Ok(Some((line.strip_suffix(b"\r").unwrap_or(line), i + 1)))
        }
        Some(_) => Err(DumpError::LineTooLong),
        None if buf.len() >= MAX_DUMP_LINE => Err(DumpError::LineTooLong),
        None => Ok(None),
    }
}

/// One line (as [`next_dump_line`] gives it).
pub fn parse_dump_line(line: &[u8]) -> Result<DumpLine, DumpError> {
    let bad = || DumpError::Malformed(String::from_utf8_lossy(line).into_owned());
    if line == b"END" {
        return Ok(DumpLine::End);
    }
    if line == b"OK" {
        return Ok(DumpLine::Started);
    }
    if line.starts_with(b"NOTSTARTED") {
        return Ok(DumpLine::Empty);
    }
    for refusal in [
        &b"ERROR"[..],
        b"CLIENT_ERROR",
        b"SERVER_ERROR",
        b"BUSY",
        b"BADCLASS",
    ] {
        if line.starts_with(refusal) && matches!(line.get(refusal.len()), None | Some(b' ')) {
            return Ok(DumpLine::Refused(
                String::from_utf8_lossy(line).into_owned(),
            ));
        }
    }
    let mut item = DumpedKey {
        key: Vec::new(),
        expires: None,
        last_access: 0,
        cas: 0,
        fetched: false,
        class: 0,
        size: 0,
        flags: None,
    };
    let mut has_key = false;
    for field in line.split(|&b| b == b' ').filter(|f| !f.is_empty()) {
        let eq = memchr::memchr(b'=', field).ok_or_else(bad)?;
        let (name, value) = (&field[..eq], &field[eq + 1..]);
        match name {
            b"key" => {
                item.key = uri_decode(value).ok_or_else(bad)?;
                has_key = true;
            }
            b"exp" => {
                let e: i64 = number(value).ok_or_else(bad)?;
                item.expires = (e >= 0).then_some(e);
            }
            b"la" => item.last_access = number(value).ok_or_else(bad)?,
            b"cas" => item.cas = number(value).ok_or_else(bad)?,
            b"fetch" => item.fetched = value == b"yes",
            b"cls" => item.class = number(value).ok_or_else(bad)?,
            b"size" => item.size = number(value).ok_or_else(bad)?,
            b"flags" => item.flags = Some(number(value).ok_or_else(bad)?),
            // ext_page, ext_offset and whatever a later memcached adds
            _ => {}
        }
    }
    if !has_key || item.key.is_empty() {
        return Err(bad());
    }
    Ok(DumpLine::Key(item))
}

fn number<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// `%XX` back to its byte; anything else as is. `None` for a `%` without two hex digits.
fn uri_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        if b == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: &[u8]) -> DumpedKey {
        match parse_dump_line(line) {
            Ok(DumpLine::Key(k)) => k,
            other => panic!("{other:?}"),
        }
    }

    /// A line as memcached 1.6.18 writes it, and one with 1.6.22's flags and extstore fields.
    #[test]
    fn items_parse_with_every_field() {
        let k = key(b"key=user%3A42 exp=-1 la=1700000000 cas=7 fetch=no cls=1 size=68");
        assert_eq!(k.key, b"user:42");
        assert_eq!(k.expires, None);
        assert_eq!((k.last_access, k.cas, k.fetched), (1_700_000_000, 7, false));
        assert_eq!((k.class, k.size, k.flags), (1, 68, None));
        let k = key(
            b"key=a exp=1700000300 la=1 cas=2 fetch=yes cls=12 size=9000 flags=4294967295 ext_page=3 ext_offset=8",
        );
        assert_eq!(k.expires, Some(1_700_000_300));
        assert!(k.fetched);
        assert_eq!(k.flags, Some(u32::MAX));
    }

    /// uriencode's escapes come back byte for byte: binary, UTF-8, spaces and `%` itself.
    #[test]
    fn keys_are_decoded_byte_for_byte() {
        assert_eq!(key(b"key=%00%FF%20%25-._~Az9").key, b"\x00\xff %-._~Az9");
        assert_eq!(key(b"key=%C3%A9t%C3%A9 cls=1").key, "été".as_bytes());
        assert_eq!(key(b"key=%c3%a9").key, "é".as_bytes());
    }

    #[test]
    fn starts_ends_and_refusals() {
        assert_eq!(parse_dump_line(b"OK"), Ok(DumpLine::Started));
        assert_eq!(parse_dump_line(b"END"), Ok(DumpLine::End));
        assert_eq!(
            parse_dump_line(b"NOTSTARTED no items to crawl"),
            Ok(DumpLine::Empty)
        );
        for r in [
            "CLIENT_ERROR lru crawler disabled",
            "ERROR metadump not allowed",
            "ERROR",
            "BUSY currently processing crawler request",
            "BADCLASS invalid class id",
            "SERVER_ERROR out of memory",
        ] {
            assert_eq!(
                parse_dump_line(r.as_bytes()),
                Ok(DumpLine::Refused(r.into()))
            );
        }
    }

    #[test]
    fn malformed_lines_are_errors() {
        for line in [
            &b""[..],
            b"ENDX",
            b"OKAY",
            b"ERRORS",
            b"key=",
            b"exp=-1 cls=1",
            b"key=a%4",
            b"key=a%zz",
            b"key=a exp=soon",
            b"key=a cls=-1",
            b"key=a flags=4294967296",
            b"hello",
        ] {
            assert!(
                matches!(parse_dump_line(line), Err(DumpError::Malformed(_))),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn lines_end_at_lf_or_crlf_and_are_bounded() {
        assert_eq!(next_dump_line(b"key=a\nEND"), Ok(Some((&b"key=a"[..], 6))));
        assert_eq!(next_dump_line(b"END\r\n"), Ok(Some((&b"END"[..], 5))));
        assert_eq!(next_dump_line(b"key=a"), Ok(None));
        let long = vec![b'a'; MAX_DUMP_LINE];
        assert_eq!(next_dump_line(&long), Err(DumpError::LineTooLong));
        let mut just = vec![b'a'; MAX_DUMP_LINE - 1];
        just.push(b'\n');
        assert_eq!(
            next_dump_line(&just).map(|l| l.map(|(_, n)| n)),
            Ok(Some(MAX_DUMP_LINE))
        );
    }
}
