//! Ring: build every flavour over small fuzzed server lists (with or without a hash tag) and
//! route fuzzed keys. Never panics; `route` is `Some` and in range; `distinct_servers` starts
//! at the owner and never repeats a server.
//!
//! Input layout (easy to write by hand, see corpus/ring/seed-*):
//! byte 0: flavour (index into `memshard::FLAVORS`, modulo its length);
//! byte 1: bit 0 set = use a hash tag made of bytes 2 and 3;
//! then a server list in any format `parse_server_list` takes, a NUL, and NUL-separated keys.

use memshard::{FLAVORS, HashTag, Ring, parse_server_list};

const MAX_SERVERS: usize = 12;
const MAX_KEYS: usize = 64;

pub fn run(data: &[u8]) {
    let [f, t, open, close, rest @ ..] = data else {
        return;
    };
    let (_, flavor) = FLAVORS[*f as usize % FLAVORS.len()];
    let tag = (t & 1 == 1).then(|| HashTag::new(*open, *close));
    let mut parts = rest.split(|&b| b == 0);
    let list = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let Ok(mut servers) = parse_server_list(&list) else {
        return;
    };
    if servers.is_empty() {
        return;
    }
    servers.truncate(MAX_SERVERS);
    let n = servers.len();
    let ring = Ring::with_options(servers, flavor, None, tag)
        .unwrap_or_else(|e| panic!("{flavor}: ring over {n} servers refused: {e}"));
    assert_eq!(ring.servers().len(), n);
    assert!(
        !ring.is_empty(),
        "{flavor}: empty continuum over {n} servers"
    );
    assert_eq!(ring.point_counts().len(), n);

    // The empty key, then the fuzzed ones.
    for key in std::iter::once(&[][..]).chain(parts.take(MAX_KEYS)) {
        let idx = ring
            .route(key)
            .unwrap_or_else(|| panic!("{flavor}: no route for {key:?}"));
        assert!(idx < n, "{flavor}: route {idx} of {n} servers");
        assert!(
            ring.point_counts()[idx] > 0,
            "{flavor}: owner {idx} has no points"
        );
        assert_eq!(
            ring.route(key),
            Some(idx),
            "{flavor}: route not deterministic"
        );
        let owner = ring.server_for(key).expect("server_for agrees with route");
        assert!(std::ptr::eq(owner, &ring.servers()[idx]));
        assert!(ring.point_for(key).is_some());

        let mut seen = vec![false; n];
        let mut count = 0;
        for s in ring.distinct_servers(key) {
            let i = ring
                .servers()
                .iter()
                .position(|x| std::ptr::eq(x, s))
                .expect("distinct_servers yields the ring's own servers");
            assert!(
                !seen[i],
                "{flavor}: distinct_servers repeated server {i} for {key:?}"
            );
            if count == 0 {
                assert_eq!(
                    i, idx,
                    "{flavor}: distinct_servers does not start at the owner"
                );
            }
            seen[i] = true;
            count += 1;
        }
        assert!(
            (1..=n).contains(&count),
            "{flavor}: {count} distinct servers of {n}"
        );
    }
}
