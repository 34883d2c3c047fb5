//! The write side of spymemcached and node against the `writes` the real peers made
//! (`value-vectors/spymemcached.json`, `value-vectors/node.json`): for every case a `Value` can
//! stand for, the flags and payload must be the peer's byte for byte, or, where the peer
//! gzipped, the same flags and the same inflated bytes (JDK's gzip header and deflate blocks are
//! not flate2's). Cases the peer refused (`write_error`) must be refused. Every case is counted
//! as checked or skipped with its reason, and the counts are asserted, so a fixture change or a
//! skipped case cannot pass silently.

use super::*;
use serde_json::Value as J;
use sha2::{Digest, Sha256};

const MAX: usize = 1 << 20;

fn fixture(name: &str) -> J {
    let path = format!("{}/value-vectors/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    compress::gzip(b, 1 << 24).expect("gzip")
}

/// The recipes in the fixtures' `recipes`, and the spelled-out ones of single cases.
fn text(n: usize) -> String {
    "The quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(n)
        .collect()
}

/// `new java.util.Random(20240601L).nextBytes(new byte[n])`: the 48-bit LCG of
/// `java.util.Random`, four bytes per `nextInt()`, low byte first.
/// The length of our gzip of `data`, as the transcoder would store it.
fn gzip_len(data: &[u8]) -> usize {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip").len()
}

fn noise(n: usize) -> Vec<u8> {
    const MUL: u64 = 0x5DEE_CE66D;
    const MASK: u64 = (1 << 48) - 1;
    let mut seed = (20_240_601u64 ^ MUL) & MASK;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        seed = (seed.wrapping_mul(MUL).wrapping_add(0xB)) & MASK;
        let mut r = (seed >> 16) as u32;
        for _ in 0..4.min(n - out.len()) {
            out.push(r as u8);
            r >>= 8;
        }
    }
    out
}

fn recipe(r: &str) -> Option<Vec<u8>> {
    let num = |s: &str| s.parse::<usize>().ok();
    if let Some(n) = r.strip_prefix("text(").and_then(|s| s.strip_suffix(')')) {
        return Some(text(num(n)?).into_bytes());
    }
    if let Some(n) = r.strip_prefix("noise(").and_then(|s| s.strip_suffix(')')) {
        return Some(noise(num(n)?));
    }
    if let Some(rest) = r.strip_prefix("US-ASCII bytes of ") {
        return recipe(rest);
    }
    let s = match r {
        "U+00E9 x 8192, then \"a\" (16385 UTF-8 bytes)" => "é".repeat(8192) + "a",
        "\"[\" then \"1,\" repeated, cut to 19999 chars" => {
            "[".to_owned() + &"1,".repeat(10_000)[..19_999]
        }
        "\"{\" + text(19999)" => "{".to_owned() + &text(19_999),
        "\"7\" x 20000" => "7".repeat(20_000),
        "\"-\" then \"7\" x 19999" => "-".to_owned() + &"7".repeat(19_999),
        "\"7\" x 19998, then \".5\"" => "7".repeat(19_998) + ".5",
        "\" [\" + text(19998)" => " [".to_owned() + &text(19_998),
        _ => return None,
    };
    Some(s.into_bytes())
}

/// The bytes of a large value, rebuilt from its recipe and checked against the fixture's
/// length and sha256.
fn rebuilt(v: &J) -> Vec<u8> {
    let r = v["recipe"].as_str().expect("recipe");
    let b = recipe(r).unwrap_or_else(|| panic!("unknown recipe {r}"));
    assert_eq!(Some(b.len() as u64), v["length"].as_u64(), "{r}");
    assert_eq!(Some(sha256_hex(&b).as_str()), v["sha256"].as_str(), "{r}");
    b
}

