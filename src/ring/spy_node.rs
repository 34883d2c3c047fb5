//! spymemcached's node key: `String.valueOf(InetSocketAddress)` with the leading `/` removed.
//!
//! spymemcached's `AddrUtil` resolves host names when the client is built, so the text depends
//! on what the JVM makes of the address (checked against Java 17 with spymemcached 2.12.3):
//!
//! | written | node key |
//! |---|---|
//! | `10.0.1.1:11211` | `10.0.1.1:11211` (port 11211 kept) |
//! | `localhost:11211` | `localhost/127.0.0.1:11211` |
//! | `cache-a.example:11211` (unresolvable) | `cache-a.example/<unresolved>:11211` |
//! | `[::1]:11211` | `[0:0:0:0:0:0:0:1]:11211` (no zero compression) |
//! | `[::ffff:10.0.0.1]:11211` | `10.0.0.1:11211` (Java turns mapped addresses into IPv4) |
//!
//! Host names are looked up in the hosts file only: a DNS query could reach a machine other
//! than this one, and placement must not depend on a resolver's mood.

use crate::servers::Server;
use std::net::{IpAddr, Ipv6Addr};

/// The hosts file consulted for host names.
const HOSTS_FILE: &str = "/etc/hosts";

/// spymemcached's node key for `s` (without the `-i` suffix).
pub(crate) fn node_key(s: &Server) -> String {
    match s.host.parse::<IpAddr>() {
        Ok(ip) => format!("{}:{}", java_ip_text(ip, true), s.port),
        Err(_) => match lookup_hosts_file(&s.host) {
            Some(ip) => format!("{}/{}:{}", s.host, java_ip_text(ip, true), s.port),
            None => format!("{}/<unresolved>:{}", s.host, s.port),
        },
    }
}

/// The AWS ElastiCache Java client's node key for `s`: as spymemcached's, except that the
/// client rebuilds each address from its IP (`NodeEndPoint`), so a host name found in the
/// hosts file gives the bare `ip:port` (`localhost:11211` is `127.0.0.1:11211`).
pub(crate) fn aws_node_key(s: &Server) -> String {
    match s.host.parse::<IpAddr>() {
        Ok(_) => node_key(s),
        Err(_) => match lookup_hosts_file(&s.host) {
            Some(ip) => format!("{}:{}", java_ip_text(ip, true), s.port),
            None => format!("{}/<unresolved>:{}", s.host, s.port),
        },
    }
}

/// `InetAddress.getHostAddress()`, IPv6 in brackets when `bracket_v6` (as
/// `InetSocketAddress.toString` writes it since JDK 14).
fn java_ip_text(ip: IpAddr, bracket_v6: bool) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let text = java_v6(&v6);
                if bracket_v6 {
                    format!("[{text}]")
                } else {
                    text
                }
            }
        },
    }
}

/// Java's `Inet6Address` text: eight lowercase hex groups, no zero compression.
fn java_v6(v6: &Ipv6Addr) -> String {
    v6.segments()
        .iter()
        .map(|g| format!("{g:x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// First IPv4 address for `name` in the hosts file, else its first IPv6 address (the JVM's
/// default `java.net.preferIPv6Addresses=false` puts IPv4 first).
fn lookup_hosts_file(name: &str) -> Option<IpAddr> {
    let text = std::fs::read_to_string(HOSTS_FILE).ok()?;
    lookup_in(&text, name).or_else(|| {
        // Resolvers answer `localhost` even without a hosts entry.
        name.eq_ignore_ascii_case("localhost")
            .then(|| IpAddr::from([127, 0, 0, 1]))
    })
}

fn lookup_in(hosts: &str, name: &str) -> Option<IpAddr> {
    let mut v6 = None;
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let Some(Ok(ip)) = fields.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if fields.any(|n| n.eq_ignore_ascii_case(name)) {
            match ip {
                IpAddr::V4(_) => return Some(ip),
                IpAddr::V6(_) => v6 = v6.or(Some(ip)),
            }
        }
    }
    v6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        let key = |a: &str| node_key(&a.parse::<Server>().unwrap());
        assert_eq!(key("10.0.1.1:11211"), "10.0.1.1:11211");
        assert_eq!(key("[::1]:11211"), "[0:0:0:0:0:0:0:1]:11211");
        assert_eq!(key("[2001:db8::1]:5"), "[2001:db8:0:0:0:0:0:1]:5");
        assert_eq!(key("[::ffff:10.0.0.1]:7"), "10.0.0.1:7");
        let aws = |a: &str| aws_node_key(&a.parse::<Server>().unwrap());
        assert_eq!(aws("localhost:11211"), "127.0.0.1:11211");
        assert_eq!(aws("10.0.1.1:11211"), "10.0.1.1:11211");
        assert_eq!(
            aws("no-such-host.invalid:5"),
            "no-such-host.invalid/<unresolved>:5"
        );
    }

    #[test]
    fn hosts_file() {
        let hosts = "# c\n::1 localhost ip6-localhost\n127.0.0.1 localhost\n10.1.1.1 cache # x\n";
        assert_eq!(
            lookup_in(hosts, "LOCALHOST"),
            Some(IpAddr::from([127, 0, 0, 1]))
        );
        assert_eq!(
            lookup_in(hosts, "ip6-localhost"),
            Some("::1".parse().unwrap())
        );
        assert_eq!(lookup_in(hosts, "cache"), Some(IpAddr::from([10, 1, 1, 1])));
        assert_eq!(lookup_in(hosts, "x"), None);
    }
}
