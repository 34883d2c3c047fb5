//! Cluster auto discovery, as AWS ElastiCache and GCP Memorystore for Memcached serve it: the
//! requests, the reply framing and the cluster configuration inside it.
//!
//! Engines 1.4.14 and later answer `config get cluster` with
//!
//! ```text
//! CONFIG cluster 0 <len>\r\n
//! <version>\n
//! <host>|<ip>|<port> <host>|<ip>|<port> ...\n
//! \r\nEND\r\n
//! ```
//!
//! where `<len>` counts the body's bytes, its final `\n` included. Older engines answer `ERROR`
//! and keep the same body as the item `AmazonElastiCache:cluster`, read with a plain `get`
//! (a `VALUE` block). Memorystore's discovery endpoint answers the first form; its entries may
//! end with a space, and its host field holds the IP. (The AWS clients' parsers:
//! `ClusterConfigurationParser.java` in the Java client, `libmemcached/config.cc` in the
//! libmemcached fork.)
//!
//! Parsing is strict: every malformed reply is a [`DiscoveryError`] naming what is wrong, and
//! nothing half-read is ever used.

use super::Parsed;

/// The request of engines 1.4.14 and later.
pub const CONFIG_GET_CLUSTER: &[u8] = b"config get cluster\r\n";
/// The request of older engines: the configuration as an item.
pub const LEGACY_GET_CLUSTER: &[u8] = b"get AmazonElastiCache:cluster\r\n";

/// Longest configuration body accepted: 1 MiB holds about 20,000 nodes.
pub const MAX_CONFIG_LEN: usize = 1024 * 1024;

/// One node of a cluster configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusterNode {
    /// The host name field (may be empty; Memorystore puts the IP here).
    pub host: String,
    /// The IP field (may be empty: the node is then reached by its host name).
    pub ip: String,
    /// The port.
    pub port: u16,
}

impl ClusterNode {
    /// The address to connect to: the IP, or the host name when the IP field is empty (as the
    /// AWS clients do).
    pub fn reach(&self) -> &str {
        if self.ip.is_empty() {
            &self.host
        } else {
            &self.ip
        }
    }
}

/// A cluster configuration: its version and its nodes, in the order the reply lists them
/// (modulo placements depend on that order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The configuration version, at least 1; it only moves forward.
    pub version: u64,
    /// The nodes, in reply order.
    pub nodes: Vec<ClusterNode>,
}

/// What a discovery request was answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryReply {
    /// A configuration.
    Config(ClusterConfig),
    /// The server does not know the request (`ERROR`, or a miss for the legacy item): try the
    /// other request, or another node.
    Unsupported(String),
}

/// A discovery reply that cannot be used. The connection that read it must be dropped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The reply is neither `CONFIG cluster …`, `VALUE …`, `ERROR` nor a miss.
    #[error("unexpected discovery reply {line:?}; is this a configuration endpoint?")]
    UnexpectedReply {
        /// The first line, cut to 80 bytes.
        line: String,
    },
    /// The header's length is not a number, or above [`MAX_CONFIG_LEN`].
    #[error("discovery reply declares a length of {text:?}; expected 1 to {MAX_CONFIG_LEN} bytes")]
    BadLength {
        /// The length as sent.
        text: String,
    },
    /// The body is not followed by `\r\nEND\r\n` where the declared length ends.
    #[error(
        "discovery reply's declared length {declared} does not end at its body; expected \\r\\nEND\\r\\n there"
    )]
    LengthMismatch {
        /// The length the header declared.
        declared: usize,
    },
    /// The body is not two `\n`-terminated lines (version, then nodes).
    #[error("discovery body must be two lines, a version and the nodes, each ending in \\n")]
    BadBody,
    /// The version is not a number.
    #[error("discovery version {text:?} is not a number")]
    BadVersion {
        /// The version line.
        text: String,
    },
    /// Version 0: the AWS clients never apply it.
    #[error("discovery version is 0; versions start at 1")]
    ZeroVersion,
    /// The node line lists no node.
    #[error("discovery reply lists no node; keeping the current ones")]
    EmptyList,
    /// A node entry is not `host|ip|port`.
    #[error("discovery node {entry:?} is not host|ip|port")]
    MissingSeparator {
        /// The entry as sent.
        entry: String,
    },
    /// A node's port is not 1 to 65535.
    #[error("discovery node {entry:?} has a bad port; expected 1 to 65535")]
    BadPort {
        /// The entry as sent.
        entry: String,
    },
    /// A node has neither a host name nor an IP.
    #[error("discovery node {entry:?} has neither host nor IP")]
    NoAddress {
        /// The entry as sent.
        entry: String,
    },
    /// The body is not UTF-8.
    #[error("discovery body is not UTF-8")]
    NotUtf8,
    /// Neither request was understood: the server is not a cluster configuration endpoint.
    #[error(
        "the server answered {reply:?} to both discovery requests; give a cluster configuration endpoint"
    )]
    NotAnEndpoint {
        /// The last answer.
        reply: String,
    },
}

