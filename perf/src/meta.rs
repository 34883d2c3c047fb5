//! The meta part of compare.sh: memshard over the meta protocol against memshard over text
//! (issue 17's meta/text ratios for get, set and get_multi, the same measurements as the
//! `meta_vs_text` groups of benches/client.rs and benches/async_client.rs).
//!
//!   memshard-perf meta HOST:PORT:W,... [REPS]   against running memcached (1.6 or later)
//!
//! Every text / meta pair runs interleaved, median of REPS repetitions after a warm-up.

use crate::{calls_for, emit, interleave_n, per_call};
use memshard::{Client, Expiry, Protocol, aio};
use std::hint::black_box;
use std::time::{Duration, Instant};

const KEY: &str = "meta:7";

/// One text / meta pair, interleaved; emits `meta.<what>.text` and `meta.<what>.meta`.
fn pair(what: &str, reps: usize, mut text: impl FnMut() -> f64, mut meta: impl FnMut() -> f64) {
    let r = interleave_n(reps, &mut [&mut text, &mut meta]);
    emit(&format!("meta.{what}.text"), r[0]);
    emit(&format!("meta.{what}.meta"), r[1]);
}

/// A blocking pair: `op` on each client, timed per call.
fn blocking_pair(what: &str, reps: usize, clients: &[Client; 2], op: impl Fn(&Client) + Copy) {
    let (t, m) = (clients[0].clone(), clients[1].clone());
    let (nt, nm) = (calls_for(|| op(&t)), calls_for(|| op(&m)));
    pair(
        what,
        reps,
        || per_call(nt, || op(&t)),
        || per_call(nm, || op(&m)),
    );
}

pub fn meta_cmd(spec: &str, reps: usize) {
    let (_, list) = crate::parse_spec(spec);
    let build = |p: Protocol| {
        Client::builder()
            .server_list(&list)
            .expect("list")
            .protocol(p)
            .build()
            .expect("client")
    };
    let clients = [build(Protocol::Text), build(Protocol::Meta)];
    let value = vec![b'x'; 100];
    let keys: Vec<String> = (0..100).map(|i| format!("meta:{i}")).collect();
    for c in &clients {
        for k in &keys {
            c.set(k, &value, Expiry::NEVER).expect("preload");
        }
        assert!(
            c.get_multi(&keys)
                .iter()
                .all(|r| matches!(r, Ok(Some(i)) if i.value == value)),
            "every measured read is a hit"
        );
    }
    blocking_pair("get", reps, &clients, |c| {
        black_box(c.get(KEY).expect("get"));
    });
    let v = &value;
    blocking_pair("set", reps, &clients, |c| {
        black_box(c.set(KEY, v, Expiry::NEVER).expect("set"));
    });
    let ks = &keys;
    blocking_pair("get_multi", reps, &clients, |c| {
        black_box(c.get_multi(ks));
    });
    aio_pairs(&list, &keys, &value, reps);
}

/// The async client's get, set and get_multi over text and meta. Each timed batch runs as
/// one task on a runtime worker (a future driven by `block_on` from this thread pays a
/// cross-thread wake-up per reply).
fn aio_pairs(list: &str, keys: &[String], value: &[u8], reps: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let build = |p: Protocol| {
        let _in = rt.enter();
        aio::Client::builder()
            .server_list(list)
            .expect("list")
            .protocol(p)
            .build()
            .expect("aio client")
    };
    let clients = [build(Protocol::Text), build(Protocol::Meta)];
    #[derive(Clone, Copy)]
    enum Op {
        Get,
        Set,
        GetMulti,
    }
    let batch = |c: &aio::Client, op: Op, n: usize| -> Duration {
        let (c, keys, value) = (c.clone(), keys.to_vec(), value.to_vec());
        rt.block_on(rt.spawn(async move {
            let t = Instant::now();
            for _ in 0..n {
                match op {
                    Op::Get => {
                        black_box(c.get(KEY).await.expect("aio get"));
                    }
                    Op::Set => {
                        black_box(c.set(KEY, &value, Expiry::NEVER).await.expect("aio set"));
                    }
                    Op::GetMulti => {
                        black_box(c.get_multi(&keys).await);
                    }
                }
            }
            t.elapsed()
        }))
        .expect("timed task")
    };
    for c in &clients {
        let c = c.clone();
        let hit = rt.block_on(async move { c.get(KEY).await.expect("aio get") });
        assert!(
            hit.is_some(),
            "the aio client reads what the blocking one stored"
        );
    }
    let per = |c: &aio::Client, op: Op, n: usize| batch(c, op, n).as_nanos() as f64 / n as f64;
    let calls =
        |c: &aio::Client, op: Op| ((100e6 / per(c, op, 10).max(1.0)) as usize).clamp(20, 5000);
    for (what, op) in [
        ("aio_get", Op::Get),
        ("aio_set", Op::Set),
        ("aio_get_multi", Op::GetMulti),
    ] {
        let (t, m) = (&clients[0], &clients[1]);
        let (nt, nm) = (calls(t, op), calls(m, op));
        pair(what, reps, || per(t, op, nt), || per(m, op, nm));
    }
    drop(clients);
}
