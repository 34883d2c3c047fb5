//! What both connections know about their stream besides the socket itself: the read and write
//! buffers, the broken and in-flight flags, stale-connection detection, and the drive of one
//! [`Exchange`] — everything but the system calls.
//!
//! Any error or timeout in the middle of an exchange leaves the stream out of step with the
//! requests (a late reply would be read by the next caller), so the link marks itself broken
//! and no pool hands it out again. A link is *in flight* from the first byte of a request until
//! every reply of the exchange has been read: an async caller can stop polling between the two
//! (a timeout, a lost `select!`), and a link put back in flight is never reused.
//!
//! A link that sat idle in its pool may have been closed by the server meanwhile (memcached
//! `-o idle_timeout`, a restart), or the server may have sent bytes nobody asked for. A reused
//! link that fails the way a closed connection fails (end of stream, reset, broken pipe)
//! before any byte of a reply reports [`Link::failed_stale`], so the client can tell a stale
//! connection from a failing server; [`Link::sent_any`] says whether any byte of the request
//! may have reached the server. Bytes left over after the last reply of an exchange fail it:
//! which bytes answered can no longer be told.

use super::exchange::{Ctx, Exchange, Step, refusal};
use super::readbuf::ReadBuf;
use crate::error::{AuthProblem, Error, Result};
use crate::proto::{Parsed, Reply, Request, parse_reply};
use crate::settings::ConnOptions;
use std::io;
use std::time::{Duration, Instant};

/// Whether `request` starts with a meta command (no text command starts `mg `, `ms `, `md `,
/// `ma ` or `mn`).
fn is_meta(request: &[u8]) -> bool {
    matches!(
        request,
        [b'm', b'g' | b's' | b'd' | b'a' | b'n', b' ' | b'\r', ..]
    )
}

/// Whether `request` may hold a text `set` command line: memcached `-Y` takes the first `set`
/// of a connection that has not logged in for a login (`proto_text.c`,
/// `try_read_command_asciiauth`), whatever its key, and its value for `user password`. A value
/// holding such a line only makes this answer yes when no is right: the cost is one `version`.
fn may_log_in(request: &[u8]) -> bool {
    request.starts_with(b"set") || request.windows(4).any(|w| w == b"\nset")
}

/// What a link without credentials knows of the server's authentication (memcached `-Y`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Auth {
    /// Nothing yet: before a `set` is sent, a `version` asks.
    Unknown,
    /// The server serves this connection (it has no `-Y`, or the connection logged in).
    Open,
    /// The server answered "unauthenticated": every exchange fails with
    /// [`AuthProblem::Required`], and nothing more is sent.
    Required,
}

/// What a connection must do next for the exchange it drives.
#[derive(Debug)]
pub(crate) enum Next<T> {
    /// Write all of [`Link::pending_write`], then report [`Link::wrote`].
    Write,
    /// Read more bytes into [`Link::spare`] before this deadline.
    Read(Instant),
    /// The exchange is over.
    Done(T),
}

/// `now + d`, or a time so far off that it never comes when that overflows.
pub(crate) fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        // about 30 years: later than any timeout a builder accepts
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now)
}

/// Whether a non-blocking read found nothing waiting (`io::ErrorKind::WouldBlock`). An OS
/// error's errno is compared as it is: `io::Error::kind` decodes it through a table (~30
/// instructions, callgrind), and every idle check's read ends in this error.
fn would_block(e: &io::Error) -> bool {
    match e.raw_os_error() {
        // EWOULDBLOCK is EAGAIN on Linux, the BSDs and macOS
        Some(errno) => errno == libc::EAGAIN,
        None => e.kind() == io::ErrorKind::WouldBlock,
    }
}

