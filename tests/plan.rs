//! The planner's figures against an independent count on the same keys (ketama placed by the
//! real libmemcached, modulo and jump from md5 computed here), and the monotone property of
//! memshard-weighted (with libmemcached's weighted ketama as the contrast).

mod common;

use md5::{Digest, Md5};
use memshard::plan::{Keys, Method, RingChoice, plan};
use memshard::{Flavor, KeyHash, Ring, Server};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

fn servers(n: usize, weights: &[u32]) -> Vec<Server> {
    (0..n)
        .map(|i| {
            Server::new(format!("10.9.0.{}", i + 1), 11211 + (i % 2) as u16)
                .with_weight(weights[i % weights.len()])
        })
        .collect()
}

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("user:{i}:{}", "x".repeat(i % 60)).into_bytes())
        .collect()
}

/// Jump hash as printed in the paper (Lamping & Veach 2014, figure 1), written separately.
fn jump_reference(key: u64, num_buckets: i32) -> i32 {
    let mut key = key;
    let mut b: i64 = -1;
    let mut j: i64 = 0;
    while j < num_buckets as i64 {
        b = j;
        key = key.wrapping_mul(2862933555777941757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1i64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as i32
}

/// The md5 digest of `k` as four little-endian words (libmemcached's key hash is the first).
fn md5_words(k: &[u8]) -> [u32; 4] {
    let d = Md5::digest(k);
    std::array::from_fn(|i| {
        u32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]])
    })
}

fn server_list(servers: &[Server]) -> String {
    servers
        .iter()
        .map(|s| format!("{} {}\n", s.addr, s.weight))
        .collect()
}

#[test]
fn plan_matches_an_independent_count() {
    let before = servers(10, &[1, 2, 3]);
    let mut after = before.clone();
    after.push(Server::new("10.9.0.77", 11300).with_weight(2));
    after.remove(3);
    let ks = keys(30_000);
    let choice = RingChoice {
        flavor: Flavor::Libmemcached,
        hash: None,
        tag: None,
    };
    // ketama: where libmemcached puts each key before and after the change
    let Some(lmc_before) = common::libmemcached::route(&server_list(&before), &ks) else {
        return;
    };
    let lmc_after = common::libmemcached::route(&server_list(&after), &ks).unwrap();
    for threads in [1, 2] {
        let p = plan(
            &before,
            &after,
            choice,
            &Keys::List(ks.clone()),
            threads,
            &AtomicU64::new(0),
        )
        .unwrap();
        let idx = |addr: &str| p.servers.iter().position(|s| s.addr == addr).unwrap();
        // ketama from libmemcached's answers, modulo and jump from md5, key by key
        let mut ketama_moves: HashMap<(usize, usize), u64> = HashMap::new();
        let (mut modulo_moved, mut jump_moved) = (0u64, 0u64);
        let mut ketama_before = vec![0u64; p.servers.len()];
        for ((k, lb), la) in ks.iter().zip(&lmc_before).zip(&lmc_after) {
            let b = idx(lb);
            let a = idx(la);
            ketama_before[b] += 1;
            if a != b {
                *ketama_moves.entry((b, a)).or_default() += 1;
            }
            let d = md5_words(k);
            let mb = &before[(d[0] % before.len() as u32) as usize].addr;
            let ma = &after[(d[0] % after.len() as u32) as usize].addr;
            modulo_moved += u64::from(mb != ma);
            let k64 = (d[1] as u64) << 32 | d[2] as u64;
            let jb = &before[jump_reference(k64, before.len() as i32) as usize].addr;
            let ja = &after[jump_reference(k64, after.len() as i32) as usize].addr;
            jump_moved += u64::from(jb != ja);
        }
        let m = |which: Method| p.methods.iter().find(|m| m.method == which).unwrap();
        let ketama = m(Method::Ketama);
        let mut got: HashMap<(usize, usize), u64> = HashMap::new();
        for &(f, t, n) in &ketama.moves {
            got.insert((f, t), n);
        }
        assert!(ketama_moves.len() > 1, "moves between several servers");
        assert_eq!(got, ketama_moves, "threads={threads}");
        assert_eq!(ketama.moved, ketama_moves.values().sum::<u64>());
        assert_eq!(ketama.keys_before, ketama_before);
        // weighted ketama recomputes every point count: some keys move between untouched servers
        let unchanged = |i: usize| p.servers[i].unchanged();
        let non_mono: u64 = ketama_moves
            .iter()
            .filter(|((f, t), _)| unchanged(*f) && unchanged(*t))
            .map(|(_, n)| n)
            .sum();
        assert!(
            non_mono > 0,
            "libmemcached's weighted ketama is not monotone"
        );
        assert_eq!(ketama.non_monotone, non_mono);
        assert_eq!(m(Method::Modulo).moved, modulo_moved);
        assert_eq!(m(Method::Jump).moved, jump_moved);
        assert!(p.methods.len() >= 4, "{:?}", p.methods.len());
        for mp in &p.methods {
            assert_eq!(
                mp.keys_before.iter().sum::<u64>(),
                ks.len() as u64,
                "{:?}",
                mp.method
            );
            assert_eq!(
                mp.keys_after.iter().sum::<u64>(),
                ks.len() as u64,
                "{:?}",
                mp.method
            );
        }
        // slots: a server that is removed loses all its slots; unchanged servers keep theirs
        let slots = m(Method::Slots);
        assert_eq!(
            slots.non_monotone, 0,
            "minimal slot rebalancing never moves slots between unchanged servers"
        );
    }
}

