//! Client get / set / get_multi against real local memcached, next to a raw blocking socket
//! loop doing the same request, and the same calls over the meta protocol against text
//! (group `meta_vs_text`). The servers are started here (memcached must be installed);
//! inputs and connections are made outside the timed loops.

use criterion::{Criterion, criterion_group, criterion_main};
use memshard::Client;
use memshard::Expiry;
use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
            cmd.args([
                "-U",
                "0",
                "-m",
                "64",
                "-t",
                "2",
                "-l",
                "127.0.0.1",
                "-p",
                &p.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("memcached must be installed to run this benchmark")
        })
        .collect();
    for p in ports {
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", *p)).is_ok() {
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

/// 4 memcached on free ports, weights 3/1/2/1, and their server list.
fn weighted_cluster() -> (Servers, String) {
    let ports = free_ports(4);
    let servers = start(&ports);
    let list: String = ports
        .iter()
        .zip([3, 1, 2, 1])
        .map(|(p, w)| format!("127.0.0.1:{p} {w}\n"))
        .collect();
    (servers, list)
}

fn client_benches(c: &mut Criterion) {
    let (_servers, list) = weighted_cluster();
    let client = Client::builder()
        .server_list(&list)
        .expect("list")
        .build()
        .expect("client");
    let value = vec![b'x'; 100];
    let keys: Vec<String> = (0..100).map(|i| format!("bench:{i}")).collect();
    for k in &keys {
        client.set(k, &value, Expiry::NEVER).expect("set");
    }

    let mut g = c.benchmark_group("client");
    g.bench_function("get", |b| {
        b.iter(|| black_box(client.get(black_box("bench:7")).expect("get")))
    });
    g.bench_function("set", |b| {
        b.iter(|| {
            black_box(
                client
                    .set(black_box("bench:7"), &value, Expiry::NEVER)
                    .expect("set"),
            )
        })
    });
    g.bench_function("get_multi_100_over_4", |b| {
        b.iter(|| black_box(client.get_multi(black_box(&keys))))
    });
    // where the time of a multi-get goes: fan-out alone, and size alone
    let one_per_server: Vec<&String> = {
        let mut seen = std::collections::HashSet::new();
        keys.iter()
            .filter(|k| seen.insert(client.ring().route(k.as_bytes())))
            .collect()
    };
    g.bench_function("get_multi_1_per_server", |b| {
        b.iter(|| black_box(client.get_multi(black_box(&one_per_server))))
    });
    let owner0 = client.ring().route(keys[0].as_bytes());
    let same_server: Vec<&String> = keys
        .iter()
        .filter(|k| client.ring().route(k.as_bytes()) == owner0)
        .collect();
    g.bench_function(
        format!("get_multi_{}_on_1_server", same_server.len()),
        |b| b.iter(|| black_box(client.get_multi(black_box(&same_server)))),
    );

    // The floor: the same get on one blocking socket, reading until END.
    let owner = client
        .ring()
        .server_for(b"bench:7")
        .expect("owner")
        .addr
        .clone();
    let mut raw = TcpStream::connect(&owner).expect("raw connect");
    raw.set_nodelay(true).expect("nodelay");
    let mut buf = vec![0u8; 4096];
    g.bench_function("raw_socket_get", |b| {
        b.iter(|| {
            raw.write_all(b"get bench:7\r\n").expect("write");
            let mut n = 0;
            while !buf[..n].ends_with(b"END\r\n") {
                n += raw.read(&mut buf[n..]).expect("read");
            }
            black_box(n)
        })
    });
    // The floor for the multi-get: the same 100 keys as one `get` per server on raw sockets,
    // all written first, then each read until END.
    let mut by_server: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
    for k in &keys {
        by_server
            .entry(
                client
                    .ring()
                    .server_for(k.as_bytes())
                    .expect("owner")
                    .addr
                    .clone(),
            )
            .or_default()
            .push(k);
    }
    let mut raws: Vec<(TcpStream, Vec<u8>)> = by_server
        .iter()
        .map(|(addr, ks)| {
            let s = TcpStream::connect(addr).expect("raw connect");
            s.set_nodelay(true).expect("nodelay");
            let mut req = b"get".to_vec();
            for k in ks {
                req.push(b' ');
                req.extend_from_slice(k.as_bytes());
            }
            req.extend_from_slice(b"\r\n");
            (s, req)
        })
        .collect();
    let mut big = vec![0u8; 1 << 16];
    g.bench_function("raw_socket_get_multi_100_over_4", |b| {
        b.iter(|| {
            for (s, req) in raws.iter_mut() {
                s.write_all(req).expect("write");
            }
            let mut total = 0;
            for (s, _) in raws.iter_mut() {
                let mut n = 0;
                while !big[..n].ends_with(b"END\r\n") {
                    n += s.read(&mut big[n..]).expect("read");
                }
                total += n;
            }
            black_box(total)
        })
    });
    g.finish();
}

/// How long a get waits on an exhausted pool before its Pool error, for a checkout timeout of
/// 200 ms (tests/fault_live.rs checks the error, not the time). The pool's only connection is
/// held by a get to a server that accepts and never answers; no memcached is needed.
fn pool_benches(c: &mut Criterion) {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = silent.local_addr().expect("addr");
    let (seen, request_seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in silent.incoming().flatten() {
            let mut b = [0u8; 1];
            if s.read(&mut b).is_ok_and(|n| n > 0) {
                let _ = seen.send(());
            }
            held.push(s);
        }
    });
    // 'static: the holder thread outlives this function (it ends with the process)
    let client: &'static Client = Box::leak(Box::new(
        Client::builder()
            .server_list(&format!("{addr} 1"))
            .expect("list")
            .pool_size(1)
            .read_timeout(Duration::from_secs(3600))
            .checkout_timeout(Duration::from_millis(200))
            .build()
            .expect("client"),
    ));
    std::thread::spawn(|| black_box(client.get("held").is_ok()));
    request_seen.recv().expect("the holder's request");
    let mut g = c.benchmark_group("pool");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("exhausted_checkout_200ms", |b| {
        b.iter(|| {
            let r = client.get(black_box("k"));
            assert!(
                matches!(
                    r,
                    Err(memshard::Error::Pool {
                        exhausted: true,
                        ..
                    })
                ),
                "{r:?}"
            );
        })
    });
    g.finish();
}

