//! Decompression with a cap: FastLZ (php-memcached, 4-byte length prefix), zlib (php-memcached
//! with the prefix; pylibmc and dalli bare) and gzip (dalli's `GzipCompressor`, spymemcached).
//! Crates and caps as chosen in `value-vectors/CRATES.md` (sections 1, 2 and 9).

use std::fmt;
use std::io::Read;

use super::ValueError;

/// A compression method a peer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// FastLZ level 1 or 2 (php-memcached 0x40), after a 4-byte little-endian length.
    FastLz,
    /// A zlib stream (php-memcached 0x20 after the length prefix, pylibmc 8, dalli 2).
    Zlib,
    /// A gzip member (spymemcached 2, dalli 2 with `Dalli::GzipCompressor`).
    Gzip,
    /// zstd (php-memcached 3.3).
    Zstd,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::FastLz => "FastLZ",
            Compression::Zlib => "zlib",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        })
    }
}

fn corrupt(method: Compression, detail: impl Into<String>) -> ValueError {
    ValueError::Decompress {
        method,
        detail: detail.into(),
    }
}

/// php-memcached's framing: the uncompressed length as 4 bytes in host order (little-endian on
/// every platform PHP runs on here), then the block (`php_memcached.c:925-929`). The length is
/// checked against `max` before anything is allocated.
pub(super) fn php_prefix(
    method: Compression,
    payload: &[u8],
    max: usize,
) -> Result<(usize, &[u8]), ValueError> {
    let Some((prefix, block)) = payload.split_first_chunk::<4>() else {
        return Err(corrupt(method, "shorter than the 4-byte length prefix"));
    };
    let len = u32::from_le_bytes(*prefix);
    if u64::from(len) > max as u64 {
        return Err(ValueError::TooLarge {
            size: u64::from(len),
            max,
        });
    }
    // `len <= max`, and `max` is a usize.
    Ok((len as usize, block))
}

/// A FastLZ block (level 1 or 2, read from its first byte) that must decompress to exactly
/// `len` bytes. `len` was checked against the maximum by [`php_prefix`]; the buffer is exactly
/// that long and the decoder errors instead of writing past it. A block shorter than the prefix
/// says is refused (PHP returns uninitialised memory for the tail, README.md "reads").
pub(super) fn fastlz(block: &[u8], len: usize) -> Result<Vec<u8>, ValueError> {
    let mut out = vec![0u8; len];
    if len == 0 {
        return if block.is_empty() {
            Ok(out)
        } else {
            Err(corrupt(Compression::FastLz, "data after an empty value"))
        };
    }
    let n = fastlz_rs::decompress_to_buf(block, &mut out)
        .map_err(|e| corrupt(Compression::FastLz, e.to_string()))?;
    if n != len {
        return Err(corrupt(
            Compression::FastLz,
            format!("length prefix says {len} bytes, the block holds {n}"),
        ));
    }
    Ok(out)
}

/// Reads at most `max` bytes out of a decoder; more is [`ValueError::TooLarge`].
fn capped(method: Compression, reader: impl Read, max: usize) -> Result<Vec<u8>, ValueError> {
    let limit = (max as u64).saturating_add(1);
    let mut out = Vec::new();
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(method, e.to_string()))?;
    if out.len() > max {
        return Err(ValueError::TooLarge {
            size: out.len() as u64,
            max,
        });
    }
    Ok(out)
}

/// A zlib stream, inflated to at most `max` bytes.
pub(super) fn zlib(data: &[u8], max: usize) -> Result<Vec<u8>, ValueError> {
    capped(Compression::Zlib, flate2::read::ZlibDecoder::new(data), max)
}

/// A gzip member, inflated to at most `max` bytes (the header's MTIME and OS are ignored).
pub(super) fn gzip(data: &[u8], max: usize) -> Result<Vec<u8>, ValueError> {
    capped(Compression::Gzip, flate2::read::GzDecoder::new(data), max)
}
