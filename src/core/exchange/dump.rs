//! `lru_crawler metadump all`: every key of one server, streamed to a sink line by line,
//! never held whole. A dump cut short (the sink had enough) leaves the rest of the dump on
//! the wire, so the connection is closed after it rather than pooled.

use super::{Ctx, Exchange, Step};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::outcome::DumpSummary;
use crate::proto::metadump::{DumpLine, DumpedKey, METADUMP_ALL, next_dump_line, parse_dump_line};

/// A metadump whose keys go to `sink`, at most `max_keys` of them.
pub(crate) struct Metadump<'a> {
    sink: &'a mut (dyn FnMut(DumpedKey) + Send),
    max_keys: usize,
    keys: usize,
    sent: bool,
    /// Cut short: the connection must not be reused.
    cut: bool,
}

impl<'a> Metadump<'a> {
    pub(crate) fn new(max_keys: usize, sink: &'a mut (dyn FnMut(DumpedKey) + Send)) -> Self {
        Metadump {
            sink,
            max_keys,
            keys: 0,
            sent: false,
            cut: false,
        }
    }

    fn summary(&self, complete: bool) -> DumpSummary {
        DumpSummary {
            keys: self.keys,
            complete,
        }
    }
}

impl Exchange for Metadump<'_> {
    type Output = DumpSummary;

    fn command(&self) -> &'static str {
        "metadump"
    }

    fn keep_connection(&self) -> bool {
        !self.cut
    }

    fn restart(&mut self) {
        // Only a stale pooled connection is retried, before any reply byte: no key was
        // given to the sink yet.
        self.keys = 0;
        self.sent = false;
        self.cut = false;
    }

    fn step(
        &mut self,
        rb: &mut ReadBuf,
        out: &mut Vec<u8>,
        ctx: &Ctx,
    ) -> Result<Step<DumpSummary>> {
        if !self.sent {
            out.extend_from_slice(METADUMP_ALL);
            self.sent = true;
            return Ok(Step::Write);
        }
        let broken =
            |e: crate::proto::metadump::DumpError| Error::protocol(ctx.server, e.to_string());
        loop {
            if self.keys >= self.max_keys {
                self.cut = true;
                let n = rb.unread().len();
                rb.consume(n);
                return Ok(Step::Done(self.summary(false)));
            }
            let Some((line, used)) = next_dump_line(rb.unread()).map_err(broken)? else {
                return Ok(Step::Read);
            };
            let parsed = parse_dump_line(line).map_err(broken)?;
            rb.consume(used);
            match parsed {
                DumpLine::Key(k) => {
                    self.keys += 1;
                    (self.sink)(k);
                }
                DumpLine::Started => {}
                DumpLine::End | DumpLine::Empty => return Ok(Step::Done(self.summary(true))),
                // one line and nothing after it: the stream is in step
                DumpLine::Refused(line) => {
                    let message = match self.keys {
                        0 => format!(
                            "{line}: the server does not list its keys (metadump needs memcached 1.4.31+ with its LRU crawler and dumps on); look keys up by name instead"
                        ),
                        n => format!("{line} after {n} keys: the dump is partial; try again later"),
                    };
                    return Ok(Step::Refused(Error::Server {
                        server: ctx.server.to_string(),
                        message,
                    }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::meta::testing::{CTX, receive};

    /// Run a dump of at most `max` keys answered by `replies` in turn (each a read's bytes):
    /// the keys given to the sink, the outcome, whether the connection may be reused, and the
    /// bytes left unread.
    fn dump(max: usize, replies: &[&str]) -> (Vec<Vec<u8>>, Result<DumpSummary>, bool, usize) {
        let mut keys = Vec::new();
        let mut sink = |k: DumpedKey| keys.push(k.key);
        let mut ex = Metadump::new(max, &mut sink);
        let mut rb = ReadBuf::default();
        let mut replies = replies.iter();
        let r = loop {
            let mut out = Vec::new();
            match ex.step(&mut rb, &mut out, &CTX) {
                Ok(Step::Write | Step::WriteThenRead) => assert_eq!(out, METADUMP_ALL),
                Ok(Step::Read) => match replies.next() {
                    Some(r) => receive(&mut rb, r.as_bytes()),
                    None => panic!("waits for a reply no script gives"),
                },
                Ok(Step::Done(c)) => break Ok(c),
                Ok(Step::Refused(e)) | Err(e) => break Err(e),
            }
        };
        let keep = ex.keep_connection();
        (keys, r, keep, rb.unread().len())
    }

    const LINE: &str = "exp=-1 la=1 cas=1 fetch=no cls=1 size=60\n";

    /// Lines split anywhere between reads; each key reaches the sink as it is read.
    #[test]
    fn keys_stream_to_the_sink_until_end() {
        // memcached 1.6.43 and later start with OK
        let a = format!("OK\r\nkey=a%20b {LINE}key=c");
        let b = format!("d {LINE}END\r\n");
        let (keys, r, keep, left) = dump(10, &[&a, &b]);
        assert_eq!(keys, [b"a b".to_vec(), b"cd".to_vec()]);
        let s = r.expect("dump");
        assert_eq!((s.keys, s.complete, keep, left), (2, true, true, 0));
        let (keys, r, keep, _) = dump(10, &["NOTSTARTED no items to crawl\r\n"]);
        assert!(keys.is_empty() && keep && r.expect("empty").complete);
    }

    /// At the most keys asked for the dump stops, drops what is buffered, and asks for its
    /// connection to be closed, not pooled.
    #[test]
    fn a_dump_cut_short_closes_its_connection() {
        let all = format!("key=a {LINE}key=b {LINE}key=c {LINE}");
        let (keys, r, keep, left) = dump(2, &[&all]);
        assert_eq!(keys.len(), 2);
        let s = r.expect("dump");
        assert_eq!((s.keys, s.complete, keep, left), (2, false, false, 0));
    }

    /// A refusal is in step (the connection stays usable) and says what the server said.
    #[test]
    fn a_refusal_names_the_reply() {
        for reply in [
            "ERROR metadump not allowed\r\n",
            "CLIENT_ERROR lru crawler disabled\r\n",
            "ERROR\r\n",
        ] {
            let (keys, r, keep, _) = dump(10, &[reply]);
            let e = r.expect_err("refused").to_string();
            assert!(keys.is_empty() && keep, "{reply:?}");
            assert!(e.contains(reply.trim_end()) && e.contains("1.4.31"), "{e}");
        }
        let partial = format!("key=a {LINE}ERROR locked try again later\r\n");
        let e = dump(10, &[&partial]).1.expect_err("partial").to_string();
        assert!(e.contains("after 1 keys"), "{e}");
        // garbage: out of step
        let e = dump(10, &["VALUE a 0 1\r\n"]).1.expect_err("garbage");
        assert!(matches!(e, Error::Protocol { .. }), "{e:?}");
    }
}
