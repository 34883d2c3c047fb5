//! Servers and the server-list formats the peers use.
//!
//! One line per server. The canonical format is `HOST:PORT [WEIGHT] [NAME]`; the parser also
//! takes, line by line and without being told, the peers' own spellings:
//!
//! | format | example |
//! |---|---|
//! | canonical | `10.0.1.1:11211 600 cache-a` |
//! | libketama server file | `10.0.1.1:11211<TAB>600` |
//! | twemproxy server entry | `- 10.0.1.1:11211:600 cache-a` |
//! | libmemcached server string | `10.0.1.1:11211 600,10.0.1.2:11211 300` or `--SERVER=10.0.1.1:11211/?600` |
//!
//! Blank lines and `#` comments are ignored. IPv6 addresses are written `[addr]:port`.
//! A missing port means 11211, a missing weight means 1.

use std::fmt;

/// memcached's default port. libmemcached and twemproxy leave it out of point names.
pub const DEFAULT_PORT: u16 = 11211;

/// One memcached server.
///
/// ```
/// use memshard::Server;
/// let s: Server = "[::1]:11212 3 cache-a".parse().unwrap();
/// assert_eq!((s.host.as_str(), s.port, s.weight), ("::1", 11212, 3));
/// assert_eq!(s.name.as_deref(), Some("cache-a"));
/// assert_eq!(s.addr, "[::1]:11212");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Server {
    /// Host name or IP address, without IPv6 brackets.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Relative weight, at least 1.
    pub weight: u32,
    /// Optional name (twemproxy server name, uhashring node name): replaces the address in
    /// point names for the flavors that support names.
    pub name: Option<String>,
    /// The address exactly as written (`host:port`, `[v6]:port`, or `host` when the port was
    /// left out). Flavors whose peers hash the text as given (libketama, node hashring) use it,
    /// and it is what `memshard route` prints.
    pub addr: String,
    /// The name to verify on this server's TLS certificate (feature `tls`), where it differs
    /// from the host: a server listed by IP address whose certificate holds a DNS name. In a
    /// server list: `tls_name=NAME` after the address. Placement never uses it.
    pub tls_name: Option<String>,
    /// The address to connect to, where it differs from `host`: a discovered node is placed
    /// by the name its peer hashes and reached at the IP the cluster configuration gives
    /// (cluster discovery). Placement never uses it.
    pub connect_to: Option<String>,
}

impl Server {
    /// A server at `host:port` with weight 1. IPv6 hosts are given without brackets.
    pub fn new(host: impl Into<String>, port: u16) -> Server {
        let host = host.into();
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Server {
            host,
            port,
            weight: 1,
            name: None,
            addr,
            tls_name: None,
            connect_to: None,
        }
    }

    /// The same server with another weight.
    pub fn with_weight(mut self, weight: u32) -> Server {
        self.weight = weight;
        self
    }

    /// The same server with a name.
    pub fn with_name(mut self, name: impl Into<String>) -> Server {
        self.name = Some(name.into());
        self
    }

    /// The same server with the name its TLS certificate must hold.
    pub fn with_tls_name(mut self, name: impl Into<String>) -> Server {
        self.tls_name = Some(name.into());
        self
    }

    /// The same server reached at `host` (an IP or a name) instead of its own host; its
    /// placement does not change.
    pub fn with_connect_to(mut self, host: impl Into<String>) -> Server {
        self.connect_to = Some(host.into());
        self
    }

    /// The host connections go to: [`connect_to`](Server::connect_to) if set, else `host`.
    pub fn connect_host(&self) -> &str {
        self.connect_to.as_deref().unwrap_or(&self.host)
    }

    /// The address connections go to, `connect_host:port`, with IPv6 in brackets.
    pub fn connect_addr(&self) -> String {
        let host = self.connect_host();
        if host.contains(':') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// `host:port` as a socket address string, with IPv6 in brackets.
    pub fn socket_addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.addr)
    }
}

/// A server list line that could not be read. Says which line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server list line {line}: {reason} (in {text:?})")]
pub struct ServerListError {
    /// 1-based line number.
    pub line: usize,
    /// The line as written.
    pub text: String,
    /// What is wrong, and what was expected.
    pub reason: String,
}

