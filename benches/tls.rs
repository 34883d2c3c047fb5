//! What TLS costs: get, set, get_multi of 100 keys and connecting (a new client's first get)
//! on the blocking client, and get on the async one (with feature `async`), over TLS and over
//! plaintext, against two local memcached started here: one plaintext, one with `-Z` and a
//! certificate made at start (rcgen: a CA, and a server certificate for the IP 127.0.0.1
//! signed by it; ECDSA P-256).
//!
//!     cargo bench --features tls,async --bench tls
//!
//! Criterion measures each operation; after it, the same closures run again in plain timed
//! loops, plaintext and TLS interleaved (repetition 1 of each, then 2, ...; 5 repetitions after
//! a warm-up, medians), and a table of TLS / plaintext ratios is printed: criterion reports no
//! ratio, and timing the pair interleaved keeps load from other work off the ratio. The bench
//! and its memcached run on one CPU (see [`pin_to_one_cpu`]).
//!
//! Connecting is measured three ways: plaintext; TLS with a clone of the `TlsConfig` whose
//! session cache holds tickets from the server already (the preload's client was built from
//! it), so the handshake can be resumed; TLS with `session_resumption(false)`, a full
//! handshake every time. perf/compare.sh runs the same measurements.

use criterion::Criterion;
use memshard::{Client, Expiry, TlsConfig};
use std::hint::black_box;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REPS: usize = 5;
const KEY: &str = "bench:7";

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The certificates' directory, removed at the end.
struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// memcached on `port`; with `tls`, `-Z` with the certificate and key in that directory.
fn start(port: u16, tls: Option<&Path>) -> Server {
    let mut cmd = Command::new("memcached");
    // memcached refuses to run as root without a user to switch to
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } == 0 {
        cmd.args(["-u", "root"]);
    }
    cmd.args(["-U", "0", "-m", "64", "-t", "2", "-l", "127.0.0.1"])
        .args(["-p", &port.to_string()]);
    if let Some(dir) = tls {
        // memcached's defaults otherwise: no ssl_session_cache, which TLS 1.3 resumption
        // (stateless tickets) does not need
        cmd.arg("-Z").arg("-o").arg(format!(
            "ssl_chain_cert={},ssl_key={}",
            dir.join("server.pem").display(),
            dir.join("server.key").display()
        ));
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("memcached must be installed to run this benchmark");
    let server = Server(child);
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return server;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("memcached on port {port} did not start");
}

/// A CA and a server certificate for 127.0.0.1 signed by it, written to a new directory;
/// returns the directory and the CA's PEM.
fn certificates() -> (TempDir, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).expect("CA certificate").pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("server key");
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("server params")
        .signed_by(&key, &issuer)
        .expect("server certificate");
    let dir = std::env::temp_dir().join(format!("memshard-bench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("certificate directory");
    std::fs::write(dir.join("server.pem"), cert.pem()).expect("write server.pem");
    std::fs::write(dir.join("server.key"), key.serialize_pem()).expect("write server.key");
    (TempDir(dir), ca_pem)
}

/// Pins this thread, and so every thread and process it starts afterwards (criterion, the
/// runtime's workers, memcached), to the last CPU it may run on. Client and server then take
/// turns on one CPU, and a round trip costs what the two sides compute: across two CPUs, on
/// the 2-vCPU machine this was written on, waking the other side's idle vCPU cost anywhere
/// from ~0 to ~40 µs per round trip depending on where the scheduler put the threads, and
/// plaintext/TLS ratios moved between 0.3 and 3.9 from run to run. MEMSHARD_BENCH_NO_PIN
/// set: no pinning.
fn pin_to_one_cpu() -> Option<usize> {
    if std::env::var_os("MEMSHARD_BENCH_NO_PIN").is_some() {
        return None;
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: cpu_set_t is plain data (all zeros is the empty set); both calls get its size
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return None;
        }
        let cpu = (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&c| libc::CPU_ISSET(c, &allowed))?;
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        (libc::sched_setaffinity(0, size, &one) == 0).then_some(cpu)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// One measured operation: `run(n)` makes `n` calls and returns the time they took.
/// Criterion (`iter_custom`) and the ratio table time the same closure.
struct Op<'a> {
    name: &'static str,
    run: Box<dyn Fn(u64) -> Duration + 'a>,
}

/// `n` calls of `f`, timed.
fn timed(n: u64, f: impl Fn()) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed()
}

/// A plaintext / TLS pair (connect has two TLS rows against one plaintext closure).
struct Pair<'a> {
    what: &'static str,
    plain: &'a Op<'a>,
    tls: &'a Op<'a>,
}

