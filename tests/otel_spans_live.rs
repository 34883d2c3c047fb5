//! The spans of commands as an OpenTelemetry backend receives them: exported through
//! `tracing-opentelemetry` into the SDK's in-memory exporter, from both clients against real
//! memcached servers (features `tracing` and `async`).

mod common;

use common::servers::{Memcached, free_port, require};
use memshard::{Expiry, TraceKeys};
use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use tracing_subscriber::layer::SubscriberExt;

/// This test's loopback addresses: 127.0.43.1 to .3 for the servers, .9 for nothing.
fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 43, last)
}

/// The spans `f` made, in the order they ended.
fn spans_of(f: impl FnOnce()) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("otel_spans_live"));
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, f);
    provider.force_flush().expect("flush");
    exporter.get_finished_spans().expect("spans")
}

/// A span's attributes as text.
fn attrs(s: &SpanData) -> HashMap<String, String> {
    s.attributes
        .iter()
        .map(|kv| (kv.key.as_str().to_string(), kv.value.to_string()))
        .collect()
}

/// The one span of a single-key command: a client span named `op`, without a parent, to
/// `server`, with the database attributes and `extra`.
fn one(spans: &[SpanData], op: &str, server: &Memcached, extra: &[(&str, &str)]) {
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let s = &spans[0];
    assert_eq!(s.name, op);
    assert_eq!(s.span_kind, SpanKind::Client);
    assert_eq!(s.parent_span_id, SpanId::INVALID, "{op}: no parent");
    assert_eq!(s.status, Status::Unset, "{op}");
    let a = attrs(s);
    assert_eq!(a["db.system.name"], "memcached");
    assert_eq!(a["db.operation.name"], op);
    assert_eq!(a["server.address"], server.ip.to_string());
    assert_eq!(a["server.port"], server.port.to_string());
    assert!(!a.contains_key("error.type"), "{a:?}");
    assert!(!a.contains_key("db.operation.batch.size"), "{a:?}");
    for (k, v) in extra {
        assert_eq!(
            a.get(*k).map(String::as_str),
            Some(*v),
            "{op}: {k} in {a:?}"
        );
    }
}

/// A multi-key command's spans: the parent named `op`, and one child per server of `homes`
/// (`ip:port` to the number of the command's keys that live there), each the parent's child
/// and counting that server's keys; returns the parent's attributes.
fn family(spans: &[SpanData], op: &str, homes: &HashMap<String, usize>) -> HashMap<String, String> {
    let keys: usize = homes.values().sum();
    let parents: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id == SpanId::INVALID)
        .collect();
    let summary: Vec<_> = spans
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                s.span_context.span_id(),
                s.parent_span_id,
                attrs(s).get("server.port").cloned(),
            )
        })
        .collect();
    assert_eq!(parents.len(), 1, "{op}: one parent in {summary:?}");
    let parent = parents[0];
    assert_eq!(parent.name, op);
    assert_eq!(parent.span_kind, SpanKind::Client);
    let pa = attrs(parent);
    assert_eq!(pa["db.system.name"], "memcached");
    assert_eq!(pa["db.operation.name"], op);
    assert_eq!(pa["db.operation.batch.size"], keys.to_string());
    assert_eq!(pa["db.memcached.key_count"], keys.to_string());
    assert!(
        !pa.contains_key("server.address"),
        "the command has no one server: {pa:?}"
    );
    let children: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id != SpanId::INVALID)
        .collect();
    assert_eq!(
        children.len(),
        homes.len(),
        "{op}: a child per server in {summary:?}"
    );
    let mut seen = HashMap::new();
    for c in &children {
        assert_eq!(
            c.parent_span_id,
            parent.span_context.span_id(),
            "{op}: child of the command"
        );
        assert_eq!(c.span_context.trace_id(), parent.span_context.trace_id());
        assert_eq!(c.name, op);
        assert_eq!(c.span_kind, SpanKind::Client);
        let ca = attrs(c);
        assert_eq!(ca["db.operation.name"], op);
        let count = ca["db.memcached.key_count"].parse::<usize>().unwrap();
        seen.insert(
            format!("{}:{}", ca["server.address"], ca["server.port"]),
            count,
        );
    }
    assert_eq!(&seen, homes, "{op}: a child for each server, with its keys");
    pa
}

/// Where each of `keys` lives, as `family` wants it: a stored key is looked up on the
/// servers themselves, a missing one (`misses`) on the ring.
fn homes(
    servers: &[Memcached],
    ring: &memshard::Ring,
    stored: &[String],
    misses: &[String],
) -> HashMap<String, usize> {
    let mut homes = HashMap::new();
    for k in stored {
        *homes.entry(owner(servers, k).addr()).or_default() += 1;
    }
    for k in misses {
        let addr = &ring.server_for(k.as_bytes()).expect("a server").addr;
        *homes.entry(addr.to_string()).or_default() += 1;
    }
    homes
}

/// The failed command's span: error status and `error.type`.
fn failed(s: &SpanData, kind: &str) {
    assert!(matches!(s.status, Status::Error { .. }), "{:?}", s.status);
    assert_eq!(
        attrs(s).get("error.type").map(String::as_str),
        Some(kind),
        "{s:#?}"
    );
}

#[test]
fn commands_export_as_opentelemetry_database_client_spans() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (1..=3).map(|i| Memcached::start(ip(i), 0, "")).collect();
    let list: String = servers.iter().map(|s| s.addr() + "\n").collect();
    let closed = format!("{}:{}", ip(9), free_port(ip(9)));
    blocking(&servers, &list, &closed);
    nonblocking(&servers, &list, &closed);
}

