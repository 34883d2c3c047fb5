//! php-memcached's write side against what php-memcached 3.2.0 itself stored
//! (`value-vectors/php-memcached.json` and `testdata/php-extra.json`), its read side for types 4
//! (PHP serialize) and 7 (msgpack), and php-memcached 3.3's zstd (`testdata/README.md`).

use serde_json::Value as J;
use sha2::{Digest, Sha256};

use super::*;

const MAX: usize = 1 << 20;

fn fixture(path: &str) -> J {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

fn testdata(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/value/testdata")
        .join(name);
    std::fs::read(path).expect("test vector")
}

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

/// The recipes of value-vectors/README.md.
fn text(n: usize) -> Vec<u8> {
    let mut s = Vec::new();
    let mut i = 0;
    while s.len() < n {
        s.extend(format!("line {i:06}: the quick brown fox jumps over the lazy dog\n").bytes());
        i += 1;
    }
    s.truncate(n);
    s
}

fn noise(n: usize) -> Vec<u8> {
    let mut s = Vec::new();
    let mut i = 0;
    while s.len() < n {
        s.extend(Sha256::digest(format!("memshard-{i}").as_bytes()));
        i += 1;
    }
    s.truncate(n);
    s
}

fn recipe(r: &str) -> Option<Vec<u8>> {
    let args =
        |s: &str| -> Option<Vec<usize>> { s.split(',').map(|a| a.trim().parse().ok()).collect() };
    if let Some(n) = r.strip_prefix("text(").and_then(|r| r.strip_suffix(')')) {
        return Some(text(args(n)?[0]));
    }
    if let Some(n) = r.strip_prefix("noise(").and_then(|r| r.strip_suffix(')')) {
        return Some(noise(args(n)?[0]));
    }
    let a = args(r.strip_prefix("mix(")?.strip_suffix(')')?)?;
    let mut s = text(a[0]);
    s.extend(noise(a[1] - a[0]));
    Some(s)
}

/// The value a `writes` case stored, as memshard holds it; `Err` says why it cannot be one.
fn fixture_value(v: &J) -> Result<Value, String> {
    let ty = v["type"].as_str().unwrap_or("");
    let j = &v["json"];
    Ok(match ty {
        "string" => {
            let bytes = if let Some(s) = j.as_str() {
                s.as_bytes().to_vec()
            } else if let Some(h) = v["hex"].as_str() {
                unhex(h)
            } else {
                let r = v["recipe"].as_str().ok_or("string without a value")?;
                let b = recipe(r).ok_or_else(|| format!("unknown recipe {r}"))?;
                assert_eq!(Some(b.len() as u64), v["length"].as_u64(), "{r}: length");
                assert_eq!(Some(sha256_hex(&b).as_str()), v["sha256"].as_str(), "{r}");
                b
            };
            text_or_bytes(bytes)
        }
        "int" => Value::Int(j.as_i64().ok_or("int beyond i64")?),
        "float" => Value::Float(match j.as_str() {
            Some("Infinity") => f64::INFINITY,
            Some("-Infinity") => f64::NEG_INFINITY,
            Some("NaN") => f64::NAN,
            _ => j.as_f64().ok_or("float without a number")?,
        }),
        "bool" => Value::Bool(j.as_bool().ok_or("bool")?),
        "null" => Value::Null,
        "array" | "stdClass" if !j.is_null() => Value::Json(j.clone()),
        "array"
            if v["recipe"]
                .as_str()
                .is_some_and(|r| r.starts_with("array(\"key0\"")) =>
        {
            let n = v["count"].as_u64().ok_or("count")?;
            Value::Json(J::Object(
                (0..n)
                    .map(|i| (format!("key{i}"), J::String(format!("value {i}"))))
                    .collect(),
            ))
        }
        other => return Err(format!("value type {other}")),
    })
}

/// The settings of a case as [`PhpOptions`]; `Err` for what they cannot say.
fn options(s: &J) -> Result<PhpOptions, String> {
    let serializer = match s["serializer"].as_str() {
        Some("php") => PhpSerializer::Php,
        Some("json") => PhpSerializer::Json,
        Some("json_array") => PhpSerializer::JsonArray,
        other => return Err(format!("serializer {}", other.unwrap_or("?"))),
    };
    Ok(PhpOptions {
        serializer,
        compression: s["compression"].as_bool().unwrap_or(true),
        compression_type: match s["compression_type"].as_str() {
            Some("zlib") => PhpCompression::Zlib,
            _ => PhpCompression::FastLz,
        },
        compression_threshold: s["compression_threshold"].as_u64().unwrap_or(2000) as usize,
        compression_factor: s["compression_factor"].as_f64().unwrap_or(1.3),
        user_flags: s["user_flags"].as_u64().unwrap_or(0) as u16,
    })
}

fn php(value: &Value, o: &PhpOptions) -> Result<Encoded, ValueError> {
    Transcoder::new(Codec::PhpMemcached)
        .with_php(o.clone())
        .encode(value, MAX)
}

/// What `s_compress_value` decides on *our* block for a payload that reached it: compressed
/// iff the block fits PHP's buffer and `len > block × factor`.
fn rule_compresses(plain: &[u8], o: &PhpOptions) -> (bool, usize) {
    let block = match o.compression_type {
        PhpCompression::FastLz => php::fastlz_block(plain),
        PhpCompression::Zlib => php::zlib_block(plain),
    }
    .expect("block");
    let room = (plain.len() as f64 * 1.05 + 1.0) as usize;
    (
        block.len() <= room && plain.len() as f64 > block.len() as f64 * o.compression_factor,
        block.len(),
    )
}

/// The plain payload behind a stored one (decompressed when 0x10 is set).
fn plain_of(flags: u32, payload: &[u8]) -> Vec<u8> {
    if flags & 0x10 == 0 {
        return payload.to_vec();
    }
    let (len, block) =
        compress::php_prefix(Compression::FastLz, payload, MAX).expect("length prefix");
    if flags & 0x40 != 0 {
        compress::fastlz(block, len).expect("FastLZ block")
    } else {
        let out = compress::zlib(block, MAX).expect("zlib block");
        assert_eq!(out.len(), len, "zlib prefix");
        out
    }
}

#[test]
fn every_php_write_is_stored_as_php_stores_it() {
    let doc = fixture("value-vectors/php-memcached.json");
    let writes = doc["writes"].as_array().expect("writes");
    let (mut exact, mut compressed, mut reordered, mut edge) = (0, 0, 0, Vec::new());
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut failures = Vec::new();
    for case in writes {
        let name = case["name"].as_str().unwrap_or("?").to_owned();
        let o = match options(&case["settings"]) {
            Ok(o) => o,
            Err(why) => {
                skipped.push((name, why));
                continue;
            }
        };
        let value = match fixture_value(&case["value"]) {
            Ok(v) => v,
            Err(why) => {
                skipped.push((name, why));
                continue;
            }
        };
        if case["value"]["type"] == "stdClass" && o.serializer == PhpSerializer::Php {
            // PHP writes `O:8:"stdClass":…`; a JSON object is written as the PHP array it is.
            skipped.push((name, "object (stdClass) with serialize()".into()));
            continue;
        }
        let want_flags = case["flags"].as_u64().expect("flags") as u32;
        let want = unhex(case["payload"].as_str().expect("payload"));
        let got = match php(&value, &o) {
            Ok(e) => e,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let php_plain = match case.get("compression") {
            Some(c) => {
                let len = c["uncompressed_length"].as_u64().expect("length") as usize;
                Some(len)
            }
            None => None,
        };
        let ours_compressed = got.flags & 0x10 != 0;
        let our_plain = plain_of(got.flags, &got.bytes);
        // Whenever compression was considered, our decision follows PHP's rule on our block.
        if o.compression && !our_plain.is_empty() && our_plain.len() >= o.compression_threshold {
            let (rule, block) = rule_compresses(&our_plain, &o);
            if rule != ours_compressed {
                failures.push(format!(
                    "{name}: compressed={ours_compressed}, but the rule on our {block}-byte block says {rule}"
                ));
                continue;
            }
            if ours_compressed != php_plain.is_some() {
                // The factor's edge: PHP's block and ours differ in size (CRATES.md section 1).
                let php_block = case["compression"]["compressed_length"].as_u64();
                edge.push(format!(
                    "{name}: PHP {} (its block {php_block:?}), ours {} (our block {block}, {} bytes × {})",
                    if php_plain.is_some() { "compressed" } else { "plain" },
                    if ours_compressed { "compressed" } else { "plain" },
                    our_plain.len(),
                    o.compression_factor
                ));
                continue;
            }
        }
        match php_plain {
            None => {
                if (got.flags, &got.bytes) == (want_flags, &want) {
                    exact += 1;
                } else {
                    failures.push(format!(
                        "{name}: flags {:#x} payload {} != PHP's {want_flags:#x} {}",
                        got.flags,
                        String::from_utf8_lossy(&got.bytes),
                        String::from_utf8_lossy(&want)
                    ));
                }
            }
            Some(len) => {
                let c = &case["compression"];
                let prefix_ok = got.bytes.get(..4)
                    == Some(&unhex(c["prefix_hex"].as_str().expect("prefix"))[..]);
                let php_plain = plain_of(want_flags, &want);
                assert_eq!(php_plain.len(), len, "{name}: fixture");
                let same_plain = our_plain == php_plain
                    && c["uncompressed_sha256"].as_str() == Some(sha256_hex(&our_plain).as_str());
                if got.flags != want_flags || !prefix_ok {
                    failures.push(format!(
                        "{name}: flags {:#x} prefix {} != PHP's {want_flags:#x} {}",
                        got.flags,
                        hex(got.bytes.get(..4).unwrap_or(&[])),
                        c["prefix_hex"]
                    ));
                } else if same_plain {
                    compressed += 1;
                } else if matches!(value, Value::Json(J::Object(_)))
                    && decode(Codec::PhpMemcached, got.flags, &got.bytes, MAX)
                        == decode(Codec::PhpMemcached, want_flags, &want, MAX)
                {
                    // serde_json's map iterates sorted (key0, key1, key10, …); PHP kept the
                    // insertion order: the same entries, the same length, other bytes.
                    reordered += 1;
                } else {
                    failures.push(format!("{name}: decompressed bytes differ from PHP's"));
                }
            }
        }
    }
    println!(
        "php-memcached writes: {} cases: {exact} byte-exact, {compressed} compressed-equivalent \
         (same flags and prefix, our block decompresses to PHP's plain bytes), {reordered} \
         compressed with the same entries in serde_json's key order, {} at the factor's edge, \
         {} skipped",
        writes.len(),
        edge.len(),
        skipped.len()
    );
    for e in &edge {
        println!("  edge: {e}");
    }
    for (n, why) in &skipped {
        println!("  skipped {n}: {why}");
    }
    for f in &failures {
        println!("  MISMATCH {f}");
    }
    assert!(failures.is_empty(), "{} mismatches", failures.len());
    // Nothing is skipped but what PHPOptions cannot say (igbinary, msgpack) and stdClass objects
    // through serialize().
    for (n, why) in &skipped {
        assert!(
            why == "serializer igbinary"
                || why == "serializer msgpack"
                || why == "object (stdClass) with serialize()",
            "{n}: skipped for {why}"
        );
    }
    assert_eq!(
        exact + compressed + reordered + edge.len() + skipped.len(),
        writes.len()
    );
    assert!(exact >= 60 && compressed >= 15, "coverage fell");
}

/// PHP's view of a JSON value held in a PHP array: an object whose keys are 0..n-1 in order (or
/// an empty one) is a list.
fn as_php_array(j: &J) -> J {
    match j {
        J::Array(items) => J::Array(items.iter().map(as_php_array).collect()),
        J::Object(map) => {
            let is_list = map
                .keys()
                .enumerate()
                .all(|(i, k)| k.parse::<usize>() == Ok(i) && *k == i.to_string());
            if is_list {
                J::Array(map.values().map(as_php_array).collect())
            } else {
                J::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), as_php_array(v)))
                        .collect(),
                )
            }
        }
        other => other.clone(),
    }
}

