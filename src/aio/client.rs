//! The async client: the blocking [`Client`](crate::Client)'s routing, failure policy and
//! commands over tokio, one bb8 pool per server.

use super::conn::{AsyncConn, ConnectFailure, ConnectFailures, Manager, Sink};
use crate::KeyHash;
use crate::client::{
    DeleteOutcome, Item, Stats, StoreOutcome, TouchOutcome, live_routing, not_asked,
};
use crate::conn::LineBudget;
use crate::error::{Error, Result};
use crate::health::{Availability, FailurePolicy, Health, Transition};
use crate::proto::{self, Reply, Request, StoreCommand};
use crate::rejoin::{Cleanup, RejoinLog};
use crate::ring::{Flavor, HashTag, Ring};
use crate::servers::Server;
use arc_swap::ArcSwap;
use futures_util::future::{Either, join_all, select};
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Keys per `get` command in a multi-get (as the blocking client).
const GET_BATCH: usize = 100;
/// Storage or delete commands written before their replies are read (as the blocking client).
const WRITE_BATCH: usize = 100;

/// Builds an async [`Client`]: the blocking [`Builder`](crate::Builder)'s settings, with the
/// same names and defaults (it wraps one). `build` must run inside a tokio runtime.
///
/// ```no_run
/// # async fn demo() -> memshard::Result<()> {
/// use memshard::aio::Client;
/// use std::time::Duration;
/// let client = Client::builder()
///     .server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?
///     .pool_size(4)
///     .read_timeout(Duration::from_millis(250))
///     .build()?;
/// client.set("greeting", "hello", 0, 0).await?;
/// assert_eq!(client.get("greeting").await?.unwrap().value, b"hello");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder(crate::Builder);

macro_rules! forward {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(self, $arg: $ty) -> Self {
                Builder(self.0.$name($arg))
            }
        )*
    };
}

impl Builder {
    /// Add servers. Default: none (building fails without any).
    pub fn servers(self, servers: impl IntoIterator<Item = Server>) -> Self {
        Builder(self.0.servers(servers))
    }

    /// Add servers from a server list in any format
    /// [`parse_server_list`](crate::parse_server_list) reads.
    pub fn server_list(self, text: &str) -> Result<Self> {
        Ok(Builder(self.0.server_list(text)?))
    }

    /// Prefix sent in front of every key (not hashed unless
    /// [`Builder::hash_with_prefix`]). Default: none.
    pub fn prefix(self, prefix: impl AsRef<[u8]>) -> Self {
        Builder(self.0.prefix(prefix))
    }

    forward! {
        /// Placement flavour. Default: [`Flavor::Libmemcached`].
        flavor(flavor: Flavor);
        /// Key hash. Default: the flavour's.
        hash(hash: KeyHash);
        /// Hash tag (twemproxy semantics). Default: none.
        hash_tag(tag: HashTag);
        /// Connections per server at most (bb8 `max_size`), from 1 to
        /// [`MAX_POOL_SIZE`](crate::MAX_POOL_SIZE). Default: 8.
        pool_size(n: u32);
        /// Idle connections each pool keeps open (bb8 `min_idle`), at most `pool_size`.
        /// Default: 0.
        min_idle(n: u32);
        /// Longest wait for a connection from a pool, including connecting (bb8
        /// `connection_timeout`), above 0 and at most [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). A
        /// failed connect ends the wait at once with its error. Default: 1 s.
        checkout_timeout(d: Duration);
        /// Send `version` on every checkout, after the idle check every checkout makes.
        /// Default: off.
        ping_on_checkout(on: bool);
        /// Connect timeout, above 0 and at most [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). Default:
        /// 500 ms.
        connect_timeout(d: Duration);
        /// Longest wait for one reply, above 0 and at most
        /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). Default: 1 s.
        read_timeout(d: Duration);
        /// Longest wait to write one request, above 0 and at most
        /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). Default: 1 s.
        write_timeout(d: Duration);
        /// Largest value sent or accepted. Default: 1 MiB.
        max_value_size(bytes: usize);
        /// Hash `prefix + key` for placement. Default: off.
        hash_with_prefix(on: bool);
        /// Failure limit, retry timeout (at most [`MAX_TIMEOUT`](crate::MAX_TIMEOUT)),
        /// auto-eject. Default: [`FailurePolicy::default`].
        failure_policy(policy: FailurePolicy);
        /// With auto-eject, the keys changed elsewhere while a server is out that are
        /// remembered for it, deleted on it before it takes reads again; past the bound it is
        /// flushed instead ([`crate::rejoin`]). Default:
        /// [`DEFAULT_REJOIN_LIMIT`](crate::rejoin::DEFAULT_REJOIN_LIMIT) (100,000 per server).
        rejoin_limit(keys: usize);
    }

    /// Build the ring and one bb8 pool per server. Must be called inside a tokio runtime (the
    /// pools run their upkeep as tasks). No connection is opened unless `min_idle` asks.
    /// Settings that cannot work fail here with [`Error::Setting`], as the blocking builder's.
    pub fn build(self) -> Result<Client> {
        let b = self.0;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::Config(
                "the async client must be built inside a tokio runtime".into(),
            ));
        }
        b.validate()?;
        let ring = Arc::new(Ring::with_point_hash(
            b.servers,
            b.flavor,
            b.hash,
            b.point_hash,
            b.tag,
        )?);
        let inner = Arc::new(Inner {
            view: ArcSwap::from_pointee(AsyncView::new(ring.clone(), Vec::new(), false)),
            rebuild: Mutex::new(()),
            policy: b.policy,
            epoch: Instant::now(),
            runtime: tokio::runtime::Handle::current(),
            pool_cfg: PoolCfg {
                size: b.pool_size,
                min_idle: b.min_idle,
                checkout: b.checkout_timeout,
                ping: b.ping_on_checkout,
            },
            conn_opts: b.conn,
            prefix: b.prefix,
            hash_with_prefix: b.hash_with_prefix,
            rejoin_limit: b.rejoin_limit,
        });
        let members = ring.servers().iter().map(|s| inner.new_member(s)).collect();
        inner
            .view
            .store(Arc::new(AsyncView::new(ring, members, false)));
        Ok(Client { inner })
    }
}

/// Pool settings, kept to make pools for servers added later.
#[derive(Clone, Copy, Debug)]
struct PoolCfg {
    size: u32,
    min_idle: Option<u32>,
    checkout: Duration,
    ping: bool,
}

