//! The client: routes every command to the owner of its key, fans multi-key operations out
//! across servers.

use crate::KeyHash;
use crate::conn::{Conn, ConnOptions, LineBudget};
use crate::error::{Error, Result};
use crate::health::{Availability, FailurePolicy, Health, Transition};
use crate::near::{NearCache, NearCacheConfig, NearCacheStats};
use crate::observe;
use crate::pool::{Pool, PoolConfig, Pooled};
use crate::proto::{self, Reply, Request, StoreCommand};
use crate::rejoin::{Cleanup, DEFAULT_REJOIN_LIMIT, RejoinLog};
use crate::ring::{Flavor, HashTag, Ring};
use crate::servers::{Server, parse_server_list};
use arc_swap::ArcSwap;
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Keys per `get` command in a multi-get (memcached accepts long lines, proxies may not).
const GET_BATCH: usize = 100;
/// Storage or delete commands written before their replies are read.
const WRITE_BATCH: usize = 100;
/// Threads (the caller's included) a multi-key write or a command to every server uses at
/// most; the server groups are shared out among them.
const FAN_OUT_THREADS: usize = 32;

/// A value read from memcached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The value's bytes.
    pub value: Vec<u8>,
    /// The client flags stored with it.
    pub flags: u32,
    /// The CAS unique (`gets`, `gats`).
    pub cas: Option<u64>,
}

impl Item {
    /// The value as UTF-8 text, if it is.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.value).ok()
    }
}

/// What a storage command did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// `STORED`
    Stored,
    /// `NOT_STORED`: the condition of `add`/`replace`/`append`/`prepend` failed.
    NotStored,
    /// `EXISTS`: a `cas` found the item changed since it was read.
    Exists,
    /// `NOT_FOUND`: a `cas` found no item.
    NotFound,
}

/// What `delete` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// `DELETED`
    Deleted,
    /// `NOT_FOUND`
    NotFound,
}

/// What `touch` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchOutcome {
    /// `TOUCHED`
    Touched,
    /// `NOT_FOUND`
    NotFound,
}

/// Builds a [`Client`]. Every setting documents its default.
///
/// ```no_run
/// use memshard::{Client, Flavor};
/// use std::time::Duration;
/// let client = Client::builder()
///     .server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?
///     .flavor(Flavor::Libmemcached)
///     .pool_size(4)
///     .read_timeout(Duration::from_millis(250))
///     .build()?;
/// client.set("greeting", "hello", 0, 0)?;
/// assert_eq!(client.get("greeting")?.unwrap().value, b"hello");
/// # Ok::<(), memshard::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    // pub(crate): the async client (`aio`, feature `async`) builds from the same settings.
    pub(crate) servers: Vec<Server>,
    pub(crate) flavor: Flavor,
    pub(crate) hash: Option<KeyHash>,
    pub(crate) tag: Option<HashTag>,
    pub(crate) pool_size: u32,
    pub(crate) min_idle: Option<u32>,
    pub(crate) checkout_timeout: Duration,
    pub(crate) ping_on_checkout: bool,
    pub(crate) conn: ConnOptions,
    pub(crate) prefix: Vec<u8>,
    pub(crate) hash_with_prefix: bool,
    pub(crate) policy: FailurePolicy,
    pub(crate) point_hash: Option<KeyHash>,
    pub(crate) rejoin_limit: usize,
    near: Option<NearCacheConfig>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            servers: Vec::new(),
            flavor: Flavor::Libmemcached,
            hash: None,
            tag: None,
            pool_size: 8,
            min_idle: Some(0),
            checkout_timeout: Duration::from_millis(1000),
            ping_on_checkout: false,
            conn: ConnOptions::default(),
            prefix: Vec::new(),
            hash_with_prefix: false,
            policy: FailurePolicy::default(),
            point_hash: None,
            rejoin_limit: DEFAULT_REJOIN_LIMIT,
            near: None,
        }
    }
}

impl Builder {
    /// Add servers. Default: none (building fails without any).
    pub fn servers(mut self, servers: impl IntoIterator<Item = Server>) -> Self {
        self.servers.extend(servers);
        self
    }

    /// Add servers from a server list in any format [`parse_server_list`] reads.
    pub fn server_list(mut self, text: &str) -> Result<Self> {
        self.servers.extend(parse_server_list(text)?);
        Ok(self)
    }

    /// Everything a peer configuration says: servers, flavour, key hash, hash tag, failure
    /// policy, timeout (connect/read/write) and namespace prefix.
    ///
    /// ```
    /// let cfg = memshard::config::libmemcached("--SERVER=127.0.0.1:11211 --DISTRIBUTION=consistent --HASH=MD5").unwrap();
    /// let client = memshard::Client::builder().peer_config(cfg).build().unwrap();
    /// assert_eq!(client.ring().flavor(), memshard::Flavor::LibmemcachedUnweighted);
    /// ```
    pub fn peer_config(mut self, cfg: crate::config::PeerConfig) -> Self {
        self.servers.extend(cfg.servers);
        self.flavor = cfg.flavor;
        self.hash = Some(cfg.hash);
        self.point_hash = cfg.ring_hash;
        self.tag = cfg.hash_tag;
        self.policy = cfg.failure_policy;
        if let Some(t) = cfg.timeout {
            self.conn.connect_timeout = t;
            self.conn.read_timeout = t;
            self.conn.write_timeout = t;
        }
        if let Some(p) = cfg.prefix {
            self.prefix = p.into_bytes();
        }
        self.hash_with_prefix = cfg.hash_with_prefix;
        self
    }

    /// Placement flavour. Default: [`Flavor::Libmemcached`].
    pub fn flavor(mut self, flavor: Flavor) -> Self {
        self.flavor = flavor;
        self
    }

    /// Key hash. Default: the flavour's.
    pub fn hash(mut self, hash: KeyHash) -> Self {
        self.hash = Some(hash);
        self
    }

    /// Hash tag (twemproxy semantics). Default: none.
    pub fn hash_tag(mut self, tag: HashTag) -> Self {
        self.tag = Some(tag);
        self
    }

    /// Connections per server at most, from 1 to [`MAX_POOL_SIZE`](crate::MAX_POOL_SIZE).
    /// Default: 8.
    pub fn pool_size(mut self, n: u32) -> Self {
        self.pool_size = n;
        self
    }

    /// Idle connections each pool keeps open, at most `pool_size`. Default: 0 (connect on
    /// demand).
    pub fn min_idle(mut self, n: u32) -> Self {
        self.min_idle = Some(n);
        self
    }

