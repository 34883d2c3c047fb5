//! Which memcached protocol a client speaks to its servers.

/// The protocol of every request: the classic text commands, or memcached 1.6's meta commands
/// (`mg`, `ms`, `md`, `ma`, `mn`).
///
/// Text is the default because twemproxy and memcached before 1.6 do not speak meta. With
/// [`Meta`](Protocol::Meta), every key command and multi-key operation is sent as meta commands
/// (multi-key ones pipelined in quiet mode, ended by `mn`) with the same outcomes, placement,
/// values and codecs; `version`, `stats`, `flush_all` and `verbosity` have no meta form and stay
/// text. Stampede protection (`get_or_compute`, `invalidate`) always uses meta commands, whatever
/// this setting.
///
/// # Bytes nobody asked for
///
/// The text protocol has no request ids: a line that arrives while a text request is in flight
/// (written into the connection by a faulty proxy, or by anything else on the path) is read as
/// that request's reply, and no text-protocol client can tell the two apart. memshard catches
/// bytes that arrive on an idle pooled connection (the connection is dropped), not those that
/// arrive mid-request. Every meta request carries an opaque token that the server echoes, and
/// a reply with another token fails the request and drops the connection. Where the path to
/// the servers is not trusted end to end, use [`Meta`](Protocol::Meta) (memcached 1.6 and
/// later), with TLS.
///
/// ```
/// use memshard::Protocol;
/// assert_eq!("meta".parse::<Protocol>(), Ok(Protocol::Meta));
/// assert_eq!(Protocol::default(), Protocol::Text);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// `get`, `set`, `delete`, … (every memcached, twemproxy, mcrouter).
    #[default]
    Text,
    /// `mg`, `ms`, `md`, `ma`, `mn` (memcached 1.6 and later).
    Meta,
}

impl Protocol {
    /// Its name: `text` or `meta`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Text => "text",
            Protocol::Meta => "meta",
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A protocol name that is neither `text` nor `meta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownProtocol(pub String);

impl std::fmt::Display for UnknownProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown protocol {:?}: use text or meta", self.0)
    }
}

impl std::error::Error for UnknownProtocol {}

impl std::str::FromStr for Protocol {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Protocol::Text),
            "meta" => Ok(Protocol::Meta),
            other => Err(UnknownProtocol(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_prints_its_name_and_parses_back() {
        for (p, name) in [(Protocol::Text, "text"), (Protocol::Meta, "meta")] {
            assert_eq!((p.name(), p.to_string()), (name, name.to_string()));
            assert_eq!(name.parse::<Protocol>(), Ok(p));
        }
        let e = "binary".parse::<Protocol>().expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "unknown protocol \"binary\": use text or meta"
        );
    }
}
