//! `get`/`gets`/`gat`/`gats` of one or many keys: requests of at most [`GET_BATCH`] keys each,
//! all written at once, and each `VALUE` matched to a key asked.

use super::{Ctx, Exchange, Step, refusal};
use crate::core::outcome::Item;
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::{Parsed, Request, RetrievalItem, parse_retrieval};

/// Keys per `get` command (memcached accepts long lines, proxies may not).
pub(crate) const GET_BATCH: usize = 100;

/// A retrieval of `keys` (as sent) from one server. [`Retrieve::take_hits`] holds one entry
/// per key, in order; after a failure, the first [`Retrieve::answered`] have their final
/// result.
#[derive(Debug)]
pub(crate) struct Retrieve<'a> {
    keys: &'a [&'a [u8]],
    cas: bool,
    touch: Option<u32>,
    hits: Vec<Option<Item>>,
    /// The batch whose reply is being read.
    batch: usize,
    /// Within the batch: the first key a `VALUE` may still answer.
    next: usize,
    sent: bool,
}

impl<'a> Retrieve<'a> {
    /// `get` (`cas`: `gets`; with `touch`: `gat`/`gats` with that expiry).
    pub(crate) fn new(keys: &'a [&'a [u8]], cas: bool, touch: Option<u32>) -> Self {
        Retrieve {
            keys,
            cas,
            touch,
            hits: vec![None; keys.len()],
            batch: 0,
            next: 0,
            sent: false,
        }
    }

    /// How many keys (from the first) have their final result: those of the batches read to
    /// their `END`.
    pub(crate) fn answered(&self) -> usize {
        (self.batch * GET_BATCH).min(self.keys.len())
    }

    /// The values read so far, one entry per key.
    pub(crate) fn take_hits(&mut self) -> Vec<Option<Item>> {
        std::mem::take(&mut self.hits)
    }

    /// The one value of a single-key retrieval.
    pub(crate) fn take_item(&mut self) -> Option<Item> {
        self.hits.pop().flatten()
    }

    fn batches(&self) -> usize {
        self.keys.len().div_ceil(GET_BATCH)
    }
}

/// The error for a `VALUE` that cannot answer `keys`: a key not asked, or one asked but
/// already answered or passed (a reply holds at most one value per key asked, in order, so it
/// can never grow past the keys asked times the largest value).
fn not_asked(k: &[u8], keys: &[&[u8]], server: &str) -> Error {
    let key = String::from_utf8_lossy(k);
    let detail = if keys.contains(&k) {
        format!(
            "value for key {key:?} again or out of order; a reply holds at most one value for each of the {} keys asked, in order",
            keys.len()
        )
    } else {
        format!("value for key {key:?}, which was not requested")
    };
    Error::protocol(server, detail)
}

impl Exchange for Retrieve<'_> {
    type Output = ();

    fn command(&self) -> &'static str {
        match (self.touch, self.cas, self.keys.len()) {
            (None, false, 1) => "get",
            (None, true, _) => "gets",
            (Some(_), false, _) => "gat",
            (Some(_), true, _) => "gats",
            (None, false, _) => "get_multi",
        }
    }

    fn restart(&mut self) {
        self.hits = vec![None; self.keys.len()];
        self.batch = 0;
        self.next = 0;
        self.sent = false;
    }

    fn step(
        &mut self,
        rb: &mut ReadBuf,
        out: &mut Vec<u8>,
        ctx: &Ctx,
    ) -> Result<Step<Self::Output>> {
        if !self.sent {
            for keys in self.keys.chunks(GET_BATCH) {
                let request = match self.touch {
                    None => Request::Get {
                        keys,
                        cas: self.cas,
                    },
                    Some(exptime) => Request::GetAndTouch {
                        exptime,
                        keys,
                        cas: self.cas,
                    },
                };
                request.encode(out);
            }
            self.sent = true;
            if self.keys.is_empty() {
                return Ok(Step::Done(()));
            }
            return Ok(Step::Write);
        }
        loop {
            let parsed = parse_retrieval(rb.unread(), ctx.max_value).map_err(Error::from)?;
            let (item, used) = match parsed {
                Parsed::Incomplete => return Ok(Step::Read),
                Parsed::Done(item, used) => (item, used),
            };
            let base = self.batch * GET_BATCH;
            let batch = &self.keys[base..(base + GET_BATCH).min(self.keys.len())];
            match item {
                RetrievalItem::Value {
                    key,
                    flags,
                    data,
                    cas,
                } => {
                    let bytes = rb.unread();
                    let k = &bytes[key];
                    let Some(at) = batch[self.next..].iter().position(|w| *w == k) else {
                        return Err(not_asked(k, batch, ctx.server));
                    };
                    self.next += at;
                    self.hits[base + self.next] = Some(Item {
                        value: bytes[data].to_vec(),
                        flags,
                        cas,
                    });
                    self.next += 1;
                }
                RetrievalItem::End => {
                    self.batch += 1;
                    self.next = 0;
                }
                RetrievalItem::Failed(reply) => {
                    let refused = refusal(reply, ctx.server, self.command())?;
                    rb.consume(used);
                    if self.batch + 1 < self.batches() {
                        // the replies to the later batches are still on the wire
                        return Err(refused);
                    }
                    return Ok(Step::Refused(refused));
                }
            }
            rb.consume(used);
            if self.batch == self.batches() {
                return Ok(Step::Done(()));
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
        };
        ex.step(rb, &mut Vec::new(), &ctx)
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
        };
        let mut rb = ReadBuf::default();
        assert!(matches!(ex.step(&mut rb, &mut out, &ctx), Ok(Step::Write)));
        assert_eq!(out, b"get a b c\r\n");
        let r = feed(&mut ex, &mut rb, b"VALUE c 1 1\r\nz\r\nEND\r\n");
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let hits = ex.take_hits();
        assert_eq!(
            hits[2].as_ref().map(|i| i.value.clone()),
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
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
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
}
