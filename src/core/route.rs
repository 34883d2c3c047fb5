//! Routing one key, or many keys grouped by the server that owns them, on one view.

use super::Core;
use super::view::{Member, View};
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// A key ready to send: validated, prefixed, and routed.
pub(crate) struct Routed<'k, P> {
    pub(crate) wire: Cow<'k, [u8]>,
    pub(crate) member: Arc<Member<P>>,
}

/// One server's share of a multi-key operation, as [`Groups`] holds it.
pub(crate) struct Group<'g, 'k, P> {
    pub(crate) member: &'g Arc<Member<P>>,
    /// Input indexes, ascending.
    pub(crate) idx: &'g [usize],
    /// The keys as sent, parallel to `idx`.
    pub(crate) wire: &'g [Cow<'k, [u8]>],
}

impl<P> Clone for Group<'_, '_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Group<'_, '_, P> {}

/// The keys of a multi-key operation grouped by server: one list of input indexes and one of
/// keys as sent, ordered by server (input order within a server), and each server's range of
/// them. Two lists for all servers instead of two per server: a 100-key multi-get over four
/// servers made 27 allocations in all instead of 34 (tests/allocations_live.rs), and ~7
/// fewer instructions a key (callgrind; the scatter costs most of what the pushes did).
pub(crate) struct Groups<'k, P> {
    idx: Vec<usize>,
    wire: Vec<Cow<'k, [u8]>>,
    ranges: Vec<(Arc<Member<P>>, Range<usize>)>,
}

impl<'k, P> Groups<'k, P> {
    /// One group: every key of `routable` on `member` (none when there is no key).
    fn one(member: Arc<Member<P>>, routable: Routable<'k>, keys: &[&'k [u8]]) -> Self {
        let (idx, wire) = match routable {
            Routable::AsIs => (
                (0..keys.len()).collect(),
                keys.iter().map(|&k| Cow::Borrowed(k)).collect(),
            ),
            Routable::Picked { idx, wires } => (idx, wires),
        };
        let n = idx.len();
        Groups {
            idx,
            wire,
            ranges: if n == 0 {
                Vec::new()
            } else {
                vec![(member, 0..n)]
            },
        }
    }

    /// Groups in server order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Group<'_, 'k, P>> {
        (0..self.len()).filter_map(|gi| self.get(gi))
    }

    /// Group `gi`, if there is one.
    pub(crate) fn get(&self, gi: usize) -> Option<Group<'_, 'k, P>> {
        let (member, range) = self.ranges.get(gi)?;
        Some(Group {
            member,
            idx: self.idx.get(range.clone())?,
            wire: self.wire.get(range.clone())?,
        })
    }

    /// The number of groups (servers with keys).
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }
}

/// The results of a multi-key operation as [`Core::group`] sees them: which keys are decided
/// before routing, and where a key that cannot be routed gets its error.
pub(crate) trait Outcomes {
    /// Key `i` has its result already (a near-cache hit): it is not routed.
    fn decided(&self, i: usize) -> bool;
    /// No key has its result already.
    fn none_decided(&self) -> bool;
    /// Key `i` fails with `e`, without a request.
    fn fail(&mut self, i: usize, e: Error);
}

/// A write's slots: empty until decided.
impl<T> Outcomes for [Option<Result<T>>] {
    fn decided(&self, i: usize) -> bool {
        self[i].is_some()
    }

    fn none_decided(&self) -> bool {
        self.iter().all(Option::is_none)
    }

    fn fail(&mut self, i: usize, e: Error) {
        self[i] = Some(Err(e));
    }
}

/// A multi-get's results: a miss until a value is found; decided before routing only by a
/// near-cache hit.
impl Outcomes for [Result<Option<crate::Item>>] {
    fn decided(&self, i: usize) -> bool {
        matches!(self[i], Ok(Some(_)))
    }

    fn none_decided(&self) -> bool {
        !self.iter().any(|r| matches!(r, Ok(Some(_))))
    }

    fn fail(&mut self, i: usize, e: Error) {
        self[i] = Err(e);
    }
}

fn no_points() -> Error {
    Error::Config("the ring has no points".into())
}

