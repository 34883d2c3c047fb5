//! Where the async client's time goes (issue 19): the async client's get, set and get_multi
//! next to `async-memcached`, `memcache-async` and a raw tokio socket loop, all on one local
//! memcached started here, and the parts of a call measured alone: a bb8 checkout, a tokio
//! timeout that never fires (armed or not), the idle check's non-blocking read, a clock read.
//! Every contender runs on a 2-worker runtime inside a spawned task, sequentially, one
//! connection (the peers are single-connection clients). memcache-async's `set` sends
//! `noreply` and returns once written: its set row has no round trip in it.
//!
//!     cargo bench --features async --bench async_parts
//!
//! With `MEMSHARD_BENCH_CLOCK=cpu` every figure is the process's CPU time (user + system, from
//! getrusage) per call instead of wall time: steadier on a shared machine, and what a service
//! pays (the server's own CPU is not in it).

use async_memcached::AsciiProtocol;
use criterion::{Criterion, criterion_group, criterion_main};
use memshard::{Expiry, aio};
use std::future::Future;
use std::hint::black_box;
use std::io::Read;
use std::net::TcpStream as StdTcp;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start() -> (Server, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let root = std::env::var("USER").map(|u| u == "root").unwrap_or(true);
    let mut cmd = Command::new("memcached");
    if root {
        cmd.args(["-u", "root"]);
    }
    let child = cmd
        .args(["-U", "0", "-m", "64", "-t", "2", "-c", "1024"])
        .args(["-l", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("memcached must be installed to run this benchmark");
    for _ in 0..200 {
        if StdTcp::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (Server(child), port)
}

/// The process's CPU time so far (user + system).
fn cpu_now() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn cpu_clock() -> bool {
    std::env::var("MEMSHARD_BENCH_CLOCK").is_ok_and(|v| v == "cpu")
}

/// Time `iters` calls of `f` inside a task on the runtime's workers (a future driven by
/// `block_on` on the main thread pays a cross-thread wake-up per reply).
fn timed<S, F, Fut>(rt: &Runtime, state: &S, iters: u64, f: F) -> Duration
where
    S: Clone + Send + 'static,
    F: Fn(S, u64) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let state = state.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            let (t, cpu) = (Instant::now(), cpu_now());
            for i in 0..iters {
                f(state.clone(), i).await;
            }
            if cpu_clock() {
                cpu_now().saturating_sub(cpu)
            } else {
                t.elapsed()
            }
        })
        .await
        .expect("the timed task")
    })
}

/// A stand-in for a pooled connection (the client's is a few hundred bytes).
struct Dummy([u8; 320]);
struct DummyManager;
impl bb8::ManageConnection for DummyManager {
    type Connection = Dummy;
    type Error = std::io::Error;
    async fn connect(&self) -> Result<Dummy, std::io::Error> {
        Ok(Dummy([0; 320]))
    }
    async fn is_valid(&self, _: &mut Dummy) -> Result<(), std::io::Error> {
        Ok(())
    }
    fn has_broken(&self, c: &mut Dummy) -> bool {
        c.0[0] != 0
    }
}

/// Returns `Pending` once (after waking itself), then `Ready`: makes a `timeout` arm its timer.
async fn pending_once() {
    tokio::task::yield_now().await
}