/// Hot-key detection (`Builder::hot_keys`): the cost of counting one key, alone and from two
/// threads at once, every read or one in 8; then a get on local memcached with detection off
/// and on, for scale.
fn hotkey_benches(c: &mut Criterion) {
    use memshard::__bench::HotKeyCounter;
    use memshard::HotKeys;
    // 90% of reads on 10 keys, 10% on 100,000 others: the skew detection is for
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let keys: Vec<Vec<u8>> = (0..65_536)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if rng % 10 < 9 {
                format!("user:hot:{}", rng % 10).into_bytes()
            } else {
                format!("user:{}:profile", rng % 100_000).into_bytes()
            }
        })
        .collect();
    let mut g = c.benchmark_group("hotkeys");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, cfg) in [
        ("record_skewed", HotKeys::top(10)),
        ("record_skewed_sample8", HotKeys::top(10).sample(8)),
    ] {
        let counter = HotKeyCounter::new(cfg);
        let mut i = 0usize;
        g.bench_function(name, |b| {
            b.iter(|| {
                counter.record(black_box(&keys[i & 0xffff]));
                i = i.wrapping_add(1);
            })
        });
    }
    let counter = HotKeyCounter::new(HotKeys::top(10));
    let mut i = 0usize;
    g.bench_function("record_distinct", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            counter.record(black_box(format!("user:{i}:profile").as_bytes()))
        })
    });
    // two threads recording at once (the machine's two cores): time per key
    let counter = HotKeyCounter::new(HotKeys::top(10));
    g.bench_function("record_skewed_2_threads", |b| {
        b.iter_custom(|n| {
            let start = std::time::Instant::now();
            std::thread::scope(|s| {
                for t in 0..2u64 {
                    let (counter, keys) = (&counter, &keys);
                    s.spawn(move || {
                        for j in 0..n.div_ceil(2) {
                            counter.record(black_box(&keys[((j * 2 + t) & 0xffff) as usize]));
                        }
                    });
                }
            });
            start.elapsed()
        })
    });
    drop(black_box(counter.report()));

    let ports = free_ports(1);
    let _servers = start(&ports);
    let list = format!("127.0.0.1:{} 1", ports[0]);
    for (name, hot) in [
        ("get_detection_off", None),
        ("get_detection_on", Some(HotKeys::top(10))),
    ] {
        let mut b = Client::builder().server_list(&list).expect("list");
        if let Some(h) = hot {
            b = b.hot_keys(h);
        }
        let client = b.build().expect("client");
        client.set("user:hot:1", "v", Expiry::NEVER).expect("set");
        g.bench_function(name, |b| {
            b.iter(|| black_box(client.get(black_box("user:hot:1")).expect("get")))
        });
    }
    g.finish();
}

/// Meta against text (issue 17): the same get, set and get_multi of 100 keys over the same 4
/// servers, one client per protocol, in one run, so that `meta/<op>` over `text/<op>` is the
/// meta/text ratio (perf/compare.sh prints it, with the async client's).
fn meta_benches(c: &mut Criterion) {
    let (_servers, list) = weighted_cluster();
    let build = |p: memshard::Protocol| {
        Client::builder()
            .server_list(&list)
            .expect("list")
            .protocol(p)
            .build()
            .expect("client")
    };
    let value = vec![b'x'; 100];
    let keys: Vec<String> = (0..100).map(|i| format!("bench:{i}")).collect();
    let mut g = c.benchmark_group("meta_vs_text");
    for protocol in [memshard::Protocol::Text, memshard::Protocol::Meta] {
        let client = build(protocol);
        for k in &keys {
            client.set(k, &value, Expiry::NEVER).expect("set");
        }
        assert!(
            client
                .get_multi(&keys)
                .iter()
                .all(|r| matches!(r, Ok(Some(i)) if i.value == value)),
            "{protocol}: every measured read is a hit"
        );
        g.bench_function(format!("get/{protocol}"), |b| {
            b.iter(|| black_box(client.get(black_box("bench:7")).expect("get")))
        });
        g.bench_function(format!("set/{protocol}"), |b| {
            b.iter(|| {
                black_box(
                    client
                        .set(black_box("bench:7"), &value, Expiry::NEVER)
                        .expect("set"),
                )
            })
        });
        g.bench_function(format!("get_multi_100_over_4/{protocol}"), |b| {
            b.iter(|| black_box(client.get_multi(black_box(&keys))))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    client_benches,
    pool_benches,
    hotkey_benches,
    meta_benches
);
criterion_main!(benches);