impl<P> Core<P> {
    /// Route `key`; `write`: it is written or deleted (recorded for an ejected owner; routed
    /// again on the view in force if the owner rejoined meanwhile, see [`Core::recorded`]).
    pub(crate) fn route<'k>(&self, key: &'k [u8], write: bool) -> Result<Routed<'k, P>> {
        let wire = self.keys.wire(key)?;
        let hashed = self.keys.hashed(key, &wire);
        loop {
            let view = self.view.load();
            let i = view.owner(hashed).ok_or_else(no_points)?;
            if write && !self.recorded(&view, hashed, i, &wire) {
                continue;
            }
            return Ok(Routed {
                member: view.members[i].clone(),
                wire,
            });
        }
    }

    /// Record a write routed on `view` to member `owner` ([`View::record_redirected`]). False
    /// when the key's owner was ejected in `view` but has rejoined since (its log no longer
    /// records): the write must be routed again on the view in force, or it would leave a copy
    /// on a fallback nobody cleans, and the returned owner's own copy stale. A `view` still in
    /// force whose ejected owner does not record yet is one being ejected right now: recorded
    /// all the same.
    fn recorded(&self, view: &View<P>, hashed: &[u8], owner: usize, wire: &[u8]) -> bool {
        if view.record_redirected(hashed, owner, wire, false) {
            return true;
        }
        let current = std::ptr::eq(view, &**self.view.load());
        if current {
            view.record_redirected(hashed, owner, wire, true);
        }
        current
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

    /// Route `keys` (those `out` has not decided); invalid keys get their error in `out` at
    /// once, the rest are grouped by server on one view: each group's input indexes and wire
    /// keys, in input order. `write`: the keys are written or deleted (recorded for an
    /// ejected owner).
    pub(crate) fn group<'k>(
        &self,
        keys: &[&'k [u8]],
        out: &mut (impl Outcomes + ?Sized),
        write: bool,
    ) -> Groups<'k, P> {
        let routable = self.routable(keys, out);
        let mut view = self.view.load_full();
        if !write && let Some(member) = view.sole_member() {
            // one server in force: no key is hashed or routed (~57 instructions a key of a
            // 100-key multi-get over one server, callgrind). A write takes the general path,
            // which records the keys of an ejected owner.
            return Groups::one(member.clone(), routable, keys);
        }
        let built: Vec<&[u8]>;
        let hashed: &[&[u8]] = match &routable {
            // every key routed, and hashed as given (or as sent, which is the same): the keys
            // are the list to hash (a list built key by key was ~7 instructions a key and an
            // allocation)
            Routable::AsIs => keys,
            Routable::Picked { idx, .. } if idx.len() == keys.len() && self.keys.hashes_key() => {
                keys
            }
            Routable::Picked { idx, wires } => {
                built = idx
                    .iter()
                    .zip(wires)
                    .map(|(&i, w)| self.keys.hashed(keys[i], w))
                    .collect();
                &built
            }
        };
        let wire = |j: usize| -> &[u8] {
            match &routable {
                Routable::AsIs => keys[j],
                Routable::Picked { wires, .. } => &wires[j],
            }
        };
        let (owner, count) = loop {
            let (owner, count) = route_all(&view, hashed);
            // routed again on the view in force if an owner rejoined meanwhile
            let stale = write
                && owner
                    .iter()
                    .enumerate()
                    .any(|(j, &o)| o != usize::MAX && !self.recorded(&view, hashed[j], o, wire(j)));
            if !stale {
                break (owner, count);
            }
            view = self.view.load_full();
        };
        // One owner for every key (a batch of one server's keys): the lists are the group's
        // as they are; splitting them key by key was ~90 instructions a key of a one-server
        // multi-get (callgrind).
        if let Some(&first) = owner.first()
            && count.get(first) == Some(&owner.len())
            && let Some(member) = view.members.get(first)
        {
            return Groups::one(member.clone(), routable, keys);
        }
        let (idx, wires) = match routable {
            Routable::AsIs => (None, None),
            Routable::Picked { idx, wires } => (Some(idx), Some(wires)),
        };
        // A counting sort by owner: each server's range starts after the keys of the servers
        // before it; a key goes to its server's next place.
        let mut next = count;
        let mut ranges = Vec::new();
        let mut start = 0;
        for (o, n) in next.iter_mut().enumerate() {
            let count = std::mem::replace(n, start);
            if count > 0 {
                ranges.push((view.members[o].clone(), start..start + count));
            }
            start += count;
        }
        let mut sorted_idx = vec![0usize; start];
        let (Some(idx), Some(wires)) = (idx, wires) else {
            // the input keys are the keys as sent: only the indexes are sorted, and the keys
            // read in their order (moving each key's `Cow`, and dropping the one it replaced,
            // was ~24 instructions a key of a 100-key multi-get over 4 servers)
            for (i, o) in owner.into_iter().enumerate() {
                let Some(at) = next.get_mut(o) else {
                    out.fail(i, no_points());
                    continue;
                };
                sorted_idx[*at] = i;
                *at += 1;
            }
            return Groups {
                wire: sorted_idx.iter().map(|&i| Cow::Borrowed(keys[i])).collect(),
                idx: sorted_idx,
                ranges,
            };
        };
        let mut sorted_wire: Vec<Cow<'k, [u8]>> = vec![Cow::Borrowed(&[]); start];
        for ((i, wire), o) in idx.into_iter().zip(wires).zip(owner) {
            let Some(at) = next.get_mut(o) else {
                out.fail(i, no_points());
                continue;
            };
            sorted_idx[*at] = i;
            sorted_wire[*at] = wire;
            *at += 1;
        }
        Groups {
            idx: sorted_idx,
            wire: sorted_wire,
            ranges,
        }
    }

    /// The keys of `keys` to route: all of them as they are when none is decided and each is
    /// sent as it is (no list is built for them: two lists of every key, built and dropped,
    /// were ~23 instructions a key of a 100-key multi-get over 4 servers), else those neither
    /// decided nor refused (each refused key's error put in `out`) with their wire forms.
    fn routable<'k>(&self, keys: &[&'k [u8]], out: &mut (impl Outcomes + ?Sized)) -> Routable<'k> {
        if out.none_decided() && keys.iter().all(|k| self.keys.sent_as_is(k)) {
            return Routable::AsIs;
        }
        let mut idx: Vec<usize> = Vec::with_capacity(keys.len());
        let mut wires: Vec<Cow<'k, [u8]>> = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if out.decided(i) {
                continue;
            }
            match self.keys.wire(k) {
                Ok(w) => {
                    idx.push(i);
                    wires.push(w);
                }
                Err(e) => out.fail(i, e),
            }
        }
        Routable::Picked { idx, wires }
    }
}

