//! r2d2 connection management: one pool per server.

use crate::conn::{Conn, ConnOptions};
use crate::error::Error;
use crate::proto::{Reply, Request};

/// Makes and checks connections to one server for r2d2.
#[derive(Debug, Clone)]
pub struct Manager {
    host: String,
    port: u16,
    server: String,
    opts: ConnOptions,
    ping_on_checkout: bool,
}

impl Manager {
    /// A manager for `host:port` (`host` starting with `/`: a unix socket). `server` is the
    /// address used in errors.
    pub fn new(
        host: &str,
        port: u16,
        server: &str,
        opts: ConnOptions,
        ping_on_checkout: bool,
    ) -> Manager {
        Manager {
            host: host.to_string(),
            port,
            server: server.to_string(),
            opts,
            ping_on_checkout,
        }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = Error;

    /// One TCP (or unix) connect, bounded by the connect timeout.
    fn connect(&self) -> Result<Conn, Error> {
        Conn::connect(&self.host, self.port, &self.server, &self.opts)
    }

    /// A `version` round trip, only when ping-on-checkout is configured (off by default: it
    /// doubles the cost of every operation).
    fn is_valid(&self, conn: &mut Conn) -> Result<(), Error> {
        if !self.ping_on_checkout {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(16);
        Request::Version.encode(&mut buf);
        conn.send(&buf)?;
        match conn.read_reply()? {
            Reply::Version(_) => Ok(()),
            other => Err(conn.unexpected(&other, "version")),
        }
    }

    /// Reads the connection's broken flag; never does I/O.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.is_broken()
    }
}
