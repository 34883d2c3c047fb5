//! The bytes of a large value as stored: the index item under the caller's key and the chunk
//! items under keys of their own (the table in [`crate::large`]). Pure: no I/O.

use bytes::{Bytes, BytesMut};

/// What an index value starts with. The NUL makes it a value no text peer writes by accident;
/// a value that starts with it anyway is stored chunked by a client with large values on, so
/// that it can never be read as an index.
pub(crate) const MAGIC: &[u8] = b"\0memshard-large/1 ";

/// At most this many chunks per value: bounds what a corrupt or hostile index can make a
/// reader allocate (64 Ki keys) before any chunk is read.
pub(crate) const MAX_CHUNKS: usize = 1 << 16;

/// memcached's longest key (`KEY_MAX_LENGTH`, memcached.h).
const KEY_MAX: usize = 250;

/// One large value's index: how it was cut and how to check it whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Index {
    /// The value's length in bytes.
    pub(crate) len: usize,
    /// The length of every chunk but the last.
    pub(crate) chunk: usize,
    /// The write's random id: chunk keys of two writes never meet.
    pub(crate) id: u64,
    /// CRC-32 (IEEE) of the whole value.
    pub(crate) crc: u32,
}

impl Index {
    /// The index of `value` cut into `chunk`-byte pieces under `id`.
    pub(crate) fn of(value: &[u8], chunk: usize, id: u64) -> Index {
        Index {
            len: value.len(),
            chunk,
            id,
            crc: crc32fast::hash(value),
        }
    }

    /// How many chunks hold the value.
    pub(crate) fn count(&self) -> usize {
        self.len.div_ceil(self.chunk)
    }

    /// The length of chunk `i`.
    pub(crate) fn chunk_len(&self, i: usize) -> usize {
        self.chunk.min(self.len - i * self.chunk)
    }

    /// The index item's value.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let fields = format!(
            "{} {} {} {:016x} {:08x}",
            self.len,
            self.chunk,
            self.count(),
            self.id,
            self.crc
        );
        out.extend_from_slice(fields.as_bytes());
        out
    }

    /// The index in `value`: `None` when `value` is no index (an ordinary value), `Some(Err)`
    /// when it starts as one but does not read as one (cut, appended to, written by a later
    /// format).
    pub(crate) fn parse(value: &[u8]) -> Option<Result<Index, ()>> {
        let rest = value.strip_prefix(MAGIC)?;
        Some(parse_fields(rest).ok_or(()))
    }

    /// The caller-level key of chunk `i` of `key`'s value, for a client whose keys are sent
    /// with `prefix` in front: `key:id:i`, or with the md5 hex of `key` in its place when that
    /// would be longer than memcached's 250 bytes.
    pub(crate) fn chunk_key(&self, key: &[u8], prefix: usize, i: usize) -> Vec<u8> {
        let tail = format!(":{:016x}:{i}", self.id);
        if prefix + key.len() + tail.len() <= KEY_MAX {
            return [key, tail.as_bytes()].concat();
        }
        let mut out = hex(&crate::ring::hash::md5(key));
        out.extend_from_slice(tail.as_bytes());
        out
    }

    /// Every chunk key of `key`'s value (see [`Index::chunk_key`]).
    pub(crate) fn chunk_keys(&self, key: &[u8], prefix: usize) -> Vec<Vec<u8>> {
        (0..self.count())
            .map(|i| self.chunk_key(key, prefix, i))
            .collect()
    }

    /// The value from its chunks as read, in order: `None` unless every chunk is there with
    /// its length and the whole matches the CRC (a chunk gone, or one from another write).
    pub(crate) fn assemble<'a>(
        &self,
        chunks: impl IntoIterator<Item = Option<&'a [u8]>>,
    ) -> Option<Bytes> {
        let mut out = BytesMut::with_capacity(self.len);
        let mut n = 0;
        for (i, c) in chunks.into_iter().enumerate() {
            let c = c?;
            if i >= self.count() || c.len() != self.chunk_len(i) {
                return None;
            }
            out.extend_from_slice(c);
            n += 1;
        }
        (n == self.count() && crc32fast::hash(&out) == self.crc).then(|| out.freeze())
    }
}

fn parse_fields(rest: &[u8]) -> Option<Index> {
    let text = std::str::from_utf8(rest).ok()?;
    let mut f = text.split(' ');
    let len: usize = f.next()?.parse().ok()?;
    let chunk: usize = f.next()?.parse().ok()?;
    let count: usize = f.next()?.parse().ok()?;
    let id = f.next().filter(|s| s.len() == 16)?;
    let crc = f.next().filter(|s| s.len() == 8)?;
    if f.next().is_some() || chunk == 0 || count > MAX_CHUNKS {
        return None;
    }
    let index = Index {
        len,
        chunk,
        id: u64::from_str_radix(id, 16).ok()?,
        crc: u32::from_str_radix(crc, 16).ok()?,
    };
    (count >= 1 && index.count() == count).then_some(index)
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .collect()
}

