//! Bringing a down server back: the prober's exchanges, decided here and run by the client's
//! prober, which only moves bytes. In order:
//!
//! 1. on a new connection to the server (kept for 2 and 4), `version`: it must answer;
//! 2. with auto-eject, rounds of cleaning it: the keys written or deleted elsewhere while it
//!    was out are deleted on it (or it is flushed, past the rejoin limit) ([`super::rejoin`]);
//!    writes keep recording keys while a round runs, so up to [`CLEAN_ROUNDS`] of them. The
//!    first probe that cleans anything ends here, the server held down: the next probe, a
//!    retry timeout later, cleans it all again (a write that timed out before the outage can
//!    land late, see [`super::rejoin::RejoinLog::clean_again`]) and goes on;
//! 3. each fallback that took copies of its keys, on a new connection: the copies are deleted
//!    there (or the fallback is flushed, past the limit). A fallback that is down, or whose
//!    connection or deletes fail, is taken out instead, the copies handed to its own rejoin
//!    log (it deletes them before it takes reads again); one no longer configured is skipped;
//! 4. the server rejoins the ring; what writes routed just before recorded meanwhile is
//!    cleaned on it, then 3 runs again for the copies they made.
//!
//! A failure on the server before the rejoin counts against it and ends the probe (it is
//! probed again later, its keys still recorded); after the rejoin it puts the server back out
//! with everything still to clean. Nothing waits on a clock here.

use super::eject::ServerPool;
use super::health::Transition;
use super::rejoin::{Cleanup, Copies};
use crate::core::Core;
use crate::core::exchange::{Ctx, DeleteOwned, Exchange, Single, Step, WriteMany, delete_outcome};
use crate::core::readbuf::ReadBuf;
use crate::core::view::Member;
use crate::error::Result;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Rounds of cleanup before the rejoin: writes keep recording keys while a round runs.
pub(crate) const CLEAN_ROUNDS: usize = 4;

/// One cleanup on one server: a flush, or checked, pipelined deletes.
enum Cleaner {
    Flush(Single<'static, ()>),
    Delete(WriteMany<DeleteOwned, crate::DeleteOutcome>),
}

impl Cleaner {
    fn new(todo: &Cleanup) -> Option<Cleaner> {
        match todo {
            Cleanup::Nothing => None,
            Cleanup::Flush => Some(Cleaner::Flush(Single::flush_all(None))),
            Cleanup::Delete(keys) => Some(Cleaner::Delete(WriteMany::new(
                "delete",
                keys.iter().cloned().map(DeleteOwned).collect(),
                delete_outcome,
            ))),
        }
    }

    /// Advance; `Done` once every reply confirmed the cleanup.
    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        let step = match self {
            Cleaner::Flush(ex) => ex.step(rb, out, ctx)?,
            Cleaner::Delete(ex) => ex.step(rb, out, ctx)?,
        };
        match (step, self) {
            (Step::Done(()), Cleaner::Delete(ex)) => {
                let placeholder = WriteMany::new("delete", Vec::new(), delete_outcome);
                let done = std::mem::replace(ex, placeholder);
                match done.results(None).into_iter().find_map(Result::err) {
                    Some(e) => Err(e),
                    None => Ok(Step::Done(())),
                }
            }
            (Step::Refused(e), _) => Err(e),
            (step, _) => Ok(step),
        }
    }
}

/// Where the prober runs the next exchange of a [`Rejoin`].
pub(crate) enum Target<P> {
    /// On the probed server, on the prober's connection to it (opened on first use, kept
    /// while its exchanges succeed).
    Probed,
    /// On this fallback, on a new connection.
    Fallback(Arc<Member<P>>),
}