/// One configured server: its bb8 pool, its health and the connect failures its pool saw. A
/// server that stays in the list across [`Client::set_servers`] keeps its member (and so its
/// pool and health); a removed one is dropped, pool and all, when its last request ends.
struct Member {
    server: Server,
    pool: bb8::Pool<Manager>,
    health: Health,
    probing: AtomicBool,
    /// The pool's last connect failure, watched by waiting checkouts (fail fast).
    failures: ConnectFailures,
    /// The newest connect failure already counted for health: each counts once, however
    /// many checkouts it failed.
    counted: AtomicU64,
    /// The keys changed elsewhere while it is out (auto-eject), cleaned before it rejoins.
    rejoin: RejoinLog,
}

/// What requests route with, replaced as a whole (by `set_servers` and by auto-eject): a
/// request loads it once and finishes on it, whatever happens meanwhile.
struct AsyncView {
    /// The ring over every configured server; `members` is parallel to its servers.
    full: Arc<Ring>,
    members: Vec<Arc<Member>>,
    /// `full`, or with auto-eject the ring over the live servers.
    routing: Arc<Ring>,
    /// `routing`'s server index → index into `members`.
    to_member: Vec<usize>,
}

impl AsyncView {
    /// The view over `members` (parallel to `full`'s servers, or empty while building); with
    /// `eject`, routing over the members that are not down (the blocking client's
    /// [`live_routing`]).
    fn new(full: Arc<Ring>, members: Vec<Arc<Member>>, eject: bool) -> AsyncView {
        let (routing, to_member) = live_routing(&full, |i| {
            eject && members.get(i).is_some_and(|m| m.health.is_down())
        });
        AsyncView {
            full,
            members,
            routing,
            to_member,
        }
    }

    /// The index of the member owning `hashed` (the key as hashed), or `None` for an empty
    /// ring.
    fn owner_index(&self, hashed: &[u8]) -> Option<usize> {
        self.routing.route(hashed).map(|i| self.to_member[i])
    }

    /// A write or delete of `wire` (hashed as `hashed`) goes to member `owner`: if a server
    /// is ejected and the key's owner on the full ring is another member, that one records it
    /// ([`RejoinLog`]), to delete it when it returns (the blocking client's rule).
    fn record_redirected(&self, hashed: &[u8], owner: usize, wire: &[u8]) {
        if self.to_member.len() == self.members.len() {
            return; // nobody ejected
        }
        if let Some(m) = self
            .full
            .route(hashed)
            .filter(|&i| i != owner)
            .and_then(|i| self.members.get(i))
        {
            m.rejoin.record(wire);
        }
    }
}

struct Inner {
    /// Ring, members and routing in force.
    view: ArcSwap<AsyncView>,
    /// One rebuild of the view at a time.
    rebuild: Mutex<()>,
    policy: FailurePolicy,
    epoch: Instant,
    /// The runtime the client was built in: pools for servers added later are made in it.
    runtime: tokio::runtime::Handle,
    pool_cfg: PoolCfg,
    conn_opts: crate::conn::ConnOptions,
    prefix: Vec<u8>,
    hash_with_prefix: bool,
    rejoin_limit: usize,
}

impl Inner {
    /// A member for `s` with a new pool (opens no connection unless `min_idle` asks).
    fn new_member(&self, s: &Server) -> Arc<Member> {
        // bb8 runs its upkeep as tasks of the current runtime
        let _rt = self.runtime.enter();
        let failures: ConnectFailures = Arc::new(tokio::sync::watch::Sender::new(None));
        let m = Manager::new(
            &s.host,
            s.port,
            &s.addr,
            self.conn_opts.clone(),
            self.pool_cfg.ping,
        );
        let pool = bb8::Pool::builder()
            .max_size(self.pool_cfg.size)
            .min_idle(self.pool_cfg.min_idle)
            .connection_timeout(self.pool_cfg.checkout)
            // the checkout checks each connection itself (idle check, optional ping), so that
            // a stale connection is told apart from a failing server
            .test_on_check_out(false)
            // one connect attempt per checkout; the failure policy decides about retrying
            .retry_connection(false)
            .error_sink(Box::new(Sink(failures.clone())))
            .build_unchecked(m);
        Arc::new(Member {
            server: s.clone(),
            pool,
            health: Health::default(),
            probing: AtomicBool::new(false),
            failures,
            counted: AtomicU64::new(0),
            rejoin: RejoinLog::new(self.rejoin_limit),
        })
    }

    /// Count the outcome of talking to `m` (the blocking client's rules).
    fn observe(self: &Arc<Self>, m: &Arc<Member>, err: Option<&Error>) {
        let t = match err {
            None | Some(Error::Server { .. }) => m.health.success(),
            Some(e) if e.is_server_failure() => {
                m.health.failure(&self.policy, self.epoch, Instant::now())
            }
            Some(_) => Transition::None,
        };
        match t {
            Transition::WentDown => {
                if self.policy.auto_eject {
                    // before the routing changes: every write routed away is recorded
                    m.rejoin.went_out();
                }
                self.rebuild_routing();
                self.spawn_prober(m);
            }
            Transition::CameBack if m.rejoin.is_out() => {
                // a request that started before the ejection answered: the server may not
                // take reads before the prober has cleaned its stale keys
                m.health.hold_down(&self.policy, self.epoch, Instant::now());
                self.spawn_prober(m);
            }
            Transition::CameBack => self.rebuild_routing(),
            Transition::None => {}
        }
    }

    /// With auto-eject, swap in the view routing over the live servers (`live_routing`, shared
    /// with the blocking client: the ring rebuilt by the flavour over the live servers).
    fn rebuild_routing(&self) {
        if !self.policy.auto_eject {
            return;
        }
        let _one_at_a_time = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.view.load_full();
        self.view.store(Arc::new(AsyncView::new(
            cur.full.clone(),
            cur.members.clone(),
            true,
        )));
    }

    /// Probe a down server from a tokio task each time its retry timeout passes, until it
    /// answers `version` (or leaves the server list).
    fn spawn_prober(self: &Arc<Self>, m: &Arc<Member>) {
        if m.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(prober(Arc::downgrade(self), m.clone()));
            }
            Err(_) => m.probing.store(false, Ordering::Release),
        }
    }
}

