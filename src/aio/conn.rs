//! One async connection to one server: the socket and its system calls under tokio's
//! timers. Buffers, the broken, in-flight and stale flags, what to write and how to read the
//! replies are the core's [`Link`] and [`Exchange`]; a future dropped mid-exchange leaves the
//! link in flight, and its pool never hands it out again.

use super::read_timer::ReadTimer;
use crate::core::exchange::Exchange;
use crate::core::link::{Link, Next};
use crate::error::{Error, Result};
use crate::settings::ConnOptions;
use socket2::SockRef;
use std::io::{self, Read};
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant as StdInstant;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::{Instant, timeout};

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// The address a network connection reached.
    fn peer(&self) -> Option<std::net::SocketAddr> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok(),
            Stream::Unix(_) => None,
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.get_ref().0.peer_addr().ok(),
        }
    }

    /// One read into `buf`: how many bytes came (0: the end of the stream). Polled here
    /// rather than through `AsyncReadExt::read`'s future: that future and an async function
    /// around it were ~40 of an async get's ~5,200 instructions (callgrind).
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut rb = tokio::io::ReadBuf::new(buf);
        let r = match self {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, &mut rb),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, &mut rb),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, &mut rb),
        };
        r.map_ok(|()| rb.filled().len())
    }

    /// Writes the front of `buf` and moves `buf` past it until it is empty; over TLS, then
    /// flushes (rustls holds what it encrypted until flushed).
    fn poll_write_all(&mut self, cx: &mut Context<'_>, buf: &mut &[u8]) -> Poll<io::Result<()>> {
        while !buf.is_empty() {
            let n = ready!(match self {
                Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
                Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
                #[cfg(feature = "tls")]
                Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
            })?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *buf = &buf[n.min(buf.len())..];
        }
        match self {
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// The TLS handshake on `tcp` (within the caller's connect timeout).
#[cfg(feature = "tls")]
async fn over_tls(
    tcp: TcpStream,
    (config, name): crate::core::tls::Session,
    server: &str,
    opts: &ConnOptions,
) -> Result<Stream> {
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map(|s| Stream::Tls(Box::new(s)))
        .map_err(|e| crate::core::tls::handshake_failed(server, e, opts.connect_timeout))
}

/// An async connection to one memcached server.
pub(crate) struct AsyncConn {
    stream: Stream,
    /// The read deadline's timer, kept between requests.
    timer: Option<ReadTimer>,
    pub(crate) link: Link,
    /// The pool generation it was made in (see the pool module).
    pub(crate) generation: u64,
}

impl std::fmt::Debug for AsyncConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConn")
            .field("server", &self.link.server())
            .field("broken", &self.link.is_broken())
            .field("in_flight", &self.link.is_in_flight())
            .finish()
    }
}

impl AsyncConn {
    /// The address this connection reached (none for a unix socket).
    pub(crate) fn peer(&self) -> Option<std::net::SocketAddr> {
        self.stream.peer()
    }

    /// Connect to `host:port`, or to the unix socket at `host` when it starts with `/`, within
    /// the connect timeout, and log in if the options have credentials.
    pub(crate) async fn connect(
        host: &str,
        port: u16,
        server: &str,
        opts: &ConnOptions,
    ) -> Result<AsyncConn> {
        let mut conn = AsyncConn::open(host, port, server, opts).await?;
        conn.login().await?;
        Ok(conn)
    }

    /// The connection (and its TLS handshake) within the connect timeout, not logged in yet.
    pub(crate) async fn open(
        host: &str,
        port: u16,
        server: &str,
        opts: &ConnOptions,
    ) -> Result<AsyncConn> {
        let connecting = async {
            if host.starts_with('/') {
                return UnixStream::connect(host)
                    .await
                    .map(Stream::Unix)
                    .map_err(|e| Error::io(server, e, "connect", opts.connect_timeout));
            }
            let addrs: Vec<std::net::SocketAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![(ip, port).into()],
                // A resolver may block: on a thread of its own, one per name whoever asks, and
                // waited for under the connect timeout like the rest of the connect. Not
                // tokio's blocking pool: a hung look-up there holds a pool thread per call.
                Err(_) => crate::core::resolve::landed(opts, host, port)
                    .map_err(|e| Error::io(server, e, "resolve", opts.connect_timeout))?
                    .await
                    .map_err(|e| Error::io(server, e, "resolve", opts.connect_timeout))?,
            };
            let mut last = None;
            for a in addrs {
                match TcpStream::connect(a).await {
                    Ok(s) => {
                        // Requests are small and latency matters more than packet count.
                        s.set_nodelay(true)
                            .map_err(|e| Error::io(server, e, "connect", opts.connect_timeout))?;
                        #[cfg(feature = "tls")]
                        if let Some(session) = crate::core::tls::session_for(opts, server, host)? {
                            return over_tls(s, session, server, opts).await;
                        }
                        return Ok(Stream::Tcp(s));
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(match last {
                Some(e) => Error::io(server, e, "connect", opts.connect_timeout),
                None => Error::io_kind(
                    server,
                    "resolve",
                    io::ErrorKind::NotFound,
                    format!("{host} resolved to no address"),
                ),
            })
        };
        let stream = match timeout(opts.connect_timeout, connecting).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(Error::Timeout {
                    server: server.to_string(),
                    op: "connect",
                    after: opts.connect_timeout,
                });
            }
        };
        Ok(AsyncConn {
            stream,
            timer: None,
            link: Link::new(server, opts),
            generation: 0,
        })
    }

