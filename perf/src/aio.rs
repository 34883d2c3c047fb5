//! The async client's rows of compare.sh.
//!
//!   memshard-perf aio-calls HOST:PORT memshard|async-memcached N
//!       N gets of one 32-byte hit on a current-thread runtime, and nothing else: compare.sh
//!       runs it under callgrind at two values of N, so the difference is the instructions of
//!       N₂ − N₁ gets, tokio included, connecting and start-up excluded.
//!   memshard-perf aio HOST:PORT:W,... [REPS]
//!       `aio.get.{memshard,async_memcached}`: ns per get of one key on the first server, both
//!       clients on one current-thread runtime, interleaved (rep 1 of each, then 2, ...).
//!       `tasks.1000.{memshard,raw}.{tput,p99}`: 1,000 tasks on a 2-worker runtime, 90 % get /
//!       10 % set over all the servers; memshard: one `aio::Client` with default settings
//!       shared by all; raw: each task with its own socket to every server (no pool: the
//!       floor). ops/s and the 99th percentile of one operation's latency (ns).

use crate::{IO_KEYS, VALUE, emit, median};
use async_memcached::AsciiProtocol;
use memshard::{Expiry, aio};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use tokio::net::TcpStream;

const TASKS: usize = 1000;
const TASK_DUR: Duration = Duration::from_millis(500);
const KEY: &str = "user:1";

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

async fn memshard_one(addr: &str) -> aio::Client {
    let c = aio::Client::builder()
        .server_list(addr)
        .expect("server")
        .build()
        .expect("client");
    c.set(KEY, VALUE, Expiry::NEVER).await.expect("set");
    c
}

async fn peer_one(addr: &str) -> async_memcached::Client {
    let mut c = async_memcached::Client::new(format!("tcp://{addr}"))
        .await
        .expect("async-memcached connect");
    c.set(KEY, &VALUE[..], None, None).await.expect("set");
    c
}

pub(crate) fn calls_cmd(addr: &str, who: &str, n: usize) {
    current_thread().block_on(async {
        match who {
            "memshard" => {
                let c = memshard_one(addr).await;
                for _ in 0..n {
                    black_box(c.get(KEY).await.expect("get").expect("hit"));
                }
            }
            "async-memcached" => {
                let mut c = peer_one(addr).await;
                for _ in 0..n {
                    black_box(c.get(KEY).await.expect("get").expect("hit"));
                }
            }
            other => panic!("aio-calls: unknown client {other}"),
        }
    });
}

pub(crate) fn aio_cmd(spec: &str, reps: usize) {
    let (servers, list) = crate::parse_spec(spec);
    single_gets(&servers[0], reps);
    tasks(&servers, &list, reps);
}

/// ns per get over about 100 ms.
fn single_gets(addr: &str, reps: usize) {
    let rt = current_thread();
    let (ms, mut peer) = rt.block_on(async { (memshard_one(addr).await, peer_one(addr).await) });
    const CALLS: usize = 2000;
    let mut ms_rep = || {
        rt.block_on(async {
            let t = Instant::now();
            for _ in 0..CALLS {
                black_box(ms.get(KEY).await.expect("get").expect("hit"));
            }
            t.elapsed().as_nanos() as f64 / CALLS as f64
        })
    };
    let mut peer_rep = || {
        rt.block_on(async {
            let t = Instant::now();
            for _ in 0..CALLS {
                black_box(peer.get(KEY).await.expect("get").expect("hit"));
            }
            t.elapsed().as_nanos() as f64 / CALLS as f64
        })
    };
    let r = crate::interleave_n(reps, &mut [&mut ms_rep, &mut peer_rep]);
    emit("aio.get.memshard", r[0]);
    emit("aio.get.async_memcached", r[1]);
}

/// One run: ops/s and p99 (ns).
struct Run {
    tput: f64,
    p99: f64,
}

/// Latencies of one task: `$op(i)` awaited from the moment all tasks are ready until
/// `TASK_DUR` later (a macro: an async closure's future is not `Send` here).
macro_rules! timed {
    ($start:expr, |$i:ident| $op:expr) => {{
        let mut lat: Vec<u32> = Vec::with_capacity(256);
        $start.wait().await;
        let t0 = Instant::now();
        let mut $i = 0usize;
        while t0.elapsed() < TASK_DUR {
            let s = Instant::now();
            $op;
            lat.push(s.elapsed().as_nanos().min(u32::MAX as u128) as u32);
            $i += 1;
        }
        lat
    }};
}

