//! Meta request encoder: `MetaRequest::encode` never panics; when it answers `Ok` it appended
//! exactly one command line (and for `ms` exactly the data block and CRLF), with no CR, LF or
//! NUL in the line, the key token (raw, or base64 of the key) at most 250 bytes, and the flags'
//! tokens in order, one per letter, each carrying its number or mode; it answers `Ok` exactly
//! when memcached would accept the request (key valid or base64 and short enough, each flag
//! `accepted_by` the command, no letter twice, a value only on `ms`, no flag or key on `mn`), and on
//! `Err` it wrote nothing.
//!
//! Input layout: byte 0 = command (`% 5`: mg, ms, md, ma, mn; bit 7 set gives a non-`ms`
//! command the value too); byte 1 = flag count (`% 11`); then per flag one byte `b`: variant
//! `b % 22` in `MetaFlag` declaration order (`SetMode` and `ArithMode` separately), followed by
//! `(b / 22) % 9` bytes of its number (little-endian; a mode is the number `% 5` or `% 2`);
//! then one byte = key length, that many key bytes (fewer if the input ends), and the rest is
//! the value.

use memshard::proto::meta::{ArithMode, MetaCommand, MetaFlag, MetaRequest, SetMode};
use memshard::proto::{MAX_KEY_LEN, validate_key};

const COMMANDS: [MetaCommand; 5] = [
    MetaCommand::Get,
    MetaCommand::Set,
    MetaCommand::Delete,
    MetaCommand::Arith,
    MetaCommand::Noop,
];

const SET_MODES: [(SetMode, u8); 5] = [
    (SetMode::Add, b'E'),
    (SetMode::Append, b'A'),
    (SetMode::Prepend, b'P'),
    (SetMode::Replace, b'R'),
    (SetMode::Set, b'S'),
];

const ARITH_MODES: [(ArithMode, u8); 2] = [(ArithMode::Incr, b'I'), (ArithMode::Decr, b'D')];

/// The flag and the bytes its token must carry after the letter.
fn flag(kind: u8, n: u64) -> (MetaFlag, Vec<u8>) {
    use MetaFlag::*;
    let num = |v: u64| v.to_string().into_bytes();
    let n32 = n as u32;
    match kind % 22 {
        0 => (Base64, vec![]),
        1 => (ReturnCas, vec![]),
        2 => (ReturnFlags, vec![]),
        3 => (ReturnHit, vec![]),
        4 => (ReturnKey, vec![]),
        5 => (ReturnLastAccess, vec![]),
        6 => (Opaque(n32), num(n32.into())),
        7 => (Quiet, vec![]),
        8 => (ReturnSize, vec![]),
        9 => (ReturnTtl, vec![]),
        10 => (NoBump, vec![]),
        11 => (ReturnValue, vec![]),
        12 => (Vivify(n32), num(n32.into())),
        13 => (Recache(n32), num(n32.into())),
        14 => (Ttl(n32), num(n32.into())),
        15 => (CompareCas(n), num(n)),
        16 => (ClientFlags(n32), num(n32.into())),
        17 => (Invalidate, vec![]),
        18 => {
            let (m, l) = SET_MODES[(n % 5) as usize];
            (SetMode(m), vec![l])
        }
        19 => {
            let (m, l) = ARITH_MODES[(n % 2) as usize];
            (ArithMode(m), vec![l])
        }
        20 => (Delta(n), num(n)),
        _ => (Initial(n), num(n)),
    }
}

