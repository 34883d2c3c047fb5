//! Routing one key, or many keys grouped by the server that owns them, on one view.

use super::Core;
use super::view::Member;
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::sync::Arc;

/// A key ready to send: validated, prefixed, and routed.
pub(crate) struct Routed<'k, P> {
    pub(crate) wire: Cow<'k, [u8]>,
    pub(crate) member: Arc<Member<P>>,
}

/// One server's share of a multi-key operation.
pub(crate) struct Group<'k, P> {
    pub(crate) member: Arc<Member<P>>,
    /// Input indexes, ascending.
    pub(crate) idx: Vec<usize>,
    /// The keys as sent, parallel to `idx`.
    pub(crate) wire: Vec<Cow<'k, [u8]>>,
}

impl<P> Group<'_, P> {
    /// The wire keys as slices, for a request.
    pub(crate) fn keys(&self) -> Vec<&[u8]> {
        self.wire.iter().map(|w| &w[..]).collect()
    }
}

fn no_points() -> Error {
    Error::Config("the ring has no points".into())
}

impl<P> Core<P> {
    /// Route `key`; `write`: it is written or deleted (recorded for an ejected owner).
    pub(crate) fn route<'k>(&self, key: &'k [u8], write: bool) -> Result<Routed<'k, P>> {
        let wire = self.keys.wire(key)?;
        let hashed = self.keys.hashed(key, &wire);
        let view = self.view.load();
        let i = view.owner(hashed).ok_or_else(no_points)?;
        if write {
            view.record_redirected(hashed, i, &wire);
        }
        Ok(Routed {
            member: view.members[i].clone(),
            wire,
        })
    }

    /// The copy `key` is on now: the owner's address and the key as sent (for routes between
    /// pools: two pools hold one copy when both are equal).
    pub(crate) fn locate(&self, key: &[u8]) -> Result<(String, Vec<u8>)> {
        let r = self.route(key, false)?;
        Ok((r.member.server.addr.clone(), r.wire.into_owned()))
    }

    /// Whether `key`'s owner is marked down.
    pub(crate) fn owner_down(&self, key: &[u8]) -> Result<bool> {
        Ok(self.route(key, false)?.member.health.is_down())
    }

    /// The distinct-server walk from `key` over the ring in force (replicas).
    pub(crate) fn walk(&self, key: &[u8]) -> Vec<Arc<Member<P>>> {
        let view = self.view.load();
        view.routing
            .distinct_indexes(&self.keys.hashed_owned(key))
            .map(|i| view.members[view.to_member[i]].clone())
            .collect()
    }

    /// Route `keys` (those whose `out` entry is still empty); invalid keys get their error in
    /// `out` at once, the rest are grouped by server on one view: each group's input indexes
    /// and wire keys, in input order. `write`: the keys are written
    /// or deleted (recorded for an ejected owner).
    pub(crate) fn group<'k, T>(
        &self,
        keys: &[&'k [u8]],
        out: &mut [Option<Result<T>>],
        write: bool,
    ) -> Vec<Group<'k, P>> {
        let mut wires: Vec<Option<Cow<'k, [u8]>>> = Vec::with_capacity(keys.len());
        let mut valid: Vec<usize> = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if out[i].is_some() {
                wires.push(None);
                continue;
            }
            match self.keys.wire(k) {
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
        let view = self.view.load_full();
        let hashed: Vec<&[u8]> = valid
            .iter()
            .map(|&i| match &wires[i] {
                Some(w) => self.keys.hashed(keys[i], w),
                None => keys[i],
            })
            .collect();
        let mut owner = vec![usize::MAX; keys.len()];
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
        drop(hashed);
        let mut by_member: Vec<Option<Group<'k, P>>> = view.members.iter().map(|_| None).collect();
        for &i in &valid {
            let Some(wire) = wires[i].take() else {
                continue;
            };
            let Some(slot) = by_member.get_mut(owner[i]) else {
                out[i] = Some(Err(no_points()));
                continue;
            };
            let g = slot.get_or_insert_with(|| Group {
                member: view.members[owner[i]].clone(),
                idx: Vec::new(),
                wire: Vec::new(),
            });
            g.idx.push(i);
            g.wire.push(wire);
        }
        by_member.into_iter().flatten().collect()
    }
}

/// The output of a multi-key operation: every slot filled, a missing one with `missing`'s
/// error (none is left missing by the clients; this keeps a slip from panicking).
pub(crate) fn finish<T>(out: Vec<Option<Result<T>>>) -> Vec<Result<T>> {
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::Config("no result for this key".into()))))
        .collect()
}
