//! Cluster discovery: `config get cluster`, and the legacy `get AmazonElastiCache:cluster`
//! when the engine does not know the first (see [`crate::proto::discovery`]).

use super::{Ctx, Exchange, Step};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::Parsed;
use crate::proto::discovery::{
    CONFIG_GET_CLUSTER, ClusterConfig, DiscoveryError, DiscoveryReply, LEGACY_GET_CLUSTER,
    parse_discovery_reply,
};

/// Ask for the cluster configuration; on `ERROR` or a miss, ask the legacy way once, of the
/// configuration endpoint only.
pub(crate) struct Discover {
    state: State,
    legacy: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Ask,
    AwaitConfig,
    AwaitLegacy,
}

impl Discover {
    /// Of the configuration endpoint: the legacy key is asked for when the engine does not
    /// know `config get cluster`.
    pub(crate) fn new() -> Self {
        Discover {
            state: State::Ask,
            legacy: true,
        }
    }

    /// Of a data node: `config get cluster` only. On a data node the legacy key is an item
    /// like any other, which any user of the cache can write: taking it would let them point
    /// every client elsewhere.
    pub(crate) fn of_data_node() -> Self {
        Discover {
            legacy: false,
            ..Discover::new()
        }
    }
}

impl Exchange for Discover {
    type Output = ClusterConfig;

    fn command(&self) -> &'static str {
        "config get cluster"
    }

    fn restart(&mut self) {
        self.state = State::Ask;
    }

    fn step(
        &mut self,
        rb: &mut ReadBuf,
        out: &mut Vec<u8>,
        ctx: &Ctx,
    ) -> Result<Step<ClusterConfig>> {
        if self.state == State::Ask {
            out.extend_from_slice(CONFIG_GET_CLUSTER);
            self.state = State::AwaitConfig;
            return Ok(Step::Write);
        }
        let failed = |problem| Error::Discovery {
            endpoint: ctx.server.to_owned(),
            problem,
        };
        let (reply, used) = match parse_discovery_reply(rb.unread()).map_err(failed)? {
            Parsed::Incomplete => return Ok(Step::Read),
            Parsed::Done(reply, used) => (reply, used),
        };
        rb.consume(used);
        match (reply, self.state) {
            (DiscoveryReply::Config(c), _) => Ok(Step::Done(c)),
            (DiscoveryReply::Unsupported(_), State::AwaitConfig) if self.legacy => {
                out.extend_from_slice(LEGACY_GET_CLUSTER);
                self.state = State::AwaitLegacy;
                Ok(Step::Write)
            }
            (DiscoveryReply::Unsupported(reply), _) => {
                // in step: the connection stays usable, the node is just not an endpoint
                Ok(Step::Refused(failed(DiscoveryError::NotAnEndpoint {
                    reply,
                })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::meta::testing::{CTX, receive};

    /// Run `ex`, answering its requests with `replies` in turn: the requests written, and the
    /// outcome (a refusal as its error).
    fn drive_script(ex: &mut Discover, replies: &[&str]) -> (Vec<Vec<u8>>, Result<ClusterConfig>) {
        let (mut writes, mut rb) = (Vec::new(), ReadBuf::default());
        let mut replies = replies.iter();
        loop {
            let mut out = Vec::new();
            match ex.step(&mut rb, &mut out, &CTX) {
                Ok(Step::Write | Step::WriteThenRead) => writes.push(out),
                Ok(Step::Read) => match replies.next() {
                    Some(r) => receive(&mut rb, r.as_bytes()),
                    None => panic!("waits for a reply no script gives"),
                },
                Ok(Step::Done(c)) => return (writes, Ok(c)),
                Ok(Step::Refused(e)) | Err(e) => return (writes, Err(e)),
            }
        }
    }

    const BODY: &str = "5\nh1|10.0.0.1|11211 h2|10.0.0.2|11211\n";

    fn config(head: &str) -> String {
        format!("{head} 0 {}\r\n{BODY}\r\nEND\r\n", BODY.len())
    }

    #[test]
    fn asks_config_then_legacy_on_refusal() {
        let (writes, r) = drive_script(&mut Discover::new(), &[&config("CONFIG cluster")]);
        assert_eq!(writes, [CONFIG_GET_CLUSTER.to_vec()]);
        // the name its calls are counted and traced under
        assert_eq!(Discover::new().command(), "config get cluster");
        assert_eq!(r.expect("config").version, 5);
        for refusal in ["ERROR\r\n", "END\r\n"] {
            let (writes, r) = drive_script(
                &mut Discover::new(),
                &[refusal, &config("VALUE AmazonElastiCache:cluster")],
            );
            assert_eq!(
                writes,
                [CONFIG_GET_CLUSTER.to_vec(), LEGACY_GET_CLUSTER.to_vec()]
            );
            assert_eq!(r.expect("legacy").nodes.len(), 2);
        }
    }

    /// A data node is asked the new way only: its legacy key is anybody's item.
    #[test]
    fn a_data_node_is_never_asked_the_legacy_key() {
        for refusal in ["ERROR\r\n", "END\r\n"] {
            let (writes, r) = drive_script(
                &mut Discover::of_data_node(),
                &[refusal, &config("VALUE AmazonElastiCache:cluster")],
            );
            assert_eq!(writes, [CONFIG_GET_CLUSTER.to_vec()]);
            assert!(
                matches!(
                    r,
                    Err(Error::Discovery {
                        problem: DiscoveryError::NotAnEndpoint { .. },
                        ..
                    })
                ),
                "{r:?}"
            );
        }
    }

    /// On a new connection the exchange asks the new way first again.
    #[test]
    fn a_restart_asks_config_first() {
        let mut ex = Discover::new();
        let (writes, _) = drive_script(&mut ex, &["ERROR\r\n", "ERROR\r\n"]);
        assert_eq!(writes.len(), 2);
        ex.restart();
        let (writes, r) = drive_script(&mut ex, &[&config("CONFIG cluster")]);
        assert_eq!(writes, [CONFIG_GET_CLUSTER.to_vec()]);
        assert!(r.is_ok(), "{r:?}");
    }

    #[test]
    fn two_refusals_say_it_is_no_endpoint() {
        let (_, r) = drive_script(&mut Discover::new(), &["ERROR\r\n", "END\r\n"]);
        let e = r.expect_err("no endpoint");
        assert!(
            matches!(
                &e,
                Error::Discovery {
                    problem: DiscoveryError::NotAnEndpoint { .. },
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_malformed_reply_is_a_typed_error() {
        let (_, r) = drive_script(
            &mut Discover::new(),
            &["CONFIG cluster 0 3\r\n0\nx\r\nEND\r\n"],
        );
        assert!(
            matches!(
                r,
                Err(Error::Discovery {
                    problem: DiscoveryError::BadBody,
                    ..
                })
            ),
            "{r:?}"
        );
    }
}
