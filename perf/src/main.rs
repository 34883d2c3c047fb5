//! Rust side of perf/compare.sh. Prints `metric<TAB>value` lines; compare.sh joins them with
//! the C (libmemcached) and Python (pylibmc) sides and prints the table.
//!
//!   memshard-perf weighted N...          one repetition of route + build, KETAMA_WEIGHTED servers
//!                                        (compare.sh alternates it with c/lmc_route, 5 times)
//!   memshard-perf ketama                 equal weights: memshard vs the ketama crate
//!   memshard-perf io HOST:PORT:W,... [REPS]   client I/O against running memcached servers
//!                                        (compare.sh: REPS 1, alternated with pylibmc_bench.py)
//!   memshard-perf tls-certs DIR          certificates for a `-Z` memcached (src/tls.rs)
//!   memshard-perf tls PLAIN TLS CA [REPS]   memshard over TLS vs over plaintext (src/tls.rs)
//!   memshard-perf meta HOST:PORT:W,... [REPS]   memshard over meta vs over text (src/meta.rs)
//!   memshard-perf scale HOST:PORT:W,... [REPS]  1, 2, 8, 64 threads on one client (src/scale.rs)
//!   memshard-perf aio HOST:PORT:W,... [REPS]    async get vs async-memcached, 1,000 tasks (src/aio.rs)
//!   memshard-perf aio-calls HOST:PORT WHO N     N async gets, for callgrind (src/aio.rs)
//!
//! I/O figures come with the client's CPU time per operation (src/cpu.rs). Figures are medians
//! of 5 repetitions after a warm-up; the contenders of one measurement run
//! interleaved (rep 1 of each, then rep 2 of each, ...), so load from other work on the machine
//! hits them alike. Inputs are prepared outside the timed loops. No route/build input touches
//! the network: the routing servers are only names.

mod aio;
mod cpu;
mod meta;
mod ring_scale;
mod scale;
mod tls;

use cpu::{Sample, interleave_samples, per_op, run_threads};
use memshard::{Client, Expiry, Flavor, Ring, Server};
use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const REPS: usize = 5;
const ROUTE_KEYS: usize = 10_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

fn emit(metric: &str, value: f64) {
    println!("{metric}\t{value:.2}");
}

/// `metric` (wall-clock ns per op, or ops/s) and `metric.cpu` (client CPU ns per op).
fn emit_sample(metric: &str, s: Sample) {
    emit(metric, s.wall);
    emit(&format!("{metric}.cpu"), s.cpu);
}

/// One warm-up repetition of each contender, then `reps` interleaved rounds; the median of each.
fn interleave_n(reps: usize, contenders: &mut [&mut dyn FnMut() -> f64]) -> Vec<f64> {
    for c in contenders.iter_mut() {
        black_box(c());
    }
    let mut runs = vec![Vec::with_capacity(reps); contenders.len()];
    for _ in 0..reps {
        for (c, r) in contenders.iter_mut().zip(runs.iter_mut()) {
            r.push(c());
        }
    }
    runs.into_iter().map(median).collect()
}

fn interleave(contenders: &mut [&mut dyn FnMut() -> f64]) -> Vec<f64> {
    interleave_n(REPS, contenders)
}

/// The routing servers: the same list the C harness builds (lmc_route.c).
fn weighted_servers(n: usize) -> Vec<Server> {
    (0..n)
        .map(|i| {
            Server::new(format!("127.0.{}.{}", i / 250, 1 + i % 250), 11211)
                .with_weight(1 + (i as u32 * 7) % 5)
        })
        .collect()
}

fn equal_servers(n: usize) -> Vec<Server> {
    weighted_servers(n)
        .into_iter()
        .map(|s| s.with_weight(1))
        .collect()
}

fn route_keys() -> Vec<Vec<u8>> {
    (0..ROUTE_KEYS)
        .map(|i| format!("user:{i}").into_bytes())
        .collect()
}