/// The keys [`Core::group`] routes.
enum Routable<'k> {
    /// Every input key, each sent as it is.
    AsIs,
    /// The input keys at `idx`, sent as `wires`.
    Picked {
        idx: Vec<usize>,
        wires: Vec<Cow<'k, [u8]>>,
    },
}

/// Each of `hashed`'s owners on `view` (a member's index, `usize::MAX` for none), and how many
/// keys each member owns: counted as the keys are routed, for the sort that follows.
fn route_all<P>(view: &View<P>, hashed: &[&[u8]]) -> (Vec<usize>, Vec<usize>) {
    let mut owner = vec![usize::MAX; hashed.len()];
    let mut count = vec![0usize; view.members.len()];
    // eight or four md5s at a time for the common case
    view.routing.route_each(hashed, |j, s| {
        let o = view.to_member[s];
        owner[j] = o;
        if let Some(c) = count.get_mut(o) {
            *c += 1;
        }
    });
    (owner, count)
}

/// The output of a multi-key operation: every slot filled, a missing one with `missing`'s
/// error (none is left missing by the clients; this keeps a slip from panicking).
pub(crate) fn finish<T>(out: Vec<Option<Result<T>>>) -> Vec<Result<T>> {
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::Config("no result for this key".into()))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Outcomes;
    use crate::core::failure::probe::tests::{core, eject};
    use crate::{Error, Item};

    /// Keys decided before routing are not routed, a key that cannot be sent gets its error
    /// and no group, and the rest are grouped: for a write's slots and a multi-get's results.
    #[test]
    fn grouping_skips_decided_keys_and_fails_invalid_ones() {
        let core = core(100);
        let keys: [&[u8]; 4] = [b"a", b"bad key", b"c", b"d"];
        let grouped = |groups: &super::Groups<'_, _>| {
            let mut idx: Vec<usize> = groups.iter().flat_map(|g| g.idx.to_vec()).collect();
            idx.sort();
            idx
        };
        let mut slots: Vec<Option<crate::Result<()>>> = vec![None, None, Some(Ok(())), None];
        let groups = core.group(&keys, &mut slots[..], true);
        assert_eq!(grouped(&groups), [0, 3]);
        assert!(
            matches!(slots[1], Some(Err(Error::InvalidKey { .. }))),
            "{slots:?}"
        );
        assert!(matches!(slots[2], Some(Ok(()))));
        assert!(slots[0].is_none() && slots[3].is_none());

        let near = Item::new(b"v".to_vec(), 0, None);
        let mut answers: Vec<crate::Result<Option<Item>>> =
            vec![Ok(None), Ok(None), Ok(Some(near)), Ok(None)];
        let groups = core.group(&keys, &mut answers[..], false);
        assert_eq!(grouped(&groups), [0, 3]);
        assert!(
            matches!(answers[1], Err(Error::InvalidKey { .. })),
            "{answers:?}"
        );
        assert!(matches!(&answers[2], Ok(Some(i)) if i.value == b"v"[..]));
        // every key valid, one decided: still not routed
        let valid: [&[u8]; 3] = [b"a", b"c", b"d"];
        for decided in 0..3 {
            let mut answers: Vec<crate::Result<Option<Item>>> = vec![Ok(None), Ok(None), Ok(None)];
            answers[decided] = Ok(Some(Item::new(b"v".to_vec(), 0, None)));
            let groups = core.group(&valid, &mut answers[..], false);
            let want: Vec<usize> = (0..3).filter(|&i| i != decided).collect();
            assert_eq!(grouped(&groups), want);
            let mut slots: Vec<Option<crate::Result<()>>> = vec![None, None, None];
            slots[decided] = Some(Ok(()));
            assert_eq!(grouped(&core.group(&valid, &mut slots[..], true)), want);
        }
    }

    /// Keys over four servers: one group per server that owns any, in server order, each
    /// with its keys in input order, each key where the ring puts it, every key once; keys
    /// of one server make one group.
    #[test]
    fn groups_hold_each_key_once_with_its_owner_in_input_order() {
        let core = core(100);
        let ring = core.ring();
        let keys: Vec<Vec<u8>> = (0..200).map(|i| format!("g{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut slots: Vec<Option<crate::Result<()>>> = refs.iter().map(|_| None).collect();
        let groups = core.group(&refs, &mut slots[..], false);
        assert_eq!(groups.len(), 4);
        assert!(groups.get(4).is_none());
        let members = core.view().members.clone();
        let mut seen = Vec::new();
        let mut last_server = None;
        for g in groups.iter() {
            let server = members
                .iter()
                .position(|m| Arc::ptr_eq(m, g.member))
                .expect("a member");
            assert!(last_server < Some(server), "server order");
            last_server = Some(server);
            assert_eq!(g.idx.len(), g.wire.len());
            assert!(g.idx.windows(2).all(|w| w[0] < w[1]), "{:?}", g.idx);
            for (&i, w) in g.idx.iter().zip(g.wire) {
                assert_eq!(&w[..], refs[i]);
                assert_eq!(ring.route(refs[i]), Some(server), "key {i}");
                seen.push(i);
            }
        }
        seen.sort();
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
        // one server's keys: one group, as they came
        let one: Vec<&[u8]> = refs
            .iter()
            .copied()
            .filter(|k| ring.route(k) == Some(2))
            .collect();
        let groups = core.group(&one, &mut slots[..one.len()], false);
        assert_eq!(groups.len(), 1);
        let g = groups.get(0).expect("a group");
        assert!(Arc::ptr_eq(g.member, &members[2]));
        assert_eq!(g.idx, (0..one.len()).collect::<Vec<_>>());
    }

    /// With one server in force (three of four ejected), a read's keys make one group on it,
    /// in input order, without the keys refused or decided; no key left makes no group; a
    /// write's keys go where the general path sends them, which is the same server.
    #[test]
    fn one_server_in_force_takes_every_key_of_a_read_in_one_group() {
        let core = core(100);
        for i in [0, 1, 3] {
            eject(&core, i);
        }
        let members = core.view().members.clone();
        let keys: Vec<Vec<u8>> = (0..20).map(|i| format!("s{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        for write in [false, true] {
            let mut slots: Vec<Option<crate::Result<()>>> = refs.iter().map(|_| None).collect();
            let groups = core.group(&refs, &mut slots[..], write);
            assert_eq!(groups.len(), 1, "write {write}");
            let g = groups.get(0).expect("a group");
            assert!(Arc::ptr_eq(g.member, &members[2]), "write {write}");
            assert_eq!(g.idx, (0..20).collect::<Vec<_>>());
            assert!(g.wire.iter().zip(&refs).all(|(w, k)| &w[..] == *k));
        }
        // the write recorded each key for its ejected owner's cleanup
        let full = core.ring();
        for i in [0, 1, 3] {
            let mut owned: Vec<Vec<u8>> = keys
                .iter()
                .filter(|k| full.route(k) == Some(i))
                .cloned()
                .collect();
            assert!(!owned.is_empty(), "server {i} owns some of the keys");
            owned.sort();
            let Cleanup::Delete(mut recorded) = members[i].rejoin.pending() else {
                panic!("server {i}: keys to delete on its rejoin");
            };
            recorded.sort();
            assert_eq!(recorded, owned, "server {i}");
        }
        let some: [&[u8]; 4] = [b"a", b"bad key", b"c", b"d"];
        let mut slots: Vec<Option<crate::Result<()>>> = vec![None, None, Some(Ok(())), None];
        let groups = core.group(&some, &mut slots[..], false);
        let g = groups.get(0).expect("a group");
        assert_eq!((groups.len(), g.idx), (1, &[0, 3][..]));
        assert_eq!(
            g.wire.iter().map(|w| &w[..]).collect::<Vec<_>>(),
            [b"a", b"d"]
        );
        assert!(matches!(slots[1], Some(Err(Error::InvalidKey { .. }))));
        let none: [&[u8]; 1] = [b"bad key"];
        let mut slots: Vec<Option<crate::Result<()>>> = vec![None];
        assert_eq!(core.group(&none, &mut slots[..], false).len(), 0);
        assert_eq!(
            core.group(&[], &mut [][..] as &mut [Option<crate::Result<()>>], false)
                .len(),
            0
        );
    }

    /// Keys with a prefix, hashed with it or without: each key's group is the server that a
    /// single key's route picks, and its wire form carries the prefix.
    #[test]
    fn prefixed_keys_are_grouped_where_each_key_routes() {
        use crate::core::failure::probe::tests::NoPool;
        use crate::{FailurePolicy, Server};
        use std::time::Duration;
        for hash_with_prefix in [false, true] {
            let settings = crate::Builder::<crate::Client>::default()
                .servers((1..=4).map(|i| Server::new("127.0.0.1", 1100 + i)))
                .prefix("app:")
                .hash_with_prefix(hash_with_prefix)
                .failure_policy(FailurePolicy::new(1, Duration::from_secs(3600), true))
                .checked()
                .expect("settings");
            let core = super::Core::new(settings, Box::new(|_| NoPool)).expect("core");
            let keys: Vec<Vec<u8>> = (0..200).map(|i| format!("p{i}").into_bytes()).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let mut slots: Vec<Option<crate::Result<()>>> = refs.iter().map(|_| None).collect();
            let groups = core.group(&refs, &mut slots[..], false);
            assert_eq!(groups.len(), 4, "hash_with_prefix {hash_with_prefix}");
            for g in groups.iter() {
                for (&i, w) in g.idx.iter().zip(g.wire) {
                    let single = core.route(refs[i], false).expect("routed");
                    assert!(
                        Arc::ptr_eq(g.member, &single.member),
                        "key {i}, hash_with_prefix {hash_with_prefix}"
                    );
                    assert_eq!(&w[..], [&b"app:"[..], refs[i]].concat());
                }
            }
        }
    }

    /// A multi-get's result is decided only by a value: a miss and an error are not.
    #[test]
    fn only_a_value_decides_a_multi_get_result() {
        let mut answers: Vec<crate::Result<Option<Item>>> = vec![
            Ok(Some(Item::new(b"v".to_vec(), 0, None))),
            Ok(None),
            Err(Error::Config("x".into())),
        ];
        let decided: Vec<bool> = (0..3).map(|i| answers[..].decided(i)).collect();
        assert_eq!(decided, [true, false, false]);
        answers[..].fail(1, Error::Config("y".into()));
        assert!(matches!(&answers[1], Err(Error::Config(m)) if m == "y"));
    }
    use crate::core::failure::rejoin::Cleanup;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_write_routed_before_a_rejoin_is_routed_again() {
        let core = core(100);
        let c = eject(&core, 0);
        let full = core.ring();
        // bounded, so that a ring that never routes to server 0 fails instead of hanging
        let key = (0..1000)
            .map(|i| format!("k{i}").into_bytes())
            .find(|k| full.route(k) == Some(0))
            .expect("a key of server 0");
        let old = core.view();
        let fallback = old.owner(&key).expect("routed");
        assert_ne!(fallback, 0);
        // the rejoin: back in the ring, then its log stops recording
        c.health.success();
        core.rebuild_routing();
        let _ = c.rejoin.rejoined();
        assert!(!core.recorded(&old, &key, fallback, &key), "route again");
        assert_eq!(c.rejoin.pending(), Cleanup::Nothing);
        let r = core.route(&key, true).expect("routed");
        assert!(Arc::ptr_eq(&r.member, &c), "to the returned server");
        // a view in force whose ejected owner does not record yet: it is being ejected now
        let p = &core.failures.policy;
        c.health.hold_down(p, core.failures.epoch, Instant::now());
        core.rebuild_routing();
        let now = core.view();
        let fallback = now.owner(&key).expect("routed");
        assert!(core.recorded(&now, &key, fallback, &key));
        assert_eq!(c.rejoin.pending(), Cleanup::Delete(vec![key.clone()]));
        let copies = c.rejoin.pending_copies();
        assert_eq!(copies.len(), 1);
        assert_eq!(copies[0].0, now.members[fallback].server.addr);
    }

    #[test]
    fn a_key_s_owner_is_down_only_while_it_is_ejected() {
        let core = core(100);
        let full = core.ring();
        let key = (0..1000)
            .map(|i| format!("k{i}").into_bytes())
            .find(|k| full.route(k) == Some(0))
            .expect("a key of server 0");
        let other = (0..1000)
            .map(|i| format!("k{i}").into_bytes())
            .find(|k| full.route(k) == Some(1))
            .expect("a key of server 1");
        assert!(!core.owner_down(&key).expect("routed"));
        // marked down, still in the ring in force (not ejected yet, or never: no auto-eject)
        let c = core.view().members[0].clone();
        c.health
            .hold_down(&core.failures.policy, core.failures.epoch, Instant::now());
        assert!(core.owner_down(&key).expect("routed"));
        assert!(!core.owner_down(&other).expect("routed"));
        // ejected: the key's owner is now a server that is up
        core.rebuild_routing();
        assert!(!core.owner_down(&key).expect("routed"));
    }

    #[test]
    fn multi_key_writes_record_their_fallbacks() {
        let core = core(100);
        let c = eject(&core, 0);
        let full = core.ring();
        let keys: Vec<Vec<u8>> = (0..2000)
            .map(|i| format!("k{i}").into_bytes())
            .filter(|k| full.route(k) == Some(0))
            .take(20)
            .collect();
        assert_eq!(keys.len(), 20, "20 keys of server 0");
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut out: Vec<Option<crate::Result<()>>> = refs.iter().map(|_| None).collect();
        let groups = core.group(&refs, &mut out[..], true);
        assert!(groups.iter().all(|g| !Arc::ptr_eq(g.member, &c)));
        let mut copies = 0;
        for (addr, todo) in c.rejoin.pending_copies() {
            let g = groups
                .iter()
                .find(|g| g.member.server.addr == addr)
                .expect("a group");
            let Cleanup::Delete(mut k) = todo else {
                panic!("{todo:?}")
            };
            k.sort();
            let mut want: Vec<Vec<u8>> = g.wire.iter().map(|w| w.to_vec()).collect();
            want.sort();
            assert_eq!(k, want);
            copies += k.len();
        }
        assert_eq!(copies, keys.len());
    }
}
