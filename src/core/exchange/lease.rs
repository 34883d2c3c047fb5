//! Stampede protection's meta exchanges, meta whatever the client's protocol (the text protocol
//! has no leases): the lookup that may win a lease (`mg … N R`), the winner's store (`ms … C`),
//! the invalidation that keeps a stale value (`md … I T`) and the release of a lease whose
//! recompute failed (`md … C`).

use super::{Ctx, Exchange, Resend, Step, meta};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::proto::meta::{MetaCommand, MetaFlag, MetaReply, MetaRequest, MetaStatus};

/// What a lookup found (meta-vectors/README.md, "Stampede protection flows").
#[derive(Debug)]
pub(crate) enum Lookup {
    /// A value to serve; nobody needs to recompute (or someone already is, early).
    Fresh(Item),
    /// This caller holds the lease and must recompute, storing with `cas`: the key was missing
    /// (`current` is `None`: memcached made an empty placeholder), stale (`X W`) or about to
    /// expire (`R` won); `current` is the value to fall back on.
    Won { cas: u64, current: Option<Item> },
    /// Another caller holds the lease: serve `stale` if there is one, else wait and read again.
    Pending { stale: Option<Item> },
}

fn lookup(r: &MetaReply, buf: &[u8], ctx: &Ctx) -> Result<Lookup> {
    if r.status != MetaStatus::Value {
        return Err(Error::protocol(
            ctx.server,
            format!(
                "mg with vivify answered {:?}; memcached answers a value (a placeholder on a miss)",
                r.status
            ),
        ));
    }
    let item = meta::item(r, buf, false, ctx)?;
    let t = &r.tokens;
    // A placeholder is the empty item vivify made; a stale or early-won item holds data.
    let held = t.stale || !item.value.is_empty();
    Ok(match (t.win, t.won_elsewhere) {
        (true, _) => {
            let Some(cas) = t.cas else {
                return Err(Error::protocol(ctx.server, "mg win without its CAS"));
            };
            Lookup::Won {
                cas,
                current: held.then_some(item),
            }
        }
        (false, true) if t.stale => Lookup::Pending { stale: Some(item) },
        (false, true) if held => Lookup::Fresh(item),
        (false, true) => Lookup::Pending { stale: None },
        (false, false) => Lookup::Fresh(item),
    })
}

/// One meta request and its one reply, read by `read`.
pub(crate) struct MetaOne<'a, T> {
    command: &'static str,
    cmd: MetaCommand,
    key: &'a [u8],
    value: &'a [u8],
    flags: [MetaFlag; 8],
    n: usize,
    resend: Resend,
    read: fn(&MetaReply, &[u8], &Ctx) -> Result<T>,
    opaque: Option<u32>,
}

impl<'a, T> MetaOne<'a, T> {
    fn new(
        command: &'static str,
        cmd: MetaCommand,
        (key, value): (&'a [u8], &'a [u8]),
        given: &[MetaFlag],
        resend: Resend,
        read: fn(&MetaReply, &[u8], &Ctx) -> Result<T>,
    ) -> Self {
        let mut flags = [MetaFlag::Quiet; 8];
        flags[..given.len()].copy_from_slice(given);
        MetaOne {
            command,
            cmd,
            key,
            value,
            flags,
            n: given.len(),
            resend,
            read,
            opaque: None,
        }
    }
}

impl<'a> MetaOne<'a, Lookup> {
    /// `mg key v f c N<lease> [R<recache>]`. Not sent twice: a second lookup by the same
    /// caller would find its own lease taken and wait for itself.
    pub(crate) fn lookup(key: &'a [u8], lease: u32, recache: Option<u32>) -> Self {
        let all = [
            MetaFlag::ReturnValue,
            MetaFlag::ReturnFlags,
            MetaFlag::ReturnCas,
            MetaFlag::Vivify(lease),
            MetaFlag::Recache(recache.unwrap_or(0)),
        ];
        let flags = &all[..if recache.is_some() { 5 } else { 4 }];
        let cmd = MetaCommand::Get;
        MetaOne::new(
            "get_or_compute",
            cmd,
            (key, b""),
            flags,
            Resend::Never,
            lookup,
        )
    }
}

