//! Managed memcached in the library, both clients: a node replaced under the same name (a new
//! address from the resolver), resolution bounded by the connect timeout, and discovery that
//! follows a new configuration version, and a discovery endpoint that trickles its reply.
//!
//! Servers on 127.0.33.x (no other test binary uses 127.0.33.x); the discovery endpoint is
//! `tests/fakes/elasticache_config.py`, serving the documented bytes.

mod common;

use common::servers::{Memcached, Owned, free_port};
use memshard::discovery::Discovery;
use memshard::settings::Resolve;
use memshard::{Client, Expiry, Flavor, Server};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A name → address table a test can change: a DNS record repointed.
#[derive(Debug, Clone, Default)]
struct Table(Arc<Mutex<HashMap<String, SocketAddr>>>);

impl Table {
    fn point(&self, name: &str, to: SocketAddr) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), to);
    }
}

impl Resolve for Table {
    fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<SocketAddr>> {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.get(host)
            .map(|a| vec![*a])
            .ok_or_else(|| std::io::ErrorKind::NotFound.into())
    }
}

/// A resolver that never answers in time.
#[derive(Debug)]
struct Sick;

impl Resolve for Sick {
    fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<SocketAddr>> {
        std::thread::sleep(Duration::from_secs(5));
        Err(std::io::ErrorKind::TimedOut.into())
    }
}

/// Node `cache-a.test` on 127.0.33.`old`, and a replacement on 127.0.33.`new` at the same port.
fn pair(old: u8, new: u8) -> (Memcached, Memcached, u16) {
    loop {
        let port = free_port(Ipv4Addr::new(127, 0, 33, old));
        let a = Memcached::start(Ipv4Addr::new(127, 0, 33, old), port, "");
        if std::net::TcpListener::bind((Ipv4Addr::new(127, 0, 33, new), port)).is_ok() {
            let b = Memcached::start(Ipv4Addr::new(127, 0, 33, new), port, "");
            return (a, b, port);
        }
    }
}

/// [`pair`], and a table pointing `cache-a.test` at the old node.
fn named_pair(old: u8, new: u8) -> (Memcached, Memcached, u16, Table) {
    let (a, b, port) = pair(old, new);
    let table = Table::default();
    table.point("cache-a.test", a.sock());
    (a, b, port, table)
}

/// What the replaced-node scenario saw: errors while the name moved, and where keys went.
fn replaced_node(
    set: impl Fn(&str) -> memshard::Result<()>,
    table: &Table,
    a: Memcached,
    b: &Memcached,
) -> usize {
    set("before").expect("set on the first address");
    assert!(
        a.raw_get(b"before").is_some(),
        "the key went to the old address"
    );
    table.point("cache-a.test", b.sock());
    drop(a);
    let mut errors = 0;
    for i in 0..50 {
        if set(&format!("after:{i}")).is_err() {
            errors += 1;
        }
    }
    for i in 0..50 {
        let k = format!("after:{i}");
        if errors == 0 {
            assert!(
                b.raw_get(k.as_bytes()).is_some(),
                "{k} is not on the new address"
            );
        }
    }
    errors
}

#[test]
fn a_replaced_node_is_reached_at_its_new_address_by_name() {
    let (a, b, port, table) = named_pair(1, 2);
    let client = Client::builder()
        .servers([Server::new("cache-a.test", port)])
        .resolver(table.clone())
        .build()
        .expect("builds");
    let set = |k: &str| client.set(k, "v", Expiry::NEVER).map(|_| ());
    let errors = replaced_node(set, &table, a, &b);
    // the pooled connection to the gone address fails its idle check: a new one resolves again
    assert_eq!(errors, 0, "requests failed while the name moved");
    // placement stays on the name
    assert_eq!(
        client.ring().servers()[0].addr,
        format!("cache-a.test:{port}")
    );
}

#[cfg(feature = "async")]
#[test]
fn a_replaced_node_is_reached_at_its_new_address_by_name_async() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (a, b, port, table) = named_pair(3, 4);
    let client = rt.block_on(async {
        memshard::aio::Client::builder()
            .servers([Server::new("cache-a.test", port)])
            .resolver(table.clone())
            .build()
            .expect("builds")
    });
    let set = |k: &str| rt.block_on(client.set(k, "v", Expiry::NEVER)).map(|_| ());
    let errors = replaced_node(set, &table, a, &b);
    assert_eq!(errors, 0, "requests failed while the name moved");
    assert_eq!(
        client.ring().servers()[0].addr,
        format!("cache-a.test:{port}")
    );
}

