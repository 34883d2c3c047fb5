//! The meta form of every key command, and the text reading of every meta reply: with
//! [`Protocol::Meta`](crate::Protocol::Meta) an exchange sends `mg`/`ms`/`md`/`ma` for the text
//! request it was built with and reads the reply as the text reply it stands for, so the
//! outcomes cannot differ between the protocols. `version`, `stats`, `flush_all` and
//! `verbosity` have no meta form and stay text.
//!
//! Every meta request carries an opaque token (`O`) unique in the process, and a reply whose
//! token is not the one awaited is a protocol error that drops the connection: a late reply to
//! an earlier request is never taken for this one.

use super::Ctx;
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::meta::{
    ArithMode, MetaFlag, MetaItem, MetaReply, MetaRequest, MetaStatus, SetMode, parse_meta,
};
use crate::proto::{Parsed, Reply, Request, StoreCommand};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT_OPAQUE: AtomicU32 = AtomicU32::new(1);

/// `n` consecutive opaque tokens, the first returned (wrapping after 2^32).
pub(crate) fn reserve(n: usize) -> u32 {
    NEXT_OPAQUE.fetch_add(n as u32, Ordering::Relaxed)
}

/// Whether `req` has a meta form.
pub(crate) fn has_meta_form(req: &Request) -> bool {
    matches!(
        req,
        Request::Store { .. }
            | Request::Delete { .. }
            | Request::Arith { .. }
            | Request::Touch { .. }
    )
}

/// Append the meta form of `req` (which [`has_meta_form`]) with `opaque` (if any), in quiet
/// mode when `quiet`.
pub(crate) fn encode(req: &Request, opaque: Option<u32>, quiet: bool, out: &mut Vec<u8>) {
    let mut flags = [MetaFlag::Quiet; 6];
    let mut n = 0;
    let mut push = |f| {
        flags[n] = f;
        n += 1;
    };
    let request = match *req {
        Request::Store {
            cmd,
            key,
            flags: client_flags,
            exptime,
            value,
            ..
        } => {
            if client_flags != 0 {
                push(MetaFlag::ClientFlags(client_flags));
            }
            if exptime != 0 {
                push(MetaFlag::Ttl(exptime));
            }
            match cmd {
                StoreCommand::Set => {}
                StoreCommand::Add => push(MetaFlag::SetMode(SetMode::Add)),
                StoreCommand::Replace => push(MetaFlag::SetMode(SetMode::Replace)),
                StoreCommand::Append => push(MetaFlag::SetMode(SetMode::Append)),
                StoreCommand::Prepend => push(MetaFlag::SetMode(SetMode::Prepend)),
                StoreCommand::Cas(unique) => push(MetaFlag::CompareCas(unique)),
            }
            MetaRequest::set(key, value, &[])
        }
        Request::Delete { key, .. } => MetaRequest::delete(key, &[]),
        Request::Arith {
            incr, key, delta, ..
        } => {
            push(MetaFlag::Delta(delta));
            if !incr {
                push(MetaFlag::ArithMode(ArithMode::Decr));
            }
            push(MetaFlag::ReturnValue);
            MetaRequest::arith(key, &[])
        }
        Request::Touch { key, exptime, .. } => {
            push(MetaFlag::Ttl(exptime));
            MetaRequest::get(key, &[])
        }
        _ => return req.encode(out),
    };
    if let Some(o) = opaque {
        push(MetaFlag::Opaque(o));
    }
    if quiet {
        push(MetaFlag::Quiet);
    }
    // The key passed validate_key when it was routed, and the flags above are each accepted
    // by their command, once.
    MetaRequest {
        flags: &flags[..n],
        ..request
    }
    .encode_unchecked(out);
}

/// The next meta reply or error line in `rb` (not consumed) and its length; `None`: more bytes
/// are needed.
pub(crate) fn next(rb: &ReadBuf, ctx: &Ctx) -> Result<Option<(MetaItem, usize)>> {
    match parse_meta(rb.unread(), ctx.max_value) {
        Ok(Parsed::Incomplete) => Ok(None),
        Ok(Parsed::Done(item, used)) => Ok(Some((item, used))),
        Err(e) => Err(Error::protocol(ctx.server, e.to_string())),
    }
}