/// Parse the reply to [`CONFIG_GET_CLUSTER`] or [`LEGACY_GET_CLUSTER`] at the start of `buf`.
///
/// ```
/// use memshard::proto::discovery::{parse_discovery_reply, DiscoveryReply};
/// use memshard::proto::Parsed;
/// let body = "12\ncache-1|10.0.0.1|11211 cache-2|10.0.0.2|11211\n";
/// let reply = format!("CONFIG cluster 0 {}\r\n{body}\r\nEND\r\n", body.len());
/// let Parsed::Done(DiscoveryReply::Config(c), used) =
///     parse_discovery_reply(reply.as_bytes())? else { panic!() };
/// assert_eq!((c.version, c.nodes.len(), used), (12, 2, reply.len()));
/// assert_eq!(c.nodes[1].reach(), "10.0.0.2");
/// # Ok::<(), memshard::proto::discovery::DiscoveryError>(())
/// ```
pub fn parse_discovery_reply(buf: &[u8]) -> Result<Parsed<DiscoveryReply>, DiscoveryError> {
    let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else {
        if buf.len() > super::MAX_LINE {
            return Err(unexpected(buf));
        }
        return Ok(Parsed::Incomplete);
    };
    let line = &buf[..eol];
    let after = eol + 2;
    let mut words = line.split(|&b| b == b' ');
    let len_word = match (words.next(), words.next()) {
        (Some(b"ERROR"), None) => return Ok(Parsed::Done(unsupported(line), after)),
        // the legacy item is missing: a cluster-mode-disabled cache or a plain memcached
        (Some(b"END"), None) => return Ok(Parsed::Done(unsupported(line), after)),
        (Some(b"CLIENT_ERROR" | b"SERVER_ERROR"), _) => {
            return Ok(Parsed::Done(unsupported(line), after));
        }
        (Some(b"CONFIG"), Some(b"cluster"))
        | (Some(b"VALUE"), Some(b"AmazonElastiCache:cluster")) => {
            match (words.next(), words.next(), words.next()) {
                (Some(_flags), Some(len), None) => len,
                _ => return Err(unexpected(line)),
            }
        }
        _ => return Err(unexpected(line)),
    };
    let len = std::str::from_utf8(len_word)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| (1..=MAX_CONFIG_LEN).contains(&n))
        .ok_or_else(|| DiscoveryError::BadLength {
            text: String::from_utf8_lossy(len_word).into_owned(),
        })?;
    const TRAILER: &[u8] = b"\r\nEND\r\n";
    let end = after + len;
    if buf.len() < end + TRAILER.len() {
        // A body ends its lines with `\n` alone: a `\r` inside the declared length is the
        // trailer come early, so the declared length is too long (refused now, not at the
        // read timeout).
        let seen = &buf[after.min(buf.len())..end.min(buf.len())];
        if seen.contains(&b'\r') {
            return Err(DiscoveryError::LengthMismatch { declared: len });
        }
        return Ok(Parsed::Incomplete);
    }
    if &buf[end..end + TRAILER.len()] != TRAILER {
        return Err(DiscoveryError::LengthMismatch { declared: len });
    }
    let config = parse_cluster_config(&buf[after..end])?;
    Ok(Parsed::Done(
        DiscoveryReply::Config(config),
        end + TRAILER.len(),
    ))
}

