//! Socket settings every connection of a client applies: timeouts, limits, TLS and credentials.

use std::time::Duration;

/// Socket settings applied to every connection and every operation.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub(crate) struct ConnOptions {
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for the replies to one write, counted from the start of their read: a
    /// reply of many lines (`stats`, the errors after a noreply batch) or values (a `get` of
    /// many keys) gets one deadline, never one per line.
    pub read_timeout: Duration,
    /// Longest wait to write one request.
    pub write_timeout: Duration,
    /// Largest value accepted in a reply (and sent in a request).
    pub max_value_size: usize,
    /// Credentials every new connection logs in with (memcached `-Y`).
    pub(crate) credentials: Option<std::sync::Arc<crate::settings::Credentials>>,
    /// Text or meta commands.
    pub(crate) protocol: crate::settings::protocol::Protocol,
    /// Limits of one multi-key request line.
    pub(crate) caps: RequestCaps,
    /// The resolver of server names; `None`: the system's.
    pub(crate) resolver: Option<std::sync::Arc<dyn crate::settings::Resolve>>,
    /// TLS for every connection; `None`: plaintext.
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<std::sync::Arc<super::tls::TlsSetup>>,
    /// The name the server list gives for this server's certificate.
    #[cfg(feature = "tls")]
    pub(crate) tls_name: Option<String>,
}

impl ConnOptions {
    /// These options for the connections to `server`.
    pub(crate) fn for_server(&self, server: &crate::Server) -> ConnOptions {
        #[cfg(feature = "tls")]
        return ConnOptions {
            // a discovered node reached at its IP still proves its host name
            tls_name: server
                .tls_name
                .clone()
                .or_else(|| server.connect_to.as_ref().map(|_| server.host.clone())),
            ..self.clone()
        };
        #[cfg(not(feature = "tls"))]
        {
            let _ = server;
            self.clone()
        }
    }
}

impl Default for ConnOptions {
    fn default() -> Self {
        ConnOptions {
            connect_timeout: Duration::from_millis(500),
            read_timeout: Duration::from_millis(1000),
            write_timeout: Duration::from_millis(1000),
            max_value_size: 1024 * 1024,
            credentials: None,
            protocol: crate::settings::protocol::Protocol::Text,
            resolver: None,
            caps: RequestCaps::DEFAULT,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "tls")]
            tls_name: None,
        }
    }
}

/// Limits of one multi-key retrieval line (`get k1 k2 …`): a request for more keys is split
/// into lines of at most `keys` keys and `bytes` bytes each, written together, for endpoints
/// that refuse longer lines (ElastiCache Serverless). Meta commands send one key per line
/// whatever the caps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestCaps {
    /// Most keys in one line, at least 1. Default 100.
    pub keys: usize,
    /// Most bytes in one line, its `\r\n` included; a key too long to share a line goes
    /// alone. Default: no limit.
    pub bytes: usize,
}

impl RequestCaps {
    /// 100 keys a line, no byte limit.
    pub const DEFAULT: RequestCaps = RequestCaps {
        keys: 100,
        bytes: usize::MAX,
    };
}

impl Default for RequestCaps {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;
    use crate::Server;

    /// The name a server's certificate must hold: the list's `tls_name=`, else the host of a
    /// node reached at another address, else none (the address itself is verified).
    #[test]
    fn each_server_gets_the_name_its_certificate_must_hold() {
        let opts = ConnOptions::default();
        let named = Server::new("127.0.0.1", 1).with_tls_name("cache.test");
        assert_eq!(
            opts.for_server(&named).tls_name.as_deref(),
            Some("cache.test")
        );
        let moved = Server::new("node-1.cache.test", 1).with_connect_to("127.0.0.2");
        assert_eq!(
            opts.for_server(&moved).tls_name.as_deref(),
            Some("node-1.cache.test")
        );
        let both = moved.with_tls_name("other.test");
        assert_eq!(
            opts.for_server(&both).tls_name.as_deref(),
            Some("other.test")
        );
        let plain = Server::new("127.0.0.1", 1);
        assert_eq!(opts.for_server(&plain).tls_name, None);
    }
}
