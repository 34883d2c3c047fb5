//! Connection pools: one per server, and not one thread.
//!
//! A pool holds at most `size` connections to its server: idle ones in a list (the most
//! recently returned is taken first, so the ones the server may have closed for idleness sit at
//! the bottom), the others checked out. A checkout
//!
//! - takes an idle connection that passes [`Conn::idle_check`] (one non-blocking `recv`, no
//!   round trip; with `ping_on_checkout` also a `version` round trip): a connection the server
//!   closed, or with bytes nobody asked for waiting on it, is dropped and the next one tried,
//!   and none of that counts against the server;
//! - or, with none idle and fewer than `size` open, connects in the caller's thread, bounded
//!   by the connect timeout, and returns a connect error at once (to be counted once against
//!   the server by the client);
//! - or, with all `size` checked out, waits on a condition variable for one to come back, at
//!   most the checkout timeout, and then fails with [`Error::Pool`] `exhausted: true`, which
//!   says nothing about the server.
//!
//! `min_idle` is kept lazily: the first checkout that has to connect opens the missing idle
//! connections too, in its own thread. No background thread exists (r2d2 ran three per pool:
//! 3,000 threads for 1,000 servers, and retried a refused connect until the checkout timeout).
//!
//! [`Pool::invalidate`] (called when the server is marked down) drops the idle connections and
//! keeps the checked-out ones from coming back: the server may be restarted meanwhile.

use super::conn::Conn;
use crate::core::exchange::Single;
use crate::core::failure::eject::ServerPool;
use crate::error::{Error, Result};
use crate::settings::ConnOptions;
use crate::settings::PoolSettings;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The connections to one server.
pub(crate) struct Pool {
    host: String,
    port: u16,
    server: String,
    opts: ConnOptions,
    cfg: PoolSettings,
    state: Mutex<State>,
    /// Signalled when a checked-out connection comes back (or its slot frees).
    returned: Condvar,
}

struct State {
    /// Idle connections with the generation they were made in; the last is taken first.
    idle: Vec<(Box<Conn>, u64)>,
    /// Connections checked out, or being connected.
    busy: usize,
    /// Checkouts waiting for a connection to come back.
    waiting: usize,
    /// Bumped by [`Pool::invalidate`]; connections of an older one are never reused.
    generation: u64,
    /// The address the newest connection reached: a new connection elsewhere means the
    /// server's name now resolves to another address, and the older connections go.
    peer: Option<std::net::SocketAddr>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("Pool")
            .field("server", &self.server)
            .field("idle", &st.idle.len())
            .field("busy", &st.busy)
            .finish()
    }
}

/// Counts of a pool, for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(test)]
pub(crate) struct PoolState {
    /// Idle connections.
    pub idle: usize,
    /// Connections checked out (or being connected).
    pub busy: usize,
}

/// A connection checked out of a pool; it goes back (or, if broken, is closed) on drop.
pub(crate) struct Pooled<'p> {
    pool: &'p Pool,
    /// Always `Some` until dropped.
    /// Boxed: a connection is some 350 bytes, and a checkout and return moved it several
    /// times (a tenth of a get's user-space instructions under callgrind).
    conn: Option<Box<Conn>>,
    generation: u64,
    reused: bool,
}

impl std::fmt::Debug for Pooled<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pooled")
            .field("conn", &self.conn)
            .field("reused", &self.reused)
            .finish()
    }
}

#[cfg(test)]
impl Pooled<'_> {
    /// True when the connection sat idle in the pool before this checkout.
    pub(crate) fn is_reused(&self) -> bool {
        self.reused
    }
}

impl Pooled<'_> {
    /// Closes a connection that failed its idle check, as a checkout does with one: its slot
    /// is freed and nothing else happens (a broken connection given back would also have its
    /// server's name resolved again).
    pub(crate) fn discard(mut self) {
        if let Some(conn) = self.conn.take() {
            drop(conn);
            self.pool.free_slot(self.pool.lock());
        }
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
            .as_ref()
            .expect("a checked-out connection is held until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a checked-out connection is held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.put_back(conn, self.generation);
        }
    }
}