    /// The login of a new connection, if its options have credentials, within the read
    /// timeout.
    pub(crate) async fn login(&mut self) -> Result<()> {
        if let Some(c) = self.link.options().credentials.clone() {
            self.run(&mut crate::core::auth::Login::new(&c))
                .await
                .map_err(crate::core::auth::login_failed)?;
        }
        Ok(())
    }

    /// Drive `ex` to its end: write what it asks, read until it has its replies. Any failure
    /// leaves the link broken; a future dropped meanwhile leaves it in flight.
    pub(crate) async fn run<E: Exchange + ?Sized>(&mut self, ex: &mut E) -> Result<E::Output> {
        let mut fresh = true;
        loop {
            let next = self.link.advance(ex, std::mem::take(&mut fresh))?;
            match next {
                Next::Write => self.write().await?,
                Next::Read(deadline) => self.fill(deadline).await?,
                Next::Done(v) => return Ok(v),
            }
        }
    }

    /// Write the link's pending bytes within the write timeout.
    async fn write(&mut self) -> Result<()> {
        self.link.wrote();
        let limit = self.link.options().write_timeout;
        let mut rest = self.link.pending_write();
        let stream = &mut self.stream;
        // A request nearly always fits the socket's buffer and is written at the first
        // poll: no timer for it. Arming one and dropping it cost ~250 instructions a get
        // (tokio's TimerEntry drop and clear_entry, callgrind).
        let written = match std::future::poll_fn(|cx| {
            Poll::Ready(stream.poll_write_all(cx, &mut rest))
        })
        .await
        {
            Poll::Ready(r) => Ok(r),
            Poll::Pending => {
                timeout(
                    limit,
                    std::future::poll_fn(|cx| stream.poll_write_all(cx, &mut rest)),
                )
                .await
            }
        };
        match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.link.io_failed(e, "write")),
            Err(_) => Err(self.link.timed_out("write")),
        }
    }

    /// Read more bytes before `deadline`, under the connection's one [`ReadTimer`].
    async fn fill(&mut self, deadline: StdInstant) -> Result<()> {
        let until = Instant::from_std(deadline);
        let timer = match &mut self.timer {
            Some(t) => {
                t.arm(until);
                t
            }
            None => self.timer.insert(ReadTimer::new(until)),
        };
        let read = {
            let (stream, buf) = (&mut self.stream, self.link.spare());
            loop {
                let woke = std::future::poll_fn(|cx| match stream.poll_read(cx, buf) {
                    Poll::Ready(r) => Poll::Ready(Some(r)),
                    Poll::Pending => timer.poll(cx).map(|()| None),
                })
                .await;
                match woke {
                    Some(r) => break Some(r),
                    None if Instant::now() >= until => break None,
                    // armed for an earlier request's deadline
                    None => timer.reset(until),
                }
            }
        };
        match read {
            None => Err(self.link.timed_out("read")),
            Some(Ok(n)) => self.link.received(n),
            Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Some(Err(e)) => Err(self.link.io_failed(e, "read")),
        }
    }

    /// Close the socket now (both directions), before the connection is dropped: the server
    /// sees the end of the stream and frees its side. The connection is broken from here on.
    pub(crate) fn shut(&mut self) {
        self.link.mark_broken();
        let _ = match &self.stream {
            Stream::Tcp(s) => SockRef::from(s).shutdown(std::net::Shutdown::Both),
            Stream::Unix(s) => SockRef::from(s).shutdown(std::net::Shutdown::Both),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => SockRef::from(s.get_ref().0).shutdown(std::net::Shutdown::Both),
        };
    }

    /// Whether the connection is still usable after sitting idle, without a round trip: one
    /// non-blocking read. Bytes read here mean the connection is dropped anyway, so reading
    /// them (rather than peeking) loses nothing.
    pub(crate) fn idle_check(&mut self) -> Result<()> {
        let mut probe = [0u8; 64];
        let peeked = loop {
            let r = match &mut self.stream {
                Stream::Tcp(s) => (&*SockRef::from(&*s)).read(&mut probe),
                Stream::Unix(s) => (&*SockRef::from(&*s)).read(&mut probe),
                #[cfg(feature = "tls")]
                Stream::Tls(s) => tls_waiting(s, &mut probe),
            };
            match r {
                Err(e) if crate::core::link::interrupted(&e) => continue,
                r => break r,
            }
        };
        self.link.idle_verdict(peeked, &probe)
    }
}

