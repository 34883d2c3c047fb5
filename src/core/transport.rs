//! The contract between the two clients and the code written once for both.
//!
//! Every command flow that is more than one call — a single-key command, the lease loop of
//! `get_or_compute` (`leased`), the reads and writes of a `Replicated` key
//! (`replicated`), each route of a `Router` (`routes::flow`) — is an ordinary
//! generic `async fn` over a [`Transport`]: the few operations that move bytes or wait, which
//! each client implements its own way. The public methods, generated for both clients by the
//! macros of `api` and `routes::handle`, only call such a flow: the async
//! client `.await`s it, the blocking client runs it with [`now`].
//!
//! The blocking client's transport does its work when called and returns a future that is
//! already ready ([`std::future::ready`]; `pause` sleeps the thread), so a flow over it never
//! waits: [`now`] polls it once and has its output.

use super::Core;
use super::exchange::Exchange;
use super::failure::eject::ServerPool;
use super::view::Member;
use crate::error::{Error, Result};
use crate::outcome::Item;
use crate::servers::Server;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// An exchange a transport runs: it and its output may cross threads (the async client's
/// futures hold them).
pub(crate) trait Work: Exchange<Output: Send> + Send {}

impl<E: Exchange<Output: Send> + Send> Work for E {}

/// What a client provides to the flows written once for both clients: its core, and its I/O.
/// Every future is `Send` (the async client's are held across `.await` in axum handlers and
/// spawned tasks); the blocking client's are ready when returned.
pub(crate) trait Transport: Sync {
    /// The pool of one server.
    type Pool: ServerPool + Send + Sync;

    /// The sans-IO state the client shares between its requests.
    fn core(&self) -> &Core<Self::Pool>;

    /// Run `ex` with `m`, once more on a new connection after a stale one, and count the
    /// outcome for `m`'s health.
    fn on<E: Work>(
        &self,
        m: &Arc<Member<Self::Pool>>,
        ex: &mut E,
    ) -> impl Future<Output = Result<E::Output>> + Send;

    /// Each exchange with its server, servers in parallel; the exchanges back with their
    /// outcomes, in the order given.
    fn on_each<E: Work>(
        &self,
        work: Vec<(Arc<Member<Self::Pool>>, E)>,
    ) -> impl Future<Output = Vec<(E, Result<E::Output>)>> + Send;

    /// The client's own `get_multi`: one pipelined request per server, large values made
    /// whole.
    fn get_multi<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
    ) -> impl Future<Output = Vec<Result<Option<Item>>>> + Send;

    /// `get_multi` of the items as stored: a large value's index as it is.
    fn get_multi_raw<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
    ) -> impl Future<Output = Vec<Result<Option<Item>>>> + Send;

    /// The wait between two reads of a key another caller is recomputing.
    fn pause(&self, pause: Duration) -> impl Future<Output = ()> + Send;

    /// `key` was written in another pool while its server failed: keep that server out of
    /// reads until the key is deleted there (see `Core::written_elsewhere`), and start the
    /// client's prober if it is not running.
    fn written_elsewhere(&self, key: &[u8]) -> Result<()>;
}

/// What a blocking call returns if its flow was not ready at its first poll, which its
/// transport never lets happen: the error in the shape of the call's output.
pub(crate) trait Stalled {
    /// `e` as this output; `servers` lists the servers for outputs with one entry per server.
    fn stalled(e: Error, servers: impl FnOnce() -> Vec<Server>) -> Self;
}

impl<T> Stalled for Result<T> {
    fn stalled(e: Error, _: impl FnOnce() -> Vec<Server>) -> Self {
        Err(e)
    }
}

impl<T> Stalled for Vec<Result<T>> {
    fn stalled(e: Error, _: impl FnOnce() -> Vec<Server>) -> Self {
        vec![Err(e)]
    }
}

impl<T> Stalled for Vec<(Server, Result<T>)> {
    fn stalled(e: Error, servers: impl FnOnce() -> Vec<Server>) -> Self {
        servers().into_iter().map(|s| (s, Err(e.clone()))).collect()
    }
}

