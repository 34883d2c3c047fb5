//! `get`/`gets`/`gat`/`gats` of one or many keys: requests of at most the connection's
//! [`RequestCaps`](crate::settings::RequestCaps) (100 keys by default) each, all written at
//! once, and each `VALUE` matched to a key asked.

use super::{Ctx, Exchange, Step, meta, refusal};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::outcome::Item;
use crate::proto::meta::{MetaFlag, MetaItem, MetaRequest, MetaStatus};
use crate::proto::{Parsed, RetrievalItem, encode_retrieval, parse_retrieval, value_of};
use std::ops::Range;

/// A retrieval of `keys` (as sent) from one server. Its values are held (one key's:
/// [`Retrieve::take_item`]), listed ([`Retrieve::take_found`]) or put in the caller's slots
/// ([`Retrieve::many`]); after a failure, the first [`Retrieve::answered`] keys have their
/// final result.
///
/// The keys are any slice of byte strings: a multi-get reads a server's group of wire keys as
/// they are (copying them into a slice of `&[u8]` first was an allocation per server and a
/// copy of every key; without them, 1,196 -> 1,186 instructions a key of a 100-key multi-get
/// over 4 servers, callgrind).
#[derive(Debug)]
pub(crate) struct Retrieve<'a, K = &'a [u8]> {
    keys: &'a [K],
    cas: bool,
    touch: Option<u32>,
    hits: Hits<'a>,
    /// The first key of the batch whose reply is being read.
    start: usize,
    /// The end of that batch (one past its last key).
    end: usize,
    /// Within the batch: the first key a `VALUE` may still answer.
    next: usize,
    sent: bool,
    /// Sent as meta commands, with opaque tokens from `base` on.
    meta: Option<u32>,
    /// A server's share of a `get_multi`, named so even when it is one key.
    multi: bool,
    /// Values read but not yet taken out of the buffer ([`Retrieve::settle`]): the first in
    /// place, so that a single get allocates nothing for it, the others after it.
    queued_first: Option<Queued>,
    queued: Vec<Queued>,
}

/// A value read but not yet taken out of the buffer: the key's index, the data's bytes in the
/// unread part, flags and CAS.
type Queued = (usize, Range<usize>, u32, Option<u64>);

impl<'a, K: AsRef<[u8]>> Retrieve<'a, K> {
    /// `get` (`cas`: `gets`; with `touch`: `gat`/`gats` with that expiry).
    #[inline]
    pub(crate) fn new(keys: &'a [K], cas: bool, touch: Option<u32>) -> Self {
        Retrieve {
            keys,
            cas,
            touch,
            hits: Hits::new(keys.len()),
            start: 0,
            end: 0,
            next: 0,
            sent: false,
            meta: None,
            multi: false,
            queued_first: None,
            queued: Vec::new(),
        }
    }

    /// A server's share of a `get_multi`: `get` of `keys`, named `get_multi` (its metrics and
    /// span) however few keys went to this server. With `slots`, each value is put in its
    /// key's slot (key `i`'s in `slots[i]`, as `Ok(Some(_))`; a slot of a key not found is left
    /// as it is); without, the values are listed ([`Retrieve::take_found`]).
    pub(crate) fn many(keys: &'a [K], slots: Option<&'a mut [Result<Option<Item>>]>) -> Self {
        let hits = match slots {
            Some(slots) => Hits::Slots { slots, found: 0 },
            None => Hits::Many(Vec::new()),
        };
        Retrieve {
            multi: true,
            hits,
            ..Retrieve::new(keys, false, None)
        }
    }

    /// The values listed so far, each with its key's index, ascending (none for a retrieval
    /// into slots).
    pub(crate) fn take_found(&mut self) -> Vec<(usize, Item)> {
        match &mut self.hits {
            Hits::Many(v) => std::mem::take(v),
            _ => Vec::new(),
        }
    }

    /// Each slot of a key not answered (from [`Retrieve::answered`] on) given `e`: a value
    /// read for it is not final.
    pub(crate) fn fail_unanswered(&mut self, e: &Error) {
        let answered = self.answered();
        if let Hits::Slots { slots, .. } = &mut self.hits {
            for slot in slots.iter_mut().skip(answered) {
                *slot = Err(e.clone());
            }
        }
    }

    /// How many keys had a value.
    pub(crate) fn found(&self) -> usize {
        self.hits.found()
    }

    /// How many keys (from the first) have their final result: those of the batches read to
    /// their `END`.
    pub(crate) fn answered(&self) -> usize {
        self.start
    }

    /// The values read so far, one entry per key.
    #[cfg(test)]
    pub(crate) fn take_hits(&mut self) -> Vec<Option<Item>> {
        let mut all: Vec<Option<Item>> = std::iter::repeat_with(|| None)
            .take(self.keys.len())
            .collect();
        for (i, item) in self.hits.take_every() {
            all[i] = Some(item);
        }
        all
    }

    /// The one value of a single-key retrieval.
    pub(crate) fn take_item(&mut self) -> Option<Item> {
        self.hits.take_one()
    }