#[test]
fn resolution_is_bounded_by_the_connect_timeout() {
    let client = Client::builder()
        .servers([Server::new("cache-sick.test", 11211)])
        .resolver(Sick)
        .connect_timeout(Duration::from_millis(200))
        .build()
        .expect("builds");
    let t = Instant::now();
    let e = client.get("k").expect_err("no address in time");
    let took = t.elapsed();
    // the resolver answers after 5 s; the wait ends at the 200 ms connect timeout
    assert!(
        took < Duration::from_secs(3),
        "waited {took:?} for the resolver"
    );
    assert!(
        matches!(e, memshard::Error::Timeout { op: "resolve", .. }),
        "{e:?}"
    );
}

fn fakes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes")
}

/// The discovery endpoint serving `dir/config.txt`, and its address.
fn endpoint(dir: &Path) -> (Owned, String) {
    let ready = dir.join("ready");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(fakes().join("elasticache_config.py"))
        .args(["--listen", "127.0.33.9:0", "--config"])
        .arg(dir.join("config.txt"))
        .arg("--log")
        .arg(dir.join("polls.log"))
        .stdout(std::fs::File::create(&ready).expect("ready file"))
        .stderr(std::process::Stdio::null());
    let owned = Owned::spawn(cmd).expect("python3 runs the fake");
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(&ready).unwrap_or_default();
        if let Some(port) = text
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse::<u16>().ok())
        {
            return (owned, format!("127.0.33.9:{port}"));
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the fake never got ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn serve(dir: &Path, body: &str) {
    std::fs::write(dir.join("config.tmp"), body).expect("write");
    std::fs::rename(dir.join("config.tmp"), dir.join("config.txt")).expect("rename");
}

fn body(version: u64, nodes: &[&Memcached]) -> String {
    let e: Vec<String> = nodes
        .iter()
        .enumerate()
        .map(|(i, m)| format!("n{i}.cache|{}|{}", m.sock().ip(), m.sock().port()))
        .collect();
    format!("{version}\n{}\n", e.join(" "))
}

/// Both clients: the first configuration at build, a newer one applied by the poll, an older
/// one ignored, a malformed one kept out (the nodes stay).
#[test]
fn discovery_follows_newer_versions_in_both_clients() {
    let dir = std::env::temp_dir().join(format!("memshard-managed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let m: Vec<Memcached> = (5..8)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 33, i), 0, ""))
        .collect();
    serve(&dir, &body(1, &[&m[0], &m[1]]));
    let (_fake, ep) = endpoint(&dir);
    let d = Discovery::new(&ep)
        .expect("endpoint")
        .interval(Duration::from_millis(100));
    let blocking = Client::builder()
        .discover(d.clone())
        .flavor(Flavor::LibmemcachedModula)
        .build()
        .expect("builds from the first configuration");
    let built = Instant::now();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    #[cfg(feature = "async")]
    let asynchronous = rt.block_on(async {
        memshard::aio::Client::builder()
            .discover(d.clone())
            .flavor(Flavor::SpymemcachedModula)
            .build()
            .expect("builds")
    });
    let _ = &rt;
    let wait_for = |what: &str, f: &dyn Fn() -> bool| {
        let t = Instant::now();
        while !f() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{what} never happened"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        t.elapsed()
    };
    assert_eq!(blocking.ring().servers().len(), 2);
    let first = blocking.discovery().expect("a discovery status");
    assert_eq!(
        (first.version, first.nodes, first.applied),
        (1, 2, 1),
        "{first:?}"
    );
    assert!(first.last_error.is_none(), "{first:?}");
    serve(&dir, &body(2, &[&m[0], &m[1], &m[2]]));
    let took = wait_for("version 2", &|| {
        blocking.discovery().is_some_and(|s| s.version == 2)
    });
    println!("blocking: version 2 applied {took:?} after the change (poll every 100 ms)");
    assert_eq!(blocking.ring().servers().len(), 3);
    #[cfg(feature = "async")]
    {
        wait_for("async version 2", &|| {
            asynchronous.discovery().is_some_and(|s| s.version == 2)
        });
        assert_eq!(asynchronous.ring().servers().len(), 3);
        // every key routed to the new node lands there
        for i in 0..60 {
            let k = format!("async:{i}");
            rt.block_on(asynchronous.set(&k, "v", Expiry::NEVER))
                .expect("set");
        }
        assert!(m[2].stat("curr_items") > 0, "the new node holds no key");
    }
    // an older version and a malformed reply change nothing
    // Version 2 polls are ignored too (not newer): count from here. At most one poll was in
    // flight while the file changed, so three more ignored ones include two of version 1.
    let before = blocking.discovery().expect("status").ignored;
    serve(&dir, &body(1, &[&m[0]]));
    wait_for("polls of the older version", &|| {
        blocking
            .discovery()
            .is_some_and(|s| s.ignored >= before + 3)
    });
    serve(&dir, "3\nbroken\n");
    wait_for("a failed poll", &|| {
        blocking
            .discovery()
            .is_some_and(|s| s.last_error.is_some_and(|e| e.contains("host|ip|port")))
    });
    let s = blocking.discovery().expect("status");
    assert_eq!((s.version, s.nodes, s.applied), (2, 3, 2), "{s:?}");
    assert!(s.polls >= s.ignored + 2, "every poll counted: {s:?}");
    // one poll per interval, never a busy loop
    let most = built.elapsed().as_millis() / 100 + 3;
    assert!(
        u128::from(s.polls) <= most,
        "{} polls, at most {most} expected",
        s.polls
    );
    assert_eq!(blocking.ring().servers().len(), 3);
    for i in 0..60 {
        blocking
            .set(format!("blocking:{i}"), "v", Expiry::NEVER)
            .expect("the nodes in force still serve");
    }
    // the polls end with the clients
    drop(blocking);
    #[cfg(feature = "async")]
    drop(asynchronous);
    let polls = || {
        std::fs::read_to_string(dir.join("polls.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let after_drop = polls();
    // a poll that must not come: nothing to wait for, five intervals to give it the chance
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(polls(), after_drop, "a dropped client still polls");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that answers every `get` line with `END` and records the lines.
fn line_recorder() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.33.10:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = lines.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut w = s.try_clone().expect("clone");
                for line in BufReader::new(s).lines().map_while(|l| l.ok()) {
                    let reply: &[u8] = if line.starts_with("version") {
                        b"VERSION 1.6.21\r\n"
                    } else {
                        b"END\r\n"
                    };
                    seen.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                    if w.write_all(reply).is_err() {
                        break;
                    }
                }
            });
        }
    });
    (addr, lines)
}

/// Both clients split a multi-key get by the caps: no line over 3 keys or 40 bytes.
#[test]
fn request_caps_bound_every_get_line_in_both_clients() {
    let keys: Vec<String> = (0..10).map(|i| format!("caps:key:{i}")).collect();
    let check = |lines: &Arc<Mutex<Vec<String>>>| {
        let lines = lines.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let gets: Vec<&String> = lines.iter().filter(|l| l.starts_with("get ")).collect();
        let asked: usize = gets.iter().map(|l| l.split(' ').count() - 1).sum();
        assert_eq!(asked, 10, "{gets:?}");
        for l in &gets {
            assert!(l.split(' ').count() - 1 <= 3, "{l}");
            assert!(l.len() + 2 <= 40, "{l}");
        }
        gets.len()
    };
    let (addr, lines) = line_recorder();
    let server = Server::new(addr.ip().to_string(), addr.port());
    let client = Client::builder()
        .servers([server.clone()])
        .request_caps(3, 40)
        .build()
        .expect("builds");
    let hits = client.get_multi(&keys);
    assert!(hits.iter().all(|h| matches!(h, Ok(None))), "{hits:?}");
    // "get caps:key:0 caps:key:1 caps:key:2\r\n" is 38 bytes: 3 keys fit, 4 lines in all
    assert_eq!(check(&lines), 4);
    let refused = Client::builder()
        .servers([server.clone()])
        .request_caps(0, 40)
        .build();
    assert!(matches!(refused, Err(memshard::Error::Setting(_))));
    #[cfg(feature = "async")]
    {
        let (addr, lines) = line_recorder();
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async {
            let client = memshard::aio::Client::builder()
                .servers([Server::new(addr.ip().to_string(), addr.port())])
                .request_caps(3, 40)
                .build()
                .expect("builds");
            let hits = client.get_multi(&keys).await;
            assert!(hits.iter().all(|h| matches!(h, Ok(None))), "{hits:?}");
        });
        assert_eq!(check(&lines), 4);
    }
}

