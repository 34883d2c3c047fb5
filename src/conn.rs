//! One connection to one server: socket, read buffer, timeouts, and the broken flag.
//!
//! Any error or timeout in the middle of an exchange leaves the stream out of step with the
//! requests (a late reply would be read by the next caller), so the connection marks itself
//! broken and the pool never hands it out again.
//!
//! A connection that sat idle in its pool may have been closed by the server meanwhile
//! (memcached `-o idle_timeout`, a restart), or the server may have sent bytes nobody asked
//! for. [`Conn::idle_check`] finds both before a request is written, without a round trip (one
//! non-blocking `recv`). A reused connection that fails the way a closed connection fails (end
//! of stream, reset, broken pipe) before any byte of a reply reports [`Conn::failed_stale`], so
//! the client can tell a stale connection from a failing server; [`Conn::sent_any`] says
//! whether any byte of the request may have reached the server. Bytes left over after the last
//! reply of an exchange fail it ([`Conn::end_exchange`]): which bytes answered cannot be told.

use crate::error::{Error, Result};
use crate::proto::{MAX_LINE, Parsed, Reply, Request, RetrievalItem, parse_reply, parse_retrieval};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// Socket settings applied to every connection and every operation.
#[derive(Clone, Debug)]
pub struct ConnOptions {
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for one whole reply, counted from the start of its read: a reply of many
    /// lines (`stats`, the errors after a noreply batch) or values (one `get` of many keys)
    /// gets one deadline, never one per line.
    pub read_timeout: Duration,
    /// Longest wait to write one request.
    pub write_timeout: Duration,
    /// Largest value accepted in a reply (and sent in a request).
    pub max_value_size: usize,
}

impl Default for ConnOptions {
    fn default() -> Self {
        ConnOptions {
            connect_timeout: Duration::from_millis(500),
            read_timeout: Duration::from_millis(1000),
            write_timeout: Duration::from_millis(1000),
            max_value_size: 1024 * 1024,
        }
    }
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, d: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(Some(d)),
            Stream::Unix(s) => s.set_read_timeout(Some(d)),
        }
    }
    fn set_write_timeout(&self, d: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(Some(d)),
            Stream::Unix(s) => s.set_write_timeout(Some(d)),
        }
    }
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    /// Copies the bytes waiting to be read into `buf` without consuming them and without
    /// waiting: `Ok(0)` when the peer has closed, `WouldBlock` when nothing is waiting.
    fn peek_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        };
        // SAFETY: `fd` is the open socket `self` owns, borrowed for the whole call; `buf` is
        // valid for writes of `buf.len()` bytes and recv(2) writes at most that many. Why not the
        // safe way (set_nonblocking(true), read, set_nonblocking(false)): that is three syscalls
        // per checkout, measured at ~1.5 µs against ~0.6 µs for this one recv on loopback, next
        // to a get of ~40 µs.
        let n = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}

/// Most lines a `stats` reply may have, its `END` included. memcached's largest groups stay
/// far below: `stats items` and `stats slabs` have about 20 lines per slab class (at most 63
/// classes by default), `stats conns` about 6 per open connection (1024 by default, `-c`).
pub const STATS_MAX_LINES: usize = 16_384;

/// Most bytes a `stats` reply may have, its `END` included (about 60 bytes a line).
pub const STATS_MAX_BYTES: usize = 1024 * 1024;

/// How much a reply of many one-line replies (`stats`, the errors drained after a noreply
/// batch) may hold before the server is taken for broken: beyond it the read fails with a
/// Protocol error naming the server and the limit, and the connection is dropped. The whole
/// reply must also arrive within one read timeout, counted from the start of its read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineBudget {
    /// Most lines, the last one (`END`, `VERSION`) included.
    pub lines: usize,
    /// Most bytes, line ends included.
    pub bytes: usize,
    /// What the reply answers, for the error.
    pub what: &'static str,
}

