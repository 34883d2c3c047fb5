//! TLS settings (feature `tls`): which CAs to trust, the name each server's certificate must
//! hold, the client certificate; built once into a rustls configuration every connection of the
//! client shares, so that its session cache makes reconnects cheap (TLS 1.3 tickets, TLS 1.2
//! session IDs).
//!
//! There is no plaintext fallback: a client with TLS opens only TLS connections, and a failed
//! handshake is an error.

use crate::error::{Error, SettingError, TlsProblem};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// TLS for every connection of a client (feature `tls`).
///
/// By default the server's certificate is verified against the system's roots and must hold
/// the host part of the server's address (a DNS name, or an IP address in its subject
/// alternative names). Give the CA bundle of a private CA with [`TlsConfig::ca_file`], a name
/// to verify where servers are listed by address with [`TlsConfig::server_name`] (every
/// server) or [`TlsConfig::server_name_for`] (one server), and a client certificate for
/// memcached's `ssl_verify_mode` 2 and 3 with [`TlsConfig::client_cert_files`].
///
/// ```no_run
/// use memshard::TlsConfig;
///
/// let tls = TlsConfig::new()
///     .ca_file("/etc/memcached/ca.pem")?
///     .server_name("cache.internal")
///     .client_cert_files("/etc/app/client.pem", "/etc/app/client.key")?;
/// let client = memshard::Client::builder()
///     .server_list("127.0.0.1:11211\n127.0.0.2:11211")?
///     .tls(tls)
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    roots: Option<Vec<CertificateDer<'static>>>,
    client: Option<(Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>)>,
    name: Option<String>,
    names: HashMap<String, String>,
    /// Sessions to resume; shared by every client built from this configuration (and its
    /// clones), so a new client's first connections are cheap too. `None`: no resumption.
    sessions: Option<Arc<dyn rustls::client::ClientSessionStore>>,
    /// The rustls configuration, built once and shared by the clones: rustls resumes a session
    /// only with the very configuration (verifier, certificate resolver) that made it
    /// (`compatible_config` compares the pointers), so clients built from clones must share
    /// it. Every setter starts a new one.
    built: Arc<std::sync::OnceLock<Arc<rustls::ClientConfig>>>,
}

/// Sessions kept per configuration: rustls's default size (256 servers).
const SESSIONS: usize = 256;

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            roots: None,
            client: None,
            name: None,
            names: HashMap::new(),
            sessions: Some(Arc::new(rustls::client::ClientSessionMemoryCache::new(
                SESSIONS,
            ))),
            built: Arc::default(),
        }
    }
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca_certificates", &self.roots.as_ref().map(Vec::len))
            .field("client_certificate", &self.client.is_some())
            .field("server_name", &self.name)
            .field("server_names", &self.names)
            .field("session_resumption", &self.sessions.is_some())
            .finish()
    }
}

fn setting(setting: &'static str, detail: impl Into<String>) -> SettingError {
    SettingError::Tls {
        setting,
        detail: detail.into(),
    }
}

fn read(setting_name: &'static str, path: &Path) -> Result<Vec<u8>, SettingError> {
    std::fs::read(path).map_err(|e| {
        setting(
            setting_name,
            format!("{} cannot be read: {e}", path.display()),
        )
    })
}

fn certificates(
    setting_name: &'static str,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, SettingError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| setting(setting_name, format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(setting(setting_name, "no PEM certificate in it"));
    }
    Ok(certs)
}

impl TlsConfig {
    /// TLS verified against the system's roots, each server's host as the name.
    pub fn new() -> Self {
        TlsConfig::default()
    }

    /// Trust only the CAs in this PEM bundle (instead of the system's roots).
    pub fn ca_pem(mut self, pem: &[u8]) -> Result<Self, SettingError> {
        self.built = Arc::default();
        self.roots = Some(certificates("ca", pem)?);
        Ok(self)
    }

    /// Trust only the CAs in the PEM file at `path`.
    pub fn ca_file(self, path: impl AsRef<Path>) -> Result<Self, SettingError> {
        let pem = read("ca", path.as_ref())?;
        self.ca_pem(&pem)
    }

