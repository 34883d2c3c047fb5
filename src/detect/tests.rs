use super::*;

fn servers() -> Vec<Server> {
    let mut list = crate::parse_server_list(
        "10.0.1.1:11211 3 alpha\n10.0.1.2:11211 1 beta\n10.0.1.3:11212 2 gamma\n10.0.1.4:11211 1 delta",
    )
    .expect("list");
    list.truncate(4);
    list
}

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("user:{i}:{}", i * 7919 % 1013).into_bytes())
        .collect()
}

/// Keys written by each candidate's placement: that candidate is among the best, at 100%,
/// and every candidate tied with it placed the keys identically.
#[test]
fn each_candidates_own_keys_rank_it_first_at_full_agreement() {
    let list = servers();
    let keys = keys(300);
    for c in candidates() {
        let ring = Ring::with_options(list.clone(), c.flavor, Some(c.hash), None).expect("ring");
        let mut d = Detector::new(&list).expect("detector");
        for k in &keys {
            d.observe(k, ring.route(k).expect("a server"));
        }
        let det = d.detection();
        assert_eq!(det.keys, 300);
        assert!(
            det.best().iter().any(|s| s.candidate == c),
            "{c:?} not among the best: {:?}",
            det.best()
        );
        assert_eq!(det.best()[0].agree, 300, "{c:?}");
        assert!(det.best_place_alike(), "{c:?}: {:?}", det.best());
        assert_eq!(det.share(&det.best()[0]), 1.0);
        // 300 keys over 4 servers tell most placements apart
        assert!(det.best().len() < 10, "{c:?}: {:?}", det.best());
    }
}

/// One key moved to another server costs every candidate that placed it there one agreement.
#[test]
fn a_key_elsewhere_lowers_the_agreement_by_one() {
    let list = servers();
    let keys = keys(200);
    let ring = Ring::new(list.clone(), Flavor::Libmemcached).expect("ring");
    let mut d = Detector::new(&list).expect("detector");
    for (i, k) in keys.iter().enumerate() {
        let on = ring.route(k).expect("a server");
        d.observe(k, if i == 0 { (on + 1) % 4 } else { on });
    }
    let det = d.detection();
    let top = det.scores[0];
    assert_eq!(top.candidate.flavor, Flavor::Libmemcached);
    assert_eq!(top.candidate.hash, KeyHash::Md5);
    assert_eq!((det.keys, top.agree), (200, 199));
    assert!(det.share(&top) < 1.0);
    // ranking falls
    assert!(det.scores.windows(2).all(|w| w[0].agree >= w[1].agree));
}

/// With one server every candidate places every key alike: all tie, in one group.
#[test]
fn one_server_ties_every_candidate_in_one_group() {
    let list = vec![Server::new("10.0.0.1", 11211)];
    let mut d = Detector::new(&list).expect("detector");
    for k in keys(10) {
        d.observe(&k, 0);
    }
    let det = d.detection();
    assert_eq!(det.best().len(), candidates().len());
    assert!(det.best_place_alike());
}

/// Equal agreement but different placement: not one group.
#[test]
fn equal_scores_with_different_placements_are_not_alike() {
    let list = servers();
    let mut d = Detector::new(&list).expect("detector");
    // no key: every candidate ties at 0, all alike
    assert!(d.detection().best_place_alike());
    // a key on a server no candidate picks for it cannot exist; a key every candidate sends
    // elsewhere: find one where two best candidates split
    let keys = keys(50);
    for k in &keys {
        d.observe(k, 9);
    }
    let det = d.detection();
    assert_eq!(det.best()[0].agree, 0);
    assert!(!det.best_place_alike());
}

