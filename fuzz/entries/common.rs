//! What the reply-parsing targets (`reply`, `meta_reply`) share: `PeakAlloc`, the counting
//! allocator their allocation bound needs, the bound itself, and the `max_value` choices.
//!
//! Included once per crate, at its root, as `mod common` (`#[path = ".../entries/common.rs"]`),
//! and made the `#[global_allocator]` there: the entries reach it as `crate::common`, so they
//! all read the one per-thread peak the allocator writes. `ensure_counting` panics if the
//! crate left the allocator out (so a bound can never pass by measuring nothing).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Once;

/// Records, per thread, the largest single allocation (or reallocation) requested since the
/// last `measure` began. Per thread so that other threads (libFuzzer's, the test harness's,
/// other tests running in parallel) never count against the parse being measured.
pub struct PeakAlloc;

thread_local! {
    // Const-initialised and without `Drop`: reading it never allocates, so the allocator may.
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = PEAK.try_with(|p| p.set(p.get().max(size)));
}

unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        note(new);
        unsafe { System.realloc(p, l, new) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

/// Runs `f` and returns its result with the largest single allocation it made on this thread.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    PEAK.with(|p| p.set(0));
    let r = f();
    (r, PEAK.with(Cell::get))
}

/// Panics unless `PeakAlloc` is the global allocator (checked once per process).
pub fn ensure_counting() {
    static COUNTING: Once = Once::new();
    COUNTING.call_once(|| {
        let (v, peak) = measure(|| std::hint::black_box(Vec::<u8>::with_capacity(4096)));
        drop(v);
        assert!(
            peak >= 4096,
            "PeakAlloc is not the #[global_allocator]: the allocation bound would measure nothing"
        );
    });
}

/// `max_value` choices (byte 0 of the input, mod the length): tiny, memcached's default `-I`
/// (1 MiB), and the "no limit" values a caller may pass to `Builder::max_value_size`.
pub const LIMITS: [usize; 8] = [
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
pub fn alloc_bound(len: usize) -> usize {
    64 * len.min(memshard::proto::MAX_LINE + 2) + 4096
}
