//! Bombs, framing and flag edge cases; the peers' own values are in tests/value_vectors.rs.

use super::*;

fn php_fastlz(plain: &[u8]) -> Vec<u8> {
    let mut state = fastlz_rs::CompressState::new();
    let mut block = vec![0u8; plain.len() * 2 + 64];
    let n = state
        .compress_to_buf(plain, &mut block, fastlz_rs::CompressionLevel::Default)
        .expect("compress");
    let mut out = (plain.len() as u32).to_le_bytes().to_vec();
    out.extend(&block[..n]);
    out
}

fn zlib_of(plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(plain).expect("write");
    e.finish().expect("finish")
}

fn gzip_of(plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(plain).expect("write");
    e.finish().expect("finish")
}

#[test]
fn fastlz_prefix_above_max_is_refused_before_allocating() {
    // A 4 GiB prefix on a 5-byte block: refused by the prefix alone.
    let payload = [0xff, 0xff, 0xff, 0xff, 0x00];
    assert_eq!(
        decode(Codec::PhpMemcached, 0x50, &payload, 1 << 20),
        Err(ValueError::TooLarge {
            size: u64::from(u32::MAX),
            max: 1 << 20
        })
    );
}

#[test]
fn fastlz_round_trip_and_prefix_mismatch() {
    let plain = vec![b'a'; 5000];
    let mut payload = php_fastlz(&plain);
    assert_eq!(
        decode(Codec::PhpMemcached, 0x50, &payload, 1 << 20),
        Ok(Value::String(String::from_utf8(plain).expect("ascii")))
    );
    // A prefix larger than the block: PHP returns uninitialised memory, we refuse.
    payload[..4].copy_from_slice(&6000u32.to_le_bytes());
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x50, &payload, 1 << 20),
        Err(ValueError::Decompress {
            method: Compression::FastLz,
            ..
        })
    ));
    // Smaller: the block does not fit.
    payload[..4].copy_from_slice(&100u32.to_le_bytes());
    assert!(decode(Codec::PhpMemcached, 0x50, &payload, 1 << 20).is_err());
    // Shorter than the prefix.
    assert!(decode(Codec::PhpMemcached, 0x50, &[1, 0], 1 << 20).is_err());
}

#[test]
fn zlib_and_gzip_bombs_are_refused() {
    let bomb = vec![0u8; 10 << 20];
    let z = zlib_of(&bomb);
    let g = gzip_of(&bomb);
    let max = 1 << 20;
    let too_large = |r: Result<Value, ValueError>| matches!(r, Err(ValueError::TooLarge { .. }));
    assert!(too_large(decode(Codec::Pylibmc, 8, &z, max)));
    assert!(too_large(decode(Codec::Dalli, 2, &z, max)));
    assert!(too_large(decode(Codec::Dalli, 2, &g, max)));
    assert!(too_large(decode(Codec::Spymemcached, 2, &g, max)));
    // php: a lying small prefix is not the guard, the capped inflate is.
    let mut php = 16u32.to_le_bytes().to_vec();
    php.extend(&z);
    assert!(too_large(decode(Codec::PhpMemcached, 0x30, &php, max)));
    // Exactly the maximum is fine.
    let exact = zlib_of(&vec![b'x'; max]);
    assert!(
        matches!(decode(Codec::Pylibmc, 8, &exact, max), Ok(Value::Bytes(b)) if b.len() == max)
    );
    // A stored payload above the maximum.
    assert!(too_large(decode(Codec::Raw, 0, &[0; 11], 10)));
}

#[test]
fn corrupt_streams_are_typed_errors() {
    assert!(matches!(
        decode(Codec::Pylibmc, 8, b"not zlib", 1 << 20),
        Err(ValueError::Decompress {
            method: Compression::Zlib,
            ..
        })
    ));
    assert!(matches!(
        decode(Codec::Spymemcached, 2, b"\x1f\x8bnot gzip", 1 << 20),
        Err(ValueError::Decompress {
            method: Compression::Gzip,
            ..
        })
    ));
}

#[test]
fn unknown_flags_come_back_with_their_flags() {
    for (codec, flags) in [
        (Codec::PhpMemcached, 8),
        (Codec::Pylibmc, 0x50),
        (Codec::Pylibmc, 3),
        (Codec::Dalli, 4),
        (Codec::Spymemcached, 0x900),
        (Codec::Spymemcached, 0x10),
        (Codec::NodeMemcached, 10),
    ] {
        assert_eq!(
            decode(codec, flags, b"xyz", 100),
            Ok(Value::Unknown {
                flags,
                bytes: b"xyz".to_vec()
            }),
            "{codec} {flags:#x}"
        );
    }
    assert_eq!(
        decode(Codec::Raw, 1, b"42", 100),
        Ok(Value::Bytes(b"42".to_vec()))
    );
}

