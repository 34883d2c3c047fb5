//! Which codec a stored value most likely belongs to, from its flags and bytes alone.
//!
//! A candidate must decode the value without error and without calling its flags unknown, and
//! the bytes must be what that peer writes under those flags (a Java stream's magic for
//! spymemcached's serialized type, a special type's length, a number for node's numeric flag,
//! flags 0 or 6 for memshard's own layout). Candidates are ranked by how much the decode found:
//! a structure (array, map, serialized object) first, then a typed scalar, then text or
//! bytes; ties keep [`Codec::ALL`]'s order, memshard's own layout first.

use super::{Codec, Value, decode_as};

/// Large enough for any value memcached stores by default (1 MiB items) with room for a
/// compressed one's expansion; sniffing is a guess, never a read the caller relies on.
const SNIFF_MAX: usize = 8 << 20;

/// The codecs (peers' and memshard's own, never [`Codec::Raw`]) under which `flags` and
/// `payload` decode without error and plausibly follow that codec's flag layout, best guess
/// first. Empty when no codec claims them.
///
/// ```
/// use memshard::value::{Codec, sniff};
///
/// // php-memcached's serialize() of a PHP array, type 4.
/// let found = sniff(4, br#"a:1:{s:1:"a";i:1;}"#);
/// assert_eq!(found.first(), Some(&Codec::PhpMemcached));
/// // Flags 0 is plain bytes for every peer: memshard's own layout first.
/// assert_eq!(sniff(0, b"hello").first(), Some(&Codec::Memshard));
/// ```
pub fn sniff(flags: u32, payload: &[u8]) -> Vec<Codec> {
    let mut found: Vec<(u8, usize, Codec)> = Codec::ALL
        .into_iter()
        .enumerate()
        .filter(|&(_, codec)| codec != Codec::Raw)
        .filter_map(|(order, codec)| {
            let value = decode_as(codec, flags, payload, SNIFF_MAX).ok()?;
            plausible(codec, flags, payload, &value).then(|| (rank(&value), order, codec))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    found.into_iter().map(|(_, _, codec)| codec).collect()
}

/// What a value of `codec` under `flags` is called in that peer's terms (`serialized`,
/// `pickled`, `JSON`...), for messages that name the layout a value seems to follow.
pub(crate) fn layout_name(codec: Codec, flags: u32) -> &'static str {
    match codec {
        Codec::Memshard | Codec::Raw => match flags {
            6 => "JSON",
            _ => "plain",
        },
        Codec::PhpMemcached => match flags & 0xf {
            0 => "string",
            1 => "long",
            2 => "double",
            3 => "bool",
            4 => "serialized",
            5 => "igbinary",
            6 => "JSON",
            7 => "msgpack",
            _ => "unknown-type",
        },
        Codec::Pylibmc => match flags & !8 {
            1 => "pickled",
            2 => "bool",
            4 => "int",
            16 => "str",
            _ => "bytes",
        },
        Codec::Dalli if flags & 1 != 0 => "serialized",
        Codec::Dalli => "raw",
        Codec::Spymemcached if flags & 1 != 0 => "serialized",
        Codec::Spymemcached => match flags & 0xff00 {
            0 => "String",
            0x100 => "Boolean",
            0x200 => "Integer",
            0x300 => "Long",
            0x400 => "Date",
            0x500 => "Byte",
            0x600 => "Float",
            0x700 => "Double",
            _ => "byte[]",
        },
        Codec::NodeMemcached => match flags {
            2 => "JSON",
            4 => "Buffer",
            8 => "number",
            _ => "string",
        },
    }
}

/// Structures outrank typed scalars, which outrank text and bytes: the more a
/// decode had to find in the bytes, the less likely it is a coincidence.
pub(super) fn rank(value: &Value) -> u8 {
    match value {
        Value::Json(_) | Value::Msgpack(_) | Value::Foreign { .. } => 3,
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) | Value::Bool(_) | Value::Null => 2,
        // Text and bytes are one rank: memshard's layout reads flags 0 as bytes where the peers
        // call the same payload text, and flags 0 claims nothing either way.
        Value::String(_) | Value::Bytes(_) => 1,
        Value::Unknown { .. } => 0,
    }
}

/// Java serialization's stream magic and version (`ObjectStreamConstants`).
const JAVA_MAGIC: [u8; 4] = [0xac, 0xed, 0x00, 0x05];

