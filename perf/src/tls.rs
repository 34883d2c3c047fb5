//! The TLS part of compare.sh: memshard over TLS against memshard over plaintext (the same
//! measurements as benches/tls.rs).
//!
//!   memshard-perf tls-certs DIR     a CA (DIR/ca.pem) and a server certificate for the IP
//!                                   127.0.0.1 signed by it (DIR/server.pem, DIR/server.key)
//!   memshard-perf tls PLAIN TLS CA [REPS]   against a plaintext memcached at PLAIN and a
//!                                   `-Z` one at TLS (host:port) using that certificate
//!
//! Every plaintext / TLS pair runs interleaved, median of REPS repetitions after a warm-up.

use crate::{calls_for, emit, interleave_n, per_call};
use memshard::{Client, Expiry, TlsConfig};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const KEY: &str = "tls:7";

/// rustls refuses X.509 v1 certificates (what `openssl x509 -req` makes without extensions):
/// rcgen makes v3 ones, with the IP in the subject alternative names.
pub fn certs_cmd(dir: &Path) {
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
    std::fs::create_dir_all(dir).expect("certificate directory");
    std::fs::write(dir.join("ca.pem"), ca_pem).expect("write ca.pem");
    std::fs::write(dir.join("server.pem"), cert.pem()).expect("write server.pem");
    std::fs::write(dir.join("server.key"), key.serialize_pem()).expect("write server.key");
}

fn build(list: &str, tls: Option<&TlsConfig>) -> Client {
    let b = Client::builder().server_list(list).expect("list");
    match tls {
        Some(t) => b.tls(t.clone()),
        None => b,
    }
    .build()
    .expect("client")
}

/// One plaintext / TLS pair, interleaved; emits `tls.<what>.plain` and `tls.<what>.tls`.
fn pair(what: &str, reps: usize, mut plain: impl FnMut(), mut tls: impl FnMut()) {
    let (np, nt) = (calls_for(&mut plain), calls_for(&mut tls));
    let r = interleave_n(
        reps,
        &mut [&mut || per_call(np, &mut plain), &mut || {
            per_call(nt, &mut tls)
        }],
    );
    emit(&format!("tls.{what}.plain"), r[0]);
    emit(&format!("tls.{what}.tls"), r[1]);
}

pub fn tls_cmd(plain_addr: &str, tls_addr: &str, ca: &Path, reps: usize) {
    let ca_pem = std::fs::read(ca).expect("read the CA");
    let resumed = TlsConfig::new().ca_pem(&ca_pem).expect("CA");
    let full = resumed.clone().session_resumption(false);
    let (plain_list, tls_list) = (format!("{plain_addr} 1"), format!("{tls_addr} 1"));
    let plain = build(&plain_list, None);
    let tls = build(&tls_list, Some(&resumed));
    let value = vec![b'x'; 100];
    let keys: Vec<String> = (0..100).map(|i| format!("tls:{i}")).collect();
    for c in [&plain, &tls] {
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

    // clients are an Arc: each closure owns a clone
    let get = |c: &Client| {
        let c = c.clone();
        move || {
            black_box(c.get(KEY).expect("get"));
        }
    };
    pair("get", reps, get(&plain), get(&tls));
    let set = |c: &Client| {
        let (c, v) = (c.clone(), value.clone());
        move || {
            black_box(c.set(KEY, &v, Expiry::NEVER).expect("set"));
        }
    };
    pair("set", reps, set(&plain), set(&tls));
    let multi = |c: &Client| {
        let (c, ks) = (c.clone(), keys.clone());
        move || {
            black_box(c.get_multi(&ks));
        }
    };
    pair("get_multi", reps, multi(&plain), multi(&tls));
    // A new client per call, its first get opening its one connection; dropped at once. The
    // resumed side's config holds tickets from the preload's client (built from it).
    let connect = |list: &str, cfg: Option<&TlsConfig>| {
        let list = list.to_string();
        let cfg = cfg.cloned();
        move || {
            let c = build(&list, cfg.as_ref());
            black_box(c.get(KEY).expect("first get"));
        }
    };
    pair(
        "connect_resumed",
        reps,
        connect(&plain_list, None),
        connect(&tls_list, Some(&resumed)),
    );
    pair(
        "connect_full",
        reps,
        connect(&plain_list, None),
        connect(&tls_list, Some(&full)),
    );
    aio_get(&plain_list, &tls_list, &resumed, reps);
}

/// The async client's get on both servers. Each timed batch runs as one task on a runtime
/// worker (a future driven by `block_on` from this thread pays a cross-thread wake-up per
/// reply).
fn aio_get(plain_list: &str, tls_list: &str, tls: &TlsConfig, reps: usize) {
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
    let batch = |c: &aio::Client, n: usize| -> Duration {
        let c = c.clone();
        rt.block_on(rt.spawn(async move {
            let t = Instant::now();
            for _ in 0..n {
                black_box(c.get(KEY).await.expect("aio get"));
            }
            t.elapsed()
        }))
        .expect("timed task")
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
    let per = |c: &aio::Client, n: usize| batch(c, n).as_nanos() as f64 / n as f64;
    let calls = |c: &aio::Client| ((100e6 / per(c, 10).max(1.0)) as usize).clamp(20, 5000);
    let (np, nt) = (calls(&p), calls(&t));
    let r = interleave_n(reps, &mut [&mut || per(&p, np), &mut || per(&t, nt)]);
    emit("tls.aio_get.plain", r[0]);
    emit("tls.aio_get.tls", r[1]);
    drop((p, t));
}
