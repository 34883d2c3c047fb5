//! Pipelined writes or deletes to one server: [`WRITE_BATCH`] requests written, their replies
//! read, then the next batch, so neither side ever waits on a full socket buffer.

use super::{Ctx, Exchange, Step, meta, refusal};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::meta::{MetaItem, MetaRequest, MetaStatus};
use crate::proto::{Parsed, Reply, Request, parse_reply};

/// Storage or delete commands written before their replies are read.
pub(crate) const WRITE_BATCH: usize = 100;

/// A request of a pipeline.
pub(crate) trait Encode {
    /// The text request (also read for its meta form).
    fn request(&self) -> Request<'_>;

    fn encode(&self, out: &mut Vec<u8>) {
        self.request().encode(out);
    }
}

impl Encode for Request<'_> {
    fn request(&self) -> Request<'_> {
        self.clone()
    }
}

/// A `delete` of a key the exchange owns (the cleanup of a returning server).
pub(crate) struct DeleteOwned(pub(crate) Vec<u8>);

impl Encode for DeleteOwned {
    fn request(&self) -> Request<'_> {
        Request::Delete {
            key: &self.0,
            noreply: false,
        }
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
    /// Meta: the batch's first opaque token and the error lines read since the last reply.
    meta: Option<QuietBatch>,
}