impl LineBudget {
    /// A `stats` reply: [`STATS_MAX_LINES`] lines and [`STATS_MAX_BYTES`] bytes.
    pub const STATS: LineBudget = LineBudget {
        lines: STATS_MAX_LINES,
        bytes: STATS_MAX_BYTES,
        what: "stats",
    };

    /// The replies to `requests` noreply commands and the `version` after them: at most one
    /// error line per request, then the version line.
    pub fn noreply(requests: usize) -> LineBudget {
        let lines = requests.saturating_add(1);
        LineBudget {
            lines,
            bytes: lines.saturating_mul(MAX_LINE + 2),
            what: "noreply commands and their version",
        }
    }

    /// The Protocol error for a reply that went past this budget.
    pub(crate) fn exceeded(&self, server: &str, lines: usize, bytes: usize) -> Error {
        Error::protocol(
            server,
            format!(
                "the reply to {} reached {lines} lines and {bytes} bytes without its end; a reply may have at most {} lines and {} bytes, so the connection was dropped",
                self.what, self.lines, self.bytes
            ),
        )
    }

    /// Whether `lines` lines of `bytes` bytes are past this budget.
    pub(crate) fn is_past(&self, lines: usize, bytes: usize) -> bool {
        lines > self.lines || bytes > self.bytes
    }
}

/// `now + d`, or a time so far off that it never comes when that overflows.
pub(crate) fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        // about 30 years: later than any timeout a builder accepts
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now)
}

/// The error for bytes found waiting on a connection when no reply was due.
pub(crate) fn unasked(server: &str, bytes: &[u8], when: &str) -> Error {
    Error::protocol(
        server,
        format!(
            "the server sent {:?} unasked {when}; the connection was dropped so that they are never read as a reply",
            String::from_utf8_lossy(&bytes[..bytes.len().min(64)])
        ),
    )
}

/// What a non-blocking read of up to `waiting.len()` bytes on a connection idle in a pool
/// found (both clients): `None` when nothing is waiting (open and in step), else why the
/// connection must not be reused.
pub(crate) fn idle_check_error(
    server: &str,
    peeked: io::Result<usize>,
    waiting: &[u8],
) -> Option<Error> {
    Some(match peeked {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
        Ok(0) => Error::Io {
            server: server.to_string(),
            kind: io::ErrorKind::UnexpectedEof,
            message: "the server closed the connection while it was idle in the pool".into(),
        },
        Ok(n) => unasked(
            server,
            &waiting[..n.min(waiting.len())],
            "while the connection was idle",
        ),
        Err(e) => Error::io(server, &e, "idle check", 0),
    })
}

/// A connection to one memcached server.
pub struct Conn {
    stream: Stream,
    server: String,
    opts: ConnOptions,
    /// Read buffer: always initialized (zeroed once, when it grows); `start..end` holds
    /// received bytes not yet consumed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    wbuf: Vec<u8>,
    broken: bool,
    read_timeout_set: Duration,
    /// Checked out after sitting idle in its pool, and no byte received since: a failure that
    /// looks like a closed connection is taken for a stale one (see [`Conn::failed_stale`]).
    suspect: bool,
    /// The exchange failed the way a connection the server had closed fails.
    stale: bool,
    /// Some byte of a request left this connection during the current exchange.
    sent: bool,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("server", &self.server)
            .field("broken", &self.broken)
            .finish()
    }
}

const READ_CHUNK: usize = 16 * 1024;
/// A read buffer larger than this is released when the connection goes idle.
const MAX_IDLE_BUFFER: usize = 256 * 1024;

