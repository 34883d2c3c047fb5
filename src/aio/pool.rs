//! The async client's per-server pool: bb8 over [`AsyncConn`]s, plus what bb8 lacks.
//!
//! - **Fail fast on a refused connect.** bb8 connects in a spawned task and reports its errors
//!   only to its error sink; with `retry_connection(false)` nothing wakes the checkouts waiting
//!   for that connection (bb8 0.9 `add_connection` only frees the slot), so they would wait out
//!   the whole checkout timeout. The sink publishes each connect failure, numbered, and waiting
//!   checkouts watch it and fail at once with the connect error, counted once for the server
//!   however many checkouts it ends.
//! - **Invalidation.** bb8 cannot drop its connections on demand; each connection carries the
//!   generation it was made in, and one from before the server went down is reported broken
//!   ([`bb8::ManageConnection::has_broken`]) and never reused.
//! - **A fast path in front of bb8.** A bb8 checkout and return take bb8's lock four times,
//!   read the clock three times and set up a checkout timeout: ~0.3 µs of CPU, measured in
//!   `benches/async_parts.rs`, on a request of ~8 µs. A connection that ends its exchange
//!   cleanly goes onto a short stack of this pool's own instead ([`Pool::give_back`]), still
//!   checked out as far as bb8 knows (so bb8's `max_size` still bounds every connection), and
//!   the next checkout pops it under one uncontended lock ([`Pool::take_idle`]). Whenever a
//!   checkout waits in bb8 ([`Pool::waiting`]), connections given back go to bb8 instead and
//!   wake it. With `min_idle` the stack is not used: bb8 counts stacked connections as busy
//!   and would open more to keep `min_idle` idle. Every connection popped is checked as one
//!   from bb8 is (generation, idle check).

use super::conn::AsyncConn;
use crate::core::failure::eject::ServerPool;
use crate::error::Error;
use crate::servers::Server;
use crate::settings::ConnOptions;
use crate::settings::PoolSettings;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// One failed connect of a pool, numbered.
#[derive(Clone, Debug)]
pub(crate) struct ConnectFailure {
    /// 1, 2, ... in the order the pool's connects failed.
    pub(crate) seq: u64,
    /// When.
    pub(crate) at: Instant,
    /// The connect error.
    pub(crate) error: Error,
}

type ConnectFailures = Arc<tokio::sync::watch::Sender<Option<ConnectFailure>>>;

/// bb8's error sink: publishes each connect error.
#[derive(Clone)]
struct Sink(ConnectFailures);

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
                at: Instant::now(),
                error: e,
            });
        });
    }
    fn boxed_clone(&self) -> Box<dyn bb8::ErrorSink<Error>> {
        Box::new(self.clone())
    }
}

/// Makes async connections to one server for bb8, and tells broken ones.
#[derive(Debug, Clone)]
pub(crate) struct Manager {
    server: Server,
    opts: ConnOptions,
    generation: Arc<AtomicU64>,
    /// New connections made and waiting for their login's answer.
    logins: Arc<AtomicUsize>,
    /// The address the newest connection reached: a new connection elsewhere means the
    /// server's name now resolves to another address, and the older connections go.
    peer: Arc<Mutex<Option<std::net::SocketAddr>>>,
}

/// A login under way, counted in [`Manager::logins`] until dropped (even with its future).
struct LoggingIn<'a>(&'a AtomicUsize);

impl<'a> LoggingIn<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::AcqRel);
        LoggingIn(n)
    }
}

impl Drop for LoggingIn<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl bb8::ManageConnection for Manager {
    // Boxed: a connection (its link and read buffer) is some 350 bytes, and a checkout and
    // give-back move it several times; under callgrind those copies were a tenth of an
    // async get's instructions.
    type Connection = Box<AsyncConn>;
    type Error = Error;

    async fn connect(&self) -> Result<Box<AsyncConn>, Error> {
        let s = &self.server;
        let mut c = AsyncConn::open(s.connect_host(), s.port, &s.addr, &self.opts).await?;
        if let Some(peer) = c.peer() {
            let mut last = self.peer.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|p| p != peer) {
                // a node replaced under the same name: the connections to its old address
                // are never reused (`has_broken`, `is_current`)
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
            *last = Some(peer);
        }
        if self.opts.credentials.is_some() {
            let _counted = LoggingIn::new(&self.logins);
            c.login().await?;
        }
        c.generation = self.generation.load(Ordering::Acquire);
        Ok(Box::new(c))
    }

    /// The client checks every connection it checks out itself (idle check, optional ping),
    /// so that a stale connection is told apart from a failing server.
    async fn is_valid(&self, conn: &mut Box<AsyncConn>) -> Result<(), Error> {
        conn.idle_check()
    }

    /// Broken, still in flight (its exchange was abandoned, e.g. by a dropped future), or made
    /// before the server went down: never reused. No I/O.
    fn has_broken(&self, conn: &mut Box<AsyncConn>) -> bool {
        conn.link.is_broken()
            || conn.link.is_in_flight()
            || conn.generation != self.generation.load(Ordering::Acquire)
    }
}