#[test]
fn extra_php_writes_are_byte_exact() {
    let doc = fixture("src/value/testdata/php-extra.json");
    let writes = doc["writes"].as_array().expect("writes");
    let (mut exact, mut differs_on_purpose) = (0, 0);
    let mut failures = Vec::new();
    for case in writes {
        let name = case["name"].as_str().expect("name");
        let text = case["json"].as_str().expect("json");
        let ser = case["serializer"].as_str().expect("serializer");
        let mut o = options(&serde_json::json!({ "serializer": ser })).expect("serializer");
        o.compression = false;
        let source: J = serde_json::from_str(text).expect("case JSON");
        let value = if name.starts_with("float-") && !name.starts_with("float-list") {
            Value::Float(text.parse().expect("float"))
        } else {
            Value::Json(source.clone())
        };
        let want_flags = case["flags"].as_u64().expect("flags") as u32;
        let want = unhex(case["payload"].as_str().expect("payload"));
        let got = php(&value, &o).expect("encode");
        if (got.flags, &got.bytes) == (want_flags, &want) {
            exact += 1;
        } else if name == "nested-json_array" {
            // PHP's value is an array: `{}` and `{"0":1}` are PHP arrays json_encode writes as
            // lists. memshard writes a JSON object as the object it is (as PHP writes a
            // stdClass, `nested-json`); PHP reads either the same with json_array.
            assert_eq!(
                decode(Codec::PhpMemcached, got.flags, &got.bytes, MAX).map(|v| match v {
                    Value::Json(j) => Value::Json(as_php_array(&j)),
                    v => v,
                }),
                decode(Codec::PhpMemcached, want_flags, &want, MAX)
            );
            differs_on_purpose += 1;
        } else {
            failures.push(format!(
                "{name}: {:#x} {} != PHP's {want_flags:#x} {}",
                got.flags,
                String::from_utf8_lossy(&got.bytes),
                String::from_utf8_lossy(&want)
            ));
        }
        // Reading PHP's bytes gives the value back: exactly for JSON (stdClass keeps its
        // keys), as a PHP array (lists for keys 0..n-1) for serialize() and json_array.
        let back = decode(Codec::PhpMemcached, want_flags, &want, MAX).expect("decode");
        let expected = match (&value, ser) {
            (Value::Json(j), "php" | "json_array") => Value::Json(as_php_array(j)),
            (v, _) => v.clone(),
        };
        let same = match (&back, &expected) {
            (Value::Float(a), Value::Float(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            // json_encode writes 2.0 as `2`, which json_decode (and we) read as the integer 2.
            (Value::Json(a), Value::Json(b)) if ser != "php" => same_numbers(a, b),
            (a, b) => a == b,
        };
        if !same {
            failures.push(format!(
                "{name}: PHP's bytes read as {back:?}, not {expected:?}"
            ));
        }
    }
    println!(
        "php-extra writes: {} cases, {exact} byte-exact, {differs_on_purpose} different on purpose",
        writes.len()
    );
    for f in &failures {
        println!("  MISMATCH {f}");
    }
    assert!(failures.is_empty(), "{} mismatches", failures.len());
    assert_eq!(exact + differs_on_purpose, writes.len());
}

/// Equal, numbers compared by value (`2` and `2.0` alike).
fn same_numbers(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Number(x), J::Number(y)) => x.as_f64() == y.as_f64(),
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_numbers(x, y))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && same_numbers(x, y))
        }
        _ => a == b,
    }
}

