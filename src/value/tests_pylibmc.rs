//! pylibmc's write side and pickles, against value-vectors/pylibmc.json (written by pylibmc
//! 1.6.3 itself) and pickles written by Python 3.11's `pickle.dumps` (pylibmc's pickler).

use std::io::Read;

use serde_json::Value as J;
use sha2::{Digest, Sha256};

use super::serial::pickle;
use super::*;

const MAX: usize = 1 << 20;

pub(super) fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

pub(super) fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn fixture(name: &str) -> J {
    let path = format!("{}/value-vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture JSON")
}

fn inflate(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(data)
        .read_to_end(&mut out)
        .expect("zlib");
    out
}

/// value-vectors/README.md, "Recipes".
fn recipe(r: &str) -> Vec<u8> {
    let args: Vec<usize> = r[r.find('(').expect("(") + 1..r.len() - 1]
        .split(", ")
        .map(|a| a.parse().expect("recipe argument"))
        .collect();
    let text = |n: usize| {
        let mut t = Vec::new();
        let mut i = 0;
        while t.len() < n {
            t.extend(format!("line {i:06}: the quick brown fox jumps over the lazy dog\n").bytes());
            i += 1;
        }
        t.truncate(n);
        t
    };
    let noise = |n: usize| {
        let mut t = Vec::new();
        let mut i = 0;
        while t.len() < n {
            t.extend(Sha256::digest(format!("memshard-{i}")));
            i += 1;
        }
        t.truncate(n);
        t
    };
    match (&r[..r.find('(').expect("(")], args.as_slice()) {
        ("text", [n]) => text(*n),
        ("noise", [n]) => noise(*n),
        ("mix", [k, n]) => [text(*k), noise(n - k)].concat(),
        _ => panic!("unknown recipe {r}"),
    }
}

/// The value pylibmc was given, from the fixture's rendering of it.
fn value_of(v: &J) -> Value {
    let ty = v["type"].as_str().expect("type");
    if let Some(r) = v.get("recipe").and_then(J::as_str) {
        if ty == "int" {
            // "int('1' * 3000)"
            let digits = v["digits"].as_u64().expect("digits") as usize;
            let d = "1".repeat(digits);
            assert_eq!(sha256_hex(d.as_bytes()), v["decimal_sha256"]);
            return Value::BigInt(d);
        }
        if let Some(j) = v.get("json") {
            return Value::Json(j.clone());
        }
        let data = recipe(r);
        assert_eq!(sha256_hex(&data), v["sha256"], "recipe {r}");
        return match ty {
            "str" => Value::String(String::from_utf8(data).expect("text")),
            _ => Value::Bytes(data),
        };
    }
    match ty {
        "str" => Value::String(v["json"].as_str().expect("str").to_owned()),
        "bytes" => Value::Bytes(unhex(v["hex"].as_str().expect("hex"))),
        "int" => match v.get("decimal").and_then(J::as_str) {
            Some(d) => Value::BigInt(d.to_owned()),
            None => Value::Int(v["json"].as_i64().expect("int")),
        },
        "bool" => Value::Bool(v["json"].as_bool().expect("bool")),
        "NoneType" => Value::Null,
        "float" => Value::Float(match &v["json"] {
            J::String(s) if s == "Infinity" => f64::INFINITY,
            J::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
            J::String(s) if s == "NaN" => f64::NAN,
            j => j.as_f64().expect("float"),
        }),
        "list" | "dict" | "tuple" => Value::Json(v["json"].clone()),
        other => panic!("type {other}"),
    }
}

/// Equal, with floats compared by bits (so NaN equals NaN and -0.0 differs from 0.0).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
        }
        _ => a == b,
    }
}

fn options_of(settings: &J) -> PylibmcOptions {
    let level = settings["compress_level"].as_i64().expect("compress_level");
    PylibmcOptions {
        min_compress_len: settings["min_compress_len"].as_u64().expect("min") as usize,
        // -1 is zlib's Z_DEFAULT_COMPRESSION, level 6.
        compress_level: if level < 0 { 6 } else { level as u32 },
    }
}

