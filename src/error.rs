//! The client's error type: what went wrong, on which server, and what to do about it.

use crate::proto::{KeyError, ParseError};
use crate::ring::RingError;
use crate::servers::ServerListError;
use std::io;

/// Everything a client operation can fail with. `Clone`, so a failed server's error can be
/// reported for each of its keys in a multi-key operation.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A socket error talking to `server` (connection refused, reset, ...). The connection
    /// was dropped; retrying may reach a fresh one.
    #[error(
        "I/O error with {server}: {message} ({kind:?}); check that the server is up and reachable"
    )]
    Io {
        /// The server's address.
        server: String,
        /// The kind of I/O error.
        kind: io::ErrorKind,
        /// The OS's message.
        message: String,
    },
    /// `server` did not answer in time. The connection was dropped so that its late reply
    /// can never be read by another request.
    #[error(
        "timeout after {millis} ms waiting for {server} during {op}; raise the timeout or check the server"
    )]
    Timeout {
        /// The server's address.
        server: String,
        /// What was being done (connect, write, read).
        op: &'static str,
        /// The timeout that expired.
        millis: u128,
    },
    /// `server` sent bytes that are not a valid reply to the request. The connection was
    /// dropped.
    #[error("protocol error from {server}: {detail}")]
    Protocol {
        /// The server's address.
        server: String,
        /// What was wrong.
        detail: String,
    },
    /// `server` answered `ERROR`, `CLIENT_ERROR` or `SERVER_ERROR`.
    #[error("{server} refused the request: {message}")]
    Server {
        /// The server's address.
        server: String,
        /// The server's words.
        message: String,
    },
    /// The key cannot be sent; nothing was sent.
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey {
        /// The key, lossily decoded for display.
        key: String,
        /// Why.
        reason: KeyError,
    },
    /// The value is larger than the configured item size; nothing was sent.
    #[error(
        "value of {len} bytes exceeds the item size limit of {limit} bytes (memcached -I); raise Builder::max_value_size if the servers allow it"
    )]
    ValueTooLarge {
        /// The value's length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// No connection could be had from `server`'s pool in time.
    #[error("no connection to {server} within the checkout timeout: {message}; {hint}", hint = if *exhausted { "every pooled connection was busy: raise pool_size or checkout_timeout" } else { "the server did not accept a connection" })]
    Pool {
        /// The server's address.
        server: String,
        /// What the pool reported (often the last connect error).
        message: String,
        /// True when connections existed but were all in use (not a server failure).
        exhausted: bool,
    },
    /// `server` is marked down after repeated failures; nothing was sent. It is probed again
    /// after the retry timeout.
    #[error(
        "{server} is marked down after repeated failures; retry in {retry_in_ms} ms (or enable auto-eject to move its keys)"
    )]
    ServerDown {
        /// The server's address.
        server: String,
        /// Time left until it is probed again.
        retry_in_ms: u128,
    },
    /// The client could not be built from its configuration.
    #[error("configuration: {0}")]
    Config(String),
    /// The ring could not be built.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The server list could not be read.
    #[error(transparent)]
    ServerList(#[from] ServerListError),
}

impl Error {
    pub(crate) fn io(server: &str, e: &io::Error, op: &'static str, millis: u128) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout {
                server: server.to_string(),
                op,
                millis,
            },
            kind => Error::Io {
                server: server.to_string(),
                kind,
                message: e.to_string(),
            },
        }
    }

    pub(crate) fn protocol(server: &str, detail: impl std::fmt::Display) -> Error {
        Error::Protocol {
            server: server.to_string(),
            detail: detail.to_string(),
        }
    }

    pub(crate) fn invalid_key(key: &[u8], reason: KeyError) -> Error {
        Error::InvalidKey {
            key: String::from_utf8_lossy(key).into_owned(),
            reason,
        }
    }

    /// True for errors after which the server may be unhealthy (I/O, timeout, protocol,
    /// pool checkout), as opposed to errors about the request itself.
    pub fn is_server_failure(&self) -> bool {
        matches!(
            self,
            Error::Io { .. }
                | Error::Timeout { .. }
                | Error::Protocol { .. }
                | Error::Pool {
                    exhausted: false,
                    ..
                }
        )
    }
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Protocol {
            server: String::new(),
            detail: e.to_string(),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