/// Waits for every task (released by `start`), and sums up their latencies.
async fn collect(
    start: &tokio::sync::Barrier,
    handles: Vec<tokio::task::JoinHandle<Vec<u32>>>,
) -> Run {
    start.wait().await;
    let t0 = Instant::now();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("task"));
    }
    let wall = t0.elapsed();
    let k = (all.len() * 99 / 100).min(all.len() - 1);
    let p99 = *all.select_nth_unstable(k).1 as f64;
    Run {
        tput: all.len() as f64 / wall.as_secs_f64(),
        p99,
    }
}

fn key_index(t: usize, i: usize) -> usize {
    (i * 7 + t * 137) % IO_KEYS
}

fn tasks(servers: &[String], list: &str, reps: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let keys: Arc<Vec<String>> = Arc::new((0..IO_KEYS).map(|i| format!("user:{i}")).collect());
    let ms = rt.block_on(async {
        let ms = aio::Client::builder()
            .server_list(list)
            .expect("servers")
            .build()
            .expect("client");
        for k in keys.iter() {
            ms.set(k, VALUE, Expiry::NEVER).await.expect("preload");
        }
        ms
    });
    let ring = ms.ring().clone();
    let owner: Arc<Vec<usize>> = Arc::new(
        keys.iter()
            .map(|k| ring.route(k.as_bytes()).expect("route"))
            .collect(),
    );
    let get_req: Arc<Vec<Vec<u8>>> = Arc::new(
        keys.iter()
            .map(|k| format!("get {k}\r\n").into_bytes())
            .collect(),
    );
    let set_req: Arc<Vec<Vec<u8>>> = Arc::new(
        keys.iter()
            .map(|k| {
                let mut v = format!("set {k} 0 0 {}\r\n", VALUE.len()).into_bytes();
                v.extend_from_slice(VALUE);
                v.extend_from_slice(b"\r\n");
                v
            })
            .collect(),
    );
    let servers = Arc::new(servers.to_vec());

    let ms_run = || {
        rt.block_on(async {
            let start = Arc::new(tokio::sync::Barrier::new(TASKS + 1));
            let handles = (0..TASKS)
                .map(|t| {
                    let (start, ms, keys) = (start.clone(), ms.clone(), keys.clone());
                    tokio::spawn(async move {
                        timed!(start, |i| {
                            let key = &keys[key_index(t, i)];
                            if i % 10 == 9 {
                                black_box(ms.set(key, VALUE, Expiry::NEVER).await.expect("set"));
                            } else {
                                black_box(ms.get(key).await.expect("get"));
                            }
                        })
                    })
                })
                .collect();
            collect(&start, handles).await
        })
    };
    let raw_run = || {
        rt.block_on(async {
            let start = Arc::new(tokio::sync::Barrier::new(TASKS + 1));
            let handles = (0..TASKS)
                .map(|t| {
                    let start = start.clone();
                    let (servers, owner) = (servers.clone(), owner.clone());
                    let (get_req, set_req) = (get_req.clone(), set_req.clone());
                    tokio::spawn(async move {
                        let mut socks = Vec::with_capacity(servers.len());
                        for a in servers.iter() {
                            let s = TcpStream::connect(a).await.expect("connect");
                            s.set_nodelay(true).expect("nodelay");
                            socks.push(s);
                        }
                        let mut buf = vec![0u8; 4096];
                        timed!(start, |i| {
                            let k = key_index(t, i);
                            let s = &mut socks[owner[k]];
                            let (req, end): (&[u8], &[u8]) = if i % 10 == 9 {
                                (&set_req[k], b"\r\n")
                            } else {
                                (&get_req[k], b"END\r\n")
                            };
                            s.write_all(req).await.expect("write");
                            let mut len = 0;
                            loop {
                                let n = s.read(&mut buf[len..]).await.expect("read");
                                assert!(n > 0, "server closed");
                                len += n;
                                if buf[..len].ends_with(end) {
                                    break;
                                }
                            }
                            black_box(len);
                        })
                    })
                })
                .collect();
            collect(&start, handles).await
        })
    };
    black_box(ms_run());
    black_box(raw_run());
    let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..reps {
        runs[0].push(ms_run());
        runs[1].push(raw_run());
    }
    for (who, r) in ["memshard", "raw"].iter().zip(runs) {
        emit(
            &format!("tasks.{TASKS}.{who}.tput"),
            median(r.iter().map(|r| r.tput).collect()),
        );
        emit(
            &format!("tasks.{TASKS}.{who}.p99"),
            median(r.iter().map(|r| r.p99).collect()),
        );
    }
}