    /// Longest wait for a free connection when all `pool_size` are in use (connecting is bounded
    /// by the connect timeout alone), above 0 and at most
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). Default: 1 s.
    pub fn checkout_timeout(mut self, d: Duration) -> Self {
        self.checkout_timeout = d;
        self
    }

    /// Send `version` on every checkout to test the connection. Default: off (it doubles the
    /// round trips; broken connections are already never reused).
    pub fn ping_on_checkout(mut self, on: bool) -> Self {
        self.ping_on_checkout = on;
        self
    }

    /// Connect timeout, above 0 and at most [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). Default:
    /// 500 ms.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.conn.connect_timeout = d;
        self
    }

    /// Longest wait for one reply, above 0 and at most [`MAX_TIMEOUT`](crate::MAX_TIMEOUT).
    /// Default: 1 s.
    pub fn read_timeout(mut self, d: Duration) -> Self {
        self.conn.read_timeout = d;
        self
    }

    /// Longest wait to write one request, above 0 and at most
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT). Default: 1 s.
    pub fn write_timeout(mut self, d: Duration) -> Self {
        self.conn.write_timeout = d;
        self
    }

    /// Largest value sent or accepted. Default: 1 MiB (memcached's default `-I`).
    pub fn max_value_size(mut self, bytes: usize) -> Self {
        self.conn.max_value_size = bytes;
        self
    }

    /// Prefix sent in front of every key, like libmemcached's `MEMCACHED_CALLBACK_PREFIX_KEY`:
    /// the server sees `prefix + key`; placement hashes only `key` unless
    /// [`Builder::hash_with_prefix`] is set. Default: none.
    pub fn prefix(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.prefix = prefix.as_ref().to_vec();
        self
    }

    /// Hash `prefix + key` for placement (libmemcached `HASH_WITH_PREFIX_KEY`). Default: off.
    pub fn hash_with_prefix(mut self, on: bool) -> Self {
        self.hash_with_prefix = on;
        self
    }

    /// Failure handling: failure limit, retry timeout (at most
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT)), auto-eject. Default: [`FailurePolicy::default`]
    /// (2 failures, 2 s, no ejection).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// With auto-eject, the keys written or deleted elsewhere while a server is out that are
    /// remembered for it, at most: when it returns they are deleted on it before it takes reads
    /// again, so that it never serves the old copies it kept. Past this bound it is flushed
    /// (`flush_all`) before it rejoins instead, losing its other data too (see
    /// [`crate::rejoin`]). Default: [`DEFAULT_REJOIN_LIMIT`] (100,000 keys per server).
    pub fn rejoin_limit(mut self, keys: usize) -> Self {
        self.rejoin_limit = keys;
        self
    }

    /// An in-process near cache for the keys the config marks (hot keys). Default: off.
    pub fn near_cache(mut self, config: NearCacheConfig) -> Self {
        self.near = Some(config);
        self
    }

    /// Check every setting that could not work (shared by the async builder): a
    /// [`SettingError`](crate::SettingError) naming the setting, so that no setting can make a
    /// pool or a request panic later. Timeouts (connect, read, write, checkout, retry) must be
    /// at most [`MAX_TIMEOUT`](crate::MAX_TIMEOUT), and all but the retry timeout above 0;
    /// `pool_size` from 1 to [`MAX_POOL_SIZE`](crate::MAX_POOL_SIZE); `min_idle` at most
    /// `pool_size`; the prefix a valid key start.
    pub(crate) fn validate(&self) -> Result<(), crate::SettingError> {
        use crate::SettingError;
        if self.pool_size == 0 {
            return Err(SettingError::ZeroPoolSize);
        }
        if self.pool_size > crate::MAX_POOL_SIZE {
            return Err(SettingError::PoolTooLarge(self.pool_size));
        }
        if let Some(min_idle) = self.min_idle.filter(|&n| n > self.pool_size) {
            return Err(SettingError::MinIdleAbovePoolSize {
                min_idle,
                pool_size: self.pool_size,
            });
        }
        SettingError::check_timeout("checkout_timeout", self.checkout_timeout)?;
        SettingError::check_timeout("connect_timeout", self.conn.connect_timeout)?;
        SettingError::check_timeout("read_timeout", self.conn.read_timeout)?;
        SettingError::check_timeout("write_timeout", self.conn.write_timeout)?;
        // 0 is allowed here: a down server is probed again at once.
        let retry = self.policy.retry_timeout;
        if retry > crate::MAX_TIMEOUT {
            return Err(SettingError::TimeoutTooLong {
                setting: "failure_policy.retry_timeout",
                value: retry,
            });
        }
        if !self.prefix.is_empty() {
            proto::validate_key(&self.prefix).map_err(SettingError::BadPrefix)?;
        }
        Ok(())
    }

    /// Build the ring and one pool per server. No connection is opened yet (unless
    /// `min_idle` asks for some), so a server that is down does not stop the build. Settings
    /// that cannot work fail here with [`Error::Setting`].
    pub fn build(self) -> Result<Client> {
        self.validate()?;
        let ring = Ring::with_point_hash(
            self.servers,
            self.flavor,
            self.hash,
            self.point_hash,
            self.tag,
        )?;
        let inner = Arc::new(Inner {
            view: ArcSwap::from_pointee(View::empty(&ring)),
            rebuild: Mutex::new(()),
            policy: self.policy,
            epoch: Instant::now(),
            pool_cfg: PoolCfg {
                size: self.pool_size,
                min_idle: self.min_idle,
                checkout: self.checkout_timeout,
                ping: self.ping_on_checkout,
            },
            conn_opts: self.conn,
            prefix: self.prefix,
            hash_with_prefix: self.hash_with_prefix,
            near: self.near.map(NearCache::new),
            probes: Mutex::new(Probes::default()),
            rejoin_limit: self.rejoin_limit,
        });
        let members = ring.servers().iter().map(|s| inner.new_member(s)).collect();
        inner
            .view
            .store(Arc::new(View::new(Arc::new(ring), members, false)));
        Ok(Client { inner })
    }
}

/// The members for `ring`'s servers: a server already present (same host and port) keeps its
/// member (pool, health), a new one gets `make(server)`. Shared by both clients' `set_servers`.
pub(crate) fn keep_or_make<M>(
    ring: &Ring,
    current: &[Arc<M>],
    server_of: impl Fn(&M) -> &Server,
    make: impl Fn(&Server) -> Arc<M>,
) -> Vec<Arc<M>> {
    ring.servers()
        .iter()
        .map(|s| {
            current
                .iter()
                .find(|m| server_of(m).host == s.host && server_of(m).port == s.port)
                .cloned()
                .unwrap_or_else(|| make(s))
        })
        .collect()
}

/// Pool settings, kept to make pools for servers added later.
#[derive(Clone, Copy, Debug)]
struct PoolCfg {
    size: u32,
    min_idle: Option<u32>,
    checkout: Duration,
    ping: bool,
}

/// One configured server: its connection pool and its health. A server that stays in the list
/// across [`Client::set_servers`] keeps its member (and so its pool and health).
pub(crate) struct Member {
    pub(crate) server: Server,
    pool: Pool,
    health: Health,
    /// The keys changed elsewhere while it is out (auto-eject), cleaned before it rejoins.
    rejoin: RejoinLog,
}

/// Whether a request may be sent again, once, on a new connection after its pooled connection
/// turned out to be stale ([`Conn::failed_stale`]: end of stream, reset or broken pipe before
/// any byte of a reply, on a connection that sat idle in its pool).
///
/// A stale connection is one the server had closed (idle timeout, restart) before the request
/// reached it, so the first attempt did nothing; memcached does not apply a request and then
/// close the connection without replying. Still, only commands whose repetition cannot change
/// the outcome are sent twice after their bytes may have reached the server:
///
/// - `Safe`: get, gets, gat, gats, touch, set, replace, delete, the multi-key get, set and
///   delete, set with noreply, version, stats, flush_all, verbosity. Twice, they leave the
///   same item. (Had the first attempt been applied, a repeated `delete` would answer
///   `NotFound` and a repeated `set` would write its value once more, over any write another
///   client made in between; both are possible only if the server applied a request and then
///   closed without replying, which memcached does not do.)
/// - `Never` (unless not one byte was written): add, append, prepend, cas, incr, decr. A
///   second application would change the value again (`incr`, `append`, `prepend`) or report
///   a false conflict (`add` → `NotStored`, `cas` → `Exists`). They fail with the connection's
///   error, which does not count against the server; the caller decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resend {
    Safe,
    Never,
}

