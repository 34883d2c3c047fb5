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
use crate::error::{AuthProblem, Error, Result};
use crate::proto::{Parsed, Reply, Request, StoreCommand, parse_reply};
use crate::settings::{AuthScheme, Credentials};

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
        // MemCachier answers nothing before the login, which is its first command: a `set`
        // of key <user> with the password as the data. MemCachier reads only the key and the
        // data ("flags and exptime are accepted whatever their value", tests/fakes/README.md).
        // The exptime is -1: a plain memcached that takes the login for data (it answers
        // STORED too) stores an item already expired (doc/protocol.txt: a negative exptime
        // expires the item at once), so the password is never readable from it.
        if self.state == State::AskVersion
            && self.credentials.auth_scheme() == AuthScheme::MemCachier
        {
            memcachier_login(self.credentials, out);
            self.state = State::AwaitLogin;
            return Ok(Step::Write);
        }
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
            problem: match self.credentials.auth_scheme() {
                AuthScheme::MemCachier => AuthProblem::RejectedByMemCachier,
                _ => AuthProblem::Rejected,
            },
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
            (_, Reply::ClientError(_) | Reply::ServerError(_) | Reply::Error) => Err(rejected()),
            (_, other) => Err(super::exchange::unexpected(&other, ctx.server, "auth")),
        }
    }
}

/// MemCachier's login: `set <user> 0 -1 <len>\r\n<password>\r\n`. Not a
/// [`Request::Store`], whose exptime cannot be negative: no stored item may have it.
fn memcachier_login(c: &Credentials, out: &mut Vec<u8>) {
    let (user, password) = (c.user().as_bytes(), c.password().as_bytes());
    out.extend_from_slice(b"set ");
    out.extend_from_slice(user);
    out.extend_from_slice(format!(" 0 -1 {}\r\n", password.len()).as_bytes());
    out.extend_from_slice(password);
    out.extend_from_slice(b"\r\n");
}

/// The login of a new connection with `c`.
pub(crate) fn login_for(c: &Credentials) -> Box<Login<'_>> {
    Box::new(Login::new(c))
}

/// `e`, the failure of a new connection's login: a read that timed out is the login's (the
/// server accepted the connection and never answered it).
pub(crate) fn login_failed(e: Error) -> Error {
    match e {
        Error::Timeout {
            server,
            op: "read",
            after,
        } => Error::Timeout {
            server,
            op: "login",
            after,
        },
        e => e,
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
            caps: crate::settings::RequestCaps::DEFAULT,
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
    fn a_memcachier_login_is_the_first_command_and_only_stored_passes() {
        let c = Credentials::new("app", "pa ss")
            .expect("valid")
            .scheme(AuthScheme::MemCachier);
        let mut login = Login::new(&c);
        let mut out = Vec::new();
        let first = login.step(&mut ReadBuf::default(), &mut out, &ctx());
        assert!(matches!(first, Ok(Step::Write)));
        assert_eq!(out, b"set app 0 -1 5\r\npa ss\r\n");
        let (_, step) = answer(&mut login, b"STORED\r\n");
        assert!(matches!(step, Ok(Step::Done(()))));
        for refusal in [
            &b"CLIENT_ERROR authentication failure\r\n"[..],
            b"SERVER_ERROR no\r\n",
            b"ERROR\r\n",
        ] {
            let mut login = Login::new(&c);
            let _ = login.step(&mut ReadBuf::default(), &mut Vec::new(), &ctx());
            let (_, step) = answer(&mut login, refusal);
            assert!(
                matches!(
                    step,
                    Err(Error::Auth {
                        problem: AuthProblem::RejectedByMemCachier,
                        ..
                    })
                ),
                "{refusal:?}: {step:?}"
            );
        }
        let mut login = Login::new(&c);
        let _ = login.step(&mut ReadBuf::default(), &mut Vec::new(), &ctx());
        assert!(answer(&mut login, b"VALUE x 0 1\r\n").1.is_err());
        // a restart sends the login again
        login.restart();
        let mut again = Vec::new();
        let _ = login.step(&mut ReadBuf::default(), &mut again, &ctx());
        assert_eq!(again, b"set app 0 -1 5\r\npa ss\r\n");
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
    fn a_restarted_login_asks_again() {
        let c = Credentials::new("app", "pw").expect("valid");
        let mut login = Login::new(&c);
        assert_eq!(login.command(), "auth");
        login
            .step(&mut ReadBuf::default(), &mut Vec::new(), &ctx())
            .expect("asks");
        answer(&mut login, b"CLIENT_ERROR unauthenticated\r\n")
            .1
            .expect("logs in");
        login.restart();
        let mut out = Vec::new();
        let first = login.step(&mut ReadBuf::default(), &mut out, &ctx());
        assert!(matches!(first, Ok(Step::Write)));
        assert_eq!(out, b"version\r\n");
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
    fn a_login_that_times_out_says_so() {
        let after = std::time::Duration::from_millis(300);
        let read = Error::Timeout {
            server: "s:1".into(),
            op: "read",
            after,
        };
        let e = login_failed(read);
        assert!(
            matches!(&e, Error::Timeout { server, op: "login", after: a } if server == "s:1" && *a == after),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(
            message.contains("accepted the connection but never answered the login"),
            "{message}"
        );
        assert!(message.len() < 240, "{message}");
        let write = Error::Timeout {
            server: "s:1".into(),
            op: "write",
            after,
        };
        assert!(matches!(
            login_failed(write),
            Error::Timeout { op: "write", .. }
        ));
        let rejected = Error::Auth {
            server: "s:1".into(),
            problem: AuthProblem::Rejected,
        };
        assert!(matches!(
            login_failed(rejected),
            Error::Auth {
                problem: AuthProblem::Rejected,
                ..
            }
        ));
    }
}
