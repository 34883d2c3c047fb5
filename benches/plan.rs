//! The planner on 1,000,000 keys (10 -> 11 servers, every method), as `memshard plan` runs it.

use criterion::{Criterion, criterion_group, criterion_main};
use memshard::plan::{Keys, RingChoice, plan};
use memshard::{Flavor, Server};
use std::hint::black_box;
use std::sync::atomic::AtomicU64;

fn plan_1m(c: &mut Criterion) {
    let before: Vec<Server> = (0..10)
        .map(|i| Server::new(format!("10.0.0.{}", i + 1), 11211))
        .collect();
    let mut after = before.clone();
    after.push(Server::new("10.0.0.11", 11211));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let choice = RingChoice {
        flavor: Flavor::Libmemcached,
        hash: None,
        tag: None,
    };
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    g.bench_function(format!("1M_keys_10_to_11_servers_{threads}_threads"), |b| {
        b.iter(|| {
            black_box(
                plan(
                    &before,
                    &after,
                    choice,
                    &Keys::Synthetic(1_000_000),
                    threads,
                    &AtomicU64::new(0),
                )
                .expect("plan"),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, plan_1m);
criterion_main!(benches);