/// Down servers waiting for their probe, and whether the prober thread runs. One thread
/// probes every down server of a client, whatever their number.
#[derive(Default)]
struct Probes {
    members: Vec<Arc<Member>>,
    running: bool,
}

/// What requests route with, replaced as a whole (by `set_servers` and by auto-eject): a
/// request loads it once and finishes on it, whatever happens meanwhile.
pub(crate) struct View {
    /// The ring over every configured server; `members` is parallel to its servers.
    full: Arc<Ring>,
    members: Vec<Arc<Member>>,
    /// `full`, or with auto-eject the ring over the live servers.
    routing: Arc<Ring>,
    /// `routing`'s server index → index into `members`.
    to_member: Vec<usize>,
}

impl View {
    fn empty(ring: &Ring) -> View {
        let full = Arc::new(ring.clone());
        View {
            routing: full.clone(),
            full,
            members: Vec::new(),
            to_member: Vec::new(),
        }
    }

    /// The view over `members`; with `eject`, routing over the members that are not down.
    fn new(full: Arc<Ring>, members: Vec<Arc<Member>>, eject: bool) -> View {
        let (routing, to_member) = live_routing(&full, |i| eject && members[i].health.is_down());
        View {
            full,
            members,
            routing,
            to_member,
        }
    }

    /// The member owning `hashed` (the key as hashed), or `None` for an empty ring.
    fn owner(&self, hashed: &[u8]) -> Option<usize> {
        self.routing.route(hashed).map(|i| self.to_member[i])
    }

    /// A write or delete of `wire` (hashed as `hashed`) goes to member `owner`: if a server
    /// is ejected and the key's owner on the full ring is another member, that one records it
    /// ([`RejoinLog`]), to delete it when it returns.
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

/// The routing ring over the servers of `full` for which `down(index)` is false, built exactly
/// as the flavour builds it for that list (live count and total weight change point counts),
/// with each of its servers' index in `full`. Nobody (or everybody) live: `full` itself, and
/// down servers fail fast. Shared by the blocking and the async (`aio`) client.
pub(crate) fn live_routing(
    full: &Arc<Ring>,
    down: impl Fn(usize) -> bool,
) -> (Arc<Ring>, Vec<usize>) {
    let n = full.servers().len();
    let live: Vec<usize> = (0..n).filter(|&i| !down(i)).collect();
    if live.is_empty() || live.len() == n {
        return (full.clone(), (0..n).collect());
    }
    let servers = live.iter().map(|&i| full.servers()[i].clone()).collect();
    match full.with_servers(servers) {
        Ok(r) => (Arc::new(r), live),
        // Cannot happen for a subset of a list that built; keep the full ring.
        Err(_) => (full.clone(), (0..n).collect()),
    }
}

struct Inner {
    /// Ring, members and routing in force.
    view: ArcSwap<View>,
    /// One rebuild of the view at a time.
    rebuild: Mutex<()>,
    policy: FailurePolicy,
    epoch: Instant,
    pool_cfg: PoolCfg,
    conn_opts: ConnOptions,
    prefix: Vec<u8>,
    hash_with_prefix: bool,
    near: Option<NearCache>,
    /// The down servers the prober thread watches.
    probes: Mutex<Probes>,
    rejoin_limit: usize,
}

impl Inner {
    fn new_member(&self, s: &Server) -> Arc<Member> {
        let cfg = PoolConfig {
            size: self.pool_cfg.size,
            min_idle: self.pool_cfg.min_idle.unwrap_or(0),
            checkout_timeout: self.pool_cfg.checkout,
            ping: self.pool_cfg.ping,
        };
        Arc::new(Member {
            server: s.clone(),
            pool: Pool::new(&s.host, s.port, &s.addr, self.conn_opts.clone(), cfg),
            health: Health::default(),
            rejoin: RejoinLog::new(self.rejoin_limit),
        })
    }

    /// Count the outcome of talking to `m`. Errors about the request itself say nothing
    /// about the server; an error reply means it is alive.
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
                // its pooled connections may outlive the server process: never reuse them
                m.pool.invalidate();
                observe::ejected(&m.server.addr);
                self.rebuild_routing();
                self.watch_down(m);
            }
            Transition::CameBack if m.rejoin.is_out() => {
                // a request that started before the ejection answered: the server may not
                // take reads before the prober has cleaned its stale keys
                m.health.hold_down(&self.policy, self.epoch, Instant::now());
                self.watch_down(m);
            }
            Transition::CameBack => self.rebuild_routing(),
            Transition::None => {}
        }
    }

    /// With auto-eject, swap in the ring over the servers that are not down, built exactly as
    /// the flavour builds it for that list (live count and total weight change point counts).
    fn rebuild_routing(&self) {
        if !self.policy.auto_eject {
            return;
        }
        let _one_at_a_time = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.view.load_full();
        self.view.store(Arc::new(View::new(
            cur.full.clone(),
            cur.members.clone(),
            true,
        )));
    }

    /// Have the prober thread probe `m` (just marked down) each time its retry timeout passes,
    /// until it answers `version`; then it is up again (and rejoins the ring with auto-eject).
    /// The thread is started by the first server to go down and ends when none is left down.
    fn watch_down(self: &Arc<Self>, m: &Arc<Member>) {
        let mut probes = self.probes.lock().unwrap_or_else(|p| p.into_inner());
        if !probes.members.iter().any(|x| Arc::ptr_eq(x, m)) {
            probes.members.push(m.clone());
        }
        if probes.running {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("memshard-prober".into())
            .spawn(move || prober(weak));
        // without a thread, requests keep failing fast until a later failure tries again
        probes.running = spawned.is_ok();
        if !probes.running {
            probes.members.clear();
        }
    }
}

/// The prober thread: probes each watched server whose retry timeout has passed, one after
/// another, and sleeps until the next one is due (at most 100 ms).
fn prober(weak: Weak<Inner>) {
    loop {
        // Hold the client only while working, so dropping it ends this thread.
        let Some(inner) = weak.upgrade() else { return };
        let watched = inner
            .probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .members
            .clone();
        let mut wait = Duration::from_millis(100);
        for m in &watched {
            match m.health.availability(inner.epoch, Instant::now()) {
                Availability::Up => {}
                Availability::Down(left) => wait = wait.min(left),
                Availability::Probe => {
                    let s = &m.server;
                    observe::retried(&s.addr);
                    let answered = Conn::connect(&s.host, s.port, &s.addr, &inner.conn_opts)
                        .and_then(|mut c| {
                            c.send_requests([Request::Version])?;
                            match c.read_reply()? {
                                Reply::Version(_) => Ok(c),
                                other => Err(c.unexpected(&other, "version")),
                            }
                        })
                        // before it takes reads: delete what changed elsewhere meanwhile
                        .and_then(|mut c| clean_before_rejoin(&mut c, &m.rejoin).map(|()| c));
                    match answered {
                        Ok(mut c) => {
                            if m.health.success() == Transition::CameBack {
                                inner.rebuild_routing();
                            }
                            // writes routed on the view from before the rejoin
                            let left = m.rejoin.rejoined();
                            if run_cleanup(&mut c, &left).is_err() {
                                m.rejoin.back_out(left);
                                m.health
                                    .hold_down(&inner.policy, inner.epoch, Instant::now());
                                inner.rebuild_routing();
                                wait = wait.min(inner.policy.retry_timeout);
                            }
                        }
                        Err(_) => {
                            m.health.failure(&inner.policy, inner.epoch, Instant::now());
                            wait = wait.min(inner.policy.retry_timeout);
                        }
                    }
                }
            }
        }
        {
            // Under the lock: a server that goes down again after this check is pushed again
            // by `watch_down`, which takes the same lock. A server removed by set_servers is
            // not probed any longer.
            let mut probes = inner.probes.lock().unwrap_or_else(|p| p.into_inner());
            let view = inner.view.load();
            let configured: HashSet<*const Member> = view.members.iter().map(Arc::as_ptr).collect();
            probes
                .members
                .retain(|m| m.health.is_down() && configured.contains(&Arc::as_ptr(m)));
            if probes.members.is_empty() {
                probes.running = false;
                return;
            }
        }
        drop(inner);
        std::thread::sleep(wait.max(Duration::from_millis(1)));
    }
}