/// Does a decoded value equal the fixture's `value` (or `read_back`) rendering?
fn same_as_fixture(v: &Value, exp: &J) -> bool {
    let Ok(want) = fixture_value(exp) else {
        return false;
    };
    match (v, &want) {
        (Value::Float(a), Value::Float(b)) => {
            (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
        }
        (Value::Msgpack(a), Value::Json(b)) => a == b,
        (a, b) => a == b,
    }
}

#[test]
fn every_php_write_reads_back_as_its_value() {
    let doc = fixture("value-vectors/php-memcached.json");
    let writes = doc["writes"].as_array().expect("writes");
    let (mut equal, mut foreign) = (0, Vec::new());
    let mut failures = Vec::new();
    for case in writes {
        let name = case["name"].as_str().unwrap_or("?");
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        match decode(Codec::PhpMemcached, flags, &payload, MAX) {
            Ok(Value::Foreign { encoding, bytes }) => {
                // Objects (PHP's `O:`) and igbinary stay foreign, with the plain bytes.
                let why = match encoding {
                    Encoding::Igbinary => "igbinary",
                    Encoding::PhpSerialize if bytes.starts_with(b"O:") => "PHP object",
                    _ => {
                        failures.push(format!("{name}: foreign {encoding}"));
                        continue;
                    }
                };
                assert_eq!(bytes, plain_of(flags, &payload), "{name}");
                foreign.push(format!("{name} ({why})"));
            }
            Ok(v) => {
                if same_as_fixture(&v, &case["value"]) {
                    equal += 1;
                } else {
                    failures.push(format!("{name}: {v:?} != {}", case["value"]));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    println!(
        "php-memcached writes read back: {equal} equal to PHP's value, {} foreign: {}",
        foreign.len(),
        foreign.join(", ")
    );
    for f in &failures {
        println!("  MISMATCH {f}");
    }
    assert!(failures.is_empty(), "{} mismatches", failures.len());
    // The 7 igbinary payloads (no reader) and object-php.
    assert_eq!(foreign.len(), 8);
}

#[test]
fn every_php_read_case_is_php_s_value_or_a_documented_refusal() {
    // Where PHP reads garbage silently and memshard says Malformed (or refuses a FastLZ prefix
    // larger than the block, where PHP returns uninitialised memory): mod.rs, "Stricter".
    const STRICTER: &[&str] = &[
        "long- 42",
        "long-+7",
        "long-42abc",
        "long-abc",
        "long-empty",
        "long-9223372036854775808",
        "long--9223372036854775809",
        "long-0x1A",
        "long-1e3",
        "long-3.99",
        "double-inf",
        "double-INF",
        "double--inf",
        "double-nan",
        "double-NAN",
        "double-infinity",
        "double-empty",
        "double-abc",
        "double-0x10",
        "double- 1.5",
        "json-broken",
        "fastlz-prefix-too-large",
    ];
    let doc = fixture("value-vectors/php-memcached.json");
    let (mut same, mut refused, mut failed_both, mut foreign) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for case in doc["reads"].as_array().expect("reads") {
        let name = case["name"].as_str().unwrap_or("?");
        if case.get("operation").is_some() {
            continue;
        }
        let flags = case["flags"].as_u64().expect("flags") as u32;
        let payload = unhex(case["payload"].as_str().expect("payload"));
        let got = decode(Codec::PhpMemcached, flags, &payload, MAX);
        let result = &case["result"];
        if result.get("error").is_some() {
            // PHP fails: never a value here (an error, the foreign bytes, or unknown flags).
            match got {
                Err(_) | Ok(Value::Foreign { .. } | Value::Unknown { .. }) => failed_both += 1,
                Ok(v) => failures.push(format!("{name}: PHP fails, we read {v:?}")),
            }
        } else if STRICTER.contains(&name) {
            match got {
                Err(_) => refused += 1,
                Ok(v) => failures.push(format!("{name}: listed as refused, read {v:?}")),
            }
        } else if flags & 0xf == 5 {
            // igbinary: no reader (CRATES.md section 6); the bytes as stored.
            match got {
                Ok(Value::Foreign {
                    encoding: Encoding::Igbinary,
                    bytes,
                }) if bytes == payload => foreign += 1,
                other => failures.push(format!("{name}: {other:?}")),
            }
        } else {
            match got {
                Ok(v) if same_as_fixture(&v, result) => same += 1,
                other => failures.push(format!("{name}: {other:?} != PHP's {result}")),
            }
        }
    }
    println!(
        "php-memcached reads: {same} as PHP, {refused} refused where PHP reads garbage, \
         {failed_both} failing in both, {foreign} igbinary kept foreign"
    );
    for f in &failures {
        println!("  MISMATCH {f}");
    }
    assert!(failures.is_empty(), "{} mismatches", failures.len());
    assert_eq!(refused, STRICTER.len());
}

// ---------------------------------------------------------------- PHP serialize, msgpack

#[test]
fn php_serialize_reads_the_subset_and_keeps_the_rest_foreign() {
    let d = |p: &[u8]| decode(Codec::PhpMemcached, 4, p, MAX).expect("decode");
    let foreign = |p: &[u8]| Value::Foreign {
        encoding: Encoding::PhpSerialize,
        bytes: p.to_vec(),
    };
    assert_eq!(d(b"b:0;"), Value::Bool(false));
    assert_eq!(d(b"i:+007;"), Value::Int(7));
    assert_eq!(d(b"d:.5;"), Value::Float(0.5));
    assert_eq!(d(b"d:1.;"), Value::Float(1.0));
    assert_eq!(d(b"d:+1.5e+3;"), Value::Float(1500.0));
    assert_eq!(d(b"d:-INF;"), Value::Float(f64::NEG_INFINITY));
    assert!(matches!(d(b"d:NAN;"), Value::Float(f) if f.is_nan()));
    assert_eq!(d(b"s:2:\"\xff\x00\";"), Value::Bytes(vec![0xff, 0]));
    assert_eq!(d(b"s:5:\"a\";b\"\";"), Value::String("a\";b\"".into()));
    // `s:` keys that are integers are integers (PHP's symtable): a list.
    assert_eq!(
        d(b"a:2:{s:1:\"0\";i:1;s:1:\"1\";i:2;}"),
        Value::Json(serde_json::json!([1, 2]))
    );
    // A repeated key replaces the value in its place.
    assert_eq!(
        d(b"a:2:{i:0;i:1;i:0;i:2;}"),
        Value::Json(serde_json::json!([2]))
    );
    assert_eq!(
        d(b"a:2:{i:1;s:1:\"x\";i:-5;N;}"),
        Value::Json(serde_json::json!({"1": "x", "-5": null}))
    );
    // Valid, outside the subset: read to the end, then Foreign.
    for p in [
        &b"O:8:\"stdClass\":0:{}"[..],
        b"O:8:\"stdClass\":2:{s:1:\"a\";i:1;s:1:\"b\";a:1:{i:0;N;}}",
        b"a:1:{i:0;s:1:\"\xff\";}",          // not UTF-8 inside a list
        b"a:1:{i:0;d:INF;}",                 // not JSON inside a list
        b"a:2:{i:0;O:1:\"A\":0:{}i:1;r:2;}", // an object, then a reference to it
        b"a:2:{i:0;i:1;i:1;R:2;}",           // a PHP reference (&)
        b"O:1:\"A\":1:{s:4:\"self\";r:1;}",  // an object holding itself
        b"O:8:\"App\\User\":0:{}",           // a namespaced class (PHP unserializes it)
        b"O:5:\"Caf\xc3\xa9\":0:{}",         // a class name with bytes above 0x7f (PHP too)
        b"C:11:\"ArrayObject\":5:{x:i:0}",
        b"E:7:\"Suit:Hs\";",
        b"S:1:\"\\61\";",
        b"S:3:\"a\\62c\";",
    ] {
        assert_eq!(d(p), foreign(p), "{}", String::from_utf8_lossy(p));
    }
    // Malformed: typed errors that say what and where.
    let e = |p: &[u8]| match decode(Codec::PhpMemcached, 4, p, MAX) {
        Err(ValueError::Malformed {
            codec: Codec::PhpMemcached,
            flags: 4,
            detail,
        }) => detail,
        other => panic!("{}: {other:?}", String::from_utf8_lossy(p)),
    };
    for (p, detail) in [
        (&b"i:5;junk"[..], "4 bytes after the value"),
        (b"i:99999999999999999999;", "beyond 64 bits"),
        (b"b:2;", "a bool other than 0 or 1"),
        (b"d:inf;", "a float expected"),
        (b"a:1:{d:1.5;i:1;}", "a key expected at byte 5"),
        (b"s:9:\"short\";", "declares 9"),
        (b"a:1:{i:0;R:5;}", "names value 5, 1 were read"),
        (b"r:0;", "names value 0"),
        (b"O:3:\"A-B\":0:{}", "a bad class name"),
        (b"O:1:\"A\":1:{i:0;}", "declares 1"),
        (b"O:1:\"A\":1:{i:0;i:0;", "'}' expected"),
        (b"E:4:\"Suit\";", "an enum without a case"),
        (b"S:1:\"\\6x\";", "a bad escape"),
        (b"x:1;", "unknown tag 'x'"),
        (b"a:1:{i:0;N;", "'}' expected"),
        (b"s:1:\"a", "'\"' expected"),
        (b"", "a value expected at byte 0"),
        (b"i:;", "an integer expected at byte 2"),
        (b"i:1x;", "an integer expected at byte 2"),
        (b"s::\"\";", "a length expected at byte 2"),
        (b"s:1x:\"a\";", "a length expected at byte 2"),
    ] {
        let got = e(p);
        assert!(
            got.starts_with("php-serialize: ") && got.contains(detail),
            "{}: {got}",
            String::from_utf8_lossy(p)
        );
    }
    // Declared lengths beyond the maximum value size: TooLarge before anything is allocated.
    let big = |p: &[u8]| decode(Codec::PhpMemcached, 4, p, MAX);
    assert_eq!(
        big(b"s:2147483648:\"\";"),
        Err(ValueError::TooLarge {
            size: 1 << 31,
            max: MAX
        })
    );
    assert_eq!(
        big(b"a:1152921504606846976:{}"),
        Err(ValueError::TooLarge {
            size: 6 << 60,
            max: MAX
        })
    );
    assert!(matches!(
        big(b"a:4294967295:{}"),
        Err(ValueError::TooLarge { .. })
    ));
    assert!(matches!(
        big(b"C:1:\"A\":2147483648:{}"),
        Err(ValueError::TooLarge { .. })
    ));
    // A length of exactly the maximum is not too large: past the end, it is truncated.
    assert!(matches!(
        decode(Codec::PhpMemcached, 4, b"s:20:\"abc\";", 20),
        Err(ValueError::Malformed { .. })
    ));
    assert!(matches!(
        decode(Codec::PhpMemcached, 4, b"s:21:\"abc\";", 20),
        Err(ValueError::TooLarge { size: 21, max: 20 })
    ));
    // Deep nesting stops at the limit instead of the stack's end, with or without objects.
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        deep.extend_from_slice(b"a:1:{i:0;");
    }
    assert!(e(&deep).contains("nested deeper than 512 levels"));
    let mut deep = Vec::new();
    for _ in 0..10_000 {
        deep.extend_from_slice(b"O:1:\"A\":1:{s:1:\"a\";");
    }
    assert!(e(&deep).contains("nested deeper than 512 levels"));
    // References are never followed: 10,000 of them to one large array cost nothing.
    let mut refs = b"a:10001:{i:0;a:1000:{".to_vec();
    for i in 0..1000 {
        refs.extend_from_slice(format!("i:{i};s:10:\"xxxxxxxxxx\";").as_bytes());
    }
    refs.push(b'}');
    for i in 1..=10_000 {
        refs.extend_from_slice(format!("i:{i};R:2;").as_bytes());
    }
    refs.push(b'}');
    let t = std::time::Instant::now();
    assert_eq!(d(&refs), foreign(&refs));
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    let mut ok = Vec::new();
    for _ in 0..100 {
        ok.extend_from_slice(b"a:1:{i:0;");
    }
    ok.extend_from_slice(b"N;");
    ok.extend(std::iter::repeat_n(b'}', 100));
    assert!(matches!(d(&ok), Value::Json(_)));
}

#[test]
fn php_msgpack_reads_the_subset_and_keeps_the_rest_foreign() {
    let d = |p: &[u8]| decode(Codec::PhpMemcached, 7, p, MAX).expect("decode");
    assert_eq!(
        d(b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff"),
        Value::BigInt(u64::MAX.to_string())
    );
    assert_eq!(d(b"\xc4\x02\xff\x00"), Value::Bytes(vec![0xff, 0]));
    assert_eq!(d(b"\xa2\xc3\xa9"), Value::String("é".into()));
    // map 16 and map 32 of three entries; array 16 and 32.
    let abc = Value::Msgpack(serde_json::json!({"a": 1, "b": 2, "c": 3}));
    assert_eq!(d(b"\xde\x00\x03\xa1a\x01\xa1b\x02\xa1c\x03"), abc);
    assert_eq!(d(b"\xdf\x00\x00\x00\x03\xa1a\x01\xa1b\x02\xa1c\x03"), abc);
    let list = Value::Msgpack(serde_json::json!([1, 2, 3]));
    assert_eq!(d(b"\xdc\x00\x03\x01\x02\x03"), list);
    assert_eq!(d(b"\xdd\x00\x00\x00\x03\x01\x02\x03"), list);
    // A PHP array with integer keys, and a stdClass inside a list.
    assert_eq!(
        d(b"\x82\x05\xa1a\xd0\xfb\xc0"),
        Value::Msgpack(serde_json::json!({"5": "a", "-5": null}))
    );
    assert_eq!(
        d(b"\x91\x82\xc0\xa8stdClass\xa1a\x01"),
        Value::Msgpack(serde_json::json!([{"a": 1}]))
    );
    for p in [
        &b"\x82\xc0\xa3Foo\xa1a\x01"[..], // another class
        b"\x82\xc0\x01\x00\x01",          // msgpack-php's reference marker
        b"\x91\xc4\x01\x00",              // bin inside a list
        b"\x91\xd4\x01\x00",              // ext
        b"\xd4\x01\x00",                  // ext at the top
        b"\xc7\x01\x05\xaa",              // ext 8, 16, 32 with one byte
        b"\xc8\x00\x01\x05\xaa",
        b"\xc9\x00\x00\x00\x01\x05\xaa",
        b"\x91\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00", // inf inside a list
    ] {
        assert_eq!(
            d(p),
            Value::Foreign {
                encoding: Encoding::Msgpack,
                bytes: p.to_vec()
            },
            "{}",
            hex(p)
        );
    }
    let e = |p: &[u8]| match decode(Codec::PhpMemcached, 7, p, MAX) {
        Err(ValueError::Malformed {
            codec: Codec::PhpMemcached,
            flags: 7,
            detail,
        }) => detail,
        other => panic!("{}: {other:?}", hex(p)),
    };
    for (p, detail) in [
        (&b"\x2a\x2a"[..], "1 bytes after the value"),
        (b"\x92\x01", "declares 2, more than the 1 bytes left"),
        (b"\x92\x01\xcd\x01", "the value at byte 2 declares 2"),
        (b"\x92\x01\xdc\x00", "truncated at byte 3"),
        (b"\xa5ab", "declares 5"),
        (b"\x91\xc1", "reserved byte 0xc1 at byte 1"),
        (b"\xdd\x00\x00\x00\x05\xc0", "declares 5"),
        (b"\xcd\x01", "the value at byte 0 declares 2"),
        (b"\xc7\x01\x05", "the value at byte 0 declares 2"),
        (b"\xde\x00\x03\xa1a\x01\xa1b\x02", "truncated at byte 9"),
        (b"\xde\x00\x03\xa1a\x01", "declares 6"),
        (b"", "truncated at byte 0"),
    ] {
        let got = e(p);
        assert!(
            got.starts_with("msgpack: ") && got.contains(detail),
            "{}: {got}",
            hex(p)
        );
    }
    // Declared lengths beyond the maximum value size: TooLarge.
    for (p, size) in [
        (&b"\xdb\x80\x00\x00\x00"[..], 1u64 << 31),
        (b"\xc6\xff\xff\xff\xff", (1 << 32) - 1),
        (b"\xdf\x80\x00\x00\x00", 1 << 32),
        (b"\xc9\x80\x00\x00\x00\x01", (1 << 31) + 1),
    ] {
        assert_eq!(
            decode(Codec::PhpMemcached, 7, p, MAX),
            Err(ValueError::TooLarge { size, max: MAX }),
            "{}",
            hex(p)
        );
    }
    let deep = vec![0x91u8; 100_000];
    assert!(e(&deep).contains("nested deeper than 256 levels"));
    let mut ok = vec![0x91u8; 256];
    ok.push(0xa1);
    ok.push(b'x');
    assert!(matches!(d(&ok), Value::Msgpack(_)));
    let mut over = vec![0x91u8; 257];
    over.push(0xc0);
    assert!(e(&over).contains("nested deeper"));
}

// ---------------------------------------------------------------- zstd (php-memcached 3.3)

#[test]
fn php_3_3_zstd_frames_decode_with_the_prefix_checked() {
    let plain = text(3000);
    let want = Value::String(String::from_utf8(plain.clone()).expect("text"));
    let frame = testdata("php-3.3-zstd-text-3000.bin");
    let checked = testdata("php-3.3-zstd-text-3000-checksum.bin");
    let d = |flags, p: &[u8], max| decode(Codec::PhpMemcached, flags, p, max);
    assert_eq!(d(0x90, &frame, MAX), Ok(want.clone()));
    assert_eq!(d(0x0007_0090, &checked, MAX), Ok(want.clone()));
    // The same frame with PHP serialize's type: the bytes are text, not a serialized value.
    assert!(matches!(
        d(0x94, &frame, MAX),
        Err(ValueError::Malformed { flags: 0x94, .. })
    ));
    let corrupt = |r: Result<Value, ValueError>| {
        matches!(
            r,
            Err(ValueError::Decompress {
                method: Compression::Zstd,
                ..
            })
        )
    };
    // A checksum that does not match.
    let mut bad = checked.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(corrupt(d(0x90, &bad, MAX)));
    // Prefix smaller or larger than the frame's content.
    for len in [2999u32, 3001] {
        let mut p = frame.clone();
        p[..4].copy_from_slice(&len.to_le_bytes());
        assert!(corrupt(d(0x90, &p, MAX)), "prefix {len}");
    }
    // Prefix above the maximum: refused before decoding.
    assert_eq!(
        d(0x90, &frame, 2999),
        Err(ValueError::TooLarge {
            size: 3000,
            max: 2999
        })
    );
    // Truncated, trailing bytes, shorter than the prefix, not a frame.
    assert!(corrupt(d(0x90, &frame[..frame.len() - 10], MAX)));
    let mut tail = frame.clone();
    tail.push(0);
    assert!(corrupt(d(0x90, &tail, MAX)));
    assert!(corrupt(d(0x90, b"\x01\x00", MAX)));
    assert!(corrupt(d(0x90, b"\x03\x00\x00\x00abc", MAX)));
    // No content size in the frame header: php-memcached 3.3 refuses it.
    let mut no_size = 3000u32.to_le_bytes().to_vec();
    no_size.extend(ruzstd::encoding::compress_to_vec(
        &plain[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    ));
    if no_size[8] >> 6 == 0 && no_size[8] & 0x20 == 0 {
        assert!(corrupt(d(0x90, &no_size, MAX)));
    } else {
        assert_eq!(d(0x90, &no_size, MAX), Ok(want));
    }
}

#[test]
fn zstd_bombs_stop_at_the_prefix() {
    // 8 MiB of zeros behind a prefix that says 100 bytes: the window the frame asks for is
    // refused, or the output stops at 101 bytes; either way an error, never 8 MiB.
    let big = vec![0u8; 8 << 20];
    let frame =
        ruzstd::encoding::compress_to_vec(&big[..], ruzstd::encoding::CompressionLevel::Fastest);
    let mut p = 100u32.to_le_bytes().to_vec();
    p.extend(&frame);
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x90, &p, MAX),
        Err(ValueError::Decompress { .. })
    ));
    p[..4].copy_from_slice(&(8u32 << 20).to_le_bytes());
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x90, &p, MAX),
        Err(ValueError::TooLarge { .. })
    ));
}