/// The hashes tried for each flavor are ones its peer offers, its default first.
#[test]
fn peer_hashes_start_with_the_default_and_are_offered() {
    for &(name, f) in FLAVORS {
        let hashes = f.peer_hashes();
        assert_eq!(hashes.first(), Some(&f.default_hash()), "{name}");
        for &h in hashes {
            assert!(f.offers_hash(h), "{name} {h}");
        }
        let mut unique = hashes.to_vec();
        unique.sort_by_key(|h| h.to_string());
        unique.dedup();
        assert_eq!(unique.len(), hashes.len(), "{name}");
    }
    // php-memcached's OPT_HASH choices under its default distribution
    for h in [
        "default", "md5", "crc", "fnv1_64", "fnv1a_64", "fnv1_32", "fnv1a_32", "hsieh", "murmur",
    ] {
        let h: KeyHash = h.parse().expect("hash");
        assert!(Flavor::LibmemcachedModula.peer_hashes().contains(&h), "{h}");
    }
}

/// Groups are exactly the candidates that placed every key seen on the same server, checked
/// against each candidate's own ring: two with the same agreement but another placement of
/// one key are never grouped, and `keys()` counts every observation.
#[test]
fn groups_are_the_candidates_that_place_every_key_alike() {
    let list = servers();
    let keys = keys(200);
    let truth = Ring::with_options(list.clone(), Flavor::Libmemcached, Some(KeyHash::Md5), None)
        .expect("ring");
    let mut d = Detector::new(&list).expect("detector");
    for (n, k) in keys.iter().enumerate() {
        assert_eq!(d.keys(), n as u64);
        d.observe(k, truth.route(k).expect("a server"));
    }
    assert_eq!(d.keys(), 200);
    let det = d.detection();
    let placed = |c: Candidate| -> Vec<Option<usize>> {
        let r = Ring::with_options(list.clone(), c.flavor, Some(c.hash), None).expect("ring");
        keys.iter().map(|k| r.route(k)).collect()
    };
    let placements: Vec<Vec<Option<usize>>> =
        det.scores.iter().map(|s| placed(s.candidate)).collect();
    for (i, a) in det.scores.iter().enumerate() {
        for (j, b) in det.scores.iter().enumerate().skip(i + 1) {
            assert_eq!(
                a.group == b.group,
                placements[i] == placements[j],
                "{:?} and {:?}",
                a.candidate,
                b.candidate
            );
        }
    }
}

/// Ties keep [`candidates`] order, so the first listed of equally good placements (a peer's
/// default hash before the hashes it offers) is the one named first.
#[test]
fn ties_keep_the_candidates_order() {
    let list = vec![Server::new("10.0.0.1", 11211)];
    let mut d = Detector::new(&list).expect("detector");
    d.observe(b"k", 0);
    let ranked: Vec<Candidate> = d.detection().scores.iter().map(|s| s.candidate).collect();
    assert_eq!(ranked, candidates());
}

/// The share is the fraction of keys a candidate placed where they are; with no key nothing
/// contradicts any candidate.
#[test]
fn share_is_agreement_over_keys_and_whole_with_no_key() {
    let list = servers();
    let d = Detector::new(&list).expect("detector");
    let det = d.detection();
    assert_eq!(det.share(&det.scores[0]), 1.0);
    let mut d = Detector::new(&list).expect("detector");
    let ring = Ring::new(list.clone(), Flavor::Libmemcached).expect("ring");
    let keys = keys(4);
    for (i, k) in keys.iter().enumerate() {
        let on = ring.route(k).expect("a server");
        d.observe(k, if i == 0 { (on + 1) % 4 } else { on });
    }
    let det = d.detection();
    let truth = det
        .scores
        .iter()
        .find(|s| s.candidate.flavor == Flavor::Libmemcached && s.candidate.hash == KeyHash::Md5)
        .expect("libmemcached with md5 is a candidate");
    assert_eq!(det.share(truth), 0.75);
}

/// The server count is the list's, for the plain and the per-flavor constructor.
#[test]
fn server_count_is_the_lists_length() {
    assert_eq!(
        Detector::new(&servers()).expect("detector").server_count(),
        4
    );
    let one = Detector::per_flavor(|_| vec![Server::new("10.0.0.1", 11211)]).expect("detector");
    assert_eq!(one.server_count(), 1);
}
