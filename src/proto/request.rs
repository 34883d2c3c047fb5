//! Request encoding: one buffer per request, so one write per request.

use std::io::Write;

/// The storage commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreCommand {
    /// Store unconditionally.
    Set,
    /// Store only if the key is absent.
    Add,
    /// Store only if the key is present.
    Replace,
    /// Append to an existing value.
    Append,
    /// Prepend to an existing value.
    Prepend,
    /// Store only if the item's CAS unique still matches.
    Cas(u64),
}

impl StoreCommand {
    /// The command word.
    pub fn verb(self) -> &'static str {
        match self {
            StoreCommand::Set => "set",
            StoreCommand::Add => "add",
            StoreCommand::Replace => "replace",
            StoreCommand::Append => "append",
            StoreCommand::Prepend => "prepend",
            StoreCommand::Cas(_) => "cas",
        }
    }
}

/// One request, borrowed from the caller. Keys must have passed
/// [`validate_key`](super::validate_key); `encode` does not check them again.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Request<'a> {
    /// `set`/`add`/`replace`/`append`/`prepend`/`cas`.
    Store {
        /// Which command.
        cmd: StoreCommand,
        /// The key.
        key: &'a [u8],
        /// Opaque client flags stored with the value.
        flags: u32,
        /// Expiry: seconds (≤ 30 days) or a Unix time; 0 = never.
        exptime: u32,
        /// The value.
        value: &'a [u8],
        /// Ask the server not to reply.
        noreply: bool,
    },
    /// `get`/`gets` of one or more keys (`cas`: `gets`).
    Get {
        /// The keys.
        keys: &'a [&'a [u8]],
        /// Ask for CAS uniques too.
        cas: bool,
    },
    /// `gat`/`gats`: get and touch.
    GetAndTouch {
        /// New expiry.
        exptime: u32,
        /// The keys.
        keys: &'a [&'a [u8]],
        /// Ask for CAS uniques too.
        cas: bool,
    },
    /// `delete`.
    Delete {
        /// The key.
        key: &'a [u8],
        /// Ask the server not to reply.
        noreply: bool,
    },
    /// `incr` (`decr` when `incr` is false).
    Arith {
        /// `incr` or `decr`.
        incr: bool,
        /// The key.
        key: &'a [u8],
        /// The amount.
        delta: u64,
        /// Ask the server not to reply.
        noreply: bool,
    },
    /// `touch`.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New expiry.
        exptime: u32,
        /// Ask the server not to reply.
        noreply: bool,
    },
    /// `flush_all [delay]`.
    FlushAll {
        /// Delay in seconds.
        delay: Option<u32>,
        /// Ask the server not to reply.
        noreply: bool,
    },
    /// `version`.
    Version,
    /// `stats [group]`.
    Stats {
        /// A stats group such as `items` or `slabs`; must be a single word.
        group: Option<&'a str>,
    },
    /// `verbosity level`.
    Verbosity {
        /// The level.
        level: u32,
        /// Ask the server not to reply.
        noreply: bool,
    },
}