#[test]
fn a_zstd_prefix_that_disagrees_says_which_way() {
    // php-memcached 3.3's frame of 3,000 bytes of text, behind prefixes of 100 (the frame holds
    // more) and 5,000 (it holds 3,000) instead of its own.
    let frame = testdata("php-3.3-zstd-text-3000.bin")[4..].to_vec();
    let detail = |len: u32| {
        let mut p = len.to_le_bytes().to_vec();
        p.extend(&frame);
        match decode(Codec::PhpMemcached, 0x90, &p, MAX) {
            Err(ValueError::Decompress { detail, .. }) => detail,
            other => panic!("prefix {len}: {other:?}"),
        }
    };
    assert!(
        detail(100).ends_with("says 100 bytes, the frame holds more"),
        "{}",
        detail(100)
    );
    assert!(
        detail(5000).ends_with("says 5000 bytes, the frame holds 3000"),
        "{}",
        detail(5000)
    );
}

/// The compressed bit without a method bit (zlib 0x20, FastLZ 0x40, zstd 0x80) names no way to
/// decompress: refused as malformed, never tried as one of them.
#[test]
fn compressed_without_a_method_is_malformed() {
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x10, b"\x05\0\0\0hello", MAX),
        Err(ValueError::Malformed { detail, .. }) if detail.contains("without a compression method")
    ));
}