impl std::str::FromStr for Server {
    type Err = ServerListError;
    /// One server in the canonical or twemproxy form.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut v = parse_server_list(s)?;
        match v.len() {
            1 => Ok(v.remove(0)),
            n => Err(ServerListError {
                line: 1,
                text: s.to_string(),
                reason: format!("expected one server, found {n}"),
            }),
        }
    }
}

/// Parse a server list (see the module docs for the formats).
///
/// ```
/// let servers = memshard::parse_server_list("
///     ## two caches
///     10.0.1.1:11211 600
///     10.0.1.2:11212\t300
///     - 10.0.1.3:11213:1 cache-c
/// ").unwrap();
/// assert_eq!(servers.len(), 3);
/// assert_eq!(servers[2].name.as_deref(), Some("cache-c"));
/// assert!(memshard::parse_server_list("10.0.1.1:http").is_err());
/// ```
pub fn parse_server_list(text: &str) -> Result<Vec<Server>, ServerListError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let err = |reason: String| ServerListError {
            line: i + 1,
            text: raw.to_string(),
            reason,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("--") || line.contains(',') {
            out.extend(parse_libmemcached_line(line).map_err(err)?);
            continue;
        }
        let line = line.strip_prefix("- ").unwrap_or(line).trim();
        out.push(parse_entry(line).map_err(err)?);
    }
    Ok(out)
}

/// One canonical (`HOST:PORT [WEIGHT] [NAME]`) or twemproxy (`HOST:PORT:WEIGHT [NAME]`) entry,
/// with an optional `tls_name=NAME` anywhere after the address.
fn parse_entry(line: &str) -> Result<Server, String> {
    let mut tokens = line.split_whitespace();
    let first = tokens.next().ok_or("empty server entry")?;
    let (tls, rest): (Vec<&str>, Vec<&str>) = tokens.partition(|t| t.starts_with("tls_name="));
    let tls_name = match tls.as_slice() {
        [] => None,
        [t] => match &t["tls_name=".len()..] {
            "" => return Err("tls_name= needs a name".into()),
            n => Some(n.to_string()),
        },
        _ => return Err("tls_name= given more than once".into()),
    };
    let (addr, host, port, tw_weight) = split_address(without_scheme(first)?)?;
    let (weight, name) = match (tw_weight, rest.as_slice()) {
        (Some(w), []) => (w, None),
        (Some(w), [name]) => (w, Some(name)),
        (None, []) => (1, None),
        (None, [w]) => (parse_weight(w)?, None),
        (None, [w, name]) => (parse_weight(w)?, Some(name)),
        _ => {
            return Err(format!(
                "too many fields; expected HOST:PORT [WEIGHT] [NAME] or HOST:PORT:WEIGHT [NAME], got {} fields",
                rest.len() + 1
            ));
        }
    };
    Ok(Server {
        host,
        port,
        weight,
        name: name.map(|n| n.to_string()),
        addr,
        tls_name,
        connect_to: None,
    })
}

/// `memcache://host:port` and `memcached://host:port` (as Django, pymemcache and the Go and
/// Node clients' docs write servers) name the server `host:port`; a path after it or another
/// scheme is refused, saying what to write.
fn without_scheme(tok: &str) -> Result<&str, String> {
    let Some((scheme, rest)) = tok.split_once("://") else {
        return Ok(tok);
    };
    if !matches!(
        scheme.to_ascii_lowercase().as_str(),
        "memcache" | "memcached"
    ) {
        return Err(format!(
            "{scheme}:// is not a memcached address; write host:port (or memcache://host:port)"
        ));
    }
    match rest.strip_suffix('/').unwrap_or(rest) {
        r if r.contains('/') || r.is_empty() => Err(format!(
            "{tok}: a memcache:// address is memcache://host:port, without a path"
        )),
        r => Ok(r),
    }
}

