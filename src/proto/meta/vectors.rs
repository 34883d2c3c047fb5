//! Replays meta-vectors/memcached-1.6.18.json, every byte of which memcached 1.6.18 sent:
//! each meta reply parses whole into the status, data and return tokens its line spells (read
//! by a tokenizer of this file's own, compared field by field), and each meta request the
//! server accepted is what our encoder writes for the same command, key and flags. The requests
//! the encoder cannot write are listed ([`UNMODELLED`]) and counted exactly.

use super::*;
use crate::proto::{ParseError, Parsed, Reply};
use base64::Engine;

fn bytes(v: &serde_json::Value) -> Vec<u8> {
    if let Some(h) = v.get("hex").and_then(|h| h.as_str()) {
        return (0..h.len() / 2)
            .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
            .collect();
    }
    let t = v["text"].as_str().unwrap();
    let t = t
        .replace("<CAS-1>", "41")
        .replace("<CAS@0>", "40")
        .replace("<CAS>", "42");
    let mut out = Vec::new();
    let mut it = t.bytes();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next() {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b'\\') => out.push(b'\\'),
            other => panic!("escape {other:?}"),
        }
    }
    out
}

/// A case's name and its (request, reply) steps.
type Case = (String, Vec<(Vec<u8>, Vec<u8>)>);

fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/meta-vectors/memcached-1.6.18.json"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let steps = c["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (bytes(&s["request"]), bytes(&s["reply"])))
                .collect();
            (c["name"].as_str().unwrap().to_string(), steps)
        })
        .collect()
}

fn is_meta(line: &[u8]) -> bool {
    [&b"mg "[..], b"ms ", b"md ", b"ma ", b"mn"]
        .iter()
        .any(|p| line.starts_with(p))
}

/// The flags of a request line, as our encoder would send them; `Err(token)` for the first
/// token we do not model (checked against [`UNMODELLED`] by the caller).
fn flags_of<'t>(cmd: MetaCommand, tokens: &[&'t [u8]]) -> Result<Vec<MetaFlag>, &'t [u8]> {
    let num = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<u64>().ok();
    tokens
        .iter()
        .map(|&t| flag_of(cmd, t, num).ok_or(t))
        .collect()
}

/// One request token as a flag of `cmd`; `None` when the encoder has no such flag.
fn flag_of(cmd: MetaCommand, t: &[u8], num: impl Fn(&[u8]) -> Option<u64>) -> Option<MetaFlag> {
    let (&l, rest) = t.split_first()?;
    let n = num(rest);
    let f = match (l, rest.is_empty()) {
        (b'b', true) => MetaFlag::Base64,
        (b'c', true) => MetaFlag::ReturnCas,
        (b'f', true) => MetaFlag::ReturnFlags,
        (b'h', true) => MetaFlag::ReturnHit,
        (b'k', true) => MetaFlag::ReturnKey,
        (b'l', true) => MetaFlag::ReturnLastAccess,
        (b'q', true) => MetaFlag::Quiet,
        (b's', true) => MetaFlag::ReturnSize,
        (b't', true) => MetaFlag::ReturnTtl,
        (b'u', true) => MetaFlag::NoBump,
        (b'v', true) => MetaFlag::ReturnValue,
        (b'I', true) => MetaFlag::Invalidate,
        (b'O', false) => MetaFlag::Opaque(u32::try_from(n?).ok()?),
        (b'N', false) => MetaFlag::Vivify(u32::try_from(n?).ok()?),
        (b'R', false) => MetaFlag::Recache(u32::try_from(n?).ok()?),
        (b'T', false) => MetaFlag::Ttl(u32::try_from(n?).ok()?),
        (b'F', false) => MetaFlag::ClientFlags(u32::try_from(n?).ok()?),
        (b'C', false) => MetaFlag::CompareCas(n?),
        (b'D', false) => MetaFlag::Delta(n?),
        (b'J', false) => MetaFlag::Initial(n?),
        (b'M', false) if cmd == MetaCommand::Set => MetaFlag::SetMode(match rest {
            b"E" => SetMode::Add,
            b"A" => SetMode::Append,
            b"P" => SetMode::Prepend,
            b"R" => SetMode::Replace,
            b"S" => SetMode::Set,
            _ => return None,
        }),
        (b'M', false) if cmd == MetaCommand::Arith => MetaFlag::ArithMode(match rest {
            b"I" | b"+" => ArithMode::Incr,
            b"D" | b"-" => ArithMode::Decr,
            _ => return None,
        }),
        _ => return None,
    };
    // `+`/`-` modes are spelled I/D by our encoder
    (f.accepted_by(cmd) && rest != b"+" && rest != b"-").then_some(f)
}