/// A frame under 256 bytes says its size in one byte behind the single-segment bit (0x20);
/// a larger one may say it in two bytes (size flag 1) after a window descriptor: both read. A
/// frame with neither that bit nor a size flag has no content size: refused.
#[test]
fn a_zstd_frame_says_its_size_either_way() {
    // Magic, descriptor, [window], [size], one raw last block (RFC 8878, 3.1.1).
    let frame = |descriptor: u8, size: &[u8], content: &[u8]| {
        let mut p = (content.len() as u32).to_le_bytes().to_vec();
        p.extend([0x28, 0xb5, 0x2f, 0xfd, descriptor]);
        if descriptor & 0x20 == 0 {
            p.push(0x00); // window descriptor: 1 KiB
        }
        p.extend(size);
        p.extend(&((content.len() as u32) << 3 | 1).to_le_bytes()[..3]);
        p.extend(content);
        p
    };
    assert_eq!(
        decode(Codec::PhpMemcached, 0x90, &frame(0x20, &[5], b"hello"), MAX),
        Ok(Value::String("hello".into()))
    );
    // Size flag 1: two bytes holding the size less 256.
    let text = "x".repeat(300);
    assert_eq!(
        decode(
            Codec::PhpMemcached,
            0x90,
            &frame(0x40, &[44, 0], text.as_bytes()),
            MAX
        ),
        Ok(Value::String(text))
    );
    // The prefix alone: a frame that is not there.
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x90, b"\x05\0\0\0", MAX),
        Err(ValueError::Decompress { detail, .. }) if detail == "not a zstd frame"
    ));
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x90, &frame(0x00, &[], b"hello"), MAX),
        Err(ValueError::Decompress { detail, .. }) if detail.contains("without a content size")
    ));
}

