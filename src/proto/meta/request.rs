//! Meta request encoding (`mg`, `ms`, `md`, `ma`, `mn`), with the flags memcached 1.6.18
//! accepts for each command (meta-vectors/README.md, "Verified rules") checked before a byte is
//! written: a refused meta command can leave the server reading its data block as a command
//! (meta-vectors surprise 4), so nothing the server would refuse is ever sent.

use super::super::key::{KeyError, MAX_KEY_LEN, validate_key};
use base64::Engine;
use std::io::Write;

/// The meta commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaCommand {
    /// `mg`: get (and touch, vivify, early recache).
    Get,
    /// `ms`: set (add, append, prepend, replace with a mode).
    Set,
    /// `md`: delete, or mark stale (`I`).
    Delete,
    /// `ma`: increment or decrement.
    Arith,
    /// `mn`: no-op, answered `MN` (ends a quiet pipeline).
    Noop,
}

impl MetaCommand {
    /// The command word.
    pub fn verb(self) -> &'static str {
        match self {
            MetaCommand::Get => "mg",
            MetaCommand::Set => "ms",
            MetaCommand::Delete => "md",
            MetaCommand::Arith => "ma",
            MetaCommand::Noop => "mn",
        }
    }
}

/// The mode of an `ms` (`M` flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetMode {
    /// `E`: add, only if absent.
    Add,
    /// `A`: append to an existing value.
    Append,
    /// `P`: prepend to an existing value.
    Prepend,
    /// `R`: replace, only if present.
    Replace,
    /// `S`: set (the default).
    Set,
}

/// The mode of an `ma` (`M` flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithMode {
    /// `I`: increment (the default).
    Incr,
    /// `D`: decrement (stops at 0).
    Decr,
}

/// One flag of a meta request. Which command accepts which flag is
/// [`MetaFlag::accepted_by`]; each flag may appear once per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetaFlag {
    /// `b`: the key is sent base64-encoded (the encoder encodes it), so it may hold any byte.
    Base64,
    /// `c`: return the CAS unique.
    ReturnCas,
    /// `f`: return the client flags.
    ReturnFlags,
    /// `h`: return whether the item was fetched before (`h0`/`h1`).
    ReturnHit,
    /// `k`: return the key.
    ReturnKey,
    /// `l`: return the seconds since the last access.
    ReturnLastAccess,
    /// `O`: an opaque token echoed in the reply (here a number, so it always fits memcached's
    /// 31-character limit).
    Opaque(u32),
    /// `q`: quiet mode; `mg` hides `EN`, `ms`/`md` hide `HD`, `ma` hides `HD` and `VA`.
    Quiet,
    /// `s`: return the item's size.
    ReturnSize,
    /// `t`: return the TTL left (`-1`: none).
    ReturnTtl,
    /// `u`: do not bump the item in the LRU.
    NoBump,
    /// `v`: return the value (`VA` instead of `HD`).
    ReturnValue,
    /// `N`: on a miss create an empty item with this TTL; the first caller wins (`W`).
    Vivify(u32),
    /// `R`: win an early recache when the TTL left is below this many seconds.
    Recache(u32),
    /// `T`: the TTL to set (a touch for `mg`/`ma`, the item's TTL for `ms`, the stale TTL for
    /// `md` with `I`).
    Ttl(u32),
    /// `C`: compare this CAS unique.
    CompareCas(u64),
    /// `F`: the client flags to store.
    ClientFlags(u32),
    /// `I`: invalidate — `md` marks the item stale instead of removing it; `ms` with an older
    /// `C` stores the value as stale.
    Invalidate,
    /// `M` of `ms`.
    SetMode(SetMode),
    /// `M` of `ma`.
    ArithMode(ArithMode),
    /// `D`: the delta of `ma`.
    Delta(u64),
    /// `J`: the initial value of `ma` when `N` creates the item.
    Initial(u64),
}

impl MetaFlag {
    /// The flag's letter.
    pub fn letter(self) -> u8 {
        match self {
            MetaFlag::Base64 => b'b',
            MetaFlag::ReturnCas => b'c',
            MetaFlag::ReturnFlags => b'f',
            MetaFlag::ReturnHit => b'h',
            MetaFlag::ReturnKey => b'k',
            MetaFlag::ReturnLastAccess => b'l',
            MetaFlag::Opaque(_) => b'O',
            MetaFlag::Quiet => b'q',
            MetaFlag::ReturnSize => b's',
            MetaFlag::ReturnTtl => b't',
            MetaFlag::NoBump => b'u',
            MetaFlag::ReturnValue => b'v',
            MetaFlag::Vivify(_) => b'N',
            MetaFlag::Recache(_) => b'R',
            MetaFlag::Ttl(_) => b'T',
            MetaFlag::CompareCas(_) => b'C',
            MetaFlag::ClientFlags(_) => b'F',
            MetaFlag::Invalidate => b'I',
            MetaFlag::SetMode(_) | MetaFlag::ArithMode(_) => b'M',
            MetaFlag::Delta(_) => b'D',
            MetaFlag::Initial(_) => b'J',
        }
    }

