//! Every `writes` case of value-vectors/{php-memcached,pylibmc,dalli,spymemcached,node}.json,
//! decoded with that peer's codec and checked against the peer's own rendering of the value in
//! the fixture (`value`, or `read_back` when the peer itself reads back something else): type
//! and JSON rendering, or hex, or length + sha256 for large values.
//!
//! A `Foreign` result passes only when its (peer, encoding) is listed in `JUSTIFIED_FOREIGN`
//! below, and its bytes must then be the peer's serialized bytes: the payload, or the recorded
//! `uncompressed_sha256` / `uncompressed_hex` when the peer compressed. Anything else counts as a
//! mismatch and fails the test. Cases the peer could not store (`write_error`) are skipped.

use std::path::Path;

use memshard::value::{Codec, Encoding, Value, decode};
use serde_json::Value as J;
use sha2::{Digest, Sha256};

const MAX_VALUE: usize = 1 << 20;

/// Serialized formats this step returns as `Foreign` on purpose: turning them into values is
/// for later (crates chosen in value-vectors/CRATES.md).
const JUSTIFIED_FOREIGN: &[(&str, Encoding, &str)] = &[
    (
        "php-memcached",
        Encoding::PhpSerialize,
        "PHP serialize (type 4): objects (`O:`) and what JSON cannot hold stay foreign",
    ),
    (
        "php-memcached",
        Encoding::Igbinary,
        "igbinary (type 5): no Rust crate exists; foreign as the issue allows",
    ),
    (
        "php-memcached",
        Encoding::Msgpack,
        "msgpack (type 7): classes, bin, ext and what JSON cannot hold stay foreign",
    ),
    (
        "pylibmc",
        Encoding::Pickle,
        "pickle (flags 1; floats, None, lists, dicts, tuples): serde-pickle, next step",
    ),
    (
        "dalli",
        Encoding::RubyMarshal,
        "Ruby Marshal (flags 1, default serializer): marshal-rs or alox-48, next step",
    ),
    (
        "spymemcached",
        Encoding::JavaSerialized,
        "Java serialization (flags 1: Short, Character, BigInteger, collections): stays foreign",
    ),
];

const PEERS: &[(&str, Codec)] = &[
    ("php-memcached", Codec::PhpMemcached),
    ("pylibmc", Codec::Pylibmc),
    ("dalli", Codec::Dalli),
    ("spymemcached", Codec::Spymemcached),
    ("node", Codec::NodeMemcached),
];

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// The value kinds a peer's type name may decode to.
fn kinds_for(ty: &str) -> &'static [&'static str] {
    match ty {
        "string" | "str" | "String" | "java.lang.String" | "Symbol" => &["string", "bytes"],
        "bytes" | "[B" | "Buffer" => &["bytes"],
        "int" | "Integer" | "java.lang.Integer" | "java.lang.Long" | "java.lang.Byte"
        | "java.util.Date" => &["int"],
        "number" | "float" | "Float" | "java.lang.Float" | "java.lang.Double" => &["float"],
        "bool" | "boolean" | "TrueClass" | "FalseClass" | "java.lang.Boolean" => &["bool"],
        "null" | "NilClass" | "NoneType" => &["null"],
        "array" | "stdClass" | "Array" | "Object" | "Hash" | "list" | "dict" | "tuple" => {
            &["json", "msgpack"]
        }
        _ => &[],
    }
}

fn float_matches(f: f64, j: &J, single: bool) -> bool {
    match j {
        J::String(s) => match s.as_str() {
            "Infinity" => f == f64::INFINITY,
            "-Infinity" => f == f64::NEG_INFINITY,
            "NaN" => f.is_nan(),
            _ => false,
        },
        J::Number(n) => n.as_f64().is_some_and(|e| {
            if single {
                f as f32 == e as f32
                    && (f as f32).is_sign_negative() == (e as f32).is_sign_negative()
            } else {
                f == e && f.is_sign_negative() == e.is_sign_negative()
            }
        }),
        _ => false,
    }
}