/// ns per key for `passes` passes over `keys`.
fn route_rep(keys: &[Vec<u8>], passes: usize, route: impl Fn(&[u8]) -> usize) -> f64 {
    let t = Instant::now();
    let mut sink = 0usize;
    for _ in 0..passes {
        for k in keys {
            sink = sink.wrapping_add(route(black_box(k)));
        }
    }
    black_box(sink);
    t.elapsed().as_nanos() as f64 / (passes * keys.len()) as f64
}

/// ns per build: `iters` inputs are made first, then built in one timed loop; the results are
/// dropped after the clock stops.
fn build_rep<I, R>(iters: usize, input: &impl Fn() -> I, build: &impl Fn(I) -> R) -> f64 {
    let inputs: Vec<I> = (0..iters).map(|_| input()).collect();
    let mut out = Vec::with_capacity(iters);
    let t = Instant::now();
    for i in inputs {
        out.push(build(black_box(i)));
    }
    let ns = t.elapsed().as_nanos() as f64 / iters as f64;
    drop(black_box(out));
    ns
}

/// Iterations for about 30 ms per repetition, from one untimed-for-the-result build.
fn build_iters<I, R>(input: &impl Fn() -> I, build: &impl Fn(I) -> R) -> usize {
    let i = input();
    let t = Instant::now();
    black_box(build(i));
    let one = t.elapsed().as_nanos().max(1) as f64;
    ((30e6 / one) as usize).clamp(3, 2000)
}

/// The weighted (KETAMA_WEIGHTED) measurements that line up with the C harness. compare.sh runs
/// this and `lmc_route` alternately, one repetition per process, so both see the same load.
fn weighted_cmd(sizes: &[usize]) {
    let keys = route_keys();
    for &n in sizes {
        let ring = Ring::new(weighted_servers(n), Flavor::Libmemcached).expect("ring");
        let check: u64 = keys
            .iter()
            .enumerate()
            .map(|(i, k)| ring.route(k).expect("route") as u64 * (i as u64 % 7 + 1))
            .sum();
        println!("check.{n}.memshard\t{check}");
        // warm-up pass, then one repetition
        black_box(route_rep(&keys, 10, |k| ring.route(k).unwrap_or(0)));
        let r = route_rep(&keys, 60, |k| ring.route(k).unwrap_or(0));
        emit(&format!("route.{n}.memshard"), r);

        let input = || weighted_servers(n);
        let build = |s: Vec<Server>| Ring::new(s, Flavor::Libmemcached).expect("ring");
        let iters = build_iters(&input, &build);
        black_box(build_rep(iters, &input, &build));
        emit(
            &format!("build.{n}.memshard"),
            build_rep(iters, &input, &build),
        );
    }
}

/// Equal weights: memshard vs the ketama crate (160 points per server; "host-i" point names,
/// as libmemcached writes them for port 11211), interleaved in this process.
fn ketama_cmd() {
    let keys = route_keys();
    for n in [10usize, 100, 1000] {
        let eq = Ring::new(equal_servers(n), Flavor::Libmemcached).expect("ring");
        let idents: Vec<String> = equal_servers(n).into_iter().map(|s| s.host).collect();
        let id_refs: Vec<&str> = idents.iter().map(|s| s.as_str()).collect();
        let kr = ketama::Ring::build(&id_refs);
        let agree = keys
            .iter()
            .filter(|k| eq.route(k) == Some(kr.route(k)))
            .count();
        emit(
            &format!("agree.{n}.ketama"),
            100.0 * agree as f64 / keys.len() as f64,
        );
        let r = interleave(&mut [
            &mut || route_rep(&keys, 60, |k| eq.route(k).unwrap_or(0)),
            &mut || route_rep(&keys, 60, |k| kr.route(k)),
        ]);
        emit(&format!("route_eq.{n}.memshard"), r[0]);
        emit(&format!("route_eq.{n}.ketama"), r[1]);

        let ms_in = || equal_servers(n);
        let ms_build = |s: Vec<Server>| Ring::new(s, Flavor::Libmemcached).expect("ring");
        let kt_in = || id_refs.clone();
        let kt_build = |s: Vec<&str>| ketama::Ring::build(&s);
        let (mi, ki) = (
            build_iters(&ms_in, &ms_build),
            build_iters(&kt_in, &kt_build),
        );
        let b = interleave(&mut [&mut || build_rep(mi, &ms_in, &ms_build), &mut || {
            build_rep(ki, &kt_in, &kt_build)
        }]);
        emit(&format!("build_eq.{n}.memshard"), b[0]);
        emit(&format!("build_eq.{n}.ketama"), b[1]);
    }
}