/// The old node still answers after its name moved: the pooled connections to it go at the
/// first failure (the name is looked up again), never carrying keys to the old address.
fn moved_while_the_old_node_answers(
    set: &dyn Fn(&str) -> memshard::Result<()>,
    table: &Table,
    a: &Memcached,
    b: &Memcached,
) {
    set("warm").expect("set on the first address");
    assert!(a.raw_get(b"warm").is_some());
    table.point("cache-a.test", b.sock());
    a.signal("STOP");
    let failed = set("during");
    a.signal("CONT");
    assert!(failed.is_err(), "a stopped node answered");
    for i in 0..20 {
        let k = format!("moved:{i}");
        set(&k).expect("set after the move");
        assert!(
            b.raw_get(k.as_bytes()).is_some(),
            "{k} not on the new address"
        );
        assert!(
            a.raw_get(k.as_bytes()).is_none(),
            "{k} went to the old address"
        );
    }
}

fn patient() -> memshard::FailurePolicy {
    // never marked down: marking down drops the connections by itself, which would hide
    // whether the failed connection's name lookup did
    memshard::FailurePolicy::new(0, Duration::from_secs(1), false)
}

#[test]
fn connections_to_an_old_address_go_after_a_failure() {
    let (a, b, port, table) = named_pair(11, 12);
    let client = Client::builder()
        .servers([Server::new("cache-a.test", port)])
        .resolver(table.clone())
        .min_idle(3)
        .pool_size(4)
        .read_timeout(Duration::from_millis(300))
        .failure_policy(patient())
        .build()
        .expect("builds");
    let set = |k: &str| client.set(k, "v", Expiry::NEVER).map(|_| ());
    moved_while_the_old_node_answers(&set, &table, &a, &b);
}