impl Pool {
    /// A pool for `host:port` (`host` starting with `/`: a unix socket); `server` is the
    /// address used in errors. Opens nothing.
    pub(crate) fn new(
        host: &str,
        port: u16,
        server: &str,
        opts: ConnOptions,
        cfg: PoolSettings,
    ) -> Pool {
        Pool {
            host: host.to_string(),
            port,
            server: server.to_string(),
            opts,
            cfg,
            state: Mutex::new(State {
                idle: Vec::new(),
                busy: 0,
                waiting: 0,
                generation: 0,
                peer: None,
            }),
            returned: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock leaves the counts consistent (no code between the
        // updates can panic), so a poisoned lock is used as is
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn size(&self) -> usize {
        self.cfg.size.max(1) as usize
    }

    /// Idle and checked-out connections now.
    #[cfg(test)]
    pub(crate) fn state(&self) -> PoolState {
        let st = self.lock();
        PoolState {
            idle: st.idle.len(),
            busy: st.busy,
        }
    }

    /// A connection: an idle one that passes its idle check, else a new one. See the module
    /// documentation for what is waited for and what each error means.
    pub(crate) fn get(&self) -> Result<Pooled<'_>> {
        self.checkout(false, false).map(|(c, _)| c)
    }

    /// Like [`Pool::get`], but an idle connection whose whole idle check is
    /// [`Conn::idle_check`] (no ping on checkout, a socket [`Conn::idle_fd`] can poll) comes
    /// back unchecked, with `true`: the caller checks the connections of a multi-key call
    /// with one `poll` ([`super::conn::quiet`]).
    pub(crate) fn get_unchecked(&self) -> Result<(Pooled<'_>, bool)> {
        self.checkout(false, true)
    }

    /// A new connection, never an idle one (the retry after a stale connection): the slot of
    /// an idle connection is taken for it if every slot is in use.
    pub(crate) fn get_new(&self) -> Result<Pooled<'_>> {
        self.checkout(true, false).map(|(c, _)| c)
    }

    /// A connection, and whether its idle check is left to the caller (`defer`).
    fn checkout(&self, new: bool, defer: bool) -> Result<(Pooled<'_>, bool)> {
        let mut deadline = None;
        let mut st = self.lock();
        loop {
            if !new && let Some((mut conn, generation)) = st.idle.pop() {
                st.busy += 1;
                let current = generation == st.generation;
                drop(st);
                let unchecked = defer && !self.cfg.ping && conn.idle_fd().is_some();
                if current && (unchecked || self.reusable(&mut conn)) {
                    conn.link.checked_out();
                    let pooled = Pooled {
                        pool: self,
                        conn: Some(conn),
                        generation,
                        reused: true,
                    };
                    return Ok((pooled, unchecked));
                }
                // closed by the server, out of step, or made before the server went down
                drop(conn);
                st = self.lock();
                st.busy -= 1;
                continue;
            }
            let open = st.busy + st.idle.len();
            if open < self.size() || (new && !st.idle.is_empty()) {
                // a new connection wanted with every slot in use: the oldest idle one gives
                // up its slot
                let evicted = (open >= self.size()).then(|| st.idle.remove(0));
                st.busy += 1;
                let generation = st.generation;
                drop(st);
                drop(evicted);
                return self.connect_in_slot(generation).map(|c| (c, false));
            }
            // every connection is checked out: wait for one to come back
            let now = Instant::now();
            let until = *deadline.get_or_insert_with(|| {
                now.checked_add(self.cfg.checkout_timeout)
                    .unwrap_or(now + Duration::from_secs(86_400 * 365))
            });
            if now >= until {
                return Err(Error::Pool {
                    server: self.server.clone(),
                    message: format!(
                        "all {} connections were in use for the whole checkout timeout of {} ms",
                        self.size(),
                        self.cfg.checkout_timeout.as_millis()
                    ),
                    exhausted: true,
                });
            }
            st.waiting += 1;
            st = match self.returned.wait_timeout(st, until - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            st.waiting -= 1;
        }
    }

    /// Whether an idle connection can be handed out: its idle check, then the ping if
    /// configured. Nothing here counts against the server.
    fn reusable(&self, conn: &mut Conn) -> bool {
        if conn.idle_check().is_err() {
            return false;
        }
        if !self.cfg.ping {
            return true;
        }
        conn.link.checked_out();
        conn.run(&mut Single::version()).is_ok()
    }

    /// Connect in a slot already counted in `busy`; on failure the slot is freed.
    fn connect_in_slot(&self, generation: u64) -> Result<Pooled<'_>> {
        match Conn::connect(&self.host, self.port, &self.server, &self.opts) {
            Ok(conn) => {
                let mut conn = Box::new(conn);
                let generation = self.reached(&conn, generation);
                conn.link.checked_out();
                self.top_up();
                Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                    generation,
                    reused: false,
                })
            }
            Err(e) => {
                self.free_slot(self.lock());
                Err(e)
            }
        }
    }

    /// Open idle connections up to `min_idle`, in this thread; stops at the first failure
    /// (which counts for nothing: the request's own connection is up).
    fn top_up(&self) {
        let min_idle = (self.cfg.min_idle as usize).min(self.size());
        loop {
            let mut st = self.lock();
            if st.idle.len() + st.busy >= min_idle {
                return;
            }
            st.busy += 1;
            let generation = st.generation;
            drop(st);
            let made = Conn::connect(&self.host, self.port, &self.server, &self.opts);
            let generation = match &made {
                Ok(conn) => self.reached(conn, generation),
                Err(_) => generation,
            };
            let mut st = self.lock();
            match made {
                Ok(conn) if generation == st.generation => {
                    st.idle.insert(0, (Box::new(conn), generation));
                    self.free_slot(st);
                }
                _ => {
                    self.free_slot(st);
                    return;
                }
            }
        }
    }

    /// A new connection reached `conn.peer()`: if the connections before it reached another
    /// address (a node replaced under the same name), they are never reused, and the new one
    /// belongs to the generation after them. The generation `conn` belongs to.
    fn reached(&self, conn: &Conn, generation: u64) -> u64 {
        let Some(peer) = conn.peer() else {
            return generation;
        };
        let mut st = self.lock();
        let moved = st.peer.is_some_and(|p| p != peer);
        st.peer = Some(peer);
        if !moved {
            return generation;
        }
        st.generation = st.generation.wrapping_add(1);
        let current = st.generation;
        let idle = std::mem::take(&mut st.idle);
        drop(st);
        drop(idle);
        current
    }

    /// After a connection failed: if the server's name no longer resolves to the address the
    /// pool's connections reached (a node replaced under the same name while the old one
    /// still answers), they are never reused. An IP address or a unix socket is not looked
    /// up; a lookup that fails changes nothing.
    fn recheck_address(&self) {
        let Some(peer) = self.lock().peer else { return };
        if !crate::core::resolve::is_name(&self.host) {
            return;
        }
        if let Ok(addrs) =
            crate::core::resolve::resolve(&self.opts, &self.host, self.port, &self.server)
            && !addrs.contains(&peer)
        {
            self.invalidate_now();
        }
    }

    /// Give a slot back (the lock held) and wake a waiter if there is one.
    fn free_slot(&self, mut st: MutexGuard<'_, State>) {
        st.busy -= 1;
        let wake = st.waiting > 0;
        drop(st);
        if wake {
            self.returned.notify_one();
        }
    }

    /// A checked-out connection comes back: kept if it is in step and current, closed
    /// otherwise (outside the lock).
    fn put_back(&self, conn: Box<Conn>, generation: u64) {
        if conn.link.is_broken() {
            self.recheck_address();
        }
        let keep = !conn.link.is_broken() && !conn.link.is_in_flight();
        let mut st = self.lock();
        let closed = if keep && generation == st.generation {
            st.idle.push((conn, generation));
            None
        } else {
            Some(conn)
        };
        self.free_slot(st);
        drop(closed);
    }

    /// Never reuse the connections open now: the idle ones are closed, the checked-out ones
    /// are closed when they come back. For a server just marked down, which may be restarted
    /// before it is used again.
    fn invalidate_now(&self) {
        let mut st = self.lock();
        st.generation = st.generation.wrapping_add(1);
        let idle = std::mem::take(&mut st.idle);
        drop(st);
        drop(idle);
    }
}