#[test]
fn php_numbers_are_strict() {
    let d = |flags, p: &[u8]| decode(Codec::PhpMemcached, flags, p, 100);
    assert_eq!(d(1, b"-42"), Ok(Value::Int(-42)));
    assert!(d(1, b"42abc").is_err());
    assert!(d(1, b"").is_err());
    assert_eq!(d(2, b".5"), Ok(Value::Float(0.5)));
    assert_eq!(d(2, b"1e+06"), Ok(Value::Float(1e6)));
    assert!(d(2, b"inf").is_err());
    assert!(d(2, b"NAN").is_err());
    assert!(matches!(d(2, b"NaN"), Ok(Value::Float(f)) if f.is_nan()));
    assert_eq!(d(3, b"10"), Ok(Value::Bool(true)));
    assert_eq!(d(3, b""), Ok(Value::Bool(false)));
    assert!(d(6, b"{broken").is_err());
    assert!(d(0x10, b"\0\0\0\0").is_err());
    // 0x20 without 0x10: not decompressed, as PHP.
    assert_eq!(d(0x20, b"abc"), Ok(Value::String("abc".into())));
}

#[test]
fn pylibmc_ints_follow_python() {
    let d = |flags, p: &[u8]| decode(Codec::Pylibmc, flags, p, 100);
    assert_eq!(d(4, b" 42 "), Ok(Value::Int(42)));
    assert_eq!(d(4, b"+7"), Ok(Value::Int(7)));
    assert_eq!(d(4, b"4_2"), Ok(Value::Int(42)));
    assert!(d(4, b"4__2").is_err());
    // Python's int() refuses an underscore at either end, after the sign too.
    for p in [&b"_5"[..], b"5_", b"-_5", b"+_5", b"-5_"] {
        assert!(d(4, p).is_err(), "{}", String::from_utf8_lossy(p));
    }
    assert!(d(4, b"3.14").is_err());
    assert!(d(4, b"").is_err());
    assert_eq!(
        d(4, b"-0099999999999999999999"),
        Ok(Value::BigInt("-99999999999999999999".into()))
    );
    assert_eq!(d(2, b"1"), Ok(Value::Bool(true)));
    // Only the spellings a bool is written with read as one; `+1` and ` 0` are ints.
    assert_eq!(d(2, b"+1"), Ok(Value::Int(1)));
    assert_eq!(d(2, b" 0"), Ok(Value::Int(0)));
    assert_eq!(d(2, b"0"), Ok(Value::Bool(false)));
    assert_eq!(d(2, b"5"), Ok(Value::Int(5)));
    assert!(d(16, b"\xff").is_err());
    assert!(d(1, b"").is_err());
}

/// Untyped decimal bytes read as an integer; an integer reads as a float only where the
/// double holds it exactly (node stores every number as a double: 2^53 + 1 is not one).
#[test]
fn typed_numbers_convert_only_where_exact() {
    assert_eq!(i64::from_value(Value::Bytes(b"42".to_vec())), Ok(42));
    assert_eq!(i64::from_value(Value::Bytes(b"-42".to_vec())), Ok(-42));
    assert!(i64::from_value(Value::Bytes(b"4x".to_vec())).is_err());
    assert_eq!(f64::from_value(Value::Int(2)), Ok(2.0));
    assert_eq!(
        f64::from_value(Value::Int(-(1 << 53))),
        Ok(-9007199254740992.0)
    );
    assert!(f64::from_value(Value::Int((1 << 53) + 1)).is_err());
}

/// A payload of exactly the largest value size decodes; one byte more is too large.
#[test]
fn a_payload_of_exactly_the_limit_decodes() {
    assert_eq!(
        decode(Codec::Raw, 0, b"abcd", 4),
        Ok(Value::Bytes(b"abcd".to_vec()))
    );
    assert!(matches!(
        decode(Codec::Raw, 0, b"abcde", 4),
        Err(ValueError::TooLarge { size: 5, max: 4 })
    ));
}

