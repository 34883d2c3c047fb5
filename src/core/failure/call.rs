//! One request to one server as the clients run it: its metrics and trace span, and what a
//! failure means — sent again on a new connection, returned, counted for the server or not.

use super::eject::ServerPool;
use crate::core::Core;
use crate::core::exchange::{Exchange, Resend};
use crate::core::link::Link;
use crate::core::view::Member;
use crate::error::Error;
use crate::observe;
use std::sync::Arc;

/// A request under way: started at, for which command, in which span.
pub(crate) struct Call {
    command: &'static str,
    started: observe::Started,
    pub(crate) span: observe::Span,
}

/// What to do after an exchange on a pooled connection failed.
pub(crate) enum Failed {
    /// The connection was stale and the request is safe to repeat: once more, on a new
    /// connection.
    Retry,
    /// Return this; `counts`: it tells something about the server's health.
    Final { error: Error, counts: bool },
}

/// The verdict on `error`, which ended an exchange on `link`. A stale connection's failure
/// says nothing about the server; the request goes again if `resend` allows or not one byte
/// left, else it is returned with what the caller needs to know.
pub(crate) fn after_failure(error: Error, link: &Link, resend: Resend) -> Failed {
    if !link.failed_stale() {
        return Failed::Final {
            error,
            counts: true,
        };
    }
    if resend == Resend::Safe || !link.sent_any() {
        return Failed::Retry;
    }
    let error = match error {
        Error::Io {
            server,
            op,
            kind,
            message,
            source,
        } => Error::Io {
            server,
            op,
            kind,
            source,
            message: format!(
                "{message}; the pooled connection had been closed by the server, and the request was not sent again on a new one because repeating it is not harmless: it was most likely not applied, but check before repeating it"
            ),
        },
        e => e,
    };
    Failed::Final {
        error,
        counts: false,
    }
}

/// The keys an exchange sends, as its span names them.
struct SentKeys<'e, E>(&'e E);

impl<E: Exchange> observe::span::Keys for SentKeys<'_, E> {
    fn count(&self) -> usize {
        self.0.key_count()
    }
    fn key(&self, i: usize) -> Option<&[u8]> {
        self.0.key(i)
    }
}

impl<P: ServerPool> Core<P> {
    /// Start the request `ex` to `m`.
    pub(crate) fn call(&self, m: &Member<P>, ex: &impl Exchange) -> Call {
        let command = ex.command();
        let keys = SentKeys(ex);
        Call {
            command,
            started: observe::Started::now(),
            span: observe::span::request(&self.settings, command, &m.server, &keys),
        }
    }

    /// The request `ex` ended with `err`; `counts`: the outcome says something about the
    /// server. True when the caller must start the prober.
    #[must_use]
    pub(crate) fn ended(
        &self,
        call: Call,
        m: &Arc<Member<P>>,
        ex: &impl Exchange,
        err: Option<&Error>,
        counts: bool,
    ) -> bool {
        call.span.ended(|| ex.hits(), err);
        observe::request(&m.observe, call.command, call.started.elapsed(), err);
        counts && ex.counts_for_health() && self.observe(m, err)
    }

    /// Hits and misses of a retrieval on `m`.
    pub(crate) fn hits(&self, m: &Member<P>, found: usize, asked: usize) {
        observe::hits(&m.observe, found as u64, (asked - found) as u64);
    }
}