/// A meta reply line read by this file's own tokenizer: the status, `VA` length and tokens the
/// parser must give, the token ranges counted from the start of the line.
fn expected_reply(line: &[u8]) -> (MetaStatus, Option<usize>, MetaTokens) {
    let status = match &line[..2] {
        b"HD" => MetaStatus::Header,
        b"VA" => MetaStatus::Value,
        b"EN" => MetaStatus::Miss,
        b"NF" => MetaStatus::NotFound,
        b"NS" => MetaStatus::NotStored,
        b"EX" => MetaStatus::Exists,
        b"MN" => MetaStatus::Noop,
        other => panic!("not a meta status: {:?}", String::from_utf8_lossy(other)),
    };
    let mut t = MetaTokens::default();
    let mut len = None;
    let mut at = 2;
    let text = |b: &[u8]| std::str::from_utf8(b).unwrap().to_owned();
    for (i, tok) in line[2..].split(|&b| b == b' ').enumerate().skip(1) {
        at += 1;
        let range = at + 1..at + tok.len();
        at += tok.len();
        if i == 1 && status == MetaStatus::Value {
            len = Some(text(tok).parse().unwrap());
            continue;
        }
        let rest = text(&tok[1..]);
        match tok[0] {
            b'c' => t.cas = Some(rest.parse().unwrap()),
            b'f' => t.flags = Some(rest.parse().unwrap()),
            b's' => t.size = Some(rest.parse().unwrap()),
            b't' => t.ttl = Some(rest.parse().unwrap()),
            b'k' => t.key = Some(range),
            b'b' => t.base64 = true,
            b'O' => t.opaque = Some(range),
            b'h' => t.hit_before = Some(rest == "1"),
            b'l' => t.last_access = Some(rest.parse().unwrap()),
            b'W' => t.win = true,
            b'X' => t.stale = true,
            b'Z' => t.won_elsewhere = true,
            other => panic!("token {:?}", other as char),
        }
    }
    (status, len, t)
}

#[test]
fn every_meta_reply_memcached_sent_parses_to_the_fields_it_spells() {
    let (mut replies, mut tokens, mut errors) = (0, 0, 0);
    for (name, steps) in cases() {
        for (req, reply) in steps {
            // only pipelines of meta commands whose replies are all meta (no `me`, no text
            // command, no refused data block run as a command)
            let lines: Vec<&[u8]> = req
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .collect();
            if !is_meta(lines[0]) || lines.iter().any(|l| l.starts_with(b"me ")) {
                continue;
            }
            let mut at = 0;
            while at < reply.len() {
                let end = at + reply[at..].windows(2).position(|w| w == b"\r\n").unwrap();
                let line = &reply[at..end];
                match parse_meta(&reply[at..], 2048) {
                    Ok(Parsed::Done(MetaItem::Reply(r), used)) => {
                        // ranges index the buffer given to the parser: the reply from `at`,
                        // which starts with this line
                        let (status, len, want) = expected_reply(line);
                        let line_s = String::from_utf8_lossy(line);
                        assert_eq!(r.status, status, "{name}: {line_s}");
                        assert_eq!(r.tokens, want, "{name}: {line_s}");
                        let data_at = end + 2 - at;
                        let want_data = len.map(|n| data_at..data_at + n);
                        assert_eq!(r.data, want_data, "{name}: {line_s}");
                        assert_eq!(used, data_at + len.map_or(0, |n| n + 2), "{name}: {line_s}");
                        tokens += line.split(|&b| b == b' ').count() - 1;
                        replies += 1;
                        at += used;
                    }
                    Ok(Parsed::Done(MetaItem::Failed(e), used)) => {
                        let want = match e {
                            Reply::Error => "ERROR".to_owned(),
                            Reply::ClientError(m) => format!("CLIENT_ERROR {m}"),
                            Reply::ServerError(m) => format!("SERVER_ERROR {m}"),
                            other => panic!("{name}: {other:?} from an error line"),
                        };
                        assert_eq!(String::from_utf8_lossy(line), want, "{name}");
                        assert_eq!(used, end + 2 - at);
                        errors += 1;
                        at += used;
                    }
                    Err(ParseError::BadMetaReply(l)) if !is_meta(l.as_bytes()) => {
                        // a text reply to a data block run as a command (surprise 4)
                        assert!(name.starts_with("ms-"), "{name}: {l}");
                        break;
                    }
                    other => panic!(
                        "{name}: {:?} at {at}: {other:?}",
                        String::from_utf8_lossy(&reply)
                    ),
                }
            }
        }
    }
    // the file is fixed: every reply of it is compared, none silently dropped
    assert_eq!((replies, tokens, errors), (REPLIES, TOKENS, ERROR_LINES));
}

