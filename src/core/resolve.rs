//! A server's addresses, found within the connect timeout.
//!
//! `getaddrinfo` cannot be cancelled and can block for many seconds on a sick resolver, so a
//! name is resolved on a thread of its own and waited for no longer than the connect timeout;
//! a late answer is dropped with its thread. An IP address needs no resolver.

use crate::error::{Error, Result};
use crate::settings::{ConnOptions, Resolve, SystemResolver};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, mpsc};

/// The resolver `opts` names, or the system's.
pub(crate) fn resolver_of(opts: &ConnOptions) -> Arc<dyn Resolve> {
    opts.resolver
        .clone()
        .unwrap_or_else(|| Arc::new(SystemResolver))
}

/// Whether `host` is a name to resolve (not an IP address, not a unix socket path).
pub(crate) fn is_name(host: &str) -> bool {
    !host.starts_with('/')
        && host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_err()
}

/// The addresses of `host` at `port`, within `opts.connect_timeout`; `server` names the server
/// in errors.
pub(crate) fn resolve(
    opts: &ConnOptions,
    host: &str,
    port: u16,
    server: &str,
) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let (resolver, name) = (resolver_of(opts), host.to_owned());
    let spawned = std::thread::Builder::new()
        .name("memshard-resolve".into())
        .spawn(move || {
            let _ = tx.send(resolver.resolve(&name, port));
        });
    if let Err(e) = spawned {
        return Err(Error::io(server, e, "resolve", opts.connect_timeout));
    }
    let addrs = match rx.recv_timeout(opts.connect_timeout) {
        Ok(r) => r.map_err(|e| Error::io(server, e, "resolve", opts.connect_timeout))?,
        Err(_) => {
            return Err(Error::Timeout {
                server: server.to_owned(),
                op: "resolve",
                after: opts.connect_timeout,
            });
        }
    };
    if addrs.is_empty() {
        return Err(Error::io_kind(
            server,
            "resolve",
            io::ErrorKind::NotFound,
            format!("{host} resolved to no address"),
        ));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[derive(Debug)]
    struct Slow(Duration);
    impl Resolve for Slow {
        fn resolve(&self, _: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
            std::thread::sleep(self.0);
            Ok(vec![SocketAddr::from(([127, 0, 0, 9], port))])
        }
    }

    #[derive(Debug)]
    struct Nothing;
    impl Resolve for Nothing {
        fn resolve(&self, _: &str, _: u16) -> io::Result<Vec<SocketAddr>> {
            Ok(Vec::new())
        }
    }

    fn opts(r: impl Resolve, timeout_ms: u64) -> ConnOptions {
        ConnOptions {
            connect_timeout: Duration::from_millis(timeout_ms),
            resolver: Some(Arc::new(r)),
            ..ConnOptions::default()
        }
    }

    #[test]
    fn a_resolver_slower_than_the_connect_timeout_is_a_timeout() {
        let o = opts(Slow(Duration::from_secs(3)), 50);
        let t = Instant::now();
        let e = resolve(&o, "cache.test", 11211, "cache.test:11211").expect_err("too slow");
        assert!(matches!(e, Error::Timeout { op: "resolve", .. }), "{e:?}");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "waited {:?}",
            t.elapsed()
        );
        let o = opts(Slow(Duration::ZERO), 2000);
        let a = resolve(&o, "cache.test", 11300, "s").expect("resolves");
        assert_eq!(a, [SocketAddr::from(([127, 0, 0, 9], 11300))]);
    }

    #[test]
    fn ip_addresses_skip_the_resolver_and_no_address_is_an_error() {
        let o = opts(Nothing, 50);
        let a = resolve(&o, "127.0.0.3", 1, "s").expect("an IP");
        assert_eq!(a, [SocketAddr::from(([127, 0, 0, 3], 1))]);
        let a = resolve(&o, "::1", 2, "s").expect("an IPv6");
        assert_eq!(a[0].port(), 2);
        let e = resolve(&o, "cache.test", 1, "s").expect_err("nothing");
        assert!(e.to_string().contains("resolved to no address"), "{e}");
    }
}