/// A server's pool; see the module docs.
pub(crate) struct Pool {
    pub(crate) bb8: bb8::Pool<Manager>,
    generation: Arc<AtomicU64>,
    /// The pool's last connect failure, watched by waiting checkouts.
    pub(crate) failures: ConnectFailures,
    /// The newest connect failure already counted for health.
    pub(crate) counted: AtomicU64,
    pub(crate) size: u32,
    /// Connections checked out of bb8 and idle between two exchanges (see the module docs);
    /// `None` with `min_idle`.
    idle: Option<Mutex<Vec<Pooled>>>,
    /// Checkouts waiting in bb8.
    waiting: AtomicUsize,
    /// The checkouts waiting in bb8, oldest first: a connection given back goes to the oldest
    /// (see [`Pool::give_back`]).
    queue: Mutex<VecDeque<Handoff>>,
    /// New connections waiting for their login's answer (see [`Manager`]).
    logins: Arc<AtomicUsize>,
    /// How long a checkout waits.
    pub(crate) checkout_timeout: std::time::Duration,
    /// The server, its options and the address its newest connection reached, to look its
    /// name up again after a failure.
    server: Server,
    opts: ConnOptions,
    peer: Arc<Mutex<Option<std::net::SocketAddr>>>,
}

/// A connection checked out of bb8.
pub(crate) type Pooled = bb8::PooledConnection<'static, Manager>;

/// Where a waiting checkout takes a connection handed to it.
pub(crate) type Handoff = tokio::sync::oneshot::Sender<Pooled>;

/// A checkout waiting in bb8, counted in [`Pool::waiting`] until dropped (even when its
/// future is).
pub(crate) struct Waiting<'p>(&'p Pool);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Pool {
    /// A pool for `server`; opens nothing unless `min_idle` asks. Must be called inside a
    /// tokio runtime (bb8 runs its upkeep as tasks).
    pub(crate) fn new(server: &Server, opts: ConnOptions, cfg: PoolSettings) -> Pool {
        let failures: ConnectFailures = Arc::new(tokio::sync::watch::Sender::new(None));
        let generation = Arc::new(AtomicU64::new(0));
        let logins = Arc::new(AtomicUsize::new(0));
        let peer = Arc::new(Mutex::new(None));
        let manager = Manager {
            server: server.clone(),
            opts: opts.clone(),
            generation: generation.clone(),
            logins: logins.clone(),
            peer: peer.clone(),
        };
        let bb8 = bb8::Pool::builder()
            .max_size(cfg.size)
            .min_idle(cfg.min_idle)
            .connection_timeout(cfg.checkout_timeout)
            .test_on_check_out(false)
            // one connect attempt per checkout; the failure policy decides about retrying
            .retry_connection(false)
            .error_sink(Box::new(Sink(failures.clone())))
            .build_unchecked(manager);
        Pool {
            bb8,
            generation,
            failures,
            counted: AtomicU64::new(0),
            size: cfg.size,
            idle: (cfg.min_idle == 0).then(|| Mutex::new(Vec::with_capacity(cfg.size as usize))),
            waiting: AtomicUsize::new(0),
            queue: Mutex::new(VecDeque::new()),
            logins,
            checkout_timeout: cfg.checkout_timeout,
            server: server.clone(),
            opts,
            peer,
        }
    }

    /// Whether a new connection of this pool is waiting for its login's answer.
    pub(crate) fn logging_in(&self) -> bool {
        self.logins.load(Ordering::Acquire) > 0
    }

    /// The connection last given back, if one is idle on the stack.
    pub(crate) fn take_idle(&self) -> Option<Pooled> {
        let idle = self.idle.as_ref()?;
        idle.lock().unwrap_or_else(PoisonError::into_inner).pop()
    }

