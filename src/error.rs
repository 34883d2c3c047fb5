//! The client's error type: what went wrong, on which server, and what to do about it.

use crate::proto::{KeyError, ParseError};
use crate::ring::RingError;
use crate::servers::ServerListError;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// Most connections a pool may hold per server. memcached's own default limit is 1024
/// connections for all its clients together (`-c`), and the pools reserve memory for
/// `pool_size` connections up front, so a larger pool is a setting mistake.
pub const MAX_POOL_SIZE: u32 = 4096;

/// Longest timeout a builder accepts (connect, read, write, checkout, retry): one day. Longer
/// ones cannot be told apart from a hang, and durations near `Duration::MAX` cannot be added to
/// a point in time.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// A builder setting that cannot be used; nothing was built. Each says which setting (by its
/// [`Builder`](crate::Builder) method name), the value, and what to give instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingError {
    /// A timeout of zero: the pools cannot wait zero time and sockets take no zero timeout.
    #[error("{setting} is 0; give a timeout of at least 1 ms")]
    ZeroTimeout {
        /// The setting (builder method).
        setting: &'static str,
    },
    /// A timeout above 0 but under 1 ms: shorter than a connect or a round trip can take, so
    /// every request would time out.
    #[error("{setting} of {value:?} is shorter than 1 ms; give a timeout of at least 1 ms")]
    TimeoutTooShort {
        /// The setting (builder method).
        setting: &'static str,
        /// The value given.
        value: Duration,
    },
    /// A timeout longer than [`MAX_TIMEOUT`].
    #[error(
        "{setting} of {secs} s is longer than the longest allowed ({max} s); give at most {max} s",
        secs = value.as_secs(), max = MAX_TIMEOUT.as_secs()
    )]
    TimeoutTooLong {
        /// The setting (builder method).
        setting: &'static str,
        /// The value given.
        value: Duration,
    },
    /// `pool_size` of 0: no request could ever get a connection.
    #[error("pool_size is 0; give at least 1 connection per server")]
    ZeroPoolSize,
    /// `pool_size` above [`MAX_POOL_SIZE`].
    #[error(
        "pool_size of {0} connections per server is more than {MAX_POOL_SIZE}; give at most {MAX_POOL_SIZE} (memcached accepts 1024 connections by default, -c)"
    )]
    PoolTooLarge(u32),
    /// `min_idle` above `pool_size`: the pool could never keep that many idle connections.
    #[error(
        "min_idle of {min_idle} is more than pool_size of {pool_size}; give min_idle at most pool_size"
    )]
    MinIdleAbovePoolSize {
        /// The `min_idle` given.
        min_idle: u32,
        /// The `pool_size` given.
        pool_size: u32,
    },
    /// The key prefix is not a valid memcached key.
    #[error(
        "the key prefix cannot start memcached keys ({0}); give a prefix of at most 250 bytes without spaces or control characters"
    )]
    BadPrefix(#[source] KeyError),
    /// A TLS setting that cannot work: a CA bundle, certificate or key that cannot be read or
    /// holds nothing usable, a server name that is not a valid name or address.
    #[error("TLS setting {setting}: {detail}")]
    Tls {
        /// Which setting.
        setting: &'static str,
        /// What is wrong with it, and what to give instead.
        detail: String,
    },
    /// Credentials that cannot be sent: an empty user name, a name with a space or colon, a
    /// file or environment variable without a `user:password` line. The secret is never part
    /// of the message.
    #[error("credentials from {source_name}: {detail}")]
    Credentials {
        /// Where they were read from (a file path or a variable name).
        source_name: String,
        /// What is wrong.
        detail: String,
    },
    /// Request caps that leave no room for a request.
    #[error(
        "request caps of {keys} keys and {bytes} bytes leave no room; give at least 1 key and 32 bytes"
    )]
    RequestCaps {
        /// Keys per line given.
        keys: usize,
        /// Bytes per line given.
        bytes: usize,
    },
    /// The large values' chunk size is out of its range.
    #[error(
        "large_values chunk of {chunk} bytes must be from 1024 to max_value_size ({max_value} bytes); memshard::LARGE_VALUE_CHUNK fits memcached's default -I"
    )]
    LargeValueChunk {
        /// The chunk size given.
        chunk: usize,
        /// The client's largest value (`max_value_size`).
        max_value: usize,
    },
    /// A discovery setting cannot be used.
    #[error("discovery: {detail}")]
    Discovery {
        /// What is wrong, and what to give instead.
        detail: String,
    },
}

