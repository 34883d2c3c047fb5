//! The thread-scaling part of compare.sh: one shared memshard `Client` (the blocking one, its
//! default pool of 64 connections per server) driven by 1, 2, 8 and 64 threads, 90 % get /
//! 10 % set over the 4 servers; against it a raw blocking socket loop with its own 4 sockets
//! per thread (no pool, so no contention: the floor); at 64 threads also memshard with a pool
//! of 8 per server (threads wait for a connection). pylibmc runs the same in
//! py/pylibmc_bench.py (one clone per thread).
//!
//!   memshard-perf scale HOST:PORT:W,... [REPS]
//!
//! Emits `scale.<threads>.<who>.{tput,p99,cpu}`: ops/s, the 99th percentile of one
//! operation's latency (ns) and the process CPU time per operation (ns). Per thread count the
//! two contenders run interleaved: a short warm-up each, then REPS repetitions; medians.

use crate::cpu::{Run, run_threads};
use crate::{IO_KEYS, Raw, VALUE, emit};
use memshard::{Client, Expiry};
use std::hint::black_box;
use std::time::Duration;

pub(crate) const THREADS: [usize; 4] = [1, 2, 8, 64];
const DUR: Duration = Duration::from_millis(300);

/// The key of thread `t`'s `i`th operation; the same on the pylibmc side.
pub(crate) fn key_index(t: usize, i: usize) -> usize {
    (i * 7 + t * 137) % IO_KEYS
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

pub fn scale_cmd(spec: &str, reps: usize) {
    let (servers, list) = crate::parse_spec(spec);
    let build = |pool: Option<u32>| {
        let b = Client::builder().server_list(&list).expect("list");
        match pool {
            Some(n) => b.pool_size(n),
            None => b,
        }
        .build()
        .expect("client")
    };
    let ms = build(None);
    // At 64 threads a pool of 8 per server makes threads wait for a connection: what that
    // wait costs, next to the default.
    let ms8 = build(Some(8));
    let keys: Vec<String> = (0..IO_KEYS).map(|i| format!("user:{i}")).collect();
    for k in &keys {
        ms.set(k, VALUE, Expiry::NEVER).expect("preload");
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

    let ms_run = |ms: &Client, threads: usize, dur: Duration| {
        run_threads(threads, dur, &|_| (), &|_: &mut (), t, i| {
            let key = &keys[key_index(t, i)];
            if i % 10 == 9 {
                black_box(ms.set(key, VALUE, Expiry::NEVER).expect("set"));
            } else {
                black_box(ms.get(key).expect("get"));
            }
        })
    };
    let raw_run = |threads: usize, dur: Duration| {
        run_threads(
            threads,
            dur,
            &|_| servers.iter().map(|a| Raw::connect(a)).collect::<Vec<_>>(),
            &|raw: &mut Vec<Raw>, t, i| {
                let k = key_index(t, i);
                let r = &mut raw[owner[k]];
                if i % 10 == 9 {
                    r.send(&set_req[k]);
                    black_box(r.read_until(b"\r\n"));
                } else {
                    r.send(&get_req[k]);
                    black_box(r.read_until(b"END\r\n"));
                }
            },
        )
    };
    for threads in THREADS {
        let big = threads > 8;
        black_box(ms_run(&ms, threads, DUR / 3));
        black_box(raw_run(threads, DUR / 3));
        if big {
            black_box(ms_run(&ms8, threads, DUR / 3));
        }
        let mut runs: [Vec<Run>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..reps {
            runs[0].push(ms_run(&ms, threads, DUR));
            runs[1].push(raw_run(threads, DUR));
            if big {
                runs[2].push(ms_run(&ms8, threads, DUR));
            }
        }
        let names = ["memshard", "raw", "memshard_pool8"];
        for (who, r) in names.iter().zip(runs).filter(|(_, r)| !r.is_empty()) {
            let m = |f: fn(&Run) -> f64| median(r.iter().map(f).collect());
            emit(&format!("scale.{threads}.{who}.tput"), m(|r| r.ops_per_s));
            emit(&format!("scale.{threads}.{who}.p99"), m(|r| r.p99));
            emit(&format!("scale.{threads}.{who}.cpu"), m(|r| r.cpu));
        }
    }
}
