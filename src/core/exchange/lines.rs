//! Replies of many one-line replies: `stats`, and the error lines drained after a batch of
//! noreply sets. Each is bounded ([`LineBudget`]): a server that never ends one is taken for
//! broken, not followed into unbounded memory.

use super::{Ctx, Exchange, Step, WRITE_BATCH, refusal, unexpected};
use crate::core::readbuf::ReadBuf;
use crate::error::{Error, Result};
use crate::proto::meta::{MetaItem, MetaRequest, MetaStatus};
use crate::proto::{MAX_LINE, Parsed, Reply, Request, parse_reply};

/// An item over the server's limit in a noreply batch: which set it was is not knowable,
/// so the batch reports the server's words, as for any other error line.
const TOO_LARGE: &str = "SERVER_ERROR object too large for cache";

/// Most lines a `stats` reply may have, its `END` included. memcached's largest groups stay
/// far below: `stats items` and `stats slabs` have about 20 lines per slab class (at most 63
/// classes by default), `stats conns` about 6 per open connection (1024 by default, `-c`).
pub const STATS_MAX_LINES: usize = 16_384;

/// Most bytes a `stats` reply may have, its `END` included (about 60 bytes a line).
pub const STATS_MAX_BYTES: usize = 1024 * 1024;

/// How much a reply of many one-line replies may hold before the server is taken for broken:
/// beyond it the read fails with a Protocol error naming the server and the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineBudget {
    lines: usize,
    bytes: usize,
    what: &'static str,
    used_lines: usize,
    used_bytes: usize,
}

impl LineBudget {
    const STATS: LineBudget = LineBudget {
        lines: STATS_MAX_LINES,
        bytes: STATS_MAX_BYTES,
        what: "stats",
        used_lines: 0,
        used_bytes: 0,
    };

    /// The replies to `requests` noreply commands and the `version` after them: at most one
    /// error line per request, then the version line.
    fn noreply(requests: usize) -> LineBudget {
        let lines = requests.saturating_add(1);
        LineBudget {
            lines,
            bytes: lines.saturating_mul(MAX_LINE + 2),
            what: "noreply commands and their version",
            used_lines: 0,
            used_bytes: 0,
        }
    }

    /// Count a line of `used` bytes; past the budget, the error.
    fn take(&mut self, used: usize, server: &str) -> Result<()> {
        self.used_lines = self.used_lines.saturating_add(1);
        self.used_bytes = self.used_bytes.saturating_add(used);
        if self.used_lines <= self.lines && self.used_bytes <= self.bytes {
            return Ok(());
        }
        Err(Error::protocol(
            server,
            format!(
                "the reply to {} reached {} lines and {} bytes without its end; a reply may have at most {} lines and {} bytes, so the connection was dropped",
                self.what, self.used_lines, self.used_bytes, self.lines, self.bytes
            ),
        ))
    }
}

/// The next line, counted against `budget`.
fn next_line(rb: &mut ReadBuf, budget: &mut LineBudget, server: &str) -> Result<Option<Reply>> {
    match parse_reply(rb.unread()).map_err(Error::from)? {
        Parsed::Incomplete => Ok(None),
        Parsed::Done(reply, used) => {
            budget.take(used, server)?;
            rb.consume(used);
            Ok(Some(reply))
        }
    }
}

/// `stats [group]`.
#[derive(Debug)]
pub(crate) struct StatsExchange<'a> {
    group: Option<&'a str>,
    /// Asked by the client itself (the item size limit): a failure says nothing of the
    /// server's health.
    own: bool,
    budget: LineBudget,
    stats: Vec<(String, String)>,
    sent: bool,
}

impl<'a> StatsExchange<'a> {
    /// `Err` for a group that is not one word (it would smuggle a second command in).
    pub(crate) fn check_group(group: Option<&str>) -> Result<()> {
        match group.filter(|g| g.is_empty() || g.bytes().any(|b| b <= b' ' || b == 0x7f)) {
            Some(g) => Err(Error::Config(format!("stats group {g:?} must be one word"))),
            None => Ok(()),
        }
    }

    pub(crate) fn new(group: Option<&'a str>) -> Self {
        StatsExchange {
            group,
            own: false,
            budget: LineBudget::STATS,
            stats: Vec::new(),
            sent: false,
        }
    }
}