    /// `c`, at the end of its exchange: to the oldest waiting checkout, or onto the stack if
    /// it can serve again and no checkout waits; otherwise back to bb8, which closes it if it
    /// is broken, in flight or stale, and otherwise hands it to a waiting checkout.
    ///
    /// Handed over directly because bb8 does not: it puts the connection in its idle list and
    /// wakes a waiter, and a checkout arriving meanwhile takes it first; the woken one waits
    /// again, behind the newcomers. With 1,000 tasks on 64 connections that made the 99th
    /// percentile 1.8 times a socket per task's (perf/src/aio.rs).
    pub(crate) fn give_back(&self, c: Pooled) {
        let Some(idle) = &self.idle else { return };
        if c.link.is_broken() || c.link.is_in_flight() || !self.is_current(&c) {
            return;
        }
        let c = if self.waiting.load(Ordering::SeqCst) == 0 {
            c
        } else {
            match self.hand_over(c) {
                Some(c) => c,
                None => return,
            }
        };
        idle.lock().unwrap_or_else(PoisonError::into_inner).push(c);
        // Pairs with `wait`: a checkout that starts waiting after the push finds the
        // connection on the stack; one that started before is seen here.
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let c = idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            drop(c);
        }
    }

    /// `c` to the oldest checkout still waiting, if one is; else `c` back.
    fn hand_over(&self, mut c: Pooled) -> Option<Pooled> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(tx) = queue.pop_front() {
            // a checkout that got a connection from bb8, or gave up, has dropped its end
            match tx.send(c) {
                Ok(()) => return None,
                Err(back) => c = back,
            }
        }
        Some(c)
    }

    /// Queue a checkout that waits in bb8: the receiver gets the next connection given back
    /// before any later checkout does.
    pub(crate) fn queue(&self) -> tokio::sync::oneshot::Receiver<Pooled> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        while queue.front().is_some_and(Handoff::is_closed) {
            queue.pop_front();
        }
        queue.push_back(tx);
        rx
    }

    /// Count a checkout about to wait in bb8; then the stack is checked once more (see
    /// [`Pool::give_back`]), and a connection found there is returned at once.
    pub(crate) fn wait(&self) -> (Waiting<'_>, Option<Pooled>) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        (Waiting(self), self.take_idle())
    }

    /// After a connection failed: if the server's name no longer resolves to the address the
    /// pool's connections reached (a node replaced under the same name while the old one
    /// still answers), they are never reused. Awaited by the failed request before it returns,
    /// as the blocking client looks up in the caller's thread: the next request reaches the
    /// new address. The look-up is shared with every connect asking for the name and bounded
    /// by the connect timeout; an IP address, a unix socket, no address or a failed look-up
    /// changes nothing.
    pub(crate) async fn recheck_address(&self) {
        let last = *self.peer.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(peer) = last else { return };
        let host = self.server.connect_host();
        if !crate::core::resolve::is_name(host) {
            return;
        }
        let Ok(landing) = crate::core::resolve::landed(&self.opts, host, self.server.port) else {
            return;
        };
        if let Ok(Ok(addrs)) = tokio::time::timeout(self.opts.connect_timeout, landing).await
            && !addrs.is_empty()
            && !addrs.contains(&peer)
        {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether `c` was made in the current generation.
    pub(crate) fn is_current(&self, c: &AsyncConn) -> bool {
        c.generation == self.generation.load(Ordering::Acquire)
    }

    /// Whether connect failure `f` is counted by this caller (no other checkout counted it).
    pub(crate) fn first_to_count(&self, f: &ConnectFailure) -> bool {
        self.counted.fetch_max(f.seq, Ordering::AcqRel) < f.seq
    }
}

impl ServerPool for Pool {
    fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        // closed outside the lock (bb8 takes its own when they drop)
        let stale = match &self.idle {
            Some(idle) => std::mem::take(&mut *idle.lock().unwrap_or_else(PoisonError::into_inner)),
            None => Vec::new(),
        };
        drop(stale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of one connection to a listener that accepts and never answers (nothing here
    /// sends a request).
    async fn pool_of_one() -> (Pool, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accept = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                held.push(s);
            }
        });
        let cfg = PoolSettings {
            size: 1,
            min_idle: 0,
            checkout_timeout: std::time::Duration::from_secs(5),
            ping: false,
        };
        let server = Server::new("127.0.0.1", port);
        (Pool::new(&server, ConnOptions::default(), cfg), accept)
    }

    /// A connection given back goes to the oldest checkout still waiting, then the next;
    /// one that gave up is passed over; with none waiting it goes onto the stack.
    #[tokio::test]
    async fn a_connection_given_back_goes_to_the_oldest_waiting_checkout() {
        let (pool, accept) = pool_of_one().await;
        let c = pool.bb8.get_owned().await.unwrap();
        let (w1, none) = pool.wait();
        assert!(none.is_none());
        let mut first = pool.queue();
        let (w2, _) = pool.wait();
        let mut second = pool.queue();
        let (w3, _) = pool.wait();
        let gave_up = pool.queue();
        let (w4, _) = pool.wait();
        let mut last = pool.queue();
        pool.give_back(c);
        let c = first.try_recv().expect("the oldest has it");
        assert!(second.try_recv().is_err(), "the next waits on");
        drop(w1);
        pool.give_back(c);
        let c = second.try_recv().expect("then the next");
        drop((w2, gave_up, w3));
        pool.give_back(c);
        let c = last.try_recv().expect("one that gave up is passed over");
        drop(w4);
        assert!(pool.take_idle().is_none());
        pool.give_back(c);
        assert!(pool.take_idle().is_some(), "none waiting: onto the stack");
        accept.abort();
    }

    /// Queueing drops the front ends whose checkouts are gone, so the queue does not grow
    /// with checkouts that bb8 served.
    #[tokio::test]
    async fn queueing_drops_checkouts_that_are_gone() {
        let (pool, accept) = pool_of_one().await;
        for _ in 0..10 {
            drop(pool.queue());
        }
        let _live = pool.queue();
        assert_eq!(pool.queue.lock().unwrap().len(), 1);
        accept.abort();
    }
}
