//! Cluster auto discovery: a client whose nodes come from an AWS ElastiCache configuration
//! endpoint or a GCP Memorystore discovery endpoint, kept current by a poll.
//!
//! [`Builder::discover`](crate::Builder::discover) makes `build` ask the endpoint for the
//! cluster configuration (`config get cluster`, or the legacy `get AmazonElastiCache:cluster`
//! on engines before 1.4.14) and start a thread that asks again every interval. A
//! configuration is applied only when its version is greater than the one in force and its
//! nodes differ, as the AWS clients do; it is applied through `set_servers`, so requests in
//! flight finish on the nodes they started with. A poll that fails (a node down, a malformed
//! reply) keeps the nodes in force and asks the next node; [`DiscoveryStatus`] tells what
//! happened last. ElastiCache polls ask the data nodes in turn and the configuration endpoint
//! last (every data node answers `config get cluster`); Memorystore polls ask only its
//! discovery endpoint, which is never a data node.
//!
//! # Placement
//!
//! Nodes are placed in the order the configuration lists them, with the client's flavor, each
//! named as that flavor's peer names a discovered node and reached at its IP
//! ([`servers_for`]):
//!
//! | peer (cluster client) | flavor | point names | placement |
//! |---|---|---|---|
//! | AWS PHP client, default | `libmemcached-modula` | — | one-at-a-time % nodes, reply order |
//! | AWS PHP client, `OPT_LIBKETAMA_COMPATIBLE` | `libmemcached` | host name field (`localhost` when empty) | libmemcached ketama |
//! | AWS Java client, default | `spymemcached-modula` | — | `String.hashCode` % nodes, reply order |
//! | AWS Java client, `KetamaConnectionFactory` | `aws-java-ketama` | `ip:port` | SHA-384 ketama |
//!
//! The discovery connection logs in when the client has credentials; it is plaintext (a client
//! built with TLS and discovery is refused: see [`Builder::discover`](crate::Builder::discover)).

use crate::core::exchange::{Discover, Exchange};
use crate::core::link::{Link, Next};
use crate::error::{Error, Result};
use crate::ring::Flavor;
use crate::servers::Server;
use crate::settings::{ConnOptions, Settings};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::outcome::DiscoveryStatus;
pub use crate::proto::discovery::{ClusterConfig, ClusterNode, DiscoveryError};
pub use crate::settings::{DEFAULT_DISCOVERY_INTERVAL, Discovery, DiscoveryKind};

/// The servers of `config` as `flavor`'s peer makes them, in reply order, weight 1: the Java
/// client's flavors name a node `ip:port` (its node key), every other flavor by its host name
/// field (libmemcached's by `localhost` when the field is empty, as the AWS PHP client's
/// libmemcached does; the others by the IP). Each server connects to the IP, or to the host
/// name when the IP field is empty.
///
/// ```
/// use memshard::discovery::{servers_for, ClusterConfig, ClusterNode};
/// use memshard::Flavor;
/// let config = ClusterConfig {
///     version: 3,
///     nodes: vec![ClusterNode { host: "c1.cache".into(), ip: "10.0.0.7".into(), port: 11211 }],
/// };
/// let php = &servers_for(&config, Flavor::Libmemcached)[0];
/// assert_eq!((php.host.as_str(), php.connect_host()), ("c1.cache", "10.0.0.7"));
/// let java = &servers_for(&config, Flavor::AwsJavaKetama)[0];
/// assert_eq!((java.host.as_str(), java.connect_host()), ("10.0.0.7", "10.0.0.7"));
/// ```
pub fn servers_for(config: &ClusterConfig, flavor: Flavor) -> Vec<Server> {
    config
        .nodes
        .iter()
        .map(|n| {
            let reach = n.reach();
            let name = match flavor {
                // AWS Java client: NodeEndPoint's socket address is made from the IP
                Flavor::Spymemcached
                | Flavor::SpymemcachedWeighted
                | Flavor::SpymemcachedModula
                | Flavor::AwsJavaKetama => reach,
                // libmemcached fork, config.cc: an empty host name becomes "localhost"
                Flavor::Libmemcached
                | Flavor::LibmemcachedUnweighted
                | Flavor::LibmemcachedSpy
                | Flavor::LibmemcachedModula
                    if n.host.is_empty() =>
                {
                    "localhost"
                }
                _ if n.host.is_empty() => reach,
                _ => &n.host,
            };
            let s = Server::new(name, n.port);
            if name == reach {
                s
            } else {
                s.with_connect_to(reach)
            }
        })
        .collect()
}

