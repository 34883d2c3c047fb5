//! Commands of one request and one one-line reply: storage commands, delete, incr/decr,
//! touch, version, flush_all, verbosity.

use super::{Ctx, Exchange, Resend, Step, meta, refusal};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, StoreOutcome, TouchOutcome};
use crate::proto::{Parsed, Reply, Request, StoreCommand, parse_reply};

/// One request whose reply is one line, read by `accept` (`None`: the line does not answer
/// this command).
#[derive(Debug)]
pub(crate) struct Single<'a, T> {
    request: Request<'a>,
    command: &'static str,
    resend: Resend,
    accept: fn(&Reply) -> Option<T>,
    sent: bool,
    /// The opaque token of the meta form sent, if it was.
    opaque: Option<u32>,
}

impl<'a, T> Single<'a, T> {
    fn new(
        request: Request<'a>,
        command: &'static str,
        resend: Resend,
        accept: fn(&Reply) -> Option<T>,
    ) -> Self {
        Single {
            request,
            command,
            resend,
            accept,
            sent: false,
            opaque: None,
        }
    }
}

impl<'a> Single<'a, StoreOutcome> {
    /// `set`/`add`/`replace`/`append`/`prepend`/`cas` of `key` (as sent).
    pub(crate) fn store(
        cmd: StoreCommand,
        key: &'a [u8],
        value: &'a [u8],
        flags: u32,
        exptime: u32,
    ) -> Self {
        // set and replace leave the same item when repeated; the others do not (see Resend)
        let resend = match cmd {
            StoreCommand::Set | StoreCommand::Replace => Resend::Safe,
            _ => Resend::Never,
        };
        let request = Request::Store {
            cmd,
            key,
            flags,
            exptime,
            value,
            noreply: false,
        };
        Single::new(request, cmd.verb(), resend, store_outcome)
    }
}

/// The outcome of a storage command's reply.
pub(crate) fn store_outcome(reply: &Reply) -> Option<StoreOutcome> {
    match reply {
        Reply::Stored => Some(StoreOutcome::Stored),
        Reply::NotStored => Some(StoreOutcome::NotStored),
        Reply::Exists => Some(StoreOutcome::Exists),
        Reply::NotFound => Some(StoreOutcome::NotFound),
        _ => None,
    }
}

/// The outcome of a delete's reply.
pub(crate) fn delete_outcome(reply: &Reply) -> Option<DeleteOutcome> {
    match reply {
        Reply::Deleted => Some(DeleteOutcome::Deleted),
        Reply::NotFound => Some(DeleteOutcome::NotFound),
        _ => None,
    }
}

impl<'a> Single<'a, DeleteOutcome> {
    /// `delete` of `key` (as sent).
    pub(crate) fn delete(key: &'a [u8]) -> Self {
        let request = Request::Delete {
            key,
            noreply: false,
        };
        Single::new(request, "delete", Resend::Safe, delete_outcome)
    }
}

impl<'a> Single<'a, Option<u64>> {
    /// `incr` (or `decr`) of `key` (as sent): the new value, `None` for a missing key.
    pub(crate) fn arith(incr: bool, key: &'a [u8], delta: u64) -> Self {
        let request = Request::Arith {
            incr,
            key,
            delta,
            noreply: false,
        };
        let command = if incr { "incr" } else { "decr" };
        Single::new(request, command, Resend::Never, |reply| match reply {
            Reply::Number(n) => Some(Some(*n)),
            Reply::NotFound => Some(None),
            _ => None,
        })
    }
}

impl<'a> Single<'a, TouchOutcome> {
    /// `touch` of `key` (as sent).
    pub(crate) fn touch(key: &'a [u8], exptime: u32) -> Self {
        let request = Request::Touch {
            key,
            exptime,
            noreply: false,
        };
        Single::new(request, "touch", Resend::Safe, |reply| match reply {
            Reply::Touched => Some(TouchOutcome::Touched),
            Reply::NotFound => Some(TouchOutcome::NotFound),
            _ => None,
        })
    }
}

impl Single<'static, String> {
    /// `version`.
    pub(crate) fn version() -> Self {
        Single::new(
            Request::Version,
            "version",
            Resend::Safe,
            |reply| match reply {
                Reply::Version(v) => Some(v.clone()),
                _ => None,
            },
        )
    }
}