/// Adding, removing or reweighting one server moves keys only to or from that server.
#[test]
fn memshard_weighted_is_monotone_and_libmemcached_is_not() {
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let ks = keys(5000);
    let (mut libmemcached_non_monotone, mut memshard_weighted_moved) = (0u64, 0u64);
    for round in 0..60 {
        let n = 2 + next(12) as usize;
        let list: Vec<Server> = (0..n)
            .map(|i| {
                Server::new(format!("10.8.{round}.{i}"), 11211).with_weight(1 + next(6) as u32)
            })
            .collect();
        let mut changed = list.clone();
        let who: String;
        match next(3) {
            0 => {
                let s =
                    Server::new(format!("10.8.{round}.200"), 11211).with_weight(1 + next(6) as u32);
                who = s.addr.clone();
                let at = next(n as u64 + 1) as usize;
                changed.insert(at, s);
            }
            1 => {
                let at = next(n as u64) as usize;
                who = changed.remove(at).addr;
            }
            _ => {
                let at = next(n as u64) as usize;
                changed[at].weight += 1 + next(5) as u32;
                who = changed[at].addr.clone();
            }
        }
        for (flavor, expect_monotone) in [
            (Flavor::MemshardWeighted, true),
            (Flavor::Libmemcached, false),
        ] {
            // libmemcached: the real one's answers; memshard-weighted: the ring (no peer has it)
            let (owners_before, owners_after) = if flavor == Flavor::Libmemcached {
                let Some(b) = common::libmemcached::route(&server_list(&list), &ks) else {
                    return;
                };
                let a = common::libmemcached::route(&server_list(&changed), &ks).unwrap();
                (b, a)
            } else {
                let owners = |servers: &[Server]| {
                    let r = Ring::new(servers.to_vec(), flavor).unwrap();
                    ks.iter()
                        .map(|k| r.server_for(k).unwrap().addr.clone())
                        .collect::<Vec<_>>()
                };
                (owners(&list), owners(&changed))
            };
            assert_eq!(
                (owners_before.len(), owners_after.len()),
                (ks.len(), ks.len())
            );
            let mut bad = 0u64;
            for (b, a) in owners_before.iter().zip(&owners_after) {
                if b != a && *b != who && *a != who {
                    bad += 1;
                }
                if b != a && flavor == Flavor::MemshardWeighted {
                    memshard_weighted_moved += 1;
                }
            }
            if expect_monotone {
                assert_eq!(
                    bad, 0,
                    "round {round}: {flavor} moved keys between servers other than {who}"
                );
            } else {
                libmemcached_non_monotone += bad;
            }
            // the planner reports the same count
            let p = plan(
                &list,
                &changed,
                RingChoice {
                    flavor,
                    hash: None,
                    tag: None,
                },
                &Keys::List(ks.clone()),
                2,
                &AtomicU64::new(0),
            )
            .unwrap();
            let ketama = p
                .methods
                .iter()
                .find(|m| m.method == Method::Ketama)
                .unwrap();
            assert_eq!(ketama.non_monotone, bad, "round {round} {flavor}");
        }
    }
    println!(
        "60 changes: memshard-weighted moved {memshard_weighted_moved} keys, none between unchanged servers; libmemcached moved {libmemcached_non_monotone} between unchanged servers"
    );
    assert!(memshard_weighted_moved > 0, "the changes moved keys");
    assert!(
        libmemcached_non_monotone > 0,
        "the contrast: weighted ketama moves keys between unchanged servers"
    );
}

#[test]
fn flavor_comparison_counts_disagreements() {
    let list = servers(8, &[1]);
    let ks = keys(20_000);
    let d = memshard::plan::compare_flavors(
        &list,
        Flavor::Libmemcached,
        Flavor::Twemproxy,
        None,
        Some(KeyHash::Md5),
        &Keys::List(ks.clone()),
    )
    .unwrap();
    assert_eq!(
        d.differ, 0,
        "twemproxy with md5 places like libmemcached on unnamed servers"
    );
    let d = memshard::plan::compare_flavors(
        &list,
        Flavor::Libmemcached,
        Flavor::Uhashring,
        None,
        None,
        &Keys::List(ks.clone()),
    )
    .unwrap();
    let (ra, rb) = (
        Ring::new(list.clone(), Flavor::Libmemcached).unwrap(),
        Ring::new(list, Flavor::Uhashring).unwrap(),
    );
    let independent = ks.iter().filter(|k| ra.route(k) != rb.route(k)).count() as u64;
    assert_eq!(d.differ, independent);
    assert!(
        d.reasons.iter().any(|r| r.contains("port 11211")),
        "{:?}",
        d.reasons
    );
}
