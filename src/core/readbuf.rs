//! The read buffer both connections use: received bytes not yet consumed, compacted in place,
//! grown only when compaction frees too little, and released when it grew large.

/// Bytes asked of the socket per read at least.
pub(crate) const READ_CHUNK: usize = 16 * 1024;
/// A buffer larger than this is released when its connection goes idle: a large value grew
/// it, and that memory should not stay with every pooled connection.
const MAX_IDLE_BUFFER: usize = 256 * 1024;

/// A connection's read buffer. Always initialized (zeroed once, when it grows), so the spare
/// space can be handed to a plain `read`.
#[derive(Debug)]
pub(crate) struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf {
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
        }
    }
}

impl ReadBuf {
    /// The received bytes not yet consumed.
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

    /// Room for the next read: at least a quarter chunk, after moving unconsumed bytes to the
    /// front, and growing only if that freed too little.
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK / 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < READ_CHUNK / 4 {
                let grown = (self.buf.len() * 2).max(self.end + READ_CHUNK);
                self.buf.resize(grown, 0);
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
            self.buf = vec![0; READ_CHUNK];
        }
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

    /// Moving bytes costs a copy per read: only when less than a quarter chunk is free.
    #[test]
    fn unread_bytes_stay_in_place_while_a_quarter_chunk_is_free() {
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
        assert_eq!(rb.spare().len(), free - 1 + 50, "moved to the front");
        assert_eq!((rb.start, rb.buf.len()), (0, READ_CHUNK), "and not grown");
        // moved, and exactly a quarter free after the move: still not grown
        let mut rb = ReadBuf::default();
        rb.filled(READ_CHUNK - (READ_CHUNK / 4 - 1));
        rb.consume(1);
        assert_eq!(rb.spare().len(), READ_CHUNK / 4);
        assert_eq!((rb.start, rb.buf.len()), (0, READ_CHUNK));
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
                buf: vec![0; size],
                start: 0,
                end: 0,
            };
            rb.reset();
            assert_eq!(rb.buf.len(), kept, "{size}");
        }
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