fn plausible(codec: Codec, flags: u32, payload: &[u8], value: &Value) -> bool {
    if matches!(value, Value::Unknown { .. }) {
        return false;
    }
    match codec {
        // Version 1 writes only these two; any other flags read as bytes without a claim.
        Codec::Memshard => flags == 0 || flags == 6,
        Codec::Raw => false,
        Codec::Spymemcached => match value {
            Value::Foreign { bytes, .. } => bytes.starts_with(&JAVA_MAGIC),
            // `TranscoderUtils.encodeInt` / `encodeLong` write 4 and 8 bytes, `encodeBoolean`
            // one: a longer payload is not theirs.
            _ => match flags & 0xff00 {
                0x100 | 0x500 => payload.len() == 1,
                0x200 | 0x600 => payload.len() <= 4,
                0x300 | 0x400 | 0x700 => payload.len() <= 8,
                _ => true,
            },
        },
        // `lib/memcached.js` reads flags 8 with `+value`: anything but a number becomes NaN.
        Codec::NodeMemcached if flags == 8 => match value {
            Value::Float(f) => !f.is_nan() || payload.trim_ascii() == b"NaN",
            _ => false,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::ValueError;
    use serde_json::Value as J;
    use std::path::Path;

    const PEERS: [(&str, Codec); 5] = [
        ("php-memcached", Codec::PhpMemcached),
        ("pylibmc", Codec::Pylibmc),
        ("dalli", Codec::Dalli),
        ("spymemcached", Codec::Spymemcached),
        ("node", Codec::NodeMemcached),
    ];

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
            .collect()
    }

    /// Every write a peer made (value-vectors/*.json): the peer's codec is among the
    /// candidates whenever it reads the value as a value, and first whenever the value is a
    /// structure or a serialized object (what only that peer writes that way).
    /// Each layout's name, by codec and flags: what a misread's message calls the value.
    #[test]
    fn layout_names_follow_each_peers_flags() {
        use Codec as C;
        let table: &[(Codec, u32, &str)] = &[
            (C::Memshard, 0, "plain"),
            (C::Memshard, 6, "JSON"),
            (C::Raw, 6, "JSON"),
            (C::PhpMemcached, 0, "string"),
            (C::PhpMemcached, 1, "long"),
            (C::PhpMemcached, 2, "double"),
            (C::PhpMemcached, 3, "bool"),
            (C::PhpMemcached, 0x14, "serialized"),
            (C::PhpMemcached, 5, "igbinary"),
            (C::PhpMemcached, 6, "JSON"),
            (C::PhpMemcached, 7, "msgpack"),
            (C::PhpMemcached, 8, "unknown-type"),
            (C::Pylibmc, 1, "pickled"),
            (C::Pylibmc, 2 | 8, "bool"),
            (C::Pylibmc, 4, "int"),
            (C::Pylibmc, 16, "str"),
            (C::Pylibmc, 0, "bytes"),
            (C::Dalli, 0, "raw"),
            (C::Dalli, 2, "raw"),
            (C::Dalli, 3, "serialized"),
            (C::Spymemcached, 0x201, "serialized"),
            (C::Spymemcached, 0, "String"),
            (C::Spymemcached, 0x100, "Boolean"),
            (C::Spymemcached, 0x200, "Integer"),
            (C::Spymemcached, 0x300, "Long"),
            (C::Spymemcached, 0x400, "Date"),
            (C::Spymemcached, 0x500, "Byte"),
            (C::Spymemcached, 0x600, "Float"),
            (C::Spymemcached, 0x700, "Double"),
            (C::Spymemcached, 0x800, "byte[]"),
            (C::NodeMemcached, 2, "JSON"),
            (C::NodeMemcached, 4, "Buffer"),
            (C::NodeMemcached, 8, "number"),
            (C::NodeMemcached, 0, "string"),
        ];
        for &(codec, flags, name) in table {
            assert_eq!(
                layout_name(codec, flags),
                name,
                "{codec:?} flags {flags:#x}"
            );
        }
    }

    #[test]
    fn each_peers_writes_sniff_as_that_peer() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("value-vectors");
        let mut structured_first = 0;
        for (peer, codec) in PEERS {
            let text = std::fs::read_to_string(dir.join(format!("{peer}.json"))).expect("fixture");
            let doc: J = serde_json::from_str(&text).expect("fixture JSON");
            for case in doc["writes"].as_array().expect("writes") {
                let Some(payload) = case.get("payload").and_then(J::as_str) else {
                    continue;
                };
                let name = case["name"].as_str().unwrap_or("?");
                let flags = u32::try_from(case["flags"].as_u64().expect("flags")).expect("u32");
                let payload = unhex(payload);
                let found = sniff(flags, &payload);
                assert!(!found.contains(&Codec::Raw), "{peer} {name}: raw listed");
                let own = decode_as(codec, flags, &payload, SNIFF_MAX);
                let Ok(value) = own else { continue };
                if matches!(value, Value::Unknown { .. }) {
                    continue;
                }
                assert!(
                    found.contains(&codec),
                    "{peer} {name} (flags {flags:#x}): {found:?} lacks {codec}"
                );
                // php-memcached's JSON type is memshard's flags 6: the same layout.
                let same_as_memshard = codec == Codec::PhpMemcached && flags == 6;
                if rank(&value) == 3 && !same_as_memshard {
                    assert_eq!(
                        found.first(),
                        Some(&codec),
                        "{peer} {name} (flags {flags:#x}): {found:?}"
                    );
                    structured_first += 1;
                }
            }
        }
        // Serialized and JSON writes of all five peers were seen, not skipped.
        assert!(structured_first >= 40, "{structured_first}");
    }

    #[test]
    fn distinctive_layouts_name_their_peer_first() {
        let cases: &[(u32, &[u8], Codec)] = &[
            // PHP serialize() of [1, 2].
            (4, b"a:2:{i:0;i:1;i:1;i:2;}", Codec::PhpMemcached),
            // pickle protocol 2 of [1]: PROTO 2, EMPTY_LIST, BININT1 1, APPEND, STOP.
            (1, b"\x80\x02]K\x01a.", Codec::Pylibmc),
            // Ruby Marshal of [1].
            (1, b"\x04\x08[\x06i\x06", Codec::Dalli),
            // Java serialization of a String "a".
            (1, b"\xac\xed\x00\x05t\x00\x01a", Codec::Spymemcached),
            // memshard's JSON.
            (6, b"[1,2]", Codec::Memshard),
            (0, b"hello", Codec::Memshard),
        ];
        for &(flags, payload, codec) in cases {
            assert_eq!(sniff(flags, payload).first(), Some(&codec), "{payload:?}");
        }
    }

    /// A read that would fail, or (memshard's own layout) return another peer's encoding as
    /// bytes, names the peer; plain bytes under user flags and real garbage are left alone.
    #[test]
    fn a_misread_names_the_peer_to_use() {
        let array = br#"a:1:{s:1:"a";i:1;}"#;
        let cases: &[(Codec, u32, &[u8], Codec)] = &[
            (Codec::Memshard, 4, array, Codec::PhpMemcached),
            (Codec::Pylibmc, 4, array, Codec::PhpMemcached),
            (Codec::Memshard, 1, b"\x80\x02]K\x01a.", Codec::Pylibmc),
            (Codec::Memshard, 1, b"\x04\x08[\x06i\x06", Codec::Dalli),
            (
                Codec::Memshard,
                1,
                b"\xac\xed\x00\x05t\x00\x01a",
                Codec::Spymemcached,
            ),
        ];
        for &(codec, flags, payload, peer) in cases {
            let e = super::super::decode(codec, flags, payload, SNIFF_MAX).unwrap_err();
            match &e {
                ValueError::OtherPeer { peer: p, .. } => assert_eq!(*p, peer, "{e}"),
                other => panic!("{codec} {payload:?}: {other:?}"),
            }
            let text = e.to_string();
            assert!(text.contains(&format!("use the {peer} codec")), "{text}");
            assert!(text.len() < 200, "{text}");
        }
        let e = super::super::decode(Codec::Memshard, 4, array, SNIFF_MAX).unwrap_err();
        assert_eq!(
            e.to_string(),
            "memshard codec: flags 4 looks like php-memcached's serialized value: \
             use the php-memcached codec"
        );
        // Another codec's own error stays the source.
        let e = super::super::decode(Codec::Pylibmc, 4, array, SNIFF_MAX).unwrap_err();
        assert!(std::error::Error::source(&e).is_some());
        // PHP user flags over a plain string read the same bytes: no complaint.
        let plain = super::super::decode(Codec::Memshard, 0x1_0000, b"x", SNIFF_MAX);
        assert_eq!(plain, Ok(Value::Bytes(b"x".to_vec())));
        // A malformed PHP value that some peer reads as mere text stays PHP's own error.
        assert!(matches!(
            super::super::decode(Codec::PhpMemcached, 4, b"i:5;junk", SNIFF_MAX),
            Err(ValueError::Malformed { .. })
        ));
    }

    #[test]
    fn what_no_codec_claims_is_empty() {
        // Flags no peer defines (PHP type 9; pylibmc pickle + zlib that is no zlib), and a
        // Java serialized flag without the stream magic.
        assert_eq!(sniff(9, b"x"), Vec::<Codec>::new());
        assert!(!sniff(1, b"not java").contains(&Codec::Spymemcached));
        // node's numeric flag with text that is no number.
        assert!(!sniff(8, b"abc").contains(&Codec::NodeMemcached));
        assert!(sniff(8, b"42").contains(&Codec::NodeMemcached));
        // A spymemcached Integer is four bytes at most, a Boolean one byte.
        assert!(!sniff(0x200, b"12345").contains(&Codec::Spymemcached));
        assert!(!sniff(0x100, b"11").contains(&Codec::Spymemcached));
        assert!(!sniff(0x500, b"11").contains(&Codec::Spymemcached));
    }
}