enum Phase<P> {
    /// On the probed server.
    Version(Single<'static, String>),
    /// On the probed server, before the rejoin: round `round` of cleaning what `todo` says.
    Clean {
        round: usize,
        todo: Cleanup,
        cleaner: Cleaner,
    },
    /// On fallback `to`: deleting the copies `todo` lists (or flushing it).
    Sweep {
        to: Arc<Member<P>>,
        todo: Cleanup,
        cleaner: Cleaner,
    },
    /// On the probed server, after the rejoin: cleaning what was recorded meanwhile.
    Final {
        todo: Cleanup,
        cleaner: Cleaner,
    },
    Done,
}

/// The probe of server `member`; see the module docs. The prober asks [`Rejoin::target`]
/// where to run it next, runs it there as an [`Exchange`] and reports with [`Rejoin::ran`],
/// until the target is `None`.
pub(crate) struct Rejoin<'c, P> {
    core: &'c Core<P>,
    member: &'c Arc<Member<P>>,
    phase: Phase<P>,
    /// The fallbacks still to sweep in this pass, by address.
    sweeps: VecDeque<(String, Cleanup)>,
    /// The server has rejoined: what is being cleaned is this probe's, no longer its log's.
    rejoined: bool,
}

impl<'c, P: ServerPool> Rejoin<'c, P> {
    pub(crate) fn new(core: &'c Core<P>, member: &'c Arc<Member<P>>) -> Self {
        Rejoin {
            core,
            member,
            phase: Phase::Version(Single::version()),
            sweeps: VecDeque::new(),
            rejoined: false,
        }
    }

    /// Where the next exchange runs; `None` when the probe is over.
    pub(crate) fn target(&self) -> Option<Target<P>> {
        match &self.phase {
            Phase::Version(_) | Phase::Clean { .. } | Phase::Final { .. } => Some(Target::Probed),
            Phase::Sweep { to, .. } => Some(Target::Fallback(to.clone())),
            Phase::Done => None,
        }
    }

    /// The exchange at [`Rejoin::target`] ended: `ok`, or failed (its connect included).
    pub(crate) fn ran(&mut self, ok: bool) {
        let (core, m) = (self.core, self.member);
        let log = &m.rejoin;
        self.phase = match (std::mem::replace(&mut self.phase, Phase::Done), ok) {
            (Phase::Version(_), true) => self.clean(0),
            (Phase::Clean { round, todo, .. }, true) => {
                log.cleaned(&todo);
                self.clean(round + 1)
            }
            (Phase::Sweep { to, todo, .. }, ok) => {
                if !ok {
                    core.hand_over(&to, todo.clone());
                }
                if !self.rejoined {
                    log.copies_cleaned(&to.server.addr, &todo);
                }
                self.next_sweep()
            }
            (Phase::Final { .. }, true) => self.next_sweep(),
            (Phase::Final { todo, .. }, false) => {
                // back out with everything this probe still had to clean
                let copies: Copies = self.sweeps.drain(..).collect();
                log.back_out(super::rejoin::Left { own: todo, copies });
                m.health
                    .hold_down(&core.failures.policy, core.failures.epoch, Instant::now());
                core.rebuild_routing();
                Phase::Done
            }
            (Phase::Version(_) | Phase::Clean { .. }, false) => {
                m.health
                    .failure(&core.failures.policy, core.failures.epoch, Instant::now());
                Phase::Done
            }
            (Phase::Done, _) => Phase::Done,
        };
    }

    /// Round `round` of cleaning the server, or (rounds over, or nothing left) the sweeps.
    fn clean(&mut self, round: usize) -> Phase<P> {
        if round < CLEAN_ROUNDS {
            let todo = self.member.rejoin.pending();
            if let Some(cleaner) = Cleaner::new(&todo) {
                return Phase::Clean {
                    round,
                    todo,
                    cleaner,
                };
            }
        }
        if self.member.rejoin.clean_again() {
            // cleaned once: the next probe, a retry timeout from now, cleans it again
            let (core, m) = (self.core, self.member);
            m.health
                .hold_down(&core.failures.policy, core.failures.epoch, Instant::now());
            return Phase::Done;
        }
        self.sweeps = self.member.rejoin.pending_copies().into();
        self.next_sweep()
    }

