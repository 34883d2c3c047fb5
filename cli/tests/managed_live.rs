//! Managed memcached through the `memshard` command: cluster auto discovery against a faithful
//! ElastiCache / Memorystore endpoint (`tests/fakes/elasticache_config.py`, serving the
//! documented bytes) in front of real memcached, and MemCachier's login against a MemCachier-like
//! front (`tests/fakes/memcachier_front.py`) in front of real memcached.
//!
//! Servers on 127.0.32.x (free ports; no other test binary uses 127.0.32.x).

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::TempDir;
use common::servers::{Memcached, Owned};
use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::describe;

const FAKE_IP: &str = "127.0.32.9";

fn fakes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fakes")
}

/// A fake started with `args`, and the port it printed (`READY <port>`).
fn start_fake(script: &str, args: &[&str], dir: &Path) -> (Owned, u16) {
    let ready = dir.join(format!("{script}.ready"));
    let _ = fs::remove_file(&ready);
    let mut cmd = Command::new("python3");
    cmd.arg(fakes().join(script))
        .args(args)
        .stdout(fs::File::create(&ready).expect("ready file"))
        .stderr(Stdio::null());
    let owned = Owned::spawn(cmd).expect("python3 runs the fake");
    let t = Instant::now();
    loop {
        let text = fs::read_to_string(&ready).unwrap_or_default();
        if let Some(port) = text
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
        {
            return (owned, port);
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{script} never got ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Write `body` as the endpoint's configuration, atomically (the fake re-reads it per request).
fn serve(dir: &Path, body: &str) {
    let tmp = dir.join("config.tmp");
    fs::write(&tmp, body).expect("write config");
    fs::rename(&tmp, dir.join("config.txt")).expect("rename config");
}

fn memshard(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    support::memshard_with(args, stdin.as_bytes(), env)
}

/// `memshard ARGS` with `stdin`, which must succeed: its lines of output (hits, for `get`).
fn hits(args: &[&str], stdin: &str) -> usize {
    let o = memshard(args, stdin, &[]);
    assert!(o.status.success(), "{}", describe(&o));
    String::from_utf8_lossy(&o.stdout).lines().count()
}

struct Cluster {
    nodes: Vec<Memcached>,
    dir: TempDir,
}

impl Cluster {
    fn start(n: u8, tag: &str) -> Cluster {
        let nodes = (1..=n)
            .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 32, i), 0, ""))
            .collect();
        Cluster {
            nodes,
            dir: TempDir::new(&format!("managed-{tag}")),
        }
    }

    /// `version` listing the nodes at `order` (indexes), each named `node-<i>.cache`.
    fn body(&self, version: u64, order: &[usize]) -> String {
        let entries: Vec<String> = order
            .iter()
            .map(|&i| {
                let s = self.nodes[i].sock();
                format!("node-{i}.cache|{}|{}", s.ip(), s.port())
            })
            .collect();
        format!("{version}\n{}\n", entries.join(" "))
    }

    fn endpoint(&self, mode: &str) -> (Owned, String) {
        let config = self.dir.path().join("config.txt");
        let (fake, port) = start_fake(
            "elasticache_config.py",
            &[
                "--listen",
                &format!("{FAKE_IP}:0"),
                "--config",
                config.to_str().expect("utf-8 path"),
                "--mode",
                mode,
            ],
            self.dir.path(),
        );
        (fake, format!("{FAKE_IP}:{port}"))
    }

    fn by_addr(&self, addr: &str) -> &Memcached {
        self.nodes
            .iter()
            .find(|m| m.addr() == addr)
            .unwrap_or_else(|| panic!("{addr} is no node"))
    }
}