    /// Present this certificate chain and key (PEM) to servers that ask for one.
    pub fn client_cert_pem(mut self, chain: &[u8], key: &[u8]) -> Result<Self, SettingError> {
        self.built = Arc::default();
        let chain = certificates("client certificate", chain)?;
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| setting("client key", format!("no PEM private key in it: {e}")))?;
        self.client = Some((chain, Arc::new(key)));
        Ok(self)
    }

    /// Present the certificate chain and key in these PEM files.
    pub fn client_cert_files(
        self,
        chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, SettingError> {
        let chain = read("client certificate", chain.as_ref())?;
        let key = read("client key", key.as_ref())?;
        self.client_cert_pem(&chain, &key)
    }

    /// Verify this name on every server's certificate (where servers are listed by address
    /// and share one certificate name).
    #[must_use]
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Verify `name` on the certificate of the server listed as `server` (`host:port`, as in
    /// the server list).
    #[must_use]
    pub fn server_name_for(mut self, server: impl Into<String>, name: impl Into<String>) -> Self {
        self.names.insert(server.into(), name.into());
        self
    }

    /// Resume TLS sessions on reconnects (default on: a resumed handshake skips the
    /// certificate exchange and its verification). Off, every connection does a full
    /// handshake.
    #[must_use]
    pub fn session_resumption(mut self, on: bool) -> Self {
        self.built = Arc::default();
        self.sessions = match (on, self.sessions.take()) {
            (true, Some(s)) => Some(s),
            (true, None) => Some(Arc::new(rustls::client::ClientSessionMemoryCache::new(
                SESSIONS,
            ))),
            (false, _) => None,
        };
        self
    }

    /// The rustls configuration and the names, checked.
    pub(crate) fn setup(&self) -> Result<TlsSetup, SettingError> {
        for name in self.name.iter().chain(self.names.values()) {
            ServerName::try_from(name.as_str())
                .map_err(|e| setting("server name", format!("{name:?}: {e}")))?;
        }
        let config = match self.built.get() {
            Some(c) => c.clone(),
            None => {
                let c = Arc::new(self.client_config()?);
                // Two builds racing: the first one stays, for both.
                match self.built.set(c.clone()) {
                    Ok(()) => c,
                    Err(_) => self.built.get().cloned().unwrap_or(c),
                }
            }
        };
        Ok(TlsSetup {
            config,
            name: self.name.clone(),
            names: self.names.clone(),
        })
    }

    fn client_config(&self) -> Result<rustls::ClientConfig, SettingError> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.roots {
            Some(certs) => {
                for c in certs {
                    roots
                        .add(c.clone())
                        .map_err(|e| setting("ca", format!("not a usable CA certificate: {e}")))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for c in found.certs {
                    // The system store may hold certificates rustls cannot use; those CAs are
                    // simply not trusted, as other TLS clients do.
                    let _ = roots.add(c);
                }
                if roots.is_empty() {
                    return Err(setting(
                        "ca",
                        "no CA certificate in the system's store: give a CA bundle",
                    ));
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = match &self.client {
            Some((chain, key)) => Some(client_key(chain, key, &provider)?),
            None => None,
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| setting("protocol versions", e.to_string()))?
            .with_root_certificates(roots);
        let mut config = match client {
            Some(k) => builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(k))),
            None => builder.with_no_client_auth(),
        };
        config.resumption = match &self.sessions {
            Some(store) => rustls::client::Resumption::store(store.clone()),
            None => rustls::client::Resumption::disabled(),
        };
        Ok(config)
    }
}

/// The client certificate chain and its key, as the handshake presents them.
///
/// The client does not validate its own certificate: the server does. rustls's own check
/// (`with_client_auth_cert`) parses the certificate with webpki, which takes only X.509 version
/// 3, and would refuse the version 1 certificates that `openssl x509 -req` makes by default and
/// memcached accepts. So the chain is presented as given, and only the key is checked: it must
/// be the key of the first certificate (that certificate's public key is found in it even when
/// webpki cannot read it).
fn client_key(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    provider: &rustls::crypto::CryptoProvider,
) -> Result<CertifiedKey, SettingError> {
    let signer = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| setting("client key", format!("not a usable private key: {e}")))?;
    let certified = CertifiedKey::new(chain.to_vec(), signer);
    let mismatch = || {
        setting(
            "client key",
            "not the key of the client certificate (the first in its file): give the key it was issued for",
        )
    };
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(certified)
        }
        Err(rustls::Error::InconsistentKeys(_)) => Err(mismatch()),
        // webpki could not read the certificate (a version 1 certificate, or not one at all)
        Err(e) => match certified.key.public_key() {
            Some(public) if holds(&chain[0], &public) => Ok(certified),
            Some(_) => {
                let why = match e {
                    rustls::Error::InvalidCertificate(c) => format!("{c:?}"),
                    e => e.to_string(),
                };
                Err(setting(
                    "client certificate",
                    format!(
                        "the first certificate in its file is unreadable ({why}) and is not of the key given: re-issue it for this key (PEM, the client's own first)"
                    ),
                ))
            }
            None => Ok(certified),
        },
    }
}