#[test]
fn every_pylibmc_write_is_stored_as_pylibmc_stores_it() {
    let doc = fixture("pylibmc.json");
    let (mut exact, mut deflated, mut pickled, mut edge) = (0, 0, 0, Vec::new());
    for case in doc["writes"].as_array().expect("writes") {
        let name = case["name"].as_str().expect("name");
        let value = value_of(&case["value"]);
        let opts = options_of(&case["settings"]);
        let t = Transcoder::new(Codec::Pylibmc).with_pylibmc(opts.clone());
        let ours = t
            .encode(&value, MAX)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        let plain = if flags & 8 != 0 {
            inflate(&payload)
        } else {
            payload.clone()
        };
        if ours.flags != flags {
            // Only at the edge of "strictly shorter": flate2 (miniz_oxide) deflates to another
            // length than zlib 1.2.13, and the decision follows our length, as pylibmc's follows
            // zlib's. Both are stated, so a change of either shows.
            let level = flate2::Compression::new(opts.compress_level);
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), level);
            std::io::Write::write_all(&mut z, &plain).expect("deflate");
            let ours_len = z.finish().expect("deflate").len();
            assert_eq!(
                ours.flags ^ flags,
                8,
                "{name}: flags {:#x}, pylibmc {flags:#x}",
                ours.flags
            );
            let our_plain = if ours.flags & 8 != 0 {
                inflate(&ours.bytes)
            } else {
                ours.bytes.clone()
            };
            assert_eq!(our_plain, plain, "{name}");
            edge.push(format!(
                "{name}: {} bytes deflate to {} with zlib (pylibmc {flags:#x}), to {ours_len} \
                 with flate2 (memshard {:#x})",
                plain.len(),
                if flags & 8 != 0 {
                    payload.len()
                } else {
                    plain.len()
                },
                ours.flags
            ));
            continue;
        }
        if flags & 1 != 0 {
            // A pickle: ours is protocol 3, pylibmc's protocol 0-5; both must be the value.
            let theirs = decode(Codec::Pylibmc, flags, &payload, MAX).expect("decode theirs");
            let back = decode(Codec::Pylibmc, ours.flags, &ours.bytes, MAX).expect("decode ours");
            assert!(
                same(&theirs, &value),
                "{name}: pylibmc's pickle reads {theirs:?}"
            );
            assert!(same(&back, &value), "{name}: our pickle reads {back:?}");
            pickled += 1;
        } else if flags & 8 != 0 {
            assert_eq!(inflate(&ours.bytes), plain, "{name}: our zlib stream");
            assert!(ours.bytes.len() < plain.len(), "{name}");
            deflated += 1;
        } else {
            assert_eq!(ours.bytes, payload, "{name}: payload");
            exact += 1;
        }
    }
    println!(
        "pylibmc writes: {exact} byte-exact, {deflated} zlib (same flags, inflate to pylibmc's \
         bytes), {pickled} pickles (same flags, same value), {} flag differences at the \
         deflate edge: {edge:?}",
        edge.len()
    );
    assert_eq!(exact + deflated + pickled + edge.len(), 59);
    // The only cases sized to the edge (README.md: deflate 3000 → 3000 plain, 2999 compressed).
    assert!(
        edge.iter()
            .all(|e| e.starts_with("bytes-deflate-equal-min1")
                || e.starts_with("bytes-deflate-one-shorter-min1")),
        "{edge:?}"
    );
}

#[test]
fn every_pylibmc_write_decodes_to_the_value_pylibmc_was_given() {
    let doc = fixture("pylibmc.json");
    let (mut typed, mut foreign) = (0, 0);
    for case in doc["writes"].as_array().expect("writes") {
        let name = case["name"].as_str().expect("name");
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        let v = decode(Codec::Pylibmc, flags, &payload, MAX).expect(name);
        if let Value::Foreign { .. } = v {
            foreign += 1;
            continue;
        }
        assert!(same(&v, &value_of(&case["value"])), "{name}: {v:?}");
        typed += 1;
    }
    println!("pylibmc writes decoded: {typed} typed, {foreign} foreign");
    assert_eq!((typed, foreign), (59, 0));
}

