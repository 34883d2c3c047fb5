//! The read buffer both connections use: received bytes not yet consumed, compacted in place,
//! grown only when compaction frees too little, and released when it grew large. Values are
//! handed out as [`Bytes`] that share it ([`ReadBuf::take`]): a reply of a hundred values is
//! one allocation, not a hundred.

use bytes::{Buf, Bytes, BytesMut};
use std::ops::Range;

/// Bytes asked of the socket per read at least.
pub(crate) const READ_CHUNK: usize = 16 * 1024;
/// A buffer larger than this is released when its connection goes idle: a large value grew
/// it, and that memory should not stay with every pooled connection.
const MAX_IDLE_BUFFER: usize = 256 * 1024;

/// A connection's read buffer. `buf.len()` is its initialized part (zeroed once, when it
/// grows), so the spare space can be handed to a plain `read`; `buf` may share its allocation
/// with values already taken, which own the bytes before it.
#[derive(Debug)]
pub(crate) struct ReadBuf {
    buf: BytesMut,
    start: usize,
    end: usize,
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf {
            buf: BytesMut::zeroed(READ_CHUNK),
            start: 0,
            end: 0,
        }
    }
}

impl ReadBuf {
    /// The received bytes not yet consumed.
    #[inline]
    pub(crate) fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Whether every received byte has been consumed.
    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// `n` bytes of [`ReadBuf::unread`] were used.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// The bytes `range` of [`ReadBuf::unread`], without a copy, and the first `used` bytes
    /// consumed (`used` covers `range`). The value keeps the buffer's allocation alive; the
    /// buffer goes on in the part after it, and a new allocation is made only when that part
    /// runs short ([`ReadBuf::spare`]).
    pub(crate) fn take(&mut self, range: Range<usize>, used: usize) -> Bytes {
        let used = used.max(range.end).min(self.end - self.start);
        let mut head = self.buf.split_to(self.start + used);
        head.truncate(self.start + range.end.min(used));
        head.advance((self.start + range.start).min(head.len()));
        self.end -= self.start + used;
        self.start = 0;
        head.freeze()
    }

    /// The first `n` bytes of [`ReadBuf::unread`] (fewer if fewer are unread), consumed and
    /// handed out without a copy, like [`ReadBuf::take`]: values are slices of them.
    pub(crate) fn take_front(&mut self, n: usize) -> Bytes {
        self.take(0..n, n)
    }