impl<'a> MetaOne<'a, StoreOutcome> {
    /// The winner's `ms key F T C<cas>`: stored only while the lease (or the stale item it
    /// won) is still there, so a value written meanwhile by a plain `set` is never overwritten.
    pub(crate) fn store_leased(
        key: &'a [u8],
        value: &'a [u8],
        (flags, exptime): (u32, u32),
        cas: u64,
    ) -> Self {
        let given = [
            MetaFlag::ClientFlags(flags),
            MetaFlag::Ttl(exptime),
            MetaFlag::CompareCas(cas),
        ];
        let read = |r: &MetaReply, _: &[u8], ctx: &Ctx| match r.status {
            MetaStatus::Header => Ok(StoreOutcome::Stored),
            MetaStatus::Exists => Ok(StoreOutcome::Exists),
            MetaStatus::NotFound => Ok(StoreOutcome::NotFound),
            MetaStatus::NotStored => Ok(StoreOutcome::NotStored),
            s => Err(unexpected(s, "ms", ctx)),
        };
        let cmd = MetaCommand::Set;
        MetaOne::new(
            "get_or_compute",
            cmd,
            (key, value),
            &given,
            Resend::Never,
            read,
        )
    }
}

impl<'a> MetaOne<'a, DeleteOutcome> {
    /// `md key I T<stale>`: mark the value stale, kept `stale` seconds for the readers while
    /// one caller recomputes.
    pub(crate) fn invalidate(key: &'a [u8], stale: u32) -> Self {
        let given = [MetaFlag::Invalidate, MetaFlag::Ttl(stale)];
        let cmd = MetaCommand::Delete;
        MetaOne::new("invalidate", cmd, (key, b""), &given, Resend::Safe, deleted)
    }

    /// `md key C<cas>`: remove the placeholder of a lease whose recompute failed, so the next
    /// caller wins at once (nothing happens if the item changed since).
    pub(crate) fn release(key: &'a [u8], cas: u64) -> Self {
        let given = [MetaFlag::CompareCas(cas)];
        let cmd = MetaCommand::Delete;
        MetaOne::new(
            "get_or_compute",
            cmd,
            (key, b""),
            &given,
            Resend::Safe,
            deleted,
        )
    }
}

fn deleted(r: &MetaReply, _: &[u8], ctx: &Ctx) -> Result<DeleteOutcome> {
    match r.status {
        MetaStatus::Header => Ok(DeleteOutcome::Deleted),
        // EX: the item changed since (the release of a lease someone else refreshed)
        MetaStatus::NotFound | MetaStatus::Exists => Ok(DeleteOutcome::NotFound),
        s => Err(unexpected(s, "md", ctx)),
    }
}

fn unexpected(status: MetaStatus, to: &str, ctx: &Ctx) -> Error {
    Error::protocol(
        ctx.server,
        format!("unexpected meta reply {status:?} to {to}"),
    )
}

