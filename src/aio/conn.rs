//! One async connection to one server: socket, read buffer, timeouts, the broken flag, and the
//! in-flight flag that makes a dropped future discard its connection.
//!
//! The blocking [`Conn`](crate::conn::Conn)'s rule holds here too: any error or timeout in the
//! middle of an exchange marks the connection broken. An async caller can also simply stop
//! polling (a `tokio::time::timeout` around the call, a losing `select!` branch, an aborted
//! task): then no code runs at all between the request and its reply. So a connection is
//! marked *in flight* before the first byte of a request is written and is cleared only by
//! [`AsyncConn::complete`], which the client calls once every reply of the exchange has been
//! read. A connection returned to its pool while still in flight — whatever dropped it — is
//! reported broken by [`Manager::has_broken`] and closed by bb8, never handed out again, so no
//! later request can read a reply meant for a cancelled one.
//!
//! A connection that sat idle in its pool may have been closed by the server meanwhile
//! (memcached `-o idle_timeout`, a restart), or the server may have written bytes nobody asked
//! for. [`AsyncConn::idle_check`] finds both without a round trip (one non-blocking read), and
//! a connection that fails its first exchange after sitting idle the way a closed connection
//! fails (end of stream, reset, broken pipe, before any byte of a reply) reports
//! [`AsyncConn::failed_stale`], so the client can tell a stale connection from a failing server.

use crate::conn::{ConnOptions, LineBudget};
use crate::error::{Error, Result};
use crate::proto::{Parsed, Reply, Request, RetrievalItem, parse_reply, parse_retrieval};
use socket2::SockRef;
use std::io::{self, Read};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::{Instant, timeout, timeout_at};

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
        }
    }
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
        }
    }
}

/// An async connection to one memcached server.
pub struct AsyncConn {
    stream: Stream,
    server: String,
    opts: ConnOptions,
    /// Read buffer; `start..end` holds received bytes not yet consumed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    wbuf: Vec<u8>,
    broken: bool,
    in_flight: bool,
    /// Exchanges completed: a connection with some has been back in its pool.
    completed: u64,
    /// Checked out after sitting idle, and nothing received from the server since.
    suspect: bool,
    /// The exchange failed as a connection the server had closed fails (see `failed_stale`).
    stale: bool,
}

impl std::fmt::Debug for AsyncConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConn")
            .field("server", &self.server)
            .field("broken", &self.broken)
            .field("in_flight", &self.in_flight)
            .field("completed", &self.completed)
            .finish()
    }
}

const READ_CHUNK: usize = 16 * 1024;
/// A read buffer larger than this is released before the next request.
const MAX_IDLE_BUFFER: usize = 256 * 1024;

impl AsyncConn {
    /// Connect to `host:port`, or to the unix socket at `host` when it starts with `/`, within
    /// the connect timeout.
    pub async fn connect(
        host: &str,
        port: u16,
        server: &str,
        opts: &ConnOptions,
    ) -> Result<AsyncConn> {
        let millis = opts.connect_timeout.as_millis();
        let connecting = async {
            if host.starts_with('/') {
                return UnixStream::connect(host)
                    .await
                    .map(Stream::Unix)
                    .map_err(|e| Error::io(server, &e, "connect", millis));
            }
            let addrs: Vec<std::net::SocketAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![(ip, port).into()],
                Err(_) => tokio::net::lookup_host((host, port))
                    .await
                    .map_err(|e| Error::io(server, &e, "resolve", millis))?
                    .collect(),
            };
            let mut last = None;
            for a in addrs {
                match TcpStream::connect(a).await {
                    Ok(s) => {
                        // Requests are small and latency matters more than packet count.
                        s.set_nodelay(true)
                            .map_err(|e| Error::io(server, &e, "connect", millis))?;
                        return Ok(Stream::Tcp(s));
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(match last {
                Some(e) => Error::io(server, &e, "connect", millis),
                None => Error::Io {
                    server: server.to_string(),
                    kind: io::ErrorKind::NotFound,
                    message: format!("{host} resolved to no address"),
                },
            })
        };
        let stream = match timeout(opts.connect_timeout, connecting).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(Error::Timeout {
                    server: server.to_string(),
                    op: "connect",
                    millis,
                });
            }
        };
        Ok(AsyncConn {
            stream,
            server: server.to_string(),
            opts: opts.clone(),
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            wbuf: Vec::with_capacity(256),
            broken: false,
            in_flight: false,
            completed: 0,
            suspect: false,
            stale: false,
        })
    }

