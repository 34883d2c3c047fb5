//! Each command's request and the interpretation of its replies, as sans-IO state machines:
//! an [`Exchange`] writes request bytes into a buffer and reads replies out of a
//! [`ReadBuf`](super::readbuf::ReadBuf); a connection (blocking or async) only moves the
//! bytes ([`Link::advance`](super::link::Link::advance)).

mod discover;
mod dump;
mod lease;
mod lines;
pub(crate) mod meta;
mod retrieve;
mod single;
mod write_many;

pub(crate) use discover::Discover;
pub(crate) use dump::Metadump;
pub(crate) use lease::{Lookup, MetaOne};
pub(crate) use lines::{NoreplySets, StatsExchange};
pub use lines::{STATS_MAX_BYTES, STATS_MAX_LINES};
pub(crate) use retrieve::Retrieve;
pub(crate) use single::Single;
pub(crate) use single::{delete_outcome, store_outcome};
pub(crate) use write_many::{DeleteOwned, WRITE_BATCH, WriteMany};

use super::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::{Reply, Request};

/// What an exchange knows of its connection.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    /// The server's address, for errors.
    pub(crate) server: &'a str,
    /// Largest value accepted in a reply.
    pub(crate) max_value: usize,
    /// Text or meta commands.
    pub(crate) protocol: crate::Protocol,
    /// Limits of one multi-key request line.
    pub(crate) caps: crate::settings::RequestCaps,
}

/// What an exchange needs next.
#[derive(Debug)]
pub(crate) enum Step<T> {
    /// The request bytes just put in the write buffer must be sent.
    Write,
    /// The request bytes just put in the write buffer must be sent, and its reply's first
    /// bytes are needed before the next step: the link does not step the exchange again
    /// until some have come.
    WriteThenRead,
    /// More reply bytes are needed.
    Read,
    /// Every reply was read.
    Done(T),
    /// Every reply was read, and the server refused the request (`ERROR`, `CLIENT_ERROR`,
    /// `SERVER_ERROR`): the connection is in step and stays usable.
    Refused(Error),
}

/// Whether a request may be sent again, once, on a new connection after its pooled connection
/// turned out to be stale ([`Link::failed_stale`](super::link::Link::failed_stale): end of
/// stream, reset or broken pipe before any byte of a reply, on a connection that sat idle).
///
/// A stale connection is one the server had closed before the request reached it, so the first
/// attempt did nothing; memcached does not apply a request and then close the connection
/// without replying. Still, only commands whose repetition cannot change the outcome are sent
/// twice after their bytes may have reached the server:
///
/// - `Safe`: get, gets, gat, gats, touch, set, replace, delete, the multi-key get, set and
///   delete, set with noreply, version, stats, flush_all, verbosity. Twice, they leave the same
///   item.
/// - `Never` (unless not one byte was written): add, append, prepend, cas, incr, decr. A second
///   application would change the value again (`incr`, `append`, `prepend`) or report a false
///   conflict (`add` → `NotStored`, `cas` → `Exists`). They fail with the connection's error;
///   the caller decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resend {
    Safe,
    Never,
}

/// One command (or pipeline of commands) to one server, from its first request byte to its
/// last reply.
pub(crate) trait Exchange {
    type Output;

    /// The command's name, for metrics, traces and errors.
    fn command(&self) -> &'static str;

    /// Whether it may be sent again after a stale connection ([`Resend`]).
    fn resend(&self) -> Resend {
        Resend::Safe
    }

    /// Start again from the first request (the one retry on a new connection).
    fn restart(&mut self);

    /// How many keys the exchange sends, for its trace span.
    fn key_count(&self) -> usize {
        0
    }

    /// The `i`th key as sent, for its trace span.
    fn key(&self, i: usize) -> Option<&[u8]> {
        let _ = i;
        None
    }

    /// Hits and misses, once a retrieval is done, for its trace span; `None` for the other
    /// commands.
    fn hits(&self) -> Option<(usize, usize)> {
        None
    }

    /// Whether the connection may be reused once the exchange is done: false for one that
    /// stopped reading a reply before its end (a metadump cut short), whose rest is still
    /// on the wire.
    fn keep_connection(&self) -> bool {
        true
    }

    /// Whether a failure of the exchange counts toward marking its server down: false for a
    /// question the client asks of its own accord that a server may refuse by closing the
    /// connection (twemproxy does so for `stats`).
    fn counts_for_health(&self) -> bool {
        true
    }

    /// Put request bytes into `out` (and answer [`Step::Write`] or [`Step::WriteThenRead`]),
    /// or consume replies from `rb`. An `Err` leaves the connection out of step: it is
    /// dropped.
    fn step(
        &mut self,
        rb: &mut ReadBuf,
        out: &mut Vec<u8>,
        ctx: &Ctx,
    ) -> Result<Step<Self::Output>>;
}

/// The error for a reply that is an error line: `Ok(Error::Server)` when it is one
/// (`ERROR`, `CLIENT_ERROR`, `SERVER_ERROR`; the stream is in step), else `Err` with the
/// protocol error for a reply that does not fit `what` (the stream is out of step).
pub(crate) fn refusal(reply: Reply, server: &str, what: &str) -> Result<Error> {
    let message = match reply {
        // memcached -Y answers every request of a connection that has not logged in so
        // (proto_text.c, `process_command_ascii`).
        Reply::ClientError(m) if m == "unauthenticated" => {
            return Ok(Error::Auth {
                server: server.to_string(),
                problem: crate::error::AuthProblem::Required,
            });
        }
        // memcached's words for an item over `item_size_max` (proto_text.c,
        // `process_update_command`; proto_parser's meta `ms` says the same)
        Reply::ServerError(m) if m.starts_with("object too large for cache") => {
            return Ok(Error::ItemTooLarge {
                len: None,
                limit: None,
                server: server.to_string(),
            });
        }
        Reply::Error => "ERROR".to_string(),
        Reply::ClientError(m) => format!("CLIENT_ERROR {m}"),
        Reply::ServerError(m) => format!("SERVER_ERROR {m}"),
        other => return Err(unexpected(&other, server, what)),
    };
    Ok(Error::Server {
        server: server.to_string(),
        message,
    })
}

/// The `i`th key of `request`, for the trace span of the exchange that sends it.
pub(crate) fn key_of<'r>(request: &Request<'r>, i: usize) -> Option<&'r [u8]> {
    match *request {
        Request::Store { key, .. }
        | Request::Delete { key, .. }
        | Request::Arith { key, .. }
        | Request::Touch { key, .. } => (i == 0).then_some(key),
        Request::Get { keys, .. } | Request::GetAndTouch { keys, .. } => keys.get(i).copied(),
        _ => None,
    }
}

/// How many keys `request` sends.
pub(crate) fn key_count_of(request: &Request<'_>) -> usize {
    match *request {
        Request::Get { keys, .. } | Request::GetAndTouch { keys, .. } => keys.len(),
        ref r => usize::from(key_of(r, 0).is_some()),
    }
}

/// A reply that does not fit the request: the stream can no longer be trusted.
pub(crate) fn unexpected(reply: &Reply, server: &str, what: &str) -> Error {
    Error::protocol(server, format!("unexpected reply {reply:?} to {what}"))
}