    /// Room for the next read: at least a quarter chunk, after moving unconsumed bytes to the
    /// front, and growing only if that freed too little.
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK / 4 {
            self.buf.advance(self.start);
            self.end -= self.start;
            self.start = 0;
            self.buf.truncate(self.end);
            // The same allocation, the unread bytes moved to its front, when no value taken
            // from it is alive, that frees a quarter chunk, and no more is moved than was
            // consumed (bytes' own rule: each move is paid for by the reads before it);
            // otherwise a new one of at least a chunk, or twice what is unread (a large value
            // arriving).
            if !self.reclaim(READ_CHUNK / 4) {
                self.buf.reserve(self.end.max(READ_CHUNK));
                let cap = self.buf.capacity();
                self.buf.resize(cap, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`ReadBuf::spare`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// Before a new request: nothing is left unread (the caller checked), so start from the
    /// front, and give back a buffer a large value grew.
    pub(crate) fn reset(&mut self) {
        self.start = 0;
        self.end = 0;
        if self.buf.len() > MAX_IDLE_BUFFER {
            self.buf = BytesMut::zeroed(READ_CHUNK);
        } else if self.buf.len() < READ_CHUNK / 2 {
            // Values taken from earlier replies used the front of the buffer up: a reply
            // read into the short rest took a second `recv` every other 100-key multi-get
            // (strace). The allocation is taken back when those values are gone, else a new
            // chunk is made.
            self.buf.clear();
            if !self.reclaim(READ_CHUNK) {
                self.buf = BytesMut::zeroed(READ_CHUNK);
            }
        }
    }

    /// Takes back room for `additional` bytes past the buffer's end in its own allocation
    /// (bytes' `try_reclaim`: never allocates), with the whole capacity readable again.
    /// Zeroing it instead was a `memset` of the whole buffer before every multi-get: 112 of
    /// its ~1,850 user-space instructions per key (callgrind, 100 keys over 4 servers).
    fn reclaim(&mut self, additional: usize) -> bool {
        if !self.buf.try_reclaim(additional) {
            return false;
        }
        let cap = self.buf.capacity();
        // SAFETY: every allocation this buffer holds had its whole capacity initialized when it
        // was made (`BytesMut::zeroed`, or `resize(capacity, 0)` right after `reserve`), and
        // `try_reclaim` only hands back capacity of that same allocation (it never allocates),
        // so the bytes up to `cap` are initialized: stale bytes of earlier replies, which are
        // read only after a socket read has written over them (`filled`).
        unsafe { self.buf.set_len(cap) };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacts_before_growing_and_shrinks_when_reset() {
        let mut rb = ReadBuf::default();
        let n = rb.spare().len();
        rb.filled(n);
        rb.consume(n - 10);
        assert_eq!(rb.unread().len(), 10);
        // compaction moves the 10 unread bytes to the front: no growth needed
        assert_eq!(rb.spare().len(), READ_CHUNK - 10);
        for _ in 0..6 {
            let n = rb.spare().len();
            rb.filled(n);
        }
        assert!(rb.unread().len() > MAX_IDLE_BUFFER);
        rb.consume(usize::MAX);
        assert!(rb.is_empty());
        rb.reset();
        assert_eq!(rb.spare().len(), READ_CHUNK);
    }

    /// Moving bytes costs a copy per read: only when less than a quarter chunk is free, and
    /// only when no more is moved than was consumed; otherwise the buffer grows.
    #[test]
    fn unread_bytes_move_only_when_a_quarter_is_short_and_consumed_pays_for_it() {
        let mut rb = ReadBuf::default();
        rb.spare()[..100].fill(b'x');
        rb.filled(100);
        rb.consume(50);
        assert_eq!(rb.spare().len(), READ_CHUNK - 100);
        assert_eq!((rb.start, rb.end), (50, 100), "not moved");
        let free = READ_CHUNK / 4;
        rb.filled(READ_CHUNK - 100 - free);
        assert_eq!(rb.spare().len(), free, "exactly a quarter free: not moved");
        assert_eq!(rb.start, 50);
        rb.filled(1);
        // 50 consumed, 12,239 unread: moving would cost more than the reads paid, so it grows
        let unread = rb.unread().len();
        assert!(rb.spare().len() >= READ_CHUNK, "grown by a chunk at least");
        assert_eq!((rb.start, rb.end), (0, unread));
        assert_eq!(rb.unread()[..50], [b'x'; 50], "and kept its bytes");

        // as much consumed as is unread, and a quarter free after the move: moved, not grown
        let mut rb = ReadBuf::default();
        let at = rb.spare().as_ptr();
        rb.filled(READ_CHUNK - (READ_CHUNK / 4 - 1));
        rb.consume(READ_CHUNK / 2);
        let unread = rb.unread().len();
        assert_eq!(rb.spare().len(), READ_CHUNK - unread);
        assert_eq!((rb.start, rb.buf.len()), (0, READ_CHUNK));
        assert_eq!(rb.unread().as_ptr(), at, "the same allocation");
    }

    /// The front taken is at most what is unread, and the rest stays unread.
    #[test]
    fn a_front_is_taken_up_to_the_unread_bytes() {
        let mut rb = ReadBuf::default();
        put(&mut rb, b"abcdef");
        rb.consume(1);
        assert_eq!(&rb.take_front(2)[..], b"bc");
        assert_eq!(rb.unread(), b"def");
        assert_eq!(&rb.take_front(10)[..], b"def");
        assert!(rb.is_empty());
    }

    /// Fills the spare room with `bytes`.
    fn put(rb: &mut ReadBuf, bytes: &[u8]) {
        rb.spare()[..bytes.len()].copy_from_slice(bytes);
        rb.filled(bytes.len());
    }

    /// A taken value is a slice of the buffer (no copy), what follows it stays unread, and the
    /// reads after it never write over it: the buffer goes on after it, in a new allocation
    /// once it runs short while the value lives.
    #[test]
    fn taken_values_share_the_buffer_and_survive_later_reads() {
        let mut rb = ReadBuf::default();
        put(&mut rb, b"VALUE k 0 5\r\nhello\r\nEND\r\n");
        let base = rb.unread().as_ptr();
        let v = rb.take(13..18, 20);
        assert_eq!(v, &b"hello"[..]);
        assert_eq!(v.as_ptr(), base.wrapping_add(13), "not copied");
        assert_eq!(rb.unread(), b"END\r\n");
        rb.consume(5);
        let mut kept = vec![v];
        for i in 0..(2 * READ_CHUNK / 7) {
            let n = rb.spare().len().min(7);
            rb.spare()[..n].fill(b'0' + (i % 10) as u8);
            rb.filled(n);
            kept.push(rb.take(0..n, n));
        }
        assert_eq!(kept[0], &b"hello"[..]);
        for (i, v) in kept[1..].iter().enumerate() {
            assert!(
                v.iter().all(|&b| b == b'0' + (i % 10) as u8),
                "value {i}: {v:?}"
            );
        }
    }

    /// Once the values taken are dropped, a short buffer takes its own allocation back
    /// instead of making a new one.
    #[test]
    fn a_buffer_whose_values_are_gone_is_reused() {
        let mut rb = ReadBuf::default();
        let at = rb.spare().as_ptr();
        let n = READ_CHUNK - READ_CHUNK / 8;
        rb.filled(n);
        drop(rb.take(0..10, n));
        assert_eq!(rb.spare().len(), READ_CHUNK, "reclaimed whole");
        assert_eq!(rb.spare().as_ptr(), at, "the same allocation");
        rb.filled(n);
        let alive = rb.take(0..10, n);
        assert_eq!(rb.spare().len(), READ_CHUNK, "a new chunk");
        assert_ne!(
            rb.spare().as_ptr(),
            at,
            "the value's allocation is left to it"
        );
        assert_eq!(alive.len(), 10);
    }

    /// `used` short of the value's end still consumes the value; `used` past what was read
    /// consumes what was read, and the value never reaches past it.
    #[test]
    fn take_clamps_to_the_value_and_to_what_was_read() {
        let mut rb = ReadBuf::default();
        put(&mut rb, b"abcdefgh");
        rb.consume(1);
        assert_eq!(rb.take(1..3, 2), &b"cd"[..]);
        assert_eq!(rb.unread(), b"efgh");
        assert_eq!(rb.take(2..10, 100), &b"gh"[..]);
        assert!(rb.is_empty());
        put(&mut rb, b"xy");
        assert_eq!(rb.take(5..9, 9), &b""[..]);
        assert!(rb.is_empty());
        // past what was read, with bytes consumed before: clamped to the unread ones
        put(&mut rb, b"abcdefgh");
        rb.consume(3);
        assert_eq!(rb.take(1..10, 100), &b"efgh"[..]);
        assert!(rb.is_empty());
    }

    /// A buffer up to the idle limit is kept for the next request; a larger one is released.
    #[test]
    fn reset_keeps_a_buffer_up_to_the_idle_limit() {
        for (size, kept) in [
            (READ_CHUNK * 4, READ_CHUNK * 4),
            (200 * 1024, 200 * 1024),
            (MAX_IDLE_BUFFER, MAX_IDLE_BUFFER),
            (MAX_IDLE_BUFFER + 1, READ_CHUNK),
        ] {
            let mut rb = ReadBuf {
                buf: BytesMut::zeroed(size),
                start: 0,
                end: 0,
            };
            rb.reset();
            assert_eq!(rb.buf.len(), kept, "{size}");
        }
    }

    /// Before a request, a buffer whose front went to values has a full chunk again: its
    /// own allocation when those values are gone, a new one while they live.
    #[test]
    fn reset_gives_a_full_chunk_after_values_used_the_front() {
        let mut rb = ReadBuf::default();
        let at = rb.spare().as_ptr();
        let n = READ_CHUNK / 2 + 1;
        rb.filled(n);
        let alive = rb.take(0..n, n);
        rb.reset();
        assert_eq!(rb.spare().len(), READ_CHUNK, "a whole chunk");
        assert_ne!(rb.spare().as_ptr(), at, "new: the value holds the old one");
        let at = rb.spare().as_ptr();
        rb.filled(n);
        drop(rb.take(0..n, n));
        rb.reset();
        assert_eq!(rb.spare().len(), READ_CHUNK);
        assert_eq!(rb.spare().as_ptr(), at, "taken back");
        // half a chunk left: kept as it is
        rb.filled(READ_CHUNK / 2);
        let kept = rb.take(0..1, READ_CHUNK / 2);
        rb.reset();
        assert_eq!(rb.spare().len(), READ_CHUNK / 2);
        assert_eq!(alive.len() + kept.len(), n + 1);
    }

    /// Less than a quarter chunk free and nothing consumed: the buffer grows, by at least a
    /// chunk past what it holds, and keeps its bytes.
    #[test]
    fn a_buffer_three_quarters_full_grows_and_keeps_its_bytes() {
        let mut rb = ReadBuf::default();
        let n = READ_CHUNK - READ_CHUNK / 4 + 1;
        for (i, b) in rb.spare()[..n].iter_mut().enumerate() {
            *b = i as u8;
        }
        rb.filled(n);
        let spare = rb.spare().len();
        assert_eq!(spare, 2 * READ_CHUNK - n);
        assert!(rb.unread().iter().enumerate().all(|(i, &b)| b == i as u8));
    }
}