/// Ask `endpoint` once for the cluster configuration, over a plaintext connection without
/// login, within `timeout` for the connect and `timeout` again for the whole reply, however
/// slowly the endpoint trickles it.
///
/// ```no_run
/// let endpoint = "127.0.0.1:11211".parse()?;
/// let config = memshard::discovery::fetch(&endpoint, std::time::Duration::from_secs(1))?;
/// println!("version {}: {} nodes", config.version, config.nodes.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn fetch(endpoint: &Server, timeout: Duration) -> Result<ClusterConfig> {
    let opts = ConnOptions {
        connect_timeout: timeout,
        read_timeout: timeout,
        write_timeout: timeout,
        ..ConnOptions::default()
    };
    ask(endpoint, &opts, true)
}

/// One discovery request to `node`: connect, log in if `opts` has credentials, ask (the
/// legacy key too when `endpoint`, the configuration endpoint, is who is asked). The exchanges
/// run over a [`Link`], as the clients' do: the connect takes at most the connect timeout,
/// each reply (the login's, the configuration's) at most the read timeout from its request
/// (a deadline per reply, not per read: an endpoint that sends a byte now and then cannot hold
/// a build, a poll or the client's drop), and bytes the endpoint sends unasked, with or after
/// its reply, fail the request instead of being read as a configuration.
fn ask(node: &Server, opts: &ConnOptions, endpoint: bool) -> Result<ClusterConfig> {
    let label = node.addr.as_str();
    let addrs = crate::core::resolve::resolve(opts, node.connect_host(), node.port, label)?;
    let mut last = None;
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, opts.connect_timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(mut stream) = stream else {
        let e = last.unwrap_or_else(|| std::io::ErrorKind::NotFound.into());
        return Err(Error::io(label, e, "connect", opts.connect_timeout));
    };
    stream
        .set_write_timeout(Some(opts.write_timeout))
        .map_err(|e| Error::io(label, e, "connect", opts.connect_timeout))?;
    // discovery's commands are text whatever the client speaks
    let mut text = opts.clone();
    text.protocol = crate::Protocol::Text;
    let mut link = Link::new(label, &text);
    if let Some(c) = &opts.credentials {
        let mut login = crate::core::auth::login_for(c);
        run(&mut stream, &mut link, login.as_mut()).map_err(crate::core::auth::login_failed)?;
    }
    let mut ask = if endpoint {
        Discover::new()
    } else {
        Discover::of_data_node()
    };
    run(&mut stream, &mut link, &mut ask)
}

/// Drive `ex` over `stream` through `link` to its end.
fn run<E: Exchange + ?Sized>(
    stream: &mut TcpStream,
    link: &mut Link,
    ex: &mut E,
) -> Result<E::Output> {
    let mut fresh = true;
    loop {
        match link.advance(ex, std::mem::take(&mut fresh))? {
            Next::Write => {
                stream
                    .write_all(link.pending_write())
                    .map_err(|e| link.io_failed(e, "write"))?;
                link.wrote();
            }
            Next::Read(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(link.timed_out("read"));
                }
                let n = stream
                    .set_read_timeout(Some(left))
                    .and_then(|()| stream.read(link.spare()));
                match n {
                    Ok(n) => link.received(n)?,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        return Err(link.timed_out("read"));
                    }
                    Err(e) => return Err(link.io_failed(e, "read")),
                }
            }
            Next::Done(v) => return Ok(v),
        }
    }
}