/// A `+` sign is read and dropped; a big integer keeps no `+` and no leading zeros.
#[test]
fn decimal_integers_take_a_plus() {
    assert_eq!(decimal_integer(b"+5"), Some(Value::Int(5)));
    assert_eq!(
        decimal_integer(b"+0099999999999999999999"),
        Some(Value::BigInt("99999999999999999999".into()))
    );
    assert_eq!(decimal_integer(b"+"), None);
    assert_eq!(decimal_integer(b"+-5"), None);
}

/// Limits include their value: a PHP length prefix of exactly the maximum decodes, and an
/// encoded value of exactly the maximum is stored.
#[test]
fn sizes_of_exactly_the_maximum_pass() {
    let plain = vec![b'a'; 3000];
    let stored = php_fastlz(&plain);
    assert_eq!(
        decode(Codec::PhpMemcached, 0x50, &stored, 3000),
        Ok(Value::String("a".repeat(3000)))
    );
    assert!(matches!(
        decode(Codec::PhpMemcached, 0x50, &stored, 2999),
        Err(ValueError::TooLarge { size: 3000, .. })
    ));
    let t = Transcoder::new(Codec::Raw);
    assert!(t.encode(&Value::Bytes(plain.clone()), 3000).is_ok());
    assert!(matches!(
        t.encode(&Value::Bytes(plain), 2999),
        Err(ValueError::TooLarge { size: 3000, .. })
    ));
}

/// Names as errors print them.
#[test]
fn codecs_and_compressions_display_their_names() {
    assert_eq!(Codec::PhpMemcached.to_string(), "php-memcached");
    assert_eq!(Codec::Pylibmc.to_string(), "pylibmc");
    assert_eq!(compress::Compression::Zstd.to_string(), "zstd");
    assert_eq!(compress::Compression::FastLz.to_string(), "FastLZ");
}

/// Conversions between transcoders and to `i128` keep what they were given.
#[test]
fn conversions_keep_their_input() {
    let t = Transcoder::new(Codec::Dalli).with_dalli(DalliOptions {
        serializer: DalliSerializer::Json,
        ..DalliOptions::default()
    });
    assert_eq!(Transcoder::from(&t), t);
    assert_eq!(i128::from_value(Value::Int(-5)), Ok(-5));
    assert_eq!(
        i128::from_value(Value::BigInt("18446744073709551616".into())),
        Ok(1 << 64)
    );
}

#[test]
fn spymemcached_numbers_zero_extend() {
    let d = |flags, p: &[u8]| decode(Codec::Spymemcached, flags, p, 100);
    assert_eq!(d(0x200, b"\xd6"), Ok(Value::Int(214)));
    assert_eq!(d(0x200, b"\xff\xff\xff\xd6"), Ok(Value::Int(-42)));
    assert_eq!(d(0x200, b"\0\0\0\x01\0\0\0\x2a"), Ok(Value::Int(42)));
    assert_eq!(d(0x300, b"\xff\xff\xff\xd6"), Ok(Value::Int(4_294_967_254)));
    assert_eq!(d(0x700, b""), Ok(Value::Float(0.0)));
    assert!(d(0x100, b"").is_err());
    assert!(d(0x500, b"").is_err());
}

#[test]
fn node_numbers_and_buffers() {
    let d = |flags, p: &[u8]| decode(Codec::NodeMemcached, flags, p, 100);
    assert_eq!(d(8, b""), Ok(Value::Float(0.0)));
    assert_eq!(d(8, b"0x10"), Ok(Value::Float(16.0)));
    assert!(matches!(d(8, b"inf"), Ok(Value::Float(f)) if f.is_nan()));
    assert_eq!(d(8, b"-Infinity"), Ok(Value::Float(f64::NEG_INFINITY)));
    assert_eq!(
        d(4, b"\x00\x7f\xc2\x80\xc3\xbf"),
        Ok(Value::Bytes(vec![0, 0x7f, 0x80, 0xff]))
    );
    assert!(d(4, b"\x80").is_err());
    assert_eq!(d(0, b"a\\\nb"), Ok(Value::String("a\nb".into())));
    assert!(d(2, b"").is_err());
}