/// Does `v` equal the peer's rendering `exp` (a `value` or `read_back` object)?
fn matches(v: &Value, exp: &J) -> bool {
    let ty = exp["type"].as_str().unwrap_or("");
    if !kinds_for(ty).contains(&v.kind()) {
        return false;
    }
    let bytes: Option<&[u8]> = match v {
        Value::String(s) => Some(s.as_bytes()),
        Value::Bytes(b) => Some(b),
        _ => None,
    };
    if let Some(h) = exp.get("hex").and_then(J::as_str) {
        return bytes.is_some_and(|b| hex(b) == h);
    }
    if let (Some(len), Some(sum)) = (exp.get("length"), exp.get("sha256").and_then(J::as_str)) {
        return bytes.is_some_and(|b| Some(b.len() as u64) == len.as_u64() && sha256_hex(b) == sum);
    }
    if let Some(d) = exp.get("decimal").and_then(J::as_str) {
        return match v {
            Value::BigInt(s) => s == d,
            Value::Int(i) => i.to_string() == d,
            _ => false,
        };
    }
    if let (Some(digits), Some(sum)) = (
        exp.get("digits"),
        exp.get("decimal_sha256").and_then(J::as_str),
    ) {
        let text = match v {
            Value::BigInt(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            _ => return false,
        };
        let n = text.trim_start_matches('-').len() as u64;
        return (Some(n) == digits.as_u64() || Some(text.len() as u64) == digits.as_u64())
            && sha256_hex(text.as_bytes()) == sum;
    }
    // php-memcached's big PHP array: `array("key0" => "value 0", ... "key199" => "value 199")`.
    if let (Some(r), Some(n), Value::Json(J::Object(m))) =
        (exp["recipe"].as_str(), exp["count"].as_u64(), v)
        && r.starts_with("array(\"key0\" => \"value 0\"")
    {
        return m.len() as u64 == n
            && (0..n).all(|i| m.get(&format!("key{i}")) == Some(&J::from(format!("value {i}"))));
    }
    let Some(j) = exp.get("json") else {
        return false; // utf16be_hex (a lone surrogate): not representable; read_back decides
    };
    match v {
        Value::String(s) => j.as_str() == Some(s.as_str()),
        Value::Int(i) => j.as_i64() == Some(*i) || j.as_str() == Some(i.to_string().as_str()),
        Value::BigInt(d) => {
            j.as_str() == Some(d.as_str())
                || (j.is_number() && d.as_str() == j.to_string().as_str())
        }
        Value::Float(f) => float_matches(*f, j, ty == "java.lang.Float"),
        Value::Bool(b) => j.as_bool() == Some(*b),
        Value::Null => j.is_null(),
        Value::Json(x) | Value::Msgpack(x) => x == j,
        _ => false,
    }
}

/// A `Foreign` result: justified, and its bytes are the peer's serialized bytes.
fn foreign_ok(peer: &str, case: &J, encoding: Encoding, bytes: &[u8]) -> Result<(), String> {
    if !JUSTIFIED_FOREIGN
        .iter()
        .any(|(p, e, _)| *p == peer && *e == encoding)
    {
        return Err(format!(
            "foreign {encoding} is not a justified case for {peer}"
        ));
    }
    if let Some(c) = case.get("compression") {
        if let Some(sum) = c.get("uncompressed_sha256").and_then(J::as_str) {
            if sha256_hex(bytes) != sum {
                return Err("decompressed bytes differ from uncompressed_sha256".into());
            }
        } else if let Some(h) = c.get("uncompressed_hex").and_then(J::as_str) {
            if hex(bytes) != h {
                return Err("decompressed bytes differ from uncompressed_hex".into());
            }
        } else if let Some(n) = c.get("uncompressed_length").and_then(J::as_u64)
            && bytes.len() as u64 != n
        {
            return Err("decompressed length differs".into());
        }
        return Ok(());
    }
    let payload = unhex(case["payload"].as_str().unwrap_or(""));
    if payload != bytes {
        return Err("foreign bytes are not the stored payload".into());
    }
    Ok(())
}

#[test]
fn every_peer_write_decodes_to_the_peers_own_value() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("value-vectors");
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for &(peer, codec) in PEERS {
        let text = std::fs::read_to_string(dir.join(format!("{peer}.json"))).expect("fixture");
        let doc: J = serde_json::from_str(&text).expect("fixture JSON");
        let writes = doc["writes"].as_array().expect("writes");
        let (mut exact, mut foreign, mut skipped, mut bad) = (0, 0, 0, 0);
        let mut via_read_back = Vec::new();
        for case in writes {
            let name = case["name"].as_str().unwrap_or("?");
            let Some(payload) = case.get("payload").and_then(J::as_str) else {
                assert!(
                    case.get("write_error").is_some(),
                    "{peer} {name}: no payload"
                );
                skipped += 1;
                continue;
            };
            let flags = u32::try_from(case["flags"].as_u64().expect("flags")).expect("u32 flags");
            let payload = unhex(payload);
            let outcome = match decode(codec, flags, &payload, MAX_VALUE) {
                Err(e) => Err(format!("error: {e}")),
                Ok(Value::Foreign { encoding, bytes }) => {
                    foreign_ok(peer, case, encoding, &bytes).map(|()| true)
                }
                Ok(v) => {
                    let as_written = matches(&v, &case["value"]);
                    let as_read = case.get("read_back").is_some_and(|rb| matches(&v, rb));
                    if as_read && !as_written {
                        via_read_back.push(name.to_owned());
                    }
                    if as_written || as_read {
                        Ok(false)
                    } else {
                        Err(format!(
                            "decoded {v:?} (flags {flags:#x}), peer has {} / read_back {}",
                            case["value"],
                            case.get("read_back").unwrap_or(&J::Null)
                        ))
                    }
                }
            };
            match outcome {
                Ok(false) => exact += 1,
                Ok(true) => foreign += 1,
                Err(e) => {
                    bad += 1;
                    failures.push(format!("{peer} {name}: {e}"));
                }
            }
        }
        let total = exact + foreign + bad;
        summary.push(format!(
            "{peer}: {}/{total} ok ({exact} values, {foreign} justified foreign), {bad} mismatches, {skipped} not storable",
            exact + foreign
        ));
        if !via_read_back.is_empty() {
            summary.push(format!(
                "  {peer}: equal to the peer's read_back, not its written value: {}",
                via_read_back.join(", ")
            ));
        }
    }
    for line in &summary {
        println!("{line}");
    }
    for f in &failures {
        println!("MISMATCH {f}");
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