/// The most a polled configuration's version may be above the one in force. ElastiCache counts
/// one per change; a version far ahead (`u64::MAX`, say) is a corrupt or forged reply, and
/// applying it would leave no later version newer: discovery would be frozen for good. Such a
/// configuration is ignored (counted in `DiscoveryStatus::ignored`).
pub(crate) const MAX_VERSION_JUMP: u64 = 1 << 20;

/// What to do with a configuration a poll brought.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// A newer version with other nodes: apply it.
    Apply,
    /// Not newer, or the same nodes: keep the nodes in force.
    Ignore,
}

/// The poll's state: the configuration in force and whom to ask next.
#[derive(Debug)]
pub(crate) struct Tracker {
    current: ClusterConfig,
    next: usize,
}

impl Tracker {
    pub(crate) fn new(first: ClusterConfig) -> Tracker {
        Tracker {
            current: first,
            next: 0,
        }
    }

    /// Whether `c` replaces the configuration in force: a strictly greater version whose
    /// nodes differ (the AWS clients' rule; an equal version is never applied, even with
    /// other nodes), and at most [`MAX_VERSION_JUMP`] greater.
    pub(crate) fn offer(&self, c: &ClusterConfig) -> Offer {
        let newer = c.version > self.current.version
            && c.version - self.current.version <= MAX_VERSION_JUMP;
        if newer && c.nodes != self.current.nodes {
            Offer::Apply
        } else {
            Offer::Ignore
        }
    }

    /// `c` is in force now.
    pub(crate) fn applied(&mut self, c: ClusterConfig) {
        self.current = c;
    }

    /// Whom one poll asks, in order: for ElastiCache every data node, starting one further
    /// along at each poll, then the configuration endpoint; for Memorystore the endpoint only.
    pub(crate) fn candidates(&mut self, endpoint: &Server, kind: DiscoveryKind) -> Vec<Server> {
        let mut out = Vec::new();
        if kind == DiscoveryKind::ElastiCache {
            let n = self.current.nodes.len();
            let data = servers_for(&self.current, Flavor::AwsJavaKetama);
            out.extend((0..n).map(|i| data[(self.next + i) % n].clone()));
            self.next = if n == 0 { 0 } else { (self.next + 1) % n };
        }
        out.push(endpoint.clone());
        out
    }
}

/// The configuration a build starts from, and the servers it names: `None` without
/// discovery. A client built with TLS cannot use discovery (its connection is plaintext).
pub(crate) fn first(settings: &mut Settings) -> Result<Option<ClusterConfig>> {
    let Some(d) = &settings.discovery else {
        return Ok(None);
    };
    #[cfg(feature = "tls")]
    if settings.conn.tls.is_some() {
        return Err(Error::Setting(crate::error::SettingError::Discovery {
            detail: "discovery connections are plaintext; build without TLS to use discovery"
                .into(),
        }));
    }
    let config = ask(d.endpoint(), &settings.conn, true)?;
    settings.servers = servers_for(&config, settings.flavor);
    Ok(Some(config))
}

/// The poll of a client built with discovery, from its `first` configuration; `None` without
/// discovery. The poll holds the client's core weakly: it ends when the last client goes.
pub(crate) fn start<P: Send + Sync + 'static>(
    core: &Arc<crate::core::Core<P>>,
    first: Option<ClusterConfig>,
) -> Option<Poller> {
    let weak = Arc::downgrade(core);
    Poller::spawn(first?, &core.settings, move |servers| {
        weak.upgrade().map(|core| core.set_servers(servers))
    })
}

/// A running poll. Dropping it stops the poll.
#[derive(Debug)]
pub(crate) struct Poller {
    stop: Arc<AtomicBool>,
    status: Arc<Mutex<DiscoveryStatus>>,
    thread: Option<JoinHandle<()>>,
}