#[test]
fn pylibmc_reads_of_pickles_agree_with_pylibmc() {
    let doc = fixture("pylibmc.json");
    for case in doc["reads"].as_array().expect("reads") {
        let flags = case["flags"].as_u64().expect("flags") as u32;
        if flags & !8 != 1 {
            continue;
        }
        let name = case["name"].as_str().expect("name");
        let got = decode(
            Codec::Pylibmc,
            flags,
            &unhex(case["payload"].as_str().expect("hex")),
            MAX,
        );
        match case["result"].get("error") {
            // pylibmc raises: never a value here.
            Some(_) => assert!(
                matches!(got, Err(_) | Ok(Value::Foreign { .. })),
                "{name}: {got:?}"
            ),
            None => assert!(
                same(&got.expect(name), &value_of(&case["result"])),
                "{name}"
            ),
        }
    }
}

/// Python 3.11 `pickle.dumps(value, protocol=5)` unless named.
fn py(hex: &str) -> Option<Value> {
    pickle::decode(&unhex(hex), MAX).expect("valid pickle")
}

#[test]
fn python_pickles_outside_the_subset_stay_foreign() {
    // {1, 2}: EMPTY_SET/ADDITEMS; protocol 2: GLOBAL builtins.set + REDUCE.
    assert_eq!(py("80059509000000000000008f94284b014b02902e"), None);
    assert_eq!(
        py("8002635f5f6275696c74696e5f5f0a7365740a71005d7101284b014b02658571025271032e"),
        None
    );
    // [b"x"], {1: "a"}, [nan], datetime.date(2020, 1, 1)
    assert_eq!(py("80059508000000000000005d9443017894612e"), None);
    assert_eq!(py("8005950a000000000000007d944b018c016194732e"), None);
    assert_eq!(py("8005950d000000000000005d94477ff8000000000000612e"), None);
    assert_eq!(
        py(
            "80059520000000000000008c086461746574696d65948c0464617465949394430407e4010194859452942e"
        ),
        None
    );
    // b"\x00\xff" at protocol 2: _codecs.encode via REDUCE.
    assert_eq!(
        py(
            "8002635f636f646563730a656e636f64650a7100580300000000c3bf710158060000006c6174696e3171028671035271042e"
        ),
        None
    );
    // x = []; [x, x]: the same list twice (a GET of a list) reads as two copies.
    assert_eq!(
        py("80059509000000000000005d94285d946801652e"),
        Some(Value::Json(serde_json::json!([[], []])))
    );
    // x = []; x.append(x): a list that holds itself.
    assert_eq!(py("80059507000000000000005d946800612e"), None);
}

#[test]
fn python_pickles_in_the_subset_are_values() {
    // ["a", "a"]: the second "a" is a BINGET of the first.
    assert_eq!(
        py("8005950b000000000000005d94288c0161946801652e"),
        Some(Value::Json(serde_json::json!(["a", "a"])))
    );
    // json.loads('[{"id":1,"name":"x"},{"id":2,"name":"y"}]'): json shares the keys (BINGET).
    assert_eq!(
        py(
            "80059529000000000000005d94287d94288c026964944b018c046e616d65948c017894757d942868024b0268038c01799475652e"
        ),
        Some(Value::Json(
            serde_json::json!([{"id": 1, "name": "x"}, {"id": 2, "name": "y"}])
        ))
    );
    assert_eq!(
        py("80059510000000000000008a0d000000000000000000000000102e"),
        Some(Value::BigInt("1267650600228229401496703205376".into()))
    );
    // -2**100, protocol 3
    assert_eq!(
        py("80038a0d000000000000000000000000f02e"),
        Some(Value::BigInt("-1267650600228229401496703205376".into()))
    );
    // [2**64 - 1]: a u64 fits in JSON.
    assert_eq!(
        py("8005950f000000000000005d948a09ffffffffffffffff00612e"),
        Some(Value::Json(serde_json::json!([u64::MAX])))
    );
    // (1, "a") at protocol 0: MARK, INT, UNICODE, PUT, TUPLE.
    assert_eq!(
        py("2849310a56610a70300a7470310a2e"),
        Some(Value::Json(serde_json::json!([1, "a"])))
    );
}