impl Request<'_> {
    /// Append the request's bytes to `buf`.
    ///
    /// ```
    /// use memshard::proto::{Request, StoreCommand};
    /// let mut buf = Vec::new();
    /// Request::Store { cmd: StoreCommand::Set, key: b"k", flags: 5, exptime: 0, value: b"hi", noreply: false }
    ///     .encode(&mut buf);
    /// assert_eq!(buf, b"set k 5 0 2\r\nhi\r\n");
    /// ```
    pub fn encode(&self, buf: &mut Vec<u8>) {
        // Writing to a Vec cannot fail.
        let _ = self.write_to(buf);
    }

    /// Whether the server will send a reply to this request.
    pub fn expects_reply(&self) -> bool {
        match self {
            Request::Store { noreply, .. }
            | Request::Delete { noreply, .. }
            | Request::Arith { noreply, .. }
            | Request::Touch { noreply, .. }
            | Request::FlushAll { noreply, .. }
            | Request::Verbosity { noreply, .. } => !noreply,
            _ => true,
        }
    }

    fn write_to(&self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let nr = |noreply: bool| if noreply { " noreply" } else { "" };
        match *self {
            Request::Store {
                cmd,
                key,
                flags,
                exptime,
                value,
                noreply,
            } => {
                buf.extend_from_slice(cmd.verb().as_bytes());
                buf.push(b' ');
                buf.extend_from_slice(key);
                write!(buf, " {flags} {exptime} {}", value.len())?;
                if let StoreCommand::Cas(unique) = cmd {
                    write!(buf, " {unique}")?;
                }
                buf.extend_from_slice(nr(noreply).as_bytes());
                buf.extend_from_slice(b"\r\n");
                buf.extend_from_slice(value);
                buf.extend_from_slice(b"\r\n");
            }
            Request::Get { keys, cas } => encode_retrieval(buf, keys, cas, None),
            Request::GetAndTouch { exptime, keys, cas } => {
                encode_retrieval(buf, keys, cas, Some(exptime));
            }
            Request::Delete { key, noreply } => {
                buf.extend_from_slice(b"delete ");
                buf.extend_from_slice(key);
                write!(buf, "{}\r\n", nr(noreply))?;
            }
            Request::Arith {
                incr,
                key,
                delta,
                noreply,
            } => {
                buf.extend_from_slice(if incr { b"incr " } else { b"decr " });
                buf.extend_from_slice(key);
                write!(buf, " {delta}{}\r\n", nr(noreply))?;
            }
            Request::Touch {
                key,
                exptime,
                noreply,
            } => {
                buf.extend_from_slice(b"touch ");
                buf.extend_from_slice(key);
                write!(buf, " {exptime}{}\r\n", nr(noreply))?;
            }
            Request::FlushAll { delay, noreply } => {
                buf.extend_from_slice(b"flush_all");
                if let Some(d) = delay {
                    write!(buf, " {d}")?;
                }
                write!(buf, "{}\r\n", nr(noreply))?;
            }
            Request::Version => buf.extend_from_slice(b"version\r\n"),
            Request::Stats { group } => match group {
                Some(g) => write!(buf, "stats {g}\r\n")?,
                None => buf.extend_from_slice(b"stats\r\n"),
            },
            Request::Verbosity { level, noreply } => {
                write!(buf, "verbosity {level}{}\r\n", nr(noreply))?;
            }
        }
        Ok(())
    }
}

/// The line of a `get` of `keys` (`gets` with `cas`; `gat`/`gats` with `touch`'s expiry), the
/// keys as they are: [`Request::Get`]'s encoding, for keys held in any slice.
pub(crate) fn encode_retrieval<K: AsRef<[u8]>>(
    buf: &mut Vec<u8>,
    keys: &[K],
    cas: bool,
    touch: Option<u32>,
) {
    match touch {
        None => buf.extend_from_slice(if cas { b"gets" } else { b"get" }),
        Some(exptime) => {
            // writing to a Vec cannot fail
            let _ = write!(buf, "{} {exptime}", if cas { "gats" } else { "gat" });
        }
    }
    for k in keys {
        buf.push(b' ');
        buf.extend_from_slice(k.as_ref());
    }
    buf.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_noreply_request_expects_no_reply() {
        for noreply in [false, true] {
            let each = [
                Request::Store {
                    cmd: StoreCommand::Set,
                    key: b"k",
                    flags: 0,
                    exptime: 0,
                    value: b"v",
                    noreply,
                },
                Request::Delete { key: b"k", noreply },
                Request::Arith {
                    incr: true,
                    key: b"k",
                    delta: 1,
                    noreply,
                },
                Request::Touch {
                    key: b"k",
                    exptime: 1,
                    noreply,
                },
                Request::FlushAll {
                    delay: None,
                    noreply,
                },
                Request::Verbosity { level: 1, noreply },
            ];
            for r in &each {
                assert_eq!(r.expects_reply(), !noreply, "{r:?}");
            }
        }
        let keys: &[&[u8]] = &[b"k"];
        for r in [
            Request::Get { keys, cas: false },
            Request::GetAndTouch {
                exptime: 1,
                keys,
                cas: true,
            },
            Request::Version,
            Request::Stats { group: None },
        ] {
            assert!(r.expects_reply(), "{r:?}");
        }
    }
}
