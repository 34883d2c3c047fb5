//! Multi-key operations between grouping and I/O: the requests of one server's group, and
//! each group's results put back in input order (with the near cache and hit counts kept).

use super::Core;
use super::exchange::Retrieve;
use super::failure::eject::ServerPool;
use super::route::{Group, Groups, finish};
use std::borrow::Cow;

/// A multi-get's results, one per input key: a miss until a value (or an error) is placed.
pub(crate) type Answers = Vec<Result<Option<Item>>>;
use crate::error::{Error, Result};
use crate::outcome::Item;
use crate::proto::{Request, StoreCommand};

/// One output slot per input key; a filled slot is final.
pub(crate) type Slots<T> = Vec<Option<Result<T>>>;

/// Empty slots for `n` keys.
pub(crate) fn slots<T>(n: usize) -> Slots<T> {
    (0..n).map(|_| None).collect()
}

/// A multi-key operation between grouping and I/O: the keys (and values) by input index, the
/// output slots (those already decided filled), and the keys grouped by server.
pub(crate) struct Batch<'k, P, T> {
    keys: Vec<&'k [u8]>,
    values: Vec<&'k [u8]>,
    /// Flags and expiry of a storage batch.
    meta: (u32, u32),
    out: Slots<T>,
    pub(crate) groups: Groups<'k, P>,
}

impl<'k, P, T> Batch<'k, P, T> {
    /// The `set` requests of `g` (`noreply` for a noreply batch).
    pub(crate) fn sets<'a>(&'a self, g: Group<'a, 'k, P>, noreply: bool) -> Vec<Request<'a>> {
        let (flags, exptime) = self.meta;
        g.idx
            .iter()
            .zip(g.wire)
            .map(|(&i, key)| Request::Store {
                cmd: StoreCommand::Set,
                key,
                flags,
                exptime,
                value: self.values[i],
                noreply,
            })
            .collect()
    }

    /// The `delete` requests of `g`.
    pub(crate) fn deletes<'a>(&'a self, g: Group<'a, 'k, P>) -> Vec<Request<'a>> {
        g.wire
            .iter()
            .map(|key| Request::Delete {
                key,
                noreply: false,
            })
            .collect()
    }

    /// The results of a write batch: each group's `results` (one per key of the group) in
    /// their slots, and the keys dropped from the near cache.
    pub(crate) fn finish_writes(
        mut self,
        core: &Core<P>,
        results: impl IntoIterator<Item = Vec<Result<T>>>,
    ) -> Vec<Result<T>> {
        for (g, results) in self.groups.iter().zip(results) {
            for (&i, r) in g.idx.iter().zip(results) {
                self.out[i] = Some(r);
            }
        }
        core.forget(self.keys.iter().copied());
        finish(self.out)
    }
}

/// Where a multi-get's values land. Straight in the output when one server holds every key
/// (in input order): a 100-key multi-get over one server took ~26 instructions a key less than
/// listing them first. Else listed by each group's retrieval, and placed in the output after
/// all groups are read: with many groups, values in slots of the groups' order, placed back in
/// input order, took ~24 instructions a key more than lists (callgrind).
#[derive(Debug)]
pub(crate) enum Landing {
    Direct,
    /// Each group's values, in group order.
    Listed(Vec<Listed>),
}

/// A group's values (each with its index in the group), how many of its keys were answered,
/// and the error of the others.
#[derive(Debug)]
pub(crate) struct Listed {
    found: Vec<(usize, Item)>,
    answered: usize,
    err: Option<Error>,
}

