//! Routing and continuum build per flavour. Inputs are made outside the timed loops.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use memshard::{FLAVORS, Flavor, Ring, Server};
use std::hint::black_box;

fn servers(n: usize) -> Vec<Server> {
    (0..n)
        .map(|i| {
            Server::new(
                format!("127.{}.{}.{}", i / 62_500, (i / 250) % 250, 1 + i % 250),
                11211,
            )
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

fn route_batch(c: &mut Criterion) {
    let keys = keys();
    let refs: Vec<&[u8]> = keys[..100].iter().map(|k| k.as_bytes()).collect();
    let ring = Ring::new(servers(10), Flavor::Libmemcached).expect("ring");
    let mut g = c.benchmark_group("route_100_keys");
    g.bench_function("one_by_one", |b| {
        b.iter(|| {
            let mut sum = 0usize;
            for k in &refs {
                sum = sum.wrapping_add(ring.route(black_box(k)).unwrap_or(0));
            }
            black_box(sum)
        })
    });
    g.bench_function("route_each", |b| {
        b.iter(|| {
            let mut sum = 0usize;
            ring.route_each(black_box(&refs), |_, s| sum = sum.wrapping_add(s));
            black_box(sum)
        })
    });
    g.finish();
}

/// 100, 1,000 and 10,000 servers (16 k, 160 k and 1.6 M points): a lookup reads two cache lines
/// whatever the size, so the 10,000-server row should stay within 1.5× of the 1,000-server one.
/// Prints each ring's points and bytes per server (`Ring::continuum_bytes`) once.
fn scale(c: &mut Criterion) {
    let keys: Vec<String> = (0..10_000).map(|i| format!("user:{i}")).collect();
    let sizes = [100, 1000, 10_000];
    let mut g = c.benchmark_group("route_scale");
    for n in sizes {
        let ring = Ring::new(servers(n), Flavor::Libmemcached).expect("ring");
        eprintln!(
            "ring_scale: {n} servers, {} points, {:.0} bytes/server",
            ring.len(),
            ring.continuum_bytes() as f64 / n as f64
        );
        g.bench_with_input(BenchmarkId::new("libmemcached", n), &ring, |b, ring| {
            let mut i = 0;
            b.iter(|| {
                i = if i + 1 == keys.len() { 0 } else { i + 1 };
                black_box(ring.route(black_box(keys[i].as_bytes())))
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("build_scale");
    g.sample_size(10);
    for n in sizes {
        let list = servers(n);
        g.bench_with_input(BenchmarkId::new("libmemcached", n), &list, |b, list| {
            b.iter(|| Ring::new(black_box(list.clone()), Flavor::Libmemcached).expect("ring"))
        });
    }
    g.finish();
}

criterion_group!(benches, route, build, route_batch, scale);
criterion_main!(benches);