async fn prober(weak: Weak<Inner>, m: Arc<Member>) {
    loop {
        // Hold the client only while working, so dropping it ends this task; a server removed
        // by set_servers is not probed any longer.
        let Some(inner) = weak.upgrade() else { return };
        if !inner.view.load().members.iter().any(|x| Arc::ptr_eq(x, &m)) {
            m.probing.store(false, Ordering::Release);
            return;
        }
        match m.health.availability(inner.epoch, Instant::now()) {
            Availability::Up => {
                m.probing.store(false, Ordering::Release);
                return;
            }
            Availability::Down(wait) => {
                drop(inner);
                tokio::time::sleep(wait.min(Duration::from_millis(100))).await;
            }
            Availability::Probe => {
                let s = &m.server;
                let answered = async {
                    let mut c =
                        AsyncConn::connect(&s.host, s.port, &s.addr, &inner.conn_opts).await?;
                    c.send_requests([Request::Version]).await?;
                    match c.read_reply().await? {
                        Reply::Version(_) => {}
                        other => return Err(c.unexpected(&other, "version")),
                    }
                    // before it takes reads: delete what changed elsewhere meanwhile
                    clean_before_rejoin(&mut c, &m.rejoin).await?;
                    Ok(c)
                }
                .await;
                match answered {
                    Ok(mut c) => {
                        if m.health.success() == Transition::CameBack {
                            inner.rebuild_routing();
                        }
                        // writes routed on the view from before the rejoin
                        let left = m.rejoin.rejoined();
                        if run_cleanup(&mut c, &left).await.is_err() {
                            m.rejoin.back_out(left);
                            m.health
                                .hold_down(&inner.policy, inner.epoch, Instant::now());
                            inner.rebuild_routing();
                            continue;
                        }
                        m.probing.store(false, Ordering::Release);
                        return;
                    }
                    Err(_) => {
                        m.health.failure(&inner.policy, inner.epoch, Instant::now());
                    }
                }
            }
        }
    }
}

/// Rounds of [`clean_before_rejoin`] (as the blocking client's).
const CLEAN_ROUNDS: usize = 4;

/// The cleanup a returning server needs before it takes reads ([`crate::rejoin`]), on the
/// probe connection, until nothing is left (at most [`CLEAN_ROUNDS`] rounds; what is
/// recorded after the last is cleaned once the server has rejoined).
async fn clean_before_rejoin(c: &mut AsyncConn, log: &RejoinLog) -> Result<()> {
    for _ in 0..CLEAN_ROUNDS {
        let todo = log.pending();
        if todo == Cleanup::Nothing {
            break;
        }
        run_cleanup(c, &todo).await?;
        log.cleaned(&todo);
    }
    Ok(())
}

/// Checked, pipelined deletes of the cleanup's keys, or one `flush_all`.
async fn run_cleanup(c: &mut AsyncConn, todo: &Cleanup) -> Result<()> {
    match todo {
        Cleanup::Nothing => Ok(()),
        Cleanup::Flush => {
            c.send_requests([Request::FlushAll {
                delay: None,
                noreply: false,
            }])
            .await?;
            match c.read_reply().await? {
                Reply::Ok => Ok(()),
                other => Err(reply_error(other, c, "flush_all")),
            }
        }
        Cleanup::Delete(keys) => {
            for batch in keys.chunks(WRITE_BATCH) {
                c.send_requests(batch.iter().map(|k| Request::Delete {
                    key: k,
                    noreply: false,
                }))
                .await?;
                for _ in batch {
                    match c.read_reply().await? {
                        Reply::Deleted | Reply::NotFound => {}
                        other => return Err(reply_error(other, c, "delete")),
                    }
                }
            }
            Ok(())
        }
    }
}

/// An async pooled memcached client over a ketama ring. Cheap to clone (an `Arc`),
/// `Send + Sync`; every future it returns is `Send` and cancel-safe: dropping one at any
/// point discards the connection it was using unless its exchange had completed.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let view = self.inner.view.load();
        f.debug_struct("aio::Client")
            .field("servers", &view.members.len())
            .field("flavor", &view.full.flavor())
            .finish()
    }
}

type Pooled<'a> = bb8::PooledConnection<'a, Manager>;