/// PHP compresses into a buffer of `len × 1.05 + 1` bytes (`php_memcached.c` `s_compress_value`):
/// with a compression factor of 0 (compress whatever it saves), 200 random bytes fit zlib's
/// 211 (a stored block) and 199 do not fit 209.
#[test]
fn a_block_must_fit_phps_buffer() {
    let o = PhpOptions {
        compression_type: PhpCompression::Zlib,
        compression_factor: 0.0,
        compression_threshold: 1,
        ..PhpOptions::default()
    };
    let mut seed = 0x9e37_79b9_u32;
    let noise: Vec<u8> = (0..200)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as u8
        })
        .collect();
    let compressed = |n: usize| {
        let got = php(&Value::Bytes(noise[..n].to_vec()), &o).expect("encode");
        got.flags & 0x10 != 0
    };
    assert_eq!(php::zlib_block(&noise).map(|b| b.len()), Some(211));
    assert!(compressed(200));
    assert!(!compressed(199));
}

/// `json_encode` stops at PHP's default depth of 512 arrays (`php_json_encode_array`:
/// `++encoder->depth > max_depth`); the PHP serializer stops at the same depth, which its
/// reader takes back.
#[test]
fn json_and_serialize_nest_512_arrays_deep() {
    let nested = |n: usize| {
        let mut j = serde_json::json!(1);
        for _ in 0..n {
            j = serde_json::json!([j]);
        }
        Value::Json(j)
    };
    for serializer in [PhpSerializer::Json, PhpSerializer::Php] {
        let o = PhpOptions {
            serializer,
            ..PhpOptions::default()
        };
        let deepest = php(&nested(512), &o).expect("512 arrays");
        if serializer == PhpSerializer::Php {
            assert_eq!(
                decode(Codec::PhpMemcached, deepest.flags, &deepest.bytes, MAX),
                Ok(nested(512))
            );
        }
        assert!(
            matches!(php(&nested(513), &o), Err(ValueError::Unsupported { .. })),
            "{serializer:?}"
        );
        // Objects count as arrays do: `{"a":{"a":…1}}`.
        let mut j = serde_json::json!(1);
        for _ in 0..512 {
            j = serde_json::json!({ "a": j });
        }
        assert!(php(&Value::Json(j.clone()), &o).is_ok(), "{serializer:?}");
        let deeper = Value::Json(serde_json::json!({ "a": j }));
        assert!(
            matches!(php(&deeper, &o), Err(ValueError::Unsupported { .. })),
            "{serializer:?}"
        );
    }
}

