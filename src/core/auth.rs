//! memcached's ASCII authentication (`-Y authfile`, memcached 1.5.15+): credentials, and the
//! login every new connection makes before its first request.
//!
//! memcached answers every command of a connection that has not logged in with
//! `CLIENT_ERROR unauthenticated`, and takes the login as a `set` whose value is
//! `user password` (`proto_text.c`, `process_command_ascii` and `_process_token_auth`). A
//! server without `-Y` would simply *store* that value under the key, readable by anyone, so
//! the login first asks `version`: only a server that answers "unauthenticated" is sent the
//! secret. A refused login fails the connection, which is never used.

use super::exchange::{Ctx, Exchange, Step, refusal};
use super::readbuf::ReadBuf;
use crate::error::{AuthProblem, Error, Result, SettingError};
use crate::proto::{Parsed, Reply, Request, StoreCommand, parse_reply};
use std::fmt;
use std::path::Path;

/// A user name and password for memcached's `-Y` authentication.
///
/// The password is never printed: `Debug` shows neither part, and no error message holds them.
///
/// ```
/// let c = memshard::Credentials::new("app", "s3cret")?;
/// assert_eq!(format!("{c:?}"), "Credentials { .. }");
/// # Ok::<(), memshard::SettingError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: String,
    password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials { .. }")
    }
}

impl Credentials {
    /// `user` and `password`. The user name cannot be empty or hold a space, a colon or a
    /// control character (memcached splits the login on the first space and its auth file on
    /// the first colon); the password cannot be empty or hold a line break.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Result<Self, SettingError> {
        Self::checked(user.into(), password.into(), "the builder")
    }

    fn checked(user: String, password: String, from: &str) -> Result<Self, SettingError> {
        let bad = |detail: &str| SettingError::Credentials {
            source_name: from.to_owned(),
            detail: detail.to_owned(),
        };
        if user.is_empty()
            || user
                .bytes()
                .any(|b| b == b' ' || b == b':' || b.is_ascii_control())
        {
            return Err(bad(
                "the user name must be non-empty, without spaces, colons or control characters",
            ));
        }
        if password.is_empty() || password.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(bad("the password must be non-empty and on one line"));
        }
        Ok(Credentials { user, password })
    }

    /// `user:password` (memcached's auth file format), from the first line of `text`.
    fn parse(text: &str, from: &str) -> Result<Self, SettingError> {
        let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
        match line.split_once(':') {
            Some((user, password)) => Self::checked(user.to_owned(), password.to_owned(), from),
            None => Err(SettingError::Credentials {
                source_name: from.to_owned(),
                detail: "expected one line `user:password`".to_owned(),
            }),
        }
    }

    /// The first line of the file at `path`, `user:password` (memcached's `-Y` file format).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SettingError> {
        let path = path.as_ref();
        let from = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SettingError::Credentials {
            source_name: from.clone(),
            detail: format!("cannot be read: {e}"),
        })?;
        Self::parse(&text, &from)
    }

    /// The environment variable `var`, `user:password`.
    pub fn from_env(var: &str) -> Result<Self, SettingError> {
        let from = format!("${var}");
        let text = std::env::var(var).map_err(|e| SettingError::Credentials {
            source_name: from.clone(),
            detail: format!("not set or not UTF-8 ({e})"),
        })?;
        Self::parse(&text, &from)
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    fn token(&self) -> Vec<u8> {
        format!("{} {}", self.user, self.password).into_bytes()
    }
}

/// The login of a new connection: `version`; if the server answers "unauthenticated", the
/// credentials.
pub(crate) struct Login<'c> {
    credentials: &'c Credentials,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    AskVersion,
    AwaitVersion,
    AwaitLogin,
}

impl<'c> Login<'c> {
    pub(crate) fn new(credentials: &'c Credentials) -> Self {
        Login {
            credentials,
            state: State::AskVersion,
        }
    }
}