fn parts(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (_server, port) = start();
    let keys: std::sync::Arc<Vec<String>> =
        std::sync::Arc::new((0..100).map(|i| format!("user:{i}")).collect());
    let value = vec![b'v'; 32];
    let addr = format!("127.0.0.1:{port}");

    let (client, peer1, peer2, raw) = rt.block_on(async {
        let client = aio::Client::builder()
            .server_list(&addr)
            .expect("server list")
            .pool_size(1)
            .build()
            .expect("client");
        for k in keys.iter() {
            client
                .set(k, &value, Expiry::NEVER)
                .await
                .expect("a set to seed");
        }
        let p1 = async_memcached::Client::new(format!("tcp://{addr}"))
            .await
            .expect("async-memcached connects");
        let s = TcpStream::connect(&addr).await.expect("connect");
        s.set_nodelay(true).expect("nodelay");
        let p2 = memcache_async::ascii::Protocol::new(s);
        let raw = TcpStream::connect(&addr).await.expect("connect");
        raw.set_nodelay(true).expect("nodelay");
        use std::sync::Arc;
        use tokio::sync::Mutex;
        (
            client,
            Arc::new(Mutex::new(p1)),
            Arc::new(Mutex::new(p2)),
            Arc::new(Mutex::new((raw, vec![0u8; 4096]))),
        )
    });
    let batch: std::sync::Arc<Vec<&'static str>> = std::sync::Arc::new(
        keys.iter()
            .map(|k| &*Box::leak(k.clone().into_boxed_str()))
            .collect(),
    );
    let value: std::sync::Arc<Vec<u8>> = std::sync::Arc::new(value);

    let mut g = c.benchmark_group("async_e2e");
    g.sample_size(30).measurement_time(Duration::from_secs(3));
    let k = keys.clone();
    g.bench_function("get/memshard", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(client.clone(), k.clone()),
                n,
                |(c, k), i| async move {
                    black_box(c.get(&k[i as usize % 100]).await.expect("get"));
                },
            )
        })
    });
    g.bench_function("get/async-memcached", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(peer1.clone(), k.clone()),
                n,
                |(p, k), i| async move {
                    black_box(p.lock().await.get(&k[i as usize % 100]).await.expect("get"));
                },
            )
        })
    });
    g.bench_function("get/memcache-async", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(peer2.clone(), k.clone()),
                n,
                |(p, k), i| async move {
                    black_box(p.lock().await.get(&k[i as usize % 100]).await.expect("get"));
                },
            )
        })
    });
    g.bench_function("get/raw tokio loop", |b| {
        b.iter_custom(|n| {
            timed(&rt, &(raw.clone(), k.clone()), n, |(r, k), i| async move {
                let mut g = r.lock().await;
                let (s, buf) = &mut *g;
                let req = format!("get {}\r\n", k[i as usize % 100]);
                s.write_all(req.as_bytes()).await.expect("write");
                let mut got = 0;
                while !buf[..got].ends_with(b"END\r\n") {
                    got += s.read(&mut buf[got..]).await.expect("read");
                }
            })
        })
    });
    g.bench_function("set/memshard", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(client.clone(), k.clone(), value.clone()),
                n,
                |(c, k, v), i| async move {
                    black_box(
                        c.set(&k[i as usize % 100], &v[..], Expiry::NEVER)
                            .await
                            .expect("set"),
                    );
                },
            )
        })
    });
    g.bench_function("set/async-memcached", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(peer1.clone(), k.clone(), value.clone()),
                n,
                |(p, k, v), i| async move {
                    p.lock()
                        .await
                        .set(&k[i as usize % 100], &v[..], None, None)
                        .await
                        .expect("set");
                },
            )
        })
    });
    g.bench_function("set/memcache-async", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(peer2.clone(), k.clone(), value.clone()),
                n,
                |(p, k, v), i| async move {
                    p.lock()
                        .await
                        .set(&k[i as usize % 100], &v[..], 0)
                        .await
                        .expect("set");
                },
            )
        })
    });
    g.bench_function("get_multi 100/memshard", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(client.clone(), batch.clone()),
                n,
                |(c, b), _| async move {
                    let got = c.get_multi(&b[..]).await;
                    assert_eq!(got.len(), 100);
                },
            )
        })
    });
    g.bench_function("get_multi 100/async-memcached", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(peer1.clone(), batch.clone()),
                n,
                |(p, b), _| async move {
                    let got = p.lock().await.get_multi(b.iter()).await.expect("get_multi");
                    assert_eq!(got.len(), 100);
                },
            )
        })
    });
    g.bench_function("get_multi 100/memcache-async", |b| {
        b.iter_custom(|n| {
            timed(
                &rt,
                &(peer2.clone(), batch.clone()),
                n,
                |(p, b), _| async move {
                    let got = p.lock().await.get_multi(&b[..]).await.expect("get_multi");
                    assert_eq!(got.len(), 100);
                },
            )
        })
    });
    g.finish();

    // The parts of a call, alone.
    let mut g = c.benchmark_group("async_parts");
    g.sample_size(30).measurement_time(Duration::from_secs(2));
    let pool = rt.block_on(async {
        bb8::Pool::builder()
            .max_size(1)
            .retry_connection(false)
            .build(DummyManager)
            .await
            .expect("pool")
    });
    g.bench_function("bb8 checkout + return", |b| {
        b.iter_custom(|n| {
            timed(&rt, &pool, n, |p, _| async move {
                black_box(&p.get().await.expect("checkout").0[..1]);
            })
        })
    });
    let (watch, _) = tokio::sync::watch::channel::<Option<u64>>(None);
    let watch = std::sync::Arc::new(watch);
    g.bench_function(
        "bb8 checkout + return, raced with a connect-failure watch",
        |b| {
            b.iter_custom(|n| {
                timed(
                    &rt,
                    &(pool.clone(), watch.clone()),
                    n,
                    |(p, w), _| async move {
                        use futures_util::future::{Either, select};
                        let mut rx = w.subscribe();
                        let failed = async move {
                            let _ = rx.changed().await;
                        };
                        match select(std::pin::pin!(p.get()), std::pin::pin!(failed)).await {
                            Either::Left((c, _)) => {
                                black_box(&c.expect("checkout").0[..1]);
                            }
                            Either::Right(_) => unreachable!(),
                        }
                    },
                )
            })
        },
    );
    g.bench_function("tokio timeout, inner ready (timer never armed)", |b| {
        b.iter_custom(|n| {
            timed(&rt, &(), n, |(), i| async move {
                let r = tokio::time::timeout(Duration::from_secs(1), async { i }).await;
                black_box(r.is_ok());
            })
        })
    });
    g.bench_function("yield once (baseline of the next two)", |b| {
        b.iter_custom(|n| {
            timed(&rt, &(), n, |(), _| async move {
                pending_once().await;
            })
        })
    });
    g.bench_function("tokio timeout, inner pending once (timer armed)", |b| {
        b.iter_custom(|n| {
            timed(&rt, &(), n, |(), _| async move {
                let r = tokio::time::timeout(Duration::from_secs(1), pending_once()).await;
                black_box(r.is_ok());
            })
        })
    });
    let timer = std::sync::Arc::new(tokio::sync::Mutex::new({
        let _in = rt.enter();
        Box::pin(tokio::time::sleep(Duration::from_secs(1)))
    }));
    g.bench_function(
        "one timer per connection, moved to a later deadline, inner pending once",
        |b| {
            b.iter_custom(|n| {
                timed(&rt, &timer, n, |t, _| async move {
                    let mut t = t.lock().await;
                    let mut io = std::pin::pin!(pending_once());
                    let mut armed = false;
                    std::future::poll_fn(|cx| {
                        use std::task::Poll;
                        if io.as_mut().poll(cx).is_ready() {
                            return Poll::Ready(true);
                        }
                        if !armed {
                            armed = true;
                            let d = tokio::time::Instant::now() + Duration::from_secs(1);
                            t.as_mut().reset(d);
                        }
                        t.as_mut().poll(cx).map(|()| false)
                    })
                    .await;
                })
            })
        },
    );
    let idle = rt.block_on(async {
        let s = TcpStream::connect(&addr).await.expect("connect");
        std::sync::Arc::new(s)
    });
    g.bench_function("idle check: non-blocking read on an idle socket", |b| {
        b.iter_custom(|n| {
            timed(&rt, &idle, n, |s, _| async move {
                let mut probe = [0u8; 64];
                let r = (&*socket2::SockRef::from(&*s)).read(&mut probe);
                black_box(r.is_err());
            })
        })
    });
    g.bench_function("Instant::now", |b| b.iter(|| black_box(Instant::now())));
    g.finish();
}

criterion_group!(benches, parts);
criterion_main!(benches);