#[cfg(feature = "async")]
#[test]
fn connections_to_an_old_address_go_after_a_failure_async() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (a, b, port, table) = named_pair(13, 14);
    let client = rt.block_on(async {
        memshard::aio::Client::builder()
            .servers([Server::new("cache-a.test", port)])
            .resolver(table.clone())
            .pool_size(4)
            .read_timeout(Duration::from_millis(300))
            .failure_policy(patient())
            .build()
            .expect("builds")
    });
    // several connections to the old address, idle in the pool
    rt.block_on(async {
        let sets: Vec<_> = (0..4)
            .map(|i| {
                let c = client.clone();
                tokio::spawn(async move { c.set(format!("warm:{i}"), "v", Expiry::NEVER).await })
            })
            .collect();
        for s in sets {
            s.await.expect("task").expect("warm");
        }
    });
    let set = |k: &str| rt.block_on(client.set(k, "v", Expiry::NEVER)).map(|_| ());
    moved_while_the_old_node_answers(&set, &table, &a, &b);
}

/// A discovery endpoint on 127.0.33.40 that answers `config get cluster` with `body`: at once
/// on the first `fast` connections, then one byte every 300 ms. Its address.
fn trickling_endpoint(body: String, fast: usize) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener =
        std::net::TcpListener::bind((Ipv4Addr::new(127, 0, 33, 40), 0)).expect("listens");
    let addr = listener.local_addr().expect("address").to_string();
    let reply = format!("CONFIG cluster 0 {}\r\n{body}\r\nEND\r\n", body.len());
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(conn) = conn else { return };
            let reply = reply.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut r = BufReader::new(conn.try_clone().expect("clone"));
                if r.read_line(&mut line).is_err() {
                    return;
                }
                let mut w = conn;
                if i < fast {
                    let _ = w.write_all(reply.as_bytes());
                    return;
                }
                for b in reply.bytes() {
                    if w.write_all(&[b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            });
        }
    });
    addr
}