impl SettingError {
    /// Check a timeout setting: at least 1 ms and at most [`MAX_TIMEOUT`].
    pub(crate) fn check_timeout(setting: &'static str, value: Duration) -> Result<(), Self> {
        if value.is_zero() {
            Err(SettingError::ZeroTimeout { setting })
        } else if value < Duration::from_millis(1) {
            Err(SettingError::TimeoutTooShort { setting, value })
        } else if value > MAX_TIMEOUT {
            Err(SettingError::TimeoutTooLong { setting, value })
        } else {
            Ok(())
        }
    }
}

/// Everything a client operation can fail with. `Clone`, so a failed server's error can be
/// reported for each of its keys in a multi-key operation.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A socket error talking to `server` (connection refused, reset, ...). The connection
    /// was dropped; retrying may reach a fresh one.
    #[error(
        "I/O error with {server} during {op}: {message} ({kind:?}); check that the server is up and reachable"
    )]
    Io {
        /// The server's address.
        server: String,
        /// What was being done (connect, resolve, write, read, idle check).
        op: &'static str,
        /// The kind of I/O error.
        kind: io::ErrorKind,
        /// The OS's message, and what it means here.
        message: String,
        /// The I/O error itself.
        #[source]
        source: Arc<io::Error>,
    },
    /// `server` did not answer in time. The connection was dropped so that its late reply
    /// can never be read by another request.
    #[error(
        "timeout after {} ms waiting for {server} during {op}; {hint}",
        after.as_millis(), hint = if *op == "login" {
            "the server accepted the connection but never answered the login: check that memcached listens there, or raise the timeout"
        } else {
            "raise the timeout or check the server"
        }
    )]
    Timeout {
        /// The server's address.
        server: String,
        /// What was being done (connect, write, read; login: the server accepted a new
        /// connection and did not answer its login, memcached `-Y`).
        op: &'static str,
        /// The timeout that expired.
        after: Duration,
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
        #[source]
        reason: KeyError,
    },
    /// The value is larger than the configured item size; nothing was sent.
    #[error(
        "value of {len} bytes exceeds the client's item size limit of {limit} bytes (Builder::max_value_size): turn on Builder::large_values to store it in chunks, or raise the limit where -I allows"
    )]
    ValueTooLarge {
        /// The value's length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// `server` cannot store the item: its value, key and about 60 bytes of header are more
    /// than the server's item size limit (memcached's `item_size_max`, `-I`, 1 MB by
    /// default). Either the client learned the limit (`stats settings`) and sent nothing, or
    /// the server answered `SERVER_ERROR object too large for cache` and stored nothing.
    #[error("{}", too_large(server, *len, *limit))]
    ItemTooLarge {
        /// The server's address.
        server: String,
        /// The value's length, where the client knows it.
        len: Option<usize>,
        /// The server's `item_size_max`, where the client learned it.
        limit: Option<usize>,
    },
    /// A value that could not be encoded for, or decoded from, the codec's peer (a type the
    /// peer cannot store, a payload that does not hold what its flags say, a decoded value of
    /// another type than asked for). For a read, the item is still on the server: read it
    /// with `get` to see the raw bytes and flags.
    #[cfg(feature = "codecs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "codecs")))]
    #[error("value of key {key:?}: {source}")]
    Value {
        /// The key, lossily decoded for display.
        key: String,
        /// What the codec found.
        #[source]
        source: crate::value::ValueError,
    },
    /// The TLS handshake with `server` failed, or the server does not speak TLS on that port.
    /// Nothing was sent in plaintext. (A plaintext client at a TLS-only port sees its new
    /// connection reset: an [`Error::Io`] whose message says to enable TLS.) `problem`
    /// says which, the message what to change.
    #[error("TLS with {server}: {problem}: {message}")]
    Tls {
        /// The server's address.
        server: String,
        /// What went wrong, classified.
        problem: TlsProblem,
        /// The TLS library's words.
        message: String,
    },
    /// `server` refused the credentials, or asked for credentials the client does not have
    /// (memcached `-Y`). The connection was not used for any request.
    #[error("{server}: {problem}")]
    Auth {
        /// The server's address.
        server: String,
        /// Rejected credentials, or none given.
        problem: AuthProblem,
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
    /// after the retry timeout (`retry_in`). The text carries no number, so that logs group
    /// these errors by message.
    #[error(
        "{server} is marked down after repeated failures; requests to it fail at once until a probe finds it answering (or enable auto-eject to move its keys)"
    )]
    ServerDown {
        /// The server's address.
        server: String,
        /// Time left until it is probed again.
        retry_in: Duration,
    },
    /// `get_or_compute`: the recompute function failed (its error is the source). Nothing was
    /// stored; the lease was given back so that another caller can recompute at once.
    #[error("recomputing the value of key {key:?} failed: {source}")]
    Recompute {
        /// The key, lossily decoded for display.
        key: String,
        /// The recompute function's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// `get_or_compute`: another caller holds the lease to recompute `key` and stored no value
    /// within the wait. Serve a default, try again later, or give a longer wait in
    /// [`Stampede::wait`](crate::Stampede::wait); a lease whose holder died ends after
    /// [`Stampede::lease`](crate::Stampede::lease).
    #[error(
        "key {key:?} on {server}: another caller is recomputing it and stored no value within {} ms; try again later or wait longer",
        waited.as_millis()
    )]
    LeaseBusy {
        /// The server holding the key.
        server: String,
        /// The key, lossily decoded for display.
        key: String,
        /// How long this caller waited.
        waited: Duration,
    },
    /// A [`Router`](crate::Router) refused `command` on `key` because it could not be done
    /// once, on the right copy: a CAS token from another copy, a counter or append while its
    /// main server is down under a gutter route. `reason` says why and what to do. The route
    /// sent nothing more; a command that timed out on a server before the refusal may still
    /// be applied there.
    #[error("{route} route refused {command} of key {key:?}: {reason}")]
    Route {
        /// The route (`warm_up`, `migrate`, `gutter`, `mirror`).
        route: &'static str,
        /// The command refused.
        command: &'static str,
        /// The key, lossily decoded for display.
        key: String,
        /// Why, and what to do.
        reason: String,
    },
    /// Cluster discovery from `endpoint` gave no usable configuration; the client keeps the
    /// nodes it has (and a build that needed the first configuration fails).
    #[error("cluster discovery from {endpoint}: {problem}")]
    Discovery {
        /// The node or endpoint asked.
        endpoint: String,
        /// What was wrong with its answer.
        #[source]
        problem: crate::proto::discovery::DiscoveryError,
    },
    /// The client could not be built from its configuration.
    #[error("configuration: {0}")]
    Config(String),
    /// A builder setting cannot be used (see [`SettingError`]); nothing was built.
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// The ring could not be built.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The server list could not be read.
    #[error(transparent)]
    ServerList(#[from] ServerListError),
}