/// A connection leased for one exchange: from the pool, or made for the one retry after a
/// stale connection (and offered to the pool when the exchange is over).
enum Lease<'m> {
    Pooled(Pooled<'m>),
    Fresh(Option<AsyncConn>, &'m bb8::Pool<Manager>),
}

impl std::ops::Deref for Lease<'_> {
    type Target = AsyncConn;
    fn deref(&self) -> &AsyncConn {
        match self {
            Lease::Pooled(c) => c,
            Lease::Fresh(c, _) => c.as_ref().expect("a fresh lease holds its connection"),
        }
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut AsyncConn {
        match self {
            Lease::Pooled(c) => c,
            Lease::Fresh(c, _) => c.as_mut().expect("a fresh lease holds its connection"),
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Lease::Fresh(c, pool) = self
            && let Some(c) = c.take()
            && !c.is_broken()
            && !c.is_in_flight()
        {
            // kept if the pool has room (bb8 checks `has_broken` again); closed otherwise
            let _ = pool.add(c);
        }
    }
}

/// Whether a request may be sent again after its connection turned out to be stale.
///
/// Reads, `set`, `add`, `replace`, `delete`, `touch` and the server commands are sent again,
/// once, on a new connection: a stale connection is one the server had closed before the
/// request reached it, so the first attempt did nothing. (A server that applied a request and
/// then closed the connection without replying would make a repeated `add` answer
/// `NotStored`, a repeated `delete` `NotFound`; memcached never does that.) `incr`, `decr`,
/// `cas`, `append` and `prepend` are never sent twice: their bytes may have reached the server,
/// and a second application would change the value again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resend {
    Safe,
    Never,
}

/// What to do after an exchange.
enum Settled<T> {
    /// Return this.
    Done(Result<T>),
    /// The connection was stale: send the request again on a new connection.
    Again,
    /// The connection was stale and the request may not be sent again: return this error
    /// after checking the server on a new connection.
    Verify(Error),
}

/// An error reply becomes `Error::Server`; anything else that does not fit is a protocol error.
fn reply_error(reply: Reply, conn: &mut AsyncConn, what: &str) -> Error {
    match reply {
        Reply::Error => Error::Server {
            server: conn.server().to_string(),
            message: "ERROR".into(),
        },
        Reply::ClientError(m) => Error::Server {
            server: conn.server().to_string(),
            message: format!("CLIENT_ERROR {m}"),
        },
        Reply::ServerError(m) => Error::Server {
            server: conn.server().to_string(),
            message: format!("SERVER_ERROR {m}"),
        },
        other => conn.unexpected(&other, what),
    }
}

/// A `version` round trip (ping-on-checkout).
async fn ping(c: &mut AsyncConn) -> Result<()> {
    c.send_requests([Request::Version]).await?;
    match c.read_reply().await? {
        Reply::Version(_) => {
            c.complete();
            Ok(())
        }
        other => Err(c.unexpected(&other, "version")),
    }
}

fn check_store(reply: Reply, conn: &mut AsyncConn) -> Result<StoreOutcome> {
    match reply {
        Reply::Stored => Ok(StoreOutcome::Stored),
        Reply::NotStored => Ok(StoreOutcome::NotStored),
        Reply::Exists => Ok(StoreOutcome::Exists),
        Reply::NotFound => Ok(StoreOutcome::NotFound),
        other => Err(reply_error(other, conn, "a storage command")),
    }
}

fn check_delete(reply: Reply, conn: &mut AsyncConn) -> Result<DeleteOutcome> {
    match reply {
        Reply::Deleted => Ok(DeleteOutcome::Deleted),
        Reply::NotFound => Ok(DeleteOutcome::NotFound),
        other => Err(reply_error(other, conn, "delete")),
    }
}

fn check_arith(reply: Reply, conn: &mut AsyncConn) -> Result<Option<u64>> {
    match reply {
        Reply::Number(n) => Ok(Some(n)),
        Reply::NotFound => Ok(None),
        other => Err(reply_error(other, conn, "incr/decr")),
    }
}

fn check_touch(reply: Reply, conn: &mut AsyncConn) -> Result<TouchOutcome> {
    match reply {
        Reply::Touched => Ok(TouchOutcome::Touched),
        Reply::NotFound => Ok(TouchOutcome::NotFound),
        other => Err(reply_error(other, conn, "touch")),
    }
}

/// Read a retrieval reply for `keys` (in request order); a value for a key that was not asked
/// for is a protocol error (as the blocking client).
async fn read_hits(
    conn: &mut AsyncConn,
    keys: &[&[u8]],
    mut hit: impl FnMut(usize, Item) + Send,
) -> Result<()> {
    let mut next = 0;
    let failed = conn
        .read_values(|k, flags, data, cas| {
            while next < keys.len() && keys[next] != k {
                next += 1;
            }
            if next == keys.len() {
                return Err(not_asked(k, keys));
            }
            hit(
                next,
                Item {
                    value: data.to_vec(),
                    flags,
                    cas,
                },
            );
            next += 1;
            Ok(())
        })
        .await?;
    match failed {
        None => Ok(()),
        Some(reply) => Err(reply_error(reply, conn, "get")),
    }
}

/// Per-key results of one server's share of a multi-key call.
type Results<T> = Vec<(usize, Result<T>)>;

/// One server's share of a multi-get: server, input indexes, wire keys.
type PerServer<'k> = (Arc<Member>, Vec<usize>, Vec<&'k [u8]>);

/// Input indexes grouped by the server that owns them: `(server, indexes)`.
type Groups = Vec<(Arc<Member>, Vec<usize>)>;

impl Client {
    /// A builder with every default.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The ring over every configured server (the blocking client's ring for the same list).
    pub fn ring(&self) -> Arc<Ring> {
        self.inner.view.load().full.clone()
    }

    /// The ring in force now: with auto-eject and a server down, the ring over the live servers.
    pub fn current_ring(&self) -> Ring {
        (*self.inner.view.load().routing).clone()
    }

    /// Servers currently marked down.
    pub fn down_servers(&self) -> Vec<Server> {
        self.inner
            .view
            .load()
            .members
            .iter()
            .filter(|m| m.health.is_down())
            .map(|m| m.server.clone())
            .collect()
    }

    /// Replace the server list while the client runs (as the blocking
    /// [`Client::set_servers`](crate::Client::set_servers)). The new ring is swapped in
    /// atomically; requests in flight finish on the ring they started with; servers that stay
    /// (same host and port) keep their pools (and health), new servers get pools, removed
    /// servers' pools are dropped once their last request returns. Flavour, key hash and hash
    /// tag stay as built. Callable from any thread: new pools run in the client's runtime.
    /// [`Client::plan_servers`] tells beforehand what the change costs.
    pub fn set_servers(&self, servers: Vec<Server>) -> Result<()> {
        let inner = &self.inner;
        let _one_at_a_time = inner.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let cur = inner.view.load_full();
        let ring = cur.full.with_servers(servers)?;
        let members = crate::client::keep_or_make(
            &ring,
            &cur.members,
            |m| &m.server,
            |s| inner.new_member(s),
        );
        inner.view.store(Arc::new(AsyncView::new(
            Arc::new(ring),
            members,
            inner.policy.auto_eject,
        )));
        Ok(())
    }

    /// What [`Client::set_servers`] with `servers` would cost, on `keys` (see
    /// [`crate::plan::plan`]): the share of keys that move, per pair of servers, and the
    /// imbalance before and after. CPU-bound on large key sets: call it from
    /// `spawn_blocking` there.
    pub fn plan_servers(
        &self,
        servers: &[Server],
        keys: &crate::plan::Keys,
    ) -> Result<crate::plan::Plan> {
        Ok(crate::plan::plan_change(&self.ring(), servers, keys)?)
    }

