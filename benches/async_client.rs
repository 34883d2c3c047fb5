//! The async client (`memshard::aio`) against the blocking client, the `async-memcached` and
//! `memcache-async` crates, and a minimal multiplexed (pipelined, one connection per server)
//! prototype, all on the same local memcached servers started here. Plain timed loops: each
//! contender runs interleaved with the others (repetition 1 of each, then 2, ...), 5
//! repetitions after a warm-up, median reported. Inputs are made outside the timed loops.
//!
//!     cargo bench --features async --bench async_client
//!
//! The peers are single-connection, single-server clients (no sharding), so they are compared
//! on one server; memshard's figures over four servers are next to the blocking client's.
//! Throughput rows give every contender the same number of connections (8) to the server.
//! The last rows compare the async client over the meta protocol with itself over text
//! (get, set, get_multi of 100 keys over 4 servers): the ratio column is meta / text.
//! memcache-async's `set` sends `noreply` and returns once written: its set figure has no
//! round trip in it.

use async_memcached::AsciiProtocol;
use memshard::Expiry;
use memshard::aio;
use memshard::proto::{Parsed, RetrievalItem, parse_retrieval};
use std::collections::VecDeque;
use std::net::TcpStream as StdTcp;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Mutex, mpsc, oneshot};

const REPS: usize = 5;