    /// Whether memcached 1.6.18 accepts this flag on `cmd` (proto_text.c's per-command flag
    /// switches, checked against the server in meta-vectors/). `ms` also accepts `s` and `v`
    /// and ignores them; they are refused here as they mean nothing.
    ///
    /// ```
    /// use memshard::proto::meta::{MetaCommand, MetaFlag};
    /// assert!(MetaFlag::Vivify(30).accepted_by(MetaCommand::Get));
    /// assert!(!MetaFlag::Vivify(30).accepted_by(MetaCommand::Set));
    /// assert!(MetaFlag::Invalidate.accepted_by(MetaCommand::Delete));
    /// ```
    pub fn accepted_by(self, cmd: MetaCommand) -> bool {
        use MetaFlag::*;
        match cmd {
            MetaCommand::Get => matches!(
                self,
                Base64
                    | ReturnCas
                    | ReturnFlags
                    | ReturnHit
                    | ReturnKey
                    | ReturnLastAccess
                    | Opaque(_)
                    | Quiet
                    | ReturnSize
                    | ReturnTtl
                    | NoBump
                    | ReturnValue
                    | Vivify(_)
                    | Recache(_)
                    | Ttl(_)
            ),
            MetaCommand::Set => matches!(
                self,
                Base64
                    | ReturnCas
                    | CompareCas(_)
                    | ClientFlags(_)
                    | Invalidate
                    | ReturnKey
                    | Opaque(_)
                    | Quiet
                    | Ttl(_)
                    | SetMode(_)
            ),
            MetaCommand::Delete => matches!(
                self,
                Base64 | CompareCas(_) | Invalidate | ReturnKey | Opaque(_) | Quiet | Ttl(_)
            ),
            MetaCommand::Arith => matches!(
                self,
                Base64
                    | CompareCas(_)
                    | Vivify(_)
                    | Initial(_)
                    | Delta(_)
                    | Ttl(_)
                    | ReturnTtl
                    | ArithMode(_)
                    | Quiet
                    | Opaque(_)
                    | ReturnKey
                    | ReturnValue
                    | ReturnCas
            ),
            MetaCommand::Noop => false,
        }
    }

