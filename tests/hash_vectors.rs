//! Key hashes against the peers' own published tables (compat-vectors/published).
mod common;
use memshard::KeyHash;

#[test]
fn libmemcached_hash_table() {
    let v = common::published_json("libmemcached/hash_function_vectors.json");
    let inputs: Vec<String> = serde_json::from_value(v["inputs"].clone()).unwrap();
    let names = [
        ("one_at_a_time", KeyHash::OneAtATime),
        ("md5", KeyHash::Md5),
        ("crc", KeyHash::Crc32),
        ("fnv1_64", KeyHash::Fnv1_64),
        ("fnv1a_64", KeyHash::Fnv1a_64),
        ("fnv1_32", KeyHash::Fnv1_32),
        ("fnv1a_32", KeyHash::Fnv1a_32),
        ("hsieh", KeyHash::Hsieh),
        ("murmur", KeyHash::Murmur),
        ("jenkins", KeyHash::Jenkins),
        ("murmur3", KeyHash::Murmur3),
    ];
    let mut checked = 0;
    for (table, h) in names {
        let out: Vec<u32> = serde_json::from_value(v["outputs"][table].clone())
            .unwrap_or_else(|e| panic!("table {table} missing from published vectors: {e}"));
        assert_eq!(out.len(), inputs.len(), "{table}");
        for (k, want) in inputs.iter().zip(out) {
            assert_eq!(h.hash(k.as_bytes()), want, "{table}({k:?})");
            checked += 1;
        }
    }
    assert_eq!(checked, 11 * 26);
}

#[test]
fn twemproxy_hash_table() {
    let v = common::published_json("twemproxy/hash_vectors.json");
    let vectors = v["vectors"].as_object().expect("vectors object");
    let mut checked = 0;
    for (name, rows) in vectors {
        if name == "ketama_hash" {
            for r in rows.as_array().unwrap() {
                let key = r["key"].as_str().unwrap();
                let i = r["alignment"].as_u64().unwrap() as usize;
                let expected = r["expected"].as_u64().unwrap();
                assert_eq!(md5_point(key.as_bytes(), i) as u64, expected);
                if i == 0 {
                    // memshard's own md5 key hash is point 0
                    assert_eq!(KeyHash::Md5.hash(key.as_bytes()) as u64, expected);
                }
                checked += 1;
            }
            continue;
        }
        let h: KeyHash = name.trim_start_matches("hash_").parse().unwrap();
        for r in rows.as_array().unwrap() {
            let key = r["key"].as_str().unwrap();
            assert_eq!(
                h.hash(key.as_bytes()) as u64,
                r["expected"].as_u64().unwrap(),
                "{name}({key})"
            );
            checked += 1;
        }
    }
    assert!(checked >= 13, "only {checked} twemproxy vectors found");
}

/// Point `i` of the md5 digest of `data`, as every ketama reads it (bytes `4i..4i+3`,
/// little-endian), from the md-5 crate: the vectors are checked against md5 itself, and
/// memshard's own md5 against the same crate in its unit tests.
fn md5_point(data: &[u8], i: usize) -> u32 {
    use md5::{Digest, Md5};
    let d = Md5::digest(data);
    u32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]])
}