    /// One past the last key of the batch starting at `start`: as many keys as `caps` let one
    /// line hold, and at least one.
    fn batch_end(&self, start: usize, caps: crate::settings::RequestCaps) -> usize {
        if self.keys.len() <= start + 1 {
            // one key left, or none: a line of its own (every batch of a get)
            return self.keys.len();
        }
        if caps.bytes == usize::MAX {
            // no byte cap (the default): lines are cut by count alone, without walking the
            // keys (~15 instructions a key of a 100-key multi-get, callgrind)
            return self.keys.len().min(start.saturating_add(caps.keys));
        }
        // `gats <exptime>` and the line end; the exptime's digits count too
        let head = match self.touch {
            None => 3 + usize::from(self.cas),
            Some(e) => 4 + usize::from(self.cas) + e.checked_ilog10().unwrap_or(0) as usize + 1,
        } + 2;
        let mut bytes = head;
        let mut end = start;
        while end < self.keys.len() && end - start < caps.keys {
            let add = 1 + self.keys[end].as_ref().len();
            if end > start && bytes.saturating_add(add) > caps.bytes {
                break;
            }
            bytes = bytes.saturating_add(add);
            end += 1;
        }
        end
    }

    /// Every key's result is final.
    fn all_read(&self) -> bool {
        self.start >= self.keys.len()
    }
}

/// The values found. A single key's is held in place: a `get` allocates nothing for it (the
/// list's allocation and free were ~250 of an async get's ~5,800 instructions, callgrind).
#[derive(Debug)]
enum Hits<'a> {
    One(Option<Item>),
    /// Each value with its key's index, ascending. Only hits are written: a slot per key, each
    /// first set to `None` and all read again to place them, was ~20 instructions a key of a
    /// 100-key multi-get (callgrind).
    Many(Vec<(usize, Item)>),
    /// Each value in its key's slot of the caller's: no list to place them from afterwards
    /// (listing and then placing them was ~26 instructions a key of a 100-key multi-get over
    /// one server, callgrind).
    Slots {
        slots: &'a mut [Result<Option<Item>>],
        found: usize,
    },
}

impl Hits<'_> {
    fn new(keys: usize) -> Hits<'static> {
        if keys == 1 {
            Hits::One(None)
        } else {
            Hits::Many(Vec::new())
        }
    }

    /// Values read (each with its key's index), after those put before. Put as a run, not one
    /// by one: a call per value was ~40 instructions a key of a 100-key multi-get (callgrind).
    #[inline]
    fn extend(&mut self, values: impl Iterator<Item = (usize, Item)>) {
        match self {
            // a single key has at most one value
            Hits::One(h) => *h = values.last().map(|(_, item)| item),
            Hits::Many(v) => v.extend(values),
            Hits::Slots { slots, found } => {
                for (i, item) in values {
                    if let Some(slot) = slots.get_mut(i) {
                        *slot = Ok(Some(item));
                        *found += 1;
                    }
                }
            }
        }
    }

    fn found(&self) -> usize {
        match self {
            Hits::One(h) => usize::from(h.is_some()),
            Hits::Many(v) => v.len(),
            Hits::Slots { found, .. } => *found,
        }
    }

    /// None found yet: for a retrieval run again from the start.
    fn clear(&mut self) {
        match self {
            Hits::One(h) => *h = None,
            Hits::Many(v) => v.clear(),
            Hits::Slots { slots, found } => {
                slots.iter_mut().for_each(|s| *s = Ok(None));
                *found = 0;
            }
        }
    }

    /// Every value found, wherever it is held (list or slots), with its key's index, ascending,
    /// leaving none.
    #[cfg(test)]
    fn take_every(&mut self) -> Vec<(usize, Item)> {
        match self {
            Hits::One(h) => h.take().map(|item| (0, item)).into_iter().collect(),
            Hits::Many(v) => std::mem::take(v),
            Hits::Slots { slots, .. } => slots
                .iter_mut()
                .enumerate()
                .filter_map(|(i, s)| Some((i, std::mem::replace(s, Ok(None)).ok()??)))
                .collect(),
        }
    }

    /// A single key's value, leaving none (none held for many keys).
    fn take_one(&mut self) -> Option<Item> {
        match self {
            Hits::One(h) => h.take(),
            _ => None,
        }
    }
}

/// The error for a `VALUE` that cannot answer `keys`: a key not asked, or one asked but
/// already answered or passed (a reply holds at most one value per key asked, in order, so it
/// can never grow past the keys asked times the largest value).
fn not_asked(k: &[u8], keys: &[impl AsRef<[u8]>], server: &str) -> Error {
    let key = String::from_utf8_lossy(k);
    let detail = if keys.iter().any(|w| w.as_ref() == k) {
        format!(
            "value for key {key:?} again or out of order; a reply holds at most one value for each of the {} keys asked, in order",
            keys.len()
        )
    } else {
        format!("value for key {key:?}, which was not requested")
    };
    Error::protocol(server, detail)
}