fn json_float(j: &J) -> Option<f64> {
    match j {
        J::Number(n) => n.as_f64(),
        J::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// The fixture's record of what the peer stored, compared with what memshard encodes.
fn check(name: &str, w: &J, got: Result<(u32, Vec<u8>), ValueError>) {
    if let Some(err) = w.get("write_error") {
        assert!(
            matches!(got, Err(ValueError::Unsupported { .. })),
            "{name}: the peer refused ({err}), memshard gave {got:?}"
        );
        return;
    }
    let (flags, payload) = got.unwrap_or_else(|e| panic!("{name}: {e}"));
    let want_flags = w["flags"].as_u64().expect("flags") as u32;
    let want = unhex(w["payload"].as_str().expect("payload"));
    assert_eq!(flags, want_flags, "{name}: flags");
    if w.get("compression").is_some() {
        let plain = gunzip(&payload);
        assert_eq!(plain, gunzip(&want), "{name}: inflated bytes");
        assert_eq!(
            Some(sha256_hex(&plain).as_str()),
            w["compression"]["uncompressed_sha256"].as_str(),
            "{name}"
        );
    } else {
        assert!(payload == want, "{name}: payload differs");
    }
}

/// What a `Value` can say of one spymemcached write, or why it cannot.
enum Spy {
    /// Encoded and compared with the write.
    Value(Value),
    /// A Java `Long` that fits 32 bits: memshard's range rule stores an `Integer`; compared
    /// with the peer's write of that `Integer`.
    LongAsInteger(i64),
    Skip(&'static str),
}

fn spy_case(w: &J) -> Spy {
    let v = &w["value"];
    let ty = v["type"].as_str().unwrap_or("null");
    let j = &v["json"];
    match ty {
        "java.lang.String" if v.get("utf16be_hex").is_some() => {
            Spy::Skip("a lone surrogate: not a Rust String")
        }
        "java.lang.String" if v.get("recipe").is_some() => {
            Spy::Value(Value::String(String::from_utf8(rebuilt(v)).expect("utf-8")))
        }
        "java.lang.String" => Spy::Value(Value::String(j.as_str().expect("str").into())),
        "java.lang.Integer" => Spy::Value(Value::Int(j.as_i64().expect("int"))),
        "java.lang.Long" => {
            let i = j.as_i64().expect("long");
            if i32::try_from(i).is_ok() {
                Spy::LongAsInteger(i)
            } else {
                Spy::Value(Value::Int(i))
            }
        }
        "java.lang.Double" => Spy::Value(Value::Float(json_float(j).expect("double"))),
        "java.lang.Boolean" => Spy::Value(Value::Bool(j.as_bool().expect("bool"))),
        "null" => Spy::Value(Value::Null),
        "[B" if v.get("recipe").is_some() => Spy::Value(Value::Bytes(rebuilt(v))),
        "[B" => Spy::Value(Value::Bytes(unhex(v["hex"].as_str().expect("hex")))),
        "java.lang.Byte" => Spy::Skip("Byte (0x500): a Value::Int is an Integer or a Long"),
        "java.lang.Float" => Spy::Skip("Float (0x600): a Value::Float is a Double"),
        "java.util.Date" => Spy::Skip("Date (0x400): no Value variant"),
        _ => Spy::Skip("Java-serialized (flags 1): checked as Foreign below"),
    }
}

#[test]
fn spymemcached_writes_match_the_peer() {
    let fx = fixture("spymemcached");
    let writes = fx["writes"].as_array().expect("writes");
    let opts = SpymemcachedOptions::default();
    let enc = |v: &Value| spymemcached::encode(v, &opts, MAX);
    let integer = |i: i64| {
        writes
            .iter()
            .find(|w| w["value"]["type"] == "java.lang.Integer" && w["value"]["json"] == i)
    };
    let (mut exact, mut by_range, mut foreign, mut refused) = (0, 0, 0, 0);
    let mut skipped = Vec::new();
    for w in writes {
        let name = w["name"].as_str().expect("name");
        match spy_case(w) {
            Spy::Value(v) => {
                check(name, w, enc(&v));
                if w.get("write_error").is_some() {
                    refused += 1;
                } else {
                    exact += 1;
                }
            }
            Spy::LongAsInteger(i) => {
                let int = integer(i).unwrap_or_else(|| panic!("{name}: no Integer write of {i}"));
                check(name, int, enc(&Value::Int(i)));
                by_range += 1;
            }
            Spy::Skip(why) => skipped.push((name, why)),
        }
        // Everything spymemcached Java-serialized goes back as is, compressed as it compressed.
        if w["flags"].as_u64().is_some_and(|f| f & 1 == 1) {
            let stored = unhex(w["payload"].as_str().expect("payload"));
            let bytes = if w.get("compression").is_some() {
                gunzip(&stored)
            } else {
                stored
            };
            let v = Value::Foreign {
                encoding: Encoding::JavaSerialized,
                bytes,
            };
            check(name, w, enc(&v));
            foreign += 1;
        }
    }
    // BigInteger, lists and maps that spymemcached serialized: memshard refuses them as values.
    for w in writes.iter().filter(|w| w["flags"] == 1) {
        let j = &w["value"]["json"];
        let v = match j {
            J::Array(_) | J::Object(_) => Value::Json(j.clone()),
            J::Number(n) if n.as_i64().is_none() => Value::BigInt(n.to_string()),
            _ => continue,
        };
        assert!(
            matches!(enc(&v), Err(ValueError::Unsupported { .. })),
            "{}",
            w["name"]
        );
        refused += 1;
    }
    eprintln!(
        "spymemcached: {exact} byte-exact (or gzip: flags + inflated), {by_range} Long-by-range, \
         {foreign} Java-serialized as Foreign, {refused} refused; skipped {}: {skipped:?}",
        skipped.len()
    );
    assert_eq!(writes.len(), 64);
    assert_eq!((exact, by_range, foreign, refused), (42, 3, 7, 5));
    assert_eq!(skipped.len(), 18);
}

#[test]
fn spymemcached_threshold_and_json_looking() {
    let enc = |v: &Value, threshold| {
        let o = SpymemcachedOptions {
            compression_threshold: threshold,
        };
        spymemcached::encode(v, &o, MAX)
    };
    let long = Value::String(text(100));
    assert!(matches!(enc(&long, 100), Ok((0, _))));
    assert!(matches!(enc(&long, 99), Ok((2, _))));
    // `isJsonObject` strings are never compressed; the same bytes as byte[] are.
    let digits = "7".repeat(1000);
    assert!(matches!(
        enc(&Value::String(digits.clone()), 10),
        Ok((0, _))
    ));
    assert!(matches!(
        enc(&Value::Bytes(digits.into_bytes()), 10),
        Ok((0x802, _))
    ));
    // `SerializingTranscoder`: `if (compressed.length < b.length)` keeps the gzip; a gzip of
    // exactly the payload's size is not kept. Zeros before noise: somewhere the two sizes meet.
    let tail = noise(600);
    let even = (0..2000)
        .map(|z| [vec![0u8; z], tail.clone()].concat())
        .find(|d| gzip_len(d) == d.len())
        .expect("a payload whose gzip is exactly as long");
    assert!(matches!(enc(&Value::Bytes(even.clone()), 10), Ok((0x800, b)) if b == even));
    // Round trips through the read side.
    for v in [
        Value::Int(i64::from(i32::MIN)),
        Value::Int(i64::from(i32::MAX) + 1),
        Value::Int(i64::MIN),
        Value::Int(-1),
        Value::Float(-0.0),
        Value::Float(1e-310),
        Value::Bool(false),
        Value::Bytes(noise(50_000)),
        Value::String(text(50_000)),
    ] {
        let (flags, bytes) = enc(&v, 16384).expect("encode");
        assert_eq!(decode(Codec::Spymemcached, flags, &bytes, MAX), Ok(v));
    }
}

#[test]
fn node_writes_match_the_peer() {
    let fx = fixture("node");
    let writes = fx["writes"].as_array().expect("writes");
    let (mut exact, mut as_int, mut refused) = (0, 0, 0);
    let mut skipped = Vec::new();
    for w in writes {
        let name = w["name"].as_str().expect("name");
        let v = &w["value"];
        let j = &v["json"];
        let value = match v["type"].as_str().expect("type") {
            "string" if v.get("utf16be_hex").is_some() => {
                skipped.push((name, "a lone surrogate: not a Rust String"));
                continue;
            }
            "string" if v.get("recipe").is_some() => {
                Value::String(String::from_utf8(rebuilt(v)).expect("utf-8"))
            }
            "string" => Value::String(j.as_str().expect("str").into()),
            "number" => {
                let f = json_float(j).expect("number");
                // An integer node holds exactly is also checked as a `Value::Int`.
                if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
                    check(name, w, node::encode(&Value::Int(f as i64)));
                    as_int += 1;
                }
                Value::Float(f)
            }
            "boolean" => Value::Bool(j.as_bool().expect("bool")),
            "null" => Value::Null,
            "Array" | "Object" if w["name"] == "list_with_nan_and_neg_zero" => {
                skipped.push((name, "NaN and Infinity: not in a serde_json value"));
                continue;
            }
            "Array" | "Object" => Value::Json(j.clone()),
            "Buffer" => Value::Bytes(unhex(v["hex"].as_str().expect("hex"))),
            "bigint" => Value::BigInt(j.as_str().expect("digits").into()),
            "Date" => {
                skipped.push((name, "Date: no Value variant"));
                continue;
            }
            _ => {
                skipped.push((name, "undefined: no Value variant"));
                continue;
            }
        };
        check(name, w, node::encode(&value));
        if w.get("write_error").is_some() {
            refused += 1;
        } else {
            exact += 1;
        }
    }
    eprintln!(
        "node: {exact} byte-exact, {as_int} numbers also as Int, {refused} refused; skipped {}: \
         {skipped:?}",
        skipped.len()
    );
    assert_eq!(writes.len(), 35);
    assert_eq!((exact, as_int, refused), (30, 5, 1));
    assert_eq!(skipped.len(), 4);
}

#[test]
fn node_refuses_what_it_would_round() {
    let unsupported = |v: Value| matches!(node::encode(&v), Err(ValueError::Unsupported { .. }));
    assert!(unsupported(Value::Int((1 << 53) + 1)));
    assert!(unsupported(Value::Int(-(1 << 53) - 1)));
    assert!(!unsupported(Value::Int(-(1 << 53))));
    assert!(unsupported(Value::Json(serde_json::json!([u64::MAX]))));
    assert!(unsupported(Value::Json(
        serde_json::json!({"a": [1i64 << 54]})
    )));
    // Round trips through the read side, CR/LF escaping included.
    for v in [
        Value::String("a\r\nb\\\n".into()),
        Value::Bytes((0..=255).collect()),
        Value::Float(5e-324),
        Value::Float(-1.5e300),
        Value::Float(123_456_789_012_345_680_000.0),
        Value::Json(serde_json::json!({"k\n": ["x\r", 0.1, -7, {"": null}]})),
    ] {
        let (flags, bytes) = node::encode(&v).expect("encode");
        assert_eq!(decode(Codec::NodeMemcached, flags, &bytes, MAX), Ok(v));
    }
}

/// Spellings printed by node v20.20.2 (`x.toString()`, the same node that wrote node.json) for
/// the IEEE bits given: the first three are exact ties between two shortest digit strings,
/// where ECMA-262 takes the even one and Rust's `{:e}` the upper one. A run of 300,000 doubles
/// (random bits, decimals, large integers, binary fractions) against that node matched.
#[test]
fn node_numbers_as_v8_spells_them() {
    for (bits, v8) in [
        (0x42d3_ede2_1c72_2948_u64, "87649686767781.12"),
        (0x42b6_e106_bcf1_5310, "25155736498515.062"),
        (0x4312_ff45_1df3_db8d, "1336805475284707.2"),
        (0x0000_0000_0000_0001, "5e-324"),
        (0x7fef_ffff_ffff_ffff, "1.7976931348623157e+308"),
        (0x3c36_b082_c214_8b8e, "1.23e-18"),
        (0x3eb0_c6f7_a0b5_ed8d, "0.000001"),
        (0x0000_0000_0000_0003, "1.5e-323"),
    ] {
        let got = node::encode(&Value::Float(f64::from_bits(bits))).expect("encode");
        assert_eq!(got, (8, v8.as_bytes().to_vec()), "{bits:#x}");
    }
}

/// `net.spy.memcached.util.StringUtils.isJsonObject` as the Debian spymemcached 2.12.3 jar
/// answered on OpenJDK 17 for these strings (a probe calling it directly).
#[test]
fn spymemcached_json_looking_as_java_answers() {
    for (s, java) in [
        ("123\n", false),
        ("\u{661}\u{662}", false),
        ("-", false),
        ("", false),
        ("--1", false),
        ("+1", false),
        ("true\n", false),
        (" 1", false),
        ("{", true),
        ("[x", true),
        ("nul", false),
        ("0", true),
    ] {
        assert_eq!(spymemcached::json_looking(s), java, "{s:?}");
    }
}

/// node memcached reads a number's text with `Number(text)`: the cases below are what node
/// printed for `Number(s)`.
#[test]
fn node_numbers_read_as_number_reads_them() {
    for (text, want) in [
        ("0o17", 15.0),
        ("0O17", 15.0),
        ("0x1F", 31.0),
        ("0b101", 5.0),
        (" 12 ", 12.0),
        ("", 0.0),
        ("Infinity", f64::INFINITY),
    ] {
        assert_eq!(
            decode(Codec::NodeMemcached, 8, text.as_bytes(), 1 << 20),
            Ok(Value::Float(want)),
            "{text:?}"
        );
    }
    for text in ["0o", "0o8", "-0x10"] {
        let got = decode(Codec::NodeMemcached, 8, text.as_bytes(), 1 << 20);
        assert!(
            matches!(got, Ok(Value::Float(x)) if x.is_nan()),
            "{text:?}: {got:?}"
        );
    }
}
