//! Pipelined writes or deletes to one server: [`WRITE_BATCH`] requests written, their replies
//! read, then the next batch, so neither side ever waits on a full socket buffer.

use super::{Ctx, Exchange, Step, refusal};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::{Parsed, Reply, Request, parse_reply};

/// Storage or delete commands written before their replies are read.
pub(crate) const WRITE_BATCH: usize = 100;

/// A request of a pipeline.
pub(crate) trait Encode {
    fn encode(&self, out: &mut Vec<u8>);
}

impl Encode for Request<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        Request::encode(self, out);
    }
}

/// A `delete` of a key the exchange owns (the cleanup of a returning server).
pub(crate) struct DeleteOwned(pub(crate) Vec<u8>);

impl Encode for DeleteOwned {
    fn encode(&self, out: &mut Vec<u8>) {
        Request::Delete {
            key: &self.0,
            noreply: false,
        }
        .encode(out);
    }
}

/// One reply per request, each read by `accept`; an error line answers its own request only.
/// Only commands that are safe to repeat come here ([`super::Resend::Safe`]).
pub(crate) struct WriteMany<R, T> {
    command: &'static str,
    requests: Vec<R>,
    accept: fn(&Reply) -> Option<T>,
    results: Vec<Option<Result<T>>>,
    written: usize,
    read: usize,
}

impl<R: Encode, T> WriteMany<R, T> {
    pub(crate) fn new(
        command: &'static str,
        requests: Vec<R>,
        accept: fn(&Reply) -> Option<T>,
    ) -> Self {
        let results = requests.iter().map(|_| None).collect();
        WriteMany {
            command,
            requests,
            accept,
            results,
            written: 0,
            read: 0,
        }
    }

    /// One result per request: those read, and `failed`'s error for the others.
    pub(crate) fn results(self, failed: Option<&Error>) -> Vec<Result<T>> {
        self.results
            .into_iter()
            .map(|r| match (r, failed) {
                (Some(r), _) => r,
                (None, Some(e)) => Err(e.clone()),
                (None, None) => Err(Error::protocol("", "no reply was read for this request")),
            })
            .collect()
    }
}

impl<R: Encode, T> Exchange for WriteMany<R, T> {
    type Output = ();

    fn command(&self) -> &'static str {
        self.command
    }

    fn restart(&mut self) {
        self.results.iter_mut().for_each(|r| *r = None);
        self.written = 0;
        self.read = 0;
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        loop {
            if self.read == self.written {
                if self.written == self.requests.len() {
                    return Ok(Step::Done(()));
                }
                let end = (self.written + WRITE_BATCH).min(self.requests.len());
                for r in &self.requests[self.written..end] {
                    r.encode(out);
                }
                self.written = end;
                return Ok(Step::Write);
            }
            let (reply, used) = match parse_reply(rb.unread()).map_err(Error::from)? {
                Parsed::Incomplete => return Ok(Step::Read),
                Parsed::Done(reply, used) => (reply, used),
            };
            let result = match (self.accept)(&reply) {
                Some(v) => Ok(v),
                None => Err(refusal(reply, ctx.server, self.command)?),
            };
            rb.consume(used);
            self.results[self.read] = Some(result);
            self.read += 1;
            if self.read == self.written && !rb.is_empty() {
                // bytes after the batch's last reply: a stray reply may have been taken for one
                // of ours, so none of the results can be trusted
                let e =
                    crate::core::link::unasked(ctx.server, rb.unread(), "with or after the reply");
                self.results
                    .iter_mut()
                    .for_each(|r| *r = Some(Err(e.clone())));
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::single::delete_outcome;
    use crate::core::outcome::DeleteOutcome;

    #[test]
    fn each_reply_answers_its_request_and_batches_alternate() {
        let keys: Vec<Vec<u8>> = (0..150).map(|i| format!("k{i}").into_bytes()).collect();
        let reqs = keys
            .iter()
            .map(|key| Request::Delete {
                key,
                noreply: false,
            })
            .collect();
        let mut ex = WriteMany::new("delete_multi", reqs, delete_outcome);
        let ctx = Ctx {
            server: "s:1",
            max_value: 1,
            protocol: crate::Protocol::Text,
        };
        let mut rb = ReadBuf::default();
        let mut out = Vec::new();
        assert!(matches!(ex.step(&mut rb, &mut out, &ctx), Ok(Step::Write)));
        assert_eq!(out.windows(7).filter(|w| w == b"delete ").count(), 100);
        let mut replies = b"DELETED\r\nCLIENT_ERROR no\r\n".to_vec();
        replies.extend(b"NOT_FOUND\r\n".repeat(98));
        rb.spare()[..replies.len()].copy_from_slice(&replies);
        rb.filled(replies.len());
        let mut out = Vec::new();
        assert!(matches!(ex.step(&mut rb, &mut out, &ctx), Ok(Step::Write)));
        assert_eq!(out.windows(7).filter(|w| w == b"delete ").count(), 50);
        let failed = Error::protocol("s:1", "gone");
        let r = ex.results(Some(&failed));
        assert_eq!(r[0].as_ref().ok(), Some(&DeleteOutcome::Deleted));
        assert!(matches!(r[1], Err(Error::Server { .. })));
        assert_eq!(r[2].as_ref().ok(), Some(&DeleteOutcome::NotFound));
        assert!(matches!(r[100], Err(Error::Protocol { .. })));
    }
}
