//! The library's own live tests of TLS (`memcached -Z`) and authentication (`-Y`), on both
//! clients, against real memcached on loopback (the CLI's cli/tests/tls_live.rs covers the rest
//! through the same helpers, tests/common/tls.rs):
//!
//! - a client certificate made as memcached's TLS guides make it (openssl, X.509 version 1) is
//!   presented and accepted;
//! - a server list's `tls_name=` is the name verified in the handshake;
//! - a client without credentials never has a `set` taken for a login by a `-Y` server, and its
//!   meta batches fail with the auth error at once, marking nothing down;
//! - a server that accepts the connection and never answers the login is reported as such.
//!
//! Servers listen on 127.0.16.50 to 127.0.16.59 (tls_live uses lower ones; test binaries run
//! one at a time), each on a free port.
#![allow(async_fn_in_trait)]

mod common;
#[path = "common/tls.rs"]
mod tls;
#[path = "common/tls_clients.rs"]
mod tls_clients;

use common::servers::{Memcached, require};
use memshard::{
    AuthProblem, Credentials, Error, FailurePolicy, StoreOutcome, TlsConfig, TlsProblem, aio,
};
use std::net::TcpListener;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tls::{NAME, Spec, TLS_NAME, USER, certs, ip};
use tls_clients::{Kind, client, try_client};

/// Runs the scenario for the blocking client, then for the async one (built inside a runtime).
macro_rules! both {
    ($f:ident ($($arg:expr),*)) => {
        for which in 0..2 {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(async {
                    match which {
                        0 => $f::<memshard::Client>($($arg),*).await,
                        _ => $f::<aio::Client>($($arg),*).await,
                    }
                });
        }
    };
}

/// Trusts the test CA; verifies no name unless told.
fn ca() -> TlsConfig {
    TlsConfig::new()
        .ca_file(&certs().ca)
        .expect("the test CA file")
}

struct Servers {
    /// TLS, ssl_verify_mode=3: a client certificate of the test CA required.
    mutual: Memcached,
    /// TLS with the certificate that holds only [`TLS_NAME`].
    named: Memcached,
    /// Plaintext with -Y.
    auth: Memcached,
    /// TLS and -Y.
    tls_auth: Memcached,
}

fn servers() -> Option<&'static Servers> {
    static S: OnceLock<Option<Servers>> = OnceLock::new();
    S.get_or_init(|| {
        require("memcached").then(|| Servers {
            mutual: Spec::tls().verify(3).start(ip(50), 0),
            named: Spec::tls().cert(&certs().named).start(ip(51), 0),
            auth: Spec::plain().auth().start(ip(52), 0),
            tls_auth: Spec::tls().auth().start(ip(53), 0),
        })
    })
    .as_ref()
}

// ---------------------------------------------------------------------------------------
// a client certificate as memcached's guides make it
// ---------------------------------------------------------------------------------------

async fn v1_client_certificate<C: Kind>(s: &Servers) {
    let pair = tls::openssl_v1_client();
    let tls = ca()
        .server_name(NAME)
        .client_cert_files(&pair.cert, &pair.key)
        .expect("the openssl client certificate and key");
    let c: C = try_client(&s.mutual.addr(), Some(tls), None)
        .unwrap_or_else(|e| panic!("{}: a version 1 client certificate: {e}", C::NAME));
    let key = format!("v1:{}", C::NAME);
    assert_eq!(c.set(&key, b"v1").await.unwrap(), StoreOutcome::Stored);
    assert_eq!(c.get(&key).await.unwrap().expect("hit").value, &b"v1"[..]);
    assert_eq!(s.mutual.raw_get(key.as_bytes()), Some(b"v1".to_vec()));
}

#[test]
fn a_version_1_client_certificate_made_with_openssl_is_presented_and_accepted() {
    if !require("openssl") {
        return;
    }
    let Some(s) = servers() else { return };
    both!(v1_client_certificate(s));
}

// ---------------------------------------------------------------------------------------
// tls_name= of the server list
// ---------------------------------------------------------------------------------------