    /// The server's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// True once any exchange failed midway.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// True between the first byte of a request and [`AsyncConn::complete`].
    pub fn is_in_flight(&self) -> bool {
        self.in_flight
    }

    /// The options this connection was made with.
    pub fn options(&self) -> &ConnOptions {
        &self.opts
    }

    /// Every reply of the exchange has been read: the connection is in step again and may go
    /// back to its pool for reuse.
    pub fn complete(&mut self) {
        self.in_flight = false;
        self.completed = self.completed.saturating_add(1);
    }

    /// True once an exchange completed on this connection (it has been back in its pool).
    pub fn is_reused(&self) -> bool {
        self.completed > 0
    }

    /// Checked out for a new exchange: until the server sends a byte, a failure that looks like
    /// a closed connection is taken for a stale one (see [`AsyncConn::failed_stale`]).
    pub fn checked_out(&mut self) {
        self.suspect = self.completed > 0;
        self.stale = false;
    }

    /// The exchange failed the way a connection the server had already closed fails: end of
    /// stream, reset or broken pipe, on a reused connection, before any byte of a reply. Such a
    /// failure says nothing about the server (it proves nothing either: the server may also
    /// have died meanwhile, which a retry on a new connection finds out).
    pub fn failed_stale(&self) -> bool {
        self.stale
    }

    /// Whether the connection is still usable after sitting idle, without a round trip: one
    /// non-blocking read. A connection the server has closed (end of stream, reset), or on
    /// which bytes nobody asked for are waiting (a stray `END`, `STORED` or `VALUE` block that
    /// would otherwise be read as the next request's reply), fails and is marked broken.
    pub fn idle_check(&mut self) -> Result<()> {
        if self.broken || self.in_flight {
            return Err(Error::protocol(&self.server, "connection is broken"));
        }
        if self.start != self.end {
            let e = crate::conn::unasked(
                &self.server,
                &self.buf[self.start..self.end],
                "while the connection was idle",
            );
            return Err(self.fail(e));
        }
        // A non-blocking read of what is waiting, if anything: bytes read here mean the
        // connection is dropped anyway, so reading them (rather than peeking) loses nothing.
        let mut probe = [0u8; 64];
        let peeked = loop {
            let r = match &self.stream {
                Stream::Tcp(s) => (&*SockRef::from(s)).read(&mut probe),
                Stream::Unix(s) => (&*SockRef::from(s)).read(&mut probe),
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        match crate::conn::idle_check_error(&self.server, peeked, &probe) {
            None => Ok(()),
            Some(e) => Err(self.fail(e)),
        }
    }

    /// Give up on the connection (the stream can no longer be trusted).
    pub fn poison(&mut self) {
        self.broken = true;
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

    /// Encode requests into the connection's write buffer and write them in one go. The
    /// connection is in flight from here until [`AsyncConn::complete`].
    pub async fn send_requests<'r>(
        &mut self,
        reqs: impl IntoIterator<Item = Request<'r>>,
    ) -> Result<()> {
        self.encode(reqs)?;
        self.flush().await
    }

    /// Encode requests (no I/O yet); marks the connection in flight.
    pub fn encode<'r>(&mut self, reqs: impl IntoIterator<Item = Request<'r>>) -> Result<()> {
        if self.broken {
            return Err(Error::protocol(&self.server, "connection is broken"));
        }
        if self.start != self.end {
            let e = Error::protocol(&self.server, "unsolicited bytes before the request");
            return Err(self.fail(e));
        }
        self.start = 0;
        self.end = 0;
        if self.buf.len() > MAX_IDLE_BUFFER {
            self.buf = vec![0; READ_CHUNK];
        }
        self.in_flight = true;
        self.wbuf.clear();
        for r in reqs {
            r.encode(&mut self.wbuf);
        }
        Ok(())
    }

    /// Write what [`AsyncConn::encode`] encoded, within the write timeout.
    pub async fn flush(&mut self) -> Result<()> {
        let millis = self.opts.write_timeout.as_millis();
        let w = std::mem::take(&mut self.wbuf);
        let r = match timeout(self.opts.write_timeout, self.stream.write_all(&w)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::io(&self.server, &e, "write", millis)),
            Err(_) => Err(Error::Timeout {
                server: self.server.clone(),
                op: "write",
                millis,
            }),
        };
        // Keep a modest buffer for the next request; drop a huge one.
        if w.capacity() <= 64 * 1024 {
            self.wbuf = w;
        }
        r.map_err(|e| self.fail(e))
    }