/// `value` in `chunk`-byte pieces (the last one shorter).
pub(crate) fn split(value: &[u8], chunk: usize) -> impl Iterator<Item = &[u8]> {
    value.chunks(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> Index {
        Index::of(b"abcdefghij", 4, 0x0123_4567_89ab_cdef)
    }

    #[test]
    fn an_index_reads_back_as_written() {
        let ix = index();
        let bytes = ix.encode();
        assert_eq!(
            bytes,
            [
                MAGIC,
                b"10 4 3 0123456789abcdef ",
                format!("{:08x}", ix.crc).as_bytes()
            ]
            .concat()
        );
        assert_eq!(Index::parse(&bytes), Some(Ok(ix)));
        assert_eq!((ix.count(), ix.chunk_len(0), ix.chunk_len(2)), (3, 4, 2));
    }

    #[test]
    fn an_ordinary_value_is_no_index_and_a_damaged_index_is_not_read() {
        assert_eq!(Index::parse(b"hello"), None);
        assert_eq!(Index::parse(b""), None);
        let good = index().encode();
        let damaged = [
            [&good[..], b"appended"].concat(),
            good[..good.len() - 1].to_vec(),
            [MAGIC, b"10 4 2 0123456789abcdef 00000000"].concat(), // wrong count
            [MAGIC, b"10 0 3 0123456789abcdef 00000000"].concat(), // no chunk size
            [MAGIC, b"0 4 0 0123456789abcdef 00000000"].concat(),  // no chunks
            [MAGIC, b"10 4 3 0123456789abcde 00000000"].concat(),  // short id
            [MAGIC, b"10 4 3 0123456789abcdef 0000000"].concat(),  // short crc
            [
                MAGIC,
                format!(
                    "{} 1 {} 0123456789abcdef 00000000",
                    MAX_CHUNKS + 1,
                    MAX_CHUNKS + 1
                )
                .as_bytes(),
            ]
            .concat(),
        ];
        for d in damaged {
            assert_eq!(
                Index::parse(&d),
                Some(Err(())),
                "{:?}",
                String::from_utf8_lossy(&d)
            );
        }
        let most = [
            MAGIC,
            format!("{MAX_CHUNKS} 1 {MAX_CHUNKS} 0123456789abcdef 00000000").as_bytes(),
        ]
        .concat();
        assert!(matches!(Index::parse(&most), Some(Ok(_))));
    }

    #[test]
    fn chunk_keys_carry_the_key_unless_too_long() {
        let ix = index();
        assert_eq!(
            ix.chunk_keys(b"k", 0),
            [
                b"k:0123456789abcdef:0".to_vec(),
                b"k:0123456789abcdef:1".to_vec(),
                b"k:0123456789abcdef:2".to_vec()
            ]
        );
        // without a prefix, 231 + 19 = 250 fits and 232 does not
        assert_eq!(ix.chunk_key(&[b'k'; 231], 0, 0).len(), 250);
        assert_eq!(ix.chunk_key(&[b'k'; 232], 0, 0).len(), 32 + 19);
        // 230 + 19 + 1 = 250 fits with a one-byte prefix; one byte more does not
        let fits = vec![b'k'; 230];
        assert_eq!(ix.chunk_key(&fits, 1, 0).len(), 249);
        assert_eq!(ix.chunk_key(&fits, 1, 0)[..230], fits[..]);
        let long = ix.chunk_key(&fits, 2, 0);
        assert_eq!(
            long,
            [
                &hex(&crate::ring::hash::md5(&fits))[..],
                b":0123456789abcdef:0"
            ]
            .concat()
        );
        assert_eq!(long.len(), 32 + 19);
    }

    #[test]
    fn only_every_chunk_of_the_one_write_assembles() {
        let value = b"abcdefghij";
        let ix = index();
        let parts: Vec<&[u8]> = split(value, 4).collect();
        assert_eq!(parts, [&b"abcd"[..], b"efgh", b"ij"]);
        let whole = ix.assemble(parts.iter().map(|p| Some(*p)));
        assert_eq!(whole.as_deref(), Some(&value[..]));
        // a chunk gone, one short, one too many, one of another write
        assert_eq!(ix.assemble([Some(&b"abcd"[..]), None, Some(b"ij")]), None);
        assert_eq!(ix.assemble([Some(&b"abcd"[..]), Some(b"efgh")]), None);
        assert_eq!(
            ix.assemble([Some(&b"abcd"[..]), Some(b"efgh"), Some(b"ij"), Some(b"")]),
            None
        );
        assert_eq!(
            ix.assemble([Some(&b"abcd"[..]), Some(b"efgX"), Some(b"ij")]),
            None
        );
        assert_eq!(
            ix.assemble([Some(&b"abcd"[..]), Some(b"efghi"), Some(b"j")]),
            None
        );
    }
}
