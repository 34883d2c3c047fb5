//! Reply parser: `parse_reply` and `parse_retrieval` never panic, every `Done` stays inside the
//! input, and nothing allocates in proportion to a length the server merely claims.
//!
//! Input layout: byte 0 picks `max_value` from `LIMITS`; the rest is the bytes "received".
#![no_main]

use libfuzzer_sys::fuzz_target;
use memshard::proto::{MAX_LINE, Parsed, Reply, RetrievalItem, parse_reply, parse_retrieval};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Records the largest single allocation (or reallocation) requested since the last reset.
struct PeakAlloc;
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        PEAK.fetch_max(l.size(), Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        PEAK.fetch_max(l.size(), Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        PEAK.fetch_max(new, Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// `max_value` choices: tiny, memcached's default `-I` (1 MiB), and the "no limit" values a
/// caller may pass to `Builder::max_value_size`.
const LIMITS: [usize; 8] = [
    0,
    1,
    5,
    100,
    1 << 20,
    u32::MAX as usize,
    usize::MAX - 1,
    usize::MAX,
];

/// The most any parse may allocate at once for a `len`-byte input: a few times the bytes seen
/// (lossy UTF-8 text, the header's field list), never the length a header announces.
fn alloc_bound(len: usize) -> usize {
    64 * len.min(MAX_LINE + 2) + 4096
}

fn check_reply(buf: &[u8]) {
    PEAK.store(0, Relaxed);
    let r = parse_reply(buf);
    let peak = PEAK.load(Relaxed);
    assert!(peak <= alloc_bound(buf.len()), "parse_reply allocated {peak} bytes for {} input bytes", buf.len());
    match r {
        Ok(Parsed::Done(reply, used)) => {
            assert!(used >= 2 && used <= buf.len(), "used {used} of {}", buf.len());
            assert_eq!(&buf[used - 2..used], b"\r\n", "a reply line ends in CRLF");
            assert!(used <= MAX_LINE + 2);
            // A whole reply depends on its own bytes only.
            assert_eq!(parse_reply(&buf[..used]), Ok(Parsed::Done(reply.clone(), used)));
            if let Reply::Number(n) = reply {
                let line = std::str::from_utf8(&buf[..used - 2]).expect("a number is ASCII");
                assert_eq!(line.trim_end().parse::<u64>().ok(), Some(n));
            }
        }
        Ok(Parsed::Incomplete) => {
            let scan = &buf[..buf.len().min(MAX_LINE + 2)];
            assert!(!scan.windows(2).any(|w| w == b"\r\n"), "Incomplete with a CRLF in view");
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
        PEAK.store(0, Relaxed);
        let r = parse_retrieval(rest, max_value);
        let peak = PEAK.load(Relaxed);
        assert!(
            peak <= alloc_bound(rest.len()),
            "parse_retrieval allocated {peak} bytes for {} input bytes (max_value {max_value})",
            rest.len()
        );
        match r {
            Ok(Parsed::Done(item, used)) => {
                assert!(used > 0 && used <= rest.len(), "used {used} of {}", rest.len());
                // The same bytes alone give the same item: nothing past `used` was looked at.
                assert_eq!(
                    parse_retrieval(&rest[..used], max_value),
                    Ok(Parsed::Done(item.clone(), used))
                );
                match item {
                    RetrievalItem::Value { key, data, .. } => {
                        assert!(key.start < key.end && key.end <= used, "key {key:?} used {used}");
                        assert!(data.start <= data.end, "data range inverted: {data:?}");
                        assert!(data.end + 2 == used, "data {data:?} not followed by CRLF at {used}");
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

fuzz_target!(|input: &[u8]| {
    let Some((&sel, buf)) = input.split_first() else {
        return;
    };
    let max_value = LIMITS[sel as usize % LIMITS.len()];
    check_reply(buf);
    check_retrieval(buf, max_value);
    if max_value != 1 << 20 {
        check_retrieval(buf, 1 << 20);
    }
});