/// Parse a configuration body: `<version>\n<host|ip|port> …\n`.
///
/// ```
/// let c = memshard::proto::discovery::parse_cluster_config(b"3\nh|10.0.0.9|11212 \n")?;
/// assert_eq!((c.version, c.nodes[0].port), (3, 11212));
/// # Ok::<(), memshard::proto::discovery::DiscoveryError>(())
/// ```
pub fn parse_cluster_config(body: &[u8]) -> Result<ClusterConfig, DiscoveryError> {
    let text = std::str::from_utf8(body).map_err(|_| DiscoveryError::NotUtf8)?;
    let mut lines = text.split('\n');
    let (Some(version), Some(nodes), Some(""), None) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return Err(DiscoveryError::BadBody);
    };
    // digits only: `+5` or ` 5` would parse, and no AWS client writes them
    let version = version.trim_end_matches('\r');
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DiscoveryError::BadVersion {
            text: version.to_owned(),
        });
    }
    let version: u64 = version.parse().map_err(|_| DiscoveryError::BadVersion {
        text: version.to_owned(),
    })?;
    if version == 0 {
        return Err(DiscoveryError::ZeroVersion);
    }
    let nodes = nodes
        .trim_end_matches('\r')
        .split(' ')
        .filter(|e| !e.is_empty())
        .map(parse_node)
        .collect::<Result<Vec<_>, _>>()?;
    if nodes.is_empty() {
        return Err(DiscoveryError::EmptyList);
    }
    Ok(ClusterConfig { version, nodes })
}