/// For profiling only (`perf record memshard-perf build-loop 1000 50`): nothing is printed.
fn build_loop(n: usize, iters: usize) {
    for _ in 0..iters {
        black_box(Ring::new(weighted_servers(n), Flavor::Libmemcached).expect("ring"));
    }
}

// ---------------------------------------------------------------------------------------------
// I/O

const IO_KEYS: usize = 1000;
const VALUE: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

/// A plain blocking socket speaking the text protocol: the floor for one request.
struct Raw {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    fn connect(addr: &str) -> Raw {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        Raw {
            s,
            buf: vec![0; 64 * 1024],
        }
    }
    fn send(&mut self, req: &[u8]) {
        self.s.write_all(req).expect("write");
    }
    /// Read until the reply ends with `end`; returns the reply length.
    fn read_until(&mut self, end: &[u8]) -> usize {
        let mut len = 0;
        loop {
            let n = self.s.read(&mut self.buf[len..]).expect("read");
            assert!(n > 0, "server closed");
            len += n;
            if self.buf[..len].ends_with(end) {
                return len;
            }
            if len == self.buf.len() {
                self.buf.resize(len * 2, 0);
            }
        }
    }
}

fn io_cmd(spec: &str, reps: usize) {
    // spec: host:port:weight,... (the first server doubles as the single-server setup)
    let servers: Vec<(String, u32)> = spec
        .split(',')
        .map(|s| {
            let (addr, w) = s.rsplit_once(':').expect("host:port:weight");
            (addr.to_string(), w.parse().expect("weight"))
        })
        .collect();
    let list: String = servers.iter().map(|(a, w)| format!("{a} {w}\n")).collect();
    let one = &servers[0].0;
    let ms = Client::builder()
        .server_list(&list)
        .expect("list")
        .build()
        .expect("client");
    let ms1 = Client::builder()
        .server_list(&format!("{one} 1"))
        .expect("list")
        .build()
        .expect("client");
    let mc1 = memcache::Client::builder()
        .add_server(format!("memcache://{one}?protocol=ascii"))
        .expect("url")
        .with_max_pool_size(2)
        .build()
        .expect("memcache client");
    let mut b4 = memcache::Client::builder();
    for (a, _) in &servers {
        b4 = b4
            .add_server(format!("memcache://{a}?protocol=ascii"))
            .expect("url");
    }
    let mc4 = b4.with_max_pool_size(2).build().expect("memcache client");

    let keys: Vec<String> = (0..IO_KEYS).map(|i| format!("user:{i}")).collect();
    for k in &keys {
        ms.set(k, VALUE, Expiry::NEVER).expect("preload");
        ms1.set(k, VALUE, Expiry::NEVER).expect("preload");
    }
    let ring = ms.ring().clone();
    let owner: Vec<usize> = keys
        .iter()
        .map(|k| ring.route(k.as_bytes()).expect("route"))
        .collect();
    let get_req: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| format!("get {k}\r\n").into_bytes())
        .collect();
    let set_req: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| {
            let mut v = format!("set {k} 0 0 {}\r\n", VALUE.len()).into_bytes();
            v.extend_from_slice(VALUE);
            v.extend_from_slice(b"\r\n");
            v
        })
        .collect();
    let mut raw: Vec<Raw> = servers.iter().map(|(a, _)| Raw::connect(a)).collect();
    // every key is where memshard put it, for every reader
    for (i, k) in keys.iter().enumerate() {
        let r = &mut raw[owner[i]];
        r.send(&get_req[i]);
        let n = r.read_until(b"END\r\n");
        assert!(r.buf[..n].starts_with(b"VALUE "), "raw miss on {k}");
        assert!(ms.get(k).expect("get").is_some(), "memshard miss on {k}");
        let v: Option<Vec<u8>> = mc1.get(k).expect("memcache get");
        assert_eq!(v.as_deref(), Some(&VALUE[..]), "memcache crate miss on {k}");
    }

    let k = |i: usize| i % IO_KEYS;
    let ops = 3000;
    let raw_cell = std::cell::RefCell::new(raw);

    // single get / set over the 4 weighted servers: memshard (routing included) vs raw socket
    // (owner precomputed)
    let r = interleave_samples(
        reps,
        &mut [
            &mut || {
                per_op(ops, |i| {
                    black_box(ms.get(&keys[k(i)]).expect("get"));
                })
            },
            &mut || {
                let mut raw = raw_cell.borrow_mut();
                per_op(ops, |i| {
                    let r = &mut raw[owner[k(i)]];
                    r.send(&get_req[k(i)]);
                    black_box(r.read_until(b"END\r\n"));
                })
            },
        ],
    );
    emit_sample("get.memshard", r[0]);
    emit_sample("get.raw", r[1]);
    let r = interleave_samples(
        reps,
        &mut [
            &mut || {
                per_op(ops, |i| {
                    black_box(ms.set(&keys[k(i)], VALUE, Expiry::NEVER).expect("set"));
                })
            },
            &mut || {
                let mut raw = raw_cell.borrow_mut();
                per_op(ops, |i| {
                    let r = &mut raw[owner[k(i)]];
                    r.send(&set_req[k(i)]);
                    black_box(r.read_until(b"\r\n"));
                })
            },
        ],
    );
    emit_sample("set.memshard", r[0]);
    emit_sample("set.raw", r[1]);

    // one server: memshard vs the memcache crate (which shards with its own hash, so one
    // server is the like-for-like single-request comparison)
    let r = interleave_samples(
        reps,
        &mut [
            &mut || {
                per_op(ops, |i| {
                    black_box(ms1.get(&keys[k(i)]).expect("get"));
                })
            },
            &mut || {
                per_op(ops, |i| {
                    let v: Option<Vec<u8>> = mc1.get(&keys[k(i)]).expect("get");
                    black_box(v);
                })
            },
        ],
    );
    emit_sample("get1.memshard", r[0]);
    emit_sample("get1.memcache", r[1]);
    let r = interleave_samples(
        reps,
        &mut [
            &mut || {
                per_op(ops, |i| {
                    black_box(ms1.set(&keys[k(i)], VALUE, Expiry::NEVER).expect("set"));
                })
            },
            &mut || {
                per_op(ops, |i| {
                    mc1.set(&keys[k(i)], &VALUE[..], 0).expect("set");
                })
            },
        ],
    );
    emit_sample("set1.memshard", r[0]);
    emit_sample("set1.memcache", r[1]);

    // get_multi: 100 keys over the 4 servers, 10 different batches
    let batches: Vec<Vec<&str>> = (0..10)
        .map(|b| {
            keys[b * 100..b * 100 + 100]
                .iter()
                .map(|s| s.as_str())
                .collect()
        })
        .collect();
    // raw: per batch, one pipelined `get k1 k2 ...` per server, all sent, then all read
    let raw_multi: Vec<Vec<(usize, Vec<u8>)>> = (0..10)
        .map(|b| {
            let mut per: Vec<Vec<u8>> = vec![b"get".to_vec(); servers.len()];
            let mut used = vec![false; servers.len()];
            for i in b * 100..b * 100 + 100 {
                per[owner[i]].push(b' ');
                per[owner[i]].extend_from_slice(keys[i].as_bytes());
                used[owner[i]] = true;
            }
            per.into_iter()
                .enumerate()
                .filter(|(s, _)| used[*s])
                .map(|(s, mut r)| {
                    r.extend_from_slice(b"\r\n");
                    (s, r)
                })
                .collect()
        })
        .collect();
    for b in &batches {
        let got = ms.get_multi(b);
        let hits = got.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
        assert_eq!(hits, 100, "memshard get_multi hits");
    }
    let mops = 300;
    let r = interleave_samples(
        reps,
        &mut [
            &mut || {
                per_op(mops, |i| {
                    black_box(ms.get_multi(&batches[i % 10]));
                })
            },
            &mut || {
                let mut raw = raw_cell.borrow_mut();
                per_op(mops, |i| {
                    let reqs = &raw_multi[i % 10];
                    for (s, req) in reqs {
                        raw[*s].send(req);
                    }
                    for (s, _) in reqs {
                        black_box(raw[*s].read_until(b"END\r\n"));
                    }
                })
            },
            &mut || {
                per_op(mops, |i| {
                    let m: std::collections::HashMap<String, Vec<u8>> =
                        mc4.gets(&batches[i % 10]).expect("gets");
                    black_box(m);
                })
            },
        ],
    );
    emit_sample("get_multi.memshard", r[0]);
    emit_sample("get_multi.raw", r[1]);
    emit_sample("get_multi.memcache", r[2]);

    // the same batches on one server: no fan-out, so no helper threads in memshard; the
    // memcache crate's gets is like-for-like here
    let raw_one: Vec<Vec<u8>> = batches
        .iter()
        .map(|b| format!("get {}\r\n", b.join(" ")).into_bytes())
        .collect();
    for b in &batches {
        let hits = ms1
            .get_multi(b)
            .iter()
            .filter(|r| matches!(r, Ok(Some(_))))
            .count();
        assert_eq!(hits, 100, "memshard get_multi hits, one server");
    }
    let r = interleave_samples(
        reps,
        &mut [
            &mut || {
                per_op(mops, |i| {
                    black_box(ms1.get_multi(&batches[i % 10]));
                })
            },
            &mut || {
                let mut raw = raw_cell.borrow_mut();
                per_op(mops, |i| {
                    raw[0].send(&raw_one[i % 10]);
                    black_box(raw[0].read_until(b"END\r\n"));
                })
            },
            &mut || {
                per_op(mops, |i| {
                    let m: std::collections::HashMap<String, Vec<u8>> =
                        mc1.gets(&batches[i % 10]).expect("gets");
                    black_box(m);
                })
            },
        ],
    );
    emit_sample("get_multi1.memshard", r[0]);
    emit_sample("get_multi1.raw", r[1]);
    emit_sample("get_multi1.memcache", r[2]);

    // 2-thread throughput: 9 gets to 1 set, keys cycling, 4 servers for both clients
    let dur = Duration::from_millis(400);
    let ms_op = |_: &mut (), t: usize, i: usize| {
        let key = &keys[(i * 7 + t * 500) % IO_KEYS];
        if i % 10 == 9 {
            black_box(ms.set(key, VALUE, Expiry::NEVER).expect("set"));
        } else {
            black_box(ms.get(key).expect("get"));
        }
    };
    let mc_op = |_: &mut (), t: usize, i: usize| {
        let key = &keys[(i * 7 + t * 500) % IO_KEYS];
        if i % 10 == 9 {
            mc4.set(key, &VALUE[..], 0).expect("set");
        } else {
            let v: Option<Vec<u8>> = mc4.get(key).expect("get");
            black_box(v);
        }
    };
    // `wall` carries ops/s here
    let tput = |op: &(dyn Fn(&mut (), usize, usize) + Sync)| {
        let run = run_threads(2, dur, &|_| (), &op);
        Sample {
            wall: run.ops_per_s,
            cpu: run.cpu,
        }
    };
    let r = interleave_samples(reps, &mut [&mut || tput(&ms_op), &mut || tput(&mc_op)]);
    emit_sample("tput2.memshard", r[0]);
    emit_sample("tput2.memcache", r[1]);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("weighted") => {
            let sizes: Vec<usize> = args[2..].iter().map(|a| a.parse().expect("size")).collect();
            weighted_cmd(&sizes)
        }
        Some("ketama") => ketama_cmd(),
        Some("ring-scale") => ring_scale::ring_scale_cmd(),
        Some("build-loop") => build_loop(
            args[2].parse().expect("servers"),
            args[3].parse().expect("iterations"),
        ),
        Some("io") => io_cmd(
            args.get(2).expect("io HOST:PORT:W,... [REPS]"),
            args.get(3)
                .map_or(REPS, |r| r.parse().expect("repetitions")),
        ),
        Some("scale") => scale::scale_cmd(
            args.get(2).expect("scale HOST:PORT:W,... [REPS]"),
            args.get(3)
                .map_or(REPS, |r| r.parse().expect("repetitions")),
        ),
        Some("meta") => meta::meta_cmd(
            args.get(2).expect("meta HOST:PORT:W,... [REPS]"),
            args.get(3)
                .map_or(REPS, |r| r.parse().expect("repetitions")),
        ),
        Some("aio") => aio::aio_cmd(
            args.get(2).expect("aio HOST:PORT:W,... [REPS]"),
            args.get(3)
                .map_or(REPS, |r| r.parse().expect("repetitions")),
        ),
        Some("aio-calls") => {
            let usage = "aio-calls HOST:PORT memshard|async-memcached N";
            aio::calls_cmd(
                args.get(2).expect(usage),
                args.get(3).expect(usage),
                args.get(4).expect(usage).parse().expect(usage),
            )
        }
        Some("tls-certs") => {
            tls::certs_cmd(std::path::Path::new(args.get(2).expect("tls-certs DIR")))
        }
        Some("tls") => {
            let usage = "tls PLAIN_HOST:PORT TLS_HOST:PORT CA.pem [REPS]";
            tls::tls_cmd(
                args.get(2).expect(usage),
                args.get(3).expect(usage),
                std::path::Path::new(args.get(4).expect(usage)),
                args.get(5)
                    .map_or(REPS, |r| r.parse().expect("repetitions")),
            )
        }
        _ => {
            eprintln!(
                "usage: memshard-perf weighted N... | ketama | io HOST:PORT:W,... [REPS] | \
                 tls-certs DIR | tls PLAIN TLS CA [REPS] | meta HOST:PORT:W,... [REPS] | \
                 scale HOST:PORT:W,... [REPS] | build-loop N ITERS | ring-scale | \
                 aio HOST:PORT:W,... [REPS] | aio-calls HOST:PORT WHO N"
            );
            std::process::exit(2);
        }
    }
}

/// `HOST:PORT:W,...` as the servers' addresses and as a server list (`HOST:PORT W` lines).
pub(crate) fn parse_spec(spec: &str) -> (Vec<String>, String) {
    let mut servers = Vec::new();
    let mut list = String::new();
    for s in spec.split(',') {
        let (addr, w) = s.rsplit_once(':').expect("host:port:weight");
        servers.push(addr.to_string());
        list.push_str(&format!("{addr} {w}\n"));
    }
    (servers, list)
}

/// ns per call over `calls` calls of `f`.
pub(crate) fn per_call(calls: usize, mut f: impl FnMut()) -> f64 {
    let t = std::time::Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_nanos() as f64 / calls as f64
}

/// Calls for about 100 ms, from 10 timed calls.
pub(crate) fn calls_for(mut f: impl FnMut()) -> usize {
    let ten = per_call(10, &mut f);
    ((100e6 / ten.max(1.0)) as usize).clamp(20, 5000)
}