/// Rounds of [`clean_before_rejoin`]: writes keep recording keys while a round runs.
const CLEAN_ROUNDS: usize = 4;

/// The cleanup a returning server needs before it takes reads ([`crate::rejoin`]), on the
/// probe connection, until nothing is left (at most [`CLEAN_ROUNDS`] rounds; what is
/// recorded after the last is cleaned once the server has rejoined).
fn clean_before_rejoin(c: &mut Conn, log: &RejoinLog) -> Result<()> {
    for _ in 0..CLEAN_ROUNDS {
        let todo = log.pending();
        if todo == Cleanup::Nothing {
            break;
        }
        run_cleanup(c, &todo)?;
        log.cleaned(&todo);
    }
    Ok(())
}

/// Checked, pipelined deletes of the cleanup's keys, or one `flush_all`.
fn run_cleanup(c: &mut Conn, todo: &Cleanup) -> Result<()> {
    match todo {
        Cleanup::Nothing => Ok(()),
        Cleanup::Flush => {
            c.send_requests([Request::FlushAll {
                delay: None,
                noreply: false,
            }])?;
            match c.read_reply()? {
                Reply::Ok => Ok(()),
                other => Err(reply_error(other, c, "flush_all")),
            }
        }
        Cleanup::Delete(keys) => {
            for batch in keys.chunks(WRITE_BATCH) {
                c.send_requests(batch.iter().map(|k| Request::Delete {
                    key: k,
                    noreply: false,
                }))?;
                for _ in batch {
                    match c.read_reply()? {
                        Reply::Deleted | Reply::NotFound => {}
                        other => return Err(reply_error(other, c, "delete")),
                    }
                }
            }
            Ok(())
        }
    }
}

/// A pooled memcached client over a ketama ring. Cheap to clone (an `Arc`), `Send + Sync`.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("servers", &self.inner.view.load().members.len())
            .field("flavor", &self.inner.view.load().full.flavor())
            .finish()
    }
}

/// Input indexes grouped by the server that owns them: `(server, indexes)`.
type Groups = Vec<(Arc<Member>, Vec<usize>)>;

/// A server's statistics as `(name, value)` pairs.
pub type Stats = Vec<(String, String)>;

/// A key ready to send: validated, prefixed, and routed.
struct Routed<'k> {
    wire: Cow<'k, [u8]>,
    member: Arc<Member>,
}

fn check_store(reply: Reply, conn: &mut Conn, what: &str) -> Result<StoreOutcome> {
    match reply {
        Reply::Stored => Ok(StoreOutcome::Stored),
        Reply::NotStored => Ok(StoreOutcome::NotStored),
        Reply::Exists => Ok(StoreOutcome::Exists),
        Reply::NotFound => Ok(StoreOutcome::NotFound),
        other => Err(reply_error(other, conn, what)),
    }
}

/// The error of a request that met a stale connection and was not sent again ([`Resend`]).
fn not_resent(e: Error) -> Error {
    match e {
        Error::Io {
            server,
            kind,
            message,
        } => Error::Io {
            server,
            kind,
            message: format!(
                "{message}; the pooled connection had been closed by the server, and the request was not sent again on a new one because repeating it is not harmless: it was most likely not applied, but check before repeating it"
            ),
        },
        e => e,
    }
}

/// An error reply becomes `Error::Server`; anything else that does not fit is a protocol error.
/// The error for a `VALUE` that cannot answer `keys`: a key not asked, or one asked but
/// already answered or passed (a reply holds at most one value per key asked, in order, so
/// it can never grow past the keys asked times the largest value).
pub(crate) fn not_asked(k: &[u8], keys: &[&[u8]]) -> Error {
    let key = String::from_utf8_lossy(k);
    let detail = if keys.contains(&k) {
        format!(
            "value for key {key:?} again or out of order; a reply holds at most one value for each of the {} keys asked, in order",
            keys.len()
        )
    } else {
        format!("value for key {key:?}, which was not requested")
    };
    Error::protocol("", detail)
}

