//! The blocking client against real memcached servers started here on loopback: what only the
//! blocking client has (one client shared by threads). Commands, placement, multi-key
//! operations, key checks, prefixes, dead servers, timeouts and large values run for both
//! clients in tests/scenarios.rs.

mod common;

use common::servers::{Cluster, require};
use memshard::Expiry;
use memshard::{Client, Flavor};
use std::sync::OnceLock;

/// One four-server cluster (two of them on port 11211) shared by the tests of this file.
fn cluster() -> Option<&'static Cluster> {
    static C: OnceLock<Option<Cluster>> = OnceLock::new();
    C.get_or_init(|| require("memcached").then(Cluster::four))
        .as_ref()
}

fn client(c: &Cluster) -> Client {
    Client::builder()
        .server_list(&c.server_list())
        .unwrap()
        .pool_size(4)
        .build()
        .unwrap()
}

#[test]
fn client_is_shared_across_threads() {
    let Some(c) = cluster() else { return };
    let m = client(c);
    let flavor_is_default = m.ring().flavor() == Flavor::Libmemcached;
    assert!(flavor_is_default);
    std::thread::scope(|s| {
        for t in 0..8 {
            let m = m.clone();
            s.spawn(move || {
                for i in 0..200 {
                    let k = format!("thread:{t}:{i}");
                    m.set(&k, &k, Expiry::NEVER).unwrap();
                    assert_eq!(m.get(&k).unwrap().unwrap().value, k.as_bytes());
                }
            });
        }
    });
}