    /// Read more bytes before `deadline`.
    async fn fill(&mut self, deadline: Instant) -> Result<()> {
        let millis = self.opts.read_timeout.as_millis();
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
        let end = self.end;
        match timeout_at(deadline, self.stream.read(&mut self.buf[end..])).await {
            Err(_) => {
                let e = Error::Timeout {
                    server: self.server.clone(),
                    op: "read",
                    millis,
                };
                Err(self.fail(e))
            }
            Ok(Ok(0)) => {
                let e = Error::Io {
                    server: self.server.clone(),
                    kind: io::ErrorKind::UnexpectedEof,
                    message: "server closed the connection".into(),
                };
                Err(self.fail(e))
            }
            Ok(Ok(n)) => {
                self.end += n;
                // the server answered on this connection: it was not stale
                self.suspect = false;
                Ok(())
            }
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Ok(Err(e)) => {
                let e = Error::io(&self.server, &e, "read", millis);
                Err(self.fail(e))
            }
        }
    }

    /// Read one one-line reply within the read timeout.
    pub async fn read_reply(&mut self) -> Result<Reply> {
        let deadline = deadline_after(self.opts.read_timeout);
        self.reply_by(deadline).await.map(|(r, _)| r)
    }

    /// The next one-line reply and the bytes it took, read before `deadline`.
    async fn reply_by(&mut self, deadline: Instant) -> Result<(Reply, usize)> {
        loop {
            match parse_reply(&self.buf[self.start..self.end]) {
                Ok(Parsed::Done(r, used)) => {
                    self.start += used;
                    return Ok((r, used));
                }
                Ok(Parsed::Incomplete) => self.fill(deadline).await?,
                Err(e) => return Err(self.fail(Error::from(e))),
            }
        }
    }

    /// Read a reply of many lines (`stats`): `each(conn, line)` for each line until it answers
    /// `Some`. The whole reply must arrive within one read timeout, counted from here, and fit
    /// `budget`; past either the read fails (Timeout, or a Protocol error naming the limit) and
    /// the connection is dropped (as the blocking [`Conn::read_lines`](crate::conn::Conn::read_lines)).
    pub async fn read_lines<T>(
        &mut self,
        budget: LineBudget,
        mut each: impl FnMut(&mut AsyncConn, Reply) -> Result<Option<T>>,
    ) -> Result<T> {
        let deadline = deadline_after(self.opts.read_timeout);
        let (mut lines, mut bytes) = (0usize, 0usize);
        loop {
            let (reply, used) = self.reply_by(deadline).await?;
            lines = lines.saturating_add(1);
            bytes = bytes.saturating_add(used);
            if budget.is_past(lines, bytes) {
                let e = budget.exceeded(&self.server, lines, bytes);
                return Err(self.fail(e));
            }
            // `each` marks the connection broken when the line leaves it out of step
            if let Some(t) = each(self, reply)? {
                return Ok(t);
            }
        }
    }