/// A big integer within 64 bits is written as pylibmc writes an `int` (`str(12)`, flags 4);
/// a wider one as its digits.
#[test]
fn big_integers_are_written_as_python_ints() {
    let t = Transcoder::new(Codec::Pylibmc);
    for digits in ["12", "-9223372036854775808", "18446744073709551616"] {
        let got = t
            .encode(&Value::BigInt(digits.into()), MAX)
            .expect("encode");
        assert_eq!(
            (got.flags, got.bytes),
            (4, digits.as_bytes().to_vec()),
            "{digits}"
        );
    }
}

/// EXT1, EXT2 and EXT4 (copyreg's extension registry) take 1, 2 and 4 bytes of code: a valid
/// pickle outside the subset, read to its STOP.
#[test]
fn extension_codes_are_read_past_and_foreign() {
    for hex in ["8002820a2e", "8002830a002e", "8002840a0000002e"] {
        assert_eq!(pickle::decode(&unhex(hex), MAX), Ok(None), "{hex}");
    }
}

/// LONG_BINPUT memoizes under a 4-byte id; LONG4 integers read up to 4,096 bytes; a big
/// integer to write is digits with an optional `-`, nothing Python's `int()` would also take.
#[test]
fn pickle_memo_ids_int_sizes_and_digits() {
    // K 1, LONG_BINPUT 0, POP... : 1 memoized under id 0, then read back with LONG_BINGET 0.
    assert_eq!(
        pickle::decode(
            &unhex(
                "80024b01720000000030 6a000000002e"
                    .replace(' ', "")
                    .as_str()
            ),
            MAX
        ),
        Ok(Some(Value::Int(1)))
    );
    // Protocol 0: INT 1, PUT 0, POP, GET 0 (ids as decimal lines).
    assert_eq!(
        pickle::decode(b"I1\np0\n0g0\n.", MAX),
        Ok(Some(Value::Int(1)))
    );
    // SETITEMS of an odd count; BINSTRING (a Python 2 str: outside the subset).
    assert!(bad(pickle::decode(b"\x80\x02}(K\x01u.", MAX)).contains("SETITEMS of odd items"));
    assert_eq!(
        pickle::decode(b"\x80\x02T\x01\x00\x00\x00a.", MAX),
        Ok(None)
    );
    // INT of exactly 10,000 digits passes the length check (what reads it may refuse it on
    // other grounds); 10,001 do not.
    let int = |n: usize| {
        let mut p = b"I".to_vec();
        p.extend(std::iter::repeat_n(b'7', n));
        p.extend(b"\n.");
        pickle::decode(&p, 1 << 20)
    };
    assert!(
        !format!("{:?}", int(10_000)).contains("digits"),
        "{:?}",
        int(10_000)
    );
    assert!(bad(int(10_001)).contains("a number of 10001 digits"));
    // DICT of an odd count refused, of two read; an empty FROZENSET and NEWOBJ_EX's three
    // items are valid pickles outside the subset.
    assert!(bad(pickle::decode(b"(K\x01d.", MAX)).contains("a dict of odd items"));
    assert!(pickle::decode(b"(K\x01K\x02d.", MAX).is_ok());
    assert_eq!(pickle::decode(b"\x80\x04(\x91.", MAX), Ok(None));
    assert_eq!(
        pickle::decode(b"\x80\x04K\x01K\x02K\x03\x92.", MAX),
        Ok(None)
    );
    let long4 = |n: usize| {
        let mut p = vec![0x80, 2, 0x8b];
        p.extend((n as u32).to_le_bytes());
        p.extend(std::iter::repeat_n(0x11, n));
        p.push(b'.');
        pickle::decode(&p, MAX)
    };
    assert!(matches!(long4(4096), Ok(Some(Value::BigInt(_)))));
    assert!(bad(long4(4097)).contains("an integer of 4097 bytes"));
    for digits in ["+5", "1_000", "", "-"] {
        assert!(
            pickle::encode(&Value::BigInt(digits.into())).is_err(),
            "{digits:?}"
        );
    }
}