#[test]
fn json_scalars_are_typed_and_big_ints_exact() {
    let d = |p: &[u8]| decode(Codec::Dalli, 1, p, 100);
    assert_eq!(d(b"42"), Ok(Value::Int(42)));
    assert_eq!(
        d(b"18446744073709551616"),
        Ok(Value::BigInt("18446744073709551616".into()))
    );
    assert_eq!(d(b"\"abc\""), Ok(Value::String("abc".into())));
    assert_eq!(d(b"null"), Ok(Value::Null));
    assert!(matches!(d(b"-0.0"), Ok(Value::Float(f)) if f == 0.0 && f.is_sign_negative()));
    assert!(d(b"042").is_err());
    // Marshal: an Object (`o`) is outside the subset serial::marshal reads.
    assert!(matches!(
        d(b"\x04\x08o:\x08Foo\x00"),
        Ok(Value::Foreign {
            encoding: Encoding::RubyMarshal,
            ..
        })
    ));
}

/// A transcoder made from a codec is that codec's, with its default options.
#[test]
fn a_transcoder_from_a_codec_is_that_codecs() {
    for codec in [Codec::Pylibmc, Codec::Dalli, Codec::Raw] {
        assert_eq!(Transcoder::from(codec).codec(), codec);
        assert_eq!(Transcoder::from(codec), Transcoder::new(codec));
    }
}

#[test]
fn codec_names_round_trip() {
    for c in Codec::ALL {
        assert_eq!(c.name().parse::<Codec>(), Ok(c));
    }
    assert!("php".parse::<Codec>().is_err());
}

#[test]
fn truncated_streams_are_errors_not_short_values() {
    let plain = vec![b'q'; 3000];
    let z = zlib_of(&plain);
    let g = gzip_of(&plain);
    assert!(decode(Codec::Pylibmc, 8, &z[..z.len() / 2], 1 << 20).is_err());
    assert!(decode(Codec::Spymemcached, 2, &g[..g.len() / 2], 1 << 20).is_err());
    assert!(decode(Codec::Dalli, 2, &g[..g.len() - 4], 1 << 20).is_err());
}

/// The raw codec stores each value's bytes with flags 0 (an unknown value keeps its flags), and
/// refuses the values it has no agreed spelling for.
#[test]
fn the_raw_codec_stores_bytes_and_refuses_what_has_no_spelling() {
    let raw = Transcoder::new(Codec::Raw);
    let json = serde_json::json!({"a": [1, 2]});
    for (value, flags, bytes) in [
        (
            Value::String("héllo".into()),
            0,
            "héllo".as_bytes().to_vec(),
        ),
        (Value::Bytes(vec![0, 255, 13, 10]), 0, vec![0, 255, 13, 10]),
        (Value::Int(-42), 0, b"-42".to_vec()),
        (
            Value::BigInt("18446744073709551616".into()),
            0,
            b"18446744073709551616".to_vec(),
        ),
        (Value::Json(json.clone()), 0, br#"{"a":[1,2]}"#.to_vec()),
        (Value::Msgpack(json), 0, br#"{"a":[1,2]}"#.to_vec()),
        (
            Value::Foreign {
                encoding: Encoding::Pickle,
                bytes: b"\x80\x04K\x01.".to_vec(),
            },
            0,
            b"\x80\x04K\x01.".to_vec(),
        ),
        (
            Value::Unknown {
                flags: 0x1234,
                bytes: b"as stored".to_vec(),
            },
            0x1234,
            b"as stored".to_vec(),
        ),
    ] {
        let e = raw.encode(&value, 1 << 20).expect("stored");
        assert_eq!((e.flags, &e.bytes), (flags, &bytes), "{value:?}");
    }
    for value in [Value::Float(1.5), Value::Bool(true), Value::Null] {
        assert!(
            matches!(
                raw.encode(&value, 1 << 20),
                Err(ValueError::Unsupported {
                    codec: Codec::Raw,
                    ..
                })
            ),
            "{value:?}"
        );
    }
    assert!(matches!(
        raw.encode(&Value::Bytes(vec![1; 11]), 10),
        Err(ValueError::TooLarge { size: 11, max: 10 })
    ));
}

/// `bytes::Bytes` (what `Item::value` is) converts as `Vec<u8>` does, both ways.
#[test]
fn shared_bytes_convert_as_a_vec_does() {
    let b = bytes::Bytes::from_static(b"\x00ab");
    assert_eq!(b.to_value(), Ok(Value::Bytes(b"\x00ab".to_vec())));
    assert_eq!(
        bytes::Bytes::from_value(Value::Bytes(b"\x00ab".to_vec())),
        Ok(b.clone())
    );
    assert_eq!(
        bytes::Bytes::from_value(Value::String("hi".into())),
        Ok(bytes::Bytes::from_static(b"hi"))
    );
    assert!(bytes::Bytes::from_value(Value::Int(1)).is_err());
}