// ---------------------------------------------------------------- writing: what PHP cannot hold

#[test]
fn php_refuses_what_php_cannot_hold_and_passes_through_the_rest() {
    let o = PhpOptions::default();
    let unsupported = |v: &Value| matches!(php(v, &o), Err(ValueError::Unsupported { .. }));
    assert!(unsupported(&Value::BigInt("18446744073709551616".into())));
    assert!(unsupported(&Value::Json(serde_json::json!([u64::MAX]))));
    assert!(unsupported(&Value::Json(serde_json::json!(u64::MAX))));
    assert!(unsupported(&Value::Msgpack(serde_json::json!([1]))));
    assert!(unsupported(&Value::Foreign {
        encoding: Encoding::Igbinary,
        bytes: vec![0, 0, 0, 2, 0]
    }));
    // JSON scalars are the scalars PHP holds.
    let stored = |v: Value| php(&v, &o).map(|e| (e.flags, e.bytes));
    assert_eq!(
        stored(Value::Json(serde_json::json!(5))),
        Ok((1, b"5".to_vec()))
    );
    assert_eq!(
        stored(Value::Json(serde_json::json!(0.5))),
        Ok((2, b".5".to_vec()))
    );
    assert_eq!(
        stored(Value::Json(serde_json::json!("x"))),
        Ok((0, b"x".to_vec()))
    );
    assert_eq!(
        stored(Value::Json(serde_json::json!(false))),
        Ok((3, Vec::new()))
    );
    assert_eq!(stored(Value::Json(J::Null)), Ok((4, b"N;".to_vec())));
    // Serialized bytes as they are, compressed like any serialized value.
    let ser = b"O:8:\"stdClass\":0:{}".to_vec();
    assert_eq!(
        stored(Value::Foreign {
            encoding: Encoding::PhpSerialize,
            bytes: ser.clone()
        }),
        Ok((4, ser))
    );
    let mut big = b"s:6000:\"".to_vec();
    big.extend(text(6000));
    big.extend(b"\";");
    let e = php(
        &Value::Foreign {
            encoding: Encoding::PhpSerialize,
            bytes: big.clone(),
        },
        &o,
    )
    .expect("encode");
    assert_eq!(e.flags, 0x54);
    assert_eq!(plain_of(e.flags, &e.bytes), big);
    // Unknown flags: as they are, no user flags, no compression.
    let mut uf = o.clone();
    uf.user_flags = 3;
    let raw = Value::Unknown {
        flags: 0x9,
        bytes: text(5000),
    };
    assert_eq!(
        php(&raw, &uf).map(|e| (e.flags, e.bytes)),
        Ok((0x9, text(5000)))
    );
    // Empty strings are never compressed, whatever the threshold.
    let mut t0 = o.clone();
    t0.compression_threshold = 0;
    assert_eq!(stored(Value::String(String::new())), Ok((0, Vec::new())));
    assert_eq!(
        php(&Value::String(String::new()), &t0).map(|e| e.flags),
        Ok(0)
    );
    // Everything written reads back.
    for v in [
        Value::Json(serde_json::json!({"a/é": [1, 2.5, null, {"k": true}], "": "\u{0}\u{1f600}"})),
        Value::Float(-0.0),
        Value::Float(f64::MIN_POSITIVE),
        Value::Bytes(noise(4000)),
        Value::String(String::from_utf8(text(70_000)).expect("text")),
    ] {
        for ser in [PhpSerializer::Php, PhpSerializer::Json] {
            for ty in [PhpCompression::FastLz, PhpCompression::Zlib] {
                let mut oo = o.clone();
                oo.serializer = ser;
                oo.compression_type = ty;
                let e = php(&v, &oo).expect("encode");
                let back = decode(Codec::PhpMemcached, e.flags, &e.bytes, MAX).expect("decode");
                match (&back, &v) {
                    (Value::Float(a), Value::Float(b)) => assert_eq!(a.to_bits(), b.to_bits()),
                    _ => assert_eq!(back, v),
                }
            }
        }
    }
}