/// A batch of quiet meta requests being read: only failures answer (`q` hides `HD`), each with
/// its opaque token, then `mn`'s `MN`.
#[derive(Debug)]
struct QuietBatch {
    base: u32,
    /// The index of the first request of the batch.
    first: usize,
    /// Error lines since the last reply with a token. They carry no token: they belong to the
    /// requests between that reply and the next one.
    errors: Vec<Error>,
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
            meta: None,
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
        self.meta = None;
    }

    fn key_count(&self) -> usize {
        self.requests.len()
    }

    fn key(&self, i: usize) -> Option<&[u8]> {
        self.requests
            .get(i)
            .and_then(|r| super::key_of(&r.request(), 0))
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        if ctx.protocol == crate::Protocol::Meta {
            return self.step_meta(rb, out, ctx);
        }
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

impl<R: Encode, T> WriteMany<R, T> {
    /// [`WRITE_BATCH`] quiet meta requests and `mn`, then their failures and `MN`.
    fn step_meta(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        loop {
            let Some(batch) = self.meta.as_mut() else {
                if self.written == self.requests.len() {
                    return Ok(Step::Done(()));
                }
                let end = (self.written + WRITE_BATCH).min(self.requests.len());
                let base = meta::reserve(end - self.written);
                for (i, r) in self.requests[self.written..end].iter().enumerate() {
                    meta::encode(&r.request(), Some(base.wrapping_add(i as u32)), true, out);
                }
                MetaRequest::noop().encode_unchecked(out);
                self.meta = Some(QuietBatch {
                    base,
                    first: self.written,
                    errors: Vec::new(),
                });
                self.written = end;
                return Ok(Step::Write);
            };
            let Some((item, used)) = meta::next(rb, ctx)? else {
                return Ok(Step::Read);
            };
            let r = match item {
                MetaItem::Failed(reply) => {
                    let e = meta::refused(reply, ctx, self.command)?;
                    rb.consume(used);
                    // memcached -Y answers the first command of a connection that has not
                    // logged in and none after it (proto_text.c): no `MN` is coming.
                    if matches!(e, Error::Auth { .. }) {
                        return Ok(Step::Refused(e));
                    }
                    if batch.errors.len() >= self.written - self.read {
                        return Err(Error::protocol(
                            ctx.server,
                            "more error lines than requests in a quiet batch",
                        ));
                    }
                    batch.errors.push(e);
                    continue;
                }
                MetaItem::Reply(r) => r,
            };
            let bytes = rb.unread();
            let (upto, reply) = if r.status == MetaStatus::Noop && r.tokens.opaque.is_none() {
                (self.written, None)
            } else {
                let at = meta::opaque_of(&r, bytes)
                    .map(|o| batch.first + o.wrapping_sub(batch.base) as usize)
                    .filter(|&at| at >= self.read && at < self.written);
                let Some(at) = at else {
                    let want = format!("a token of this batch from {}", batch.base);
                    return Err(meta::wrong_opaque(&r, bytes, &want, ctx));
                };
                let reading = meta::reading(&self.requests[at].request(), &r, bytes);
                let result = match reading.as_ref().and_then(self.accept) {
                    Some(v) => Ok(v),
                    None => {
                        let detail =
                            format!("unexpected meta reply {:?} to {}", r.status, self.command);
                        return Err(Error::protocol(ctx.server, detail));
                    }
                };
                (at, Some(result))
            };
            rb.consume(used);
            // the requests before `upto` that no reply named succeeded, unless error lines came
            let silent = upto - self.read;
            let errors = std::mem::take(&mut batch.errors);
            let exact = errors.len() == silent;
            let mut errors = errors.into_iter();
            let first = errors.as_slice().first().cloned();
            for i in self.read..upto {
                self.results[i] = Some(match (exact, &first) {
                    (true, _) => Err(errors
                        .next()
                        .unwrap_or_else(|| Error::protocol(ctx.server, "error line lost"))),
                    (false, Some(e)) => Err(ambiguous(e, silent)),
                    (false, None) => {
                        let success = meta::quiet_success(&self.requests[i].request());
                        match success.as_ref().and_then(self.accept) {
                            Some(v) => Ok(v),
                            None => Err(Error::protocol(
                                ctx.server,
                                "no reply to a quiet request that cannot be quiet",
                            )),
                        }
                    }
                });
            }
            self.read = upto;
            let ended = reply.is_none();
            if let Some(result) = reply {
                self.results[upto] = Some(result);
                self.read = upto + 1;
            }
            if ended {
                self.meta = None;
            }
            if ended && !rb.is_empty() {
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

/// `e`, an error line that answered one of `n` quiet requests, which one not knowable.
fn ambiguous(e: &Error, n: usize) -> Error {
    match e {
        Error::Server { server, message } => Error::Server {
            server: server.clone(),
            message: format!(
                "{message} (the answer to one of {n} quiet meta requests; which one is not knowable, so each of them reports it)"
            ),
        },
        e => e.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::single::delete_outcome;
    use crate::outcome::DeleteOutcome;

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
        assert_eq!(ex.command(), "delete_multi");
        let ctx = Ctx {
            server: "s:1",
            max_value: 1,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps::DEFAULT,
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
        // on a new connection the exchange starts over, from the first request
        let mut again = WriteMany::new("delete_multi", ex.requests.clone(), delete_outcome);
        let _ = again.step(&mut ReadBuf::default(), &mut Vec::new(), &ctx);
        again.restart();
        let (mut rb2, mut out) = (ReadBuf::default(), Vec::new());
        assert!(matches!(
            again.step(&mut rb2, &mut out, &ctx),
            Ok(Step::Write)
        ));
        assert!(out.starts_with(b"delete k0\r\n"));
        let failed = Error::protocol("s:1", "gone");
        let r = ex.results(Some(&failed));
        assert_eq!(r[0].as_ref().ok(), Some(&DeleteOutcome::Deleted));
        assert!(matches!(r[1], Err(Error::Server { .. })));
        assert_eq!(r[2].as_ref().ok(), Some(&DeleteOutcome::NotFound));
        assert!(matches!(r[100], Err(Error::Protocol { .. })));
    }

    /// Quiet mode hides a delete's success: a batch answered by `MN` alone deleted every key.
    #[test]
    fn a_quiet_delete_without_a_reply_deleted_its_key() {
        use crate::core::exchange::meta::testing::{CTX, receive};
        let keys: Vec<Vec<u8>> = (0..3).map(|i| format!("k{i}").into_bytes()).collect();
        let reqs = keys
            .iter()
            .map(|key| Request::Delete {
                key,
                noreply: false,
            })
            .collect();
        let mut ex = WriteMany::new("delete_multi", reqs, delete_outcome);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(ex.step(&mut rb, &mut out, &CTX), Ok(Step::Write)));
        assert!(
            out.starts_with(b"md k0 "),
            "{:?}",
            String::from_utf8_lossy(&out)
        );
        receive(&mut rb, b"MN\r\n");
        let step = ex.step(&mut rb, &mut Vec::new(), &CTX);
        assert!(matches!(step, Ok(Step::Done(()))), "{step:?}");
        let got: Vec<Option<DeleteOutcome>> =
            ex.results(None).into_iter().map(|r| r.ok()).collect();
        assert_eq!(got, [Some(DeleteOutcome::Deleted); 3]);
    }

    #[test]
    fn quiet_meta_writes_report_failures_by_token_and_error_lines_by_their_place() {
        use crate::core::exchange::meta::testing::{CTX, opaques, receive};
        use crate::core::exchange::single::store_outcome;
        use crate::outcome::StoreOutcome;
        use crate::proto::StoreCommand;
        let keys: Vec<Vec<u8>> = (0..5).map(|i| format!("k{i}").into_bytes()).collect();
        let reqs = || {
            keys.iter()
                .map(|key| Request::Store {
                    cmd: StoreCommand::Add,
                    key,
                    flags: 0,
                    exptime: 0,
                    value: b"v",
                    noreply: false,
                })
                .collect::<Vec<_>>()
        };
        // the 5 sets written, then `replies(tokens)` read: the step's outcome and the results
        let run = |replies: &dyn Fn(&[u32]) -> String| {
            let mut ex = WriteMany::new("set_multi", reqs(), store_outcome);
            let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
            assert!(matches!(ex.step(&mut rb, &mut out, &CTX), Ok(Step::Write)));
            let o = opaques(&out);
            assert!(out.starts_with(format!("ms k0 1 ME O{} q\r\nv\r\n", o[0]).as_bytes()));
            assert!(out.ends_with(b"mn\r\n"));
            receive(&mut rb, replies(&o).as_bytes());
            let step = ex.step(&mut rb, &mut Vec::new(), &CTX);
            (step, ex.results(None))
        };
        // k1 not stored (its token); an error line between k2's place and k4's reply is k3's
        // or k2's: unknowable, both report it; k4 not stored
        let (step, results) = run(&|o| {
            format!(
                "NS O{}\r\nSERVER_ERROR out of memory\r\nNS O{}\r\nMN\r\n",
                o[1], o[4]
            )
        });
        assert!(matches!(step, Ok(Step::Done(()))));
        assert!(matches!(results[0], Ok(StoreOutcome::Stored)));
        assert!(matches!(results[1], Ok(StoreOutcome::NotStored)));
        for r in &results[2..4] {
            let Err(Error::Server { message, .. }) = r else {
                panic!("{r:?}")
            };
            assert!(
                message.contains("one of 2 quiet meta requests"),
                "{message}"
            );
        }
        assert!(matches!(results[4], Ok(StoreOutcome::NotStored)));

        // one error line in a window of one is that request's own
        let (step, results) = run(&|o| {
            format!(
                "NS O{}\r\nSERVER_ERROR out of memory\r\nNS O{}\r\nMN\r\n",
                o[0], o[2]
            )
        });
        assert!(matches!(step, Ok(Step::Done(()))));
        let Err(Error::Server { message, .. }) = &results[1] else {
            panic!("{:?}", results[1])
        };
        assert_eq!(message, "SERVER_ERROR out of memory");
        assert!(
            results[3..]
                .iter()
                .all(|r| matches!(r, Ok(StoreOutcome::Stored)))
        );

        // a token out of order (or of another batch) drops the connection
        let (r, _) = run(&|o| format!("NS O{}\r\nNS O{}\r\n", o[3], o[1]));
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");

        // a reply without a token is no request's, nor the batch's end; nor is the token one
        // past the batch's last
        let (r, _) = run(&|_| "NS\r\n".to_string());
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
        let (r, _) = run(&|o| format!("NS O{}\r\nMN\r\n", o[4] + 1));
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");

        // after k1's reply three requests are left: three error lines may follow, not four
        let errors = |n: usize| {
            move |o: &[u32]| {
                format!(
                    "NS O{}\r\n{}MN\r\n",
                    o[1],
                    "SERVER_ERROR out of memory\r\n".repeat(n)
                )
            }
        };
        let (r, _) = run(&errors(3));
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let (r, _) = run(&errors(4));
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
    }
}