    fn wire_key<'k>(&self, key: &'k [u8]) -> Result<Cow<'k, [u8]>> {
        let prefix = &self.inner.prefix;
        let wire: Cow<'k, [u8]> = if prefix.is_empty() {
            Cow::Borrowed(key)
        } else {
            let mut v = Vec::with_capacity(prefix.len() + key.len());
            v.extend_from_slice(prefix);
            v.extend_from_slice(key);
            Cow::Owned(v)
        };
        proto::validate_key(&wire).map_err(|e| Error::invalid_key(key, e))?;
        Ok(wire)
    }

    /// Validate, prefix and route one key (on the view in force): `(wire key, server)`.
    fn route<'k>(&self, key: &'k [u8]) -> Result<(Cow<'k, [u8]>, Arc<Member>)> {
        self.route_for(key, false)
    }

    /// [`Client::route`] for a write or delete: recorded for an ejected owner
    /// ([`AsyncView::record_redirected`]).
    fn route_write<'k>(&self, key: &'k [u8]) -> Result<(Cow<'k, [u8]>, Arc<Member>)> {
        self.route_for(key, true)
    }

    fn route_for<'k>(&self, key: &'k [u8], write: bool) -> Result<(Cow<'k, [u8]>, Arc<Member>)> {
        let wire = self.wire_key(key)?;
        let hashed: &[u8] = if self.inner.hash_with_prefix {
            &wire
        } else {
            key
        };
        let view = self.inner.view.load();
        let i = view
            .owner_index(hashed)
            .ok_or(Error::Config("the ring has no points".into()))?;
        let server = view
            .members
            .get(i)
            .cloned()
            .ok_or(Error::Config("the ring has no points".into()))?;
        if write {
            view.record_redirected(hashed, i, &wire);
        }
        Ok((wire, server))
    }

    fn check_value(&self, value: &[u8]) -> Result<()> {
        let limit = self.inner.conn_opts.max_value_size;
        if value.len() > limit {
            return Err(Error::ValueTooLarge {
                len: value.len(),
                limit,
            });
        }
        Ok(())
    }

    /// `Err(ServerDown)` while `m` is marked down.
    fn available(&self, m: &Member) -> Result<()> {
        match m.health.availability(self.inner.epoch, Instant::now()) {
            Availability::Up => Ok(()),
            Availability::Down(wait) => Err(Error::ServerDown {
                server: m.server.addr.clone(),
                retry_in_ms: wait.as_millis(),
            }),
            Availability::Probe => Err(Error::ServerDown {
                server: m.server.addr.clone(),
                retry_in_ms: 0,
            }),
        }
    }

    /// A connection to `m` for one exchange, unless it is marked down; `fresh`: a new one
    /// (the retry after a stale connection). Every pooled connection passes
    /// [`AsyncConn::idle_check`] first: one that the server closed while it sat idle, or that
    /// holds bytes nobody asked for, is dropped and the next one taken, without counting
    /// against the server (a new connection failing it does count). A failed checkout counts
    /// once.
    async fn lease<'m>(&self, m: &'m Arc<Member>, fresh: bool) -> Result<Lease<'m>> {
        self.available(m)?;
        if fresh {
            return self.fresh(m).await;
        }
        // Each pass drops one stale pooled connection; a pool holds at most `size`.
        for _ in 0..=self.inner.pool_cfg.size {
            let mut c = self.pooled(m).await?;
            if let Err(e) = c.idle_check() {
                if c.is_reused() {
                    continue; // broken now: bb8 closes it
                }
                self.inner.observe(m, Some(&e));
                return Err(e);
            }
            c.checked_out();
            if self.inner.pool_cfg.ping
                && let Err(e) = ping(&mut c).await
            {
                if c.failed_stale() {
                    continue;
                }
                self.inner.observe(m, Some(&e));
                return Err(e);
            }
            return Ok(Lease::Pooled(c));
        }
        self.fresh(m).await
    }

    /// A new connection to `m`, outside the pool's count until it is offered back.
    async fn fresh<'m>(&self, m: &'m Arc<Member>) -> Result<Lease<'m>> {
        match m.pool.dedicated_connection().await {
            Ok(c) => Ok(Lease::Fresh(Some(c), &m.pool)),
            Err(e) => {
                self.inner.observe(m, Some(&e));
                Err(e)
            }
        }
    }

    /// A connection from `m`'s pool. A connect that fails while this checkout waits ends the
    /// wait at once with the connect error (bb8 alone would wait out the checkout timeout),
    /// counted once for the server however many checkouts it ends.
    async fn pooled<'m>(&self, m: &'m Arc<Member>) -> Result<Pooled<'m>> {
        let mut failures = m.failures.subscribe();
        let failed = async move {
            match failures.changed().await {
                Ok(()) => failures.borrow_and_update().clone(),
                // the sender lives as long as the member: never
                Err(_) => std::future::pending().await,
            }
        };
        let got = match select(std::pin::pin!(m.pool.get()), std::pin::pin!(failed)).await {
            Either::Left((got, _)) => got,
            Either::Right((Some(f), _)) => return Err(self.connect_failed(m, f)),
            Either::Right((None, _)) => Err(bb8::RunError::TimedOut),
        };
        let err = match got {
            Ok(c) => return Ok(c),
            Err(bb8::RunError::User(e)) => e,
            Err(bb8::RunError::TimedOut) => {
                let state = m.pool.state();
                // every connection the pool may hold exists and is in use: the pool is too
                // small for the load, which says nothing about the server
                let exhausted =
                    state.idle_connections == 0 && state.connections >= self.inner.pool_cfg.size;
                let last = m
                    .failures
                    .borrow()
                    .as_ref()
                    .map(|f| format!("{} ({} ms ago)", f.error, f.at.elapsed().as_millis()));
                Error::Pool {
                    server: m.server.addr.clone(),
                    message: match (exhausted, last) {
                        (true, _) => format!(
                            "timed out waiting for a connection: all {} were in use",
                            state.connections
                        ),
                        (false, Some(e)) => format!(
                            "timed out waiting for a connection; the last connect error was: {e}"
                        ),
                        (false, None) => "timed out waiting for a connection".into(),
                    },
                    exhausted,
                }
            }
        };
        self.inner.observe(m, Some(&err));
        Err(err)
    }

    /// The error for a checkout ended by connect failure `f`; counted for the server if no
    /// other checkout counted it.
    fn connect_failed(&self, m: &Arc<Member>, f: ConnectFailure) -> Error {
        if m.counted.fetch_max(f.seq, Ordering::AcqRel) < f.seq {
            self.inner.observe(m, Some(&f.error));
        }
        f.error
    }

    /// After a stale connection failed a request that may not be sent again: whether the
    /// server answers `version` on a new connection decides what counts for its health.
    async fn verify(&self, m: &Arc<Member>) {
        let r = async {
            let mut c = m.pool.dedicated_connection().await?;
            c.send_requests([Request::Version]).await?;
            match c.read_reply().await? {
                Reply::Version(_) => {
                    c.complete();
                    let _ = m.pool.add(c);
                    Ok(())
                }
                other => Err(c.unexpected(&other, "version")),
            }
        }
        .await;
        self.inner.observe(m, r.as_ref().err());
    }

    /// End an exchange: a result that read every reply (success, or an error reply from the
    /// server) leaves the connection reusable; anything else has already marked it broken. A
    /// failure of a stale connection does not count for the server's health: the request is
    /// sent again on a new connection if `resend` allows, else the server is checked. Any
    /// other outcome counts.
    fn settle<T>(
        &self,
        server: &Arc<Member>,
        conn: &mut AsyncConn,
        r: Result<T>,
        resend: Resend,
    ) -> Settled<T> {
        if r.is_ok() || matches!(r, Err(Error::Server { .. })) {
            conn.complete();
        }
        match r {
            Err(e) if conn.failed_stale() => match resend {
                Resend::Safe => Settled::Again,
                Resend::Never => Settled::Verify(match e {
                    Error::Io {
                        server,
                        kind,
                        message,
                    } => Error::Io {
                        server,
                        kind,
                        message: format!(
                            "{message}; the server had closed this pooled connection, and the request was not sent again because it may have been applied (incr, decr, cas, append and prepend never are)"
                        ),
                    },
                    e => e,
                }),
            },
            r => {
                self.inner.observe(server, r.as_ref().err());
                Settled::Done(r)
            }
        }
    }

    /// One request whose reply is one line, parsed by `parse`; sent again once on a new
    /// connection after a stale one if `resend` allows.
    async fn single<T>(
        &self,
        server: &Arc<Member>,
        req: Request<'_>,
        parse: fn(Reply, &mut AsyncConn) -> Result<T>,
        resend: Resend,
    ) -> Result<T> {
        let mut fresh = false;
        loop {
            let mut c = self.lease(server, fresh).await?;
            let r = match c.encode([req.clone()]) {
                Ok(()) => {
                    async {
                        c.flush().await?;
                        let reply = c.read_reply().await?;
                        parse(reply, &mut c)
                    }
                    .await
                }
                Err(e) => Err(e),
            };
            match self.settle(server, &mut c, r, resend) {
                Settled::Done(r) => return r,
                Settled::Again => fresh = true,
                Settled::Verify(e) => {
                    drop(c);
                    self.verify(server).await;
                    return Err(e);
                }
            }
        }
    }

    async fn retrieve(&self, key: &[u8], touch: Option<u32>, cas: bool) -> Result<Option<Item>> {
        let (wire, server) = self.route(key)?;
        let keys = [&wire[..]];
        let req = match touch {
            None => Request::Get { keys: &keys, cas },
            Some(exptime) => Request::GetAndTouch {
                exptime,
                keys: &keys,
                cas,
            },
        };
        let mut fresh = false;
        loop {
            let mut c = self.lease(&server, fresh).await?;
            let mut out = None;
            let r = match c.encode([req.clone()]) {
                Ok(()) => {
                    async {
                        c.flush().await?;
                        read_hits(&mut c, &keys, |_, item| out = Some(item)).await
                    }
                    .await
                }
                Err(e) => Err(e),
            };
            // reads are always safe to send again
            match self.settle(&server, &mut c, r, Resend::Safe) {
                Settled::Done(r) => return r.map(|()| out),
                Settled::Again | Settled::Verify(_) => fresh = true,
            }
        }
    }

    /// `get`: the value, or `None` on a miss.
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), None, false).await
    }

    /// `gets`: the value with its CAS unique.
    pub async fn gets(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), None, true).await
    }

    /// `gat`: get and set a new expiry.
    pub async fn gat(&self, key: impl AsRef<[u8]>, exptime: u32) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), Some(exptime), false).await
    }

    /// `gats`: get with CAS unique and set a new expiry.
    pub async fn gats(&self, key: impl AsRef<[u8]>, exptime: u32) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), Some(exptime), true).await
    }

    async fn store(
        &self,
        cmd: StoreCommand,
        key: &[u8],
        value: &[u8],
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        self.check_value(value)?;
        let (wire, server) = self.route_write(key)?;
        let req = Request::Store {
            cmd,
            key: &wire,
            flags,
            exptime,
            value,
            noreply: false,
        };
        let resend = match cmd {
            StoreCommand::Set | StoreCommand::Add | StoreCommand::Replace => Resend::Safe,
            _ => Resend::Never,
        };
        self.single(&server, req, check_store, resend).await
    }

    /// `set`: store unconditionally. `exptime` 0 = never expires.
    pub async fn set(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.store(StoreCommand::Set, k, v, flags, exptime).await
    }

    /// `add`: store only if absent (`NotStored` otherwise).
    pub async fn add(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.store(StoreCommand::Add, k, v, flags, exptime).await
    }

    /// `replace`: store only if present (`NotStored` otherwise).
    pub async fn replace(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.store(StoreCommand::Replace, k, v, flags, exptime)
            .await
    }

    /// `append` to an existing value (`NotStored` if absent).
    pub async fn append(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<StoreOutcome> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.store(StoreCommand::Append, k, v, 0, 0).await
    }

    /// `prepend` to an existing value (`NotStored` if absent).
    pub async fn prepend(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<StoreOutcome> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.store(StoreCommand::Prepend, k, v, 0, 0).await
    }

    /// `cas`: store only if the item's CAS unique is still `cas` (`Exists` if it changed,
    /// `NotFound` if it is gone).
    pub async fn cas(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
        cas: u64,
    ) -> Result<StoreOutcome> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.store(StoreCommand::Cas(cas), k, v, flags, exptime)
            .await
    }

    /// `delete`.
    pub async fn delete(&self, key: impl AsRef<[u8]>) -> Result<DeleteOutcome> {
        let (wire, server) = self.route_write(key.as_ref())?;
        let req = Request::Delete {
            key: &wire,
            noreply: false,
        };
        self.single(&server, req, check_delete, Resend::Safe).await
    }

    async fn arith(&self, incr: bool, key: &[u8], delta: u64) -> Result<Option<u64>> {
        let (wire, server) = self.route_write(key)?;
        let req = Request::Arith {
            incr,
            key: &wire,
            delta,
            noreply: false,
        };
        self.single(&server, req, check_arith, Resend::Never).await
    }

    /// `incr`: the new value, or `None` if the key does not exist.
    pub async fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
        self.arith(true, key.as_ref(), delta).await
    }

    /// `decr` (memcached stops at 0): the new value, or `None` if the key does not exist.
    pub async fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
        self.arith(false, key.as_ref(), delta).await
    }

    /// `touch`: set a new expiry.
    pub async fn touch(&self, key: impl AsRef<[u8]>, exptime: u32) -> Result<TouchOutcome> {
        let (wire, server) = self.route_write(key.as_ref())?;
        let req = Request::Touch {
            key: &wire,
            exptime,
            noreply: false,
        };
        self.single(&server, req, check_touch, Resend::Safe).await
    }

    /// Validate and route `keys`: invalid keys get their error in `out` at once (as do slots
    /// already filled); the rest are grouped by server as `(server, input indexes)`. Returns
    /// the wire keys too.
    #[allow(clippy::type_complexity)]
    /// `write`: the keys are written or deleted (recorded for an ejected owner,
    /// [`AsyncView::record_redirected`]).
    fn group<'k, T>(
        &self,
        keys: impl Iterator<Item = &'k [u8]>,
        out: &mut [Option<Result<T>>],
        write: bool,
    ) -> (Vec<Option<Cow<'k, [u8]>>>, Groups) {
        let keys: Vec<&'k [u8]> = keys.collect();
        let mut wires: Vec<Option<Cow<'k, [u8]>>> = Vec::with_capacity(keys.len());
        let mut valid: Vec<usize> = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if out[i].is_some() {
                wires.push(None);
                continue;
            }
            match self.wire_key(k) {
                Ok(w) => {
                    wires.push(Some(w));
                    valid.push(i);
                }
                Err(e) => {
                    out[i] = Some(Err(e));
                    wires.push(None);
                }
            }
        }
        let mut owner = vec![usize::MAX; keys.len()];
        // one view for the whole operation
        let view = self.inner.view.load_full();
        {
            let hashed: Vec<&[u8]> = valid
                .iter()
                .map(|&i| match (&wires[i], self.inner.hash_with_prefix) {
                    (Some(w), true) => &w[..],
                    _ => keys[i],
                })
                .collect();
            view.routing
                .route_each(&hashed, |j, s| owner[valid[j]] = view.to_member[s]);
            if write {
                for (j, &i) in valid.iter().enumerate() {
                    if let (Some(w), true) = (&wires[i], owner[i] != usize::MAX) {
                        view.record_redirected(hashed[j], owner[i], w);
                    }
                }
            }
        }
        let mut by_server: Vec<Vec<usize>> = vec![Vec::new(); view.members.len()];
        for &i in &valid {
            if owner[i] == usize::MAX {
                out[i] = Some(Err(Error::Config("the ring has no points".into())));
                wires[i] = None;
            } else {
                by_server[owner[i]].push(i);
            }
        }
        let groups = by_server
            .into_iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(m, v)| (view.members[m].clone(), v))
            .collect();
        (wires, groups)
    }

    /// One server's share of a multi-get: every batch written at once, then read in order.
    async fn get_on(
        &self,
        server: &Arc<Member>,
        idx: &[usize],
        wire: &[&[u8]],
    ) -> Results<Option<Item>> {
        let mut hits: Vec<Option<Item>> = vec![None; idx.len()];
        let mut failed: Option<(usize, Error)> = None;
        // A second pass only after a stale connection (which read nothing): on a new one.
        let mut fresh = false;
        loop {
            let mut c = match self.lease(server, fresh).await {
                Err(e) => {
                    failed = Some((0, e));
                    break;
                }
                Ok(c) => c,
            };
            {
                let encoded = c.encode(
                    wire.chunks(GET_BATCH)
                        .map(|keys| Request::Get { keys, cas: false }),
                );
                let r = match encoded {
                    Err(e) => Err((0, e)),
                    Ok(()) => {
                        async {
                            c.flush().await.map_err(|e| (0, e))?;
                            let chunks = wire.len().div_ceil(GET_BATCH);
                            for (ci, chunk) in wire.chunks(GET_BATCH).enumerate() {
                                let base = ci * GET_BATCH;
                                let hits = &mut hits;
                                let r =
                                    read_hits(&mut c, chunk, |j, item| hits[base + j] = Some(item))
                                        .await;
                                if let Err(e) = r {
                                    if ci + 1 < chunks {
                                        // later batches' replies are still on the way
                                        c.poison();
                                    }
                                    return Err((base, e));
                                }
                            }
                            Ok(())
                        }
                        .await
                    }
                };
                let (from, r) = match r {
                    Ok(()) => (idx.len(), Ok(())),
                    Err((from, e)) => (from, Err(e)),
                };
                match self.settle(server, &mut c, r, Resend::Safe) {
                    Settled::Done(Ok(())) => {}
                    Settled::Done(Err(e)) => failed = Some((from, e)),
                    Settled::Again | Settled::Verify(_) => {
                        fresh = true;
                        continue;
                    }
                }
                break;
            }
        }
        let failed_from = failed.as_ref().map_or(idx.len(), |(f, _)| *f);
        idx.iter()
            .zip(hits)
            .enumerate()
            .map(|(j, (&i, hit))| match &failed {
                Some((_, e)) if j >= failed_from => (i, Err(e.clone())),
                _ => (i, Ok(hit)),
            })
            .collect()
    }

    /// Get many keys: one pipelined request per server, all servers concurrently (a join of
    /// per-server futures). Results are in the order of `keys`; a failing server gives errors
    /// for its keys only.
    pub async fn get_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        let mut out: Vec<Option<Result<Option<Item>>>> = (0..keys.len()).map(|_| None).collect();
        let (wires, groups) = self.group(keys.iter().map(|k| k.as_ref()), &mut out, false);
        let per_server: Vec<PerServer<'_>> = groups
            .into_iter()
            .map(|(server, idx)| {
                let wire = idx
                    .iter()
                    .map(|&i| wires[i].as_deref().unwrap_or_default())
                    .collect();
                (server, idx, wire)
            })
            .collect();
        let results = join_all(
            per_server
                .iter()
                .map(|(server, idx, wire)| self.get_on(server, idx, wire)),
        )
        .await;
        for (i, r) in results.into_iter().flatten() {
            out[i] = Some(r);
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    /// One server's share of a pipelined multi-key write: batches of requests, each batch's
    /// replies read before the next batch is written (as the blocking client).
    async fn write_on<'w, T>(
        &self,
        server: &Arc<Member>,
        idx: &[usize],
        make: &(dyn Fn(usize, &'w [u8]) -> Request<'w> + Sync),
        wires: &'w [Option<Cow<'w, [u8]>>],
        parse: fn(Reply, &mut AsyncConn) -> Result<T>,
    ) -> Results<T> {
        let mut res: Vec<Option<Result<T>>> = idx.iter().map(|_| None).collect();
        // A second pass only after a stale connection (which read no reply): on a new one.
        // `set` and `delete` are safe to send again (see `Resend`).
        let mut fresh = false;
        let r = loop {
            let mut c = match self.lease(server, fresh).await {
                Err(e) => break Err(e),
                Ok(c) => c,
            };
            {
                let r = async {
                    for (bi, batch) in idx.chunks(WRITE_BATCH).enumerate() {
                        c.encode(
                            batch
                                .iter()
                                .map(|&i| make(i, wires[i].as_deref().unwrap_or_default())),
                        )?;
                        c.flush().await?;
                        for j in 0..batch.len() {
                            let reply = c.read_reply().await?;
                            let r = parse(reply, &mut c);
                            let broken = c.is_broken();
                            res[bi * WRITE_BATCH + j] = Some(r);
                            if broken {
                                return Err(Error::protocol(
                                    c.server(),
                                    "connection dropped after an unexpected reply",
                                ));
                            }
                        }
                    }
                    Ok(())
                }
                .await;
                match self.settle(server, &mut c, r, Resend::Safe) {
                    Settled::Done(r) => break r,
                    Settled::Again | Settled::Verify(_) => {
                        fresh = true;
                        res.iter_mut().for_each(|slot| *slot = None);
                    }
                }
            }
        };
        idx.iter()
            .zip(res)
            .map(|(&i, slot)| {
                let v = match (slot, &r) {
                    (Some(v), _) => v,
                    (None, Err(e)) => Err(e.clone()),
                    (None, Ok(())) => Err(Error::Config("no result".into())),
                };
                (i, v)
            })
            .collect()
    }

    /// Run a pipelined write on every group concurrently and collect results in input order.
    async fn write_multi<'w, T>(
        &self,
        mut out: Vec<Option<Result<T>>>,
        wires: &'w [Option<Cow<'w, [u8]>>],
        groups: Groups,
        make: &(dyn Fn(usize, &'w [u8]) -> Request<'w> + Sync),
        parse: fn(Reply, &mut AsyncConn) -> Result<T>,
    ) -> Vec<Result<T>> {
        let results = join_all(
            groups
                .iter()
                .map(|(server, idx)| self.write_on(server, idx, make, wires, parse)),
        )
        .await;
        for (i, r) in results.into_iter().flatten() {
            out[i] = Some(r);
        }
        out.into_iter()
            .map(|r| r.unwrap_or(Err(Error::Config("no result".into()))))
            .collect()
    }

    /// Set many items: pipelined per server, servers concurrently. Results in input order.
    pub async fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        &self,
        items: &[(K, V)],
        flags: u32,
        exptime: u32,
    ) -> Vec<Result<StoreOutcome>> {
        let mut out: Vec<Option<Result<StoreOutcome>>> = (0..items.len()).map(|_| None).collect();
        for (i, (_, v)) in items.iter().enumerate() {
            if let Err(e) = self.check_value(v.as_ref()) {
                out[i] = Some(Err(e));
            }
        }
        let (wires, groups) = self.group(items.iter().map(|(k, _)| k.as_ref()), &mut out, true);
        self.write_multi(
            out,
            &wires,
            groups,
            &|i, key| Request::Store {
                cmd: StoreCommand::Set,
                key,
                flags,
                exptime,
                value: items[i].1.as_ref(),
                noreply: false,
            },
            check_store,
        )
        .await
    }

    /// Delete many keys: pipelined per server, servers concurrently. Results in input order.
    pub async fn delete_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<DeleteOutcome>> {
        let mut out: Vec<Option<Result<DeleteOutcome>>> = (0..keys.len()).map(|_| None).collect();
        let (wires, groups) = self.group(keys.iter().map(|k| k.as_ref()), &mut out, true);
        self.write_multi(
            out,
            &wires,
            groups,
            &|_, key| Request::Delete {
                key,
                noreply: false,
            },
            check_delete,
        )
        .await
    }

    /// One request to every server, concurrently; `(server, result)` in server order.
    async fn on_all<T>(
        &self,
        req: Request<'_>,
        parse: fn(Reply, &mut AsyncConn) -> Result<T>,
    ) -> Vec<(Server, Result<T>)> {
        let view = self.inner.view.load_full();
        let results = join_all(
            view.members
                .iter()
                .map(|m| self.single(m, req.clone(), parse, Resend::Safe)),
        )
        .await;
        view.members
            .iter()
            .map(|m| m.server.clone())
            .zip(results)
            .collect()
    }

    /// `version` of every server.
    pub async fn version(&self) -> Vec<(Server, Result<String>)> {
        self.on_all(Request::Version, |reply, c| match reply {
            Reply::Version(v) => Ok(v),
            other => Err(reply_error(other, c, "version")),
        })
        .await
    }

    /// `flush_all [delay]` on every server.
    pub async fn flush_all(&self, delay: Option<u32>) -> Vec<(Server, Result<()>)> {
        let req = Request::FlushAll {
            delay,
            noreply: false,
        };
        self.on_all(req, |reply, c| match reply {
            Reply::Ok => Ok(()),
            other => Err(reply_error(other, c, "flush_all")),
        })
        .await
    }

    /// `verbosity level` on every server.
    pub async fn verbosity(&self, level: u32) -> Vec<(Server, Result<()>)> {
        let req = Request::Verbosity {
            level,
            noreply: false,
        };
        self.on_all(req, |reply, c| match reply {
            Reply::Ok => Ok(()),
            other => Err(reply_error(other, c, "verbosity")),
        })
        .await
    }

    async fn stats_on(&self, server: &Arc<Member>, group: Option<&str>) -> Result<Stats> {
        let mut fresh = false;
        loop {
            let mut c = self.lease(server, fresh).await?;
            let r = match c.encode([Request::Stats { group }]) {
                Err(e) => Err(e),
                Ok(()) => {
                    async {
                        c.flush().await?;
                        // the whole reply within one read timeout, at most LineBudget::STATS
                        let mut v = Vec::new();
                        c.read_lines(LineBudget::STATS, |c, reply| match reply {
                            Reply::Stat(k, val) => {
                                v.push((k, val));
                                Ok(None)
                            }
                            Reply::End => Ok(Some(())),
                            other => Err(reply_error(other, c, "stats")),
                        })
                        .await?;
                        Ok(v)
                    }
                    .await
                }
            };
            match self.settle(server, &mut c, r, Resend::Safe) {
                Settled::Done(r) => return r,
                Settled::Again | Settled::Verify(_) => fresh = true,
            }
        }
    }

    /// `stats [group]` of every server, as `(name, value)` pairs.
    pub async fn stats(&self, group: Option<&str>) -> Vec<(Server, Result<Stats>)> {
        let view = self.inner.view.load_full();
        let servers = view.full.servers();
        if let Some(g) = group.filter(|g| g.is_empty() || g.bytes().any(|b| b <= b' ' || b == 0x7f))
        {
            let e = Error::Config(format!("stats group {g:?} must be one word"));
            return servers
                .iter()
                .map(|s| (s.clone(), Err(e.clone())))
                .collect();
        }
        let results = join_all(view.members.iter().map(|m| self.stats_on(m, group))).await;
        servers.iter().cloned().zip(results).collect()
    }
}
