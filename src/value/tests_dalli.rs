//! dalli's write side and Ruby Marshal, against value-vectors/dalli.json (written by dalli 3.0.6
//! itself) and bytes written by Ruby 3.1.2's `Marshal.dump` / `JSON.dump` (dalli's
//! serializers; each vector names the Ruby expression that produced it).

use std::io::Read;

use serde_json::{Value as J, json};

use super::serial::marshal;
use super::tests_pylibmc::{same, sha256_hex, unhex};
use super::*;

const MAX: usize = 1 << 20;

fn fixture() -> J {
    let path = format!("{}/value-vectors/dalli.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture JSON")
}

fn inflate(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if data.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .expect("gzip");
    } else {
        flate2::read::ZlibDecoder::new(data)
            .read_to_end(&mut out)
            .expect("zlib");
    }
    out
}

/// dalli.json's `text(n)`: the first n characters of "The quick brown fox jumps over the lazy
/// dog. " repeated.
fn text(n: usize) -> String {
    "The quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(n)
        .collect()
}

/// The value dalli was given, from the fixture's rendering (a Symbol is its name). `noise(n)`
/// is Ruby's `Random#bytes`, taken from the case itself once its sha256 is checked.
fn value_of(v: &J, case: &J) -> Value {
    let ty = v["type"].as_str().expect("type");
    let binary = v.get("encoding").and_then(J::as_str) == Some("ASCII-8BIT");
    if let Some(r) = v.get("recipe").and_then(J::as_str) {
        let n = v["length"].as_u64().expect("length") as usize;
        let data = if r.starts_with("text(") {
            text(n).into_bytes()
        } else {
            let flags = case["flags"].as_u64().expect("flags") as u32;
            match decode(
                Codec::Dalli,
                flags,
                &unhex(case["payload"].as_str().expect("payload")),
                MAX,
            ) {
                Ok(Value::Bytes(b)) => b,
                other => panic!("{r}: {other:?}"),
            }
        };
        assert_eq!(sha256_hex(&data), v["sha256"], "{r}");
        return if binary {
            Value::Bytes(data)
        } else {
            Value::String(String::from_utf8(data).expect("text"))
        };
    }
    match ty {
        "String" if binary => Value::Bytes(unhex(v["hex"].as_str().expect("hex"))),
        "String" | "Symbol" => Value::String(v["json"].as_str().expect("str").to_owned()),
        "Integer" => match &v["json"] {
            J::String(d) => Value::BigInt(d.clone()),
            j => Value::Int(j.as_i64().expect("int")),
        },
        "Float" => Value::Float(match &v["json"] {
            J::String(s) if s == "Infinity" => f64::INFINITY,
            J::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
            J::String(s) if s == "NaN" => f64::NAN,
            j => j.as_f64().expect("float"),
        }),
        "TrueClass" | "FalseClass" => Value::Bool(v["json"].as_bool().expect("bool")),
        "NilClass" => Value::Null,
        "Array" | "Hash" => Value::Json(v["json"].clone()),
        other => panic!("type {other}"),
    }
}

fn options_of(s: &J) -> DalliOptions {
    let serializer = s["serializer"].as_str().expect("serializer");
    DalliOptions {
        serializer: if serializer == "JSON" {
            DalliSerializer::Json
        } else {
            DalliSerializer::Marshal
        },
        compress: s["compress"].as_bool().expect("compress"),
        compressor: if s["compressor"]
            .as_str()
            .expect("compressor")
            .contains("Gzip")
        {
            DalliCompressor::Gzip
        } else {
            DalliCompressor::Zlib
        },
        compression_min_size: s["compression_min_size"].as_u64().expect("min") as usize,
        raw: serializer.starts_with("none"),
    }
}