async fn tls_name<C: Kind>(s: &Servers) {
    let addr = s.named.addr();
    // The server is listed by address; its certificate holds only TLS_NAME. The name set for
    // every server is a wrong one: the line's tls_name= comes first.
    let list = format!("{addr} tls_name={TLS_NAME}");
    let c: C = client(&list, Some(ca().server_name(NAME)), None);
    let key = format!("tls_name:{}", C::NAME);
    assert_eq!(c.set(&key, b"named").await.unwrap(), StoreOutcome::Stored);
    assert_eq!(
        c.get(&key).await.unwrap().expect("hit").value,
        &b"named"[..]
    );

    // without tls_name=, the name set for this server comes before the one for every server
    let per_server = ca().server_name(NAME).server_name_for(&addr, TLS_NAME);
    let c: C = client(&addr, Some(per_server), None);
    assert_eq!(
        c.get(&key).await.unwrap().expect("hit").value,
        &b"named"[..]
    );

    // a tls_name= the certificate does not hold fails the handshake, as a name mismatch, even
    // where the names set in the configuration are right
    let list = format!("{addr} tls_name=other.test");
    let right = ca().server_name(TLS_NAME).server_name_for(&addr, TLS_NAME);
    let c: C = client(&list, Some(right), None);
    match c.get(&key).await {
        Err(Error::Tls {
            server,
            problem: TlsProblem::NameMismatch,
            ..
        }) => assert_eq!(server, addr),
        other => panic!("{}: wrong tls_name= gave {other:?}", C::NAME),
    }
}

#[test]
fn the_server_lists_tls_name_is_the_name_verified() {
    let Some(s) = servers() else { return };
    both!(tls_name(s));
}

/// Values of nearly memcached's item limit, set and read back whole over TLS, 24 times on
/// each client: requests of many TLS records, written across partial socket writes.
async fn big_values<C: Kind>(s: &Servers) {
    let addr = s.named.addr();
    let c: C = client(&addr, Some(ca().server_name(TLS_NAME)), None);
    for i in 0..24u8 {
        let key = format!("big:{}:{i}", C::NAME);
        let value = vec![b'a' + i % 26; 1000 * 1000 - 64 * 1024 + usize::from(i) * 977];
        assert_eq!(
            c.set(&key, &value).await.unwrap(),
            StoreOutcome::Stored,
            "{}",
            C::NAME
        );
        let got = c.get(&key).await.unwrap().expect("hit");
        assert!(got.value == value, "{}: value {i} read back whole", C::NAME);
    }
}

#[test]
fn values_near_the_item_limit_go_whole_over_tls() {
    let Some(s) = servers() else { return };
    both!(big_values(s));
}

// ---------------------------------------------------------------------------------------
// no credentials at a -Y server
// ---------------------------------------------------------------------------------------

fn is_required(r: &memshard::Result<impl std::fmt::Debug>, server: &str) -> bool {
    matches!(r, Err(Error::Auth { server: s, problem: AuthProblem::Required }) if s == server)
}

async fn no_credentials<C: Kind>(m: &Memcached, tls: Option<TlsConfig>) {
    let addr = m.addr();
    let key = format!("quirk:{}", C::NAME);
    // A value that is a valid login: memcached takes the first `set` of a connection that has
    // not logged in for one.
    let login = format!("{USER} {}", certs().password);
    let c: C = client(&addr, tls.clone(), None);
    for value in [login.as_bytes(), b"user password", b"plain"] {
        let r = c.set(&key, value).await;
        assert!(is_required(&r, &addr), "{}: set: {r:?}", C::NAME);
    }
    let r = c.get(&key).await;
    assert!(is_required(&r, &addr), "{}: get: {r:?}", C::NAME);
    let r = c.set(&key, login.as_bytes()).await;
    assert!(is_required(&r, &addr), "{}: set after get: {r:?}", C::NAME);
    // nothing was stored, as an authenticated client sees
    assert_eq!(m.raw_get(key.as_bytes()), None, "{}", C::NAME);
    // a fresh client whose first request is a get learns it too, and its set is not sent
    let c: C = client(&addr, tls, None);
    let r = c.get(&key).await;
    assert!(is_required(&r, &addr), "{}: first get: {r:?}", C::NAME);
    let r = c.set(&key, login.as_bytes()).await;
    assert!(
        is_required(&r, &addr),
        "{}: set after a get: {r:?}",
        C::NAME
    );
    assert_eq!(m.raw_get(key.as_bytes()), None, "{}", C::NAME);
}