/// ns per call of `op` over `calls` calls.
fn per_op(op: &Op, calls: u64) -> f64 {
    (op.run)(calls).as_nanos() as f64 / calls as f64
}

/// Calls for about 100 ms, from 10 timed calls.
fn calls_for(op: &Op) -> u64 {
    let ten = (op.run)(10).as_nanos().max(1) as f64;
    ((100e6 * 10.0 / ten) as u64).clamp(20, 5000)
}

fn fmt_us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

fn ratio_table(pairs: &[Pair], pinned: Option<usize>) {
    let cpu = match pinned {
        Some(c) => format!("bench and memcached on CPU {c}"),
        None => "not pinned".to_string(),
    };
    println!();
    println!(
        "TLS / plaintext, one server each, {cpu} (plain timed loops, plaintext and TLS \
         interleaved, median of {REPS} repetitions of ~0.1 s after a warm-up):"
    );
    println!("| operation | plaintext | TLS | TLS / plaintext |");
    println!("|---|---|---|---|");
    let mut tls_connect = Vec::new();
    for p in pairs {
        let (np, nt) = (calls_for(p.plain), calls_for(p.tls));
        black_box((per_op(p.plain, np), per_op(p.tls, nt)));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..REPS {
            a.push(per_op(p.plain, np));
            b.push(per_op(p.tls, nt));
        }
        let (a, b) = (median(a), median(b));
        println!(
            "| {} | {} | {} | {:.2} |",
            p.what,
            fmt_us(a),
            fmt_us(b),
            b / a
        );
        tls_connect.push((p.what, b));
    }
    // below 1 only when the new client resumes a session its config's earlier clients got
    let find = |w: &str| tls_connect.iter().find(|(what, _)| what.contains(w));
    if let (Some((_, r)), Some((_, f))) = (find("resumed"), find("full handshake")) {
        println!("connect over TLS, resumed / full handshake: {:.2}", r / f);
    }
}

fn main() {
    // `cargo bench -- --list` and the like: nothing to start
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let pinned = pin_to_one_cpu();
    let (dir, ca_pem) = certificates();
    let (plain_port, tls_port) = (free_port(), free_port());
    let _servers = [start(plain_port, None), start(tls_port, Some(&dir.0))];
    let plain_list = format!("127.0.0.1:{plain_port} 1");
    let tls_list = format!("127.0.0.1:{tls_port} 1");
    let resumed = TlsConfig::new().ca_pem(ca_pem.as_bytes()).expect("CA");
    let full = resumed.clone().session_resumption(false);
    let build = |list: &str, tls: Option<&TlsConfig>| {
        let b = Client::builder().server_list(list).expect("list");
        match tls {
            Some(t) => b.tls(t.clone()),
            None => b,
        }
        .build()
        .expect("client")
    };
    let plain = build(&plain_list, None);
    let tls = build(&tls_list, Some(&resumed));

    let value = vec![b'x'; 100];
    let keys: Vec<String> = (0..100).map(|i| format!("bench:{i}")).collect();
    for c in [&plain, &tls] {
        for k in &keys {
            c.set(k, &value, Expiry::NEVER).expect("preload");
        }
        // every measured read is a hit
        assert!(c.get(KEY).expect("get").is_some_and(|i| i.value == value));
        assert!(
            c.get_multi(&keys)
                .iter()
                .all(|r| matches!(r, Ok(Some(i)) if i.value == value))
        );
    }

    let get = |c: &Client| {
        let c = c.clone();
        move |n| {
            timed(n, || {
                black_box(c.get(black_box(KEY)).expect("get"));
            })
        }
    };
    let set = |c: &Client| {
        let (c, v) = (c.clone(), value.clone());
        move |n| {
            timed(n, || {
                black_box(c.set(black_box(KEY), &v, Expiry::NEVER).expect("set"));
            })
        }
    };
    let get_multi = |c: &Client| {
        let (c, ks) = (c.clone(), keys.clone());
        move |n| {
            timed(n, || {
                black_box(c.get_multi(black_box(&ks)));
            })
        }
    };
    // A new client (ring, pool) whose first get opens its connection; the client and its
    // connection are dropped inside the loop, so every call pays for one connect. The
    // resumed client's config already holds sessions for the server (from the preload, over
    // a client built from it).
    let connect = |list: String, tls: Option<TlsConfig>| {
        move |n| {
            timed(n, || {
                let c = build(&list, tls.as_ref());
                black_box(c.get(black_box(KEY)).expect("first get"));
            })
        }
    };
    let mut ops = vec![
        Op {
            name: "get/plaintext",
            run: Box::new(get(&plain)),
        },
        Op {
            name: "get/tls",
            run: Box::new(get(&tls)),
        },
        Op {
            name: "set_100B/plaintext",
            run: Box::new(set(&plain)),
        },
        Op {
            name: "set_100B/tls",
            run: Box::new(set(&tls)),
        },
        Op {
            name: "get_multi_100/plaintext",
            run: Box::new(get_multi(&plain)),
        },
        Op {
            name: "get_multi_100/tls",
            run: Box::new(get_multi(&tls)),
        },
        Op {
            name: "connect_get/plaintext",
            run: Box::new(connect(plain_list.clone(), None)),
        },
        Op {
            name: "connect_get/tls_resumed",
            run: Box::new(connect(tls_list.clone(), Some(resumed.clone()))),
        },
        Op {
            name: "connect_get/tls_full_handshake",
            run: Box::new(connect(tls_list.clone(), Some(full.clone()))),
        },
    ];
    let mut rows = vec![
        ("get (hit, 100 B)", 0, 1),
        ("set (100 B)", 2, 3),
        ("get_multi (100 keys, 100 B each)", 4, 5),
        ("connect + first get, resumed handshake", 6, 7),
        ("connect + first get, full handshake", 6, 8),
    ];
    let (_runtime, aio) = aio_gets(&plain_list, &tls_list, &resumed);
    if aio.len() == 2 {
        rows.push(("async get (hit, 100 B)", ops.len(), ops.len() + 1));
    }
    ops.extend(aio);

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("tls");
    for op in &ops {
        // each connect leaves a socket in TIME_WAIT: fewer calls than a default run makes
        let (warm, measure) = match op.name.starts_with("connect") {
            true => (1, 3),
            false => (3, 5),
        };
        g.warm_up_time(Duration::from_secs(warm))
            .measurement_time(Duration::from_secs(measure));
        g.bench_function(op.name, |b| b.iter_custom(|n| (op.run)(n)));
    }
    g.finish();
    c.final_summary();

    // criterion runs each closure once under `cargo test`, without `--bench`: no table then
    if std::env::args().any(|a| a == "--bench") {
        let pairs: Vec<Pair> = rows
            .iter()
            .map(|&(what, p, t)| Pair {
                what,
                plain: &ops[p],
                tls: &ops[t],
            })
            .collect();
        ratio_table(&pairs, pinned);
    }
    // the async clients before their runtime
    drop(ops);
}

