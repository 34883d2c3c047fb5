//! A blocking connection to one server: the socket and its system calls. Everything else —
//! buffers, the broken, in-flight and stale flags, what to write and how to read the replies —
//! is the core's [`Link`] and [`Exchange`]; this file only moves bytes, under the socket's
//! timeouts.

use crate::core::exchange::Exchange;
use crate::core::link::{Link, Next};
use crate::error::{Error, Result};
use crate::settings::ConnOptions;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

#[cfg(feature = "tls")]
type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    #[cfg(feature = "tls")]
    Tls(Box<TlsStream>),
}

impl Stream {
    /// The address a network connection reached.
    fn peer(&self) -> Option<std::net::SocketAddr> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok(),
            Stream::Unix(_) => None,
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.sock.peer_addr().ok(),
        }
    }

    fn set_read_timeout(&self, d: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(Some(d)),
            Stream::Unix(s) => s.set_read_timeout(Some(d)),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.sock.set_read_timeout(Some(d)),
        }
    }
    fn set_write_timeout(&self, d: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(Some(d)),
            Stream::Unix(s) => s.set_write_timeout(Some(d)),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.sock.set_write_timeout(Some(d)),
        }
    }
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.read(buf),
        }
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            // rustls buffers what it encrypts: flush puts it on the socket now.
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.write(buf).and_then(|n| s.flush().map(|()| n)),
        }
    }
    /// Copies the bytes waiting to be read into `buf` without consuming them and without
    /// waiting: `Ok(0)` when the peer has closed, `WouldBlock` when nothing is waiting.
    fn peek_now(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => return tls_waiting(s, buf),
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

/// What waits on an idle TLS connection, without blocking: the records that arrived are
/// processed (a TLS 1.3 server sends session tickets after the handshake: those are not bytes
/// of a reply), then any plaintext is read into `buf` (it is dropped with the connection
/// anyway). `Ok(0)`: the server closed; `WouldBlock`: nothing waits.
#[cfg(feature = "tls")]
fn tls_waiting(s: &mut TlsStream, buf: &mut [u8]) -> io::Result<usize> {
    s.sock.set_nonblocking(true)?;
    let r = (|| {
        loop {
            match s.conn.read_tls(&mut s.sock) {
                Ok(0) => return Ok(0),
                Ok(_) => {
                    let state = s
                        .conn
                        .process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    if state.peer_has_closed() {
                        return Ok(0);
                    }
                    if state.plaintext_bytes_to_read() > 0 {
                        return s.conn.reader().read(buf);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    })();
    s.sock.set_nonblocking(false)?;
    r
}

/// A blocking connection to one memcached server: the socket and its [`Link`].
pub(crate) struct Conn {
    stream: Stream,
    pub(crate) link: Link,
    read_timeout_set: Duration,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("server", &self.link.server())
            .field("broken", &self.link.is_broken())
            .finish()
    }
}

impl Conn {
    /// The address this connection reached (none for a unix socket).
    pub(crate) fn peer(&self) -> Option<std::net::SocketAddr> {
        self.stream.peer()
    }

    /// Connect to `host:port`, or to the unix socket at `host` when it starts with `/`.
    pub(crate) fn connect(host: &str, port: u16, server: &str, opts: &ConnOptions) -> Result<Conn> {
        let stream = if host.starts_with('/') {
            // A unix socket connect does not block on the network; no timeout applies.
            Stream::Unix(
                UnixStream::connect(host)
                    .map_err(|e| Error::io(server, e, "connect", opts.connect_timeout))?,
            )
        } else {
            let addrs = crate::core::resolve::resolve(opts, host, port, server)?;
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
                (None, Some(e)) => {
                    return Err(Error::io(server, e, "connect", opts.connect_timeout));
                }
                // `resolve` gives at least one address, so a connect was tried
                (None, None) => {
                    return Err(Error::io_kind(
                        server,
                        "connect",
                        io::ErrorKind::NotFound,
                        format!("{host} resolved to no address"),
                    ));
                }
            };
            // Requests are small and latency matters more than packet count.
            s.set_nodelay(true)
                .map_err(|e| Error::io(server, e, "connect", opts.connect_timeout))?;
            #[cfg(feature = "tls")]
            if let Some(session) = crate::core::tls::session_for(opts, server, host)? {
                return Conn::over_tls(s, session, server, opts);
            }
            Stream::Tcp(s)
        };
        Conn::ready(stream, server, opts)
    }

    /// The connection over `stream`, with its timeouts set, logged in if it has credentials.
    fn ready(stream: Stream, server: &str, opts: &ConnOptions) -> Result<Conn> {
        stream
            .set_read_timeout(opts.read_timeout)
            .and_then(|_| stream.set_write_timeout(opts.write_timeout))
            .map_err(|e| Error::io(server, e, "connect", opts.connect_timeout))?;
        let mut conn = Conn {
            stream,
            link: Link::new(server, opts),
            read_timeout_set: opts.read_timeout,
        };
        if let Some(c) = &opts.credentials {
            conn.run(&mut crate::core::auth::Login::new(c))
                .map_err(crate::core::auth::login_failed)?;
        }
        Ok(conn)
    }

    /// The TLS handshake on `tcp`, within the connect timeout.
    #[cfg(feature = "tls")]
    fn over_tls(
        tcp: TcpStream,
        (config, name): crate::core::tls::Session,
        server: &str,
        opts: &ConnOptions,
    ) -> Result<Conn> {
        let failed =
            |e: io::Error| crate::core::tls::handshake_failed(server, e, opts.connect_timeout);
        tcp.set_read_timeout(Some(opts.connect_timeout))
            .and_then(|_| tcp.set_write_timeout(Some(opts.connect_timeout)))
            .map_err(failed)?;
        let session = rustls::ClientConnection::new(config, name)
            .map_err(|e| crate::core::tls::classify(server, &e))?;
        let mut s = rustls::StreamOwned::new(session, tcp);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).map_err(failed)?;
        }
        Conn::ready(Stream::Tls(Box::new(s)), server, opts)
    }

    /// Drive `ex` to its end: write what it asks, read until it has its replies. Any failure
    /// leaves the link broken (see [`Link`]).
    pub(crate) fn run<E: Exchange + ?Sized>(&mut self, ex: &mut E) -> Result<E::Output> {
        let r = self.drive(ex, true, false);
        self.ended(r)
    }

    /// Drive `ex` from its start until it first waits for a reply (`None`), or to its end.
    pub(crate) fn start<E: Exchange + ?Sized>(&mut self, ex: &mut E) -> Result<Option<E::Output>> {
        self.drive(ex, true, true)
    }

    /// Drive `ex`, started with [`Conn::start`], to its end.
    pub(crate) fn finish<E: Exchange + ?Sized>(&mut self, ex: &mut E) -> Result<E::Output> {
        let r = self.drive(ex, false, false);
        self.ended(r)
    }

    /// The end of a drive to the last reply.
    fn ended<T>(&mut self, r: Result<Option<T>>) -> Result<T> {
        self.reset_read_timeout();
        match r? {
            Some(v) => Ok(v),
            // a drive to the end returns only with the exchange's output
            None => Err(self
                .link
                .fail(Error::protocol("", "the exchange did not finish"))),
        }
    }

    fn drive<E: Exchange + ?Sized>(
        &mut self,
        ex: &mut E,
        mut fresh: bool,
        until_read: bool,
    ) -> Result<Option<E::Output>> {
        loop {
            match self.link.advance(ex, std::mem::take(&mut fresh))? {
                Next::Write => self.write()?,
                Next::Read(_) if until_read => return Ok(None),
                Next::Read(deadline) => self.fill(deadline)?,
                Next::Done(v) => return Ok(Some(v)),
            }
        }
    }

    /// Write all of the link's pending bytes.
    fn write(&mut self) -> Result<()> {
        let mut at = 0;
        while at < self.link.pending_write().len() {
            match self.stream.write(&self.link.pending_write()[at..]) {
                Ok(0) => {
                    let e = io::Error::from(io::ErrorKind::WriteZero);
                    return Err(self.link.io_failed(e, "write"));
                }
                Ok(n) => {
                    self.link.wrote();
                    at += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.link.io_failed(e, "write")),
            }
        }
        Ok(())
    }

    /// Read more bytes, within the reply's deadline.
    fn fill(&mut self, deadline: Instant) -> Result<()> {
        let now = Instant::now();
        // Past the deadline, a reply that is already waiting is still taken (one read of at
        // most 1 ms): `get_multi` writes to every server and then reads them in turn, so a
        // stopped server read first must not turn the others' waiting replies into timeouts.
        let late = now >= deadline;
        let left = if late {
            Duration::from_millis(1)
        } else {
            deadline.saturating_duration_since(now)
        };
        // Only touch the socket option when the time left is clearly shorter than what is
        // set: the first read of a reply then needs no syscall (it may overshoot the deadline
        // by at most the slack). Two setsockopt calls per request measured as most of the gap
        // to a raw socket loop.
        let timeout = self.link.options().read_timeout;
        let slack = (timeout / 16).min(Duration::from_millis(5));
        if left.saturating_add(slack) < self.read_timeout_set {
            let left = left.max(Duration::from_millis(1));
            if let Err(e) = self.stream.set_read_timeout(left) {
                return Err(self.link.io_failed(e, "read"));
            }
            self.read_timeout_set = left;
        }
        match self.stream.read(self.link.spare()) {
            Ok(n) => self.link.received(n),
            Err(e)
                if late
                    && matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
            {
                Err(self.link.timed_out("read"))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(self.link.io_failed(e, "read")),
        }
    }

    fn reset_read_timeout(&mut self) {
        let timeout = self.link.options().read_timeout;
        if self.read_timeout_set != timeout {
            if self.stream.set_read_timeout(timeout).is_err() {
                self.link.mark_broken();
            }
            self.read_timeout_set = timeout;
        }
    }

    /// Whether the connection can carry a request after sitting idle, found without a round
    /// trip: one non-blocking `recv` (peek). A connection the server has closed, or on which
    /// bytes nobody asked for are waiting, fails and is marked broken.
    pub(crate) fn idle_check(&mut self) -> Result<()> {
        let mut waiting = [0u8; 64];
        let peeked = loop {
            match self.stream.peek_now(&mut waiting) {
                Err(e) if crate::core::link::interrupted(&e) => continue,
                r => break r,
            }
        };
        self.link.idle_verdict(peeked, &waiting)
    }

    /// The socket whose readiness is the whole of the idle check, for checking many
    /// connections with one `poll` ([`quiet`]); `None` for TLS, where records that are not
    /// a reply (session tickets) may wait and [`Conn::idle_check`] must read them.
    pub(crate) fn idle_fd(&self) -> Option<RawFd> {
        match &self.stream {
            Stream::Tcp(s) => Some(s.as_raw_fd()),
            Stream::Unix(s) => Some(s.as_raw_fd()),
            #[cfg(feature = "tls")]
            Stream::Tls(_) => None,
        }
    }

    /// [`Conn::idle_check`] of a connection whose socket [`quiet`] found nothing waiting on.
    pub(crate) fn idle_quiet(&mut self) -> Result<()> {
        self.link
            .idle_verdict(Err(io::ErrorKind::WouldBlock.into()), &[])
    }
}

/// For each of `fds`, whether nothing waits on it (no byte, no hang-up, no error), found
/// with one `poll` that does not wait; `None` when the `poll` failed. A 4-server multi-get
/// made a non-blocking `recv` per connection for its idle checks: this is one system call
/// for all of them (12 calls a multi-get become 9; a raw pipelined loop makes 8).
pub(crate) fn quiet(fds: &[RawFd]) -> Option<Vec<bool>> {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let n = libc::nfds_t::try_from(polled.len()).ok()?;
    // SAFETY: `polled` is a valid array of `n` pollfd structures, borrowed mutably for the
    // call (poll(2) writes only their `revents`); a timeout of 0 returns at once. The fds are
    // open sockets owned by connections the caller holds checked out. Why not a crate's safe
    // wrapper: none in the library's dependencies offers poll(2) (mio's epoll needs a
    // registration per socket: more calls than the recvs this replaces).
    let ready = unsafe { libc::poll(polled.as_mut_ptr(), n, 0) };
    (ready >= 0).then(|| polled.iter().map(|p| p.revents == 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::resolve::tests::{Gate, threads};
    use std::sync::Arc;

    /// One poll tells each socket apart: nothing waiting, bytes waiting, the peer gone; and
    /// a negative fd is skipped, as poll(2) does.
    #[test]
    fn quiet_tells_which_sockets_have_something_waiting() {
        let (a, mut a_peer) = UnixStream::pair().unwrap();
        let (b, _b_peer) = UnixStream::pair().unwrap();
        let (c, c_peer) = UnixStream::pair().unwrap();
        a_peer.write_all(b"x").unwrap();
        drop(c_peer);
        let fds = [a.as_raw_fd(), b.as_raw_fd(), c.as_raw_fd()];
        assert_eq!(quiet(&fds), Some(vec![false, true, false]));
        assert_eq!(quiet(&[]), Some(vec![]));
        assert_eq!(
            quiet(&[b.as_raw_fd(), -1]),
            Some(vec![true, true]),
            "-1 is ignored"
        );
    }

    /// 1,000 connects to a name whose resolver hangs: each is the typed resolve timeout, and
    /// they leave one look-up thread behind, not one per call.
    #[test]
    fn connects_to_a_hung_name_leave_one_resolver_thread() {
        let gate = Arc::new(Gate::default());
        let opts = ConnOptions {
            connect_timeout: Duration::from_millis(5),
            resolver: Some(gate.clone()),
            ..ConnOptions::default()
        };
        let before = threads();
        std::thread::scope(|s| {
            for _ in 0..20 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let e = Conn::connect("hung.test", 11211, "hung.test:11211", &opts)
                            .expect_err("the resolver hangs");
                        assert!(matches!(e, Error::Timeout { op: "resolve", .. }), "{e:?}");
                    }
                });
            }
        });
        // the scoped callers have been joined; only look-up threads can remain (other tests
        // running alongside in this process add threads of their own, hence the slack)
        let extra = threads().saturating_sub(before);
        gate.release();
        assert!(extra <= 100, "{extra} threads left by 1,000 calls");
        assert_eq!(gate.calls(1), 1, "one look-up for 1,000 calls");
    }
}