/// One poll of the TLS stream with a waker that does nothing: records that arrived are
/// processed (a TLS 1.3 server sends session tickets after the handshake, which are not a
/// reply), and only plaintext or the end of the stream counts. `WouldBlock`: nothing waits.
#[cfg(feature = "tls")]
fn tls_waiting(
    s: &mut tokio_rustls::client::TlsStream<TcpStream>,
    probe: &mut [u8],
) -> io::Result<usize> {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut buf = tokio::io::ReadBuf::new(probe);
    match Pin::new(s).poll_read(&mut cx, &mut buf) {
        Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        Poll::Ready(Ok(())) => Ok(buf.filled().len()),
        Poll::Ready(Err(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::resolve::tests::{Gate, threads};
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// 1,000 async connects to a name whose resolver hangs: each is the typed connect
    /// timeout, one look-up thread serves them all, and tokio's blocking pool (at its default
    /// size) still runs an unrelated task.
    #[test]
    fn connects_to_a_hung_name_leave_the_blocking_pool_free() {
        let gate = Arc::new(Gate::default());
        let opts = ConnOptions {
            connect_timeout: Duration::from_millis(20),
            resolver: Some(gate.clone()),
            ..ConnOptions::default()
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let before = threads();
        let (extra, other) = rt.block_on(async {
            let calls: Vec<_> = (0..1000)
                .map(|_| {
                    let opts = opts.clone();
                    tokio::spawn(async move {
                        AsyncConn::open("hung.test", 11211, "hung.test:11211", &opts)
                            .await
                            .map(|_| ())
                    })
                })
                .collect();
            for c in calls {
                let e = c.await.expect("joined").expect_err("the resolver hangs");
                assert!(matches!(e, Error::Timeout { op: "connect", .. }), "{e:?}");
            }
            // other tests running alongside in this process add threads of their own, hence
            // the slack in the bound below
            let extra = threads().saturating_sub(before);
            let other = timeout(Duration::from_secs(10), tokio::task::spawn_blocking(|| 7)).await;
            (extra, other)
        });
        gate.release();
        assert!(
            matches!(other, Ok(Ok(7))),
            "the blocking pool is held: {other:?}"
        );
        assert!(extra <= 100, "{extra} threads left by 1,000 calls");
        assert_eq!(gate.calls(1), 1, "one look-up for 1,000 calls");
    }

    /// The connection's timer, left armed for an earlier request's deadline, never cuts a
    /// later request short, and still ends a request the server never answers at its own
    /// deadline: a reply 450 ms after an armed 300 ms deadline's request but 250 ms into its
    /// own (read timeout 300 ms) is read; silence times out after 300 ms, not at once.
    #[test]
    fn the_kept_timer_times_each_read_from_its_own_request() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.expect("accept");
                let mut buf = vec![0u8; 1024];
                for delay in [0, 250, u64::MAX] {
                    let _ = s.read(&mut buf).await.expect("request");
                    if delay == u64::MAX {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    s.write_all(b"VERSION 1\r\n").await.expect("reply");
                }
            });
            let opts = ConnOptions {
                read_timeout: Duration::from_millis(300),
                ..ConnOptions::default()
            };
            let host = addr.ip().to_string();
            let mut conn = AsyncConn::open(&host, addr.port(), &addr.to_string(), &opts)
                .await
                .expect("connect");
            let version = || crate::core::exchange::Single::version();
            conn.run(&mut version()).await.expect("at once");
            // the timer stays armed for the first request's deadline, 300 ms from it
            tokio::time::sleep(Duration::from_millis(200)).await;
            let started = Instant::now();
            conn.run(&mut version())
                .await
                .expect("250 ms into its own 300");
            assert!(started.elapsed() >= Duration::from_millis(240));
            let started = Instant::now();
            let e = conn.run(&mut version()).await.expect_err("silence");
            let waited = started.elapsed();
            assert!(matches!(e, Error::Timeout { op: "read", .. }), "{e:?}");
            assert!(
                waited >= Duration::from_millis(290) && waited < Duration::from_secs(3),
                "{waited:?}"
            );
            server.abort();
        });
    }
}