impl Conn {
    /// Connect to `host:port`, or to the unix socket at `host` when it starts with `/`.
    pub fn connect(host: &str, port: u16, server: &str, opts: &ConnOptions) -> Result<Conn> {
        let millis = opts.connect_timeout.as_millis();
        let stream = if host.starts_with('/') {
            // A unix socket connect does not block on the network; no timeout applies.
            Stream::Unix(
                UnixStream::connect(host).map_err(|e| Error::io(server, &e, "connect", millis))?,
            )
        } else {
            let addrs = (host, port)
                .to_socket_addrs()
                .map_err(|e| Error::io(server, &e, "resolve", millis))?;
            let mut last = None;
            let mut found = None;
            for a in addrs {
                match TcpStream::connect_timeout(&a, opts.connect_timeout) {
                    Ok(s) => {
                        found = Some(s);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            let s = match (found, last) {
                (Some(s), _) => s,
                (None, Some(e)) => return Err(Error::io(server, &e, "connect", millis)),
                (None, None) => {
                    return Err(Error::Io {
                        server: server.to_string(),
                        kind: io::ErrorKind::NotFound,
                        message: format!("{host} resolved to no address"),
                    });
                }
            };
            // Requests are small and latency matters more than packet count.
            s.set_nodelay(true)
                .map_err(|e| Error::io(server, &e, "connect", millis))?;
            Stream::Tcp(s)
        };
        stream
            .set_read_timeout(opts.read_timeout)
            .and_then(|_| stream.set_write_timeout(opts.write_timeout))
            .map_err(|e| Error::io(server, &e, "connect", millis))?;
        Ok(Conn {
            stream,
            server: server.to_string(),
            opts: opts.clone(),
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            wbuf: Vec::with_capacity(256),
            broken: false,
            read_timeout_set: opts.read_timeout,
            suspect: false,
            stale: false,
            sent: false,
        })
    }

    /// The server's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// True once any exchange on this connection failed midway.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Mark the connection out of step (replies left unread): the pool drops it.
    pub fn mark_broken(&mut self) {
        self.broken = true;
    }

    /// The options this connection was made with.
    pub fn options(&self) -> &ConnOptions {
        &self.opts
    }

    /// A new exchange starts on this connection; `reused`: it sat idle in its pool since its
    /// last exchange (a new connection is not reused).
    pub(crate) fn begin(&mut self, reused: bool) {
        self.suspect = reused;
        self.stale = false;
        self.sent = false;
    }

    /// The exchange failed the way a connection the server had already closed fails: end of
    /// stream, reset or broken pipe, on a reused connection, before any byte of a reply. Such a
    /// failure says nothing against the server (nor for it: the server may have died too, which
    /// a new connection finds out).
    pub fn failed_stale(&self) -> bool {
        self.stale
    }

    /// Whether any byte of a request of the current exchange was written (and so may have
    /// reached the server).
    pub fn sent_any(&self) -> bool {
        self.sent
    }

    /// Whether the connection can carry a request after sitting idle, found without a round
    /// trip: one non-blocking `recv` (peek). A connection the server has closed (end of stream,
    /// reset), or on which bytes nobody asked for are waiting, in the socket or in the read
    /// buffer (a stray `END`, `STORED` or `VALUE` block that would otherwise be read as the next
    /// request's reply), fails and is marked broken.
    pub fn idle_check(&mut self) -> Result<()> {
        if self.broken {
            return Err(Error::protocol(&self.server, "connection is broken"));
        }
        if self.start != self.end {
            self.broken = true;
            return Err(unasked(
                &self.server,
                &self.buf[self.start..self.end],
                "after the last reply",
            ));
        }
        let mut waiting = [0u8; 64];
        let peeked = loop {
            match self.stream.peek_now(&mut waiting) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let Some(e) = idle_check_error(&self.server, peeked, &waiting) else {
            return Ok(());
        };
        self.broken = true;
        Err(e)
    }

    /// Bytes still unread in the buffer.
    pub(crate) fn has_unread(&self) -> bool {
        self.start != self.end
    }

    /// The exchange is over: bytes left after its last reply were sent unasked, and which of
    /// the bytes answered the request can no longer be told (a stray reply may have come
    /// first): a Protocol error, and the connection is dropped.
    pub fn end_exchange(&mut self) -> Result<()> {
        if self.start == self.end {
            return Ok(());
        }
        let e = unasked(
            &self.server,
            &self.buf[self.start..self.end],
            "with or after the reply",
        );
        Err(self.fail(e))
    }

    fn fail(&mut self, e: Error) -> Error {
        self.broken = true;
        self.stale = self.suspect
            && matches!(
                &e,
                Error::Io { kind, .. } if matches!(
                    kind,
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::BrokenPipe
                )
            );
        match e {
            Error::Protocol { server, detail } if server.is_empty() => Error::Protocol {
                server: self.server.clone(),
                detail,
            },
            e => e,
        }
    }

    /// Write a whole request (one or more commands).
    pub fn send(&mut self, bytes: &[u8]) -> Result<()> {
        if self.broken {
            return Err(Error::protocol(&self.server, "connection is broken"));
        }
        if self.start != self.end {
            // Bytes nobody asked for: the stream is out of step.
            let e = Error::protocol(&self.server, "unsolicited bytes before the request");
            return Err(self.fail(e));
        }
        self.start = 0;
        self.end = 0;
        if self.buf.len() > MAX_IDLE_BUFFER {
            // A large value grew the buffer; do not keep that memory per pooled connection.
            self.buf = vec![0; READ_CHUNK];
        }
        let millis = self.opts.write_timeout.as_millis();
        let mut rest = bytes;
        while !rest.is_empty() {
            match self.stream.write(rest) {
                Ok(0) => {
                    let e = io::Error::from(io::ErrorKind::WriteZero);
                    return Err(self.fail(Error::io(&self.server, &e, "write", millis)));
                }
                Ok(n) => {
                    self.sent = true;
                    rest = rest.get(n..).unwrap_or_default();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(Error::io(&self.server, &e, "write", millis))),
            }
        }
        Ok(())
    }

    /// Encode requests into the connection's own buffer and send them in one write.
    pub fn send_requests<'r>(&mut self, reqs: impl IntoIterator<Item = Request<'r>>) -> Result<()> {
        let mut w = std::mem::take(&mut self.wbuf);
        w.clear();
        for r in reqs {
            r.encode(&mut w);
        }
        let res = self.send(&w);
        // Keep a modest buffer for the next request; drop a huge one.
        if w.capacity() <= 64 * 1024 {
            self.wbuf = w;
        }
        res
    }

    /// Read more bytes, within the reply's deadline.
    fn fill(&mut self, deadline: Instant) -> Result<()> {
        let now = Instant::now();
        let millis = self.opts.read_timeout.as_millis();
        if now >= deadline {
            let e = Error::Timeout {
                server: self.server.clone(),
                op: "read",
                millis,
            };
            return Err(self.fail(e));
        }
        let left = deadline.saturating_duration_since(now);
        // Only touch the socket option when the time left is clearly shorter than what is
        // set: the first read of a reply then needs no syscall (it may overshoot the deadline
        // by at most the slack). Two setsockopt calls per request measured as most of the gap
        // to a raw socket loop.
        let slack = (self.opts.read_timeout / 16).min(Duration::from_millis(5));
        if left.saturating_add(slack) < self.read_timeout_set {
            let left = left.max(Duration::from_millis(1));
            self.stream
                .set_read_timeout(left)
                .map_err(|e| Error::io(&self.server, &e, "read", millis))
                .map_err(|e| self.fail(e))?;
            self.read_timeout_set = left;
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK / 4 {
            // Move unconsumed bytes to the front, and grow only if that frees too little.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < READ_CHUNK / 4 {
                let grown = (self.buf.len() * 2).max(self.end + READ_CHUNK);
                self.buf.resize(grown, 0);
            }
        }
        match self.stream.read(&mut self.buf[self.end..]) {
            Ok(0) => {
                let e = Error::Io {
                    server: self.server.clone(),
                    kind: io::ErrorKind::UnexpectedEof,
                    message: "server closed the connection".into(),
                };
                Err(self.fail(e))
            }
            Ok(n) => {
                self.end += n;
                // the server answered on this connection: it was not stale
                self.suspect = false;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => {
                let e = Error::io(&self.server, &e, "read", millis);
                Err(self.fail(e))
            }
        }
    }

    fn reset_read_timeout(&mut self) {
        if self.read_timeout_set != self.opts.read_timeout {
            if self
                .stream
                .set_read_timeout(self.opts.read_timeout)
                .is_err()
            {
                self.broken = true;
            }
            self.read_timeout_set = self.opts.read_timeout;
        }
    }

    /// Read one one-line reply within the read timeout.
    pub fn read_reply(&mut self) -> Result<Reply> {
        let deadline = deadline_after(self.opts.read_timeout);
        let r = self.reply_by(deadline).map(|(r, _)| r);
        self.reset_read_timeout();
        r
    }

    /// The next one-line reply and the bytes it took, read before `deadline`.
    fn reply_by(&mut self, deadline: Instant) -> Result<(Reply, usize)> {
        loop {
            match parse_reply(&self.buf[self.start..self.end]) {
                Ok(Parsed::Done(r, used)) => {
                    self.start += used;
                    return Ok((r, used));
                }
                Ok(Parsed::Incomplete) => self.fill(deadline)?,
                Err(e) => return Err(self.fail(Error::from(e))),
            }
        }
    }

    /// Read a reply of many lines (`stats`, the errors after a batch of noreply commands):
    /// `each(conn, line)` for each line until it answers `Some`. The whole reply must arrive
    /// within one read timeout, counted from here, and fit `budget`; past either the read
    /// fails (Timeout, or a Protocol error naming the limit) and the connection is dropped.
    pub fn read_lines<T>(
        &mut self,
        budget: LineBudget,
        mut each: impl FnMut(&mut Conn, Reply) -> Result<Option<T>>,
    ) -> Result<T> {
        let deadline = deadline_after(self.opts.read_timeout);
        let (mut lines, mut bytes) = (0usize, 0usize);
        let r = loop {
            let (reply, used) = match self.reply_by(deadline) {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            lines = lines.saturating_add(1);
            bytes = bytes.saturating_add(used);
            if budget.is_past(lines, bytes) {
                let e = budget.exceeded(&self.server, lines, bytes);
                break Err(self.fail(e));
            }
            match each(self, reply) {
                Ok(Some(t)) => break Ok(t),
                Ok(None) => {}
                // `each` marks the connection broken when the line leaves it out of step
                Err(e) => break Err(e),
            }
        };
        self.reset_read_timeout();
        r
    }

    /// Read a retrieval reply up to its `END`, calling `item(key, flags, data, cas)` for each
    /// value. An error line from the server comes back as `Ok(Some(reply))`.
    pub fn read_values(
        &mut self,
        mut item: impl FnMut(&[u8], u32, &[u8], Option<u64>) -> Result<()>,
    ) -> Result<Option<Reply>> {
        let deadline = deadline_after(self.opts.read_timeout);
        let max = self.opts.max_value_size;
        let r = loop {
            let parsed = parse_retrieval(&self.buf[self.start..self.end], max);
            match parsed {
                Ok(Parsed::Done(
                    RetrievalItem::Value {
                        key,
                        flags,
                        data,
                        cas,
                    },
                    used,
                )) => {
                    let base = self.start;
                    let (k, d) = (
                        &self.buf[base + key.start..base + key.end],
                        &self.buf[base + data.start..base + data.end],
                    );
                    if let Err(e) = item(k, flags, d, cas) {
                        break Err(self.fail(e));
                    }
                    self.start += used;
                }
                Ok(Parsed::Done(RetrievalItem::End, used)) => {
                    self.start += used;
                    break Ok(None);
                }
                Ok(Parsed::Done(RetrievalItem::Failed(reply), used)) => {
                    self.start += used;
                    break Ok(Some(reply));
                }
                Ok(Parsed::Incomplete) => {
                    if let Err(e) = self.fill(deadline) {
                        break Err(e);
                    }
                }
                Err(e) => {
                    let e = Error::from(e);
                    break Err(self.fail(e));
                }
            }
        };
        self.reset_read_timeout();
        r
    }

    /// A reply that does not fit the request: the stream can no longer be trusted.
    pub fn unexpected(&mut self, reply: &Reply, request: &str) -> Error {
        let e = Error::protocol(
            &self.server,
            format!("unexpected reply {reply:?} to {request}"),
        );
        self.fail(e)
    }
}
