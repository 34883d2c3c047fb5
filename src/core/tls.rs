//! What the core does with TLS failures: a rustls error, seen where a TLS stream reports it,
//! classified into a [`TlsProblem`]; and the session a new connection's handshake uses.

#[cfg(test)]
use crate::error::SettingError;
use crate::error::{Error, TlsProblem};
use crate::settings::ConnOptions;
#[cfg(test)]
use crate::settings::tls::TlsConfig;
use rustls::pki_types::ServerName;
use std::sync::Arc;

/// A rustls failure as an [`Error::Tls`].
pub(crate) fn classify(server: &str, e: &rustls::Error) -> Error {
    use rustls::{AlertDescription as A, CertificateError as C, Error as R};
    let problem = match e {
        R::InvalidCertificate(c) => match c {
            C::UnknownIssuer | C::BadSignature => TlsProblem::UnknownCa,
            C::NotValidForName | C::NotValidForNameContext { .. } => TlsProblem::NameMismatch,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => TlsProblem::Expired,
            _ => TlsProblem::Other,
        },
        R::AlertReceived(A::CertificateRequired | A::BadCertificate | A::UnknownCA)
        | R::NoCertificatesPresented => TlsProblem::ClientCertificate,
        // OpenSSL (memcached) with `ssl_verify_mode` 3 ends a TLS 1.2 handshake without a
        // client certificate with handshake_failure.
        R::AlertReceived(A::HandshakeFailure) => TlsProblem::ClientCertificate,
        R::InvalidMessage(_)
        | R::InappropriateMessage { .. }
        | R::InappropriateHandshakeMessage { .. } => TlsProblem::NotTls,
        _ => TlsProblem::Other,
    };
    Error::Tls {
        server: server.to_owned(),
        problem,
        message: e.to_string(),
    }
}

/// `e`, met during `op` with `server` on a TLS stream: the rustls failure rustls's streams wrap
/// in an `io::Error`, classified; else the socket's error as [`Error::io`] makes it.
pub(crate) fn io_error(
    server: &str,
    e: std::io::Error,
    op: &'static str,
    timeout: std::time::Duration,
) -> Error {
    if let Some(tls) = e.get_ref().and_then(|r| r.downcast_ref::<rustls::Error>()) {
        return classify(server, tls);
    }
    Error::io(server, e, op, timeout)
}

/// A failed handshake: the rustls error classified, else the socket's error (`op` "tls
/// handshake", a timeout within the connect timeout).
pub(crate) fn handshake_failed(
    server: &str,
    e: std::io::Error,
    connect_timeout: std::time::Duration,
) -> Error {
    io_error(server, e, "tls handshake", connect_timeout)
}

/// What a new connection's handshake needs: the client's shared rustls configuration and the
/// name to verify.
pub(crate) type Session = (Arc<rustls::ClientConfig>, ServerName<'static>);

/// The [`Session`] of a new connection to `server` (at `host`); `None` when the client speaks
/// plaintext.
pub(crate) fn session_for(
    opts: &ConnOptions,
    server: &str,
    host: &str,
) -> Result<Option<Session>, Error> {
    let Some(tls) = &opts.tls else {
        return Ok(None);
    };
    let name = tls.name_for(server, host, opts.tls_name.as_deref())?;
    Ok(Some((tls.config.clone(), name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let e = TlsConfig::new().ca_pem(b"not a certificate").err();
        assert!(
            matches!(e, Some(SettingError::Tls { setting: "ca", .. })),
            "{e:?}"
        );
        let e = TlsConfig::new().ca_file("/nonexistent/ca.pem").err();
        assert!(
            matches!(e, Some(SettingError::Tls { setting: "ca", .. })),
            "{e:?}"
        );
        let e = TlsConfig::new().client_cert_pem(b"", b"").err();
        assert!(e.is_some());
        let bad_name = TlsConfig::new().server_name("not a name!").setup().err();
        assert!(matches!(
            bad_name,
            Some(SettingError::Tls {
                setting: "server name",
                ..
            })
        ));
    }

    #[test]
    fn handshake_failures_are_classified() {
        use rustls::{AlertDescription as A, CertificateError as C, Error as R};
        let cases = [
            (
                R::InvalidCertificate(C::UnknownIssuer),
                TlsProblem::UnknownCa,
            ),
            (
                R::InvalidCertificate(C::NotValidForName),
                TlsProblem::NameMismatch,
            ),
            (R::InvalidCertificate(C::Expired), TlsProblem::Expired),
            (R::InvalidCertificate(C::NotValidYet), TlsProblem::Expired),
            // a signature the CA did not make: the CA bundle given is not the server's
            (
                R::InvalidCertificate(C::BadSignature),
                TlsProblem::UnknownCa,
            ),
            (
                R::InvalidCertificate(C::UnknownRevocationStatus),
                TlsProblem::Other,
            ),
            (
                R::AlertReceived(A::CertificateRequired),
                TlsProblem::ClientCertificate,
            ),
            (
                R::AlertReceived(A::BadCertificate),
                TlsProblem::ClientCertificate,
            ),
            (
                R::AlertReceived(A::UnknownCA),
                TlsProblem::ClientCertificate,
            ),
            (R::NoCertificatesPresented, TlsProblem::ClientCertificate),
            // OpenSSL's answer to a TLS 1.2 client without the certificate it demands
            (
                R::AlertReceived(A::HandshakeFailure),
                TlsProblem::ClientCertificate,
            ),
            (R::AlertReceived(A::DecodeError), TlsProblem::Other),
            (
                R::InappropriateMessage {
                    expect_types: vec![],
                    got_type: rustls::ContentType::Alert,
                },
                TlsProblem::NotTls,
            ),
            (R::DecryptError, TlsProblem::Other),
            (
                R::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                TlsProblem::NotTls,
            ),
        ];
        for (e, want) in cases {
            match classify("s:1", &e) {
                Error::Tls {
                    server, problem, ..
                } => assert_eq!((server.as_str(), problem), ("s:1", want)),
                other => panic!("{other:?}"),
            }
        }
        // Wrapped in an io::Error, as rustls's streams return it.
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            R::InvalidCertificate(C::UnknownIssuer),
        );
        let e = io_error("s:1", io, "read", std::time::Duration::from_secs(1));
        assert!(
            matches!(
                e,
                Error::Tls {
                    problem: TlsProblem::UnknownCa,
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
