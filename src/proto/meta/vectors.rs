//! Replays meta-vectors/memcached-1.6.18.json, every byte of which memcached 1.6.18 sent:
//! each meta reply parses whole, and each meta request the server accepted is what our
//! encoder writes for the same command, key and flags.

use super::*;
use crate::proto::{ParseError, Parsed};
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

/// The flags of a request line, as our encoder would send them; `None` for a flag we do not
/// model (a non-numeric opaque, flags the server ignores or refuses).
fn flags_of(cmd: MetaCommand, tokens: &[&[u8]]) -> Option<Vec<MetaFlag>> {
    let num = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<u64>().ok();
    tokens
        .iter()
        .map(|t| {
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
        })
        .collect()
}

#[test]
fn every_meta_reply_memcached_sent_parses_whole() {
    let mut parsed = 0;
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
                match parse_meta(&reply[at..], 2048) {
                    Ok(Parsed::Done(_, used)) => {
                        at += used;
                        parsed += 1;
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
    assert!(parsed > 250, "{parsed}");
}

#[test]
fn every_accepted_meta_request_is_what_the_encoder_writes() {
    let mut checked = 0;
    for (name, steps) in cases() {
        for (req, reply) in steps {
            let Some(nl) = req.windows(2).position(|w| w == b"\r\n") else {
                continue;
            };
            let line = &req[..nl];
            let single = req.len() == nl + 2 || line.starts_with(b"ms ");
            if !is_meta(line)
                || !single
                || reply.starts_with(b"CLIENT_ERROR")
                || reply.starts_with(b"ERROR")
                || reply.starts_with(b"SERVER_ERROR")
            {
                continue;
            }
            let tokens: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let cmd = match tokens[0] {
                b"mg" => MetaCommand::Get,
                b"ms" => MetaCommand::Set,
                b"md" => MetaCommand::Delete,
                b"ma" => MetaCommand::Arith,
                _ => continue,
            };
            let rest = if cmd == MetaCommand::Set {
                &tokens[3.min(tokens.len())..]
            } else {
                &tokens[2..]
            };
            let Some(flags) = flags_of(cmd, rest) else {
                continue;
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
                continue;
            }
            let r = MetaRequest {
                command: cmd,
                key: &key,
                flags: &flags,
                value,
            };
            let mut out = Vec::new();
            if r.encode(&mut out).is_err() {
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
    assert!(checked > 100, "{checked}");
}