impl Poller {
    /// Poll as `settings.discovery` says, from `first`; `apply` sets the servers and answers
    /// `None` once the client is gone (the poll then ends).
    pub(crate) fn spawn(
        first: ClusterConfig,
        settings: &Settings,
        apply: impl Fn(Vec<Server>) -> Option<Result<()>> + Send + 'static,
    ) -> Option<Poller> {
        let d = settings.discovery.clone()?;
        let (opts, flavor) = (settings.conn.clone(), settings.flavor);
        let stop = Arc::new(AtomicBool::new(false));
        let status = Arc::new(Mutex::new(DiscoveryStatus {
            version: first.version,
            nodes: first.nodes.len(),
            applied: 1,
            ..DiscoveryStatus::default()
        }));
        crate::observe::discovery_applied(&d.endpoint().addr, first.version, first.nodes.len());
        let (stop2, status2) = (stop.clone(), status.clone());
        let thread = std::thread::Builder::new()
            .name("memshard-discovery".into())
            .spawn(move || {
                let mut tracker = Tracker::new(first);
                while sleep(d.poll_interval(), &stop2) {
                    let polled = poll(&mut tracker, &d, &opts, &stop2);
                    let mut st = status2.lock().unwrap_or_else(|p| p.into_inner());
                    st.polls += 1;
                    let c = match polled {
                        Ok(c) => c,
                        Err(e) => {
                            st.last_error = Some(e.to_string());
                            continue;
                        }
                    };
                    if tracker.offer(&c) == Offer::Ignore {
                        st.ignored += 1;
                        continue;
                    }
                    match apply(servers_for(&c, flavor)) {
                        None => return,
                        Some(Err(e)) => st.last_error = Some(e.to_string()),
                        Some(Ok(())) => {
                            crate::observe::discovery_applied(
                                &d.endpoint().addr,
                                c.version,
                                c.nodes.len(),
                            );
                            (st.version, st.nodes) = (c.version, c.nodes.len());
                            st.applied += 1;
                            tracker.applied(c);
                        }
                    }
                }
            })
            .ok();
        Some(Poller {
            stop,
            status,
            thread,
        })
    }

    /// What the poll has done so far.
    pub(crate) fn status(&self) -> DiscoveryStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // the poll's own thread may drop the last client: it ends by itself then
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// One poll: ask each candidate until one answers. The error of the last one when none does.
fn poll(
    tracker: &mut Tracker,
    d: &Discovery,
    opts: &ConnOptions,
    stop: &AtomicBool,
) -> Result<ClusterConfig> {
    let mut last = None;
    for node in tracker.candidates(d.endpoint(), d.kind()) {
        // a drop waits for at most the request in flight, not for every node's
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match ask(&node, opts, node == *d.endpoint()) {
            Ok(c) => return Ok(c),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::Config("no node to ask".into())))
}

/// Sleep `d` in short steps; `false` once `stop` is set.
fn sleep(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, ip: &str, port: u16) -> ClusterNode {
        ClusterNode {
            host: host.into(),
            ip: ip.into(),
            port,
        }
    }

    fn config(version: u64, nodes: Vec<ClusterNode>) -> ClusterConfig {
        ClusterConfig { version, nodes }
    }