impl<'k, P> Batch<'k, P, Option<Item>> {
    /// Each group's retrieval, in group order, and where their values land: in `out` itself
    /// when one group holds every key.
    pub(crate) fn retrievals<'a>(
        &'a self,
        out: &'a mut [Result<Option<Item>>],
    ) -> (Vec<Retrieve<'a, Cow<'k, [u8]>>>, Landing) {
        if let Some(g) = self.groups.get(0)
            && self.groups.len() == 1
            && g.idx.len() == out.len()
        {
            return (vec![Retrieve::many(g.wire, Some(out))], Landing::Direct);
        }
        let exs = self
            .groups
            .iter()
            .map(|g| Retrieve::many(g.wire, None))
            .collect();
        (exs, Landing::Listed(Vec::with_capacity(self.groups.len())))
    }

    /// The outcome of group `gi`'s retrieval `ex`: its hits counted (without `err`), its values
    /// listed in `landing` when they land later, and its keys not answered given `err`.
    pub(crate) fn settle_group<K: AsRef<[u8]>>(
        &self,
        core: &Core<P>,
        gi: usize,
        ex: &mut Retrieve<'_, K>,
        err: Option<&Error>,
        landing: &mut Landing,
    ) where
        P: ServerPool,
    {
        let Some(g) = self.groups.get(gi) else {
            return;
        };
        if err.is_none() {
            core.hits(g.member, ex.found(), g.idx.len());
        }
        match landing {
            Landing::Direct => {
                if let Some(e) = err {
                    ex.fail_unanswered(e);
                }
            }
            Landing::Listed(groups) => {
                let answered = err.map_or(g.idx.len(), |_| ex.answered());
                groups.push(Listed {
                    found: ex.take_found(),
                    answered,
                    err: err.cloned(),
                });
            }
        }
    }

    /// Every group's values in `out`, in input order, those marked kept in the near cache; the
    /// keys of a group not answered get its error. A slot is a miss until here: only hits and
    /// errors are written (moving every key's 88-byte result into a slot of options, and
    /// unwrapping them all at the end, was ~90 of a 100-key multi-get's ~1,540 instructions a
    /// key, callgrind).
    pub(crate) fn land(&self, core: &Core<P>, out: &mut [Result<Option<Item>>], landing: Landing) {
        let groups = match landing {
            Landing::Direct => {
                if core.near_on() {
                    for (k, r) in self.keys.iter().zip(out.iter()) {
                        if let Ok(Some(item)) = r {
                            core.near_keep(k, item);
                        }
                    }
                }
                return;
            }
            Landing::Listed(groups) => groups,
        };
        for (g, listed) in self.groups.iter().zip(groups) {
            let Listed {
                found,
                answered,
                err,
            } = listed;
            for (j, item) in found {
                // a value read in a batch that was not read to its end is not final
                let Some(&i) = g.idx.get(j).filter(|_| j < answered) else {
                    break;
                };
                core.near_keep(self.keys[i], &item);
                out[i] = Ok(Some(item));
            }
            if let Some(e) = err {
                for &i in g.idx.get(answered..).unwrap_or_default() {
                    out[i] = Err(e.clone());
                }
            }
        }
    }
}

