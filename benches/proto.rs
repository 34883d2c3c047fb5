//! Request encoding and reply parsing: pure functions over bytes.

use criterion::{Criterion, criterion_group, criterion_main};
use memshard::proto::{Request, StoreCommand, parse_reply, parse_retrieval};
use std::hint::black_box;

fn proto(c: &mut Criterion) {
    let value = vec![b'v'; 100];
    let mut buf = Vec::with_capacity(256);
    c.bench_function("encode/set_100B", |b| {
        b.iter(|| {
            buf.clear();
            Request::Store {
                cmd: StoreCommand::Set,
                key: b"user:12345",
                flags: 0,
                exptime: 0,
                value: &value,
                noreply: false,
            }
            .encode(&mut buf);
            black_box(buf.len())
        })
    });
    let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("user:{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    c.bench_function("encode/get_100_keys", |b| {
        b.iter(|| {
            buf.clear();
            Request::Get {
                keys: &refs,
                cas: false,
            }
            .encode(&mut buf);
            black_box(buf.len())
        })
    });
    let mut reply = b"VALUE user:12345 0 100\r\n".to_vec();
    reply.extend_from_slice(&value);
    reply.extend_from_slice(b"\r\nEND\r\n");
    c.bench_function("parse/value_100B", |b| {
        b.iter(|| black_box(parse_retrieval(black_box(&reply), 1 << 20)))
    });
    c.bench_function("parse/stored", |b| {
        b.iter(|| black_box(parse_reply(black_box(b"STORED\r\n"))))
    });
}

criterion_group!(benches, proto);
criterion_main!(benches);
