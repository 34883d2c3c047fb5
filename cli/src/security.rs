//! `--tls*` and `--auth-*`: TLS and memcached authentication for the commands that talk to
//! servers.

use crate::{Failure, usage};
use clap::Args;
use memshard::{Builder, Client, Credentials, TlsConfig};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SecurityArgs {
    /// Speak TLS to every server (memcached -Z), verified against the system's roots or
    /// --tls-ca; never falls back to plaintext.
    #[arg(long)]
    tls: bool,
    /// Trust only the CAs in this PEM file.
    #[arg(long, value_name = "FILE", requires = "tls")]
    tls_ca: Option<PathBuf>,
    /// Client certificate chain (PEM), for servers that demand one (ssl_verify_mode 2, 3).
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// The name to verify on every server's certificate (default: each server's host).
    #[arg(long, value_name = "NAME", requires = "tls")]
    tls_name: Option<String>,
    /// Log in with the `user:password` in the first line of FILE (memcached -Y).
    #[arg(long, value_name = "FILE", conflicts_with = "auth_env")]
    auth_file: Option<PathBuf>,
    /// Log in with the `user:password` in the environment variable VAR (memcached -Y).
    #[arg(long, value_name = "VAR")]
    auth_env: Option<String>,
    /// How to log in: memcached (memcached -Y: `set auth` with `user password`, only to a
    /// server that asks) or memcachier (MemCachier: `set USER` with the password, the first
    /// command of every connection).
    #[arg(long, value_name = "SCHEME", default_value = "memcached",
          value_parser = ["memcached", "memcachier"])]
    auth_scheme: String,
}

impl SecurityArgs {
    /// The builder with TLS and credentials as asked.
    pub fn apply(&self, mut b: Builder<Client>) -> Result<Builder<Client>, Failure> {
        if self.tls {
            let mut t = TlsConfig::new();
            if let Some(ca) = &self.tls_ca {
                t = t.ca_file(ca).map_err(usage)?;
            }
            if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
                t = t.client_cert_files(cert, key).map_err(usage)?;
            }
            if let Some(name) = &self.tls_name {
                t = t.server_name(name);
            }
            b = b.tls(t);
        }
        let credentials = match (&self.auth_file, &self.auth_env) {
            (Some(path), _) => Some(Credentials::from_file(path).map_err(usage)?),
            (None, Some(var)) => Some(Credentials::from_env(var).map_err(usage)?),
            (None, None) => None,
        };
        if let Some(c) = credentials {
            let scheme: memshard::AuthScheme = self.auth_scheme.parse().map_err(usage)?;
            b = b.credentials(c.scheme(scheme));
        }
        Ok(b)
    }
}
