//! The async client: the core's routing, failure policy and exchanges over tokio, one bb8
//! pool per server. Only I/O lives here.

use super::conn::AsyncConn;
use super::pool::{ConnectFailure, Pool, Pooled};
use super::prober;
use crate::core::Core;
use crate::core::exchange::{Exchange, Single};
use crate::core::failure::call::{Call, Failed, after_failure};
use crate::core::large;
use crate::core::transport::{Transport, Work};
use crate::core::view::Member;
use crate::error::{Error, Result};
use crate::observe;
use crate::observe::span::Listed;
use crate::outcome::*;
use crate::servers::Server;
use crate::settings::Builder;
use futures_util::future::{Either, join_all, select};
use std::sync::Arc;
use std::time::Duration;

pub(crate) type Shared = Core<Pool>;
/// One configured server of this client: its pool, health and rejoin log.
pub(crate) type ServerOf = Member<Pool>;

/// An async pooled memcached client over a ketama ring: the blocking
/// [`Client`](crate::Client)'s commands, options and outcomes, each an `async fn`. Cheap to
/// clone (an `Arc`), `Send + Sync`; every future is `Send` and cancel-safe.
///
/// ```no_run
/// # async fn demo() -> memshard::Result<()> {
/// use memshard::aio::Client;
/// use std::time::Duration;
/// let client = Client::builder()
///     .server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?
///     .pool_size(4)
///     .read_timeout(Duration::from_millis(250))
///     .build()?; // inside a tokio runtime
/// let _ = client.set("greeting", "hello", memshard::Expiry::NEVER).await?;
/// assert_eq!(client.get("greeting").await?.unwrap().value, "hello");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) core: Arc<Shared>,
    /// The runtime the client was built in: pools for servers added later and the prober
    /// run there.
    runtime: tokio::runtime::Handle,
    /// The discovery poll, with [`Builder::discover`]; it ends with the last clone.
    discovery: Option<Arc<crate::discovery::Poller>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.core.describe("aio::Client", f)
    }
}

impl Builder<Client> {
    /// Build the ring and one bb8 pool per server. Must be called inside a tokio runtime (the
    /// pools run their upkeep as tasks). No connection is opened unless `min_idle` asks.
    /// Settings that cannot work fail here with [`Error::Setting`].
    pub fn build(self) -> Result<Client> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(Error::Config(
                "the async client must be built inside a tokio runtime".into(),
            ));
        };
        let mut settings = self.checked()?;
        // the first configuration is read before the client exists, blocking this thread
        // for at most the connect and read timeouts per node asked
        let first = crate::discovery::first(&mut settings)?;
        let (conn, pool, rt) = (settings.conn.clone(), settings.pool, runtime.clone());
        let make = move |s: &Server| {
            // bb8 runs its upkeep as tasks of the client's runtime, whoever adds the server
            let _in_runtime = rt.enter();
            Pool::new(s, conn.for_server(s), pool)
        };
        let check = settings.placement_check;
        let core = Arc::new(Core::new(settings, Box::new(make))?);
        let discovery = crate::discovery::start(&core, first).map(Arc::new);
        let client = Client {
            core,
            runtime,
            discovery,
        };
        if let Some(n) = check {
            // reported through the observers; the client is usable meanwhile
            let c = client.clone();
            client.runtime.spawn(async move {
                c.check_placement(n).await;
            });
        }
        Ok(client)
    }
}

/// An exchange back with its outcome.
type Done<E> = (E, Result<<E as Exchange>::Output>);

/// A connection leased for one exchange from the pool (given back to it when the exchange is
/// over, see [`Pool::give_back`]); the one for the retry after a stale connection too.
enum Lease<'m> {
    Pooled(Option<Pooled>, &'m Pool),
}

impl Lease<'_> {
    fn conn(&mut self) -> Option<&mut AsyncConn> {
        match self {
            Lease::Pooled(c, _) => c.as_deref_mut().map(|c| &mut **c),
        }
    }

    /// `ex` on the leased connection.
    async fn run<E: Exchange + Send>(&mut self, ex: &mut E) -> Result<E::Output> {
        match self.conn() {
            Some(c) => c.run(ex).await,
            None => Err(Error::Config("the leased connection was given back".into())),
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        match self {
            // in flight (its future was dropped mid-exchange) or broken: closed, never reused
            Lease::Pooled(c, pool) => {
                if let Some(c) = c.take() {
                    pool.give_back(c);
                }
            }
        }
    }
}

impl Client {
    crate::core::api::membership_methods!();
    crate::core::api::command_methods!(async await);
    crate::core::api::stampede_methods!(
        [F: FnOnce() -> Fut, Fut: std::future::Future<Output = std::result::Result<V, E>>, V, E],
        as_is,
        async await
    );