/// Without the async client: no async rows.
#[cfg(not(feature = "async"))]
fn aio_gets<'a>(_: &str, _: &str, _: &TlsConfig) -> ((), Vec<Op<'a>>) {
    ((), Vec::new())
}

/// `memshard::aio::Client` gets on each server (the value stored by the blocking preload).
/// Each timed batch runs as one task on a runtime worker: a future driven by `block_on` from
/// this thread would pay a cross-thread wake-up per reply (benches/async_client.rs).
#[cfg(feature = "async")]
fn aio_gets<'a>(
    plain_list: &str,
    tls_list: &str,
    tls: &TlsConfig,
) -> (tokio::runtime::Runtime, Vec<Op<'a>>) {
    use memshard::aio;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let build = |list: &str, tls: Option<&TlsConfig>| {
        let _in = rt.enter();
        let b = aio::Client::builder().server_list(list).expect("list");
        match tls {
            Some(t) => b.tls(t.clone()),
            None => b,
        }
        .build()
        .expect("aio client")
    };
    let gets = |c: aio::Client, h: tokio::runtime::Handle| -> Box<dyn Fn(u64) -> Duration + 'a> {
        Box::new(move |n| {
            let c = c.clone();
            h.block_on(h.spawn(async move {
                let t = Instant::now();
                for _ in 0..n {
                    black_box(c.get(black_box(KEY)).await.expect("aio get"));
                }
                t.elapsed()
            }))
            .expect("timed task")
        })
    };
    let (p, t) = (build(plain_list, None), build(tls_list, Some(tls)));
    for c in [&p, &t] {
        let c = c.clone();
        let hit = rt.block_on(async move { c.get(KEY).await.expect("aio get") });
        assert!(
            hit.is_some(),
            "the aio client reads what the blocking one stored"
        );
    }
    let h = rt.handle().clone();
    let ops = vec![
        Op {
            name: "aio_get/plaintext",
            run: gets(p, h.clone()),
        },
        Op {
            name: "aio_get/tls",
            run: gets(t, h),
        },
    ];
    (rt, ops)
}