    /// Read a retrieval reply up to its `END`, calling `item(key, flags, data, cas)` for each
    /// value. An error line from the server comes back as `Ok(Some(reply))`.
    pub async fn read_values(
        &mut self,
        mut item: impl FnMut(&[u8], u32, &[u8], Option<u64>) -> Result<()>,
    ) -> Result<Option<Reply>> {
        let deadline = deadline_after(self.opts.read_timeout);
        let max = self.opts.max_value_size;
        loop {
            match parse_retrieval(&self.buf[self.start..self.end], max) {
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
                        return Err(self.fail(e));
                    }
                    self.start += used;
                }
                Ok(Parsed::Done(RetrievalItem::End, used)) => {
                    self.start += used;
                    return Ok(None);
                }
                Ok(Parsed::Done(RetrievalItem::Failed(reply), used)) => {
                    self.start += used;
                    return Ok(Some(reply));
                }
                Ok(Parsed::Incomplete) => self.fill(deadline).await?,
                Err(e) => return Err(self.fail(Error::from(e))),
            }
        }
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

/// `now + d`, or a time so far off that it never comes when that overflows.
pub(crate) fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        // about 30 years: later than any timeout a builder accepts
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now)
}

/// One failed connect of a pool, numbered.
#[derive(Clone, Debug)]
pub(crate) struct ConnectFailure {
    /// 1, 2, ... in the order the pool's connects failed.
    pub(crate) seq: u64,
    /// When.
    pub(crate) at: StdInstant,
    /// The connect error.
    pub(crate) error: Error,
}

/// The last connect failure of a pool: bb8 connects in a spawned task and reports its errors
/// only to its error sink, and with `retry_connection(false)` nothing wakes the checkouts
/// waiting for that connection (bb8 0.9 `add_connection` only frees the slot), so they would
/// wait out the whole checkout timeout. Checkouts watch this instead and fail with the connect
/// error at once.
pub(crate) type ConnectFailures = Arc<tokio::sync::watch::Sender<Option<ConnectFailure>>>;

/// bb8's error sink: publishes each connect error to the pool's [`ConnectFailures`].
#[derive(Clone)]
pub(crate) struct Sink(pub(crate) ConnectFailures);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

impl bb8::ErrorSink<Error> for Sink {
    fn sink(&self, e: Error) {
        self.0.send_modify(|last| {
            let seq = last.as_ref().map_or(1, |f| f.seq.saturating_add(1));
            *last = Some(ConnectFailure {
                seq,
                at: StdInstant::now(),
                error: e,
            });
        });
    }
    fn boxed_clone(&self) -> Box<dyn bb8::ErrorSink<Error>> {
        Box::new(self.clone())
    }
}

/// Makes and checks async connections to one server for bb8.
#[derive(Debug, Clone)]
pub struct Manager {
    host: String,
    port: u16,
    server: String,
    opts: ConnOptions,
    ping_on_checkout: bool,
}

impl Manager {
    /// A manager for `host:port` (`host` starting with `/`: a unix socket). `server` is the
    /// address used in errors.
    pub fn new(
        host: &str,
        port: u16,
        server: &str,
        opts: ConnOptions,
        ping_on_checkout: bool,
    ) -> Manager {
        Manager {
            host: host.to_string(),
            port,
            server: server.to_string(),
            opts,
            ping_on_checkout,
        }
    }
}

impl bb8::ManageConnection for Manager {
    type Connection = AsyncConn;
    type Error = Error;

    async fn connect(&self) -> Result<AsyncConn> {
        AsyncConn::connect(&self.host, self.port, &self.server, &self.opts).await
    }

    /// [`AsyncConn::idle_check`] (no round trip), then a `version` round trip when
    /// ping-on-checkout is configured. (The memshard client runs these checks itself on every
    /// checkout; this is for pools built directly on this manager with `test_on_check_out`.)
    async fn is_valid(&self, conn: &mut AsyncConn) -> Result<()> {
        conn.idle_check()?;
        if !self.ping_on_checkout {
            return Ok(());
        }
        conn.send_requests([Request::Version]).await?;
        match conn.read_reply().await? {
            Reply::Version(_) => {
                conn.complete();
                Ok(())
            }
            other => Err(conn.unexpected(&other, "version")),
        }
    }

    /// Broken, or still in flight (its exchange was abandoned, e.g. by a dropped future):
    /// never reused. No I/O.
    fn has_broken(&self, conn: &mut AsyncConn) -> bool {
        conn.broken || conn.in_flight
    }
}