impl Single<'static, ()> {
    /// `flush_all [delay]`.
    pub(crate) fn flush_all(delay: Option<u32>) -> Self {
        let request = Request::FlushAll {
            delay,
            noreply: false,
        };
        Single::new(request, "flush_all", Resend::Safe, ok)
    }

    /// `verbosity level`.
    pub(crate) fn verbosity(level: u32) -> Self {
        let request = Request::Verbosity {
            level,
            noreply: false,
        };
        Single::new(request, "verbosity", Resend::Safe, ok)
    }
}

fn ok(reply: &Reply) -> Option<()> {
    matches!(reply, Reply::Ok).then_some(())
}

impl<T> Exchange for Single<'_, T> {
    type Output = T;

    fn command(&self) -> &'static str {
        self.command
    }

    fn resend(&self) -> Resend {
        self.resend
    }

    fn restart(&mut self) {
        self.sent = false;
    }

    fn key_count(&self) -> usize {
        super::key_count_of(&self.request)
    }

    fn key(&self, i: usize) -> Option<&[u8]> {
        super::key_of(&self.request, i)
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<T>> {
        if !self.sent {
            self.sent = true;
            self.opaque = None;
            if ctx.protocol == crate::Protocol::Meta && meta::has_meta_form(&self.request) {
                let opaque = meta::reserve(1);
                meta::encode(&self.request, Some(opaque), false, out);
                self.opaque = Some(opaque);
            } else {
                self.request.encode(out);
            }
            return Ok(Step::WriteThenRead);
        }
        if let Some(opaque) = self.opaque {
            return self.read_meta(rb, ctx, opaque);
        }
        let (reply, used) = match parse_reply(rb.unread()).map_err(Error::from)? {
            Parsed::Incomplete => return Ok(Step::Read),
            Parsed::Done(reply, used) => (reply, used),
        };
        rb.consume(used);
        match (self.accept)(&reply) {
            Some(v) => Ok(Step::Done(v)),
            None => refusal(reply, ctx.server, self.command).map(Step::Refused),
        }
    }
}

