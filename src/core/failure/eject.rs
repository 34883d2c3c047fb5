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

/// The shortest the prober sleeps between rounds, whatever the retry timeout: with a retry
/// timeout of 0 or 1 ns, rounds 1 ms apart against a refused server cost a quarter of a core
/// (0.25 s of CPU per 3 s, measured); 10 ms apart, a fortieth of that.
pub(crate) const MIN_PROBE_WAIT: Duration = Duration::from_millis(10);

impl<P: ServerPool> Core<P> {
    /// Count the outcome of talking to `m`. Errors about the request itself say nothing about
    /// the server; an error reply means it is alive. True when the caller must start the
    /// prober (see [`Core::probe_round`]).
    #[must_use]
    pub(crate) fn observe(&self, m: &Arc<Member<P>>, err: Option<&Error>) -> bool {
        let t = match err {
            None | Some(Error::Server { .. } | Error::ItemTooLarge { .. }) => m.health.success(),
            Some(e) if e.counts_against_server() => {
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
                observe::ejected(&m.observe, &m.server.addr);
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
                observe::rejoined(&m.observe, &m.server.addr, Some(0));
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
            observe::ejected(&m.observe, &m.server.addr);
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
            observe::ejected(&f.observe, &f.server.addr);
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
            .inspect(|m| observe::probed(&m.observe))
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
        Some(wait.max(MIN_PROBE_WAIT))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FailurePolicy;
    use crate::core::failure::probe::tests::{NoPool, core, core_with, eject};
    use crate::core::failure::rejoin::Cleanup;

    fn io(server: &str) -> Error {
        Error::Protocol {
            server: server.to_string(),
            detail: "lost".into(),
        }
    }

    fn watched(core: &Core<NoPool>) -> Vec<String> {
        let p = core.failures.probes.lock().unwrap();
        p.members.iter().map(|m| m.server.addr.clone()).collect()
    }

    fn live(core: &Core<NoPool>) -> usize {
        core.current_ring().servers().len()
    }

    /// How long until `m` is probed.
    fn retry_in(core: &Core<NoPool>, m: &Member<NoPool>) -> Duration {
        match m.health.availability(core.failures.epoch, Instant::now()) {
            Availability::Down(d) => d,
            Availability::Probe => Duration::ZERO,
            Availability::Up => panic!("up"),
        }
    }

    #[test]
    fn a_server_failure_ejects_and_watches_it() {
        let core = core(10);
        let m = core.view().members[1].clone();
        let addr = m.server.addr.clone();
        // errors about the request say nothing about the server
        assert!(!core.observe(&m, Some(&Error::Config("bad".into()))));
        assert!(!m.health.is_down());
        assert!(!core.observe(
            &m,
            Some(&Error::Server {
                server: addr.clone(),
                message: "busy".into(),
            })
        ));
        assert!(!m.health.is_down());
        // a value over its item size limit: the server answered
        let too_large = Error::ItemTooLarge {
            server: addr.clone(),
            len: Some(2 << 20),
            limit: Some(1 << 20),
        };
        assert!(!core.observe(&m, Some(&too_large)));
        assert!(!m.health.is_down());
        assert!(
            core.observe(&m, Some(&io(&addr))),
            "the first one down starts the prober"
        );
        assert!(m.health.is_down() && m.rejoin.is_out() && live(&core) == 3);
        assert_eq!(watched(&core), std::slice::from_ref(&addr));
        let other = core.view().members[2].clone();
        assert!(
            !core.observe(&other, Some(&io("x"))),
            "a prober runs already"
        );
        assert_eq!(watched(&core).len(), 2);
        assert!(!core.observe(&m, Some(&io(&addr))), "already down");
        assert_eq!(watched(&core).len(), 2, "watched once");
    }

    #[test]
    fn a_server_answering_before_its_cleanup_stays_out() {
        let core = core(10);
        let m = eject(&core, 1);
        assert!(core.observe(&m, None), "held down again, watched");
        assert!(m.health.is_down() && live(&core) == 3);
        // without a log to clean (no auto-eject record) it comes back at once
        let n = core.view().members[2].clone();
        let p = &core.failures.policy;
        n.health.hold_down(p, core.failures.epoch, Instant::now());
        core.rebuild_routing();
        assert_eq!(live(&core), 2);
        assert!(!core.observe(&n, None));
        assert!(!n.health.is_down() && live(&core) == 3);
    }

    #[test]
    fn a_write_elsewhere_takes_the_owner_out() {
        let core = core(10);
        let key = b"some-key";
        let owner = core.route(key, false).expect("routed").member;
        assert!(
            core.written_elsewhere(key).expect("recorded"),
            "starts the prober"
        );
        assert!(owner.health.is_down() && owner.rejoin.is_out() && live(&core) == 3);
        assert_eq!(owner.rejoin.pending(), Cleanup::Delete(vec![key.to_vec()]));
        let before = retry_in(&core, &owner);
        assert!(!core.written_elsewhere(b"some-key").expect("recorded"));
        let after = retry_in(&core, &owner);
        assert!(
            after <= before,
            "a server already down keeps its retry time"
        );
        assert_eq!(watched(&core), std::slice::from_ref(&owner.server.addr));
    }

    #[test]
    fn a_fallback_handed_copies_is_taken_out_and_watched() {
        let core = core(10);
        let f = core.view().members[2].clone();
        core.hand_over(&f, Cleanup::Delete(vec![b"a".to_vec()]));
        assert!(f.health.is_down() && f.rejoin.is_out() && live(&core) == 3);
        assert_eq!(f.rejoin.pending(), Cleanup::Delete(vec![b"a".to_vec()]));
        assert_eq!(watched(&core), std::slice::from_ref(&f.server.addr));
        let before = retry_in(&core, &f);
        core.hand_over(&f, Cleanup::Delete(vec![b"b".to_vec()]));
        let after = retry_in(&core, &f);
        assert!(
            after <= before,
            "a server already down keeps its retry time"
        );
        assert!(matches!(f.rejoin.pending(), Cleanup::Delete(k) if k.len() == 2));
        assert_eq!(watched(&core).len(), 1);
    }

    #[test]
    fn the_probe_schedule() {
        let core = core_with(10, FailurePolicy::new(1, Duration::ZERO, true));
        assert_eq!(core.probes_left(), None, "nobody down: the prober ends");
        assert!(core.probe_round().is_empty());
        let m = eject(&core, 0);
        assert!(core.watch_down(&m), "no prober running: start one");
        assert!(!core.watch_down(&m));
        assert_eq!(core.probe_round().len(), 1, "its retry timeout has passed");
        assert_eq!(
            core.probes_left(),
            Some(MIN_PROBE_WAIT),
            "never a busy loop"
        );
        assert!(
            matches!(core.available(&m), Err(Error::ServerDown { retry_in, .. }) if retry_in == Duration::ZERO)
        );
        m.health.success();
        assert_eq!(core.available(&m).ok(), Some(()));
        assert_eq!(core.probes_left(), None, "back: the prober ends");
        assert!(
            core.watch_down(&m),
            "and the next one down starts a new one"
        );
        core.prober_not_started();
        assert!(watched(&core).is_empty());
        assert!(core.watch_down(&m));

        let core = core_with(10, FailurePolicy::new(1, Duration::from_secs(30), true));
        let m = eject(&core, 0);
        assert!(core.watch_down(&m));
        assert!(
            core.probe_round().is_empty(),
            "not before its retry timeout"
        );
        assert_eq!(
            core.probes_left(),
            Some(MAX_PROBE_WAIT),
            "the longest sleep"
        );
        assert!(
            matches!(core.available(&m), Err(Error::ServerDown { retry_in, .. }) if retry_in > Duration::ZERO)
        );
        let short = core_with(10, FailurePolicy::new(1, Duration::from_millis(50), true));
        let m = eject(&short, 0);
        assert!(short.watch_down(&m));
        let wait = short.probes_left().expect("down");
        assert!(
            wait <= Duration::from_millis(50) && wait >= MIN_PROBE_WAIT,
            "{wait:?}"
        );
        // a server removed from the list is not probed any longer
        let keep: Vec<_> = short.view().members[1..]
            .iter()
            .map(|m| m.server.clone())
            .collect();
        short.set_servers(keep).expect("set_servers");
        assert_eq!(short.probes_left(), None);
        // a retry timeout under the floor: rounds at the floor
        let tiny = core_with(10, FailurePolicy::new(1, Duration::from_nanos(1), true));
        let m = eject(&tiny, 0);
        assert!(tiny.watch_down(&m));
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(tiny.probe_round().len(), 1, "its retry timeout has passed");
        assert_eq!(tiny.probes_left(), Some(MIN_PROBE_WAIT));
    }
}