    /// A connection to `m`, unless it is marked down: a pooled one that passes
    /// [`AsyncConn::idle_check`] (one that fails it is dropped and the next taken, without
    /// counting against the server, as the blocking pool does), else a new one; `fresh`:
    /// always a new one. Failures are counted here, each connect failure once.
    async fn lease<'m>(&self, m: &'m Arc<ServerOf>, fresh: bool) -> Result<Lease<'m>> {
        self.core.available(m)?;
        if fresh {
            return self.fresh(m).await;
        }
        let waited = observe::Started::now();
        // Each pass drops one stale pooled connection; a pool holds at most `size`.
        for _ in 0..=m.pool.size {
            let mut c = match m.pool.take_idle() {
                Some(c) => c,
                None => self.pooled(m).await?,
            };
            if !m.pool.is_current(&c) {
                c.link.mark_broken();
                continue;
            }
            if c.idle_check().is_err() {
                // Broken now: bb8 closes it. Not counted, whether it served requests or sat
                // unused since `min_idle` opened it (the server's idle timeout closes both); a
                // server that closes every new connection fails the fresh one below, which
                // counts.
                continue;
            }
            c.link.checked_out();
            if self.core.settings.pool.ping
                && let Err(e) = c.run(&mut Single::version()).await
            {
                if c.link.failed_stale() {
                    continue;
                }
                self.count(m, &e);
                return Err(e);
            }
            observe::pool_wait(&m.observe, waited.elapsed());
            return Ok(Lease::Pooled(Some(c), &m.pool));
        }
        self.fresh(m).await
    }

    /// A new connection to `m`, in a slot of its pool: every connection counts against
    /// `pool_size`, this one too. A connection the pool just made for this checkout is that
    /// new connection; an idle one that served requests before is closed first and a new one
    /// made in its slot, so the server never holds more than `pool_size`.
    async fn fresh<'m>(&self, m: &'m Arc<ServerOf>) -> Result<Lease<'m>> {
        let mut slot = match m.pool.take_idle() {
            Some(c) => c,
            None => {
                let mut c = self.pooled(m).await?;
                if c.link.is_unused() && c.idle_check().is_ok() {
                    c.link.checked_out();
                    return Ok(Lease::Pooled(Some(c), &m.pool));
                }
                c
            }
        };
        slot.shut();
        match m.pool.bb8.dedicated_connection().await {
            Ok(c) => {
                *slot = c;
                Ok(Lease::Pooled(Some(slot), &m.pool))
            }
            // the slot's connection is broken: bb8 closes it and frees the slot
            Err(e) => {
                self.count(m, &e);
                Err(e)
            }
        }
    }

    /// A connection from `m`'s pool. A connect that fails while this checkout waits ends the
    /// wait at once with the connect error (bb8 alone would wait out the checkout timeout).
    async fn pooled(&self, m: &Arc<ServerOf>) -> Result<Pooled> {
        let (_waiting, given_back) = m.pool.wait();
        if let Some(c) = given_back {
            return Ok(c);
        }
        let mut failures = m.pool.failures.subscribe();
        let failed = async move {
            match failures.changed().await {
                Ok(()) => failures.borrow_and_update().clone(),
                // the sender lives as long as the member: never
                Err(_) => std::future::pending().await,
            }
        };
        let handed = m.pool.queue();
        let handed = async move {
            match handed.await {
                Ok(c) => c,
                // not handed anything: bb8 answers, or the checkout times out
                Err(_) => std::future::pending().await,
            }
        };
        let (get, handed) = (
            std::pin::pin!(m.pool.bb8.get_owned()),
            std::pin::pin!(handed),
        );
        let from_bb8 = select(get, handed);
        let got = match select(std::pin::pin!(from_bb8), std::pin::pin!(failed)).await {
            Either::Left((Either::Left((got, _)), _)) => got,
            Either::Left((Either::Right((c, _)), _)) => return Ok(c),
            Either::Right((Some(f), _)) => return Err(self.connect_failed(m, f)),
            Either::Right((None, _)) => Err(bb8::RunError::TimedOut),
        };
        let err = match got {
            Ok(c) => return Ok(c),
            Err(bb8::RunError::User(e)) => e,
            Err(bb8::RunError::TimedOut) => self.timed_out(m),
        };
        self.count(m, &err);
        Err(err)
    }

    /// The error for a checkout that waited out the checkout timeout.
    fn timed_out(&self, m: &ServerOf) -> Error {
        let state = m.pool.bb8.state();
        // every connection the pool may hold exists and is in use: the pool is too small for
        // the load, which says nothing about the server
        let exhausted = state.idle_connections == 0 && state.connections >= m.pool.size;
        // the server accepted a new connection and has not answered its login
        if !exhausted && m.pool.logging_in() {
            return Error::Timeout {
                server: m.server.addr.clone(),
                op: "login",
                after: m.pool.checkout_timeout,
            };
        }
        let last = m
            .pool
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
                (false, Some(e)) => {
                    format!("timed out waiting for a connection; the last connect error was: {e}")
                }
                (false, None) => "timed out waiting for a connection".into(),
            },
            exhausted,
        }
    }

    /// The error for a checkout ended by connect failure `f`; counted for the server if no
    /// other checkout counted it.
    fn connect_failed(&self, m: &Arc<ServerOf>, f: ConnectFailure) -> Error {
        if m.pool.first_to_count(&f) {
            self.count(m, &f.error);
        }
        f.error
    }

    /// Count a checkout failure for `m`'s health.
    fn count(&self, m: &Arc<ServerOf>, e: &Error) {
        if self.core.observe(m, Some(e)) {
            prober::start(&self.core, &self.runtime);
        }
    }

    /// `ex` on a leased connection to `m`, and once more on a new connection if that failed
    /// only because the connection was stale and `ex` may be sent again. Also whether the
    /// outcome is still to be counted for the server (a failed lease counted itself).
    async fn exchange<E: Exchange + Send>(
        &self,
        m: &Arc<ServerOf>,
        ex: &mut E,
    ) -> (Result<E::Output>, bool) {
        let mut lease = match self.lease(m, false).await {
            Ok(l) => l,
            Err(e) => return (Err(e), false),
        };
        let e = match lease.run(ex).await {
            Ok(v) => return (Ok(v), true),
            Err(e) => e,
        };
        let (verdict, broken) = match lease.conn() {
            Some(c) => {
                let verdict = after_failure(e, &c.link, ex.resend());
                (verdict, c.link.is_broken())
            }
            None => return (Err(e), true),
        };
        drop(lease);
        if broken {
            m.pool.recheck_address().await;
        }
        match verdict {
            Failed::Final { error, counts } => (Err(error), counts),
            Failed::Retry => {
                ex.restart();
                match self.lease(m, true).await {
                    Ok(mut again) => (again.run(ex).await, true),
                    Err(e) => (Err(e), false),
                }
            }
        }
    }

    /// Run `ex` with `m` (see [`Client::exchange`]) and count the outcome.
    async fn on<E: Exchange + Send>(&self, m: &Arc<ServerOf>, ex: &mut E) -> Result<E::Output> {
        let call = self.core.call(m, ex);
        let (r, counts) = call.span.run(self.exchange(m, ex)).await;
        self.ended(call, m, ex, r.as_ref().err(), counts);
        r
    }

    fn ended(
        &self,
        call: Call,
        m: &Arc<ServerOf>,
        ex: &impl Exchange,
        err: Option<&Error>,
        counts: bool,
    ) {
        if self.core.ended(call, m, ex, err, counts) {
            prober::start(&self.core, &self.runtime);
        }
    }

    /// Get many keys: one pipelined request per server, all servers concurrently. Results are
    /// in the order of `keys`; a failing server gives errors for its keys only.
    #[must_use = "each key has its own result"]
    pub async fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        let got = self.get_multi_raw(keys).await;
        large::complete_many(self, keys, got).await
    }

    /// `get_multi` of the items as stored (a large value's index as it is).
    async fn get_multi_raw<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        self.core.note_keys(keys);
        let span = observe::span::command(&self.core.settings, "get_multi", &Listed(keys));
        let mut tally = span.tally();
        let (batch, mut out) = self.core.read_batch(keys);
        let (exs, mut landing) = batch.retrievals(&mut out);
        let runs = batch.groups.iter().zip(exs).map(|(g, mut ex)| async move {
            let r = self.on(g.member, &mut ex).await;
            (ex, r)
        });
        // each server's span is made while this future runs in the command's: its parent
        let done = span.run(join_all(runs)).await;
        for (gi, (mut ex, r)) in done.into_iter().enumerate() {
            tally.add(|| ex.hits(), r.as_ref().err());
            batch.settle_group(&self.core, gi, &mut ex, r.err().as_ref(), &mut landing);
        }
        batch.land(&self.core, &mut out, landing);
        span.close(tally);
        out
    }

    /// Each exchange with its server, all concurrently; the exchanges back with their
    /// outcomes, in the order given.
    async fn on_each<E: Work>(&self, work: Vec<(Arc<ServerOf>, E)>) -> Vec<Done<E>> {
        let runs = work.into_iter().map(|(m, mut ex)| async move {
            let r = self.on(&m, &mut ex).await;
            (ex, r)
        });
        join_all(runs).await
    }
}

/// The async client's I/O for the flows written once for both clients (see
/// [`crate::core::transport`]): its own futures.
impl Transport for Client {
    type Pool = Pool;

    fn core(&self) -> &Shared {
        &self.core
    }

    fn written_elsewhere(&self, key: &[u8]) -> Result<()> {
        if self.core.written_elsewhere(key)? {
            prober::start(&self.core, &self.runtime);
        }
        Ok(())
    }

    async fn pause(&self, pause: Duration) {
        tokio::time::sleep(pause).await;
    }

    async fn on<E: Work>(&self, m: &Arc<ServerOf>, ex: &mut E) -> Result<E::Output> {
        Client::on(self, m, ex).await
    }

    async fn on_each<E: Work>(&self, work: Vec<(Arc<ServerOf>, E)>) -> Vec<Done<E>> {
        Client::on_each(self, work).await
    }

    async fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        Client::get_multi(self, keys).await
    }

    async fn get_multi_raw<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        Client::get_multi_raw(self, keys).await
    }
}