/// Whether `cert` holds `public` (a DER SubjectPublicKeyInfo, which no other field of a
/// certificate repeats).
fn holds(cert: &[u8], public: &[u8]) -> bool {
    cert.windows(public.len()).any(|w| w == public)
}

/// What connections use: one rustls configuration (one session cache) for the client.
#[derive(Clone)]
pub(crate) struct TlsSetup {
    pub(crate) config: Arc<rustls::ClientConfig>,
    name: Option<String>,
    names: HashMap<String, String>,
}

impl std::fmt::Debug for TlsSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSetup").finish_non_exhaustive()
    }
}

impl TlsSetup {
    /// The name to verify for the server `server` at `host`: the server list's `tls_name`,
    /// else [`TlsConfig::server_name_for`], else [`TlsConfig::server_name`], else the host.
    pub(crate) fn name_for(
        &self,
        server: &str,
        host: &str,
        listed: Option<&str>,
    ) -> Result<ServerName<'static>, Error> {
        let name = listed
            .or(self.names.get(server).map(String::as_str))
            .or(self.name.as_deref())
            .unwrap_or(host);
        ServerName::try_from(name.to_owned()).map_err(|e| Error::Tls {
            server: server.to_owned(),
            problem: TlsProblem::NameMismatch,
            message: format!("{name:?} is not a name TLS can verify ({e}); set a server name"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use rcgen::{CertificateParams, KeyPair, PublicKeyData};

    fn pem(label: &str, der: &[u8]) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|l| std::str::from_utf8(l).expect("base64 is ASCII"))
            .collect();
        format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            lines.join("\n")
        )
        .into_bytes()
    }

