//! Outcomes → health → ejection: what a request's outcome does to its server, when a down
//! server may be tried again, and which down servers the prober watches. One prober (a thread
//! for the blocking client, a task for the async one) probes every down server of a client.

use super::health::{Availability, Transition};
use super::rejoin::Cleanup;
use crate::core::Core;
use crate::core::view::Member;
use crate::error::{Error, Result};
use crate::observe;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the core asks of a client's per-server pool.
pub(crate) trait ServerPool {
    /// The server went down: its pooled connections may outlive the server process, never
    /// reuse them.
    fn invalidate(&self);
}

/// The longest the prober sleeps between rounds.
const MAX_PROBE_WAIT: Duration = Duration::from_millis(100);

impl<P: ServerPool> Core<P> {
    /// Count the outcome of talking to `m`. Errors about the request itself say nothing about
    /// the server; an error reply means it is alive. True when the caller must start the
    /// prober (see [`Core::probe_round`]).
    #[must_use]
    pub(crate) fn observe(&self, m: &Arc<Member<P>>, err: Option<&Error>) -> bool {
        let t = match err {
            None | Some(Error::Server { .. }) => m.health.success(),
            Some(e) if e.is_server_failure() => {
                m.health
                    .failure(&self.failures.policy, self.failures.epoch, Instant::now())
            }
            Some(_) => Transition::None,
        };
        match t {
            Transition::WentDown => {
                if self.failures.policy.auto_eject {
                    // before the routing changes: every write routed away is recorded
                    m.rejoin.went_out();
                }
                m.pool.invalidate();
                observe::ejected(&m.server.addr);
                self.rebuild_routing();
                self.watch_down(m)
            }
            Transition::CameBack if m.rejoin.is_out() => {
                // a request that started before the ejection answered: the server may not take
                // reads before the prober has cleaned its stale keys
                m.health
                    .hold_down(&self.failures.policy, self.failures.epoch, Instant::now());
                self.watch_down(m)
            }
            Transition::CameBack => {
                self.rebuild_routing();
                false
            }
            Transition::None => false,
        }
    }

    /// A route wrote or deleted `key` on another pool while its owner here failed or refused
    /// it: record the key (as sent) in the owner's rejoin log and keep the owner out of reads
    /// until the prober has deleted it there, as auto-eject does for the keys it moves. A
    /// server already down keeps its retry time (holding it again on every write would keep
    /// a busy server out for ever). True when the caller must start the prober.
    pub(crate) fn written_elsewhere(&self, key: &[u8]) -> Result<bool> {
        let wire = self.keys.wire(key)?;
        let hashed = self.keys.hashed(key, &wire);
        let view = self.view();
        let Some(m) = view.full.route(hashed).and_then(|i| view.members.get(i)) else {
            return Ok(false);
        };
        m.rejoin.went_out();
        m.rejoin.record(&wire);
        if !m.health.is_down()
            && m.health
                .hold_down(&self.failures.policy, self.failures.epoch, Instant::now())
                == Transition::WentDown
        {
            m.pool.invalidate();
            observe::ejected(&m.server.addr);
            self.rebuild_routing();
        }
        Ok(self.watch_down(m))
    }

    /// The prober could not delete `left` (copies of another server's keys) on fallback `f`,
    /// or `f` is down: `f` deletes them itself before it takes reads again (its rejoin log),
    /// and is kept out of reads until it has. Called by the prober, which then watches it too.
    pub(crate) fn hand_over(&self, f: &Arc<Member<P>>, left: Cleanup) {
        // recorded before the routing changes: writes routed away from it are recorded too
        f.rejoin.hand_over(left);
        if !f.health.is_down()
            && f.health
                .hold_down(&self.failures.policy, self.failures.epoch, Instant::now())
                == Transition::WentDown
        {
            f.pool.invalidate();
            observe::ejected(&f.server.addr);
            self.rebuild_routing();
        }
        // the prober calling this runs: nothing to start
        let _ = self.watch_down(f);
    }

    /// Have the prober watch `m`; true when no prober runs yet (the caller starts one).
    fn watch_down(&self, m: &Arc<Member<P>>) -> bool {
        let mut probes = self
            .failures
            .probes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !probes.members.iter().any(|x| Arc::ptr_eq(x, m)) {
            probes.members.push(m.clone());
        }
        !std::mem::replace(&mut probes.running, true)
    }

    /// The prober could not be started: requests keep failing fast until a later failure
    /// tries again.
    pub(crate) fn prober_not_started(&self) {
        let mut probes = self
            .failures
            .probes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        probes.running = false;
        probes.members.clear();
    }

    /// The watched servers whose retry timeout has passed: probe each now.
    pub(crate) fn probe_round(&self) -> Vec<Arc<Member<P>>> {
        let watched = self
            .failures
            .probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .members
            .clone();
        let now = Instant::now();
        watched
            .into_iter()
            .filter(|m| m.health.availability(self.failures.epoch, now) == Availability::Probe)
            .inspect(|m| observe::retried(&m.server.addr))
            .collect()
    }

    /// After a round: how long the prober sleeps before the next, or `None` when no watched
    /// server is down any longer (the prober ends). Decided under the lock `observe` takes,
    /// so a server that goes down after this check is pushed again and starts a new prober.
    /// A server removed by `set_servers` is not probed any longer.
    pub(crate) fn probes_left(&self) -> Option<Duration> {
        let mut probes = self
            .failures
            .probes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let view = self.view();
        let configured: HashSet<*const Member<P>> = view.members.iter().map(Arc::as_ptr).collect();
        probes
            .members
            .retain(|m| m.health.is_down() && configured.contains(&Arc::as_ptr(m)));
        if probes.members.is_empty() {
            probes.running = false;
            return None;
        }
        let now = Instant::now();
        let wait = probes
            .members
            .iter()
            .map(|m| match m.health.availability(self.failures.epoch, now) {
                Availability::Down(left) => left,
                _ => Duration::ZERO,
            })
            .fold(MAX_PROBE_WAIT, Duration::min);
        Some(wait.max(Duration::from_millis(1)))
    }

    /// `Err(ServerDown)` while `m` is marked down.
    pub(crate) fn available(&self, m: &Member<P>) -> Result<()> {
        // the clock is read only for a server marked down (~40 instructions of every request
        // otherwise, callgrind)
        if !m.health.is_down() {
            return Ok(());
        }
        let retry_in = match m.health.availability(self.failures.epoch, Instant::now()) {
            Availability::Up => return Ok(()),
            Availability::Down(wait) => wait,
            Availability::Probe => Duration::ZERO,
        };
        Err(Error::ServerDown {
            server: m.server.addr.clone(),
            retry_in,
        })
    }
}
