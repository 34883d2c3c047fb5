//! pymemcache's rendezvous hashing (`pymemcache/client/rendezvous.py`, `murmur3.py`).
//!
//! `HashClient` names each server `"host:port"` (`_make_client_key` of a `(host, port)` pair)
//! and `RendezvousHash.get_node(key)` scores every node with
//! `murmur3_32("%s-%s" % (node, key))`: the highest score wins; on a tie the node whose name
//! is the larger string wins (`max(str(node), str(winner))`). pymemcache's `murmur3_32` is
//! MurmurHash3 x86_32 with seed 0 over the *characters* of the string, each taken as
//! `ord(c) & 0xFF` (so a non-ASCII character counts as one byte, its code point's low 8 bits).

/// The bytes `murmur3_32` reads of `"%s-%s" % (node, key)`: each character's code point's low
/// byte (invalid UTF-8 in the key reads as U+FFFD, as Python would decode it).
fn scored_text<'a>(node: &'a str, key: &'a [u8]) -> impl Iterator<Item = u8> + 'a {
    let low = |c: char| (c as u32 & 0xff) as u8;
    let key_chars = key.utf8_chunks().flat_map(|chunk| {
        let bad = (!chunk.invalid().is_empty()).then_some('\u{fffd}');
        chunk.valid().chars().chain(bad)
    });
    node.chars()
        .chain(std::iter::once('-'))
        .chain(key_chars)
        .map(low)
}

/// MurmurHash3 x86_32 with seed 0 over bytes as they come: routing hashes every server's
/// name with the key and must not allocate (tests/ring_api.rs counts allocations).
pub(crate) fn murmur3_32(data: impl IntoIterator<Item = u8>) -> u32 {
    use super::hash::{murmur3_finish, murmur3_round, murmur3_scramble};
    let (mut h, mut len, mut word, mut filled) = (0u32, 0u32, 0u32, 0u32);
    for b in data {
        word |= u32::from(b) << (8 * filled);
        filled += 1;
        len = len.wrapping_add(1);
        if filled == 4 {
            h = murmur3_round(h, word);
            (word, filled) = (0, 0);
        }
    }
    if filled > 0 {
        h ^= murmur3_scramble(word);
    }
    murmur3_finish(h, len)
}

/// The index of the node that owns `key` among `nodes` (pymemcache's node names).
pub(crate) fn owner(nodes: &[String], key: &[u8]) -> Option<usize> {
    let mut best: Option<(u32, usize)> = None;
    for (i, node) in nodes.iter().enumerate() {
        let score = murmur3_32(scored_text(node, key));
        best = match best {
            Some((s, w)) if s > score || (s == score && nodes[w] >= *node) => Some((s, w)),
            _ => Some((score, i)),
        };
    }
    best.map(|(_, i)| i)
}

/// Every node index, the owner first, then by falling score (ties as in [`owner`]): the order
/// in which pymemcache would pick a key's server as nodes are removed.
pub(crate) fn ranking(nodes: &[String], key: &[u8]) -> Vec<usize> {
    let mut scored: Vec<(u32, usize)> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| (murmur3_32(scored_text(node, key)), i))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| nodes[b.1].cmp(&nodes[a.1])));
    scored.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_seed_0_reference_values() {
        // MurmurHash3_x86_32 with seed 0 (SMHasher's reference implementation)
        assert_eq!(murmur3_32(*b""), 0);
        assert_eq!(murmur3_32(*b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(*b"Hello, world!"), 0xc036_3e43);
        // the streaming form is the block form at every length
        let data: Vec<u8> = (0..40u32).map(|i| (i * 37 + 11) as u8).collect();
        for n in 0..=data.len() {
            assert_eq!(
                murmur3_32(data[..n].iter().copied()),
                crate::ring::hash::murmur3_seeded(&data[..n], 0),
                "{n} bytes"
            );
        }
    }

    #[test]
    fn non_ascii_characters_count_as_their_low_byte() {
        let t: Vec<u8> = scored_text("n", "é€".as_bytes()).collect();
        assert_eq!(t, [b'n', b'-', 0xe9, 0xac]);
        let bad: Vec<u8> = scored_text("n", b"a\xff").collect();
        assert_eq!(bad, [b'n', b'-', b'a', 0xfd]);
    }

    #[test]
    fn ties_go_to_the_larger_name_and_ranking_starts_with_the_owner() {
        let nodes: Vec<String> = vec!["b:1".into(), "a:1".into(), "b:1".into()];
        for k in [&b"x"[..], b"y", b"key:1"] {
            let r = ranking(&nodes, k);
            assert_eq!(Some(r[0]), owner(&nodes, k));
            assert_eq!(r.len(), 3);
        }
        // two nodes of the same name always tie: the first keeps the key, as pymemcache's
        // `max(str(node), str(winner))` returns the same name
        let same: Vec<String> = vec!["a:1".into(), "a:1".into()];
        assert_eq!(owner(&same, b"k"), Some(0));
    }

    /// A real tie between two names: key `k` scores 0xa6192275 on both. pymemcache 4.0.0's
    /// `RendezvousHash(nodes).get_node("k")` answers `10.1.66.9:11211`, the larger name, in
    /// either order of the nodes (run against the installed pymemcache).
    #[test]
    fn a_real_tie_goes_to_the_larger_name_in_either_order() {
        let (low, high) = ("10.0.242.254:11211", "10.1.66.9:11211");
        let score = |n: &str| murmur3_32(scored_text(n, b"k"));
        assert_eq!((score(low), score(high)), (0xa619_2275, 0xa619_2275));
        for (nodes, winner) in [(vec![low, high], 1), (vec![high, low], 0)] {
            let nodes: Vec<String> = nodes.into_iter().map(String::from).collect();
            assert_eq!(owner(&nodes, b"k"), Some(winner), "{nodes:?}");
            assert_eq!(ranking(&nodes, b"k"), [winner, 1 - winner], "{nodes:?}");
        }
        // among others, the tied pair still ranks the larger name first
        let nodes: Vec<String> = [low, "127.0.0.1:1", high, "127.0.0.2:1"]
            .into_iter()
            .map(String::from)
            .collect();
        let r = ranking(&nodes, b"k");
        let at = |i| r.iter().position(|&x| x == i);
        assert!(at(2) < at(0), "{r:?}");
    }
}