    /// The next fallback to sweep; once none is left, the rejoin (or, after it, the end).
    fn next_sweep(&mut self) -> Phase<P> {
        let log = &self.member.rejoin;
        while let Some((addr, todo)) = self.sweeps.pop_front() {
            let view = self.core.view();
            let Some(to) = view.members.iter().find(|f| f.server.addr == addr) else {
                // no longer configured: it takes no reads from this client
                if !self.rejoined {
                    log.copies_cleaned(&addr, &todo);
                }
                continue;
            };
            if to.health.is_down() {
                // it deletes them itself before it takes reads again
                self.core.hand_over(to, todo.clone());
                if !self.rejoined {
                    log.copies_cleaned(&addr, &todo);
                }
                continue;
            }
            if let Some(cleaner) = Cleaner::new(&todo) {
                return Phase::Sweep {
                    to: to.clone(),
                    todo,
                    cleaner,
                };
            }
        }
        if self.rejoined {
            Phase::Done
        } else {
            self.rejoin()
        }
    }

    /// The server takes reads again; then what was recorded meanwhile is cleaned.
    fn rejoin(&mut self) -> Phase<P> {
        if self.member.health.success() == Transition::CameBack {
            self.core.rebuild_routing();
        }
        // writes routed on the view from before the rejoin
        let left = self.member.rejoin.rejoined();
        self.rejoined = true;
        let cleaned = match &left.own {
            Cleanup::Nothing => Some(0),
            Cleanup::Delete(keys) => Some(keys.len()),
            Cleanup::Flush => None,
        };
        crate::observe::rejoined(&self.member.observe, &self.member.server.addr, cleaned);
        self.sweeps = left.copies.into();
        match Cleaner::new(&left.own) {
            Some(cleaner) => Phase::Final {
                todo: left.own,
                cleaner,
            },
            None => self.next_sweep(),
        }
    }
}

