//! Routing and continuum build per flavour. Inputs are made outside the timed loops.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use memshard::{FLAVORS, Flavor, Ring, Server};
use std::hint::black_box;

fn servers(n: usize) -> Vec<Server> {
    (0..n)
        .map(|i| {
            Server::new(format!("10.0.{}.{}", i / 250, 1 + i % 250), 11211)
                .with_weight(1 + (i as u32 * 7) % 5)
        })
        .collect()
}

fn keys() -> Vec<String> {
    (0..1024).map(|i| format!("user:{i}")).collect()
}

fn route(c: &mut Criterion) {
    let keys = keys();
    let mut g = c.benchmark_group("route");
    for n in [10, 100, 1000] {
        for &(name, flavor) in FLAVORS {
            let ring = Ring::new(servers(n), flavor).expect("ring");
            g.bench_with_input(BenchmarkId::new(name, n), &ring, |b, ring| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) & 1023;
                    black_box(ring.route(black_box(keys[i].as_bytes())))
                })
            });
        }
    }
    g.finish();
}

fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("build");
    g.sample_size(20);
    for n in [10, 100, 1000] {
        let list = servers(n);
        g.bench_with_input(BenchmarkId::new("libmemcached", n), &list, |b, list| {
            b.iter(|| Ring::new(black_box(list.clone()), Flavor::Libmemcached).expect("ring"))
        });
    }
    g.finish();
}

criterion_group!(benches, route, build);
criterion_main!(benches);