#[test]
fn every_dalli_write_is_stored_as_dalli_stores_it() {
    let doc = fixture();
    let (mut exact, mut packed, mut refused, mut symbols) = (0, 0, Vec::new(), Vec::new());
    for case in doc["writes"].as_array().expect("writes") {
        let name = case["name"].as_str().expect("name");
        let opts = options_of(&case["settings"]);
        let ty = case["value"]["type"].as_str().expect("type");
        let symbolic = ty == "Symbol"
            || case["value"]["inspect"]
                .as_str()
                .is_some_and(|i| i.contains("{:"));
        if symbolic && !opts.raw && opts.serializer == DalliSerializer::Marshal {
            // Marshal writes a Symbol (`:sym`) where a String is `I"sym`: Value has no Symbol.
            symbols.push(name);
            continue;
        }
        let value = value_of(&case["value"], case);
        let t = Transcoder::new(Codec::Dalli).with_dalli(opts.clone());
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        let ours = match t.encode(&value, MAX) {
            Ok(e) => e,
            Err(ValueError::Unsupported { .. })
                if opts.raw && !matches!(value, Value::String(_) | Value::Bytes(_)) =>
            {
                // raw: true stores `to_s`, Ruby's rendering (`[1, "two", 3.5, nil, true, [4]]`).
                refused.push(name);
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
        };
        assert_eq!(ours.flags, flags, "{name}");
        if flags & 2 != 0 {
            assert_eq!(
                inflate(&ours.bytes),
                inflate(&payload),
                "{name}: our stream"
            );
            if payload.starts_with(&[0x1f, 0x8b]) {
                // Same gzip header, but MTIME (bytes 4-7, the time Ruby wrote it; ours is 0).
                assert_eq!(ours.bytes[..4], payload[..4], "{name}");
                assert_eq!(ours.bytes[8..10], payload[8..10], "{name}");
            } else {
                assert_eq!(ours.bytes[..2], payload[..2], "{name}: zlib header");
            }
            packed += 1;
        } else {
            assert_eq!(ours.bytes, payload, "{name}: payload");
            exact += 1;
        }
    }
    println!(
        "dalli writes: {exact} byte-exact, {packed} compressed (same flags, inflate to dalli's \
         bytes), {} refused (raw: true of a non-string: {refused:?}), {} not expressible \
         (Marshal Symbols: {symbols:?})",
        refused.len(),
        symbols.len()
    );
    assert_eq!(exact + packed + refused.len() + symbols.len(), 91);
    assert_eq!((refused.len(), symbols.len()), (20, 2));
}

#[test]
fn every_dalli_write_decodes_to_the_value_dalli_reads() {
    let doc = fixture();
    let (mut typed, mut foreign) = (0, 0);
    for case in doc["writes"].as_array().expect("writes") {
        let name = case["name"].as_str().expect("name");
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        let v = decode(Codec::Dalli, flags, &payload, MAX).expect(name);
        if let Value::Foreign { .. } = v {
            foreign += 1;
            continue;
        }
        let expected = match case.get("read_back") {
            Some(rb) if case["reads_back_same"] == J::Bool(false) => value_of(rb, case),
            _ => value_of(&case["value"], case),
        };
        let ok = if flags & 1 == 0 {
            // Dalli reads flags 0 as a binary String; memshard gives UTF-8 text as a String.
            let bytes = |v: &Value| match v {
                Value::String(s) => Some(s.as_bytes().to_vec()),
                Value::Bytes(b) => Some(b.clone()),
                _ => None,
            };
            bytes(&v).is_some() && bytes(&v) == bytes(&expected)
        } else {
            same(&v, &expected)
        };
        assert!(ok, "{name}: {v:?}, dalli reads {expected:?}");
        typed += 1;
    }
    println!("dalli writes decoded: {typed} typed, {foreign} foreign");
    assert_eq!((typed, foreign), (91, 0));
}

#[test]
fn dalli_reads_of_marshal_agree_with_dalli() {
    let doc = fixture();
    for case in doc["reads"].as_array().expect("reads") {
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        let name = case["name"].as_str().expect("name");
        let r = &case["results"]["default"];
        if flags & 1 == 0 || r.get("error").is_some() {
            continue;
        }
        let v = decode(Codec::Dalli, flags, &payload, MAX).expect(name);
        assert!(same(&v, &value_of(r, case)), "{name}: {v:?}");
    }
}

/// (Ruby expression, `Marshal.dump(it)` in hex, the value).
fn ruby_marshal() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "[2**30-1, 2**30, -2**30, -2**30-1, 2**62, 123, 124, -123, -124, 255, 256, -256, -257, 65536, 2**63-1]",
            "04085b146904ffffff3f6c2b070000004069fc000000c06c2d07010000406c2b09000000000000004069017b69017c698069ff846901ff6902000169ff0069fefffe69030000016c2b09ffffffffffffff7f",
            Value::Json(json!([
                (1 << 30) - 1,
                1 << 30,
                -(1 << 30),
                -(1 << 30) - 1,
                1i64 << 62,
                123,
                124,
                -123,
                -124,
                255,
                256,
                -256,
                -257,
                65536,
                i64::MAX
            ])),
        ),
        (
            "[100.0, 1e15, 1e16, 1.2345678901234568e17, 0.001, 0.0001, 1e-5, 1.5e-7, 5e-324, 1.7976931348623157e308, 0.1, 1.0/3, 12345.678]",
            "04085b126608316532660931653135660931653136661a312e32333435363738393031323334353638653137660a302e303031660b302e30303031660931652d35660b312e35652d37660b35652d333234661b312e37393736393331333438363233313537653330386608302e316617302e33333333333333333333333333333333660e31323334352e363738",
            Value::Json(json!([
                100.0,
                1e15,
                1e16,
                1.2345678901234568e17,
                0.001,
                0.0001,
                1e-5,
                1.5e-7,
                5e-324,
                1.7976931348623157e308,
                0.1,
                1.0 / 3.0,
                12345.678
            ])),
        ),
        (
            // Equal flonums are one object (a link); -0.0 is a heap float; the second "a" is
            // another String but links the `E` symbol.
            "JSON.parse('[1.5, 1.5, 0.0, 0.0, -0.0, -0.0, \"a\", \"a\"]')",
            "04085b0d6608312e354006660630400766072d3066072d3049220661063a06455449220661063b0054",
            Value::Json(json!([1.5, 1.5, 0.0, 0.0, -0.0, -0.0, "a", "a"])),
        ),
        (
            // String Hash keys are deduplicated (fstring): the second "id" and "name" are links.
            "JSON.parse('[{\"id\":1,\"name\":\"x\"},{\"id\":2,\"name\":\"y\"}]')",
            "04085b077b074922076964063a06455469064922096e616d65063b005449220678063b00547b0740076907400849220679063b0054",
            Value::Json(json!([{"id": 1, "name": "x"}, {"id": 2, "name": "y"}])),
        ),
        (
            // A value equal to a key is not a key: no link.
            "JSON.parse('{\"k\":[{\"k\":\"k\"}]}')",
            "04087b064922066b063a0645545b067b0640064922066b063b0054",
            Value::Json(json!({"k": [{"k": "k"}]})),
        ),
    ]
}