impl Error {
    /// The error for `e`, met during `op` with `server`; a timeout (`WouldBlock`, `TimedOut`)
    /// becomes [`Error::Timeout`] after `timeout`.
    pub(crate) fn io(server: &str, e: io::Error, op: &'static str, timeout: Duration) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout {
                server: server.to_string(),
                op,
                after: timeout,
            },
            kind => Error::Io {
                server: server.to_string(),
                op,
                kind,
                message: e.to_string(),
                source: Arc::new(e),
            },
        }
    }

    /// An [`Error::Io`] of `kind` that the client found itself (end of stream, no address).
    pub(crate) fn io_kind(
        server: &str,
        op: &'static str,
        kind: io::ErrorKind,
        message: impl Into<String>,
    ) -> Error {
        let message = message.into();
        Error::Io {
            server: server.to_string(),
            op,
            kind,
            source: Arc::new(io::Error::new(kind, message.clone())),
            message,
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

    /// The server the error is about, if it is about one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Error::Io { server, .. }
            | Error::Timeout { server, .. }
            | Error::Protocol { server, .. }
            | Error::Server { server, .. }
            | Error::Pool { server, .. }
            | Error::ServerDown { server, .. }
            | Error::Tls { server, .. }
            | Error::Auth { server, .. }
            | Error::LeaseBusy { server, .. } => Some(server),
            _ => None,
        }
    }

    /// A timeout: connecting, writing or reading took longer than its setting.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
    }

    /// The server could not be connected to (refused, unreachable, no address, connect
    /// timeout); nothing was sent.
    pub fn is_connect(&self) -> bool {
        matches!(
            self,
            Error::Io {
                op: "connect" | "resolve",
                ..
            } | Error::Timeout { op: "connect", .. }
        )
    }

    /// True for every error that means a server could not answer: I/O, timeout, protocol,
    /// a pool that could not connect, and [`Error::ServerDown`] (a server already marked down),
    /// as opposed to errors about the request itself (key, value, settings, TLS or
    /// credentials). A service can serve from its source of truth on these.
    pub fn is_server_failure(&self) -> bool {
        self.counts_against_server() || matches!(self, Error::ServerDown { .. })
    }

    /// [`Error::is_server_failure`], the name a service may look for first.
    pub fn is_unavailable(&self) -> bool {
        self.is_server_failure()
    }

    /// An error that comes from talking to the server and counts toward marking it down
    /// (not [`Error::ServerDown`]: nothing was sent).
    pub(crate) fn counts_against_server(&self) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// What a service logs for a server that could not answer: one line a person reads, at
    /// most about 200 characters, naming the server and what to do.
    #[test]
    fn server_failures_read_in_one_short_line_naming_the_server() {
        let server = "cache-03.prod.example.internal:11211";
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        let errors = [
            Error::io(server, reset, "read", Duration::from_millis(250)),
            Error::io(
                server,
                io::Error::from(io::ErrorKind::ConnectionRefused),
                "connect",
                Duration::from_millis(250),
            ),
            Error::io(
                server,
                io::Error::from(io::ErrorKind::WouldBlock),
                "read",
                Duration::from_millis(250),
            ),
            Error::protocol(server, "unexpected reply line \"VALUE k 0 1\" to set"),
            Error::Pool {
                server: server.into(),
                message: "Connection refused (os error 111)".into(),
                exhausted: false,
            },
            Error::ServerDown {
                server: server.into(),
                retry_in: Duration::from_millis(1500),
            },
        ];
        for e in errors {
            let text = e.to_string();
            assert!(text.len() <= 200, "{} characters: {text}", text.len());
            assert!(text.contains(server), "{text}");
            assert!(e.is_server_failure(), "{text}");
        }
    }

    #[test]
    fn a_server_marked_down_is_a_server_failure_that_counts_nothing_against_it() {
        let down = Error::ServerDown {
            server: "10.0.0.1:11211".into(),
            retry_in: Duration::from_secs(1),
        };
        assert!(down.is_server_failure() && down.is_unavailable());
        assert!(!down.counts_against_server());
        // logs group errors by their text: no changing number in it
        let later = Error::ServerDown {
            server: "10.0.0.1:11211".into(),
            retry_in: Duration::from_millis(1221),
        };
        assert_eq!(down.to_string(), later.to_string());
        let io = Error::Io {
            server: "10.0.0.1:11211".into(),
            op: "read",
            kind: io::ErrorKind::ConnectionReset,
            message: "reset".into(),
            source: Arc::new(io::ErrorKind::ConnectionReset.into()),
        };
        assert!(io.is_server_failure() && io.counts_against_server());
        let busy = Error::Pool {
            server: "10.0.0.1:11211".into(),
            message: "busy".into(),
            exhausted: true,
        };
        assert!(!busy.is_server_failure());
        let key = Error::invalid_key(b"", crate::proto::KeyError::Empty);
        assert!(!key.is_server_failure() && !key.is_unavailable());
    }

    #[test]
    fn timeouts_are_one_millisecond_to_a_day() {
        let check = |d| SettingError::check_timeout("read_timeout", d);
        assert_eq!(
            check(Duration::ZERO),
            Err(SettingError::ZeroTimeout {
                setting: "read_timeout"
            })
        );
        for short in [Duration::from_nanos(1), Duration::from_micros(999)] {
            let e = check(short).expect_err("under 1 ms");
            assert!(matches!(e, SettingError::TimeoutTooShort { value, .. } if value == short));
            assert!(e.to_string().contains("at least 1 ms"), "{e}");
        }
        assert_eq!(check(Duration::from_millis(1)), Ok(()));
        assert_eq!(check(MAX_TIMEOUT), Ok(()));
        let long = MAX_TIMEOUT + Duration::from_nanos(1);
        assert!(matches!(
            check(long),
            Err(SettingError::TimeoutTooLong { .. })
        ));
    }

    #[test]
    fn io_errors_keep_their_source_and_say_what_they_are() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        let e = Error::io("127.0.0.1:1", refused, "connect", Duration::from_millis(5));
        assert!(e.is_connect() && !e.is_timeout());
        assert_eq!(e.server(), Some("127.0.0.1:1"));
        let source = e.source().and_then(|s| s.downcast_ref::<Arc<io::Error>>());
        assert_eq!(
            source.map(|s| s.kind()),
            Some(io::ErrorKind::ConnectionRefused)
        );

        let slow = io::Error::from(io::ErrorKind::WouldBlock);
        let e = Error::io("127.0.0.1:1", slow, "read", Duration::from_millis(250));
        assert!(e.is_timeout() && !e.is_connect());
        assert!(e.to_string().contains("250 ms"), "{e}");

        let key = Error::invalid_key(b"a b", KeyError::BadByte { at: 1, byte: b' ' });
        assert!(key.source().is_some() && key.server().is_none());
    }
}