impl<P: ServerPool> Core<P> {
    /// A multi-get of `keys`, and its output slots (apart, so that they can be filled with
    /// [`Batch::place_hits`] while the groups' keys are borrowed): those marked for the near
    /// cache with a fresh copy answered, the rest grouped by server.
    pub(crate) fn read_batch<'k, K: AsRef<[u8]>>(
        &self,
        keys: &'k [K],
    ) -> (Batch<'k, P, Option<Item>>, Answers) {
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        let mut out: Answers = keys.iter().map(|k| Ok(self.near_lookup(k))).collect();
        let groups = self.group(&keys, &mut out[..], false);
        let batch = Batch {
            keys,
            values: Vec::new(),
            meta: (0, 0),
            out: Vec::new(),
            groups,
        };
        (batch, out)
    }

    /// A multi-delete of `keys`, grouped by server.
    pub(crate) fn delete_batch<'k, K: AsRef<[u8]>, T>(&self, keys: &'k [K]) -> Batch<'k, P, T> {
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        let mut out = slots(keys.len());
        let groups = self.group(&keys, &mut out[..], true);
        Batch {
            keys,
            values: Vec::new(),
            meta: (0, 0),
            out,
            groups,
        }
    }

    /// A multi-set of `items` with flags and expiry `meta`: values over the item size fail at
    /// once, the rest are grouped by server.
    pub(crate) fn set_batch<'k, K: AsRef<[u8]>, V: AsRef<[u8]>, T>(
        &self,
        items: &'k [(K, V)],
        meta: (u32, u32),
    ) -> Batch<'k, P, T> {
        let keys: Vec<&[u8]> = items.iter().map(|(k, _)| k.as_ref()).collect();
        let values: Vec<&[u8]> = items.iter().map(|(_, v)| v.as_ref()).collect();
        let mut out: Slots<T> = values
            .iter()
            .map(|v| self.keys.check_value(v).err().map(Err))
            .collect();
        let groups = self.group(&keys, &mut out[..], true);
        Batch {
            keys,
            values,
            meta,
            out,
            groups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::{Ctx, Exchange, Step};
    use crate::core::failure::probe::tests::{NoPool, core};
    use crate::core::readbuf::ReadBuf;
    use crate::settings::RequestCaps;
    use std::time::Duration;

    /// Keys of `n` that server `server` owns on `core`'s ring, `count` of them.
    fn keys_of(core: &Core<NoPool>, server: usize, count: usize) -> Vec<String> {
        let full = core.ring();
        (0..1000)
            .map(|i| format!("k{i}"))
            .filter(|k| full.route(k.as_bytes()) == Some(server))
            .take(count)
            .collect()
    }

    /// `ex` sent (in lines of two keys) and then given `reply`: what its step says.
    fn run(ex: &mut Retrieve<'_, Cow<'_, [u8]>>, reply: &str) -> Result<Step<()>> {
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: RequestCaps {
                keys: 2,
                bytes: usize::MAX,
            },
        };
        let mut rb = ReadBuf::default();
        assert!(matches!(
            ex.step(&mut rb, &mut Vec::new(), &ctx),
            Ok(Step::WriteThenRead)
        ));
        rb.spare()[..reply.len()].copy_from_slice(reply.as_bytes());
        rb.filled(reply.len());
        ex.step(&mut rb, &mut Vec::new(), &ctx)
    }

    /// A multi-get of four `keys` of one server's (sent in lines of two), whose values land in
    /// the output directly: the first line's reply (a hit of the first key, a miss), then a
    /// value of the third key and nothing more, and a timeout. The output.
    fn one_group_cut<C>(core: &Core<C>, keys: &[String]) -> Answers
    where
        C: ServerPool,
    {
        let (batch, mut out) = core.read_batch(keys);
        assert_eq!(batch.groups.len(), 1);
        let (mut exs, mut landing) = batch.retrievals(&mut out);
        assert!(matches!(landing, Landing::Direct));
        let reply = format!(
            "VALUE {} 0 1\r\nx\r\nEND\r\nVALUE {} 0 1\r\ny\r\n",
            keys[0], keys[2]
        );
        assert!(matches!(run(&mut exs[0], &reply), Ok(Step::Read)));
        assert_eq!(exs[0].answered(), 2);
        batch.settle_group(core, 0, &mut exs[0], Some(&timeout()), &mut landing);
        drop(exs);
        batch.land(core, &mut out, landing);
        out
    }

    /// A multi-get of `keys`, whose owners are two servers: the first server's reply read
    /// whole (`whole`), the second's cut after `cut` and then timed out. The output.
    fn two_groups<C, K: AsRef<[u8]>>(core: &Core<C>, keys: &[K], whole: &str, cut: &str) -> Answers
    where
        C: ServerPool,
    {
        let (batch, mut out) = core.read_batch(keys);
        assert_eq!(batch.groups.len(), 2);
        let (mut exs, mut landing) = batch.retrievals(&mut out);
        assert!(matches!(landing, Landing::Listed(_)));
        assert!(matches!(run(&mut exs[0], whole), Ok(Step::Done(()))));
        batch.settle_group(core, 0, &mut exs[0], None, &mut landing);
        assert!(matches!(run(&mut exs[1], cut), Ok(Step::Read)));
        batch.settle_group(core, 1, &mut exs[1], Some(&timeout()), &mut landing);
        drop(exs);
        batch.land(core, &mut out, landing);
        out
    }

    fn timeout() -> Error {
        Error::Timeout {
            server: "s:1".into(),
            op: "read",
            after: Duration::from_secs(1),
        }
    }

    /// A retrieval that failed partway, on a multi-get whose keys are all one server's (its
    /// values land in the output directly): the keys whose line was answered keep their values
    /// or misses, the others get the error, even one whose value was read (that line was not
    /// read to its end, so its value is not final).
    #[test]
    fn keys_answered_before_a_failure_keep_their_answers() {
        let core = core(100);
        let keys = keys_of(&core, 0, 4);
        assert_eq!(keys.len(), 4, "four keys of server 0");
        let out = one_group_cut(&core, &keys);
        assert!(
            matches!(&out[0], Ok(Some(i)) if i.value == b"x"[..]),
            "{:?}",
            out[0]
        );
        assert!(matches!(out[1], Ok(None)), "{:?}", out[1]);
        for r in &out[2..] {
            assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
        }
    }

    /// With a near cache, the values of a multi-get whose keys are all one server's (landing in
    /// the output directly) are kept in it, as those of many servers' are; a value of a key not
    /// answered is not.
    #[cfg(feature = "near-cache")]
    #[test]
    fn values_landing_directly_are_kept_in_the_near_cache() {
        use crate::core::failure::probe::tests::NoPool;
        use crate::{FailurePolicy, Server};
        let settings = crate::Builder::<crate::Client>::default()
            .servers((1..=4).map(|i| Server::new("127.0.0.1", 1100 + i)))
            .near_cache(crate::near::NearCacheConfig::prefixes(
                ["k"],
                Duration::from_secs(60),
                100,
            ))
            .failure_policy(FailurePolicy::new(1, Duration::from_secs(3600), true))
            .checked()
            .expect("settings");
        let core = Core::new(settings, Box::new(|_| NoPool)).expect("core");
        let keys = keys_of(&core, 0, 4);
        one_group_cut(&core, &keys);
        let kept = core.near_lookup(keys[0].as_bytes());
        assert!(kept.is_some_and(|i| i.value == b"x"[..]));
        assert!(core.near_lookup(keys[2].as_bytes()).is_none());
        // two servers' keys: listed, then placed
        let (a, b) = (&keys[1..2], keys_of(&core, 1, 2));
        let keys = [&b[0], &a[0], &b[1]];
        let whole = format!("VALUE {} 0 1\r\nz\r\nEND\r\n", a[0]);
        let cut = format!("VALUE {} 0 1\r\nw\r\n", b[0]);
        two_groups(&core, &keys, &whole, &cut);
        let kept = core.near_lookup(a[0].as_bytes());
        assert!(kept.is_some_and(|i| i.value == b"z"[..]));
        assert!(core.near_lookup(b[0].as_bytes()).is_none(), "not answered");
    }

    /// Keys of two servers, interleaved: each server's values land in their slots in input
    /// order, one server's hit and miss beside the other's error and (unanswered) value, and a
    /// key refused before routing keeps its error.
    #[test]
    fn values_of_many_servers_land_in_input_order() {
        let core = core(100);
        let (a, b) = (keys_of(&core, 0, 2), keys_of(&core, 1, 2));
        let keys = [&b[0], &a[0], "bad key", &b[1], &a[1]];
        // server 0: a[1] found, a[0] a miss; server 1: b[0]'s value, then nothing
        let whole = format!("VALUE {} 0 1\r\nx\r\nEND\r\n", a[1]);
        let cut = format!("VALUE {} 0 1\r\ny\r\n", b[0]);
        let out = two_groups(&core, &keys, &whole, &cut);
        assert!(matches!(out[0], Err(Error::Timeout { .. })), "{:?}", out[0]);
        assert!(matches!(out[1], Ok(None)), "{:?}", out[1]);
        assert!(
            matches!(out[2], Err(Error::InvalidKey { .. })),
            "{:?}",
            out[2]
        );
        assert!(matches!(out[3], Err(Error::Timeout { .. })), "{:?}", out[3]);
        assert!(
            matches!(&out[4], Ok(Some(i)) if i.value == b"x"[..]),
            "{:?}",
            out[4]
        );
    }
}