/// Split `host[:port[:weight]]` / `[v6][:port[:weight]]`. Returns (addr as written, host, port, weight).
fn split_address(tok: &str) -> Result<(String, String, u16, Option<u32>), String> {
    let (host, after) = if let Some(rest) = tok.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or("IPv6 address has no closing ']'; write it as [addr]:port")?;
        let host = &rest[..end];
        if host.is_empty() {
            return Err("empty IPv6 address in []".into());
        }
        (host, &rest[end + 1..])
    } else {
        match tok.find(':') {
            Some(i) => (&tok[..i], &tok[i..]),
            None => (tok, ""),
        }
    };
    if host.is_empty() {
        return Err("empty host".into());
    }
    let fields: Vec<&str> = if after.is_empty() {
        vec![]
    } else if let Some(a) = after.strip_prefix(':') {
        a.split(':').collect()
    } else {
        return Err(format!("unexpected {after:?} after the host"));
    };
    let port_of = |p: &str| -> Result<u16, String> {
        match p.parse::<u16>() {
            Ok(0) | Err(_) => Err(format!(
                "port {p:?} is not a number from 1 to 65535 (IPv6 addresses are written [addr]:port)"
            )),
            Ok(p) => Ok(p),
        }
    };
    let written_len = tok.len() - after.len() + fields.first().map_or(0, |p| p.len() + 1);
    let addr = tok[..written_len].to_string();
    match fields.as_slice() {
        [] => Ok((addr, host.to_string(), DEFAULT_PORT, None)),
        [p] => Ok((addr, host.to_string(), port_of(p)?, None)),
        [p, w] => Ok((addr, host.to_string(), port_of(p)?, Some(parse_weight(w)?))),
        _ => Err("too many ':' in the address; IPv6 addresses are written [addr]:port".into()),
    }
}

fn parse_weight(w: &str) -> Result<u32, String> {
    match w.parse::<u32>() {
        Ok(0) => Err("weight 0 is not allowed: weights are whole numbers of at least 1".into()),
        Ok(w) => Ok(w),
        Err(_) => Err(format!(
            "weight {w:?} is not a whole number from 1 to {}",
            u32::MAX
        )),
    }
}