/// Standard base64 with padding, as the encoder writes it; `None` for anything else.
fn unbase64(t: &[u8]) -> Option<Vec<u8>> {
    const ALPHA: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if !t.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::new();
    for (i, q) in t.chunks(4).enumerate() {
        let last = i + 1 == t.len() / 4;
        let pad = q.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut v = 0u32;
        for &b in &q[..4 - pad] {
            v = v << 6 | ALPHA.iter().position(|&a| a == b)? as u32;
        }
        v <<= 6 * pad as u32;
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

pub fn run(data: &[u8]) {
    let mut it = data.iter();
    let (Some(&c), Some(&nf)) = (it.next(), it.next()) else {
        return;
    };
    let command = COMMANDS[(c % 5) as usize];
    let mut flags = Vec::new();
    let mut expect_tokens = Vec::new();
    for _ in 0..nf % 11 {
        let Some(&b) = it.next() else { break };
        let mut n = 0u64;
        for i in 0..(b / 22) % 9 {
            n |= u64::from(it.next().copied().unwrap_or(0)) << (8 * i);
        }
        let (f, arg) = flag(b, n);
        let mut tok = vec![f.letter()];
        tok.extend_from_slice(&arg);
        flags.push(f);
        expect_tokens.push(tok);
    }
    let klen = it.next().copied().unwrap_or(0) as usize;
    let rest = it.as_slice();
    let (key, rest) = rest.split_at(klen.min(rest.len()));
    let value = if command == MetaCommand::Set || c & 0x80 != 0 {
        rest
    } else {
        &[][..]
    };
    let req = MetaRequest {
        command,
        key,
        flags: &flags,
        value,
    };

    // What memcached accepts, restated from its rules.
    let base64 = flags.contains(&MetaFlag::Base64);
    let mut letters: Vec<u8> = flags.iter().map(|f| f.letter()).collect();
    letters.sort_unstable();
    let unique = letters.windows(2).all(|w| w[0] != w[1]);
    let key_ok = if base64 {
        !key.is_empty() && key.len().div_ceil(3) * 4 <= MAX_KEY_LEN
    } else {
        validate_key(key).is_ok()
    };
    let accepted = if command != MetaCommand::Set && !value.is_empty() {
        false
    } else if command == MetaCommand::Noop {
        // `accepted_by` takes no flag on `mn`, and `mn` has no key token.
        flags.is_empty() && key.is_empty()
    } else {
        key_ok && unique && flags.iter().all(|f| f.accepted_by(command))
    };

    const PREFIX: &[u8] = b"earlier\r\n";
    let mut buf = PREFIX.to_vec();
    let r = req.encode(&mut buf);
    assert!(
        buf.starts_with(PREFIX),
        "encode rewrote what was in the buffer"
    );
    let Ok(()) = r else {
        assert_eq!(buf, PREFIX, "encode failed ({r:?}) but wrote bytes");
        assert!(
            !accepted,
            "refused a request memcached accepts: {r:?} for {req:?}"
        );
        return;
    };
    assert!(
        command == MetaCommand::Noop || base64 || validate_key(key).is_ok(),
        "encoded a key validate_key refuses without base64: {key:?}"
    );
    assert!(
        command != MetaCommand::Noop || (flags.is_empty() && key.is_empty()),
        "mn encoded Ok but its flags {flags:?} or key {key:?} were dropped: {:?}",
        String::from_utf8_lossy(&buf[PREFIX.len()..])
    );
    assert!(accepted, "encoded a request memcached refuses: {req:?}");

    let out = &buf[PREFIX.len()..];
    let end = out
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("a command line ends in CRLF");
    let (line, after) = (&out[..end], &out[end + 2..]);
    assert!(
        !line.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0),
        "CR, LF or NUL inside the line {:?}",
        String::from_utf8_lossy(line)
    );
    if command == MetaCommand::Set {
        assert_eq!(after.len(), value.len() + 2, "ms: one data block and CRLF");
        assert_eq!(&after[..value.len()], value);
        assert_eq!(&after[value.len()..], b"\r\n");
    } else {
        assert!(after.is_empty(), "bytes after the command line: {after:?}");
    }
    let tokens: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    assert!(
        tokens.iter().all(|t| !t.is_empty()),
        "an empty token in {line:?}"
    );
    assert_eq!(tokens[0], command.verb().as_bytes());
    if command == MetaCommand::Noop {
        assert_eq!(tokens.len(), 1, "mn takes nothing");
        return;
    }
    let key_token = tokens.get(1).expect("a key token");
    assert!(
        key_token.len() <= MAX_KEY_LEN,
        "key token of {} bytes",
        key_token.len()
    );
    if base64 {
        assert_eq!(
            unbase64(key_token).as_deref(),
            Some(key),
            "key token is not base64(key)"
        );
    } else {
        assert_eq!(*key_token, key);
    }
    let mut rest = &tokens[2..];
    if command == MetaCommand::Set {
        assert_eq!(
            rest.first().copied(),
            Some(value.len().to_string().as_bytes())
        );
        rest = &rest[1..];
    }
    let got: Vec<&[u8]> = rest.to_vec();
    let want: Vec<&[u8]> = expect_tokens.iter().map(Vec::as_slice).collect();
    assert_eq!(got, want, "flag tokens differ from the flags, in order");
    let mut seen = [false; 256];
    for t in &got {
        assert!(!seen[t[0] as usize], "letter {} twice", t[0] as char);
        seen[t[0] as usize] = true;
    }
}