/// Keys set through discovery land on the node `route --discover` names, and on no other;
/// `get --discover` reads them all back. Each flavor the AWS clients use.
#[test]
fn discovered_nodes_hold_the_keys_route_names() {
    let c = Cluster::start(3, "place");
    serve(c.dir.path(), &c.body(1, &[2, 0, 1]));
    let (_fake, ep) = c.endpoint("elasticache");
    for flavor in [
        "libmemcached-modula",
        "spymemcached-modula",
        "libmemcached",
        "aws-java-ketama",
    ] {
        let keys: Vec<String> = (0..200).map(|i| format!("{flavor}:key:{i}")).collect();
        let lines: String = keys.iter().map(|k| format!("{k}\tv-{k}\n")).collect();
        let set = memshard(&["set", "--discover", &ep, "--flavor", flavor], &lines, &[]);
        assert!(set.status.success(), "{flavor}: {}", describe(&set));
        let routed = memshard(
            &["route", "--discover", &ep, "--flavor", flavor],
            &keys.join("\n"),
            &[],
        );
        assert!(routed.status.success(), "{}", describe(&routed));
        let mut used = std::collections::BTreeSet::new();
        for line in String::from_utf8_lossy(&routed.stdout).lines() {
            let (key, addr) = line.split_once('\t').expect("KEY<TAB>ADDR");
            used.insert(addr.to_owned());
            let want = format!("v-{key}");
            assert_eq!(
                c.by_addr(addr).raw_get(key.as_bytes()).as_deref(),
                Some(want.as_bytes()),
                "{flavor}: {key} is not on {addr}"
            );
            for other in c.nodes.iter().filter(|m| m.addr() != addr) {
                assert_eq!(
                    other.raw_get(key.as_bytes()),
                    None,
                    "{flavor}: {key} also on {}",
                    other.addr()
                );
            }
        }
        assert_eq!(
            used.len(),
            3,
            "{flavor}: 200 keys over 3 nodes use them all"
        );
        let got = hits(
            &["get", "--discover", &ep, "--flavor", flavor],
            &keys.join("\n"),
        );
        assert_eq!(got, 200, "{flavor}");
        println!("{flavor}: 200 keys on the routed node, 200 read back; nodes used: {used:?}");
    }
}