fn reply_error(reply: Reply, conn: &mut Conn, what: &str) -> Error {
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

impl Client {
    /// A builder with every default.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The ring over every configured server (placement when all servers are up).
    pub fn ring(&self) -> Arc<Ring> {
        self.inner.view.load().full.clone()
    }

    /// The ring in force now: with auto-eject and a server down, the ring over the live servers.
    pub fn current_ring(&self) -> Ring {
        (*self.inner.view.load().routing).clone()
    }

    /// The key as hashed for placement.
    fn hashed<'k>(&self, key: &'k [u8]) -> Cow<'k, [u8]> {
        if self.inner.hash_with_prefix {
            Cow::Owned([&self.inner.prefix[..], key].concat())
        } else {
            Cow::Borrowed(key)
        }
    }

    /// The distinct-server walk from `key` over the ring in force.
    pub(crate) fn current_walk(&self, key: &[u8]) -> Vec<Arc<Member>> {
        let view = self.inner.view.load();
        view.routing
            .distinct_indexes(&self.hashed(key))
            .map(|i| view.members[view.to_member[i]].clone())
            .collect()
    }

    /// Replace the server list while the client runs. The new ring is swapped in atomically;
    /// requests in flight finish on the ring they started with; servers that stay keep their
    /// pools (and health), new servers get pools, removed servers' pools are dropped once their
    /// last request returns. Flavour, key hash and hash tag stay as built.
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
        inner.view.store(Arc::new(View::new(
            Arc::new(ring),
            members,
            inner.policy.auto_eject,
        )));
        Ok(())
    }

    /// What [`Client::set_servers`] with `servers` would cost, on `keys` (see
    /// [`crate::plan::plan`]): the share of keys that move, per pair of servers, and the
    /// imbalance before and after.
    pub fn plan_servers(
        &self,
        servers: &[Server],
        keys: &crate::plan::Keys,
    ) -> Result<crate::plan::Plan> {
        Ok(crate::plan::plan_change(&self.ring(), servers, keys)?)
    }

    /// [`Client::wire_key`] for the replica module.
    pub(crate) fn wire_key_for(&self, key: &[u8]) -> Result<Vec<u8>> {
        self.wire_key(key).map(|w| w.into_owned())
    }

    pub(crate) fn check_value_len(&self, value: &[u8]) -> Result<()> {
        self.check_value(value)
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

    /// The key as sent: validated, with the prefix in front.
    fn wire_key<'k>(&self, key: &'k [u8]) -> Result<Cow<'k, [u8]>> {
        let inner = &*self.inner;
        let wire: Cow<'k, [u8]> = if inner.prefix.is_empty() {
            Cow::Borrowed(key)
        } else {
            let mut v = Vec::with_capacity(inner.prefix.len() + key.len());
            v.extend_from_slice(&inner.prefix);
            v.extend_from_slice(key);
            Cow::Owned(v)
        };
        proto::validate_key(&wire).map_err(|e| Error::invalid_key(key, e))?;
        Ok(wire)
    }

    fn route<'k>(&self, key: &'k [u8]) -> Result<Routed<'k>> {
        self.route_for(key, false)
    }

    /// [`Client::route`] for a write or delete: recorded for an ejected owner
    /// ([`View::record_redirected`]).
    fn route_write<'k>(&self, key: &'k [u8]) -> Result<Routed<'k>> {
        self.route_for(key, true)
    }

    fn route_for<'k>(&self, key: &'k [u8], write: bool) -> Result<Routed<'k>> {
        let inner = &*self.inner;
        let wire = self.wire_key(key)?;
        let hashed: &[u8] = if inner.hash_with_prefix { &wire } else { key };
        let view = inner.view.load();
        let i = view
            .owner(hashed)
            .ok_or(Error::Config("the ring has no points".into()))?;
        if write {
            view.record_redirected(hashed, i, &wire);
        }
        Ok(Routed {
            member: view.members[i].clone(),
            wire,
        })
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

    /// A connection to `m`, unless it is marked down: a pooled one that passes its idle check,
    /// else a new one; `new`: always a new one (the retry after a stale connection). A connect
    /// error comes back at once; [`Error::Pool`] `exhausted` after the checkout timeout when
    /// all `pool_size` connections stay in use.
    fn checkout<'m>(&self, m: &'m Member, new: bool) -> Result<Pooled<'m>> {
        self.available(m)?;
        let waited = Instant::now();
        let got = if new { m.pool.get_new() } else { m.pool.get() };
        observe::pool_wait(&m.server.addr, waited.elapsed());
        got
    }

    /// One exchange `f` with `m` on a pooled connection, and, if that failed only because the
    /// connection was stale ([`Conn::failed_stale`]), once more on a new connection when
    /// `resend` allows (see [`Resend`]). Returns the result and whether it tells anything
    /// about the server: false for a stale connection's failure of a request not sent again
    /// (nothing is known about the server then; the next request's new connection finds out).
    fn exchange<T>(
        &self,
        m: &Member,
        resend: Resend,
        mut f: impl FnMut(&mut Conn) -> Result<T>,
    ) -> (Result<T>, bool) {
        let mut once = |conn: &mut Conn| f(conn).and_then(|v| conn.end_exchange().map(|()| v));
        let mut conn = match self.checkout(m, false) {
            Ok(c) => c,
            Err(e) => return (Err(e), true),
        };
        let r = once(&mut conn);
        let Err(e) = r else { return (r, true) };
        if !conn.failed_stale() {
            return (Err(e), true);
        }
        let again = resend == Resend::Safe || !conn.sent_any();
        drop(conn);
        if !again {
            return (Err(not_resent(e)), false);
        }
        (self.checkout(m, true).and_then(|mut c| once(&mut c)), true)
    }

    /// Run `f` on a connection to `m` (see [`Client::exchange`]) and count the outcome for
    /// its health.
    fn on_server<T>(
        &self,
        m: &Arc<Member>,
        command: &'static str,
        resend: Resend,
        f: impl FnMut(&mut Conn) -> Result<T>,
    ) -> Result<T> {
        let _span = observe::span(command, &m.server.addr);
        let started = Instant::now();
        let (r, counts) = self.exchange(m, resend, f);
        observe::request(&m.server.addr, command, started.elapsed(), r.as_ref().err());
        if counts {
            self.inner.observe(m, r.as_ref().err());
        }
        r
    }

    /// Read a retrieval reply for `keys` (in request order), matching each `VALUE` to the next
    /// requested key it can be: a value for a key that was not asked for is a protocol error,
    /// never handed to the caller.
    fn read_hits(conn: &mut Conn, keys: &[&[u8]], mut hit: impl FnMut(usize, Item)) -> Result<()> {
        let mut next = 0;
        let failed = conn.read_values(|k, flags, data, cas| {
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
        })?;
        match failed {
            None => Ok(()),
            Some(reply) => Err(reply_error(reply, conn, "get")),
        }
    }

    fn retrieve(&self, key: &[u8], touch: Option<u32>, cas: bool) -> Result<Option<Item>> {
        let r = self.route(key)?;
        self.retrieve_on(&r.member, &r.wire, touch, cas)
    }

    /// `get`/`gets`/`gat`/`gats` of `wire` on `server`.
    pub(crate) fn retrieve_on(
        &self,
        server: &Arc<Member>,
        wire: &[u8],
        touch: Option<u32>,
        cas: bool,
    ) -> Result<Option<Item>> {
        let command = match (touch, cas) {
            (None, false) => "get",
            (None, true) => "gets",
            (Some(_), false) => "gat",
            (Some(_), true) => "gats",
        };
        let r = self.on_server(server, command, Resend::Safe, |conn| {
            let keys = [wire];
            let req = match touch {
                None => Request::Get { keys: &keys, cas },
                Some(exptime) => Request::GetAndTouch {
                    exptime,
                    keys: &keys,
                    cas,
                },
            };
            conn.send_requests([req])?;
            let mut out = None;
            Self::read_hits(conn, &keys, |_, item| out = Some(item))?;
            Ok(out)
        });
        if let Ok(found) = &r {
            observe::hits(
                &server.server.addr,
                found.is_some() as u64,
                found.is_none() as u64,
            );
        }
        r
    }

    /// `get`: the value, or `None` on a miss. Keys marked for the near cache are served from
    /// the process while their cached copy is fresh.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
        let key = key.as_ref();
        let Some(near) = self.inner.near.as_ref().filter(|n| n.wants(key)) else {
            return self.retrieve(key, None, false);
        };
        if let Some(item) = near.lookup(key) {
            return Ok(Some(item));
        }
        let r = self.retrieve(key, None, false)?;
        if let Some(item) = &r {
            near.store(key, item);
        }
        Ok(r)
    }

    /// Near-cache counters, when the near cache is on.
    pub fn near_cache_stats(&self) -> Option<NearCacheStats> {
        self.inner.near.as_ref().map(NearCache::stats)
    }

    fn forget_all<'k>(&self, keys: impl Iterator<Item = &'k [u8]>) {
        if self.inner.near.is_some() {
            keys.for_each(|k| self.forget(k));
        }
    }

    /// Drop `key` from the near cache (after any write to it).
    fn forget(&self, key: &[u8]) {
        if let Some(near) = &self.inner.near {
            near.invalidate(key);
        }
    }

    /// `gets`: the value with its CAS unique.
    pub fn gets(&self, key: impl AsRef<[u8]>) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), None, true)
    }

    /// `gat`: get and set a new expiry.
    pub fn gat(&self, key: impl AsRef<[u8]>, exptime: u32) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), Some(exptime), false)
    }

    /// `gats`: get with CAS unique and set a new expiry.
    pub fn gats(&self, key: impl AsRef<[u8]>, exptime: u32) -> Result<Option<Item>> {
        self.retrieve(key.as_ref(), Some(exptime), true)
    }

    fn store(
        &self,
        cmd: StoreCommand,
        key: &[u8],
        value: &[u8],
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        self.check_value(value)?;
        let r = self.route_write(key)?;
        let res = self.store_on(&r.member, cmd, &r.wire, value, flags, exptime);
        self.forget(key);
        res
    }

    /// One storage command for `wire` on `server`.
    pub(crate) fn store_on(
        &self,
        server: &Arc<Member>,
        cmd: StoreCommand,
        wire: &[u8],
        value: &[u8],
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        // set and replace leave the same item when repeated; the others do not (see Resend)
        let resend = match cmd {
            StoreCommand::Set | StoreCommand::Replace => Resend::Safe,
            StoreCommand::Add
            | StoreCommand::Append
            | StoreCommand::Prepend
            | StoreCommand::Cas(_) => Resend::Never,
        };
        self.on_server(server, cmd.verb(), resend, |conn| {
            conn.send_requests([Request::Store {
                cmd,
                key: wire,
                flags,
                exptime,
                value,
                noreply: false,
            }])?;
            let reply = conn.read_reply()?;
            check_store(reply, conn, "a storage command")
        })
    }

    /// `set`: store unconditionally. `exptime` 0 = never expires.
    pub fn set(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        self.store(
            StoreCommand::Set,
            key.as_ref(),
            value.as_ref(),
            flags,
            exptime,
        )
    }

    /// `add`: store only if absent (`NotStored` otherwise).
    pub fn add(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        self.store(
            StoreCommand::Add,
            key.as_ref(),
            value.as_ref(),
            flags,
            exptime,
        )
    }

    /// `replace`: store only if present (`NotStored` otherwise).
    pub fn replace(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Result<StoreOutcome> {
        self.store(
            StoreCommand::Replace,
            key.as_ref(),
            value.as_ref(),
            flags,
            exptime,
        )
    }

    /// `append` to an existing value (`NotStored` if absent).
    pub fn append(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<StoreOutcome> {
        self.store(StoreCommand::Append, key.as_ref(), value.as_ref(), 0, 0)
    }

    /// `prepend` to an existing value (`NotStored` if absent).
    pub fn prepend(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<StoreOutcome> {
        self.store(StoreCommand::Prepend, key.as_ref(), value.as_ref(), 0, 0)
    }

    /// `cas`: store only if the item's CAS unique is still `cas` (`Exists` if it changed,
    /// `NotFound` if it is gone).
    pub fn cas(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
        cas: u64,
    ) -> Result<StoreOutcome> {
        self.store(
            StoreCommand::Cas(cas),
            key.as_ref(),
            value.as_ref(),
            flags,
            exptime,
        )
    }

    /// `delete`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<DeleteOutcome> {
        let r = self.route_write(key.as_ref())?;
        let res = self.delete_on(&r.member, &r.wire);
        self.forget(key.as_ref());
        res
    }

    /// `delete` of `wire` on `server`.
    pub(crate) fn delete_on(&self, server: &Arc<Member>, wire: &[u8]) -> Result<DeleteOutcome> {
        self.on_server(server, "delete", Resend::Safe, |conn| {
            conn.send_requests([Request::Delete {
                key: wire,
                noreply: false,
            }])?;
            match conn.read_reply()? {
                Reply::Deleted => Ok(DeleteOutcome::Deleted),
                Reply::NotFound => Ok(DeleteOutcome::NotFound),
                other => Err(reply_error(other, conn, "delete")),
            }
        })
    }

    fn arith(&self, incr: bool, key: &[u8], delta: u64) -> Result<Option<u64>> {
        let r = self.route_write(key)?;
        let verb = if incr { "incr" } else { "decr" };
        let res = self.on_server(&r.member, verb, Resend::Never, |conn| {
            conn.send_requests([Request::Arith {
                incr,
                key: &r.wire,
                delta,
                noreply: false,
            }])?;
            match conn.read_reply()? {
                Reply::Number(n) => Ok(Some(n)),
                Reply::NotFound => Ok(None),
                other => Err(reply_error(other, conn, if incr { "incr" } else { "decr" })),
            }
        });
        self.forget(key);
        res
    }

    /// `incr`: the new value, or `None` if the key does not exist.
    pub fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
        self.arith(true, key.as_ref(), delta)
    }

    /// `decr` (memcached stops at 0): the new value, or `None` if the key does not exist.
    pub fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> Result<Option<u64>> {
        self.arith(false, key.as_ref(), delta)
    }

    /// `touch`: set a new expiry.
    pub fn touch(&self, key: impl AsRef<[u8]>, exptime: u32) -> Result<TouchOutcome> {
        let r = self.route_write(key.as_ref())?;
        self.on_server(&r.member, "touch", Resend::Safe, |conn| {
            conn.send_requests([Request::Touch {
                key: &r.wire,
                exptime,
                noreply: false,
            }])?;
            match conn.read_reply()? {
                Reply::Touched => Ok(TouchOutcome::Touched),
                Reply::NotFound => Ok(TouchOutcome::NotFound),
                other => Err(reply_error(other, conn, "touch")),
            }
        })
    }

    /// Run `f` for each server group, in parallel across servers, and collect `(input index,
    /// result)` pairs. At most [`FAN_OUT_THREADS`] threads (this one included) take the groups
    /// in turn: a thread per server would be thousands of threads for thousands of servers.
    fn fan_out<T: Send>(
        &self,
        groups: Groups,
        f: impl Fn(&Arc<Member>, &[usize]) -> Vec<(usize, T)> + Sync,
    ) -> Vec<(usize, T)> {
        match groups.as_slice() {
            [] => return Vec::new(),
            [(server, idx)] => return f(server, idx),
            _ => {}
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut out = Vec::new();
            while let Some((server, idx)) = groups.get(next.fetch_add(1, Ordering::Relaxed)) {
                out.extend(f(server, idx));
            }
            out
        };
        let work = &work;
        let helpers = groups.len().min(FAN_OUT_THREADS) - 1;
        let joined = crossbeam_utils::thread::scope(|s| {
            let handles: Vec<_> = (0..helpers).map(|_| s.spawn(move |_| work())).collect();
            let mut out = work();
            for h in handles {
                match h.join() {
                    Ok(v) => out.extend(v),
                    // Our per-server work does not panic; if it did, re-raise it here.
                    Err(p) => std::panic::resume_unwind(p),
                }
            }
            out
        });
        match joined {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// Route `keys`; invalid keys get their error at once, the rest are grouped by server.
    /// `write`: the keys are written or deleted (recorded for an ejected owner,
    /// [`View::record_redirected`]).
    fn group<'k, T>(
        &self,
        keys: impl Iterator<Item = &'k [u8]>,
        out: &mut [Option<Result<T>>],
        write: bool,
    ) -> (Vec<Option<Routed<'k>>>, Groups) {
        let keys: Vec<&'k [u8]> = keys.collect();
        let mut wires: Vec<Option<Cow<'k, [u8]>>> = Vec::with_capacity(keys.len());
        let mut valid: Vec<usize> = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
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
            // Batch routing: four md5s at a time for the common case.
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
        let mut by_member: Vec<Vec<usize>> = vec![Vec::new(); view.members.len()];
        let routed = wires
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                let w = w?;
                if owner[i] == usize::MAX {
                    out[i] = Some(Err(Error::Config("the ring has no points".into())));
                    return None;
                }
                by_member[owner[i]].push(i);
                Some(Routed {
                    wire: w,
                    member: view.members[owner[i]].clone(),
                })
            })
            .collect();
        let groups = by_member
            .into_iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(m, v)| (view.members[m].clone(), v))
            .collect();
        (routed, groups)
    }

    /// Get many keys: one pipelined request per server, servers in parallel. Results are in
    /// the order of `keys`; a failing server gives errors for its keys only.
    pub fn get_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        let Some(near) = &self.inner.near else {
            return self.get_multi_servers(keys);
        };
        // marked keys with a fresh cached copy are answered here; the rest go to the servers
        let mut out: Vec<Option<Result<Option<Item>>>> = keys
            .iter()
            .map(|k| {
                let k = k.as_ref();
                near.wants(k)
                    .then(|| near.lookup(k))
                    .flatten()
                    .map(|item| Ok(Some(item)))
            })
            .collect();
        let rest: Vec<&[u8]> = keys
            .iter()
            .zip(&out)
            .filter(|(_, o)| o.is_none())
            .map(|(k, _)| k.as_ref())
            .collect();
        let mut fetched = self.get_multi_servers(&rest).into_iter();
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            if o.is_none() {
                let r = fetched.next().unwrap_or(Ok(None));
                if let (Ok(Some(item)), true) = (&r, near.wants(k.as_ref())) {
                    near.store(k.as_ref(), item);
                }
                *o = Some(r);
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    fn get_multi_servers<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        let mut out: Vec<Option<Result<Option<Item>>>> = (0..keys.len()).map(|_| None).collect();
        let (routed, groups) = self.group(keys.iter().map(|k| k.as_ref()), &mut out, false);
        // Like libmemcached's mget: first one write to every server, then read the replies
        // server by server. The servers work in parallel while we read; no thread is spawned
        // (spawning one per server cost more than the whole exchange on loopback).
        let started = Instant::now();
        let wires: Vec<Vec<&[u8]>> = groups
            .iter()
            .map(|(_, idx)| {
                idx.iter()
                    .map(|&i| routed[i].as_ref().map_or(&b""[..], |r| &r.wire[..]))
                    .collect()
            })
            .collect();
        let send = |c: &mut Conn, wire: &[&[u8]]| {
            c.send_requests(
                wire.chunks(GET_BATCH)
                    .map(|keys| Request::Get { keys, cas: false }),
            )
        };
        let sent: Vec<_> = groups
            .iter()
            .zip(&wires)
            .map(|((server, _), wire)| {
                self.checkout(server, false).map(|mut c| {
                    let wrote = send(&mut c, wire);
                    (c, wrote)
                })
            })
            .collect();
        for (((server, idx), wire), sent) in groups.iter().zip(&wires).zip(sent) {
            let mut hits: Vec<Option<Item>> = vec![None; idx.len()];
            let r = match sent {
                Err(e) => Err((0, e)),
                Ok((mut conn, wrote)) => {
                    let r = wrote
                        .map_err(|e| (0, e))
                        .and_then(|()| Self::read_batches(&mut conn, wire, &mut hits));
                    if r.is_err() && conn.failed_stale() {
                        // the pooled connection was stale (gets are safe to repeat): once more
                        // on a new connection
                        drop(conn);
                        hits.iter_mut().for_each(|h| *h = None);
                        self.checkout(server, true)
                            .map_err(|e| (0, e))
                            .and_then(|mut c| {
                                send(&mut c, wire).map_err(|e| (0, e))?;
                                Self::read_batches(&mut c, wire, &mut hits)
                            })
                    } else {
                        r
                    }
                }
            };
            let err = r.as_ref().err().map(|(_, e)| e);
            observe::request(&server.server.addr, "get_multi", started.elapsed(), err);
            if err.is_none() {
                let found = hits.iter().filter(|h| h.is_some()).count() as u64;
                observe::hits(&server.server.addr, found, idx.len() as u64 - found);
            }
            self.inner.observe(server, err);
            let failed_from = r.as_ref().err().map_or(idx.len(), |(from, _)| *from);
            for (j, (&i, hit)) in idx.iter().zip(hits).enumerate() {
                out[i] = Some(match &r {
                    Err((_, e)) if j >= failed_from => Err(e.clone()),
                    _ => Ok(hit),
                });
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    /// Read the replies to the get batches of `wire` into `hits`. On an error, the index of
    /// the first key without a result: bytes left after the last reply fail every key (a stray
    /// reply among them may have been taken for one).
    fn read_batches(
        conn: &mut Conn,
        wire: &[&[u8]],
        hits: &mut [Option<Item>],
    ) -> Result<(), (usize, Error)> {
        let chunks = wire.len().div_ceil(GET_BATCH);
        for (ci, chunk) in wire.chunks(GET_BATCH).enumerate() {
            let base = ci * GET_BATCH;
            if let Err(e) = Self::read_hits(conn, chunk, |j, item| hits[base + j] = Some(item)) {
                // the replies to the later batches are still on the wire: never reuse
                if ci + 1 < chunks {
                    conn.mark_broken();
                }
                return Err((base, e));
            }
        }
        conn.end_exchange().map_err(|e| (0, e))
    }

    /// Pipelined writes per server: `make` gives each key's request, `parse` reads its reply.
    /// Only commands that are safe to repeat (see [`Resend`]) come here.
    fn write_multi<'r, 'a: 'r, T: Send>(
        &self,
        command: &'static str,
        routed: &'r [Option<Routed<'a>>],
        groups: Groups,
        make: impl Fn(usize, &'r [u8]) -> Request<'r> + Sync,
        parse: impl Fn(Reply, &mut Conn) -> Result<T> + Sync,
    ) -> Vec<(usize, Result<T>)> {
        self.fan_out(groups, |server, idx| {
            let started = Instant::now();
            let mut res: Vec<Option<Result<T>>> = idx.iter().map(|_| None).collect();
            let wire = |i: usize| routed[i].as_ref().map_or(&b""[..], |r| &r.wire[..]);
            let (r, counts) = self.exchange(server, Resend::Safe, |conn| {
                res.iter_mut().for_each(|r| *r = None);
                for (bi, batch) in idx.chunks(WRITE_BATCH).enumerate() {
                    conn.send_requests(batch.iter().map(|&i| make(i, wire(i))))?;
                    for j in 0..batch.len() {
                        let reply = conn.read_reply()?;
                        let r = parse(reply, conn);
                        let broken = conn.is_broken();
                        res[bi * WRITE_BATCH + j] = Some(r);
                        if broken {
                            return Err(Error::protocol(
                                conn.server(),
                                "connection dropped after an unexpected reply",
                            ));
                        }
                    }
                }
                // bytes after the last reply: a stray reply may have been taken for one of
                // ours, so none of the results can be trusted
                conn.end_exchange().inspect_err(|e| {
                    res.iter_mut().for_each(|r| *r = Some(Err(e.clone())));
                })
            });
            observe::request(
                &server.server.addr,
                command,
                started.elapsed(),
                r.as_ref().err(),
            );
            if counts {
                self.inner.observe(server, r.as_ref().err());
            }
            if let Err(e) = r {
                for r in res.iter_mut().filter(|r| r.is_none()) {
                    *r = Some(Err(e.clone()));
                }
            }
            idx.iter()
                .zip(res)
                .map(|(&i, r)| {
                    (
                        i,
                        r.unwrap_or_else(|| Err(Error::Config("no result".into()))),
                    )
                })
                .collect()
        })
    }

    /// Set many items: pipelined per server, servers in parallel. Results in input order.
    pub fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
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
        let (routed, mut groups) =
            self.group(items.iter().map(|(k, _)| k.as_ref()), &mut out, true);
        for (_, idx) in &mut groups {
            idx.retain(|&i| out[i].is_none());
        }
        groups.retain(|(_, idx)| !idx.is_empty());
        let results = self.write_multi(
            "set_multi",
            &routed,
            groups,
            |i, key| Request::Store {
                cmd: StoreCommand::Set,
                key,
                flags,
                exptime,
                value: items[i].1.as_ref(),
                noreply: false,
            },
            |reply, conn| check_store(reply, conn, "set"),
        );
        for (i, r) in results {
            out[i] = Some(r);
        }
        self.forget_all(items.iter().map(|(k, _)| k.as_ref()));
        out.into_iter()
            .map(|r| r.unwrap_or(Err(Error::Config("no result".into()))))
            .collect()
    }

    /// Delete many keys: pipelined per server, servers in parallel. Results in input order.
    pub fn delete_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<DeleteOutcome>> {
        let mut out: Vec<Option<Result<DeleteOutcome>>> = (0..keys.len()).map(|_| None).collect();
        let (routed, groups) = self.group(keys.iter().map(|k| k.as_ref()), &mut out, true);
        let results = self.write_multi(
            "delete_multi",
            &routed,
            groups,
            |_, key| Request::Delete {
                key,
                noreply: false,
            },
            |reply, conn| match reply {
                Reply::Deleted => Ok(DeleteOutcome::Deleted),
                Reply::NotFound => Ok(DeleteOutcome::NotFound),
                other => Err(reply_error(other, conn, "delete")),
            },
        );
        for (i, r) in results {
            out[i] = Some(r);
        }
        self.forget_all(keys.iter().map(|k| k.as_ref()));
        out.into_iter()
            .map(|r| r.unwrap_or(Err(Error::Config("no result".into()))))
            .collect()
    }

    /// Set many items with `noreply`, then one `version` per server to learn that the server
    /// has read them all. memcached still answers errors to noreply commands; a server that
    /// sent any gives an error for each of its keys (which key failed is not knowable).
    pub fn set_multi_noreply<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        &self,
        items: &[(K, V)],
        flags: u32,
        exptime: u32,
    ) -> Vec<Result<()>> {
        let mut out: Vec<Option<Result<()>>> = (0..items.len()).map(|_| None).collect();
        for (i, (_, v)) in items.iter().enumerate() {
            if let Err(e) = self.check_value(v.as_ref()) {
                out[i] = Some(Err(e));
            }
        }
        let (routed, mut groups) =
            self.group(items.iter().map(|(k, _)| k.as_ref()), &mut out, true);
        for (_, idx) in &mut groups {
            idx.retain(|&i| out[i].is_none());
        }
        groups.retain(|(_, idx)| !idx.is_empty());
        let results = self.fan_out(groups, |server, idx| {
            // noreply sets are as safe to repeat as sets (see Resend)
            let (r, counts) = self.exchange(server, Resend::Safe, |conn| {
                let mut errors = Vec::new();
                for batch in idx.chunks(WRITE_BATCH) {
                    let reqs = batch.iter().map(|&i| Request::Store {
                        cmd: StoreCommand::Set,
                        key: routed[i].as_ref().map_or(&b""[..], |r| &r.wire[..]),
                        flags,
                        exptime,
                        value: items[i].1.as_ref(),
                        noreply: true,
                    });
                    conn.send_requests(reqs.chain([Request::Version]))?;
                    // within one read timeout: at most one error per set, then the version
                    let budget = LineBudget::noreply(batch.len());
                    conn.read_lines(budget, |conn, reply| {
                        match reply {
                            Reply::Version(_) => return Ok(Some(())),
                            Reply::Error => errors.push("ERROR".to_string()),
                            Reply::ClientError(m) => errors.push(format!("CLIENT_ERROR {m}")),
                            Reply::ServerError(m) => errors.push(format!("SERVER_ERROR {m}")),
                            other => return Err(conn.unexpected(&other, "noreply set")),
                        }
                        Ok(None)
                    })?;
                }
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(Error::Server {
                        server: conn.server().to_string(),
                        message: format!(
                            "{} of {} noreply sets failed, first: {}",
                            errors.len(),
                            idx.len(),
                            errors[0]
                        ),
                    })
                }
            });
            if counts {
                self.inner.observe(server, r.as_ref().err());
            }
            idx.iter().map(|&i| (i, r.clone())).collect()
        });
        for (i, r) in results {
            out[i] = Some(r);
        }
        self.forget_all(items.iter().map(|(k, _)| k.as_ref()));
        out.into_iter()
            .map(|r| r.unwrap_or(Err(Error::Config("no result".into()))))
            .collect()
    }

    /// Run one request on every server, in parallel; results in server order.
    fn on_all<T: Send>(
        &self,
        command: &'static str,
        f: impl Fn(&mut Conn) -> Result<T> + Sync,
    ) -> Vec<(Server, Result<T>)> {
        let view = self.inner.view.load_full();
        let groups = view
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.clone(), vec![i]))
            .collect();
        let mut res = self.fan_out(groups, |m, idx| {
            vec![(idx[0], self.on_server(m, command, Resend::Safe, &f))]
        });
        res.sort_by_key(|(i, _)| *i);
        res.into_iter()
            .map(|(i, r)| (view.members[i].server.clone(), r))
            .collect()
    }

    /// `version` of every server.
    pub fn version(&self) -> Vec<(Server, Result<String>)> {
        self.on_all("version", |c| {
            c.send_requests([Request::Version])?;
            match c.read_reply()? {
                Reply::Version(v) => Ok(v),
                other => Err(reply_error(other, c, "version")),
            }
        })
    }

    /// `flush_all [delay]` on every server.
    pub fn flush_all(&self, delay: Option<u32>) -> Vec<(Server, Result<()>)> {
        if let Some(near) = &self.inner.near {
            near.clear();
        }
        self.on_all("flush_all", |c| {
            c.send_requests([Request::FlushAll {
                delay,
                noreply: false,
            }])?;
            match c.read_reply()? {
                Reply::Ok => Ok(()),
                other => Err(reply_error(other, c, "flush_all")),
            }
        })
    }

    /// `verbosity level` on every server.
    pub fn verbosity(&self, level: u32) -> Vec<(Server, Result<()>)> {
        self.on_all("verbosity", |c| {
            c.send_requests([Request::Verbosity {
                level,
                noreply: false,
            }])?;
            match c.read_reply()? {
                Reply::Ok => Ok(()),
                other => Err(reply_error(other, c, "verbosity")),
            }
        })
    }

    /// `stats [group]` of every server, as `(name, value)` pairs.
    pub fn stats(&self, group: Option<&str>) -> Vec<(Server, Result<Stats>)> {
        if let Some(g) = group.filter(|g| g.is_empty() || g.bytes().any(|b| b <= b' ' || b == 0x7f))
        {
            let e = Error::Config(format!("stats group {g:?} must be one word"));
            return self
                .ring()
                .servers()
                .iter()
                .map(|s| (s.clone(), Err(e.clone())))
                .collect();
        }
        self.on_all("stats", |c| {
            c.send_requests([Request::Stats { group }])?;
            // the whole reply within one read timeout, at most LineBudget::STATS
            let mut v = Vec::new();
            c.read_lines(LineBudget::STATS, |c, reply| match reply {
                Reply::Stat(k, val) => {
                    v.push((k, val));
                    Ok(None)
                }
                Reply::End => Ok(Some(())),
                other => Err(reply_error(other, c, "stats")),
            })?;
            Ok(v)
        })
    }
}