/// What went wrong in a TLS handshake ([`Error::Tls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The server's certificate is not signed by a trusted CA: give its CA bundle.
    UnknownCa,
    /// The certificate is not valid for the name verified: set the server name to one the
    /// certificate holds.
    NameMismatch,
    /// The certificate has expired, or is not valid yet.
    Expired,
    /// The server demands a client certificate the client did not give (memcached
    /// `ssl_verify_mode` 2 or 3), or refused the one given.
    ClientCertificate,
    /// The server does not answer TLS on that port (memcached without `-Z`).
    NotTls,
    /// Anything else in the handshake.
    Other,
}

impl std::fmt::Display for TlsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsProblem::UnknownCa => {
                "the server's certificate is not signed by a trusted CA (give the CA bundle that signed it)"
            }
            TlsProblem::NameMismatch => {
                "the server's certificate is not valid for the name verified (set the server name to one in the certificate)"
            }
            TlsProblem::Expired => "the server's certificate has expired or is not valid yet",
            TlsProblem::ClientCertificate => {
                "the server demands a client certificate and did not accept the one given (give a certificate its CA signed)"
            }
            TlsProblem::NotTls => {
                "the server does not speak TLS on this port (start memcached with -Z, or connect without TLS)"
            }
            TlsProblem::Other => "the TLS handshake failed",
        })
    }
}