    #[test]
    fn each_flavor_names_a_node_as_its_peer_does() {
        let c = config(
            1,
            vec![
                node("a.cache", "10.0.0.1", 11211),
                node("", "10.0.0.2", 11212),
                node("c.cache", "", 11211),
            ],
        );
        let names = |f| {
            servers_for(&c, f)
                .iter()
                .map(|s| format!("{}@{}", s.addr, s.connect_host()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(Flavor::Libmemcached),
            [
                "a.cache:11211@10.0.0.1",
                "localhost:11212@10.0.0.2",
                "c.cache:11211@c.cache"
            ]
        );
        assert_eq!(
            names(Flavor::LibmemcachedModula),
            [
                "a.cache:11211@10.0.0.1",
                "localhost:11212@10.0.0.2",
                "c.cache:11211@c.cache"
            ]
        );
        for java in [
            Flavor::AwsJavaKetama,
            Flavor::SpymemcachedModula,
            Flavor::Spymemcached,
        ] {
            assert_eq!(
                names(java),
                [
                    "10.0.0.1:11211@10.0.0.1",
                    "10.0.0.2:11212@10.0.0.2",
                    "c.cache:11211@c.cache"
                ]
            );
        }
        assert_eq!(
            names(Flavor::Twemproxy),
            [
                "a.cache:11211@10.0.0.1",
                "10.0.0.2:11212@10.0.0.2",
                "c.cache:11211@c.cache"
            ]
        );
        assert!(
            servers_for(&c, Flavor::Libmemcached)
                .iter()
                .all(|s| s.weight == 1)
        );
    }

    /// An endpoint on a free port that answers one request with `reply`, a byte every `pause`
    /// (all at once when zero).
    fn answer(reply: Vec<u8>, pause: Duration) -> (Server, std::thread::JoinHandle<()>) {
        use std::io::{Read as _, Write as _};
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = Server::new("127.0.0.1", l.local_addr().expect("addr").port());
        let t = std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 256];
                let _ = s.read(&mut buf);
                for chunk in reply.chunks(if pause.is_zero() {
                    reply.len().max(1)
                } else {
                    1
                }) {
                    if s.write_all(chunk).is_err() {
                        return;
                    }
                    std::thread::sleep(pause);
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        (endpoint, t)
    }

    /// The discovery connection is a `Link` as the clients' are: bytes the endpoint sends
    /// after its reply fail the request (they could be a forged configuration's start), and a
    /// reply that trickles in a byte at a time still ends at the read timeout.
    #[test]
    fn unasked_bytes_after_a_configuration_fail_the_request() {
        let body = "1\nhost|127.0.0.1|11211\n";
        let good = format!("CONFIG cluster 0 {}\r\n{body}\r\nEND\r\n", body.len());
        let (endpoint, t) = answer(good.clone().into_bytes(), Duration::ZERO);
        let c = fetch(&endpoint, Duration::from_millis(500)).expect("a configuration");
        assert_eq!(c.version, 1);
        drop(t.join());
        let (endpoint, t) = answer(
            format!("{good}VALUE x 0 1\r\n").into_bytes(),
            Duration::ZERO,
        );
        let e = fetch(&endpoint, Duration::from_millis(500)).expect_err("bytes after the reply");
        assert!(e.to_string().contains("unasked"), "{e}");
        drop(t.join());
        let (endpoint, t) = answer(good.into_bytes(), Duration::from_millis(20));
        let e = fetch(&endpoint, Duration::from_millis(150)).expect_err("too slow in all");
        assert!(matches!(e, Error::Timeout { op: "read", .. }), "{e:?}");
        drop(t.join());
    }

    #[test]
    fn fetch_waits_the_timeout_it_is_given() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = Server::new("127.0.0.1", l.local_addr().expect("addr").port());
        // accepted and never answered
        let held = std::thread::spawn(move || l.accept().map(|(s, _)| s));
        let e = fetch(&endpoint, Duration::from_millis(150)).expect_err("no answer");
        assert!(
            matches!(e, Error::Timeout { op: "read", after, .. } if after == Duration::from_millis(150)),
            "{e:?}"
        );
        drop(held.join());
        // a closed port: refused, not a timeout
        let e = fetch(&endpoint, Duration::from_millis(150)).expect_err("refused");
        assert!(matches!(e, Error::Io { op: "connect", .. }), "{e:?}");
    }

    /// A loopback listener with a backlog of 0 whose queue is full (`held` connected and never
    /// accepted): Linux drops the SYN of any further connect (`tcp_conn_request`), so it waits
    /// for its timeout. The listener's descriptor and port.
    fn full_listener(held: &mut Vec<std::net::TcpStream>) -> (std::os::fd::OwnedFd, u16) {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket calls on a descriptor this function owns; `sa` and `len` are
        // valid for the sizes passed.
        let (fd, port) = unsafe {
            let raw = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(raw >= 0, "socket");
            let fd = std::os::fd::OwnedFd::from_raw_fd(raw);
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let p = (&raw mut sa).cast::<libc::sockaddr>();
            assert_eq!(libc::bind(raw, p, len), 0, "bind");
            assert_eq!(libc::listen(raw, 0), 0, "listen");
            assert_eq!(libc::getsockname(raw, p, &raw mut len), 0, "getsockname");
            (fd, u16::from_be(sa.sin_port))
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        for _ in 0..16 {
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(s) => held.push(s),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return (fd, port),
                Err(e) => panic!("connect to the listener: {e}"),
            }
        }
        panic!("the listener's queue never filled");
    }

    #[test]
    fn fetch_bounds_a_connect_that_gets_no_answer_by_its_timeout() {
        let mut held = Vec::new();
        let (_listener, port) = full_listener(&mut held);
        let endpoint = Server::new("127.0.0.1", port);
        // ConnOptions' default connect timeout is 500 ms: 150 ms is this call's own
        let e = fetch(&endpoint, Duration::from_millis(150)).expect_err("no accept");
        assert!(
            matches!(e, Error::Timeout { op: "connect", after, .. } if after == Duration::from_millis(150)),
            "{e:?}"
        );
    }

    #[test]
    fn only_a_newer_version_with_other_nodes_is_applied() {
        let a = vec![node("a", "10.0.0.1", 11211)];
        let b = vec![node("b", "10.0.0.2", 11211)];
        let t = Tracker::new(config(5, a.clone()));
        assert_eq!(t.offer(&config(6, b.clone())), Offer::Apply);
        assert_eq!(t.offer(&config(5, b.clone())), Offer::Ignore);
        assert_eq!(t.offer(&config(4, b.clone())), Offer::Ignore);
        assert_eq!(t.offer(&config(7, a)), Offer::Ignore);
        // a version far ahead would freeze discovery: ignored
        assert_eq!(t.offer(&config(u64::MAX, b.clone())), Offer::Ignore);
        assert_eq!(
            t.offer(&config(5 + MAX_VERSION_JUMP + 1, b.clone())),
            Offer::Ignore
        );
        assert_eq!(t.offer(&config(5 + MAX_VERSION_JUMP, b)), Offer::Apply);
    }

    #[test]
    fn elasticache_polls_ask_each_data_node_in_turn_then_the_endpoint() {
        let endpoint: Server = "cfg.cache:11211".parse().expect("parses");
        let mut t = Tracker::new(config(
            1,
            vec![
                node("a", "10.0.0.1", 11211),
                node("b", "10.0.0.2", 11211),
                node("c", "10.0.0.3", 11211),
            ],
        ));
        let order = |t: &mut Tracker, kind| {
            t.candidates(&endpoint, kind)
                .iter()
                .map(|s| s.connect_host().to_owned())
                .collect::<Vec<_>>()
        };
        let k = DiscoveryKind::ElastiCache;
        assert_eq!(
            order(&mut t, k),
            ["10.0.0.1", "10.0.0.2", "10.0.0.3", "cfg.cache"]
        );
        assert_eq!(
            order(&mut t, k),
            ["10.0.0.2", "10.0.0.3", "10.0.0.1", "cfg.cache"]
        );
        assert_eq!(
            order(&mut t, k),
            ["10.0.0.3", "10.0.0.1", "10.0.0.2", "cfg.cache"]
        );
        assert_eq!(
            order(&mut t, k),
            ["10.0.0.1", "10.0.0.2", "10.0.0.3", "cfg.cache"]
        );
        assert_eq!(order(&mut t, DiscoveryKind::Memorystore), ["cfg.cache"]);
        // the rotation goes on from where it was over the new nodes
        t.applied(config(
            2,
            vec![node("d", "10.0.0.4", 11211), node("e", "10.0.0.5", 11211)],
        ));
        assert_eq!(order(&mut t, k), ["10.0.0.5", "10.0.0.4", "cfg.cache"]);
        assert_eq!(order(&mut t, k), ["10.0.0.4", "10.0.0.5", "cfg.cache"]);
    }
}