struct Servers(Vec<Child>);
impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start(ports: &[u16]) -> Servers {
    let root = std::env::var("USER").map(|u| u == "root").unwrap_or(true);
    let children = ports
        .iter()
        .map(|p| {
            let mut cmd = Command::new("memcached");
            if root {
                cmd.args(["-u", "root"]);
            }
            cmd.args(["-U", "0", "-m", "64", "-t", "2", "-c", "1024"])
                .args(["-l", "127.0.0.1", "-p", &p.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("memcached must be installed to run this benchmark")
        })
        .collect();
    for p in ports {
        for _ in 0..200 {
            if StdTcp::connect(("127.0.0.1", *p)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Servers(children)
}

fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    ls.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

// ---------------------------------------------------------------------------------------------
// A minimal multiplexed client: one connection, a writer task that batches whatever requests
// are queued into one write, a reader task that answers them in order. Gets only: enough to
// measure the design against the pool.
// ---------------------------------------------------------------------------------------------

type Reply = oneshot::Sender<Option<Vec<u8>>>;

#[derive(Clone)]
struct Mux {
    tx: mpsc::UnboundedSender<(Vec<u8>, Reply)>,
}

impl Mux {
    async fn connect(port: u16) -> Mux {
        let s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.set_nodelay(true).unwrap();
        let (mut rd, mut wr) = s.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<(Vec<u8>, Reply)>();
        let pending: Arc<std::sync::Mutex<VecDeque<Reply>>> = Arc::default();
        let p2 = pending.clone();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            while let Some((req, reply)) = rx.recv().await {
                buf.clear();
                buf.extend_from_slice(&req);
                let mut q = vec![reply];
                while let Ok((req, reply)) = rx.try_recv() {
                    buf.extend_from_slice(&req);
                    q.push(reply);
                }
                p2.lock().unwrap().extend(q);
                if wr.write_all(&buf).await.is_err() {
                    return;
                }
            }
        });
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let (mut start, mut end) = (0, 0);
            let mut value: Option<Vec<u8>> = None;
            loop {
                match parse_retrieval(&buf[start..end], 1 << 20) {
                    Ok(Parsed::Done(RetrievalItem::Value { data, .. }, used)) => {
                        value = Some(buf[start + data.start..start + data.end].to_vec());
                        start += used;
                    }
                    Ok(Parsed::Done(_, used)) => {
                        start += used;
                        let r = pending.lock().unwrap().pop_front();
                        if let Some(r) = r {
                            let _ = r.send(value.take());
                        }
                    }
                    Ok(Parsed::Incomplete) => {
                        buf.copy_within(start..end, 0);
                        end -= start;
                        start = 0;
                        match rd.read(&mut buf[end..]).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => end += n,
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        });
        Mux { tx }
    }

    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send((format!("get {key}\r\n").into_bytes(), tx))
            .unwrap();
        rx.await.unwrap()
    }
}

// ---------------------------------------------------------------------------------------------

type Peer1 = Arc<Vec<Mutex<async_memcached::Client>>>;
type Peer2 = Arc<Vec<Mutex<memcache_async::ascii::Protocol<TcpStream>>>>;

async fn peer1(port: u16, n: usize) -> Peer1 {
    let mut v = Vec::new();
    for _ in 0..n {
        let c = async_memcached::Client::new(format!("tcp://127.0.0.1:{port}"))
            .await
            .expect("async-memcached connect");
        v.push(Mutex::new(c));
    }
    Arc::new(v)
}

async fn peer2(port: u16, n: usize) -> Peer2 {
    let mut v = Vec::new();
    for _ in 0..n {
        let s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.set_nodelay(true).unwrap();
        v.push(Mutex::new(memcache_async::ascii::Protocol::new(s)));
    }
    Arc::new(v)
}

/// Mean microseconds per call of `f` over `n` sequential calls.
async fn per_call<F, Fut>(n: usize, mut f: F) -> f64
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let t = Instant::now();
    for i in 0..n {
        f(i).await;
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Operations per second with `tasks` concurrent tasks, `per_task` operations each.
async fn throughput<F, Fut>(tasks: usize, per_task: usize, f: F) -> f64
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let f = Arc::new(f);
    let done = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let hs: Vec<_> = (0..tasks)
        .map(|task| {
            let (f, done) = (f.clone(), done.clone());
            tokio::spawn(async move {
                for i in 0..per_task {
                    f(task, i).await;
                }
                done.fetch_add(per_task as u64, Ordering::Relaxed);
            })
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64()
}

struct Row {
    name: String,
    unit: &'static str,
    samples: Vec<Vec<f64>>,
    labels: Vec<&'static str>,
}

impl Row {
    fn print(&self) {
        let meds: Vec<f64> = self.samples.iter().map(|s| median(s.clone())).collect();
        let base = meds[0];
        let cells: Vec<String> = self
            .labels
            .iter()
            .zip(&meds)
            .map(|(l, m)| {
                if self.unit == "ops/s" {
                    format!("{l}: {m:.0} {} ({:.2}x)", self.unit, m / base)
                } else {
                    format!("{l}: {m:.1} {} ({:.2}x)", self.unit, m / base)
                }
            })
            .collect();
        println!("| {} | {} |", self.name, cells.join(" | "));
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ports = free_ports(5);
    let _servers = start(&ports);
    let four: String = ports[..4]
        .iter()
        .zip([3, 1, 2, 1])
        .map(|(p, w)| format!("127.0.0.1:{p} {w}\n"))
        .collect();
    let one_port = ports[4];
    let one = format!("127.0.0.1:{one_port} 1\n");
    let keys: Vec<String> = (0..1000).map(|i| format!("user:{i}")).collect();
    let value = vec![b'v'; 32];
    let quick = std::env::var_os("MEMSHARD_BENCH_QUICK").is_some();
    let n = if quick { 500 } else { 4000 };
    // Everything runs in a task on the runtime's workers (a future driven by `block_on` on
    // the main thread pays a cross-thread wake-up per reply, ~60 µs here).
    let body = async move {
        let blocking4 = memshard::Client::builder()
            .server_list(&four)
            .unwrap()
            .pool_size(8)
            .build()
            .unwrap();
        let blocking1 = memshard::Client::builder()
            .server_list(&one)
            .unwrap()
            .pool_size(8)
            .build()
            .unwrap();
        let a4 = aio::Client::builder()
            .server_list(&four)
            .unwrap()
            .pool_size(8)
            .build()
            .unwrap();
        let a1 = aio::Client::builder()
            .server_list(&one)
            .unwrap()
            .pool_size(8)
            .build()
            .unwrap();
        let items: Vec<(&str, &[u8])> = keys.iter().map(|k| (k.as_str(), &value[..])).collect();
        assert!(
            a4.set_multi(&items, 0, Expiry::NEVER)
                .await
                .iter()
                .all(|r| r.is_ok())
        );
        assert!(
            a1.set_multi(&items, 0, Expiry::NEVER)
                .await
                .iter()
                .all(|r| r.is_ok())
        );
        let mux = Mux::connect(one_port).await;
        let p1 = peer1(one_port, 8).await;
        let p2 = peer2(one_port, 8).await;
        // sanity: every contender reads what memshard wrote
        assert_eq!(a1.get("user:1").await.unwrap().unwrap().value, value);
        assert_eq!(mux.get("user:1").await.unwrap(), value);
        let v = p1[0].lock().await.get("user:1").await.unwrap().unwrap();
        assert_eq!(v.data.unwrap(), value);
        assert_eq!(p2[0].lock().await.get("user:1").await.unwrap(), value);

        println!(
            "async_client bench: 2 worker threads, 32-byte values, {n} calls per sample, median of {REPS}; ratio to the first column"
        );
        println!("| measurement | contenders |");
        println!("|---|---|");

        // 1. sequential get latency, one server
        let mut row = Row {
            name: "get, 1 server, sequential (µs/op)".into(),
            unit: "µs",
            samples: vec![Vec::new(); 6],
            labels: vec![
                "aio",
                "blocking",
                "multiplexed",
                "async-memcached",
                "memcache-async",
                "aio 4 servers",
            ],
        };
        for rep in 0..=REPS {
            let s = [
                per_call(n, |i| {
                    let (c, k) = (&a1, &keys[i % 1000]);
                    async move {
                        c.get(k).await.unwrap().unwrap();
                    }
                })
                .await,
                {
                    let t = Instant::now();
                    for i in 0..n {
                        blocking1.get(&keys[i % 1000]).unwrap().unwrap();
                    }
                    t.elapsed().as_secs_f64() * 1e6 / n as f64
                },
                per_call(n, |i| {
                    let (m, k) = (&mux, &keys[i % 1000]);
                    async move {
                        m.get(k).await.unwrap();
                    }
                })
                .await,
                per_call(n, |i| {
                    let (p, k) = (&p1, &keys[i % 1000]);
                    async move {
                        p[0].lock().await.get(k).await.unwrap().unwrap();
                    }
                })
                .await,
                per_call(n, |i| {
                    let (p, k) = (&p2, &keys[i % 1000]);
                    async move {
                        p[0].lock().await.get(k).await.unwrap();
                    }
                })
                .await,
                per_call(n, |i| {
                    let (c, k) = (&a4, &keys[i % 1000]);
                    async move {
                        c.get(k).await.unwrap().unwrap();
                    }
                })
                .await,
            ];
            if rep > 0 {
                for (j, x) in s.into_iter().enumerate() {
                    row.samples[j].push(x);
                }
            }
        }
        row.print();

        // 2. sequential set latency
        let mut row = Row {
            name: "set, 1 server, sequential (µs/op)".into(),
            unit: "µs",
            samples: vec![Vec::new(); 4],
            labels: vec!["aio", "blocking", "async-memcached", "memcache-async"],
        };
        for rep in 0..=REPS {
            let s = [
                per_call(n, |i| {
                    let (c, k, v) = (&a1, &keys[i % 1000], &value);
                    async move {
                        c.set(k, v, Expiry::NEVER).await.unwrap();
                    }
                })
                .await,
                {
                    let t = Instant::now();
                    for i in 0..n {
                        blocking1
                            .set(&keys[i % 1000], &value, Expiry::NEVER)
                            .unwrap();
                    }
                    t.elapsed().as_secs_f64() * 1e6 / n as f64
                },
                per_call(n, |i| {
                    let (p, k, v) = (&p1, &keys[i % 1000], &value);
                    async move {
                        p[0].lock().await.set(k, &v[..], None, None).await.unwrap();
                    }
                })
                .await,
                per_call(n, |i| {
                    let (p, k, v) = (&p2, &keys[i % 1000], &value);
                    async move {
                        p[0].lock().await.set(k, &v[..], 0).await.unwrap();
                    }
                })
                .await,
            ];
            if rep > 0 {
                for (j, x) in s.into_iter().enumerate() {
                    row.samples[j].push(x);
                }
            }
        }
        row.print();

        // 3. get_multi of 100 keys
        let batches: Vec<Vec<&str>> = (0..10)
            .map(|b| {
                keys[b * 100..b * 100 + 100]
                    .iter()
                    .map(|k| k.as_str())
                    .collect()
            })
            .collect();
        let m = n / 10;
        let mut row = Row {
            name: "get_multi 100 keys (µs/op)".into(),
            unit: "µs",
            samples: vec![Vec::new(); 5],
            labels: vec![
                "aio 4 servers",
                "blocking 4 servers",
                "aio 1 server",
                "async-memcached 1 server",
                "memcache-async 1 server",
            ],
        };
        for rep in 0..=REPS {
            let s = [
                per_call(m, |i| {
                    let (c, b) = (&a4, &batches[i % 10]);
                    async move {
                        assert_eq!(c.get_multi(b).await.len(), 100);
                    }
                })
                .await,
                {
                    let t = Instant::now();
                    for i in 0..m {
                        assert_eq!(blocking4.get_multi(&batches[i % 10]).len(), 100);
                    }
                    t.elapsed().as_secs_f64() * 1e6 / m as f64
                },
                per_call(m, |i| {
                    let (c, b) = (&a1, &batches[i % 10]);
                    async move {
                        assert_eq!(c.get_multi(b).await.len(), 100);
                    }
                })
                .await,
                per_call(m, |i| {
                    let (p, b) = (&p1, &batches[i % 10]);
                    async move {
                        let v = p[0].lock().await.get_multi(b.iter()).await.unwrap();
                        assert_eq!(v.len(), 100);
                    }
                })
                .await,
                per_call(m, |i| {
                    let (p, b) = (&p2, &batches[i % 10]);
                    async move {
                        let v = p[0].lock().await.get_multi(b).await.unwrap();
                        assert_eq!(v.len(), 100);
                    }
                })
                .await,
            ];
            if rep > 0 {
                for (j, x) in s.into_iter().enumerate() {
                    row.samples[j].push(x);
                }
            }
        }
        row.print();

        // 4. throughput: concurrent gets on one server, 8 connections each (mux: 1)
        for tasks in [1usize, 8, 64] {
            let per_task = (n * 4 / tasks).max(50);
            let mut row = Row {
                name: format!("get throughput, 1 server, {tasks} tasks (ops/s)"),
                unit: "ops/s",
                samples: vec![Vec::new(); 5],
                labels: vec![
                    "aio pool 8",
                    "multiplexed 1 conn",
                    "async-memcached 8 conns",
                    "memcache-async 8 conns",
                    "blocking pool 8 (tasks as threads)",
                ],
            };
            for rep in 0..=REPS {
                let keys = Arc::new(keys.clone());
                let s = [
                    {
                        let (c, k) = (a1.clone(), keys.clone());
                        throughput(tasks, per_task, move |t, i| {
                            let (c, k) = (c.clone(), k.clone());
                            async move {
                                c.get(&k[(t * 131 + i) % 1000]).await.unwrap().unwrap();
                            }
                        })
                        .await
                    },
                    {
                        let (c, k) = (mux.clone(), keys.clone());
                        throughput(tasks, per_task, move |t, i| {
                            let (c, k) = (c.clone(), k.clone());
                            async move {
                                c.get(&k[(t * 131 + i) % 1000]).await.unwrap();
                            }
                        })
                        .await
                    },
                    {
                        let (p, k) = (p1.clone(), keys.clone());
                        throughput(tasks, per_task, move |t, i| {
                            let (p, k) = (p.clone(), k.clone());
                            async move {
                                let mut c = p[t % 8].lock().await;
                                c.get(&k[(t * 131 + i) % 1000]).await.unwrap().unwrap();
                            }
                        })
                        .await
                    },
                    {
                        let (p, k) = (p2.clone(), keys.clone());
                        throughput(tasks, per_task, move |t, i| {
                            let (p, k) = (p.clone(), k.clone());
                            async move {
                                let mut c = p[t % 8].lock().await;
                                c.get(&k[(t * 131 + i) % 1000]).await.unwrap();
                            }
                        })
                        .await
                    },
                    {
                        let threads = tasks.min(16);
                        let per_thread = per_task * tasks / threads;
                        let t0 = Instant::now();
                        std::thread::scope(|s| {
                            for t in 0..threads {
                                let (c, k) = (&blocking1, &keys);
                                s.spawn(move || {
                                    for i in 0..per_thread {
                                        c.get(&k[(t * 131 + i) % 1000]).unwrap().unwrap();
                                    }
                                });
                            }
                        });
                        (per_thread * threads) as f64 / t0.elapsed().as_secs_f64()
                    },
                ];
                if rep > 0 {
                    for (j, x) in s.into_iter().enumerate() {
                        row.samples[j].push(x);
                    }
                }
            }
            row.print();
        }

        // 5. meta against text (issue 17): the async client over 4 servers, the same calls,
        //    the two protocols interleaved; the ratio column is meta / text
        let a4_meta = aio::Client::builder()
            .server_list(&four)
            .unwrap()
            .pool_size(8)
            .protocol(memshard::Protocol::Meta)
            .build()
            .unwrap();
        assert_eq!(a4_meta.get("user:1").await.unwrap().unwrap().value, value);
        let protocols = [&a4, &a4_meta];
        let labels = vec!["aio text", "aio meta"];
        for what in ["get", "set", "get_multi 100 keys"] {
            let mut row = Row {
                name: format!("meta vs text: {what}, 4 servers (µs/op)"),
                unit: "µs",
                samples: vec![Vec::new(); 2],
                labels: labels.clone(),
            };
            let calls = if what.starts_with("get_multi") {
                n / 10
            } else {
                n
            };
            for rep in 0..=REPS {
                let mut s = [0.0; 2];
                for (j, c) in protocols.iter().enumerate() {
                    s[j] = match what {
                        "get" => {
                            per_call(calls, |i| {
                                let k = &keys[i % 1000];
                                async move {
                                    c.get(k).await.unwrap().unwrap();
                                }
                            })
                            .await
                        }
                        "set" => {
                            per_call(calls, |i| {
                                let (k, v) = (&keys[i % 1000], &value);
                                async move {
                                    c.set(k, v, Expiry::NEVER).await.unwrap();
                                }
                            })
                            .await
                        }
                        _ => {
                            per_call(calls, |i| {
                                let b = &batches[i % 10];
                                async move {
                                    let got = c.get_multi(b).await;
                                    assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
                                }
                            })
                            .await
                        }
                    };
                }
                if rep > 0 {
                    for (j, x) in s.into_iter().enumerate() {
                        row.samples[j].push(x);
                    }
                }
            }
            row.print();
        }
    };
    rt.block_on(async { tokio::spawn(body).await.unwrap() });
}
