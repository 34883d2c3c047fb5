//! Reply parser: `parse_reply` and `parse_retrieval` never panic, every `Done` stays inside the
//! input, and nothing allocates in proportion to a length the server merely claims.
//!
//! Input layout: byte 0 picks `max_value` from `LIMITS`; the rest is the bytes "received".
//!
//! The allocation bound needs `common.rs` at the including crate's root (`mod common`) with its
//! `PeakAlloc` as the crate's global allocator; `run` panics if it was left out (so the bound
//! can never pass by measuring nothing).

use crate::common::{LIMITS, alloc_bound, ensure_counting, measure};
use memshard::proto::{MAX_LINE, Parsed, Reply, RetrievalItem, parse_reply, parse_retrieval};

fn check_reply(buf: &[u8]) {
    let (r, peak) = measure(|| parse_reply(buf));
    assert!(
        peak <= alloc_bound(buf.len()),
        "parse_reply allocated {peak} bytes for {} input bytes",
        buf.len()
    );
    match r {
        Ok(Parsed::Done(reply, used)) => {
            assert!(
                (2..=buf.len()).contains(&used),
                "used {used} of {}",
                buf.len()
            );
            assert_eq!(&buf[used - 2..used], b"\r\n", "a reply line ends in CRLF");
            assert!(used <= MAX_LINE + 2);
            // A whole reply depends on its own bytes only.
            assert_eq!(
                parse_reply(&buf[..used]),
                Ok(Parsed::Done(reply.clone(), used))
            );
            if let Reply::Number(n) = reply {
                let line = std::str::from_utf8(&buf[..used - 2]).expect("a number is ASCII");
                assert_eq!(line.trim_end().parse::<u64>().ok(), Some(n));
            }
        }
        Ok(Parsed::Incomplete) => {
            let scan = &buf[..buf.len().min(MAX_LINE + 2)];
            assert!(
                !scan.windows(2).any(|w| w == b"\r\n"),
                "Incomplete with a CRLF in view"
            );
            assert!(buf.len() < MAX_LINE + 2, "Incomplete past MAX_LINE");
        }
        Err(_) => {}
    }
}

/// Walk a retrieval reply the way `Conn::read_values` does, checking every item.
fn check_retrieval(buf: &[u8], max_value: usize) {
    let mut start = 0;
    loop {
        let rest = &buf[start..];
        let (r, peak) = measure(|| parse_retrieval(rest, max_value));
        assert!(
            peak <= alloc_bound(rest.len()),
            "parse_retrieval allocated {peak} bytes for {} input bytes (max_value {max_value})",
            rest.len()
        );
        match r {
            Ok(Parsed::Done(item, used)) => {
                assert!(
                    (1..=rest.len()).contains(&used),
                    "used {used} of {}",
                    rest.len()
                );
                // The same bytes alone give the same item: nothing past `used` was looked at.
                assert_eq!(
                    parse_retrieval(&rest[..used], max_value),
                    Ok(Parsed::Done(item.clone(), used))
                );
                match item {
                    RetrievalItem::Value { key, data, .. } => {
                        assert!(
                            key.start < key.end && key.end <= used,
                            "key {key:?} used {used}"
                        );
                        assert!(data.start <= data.end, "data range inverted: {data:?}");
                        assert!(
                            data.end + 2 == used,
                            "data {data:?} not followed by CRLF at {used}"
                        );
                        assert!(key.end < data.start, "key {key:?} overlaps data {data:?}");
                        assert!((data.end - data.start) as u64 <= max_value as u64);
                        assert_eq!(&rest[data.end..used], b"\r\n");
                        assert!(!rest[key.clone()].contains(&b' '));
                        // What Conn::read_values slices out.
                        let _k = &rest[key];
                        let _d = &rest[data];
                        start += used;
                    }
                    RetrievalItem::End | RetrievalItem::Failed(_) => return,
                }
            }
            Ok(Parsed::Incomplete) | Err(_) => return,
        }
    }
}

pub fn run(input: &[u8]) {
    ensure_counting();
    let Some((&sel, buf)) = input.split_first() else {
        return;
    };
    let max_value = LIMITS[sel as usize % LIMITS.len()];
    check_reply(buf);
    check_retrieval(buf, max_value);
    if max_value != 1 << 20 {
        check_retrieval(buf, 1 << 20);
    }
}