/// A discovery endpoint on 127.0.33.43 that answers the first `config get cluster` at once and
/// holds every later one: it says when one is held (`held`), and writes the reply when
/// `release` is sent, recording "released" in `events` just before.
fn held_endpoint(
    body: String,
    events: Arc<Mutex<Vec<&'static str>>>,
) -> (
    String,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    use std::io::{BufRead, BufReader, Write};
    let listener =
        std::net::TcpListener::bind((Ipv4Addr::new(127, 0, 33, 43), 0)).expect("listens");
    let addr = listener.local_addr().expect("address").to_string();
    let reply = format!("CONFIG cluster 0 {}\r\n{body}\r\nEND\r\n", body.len());
    let (held_tx, held) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut asked = 0;
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut r = BufReader::new(conn.try_clone().expect("clone"));
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                asked += 1;
                line.clear();
                if asked > 1 {
                    let _ = held_tx.send(());
                    if release_rx.recv().is_err() {
                        return;
                    }
                    events.lock().expect("events").push("released");
                }
                if conn.write_all(reply.as_bytes()).is_err() {
                    break;
                }
            }
        }
    });
    (addr, held, release)
}

/// Dropping a client waits for the poll in flight: it returns only after the endpoint has
/// answered that poll, so no poll outlives the client (the poller's thread is joined).
#[test]
fn drop_waits_for_the_poll_in_flight() {
    let m = Memcached::start(Ipv4Addr::new(127, 0, 33, 44), 0, "");
    let events = Arc::new(Mutex::new(Vec::new()));
    let (ep, held, release) = held_endpoint(body(1, &[&m]), events.clone());
    let client = Client::builder()
        .discover(
            Discovery::new(&ep)
                .expect("endpoint")
                .interval(Duration::from_millis(50)),
        )
        // far longer than the test: the poll ends by its answer, not by its timeout
        .read_timeout(Duration::from_secs(60))
        .build()
        .expect("the first configuration comes at once");
    held.recv_timeout(Duration::from_secs(60))
        .expect("a poll reaches the endpoint");
    let dropper = {
        let events = events.clone();
        std::thread::spawn(move || {
            drop(client);
            events.lock().expect("events").push("dropped");
        })
    };
    // time for a drop that does not wait to return (and record it) before the answer
    std::thread::sleep(Duration::from_millis(300));
    release.send(()).expect("the endpoint holds the poll");
    dropper.join().expect("drop");
    assert_eq!(*events.lock().expect("events"), ["released", "dropped"]);
}

/// An endpoint that trickles its reply a byte at a time never trips a per-read timeout; the
/// read timeout bounds the whole reply: the build fails in both clients within it (the
/// trickle would take 20 s), with the timeout.
#[test]
fn a_trickling_discovery_endpoint_fails_the_build_within_the_read_timeout() {
    let m = Memcached::start(Ipv4Addr::new(127, 0, 33, 41), 0, "");
    let ep = trickling_endpoint(body(1, &[&m]), 0);
    let d = Discovery::new(&ep).expect("endpoint");
    let read_timeout = Duration::from_millis(800);
    let check = |e: memshard::Error, took: Duration, who: &str| {
        assert!(
            matches!(e, memshard::Error::Timeout { op: "read", after, .. } if after == read_timeout),
            "{who}: {e:?}"
        );
        // the connect, then at most the read timeout: far below the 20 s of the trickle
        assert!(
            took < Duration::from_secs(5),
            "{who}: the build took {took:?}"
        );
    };
    let t = Instant::now();
    let e = Client::builder()
        .discover(d.clone())
        .read_timeout(read_timeout)
        .build()
        .expect_err("no configuration in time");
    check(e, t.elapsed(), "blocking");
    #[cfg(feature = "async")]
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let t = Instant::now();
            let e = memshard::aio::Client::builder()
                .discover(d)
                .read_timeout(read_timeout)
                .build()
                .expect_err("no configuration in time");
            check(e, t.elapsed(), "async");
        });
}