impl<K: AsRef<[u8]>> Exchange for Retrieve<'_, K> {
    type Output = ();

    fn command(&self) -> &'static str {
        match (self.touch, self.cas, self.keys.len()) {
            (None, false, 1) if !self.multi => "get",
            (None, true, _) => "gets",
            (Some(_), false, _) => "gat",
            (Some(_), true, _) => "gats",
            (None, false, _) => "get_multi",
        }
    }

    fn key_count(&self) -> usize {
        self.keys.len()
    }

    fn key(&self, i: usize) -> Option<&[u8]> {
        self.keys.get(i).map(AsRef::as_ref)
    }

    fn hits(&self) -> Option<(usize, usize)> {
        let found = self.hits.found();
        Some((found, self.keys.len() - found))
    }

    fn restart(&mut self) {
        self.hits.clear();
        (self.start, self.end) = (0, 0);
        self.next = 0;
        self.sent = false;
        self.meta = None;
        self.queued_first = None;
        self.queued.clear();
    }

    fn step(
        &mut self,
        rb: &mut ReadBuf,
        out: &mut Vec<u8>,
        ctx: &Ctx,
    ) -> Result<Step<Self::Output>> {
        if !self.sent && ctx.protocol == crate::Protocol::Meta {
            self.sent = true;
            if self.keys.is_empty() {
                return Ok(Step::Done(()));
            }
            self.encode_meta(out);
            return Ok(Step::WriteThenRead);
        }
        if let Some(base) = self.meta {
            return self.read_meta(rb, ctx, base);
        }
        if !self.sent {
            let mut start = 0;
            while start < self.keys.len() {
                let end = self.batch_end(start, ctx.caps);
                if start == 0 {
                    // the batch read first (walking the keys again was ~12 instructions a key)
                    self.end = end;
                }
                encode_retrieval(out, &self.keys[start..end], self.cas, self.touch);
                start = end;
            }
            self.sent = true;
            if self.keys.is_empty() {
                return Ok(Step::Done(()));
            }
            return Ok(Step::WriteThenRead);
        }
        let mut read = 0;
        let step = self.read_text(rb, ctx, &mut read);
        self.settle(rb, read);
        step
    }
}

impl<K: AsRef<[u8]>> Retrieve<'_, K> {
    /// The items of a text reply in `rb` from `*read` on, each one's bytes added to `*read`:
    /// a value is queued for [`Retrieve::settle`], which takes all of them out of the buffer
    /// at once, whatever this returns.
    fn read_text(&mut self, rb: &ReadBuf, ctx: &Ctx, read: &mut usize) -> Result<Step<()>> {
        // looked up once per read, not once per value (~6 instructions a key, callgrind)
        let unread = rb.unread();
        loop {
            let bytes = &unread[*read..];
            let base = self.start;
            let batch = &self.keys[base..self.end];
            // the next key asked is the one a value most likely answers (a hit); a value in
            // this batch leaves keys to read, so no check of the end follows it
            let next = batch.get(self.next);
            if let Some(v) = next.and_then(|k| value_of(bytes, k.as_ref(), ctx.max_value)) {
                let data = *read + v.data.start..*read + v.data.end;
                self.queue((base + self.next, data, v.flags, v.cas));
                self.next += 1;
                *read += v.used;
                continue;
            }
            let (item, used) = match parse_retrieval(bytes, ctx.max_value)? {
                Parsed::Incomplete => return Ok(Step::Read),
                Parsed::Done(item, used) => (item, used),
            };
            match item {
                RetrievalItem::Value {
                    key,
                    flags,
                    data,
                    cas,
                } => {
                    let k = &bytes[key];
                    let Some(at) = batch[self.next..].iter().position(|w| w.as_ref() == k) else {
                        return Err(not_asked(k, batch, ctx.server));
                    };
                    self.next += at;
                    let data = *read + data.start..*read + data.end;
                    self.queue((base + self.next, data, flags, cas));
                    self.next += 1;
                }
                RetrievalItem::End => {
                    self.start = self.end;
                    self.end = self.batch_end(self.start, ctx.caps);
                    self.next = 0;
                }
                RetrievalItem::Failed(reply) => {
                    let refused = refusal(reply, ctx.server, self.command())?;
                    *read += used;
                    if self.end < self.keys.len() {
                        // the replies to the later batches are still on the wire
                        return Err(refused);
                    }
                    return Ok(Step::Refused(refused));
                }
            }
            *read += used;
            if self.all_read() {
                return Ok(Step::Done(()));
            }
        }
    }

    /// The first `read` bytes of `rb` consumed, and the values queued in them taken out as
    /// slices of one [`Bytes`](bytes::Bytes): one split of the buffer per read instead of
    /// one per value (which was a tenth of a 100-key multi-get's user-space instructions).
    fn settle(&mut self, rb: &mut ReadBuf, read: usize) {
        let Some(first) = self.queued_first.take() else {
            rb.consume(read);
            return;
        };
        if self.queued.is_empty() {
            // one value (every hit of a get): taken alone, without a front of the buffer to
            // slice it from and drop (~40 of an async get's ~5,100 instructions, callgrind)
            let (i, data, flags, cas) = first;
            let value = rb.take(data, read);
            self.hits
                .extend(std::iter::once((i, Item::new(value, flags, cas))));
            return;
        }
        let front = rb.take_front(read);
        let values = std::iter::once(first).chain(self.queued.drain(..));
        self.hits.extend(
            values.map(|(i, data, flags, cas)| (i, Item::new(front.slice(data), flags, cas))),
        );
    }

    /// Queues a value for [`Retrieve::settle`]; the list's room is made once, for all keys.
    fn queue(&mut self, q: Queued) {
        if self.queued_first.is_none() {
            self.queued_first = Some(q);
            return;
        }
        if self.queued.capacity() == 0 {
            self.queued.reserve_exact(self.keys.len() - 1);
        }
        self.queued.push(q);
    }
}

