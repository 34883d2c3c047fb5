//! Certificates and TLS / authenticating memcached servers for the TLS tests (included by
//! cli/tests/tls_live.rs as `#[path = "../../tests/common/tls.rs"] mod tls;`, beside `mod common;`:
//! only that binary needs rcgen).
//!
//! Every certificate is made here at run time with rcgen (X.509 v3, which rustls requires; no
//! openssl needed, no key committed): two CAs, server certificates (good, expired, signed by the
//! other CA) and client certificates (of each CA). The files go to a folder of this test binary
//! under `CARGO_TARGET_TMPDIR`, where memcached reads them.
//!
//! Servers run with `-Z` on their port and a plaintext listener beside it (`-l notls:`) for the
//! test's own checks (readiness, `stats`, raw reads), so that those never go through the code
//! under test.
#![allow(dead_code)]

use crate::common::servers::{Access, Memcached};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The loopback addresses of this binary's servers: 127.0.16.1 to 127.0.16.63 (no other test
/// uses 127.0.16.x), each on a free port. The server certificates hold only 127.0.0.1 and the
/// name `cache.test`: clients of these servers verify that name (`TlsConfig::server_name`),
/// as where servers listed by address share one certificate.
pub fn ip(n: u8) -> Ipv4Addr {
    assert!(
        (1..64).contains(&n),
        "127.0.16.{n} is outside this binary's range"
    );
    Ipv4Addr::new(127, 0, 16, n)
}

/// The name every server certificate holds besides the addresses.
pub const NAME: &str = "cache.test";

/// The only name the `named` server certificate holds: reached by address, a client verifies
/// it only if told to (`tls_name=` in the server list).
pub const TLS_NAME: &str = "named.test";

/// The user name of the `-Y` servers.
pub const USER: &str = "memshard";

/// A certificate and its key, as PEM files.
#[derive(Clone, Debug)]
pub struct Pair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The files the tests use.
pub struct Certs {
    pub dir: PathBuf,
    /// The CA the servers are started with (`ssl_ca_cert`) and clients trust.
    pub ca: PathBuf,
    /// The key of `ca`, for certificates signed outside rcgen (the openssl command's).
    pub ca_key: PathBuf,
    /// Another CA, nobody's.
    pub other_ca: PathBuf,
    /// Signed by `ca`: 127.0.0.1 and cache.test.
    pub server: Pair,
    /// As `server`, valid only in 2000.
    pub expired: Pair,
    /// As `server`, signed by `other_ca`.
    pub foreign: Pair,
    /// Signed by `ca`, valid only for [`TLS_NAME`] (no address, not [`NAME`]).
    pub named: Pair,
    /// A client certificate signed by `ca`.
    pub client: Pair,
    /// A client certificate signed by `other_ca`.
    pub other_client: Pair,
    /// memcached's `-Y` file: `memshard:<password>`.
    pub auth_file: PathBuf,
    /// The password in it: random per run, looked for in every output.
    pub password: String,
}

/// The certificates of this test binary, made once.
pub fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(make)
}