/// A poll of an endpoint that starts to trickle: the poll records the timeout and goes on, and
/// dropping the client does not wait for the trickle.
#[test]
fn a_poll_of_a_trickling_endpoint_records_the_timeout_and_drop_does_not_wait() {
    let m = Memcached::start(Ipv4Addr::new(127, 0, 33, 42), 0, "");
    let ep = trickling_endpoint(body(1, &[&m]), 1);
    let client = Client::builder()
        .discover(
            Discovery::new(&ep)
                .expect("endpoint")
                .interval(Duration::from_millis(100)),
        )
        .read_timeout(Duration::from_millis(800))
        .build()
        .expect("the first configuration comes at once");
    let t = Instant::now();
    let error = loop {
        let st = client.discovery().expect("discovery");
        if let Some(e) = st.last_error {
            break e;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no poll error after {:?}: {st:?}",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(error.contains("timeout after 800 ms"), "{error}");
    // a poll is in flight (the endpoint trickles every poll): drop ends it within the timeout
    let t = Instant::now();
    drop(client);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(5), "drop took {took:?}");
}

/// Memorystore: only the discovery endpoint is polled; its data nodes (recorders here) never
/// get a discovery command, where ElastiCache's would be asked first.
#[test]
fn a_memorystore_poll_asks_only_the_endpoint() {
    let (a, a_lines) = line_recorder();
    let (b, b_lines) = line_recorder();
    let body = format!(
        "1\nn0.cache|{}|{} n1.cache|{}|{}\n",
        a.ip(),
        a.port(),
        b.ip(),
        b.port()
    );
    let ep = trickling_endpoint(body, usize::MAX);
    let client = Client::builder()
        .discover(
            Discovery::memorystore(&ep)
                .expect("endpoint")
                .interval(Duration::from_millis(50)),
        )
        .flavor(Flavor::LibmemcachedModula)
        .build()
        .expect("builds");
    let t = Instant::now();
    while client.discovery().expect("discovery").polls < 5 {
        assert!(t.elapsed() < Duration::from_secs(60), "no 5 polls in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = client.discovery().expect("discovery");
    assert_eq!(st.last_error, None, "{st:?}");
    // the nodes serve requests, never discovery
    assert_eq!(client.get("k").expect("a miss"), None);
    drop(client);
    let lines: Vec<String> = [a_lines, b_lines]
        .iter()
        .flat_map(|l| l.lock().unwrap_or_else(|p| p.into_inner()).clone())
        .collect();
    assert!(
        lines
            .iter()
            .all(|l| !l.starts_with("config") && !l.contains("AmazonElastiCache")),
        "a data node was asked for the configuration: {lines:?}"
    );
    assert!(lines.iter().any(|l| l.starts_with("get k")), "{lines:?}");
}

/// Connections `m` accepted while `requests` ran (its `total_connections`, less the `stats`
/// connection that reads it).
fn opened_by(m: &Memcached, requests: impl FnOnce()) -> u64 {
    let before = m.stat("total_connections");
    requests();
    m.stat("total_connections") - before - 1
}

/// A new connection to the address the others reached retires none of them: a pool of 4 with
/// 3 kept idle opens at most 4 connections for 40 requests one after another, in both
/// clients (retiring the older ones at each connect would reconnect at every checkout).
#[test]
fn connections_to_the_same_address_are_kept_in_both_clients() {
    let m = Memcached::start(Ipv4Addr::new(127, 0, 33, 50), 0, "");
    let server = || Server::new(m.sock().ip().to_string(), m.sock().port());
    let opened = opened_by(&m, || {
        let client = Client::builder()
            .servers([server()])
            .pool_size(4)
            .min_idle(3)
            .build()
            .expect("builds");
        for i in 0..40 {
            client
                .set(format!("blocking:{i}"), "v", Expiry::NEVER)
                .expect("set");
        }
    });
    assert!(
        opened <= 4,
        "blocking: {opened} connections for 40 requests"
    );
    #[cfg(feature = "async")]
    {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let opened = opened_by(&m, || {
            rt.block_on(async {
                let client = memshard::aio::Client::builder()
                    .servers([server()])
                    .pool_size(4)
                    .min_idle(3)
                    .build()
                    .expect("builds");
                for i in 0..40 {
                    client
                        .set(format!("async:{i}"), "v", Expiry::NEVER)
                        .await
                        .expect("set");
                }
            })
        });
        assert!(opened <= 4, "async: {opened} connections for 40 requests");
    }
}