impl Exchange for Login<'_> {
    type Output = ();

    fn command(&self) -> &'static str {
        "auth"
    }

    fn restart(&mut self) {
        self.state = State::AskVersion;
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        if self.state == State::AskVersion {
            Request::Version.encode(out);
            self.state = State::AwaitVersion;
            return Ok(Step::Write);
        }
        let (reply, used) = match parse_reply(rb.unread()).map_err(Error::from)? {
            Parsed::Incomplete => return Ok(Step::Read),
            Parsed::Done(reply, used) => (reply, used),
        };
        rb.consume(used);
        let rejected = || Error::Auth {
            server: ctx.server.to_owned(),
            problem: AuthProblem::Rejected,
        };
        match (self.state, reply) {
            // No -Y on this server: the secret is not sent.
            (State::AwaitVersion, Reply::Version(_)) => Ok(Step::Done(())),
            (State::AwaitVersion, reply) => match refusal(reply, ctx.server, "version")? {
                Error::Auth { .. } => {
                    let token = self.credentials.token();
                    Request::Store {
                        cmd: StoreCommand::Set,
                        key: b"auth",
                        flags: 0,
                        exptime: 0,
                        value: &token,
                        noreply: false,
                    }
                    .encode(out);
                    self.state = State::AwaitLogin;
                    Ok(Step::Write)
                }
                other => Err(other),
            },
            (_, Reply::Stored) => Ok(Step::Done(())),
            // "authentication failure", "bad authentication token format": the connection is
            // failed, never used.
            (_, Reply::ClientError(_)) => Err(rejected()),
            (_, other) => Err(super::exchange::unexpected(&other, ctx.server, "auth")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx {
            server: "s:1",
            max_value: 1024,
            protocol: crate::Protocol::Text,
        }
    }

    /// Feeds `reply` to `login` after its request; returns what it wrote next and its step.
    fn answer(login: &mut Login<'_>, reply: &[u8]) -> (Vec<u8>, Result<Step<()>>) {
        let mut rb = ReadBuf::default();
        let n = reply.len();
        rb.spare()[..n].copy_from_slice(reply);
        rb.filled(n);
        let mut out = Vec::new();
        let step = login.step(&mut rb, &mut out, &ctx());
        (out, step)
    }

    #[test]
    fn the_secret_goes_only_to_a_server_that_asks() {
        let c = Credentials::new("app", "pa ss").expect("valid");
        let mut login = Login::new(&c);
        let mut out = Vec::new();
        let first = login.step(&mut ReadBuf::default(), &mut out, &ctx());
        assert!(matches!(first, Ok(Step::Write)));
        assert_eq!(out, b"version\r\n");
        // A server without -Y answers: done, nothing else sent.
        let (out, step) = answer(&mut login, b"VERSION 1.6.18\r\n");
        assert!(out.is_empty() && matches!(step, Ok(Step::Done(()))));

        let mut login = Login::new(&c);
        login
            .step(&mut ReadBuf::default(), &mut Vec::new(), &ctx())
            .expect("asks");
        let (out, step) = answer(&mut login, b"CLIENT_ERROR unauthenticated\r\n");
        assert!(matches!(step, Ok(Step::Write)));
        assert_eq!(out, b"set auth 0 0 9\r\napp pa ss\r\n");
        let (_, step) = answer(&mut login, b"STORED\r\n");
        assert!(matches!(step, Ok(Step::Done(()))));
    }

    #[test]
    fn a_refused_login_fails_the_connection() {
        let c = Credentials::new("app", "wrong").expect("valid");
        let mut login = Login::new(&c);
        login
            .step(&mut ReadBuf::default(), &mut Vec::new(), &ctx())
            .expect("asks");
        answer(&mut login, b"CLIENT_ERROR unauthenticated\r\n")
            .1
            .expect("logs in");
        let (_, step) = answer(&mut login, b"CLIENT_ERROR authentication failure\r\n");
        match step {
            Err(Error::Auth { server, problem }) => {
                assert_eq!((server.as_str(), problem), ("s:1", AuthProblem::Rejected));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn credentials_are_checked_and_never_shown() {
        assert!(Credentials::new("", "p").is_err());
        assert!(Credentials::new("a b", "p").is_err());
        assert!(Credentials::new("a:b", "p").is_err());
        assert!(Credentials::new("a", "").is_err());
        assert!(Credentials::new("a", "p\nq").is_err());
        let c = Credentials::parse("app:s3cr:et\nignored\n", "test").expect("parses");
        assert_eq!((c.user(), c.password.as_str()), ("app", "s3cr:et"));
        assert!(Credentials::parse("no-colon", "test").is_err());
        let shown = format!("{c:?} {:?}", Credentials::parse("app", "f"));
        assert!(!shown.contains("s3cr"), "{shown}");
        let e = Credentials::from_env("MEMSHARD_TEST_UNSET_VARIABLE").expect_err("unset");
        assert!(e.to_string().contains("$MEMSHARD_TEST_UNSET_VARIABLE"));
    }
}
