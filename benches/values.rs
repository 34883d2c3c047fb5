//! Decode and encode speed of each codec, on values the real peers stored (value-vectors/),
//! in MB/s of the plain (decompressed) value; and the compression ratio of each peer's own
//! payload next to memshard's, printed once before the measurements.
//!
//! `cargo bench --bench values` (feature `codecs`, on by default).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use memshard::value::{Codec, DalliCompressor, DalliOptions, PylibmcOptions, Transcoder, Value};
use std::hint::black_box;

const MAX: usize = 16 << 20;

/// One stored value: its peer, fixture file, case name, and how memshard writes it.
struct Case {
    codec: Codec,
    file: &'static str,
    name: &'static str,
    writer: fn() -> Transcoder,
}

fn php() -> Transcoder {
    Transcoder::new(Codec::PhpMemcached)
}

fn php_zlib() -> Transcoder {
    let mut o = memshard::value::PhpOptions::default();
    o.compression_type = memshard::value::PhpCompression::Zlib;
    Transcoder::new(Codec::PhpMemcached).with_php(o)
}

fn pylibmc_min1() -> Transcoder {
    let mut o = PylibmcOptions::default();
    o.min_compress_len = 1;
    Transcoder::new(Codec::Pylibmc).with_pylibmc(o)
}

fn pylibmc() -> Transcoder {
    Transcoder::new(Codec::Pylibmc)
}

fn dalli() -> Transcoder {
    Transcoder::new(Codec::Dalli)
}

fn dalli_gzip() -> Transcoder {
    let mut o = DalliOptions::default();
    o.compressor = DalliCompressor::Gzip;
    Transcoder::new(Codec::Dalli).with_dalli(o)
}

fn spymemcached() -> Transcoder {
    Transcoder::new(Codec::Spymemcached)
}

fn node() -> Transcoder {
    Transcoder::new(Codec::NodeMemcached)
}

const CASES: &[Case] = &[
    Case {
        codec: Codec::PhpMemcached,
        file: "php-memcached",
        name: "text-100000-fastlz",
        writer: php,
    },
    Case {
        codec: Codec::PhpMemcached,
        file: "php-memcached",
        name: "text-100000-zlib",
        writer: php_zlib,
    },
    Case {
        codec: Codec::Pylibmc,
        file: "pylibmc",
        name: "str-text-100000-min1",
        writer: pylibmc_min1,
    },
    Case {
        codec: Codec::Pylibmc,
        file: "pylibmc",
        name: "str-text-100000",
        writer: pylibmc,
    },
    Case {
        codec: Codec::Dalli,
        file: "dalli",
        name: "default/string_100k_compressible",
        writer: dalli,
    },
    Case {
        codec: Codec::Dalli,
        file: "dalli",
        name: "gzip/string_100k_compressible",
        writer: dalli_gzip,
    },
    Case {
        codec: Codec::Spymemcached,
        file: "spymemcached",
        name: "string_100k_compressible",
        writer: spymemcached,
    },
    Case {
        codec: Codec::NodeMemcached,
        file: "node",
        name: "string_100k_compressible",
        writer: node,
    },
];

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("fixture hex"))
        .collect()
}

/// The fixture's flags and payload.
fn stored(file: &str, name: &str) -> (u32, Vec<u8>) {
    let path = format!("{}/value-vectors/{file}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("value-vectors fixture");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
    let w = doc["writes"]
        .as_array()
        .expect("writes")
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("{file}: no write {name}"));
    let flags = w["flags"].as_u64().expect("flags") as u32;
    (flags, unhex(w["payload"].as_str().expect("payload")))
}

fn codecs(c: &mut Criterion) {
    eprintln!(
        "| codec | case | plain bytes | peer's payload | ratio | memshard's payload | ratio |"
    );
    eprintln!("|---|---|---:|---:|---:|---:|---:|");
    let mut g = c.benchmark_group("values");
    for case in CASES {
        let (flags, payload) = stored(case.file, case.name);
        let value = memshard::value::decode(case.codec, flags, &payload, MAX).expect("decodes");
        let plain = match &value {
            Value::String(s) => s.len(),
            Value::Bytes(b) => b.len(),
            other => panic!("{}: {other:?}", case.name),
        };
        let writer = (case.writer)();
        let ours = writer.encode(&value, MAX).ok();
        let ours_len = ours.as_ref().map(|e| e.bytes.len());
        eprintln!(
            "| {} | {} | {plain} | {} | {:.1} | {} | {} |",
            case.codec,
            case.name,
            payload.len(),
            plain as f64 / payload.len() as f64,
            ours_len.map_or("-".into(), |n| n.to_string()),
            ours_len.map_or("-".into(), |n| format!("{:.1}", plain as f64 / n as f64)),
        );
        g.throughput(Throughput::Bytes(plain as u64));
        g.bench_function(format!("decode/{}/{}", case.codec, case.name), |b| {
            b.iter(|| memshard::value::decode(case.codec, flags, black_box(&payload), MAX))
        });
        if ours.is_some() {
            g.bench_function(format!("encode/{}/{}", case.codec, case.name), |b| {
                b.iter(|| writer.encode(black_box(&value), MAX))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, codecs);
criterion_main!(benches);