impl Stalled for crate::outcome::PlacementCheck {
    fn stalled(e: Error, servers: impl FnOnce() -> Vec<Server>) -> Self {
        crate::outcome::PlacementCheck {
            servers: servers().into_iter().map(|s| (s, Err(e.clone()))).collect(),
        }
    }
}

/// The output of `flow`, a flow over `t`'s ready futures (the blocking client's): polled
/// once. Were it pending — a transport future that is not ready, a bug — the call fails with
/// [`Error::Config`] saying so rather than block or panic.
pub(crate) fn now<T: Transport, F: Future>(t: &T, flow: F) -> F::Output
where
    F::Output: Stalled,
{
    let flow = std::pin::pin!(flow);
    match flow.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => {
            let e = Error::Config(
                "internal error: a blocking call waited on a future that was not ready".into(),
            );
            F::Output::stalled(e, || t.core().ring().servers().to_vec())
        }
    }
}

/// Runs a flow in a generated method: `drive!(; t; flow)` with [`now`] for the blocking client
/// (`t`: a blocking transport), `drive!(await; t; flow)` with `.await` for the async client.
macro_rules! drive {
    (; $t:expr; $flow:expr) => {
        $crate::core::transport::now($t, $flow)
    };
    ($await:tt; $t:expr; $flow:expr) => {
        $flow.$await
    };
}

pub(crate) use drive;

/// Runs a hot path in a generated method: `hot!(; now; flow)` is the blocking client's own
/// direct call `now` (the flow's steps without a future), `hot!(await; now; flow)` the async
/// client's `flow.await`.
macro_rules! hot {
    (; $now:expr; $flow:expr) => {
        $now
    };
    ($await:tt; $now:expr; $flow:expr) => {
        $flow.$await
    };
}

pub(crate) use hot;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fake::Fake;

    #[test]
    fn a_flow_that_is_not_ready_fails_instead_of_blocking() {
        let f = Fake::new("127.0.0.1:1\n127.0.0.1:2", |b| b);
        let one: Result<()> = now(&f, std::future::pending());
        assert!(matches!(one, Err(Error::Config(ref m)) if m.starts_with("internal error")));
        let each: Vec<(Server, Result<()>)> = now(&f, std::future::pending());
        assert_eq!(each.len(), 2);
        assert!(each.iter().all(|(_, r)| r.is_err()));
        assert_eq!(now(&f, async { Ok(7) }).unwrap(), 7);
    }

    /// The async client's futures that run flows stay `Send` (held across `.await` in axum
    /// handlers, spawned): checked at compile time, never run.
    #[cfg(feature = "async")]
    #[allow(dead_code, clippy::let_underscore_future)]
    fn async_futures_are_send(c: &crate::aio::Client, r: &crate::aio::Router) {
        fn send<T: Send>(_: T) {}
        let recompute = || async { Ok::<_, std::io::Error>(b"v".to_vec()) };
        send(c.get_or_compute("k", crate::Expiry::NEVER, recompute));
        send(c.invalidate("k"));
        send(c.set_multi_noreply(&[("k", "v")], 0, crate::Expiry::NEVER));
        send(c.flush_all(None));
        send(c.stats(None));
        let rep = c.replicated("k", 2);
        send(rep.get());
        send(rep.set("v", 0, crate::Expiry::NEVER));
        send(rep.delete());
        send(r.get("k"));
        send(r.gets("k"));
        send(r.get_multi(&["k"]));
        send(r.set("k", "v", crate::Expiry::NEVER));
        send(r.delete("k"));
        send(r.incr("k", 1));
        send(r.set_multi(&[("k", "v")], 0, crate::Expiry::NEVER));
        send(r.delete_multi(&["k"]));
        send(r.verify("k"));
        #[cfg(feature = "codecs")]
        {
            let typed = || async { Ok::<_, std::io::Error>(7_i64) };
            send(c.get_or_compute_as("k", crate::Expiry::NEVER, typed));
            send(c.get_as::<i64>("k"));
            send(c.set_value("k", &7_i64, crate::Expiry::NEVER));
        }
    }
}