#[test]
fn our_pickles_read_back_as_the_same_values() {
    let values = [
        Value::Null,
        Value::Bool(true),
        Value::Int(i64::MIN),
        Value::BigInt("-1267650600228229401496703205376".into()),
        Value::BigInt("18446744073709551616".into()),
        Value::Float(f64::NAN),
        Value::Float(-0.0),
        Value::Float(f64::NEG_INFINITY),
        Value::String("h\u{e9}llo".into()),
        Value::Bytes(vec![0, 0xff]),
        Value::Json(serde_json::json!([1, "two", 3.5, null, true, [u64::MAX], {"k": {"n": -1}}])),
        Value::Json(serde_json::json!({})),
    ];
    for v in values {
        let p = pickle::encode(&v).expect("encode");
        assert!(p.starts_with(&[0x80, 3]), "protocol 3");
        let back = pickle::decode(&p, MAX)
            .expect("valid pickle")
            .unwrap_or_else(|| panic!("{v:?} does not read back"));
        assert!(same(&back, &v), "{v:?} read back as {back:?}");
    }
    assert!(pickle::encode(&Value::BigInt("12a".into())).is_err());
    assert!(pickle::encode(&Value::Msgpack(J::Null)).is_err());
}

/// The detail of a `Malformed` outcome (panics on anything else).
fn bad(r: serial::Outcome) -> String {
    match r {
        Err(serial::Bad::Malformed(d)) => d,
        other => panic!("not malformed: {other:?}"),
    }
}