fn make() -> Certs {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    remove_stale(&base);
    let dir = base.join(format!("memshard-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("certificate folder");

    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        p
    };
    let (ca_pem, ca_key, ca) = authority("memshard test CA");
    let (other_pem, _, other) = authority("memshard other CA");
    let sans: Vec<String> = vec!["127.0.0.1".into(), NAME.into()];

    let pair = |name: &str, (cert, key): (String, String)| Pair {
        cert: write(&format!("{name}.pem"), &cert),
        key: write(&format!("{name}.key"), &key),
    };
    let server = pair("server", leaf(&ca, &sans, Use::Server, false));
    let expired = pair("expired", leaf(&ca, &sans, Use::Server, true));
    let foreign = pair("foreign", leaf(&other, &sans, Use::Server, false));
    let named = pair(
        "named",
        leaf(&ca, &[TLS_NAME.to_string()], Use::Server, false),
    );
    let client = pair("client", leaf(&ca, &[], Use::Client, false));
    let other_client = pair("other-client", leaf(&other, &[], Use::Client, false));

    let password = format!("pw-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    let auth_file = write("auth", &format!("{USER}:{password}\n"));
    Certs {
        ca: write("ca.pem", &ca_pem),
        ca_key: write("ca.key", &ca_key),
        other_ca: write("other-ca.pem", &other_pem),
        dir,
        server,
        expired,
        foreign,
        named,
        client,
        other_client,
        auth_file,
        password,
    }
}

/// Folders of earlier runs whose process is gone.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("memshard-tls-")
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn authority(name: &str) -> (String, String, Issuer<'static, KeyPair>) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("CA key");
    let cert = p.self_signed(&key).expect("CA certificate");
    let key_pem = key.serialize_pem();
    (cert.pem(), key_pem, Issuer::new(p, key))
}

#[derive(Clone, Copy, PartialEq)]
enum Use {
    Server,
    Client,
}

/// A certificate for `sans` signed by `issuer`, and its key (PKCS#8 PEM).
fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    sans: &[String],
    usage: Use,
    expired: bool,
) -> (String, String) {
    let mut p = CertificateParams::new(sans.to_vec()).expect("certificate parameters");
    let cn = match usage {
        Use::Server => sans.last().map_or(NAME, String::as_str),
        Use::Client => "memshard test client",
    };
    p.distinguished_name.push(DnType::CommonName, cn);
    p.use_authority_key_identifier_extension = true;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![match usage {
        Use::Server => ExtendedKeyUsagePurpose::ServerAuth,
        Use::Client => ExtendedKeyUsagePurpose::ClientAuth,
    }];
    if expired {
        p.not_before = rcgen::date_time_ymd(2000, 1, 1);
        p.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = KeyPair::generate().expect("key");
    let cert = p.signed_by(&key, issuer).expect("sign certificate");
    (cert.pem(), key.serialize_pem())
}

/// How a test memcached runs.
#[derive(Clone, Debug)]
pub struct Spec {
    /// TLS on its port with this certificate (`-Z`), or plaintext.
    pub tls: Option<Pair>,
    /// `ssl_verify_mode`: 0 none, 3 a client certificate signed by `ca` is required.
    pub verify_mode: u8,
    /// `ssl_session_cache`: the server-side cache that resumption (and `ssl_new_sessions`)
    /// needs.
    pub session_cache: bool,
    /// `-Y` with the auth file.
    pub auth: bool,
}

impl Spec {
    /// TLS with the good server certificate, no client certificate asked, no session cache.
    pub fn tls() -> Spec {
        Spec {
            tls: Some(certs().server.clone()),
            verify_mode: 0,
            session_cache: false,
            auth: false,
        }
    }

    pub fn plain() -> Spec {
        Spec {
            tls: None,
            verify_mode: 0,
            session_cache: false,
            auth: false,
        }
    }

    pub fn cert(mut self, pair: &Pair) -> Spec {
        self.tls = Some(pair.clone());
        self
    }

    pub fn verify(mut self, mode: u8) -> Spec {
        self.verify_mode = mode;
        self
    }

    pub fn sessions(mut self) -> Spec {
        self.session_cache = true;
        self
    }

    pub fn auth(mut self) -> Spec {
        self.auth = true;
        self
    }

    fn args(&self) -> Vec<String> {
        let c = certs();
        let mut args = Vec::new();
        if let Some(pair) = &self.tls {
            let mut o = format!(
                "ssl_chain_cert={},ssl_key={},ssl_ca_cert={},ssl_verify_mode={}",
                pair.cert.display(),
                pair.key.display(),
                c.ca.display(),
                self.verify_mode
            );
            if self.session_cache {
                o.push_str(",ssl_session_cache");
            }
            args.extend(["-Z".to_string(), "-o".to_string(), o]);
        }
        if self.auth {
            args.extend(["-Y".to_string(), c.auth_file.display().to_string()]);
        }
        args
    }

    fn access(&self) -> Access {
        Access {
            plaintext_port: self.tls.is_some(),
            login: self
                .auth
                .then(|| (USER.to_string(), certs().password.clone())),
        }
    }

    /// memcached on `ip` (a free port, or `port`) as this spec says.
    pub fn start(&self, ip: Ipv4Addr, port: u16) -> Memcached {
        Memcached::start_with(ip, port, &self.args(), &self.access())
    }
}

/// A server and how it was started, so that it can be killed and started again on the same
/// address with the same certificates.
pub struct Restartable {
    pub m: Memcached,
    pub spec: Spec,
}

impl Restartable {
    pub fn start(spec: Spec, ip: Ipv4Addr) -> Restartable {
        Restartable {
            m: spec.start(ip, 0),
            spec,
        }
    }

    /// SIGKILL, then the same spec on the same address.
    pub fn kill_and_restart(&mut self) {
        self.kill();
        self.restart();
    }

    /// SIGKILL, and wait until it is gone (its port refuses connections).
    pub fn kill(&self) {
        self.m.signal("KILL");
    }

    /// Start it again on its address (after [`Restartable::kill`]).
    pub fn restart(&mut self) {
        let (ip, port) = (self.m.ip, self.m.port);
        // the old handle reaps the killed process
        self.m = self.spec.start(ip, port);
    }

    pub fn addr(&self) -> String {
        self.m.addr()
    }
}

/// A client certificate made as memcached's TLS guides make one, with the openssl command: a
/// request (`openssl req -new`) signed by the test CA with `openssl x509 -req` and no
/// extensions, which makes an X.509 version 1 certificate (checked here). Made once.
pub fn openssl_v1_client() -> &'static Pair {
    static PAIR: OnceLock<Pair> = OnceLock::new();
    PAIR.get_or_init(|| {
        let c = certs();
        let (key, csr, cert) = (
            c.dir.join("v1-client.key"),
            c.dir.join("v1-client.csr"),
            c.dir.join("v1-client.pem"),
        );
        let p = |p: &Path| p.display().to_string();
        openssl(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=memshard v1 client",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-CA",
            &p(&c.ca),
            "-CAkey",
            &p(&c.ca_key),
            "-set_serial",
            "1",
            "-days",
            "2",
            "-out",
            &p(&cert),
        ]);
        let text = openssl(&["x509", "-noout", "-text", "-in", &p(&cert)]);
        assert!(
            text.contains("Version: 1 (0x0)"),
            "openssl x509 -req did not make a version 1 certificate:\n{text}"
        );
        Pair { cert, key }
    })
}

/// Runs the openssl command with `args`; its standard output.
fn openssl(args: &[&str]) -> String {
    let out = std::process::Command::new("openssl")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("openssl (scripts/test.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