impl ServerPool for Pool {
    fn invalidate(&self) {
        self.invalidate_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A tiny server on 127.0.0.1 answering `version` and `get` (always a miss) on every
    /// connection, keeping each accepted socket so the test can close or write to it.
    struct Fake {
        port: u16,
        accepted: Arc<Mutex<Vec<TcpStream>>>,
        stop: Arc<AtomicBool>,
    }

    impl Fake {
        fn start() -> Fake {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = l.local_addr().expect("addr").port();
            let accepted = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let (acc, st) = (accepted.clone(), stop.clone());
            std::thread::spawn(move || {
                for s in l.incoming() {
                    if st.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(mut s) = s else { continue };
                    acc.lock().unwrap().push(s.try_clone().expect("clone"));
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = s.read(&mut buf) {
                            if n == 0 {
                                return;
                            }
                            let req = &buf[..n];
                            let reply: &[u8] = if req.starts_with(b"version") {
                                b"VERSION 1.6.0\r\n"
                            } else {
                                b"END\r\n"
                            };
                            if s.write_all(reply).is_err() {
                                return;
                            }
                        }
                    });
                }
            });
            Fake {
                port,
                accepted,
                stop,
            }
        }
        /// Connections accepted once at least `n` are: the client's connect completes in the
        /// kernel before the accept thread takes it, so counting at once races.
        fn accepted(&self, n: usize) -> usize {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                let got = self.accepted.lock().unwrap().len();
                if got >= n || std::time::Instant::now() > deadline {
                    return got;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        /// Run `f` on the server side of connection `i` (in accept order).
        fn with(&self, i: usize, f: impl FnOnce(&mut TcpStream)) {
            self.accepted(i + 1);
            f(&mut self.accepted.lock().unwrap()[i])
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            let _ = TcpStream::connect(("127.0.0.1", self.port));
        }
    }

    fn pool(port: u16, size: u32, checkout_ms: u64) -> Pool {
        Pool::new(
            "127.0.0.1",
            port,
            &format!("127.0.0.1:{port}"),
            ConnOptions::default(),
            PoolSettings {
                size,
                min_idle: 0,
                checkout_timeout: Duration::from_millis(checkout_ms),
                ping: false,
            },
        )
    }

    fn get_miss(c: &mut Conn) {
        let keys: [&[u8]; 1] = [b"k"];
        let mut ex = crate::core::exchange::Retrieve::new(&keys, false, None);
        c.run(&mut ex).expect("get");
        assert_eq!(ex.take_hits(), vec![None]);
    }

    fn wait_for(mut done: impl FnMut() -> bool) {
        let t = Instant::now();
        while !done() {
            assert!(t.elapsed() < Duration::from_secs(10), "state never reached");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn reuses_one_connection_and_never_exceeds_the_size() {
        let f = Fake::start();
        let p = pool(f.port, 2, 50);
        for _ in 0..5 {
            let mut c = p.get().expect("get");
            get_miss(&mut c);
        }
        assert_eq!(f.accepted(1), 1);
        assert_eq!(p.state(), PoolState { idle: 1, busy: 0 });
        let a = p.get().expect("a");
        let b = p.get().expect("b");
        assert!(a.is_reused() && !b.is_reused());
        let e = p.get().expect_err("a third one");
        assert!(
            matches!(
                e,
                Error::Pool {
                    exhausted: true,
                    ..
                }
            ),
            "typed exhaustion: {e:?}"
        );
        assert!(!e.is_server_failure());
        drop((a, b));
        assert_eq!(p.state(), PoolState { idle: 2, busy: 0 });
    }

    /// An idle connection comes back unchecked only from `get_unchecked`; a fresh one is
    /// never unchecked; and a discarded connection frees its slot at once and is closed.
    #[test]
    fn unchecked_checkouts_and_discard_free_the_slot() {
        let f = Fake::start();
        let p = pool(f.port, 1, 50);
        let (c, unchecked) = p.get_unchecked().expect("connect");
        assert!(
            !unchecked && !c.is_reused(),
            "a new connection is not left unchecked"
        );
        drop(c);
        let (c, unchecked) = p.get_unchecked().expect("idle");
        assert!(unchecked && c.is_reused());
        c.discard();
        assert_eq!(p.state(), PoolState { idle: 0, busy: 0 });
        let mut c = p.get().expect("the freed slot connects again");
        assert!(!c.is_reused());
        get_miss(&mut c);
        assert_eq!(f.accepted(2), 2);
        drop(c);
        let c = p.get().expect("idle");
        assert!(c.is_reused(), "get checks it and reuses it");
    }

    #[test]
    fn a_refused_connect_fails_at_once_and_frees_its_slot() {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr")
            .port();
        // the listener is gone: nothing listens on `port`
        let p = pool(port, 1, 60_000);
        for _ in 0..3 {
            let e = p.get().expect_err("refused");
            assert!(
                matches!(
                    e,
                    Error::Io {
                        kind: std::io::ErrorKind::ConnectionRefused,
                        ..
                    }
                ),
                "{e:?}"
            );
        }
        assert_eq!(p.state(), PoolState { idle: 0, busy: 0 });
    }

    #[test]
    fn a_connection_the_server_closed_is_replaced_at_checkout() {
        let f = Fake::start();
        let p = pool(f.port, 1, 50);
        get_miss(&mut p.get().expect("get"));
        f.with(0, |s| s.shutdown(std::net::Shutdown::Both).expect("close"));
        idle_check_fails(&p);
        let mut c = p.get().expect("a new connection");
        assert!(!c.is_reused());
        get_miss(&mut c);
        assert_eq!(f.accepted(2), 2);
    }

    /// Waits until the idle connection's check fails (what the server did has reached the
    /// client's socket); the failed check leaves it marked broken, as a checkout would.
    fn idle_check_fails(p: &Pool) {
        wait_for(|| p.lock().idle[0].0.idle_check().is_err());
    }

    #[test]
    fn bytes_sent_unasked_to_an_idle_connection_make_it_unusable() {
        let f = Fake::start();
        let p = pool(f.port, 1, 50);
        get_miss(&mut p.get().expect("get"));
        f.with(0, |s| s.write_all(b"END\r\n").expect("stray"));
        idle_check_fails(&p);
        let mut c = p.get().expect("a new connection");
        assert!(!c.is_reused());
        get_miss(&mut c);
        assert_eq!(f.accepted(2), 2);
    }

    #[test]
    fn the_idle_check_reports_what_it_found() {
        let f = Fake::start();
        let p = pool(f.port, 1, 50);
        get_miss(&mut p.get().expect("get"));
        assert!(p.lock().idle[0].0.idle_check().is_ok(), "idle and in step");
        f.with(0, |s| s.write_all(b"STORED\r\n").expect("stray"));
        wait_for(|| {
            let mut st = p.lock();
            match st.idle[0].0.idle_check() {
                Ok(()) => false,
                Err(Error::Protocol { detail, .. }) => {
                    assert!(detail.contains("STORED"), "{detail}");
                    true
                }
                Err(e) => panic!("{e:?}"),
            }
        });
    }

    #[test]
    fn a_waiting_checkout_gets_the_connection_given_back() {
        let f = Fake::start();
        let p = Arc::new(pool(f.port, 1, 60_000));
        let held = p.get().expect("get");
        std::thread::scope(|s| {
            let waiter = s.spawn(|| p.get().map(|c| c.is_reused()));
            wait_for(|| p.lock().waiting == 1);
            drop(held);
            assert!(waiter.join().expect("join").expect("got it"));
        });
        assert_eq!(f.accepted(1), 1);
    }

    #[test]
    fn invalidate_closes_idle_ones_and_keeps_checked_out_ones_from_coming_back() {
        let f = Fake::start();
        let p = pool(f.port, 2, 50);
        let a = p.get().expect("a");
        get_miss(&mut p.get().expect("b"));
        assert_eq!(p.state(), PoolState { idle: 1, busy: 1 });
        p.invalidate();
        assert_eq!(p.state(), PoolState { idle: 0, busy: 1 });
        drop(a);
        assert_eq!(p.state(), PoolState { idle: 0, busy: 0 });
    }

    #[test]
    fn min_idle_is_filled_by_the_first_connect() {
        let f = Fake::start();
        let p = Pool::new(
            "127.0.0.1",
            f.port,
            "fake",
            ConnOptions::default(),
            PoolSettings {
                size: 4,
                min_idle: 3,
                checkout_timeout: Duration::from_millis(50),
                ping: true,
            },
        );
        let c = p.get().expect("get");
        assert_eq!(p.state(), PoolState { idle: 2, busy: 1 });
        drop(c);
        // ping on checkout: a version round trip on the reused one
        let mut c = p.get().expect("get");
        assert!(c.is_reused());
        get_miss(&mut c);
        assert_eq!(f.accepted(3), 3);
    }

    #[test]
    fn get_new_never_hands_out_an_idle_connection() {
        let f = Fake::start();
        let p = pool(f.port, 1, 50);
        get_miss(&mut p.get().expect("get"));
        let mut c = p.get_new().expect("new");
        assert!(!c.is_reused());
        assert_eq!(p.state(), PoolState { idle: 0, busy: 1 });
        get_miss(&mut c);
        drop(c);
        assert_eq!(f.accepted(2), 2);
    }

    /// Resolves every name to the fake server, and invalidates `pool` during the second
    /// look-up: while `top_up` connects, as a server marked down meanwhile would.
    #[derive(Debug, Default)]
    struct DownDuringTopUp {
        port: u16,
        calls: std::sync::atomic::AtomicUsize,
        pool: Mutex<std::sync::Weak<Pool>>,
        invalidated: AtomicBool,
    }

    impl crate::settings::Resolve for DownDuringTopUp {
        fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<std::net::SocketAddr>> {
            if self.calls.fetch_add(1, Ordering::SeqCst) == 1
                && let Some(p) = self.pool.lock().unwrap().upgrade()
            {
                p.invalidate_now();
                self.invalidated.store(true, Ordering::SeqCst);
            }
            Ok(vec![std::net::SocketAddr::from((
                [127, 0, 0, 1],
                self.port,
            ))])
        }
    }

    #[test]
    fn a_connection_made_across_an_invalidation_is_not_kept_idle() {
        let f = Fake::start();
        // a look-up that starts before the last one left the shared map reuses its answer
        // without asking the resolver: then no invalidation happened, and the pool is rebuilt
        for _ in 0..20 {
            let r = Arc::new(DownDuringTopUp {
                port: f.port,
                ..DownDuringTopUp::default()
            });
            let opts = ConnOptions {
                resolver: Some(r.clone()),
                ..ConnOptions::default()
            };
            let p = Arc::new(Pool::new(
                "top-up.pool.test",
                f.port,
                "top-up.pool.test",
                opts,
                PoolSettings {
                    size: 4,
                    min_idle: 2,
                    checkout_timeout: Duration::from_millis(50),
                    ping: false,
                },
            ));
            *r.pool.lock().unwrap() = Arc::downgrade(&p);
            let c = p.get().expect("get");
            if !r.invalidated.load(Ordering::SeqCst) {
                continue;
            }
            // the top-up's connection belongs to the generation before the invalidation: it
            // is closed, not kept idle (where it would count toward min_idle and hold a
            // socket to a server that went down)
            assert_eq!(p.state(), PoolState { idle: 0, busy: 1 });
            drop(c);
            assert_eq!(p.state(), PoolState { idle: 0, busy: 0 });
            return;
        }
        panic!("the resolver was never asked during the top-up");
    }
}
