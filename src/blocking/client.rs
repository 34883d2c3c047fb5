//! The blocking client: routes every command to the owner of its key, runs the core's
//! exchanges on pooled connections in the caller's thread, and fans multi-key operations out
//! across servers.

use super::conn;
use super::fan_out::fan_out;
use super::pool::{Pool, Pooled};
use super::prober;
use crate::core::Core;
use crate::core::exchange::{Exchange, Retrieve, Single};
use crate::core::failure::call::{Failed, after_failure};
use crate::core::item_limit;
use crate::core::large;
use crate::core::ops::{self, Get};
use crate::core::transport::now;
use crate::core::transport::{Transport, Work};
use crate::core::view::Member;
use crate::error::Result;
use crate::observe;
use crate::observe::span::Listed;
use crate::outcome::*;
use crate::proto::StoreCommand;
use crate::servers::Server;
use crate::settings::Builder;
use std::future::{Ready, ready};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(crate) type Shared = Core<Pool>;
/// One configured server of this client: its pool, health and rejoin log.
pub(crate) type ServerOf = Member<Pool>;

/// A pooled memcached client over a ketama ring. Cheap to clone (an `Arc`), `Send + Sync`.
///
/// ```no_run
/// use memshard::{Client, StoreOutcome};
/// let client = Client::builder().server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?.build()?;
/// assert_eq!(client.set("k", "v", std::time::Duration::from_secs(300))?, StoreOutcome::Stored);
/// assert_eq!(client.get("k")?.unwrap().value, "v");
/// # Ok::<(), memshard::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) core: Arc<Shared>,
    /// The discovery poll, with [`Builder::discover`]; it ends with the last clone.
    discovery: Option<Arc<crate::discovery::Poller>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.core.describe("Client", f)
    }
}

impl Builder<Client> {
    /// Build the ring and one pool per server. No connection is opened yet (unless
    /// `min_idle` asks for some, on first use), so a server that is down does not stop the
    /// build. Settings that cannot work fail here with [`Error::Setting`](crate::Error::Setting).
    pub fn build(self) -> Result<Client> {
        let mut settings = self.checked()?;
        let first = crate::discovery::first(&mut settings)?;
        let (conn, pool) = (settings.conn.clone(), settings.pool);
        let make = move |s: &Server| {
            Pool::new(s.connect_host(), s.port, &s.addr, conn.for_server(s), pool)
        };
        let check = settings.placement_check;
        let core = Arc::new(Core::new(settings, Box::new(make))?);
        let discovery = crate::discovery::start(&core, first).map(Arc::new);
        let client = Client { core, discovery };
        if let Some(n) = check {
            // reported through the observers; the build stands whatever it found
            let _ = client.check_placement(n);
        }
        Ok(client)
    }
}

impl Client {
    crate::core::api::membership_methods!();
    crate::core::api::command_methods!();
    crate::core::api::stampede_methods!([F: FnOnce() -> std::result::Result<V, E>, V, E], ready_now);

    /// `get` on the hot path: the steps of [`large::get`] without its future (but for
    /// making a large value whole).
    fn get_now(&self, key: &[u8]) -> Result<Option<Item>> {
        let item = match ops::get_begin(&self.core, key)? {
            Get::Near(item) => Some(item),
            Get::Ask(r) => {
                let keys = [&r.wire[..]];
                let mut ex = Retrieve::new(&keys, false, None);
                self.on(&r.member, &mut ex)?;
                ops::get_end(&self.core, key, &r.member, &mut ex)
            }
        };
        match item {
            Some(item) if self.core.settings.large_values.is_some() => {
                now(self, large::complete(self, key, item, None))
            }
            item => Ok(item),
        }
    }

    /// A storage command on the hot path: the steps of [`large::store`] without its future
    /// (but for a value in chunks, or one that needs the server's limit).
    fn store_now(
        &self,
        cmd: StoreCommand,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: crate::Expiry,
    ) -> Result<StoreOutcome> {
        let exptime = expiry.exptime_now();
        if large::chunked(self.core.settings.large_values, value) {
            return now(self, large::store(self, cmd, key, value, (flags, exptime)));
        }
        let r = self.core.route(key, true)?;
        let stored = self.core.keys.check_value(value).and_then(|()| {
            if item_limit::worth_asking(r.wire.len(), value.len(), flags) {
                now(
                    self,
                    ops::fits(self, &r.member, &r.wire, value.len(), flags),
                )?;
            }
            let mut ex = Single::store(cmd, &r.wire, value, flags, exptime);
            ops::sized(&r.member, value.len(), self.on(&r.member, &mut ex))
        });
        self.core.forget([key]);
        stored
    }