    /// A self-signed certificate (X.509 v3) and its key, as PEM.
    fn issued() -> (Vec<u8>, KeyPair) {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec!["client.test".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("certificate");
        (cert.pem().into_bytes(), key)
    }

    /// The client's configuration with `chain` and `key` (PEM), trusting `ca` (PEM).
    fn with_client(ca: &[u8], chain: &[u8], key: &KeyPair) -> Result<TlsSetup, SettingError> {
        TlsConfig::new()
            .ca_pem(ca)?
            .client_cert_pem(chain, key.serialize_pem().as_bytes())?
            .setup()
    }

    fn detail(r: Result<TlsSetup, SettingError>) -> (&'static str, String) {
        match r {
            Err(SettingError::Tls { setting, detail }) => (setting, detail),
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn the_client_key_must_be_the_certificates() {
        let (cert, key) = issued();
        with_client(&cert, &cert, &key).expect("a certificate with its own key");
        let other = KeyPair::generate().expect("key");
        let (setting, detail) = detail(with_client(&cert, &cert, &other));
        assert_eq!(setting, "client key");
        assert!(detail.contains("issued for"), "{detail}");
    }

    /// A certificate webpki cannot read (as a version 1 one) is presented as given when it
    /// holds the key's public key; one that does not is refused, saying which and what to do.
    #[test]
    fn an_unreadable_client_certificate_is_presented_only_if_it_is_of_the_key() {
        let (ca, _) = issued();
        let key = KeyPair::generate().expect("key");
        // not DER webpki reads, with the key's SubjectPublicKeyInfo in it
        let mut holding = vec![0x04, 0x00];
        holding.extend_from_slice(&key.subject_public_key_info());
        with_client(&ca, &pem("CERTIFICATE", &holding), &key).expect("presented as given");

        let other = KeyPair::generate().expect("key");
        let mut foreign = vec![0x04, 0x00];
        foreign.extend_from_slice(&other.subject_public_key_info());
        let (setting, detail) = detail(with_client(&ca, &pem("CERTIFICATE", &foreign), &key));
        assert_eq!(setting, "client certificate");
        assert!(
            detail.contains("first certificate") && detail.contains("re-issue"),
            "{detail}"
        );
        assert!(!detail.contains("peer"), "{detail}");
        assert!(detail.len() < 200, "{detail}");
    }

    #[test]
    fn a_key_that_is_not_one_fails_as_the_client_key() {
        let (cert, _) = issued();
        let e = TlsConfig::new()
            .ca_pem(&cert)
            .and_then(|t| t.client_cert_pem(&cert, &pem("PRIVATE KEY", b"not a key")))
            .and_then(|t| t.setup());
        assert_eq!(detail(e).0, "client key");
    }

    #[test]
    fn settings_show_what_is_set_and_no_key() {
        let (cert, key) = issued();
        let t = TlsConfig::new()
            .ca_pem(&cert)
            .expect("CA")
            .client_cert_pem(&cert, key.serialize_pem().as_bytes())
            .expect("client certificate")
            .server_name("cache.test")
            .server_name_for("10.0.0.1:11211", "one.test")
            .session_resumption(false);
        let shown = format!("{t:?}");
        for part in [
            "ca_certificates: Some(1)",
            "client_certificate: true",
            "\"cache.test\"",
            "\"10.0.0.1:11211\": \"one.test\"",
            "session_resumption: false",
        ] {
            assert!(shown.contains(part), "{part} not in {shown}");
        }
        assert!(!shown.contains("PRIVATE"), "{shown}");
        let setup = t.setup().expect("setup");
        assert_eq!(format!("{setup:?}"), "TlsSetup { .. }");
        let on = t.clone().session_resumption(true);
        assert!(format!("{on:?}").contains("session_resumption: true"));
        assert!(format!("{:?}", on.session_resumption(true)).contains("session_resumption: true"));
    }

    /// The `_file` settings read the PEM from disk; a file that cannot be read is named,
    /// with the setting it was for.
    #[test]
    fn pem_files_are_read_and_a_missing_one_is_named() {
        let (cert, key) = issued();
        let dir = std::env::temp_dir().join(format!("memshard-tls-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (ca_path, key_path) = (dir.join("ca.pem"), dir.join("key.pem"));
        std::fs::write(&ca_path, &cert).expect("write");
        std::fs::write(&key_path, key.serialize_pem()).expect("write");
        let t = TlsConfig::new()
            .ca_file(&ca_path)
            .and_then(|t| t.client_cert_files(&ca_path, &key_path))
            .expect("read from files");
        let shown = format!("{t:?}");
        assert!(shown.contains("ca_certificates: Some(1)"), "{shown}");
        assert!(shown.contains("client_certificate: true"), "{shown}");
        t.setup().expect("setup");
        let missing = dir.join("missing.pem");
        let e = TlsConfig::new()
            .ca_file(&missing)
            .map(|_| ())
            .expect_err("missing");
        assert!(e.to_string().contains("cannot be read"), "{e}");
        let e = TlsConfig::new()
            .client_cert_files(&ca_path, &missing)
            .map(|_| ())
            .expect_err("missing key");
        assert!(
            matches!(
                e,
                SettingError::Tls {
                    setting: "client key",
                    ..
                }
            ),
            "{e:?}"
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn holds_finds_the_bytes_anywhere() {
        assert!(holds(b"abcdef", b"cde"));
        assert!(holds(b"abc", b"abc"));
        assert!(!holds(b"abcdef", b"ce"));
        assert!(!holds(b"ab", b"abc"));
    }
}