impl<T> Single<'_, T> {
    /// Read the meta reply to the request sent with `opaque`, as the text reply it stands for.
    fn read_meta(&mut self, rb: &mut ReadBuf, ctx: &Ctx, opaque: u32) -> Result<Step<T>> {
        let (r, used) = match meta::read_one(rb, ctx, opaque, self.command)? {
            meta::One::More => return Ok(Step::Read),
            meta::One::Refused(e) => return Ok(Step::Refused(e)),
            meta::One::Reply(r, used) => (r, used),
        };
        let reading = meta::reading(&self.request, &r, rb.unread());
        rb.consume(used);
        match reading.as_ref().and_then(self.accept) {
            Some(v) => Ok(Step::Done(v)),
            None => Err(Error::protocol(
                ctx.server,
                format!("unexpected meta reply {:?} to {}", r.status, self.command),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T>(ex: &mut Single<'_, T>, reply: &[u8]) -> (Vec<u8>, Result<Step<T>>) {
        let mut rb = ReadBuf::default();
        let mut out = Vec::new();
        let ctx = Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
            caps: crate::settings::RequestCaps::DEFAULT,
        };
        assert!(matches!(
            ex.step(&mut rb, &mut out, &ctx),
            Ok(Step::WriteThenRead)
        ));
        assert!(matches!(
            ex.step(&mut rb, &mut Vec::new(), &ctx),
            Ok(Step::Read)
        ));
        let spare = rb.spare();
        spare[..reply.len()].copy_from_slice(reply);
        rb.filled(reply.len());
        (out, ex.step(&mut rb, &mut Vec::new(), &ctx))
    }

    #[test]
    fn a_store_reads_its_outcome_and_keeps_the_stream_on_an_error_line() {
        let mut ex = Single::store(StoreCommand::Add, b"k", b"v", 3, 0);
        let (req, r) = run(&mut ex, b"NOT_STORED\r\n");
        assert_eq!(req, b"add k 3 0 1\r\nv\r\n");
        assert!(matches!(r, Ok(Step::Done(StoreOutcome::NotStored))));
        assert_eq!(ex.resend(), Resend::Never);
        // only set and replace leave the same item when sent twice
        for (cmd, resend) in [
            (StoreCommand::Set, Resend::Safe),
            (StoreCommand::Replace, Resend::Safe),
            (StoreCommand::Append, Resend::Never),
            (StoreCommand::Prepend, Resend::Never),
            (StoreCommand::Cas(7), Resend::Never),
        ] {
            assert_eq!(
                Single::store(cmd, b"k", b"v", 0, 0).resend(),
                resend,
                "{cmd:?}"
            );
        }
        ex.restart();
        let (_, r) = run(&mut ex, b"SERVER_ERROR out of memory\r\n");
        assert!(matches!(r, Ok(Step::Refused(Error::Server { .. }))));
    }

    #[test]
    fn flush_all_and_verbosity_take_ok() {
        let (out, r) = run(&mut Single::flush_all(Some(5)), b"OK\r\n");
        assert_eq!(out, b"flush_all 5\r\n");
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let (out, r) = run(&mut Single::verbosity(1), b"OK\r\n");
        assert_eq!(out, b"verbosity 1\r\n");
        assert!(matches!(r, Ok(Step::Done(()))), "{r:?}");
        let (_, r) = run(&mut Single::flush_all(None), b"STORED\r\n");
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
    }

    #[test]
    fn a_reply_of_another_command_is_a_protocol_error() {
        let (_, r) = run(&mut Single::delete(b"k"), b"STORED\r\n");
        assert!(matches!(r, Err(Error::Protocol { .. })));
        let (_, r) = run(&mut Single::arith(true, b"k", 2), b"NOT_FOUND\r\n");
        assert!(matches!(r, Ok(Step::Done(None))));
    }

    #[test]
    fn meta_replies_read_as_the_text_replies_they_stand_for() {
        use crate::core::exchange::meta::testing::{CTX, opaques, receive};
        let mut ex = Single::arith(false, b"n", 2);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::WriteThenRead)
        ));
        let o = opaques(&out)[0];
        assert_eq!(out, format!("ma n D2 MD v O{o}\r\n").as_bytes());
        receive(&mut rb, format!("VA 2 O{o}\r\n40\r\n").as_bytes());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::Done(Some(40)))
        ));

        // a counter is digits only (Rust's parse would take a sign)
        let mut ex = Single::arith(true, b"n", 2);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        receive(&mut rb, format!("VA 2 O{o}\r\n+4\r\n").as_bytes());
        let r = ex.step(&mut rb, &mut out, &CTX);
        assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");

        // a cas whose token is stale is `EX`, read as the text `EXISTS`
        let mut ex = Single::store(StoreCommand::Cas(5), b"k", b"v", 0, 0);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        receive(&mut rb, format!("EX O{o}\r\n").as_bytes());
        let r = ex.step(&mut rb, &mut out, &CTX);
        assert!(matches!(r, Ok(Step::Done(StoreOutcome::Exists))), "{r:?}");

        // `ERROR` to a meta command: the server predates meta
        let mut ex = Single::delete(b"k");
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        receive(&mut rb, b"ERROR\r\n");
        let r = ex.step(&mut rb, &mut out, &CTX);
        assert!(
            matches!(&r, Ok(Step::Refused(Error::Server { message, .. }))
                if message.contains("meta commands need memcached 1.6")),
            "{r:?}"
        );

        // a cas of a missing key is `NF`, read as the text `NOT_FOUND`
        let mut ex = Single::store(StoreCommand::Cas(5), b"k", b"v", 0, 0);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        receive(&mut rb, format!("NF O{o}\r\n").as_bytes());
        let r = ex.step(&mut rb, &mut out, &CTX);
        assert!(matches!(r, Ok(Step::Done(StoreOutcome::NotFound))), "{r:?}");

        // a missing counter is `NF`, read as the text `NOT_FOUND`
        let mut ex = Single::arith(true, b"n", 2);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        receive(&mut rb, format!("NF O{o}\r\n").as_bytes());
        let r = ex.step(&mut rb, &mut out, &CTX);
        assert!(matches!(r, Ok(Step::Done(None))), "{r:?}");

        let mut ex = Single::delete(b"k");
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        let o = opaques(&out)[0];
        receive(&mut rb, format!("NF O{o}\r\n").as_bytes());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::Done(DeleteOutcome::NotFound))
        ));

        // a reply without the token, or with another one, is never taken; nor one that reads
        // as the token's number only when parsed leniently (a sign, leading zeros)
        for stale in [
            |_: u32| "HD\r\n".to_string(),
            |o: u32| format!("HD O{}\r\n", o.wrapping_sub(1)),
            |o: u32| format!("HD O+{o}\r\n"),
            |o: u32| format!("HD O{o:011}\r\n"),
        ] {
            let mut ex = Single::delete(b"k");
            let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
            let _ = ex.step(&mut rb, &mut out, &CTX);
            let stale = stale(opaques(&out)[0]);
            receive(&mut rb, stale.as_bytes());
            let r = ex.step(&mut rb, &mut out, &CTX);
            assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
        }

        // an error line keeps the stream; version stays text
        let mut ex = Single::store(StoreCommand::Set, b"k", b"v", 0, 0);
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let _ = ex.step(&mut rb, &mut out, &CTX);
        receive(&mut rb, b"SERVER_ERROR out of memory\r\n");
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::Refused(Error::Server { .. }))
        ));
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        let mut ex = Single::version();
        let _ = ex.step(&mut rb, &mut out, &CTX);
        assert_eq!(out, b"version\r\n");
        receive(&mut rb, b"VERSION 1.6.21\r\n");
        let r = ex.step(&mut rb, &mut out, &CTX);
        assert!(matches!(&r, Ok(Step::Done(v)) if v == "1.6.21"), "{r:?}");
    }

    /// `ex` over meta, answered `status` with its own token: the request, and the outcome.
    fn meta_answered<T: std::fmt::Debug>(mut ex: Single<'_, T>, status: &str) -> (String, T) {
        use crate::core::exchange::meta::testing::{CTX, opaques, receive};
        let (mut out, mut rb) = (Vec::new(), ReadBuf::default());
        assert!(matches!(
            ex.step(&mut rb, &mut out, &CTX),
            Ok(Step::WriteThenRead)
        ));
        let o = opaques(&out)[0];
        receive(&mut rb, format!("{status} O{o}\r\n").as_bytes());
        let request = String::from_utf8_lossy(&out).replace(&format!(" O{o}"), "");
        match ex.step(&mut rb, &mut Vec::new(), &CTX) {
            Ok(Step::Done(v)) => (request, v),
            r => panic!("{status}: {r:?}"),
        }
    }

    #[test]
    fn meta_deletes_and_touches_read_each_status() {
        use crate::outcome::TouchOutcome;
        for (status, want) in [
            ("HD", DeleteOutcome::Deleted),
            ("NF", DeleteOutcome::NotFound),
        ] {
            let (req, got) = meta_answered(Single::delete(b"k"), status);
            assert_eq!((req.as_str(), got), ("md k\r\n", want), "{status}");
        }
        for (status, want) in [
            ("HD", TouchOutcome::Touched),
            ("EN", TouchOutcome::NotFound),
        ] {
            let (req, got) = meta_answered(Single::touch(b"k", 10), status);
            assert_eq!((req.as_str(), got), ("mg k T10\r\n", want), "{status}");
        }
    }

    #[test]
    fn each_reply_has_its_outcome_and_each_command_its_name() {
        use crate::outcome::StoreOutcome as S;
        for (reply, want) in [
            (Reply::Stored, Some(S::Stored)),
            (Reply::NotStored, Some(S::NotStored)),
            (Reply::Exists, Some(S::Exists)),
            (Reply::NotFound, Some(S::NotFound)),
            (Reply::Deleted, None),
        ] {
            assert_eq!(store_outcome(&reply), want, "{reply:?}");
        }
        assert_eq!(
            delete_outcome(&Reply::Deleted),
            Some(DeleteOutcome::Deleted)
        );
        assert_eq!(
            delete_outcome(&Reply::NotFound),
            Some(DeleteOutcome::NotFound)
        );
        assert_eq!(delete_outcome(&Reply::Stored), None);
        assert_eq!(Single::delete(b"k").command(), "delete");
        assert_eq!(Single::touch(b"k", 1).command(), "touch");
        assert_eq!(Single::version().command(), "version");
        assert_eq!(Single::arith(true, b"k", 1).command(), "incr");
        assert_eq!(Single::arith(false, b"k", 1).command(), "decr");
    }
}