    /// A connection to `m`, unless it is marked down: a pooled one that passes its idle
    /// check, else a new one; `new`: always a new one (the retry after a stale connection).
    fn checkout<'m>(&self, m: &'m ServerOf, new: bool) -> Result<Pooled<'m>> {
        self.checkout_with(m, |pool| if new { pool.get_new() } else { pool.get() })
    }

    /// `get` of `m`'s pool, unless `m` is marked down, its wait observed.
    fn checkout_with<'m, T>(
        &self,
        m: &'m ServerOf,
        get: impl FnOnce(&'m Pool) -> Result<T>,
    ) -> Result<T> {
        self.core.available(m)?;
        let waited = Instant::now();
        let got = get(&m.pool);
        observe::pool_wait(&m.observe, waited.elapsed());
        got
    }

    /// A connection to each of `members` (see [`Client::checkout`]), the idle checks of the
    /// pooled ones made with one `poll` over their sockets; a connection that had something
    /// waiting gets its own check, and one that fails it is replaced as a checkout would.
    fn checkout_many<'m>(
        &self,
        members: &'m [Arc<ServerOf>],
        calls: &[crate::core::failure::call::Call],
    ) -> Vec<Result<Pooled<'m>>> {
        let got: Vec<(Result<Pooled<'m>>, bool)> = members
            .iter()
            .zip(calls)
            .map(|(m, call)| {
                let _entered = call.span.enter();
                match self.checkout_with(m, Pool::get_unchecked) {
                    Ok((conn, unchecked)) => (Ok(conn), unchecked),
                    Err(e) => (Err(e), false),
                }
            })
            .collect();
        let fds: Vec<_> = got
            .iter()
            .filter_map(|(c, unchecked)| c.as_ref().ok().filter(|_| *unchecked)?.idle_fd())
            .collect();
        let mut quiet = conn::quiet(&fds).unwrap_or_default().into_iter();
        got.into_iter()
            .zip(members)
            .zip(calls)
            .map(|(((conn, unchecked), m), call)| {
                let mut c = match conn {
                    Ok(c) if unchecked => c,
                    other => return other,
                };
                // `quiet` empty (the poll failed): each connection checked alone
                let passed = match quiet.next() {
                    Some(true) => c.idle_quiet(),
                    _ => c.idle_check(),
                };
                if passed.is_ok() {
                    return Ok(c);
                }
                // closed first: its slot is free for the checkout's new one
                c.discard();
                let _entered = call.span.enter();
                self.checkout(m, false)
            })
            .collect()
    }

    /// `ex` on a pooled connection to `m`, and once more on a new connection if that failed
    /// only because the connection was stale and `ex` may be sent again. Also whether the
    /// outcome tells anything about the server.
    fn exchange<E: Exchange>(&self, m: &ServerOf, ex: &mut E) -> (Result<E::Output>, bool) {
        let mut conn = match self.checkout(m, false) {
            Ok(c) => c,
            Err(e) => return (Err(e), true),
        };
        match conn.run(ex) {
            Ok(v) => (Ok(v), true),
            Err(e) => self.after_failure(m, conn, e, ex),
        }
    }

    /// `ex` failed with `e` on `conn`: once more on a new connection after a stale one, if
    /// `ex` may be sent again (see [`after_failure`]).
    fn after_failure<E: Exchange>(
        &self,
        m: &ServerOf,
        conn: Pooled<'_>,
        e: crate::Error,
        ex: &mut E,
    ) -> (Result<E::Output>, bool) {
        match after_failure(e, &conn.link, ex.resend()) {
            Failed::Final { error, counts } => (Err(error), counts),
            Failed::Retry => {
                drop(conn);
                ex.restart();
                (self.checkout(m, true).and_then(|mut c| c.run(ex)), true)
            }
        }
    }

    /// Run `ex` with `m` (see [`Client::exchange`]) and count the outcome.
    fn on<E: Exchange>(&self, m: &Arc<ServerOf>, ex: &mut E) -> Result<E::Output> {
        let call = self.core.call(m, ex);
        let (r, counts) = {
            let _entered = call.span.enter();
            self.exchange(m, ex)
        };
        self.ended(call, m, ex, r.as_ref().err(), counts);
        r
    }

    fn ended(
        &self,
        call: crate::core::failure::call::Call,
        m: &Arc<ServerOf>,
        ex: &impl Exchange,
        err: Option<&crate::Error>,
        counts: bool,
    ) {
        if self.core.ended(call, m, ex, err, counts) {
            prober::start(&self.core);
        }
    }

    /// Get many keys: one pipelined request per server, servers in parallel. Results are in
    /// the order of `keys`; a failing server gives errors for its keys only.
    #[must_use = "each key has its own result"]
    pub fn get_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        let got = self.get_multi_raw(keys);
        if self.core.settings.large_values.is_none() {
            return got;
        }
        now(self, large::complete_many(self, keys, got))
    }

    /// `get_multi` of the items as stored (a large value's index as it is).
    fn get_multi_raw<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Item>>> {
        self.core.note_keys(keys);
        // the command's span, entered while each server's span is made: their parent
        let span = observe::span::command(&self.core.settings, "get_multi", &Listed(keys));
        let _entered = span.enter();
        let mut tally = span.tally();
        let (batch, mut out) = self.core.read_batch(keys);
        let (mut exs, mut landing) = batch.retrievals(&mut out);
        // Like libmemcached's mget: first one write to every server, then read the replies
        // server by server. The servers work in parallel while we read; no thread is spawned
        // (spawning one per server cost more than the whole exchange on loopback).
        let members: Vec<_> = batch.groups.iter().map(|g| g.member.clone()).collect();
        let calls: Vec<_> = members
            .iter()
            .zip(&exs)
            .map(|(m, ex)| self.core.call(m, ex))
            .collect();
        let conns = self.checkout_many(&members, &calls);
        let started: Vec<Result<(Pooled, Result<()>)>> = conns
            .into_iter()
            .zip(&mut exs)
            .zip(&calls)
            .map(|((conn, ex), call)| {
                let _entered = call.span.enter();
                let mut conn = conn?;
                let wrote = conn.start(ex).map(drop);
                Ok((conn, wrote))
            })
            .collect();
        let each = members.iter().zip(&mut exs).zip(calls).zip(started);
        for (gi, (((m, ex), call), conn)) in each.enumerate() {
            let (r, counts) = {
                let _entered = call.span.enter();
                match conn {
                    Err(e) => (Err(e), true),
                    Ok((conn, wrote)) => self.finish_multi_get(m, conn, wrote, ex),
                }
            };
            tally.add(|| ex.hits(), r.as_ref().err());
            self.ended(call, m, ex, r.as_ref().err(), counts);
            batch.settle_group(&self.core, gi, ex, r.err().as_ref(), &mut landing);
        }
        drop(exs);
        batch.land(&self.core, &mut out, landing);
        span.close(tally);
        out
    }

    /// Read the replies of `m`'s group on `conn` (where `ex` was started and `wrote` its
    /// requests), or after a stale connection, once more on a new one.
    fn finish_multi_get(
        &self,
        m: &ServerOf,
        mut conn: Pooled<'_>,
        wrote: Result<()>,
        ex: &mut Retrieve<'_, impl AsRef<[u8]>>,
    ) -> (Result<()>, bool) {
        match wrote.and_then(|()| conn.finish(ex)) {
            Ok(()) => (Ok(()), true),
            Err(e) => self.after_failure(m, conn, e, ex),
        }
    }

    /// Each exchange with its server, servers in parallel (at most [`fan_out`]'s threads);
    /// the exchanges back with their outcomes, in the order given.
    fn on_each<E: Work>(&self, work: Vec<(Arc<ServerOf>, E)>) -> Vec<Done<E>> {
        // each job takes its exchange out of its cell, runs it, and gives it back
        let cells: Vec<_> = work
            .into_iter()
            .map(|(m, ex)| (m, Mutex::new(ex)))
            .collect();
        // the command's span, entered on each fan-out thread: the parent of the servers' spans
        let parent = observe::span::Carried::here();
        let outcomes = fan_out(&cells, |(m, ex)| {
            let _entered = parent.enter();
            let mut ex = ex.lock().unwrap_or_else(PoisonError::into_inner);
            self.on(m, &mut *ex)
        });
        let exs = cells
            .into_iter()
            .map(|(_, ex)| ex.into_inner().unwrap_or_else(PoisonError::into_inner));
        exs.zip(outcomes).collect()
    }
}