impl<P: ServerPool> Exchange for Rejoin<'_, P> {
    type Output = ();

    fn command(&self) -> &'static str {
        "probe"
    }

    fn restart(&mut self) {
        match &mut self.phase {
            Phase::Version(ex) => *ex = Single::version(),
            Phase::Clean { todo, cleaner, .. }
            | Phase::Sweep { todo, cleaner, .. }
            | Phase::Final { todo, cleaner } => {
                if let Some(c) = Cleaner::new(todo) {
                    *cleaner = c;
                }
            }
            Phase::Done => {}
        }
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        match &mut self.phase {
            Phase::Version(ex) => match ex.step(rb, out, ctx)? {
                Step::Done(_) => Ok(Step::Done(())),
                Step::Refused(e) => Err(e),
                Step::Write => Ok(Step::Write),
                Step::WriteThenRead => Ok(Step::WriteThenRead),
                Step::Read => Ok(Step::Read),
            },
            Phase::Clean { cleaner, .. }
            | Phase::Sweep { cleaner, .. }
            | Phase::Final { cleaner, .. } => cleaner.step(rb, out, ctx),
            Phase::Done => Ok(Step::Done(())),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::failure::rejoin::Cleanup;
    use crate::{FailurePolicy, Server};
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// A pool that is never connected.
    pub(crate) struct NoPool;

    impl ServerPool for NoPool {
        fn invalidate(&self) {}
    }

    /// A core over four servers (never connected) with auto-eject and a long retry timeout.
    pub(crate) fn core(limit: usize) -> Core<NoPool> {
        core_with(
            limit,
            FailurePolicy::new(1, Duration::from_secs(3600), true),
        )
    }

    /// A core over four servers (never connected) with `policy`.
    pub(crate) fn core_with(limit: usize, policy: FailurePolicy) -> Core<NoPool> {
        let settings = crate::Builder::<crate::Client>::default()
            .servers((1..=4).map(|i| Server::new("127.0.0.1", 1100 + i)))
            .failure_policy(policy)
            .rejoin_limit(limit)
            .checked()
            .expect("settings");
        Core::new(settings, Box::new(|_| NoPool)).expect("core")
    }

    /// Take member `i` out as an ejection does.
    pub(crate) fn eject(core: &Core<NoPool>, i: usize) -> Arc<Member<NoPool>> {
        let m = core.view().members[i].clone();
        m.rejoin.went_out();
        let p = &core.failures.policy;
        m.health.hold_down(p, core.failures.epoch, Instant::now());
        core.rebuild_routing();
        m
    }

    /// `n` keys owned by member `i` on the full ring, written through the core (routed away
    /// while `i` is out): each key and the fallback it went to.
    fn write(core: &Core<NoPool>, i: usize, n: usize, tag: &str) -> BTreeMap<Vec<u8>, String> {
        let full = core.ring();
        // Bounded: with a few servers, n keys of server i are among the first 100 n. A ring
        // that never routes to i fails here instead of searching forever.
        let keys: Vec<Vec<u8>> = (0..100 * n)
            .map(|j| format!("{tag}{j}").into_bytes())
            .filter(|k| full.route(k) == Some(i))
            .take(n)
            .collect();
        assert_eq!(
            keys.len(),
            n,
            "{n} keys of server {i} among the first {}",
            100 * n
        );
        keys.into_iter()
            .map(|k| {
                let to = core
                    .route(&k, true)
                    .expect("routed")
                    .member
                    .server
                    .addr
                    .clone();
                (k, to)
            })
            .collect()
    }

    fn sorted(c: &Cleanup) -> Cleanup {
        match c {
            Cleanup::Delete(k) => {
                let mut k = k.clone();
                k.sort();
                Cleanup::Delete(k)
            }
            c => c.clone(),
        }
    }

    /// The keys of `written` that went to `fallback`, as a cleanup.
    fn on(written: &BTreeMap<Vec<u8>, String>, fallback: &str) -> Cleanup {
        Cleanup::Delete(
            written
                .iter()
                .filter(|(_, f)| *f == fallback)
                .map(|(k, _)| k.clone())
                .collect(),
        )
    }

    fn all(written: &BTreeMap<Vec<u8>, String>) -> Cleanup {
        Cleanup::Delete(written.keys().cloned().collect())
    }

    /// What the probe runs now: the target's address and its cleanup (`None` for `version`).
    fn now(r: &Rejoin<'_, NoPool>) -> Option<(String, Option<Cleanup>)> {
        let addr = match r.target()? {
            Target::Probed => r.member.server.addr.clone(),
            Target::Fallback(f) => f.server.addr.clone(),
        };
        let todo = match &r.phase {
            Phase::Clean { todo, .. } | Phase::Sweep { todo, .. } | Phase::Final { todo, .. } => {
                Some(sorted(todo))
            }
            _ => None,
        };
        Some((addr, todo))
    }

    fn live(core: &Core<NoPool>) -> usize {
        core.current_ring().servers().len()
    }

    /// The first probe of `c` with something to clean: `version`, the cleaning, and the end
    /// of the probe, the server held down until its next one, everything it cleaned to be
    /// cleaned again then, no fallback swept yet.
    fn cleaned_once(core: &Core<NoPool>, c: &Arc<Member<NoPool>>) {
        let before = sorted(&c.rejoin.pending());
        assert_ne!(before, Cleanup::Nothing, "something to clean");
        let copies = c.rejoin.pending_copies();
        let serving = live(core);
        let mut r = Rejoin::new(core, c);
        r.ran(true);
        assert_eq!(now(&r), Some((c.server.addr.clone(), Some(before.clone()))));
        r.ran(true);
        assert!(now(&r).is_none(), "the probe ends after the first cleaning");
        assert!(c.health.is_down() && c.rejoin.is_out() && live(core) == serving);
        assert!(
            matches!(
                c.health.availability(core.failures.epoch, Instant::now()),
                crate::core::failure::health::Availability::Down(_)
            ),
            "held down until its next probe"
        );
        assert_eq!(
            sorted(&c.rejoin.pending()),
            before,
            "all of it cleaned again"
        );
        assert_eq!(c.rejoin.pending_copies(), copies, "no fallback swept yet");
    }

    #[test]
    fn the_fallbacks_are_swept_before_the_rejoin() {
        let core = core(1000);
        let c = eject(&core, 0);
        let c_addr = c.server.addr.clone();
        let written = write(&core, 0, 200, "k");
        let fallbacks: Vec<String> = written
            .values()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert!(fallbacks.len() >= 2, "{fallbacks:?}");
        assert!(!fallbacks.contains(&c_addr));

        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        assert_eq!(now(&r), Some((c_addr.clone(), None)), "version first");
        r.ran(true);
        assert_eq!(
            now(&r),
            Some((c_addr.clone(), Some(all(&written)))),
            "then its own keys"
        );
        r.ran(true);
        for f in &fallbacks {
            assert_eq!(
                now(&r),
                Some((f.clone(), Some(on(&written, f)))),
                "then each fallback's copies"
            );
            assert!(
                c.health.is_down() && live(&core) == 3,
                "still out while they are swept"
            );
            r.ran(true);
        }
        assert_eq!(now(&r), None);
        assert!(
            !c.health.is_down() && !c.rejoin.is_out() && live(&core) == 4,
            "rejoined"
        );
        assert_eq!(c.rejoin.pending_copies(), vec![]);
        assert_eq!(core.down_servers(), vec![], "no fallback taken out");
        // once back, writes of its keys go to it and are not recorded
        write(&core, 0, 10, "later");
        assert_eq!(c.rejoin.pending(), Cleanup::Nothing);
    }

    #[test]
    fn a_fallback_that_cannot_be_swept_is_taken_out_with_the_copies() {
        let core = core(1000);
        let c = eject(&core, 0);
        let written = write(&core, 0, 200, "k");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        r.ran(true);
        let (failed, todo) = now(&r).expect("a sweep");
        let todo = todo.expect("its copies");
        r.ran(false);
        while now(&r).is_some() {
            r.ran(true);
        }
        assert!(!c.health.is_down(), "the server rejoins all the same");
        assert_eq!(
            c.rejoin.pending_copies(),
            vec![],
            "the copies are the fallback's to delete"
        );
        let view = core.view();
        let f = view
            .members
            .iter()
            .find(|m| m.server.addr == failed)
            .expect("configured");
        assert!(f.health.is_down() && f.rejoin.is_out(), "taken out");
        assert_eq!(
            sorted(&f.rejoin.pending()),
            todo,
            "its own probe deletes them"
        );
        assert_eq!(todo, on(&written, &failed));
        assert_eq!(live(&core), 3);
        let watched = core.failures.probes.lock().unwrap().members.clone();
        assert!(
            watched.iter().any(|m| Arc::ptr_eq(m, f)),
            "and it is probed"
        );
    }

    #[test]
    fn a_down_fallback_is_handed_the_copies_without_a_sweep() {
        let core = core(1000);
        let c = eject(&core, 0);
        let written = write(&core, 0, 200, "k");
        let down_addr = written.values().next().expect("a key").clone();
        let view = core.view();
        let i = view
            .members
            .iter()
            .position(|m| m.server.addr == down_addr)
            .expect("configured");
        let f = eject(&core, i);
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        r.ran(true);
        while let Some((addr, _)) = now(&r) {
            assert_ne!(addr, down_addr, "no connection to a down fallback");
            r.ran(true);
        }
        assert_eq!(sorted(&f.rejoin.pending()), on(&written, &down_addr));
        assert!(f.health.is_down() && !c.health.is_down());
    }

    #[test]
    fn what_is_written_during_the_sweeps_is_cleaned_after_the_rejoin() {
        let core = core(1000);
        let c = eject(&core, 0);
        let c_addr = c.server.addr.clone();
        write(&core, 0, 50, "k");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        r.ran(true);
        assert!(matches!(r.target(), Some(Target::Fallback(_))));
        // still out: routed to the fallbacks, recorded
        let late = write(&core, 0, 20, "late");
        while matches!(r.target(), Some(Target::Fallback(_))) && !r.rejoined {
            r.ran(true);
        }
        assert!(!c.health.is_down(), "rejoined");
        assert_eq!(now(&r), Some((c_addr, Some(all(&late)))), "on it first");
        r.ran(true);
        let mut swept = Vec::new();
        while let Some((addr, todo)) = now(&r) {
            assert_eq!(todo, Some(on(&late, &addr)));
            swept.push(addr);
            r.ran(true);
        }
        let mut want: Vec<String> = late.values().cloned().collect();
        want.sort();
        want.dedup();
        assert_eq!(swept, want, "then on their fallbacks");
        assert_eq!(c.rejoin.pending(), Cleanup::Nothing);
        assert_eq!(c.rejoin.pending_copies(), vec![]);
    }

    #[test]
    fn a_failure_after_the_rejoin_puts_the_server_back_out_with_all_left() {
        let core = core(1000);
        let c = eject(&core, 0);
        write(&core, 0, 50, "k");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        r.ran(true);
        let late = write(&core, 0, 20, "late");
        while !r.rejoined {
            r.ran(true);
        }
        assert!(matches!(r.phase, Phase::Final { .. }));
        r.ran(false);
        assert!(r.target().is_none());
        assert!(
            c.health.is_down() && c.rejoin.is_out() && live(&core) == 3,
            "back out"
        );
        assert_eq!(sorted(&c.rejoin.pending()), all(&late));
        let copies: Vec<(String, Cleanup)> = c
            .rejoin
            .pending_copies()
            .into_iter()
            .map(|(a, t)| (a, sorted(&t)))
            .collect();
        let want: Vec<(String, Cleanup)> = copies
            .iter()
            .map(|(a, _)| (a.clone(), on(&late, a)))
            .collect();
        assert_eq!(copies, want);
        assert!(!copies.is_empty());
    }

    #[test]
    fn a_failure_before_the_rejoin_counts_and_keeps_everything() {
        let core = core(1000);
        let c = eject(&core, 0);
        let written = write(&core, 0, 50, "k");
        let mut r = Rejoin::new(&core, &c);
        r.ran(false);
        assert!(r.target().is_none());
        assert!(c.health.is_down() && c.rejoin.is_out());
        assert_eq!(sorted(&c.rejoin.pending()), all(&written));
        // failed while cleaning it: the same, what was cleaned forgotten
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        let more = write(&core, 0, 5, "more");
        r.ran(true);
        assert!(matches!(r.phase, Phase::Clean { round: 1, .. }));
        r.ran(false);
        assert!(r.target().is_none() && c.health.is_down());
        assert_eq!(sorted(&c.rejoin.pending()), all(&more));
        assert!(c.rejoin.pending_copies().len() >= 2, "no sweep ran");
    }

    #[test]
    fn cleaning_rounds_are_bounded() {
        let core = core(1000);
        let c = eject(&core, 0);
        write(&core, 0, 5, "k");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        for round in 0..CLEAN_ROUNDS {
            assert!(matches!(r.phase, Phase::Clean { round: n, .. } if n == round));
            // writes keep coming while each round runs
            write(&core, 0, 1, &format!("r{round}-"));
            r.ran(true);
        }
        assert!(
            matches!(r.target(), Some(Target::Fallback(_))),
            "then the sweeps"
        );
        while !r.rejoined {
            r.ran(true);
        }
        assert!(
            matches!(r.phase, Phase::Final { .. }),
            "the last round's writes after the rejoin"
        );
    }

    #[test]
    fn a_fallback_no_longer_configured_is_skipped() {
        let core = core(1000);
        let c = eject(&core, 0);
        let written = write(&core, 0, 100, "k");
        let gone = written.values().next().expect("a key").clone();
        let keep: Vec<Server> = core
            .view()
            .members
            .iter()
            .filter(|m| m.server.addr != gone)
            .map(|m| m.server.clone())
            .collect();
        core.set_servers(keep).expect("set_servers");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        r.ran(true);
        while let Some((addr, _)) = now(&r) {
            assert_ne!(addr, gone);
            r.ran(true);
        }
        assert!(!c.health.is_down());
        assert_eq!(c.rejoin.pending_copies(), vec![]);
    }

    #[test]
    fn restart_begins_the_current_exchange_again() {
        let core = core(1000);
        let c = eject(&core, 0);
        write(&core, 0, 3, "k");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        assert_eq!(r.command(), "probe");
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps::DEFAULT,
        };
        let first = |r: &mut Rejoin<'_, NoPool>| {
            let mut out = Vec::new();
            let step = r.step(&mut ReadBuf::default(), &mut out, &ctx);
            assert!(matches!(step, Ok(Step::Write | Step::WriteThenRead)));
            out
        };
        let v = first(&mut r);
        assert_eq!(v, b"version\r\n");
        r.restart();
        assert_eq!(first(&mut r), v);
        r.ran(true);
        let d = first(&mut r);
        assert!(d.starts_with(b"delete "), "{}", String::from_utf8_lossy(&d));
        r.restart();
        assert_eq!(first(&mut r), d);
        r.ran(true);
        let s = first(&mut r);
        assert!(s.starts_with(b"delete "));
        r.restart();
        assert_eq!(first(&mut r), s);
    }

    /// A fallback skipped before the rejoin (gone, or down and handed its copies) is this
    /// log's no more: the rejoin does not hand it back for another pass.
    #[test]
    fn a_fallback_skipped_before_the_rejoin_is_not_left_for_after_it() {
        for gone in [true, false] {
            let core = core(1000);
            let c = eject(&core, 0);
            let written = write(&core, 0, 100, "k");
            let skipped = written.values().next().expect("a key").clone();
            if gone {
                let keep: Vec<Server> = core
                    .view()
                    .members
                    .iter()
                    .filter(|m| m.server.addr != skipped)
                    .map(|m| m.server.clone())
                    .collect();
                core.set_servers(keep).expect("set_servers");
            } else {
                let view = core.view();
                let i = view.members.iter().position(|m| m.server.addr == skipped);
                eject(&core, i.expect("configured"));
            }
            cleaned_once(&core, &c);
            let mut r = Rejoin::new(&core, &c);
            r.ran(true);
            r.ran(true);
            assert!(matches!(r.target(), Some(Target::Fallback(_))));
            // written during the sweeps: there is something to do after the rejoin
            let late = write(&core, 0, 3, "late");
            assert!(late.values().all(|f| *f != skipped));
            while !r.rejoined {
                r.ran(true);
            }
            assert!(matches!(r.phase, Phase::Final { .. }));
            let after: Vec<&str> = r.sweeps.iter().map(|(a, _)| a.as_str()).collect();
            assert!(!after.contains(&skipped.as_str()), "gone {gone}: {after:?}");
        }
    }

    #[test]
    fn a_server_with_nothing_to_clean_rejoins_at_its_first_probe() {
        let core = core(1000);
        let c = eject(&core, 0);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        assert!(now(&r).is_none());
        assert!(!c.health.is_down() && !c.rejoin.is_out() && live(&core) == 4);
    }

    /// What is recorded while the first cleaning runs is cleaned by it and again by the next
    /// probe; the second cleaning is the last before the sweeps and the rejoin.
    #[test]
    fn the_second_cleaning_covers_the_first_and_ends_in_the_rejoin() {
        let core = core(1000);
        let c = eject(&core, 0);
        let first = write(&core, 0, 20, "k");
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        let during = write(&core, 0, 5, "during");
        r.ran(true);
        assert!(matches!(r.phase, Phase::Clean { round: 1, .. }));
        r.ran(true);
        assert!(now(&r).is_none() && c.health.is_down());
        let mut both = first.clone();
        both.extend(during.clone());
        assert_eq!(sorted(&c.rejoin.pending()), all(&both));

        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        assert_eq!(now(&r), Some((c.server.addr.clone(), Some(all(&both)))));
        r.ran(true);
        assert!(
            matches!(r.target(), Some(Target::Fallback(_))),
            "then the sweeps"
        );
        while now(&r).is_some() {
            r.ran(true);
        }
        assert!(!c.health.is_down() && live(&core) == 4, "rejoined");
    }

    /// Over the bound the first cleaning is a flush, and so is the second.
    #[test]
    fn a_flushed_server_is_flushed_again() {
        let core = core(3);
        let c = eject(&core, 0);
        write(&core, 0, 10, "k");
        assert_eq!(c.rejoin.pending(), Cleanup::Flush);
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        assert_eq!(now(&r), Some((c.server.addr.clone(), Some(Cleanup::Flush))));
        while now(&r).is_some() {
            r.ran(true);
        }
        assert!(!c.health.is_down(), "rejoined");
    }

    /// A failure after the rejoin is a new outage: its next cleaning is done twice too.
    #[test]
    fn after_going_back_out_the_server_is_cleaned_twice_again() {
        let core = core(1000);
        let c = eject(&core, 0);
        write(&core, 0, 10, "k");
        cleaned_once(&core, &c);
        let mut r = Rejoin::new(&core, &c);
        r.ran(true);
        r.ran(true);
        write(&core, 0, 5, "late");
        while !r.rejoined {
            r.ran(true);
        }
        r.ran(false);
        assert!(c.health.is_down(), "back out");
        cleaned_once(&core, &c);
    }
}
