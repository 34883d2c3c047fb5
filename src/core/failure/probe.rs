//! Bringing a down server back: the prober's exchange on a new connection. It must answer
//! `version`; with auto-eject, the keys written or deleted elsewhere while it was out are
//! deleted on it (or it is flushed, past the rejoin limit) before it takes reads again
//! ([`super::rejoin`]); then it rejoins the ring, and what was recorded meanwhile is cleaned
//! too. A cleanup that fails after the rejoin puts it back out.

use super::eject::ServerPool;
use super::health::Transition;
use super::rejoin::Cleanup;
use crate::core::Core;
use crate::core::exchange::{Ctx, DeleteOwned, Exchange, Single, Step, WriteMany, delete_outcome};
use crate::core::readbuf::ReadBuf;
use crate::core::view::Member;
use crate::error::Result;
use std::sync::Arc;
use std::time::Instant;

/// Rounds of cleanup before the rejoin: writes keep recording keys while a round runs.
const CLEAN_ROUNDS: usize = 4;

/// One cleanup on the server: a flush, or checked, pipelined deletes.
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

enum Phase {
    Version(Single<'static, String>),
    /// Before the rejoin: round `n` of cleaning what `todo` says.
    Clean {
        round: usize,
        todo: Cleanup,
        cleaner: Cleaner,
    },
    /// After the rejoin: cleaning what was recorded meanwhile.
    Final {
        left: Cleanup,
        cleaner: Cleaner,
    },
    Done,
}

/// The prober's exchange with server `m`; see the module docs.
pub(crate) struct Rejoin<'c, P> {
    core: &'c Core<P>,
    member: &'c Arc<Member<P>>,
    phase: Phase,
}

impl<'c, P: ServerPool> Rejoin<'c, P> {
    pub(crate) fn new(core: &'c Core<P>, member: &'c Arc<Member<P>>) -> Self {
        Rejoin {
            core,
            member,
            phase: Phase::Version(Single::version()),
        }
    }

    /// The next cleaning phase after `round` rounds before the rejoin (or the rejoin itself).
    fn next_phase(&self, round: usize) -> Phase {
        let log = &self.member.rejoin;
        if round < CLEAN_ROUNDS {
            let todo = log.pending();
            if let Some(cleaner) = Cleaner::new(&todo) {
                return Phase::Clean {
                    round,
                    todo,
                    cleaner,
                };
            }
        }
        if self.member.health.success() == Transition::CameBack {
            self.core.rebuild_routing();
        }
        // writes routed on the view from before the rejoin
        let left = log.rejoined();
        match Cleaner::new(&left) {
            Some(cleaner) => Phase::Final { left, cleaner },
            None => Phase::Done,
        }
    }

    /// The probe failed (its connect included): a failure before the rejoin counts against
    /// the server; after it, the server goes back out with what is left to clean.
    pub(crate) fn failed(self) {
        let (core, m) = (self.core, self.member);
        match self.phase {
            Phase::Final { left, .. } => {
                m.rejoin.back_out(left);
                m.health
                    .hold_down(&core.failures.policy, core.failures.epoch, Instant::now());
                core.rebuild_routing();
            }
            _ => {
                m.health
                    .failure(&core.failures.policy, core.failures.epoch, Instant::now());
            }
        }
    }
}

impl<P: ServerPool> Exchange for Rejoin<'_, P> {
    type Output = ();

    fn command(&self) -> &'static str {
        "probe"
    }

    fn restart(&mut self) {
        self.phase = Phase::Version(Single::version());
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        loop {
            let next = match &mut self.phase {
                Phase::Version(ex) => match ex.step(rb, out, ctx)? {
                    Step::Done(_) => self.next_phase(0),
                    Step::Refused(e) => return Err(e),
                    Step::Write => return Ok(Step::Write),
                    Step::Read => return Ok(Step::Read),
                },
                Phase::Clean {
                    round,
                    todo,
                    cleaner,
                } => match cleaner.step(rb, out, ctx)? {
                    Step::Done(()) => {
                        self.member.rejoin.cleaned(todo);
                        let round = *round + 1;
                        self.next_phase(round)
                    }
                    step => return Ok(step),
                },
                Phase::Final { cleaner, .. } => match cleaner.step(rb, out, ctx)? {
                    Step::Done(()) => Phase::Done,
                    step => return Ok(step),
                },
                Phase::Done => return Ok(Step::Done(())),
            };
            self.phase = next;
        }
    }
}