impl<T> Exchange for MetaOne<'_, T> {
    type Output = T;

    fn command(&self) -> &'static str {
        self.command
    }

    fn resend(&self) -> Resend {
        self.resend
    }

    fn restart(&mut self) {
        self.opaque = None;
    }

    fn key_count(&self) -> usize {
        1
    }

    fn key(&self, i: usize) -> Option<&[u8]> {
        (i == 0).then_some(self.key)
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<T>> {
        let Some(opaque) = self.opaque else {
            let opaque = meta::reserve(1);
            let mut flags = self.flags;
            flags[self.n] = MetaFlag::Opaque(opaque);
            // the key passed validate_key when it was routed; the flags are fixed above
            MetaRequest {
                key: self.key,
                value: self.value,
                flags: &flags[..=self.n],
                command: self.cmd,
            }
            .encode_unchecked(out);
            self.opaque = Some(opaque);
            return Ok(Step::Write);
        };
        let (r, used) = match meta::read_one(rb, ctx, opaque, self.command)? {
            meta::One::More => return Ok(Step::Read),
            meta::One::Refused(e) => return Ok(Step::Refused(e)),
            meta::One::Reply(r, used) => (r, used),
        };
        let out = (self.read)(&r, rb.unread(), ctx);
        rb.consume(used);
        out.map(Step::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::meta::testing::{CTX, opaques, receive};

    /// The lookup of `k` answered `reply` (its `{o}` replaced by the request's token).
    fn looked_up(reply: &str) -> Result<Lookup> {
        let mut ex = MetaOne::lookup(b"k", 30, Some(10));
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(ex.step(&mut rb, &mut out, &CTX), Ok(Step::Write)));
        let o = opaques(&out)[0];
        assert_eq!(out, format!("mg k v f c N30 R10 O{o}\r\n").as_bytes());
        receive(&mut rb, reply.replace("{o}", &o.to_string()).as_bytes());
        match ex.step(&mut rb, &mut Vec::new(), &CTX)? {
            Step::Done(l) => Ok(l),
            other => panic!("{other:?}"),
        }
    }

    /// The replies memcached 1.6.18 gave in meta-vectors' vivify, stale and recache cases.
    #[test]
    fn each_lookup_reply_is_the_callers_part() {
        let won = looked_up("VA 0 f0 c5 O{o} W\r\n\r\n").unwrap();
        assert!(matches!(
            won,
            Lookup::Won {
                cas: 5,
                current: None
            }
        ));
        let waiting = looked_up("VA 0 f0 c5 O{o} Z\r\n\r\n").unwrap();
        assert!(matches!(waiting, Lookup::Pending { stale: None }));
        let stale_won = looked_up("VA 3 f0 c6 O{o} X W\r\nold\r\n").unwrap();
        assert!(
            matches!(stale_won, Lookup::Won { cas: 6, current: Some(ref i) } if i.value == b"old"[..])
        );
        let stale = looked_up("VA 3 f0 c6 O{o} Z X\r\nold\r\n").unwrap();
        assert!(matches!(stale, Lookup::Pending { stale: Some(ref i) } if i.value == b"old"[..]));
        // early recache: another caller refreshes, this one is served the current value
        let early = looked_up("VA 2 f0 c7 O{o} Z\r\nv1\r\n").unwrap();
        assert!(matches!(early, Lookup::Fresh(ref i) if i.value == b"v1"[..]));
        let fresh = looked_up("VA 2 f3 c7 O{o}\r\nv1\r\n").unwrap();
        assert!(matches!(fresh, Lookup::Fresh(ref i) if i.flags == 3));
        // a win without the CAS to store with, or a miss (vivify never misses): not memcached
        assert!(looked_up("VA 0 f0 O{o} W\r\n\r\n").is_err());
        assert!(looked_up("EN O{o}\r\n").is_err());
    }

    #[test]
    fn a_restarted_lookup_sends_its_request_again_under_its_name() {
        let mut ex = MetaOne::lookup(b"k", 30, None);
        assert_eq!(ex.command(), "get_or_compute");
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(ex.step(&mut rb, &mut out, &CTX), Ok(Step::Write)));
        let first = opaques(&out)[0];
        // a stale connection: the exchange starts over on a fresh one, with a new token
        ex.restart();
        let mut again = Vec::new();
        assert!(matches!(
            ex.step(&mut ReadBuf::default(), &mut again, &CTX),
            Ok(Step::Write)
        ));
        let second = opaques(&again)[0];
        assert_ne!(first, second);
        assert_eq!(again, format!("mg k v f c N30 O{second}\r\n").as_bytes());
    }

    #[test]
    fn the_winners_store_compares_the_lease_cas() {
        let mut ex = MetaOne::store_leased(b"k", b"new", (4, 60), 5);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        assert_eq!(out, format!("ms k 3 F4 T60 C5 O{o}\r\nnew\r\n").as_bytes());
        receive(&mut rb, format!("EX O{o}\r\n").as_bytes());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::Done(StoreOutcome::Exists))
        ));
        let mut out = Vec::new();
        let _ = MetaOne::invalidate(b"k", 30).step(&mut ReadBuf::default(), &mut out, &CTX);
        assert!(out.starts_with(b"md k I T30 O"));
    }
}