/// libmemcached server strings: `memcached_servers_parse` lists (`host:port weight,host:port`)
/// and configuration strings (`--SERVER=host:port/?weight`).
fn parse_libmemcached_line(line: &str) -> Result<Vec<Server>, String> {
    let mut out = Vec::new();
    if line.starts_with("--") {
        for opt in line.split_whitespace() {
            let Some(v) = opt.strip_prefix("--SERVER=") else {
                if opt.starts_with("--") {
                    continue; // other options (--DISTRIBUTION=..., --HASH=...) are not servers
                }
                return Err(format!(
                    "unexpected {opt:?} in a libmemcached configuration string"
                ));
            };
            let (addr, weight) = match v.split_once("/?") {
                Some((a, w)) => (a, Some(parse_weight(w)?)),
                None => (v, None),
            };
            let mut s = parse_entry(addr)?;
            if let Some(w) = weight {
                s.weight = w;
            }
            out.push(s);
        }
    } else {
        for item in line.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            out.push(parse_entry(item)?);
        }
    }
    if out.is_empty() {
        return Err("no server in this libmemcached string".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_name_is_read_anywhere_after_the_address_and_changes_nothing_else() {
        let plain = parse_server_list("127.0.0.1:11211 3 cache-a").expect("parses");
        for line in [
            "127.0.0.1:11211 tls_name=cache.test 3 cache-a",
            "127.0.0.1:11211 3 cache-a tls_name=cache.test",
        ] {
            let s = parse_server_list(line).expect("parses");
            assert_eq!(s[0].tls_name.as_deref(), Some("cache.test"));
            assert_eq!(
                Server {
                    tls_name: None,
                    ..s[0].clone()
                },
                plain[0]
            );
        }
        assert!(parse_server_list("127.0.0.1:11211 tls_name=").is_err());
        assert!(parse_server_list("127.0.0.1:11211 tls_name=a tls_name=b").is_err());
    }

    #[test]
    fn addresses_bracket_ipv6_and_connections_go_where_told() {
        let addrs = |s: &Server| {
            (
                s.to_string(),
                s.socket_addr(),
                s.connect_host().to_string(),
                s.connect_addr(),
            )
        };
        let v4 = Server::new("127.0.0.1", 11211);
        assert_eq!(
            addrs(&v4),
            (
                "127.0.0.1:11211".into(),
                "127.0.0.1:11211".into(),
                "127.0.0.1".into(),
                "127.0.0.1:11211".into()
            )
        );
        let v6 = Server::new("::1", 5);
        assert_eq!(
            addrs(&v6),
            (
                "[::1]:5".into(),
                "[::1]:5".into(),
                "::1".into(),
                "[::1]:5".into()
            )
        );
        // a discovered node: placed by its name, reached at the address it was given
        let named = Server::new("cache-a.internal", 11211).with_connect_to("127.0.0.9");
        assert_eq!(
            addrs(&named),
            (
                "cache-a.internal:11211".into(),
                "cache-a.internal:11211".into(),
                "127.0.0.9".into(),
                "127.0.0.9:11211".into()
            )
        );
        let to_v6 = Server::new("cache-b.internal", 7).with_connect_to("::1");
        assert_eq!(to_v6.connect_addr(), "[::1]:7");
        assert_eq!(to_v6.socket_addr(), "cache-b.internal:7");
        // Display prints the address as written, which a parsed server keeps
        let written = parse_server_list("- [::1]:5:3 tw").expect("parses");
        assert_eq!(written[0].to_string(), "[::1]:5");
    }

    #[test]
    fn one_server_parses_from_a_string_and_a_list_does_not() {
        let s: Server = "127.0.0.1:11212 4 c".parse().expect("one server");
        assert_eq!((s.port, s.weight, s.name.as_deref()), (11212, 4, Some("c")));
        for (text, found) in [("a:1,b:2", 2), ("", 0), ("# only a comment", 0)] {
            let e = text.parse::<Server>().expect_err(text);
            assert_eq!(
                e.reason,
                format!("expected one server, found {found}"),
                "{text}"
            );
        }
    }

    #[test]
    fn memcache_urls_name_host_and_port() {
        let s = parse_server_list("memcache://127.0.0.1:21211\nmemcached://[::1]:5/ 2")
            .expect("parses");
        assert_eq!(
            (s[0].host.as_str(), s[0].port, s[0].addr.as_str()),
            ("127.0.0.1", 21211, "127.0.0.1:21211")
        );
        assert_eq!((s[1].host.as_str(), s[1].port, s[1].weight), ("::1", 5, 2));
        let e = parse_server_list("redis://127.0.0.1:6379").expect_err("not memcached");
        assert!(e.to_string().contains("write host:port"), "{e}");
        let e = parse_server_list("memcache://127.0.0.1:1/db").expect_err("a path");
        assert!(e.to_string().contains("without a path"), "{e}");
    }

    #[test]
    fn formats() {
        let s = parse_server_list(
            "a:1\n b:2 5\nc 7 named\n- d:4:9 tw\n[::1]:5 2\n10.0.0.1:11211 600,10.0.0.2:11212 300\n--SERVER=e:6/?4 --HASH=MD5\n# x\n\n",
        )
        .unwrap();
        let got: Vec<(&str, &str, u16, u32, Option<&str>)> = s
            .iter()
            .map(|s| {
                (
                    s.addr.as_str(),
                    s.host.as_str(),
                    s.port,
                    s.weight,
                    s.name.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a:1", "a", 1, 1, None),
                ("b:2", "b", 2, 5, None),
                ("c", "c", 11211, 7, Some("named")),
                ("d:4", "d", 4, 9, Some("tw")),
                ("[::1]:5", "::1", 5, 2, None),
                ("10.0.0.1:11211", "10.0.0.1", 11211, 600, None),
                ("10.0.0.2:11212", "10.0.0.2", 11212, 300, None),
                ("e:6", "e", 6, 4, None),
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        for bad in [
            "a:0",
            "a:x",
            "a:1 0",
            "a:1 -3",
            "::1:5",
            "[::1",
            "a:1 2 n extra",
            "a:1:2:3",
        ] {
            let e = parse_server_list(&format!("ok:1\n{bad}")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}: {e}");
        }
    }
}