/// The server `key` lives on (read back from the servers themselves).
fn owner<'a>(servers: &'a [Memcached], key: &str) -> &'a Memcached {
    let on: Vec<_> = servers
        .iter()
        .filter(|s| s.raw_get(key.as_bytes()).is_some())
        .collect();
    assert_eq!(on.len(), 1, "{key} on one server");
    on[0]
}

fn blocking(servers: &[Memcached], list: &str, closed: &str) {
    let client = memshard::Client::builder()
        .server_list(list)
        .unwrap()
        .trace_keys(TraceKeys::Full)
        .build()
        .unwrap();
    let spans = spans_of(|| {
        client.set("otel:b:a", "v", Expiry::NEVER).unwrap();
    });
    let home = owner(servers, "otel:b:a");
    one(
        &spans,
        "set",
        home,
        &[
            ("db.query.text", "set otel:b:a"),
            ("db.memcached.key_count", "1"),
        ],
    );

    let spans = spans_of(|| assert!(client.get("otel:b:a").unwrap().is_some()));
    let hit = [
        ("db.memcached.hit_count", "1"),
        ("db.memcached.miss_count", "0"),
    ];
    one(&spans, "get", home, &hit);
    let spans = spans_of(|| assert!(client.get("otel:b:none").unwrap().is_none()));
    let miss = [
        ("db.memcached.hit_count", "0"),
        ("db.memcached.miss_count", "1"),
    ];
    one(
        &spans,
        "get",
        owner_of_none(servers, &client, "otel:b:none"),
        &miss,
    );

    let keys: Vec<String> = (0..30).map(|i| format!("otel:b:{i}")).collect();
    let items: Vec<(&String, &str)> = keys.iter().map(|k| (k, "v")).collect();
    let spans = spans_of(|| {
        assert!(
            client
                .set_multi(&items[..20], 0, Expiry::NEVER)
                .iter()
                .all(Result::is_ok)
        )
    });
    let ring = client.ring();
    family(
        &spans,
        "set_multi",
        &homes(servers, &ring, &keys[..20], &[]),
    );
    let spans = spans_of(|| assert_eq!(client.get_multi(&keys).len(), 30));
    let all = homes(servers, &ring, &keys[..20], &keys[20..]);
    let pa = family(&spans, "get_multi", &all);
    assert_eq!(pa["db.memcached.hit_count"], "20");
    assert_eq!(pa["db.memcached.miss_count"], "10");
    assert_eq!(
        pa["db.query.text"],
        "get_multi otel:b:0 otel:b:1 otel:b:2 otel:b:3 … (+26 more)"
    );

    // a server that is not there: the request fails, and its span says so
    let down = memshard::Client::builder()
        .server_list(closed)
        .unwrap()
        .build()
        .unwrap();
    let spans = spans_of(|| assert!(down.get("otel:b:a").is_err()));
    assert_eq!(spans.len(), 1);
    failed(&spans[0], "io");
}

fn owner_of_none<'a>(
    servers: &'a [Memcached],
    client: &memshard::Client,
    key: &str,
) -> &'a Memcached {
    let ring = client.ring();
    let addr = &ring.server_for(key.as_bytes()).expect("a server").addr;
    servers
        .iter()
        .find(|s| &s.addr() == addr)
        .expect("a server of the list")
}

fn nonblocking(servers: &[Memcached], list: &str, closed: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _in_runtime = rt.enter();
    let client = memshard::aio::Client::builder()
        .server_list(list)
        .unwrap()
        .trace_keys(TraceKeys::Hashed)
        .build()
        .unwrap();
    let spans = spans_of(|| {
        rt.block_on(client.set("otel:a:a", "v", Expiry::NEVER))
            .unwrap();
    });
    let home = owner(servers, "otel:a:a");
    one(&spans, "set", home, &[("db.memcached.key_count", "1")]);
    let text = attrs(&spans[0])["db.query.text"].clone();
    assert!(
        text.starts_with("set #") && !text.contains("otel"),
        "{text}"
    );

    let spans = spans_of(|| assert!(rt.block_on(client.get("otel:a:a")).unwrap().is_some()));
    let hit = [
        ("db.memcached.hit_count", "1"),
        ("db.memcached.miss_count", "0"),
    ];
    one(&spans, "get", home, &hit);
    assert_eq!(
        attrs(&spans[0])["db.query.text"],
        text.replacen("set", "get", 1),
        "stable hash"
    );

    let keys: Vec<String> = (0..30).map(|i| format!("otel:a:{i}")).collect();
    let items: Vec<(&String, &str)> = keys.iter().map(|k| (k, "v")).collect();
    let spans = spans_of(|| {
        let stored = rt.block_on(client.set_multi(&items[..20], 0, Expiry::NEVER));
        assert!(stored.iter().all(Result::is_ok));
    });
    let ring = client.ring();
    family(
        &spans,
        "set_multi",
        &homes(servers, &ring, &keys[..20], &[]),
    );
    let spans = spans_of(|| assert_eq!(rt.block_on(client.get_multi(&keys)).len(), 30));
    let all = homes(servers, &ring, &keys[..20], &keys[20..]);
    let pa = family(&spans, "get_multi", &all);
    assert_eq!(pa["db.memcached.hit_count"], "20");
    assert_eq!(pa["db.memcached.miss_count"], "10");

    let down = memshard::aio::Client::builder()
        .server_list(closed)
        .unwrap()
        .build()
        .unwrap();
    let spans = spans_of(|| assert!(rt.block_on(down.get("otel:a:a")).is_err()));
    assert_eq!(spans.len(), 1);
    failed(&spans[0], "io");
}