fn parse_node(entry: &str) -> Result<ClusterNode, DiscoveryError> {
    let mut parts = entry.split('|');
    let (Some(host), Some(ip), Some(port), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(DiscoveryError::MissingSeparator {
            entry: entry.to_owned(),
        });
    };
    let port = (!port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        .then(|| port.parse::<u16>().ok())
        .flatten()
        .filter(|&p| p != 0)
        .ok_or_else(|| DiscoveryError::BadPort {
            entry: entry.to_owned(),
        })?;
    if host.is_empty() && ip.is_empty() {
        return Err(DiscoveryError::NoAddress {
            entry: entry.to_owned(),
        });
    }
    Ok(ClusterNode {
        host: host.to_owned(),
        ip: ip.to_owned(),
        port,
    })
}

fn unsupported(line: &[u8]) -> DiscoveryReply {
    DiscoveryReply::Unsupported(String::from_utf8_lossy(line).into_owned())
}

fn unexpected(line: &[u8]) -> DiscoveryError {
    DiscoveryError::UnexpectedReply {
        line: String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(head: &str, body: &str) -> String {
        format!("{head} 0 {}\r\n{body}\r\nEND\r\n", body.len())
    }

    fn parse(s: &str) -> Result<Parsed<DiscoveryReply>, DiscoveryError> {
        parse_discovery_reply(s.as_bytes())
    }

    #[test]
    fn both_replies_give_the_nodes_in_reply_order() {
        let body = "7\nb.cache|10.0.0.2|11211 a.cache|10.0.0.1|11212\n";
        for head in ["CONFIG cluster", "VALUE AmazonElastiCache:cluster"] {
            let r = framed(head, body);
            let Ok(Parsed::Done(DiscoveryReply::Config(c), used)) = parse(&r) else {
                panic!("{head}: {:?}", parse(&r));
            };
            assert_eq!(used, r.len());
            assert_eq!(c.version, 7);
            let names: Vec<_> = c.nodes.iter().map(|n| (n.host.as_str(), n.port)).collect();
            assert_eq!(names, [("b.cache", 11211), ("a.cache", 11212)]);
        }
    }

    #[test]
    fn every_prefix_of_a_reply_is_incomplete() {
        let r = framed("CONFIG cluster", "1\nh|10.0.0.1|11211\n");
        for cut in 0..r.len() {
            assert_eq!(parse(&r[..cut]), Ok(Parsed::Incomplete), "cut at {cut}");
        }
    }

    #[test]
    fn memorystore_entries_may_end_with_a_space() {
        let c = parse_cluster_config(b"2\n10.0.0.1|10.0.0.1|11211 10.0.0.2|10.0.0.2|11211 \n")
            .expect("parses");
        assert_eq!(c.nodes.len(), 2);
    }

    #[test]
    fn refusals_and_misses_ask_for_another_request() {
        for r in [
            "ERROR\r\n",
            "END\r\n",
            "CLIENT_ERROR bad command line format\r\n",
        ] {
            assert!(
                matches!(parse(r), Ok(Parsed::Done(DiscoveryReply::Unsupported(_), n)) if n == r.len()),
                "{r:?}"
            );
        }
    }

    #[test]
    fn each_malformed_reply_has_its_error() {
        use DiscoveryError::*;
        type Is = fn(&DiscoveryError) -> bool;
        let cases: [(&str, Is); 12] = [
            ("1\nh|10.0.0.1\n", |e| matches!(e, MissingSeparator { .. })),
            ("1\nh|10.0.0.1|11211|x\n", |e| {
                matches!(e, MissingSeparator { .. })
            }),
            ("1\nh|10.0.0.1|port\n", |e| matches!(e, BadPort { .. })),
            ("1\nh|10.0.0.1|0\n", |e| matches!(e, BadPort { .. })),
            ("1\nh|10.0.0.1|65536\n", |e| matches!(e, BadPort { .. })),
            ("1\nh|10.0.0.1|+80\n", |e| matches!(e, BadPort { .. })),
            ("0\nh|10.0.0.1|11211\n", |e| matches!(e, ZeroVersion)),
            ("x\nh|10.0.0.1|11211\n", |e| matches!(e, BadVersion { .. })),
            ("1\n\n", |e| matches!(e, EmptyList)),
            ("1\n  \n", |e| matches!(e, EmptyList)),
            ("1\nh|10.0.0.1|11211", |e| matches!(e, BadBody)),
            ("1\n||11211\n", |e| matches!(e, NoAddress { .. })),
        ];
        for (body, is) in cases {
            let e = parse(&framed("CONFIG cluster", body)).expect_err(body);
            assert!(is(&e), "{body:?} gave {e:?}");
            assert!(e.to_string().len() < 200);
        }
        let e = parse_cluster_config(b"1\nh|10.0.0.1|11211\nextra\n").expect_err("3 lines");
        assert_eq!(e, BadBody);
        assert_eq!(parse_cluster_config(b"1\n\xff|a|1\n"), Err(NotUtf8));
        assert!(parse_cluster_config(b"18446744073709551616\nh|i|1\n").is_err());
    }

    #[test]
    fn a_length_that_does_not_end_the_body_is_refused() {
        let body = "1\nh|10.0.0.1|11211\n";
        // too short: the trailer is looked for inside the body
        let short = format!("CONFIG cluster 0 {}\r\n{body}\r\nEND\r\n", body.len() - 1);
        assert!(matches!(
            parse(&short),
            Err(DiscoveryError::LengthMismatch { .. })
        ));
        // too long, whole reply received
        let long = format!("CONFIG cluster 0 {}\r\n{body}\r\nEND\r\n", body.len() + 1);
        assert!(matches!(
            parse(&long),
            Err(DiscoveryError::LengthMismatch { .. })
        ));
        // too long by much: refused once the bytes after the body show no trailer
        let far = format!("CONFIG cluster 0 500\r\n{body}\r\nEND\r\n");
        assert!(matches!(
            parse(&far),
            Err(DiscoveryError::LengthMismatch { .. })
        ));
        for bad in ["0", "x", "-1", "99999999999"] {
            let r = format!("CONFIG cluster 0 {bad}\r\n{body}\r\nEND\r\n");
            assert!(
                matches!(parse(&r), Err(DiscoveryError::BadLength { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn anything_else_is_unexpected() {
        for r in [
            "VERSION 1.6.21\r\n",
            "CONFIG other 0 3\r\n",
            "VALUE k 0 3\r\n",
            "CONFIG cluster 0\r\n",
        ] {
            assert!(
                matches!(parse(r), Err(DiscoveryError::UnexpectedReply { .. })),
                "{r:?}"
            );
        }
        assert!(parse(&"x".repeat(crate::proto::MAX_LINE + 1)).is_err());
    }

    #[test]
    fn reach_prefers_the_ip() {
        let n = |host: &str, ip: &str| ClusterNode {
            host: host.into(),
            ip: ip.into(),
            port: 1,
        };
        assert_eq!(n("h", "10.0.0.1").reach(), "10.0.0.1");
        assert_eq!(n("h", "").reach(), "h");
    }
}