#[test]
fn hostile_pickles_are_refused_before_serde_pickle_runs() {
    let d = |p: &[u8]| pickle::decode(p, MAX);
    // BINBYTES8 announcing 2^60 bytes, BINUNICODE 2^31: refused by the length check, nothing
    // allocated; within MAX but past the end: truncated.
    let mut p = vec![0x80, 4, 0x8e];
    p.extend((1u64 << 60).to_le_bytes());
    p.push(b'.');
    assert_eq!(d(&p), Err(serial::Bad::TooLarge(1 << 60)));
    let mut p = vec![0x80, 4, b'X'];
    p.extend((1u32 << 31).to_le_bytes());
    assert_eq!(d(&p), Err(serial::Bad::TooLarge(1 << 31)));
    assert!(bad(d(b"\x80\x02X\x05\x00\x00\x00ab")).contains("declares 5"));
    // 200 nested lists: beyond the depth limit, no stack overflow; 100,000 the same.
    let nested = |n: usize| {
        let mut p = vec![0x80, 2];
        p.extend(std::iter::repeat_n(b']', n));
        p.extend(std::iter::repeat_n(b'a', n - 1));
        p.push(b'.');
        p
    };
    assert!(bad(d(&nested(200))).contains("nested deeper than 128"));
    assert!(bad(d(&nested(129))).contains("nested deeper than 128"));
    assert!(matches!(d(&nested(128)), Ok(Some(Value::Json(_)))));
    assert!(bad(d(&nested(100_000))).contains("nested deeper"));
    // The same through memo references: each list holds the previous one (GET).
    let mut p = vec![0x80, 2, b']', b'q', 0];
    for k in 1..=200u8 {
        p.extend([b'0', b']', b'q', k, b'h', k - 1, b'a']);
    }
    p.push(b'.');
    assert!(bad(d(&p)).contains("nested deeper"));
    // A 255-byte str memoized, then fetched 10,000 times: 2.5 MB of copies from 20 kB.
    let mut p = vec![0x80, 4, b'(', 0x8c, 0xff];
    p.extend([b'x'; 255]);
    p.push(0x94);
    for _ in 0..10_000 {
        p.extend([b'h', 0]);
    }
    p.extend([b'l', b'.']);
    assert!(bad(d(&p)).contains("memo references expand to more than 16 times"));
    // The same with 10 fetches reads.
    let mut p = vec![0x80, 4, b'(', 0x8c, 3, b'a', b'b', b'c', 0x94];
    for _ in 0..10 {
        p.extend([b'h', 0]);
    }
    p.extend([b'l', b'.']);
    assert_eq!(
        d(&p),
        Ok(Some(Value::Json(J::Array(vec![J::from("abc"); 11]))))
    );
    // Each list holds the previous one twice: 2^40 lists from 250 bytes.
    let mut p = vec![0x80, 2, b']', b'q', 0];
    for k in 1..=40u8 {
        p.extend([b'0', b']', b'q', k, b'(', b'h', k - 1, b'h', k - 1, b'e']);
    }
    p.push(b'.');
    let t = std::time::Instant::now();
    assert!(bad(d(&p)).contains("memo references expand"));
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    // A list shared inside a shared list, three times: within the budget, but serde-pickle
    // counts references and refuses the fourth visit as recursive: Foreign.
    let mut p = vec![0x80, 2, b']', b'q', 0];
    for k in 1..=3u8 {
        p.extend([b'0', b']', b'q', k, b'(', b'h', k - 1, b'h', k - 1, b'e']);
    }
    p.push(b'.');
    assert_eq!(d(&p), Ok(None));
    // A GET of nothing, data after STOP, truncated, an unknown opcode, stack underflow, two
    // values at STOP, no mark, items added to a scalar, a protocol from the future, empty.
    assert!(bad(d(b"\x80\x02h\x07.")).contains("memo id 7"));
    assert!(bad(d(b"\x80\x02N.N")).contains("1 bytes after STOP"));
    assert!(bad(d(b"\x80\x02]")).contains("truncated at byte 3"));
    assert!(bad(d(b"\x80\x02\xff.")).contains("unknown opcode 0xff"));
    assert!(bad(d(b"\x80\x02a.")).contains("underflow"));
    assert!(bad(d(b"\x80\x02NN.")).contains("2 values"));
    assert!(bad(d(b"\x80\x02Nl.")).contains("no mark"));
    assert!(bad(d(b"\x80\x02NNa.")).contains("scalar"));
    assert!(bad(d(b"\x80\x09N.")).contains("protocol 9"));
    assert!(bad(d(b"\x80\x02I12x\n.")).contains("serde-pickle"));
    assert!(bad(d(b"")).contains("truncated"));
    let mut p = vec![0x80, 2, 0x8a, 0xff];
    p.extend([1; 255]);
    p.push(b'.');
    assert!(matches!(d(&p), Ok(Some(Value::BigInt(_)))));
    let mut p = vec![0x80, 2, 0x8b];
    p.extend(5000u32.to_le_bytes());
    p.extend([1; 5000]);
    p.push(b'.');
    assert!(bad(d(&p)).contains("beyond the limit of 4096"));
    // DUP; a PUT of a memo reference; a memo id reused: valid, read by Python, outside what
    // serde-pickle reads as Python does.
    assert_eq!(d(b"\x80\x02]2a."), Ok(None));
    assert_eq!(d(b"\x80\x02Nq\x00q\x01."), Ok(None));
    assert_eq!(d(b"\x80\x02(Nq\x00Nq\x00l."), Ok(None));
    // A list that contains itself: valid, outside the subset.
    assert_eq!(d(b"\x80\x02]q\x00h\x00a."), Ok(None));
}