/// The nodes follow the reply's order under modulo: the same nodes listed in another order
/// move keys, as they do in the AWS clients.
#[test]
fn modulo_placement_follows_the_reply_order() {
    let c = Cluster::start(3, "order");
    let keys: String = (0..300).map(|i| format!("order:{i}\n")).collect();
    let route = |order: &[usize]| {
        serve(c.dir.path(), &c.body(1, order));
        let (_fake, ep) = c.endpoint("elasticache");
        let o = memshard(
            &[
                "route",
                "--discover",
                &ep,
                "--flavor",
                "libmemcached-modula",
            ],
            &keys,
            &[],
        );
        assert!(o.status.success(), "{}", describe(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let a = route(&[0, 1, 2]);
    let b = route(&[2, 1, 0]);
    let moved = a.lines().zip(b.lines()).filter(|(x, y)| x != y).count();
    assert!(moved > 100, "only {moved} of 300 keys moved with the order");
}

/// `bench --discover … --discover-interval 1` takes a newer version, never an older one, and
/// reads no wrong value across the change; the new node serves requests.
#[test]
fn bench_follows_a_newer_version_and_ignores_an_older_one() {
    let c = Cluster::start(3, "bench");
    serve(c.dir.path(), &c.body(5, &[0, 1]));
    let (_fake, ep) = c.endpoint("elasticache");
    let dir = c.dir.path().to_path_buf();
    let (v6, v4) = (c.body(6, &[0, 1, 2]), c.body(4, &[0]));
    let third = c.nodes[2].sock();
    let changer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        serve(&dir, &v6);
        let changed = Instant::now();
        // the first request on the new node
        let mut first = None;
        while changed.elapsed() < Duration::from_secs(4) {
            let n = stat(third, "cmd_get") + stat(third, "cmd_set");
            if n > 0 {
                first = Some(changed.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(500));
        serve(&dir, &v4);
        first
    });
    let o = memshard(
        &[
            "bench",
            "--discover",
            &ep,
            "--discover-interval",
            "1",
            "--seconds",
            "6",
            "--threads",
            "4",
            "--keys",
            "2000",
            "--verify",
            "--flavor",
            "libmemcached-modula",
        ],
        "",
        &[],
    );
    let first = changer.join().expect("changer");
    let out = describe(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("wrong values: 0"), "{out}");
    assert!(out.contains("errors: 0"), "{out}");
    assert!(
        out.contains("discovery: version 6 with 3 nodes; 2 configurations applied"),
        "the newer version applied, the older one not: {out}"
    );
    let first = first.expect("the new node served a request");
    println!("version change to the first request on the new node: {first:?} (poll interval 1 s)");
}

fn stat(addr: std::net::SocketAddr, name: &str) -> u64 {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = s.write_all(b"stats\r\n");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.ends_with(b"END\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf)
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("STAT {name} "))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The legacy item on engines before 1.4.14, and Memorystore's endpoint, give the same nodes.
#[test]
fn legacy_and_memorystore_endpoints_give_the_nodes() {
    let c = Cluster::start(2, "legacy");
    serve(c.dir.path(), &c.body(3, &[1, 0]));
    let keys = "a\nb\nc\nd\ne\nf\n";
    let mut outs = Vec::new();
    for (mode, kind) in [
        ("elasticache", "elasticache"),
        ("legacy-only", "elasticache"),
        ("memorystore", "memorystore"),
    ] {
        let (_fake, ep) = c.endpoint(mode);
        let o = memshard(
            &[
                "route",
                "--discover",
                &ep,
                "--discover-kind",
                kind,
                "--flavor",
                "spymemcached-modula",
            ],
            keys,
            &[],
        );
        assert!(o.status.success(), "{mode}: {}", describe(&o));
        outs.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
    // a plain memcached is no endpoint: both requests refused or missed
    let o = memshard(
        &[
            "route",
            "--discover",
            &c.nodes[0].addr(),
            "--flavor",
            "libmemcached-modula",
        ],
        keys,
        &[],
    );
    assert!(!o.status.success(), "{}", describe(&o));
    assert!(
        describe(&o).contains("give a cluster configuration endpoint"),
        "{}",
        describe(&o)
    );
}

/// Each malformed reply fails with what is wrong with it.
#[test]
fn malformed_replies_fail_with_their_error() {
    let c = Cluster::start(1, "malformed");
    let s = c.nodes[0].sock();
    let (ip, port) = (s.ip(), s.port());
    let cases = [
        (format!("1\nnode|{ip}\n"), "is not host|ip|port"),
        (format!("1\nnode|{ip}|http\n"), "bad port"),
        (format!("1\nnode|{ip}|70000\n"), "bad port"),
        (format!("0\nnode|{ip}|{port}\n"), "version is 0"),
        ("1\n\n".to_owned(), "lists no node"),
        (
            format!("#raw\nCONFIG cluster 0 99\r\n1\nnode|{ip}|{port}\n\r\nEND\r\n"),
            "does not end at its body",
        ),
        (
            format!("#raw\nCONFIG cluster 0 5\r\n1\nnode|{ip}|{port}\n\r\nEND\r\n"),
            "does not end at its body",
        ),
    ];
    let (_fake, ep) = c.endpoint("elasticache");
    for (body, says) in cases {
        serve(c.dir.path(), &body);
        let o = memshard(
            &[
                "route",
                "--discover",
                &ep,
                "--flavor",
                "libmemcached-modula",
                "k",
            ],
            "",
            &[],
        );
        assert!(!o.status.success(), "{body:?}: {}", describe(&o));
        assert!(
            describe(&o).contains(says),
            "{body:?} should say {says:?}: {}",
            describe(&o)
        );
    }
}

/// A server list in `dir` naming `addr` alone: its path.
fn server_list(dir: &TempDir, addr: &str) -> String {
    dir.file("servers.txt", &format!("{addr}\n"))
}

/// The servers of the list at `servers`, logged in to the MemCachier way with the credentials
/// in `MC_AUTH`.
fn memcachier_auth(servers: &str) -> [&str; 6] {
    [
        "--servers",
        servers,
        "--auth-scheme",
        "memcachier",
        "--auth-env",
        "MC_AUTH",
    ]
}

/// MemCachier's login: the first command of every connection, the password never shown, the
/// login never stored.
#[test]
fn memcachier_login_through_the_cli() {
    let backend = Memcached::start(Ipv4Addr::new(127, 0, 32, 5), 0, "");
    let dir = TempDir::new("managed-memcachier");
    let (_front, port) = start_fake(
        "memcachier_front.py",
        &[
            "--listen",
            &format!("{FAKE_IP}:0"),
            "--backend",
            &backend.addr(),
            "--user",
            "app-7",
            "--password",
            "s3cret pw",
        ],
        dir.path(),
    );
    let servers = server_list(&dir, &format!("{FAKE_IP}:{port}"));
    let servers = servers.as_str();
    let good = [("MC_AUTH", "app-7:s3cret pw")];
    let auth = memcachier_auth(servers);
    let o = memshard(
        &[&["set"][..], &auth, &["greeting", "hello"]].concat(),
        "",
        &good,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let o = memshard(&[&["get"][..], &auth, &["greeting"]].concat(), "", &good);
    assert!(o.status.success(), "{}", describe(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "greeting\thello\n");
    assert_eq!(backend.raw_get(b"greeting").as_deref(), Some(&b"hello"[..]));
    assert_eq!(
        backend.raw_get(b"app-7"),
        None,
        "the login landed as an item"
    );
    // a wrong password: refused, non-zero, and the password is not printed
    let bad = [("MC_AUTH", "app-7:wr0ng-pass")];
    let o = memshard(&[&["get"][..], &auth, &["greeting"]].concat(), "", &bad);
    assert!(!o.status.success(), "{}", describe(&o));
    assert!(
        describe(&o).contains("MemCachier refused the credentials"),
        "{}",
        describe(&o)
    );
    assert!(
        !describe(&o).contains("-Y"),
        "not memcached's auth file: {}",
        describe(&o)
    );
    assert!(!describe(&o).contains("wr0ng-pass"), "{}", describe(&o));
    // a load run whose every request is refused fails, with the refusal
    let o = memshard(
        &[&["bench"][..], &auth, &["--ops", "20", "--threads", "1"]].concat(),
        "",
        &bad,
    );
    assert!(!o.status.success(), "bench exited 0: {}", describe(&o));
    assert!(
        describe(&o).contains("MemCachier refused the credentials"),
        "{}",
        describe(&o)
    );
    // the memcached -Y scheme is not MemCachier's login
    let o = memshard(
        &[
            "get",
            "--servers",
            servers,
            "--auth-env",
            "MC_AUTH",
            "greeting",
        ],
        "",
        &good,
    );
    assert!(!o.status.success(), "{}", describe(&o));
    assert!(!describe(&o).contains("s3cret"), "{}", describe(&o));
    // without credentials: the server's demand, not a value
    let o = memshard(&["get", "--servers", servers, "greeting"], "", &[]);
    assert!(!o.status.success(), "{}", describe(&o));
    assert!(
        describe(&o).contains("requires authentication"),
        "{}",
        describe(&o)
    );
    assert_eq!(backend.raw_get(b"app-7"), None);
}

/// MemCachier's login sent to a plain memcached by mistake: the server takes it for a `set` and
/// answers STORED, yet nobody can read the password back from the cache.
#[test]
fn a_memcachier_login_to_a_plain_memcached_leaves_no_secret() {
    let plain = Memcached::start(Ipv4Addr::new(127, 0, 32, 7), 0, "");
    let dir = TempDir::new("managed-memcachier-plain");
    let servers = server_list(&dir, &plain.addr());
    let auth = memcachier_auth(&servers);
    let env = [("MC_AUTH", "app-7:s3cret pw")];
    let o = memshard(
        &[&["set"][..], &auth, &["greeting", "hello"]].concat(),
        "",
        &env,
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert_eq!(plain.raw_get(b"greeting").as_deref(), Some(&b"hello"[..]));
    let logins = plain.stat("cmd_set");
    assert!(
        logins >= 2,
        "the login and the set reached the server: {logins}"
    );
    assert_eq!(plain.raw_get(b"app-7"), None, "the password is readable");
}

/// Request caps split a long `get` over several lines, seen on the wire (a recording proxy in
/// front of memcached): with 3 keys a line, 17 `get` lines of at most 3 keys; with 40 bytes a
/// line, every line at most 40 bytes (so 2 keys of these); every key asked once and every hit
/// back. Meta sends one `mg` per key whatever the caps. A cap that leaves no room is refused.
#[test]
fn request_caps_split_a_long_get() {
    use common::proxy::FaultProxy;
    let m = Memcached::start(Ipv4Addr::new(127, 0, 32, 6), 0, "");
    let proxy = FaultProxy::start(m.sock());
    let dir = TempDir::new("managed-caps");
    let servers = server_list(&dir, &proxy.addr_string());
    let servers = servers.as_str();
    let keys: Vec<String> = (0..50).map(|i| format!("capped:key:{i}")).collect();
    let lines: String = keys.iter().map(|k| format!("{k}\tv\n")).collect();
    let o = memshard(&["set", "--servers", servers], &lines, &[]);
    assert!(o.status.success(), "{}", describe(&o));
    let asked = |protocol: &str, caps: &[&str]| -> Vec<String> {
        proxy.state.start_recording();
        let mut args = vec!["get", "--servers", servers, "--protocol", protocol];
        args.extend_from_slice(caps);
        assert_eq!(hits(&args, &keys.join("\n")), 50, "{protocol} {caps:?}");
        let (requests, _) = proxy.state.recorded();
        String::from_utf8(requests)
            .expect("ASCII requests")
            .split_inclusive("\r\n")
            .map(String::from)
            .collect()
    };
    let keys_of = |lines: &[String], verb: &str| -> Vec<String> {
        let mut got: Vec<String> = lines
            .iter()
            .filter_map(|l| l.strip_prefix(verb))
            .flat_map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .collect();
        got.sort();
        got
    };
    let mut all = keys.clone();
    all.sort();
    let gets = asked("text", &["--max-keys-per-request", "3"]);
    assert_eq!(gets.len(), 17, "{gets:?}");
    assert!(
        gets.iter()
            .all(|l| l.starts_with("get ") && l.split_whitespace().count() <= 4),
        "{gets:?}"
    );
    assert_eq!(keys_of(&gets, "get "), all);
    let gets = asked("text", &["--max-request-bytes", "40"]);
    assert!(gets.iter().all(|l| l.len() <= 40), "{gets:?}");
    assert_eq!(gets.len(), 25, "{gets:?}");
    assert_eq!(keys_of(&gets, "get "), all);
    let mgs = asked(
        "meta",
        &["--max-keys-per-request", "3", "--max-request-bytes", "40"],
    );
    let mg: Vec<&String> = mgs.iter().filter(|l| l.starts_with("mg ")).collect();
    assert_eq!(mg.len(), 50, "{mgs:?}");
    let mg_keys: Vec<String> = mg
        .iter()
        .filter_map(|l| l.split_whitespace().nth(1).map(String::from))
        .collect();
    let mut mg_keys = mg_keys;
    mg_keys.sort();
    assert_eq!(mg_keys, all);
    let o = memshard(
        &["get", "--servers", servers, "--max-request-bytes", "8", "k"],
        "",
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
}

/// Where the AWS cluster clients put each key of a cluster they discovered
/// (`compat-vectors/aws-discovery/`: the AWS PHP client and the AWS Java client, each at its
/// default and in its ketama mode, run against the configuration in `config.txt`) is where
/// `memshard route --discover` puts it, served the same bytes.
#[test]
fn discovered_clusters_are_placed_as_the_aws_clients_place_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat-vectors/aws-discovery");
    let dir = TempDir::new("managed-vectors");
    let (_fake, port) = start_fake(
        "elasticache_config.py",
        &[
            "--listen",
            &format!("{FAKE_IP}:0"),
            "--config",
            dir.path().join("config.txt").to_str().expect("utf-8 path"),
        ],
        dir.path(),
    );
    let ep = format!("{FAKE_IP}:{port}");
    let (mut cases, mut keys) = (0, 0);
    for client in ["php", "java"] {
        let mut names: Vec<PathBuf> = fs::read_dir(root.join(client).join("cases"))
            .expect("cases")
            .map(|e| e.expect("entry").path())
            .collect();
        names.sort();
        for case in names {
            let meta = fs::read_to_string(case.join("meta.txt")).expect("meta.txt");
            let flavor = meta
                .lines()
                .find_map(|l| l.strip_prefix("flavor="))
                .expect("a flavor");
            serve(
                dir.path(),
                &fs::read_to_string(case.join("config.txt")).expect("config"),
            );
            let expected = fs::read_to_string(case.join("expected.tsv")).expect("expected");
            let input: String = expected
                .lines()
                .map(|l| format!("{}\n", l.split('\t').next().unwrap_or("")))
                .collect();
            let o = memshard(
                &["route", "--discover", &ep, "--flavor", flavor],
                &input,
                &[],
            );
            assert!(o.status.success(), "{}: {}", case.display(), describe(&o));
            let got = String::from_utf8_lossy(&o.stdout);
            let wrong = got
                .lines()
                .zip(expected.lines())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(
                got.lines().count(),
                expected.lines().count(),
                "{}",
                case.display()
            );
            assert_eq!(
                wrong,
                0,
                "{}: {wrong} keys placed elsewhere than the AWS client",
                case.display()
            );
            cases += 1;
            keys += expected.lines().count();
        }
    }
    println!("{cases} discovered clusters, {keys} keys: 0 placed elsewhere than the AWS clients");
    assert!(cases >= 36, "only {cases} cases");
}