/// The error for an error line answering a meta request (see [`super::refusal`]); `ERROR`,
/// memcached's answer to a command it does not know, says that meta needs memcached 1.6.
pub(crate) fn refused(reply: Reply, ctx: &Ctx, command: &str) -> Result<Error> {
    Ok(match super::refusal(reply, ctx.server, command)? {
        Error::Server { server, message } if message == "ERROR" => Error::Server {
            server,
            message: format!(
                "ERROR: the server does not know the meta command sent for {command}; meta commands need memcached 1.6 or later (use Protocol::Text with older servers and proxies)"
            ),
        },
        e => e,
    })
}

/// What came for the one request sent with an opaque token.
pub(crate) enum One {
    /// More bytes are needed.
    More,
    /// An error line (consumed): the server refused the request, the stream is in step.
    Refused(Error),
    /// The reply carrying the token, and its length (not consumed: its ranges index
    /// `rb.unread()`).
    Reply(MetaReply, usize),
}

/// The reply to the one request sent with `opaque` by `command`; a reply with another token is
/// an error (the connection is dropped).
pub(crate) fn read_one(rb: &mut ReadBuf, ctx: &Ctx, opaque: u32, command: &str) -> Result<One> {
    let Some((item, used)) = next(rb, ctx)? else {
        return Ok(One::More);
    };
    match item {
        MetaItem::Failed(reply) => {
            rb.consume(used);
            refused(reply, ctx, command).map(One::Refused)
        }
        MetaItem::Reply(r) if opaque_of(&r, rb.unread()) == Some(opaque) => Ok(One::Reply(r, used)),
        MetaItem::Reply(r) => Err(wrong_opaque(&r, rb.unread(), &opaque.to_string(), ctx)),
    }
}

/// The item of a `VA` reply carrying client flags (and the CAS if `cas`), its value copied
/// out of `buf`.
pub(crate) fn item(r: &MetaReply, buf: &[u8], cas: bool, ctx: &Ctx) -> Result<crate::Item> {
    let (data, flags, cas) = item_parts(r, cas, ctx)?;
    Ok(crate::Item::new(
        bytes::Bytes::copy_from_slice(&buf[data]),
        flags,
        cas,
    ))
}

/// The value's place in the reply, the client flags and the CAS (if `cas`) of a `VA` reply.
pub(crate) fn item_parts(
    r: &MetaReply,
    cas: bool,
    ctx: &Ctx,
) -> Result<(std::ops::Range<usize>, u32, Option<u64>)> {
    let (Some(flags), Some(data)) = (r.tokens.flags, r.data.clone()) else {
        return Err(Error::protocol(
            ctx.server,
            "mg value without its client flags",
        ));
    };
    if cas && r.tokens.cas.is_none() {
        return Err(Error::protocol(ctx.server, "mg value without its CAS"));
    }
    Ok((data, flags, r.tokens.cas.filter(|_| cas)))
}

/// The opaque token of `r` as the number we sent, if it is one.
pub(crate) fn opaque_of(r: &MetaReply, buf: &[u8]) -> Option<u32> {
    let o = r.opaque(buf)?;
    if o.is_empty() || o.len() > 10 || !o.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(o).ok()?.parse().ok()
}

/// The error for a reply whose opaque token is not `want`.
pub(crate) fn wrong_opaque(r: &MetaReply, buf: &[u8], want: &str, ctx: &Ctx) -> Error {
    let got = r.opaque(buf).map(String::from_utf8_lossy);
    Error::protocol(
        ctx.server,
        format!(
            "meta reply {:?} with opaque {got:?} where {want} was awaited: a reply to another request, so the connection was dropped",
            r.status
        ),
    )
}

/// The text reply `r` stands for as the answer to `req`; `None`: it cannot answer `req`.
/// `buf` holds the reply's data.
pub(crate) fn reading(req: &Request, r: &MetaReply, buf: &[u8]) -> Option<Reply> {
    use MetaStatus::*;
    Some(match (req, r.status) {
        (Request::Store { .. }, Header) => Reply::Stored,
        (Request::Store { .. }, NotStored) => Reply::NotStored,
        (Request::Store { .. }, Exists) => Reply::Exists,
        (Request::Store { .. }, NotFound) => Reply::NotFound,
        (Request::Delete { .. }, Header) => Reply::Deleted,
        (Request::Delete { .. }, NotFound) => Reply::NotFound,
        (Request::Arith { .. }, Value) => {
            let digits = &buf[r.data.clone()?];
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            Reply::Number(std::str::from_utf8(digits).ok()?.parse().ok()?)
        }
        (Request::Arith { .. }, NotFound) => Reply::NotFound,
        (Request::Touch { .. }, Header) => Reply::Touched,
        (Request::Touch { .. }, Miss) => Reply::NotFound,
        _ => return None,
    })
}