#[test]
fn valid_pickles_outside_the_subset_are_foreign_and_read_to_their_end() {
    let d = |p: &[u8]| pickle::decode(p, MAX);
    for p in [
        // class C: pass; pickle.dumps(C(), 2): GLOBAL, EMPTY_TUPLE, NEWOBJ, EMPTY_DICT, BUILD
        &b"\x80\x02c__main__\nC\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00aq\x03K\x01sb."[..],
        // protocol 4: STACK_GLOBAL, REDUCE of a tuple
        b"\x80\x04\x8c\x08builtins\x8c\x03set\x93](K\x01e\x85R.",
        // protocol 0: INST; OBJ; a frozenset; an extension code; a persistent id
        b"(i__main__\nC\n(dp0\nb.",
        b"(c__main__\nC\no.",
        b"\x80\x04(K\x01\x91.",
        b"\x80\x02\x82\x05.",
        b"Pid\n.",
        b"\x80\x02N\x8f(K\x01\x90Q0.",
        // Python 2 str; a bytearray; buffers
        b"S'a'\n.",
        b"\x80\x02U\x01a.",
        b"\x80\x05\x96\x01\x00\x00\x00\x00\x00\x00\x00a.",
        b"\x80\x05\x97\x98.",
    ] {
        assert_eq!(d(p), Ok(None), "{}", String::from_utf8_lossy(p));
    }
    // Outside the subset, the rest is still checked.
    assert!(bad(d(b"\x80\x02c__main__\nC\n)\x81h\x09.")).contains("memo id 9"));
    assert!(bad(d(b"\x80\x02c__main__\nC\n)\x81")).contains("truncated"));
    let mut deep = b"\x80\x02c__main__\nC\n".to_vec();
    deep.extend(std::iter::repeat_n(*b")\x81", 300).flatten());
    deep.push(b'.');
    assert!(bad(d(&deep)).contains("nested deeper"));
    // pylibmc: Foreign, Malformed and TooLarge.
    let inst = b"\x80\x02c__main__\nC\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00aq\x03K\x01sb.";
    assert_eq!(
        decode(Codec::Pylibmc, 1, inst, MAX),
        Ok(Value::Foreign {
            encoding: Encoding::Pickle,
            bytes: inst.to_vec()
        })
    );
    assert!(matches!(
        decode(Codec::Pylibmc, 1, b"\x80\x02]", MAX),
        Err(ValueError::Malformed { codec: Codec::Pylibmc, flags: 1, ref detail })
            if detail.starts_with("pickle: truncated")
    ));
    let mut p = vec![0x80, 4, 0x8e];
    p.extend((1u64 << 60).to_le_bytes());
    assert_eq!(
        decode(Codec::Pylibmc, 1, &p, MAX),
        Err(ValueError::TooLarge {
            size: 1 << 60,
            max: MAX
        })
    );
}

#[test]
fn pylibmc_refuses_what_it_cannot_store() {
    let t = Transcoder::new(Codec::Pylibmc);
    for v in [
        Value::Msgpack(J::Null),
        Value::Foreign {
            encoding: Encoding::RubyMarshal,
            bytes: vec![4, 8, b'0'],
        },
        Value::Unknown {
            flags: 3,
            bytes: vec![],
        },
        Value::BigInt("1e5".into()),
    ] {
        assert!(
            matches!(
                t.encode(&v, MAX),
                Err(ValueError::Unsupported {
                    codec: Codec::Pylibmc,
                    ..
                })
            ),
            "{v:?}"
        );
    }
    // A pickle from elsewhere is stored as it is; JSON scalars are their types.
    let p = Value::Foreign {
        encoding: Encoding::Pickle,
        bytes: vec![0x80, 5, b'N', b'.'],
    };
    assert_eq!(
        t.encode(&p, MAX).map(|e| (e.flags, e.bytes)),
        Ok((1, vec![0x80, 5, b'N', b'.']))
    );
    assert_eq!(
        t.encode(&Value::Json(J::from("x")), MAX).map(|e| e.flags),
        Ok(16)
    );
    assert_eq!(
        t.encode(&Value::Json(J::from(7)), MAX)
            .map(|e| (e.flags, e.bytes)),
        Ok((4, b"7".to_vec()))
    );
    assert_eq!(
        t.encode(&Value::Json(J::from(u64::MAX)), MAX)
            .map(|e| e.flags),
        Ok(4)
    );
    // Level 10: zlib's deflateInit fails and pylibmc stores plain.
    let opts = PylibmcOptions {
        min_compress_len: 1,
        compress_level: 10,
    };
    let e = Transcoder::new(Codec::Pylibmc)
        .with_pylibmc(opts)
        .encode(&Value::String("a".repeat(5000)), MAX)
        .expect("encode");
    assert_eq!((e.flags, e.bytes.len()), (16, 5000));
    // The size cap applies to what is stored.
    assert!(matches!(
        t.encode(&Value::Bytes(vec![0; 101]), 100),
        Err(ValueError::TooLarge { .. })
    ));
}