    fn write(self, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.push(b' ');
        out.push(self.letter());
        match self {
            MetaFlag::Opaque(n) | MetaFlag::ClientFlags(n) => write!(out, "{n}"),
            MetaFlag::Vivify(n) | MetaFlag::Recache(n) | MetaFlag::Ttl(n) => write!(out, "{n}"),
            MetaFlag::CompareCas(n) | MetaFlag::Delta(n) | MetaFlag::Initial(n) => {
                write!(out, "{n}")
            }
            MetaFlag::SetMode(m) => {
                out.push(match m {
                    SetMode::Add => b'E',
                    SetMode::Append => b'A',
                    SetMode::Prepend => b'P',
                    SetMode::Replace => b'R',
                    SetMode::Set => b'S',
                });
                Ok(())
            }
            MetaFlag::ArithMode(m) => {
                out.push(match m {
                    ArithMode::Incr => b'I',
                    ArithMode::Decr => b'D',
                });
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Why a meta request cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaEncodeError {
    /// The key cannot be sent as a text token; use [`MetaFlag::Base64`] for binary keys.
    #[error("{0}")]
    Key(#[from] KeyError),
    /// A base64 key whose encoding is longer than memcached's 250-byte key limit.
    #[error(
        "key is {0} bytes; base64-encoded it would exceed memcached's 250-byte key limit (at most 186 bytes)"
    )]
    Base64KeyTooLong(usize),
    /// memcached refuses this flag on this command.
    #[error("flag {flag} is not accepted by {command}")]
    FlagNotAccepted {
        /// The command word.
        command: &'static str,
        /// The flag's letter.
        flag: char,
    },
    /// The same flag twice (memcached answers `CLIENT_ERROR duplicate flag`).
    #[error("flag {0} given twice")]
    DuplicateFlag(char),
    /// A key given to `mn`, which takes none.
    #[error("mn takes no key")]
    KeyWithoutKeyCommand,
    /// A value given to a command other than `ms`.
    #[error("only ms carries a value")]
    ValueWithoutSet,
}

/// One meta request, borrowed from the caller.
///
/// ```
/// use memshard::proto::meta::{MetaFlag, MetaRequest};
/// let mut buf = Vec::new();
/// let flags = [MetaFlag::ReturnValue, MetaFlag::ReturnFlags, MetaFlag::Vivify(30), MetaFlag::Opaque(7)];
/// MetaRequest::get(b"user:1", &flags).encode(&mut buf)?;
/// assert_eq!(buf, b"mg user:1 v f N30 O7\r\n");
/// buf.clear();
/// MetaRequest::set(b"k", b"hi", &[MetaFlag::ClientFlags(5), MetaFlag::Ttl(60)]).encode(&mut buf)?;
/// assert_eq!(buf, b"ms k 2 F5 T60\r\nhi\r\n");
/// # Ok::<(), memshard::proto::meta::MetaEncodeError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MetaRequest<'a> {
    /// The command.
    pub command: MetaCommand,
    /// The key, raw (base64-encoded by `encode` when `flags` hold [`MetaFlag::Base64`]).
    pub key: &'a [u8],
    /// The flags, in the order they are sent.
    pub flags: &'a [MetaFlag],
    /// The data block of `ms` (empty otherwise).
    pub value: &'a [u8],
}

impl<'a> MetaRequest<'a> {
    /// `mg key flags…`.
    pub fn get(key: &'a [u8], flags: &'a [MetaFlag]) -> Self {
        Self::with(MetaCommand::Get, key, flags, b"")
    }

    /// `ms key len flags…` and the value.
    pub fn set(key: &'a [u8], value: &'a [u8], flags: &'a [MetaFlag]) -> Self {
        Self::with(MetaCommand::Set, key, flags, value)
    }

    /// `md key flags…`.
    pub fn delete(key: &'a [u8], flags: &'a [MetaFlag]) -> Self {
        Self::with(MetaCommand::Delete, key, flags, b"")
    }

    /// `ma key flags…`.
    pub fn arith(key: &'a [u8], flags: &'a [MetaFlag]) -> Self {
        Self::with(MetaCommand::Arith, key, flags, b"")
    }

    /// `mn`.
    pub fn noop() -> Self {
        Self::with(MetaCommand::Noop, b"", &[], b"")
    }

    fn with(command: MetaCommand, key: &'a [u8], flags: &'a [MetaFlag], value: &'a [u8]) -> Self {
        MetaRequest {
            command,
            key,
            flags,
            value,
        }
    }

    /// Check the request against what memcached accepts: the key (or its base64 form), each
    /// flag on this command, no flag twice, a value only on `ms`.
    pub fn check(&self) -> Result<(), MetaEncodeError> {
        let cmd = self.command;
        if cmd != MetaCommand::Set && !self.value.is_empty() {
            return Err(MetaEncodeError::ValueWithoutSet);
        }
        if cmd == MetaCommand::Noop {
            // `mn` takes nothing: memcached ignores what follows it, so a key or flag given
            // here would be dropped silently (found by fuzz/, crashes-found/meta_request-mn-flag)
            if let Some(f) = self.flags.first() {
                return Err(MetaEncodeError::FlagNotAccepted {
                    command: cmd.verb(),
                    flag: f.letter() as char,
                });
            }
            if !self.key.is_empty() {
                return Err(MetaEncodeError::KeyWithoutKeyCommand);
            }
            return Ok(());
        }
        if self.flags.contains(&MetaFlag::Base64) {
            if self.key.is_empty() {
                return Err(KeyError::Empty.into());
            }
            if self.key.len().div_ceil(3) * 4 > MAX_KEY_LEN {
                return Err(MetaEncodeError::Base64KeyTooLong(self.key.len()));
            }
        } else {
            validate_key(self.key)?;
        }
        let mut seen = 0u64;
        for f in self.flags {
            if !f.accepted_by(cmd) {
                return Err(MetaEncodeError::FlagNotAccepted {
                    command: cmd.verb(),
                    flag: f.letter() as char,
                });
            }
            let bit = 1u64 << (f.letter() & 63);
            if seen & bit != 0 {
                return Err(MetaEncodeError::DuplicateFlag(f.letter() as char));
            }
            seen |= bit;
        }
        Ok(())
    }

    /// Check the request ([`check`](Self::check)), then append its bytes to `buf`.
    pub fn encode(&self, buf: &mut Vec<u8>) -> Result<(), MetaEncodeError> {
        self.check()?;
        self.encode_unchecked(buf);
        Ok(())
    }

    /// Append the request's bytes to `buf` without [`check`](Self::check): for requests built
    /// from a key already validated and flags fixed in the code.
    pub(crate) fn encode_unchecked(&self, buf: &mut Vec<u8>) {
        // Writing to a Vec cannot fail.
        let _ = self.write_to(buf);
    }

    fn write_to(&self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        buf.extend_from_slice(self.command.verb().as_bytes());
        if self.command == MetaCommand::Noop {
            buf.extend_from_slice(b"\r\n");
            return Ok(());
        }
        buf.push(b' ');
        if self.flags.contains(&MetaFlag::Base64) {
            let at = buf.len();
            buf.resize(at + self.key.len().div_ceil(3) * 4, 0);
            let n = base64::engine::general_purpose::STANDARD
                .encode_slice(self.key, &mut buf[at..])
                .unwrap_or(0);
            buf.truncate(at + n);
        } else {
            buf.extend_from_slice(self.key);
        }
        if self.command == MetaCommand::Set {
            write!(buf, " {}", self.value.len())?;
        }
        for f in self.flags {
            f.write(buf)?;
        }
        buf.extend_from_slice(b"\r\n");
        if self.command == MetaCommand::Set {
            buf.extend_from_slice(self.value);
            buf.extend_from_slice(b"\r\n");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: MetaRequest) -> Result<String, MetaEncodeError> {
        let mut b = Vec::new();
        r.encode(&mut b)?;
        Ok(String::from_utf8(b).unwrap())
    }

    #[test]
    fn every_command_encodes_as_memcached_reads_it() {
        use MetaFlag::*;
        assert_eq!(
            enc(MetaRequest::get(
                b"k",
                &[ReturnValue, ReturnCas, Ttl(5), Recache(30), Quiet]
            )),
            Ok("mg k v c T5 R30 q\r\n".into())
        );
        assert_eq!(
            enc(MetaRequest::set(
                b"k",
                b"",
                &[SetMode(super::SetMode::Add), CompareCas(9), Invalidate]
            )),
            Ok("ms k 0 ME C9 I\r\n\r\n".into())
        );
        assert_eq!(
            enc(MetaRequest::delete(b"k", &[Invalidate, Ttl(30), Opaque(1)])),
            Ok("md k I T30 O1\r\n".into())
        );
        assert_eq!(
            enc(MetaRequest::arith(
                b"k",
                &[
                    ArithMode(super::ArithMode::Decr),
                    Delta(3),
                    Vivify(0),
                    Initial(7),
                    ReturnValue
                ]
            )),
            Ok("ma k MD D3 N0 J7 v\r\n".into())
        );
        assert_eq!(enc(MetaRequest::noop()), Ok("mn\r\n".into()));
        // the base64 of 00 01 02 ff, as meta-vectors' mg-base64 case sends it
        assert_eq!(
            enc(MetaRequest::get(&[0, 1, 2, 0xff], &[Base64, ReturnKey])),
            Ok("mg AAEC/w== b k\r\n".into())
        );
    }

    #[test]
    fn what_the_server_would_refuse_is_never_encoded() {
        use MetaFlag::*;
        assert!(matches!(
            enc(MetaRequest::set(b"k", b"v", &[Vivify(3)])),
            Err(MetaEncodeError::FlagNotAccepted { .. })
        ));
        assert_eq!(
            enc(MetaRequest::get(b"k", &[ReturnValue, ReturnValue])),
            Err(MetaEncodeError::DuplicateFlag('v'))
        );
        assert!(enc(MetaRequest::get(b"a b", &[])).is_err());
        assert!(enc(MetaRequest::get(&[b'x'; 251], &[])).is_err());
        assert!(enc(MetaRequest::get(&[b'x'; 186], &[Base64])).is_ok());
        assert!(enc(MetaRequest::get(&[b'x'; 187], &[Base64])).is_err());
        assert_eq!(
            enc(MetaRequest::delete(b"k", &[]).with_value_for_test()),
            Err(MetaEncodeError::ValueWithoutSet)
        );
        // M of ma and M of ms are the same letter: one per request
        assert!(matches!(
            enc(MetaRequest::arith(
                b"k",
                &[
                    ArithMode(super::ArithMode::Incr),
                    SetMode(super::SetMode::Set)
                ]
            )),
            Err(MetaEncodeError::FlagNotAccepted { .. })
        ));
    }

    impl<'a> MetaRequest<'a> {
        fn with_value_for_test(mut self) -> Self {
            self.value = b"x";
            self
        }
    }
}