/// What a quiet request that got no reply did (quiet mode hides only the success).
pub(crate) fn quiet_success(req: &Request) -> Option<Reply> {
    match req {
        Request::Store { .. } => Some(Reply::Stored),
        Request::Delete { .. } => Some(Reply::Deleted),
        _ => None,
    }
}

/// Test support: a meta context, and the opaque tokens a request wrote.
#[cfg(test)]
pub(crate) mod testing {
    use super::Ctx;

    pub(crate) const CTX: Ctx<'static> = Ctx {
        server: "s:1",
        max_value: 1024,
        protocol: crate::Protocol::Meta,
        caps: crate::settings::RequestCaps::DEFAULT,
    };

    /// The numbers of the `O` tokens in `out`, in order.
    pub(crate) fn opaques(out: &[u8]) -> Vec<u32> {
        out.split(|&b| b == b' ' || b == b'\r' || b == b'\n')
            .filter_map(|t| t.strip_prefix(b"O"))
            .filter_map(|n| std::str::from_utf8(n).ok()?.parse().ok())
            .collect()
    }

    /// Put `bytes` in `rb` as if received.
    pub(crate) fn receive(rb: &mut crate::core::readbuf::ReadBuf, bytes: &[u8]) {
        let spare = rb.spare();
        spare[..bytes.len()].copy_from_slice(bytes);
        rb.filled(bytes.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(req: Request) -> String {
        let mut out = Vec::new();
        encode(&req, Some(7), false, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_text_request_has_the_meta_form_of_the_same_command() {
        let store = |cmd, flags, exptime| Request::Store {
            cmd,
            key: b"k",
            flags,
            exptime,
            value: b"hi",
            noreply: false,
        };
        assert_eq!(meta(store(StoreCommand::Set, 0, 0)), "ms k 2 O7\r\nhi\r\n");
        assert_eq!(
            meta(store(StoreCommand::Add, 5, 60)),
            "ms k 2 F5 T60 ME O7\r\nhi\r\n"
        );
        assert_eq!(
            meta(store(StoreCommand::Cas(99), 0, 0)),
            "ms k 2 C99 O7\r\nhi\r\n"
        );
        let arith = Request::Arith {
            incr: false,
            key: b"n",
            delta: 3,
            noreply: false,
        };
        assert_eq!(meta(arith), "ma n D3 MD v O7\r\n");
        let touch = Request::Touch {
            key: b"k",
            exptime: 9,
            noreply: false,
        };
        assert_eq!(meta(touch), "mg k T9 O7\r\n");
        assert_eq!(meta(Request::Version), "version\r\n");
        let mut q = Vec::new();
        let del = Request::Delete {
            key: b"k",
            noreply: false,
        };
        encode(&del, None, true, &mut q);
        assert_eq!(q, b"md k q\r\n");
    }

    /// A token is the number written: digits only, up to the ten of `u32::MAX`.
    #[test]
    fn opaque_tokens_are_read_as_written() {
        use crate::core::readbuf::ReadBuf;
        let token = |line: &str| {
            let mut rb = ReadBuf::default();
            testing::receive(&mut rb, line.as_bytes());
            match next(&rb, &testing::CTX) {
                Ok(Some((MetaItem::Reply(r), _))) => opaque_of(&r, rb.unread()),
                other => panic!("{line:?}: {other:?}"),
            }
        };
        assert_eq!(token("HD O7\r\n"), Some(7));
        assert_eq!(token("HD O4294967295\r\n"), Some(u32::MAX));
        assert_eq!(token("HD O1000000000\r\n"), Some(1_000_000_000));
        for bad in [
            "HD\r\n",
            "HD O+7\r\n",
            "HD O00000000007\r\n",
            "HD O4294967296\r\n",
            "HD Ox\r\n",
        ] {
            assert_eq!(token(bad), None, "{bad:?}");
        }
    }
}
