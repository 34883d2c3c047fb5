//! `memshard-perf ring-scale`: routing, build time and memory of a libmemcached (KETAMA_WEIGHTED)
//! ring at 100, 1,000 and 10,000 servers (16 k, 160 k and 1.6 M points), no network.
//!
//! Prints `ring_scale.<what>.<servers>` metrics (py/table.py, the routing rows):
//!   route   ns per key, keys `user:<i>` (10,000, as `memshard bench --route-only`), md5 included
//!   build   ns per `Ring::new` (points from the names, sort, index)
//!   bytes   `Ring::continuum_bytes()` per server
//!   points  distinct points on the continuum
//!
//! The three sizes run interleaved (repetition 1 of each, then 2, ...) and each figure is the
//! median, so load from other work on the machine hits every size alike: the ratio of the
//! 10,000-server row to the 1,000-server row is what shows a cliff.

use crate::{
    build_iters, build_rep, emit, interleave, route_keys, route_rep, weighted_servers as servers,
};
use memshard::{Flavor, Ring, Server};
use std::hint::black_box;

pub(crate) const SIZES: [usize; 3] = [100, 1000, 10_000];

pub(crate) fn ring_scale_cmd() {
    let keys = route_keys();
    let rings: Vec<Ring> = SIZES
        .iter()
        .map(|&n| Ring::new(servers(n), Flavor::Libmemcached).expect("ring"))
        .collect();
    for (ring, &n) in rings.iter().zip(&SIZES) {
        emit(&format!("ring_scale.points.{n}"), ring.len() as f64);
        emit(
            &format!("ring_scale.bytes.{n}"),
            ring.continuum_bytes() as f64 / n as f64,
        );
    }

    // each repetition starts with a warm-up pass, so it finds the ring as warm as it was left
    let rep = |ring: &Ring| {
        black_box(route_rep(&keys, 1, |k| ring.route(k).unwrap_or(0)));
        route_rep(&keys, 30, |k| ring.route(k).unwrap_or(0))
    };
    let r = interleave(
        &mut [&mut || rep(&rings[0]), &mut || rep(&rings[1]), &mut || {
            rep(&rings[2])
        }],
    );
    for (ns, n) in r.into_iter().zip(SIZES) {
        emit(&format!("ring_scale.route.{n}"), ns);
    }
    drop(rings);

    let build = |s: Vec<Server>| Ring::new(s, Flavor::Libmemcached).expect("ring");
    let (i0, i1, i2) = (
        || servers(SIZES[0]),
        || servers(SIZES[1]),
        || servers(SIZES[2]),
    );
    // at most 50 builds a repetition: one 10,000-server ring holds 1.6 M points
    let it = |input: &dyn Fn() -> Vec<Server>| build_iters(&input, &build).min(50);
    let (n0, n1, n2) = (it(&i0), it(&i1), it(&i2));
    let r = interleave(&mut [
        &mut || build_rep(n0, &i0, &build),
        &mut || build_rep(n1, &i1, &build),
        &mut || build_rep(n2, &i2, &build),
    ]);
    for (ns, n) in r.into_iter().zip(SIZES) {
        emit(&format!("ring_scale.build.{n}"), ns);
    }
}
