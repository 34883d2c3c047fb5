//! Credentials for memcached's `-Y` authentication (memcached 1.5.15+); the login they make is
//! the core's.

use crate::error::SettingError;
use std::fmt;
use std::path::Path;

/// A user name and password for memcached's `-Y` authentication.
///
/// The password is never printed: `Debug` shows neither part, and no error message holds them.
///
/// ```
/// let c = memshard::Credentials::new("app", "s3cret")?;
/// assert_eq!(format!("{c:?}"), "Credentials { .. }");
/// # Ok::<(), memshard::SettingError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: String,
    password: String,
    scheme: AuthScheme,
}

/// How a connection logs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthScheme {
    /// memcached's `-Y`: the client asks `version` first and sends `set auth 0 0 <len>` with
    /// `user password` as the data only to a server that answers "unauthenticated" (a server
    /// without `-Y` would store it). The default.
    #[default]
    Memcached,
    /// MemCachier's ASCII login, the first command of every connection: `set <user> 0 -1 <len>`
    /// with the password as the data, answered `STORED` (MemCachier answers nothing else before
    /// it). The exptime of -1 means that a plain memcached, which takes the login for an item
    /// and answers `STORED` as well, keeps nothing readable: the item expires at once.
    MemCachier,
}

impl std::str::FromStr for AuthScheme {
    type Err = crate::error::SettingError;
    /// `memcached` or `memcachier`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memcached" => Ok(AuthScheme::Memcached),
            "memcachier" => Ok(AuthScheme::MemCachier),
            other => Err(SettingError::Credentials {
                source_name: "the auth scheme".into(),
                detail: format!("unknown scheme {other:?}; give memcached or memcachier"),
            }),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials { .. }")
    }
}