/// Meta replies, their tokens (the `VA` length included) and error lines compared above.
const REPLIES: usize = 303;
const TOKENS: usize = 302;
const ERROR_LINES: usize = 63;

/// Request tokens of accepted requests that the encoder does not write, per command: the case
/// is skipped, and counted ([`SKIPPED`]). Anything else unmodelled fails the test.
/// - `O` with a non-numeric or empty opaque: ours is a number (`MetaFlag::Opaque(u32)`).
/// - `P` (mg): ignored by memcached 1.6.18 (a proxy hint), never sent by memshard.
/// - `M+`, `M-` (ma): memcached's aliases of `MI`/`MD`; the encoder spells them `I`/`D`.
/// - `F`, `T`, `N`, `R`, `O` with a number beyond u32: memcached takes it (wrapping or clamping);
///   ours are u32, so the encoder cannot send it.
/// - `s`, `v` (ms): return flags `ms` takes and ignores in 1.6.18; `MetaFlag::accepted_by` keeps
///   them to `mg`.
const UNMODELLED: [(&str, &str); 5] = [
    ("any", "O<non-numeric>"),
    ("mg", "P"),
    ("ma", "M+ M-"),
    ("any", "F T N R O beyond u32"),
    ("ms", "s v"),
];

/// Which entry of [`UNMODELLED`] a token is, if any.
fn unmodelled(cmd: &[u8], tok: &[u8]) -> Option<usize> {
    let (&l, rest) = tok.split_first()?;
    let numeric = !rest.is_empty() && rest.iter().all(u8::is_ascii_digit);
    let beyond_u32 = || {
        numeric
            && std::str::from_utf8(rest)
                .ok()
                .and_then(|r| r.parse::<u64>().ok())
                .is_none_or(|n| n > u32::MAX.into())
    };
    match (cmd, l) {
        (_, b'O') if !numeric => Some(0),
        (b"mg", b'P') => Some(1),
        (b"ma", b'M') if rest == b"+" || rest == b"-" => Some(2),
        (_, b'F' | b'T' | b'N' | b'R' | b'O') if beyond_u32() => Some(3),
        (b"ms", b's' | b'v') if rest.is_empty() => Some(4),
        _ => None,
    }
}