impl StatsExchange<'static> {
    /// `stats settings`, asked by the client of its own accord (see
    /// [`Exchange::counts_for_health`]).
    pub(crate) fn settings() -> Self {
        StatsExchange {
            own: true,
            ..StatsExchange::new(Some("settings"))
        }
    }
}

impl Exchange for StatsExchange<'_> {
    type Output = Vec<(String, String)>;

    fn counts_for_health(&self) -> bool {
        !self.own
    }

    fn command(&self) -> &'static str {
        "stats"
    }

    fn restart(&mut self) {
        *self = StatsExchange {
            own: self.own,
            ..StatsExchange::new(self.group)
        };
    }

    fn step(
        &mut self,
        rb: &mut ReadBuf,
        out: &mut Vec<u8>,
        ctx: &Ctx,
    ) -> Result<Step<Self::Output>> {
        if !self.sent {
            Request::Stats { group: self.group }.encode(out);
            self.sent = true;
            return Ok(Step::Write);
        }
        while let Some(reply) = next_line(rb, &mut self.budget, ctx.server)? {
            match reply {
                Reply::Stat(k, v) => self.stats.push((k, v)),
                Reply::End => return Ok(Step::Done(std::mem::take(&mut self.stats))),
                other => return refusal(other, ctx.server, "stats").map(Step::Refused),
            }
        }
        Ok(Step::Read)
    }
}

/// Sets with `noreply`, each batch followed by `version` to learn that the server has read
/// it. memcached still answers errors to noreply commands; a server that sent any fails the
/// whole exchange (which key failed is not knowable).
pub(crate) struct NoreplySets<'a> {
    requests: Vec<Request<'a>>,
    errors: Vec<String>,
    written: usize,
    budget: Option<LineBudget>,
}

impl<'a> NoreplySets<'a> {
    /// `requests` must be noreply storage commands.
    pub(crate) fn new(requests: Vec<Request<'a>>) -> Self {
        NoreplySets {
            requests,
            errors: Vec::new(),
            written: 0,
            budget: None,
        }
    }
}

