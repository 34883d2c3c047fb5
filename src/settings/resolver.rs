//! How connections find a server's addresses: the system resolver by default, or one the user
//! gives (a service registry, a test's table).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// A name resolver: the addresses of `host` at `port`, most preferred first.
///
/// Connections resolve their server's host at every connect, within the connect timeout, so a
/// node replaced under the same name is reached at its new address. A resolver is called on a
/// thread of its own (it may block).
///
/// ```
/// use memshard::settings::Resolve;
/// use std::net::SocketAddr;
/// #[derive(Debug)]
/// struct Table;
/// impl Resolve for Table {
///     fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
///         match host {
///             "cache-a.internal" => Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))]),
///             _ => Err(std::io::ErrorKind::NotFound.into()),
///         }
///     }
/// }
/// let client = memshard::Client::builder()
///     .server_list("cache-a.internal:11211")?
///     .resolver(Table)
///     .build()?;
/// # Ok::<(), memshard::Error>(())
/// ```
pub trait Resolve: Send + Sync + std::fmt::Debug + 'static {
    /// The addresses of `host` at `port`. An empty list is "no address".
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo`: `/etc/hosts`, then DNS). The default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok((host, port).to_socket_addrs()?.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A literal address resolves to itself without asking DNS.
    #[test]
    fn the_system_resolver_reads_literal_addresses() {
        let v4 = SystemResolver
            .resolve("127.0.0.1", 11211)
            .expect("resolves");
        assert_eq!(v4, [SocketAddr::from(([127, 0, 0, 1], 11211))]);
        let v6 = SystemResolver.resolve("::1", 11212).expect("resolves");
        assert_eq!(
            v6,
            [SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 11212))]
        );
    }
}