#[test]
fn every_accepted_meta_request_is_what_the_encoder_writes() {
    let mut checked = 0;
    let mut skipped = [0usize; UNMODELLED.len()];
    let (mut not_meta, mut not_single, mut refused, mut wrong_length) = (0, 0, 0, 0);
    // tokens the server accepted that the encoder cannot write and UNMODELLED does not list
    let mut unlisted = Vec::new();
    // requests the server took that the encoder refuses (ENCODER_REFUSES)
    let mut encoder_refused: Vec<String> = Vec::new();
    for (name, steps) in cases() {
        for (req, reply) in steps {
            let Some(nl) = req.windows(2).position(|w| w == b"\r\n") else {
                not_meta += 1;
                continue;
            };
            let line = &req[..nl];
            if !is_meta(line) || line.starts_with(b"mn") {
                // `mn`, `me`, text commands, and data blocks sent alone
                not_meta += 1;
                continue;
            }
            let single = req.len() == nl + 2 || line.starts_with(b"ms ");
            if !single {
                // a pipeline: its requests are not one encode call
                not_single += 1;
                continue;
            }
            if reply.starts_with(b"CLIENT_ERROR")
                || reply.starts_with(b"ERROR")
                || reply.starts_with(b"SERVER_ERROR")
            {
                refused += 1;
                continue;
            }
            let tokens: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let cmd = match tokens[0] {
                b"mg" => MetaCommand::Get,
                b"ms" => MetaCommand::Set,
                b"md" => MetaCommand::Delete,
                b"ma" => MetaCommand::Arith,
                other => panic!("{name}: {}", String::from_utf8_lossy(other)),
            };
            let rest = if cmd == MetaCommand::Set {
                &tokens[3.min(tokens.len())..]
            } else {
                &tokens[2..]
            };
            let flags = match flags_of(cmd, rest) {
                Ok(flags) => flags,
                Err(tok) => {
                    match unmodelled(tokens[0], tok) {
                        Some(which) => skipped[which] += 1,
                        None => unlisted.push(format!(
                            "{name}: {:?} in {:?}",
                            String::from_utf8_lossy(tok),
                            String::from_utf8_lossy(line)
                        )),
                    }
                    continue;
                }
            };
            let key = if flags.contains(&MetaFlag::Base64) {
                base64::engine::general_purpose::STANDARD
                    .decode(tokens[1])
                    .unwrap()
            } else {
                tokens[1].to_vec()
            };
            let value = if cmd == MetaCommand::Set {
                &req[nl + 2..req.len() - 2]
            } else {
                &b""[..]
            };
            if cmd == MetaCommand::Set && tokens.get(2) != Some(&value.len().to_string().as_bytes())
            {
                // a data block of another length than announced (ms-wrong-length-*)
                wrong_length += 1;
                continue;
            }
            let r = MetaRequest {
                command: cmd,
                key: &key,
                flags: &flags,
                value,
            };
            let mut out = Vec::new();
            if let Err(e) = r.encode(&mut out) {
                encoder_refused.push(format!("{name}: {e}"));
                continue;
            }
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&req),
                "{name}"
            );
            checked += 1;
        }
    }
    eprintln!(
        "checked {checked}; skipped: not meta {not_meta}, pipelines {not_single}, refused \
         {refused}, wrong length {wrong_length}, unmodelled {:?}",
        UNMODELLED.iter().zip(skipped).collect::<Vec<_>>()
    );
    assert!(unlisted.is_empty(), "{unlisted:#?}");
    let refused_cases: Vec<&str> = encoder_refused
        .iter()
        .map(|e| e.split(':').next().unwrap())
        .collect();
    assert_eq!(refused_cases, ENCODER_REFUSES, "{encoder_refused:#?}");
    // every step of the file is accounted for: a flag newly unmodelled (or an encode error)
    // changes a count
    assert_eq!(
        (
            checked,
            not_meta,
            not_single,
            refused,
            wrong_length,
            skipped
        ),
        (CHECKED, NOT_META, PIPELINES, REFUSED, WRONG_LENGTH, SKIPPED)
    );
    let steps: usize = cases().iter().map(|c| c.1.len()).sum();
    assert_eq!(
        CHECKED + NOT_META + PIPELINES + REFUSED + WRONG_LENGTH + ENCODER_REFUSES.len(),
        steps - SKIPPED.iter().sum::<usize>(),
        "every step is checked or skipped for a reason counted here"
    );
}

/// Cases whose request memcached accepted but the encoder refuses on purpose: a key with a
/// control byte (memcached's meta parser takes it; memshard keeps keys to what the text protocol
/// allows, so a key means the same over both protocols).
const ENCODER_REFUSES: [&str; 1] = ["key-with-control"];

/// The steps of meta-vectors/memcached-1.6.18.json (367 in all), by what the encoder check does
/// with them.
const CHECKED: usize = 219;
const NOT_META: usize = 58;
const PIPELINES: usize = 12;
const REFUSED: usize = 59;
const WRONG_LENGTH: usize = 6;
const SKIPPED: [usize; UNMODELLED.len()] = [5, 1, 2, 2, 2];