/// Whether a read was interrupted by a signal (`io::ErrorKind::Interrupted`), without
/// decoding an OS error's errno (see [`would_block`]).
pub(crate) fn interrupted(e: &io::Error) -> bool {
    match e.raw_os_error() {
        Some(errno) => errno == libc::EINTR,
        None => e.kind() == io::ErrorKind::Interrupted,
    }
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

/// The stream state of one connection; see the module docs.
#[derive(Debug)]
pub(crate) struct Link {
    server: String,
    opts: ConnOptions,
    rb: ReadBuf,
    wbuf: Vec<u8>,
    /// The exchange under way wrote a meta command.
    meta_sent: bool,
    broken: bool,
    in_flight: bool,
    /// Exchanges completed: a link with any sat in its pool between them.
    completed: u64,
    /// Checked out after sitting idle in its pool, and no byte received since.
    suspect: bool,
    /// The exchange failed the way a connection the server had closed fails.
    stale: bool,
    /// Some byte of a request left during the current exchange.
    sent: bool,
    /// The current read deadline, set by the first read after a write.
    deadline: Option<Instant>,
    /// The exchange's last step asked for its request's reply before it steps again.
    awaits_reply: bool,
    /// Some byte ever came from the server on this link.
    heard: bool,
    /// What it knows of the server's authentication.
    auth: Auth,
    /// The exchange's request, held back while a `version` asks whether the server takes a
    /// `set` for a login (see [`may_log_in`]).
    held: Option<Vec<u8>>,
}

impl Link {
    pub(crate) fn new(server: &str, opts: &ConnOptions) -> Link {
        Link {
            server: server.to_string(),
            opts: opts.clone(),
            rb: ReadBuf::default(),
            wbuf: Vec::with_capacity(256),
            meta_sent: false,
            broken: false,
            in_flight: false,
            completed: 0,
            suspect: false,
            stale: false,
            sent: false,
            deadline: None,
            awaits_reply: false,
            heard: false,
            // a link with credentials logs in first (the core's `Login`)
            auth: match opts.credentials {
                Some(_) => Auth::Open,
                None => Auth::Unknown,
            },
            held: None,
        }
    }

    /// The server's address.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    pub(crate) fn options(&self) -> &ConnOptions {
        &self.opts
    }

    /// True once an exchange failed midway (or the client gave up on the link).
    pub(crate) fn is_broken(&self) -> bool {
        self.broken
    }

    /// No exchange completed on it yet (a link that heard bytes without completing one
    /// failed midway and is broken, never handed out again).
    #[cfg(feature = "async")]
    pub(crate) fn is_unused(&self) -> bool {
        self.completed == 0
    }

    /// Between the first byte of a request and the last reply of its exchange.
    pub(crate) fn is_in_flight(&self) -> bool {
        self.in_flight
    }

    /// Never use the link again.
    pub(crate) fn mark_broken(&mut self) {
        self.broken = true;
    }

    /// Checked out of its pool: until the server sends a byte, a failure that looks like a
    /// closed connection is taken for a stale one.
    pub(crate) fn checked_out(&mut self) {
        self.suspect = self.completed > 0;
        self.stale = false;
    }

    /// The last exchange failed the way a connection the server had already closed fails:
    /// end of stream, reset or broken pipe, on a reused link, before any byte of a reply.
    /// That says nothing against the server (nor for it: a new connection finds out).
    pub(crate) fn failed_stale(&self) -> bool {
        self.stale
    }

    /// Whether any byte of the last exchange's requests was written.
    pub(crate) fn sent_any(&self) -> bool {
        self.sent
    }

    /// Mark the link broken and classify `e`: a stale failure, and the server named.
    pub(crate) fn fail(&mut self, e: Error) -> Error {
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
            // twemproxy and memcached before 1.6 close a connection at its first meta command,
            // before any byte of reply; a reset later on (a killed server) says nothing of meta
            Error::Io {
                server,
                op,
                kind: kind @ (io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof),
                message,
                source,
            } if self.meta_sent && !self.heard && self.completed == 0 => Error::Io {
                server,
                op,
                kind,
                message: format!(
                    "{message} at the first meta command: a server without meta (twemproxy, memcached < 1.6) needs Protocol::Text{}",
                    if self.is_tls() {
                        ""
                    } else {
                        "; memcached -Z needs TLS"
                    }
                ),
                source,
            },
            // memcached -Z resets a plaintext connection at its first request without a byte
            // of reply (its TLS accept fails): say so, since nothing else will.
            Error::Io {
                server,
                op,
                kind: kind @ (io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof),
                message,
                source,
            } if !self.heard && self.completed == 0 && !self.is_tls() => Error::Io {
                server,
                op,
                kind,
                message: format!(
                    "{message}, before any reply on a new connection: if the server speaks only TLS on this port (memcached -Z), enable TLS in the client"
                ),
                source,
            },
            e => e,
        }
    }

    fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.opts.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The verdict of a non-blocking read of up to `waiting.len()` bytes on a link idle in
    /// its pool: nothing waiting is fine; end of stream, bytes nobody asked for, or an error
    /// break it.
    pub(crate) fn idle_verdict(&mut self, peeked: io::Result<usize>, waiting: &[u8]) -> Result<()> {
        if self.broken || self.in_flight {
            return Err(Error::protocol(&self.server, "connection is broken"));
        }
        if !self.rb.is_empty() {
            let e = unasked(&self.server, self.rb.unread(), "after the last reply");
            return Err(self.fail(e));
        }
        let e = match peeked {
            Err(e) if would_block(&e) => return Ok(()),
            Ok(0) => Error::io_kind(
                &self.server,
                "idle check",
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection while it was idle in the pool",
            ),
            Ok(n) => unasked(
                &self.server,
                &waiting[..n.min(waiting.len())],
                "while the connection was idle",
            ),
            Err(e) => Error::io(&self.server, e, "idle check", Duration::ZERO),
        };
        Err(self.fail(e))
    }

    /// Start an exchange: refused on a broken link or one with bytes nobody asked for.
    fn begin(&mut self) -> Result<()> {
        if self.broken {
            return Err(Error::protocol(&self.server, "connection is broken"));
        }
        if self.auth == Auth::Required {
            return Err(self.required());
        }
        if !self.rb.is_empty() {
            let e = Error::protocol(&self.server, "unsolicited bytes before the request");
            return Err(self.fail(e));
        }
        self.rb.reset();
        self.stale = false;
        self.sent = false;
        self.in_flight = true;
        self.deadline = None;
        self.meta_sent = false;
        Ok(())
    }

    /// Advance `ex`: what the connection must do next. `fresh`: the exchange starts here.
    pub(crate) fn advance<E: Exchange + ?Sized>(
        &mut self,
        ex: &mut E,
        fresh: bool,
    ) -> Result<Next<E::Output>> {
        if fresh {
            self.begin()?;
        }
        if self.held.is_some() {
            return self.probed();
        }
        if std::mem::take(&mut self.awaits_reply) && self.rb.unread().is_empty() {
            // The step would only find no reply yet: a get's or a set's second of three
            // steps, ~200 of an async get's ~5,600 instructions (callgrind).
            return Ok(Next::Read(self.read_deadline()));
        }
        self.wbuf.clear();
        let ctx = Ctx {
            server: &self.server,
            max_value: self.opts.max_value_size,
            protocol: self.opts.protocol,
            caps: self.opts.caps,
        };
        let step = ex.step(&mut self.rb, &mut self.wbuf, &ctx);
        match step {
            Ok(step @ (Step::Write | Step::WriteThenRead)) => {
                self.deadline = None;
                self.awaits_reply = matches!(step, Step::WriteThenRead);
                if self.auth == Auth::Unknown && may_log_in(&self.wbuf) {
                    // Every reply of the exchange so far was read (exchanges write only then):
                    // the next reply is the version's.
                    let mut probe = Vec::new();
                    Request::Version.encode(&mut probe);
                    self.held = Some(std::mem::replace(&mut self.wbuf, probe));
                    return Ok(Next::Write);
                }
                self.meta_sent |= is_meta(&self.wbuf);
                Ok(Next::Write)
            }
            Ok(Step::Read) => Ok(Next::Read(self.read_deadline())),
            Ok(Step::Done(v)) => {
                self.end()?;
                if !ex.keep_connection() {
                    // the rest of the reply is still coming: the pool closes the connection
                    self.broken = true;
                }
                Ok(Next::Done(v))
            }
            Ok(Step::Refused(e)) => {
                if let Error::Auth {
                    problem: AuthProblem::Required,
                    ..
                } = e
                {
                    self.auth = Auth::Required;
                }
                self.end().and(Err(e))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The deadline of the read under way: set by its first read after a write.
    fn read_deadline(&mut self) -> Instant {
        *self
            .deadline
            .get_or_insert_with(|| deadline_after(self.opts.read_timeout))
    }

    /// The reply to the `version` sent before a `set` (see [`may_log_in`]): the request held
    /// back is sent, or, if the server demands a login, never is.
    fn probed<T>(&mut self) -> Result<Next<T>> {
        let (reply, used) = match parse_reply(self.rb.unread()) {
            Ok(Parsed::Incomplete) => {
                return Ok(Next::Read(self.read_deadline()));
            }
            Ok(Parsed::Done(reply, used)) => (reply, used),
            Err(e) => return Err(self.fail(e.into())),
        };
        self.rb.consume(used);
        let held = self.held.take().unwrap_or_default();
        let refused = match reply {
            Reply::Version(_) => None,
            reply => match refusal(reply, &self.server, "version") {
                Ok(e) => Some(e),
                Err(e) => return Err(self.fail(e)),
            },
        };
        if let Some(e @ Error::Auth { .. }) = refused {
            self.auth = Auth::Required;
            return self.end().and(Err(e));
        }
        // A server that answers, or refuses only `version` (a proxy): no -Y there.
        self.auth = Auth::Open;
        self.wbuf = held;
        self.deadline = None;
        self.meta_sent |= is_meta(&self.wbuf);
        Ok(Next::Write)
    }

    /// The error of every exchange on a link whose server demands credentials it lacks.
    fn required(&self) -> Error {
        Error::Auth {
            server: self.server.clone(),
            problem: AuthProblem::Required,
        }
    }

    /// The exchange read its last reply: bytes left after it were sent unasked, and which
    /// bytes answered can no longer be told.
    fn end(&mut self) -> Result<()> {
        if !self.rb.is_empty() {
            let e = unasked(&self.server, self.rb.unread(), "with or after the reply");
            return Err(self.fail(e));
        }
        self.in_flight = false;
        self.completed = self.completed.saturating_add(1);
        Ok(())
    }

    /// The bytes to write for [`Next::Write`].
    pub(crate) fn pending_write(&self) -> &[u8] {
        &self.wbuf
    }

    /// Some request bytes may be on their way to the server.
    pub(crate) fn wrote(&mut self) {
        self.sent = true;
    }

    /// Where to read into for [`Next::Read`].
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        self.rb.spare()
    }

    /// A read into [`Link::spare`] returned `n` bytes; 0 is the end of the stream.
    pub(crate) fn received(&mut self, n: usize) -> Result<()> {
        if n == 0 {
            let e = Error::io_kind(
                &self.server,
                "read",
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            );
            return Err(self.fail(e));
        }
        self.rb.filled(n);
        // the server answered on this link: it was not stale
        self.suspect = false;
        self.heard = true;
        Ok(())
    }

    /// A socket operation (`op`: write or read) failed.
    pub(crate) fn io_failed(&mut self, e: io::Error, op: &'static str) -> Error {
        #[cfg(feature = "tls")]
        let e = super::tls::io_error(&self.server, e, op, self.timeout_of(op));
        #[cfg(not(feature = "tls"))]
        let e = Error::io(&self.server, e, op, self.timeout_of(op));
        self.fail(e)
    }

    /// The deadline of `op` passed.
    pub(crate) fn timed_out(&mut self, op: &'static str) -> Error {
        let e = Error::Timeout {
            server: self.server.clone(),
            op,
            after: self.timeout_of(op),
        };
        self.fail(e)
    }

    fn timeout_of(&self, op: &str) -> Duration {
        match op {
            "write" => self.opts.write_timeout,
            _ => self.opts.read_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::Single;
    use crate::outcome::{DeleteOutcome, StoreOutcome};
    use crate::proto::StoreCommand;

    /// What the server does in one test exchange: the bytes of each read (then the end of the
    /// stream), or a socket error instead of any byte.
    enum Server<'a> {
        Sends(&'a [u8]),
        SendsEach(&'a [&'a [u8]]),
        Fails(io::ErrorKind),
    }

    /// Drive `ex` on `link` as a connection would: the bytes it wrote, and how it ended.
    fn drive<T>(
        link: &mut Link,
        ex: &mut Single<'_, T>,
        server: Server<'_>,
    ) -> (Vec<u8>, Result<T>) {
        let (mut written, mut fresh, mut reads) = (Vec::new(), true, 0);
        loop {
            let next = link.advance(ex, fresh);
            fresh = false;
            match next {
                Ok(Next::Write) => {
                    written.extend_from_slice(link.pending_write());
                    link.wrote();
                }
                Ok(Next::Read(_)) => {
                    let bytes = match server {
                        Server::Fails(kind) => {
                            return (written, Err(link.io_failed(kind.into(), "read")));
                        }
                        Server::Sends(bytes) if reads == 0 => bytes,
                        Server::SendsEach(each) if reads < each.len() => each[reads],
                        _ => &[][..],
                    };
                    reads += 1;
                    link.spare()[..bytes.len()].copy_from_slice(bytes);
                    if let Err(e) = link.received(bytes.len()) {
                        return (written, Err(e));
                    }
                }
                Ok(Next::Done(v)) => return (written, Ok(v)),
                Err(e) => return (written, Err(e)),
            }
        }
    }

    /// `delete k` on `link`, answered as `server` does.
    fn delete(link: &mut Link, server: Server<'_>) -> (Vec<u8>, Result<DeleteOutcome>) {
        drive(link, &mut Single::delete(b"k"), server)
    }

    /// A link that completed one exchange and went back to its pool, then was checked out.
    fn reused() -> Link {
        let mut link = Link::new("s:1", &ConnOptions::default());
        link.checked_out();
        let (_, r) = drive(
            &mut link,
            &mut Single::version(),
            Server::Sends(b"VERSION 1.6.21\r\n"),
        );
        assert!(r.is_ok(), "{r:?}");
        link.checked_out();
        link
    }

    /// A metadump cut at its most keys leaves the link broken (its pool closes it: the rest
    /// of the dump is still coming); one read to its END leaves it usable.
    #[test]
    fn a_dump_cut_short_breaks_its_link_a_whole_one_does_not() {
        let line = b"key=a exp=-1 la=1 cas=1 fetch=no cls=1 size=60\n";
        for (max, reply, broken) in [
            (1, [&line[..], line].concat(), true),
            (5, [&line[..], b"END\r\n"].concat(), false),
        ] {
            let mut link = Link::new("s:1", &ConnOptions::default());
            link.checked_out();
            let mut sink = |_| {};
            let mut ex = crate::core::exchange::Metadump::new(max, &mut sink);
            assert!(matches!(link.advance(&mut ex, true), Ok(Next::Write)));
            link.wrote();
            assert!(matches!(link.advance(&mut ex, false), Ok(Next::Read(_))));
            link.spare()[..reply.len()].copy_from_slice(&reply);
            link.received(reply.len()).expect("received");
            assert!(matches!(link.advance(&mut ex, false), Ok(Next::Done(_))));
            assert_eq!(link.is_broken(), broken, "max {max}");
        }
    }

    #[test]
    fn a_reused_link_closed_before_any_reply_byte_failed_stale() {
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::UnexpectedEof,
        ] {
            let mut link = reused();
            let (_, r) = delete(&mut link, Server::Fails(kind));
            assert!(r.is_err());
            assert!(link.failed_stale(), "{kind:?}");
            assert!(link.is_broken() && link.sent_any());
        }
        let mut link = reused();
        let (_, r) = delete(&mut link, Server::Sends(b""));
        assert!(matches!(
            r,
            Err(Error::Io {
                kind: io::ErrorKind::UnexpectedEof,
                ..
            })
        ));
        assert!(link.failed_stale());
    }

    #[test]
    fn other_failures_are_not_stale() {
        // a timeout or a refused connection says something of the server
        let mut link = reused();
        let _ = delete(&mut link, Server::Fails(io::ErrorKind::TimedOut));
        assert!(!link.failed_stale());
        let opts = ConnOptions {
            read_timeout: Duration::from_millis(7),
            write_timeout: Duration::from_millis(9),
            ..ConnOptions::default()
        };
        for (op, after) in [("read", 7), ("write", 9)] {
            let e = Link::new("s:1", &opts).timed_out(op);
            let want = Duration::from_millis(after);
            assert!(
                matches!(e, Error::Timeout { after, .. } if after == want),
                "{e:?}"
            );
        }
        let mut link = reused();
        let e = link.timed_out("read");
        assert!(matches!(e, Error::Timeout { op: "read", .. }), "{e:?}");
        assert!(!link.failed_stale() && link.is_broken());
        // a byte of the reply came: the connection was alive
        let mut link = reused();
        let (_, r) = delete(&mut link, Server::Sends(b"DELE"));
        assert!(matches!(
            r,
            Err(Error::Io {
                kind: io::ErrorKind::UnexpectedEof,
                ..
            })
        ));
        assert!(!link.failed_stale());
        let e = r.expect_err("end of stream");
        assert!(
            !e.to_string().contains("TLS"),
            "a link that heard its server: {e}"
        );
        // nor on a new link: a byte came, so the server speaks plaintext
        let mut link = Link::new("s:1", &ConnOptions::default());
        let (_, r) = delete(&mut link, Server::Sends(b"DELE"));
        let e = r.expect_err("end of stream");
        assert!(!e.to_string().contains("TLS"), "a new link that heard: {e}");
        // a new link has not sat in a pool
        let mut link = Link::new("s:1", &ConnOptions::default());
        link.checked_out();
        let (_, r) = delete(&mut link, Server::Sends(b""));
        let e = r.expect_err("end of stream");
        assert!(!link.failed_stale());
        assert!(e.to_string().contains("enable TLS"), "{e}");
        assert!(!e.to_string().contains("meta"), "a text command: {e}");
        // the next exchange starts clean
        let mut link = reused();
        let _ = delete(&mut link, Server::Fails(io::ErrorKind::BrokenPipe));
        assert!(link.failed_stale());
        link.checked_out();
        assert!(!link.failed_stale());
    }

    /// An exchange that writes one request (answering `then_read` or plain `Write`), then
    /// reads a one-byte reply, counting its steps.
    struct Counted {
        then_read: bool,
        steps: usize,
    }

    impl Exchange for Counted {
        type Output = ();
        fn command(&self) -> &'static str {
            "counted"
        }
        fn restart(&mut self) {}
        fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, _: &Ctx) -> Result<Step<()>> {
            self.steps += 1;
            if self.steps == 1 {
                out.extend_from_slice(b"version\r\n");
                return Ok(if self.then_read {
                    Step::WriteThenRead
                } else {
                    Step::Write
                });
            }
            if rb.unread().is_empty() {
                return Ok(Step::Read);
            }
            rb.consume(1);
            Ok(Step::Done(()))
        }
    }

    /// After `WriteThenRead` the exchange is stepped again only once a reply byte came; after
    /// `Write` at once (it may write again).
    #[test]
    fn write_then_read_waits_for_the_reply_before_the_next_step() {
        for then_read in [true, false] {
            let mut link = reused();
            let mut ex = Counted {
                then_read,
                steps: 0,
            };
            assert!(matches!(link.advance(&mut ex, true), Ok(Next::Write)));
            link.wrote();
            assert!(matches!(link.advance(&mut ex, false), Ok(Next::Read(_))));
            assert_eq!(ex.steps, if then_read { 1 } else { 2 }, "{then_read}");
            link.spare()[0] = b'x';
            link.received(1).expect("one byte");
            assert!(matches!(link.advance(&mut ex, false), Ok(Next::Done(()))));
            assert_eq!(ex.steps, if then_read { 2 } else { 3 }, "{then_read}");
            // the next exchange is stepped at once after its write, whatever the last asked
            let mut next = Counted {
                then_read: false,
                steps: 0,
            };
            assert!(matches!(link.advance(&mut next, true), Ok(Next::Write)));
            link.wrote();
            let _ = link.advance(&mut next, false);
            assert_eq!(next.steps, 2);
        }
    }

    #[test]
    fn a_link_reports_whether_its_request_left() {
        let mut link = reused();
        let (req, r) = delete(&mut link, Server::Sends(b"NOT_FOUND\r\n"));
        assert_eq!(req, b"delete k\r\n");
        assert!(matches!(r, Ok(DeleteOutcome::NotFound)), "{r:?}");
        assert!(link.sent_any() && !link.is_broken() && !link.is_in_flight());
        // a failure before the first write: nothing left
        let mut link = reused();
        let mut ex = Single::delete(b"k");
        assert!(matches!(link.advance(&mut ex, true), Ok(Next::Write)));
        assert!(link.is_in_flight() && !link.sent_any());
        let _ = link.io_failed(io::ErrorKind::ConnectionRefused.into(), "write");
        assert!(!link.sent_any() && link.is_broken());
    }

    #[test]
    fn bytes_after_the_last_reply_fail_the_exchange_and_break_the_link() {
        let mut link = reused();
        let (_, r) = delete(&mut link, Server::Sends(b"DELETED\r\nEND\r\n"));
        let e = r.expect_err("unasked bytes");
        assert!(
            e.to_string().contains("unasked with or after the reply"),
            "{e}"
        );
        assert!(link.is_broken());
        let (_, r) = drive(
            &mut link,
            &mut Single::version(),
            Server::Sends(b"VERSION 1\r\n"),
        );
        assert!(
            r.expect_err("broken")
                .to_string()
                .contains("connection is broken")
        );
    }

    /// An OS error is read by its errno as `io::Error::kind` reads it; any other by its kind.
    #[test]
    fn errnos_read_as_their_kinds() {
        for errno in [
            libc::EAGAIN,
            libc::EWOULDBLOCK,
            libc::EINTR,
            libc::ECONNRESET,
            0,
        ] {
            let e = io::Error::from_raw_os_error(errno);
            assert_eq!(
                would_block(&e),
                e.kind() == io::ErrorKind::WouldBlock,
                "{e}"
            );
            assert_eq!(
                interrupted(&e),
                e.kind() == io::ErrorKind::Interrupted,
                "{e}"
            );
        }
        for kind in [
            io::ErrorKind::WouldBlock,
            io::ErrorKind::Interrupted,
            io::ErrorKind::Other,
        ] {
            let e = io::Error::from(kind);
            assert_eq!(would_block(&e), kind == io::ErrorKind::WouldBlock);
            assert_eq!(interrupted(&e), kind == io::ErrorKind::Interrupted);
        }
    }

    #[test]
    fn the_idle_check_keeps_only_a_quiet_link() {
        let mut link = reused();
        let would_block = || Err(io::ErrorKind::WouldBlock.into());
        assert!(link.idle_verdict(would_block(), b"").is_ok());
        let eagain = io::Error::from_raw_os_error(libc::EAGAIN);
        assert!(
            link.idle_verdict(Err(eagain), b"").is_ok(),
            "the errno itself"
        );
        let reset = io::Error::from_raw_os_error(libc::ECONNRESET);
        assert!(link.idle_verdict(Err(reset), b"").is_err(), "another errno");
        let mut link = reused();
        let eintr = io::Error::from_raw_os_error(libc::EINTR);
        assert!(link.idle_verdict(Err(eintr), b"").is_err(), "interrupted");
        let mut link = reused();
        assert!(!link.is_broken());
        let e = link.idle_verdict(Ok(0), b"").expect_err("closed");
        assert!(
            matches!(
                e,
                Error::Io {
                    kind: io::ErrorKind::UnexpectedEof,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(link.is_broken());
        let mut link = reused();
        let e = link.idle_verdict(Ok(5), b"VALUE x").expect_err("unasked");
        assert!(
            e.to_string()
                .contains("\"VALUE\" unasked while the connection was idle"),
            "{e}"
        );
        let mut link = reused();
        let e = link
            .idle_verdict(Err(io::ErrorKind::ConnectionReset.into()), b"")
            .expect_err("reset");
        assert!(
            matches!(
                e,
                Error::Io {
                    kind: io::ErrorKind::ConnectionReset,
                    ..
                }
            ),
            "{e:?}"
        );
        // in flight: a caller gave up midway, so the stream is out of step
        let mut link = reused();
        let _ = link.advance(&mut Single::version(), true);
        assert!(link.idle_verdict(would_block(), b"").is_err());
    }

    #[test]
    fn without_credentials_a_set_waits_for_a_version_and_is_never_sent_to_a_login_server() {
        let mut link = Link::new("s:1", &ConnOptions::default());
        let mut set = Single::store(StoreCommand::Set, b"k", b"u p", 0, 0);
        let (req, r) = drive(
            &mut link,
            &mut set,
            Server::Sends(b"CLIENT_ERROR unauthenticated\r\n"),
        );
        assert_eq!(req, b"version\r\n");
        assert!(
            matches!(
                r,
                Err(Error::Auth {
                    problem: AuthProblem::Required,
                    ..
                })
            ),
            "{r:?}"
        );
        // every later exchange fails the same way, writing nothing
        let mut ex = Single::delete(b"k");
        assert!(matches!(
            link.advance(&mut ex, true),
            Err(Error::Auth {
                problem: AuthProblem::Required,
                ..
            })
        ));
        // a server that answers the version gets the set, then no version again; on a new link,
        // and on one whose only exchange was a `version` (which says nothing of a login)
        for mut link in [Link::new("s:1", &ConnOptions::default()), reused()] {
            let (req, r) = drive(
                &mut link,
                &mut Single::store(StoreCommand::Set, b"k", b"v", 0, 0),
                Server::SendsEach(&[b"VERSION 1.6.21\r\n", b"STORED\r\n"]),
            );
            assert_eq!(req, b"version\r\nset k 0 0 1\r\nv\r\n");
            assert!(matches!(r, Ok(StoreOutcome::Stored)), "{r:?}");
            let mut next = Single::store(StoreCommand::Set, b"k", b"w", 0, 0);
            let (req, _) = drive(&mut link, &mut next, Server::Sends(b"STORED\r\n"));
            assert_eq!(
                req, b"set k 0 0 1\r\nw\r\n",
                "the server was known to serve"
            );
        }
    }

    #[test]
    fn meta_and_login_lines_are_told_apart() {
        for (req, meta) in [
            (&b"mg k v\r\n"[..], true),
            (b"ms k 1\r\n", true),
            (b"md k\r\n", true),
            (b"ma k\r\n", true),
            (b"mn\r\n", true),
            (b"mget k\r\n", false),
            (b"get k\r\n", false),
            (b"m", false),
        ] {
            assert_eq!(is_meta(req), meta, "{:?}", String::from_utf8_lossy(req));
        }
        assert!(may_log_in(b"set k 0 0 1\r\nv\r\n"));
        assert!(may_log_in(b"get a\r\nset k 0 0 1\r\nv\r\n"));
        assert!(!may_log_in(b"get set\r\n"));
        // a value that holds such a line costs one `version`, never a login
        assert!(may_log_in(b"add k 0 0 4\r\na\nset\r\n"));
    }

    #[test]
    fn a_deadline_too_far_to_count_is_decades_away() {
        let now = Instant::now();
        let far = deadline_after(Duration::MAX);
        assert!(
            far >= now + Duration::from_secs(86_400 * 365 * 29),
            "{:?}",
            far - now
        );
        let soon = deadline_after(Duration::from_millis(5));
        assert!(soon >= now + Duration::from_millis(5) && soon < now + Duration::from_secs(60));
    }

    /// A link names its server: a protocol error raised without a server gets the link's, one
    /// with a server keeps it.
    #[test]
    fn a_failure_names_the_links_server() {
        let mut link = Link::new("s:1", &ConnOptions::default());
        assert_eq!(link.server(), "s:1");
        link.mark_broken();
        assert!(link.is_broken());
        let mut link = Link::new("s:1", &ConnOptions::default());
        let e = link.fail(Error::protocol("", "bad line"));
        assert!(
            matches!(&e, Error::Protocol { server, .. } if server == "s:1"),
            "{e:?}"
        );
        assert!(link.is_broken());
        let e = link.fail(Error::protocol("t:2", "bad line"));
        assert!(
            matches!(&e, Error::Protocol { server, .. } if server == "t:2"),
            "{e:?}"
        );
    }

    /// A connection closed at its first meta command, before any byte of reply, is read as a
    /// server without meta; one whose server had answered was not closed for meta.
    #[test]
    fn a_close_at_the_first_meta_command_says_which_servers_lack_meta() {
        let opts = ConnOptions {
            protocol: crate::Protocol::Meta,
            ..ConnOptions::default()
        };
        // a byte came: the server read the meta command
        let mut link = Link::new("s:1", &opts);
        let (_, r) = delete(&mut link, Server::Sends(b"HD"));
        let e = r.expect_err("closed").to_string();
        assert!(!e.contains("meta"), "{e}");
        let mut link = Link::new("s:1", &opts);
        let (req, r) = delete(&mut link, Server::Sends(b""));
        assert!(
            req.starts_with(b"md k "),
            "{:?}",
            String::from_utf8_lossy(&req)
        );
        let e = r.expect_err("closed").to_string();
        assert!(e.contains("at the first meta command"), "{e}");
        let mut link = Link::new("s:1", &opts);
        let (_, r) = drive(
            &mut link,
            &mut Single::version(),
            Server::Sends(b"VERSION 1.6.21\r\n"),
        );
        assert!(r.is_ok(), "{r:?}");
        link.checked_out();
        let (_, r) = delete(&mut link, Server::Fails(io::ErrorKind::ConnectionReset));
        let e = r.expect_err("reset").to_string();
        assert!(!e.contains("meta"), "{e}");
    }

    /// A link keeps the settings it was made with.
    #[test]
    fn a_link_keeps_its_options() {
        let opts = ConnOptions {
            read_timeout: Duration::from_millis(7),
            ..ConnOptions::default()
        };
        let link = Link::new("s:1", &opts);
        assert_eq!(link.options().read_timeout, Duration::from_millis(7));
    }

    /// Over TLS a close before any reply is not taken for a plaintext client at a TLS port.
    #[cfg(feature = "tls")]
    #[test]
    fn a_tls_link_closed_at_once_gets_no_tls_hint() {
        // a CA of its own: a fresh machine's system store may be empty
        let key = rcgen::KeyPair::generate().expect("key");
        let ca = rcgen::CertificateParams::new(vec!["cache.test".to_string()])
            .and_then(|p| p.self_signed(&key))
            .expect("certificate");
        let setup = crate::settings::TlsConfig::new()
            .ca_pem(ca.pem().as_bytes())
            .and_then(|t| t.setup())
            .expect("TLS setup");
        let opts = ConnOptions {
            tls: Some(std::sync::Arc::new(setup)),
            ..ConnOptions::default()
        };
        let mut link = Link::new("s:1", &opts);
        let (_, r) = delete(&mut link, Server::Sends(b""));
        let e = r.expect_err("end of stream").to_string();
        assert!(!e.contains("TLS"), "{e}");
    }
}