impl Exchange for NoreplySets<'_> {
    type Output = ();

    fn command(&self) -> &'static str {
        "set_multi_noreply"
    }

    fn restart(&mut self) {
        self.errors.clear();
        self.written = 0;
        self.budget = None;
    }

    fn key_count(&self) -> usize {
        self.requests.len()
    }

    fn key(&self, i: usize) -> Option<&[u8]> {
        self.requests.get(i).and_then(|r| super::key_of(r, 0))
    }

    fn step(&mut self, rb: &mut ReadBuf, out: &mut Vec<u8>, ctx: &Ctx) -> Result<Step<()>> {
        loop {
            let Some(budget) = self.budget.as_mut() else {
                if self.written == self.requests.len() {
                    let Some(first) = self.errors.first() else {
                        return Ok(Step::Done(()));
                    };
                    return Ok(Step::Refused(Error::Server {
                        server: ctx.server.to_string(),
                        message: format!(
                            "{} of {} noreply sets failed, first: {first}",
                            self.errors.len(),
                            self.requests.len(),
                        ),
                    }));
                }
                let end = (self.written + WRITE_BATCH).min(self.requests.len());
                let meta = ctx.protocol == crate::Protocol::Meta;
                for r in &self.requests[self.written..end] {
                    match meta {
                        true => super::meta::encode(r, None, true, out),
                        false => r.encode(out),
                    }
                }
                match meta {
                    // quiet mode hides each success; `mn` marks the end of the batch
                    true => MetaRequest::noop().encode_unchecked(out),
                    false => Request::Version.encode(out),
                }
                self.budget = Some(LineBudget::noreply(end - self.written));
                self.written = end;
                return Ok(Step::Write);
            };
            if ctx.protocol == crate::Protocol::Meta {
                let Some((item, used)) = super::meta::next(rb, ctx)? else {
                    return Ok(Step::Read);
                };
                budget.take(used, ctx.server)?;
                rb.consume(used);
                match item {
                    MetaItem::Reply(r) if r.status == MetaStatus::Noop => self.budget = None,
                    MetaItem::Reply(r) => self.errors.push(format!("{:?}", r.status)),
                    MetaItem::Failed(reply) => {
                        match super::meta::refused(reply, ctx, "noreply set")? {
                            Error::Server { message, .. } => self.errors.push(message),
                            Error::ItemTooLarge { .. } => self.errors.push(TOO_LARGE.into()),
                            // memcached -Y answers only the first command of a connection that has
                            // not logged in (proto_text.c): no `MN` is coming.
                            e @ Error::Auth { .. } => return Ok(Step::Refused(e)),
                            _ => {}
                        }
                    }
                }
                continue;
            }
            let Some(reply) = next_line(rb, budget, ctx.server)? else {
                return Ok(Step::Read);
            };
            match reply {
                Reply::Version(_) => self.budget = None,
                Reply::Error | Reply::ClientError(_) | Reply::ServerError(_) => {
                    match refusal(reply, ctx.server, "noreply set")? {
                        Error::Server { message, .. } => self.errors.push(message),
                        Error::ItemTooLarge { .. } => self.errors.push(TOO_LARGE.into()),
                        e @ Error::Auth { .. } => return Ok(Step::Refused(e)),
                        _ => {}
                    }
                }
                other => return Err(unexpected(&other, ctx.server, "noreply set")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::exchange::meta::testing::{CTX, receive};
    use crate::proto::StoreCommand;

    const TEXT: Ctx<'static> = Ctx {
        protocol: crate::Protocol::Text,
        ..CTX
    };

    /// Step `ex` to write, then feed `reply` as it arrives in reads of at most 4 KiB, writing
    /// whenever it asks: all it wrote, and the step after the last byte (or the first that is
    /// neither a read nor a write).
    fn run<E: Exchange>(ex: &mut E, reply: &[u8], ctx: &Ctx) -> (Vec<u8>, Result<Step<E::Output>>) {
        let (mut rb, mut out) = (ReadBuf::default(), Vec::new());
        assert!(matches!(ex.step(&mut rb, &mut out, ctx), Ok(Step::Write)));
        let mut chunks = reply.chunks(4096);
        let mut step = ex.step(&mut rb, &mut out, ctx);
        loop {
            match step {
                Ok(Step::Write) => {}
                Ok(Step::Read) => match chunks.next() {
                    Some(chunk) => receive(&mut rb, chunk),
                    None => break,
                },
                _ => break,
            }
            step = ex.step(&mut rb, &mut out, ctx);
        }
        (out, step)
    }

    /// A stats reply of `stat_lines` lines, then `END`.
    fn stats_reply(stat_lines: usize, line_len: usize) -> Vec<u8> {
        let mut r = Vec::new();
        for i in 0..stat_lines {
            let head = format!("STAT k{i} ");
            r.extend(head.as_bytes());
            r.extend(std::iter::repeat_n(b'v', line_len - head.len() - 2));
            r.extend(b"\r\n");
        }
        r.extend(b"END\r\n");
        r
    }

    #[test]
    fn stats_are_read_to_their_end() {
        let mut ex = StatsExchange::new(Some("slabs"));
        let (req, step) = run(&mut ex, b"STAT pid 7\r\nSTAT uptime 12\r\nEND\r\n", &TEXT);
        assert_eq!(req, b"stats slabs\r\n");
        let Ok(Step::Done(stats)) = step else {
            panic!("{step:?}")
        };
        assert_eq!(
            stats,
            [("pid".into(), "7".into()), ("uptime".into(), "12".into())]
        );
        let (_, step) = run(&mut StatsExchange::new(None), b"ERROR\r\n", &TEXT);
        assert!(matches!(step, Ok(Step::Refused(_))), "{step:?}");
        assert_eq!(StatsExchange::new(None).command(), "stats");
        for bad in ["", "a b", "a\r\nflush_all", "a\x7f"] {
            assert!(StatsExchange::check_group(Some(bad)).is_err(), "{bad:?}");
        }
        assert!(StatsExchange::check_group(Some("items")).is_ok());
        assert!(StatsExchange::check_group(None).is_ok());
    }

    #[test]
    fn a_stats_reply_may_reach_its_limits_and_not_pass_them() {
        // lines: STATS_MAX_LINES with the END, and one more
        let (_, step) = run(
            &mut StatsExchange::new(None),
            &stats_reply(STATS_MAX_LINES - 1, 16),
            &TEXT,
        );
        assert!(
            matches!(step, Ok(Step::Done(ref s)) if s.len() == STATS_MAX_LINES - 1),
            "{step:?}"
        );
        let (_, step) = run(
            &mut StatsExchange::new(None),
            &stats_reply(STATS_MAX_LINES, 16),
            &TEXT,
        );
        let e = format!("{:?}", step.expect_err("one line too many"));
        assert!(
            e.contains(&format!("at most {STATS_MAX_LINES} lines")),
            "{e}"
        );
        // bytes: exactly STATS_MAX_BYTES with the END, and one more
        let line = 1000;
        let lines = (STATS_MAX_BYTES - 5) / line;
        let mut exact = stats_reply(lines, line);
        let short = STATS_MAX_BYTES - exact.len();
        let tail = stats_reply(1, short);
        exact.truncate(exact.len() - 5);
        exact.extend(&tail);
        assert_eq!(exact.len(), STATS_MAX_BYTES);
        let (_, step) = run(&mut StatsExchange::new(None), &exact, &TEXT);
        assert!(
            matches!(step, Ok(Step::Done(ref s)) if s.len() == lines + 1),
            "{step:?}"
        );
        let mut over = exact[..exact.len() - 7].to_vec();
        over.extend(b"v\r\nEND\r\n");
        assert_eq!(over.len(), STATS_MAX_BYTES + 1);
        let (_, step) = run(&mut StatsExchange::new(None), &over, &TEXT);
        let e = format!("{:?}", step.expect_err("one byte too many"));
        assert!(e.contains(&format!("{STATS_MAX_BYTES} bytes")), "{e}");
    }

    fn sets<'a, K: AsRef<str>>(keys: &'a [K]) -> NoreplySets<'a> {
        NoreplySets::new(
            keys.iter()
                .map(|k| Request::Store {
                    cmd: StoreCommand::Set,
                    key: k.as_ref().as_bytes(),
                    flags: 0,
                    exptime: 0,
                    value: b"v",
                    noreply: true,
                })
                .collect(),
        )
    }

    #[test]
    fn noreply_sets_end_at_the_version_and_report_error_lines() {
        let (req, step) = run(&mut sets(&["a", "b"]), b"VERSION 1.6.21\r\n", &TEXT);
        assert_eq!(
            req,
            b"set a 0 0 1 noreply\r\nv\r\nset b 0 0 1 noreply\r\nv\r\nversion\r\n"
        );
        assert!(matches!(step, Ok(Step::Done(()))), "{step:?}");
        let (_, step) = run(
            &mut sets(&["a", "b", "c"]),
            b"SERVER_ERROR out of memory storing object\r\nVERSION 1.6.21\r\n",
            &TEXT,
        );
        let Ok(Step::Refused(Error::Server { message, .. })) = step else {
            panic!("{step:?}")
        };
        assert_eq!(
            message,
            "1 of 3 noreply sets failed, first: SERVER_ERROR out of memory storing object"
        );
        assert_eq!(sets(&["a"]).command(), "set_multi_noreply");
    }

    /// On a new connection an exchange starts over: nothing of the first one's reply is kept.
    #[test]
    fn a_restarted_exchange_starts_over() {
        let mut ex = StatsExchange::new(None);
        let (_, step) = run(&mut ex, b"STAT pid 7\r\n", &TEXT);
        assert!(matches!(step, Ok(Step::Read)), "{step:?}");
        ex.restart();
        let (req, step) = run(&mut ex, b"STAT uptime 12\r\nEND\r\n", &TEXT);
        assert_eq!(req, b"stats\r\n");
        let Ok(Step::Done(stats)) = step else {
            panic!("{step:?}")
        };
        assert_eq!(stats, [("uptime".into(), "12".into())]);
        let mut ex = sets(&["a", "b"]);
        let (_, step) = run(&mut ex, b"SERVER_ERROR out of memory\r\n", &TEXT);
        assert!(matches!(step, Ok(Step::Read)), "{step:?}");
        ex.restart();
        let (req, step) = run(&mut ex, b"VERSION 1.6.21\r\n", &TEXT);
        assert!(req.starts_with(b"set a 0 0 1 noreply\r\n"), "{req:?}");
        assert!(matches!(step, Ok(Step::Done(()))), "{step:?}");
    }

    #[test]
    fn quiet_meta_sets_end_at_the_noop_and_report_what_failed() {
        let (req, step) = run(&mut sets(&["a", "b"]), b"MN\r\n", &CTX);
        let req = String::from_utf8(req).expect("text");
        assert!(
            req.starts_with("ms a 1 ") && req.ends_with("mn\r\n"),
            "{req}"
        );
        assert_eq!(req.matches(" q").count(), 2, "{req}");
        assert!(matches!(step, Ok(Step::Done(()))), "{step:?}");
        let (_, step) = run(&mut sets(&["a", "b"]), b"NS\r\nMN\r\n", &CTX);
        let Ok(Step::Refused(Error::Server { message, .. })) = step else {
            panic!("{step:?}")
        };
        assert!(
            message.starts_with("1 of 2 noreply sets failed, first: NotStored"),
            "{message}"
        );
    }

    #[test]
    fn a_noreply_batch_gets_one_error_line_per_request_and_its_version() {
        let mut reply = Vec::new();
        for _ in 0..3 {
            reply.extend(b"SERVER_ERROR out of memory\r\n");
        }
        reply.extend(b"VERSION 1\r\n");
        let (_, step) = run(&mut sets(&["a", "b"]), &reply, &TEXT);
        let e = format!("{:?}", step.expect_err("a line more than the requests"));
        // The byte budget is every line at its longest, as the error says.
        let bytes = 3 * (crate::proto::MAX_LINE + 2);
        assert!(
            e.contains(&format!("at most 3 lines and {bytes} bytes")),
            "{e}"
        );
    }

    /// Each line may be as long as a reply line can be: a batch's byte budget is its lines at
    /// their longest.
    #[test]
    fn a_noreply_batch_may_send_lines_of_the_longest_length() {
        use crate::proto::MAX_LINE;
        let mut reply = b"SERVER_ERROR ".to_vec();
        reply.resize(MAX_LINE, b'x');
        reply.extend(b"\r\nVERSION ");
        reply.resize(2 * MAX_LINE + 2, b'1');
        reply.extend(b"\r\n");
        let (_, step) = run(&mut sets(&["a"]), &reply, &TEXT);
        assert!(
            matches!(step, Ok(Step::Refused(Error::Server { .. }))),
            "{step:?}"
        );
    }

    /// memcached -Y answers the first command of a connection that has not logged in and
    /// nothing after it: the batch ends at that line, on either protocol, as the auth error.
    #[test]
    fn an_unauthenticated_noreply_batch_ends_at_the_refusal() {
        for ctx in [TEXT, CTX] {
            let (_, step) = run(
                &mut sets(&["a", "b"]),
                b"CLIENT_ERROR unauthenticated\r\n",
                &ctx,
            );
            assert!(
                matches!(
                    step,
                    Ok(Step::Refused(Error::Auth {
                        problem: crate::error::AuthProblem::Required,
                        ..
                    }))
                ),
                "{:?}: {step:?}",
                ctx.protocol
            );
        }
    }

    /// Each batch of noreply sets has its own budget: the second batch's lines are bounded by
    /// the second batch's requests.
    #[test]
    fn each_noreply_batch_is_bounded_by_its_own_requests() {
        let keys: Vec<String> = (0..WRITE_BATCH + 50).map(|i| format!("k{i}")).collect();
        let mut reply = b"VERSION 1\r\n".to_vec();
        for _ in 0..=50 {
            reply.extend(b"SERVER_ERROR out of memory\r\n");
        }
        reply.extend(b"VERSION 1\r\n");
        let (req, step) = run(&mut sets(&keys), &reply, &TEXT);
        assert_eq!(req.windows(8).filter(|w| w == b"version\r").count(), 2);
        let e = format!("{:?}", step.expect_err("51 error lines for 50 sets"));
        assert!(e.contains("at most 51 lines"), "{e}");
    }
}