/// The blocking client's I/O for the flows written once for both clients: each call does its
/// work in the caller's thread and returns its outcome ready (see [`crate::core::transport`]).
/// The return types say so: `Ready`, where the trait asks for any `Send` future.
#[allow(refining_impl_trait)]
impl Transport for Client {
    type Pool = Pool;

    fn core(&self) -> &Shared {
        &self.core
    }

    fn on<E: Work>(&self, m: &Arc<ServerOf>, ex: &mut E) -> Ready<Result<E::Output>> {
        ready(Client::on(self, m, ex))
    }

    fn on_each<E: Work>(&self, work: Vec<(Arc<ServerOf>, E)>) -> Ready<Vec<Done<E>>> {
        ready(Client::on_each(self, work))
    }

    fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Ready<Vec<Result<Option<Item>>>> {
        ready(Client::get_multi(self, keys))
    }

    fn get_multi_raw<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Ready<Vec<Result<Option<Item>>>> {
        ready(Client::get_multi_raw(self, keys))
    }

    fn pause(&self, pause: Duration) -> Ready<()> {
        std::thread::sleep(pause);
        ready(())
    }

    fn written_elsewhere(&self, key: &[u8]) -> Result<()> {
        if self.core.written_elsewhere(key)? {
            prober::start(&self.core);
        }
        Ok(())
    }
}

/// An exchange back with its outcome.
type Done<E> = (E, Result<<E as Exchange>::Output>);