impl<K: AsRef<[u8]>> Retrieve<'_, K> {
    /// One `mg` per key, each with its opaque token; more than one key: quiet (misses send
    /// nothing) and ended by `mn`.
    fn encode_meta(&mut self, out: &mut Vec<u8>) {
        let base = meta::reserve(self.keys.len());
        self.meta = Some(base);
        let quiet = self.keys.len() > 1;
        for (i, key) in self.keys.iter().enumerate() {
            let mut flags = [MetaFlag::ReturnValue; 6];
            let mut n = 2;
            flags[1] = MetaFlag::ReturnFlags;
            let mut push = |f| {
                flags[n] = f;
                n += 1;
            };
            if self.cas {
                push(MetaFlag::ReturnCas);
            }
            if let Some(exptime) = self.touch {
                push(MetaFlag::Ttl(exptime));
            }
            push(MetaFlag::Opaque(base.wrapping_add(i as u32)));
            if quiet {
                push(MetaFlag::Quiet);
            }
            // keys passed validate_key when they were routed
            MetaRequest::get(key.as_ref(), &flags[..n]).encode_unchecked(out);
        }
        if quiet {
            MetaRequest::noop().encode_unchecked(out);
        }
    }

    /// Replies to [`Retrieve::encode_meta`]'s requests: values in key order, each matched by
    /// its opaque token, to `EN` (one key) or `MN` (many).
    fn read_meta(&mut self, rb: &mut ReadBuf, ctx: &Ctx, base: u32) -> Result<Step<()>> {
        let quiet = self.keys.len() > 1;
        loop {
            let Some((item, used)) = meta::next(rb, ctx)? else {
                return Ok(Step::Read);
            };
            let r = match item {
                MetaItem::Failed(reply) => {
                    let refused = meta::refused(reply, ctx, self.command())?;
                    rb.consume(used);
                    // memcached -Y answers only the first command of a connection that has
                    // not logged in (proto_text.c): the link sends nothing more after it.
                    if quiet && !matches!(refused, Error::Auth { .. }) {
                        // the replies to the later keys and the `mn` are still on the wire
                        return Err(refused);
                    }
                    return Ok(Step::Refused(refused));
                }
                MetaItem::Reply(r) => r,
            };
            let bytes = rb.unread();
            match r.status {
                MetaStatus::Noop if quiet && r.tokens.opaque.is_none() => {
                    rb.consume(used);
                    self.start = self.keys.len();
                    return Ok(Step::Done(()));
                }
                MetaStatus::Miss if !quiet && meta::opaque_of(&r, bytes) == Some(base) => {
                    rb.consume(used);
                    self.start = self.keys.len();
                    return Ok(Step::Done(()));
                }
                MetaStatus::Value => {
                    let at = meta::opaque_of(&r, bytes).map(|o| o.wrapping_sub(base) as usize);
                    let Some(at) = at.filter(|&at| at >= self.next && at < self.keys.len()) else {
                        let want =
                            format!("one of the keys' tokens from {}", base as usize + self.next);
                        return Err(meta::wrong_opaque(&r, bytes, &want, ctx));
                    };
                    let (data, flags, cas) = meta::item_parts(&r, self.cas, ctx)?;
                    let item = Item::new(rb.take(data, used), flags, cas);
                    self.hits.extend(std::iter::once((at, item)));
                    self.next = at + 1;
                    if !quiet {
                        self.start = self.keys.len();
                        return Ok(Step::Done(()));
                    }
                }
                _ => {
                    let want = format!("a value, a miss or the end, to {}", self.command());
                    return Err(meta::wrong_opaque(&r, bytes, &want, ctx));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(ex: &mut Retrieve<'_>, rb: &mut ReadBuf, bytes: &[u8]) -> Result<Step<()>> {
        let spare = rb.spare();
        spare[..bytes.len()].copy_from_slice(bytes);
        rb.filled(bytes.len());
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps::DEFAULT,
        };
        ex.step(rb, &mut Vec::new(), &ctx)
    }

    /// The lines `keys` are sent in under `caps`, and the hits after `replies`.
    fn capped(
        keys: &[&[u8]],
        touch: Option<u32>,
        caps: crate::settings::RequestCaps,
        replies: &[u8],
    ) -> (String, Vec<Option<Item>>, usize) {
        let mut ex = Retrieve::new(keys, touch.is_some(), touch);
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps,
        };
        let (mut rb, mut out) = (ReadBuf::default(), Vec::new());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &ctx),
            Ok(Step::WriteThenRead)
        ));
        let spare = rb.spare();
        spare[..replies.len()].copy_from_slice(replies);
        rb.filled(replies.len());
        let r = ex.step(&mut rb, &mut Vec::new(), &ctx);
        let answered = ex.answered();
        if !matches!(r, Ok(Step::Done(()))) {
            return (
                String::from_utf8_lossy(&out).into_owned(),
                Vec::new(),
                answered,
            );
        }
        (
            String::from_utf8_lossy(&out).into_owned(),
            ex.take_hits(),
            answered,
        )
    }

    /// Hits and misses for the span, counted from the values read: one key (held in place)
    /// and several; the one key's value is then taken whole, as the list or alone.
    #[test]
    fn hits_and_misses_are_counted_for_one_key_and_many() {
        fn run<'a>(keys: &'a [&'a [u8]], reply: &[u8]) -> Retrieve<'a> {
            let ctx = Ctx {
                server: "s:1",
                max_value: 1024,
                protocol: crate::Protocol::Text,
                caps: crate::settings::RequestCaps::DEFAULT,
            };
            let mut ex = Retrieve::new(keys, false, None);
            let mut rb = ReadBuf::default();
            assert!(ex.step(&mut rb, &mut Vec::new(), &ctx).is_ok());
            rb.spare()[..reply.len()].copy_from_slice(reply);
            rb.filled(reply.len());
            assert!(matches!(
                ex.step(&mut rb, &mut Vec::new(), &ctx),
                Ok(Step::Done(()))
            ));
            ex
        }
        let hit = b"VALUE a 0 1\r\nx\r\nEND\r\n";
        let mut one = run(&[b"a"], hit);
        assert_eq!(one.hits(), Some((1, 0)));
        let mut again = run(&[b"a"], hit);
        assert_eq!(
            one.take_hits(),
            vec![Some(Item::new(b"x".to_vec(), 0, None))]
        );
        assert_eq!(again.take_item(), Some(Item::new(b"x".to_vec(), 0, None)));
        assert_eq!(run(&[b"a"], b"END\r\n").hits(), Some((0, 1)));
        let keys: &[&[u8]] = &[b"a", b"b", b"c"];
        assert_eq!(
            run(keys, b"VALUE b 0 1\r\ny\r\nEND\r\n").hits(),
            Some((1, 2))
        );
        assert_eq!(run(keys, b"END\r\n").hits(), Some((0, 3)));
    }

    #[test]
    fn request_caps_split_the_lines_by_keys_and_bytes() {
        use crate::settings::RequestCaps;
        let keys: Vec<&[u8]> = vec![b"aaaa", b"bbbb", b"cccc", b"dddddddddddddddddddddd", b"e"];
        let by_keys = RequestCaps {
            keys: 2,
            bytes: usize::MAX,
        };
        let replies = b"VALUE bbbb 0 1\r\nb\r\nEND\r\nVALUE cccc 0 1\r\nc\r\nEND\r\nVALUE e 0 1\r\ne\r\nEND\r\n";
        let (lines, hits, _) = capped(&keys, None, by_keys, replies);
        assert_eq!(
            lines,
            "get aaaa bbbb\r\nget cccc dddddddddddddddddddddd\r\nget e\r\n"
        );
        let got: Vec<bool> = hits.iter().map(Option::is_some).collect();
        assert_eq!(got, [false, true, true, false, true]);
        // "get aaaa bbbb\r\n" is 15 bytes; the long key goes alone
        let by_bytes = RequestCaps {
            keys: 100,
            bytes: 15,
        };
        let replies = b"END\r\nVALUE cccc 0 1\r\nc\r\nEND\r\nEND\r\nEND\r\n";
        let (lines, hits, _) = capped(&keys, None, by_bytes, replies);
        assert_eq!(
            lines,
            "get aaaa bbbb\r\nget cccc\r\nget dddddddddddddddddddddd\r\nget e\r\n"
        );
        assert!(hits[2].is_some() && hits.iter().filter(|h| h.is_some()).count() == 1);
        // gats counts its exptime: "gats 300 aaaa\r\n" is 15 bytes
        let (lines, _, _) = capped(&keys[..2], Some(300), by_bytes, b"END\r\nEND\r\n");
        assert_eq!(lines, "gats 300 aaaa\r\ngats 300 bbbb\r\n");
        // a value for a key of another line is refused; the lines before it count as answered
        let (_, hits, answered) = capped(
            &keys,
            None,
            by_keys,
            b"END\r\nVALUE aaaa 0 1\r\na\r\nEND\r\n",
        );
        assert!(hits.is_empty());
        assert_eq!(answered, 2);
        // every command's line fits a byte cap of exactly its length, and not one byte less
        for (cas, touch) in [
            (false, None),
            (true, None),
            (false, Some(0)),
            (true, Some(9)),
            (false, Some(10)),
            (true, Some(300)),
        ] {
            let two = &keys[..2];
            let mut ex = Retrieve::new(two, cas, touch);
            let ctx = Ctx {
                server: "s:1",
                max_value: 1024,
                protocol: crate::Protocol::Text,
                caps: RequestCaps::DEFAULT,
            };
            let mut out = Vec::new();
            let _ = ex.step(&mut ReadBuf::default(), &mut out, &ctx);
            let exact = RequestCaps {
                keys: 100,
                bytes: out.len(),
            };
            assert_eq!(
                ex.batch_end(0, exact),
                2,
                "{:?}",
                String::from_utf8_lossy(&out)
            );
            let short = RequestCaps {
                keys: 100,
                bytes: out.len() - 1,
            };
            assert_eq!(
                ex.batch_end(0, short),
                1,
                "{:?}",
                String::from_utf8_lossy(&out)
            );
            assert_eq!(ex.batch_end(1, short), 2);
        }
        // the default: 100 keys a line
        let many: Vec<Vec<u8>> = (0..250).map(|i| format!("k{i}").into_bytes()).collect();
        let many: Vec<&[u8]> = many.iter().map(|k| &k[..]).collect();
        let (lines, _, _) = capped(&many, None, RequestCaps::DEFAULT, b"END\r\nEND\r\nEND\r\n");
        let counts: Vec<usize> = lines.lines().map(|l| l.split(' ').count() - 1).collect();
        assert_eq!(counts, [100, 100, 50]);
    }

    #[test]
    fn values_match_the_keys_asked_in_order_and_a_stray_key_fails() {
        let keys: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let mut ex = Retrieve::new(&keys, false, None);
        let mut out = Vec::new();
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps::DEFAULT,
        };
        let mut rb = ReadBuf::default();
        assert!(matches!(
            ex.step(&mut rb, &mut out, &ctx),
            Ok(Step::WriteThenRead)
        ));
        assert_eq!(out, b"get a b c\r\n");
        let r = feed(&mut ex, &mut rb, b"VALUE c 1 1\r\nz\r\nEND\r\n");
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let hits = ex.take_hits();
        assert_eq!(
            hits[2].as_ref().map(|i| i.value.to_vec()),
            Some(b"z".to_vec())
        );
        assert!(hits[0].is_none() && hits[1].is_none());

        ex.restart();
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut Vec::new(), &ctx);
        let r = feed(
            &mut ex,
            &mut rb,
            b"VALUE b 0 1\r\ny\r\nVALUE a 0 1\r\nx\r\nEND\r\n",
        );
        assert!(
            matches!(&r, Err(e @ Error::Protocol { .. }) if e.to_string().contains("again or out of order")),
            "a key asked, out of order: {r:?}"
        );

        ex.restart();
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut Vec::new(), &ctx);
        let r = feed(&mut ex, &mut rb, b"VALUE d 0 1\r\nw\r\nEND\r\n");
        assert!(
            matches!(&r, Err(e @ Error::Protocol { .. }) if e.to_string().contains("not requested")),
            "a key not asked: {r:?}"
        );
    }

    /// Values are taken out of the buffer when a read's items are all parsed: a reply
    /// arriving a byte at a time gives each value whole, what follows a value stays unread,
    /// and the values of a line read to its `END` are kept when a later line fails.
    #[test]
    fn values_read_in_pieces_or_before_a_failure_are_whole() {
        let keys: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps {
                keys: 2,
                bytes: usize::MAX,
            },
        };
        let reply = b"VALUE a 1 2\r\nxy\r\nVALUE b 2 0\r\n\r\nEND\r\nVALUE c 3 3\r\nzzz\r\nEND\r\n";
        let mut ex = Retrieve::new(&keys, false, None);
        let mut rb = ReadBuf::default();
        assert!(matches!(
            ex.step(&mut rb, &mut Vec::new(), &ctx),
            Ok(Step::WriteThenRead)
        ));
        let mut steps = Vec::new();
        for b in reply {
            rb.spare()[0] = *b;
            rb.filled(1);
            steps.push(ex.step(&mut rb, &mut Vec::new(), &ctx));
        }
        assert!(matches!(steps.pop(), Some(Ok(Step::Done(())))));
        assert!(steps.iter().all(|s| matches!(s, Ok(Step::Read))));
        assert!(rb.is_empty());
        // a read at a time, each value went in place: the list was never needed
        assert_eq!(ex.queued.capacity(), 0);
        let got: Vec<Option<(Vec<u8>, u32)>> = ex
            .take_hits()
            .into_iter()
            .map(|h| h.map(|i| (i.value.to_vec(), i.flags)))
            .collect();
        assert_eq!(
            got,
            [
                Some((b"xy".to_vec(), 1)),
                Some((vec![], 2)),
                Some((b"zzz".to_vec(), 3))
            ]
        );

        // the whole reply in one read: the list's room is made once, for every key but the
        // one queued in place
        let whole = b"VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nVALUE c 0 1\r\nz\r\nEND\r\n";
        let all = crate::settings::RequestCaps::DEFAULT;
        let (_, hits, _) = capped(&keys, None, all, whole);
        assert!(hits.iter().all(Option::is_some));
        let mut ex = Retrieve::new(&keys, false, None);
        let ctx_all = Ctx { caps: all, ..ctx };
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut Vec::new(), &ctx_all);
        let r = feed(&mut ex, &mut rb, whole);
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        assert_eq!(ex.queued.capacity(), keys.len() - 1);

        // the first line answered, the second with a key it never asked: its value is kept,
        // and the bytes after the whole first line stay unread
        ex.restart();
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut Vec::new(), &ctx);
        let first = b"VALUE a 1 2\r\nxy\r\nEND\r\n";
        let bad = b"VALUE zz 0 1\r\nz\r\nEND\r\n";
        let r = feed(&mut ex, &mut rb, &[&first[..], bad].concat());
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
        assert_eq!(ex.answered(), 2);
        assert_eq!(rb.unread(), bad);
        let hits = ex.take_hits();
        assert_eq!(hits[0].as_ref().map(|i| &i.value[..]), Some(&b"xy"[..]));

        // a refusal of the last line is consumed with it
        let one: Vec<&[u8]> = vec![b"a"];
        let mut ex = Retrieve::new(&one, false, None);
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut Vec::new(), &ctx);
        let r = feed(&mut ex, &mut rb, b"SERVER_ERROR busy\r\n");
        assert!(
            matches!(r, Ok(Step::Refused(Error::Server { .. }))),
            "{r:?}"
        );
        assert!(rb.is_empty());
    }

    #[test]
    fn batches_of_a_hundred_and_an_error_line_before_the_last_breaks_the_stream() {
        let names: Vec<Vec<u8>> = (0..150).map(|i| format!("k{i}").into_bytes()).collect();
        let keys: Vec<&[u8]> = names.iter().map(|k| &k[..]).collect();
        let mut ex = Retrieve::new(&keys, false, None);
        let mut out = Vec::new();
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps::DEFAULT,
        };
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut out, &ctx);
        assert_eq!(out.windows(4).filter(|w| w == b"get ").count(), 2);
        let r = feed(&mut ex, &mut rb, b"END\r\nSERVER_ERROR busy\r\n");
        assert!(
            matches!(r, Ok(Step::Refused(Error::Server { .. }))),
            "{r:?}"
        );
        assert_eq!(ex.answered(), 100);
        ex.restart();
        let mut rb = ReadBuf::default();
        let _ = ex.step(&mut rb, &mut Vec::new(), &ctx);
        let r = feed(&mut ex, &mut rb, b"CLIENT_ERROR bad\r\n");
        assert!(matches!(r, Err(Error::Server { .. })), "{r:?}");
        assert_eq!(ex.answered(), 0);
    }

    #[test]
    fn meta_values_are_matched_by_their_opaque_tokens_and_a_stale_token_fails() {
        use crate::core::exchange::meta::testing::{CTX, opaques, receive};
        let keys: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let mut ex = Retrieve::new(&keys, true, Some(30));
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::WriteThenRead)
        ));
        let o = opaques(&out);
        let want = format!(
            "mg a v f c T30 O{} q\r\nmg b v f c T30 O{} q\r\nmg c v f c T30 O{} q\r\nmn\r\n",
            o[0], o[1], o[2]
        );
        assert_eq!(String::from_utf8_lossy(&out), want);
        // quiet: a hit for c only, then the end
        receive(
            &mut rb,
            format!("VA 1 f7 c9 O{}\r\nz\r\nMN\r\n", o[2]).as_bytes(),
        );
        let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let hits = ex.take_hits();
        assert_eq!(hits[2], Some(Item::new(b"z".to_vec(), 7, Some(9))));
        assert!(hits[0].is_none() && hits[1].is_none());
        assert_eq!(ex.answered(), 3);

        // a value with a token of an earlier request is never taken
        ex.restart();
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        receive(&mut rb, format!("VA 1 f0 c1 O{}\r\nz\r\n", o[0]).as_bytes());
        let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");

        // one key: not quiet, `EN` with its token is the miss
        let one: Vec<&[u8]> = vec![b"k"];
        let mut ex = Retrieve::new(&one, false, None);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        assert_eq!(out, format!("mg k v f O{o}\r\n").as_bytes());
        receive(&mut rb, format!("EN O{o}\r\n").as_bytes());
        assert!(matches!(
            ex.step(&mut rb, &mut Vec::new(), &CTX),
            Ok(Step::Done(()))
        ));
        assert_eq!(ex.take_item(), None);
    }

    /// The name calls are counted and traced under, and errors quote.
    #[test]
    fn each_retrieval_is_named_for_its_command() {
        let (one, two): (&[&[u8]], &[&[u8]]) = (&[b"a"], &[b"a", b"b"]);
        for (keys, cas, touch, name) in [
            (one, false, None, "get"),
            (two, false, None, "get_multi"),
            (one, true, None, "gets"),
            (two, true, None, "gets"),
            (one, false, Some(5), "gat"),
            (two, true, Some(5), "gats"),
        ] {
            assert_eq!(Retrieve::new(keys, cas, touch).command(), name);
        }
        // a server's share of a multi-get is named so even when it is one key
        assert_eq!(Retrieve::many(one, None).command(), "get_multi");
    }

    /// A multi-get's share put in the caller's slots: each value in its key's slot, a miss's
    /// slot left as it was, the values counted; run again from the start, the slots are
    /// misses again and the count starts over.
    #[test]
    fn values_go_to_their_slots_and_are_counted_again_after_a_restart() {
        let keys: &[&[u8]] = &[b"a", b"b", b"c"];
        let mut slots: Vec<Result<Option<Item>>> = vec![Ok(None), Ok(None), Ok(None)];
        let mut ex = Retrieve::many(keys, Some(&mut slots));
        let mut rb = ReadBuf::default();
        assert!(matches!(
            feed(&mut ex, &mut rb, b""),
            Ok(Step::WriteThenRead)
        ));
        let reply = b"VALUE a 0 1\r\nx\r\nVALUE c 0 1\r\nz\r\n";
        assert!(matches!(feed(&mut ex, &mut rb, reply), Ok(Step::Read)));
        assert_eq!((ex.found(), ex.hits()), (2, Some((2, 1))));
        ex.restart();
        assert_eq!((ex.found(), ex.hits()), (0, Some((0, 3))));
        let mut rb = ReadBuf::default();
        assert!(matches!(
            feed(&mut ex, &mut rb, b""),
            Ok(Step::WriteThenRead)
        ));
        let reply = b"VALUE b 0 1\r\ny\r\nEND\r\n";
        assert!(matches!(feed(&mut ex, &mut rb, reply), Ok(Step::Done(()))));
        assert_eq!(ex.found(), 1);
        drop(ex);
        let values: Vec<Option<&[u8]>> = slots
            .iter()
            .map(|s| {
                s.as_ref()
                    .ok()
                    .and_then(|i| i.as_ref().map(|i| &i.value[..]))
            })
            .collect();
        assert_eq!(values, [None, Some(&b"y"[..]), None]);
    }

    /// A retrieval names its keys by place (for its span), whatever slice holds them.
    #[test]
    fn a_retrieval_names_its_keys_by_place() {
        let held: Vec<std::borrow::Cow<'_, [u8]>> = vec![b"a"[..].into(), b"bc".to_vec().into()];
        let mut slots = [Ok(None), Ok(None)];
        let ex = Retrieve::many(&held, Some(&mut slots));
        assert_eq!(
            (ex.key(0), ex.key(1), ex.key(2)),
            (Some(&b"a"[..]), Some(&b"bc"[..]), None)
        );
        assert_eq!(ex.key_count(), 2);
    }

    /// A key asked twice is answered twice, each value in its own place.
    #[test]
    fn a_key_asked_twice_gets_both_its_values() {
        let keys: Vec<&[u8]> = vec![b"a", b"a", b"b"];
        let replies = b"VALUE a 0 1\r\nx\r\nVALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\n";
        let (line, hits, _) = capped(&keys, None, crate::settings::RequestCaps::DEFAULT, replies);
        assert_eq!(line, "get a a b\r\n");
        let got: Vec<Option<&[u8]>> = hits
            .iter()
            .map(|h| h.as_ref().map(|i| &i.value[..]))
            .collect();
        assert_eq!(got, [Some(&b"x"[..]), Some(b"x"), Some(b"y")]);
    }

    /// Over meta, a reply is taken only with a token this request wrote.
    #[test]
    fn meta_replies_with_a_token_not_asked_fail() {
        use crate::core::exchange::meta::testing::{CTX, opaques, receive};
        // one key (not quiet): a miss or a value must carry the key's token
        // (nor does the `MN` that ends a quiet batch: none was asked)
        for reply in ["EN\r\n", "EN O{o1}\r\n", "VA 1 f0 O{o1}\r\nx\r\n", "MN\r\n"] {
            let one: Vec<&[u8]> = vec![b"a"];
            let mut ex = Retrieve::new(&one, false, None);
            let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
            assert!(matches!(
                ex.step(&mut rb, &mut out, &CTX),
                Ok(Step::WriteThenRead)
            ));
            let o = opaques(&out)[0];
            let reply = reply.replace("{o1}", &(o.wrapping_add(1)).to_string());
            receive(&mut rb, reply.as_bytes());
            let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
            assert!(matches!(r, Err(Error::Protocol { .. })), "{reply:?}: {r:?}");
        }
        // two keys (quiet): the token one past the last key is no key's
        let two: Vec<&[u8]> = vec![b"a", b"b"];
        let mut ex = Retrieve::new(&two, false, None);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::WriteThenRead)
        ));
        let o = opaques(&out);
        assert_eq!(o.len(), 2, "{:?}", String::from_utf8_lossy(&out));
        receive(
            &mut rb,
            format!("VA 1 f0 O{}\r\nx\r\n", o[1] + 1).as_bytes(),
        );
        let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
        // and the last key's token is taken
        let mut ex = Retrieve::new(&two, false, None);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out);
        receive(
            &mut rb,
            format!("VA 1 f0 O{}\r\ny\r\nMN\r\n", o[1]).as_bytes(),
        );
        let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let hits = ex.take_hits();
        assert!(hits[0].is_none() && hits[1].as_ref().is_some_and(|i| i.value == b"y"[..]));
        // a key answered once is not answered again: the tokens come in order
        let mut ex = Retrieve::new(&two, false, None);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out);
        receive(
            &mut rb,
            format!("VA 1 f0 O{0}\r\nx\r\nVA 1 f0 O{0}\r\nx\r\n", o[0]).as_bytes(),
        );
        let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
        // the batch ends at an `MN` without a token (`mn` is sent without one)
        let mut ex = Retrieve::new(&two, false, None);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out);
        receive(&mut rb, format!("MN O{}\r\n", o[0]).as_bytes());
        let r = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
    }
}
