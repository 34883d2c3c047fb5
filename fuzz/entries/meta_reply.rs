//! Meta reply parser: `parse_meta` walked item by item as a meta connection reads replies;
//! never panics, every `Done` stays inside the input, the `k`/`O` ranges are exactly those
//! tokens' values, a `VA`'s data is within `max_value` and followed by CRLF, and nothing
//! allocates in proportion to a length the server merely claims.
//!
//! Input layout: byte 0 picks `max_value` from `common::LIMITS` (as in `reply`); the rest is
//! the bytes "received". Every input is also walked with the 1 MiB default.
//!
//! The allocation bound needs `common.rs` at the including crate's root (`mod common`) with its
//! `PeakAlloc` as the crate's global allocator; `run` panics if it was left out.

use crate::common::{LIMITS, alloc_bound, ensure_counting, measure};
use memshard::proto::meta::{MetaItem, MetaStatus, parse_meta};
use memshard::proto::{MAX_LINE, Parsed};
use std::ops::Range;

/// `range` is the value of a `<letter><value>` token of `line`: preceded by the letter and a
/// space, followed by a space or the end of the line.
fn is_token_value(line: &[u8], range: &Range<usize>, letter: u8, what: &str) {
    assert!(
        range.start >= 4 && range.start <= range.end && range.end <= line.len(),
        "{what} range {range:?} outside the line (0..{})",
        line.len()
    );
    assert_eq!(
        &line[range.start - 2..range.start],
        &[b' ', letter],
        "{what} range {range:?} does not start right after ` {}` in {:?}",
        letter as char,
        String::from_utf8_lossy(line)
    );
    assert!(
        range.end == line.len() || line[range.end] == b' ',
        "{what} range {range:?} does not end at a token's end in {:?}",
        String::from_utf8_lossy(line)
    );
    assert!(!line[range.clone()].contains(&b' '));
}

/// The length a `VA <len> …` line announces, as the parser must read it.
fn announced(line: &[u8]) -> Option<u64> {
    let t = line.strip_prefix(b"VA ")?.split(|&b| b == b' ').next()?;
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

fn walk(buf: &[u8], max_value: usize) {
    let mut start = 0;
    while start < buf.len() {
        let rest = &buf[start..];
        let (r, peak) = measure(|| parse_meta(rest, max_value));
        assert!(
            peak <= alloc_bound(rest.len()),
            "parse_meta allocated {peak} bytes for {} input bytes (max_value {max_value})",
            rest.len()
        );
        let scan = &rest[..rest.len().min(MAX_LINE + 2)];
        let crlf = scan.windows(2).position(|w| w == b"\r\n");
        match r {
            Ok(Parsed::Done(item, used)) => {
                assert!(
                    (1..=rest.len()).contains(&used),
                    "used {used} of {}",
                    rest.len()
                );
                let end = crlf.expect("Done without a CRLF in view");
                let line = &rest[..end];
                // The same bytes alone give the same item: nothing past `used` was looked at.
                assert_eq!(
                    parse_meta(&rest[..used], max_value),
                    Ok(Parsed::Done(item.clone(), used))
                );
                // A larger limit never changes an accepted item.
                assert_eq!(
                    parse_meta(rest, usize::MAX),
                    Ok(Parsed::Done(item.clone(), used))
                );
                match item {
                    MetaItem::Failed(_) => assert_eq!(used, end + 2, "an error line is one line"),
                    MetaItem::Reply(reply) => {
                        assert_eq!(
                            reply.status == MetaStatus::Value,
                            reply.data.is_some(),
                            "data without VA or VA without data"
                        );
                        match &reply.data {
                            Some(data) => {
                                assert_eq!(data.start, end + 2, "data right after the line");
                                assert!(data.start <= data.end, "data range inverted: {data:?}");
                                assert_eq!(data.end + 2, used, "data {data:?} then CRLF at {used}");
                                assert_eq!(&rest[data.end..used], b"\r\n");
                                assert!((data.end - data.start) as u64 <= max_value as u64);
                                assert_eq!(announced(line), Some((data.end - data.start) as u64));
                                let _d = &rest[data.clone()];
                            }
                            None => assert_eq!(used, end + 2, "a reply without data is one line"),
                        }
                        if let Some(k) = &reply.tokens.key {
                            is_token_value(line, k, b'k', "key");
                            assert!(k.start < k.end, "empty key token");
                        }
                        if let Some(o) = &reply.tokens.opaque {
                            is_token_value(line, o, b'O', "opaque");
                        }
                        assert_eq!(
                            reply.opaque(rest).map(<[u8]>::len),
                            reply.tokens.opaque.map(|o| o.len())
                        );
                    }
                }
                start += used;
            }
            Ok(Parsed::Incomplete) => {
                match crlf {
                    None => assert!(rest.len() < MAX_LINE + 2, "Incomplete past MAX_LINE"),
                    Some(end) => {
                        // Only a VA whose data is not all there yet may wait with a line in view.
                        let line = &rest[..end];
                        let n = announced(line).unwrap_or_else(|| {
                            panic!(
                                "Incomplete with a complete non-VA line {:?}",
                                String::from_utf8_lossy(line)
                            )
                        });
                        assert!(
                            n <= max_value as u64,
                            "waiting for {n} bytes over {max_value}"
                        );
                        assert!(
                            ((rest.len() - end - 2) as u64) < n + 2,
                            "Incomplete with all {n} data bytes and CRLF in view"
                        );
                    }
                }
                return;
            }
            Err(_) => return,
        }
    }
}

pub fn run(input: &[u8]) {
    ensure_counting();
    let Some((&sel, buf)) = input.split_first() else {
        return;
    };
    let max_value = LIMITS[sel as usize % LIMITS.len()];
    walk(buf, max_value);
    if max_value != 1 << 20 {
        walk(buf, 1 << 20);
    }
}
