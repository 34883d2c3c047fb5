//! pymemcache's rendezvous hashing (`pymemcache/client/rendezvous.py`, `murmur3.py`).
//!
//! `HashClient` names each server `"host:port"` (`_make_client_key` of a `(host, port)` pair)
//! and `RendezvousHash.get_node(key)` scores every node with
//! `murmur3_32("%s-%s" % (node, key))`: the highest score wins; on a tie the node whose name
//! is the larger string wins (`max(str(node), str(winner))`). pymemcache's `murmur3_32` is
//! MurmurHash3 x86_32 with seed 0 over the *characters* of the string, each taken as
//! `ord(c) & 0xFF` (so a non-ASCII character counts as one byte, its code point's low 8 bits).

/// The string pymemcache hashes for `node` and `key`, as the bytes `murmur3_32` reads.
fn scored_text(node: &str, key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut push = |s: &str| out.extend(s.chars().map(|c| (c as u32 & 0xff) as u8));
    push(node);
    push("-");
    for chunk in key.utf8_chunks() {
        push(chunk.valid());
        if !chunk.invalid().is_empty() {
            push("\u{fffd}");
        }
    }
}

/// pymemcache's `murmur3_32(data, seed=0)`.
pub(crate) fn murmur3_32(data: &[u8]) -> u32 {
    super::hash::murmur3_seeded(data, 0)
}

/// The index of the node that owns `key` among `nodes` (pymemcache's node names).
pub(crate) fn owner(nodes: &[String], key: &[u8]) -> Option<usize> {
    let mut text = Vec::with_capacity(64);
    let mut best: Option<(u32, usize)> = None;
    for (i, node) in nodes.iter().enumerate() {
        scored_text(node, key, &mut text);
        let score = murmur3_32(&text);
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
    let mut text = Vec::with_capacity(64);
    let mut scored: Vec<(u32, usize)> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            scored_text(node, key, &mut text);
            (murmur3_32(&text), i)
        })
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
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b"Hello, world!"), 0xc036_3e43);
    }

    #[test]
    fn non_ascii_characters_count_as_their_low_byte() {
        let mut t = Vec::new();
        scored_text("n", "é€".as_bytes(), &mut t);
        assert_eq!(t, [b'n', b'-', 0xe9, 0xac]);
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
}
