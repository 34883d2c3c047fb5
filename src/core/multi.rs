//! Multi-key operations between grouping and I/O: the requests of one server's group, and
//! each group's results put back in input order (with the near cache and hit counts kept).

use super::Core;
use super::exchange::Retrieve;
use super::failure::eject::ServerPool;
use super::route::{Group, Groups, finish};

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

impl<'k, P> Batch<'k, P, Option<Item>> {
    /// Put the outcome of group `gi`'s retrieval `ex` in its slots: the keys answered get
    /// their value or miss (kept in the near cache when marked), the others `err`.
    pub(crate) fn place_hits<K: AsRef<[u8]>>(
        &self,
        core: &Core<P>,
        out: &mut [Result<Option<Item>>],
        gi: usize,
        ex: &mut Retrieve<'_, K>,
        err: Option<&Error>,
    ) where
        P: ServerPool,
    {
        let Some(g) = self.groups.get(gi) else {
            return;
        };
        let answered = if err.is_some() {
            ex.answered()
        } else {
            g.idx.len()
        };
        let found = ex.take_found();
        if err.is_none() {
            core.hits(g.member, found.len(), g.idx.len());
        }
        // A slot is a miss until here: only hits and errors are written (moving every key's
        // 88-byte result into a slot of options, and unwrapping them all at the end, was ~90 of
        // a 100-key multi-get's ~1,540 instructions a key, callgrind).
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
    use crate::core::failure::probe::tests::core;
    use crate::core::readbuf::ReadBuf;
    use crate::settings::RequestCaps;
    use std::time::Duration;

    /// A retrieval that failed partway: the keys whose line was answered keep their values or
    /// misses, the others get the error.
    #[test]
    fn keys_answered_before_a_failure_keep_their_answers() {
        let core = core(100);
        let full = core.ring();
        let keys: Vec<String> = (0..1000)
            .map(|i| format!("k{i}"))
            .filter(|k| full.route(k.as_bytes()) == Some(0))
            .take(4)
            .collect();
        assert_eq!(keys.len(), 4, "four keys of server 0");
        let (batch, mut out) = core.read_batch(&keys);
        assert_eq!(batch.groups.len(), 1);
        let mut ex = Retrieve::new(batch.groups.get(0).expect("a group").wire, false, None);
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
        // the first line's reply (a hit and a miss), then a value of the second line's and
        // nothing more: that line was not read to its end, so its value is not final
        let reply = format!(
            "VALUE {} 0 1\r\nx\r\nEND\r\nVALUE {} 0 1\r\ny\r\n",
            keys[0], keys[2]
        );
        rb.spare()[..reply.len()].copy_from_slice(reply.as_bytes());
        rb.filled(reply.len());
        assert!(matches!(
            ex.step(&mut rb, &mut Vec::new(), &ctx),
            Ok(Step::Read)
        ));
        assert_eq!(ex.answered(), 2);
        let err = Error::Timeout {
            server: "s:1".into(),
            op: "read",
            after: Duration::from_secs(1),
        };
        batch.place_hits(&core, &mut out, 0, &mut ex, Some(&err));
        let got = out;
        assert!(
            matches!(&got[0], Ok(Some(i)) if i.value == b"x"[..]),
            "{:?}",
            got[0]
        );
        assert!(matches!(got[1], Ok(None)), "{:?}", got[1]);
        for r in &got[2..] {
            assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
        }
    }
}