/// Why memcached authentication failed ([`Error::Auth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthProblem {
    /// The server refused the user name and password.
    Rejected,
    /// The server requires authentication (`-Y`) and the client has no credentials.
    Required,
    /// MemCachier refused the user name and password of its login
    /// ([`AuthScheme::MemCachier`](crate::settings::AuthScheme::MemCachier)).
    RejectedByMemCachier,
}

impl std::fmt::Display for AuthProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AuthProblem::Rejected => {
                "the server refused the credentials (check the user name and password in its -Y auth file)"
            }
            AuthProblem::RejectedByMemCachier => {
                "MemCachier refused the credentials (check the cache's user name and password as MemCachier lists them)"
            }
            AuthProblem::Required => {
                "the server requires authentication (memcached -Y): give the client credentials"
            }
        })
    }
}

/// [`Error::ItemTooLarge`]'s message: the size and the limit where known, and the fixes.
fn too_large(server: &str, len: Option<usize>, limit: Option<usize>) -> String {
    let value = len.map_or_else(
        || "the value".to_owned(),
        |n| format!("a value of {n} bytes"),
    );
    let limit = limit.map_or_else(String::new, |n| format!(" of {n} bytes"));
    format!(
        "{server} cannot store {value}: over its item size limit{limit} (memcached -I) with key and header; store less, turn on Builder::large_values, or raise -I"
    )
}