impl Credentials {
    /// `user` and `password`. The user name cannot be empty or hold a space, a colon or a
    /// control character (memcached splits the login on the first space and its auth file on
    /// the first colon); the password cannot be empty or hold a line break.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Result<Self, SettingError> {
        Self::checked(user.into(), password.into(), "the builder")
    }

    fn checked(user: String, password: String, from: &str) -> Result<Self, SettingError> {
        let bad = |detail: &str| SettingError::Credentials {
            source_name: from.to_owned(),
            detail: detail.to_owned(),
        };
        if user.is_empty()
            || user.len() > crate::proto::MAX_KEY_LEN
            || user
                .bytes()
                .any(|b| b == b' ' || b == b':' || b.is_ascii_control())
        {
            return Err(bad(
                "the user name must be 1 to 250 bytes, without spaces, colons or control characters",
            ));
        }
        if password.is_empty() || password.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(bad("the password must be non-empty and on one line"));
        }
        Ok(Credentials {
            user,
            password,
            scheme: AuthScheme::Memcached,
        })
    }

    /// `user:password` (memcached's auth file format), from the first line of `text`.
    fn parse(text: &str, from: &str) -> Result<Self, SettingError> {
        let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
        match line.split_once(':') {
            Some((user, password)) => Self::checked(user.to_owned(), password.to_owned(), from),
            None => Err(SettingError::Credentials {
                source_name: from.to_owned(),
                detail: "expected one line `user:password`".to_owned(),
            }),
        }
    }

    /// The first line of the file at `path`, `user:password` (memcached's `-Y` file format).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SettingError> {
        let path = path.as_ref();
        let from = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SettingError::Credentials {
            source_name: from.clone(),
            detail: format!("cannot be read: {e}"),
        })?;
        Self::parse(&text, &from)
    }

    /// The environment variable `var`, `user:password`.
    pub fn from_env(var: &str) -> Result<Self, SettingError> {
        let from = format!("${var}");
        let text = std::env::var(var).map_err(|e| SettingError::Credentials {
            source_name: from.clone(),
            detail: format!("not set or not UTF-8 ({e})"),
        })?;
        Self::parse(&text, &from)
    }

    /// The same credentials, logging in with `scheme` (default [`AuthScheme::Memcached`]).
    pub fn scheme(mut self, scheme: AuthScheme) -> Self {
        self.scheme = scheme;
        self
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// How connections log in.
    pub fn auth_scheme(&self) -> AuthScheme {
        self.scheme
    }

    pub(crate) fn password(&self) -> &str {
        &self.password
    }

    /// MemCachier's environment: `MEMCACHIER_USERNAME` and `MEMCACHIER_PASSWORD`, logging in
    /// the MemCachier way; the servers are in `MEMCACHIER_SERVERS`
    /// ([`Builder::memcachier_from_env`](crate::Builder::memcachier_from_env) reads both).
    pub fn memcachier_from_env() -> Result<Self, SettingError> {
        Self::memcachier_from(|name| std::env::var(name))
    }

    /// [`Credentials::memcachier_from_env`] over the variables `var` gives.
    pub(crate) fn memcachier_from(
        var: impl Fn(&str) -> Result<String, std::env::VarError>,
    ) -> Result<Self, SettingError> {
        let get = |name: &str| {
            var(name).map_err(|e| SettingError::Credentials {
                source_name: format!("${name}"),
                detail: format!("not set or not UTF-8 ({e})"),
            })
        };
        let (user, password) = (get("MEMCACHIER_USERNAME")?, get("MEMCACHIER_PASSWORD")?);
        Ok(
            Self::checked(user, password, "$MEMCACHIER_USERNAME/$MEMCACHIER_PASSWORD")?
                .scheme(AuthScheme::MemCachier),
        )
    }

    pub(crate) fn token(&self) -> Vec<u8> {
        format!("{} {}", self.user, self.password).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcachier_variables_give_a_memcachier_login() {
        use std::env::VarError;
        let env = |name: &str| match name {
            "MEMCACHIER_USERNAME" => Ok("app".to_owned()),
            "MEMCACHIER_PASSWORD" => Ok("p w".to_owned()),
            _ => Err(VarError::NotPresent),
        };
        let c = Credentials::memcachier_from(env).expect("both set");
        assert_eq!((c.user(), c.password()), ("app", "p w"));
        assert_eq!(c.auth_scheme(), AuthScheme::MemCachier);
        let missing = |name: &str| match name {
            "MEMCACHIER_USERNAME" => Ok("app".to_owned()),
            _ => Err(VarError::NotPresent),
        };
        let e = Credentials::memcachier_from(missing).expect_err("no password");
        assert!(e.to_string().contains("$MEMCACHIER_PASSWORD"), "{e}");
        assert!(!format!("{c:?}").contains("p w"));
        assert_eq!(
            "memcachier".parse::<AuthScheme>(),
            Ok(AuthScheme::MemCachier)
        );
        assert_eq!("memcached".parse::<AuthScheme>(), Ok(AuthScheme::Memcached));
        assert!("sasl".parse::<AuthScheme>().is_err());
        assert!(Credentials::new("u".repeat(251), "p").is_err());
        assert!(Credentials::new("u".repeat(250), "p").is_ok());
    }

    #[test]
    fn credentials_are_checked_and_never_shown() {
        assert!(Credentials::new("", "p").is_err());
        assert!(Credentials::new("a b", "p").is_err());
        assert!(Credentials::new("a:b", "p").is_err());
        assert!(Credentials::new("a", "").is_err());
        assert!(Credentials::new("a", "p\nq").is_err());
        // memcached ends the login's value at the CR LF: a CR in the password cuts it short
        assert!(Credentials::new("a", "p\rq").is_err());
        assert!(Credentials::new("a", "pq\r").is_err());
        assert!(Credentials::new("a\r", "p").is_err());
        // an auth file written on Windows: the CR LF is not part of the password
        let c = Credentials::parse("app:pw\r\n", "test").expect("parses");
        assert_eq!(c.password, "pw");
        let c = Credentials::parse("app:s3cr:et\nignored\n", "test").expect("parses");
        assert_eq!((c.user(), c.password.as_str()), ("app", "s3cr:et"));
        assert!(Credentials::parse("no-colon", "test").is_err());
        assert_eq!(format!("{c:?}"), "Credentials { .. }");
        let shown = format!("{c:?} {:?}", Credentials::parse("app", "f"));
        assert!(!shown.contains("s3cr"), "{shown}");
        let e = Credentials::from_env("MEMSHARD_TEST_UNSET_VARIABLE").expect_err("unset");
        assert!(e.to_string().contains("$MEMSHARD_TEST_UNSET_VARIABLE"));
    }
}