/// The client TLS for `m`: none for the plaintext -Y server.
fn tls_of(m: &Memcached) -> Option<TlsConfig> {
    let s = servers()?;
    (m.addr() == s.tls_auth.addr()).then(|| ca().server_name(NAME))
}

#[test]
fn without_credentials_a_set_to_a_server_that_requires_them_fails_and_stores_nothing() {
    let Some(s) = servers() else { return };
    both!(no_credentials(&s.auth, None));
    both!(no_credentials(&s.tls_auth, tls_of(&s.tls_auth)));
}

/// Multi-key meta requests without credentials: memcached -Y answers the first command of the
/// batch with `CLIENT_ERROR unauthenticated` and nothing after it, so the client must not
/// wait for the rest (a read timeout) nor count the refusal as a failure of the server.
async fn meta_batches_without_credentials<C: Kind>(m: &Memcached) {
    let addr = m.addr();
    let keys: Vec<String> = (0..5)
        .map(|i| format!("meta-batch:{}:{i}", C::NAME))
        .collect();
    let items: Vec<(String, Vec<u8>)> = keys.iter().map(|k| (k.clone(), b"v".to_vec())).collect();
    let read_timeout = Duration::from_secs(10);
    for round in 0..4 {
        // a new client each round: each learns it on a new connection
        let c = C::build(
            C::builder()
                .server_list(&addr)
                .expect("server list")
                .protocol(memshard::Protocol::Meta)
                .pool_size(1)
                .read_timeout(read_timeout),
        )
        .expect("builds");
        for call in 0..3 {
            let t = Instant::now();
            let sets = c.set_multi(&items).await;
            let gets = c.get_multi(&keys).await;
            let took = t.elapsed();
            for r in sets.iter().map(|r| r.as_ref().map(|_| ())) {
                assert!(
                    matches!(
                        r,
                        Err(Error::Auth {
                            problem: AuthProblem::Required,
                            ..
                        })
                    ),
                    "{} round {round} call {call}: set_multi: {r:?}",
                    C::NAME
                );
            }
            for r in gets.iter().map(|r| r.as_ref().map(|_| ())) {
                assert!(
                    matches!(
                        r,
                        Err(Error::Auth {
                            problem: AuthProblem::Required,
                            ..
                        })
                    ),
                    "{} round {round} call {call}: get_multi: {r:?}",
                    C::NAME
                );
            }
            assert!(
                took < read_timeout,
                "{} waited out the read timeout ({took:?}) for replies that never come",
                C::NAME
            );
        }
    }
    for k in &keys {
        assert_eq!(m.raw_get(k.as_bytes()), None, "{}", C::NAME);
    }
}

#[test]
fn without_credentials_meta_batches_fail_with_the_auth_error_and_mark_nothing_down() {
    let Some(s) = servers() else { return };
    both!(meta_batches_without_credentials(&s.auth));
}

// ---------------------------------------------------------------------------------------
// a server that never answers the login
// ---------------------------------------------------------------------------------------

async fn silent_login<C: Kind>() {
    // accepts connections (the kernel completes them) and never answers
    let listener = TcpListener::bind((ip(54), 0)).expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let read = Duration::from_millis(300);
    for checkout in [Duration::from_millis(150), Duration::from_secs(3)] {
        let c = C::builder()
            .server_list(&addr)
            .expect("server list")
            .pool_size(1)
            .connect_timeout(Duration::from_secs(2))
            .read_timeout(read)
            .checkout_timeout(checkout)
            .failure_policy(FailurePolicy::default().with_failure_limit(0))
            .credentials(Credentials::new(USER, "secret").expect("credentials"));
        let c = C::build(c).expect("build");
        let t = Instant::now();
        let e = c
            .get("k")
            .await
            .expect_err("a silent server serves nothing");
        let took = t.elapsed();
        let message = e.to_string();
        println!("{} (checkout {checkout:?}): {message}", C::NAME);
        assert!(
            matches!(&e, Error::Timeout { server, op: "login", .. } if *server == addr),
            "{} (checkout {checkout:?}): {e:?}",
            C::NAME
        );
        assert!(
            message.contains("accepted the connection") && message.contains("login"),
            "{}: {message}",
            C::NAME
        );
        assert!(!message.contains("secret"), "{message}");
        assert!(took < Duration::from_secs(30), "{took:?}");
    }
}

#[test]
fn a_server_that_never_answers_the_login_is_reported_as_such() {
    both!(silent_login());
}