#[test]
fn marshal_is_ruby_marshal_byte_for_byte() {
    for (expr, hex, value) in ruby_marshal() {
        let bytes = unhex(hex);
        assert_eq!(
            marshal::encode(&value).map(|b| b == bytes),
            Ok(true),
            "{expr}"
        );
        let back = marshal::decode(&bytes, MAX)
            .expect("valid Marshal")
            .unwrap_or_else(|| panic!("{expr} does not read"));
        assert_eq!(back, value, "{expr}");
    }
}

/// A big integer that fits 64 bits is written as Ruby writes an Integer; a wider one as its
/// digits (`JSON.dump(12)`, `JSON.dump(-9223372036854775808)`, `JSON.dump(2**64)`).
#[test]
fn json_writes_big_integers_as_ruby_integers() {
    let t = Transcoder::new(Codec::Dalli).with_dalli(DalliOptions {
        serializer: DalliSerializer::Json,
        ..DalliOptions::default()
    });
    for (digits, ruby) in [
        ("12", "12"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("18446744073709551616", "18446744073709551616"),
    ] {
        let got = t
            .encode(&Value::BigInt(digits.into()), MAX)
            .expect("encode");
        assert_eq!(got.bytes, ruby.as_bytes(), "{digits}");
    }
}

#[test]
fn json_is_ruby_json_dump_text() {
    let t = Transcoder::new(Codec::Dalli).with_dalli(DalliOptions {
        serializer: DalliSerializer::Json,
        ..DalliOptions::default()
    });
    let dump =
        |v: Value| String::from_utf8(t.encode(&v, MAX).expect("encode").bytes).expect("utf8");
    // JSON.dump(JSON.parse('[100.0, 1e15, 1e14, 1e16, 0.001, 0.0001, 1e-5, 1.5e-7, 5e-324,
    //   1.7976931348623157e308, 0.1, 12345.678, 123456789012345.6, 9007199254740993.0]'))
    assert_eq!(
        dump(Value::Json(json!([
            100.0,
            1e15,
            1e14,
            1e16,
            0.001,
            0.0001,
            1e-5,
            1.5e-7,
            5e-324,
            1.7976931348623157e308,
            0.1,
            12345.678,
            123456789012345.6,
            9007199254740993.0
        ]))),
        "[100.0,1.0e+15,100000000000000.0,1.0e+16,0.001,0.0001,1.0e-05,1.5e-07,5.0e-324,\
         1.7976931348623157e+308,0.1,12345.678,123456789012345.6,9.007199254740992e+15]"
    );
    // JSON.dump([-5, 5, 2**64 - 1, -1.5]): integers as integers at any size.
    assert_eq!(
        dump(Value::Json(json!([-5, 5, u64::MAX, -1.5]))),
        "[-5,5,18446744073709551615,-1.5]"
    );
    // JSON.dump("a\"b\\c\n\t\b\f\r\x01\x1f\x7f/é\u2028"), and of "é".b (binary, valid UTF-8).
    assert_eq!(
        dump(Value::String(
            "a\"b\\c\n\t\u{8}\u{c}\r\u{1}\u{1f}\u{7f}/é\u{2028}".into()
        )),
        "\"a\\\"b\\\\c\\n\\t\\b\\f\\r\\u0001\\u001f\u{7f}/é\u{2028}\""
    );
    assert_eq!(dump(Value::Bytes("é".into())), "\"é\"");
    // JSON.dump("\xff".b) raises JSON::GeneratorError.
    assert!(matches!(
        t.encode(&Value::Bytes(vec![0xff]), MAX),
        Err(ValueError::Unsupported { .. })
    ));
}

#[test]
fn marshal_outside_the_subset_stays_foreign() {
    let d = |hex: &str| marshal::decode(&unhex(hex), MAX).expect("valid Marshal");
    // {"a"=>1, :a=>2}: two keys to Ruby, one to JSON.
    assert_eq!(d("04087b0749220661063a06455469063a06616907"), None);
    // "abc".force_encoding("Shift_JIS"): an `encoding` ivar.
    assert_eq!(
        d("0408492208616263063a0d656e636f64696e67220e53686966745f4a4953"),
        None
    );
    // [2**64, 2**64]: beyond u64 inside an Array.
    assert_eq!(
        d("04085b076c2b0a000000000000000001006c2b0a00000000000000000100"),
        None
    );
    // ["\x00".b]: a binary String inside an Array.
    assert_eq!(d("04085b06220600"), None);
    // [Float::NAN]
    assert_eq!(d("04085b0666086e616e"), None);
    // Object.new; Hash.new(5): a Hash with a default (`}`).
    assert_eq!(d("04086f3a0b4f626a65637400"), None);
    assert_eq!(d("04087d00690a"), None);
    // A trailing byte is not a value dalli wrote.
    assert!(marshal::decode(&unhex("04083000"), MAX).is_err());
    // Inside, an Object makes the whole value foreign.
    let v = decode(Codec::Dalli, 1, &unhex("04085b066f3a0b4f626a65637400"), MAX);
    assert!(matches!(
        v,
        Ok(Value::Foreign {
            encoding: Encoding::RubyMarshal,
            ..
        })
    ));
}

#[test]
fn marshal_scalars_ruby_wrote() {
    let d = |hex: &str| marshal::decode(&unhex(hex), MAX).expect("valid Marshal");
    // :"é" (a Symbol with the E ivar), "abc".force_encoding("US-ASCII"), {:a=>:a, :b=>:a}
    assert_eq!(
        d("0408493a07c3a9063a064554"),
        Some(Value::String("é".into()))
    );
    assert_eq!(
        d("0408492208616263063a064546"),
        Some(Value::String("abc".into()))
    );
    assert_eq!(
        d("04087b073a06613b003a06623b00"),
        Some(Value::Json(json!({"a": "a", "b": "a"})))
    );
    // 2**64 at the top is a BigInt; -2**63 fits.
    assert_eq!(
        d("04086c2b0a00000000000000000100"),
        Some(Value::BigInt("18446744073709551616".into()))
    );
    assert_eq!(d("04086c2d090000000000000080"), Some(Value::Int(i64::MIN)));
}

/// The detail of a `Malformed` outcome (panics on anything else).
fn bad(r: serial::Outcome) -> String {
    match r {
        Err(serial::Bad::Malformed(d)) => d,
        other => panic!("not malformed: {other:?}"),
    }
}

#[test]
fn hostile_marshal_is_refused_without_allocating() {
    let m = |hex: &str| marshal::decode(&unhex(hex), MAX);
    // An Array, a String and a bignum announcing 2^31 - 1 units in 5 bytes: beyond MAX.
    assert_eq!(
        m("04085b04ffffff7f"),
        Err(serial::Bad::TooLarge((1 << 31) - 1))
    );
    assert_eq!(
        m("04082204ffffff7f"),
        Err(serial::Bad::TooLarge((1 << 31) - 1))
    );
    assert_eq!(
        m("04086c2b04ffffff7f"),
        Err(serial::Bad::TooLarge((1 << 32) - 2))
    );
    // A String announcing 1000 bytes within MAX, 3 there: truncated.
    assert!(bad(m("04082202e803616263")).contains("declares 1000"));
    assert!(bad(m("04085bfc00000080")).contains("negative length (-2147483648) at byte 3"));
    // `I` in a symbol's place must wrap a symbol (`I:`), not a String.
    assert!(bad(m("04086f492206410000")).contains("a symbol expected at byte 3, found 0x49"));
    // Truncated, an unknown type byte, another version, a tail, links to nothing.
    assert!(bad(m("04085b07")).contains("declares 2, more than the 0 bytes left"));
    assert!(bad(m("04085b0669")).contains("truncated"));
    assert!(bad(m("040878")).contains("unknown type byte 0x78 at byte 2"));
    assert!(bad(m("04073000")).contains("not Marshal 4.8"));
    assert!(bad(m("0408305a")).contains("1 bytes after"));
    assert!(bad(m("04085b06400a")).contains("a link to object 5"));
    assert!(bad(m("04083b00")).contains("a link to symbol 0 at byte 2, 0 were read"));
    assert!(bad(m("04086c3f066100")).contains("bignum sign"));
    assert!(bad(m("04086606786978")).contains("not a number"));
    // An Array that links itself: a valid recursive structure, outside the subset.
    assert_eq!(m("04085b064000"), Ok(None));
    // 200 nested Arrays: beyond the depth limit; 100 are fine; 100,000 stop at the limit.
    let nested = |n: usize| {
        let mut m = vec![4, 8];
        m.extend(std::iter::repeat_n([b'[', 6], n).flatten());
        m.push(b'0');
        m
    };
    assert!(bad(marshal::decode(&nested(200), MAX)).contains("nested deeper than 128"));
    assert!(matches!(marshal::decode(&nested(100), MAX), Ok(Some(_))));
    assert!(bad(marshal::decode(&nested(100_000), 1 << 24)).contains("nested deeper"));
    // The limit itself: 128 Arrays around a symbol (read at depth 128) are fine, 129 are not.
    let around_symbol = |n: usize| {
        let mut m = nested(n);
        m.pop();
        m.extend(b":\x06a");
        m
    };
    assert!(matches!(
        marshal::decode(&around_symbol(128), MAX),
        Ok(Some(_))
    ));
    assert!(bad(marshal::decode(&around_symbol(129), MAX)).contains("nested deeper than 128"));
    assert!(matches!(marshal::decode(&nested(128), MAX), Ok(Some(_))));
    assert!(bad(marshal::decode(&nested(129), MAX)).contains("nested deeper than 128"));
    // The same depth through objects, ivars and symbols with ivars.
    let mut deep = vec![4, 8];
    deep.extend(std::iter::repeat_n(*b"o:\x06A\x06;\x00", 200).flatten());
    deep.push(b'0');
    assert!(bad(marshal::decode(&deep, MAX)).contains("nested deeper"));
    let mut deep = vec![4, 8];
    deep.extend(std::iter::repeat_n(b'I', 100_000));
    assert!(bad(marshal::decode(&deep, MAX)).contains("nested deeper"));
    let mut deep = vec![4, 8, b'o'];
    deep.extend(std::iter::repeat_n(*b"I:\x06E\x06", 200).flatten());
    assert!(bad(marshal::decode(&deep, MAX)).contains("nested deeper"));
    // Each Array holds the previous one twice (links): 2^40 copies of a 100-byte String.
    let mut m = vec![4, 8, b'[', 41 + 5, b'[', 6, b'I', b'"', 100 + 5];
    m.extend([b'x'; 100]);
    m.extend(*b"\x06:\x06ET");
    for k in 1..=40u8 {
        // L0 is object 1, its String 2, L1 3 ...: Lk links L(k-1) twice.
        let prev = if k == 1 { 1 } else { k + 1 };
        m.extend([b'[', 7, b'@', prev + 5, b'@', prev + 5]);
    }
    let t = std::time::Instant::now();
    assert!(bad(marshal::decode(&m, MAX)).contains("links copy more than 16 times"));
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    // Symbol links are not copies: 10,000 of them read.
    let mut m = vec![4, 8, b'[', 2, 0x10, 0x27, b':', 6, b'a'];
    for _ in 1..10_000 {
        m.extend(*b";\x00");
    }
    assert!(matches!(marshal::decode(&m, MAX), Ok(Some(_))));
    // A few links of a String read.
    let mut m = vec![4, 8, b'[', 4 + 5, b'I', b'"', 3 + 5, b'a', b'b', b'c'];
    m.extend(*b"\x06:\x06ET@\x06@\x06@\x06");
    assert_eq!(
        marshal::decode(&m, MAX),
        Ok(Some(Value::Json(json!(["abc", "abc", "abc", "abc"]))))
    );
}

/// Each `U` (`marshal_dump`) and each instance variable's value is one level deeper: 128 of
/// them around a `0` read, 129 do not; a bignum of exactly the limit's bytes reads.
#[test]
fn marshal_depth_counts_every_container() {
    // `n` times `open` before `0`, then `n` times `close`: the innermost `0` is n levels down.
    let nest = |open: &[u8], close: &[u8], n: usize| {
        let mut m = vec![4, 8];
        m.extend(open.repeat(n));
        m.push(b'0');
        m.extend(close.repeat(n));
        m
    };
    for (open, close, what) in [
        (&b"U:\x06A"[..], &b""[..], "marshal_dump"),
        (b"C:\x06A", b"", "a user subclass"),
        (b"}\x00", b"", "a Hash's default"),
        (b"{\x06\x30", b"", "a Hash's value"),
        (b"{\x06", b"0", "a Hash's key"),
    ] {
        assert!(
            marshal::decode(&nest(open, close, 128), MAX).is_ok(),
            "{what}"
        );
        assert!(
            bad(marshal::decode(&nest(open, close, 129), MAX)).contains("nested deeper than 128"),
            "{what}"
        );
    }
    assert_eq!(marshal::decode(&nest(b"U:\x06A", b"", 128), MAX), Ok(None));
    // A String whose `E` ivar holds n nested Arrays: the innermost `0` is n + 1 levels down.
    let ivar = |n: usize| {
        let mut m = vec![4, 8, b'I', b'"', 6, b'x', 6, b':', 6, b'E'];
        m.extend(std::iter::repeat_n([b'[', 6], n).flatten());
        m.push(b'0');
        m
    };
    assert_eq!(marshal::decode(&ivar(127), MAX), Ok(None));
    assert!(bad(marshal::decode(&ivar(128), MAX)).contains("nested deeper than 128"));
    // 4,096 significant bytes (2,048 words) read; 4,097 do not.
    let bignum = |bytes: usize| {
        let words = bytes.div_ceil(2);
        let mut m = vec![4, 8, b'l', b'+', 2];
        m.extend((words as u16).to_le_bytes());
        m.extend(std::iter::repeat_n(0xff, bytes));
        m.extend(std::iter::repeat_n(0, 2 * words - bytes));
        m
    };
    assert!(matches!(
        marshal::decode(&bignum(4096), MAX),
        Ok(Some(Value::BigInt(_)))
    ));
    assert!(bad(marshal::decode(&bignum(4097), MAX)).contains("a bignum of 4097 bytes"));
}

/// A String's encoding ivar: `E` once (true: UTF-8, false: US-ASCII) is text; `E` twice is not
/// a string Ruby writes, so it is outside the subset; without ivars a String is bytes and a
/// Symbol text.
#[test]
fn marshal_string_encodings() {
    let m = |hex: &str| marshal::decode(&unhex(hex), MAX);
    // [2**64 - 1]: a bignum that fits a u64 is a JSON number.
    assert_eq!(
        m("04085b066c2b09ffffffffffffffff"),
        Ok(Some(Value::Json(json!([u64::MAX]))))
    );
    // Marshal.dump([2**64 - 1]) writes it as a bignum of four 16-bit words; we write the same.
    assert_eq!(
        marshal::encode(&Value::Json(json!([u64::MAX]))),
        Ok(unhex("04085b066c2b09ffffffffffffffff"))
    );
    // Equal floats: a flonum (1.5, -1.5) is one object, written once and then linked; a heap
    // float (1e300, -0.0) is written each time. Bytes from Ruby 3.1.2's `Marshal.dump`.
    for (floats, ruby) in [
        (json!([1.5, 1.5]), "04085b076608312e354006"),
        (json!([-1.5, -1.5]), "04085b0766092d312e354006"),
        (
            json!([1e300, 1e300]),
            "04085b07660a3165333030660a3165333030",
        ),
        (json!([-0.0, -0.0]), "04085b0766072d3066072d30"),
    ] {
        assert_eq!(
            marshal::encode(&Value::Json(floats)),
            Ok(unhex(ruby)),
            "{ruby}"
        );
    }
    // "é" marked US-ASCII (:E => false) is not text Ruby would hand out as such: outside.
    assert_eq!(
        m("04084922 07c3a9063a064546".replace(' ', "").as_str()),
        Ok(None)
    );
    // A Float spelled `infinity` (Ruby writes `inf`): not a number Ruby wrote.
    assert!(bad(m("0408660d696e66696e697479")).contains("not a number"));
    // Marshal.dump(9999999999999999999): 19 digits, a bignum of four words.
    assert_eq!(
        marshal::encode(&Value::BigInt("9999999999999999999".into())),
        Ok(unhex("04086c2b09ffffe7890423c78a"))
    );
    // Digits of every length to 200 read back as written.
    for n in 20..=200 {
        let digits: String = (0..n).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
        let m = marshal::encode(&Value::BigInt(digits.clone())).expect("encode");
        assert_eq!(marshal::decode(&m, MAX), Ok(Some(Value::BigInt(digits))));
    }
    // Marshal.dump(10**20): 21 digits, beyond a u64.
    assert_eq!(
        marshal::encode(&Value::BigInt("100000000000000000000".into())),
        Ok(unhex("04086c2b0a000010632d5ec76b0500"))
    );
    // "ab" (`I`, 1 ivar, :E => true); then :E => true, :E => false.
    assert_eq!(
        m("04084922076162063a064554"),
        Ok(Some(Value::String("ab".into())))
    );
    assert_eq!(m("04084922076162073a0645543b0046"), Ok(None));
    // `I` with no ivars around a String, and around a Symbol.
    assert_eq!(
        m("0408492207616200"),
        Ok(Some(Value::Bytes(b"ab".to_vec())))
    );
    assert_eq!(
        m("040849 3a07616200".replace(' ', "").as_str()),
        Ok(Some(Value::String("ab".into())))
    );
}

#[test]
fn valid_marshal_outside_the_subset_is_foreign_and_read_to_its_end() {
    let m = |hex: &str| marshal::decode(&unhex(hex), MAX);
    for hex in [
        // Object.new.tap { |o| o.instance_variable_set(:@a, 1) }
        "04086f3a0b4f626a656374063a0740616906",
        // Struct.new(:a).new(1) as S; a Regexp /a/; a class; a module
        "0408533a0641063a06616906",
        "0408492f066100063a064546",
        "040863064f",
        "04086d064b",
        // a String subclass (C), extended (e), _dump (u), marshal_dump (U), Data (d)
        "0408433a0653220661",
        "0408653a064d5b00",
        "0408753a06440678",
        "0408553a06445b00",
        "0408643a06445b00",
        // a Hash with a default; a binary symbol; a String with another encoding
        "04087d00690a",
        "04083a06ff",
        "0408492208616263063a0d656e636f64696e67220e53686966745f4a4953",
        // inside an Array: an object, then a link to it
        "04085b076f3a064f004006",
    ] {
        assert_eq!(m(hex), Ok(None), "{hex}");
    }
    // The rest of a payload is still checked after something outside the subset.
    assert!(bad(m("04085b076f3a064f00400f")).contains("link to object 10"));
    assert!(bad(m("04086f3a064f06")).contains("declares 1, more than the 0 bytes left"));
    assert!(bad(m("04086f3a064f063a0661")).contains("truncated"));
    // dalli: valid unmodelled → Foreign; malformed → Malformed; too large → TooLarge.
    let obj = unhex("04086f3a0b4f626a656374063a0740616906");
    assert_eq!(
        decode(Codec::Dalli, 1, &obj, MAX),
        Ok(Value::Foreign {
            encoding: Encoding::RubyMarshal,
            bytes: obj
        })
    );
    assert!(matches!(
        decode(Codec::Dalli, 1, &unhex("04085b0669"), MAX),
        Err(ValueError::Malformed { codec: Codec::Dalli, flags: 1, ref detail })
            if detail.starts_with("ruby-marshal: truncated")
    ));
    assert_eq!(
        decode(Codec::Dalli, 1, &unhex("04082204ffffff7f"), MAX),
        Err(ValueError::TooLarge {
            size: (1 << 31) - 1,
            max: MAX
        })
    );
}

#[test]
fn dalli_refuses_what_it_cannot_store() {
    let marshal = Transcoder::new(Codec::Dalli);
    let raw = Transcoder::new(Codec::Dalli).with_dalli(DalliOptions {
        raw: true,
        ..DalliOptions::default()
    });
    let unsupported = |r: Result<Encoded, ValueError>| {
        matches!(
            r,
            Err(ValueError::Unsupported {
                codec: Codec::Dalli,
                ..
            })
        )
    };
    assert!(unsupported(marshal.encode(&Value::Msgpack(J::Null), MAX)));
    assert!(unsupported(marshal.encode(
        &Value::Foreign {
            encoding: Encoding::Pickle,
            bytes: vec![]
        },
        MAX
    )));
    assert!(unsupported(raw.encode(&Value::Int(42), MAX)));
    assert!(unsupported(
        marshal.encode(&Value::BigInt("4x".into()), MAX)
    ));
    // Marshal bytes from elsewhere are stored as they are.
    let m = Value::Foreign {
        encoding: Encoding::RubyMarshal,
        bytes: vec![4, 8, b'0'],
    };
    assert_eq!(
        marshal.encode(&m, MAX).map(|e| (e.flags, e.bytes)),
        Ok((1, vec![4, 8, b'0']))
    );
    // compression_min_size 0: everything is compressed, as in dalli (`bytesize >= 0`).
    let always = Transcoder::new(Codec::Dalli).with_dalli(DalliOptions {
        compression_min_size: 0,
        ..DalliOptions::default()
    });
    let e = always.encode(&Value::Null, MAX).expect("encode");
    assert_eq!((e.flags, inflate(&e.bytes)), (3, vec![4, 8, b'0']));
}
