//! Routes between pools on the command line, against real memcached on 127.0.19.x (no other
//! test binary uses those addresses): `--warm-from`, `--route FILE`, `bench` through a route
//! and `plan --migrate`, cross-checked against the library's placement.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::TempFile;
use common::servers::{Memcached, require};
use memshard::{Flavor, KeyHash, Ring};
use std::net::Ipv4Addr;
use std::process::Output;
use support::memshard_in as memshard;

/// Servers on 127.0.19.`first`.. (free ports).
fn servers(first: u8, n: u8) -> Vec<Memcached> {
    (first..first + n)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 19, i), 0, ""))
        .collect()
}

fn list(servers: &[Memcached]) -> String {
    servers
        .iter()
        .map(|s| format!("{} 1\n", s.addr()))
        .collect()
}

fn ok(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}: {err}");
    err
}

fn by_addr<'a>(servers: &'a [Memcached], addr: &str) -> &'a Memcached {
    servers
        .iter()
        .find(|s| s.addr() == addr)
        .unwrap_or_else(|| panic!("no server {addr}"))
}

const OLD_RING: [&str; 4] = ["--flavor", "twemproxy", "--hash", "fnv1a_64"];
const NEW_RING: [&str; 4] = ["--flavor", "libmemcached", "--hash", "md5"];

/// A twemproxy fnv1a_64 ring switched to an md5 libmemcached ring over 4 servers plus a fifth:
/// a cold get misses every moved key, `get --warm-from` finds them all and copies each into
/// its new owner (read raw), `plan --migrate` counts the same keys, and writes and deletes
/// through the route reach both copies.
#[test]
fn warm_from_reads_the_old_ring_and_backfills_the_new_one() {
    if !require("memcached") {
        return;
    }
    let s = servers(1, 5);
    let old_file = TempFile::new("old.txt", &list(&s[..4]));
    let new_file = TempFile::new("new.txt", &list(&s));
    let (old, new) = (old_file.path(), new_file.path());
    let keys: Vec<String> = (0..400).map(|i| format!("user:{i}")).collect();
    let lines: String = keys.iter().map(|k| format!("{k}\tv-{k}\n")).collect();
    let mut a = vec!["set", "--servers", old];
    a.extend(OLD_RING);
    ok(&memshard(&a, lines.as_bytes()), "set through the old ring");

    // the library's placement: which keys change copy
    let ring = |text: &str, f, h| {
        Ring::with_options(
            memshard::parse_server_list(text).expect("list"),
            f,
            Some(h),
            None,
        )
        .expect("ring")
    };
    let old_ring = ring(&list(&s[..4]), Flavor::Twemproxy, KeyHash::Fnv1a_64);
    let new_ring = ring(&list(&s), Flavor::Libmemcached, KeyHash::Md5);
    let owner = |r: &Ring, k: &str| r.server_for(k.as_bytes()).expect("owner").addr.clone();
    let moved: Vec<&String> = keys
        .iter()
        .filter(|k| owner(&old_ring, k) != owner(&new_ring, k))
        .collect();
    assert!(
        moved.len() > 200,
        "a hash switch moves most keys: {}",
        moved.len()
    );

    // plan --migrate on these keys says the same
    let key_file = TempFile::new("keys.txt", &(keys.join("\n") + "\n"));
    let mut a = vec!["plan", "--migrate", "--servers", new];
    a.extend(NEW_RING);
    a.extend([
        "--warm-from",
        old,
        "--warm-from-flavor",
        "twemproxy",
        "--warm-from-hash",
        "fnv1a_64",
        "--key-file",
        key_file.path(),
        "--json",
    ]);
    let out = memshard(&a, b"");
    ok(&out, "plan --migrate");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    let n = moved.len() as u64;
    assert_eq!(plan["keys"], 400);
    assert_eq!(plan["moved"], n);
    assert_eq!(plan["cold_misses"], n);
    assert_eq!(plan["warm_misses"], 0);
    assert_eq!(
        (plan["fallback_reads"].clone(), plan["backfills"].clone()),
        (n.into(), n.into())
    );
    let fifth = plan["backfills_by_server"][4].clone();
    assert_eq!(fifth["addr"], s[4].addr());
    let on_fifth = keys
        .iter()
        .filter(|k| owner(&new_ring, k) == s[4].addr())
        .count();
    assert_eq!(fifth["keys"], on_fifth as u64);
    let mut a = vec!["plan", "--migrate", "--servers", new];
    a.extend(NEW_RING);
    a.extend([
        "--warm-from",
        old,
        "--warm-from-flavor",
        "twemproxy",
        "--warm-from-hash",
        "fnv1a_64",
        "--key-file",
        key_file.path(),
    ]);
    let text = String::from_utf8(memshard(&a, b"").stdout).expect("utf-8");
    assert!(
        text.contains(&format!("cold switch:     {n:>10} misses (")),
        "{text}"
    );

    // a cold switch: the moved keys miss
    let mut a = vec!["get", "--servers", new];
    a.extend(NEW_RING);
    let err = ok(
        &memshard(&a, (keys.join("\n") + "\n").as_bytes()),
        "cold get",
    );
    assert!(
        err.contains(&format!("{} hits, {n} misses", 400 - n)),
        "cold switch: {err}"
    );

    // through the warm-up route: every key, and each moved one copied to its new owner
    let mut a = vec!["get", "--servers", new];
    a.extend(NEW_RING);
    let warm = [
        "--warm-from",
        old,
        "--warm-from-flavor",
        "twemproxy",
        "--warm-from-hash",
        "fnv1a_64",
    ];
    a.extend(warm);
    let out = memshard(&a, (keys.join("\n") + "\n").as_bytes());
    let err = ok(&out, "warm get");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        lines,
        "every value, in input order"
    );
    assert!(err.contains("400 hits, 0 misses"), "{err}");
    assert!(
        err.contains(&format!(
            "route warm_up: fallback_reads={n} fallback_hits={n} fallback_errors=0 backfills={n} "
        )),
        "{err}"
    );
    for k in &moved {
        let home = by_addr(&s, &owner(&new_ring, k));
        assert_eq!(
            home.raw_get(k.as_bytes()).as_deref(),
            Some(format!("v-{k}").as_bytes()),
            "{k} backfilled on {}",
            home.addr()
        );
    }
    // now warm: no fallback
    let err = ok(
        &memshard(&a, (keys.join("\n") + "\n").as_bytes()),
        "second warm get",
    );
    assert!(
        err.contains("fallback_reads=0 ") && err.contains("backfills=0 "),
        "{err}"
    );

    // set and delete through the route reach both copies
    let k = moved[0];
    let mut set = vec!["set", "--servers", new];
    set.extend(NEW_RING);
    set.extend(warm);
    set.extend([k.as_str(), "fresh"]);
    ok(&memshard(&set, b""), "set through the route");
    let (o, nw) = (
        by_addr(&s, &owner(&old_ring, k)),
        by_addr(&s, &owner(&new_ring, k)),
    );
    assert_eq!(
        o.raw_get(k.as_bytes()).as_deref(),
        Some(&b"fresh"[..]),
        "old copy"
    );
    assert_eq!(
        nw.raw_get(k.as_bytes()).as_deref(),
        Some(&b"fresh"[..]),
        "new copy"
    );
    let mut del = vec!["delete", "--servers", new];
    del.extend(NEW_RING);
    del.extend(warm);
    del.push(k.as_str());
    let err = ok(&memshard(&del, b""), "delete through the route");
    assert!(err.contains("1 deleted"), "{err}");
    assert_eq!(o.raw_get(k.as_bytes()), None, "old copy deleted");
    assert_eq!(nw.raw_get(k.as_bytes()), None, "new copy deleted");
}

/// `--route FILE` for get and bench, and a bad route file named in the error.
#[test]
fn route_file_drives_get_and_bench() {
    if !require("memcached") {
        return;
    }
    let s = servers(11, 3);
    let quoted = |v: &[Memcached]| {
        v.iter()
            .map(|m| format!("\"{}\"", m.addr()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let yaml = format!(
        "route: warm_up\nbackfill_ttl: 600\nnew: {{ servers: [{}], flavor: libmemcached, hash: md5 }}\nold: {{ servers: [{}], flavor: twemproxy, hash: fnv1a_64 }}\n",
        quoted(&s),
        quoted(&s[..2])
    );
    let file = TempFile::new("route.yml", &yaml);
    let old = TempFile::new("old.txt", &list(&s[..2]));
    let lines: String = (0..100).map(|i| format!("k:{i}\tv{i}\n")).collect();
    let mut a = vec!["set", "--servers", old.path()];
    a.extend(OLD_RING);
    ok(&memshard(&a, lines.as_bytes()), "set through the old ring");
    let keys: String = (0..100).map(|i| format!("k:{i}\n")).collect();
    let out = memshard(&["get", "--route", file.path()], keys.as_bytes());
    let err = ok(&out, "get --route");
    assert_eq!(String::from_utf8_lossy(&out.stdout), lines);
    assert!(
        err.contains("100 hits, 0 misses") && err.contains("route warm_up:"),
        "{err}"
    );
    assert!(!err.contains("backfills=0 "), "some keys moved: {err}");

    let out = memshard(
        &[
            "bench",
            "--route",
            file.path(),
            "--ops",
            "3000",
            "--threads",
            "2",
            "--keys",
            "200",
            "--verify",
        ],
        b"",
    );
    ok(&out, "bench --route");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("through route warm_up"), "{report}");
    assert!(report.contains("wrong values: 0"), "{report}");
    assert!(
        report.contains("route warm_up: fallback_reads="),
        "{report}"
    );

    let bad = TempFile::new(
        "bad.yml",
        "route: warm_up\nnew: { servers: [\"127.0.19.11:1\"] }\nold: { servers: [\"127.0.19.12:1\"] }\n",
    );
    let out = memshard(&["get", "--route", bad.path(), "k"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(bad.path()) && err.contains("`backfill_ttl`"),
        "{err}"
    );
    let out = memshard(
        &["get", "--route", file.path(), "--servers", old.path(), "k"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "--route replaces --servers");
}

/// Route flags that would do nothing are refused, not ignored: `--auto-eject` with a gutter
/// route (the gutter exists so that nothing is rehashed), `--warm-backfill-ttl` without
/// `--warm-from`. Nothing is sent: the addresses listen nowhere.
#[test]
fn route_flags_that_would_do_nothing_are_refused() {
    let gutter = TempFile::new(
        "gutter.yml",
        "route: gutter\nttl: 30\nmain: { servers: [\"127.0.19.200:1\"] }\ngutter: { servers: [\"127.0.19.201:1\"] }\n",
    );
    let out = memshard(&["get", "--route", gutter.path(), "--auto-eject", "k"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--auto-eject with a gutter route"), "{err}");

    let list = TempFile::new("new.txt", "127.0.19.200:1\n");
    let out = memshard(
        &[
            "get",
            "--servers",
            list.path(),
            "--warm-backfill-ttl",
            "60",
            "k",
        ],
        b"",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--warm-from"), "{err}");
}

/// A composed route file (a prefix selector whose `session:` keys are replicated over two
/// zones, the rest on one pool) drives set, get, delete and bench; each key lands where the
/// route says (read raw from each server).
#[test]
fn a_composed_route_file_drives_set_get_delete_and_bench() {
    if !require("memcached") {
        return;
    }
    let s = servers(21, 3);
    let yaml = format!(
        r#"pools:
  east: {{ servers: ["{}"] }}
  west: {{ servers: ["{}"] }}
  rest: {{ servers: ["{}"] }}
route:
  policy: prefix
  prefixes:
    "session:":
      policy: zones
      local: east
      ack: all
      zones: {{ east: east, west: west }}
  default: rest
"#,
        s[0].addr(),
        s[1].addr(),
        s[2].addr()
    );
    let file = TempFile::new("composed.yml", &yaml);
    let lines = "session:1\ts1\nsession:2\ts2\nuser:1\tu1\n";
    let out = memshard(&["set", "--route", file.path()], lines.as_bytes());
    let err = ok(&out, "set --route");
    assert!(err.contains("route prefix:"), "{err}");
    assert_eq!(s[0].raw_get(b"session:1").as_deref(), Some(&b"s1"[..]));
    assert_eq!(s[1].raw_get(b"session:2").as_deref(), Some(&b"s2"[..]));
    assert_eq!(s[2].raw_get(b"user:1").as_deref(), Some(&b"u1"[..]));
    assert_eq!(s[2].raw_get(b"session:1"), None);
    assert_eq!(s[0].raw_get(b"user:1"), None);

    let out = memshard(
        &["get", "--route", file.path()],
        b"session:1\nsession:2\nuser:1\n",
    );
    let err = ok(&out, "get --route");
    assert_eq!(String::from_utf8_lossy(&out.stdout), lines);
    assert!(
        err.contains("3 hits, 0 misses") && err.contains("prefix_defaults=1 "),
        "{err}"
    );

    let out = memshard(&["delete", "--route", file.path(), "session:1"], b"");
    ok(&out, "delete --route");
    assert_eq!(s[0].raw_get(b"session:1"), None);
    assert_eq!(s[1].raw_get(b"session:1"), None, "deleted in every zone");

    let out = memshard(
        &[
            "bench",
            "--route",
            file.path(),
            "--ops",
            "2000",
            "--threads",
            "2",
            "--keys",
            "100",
            "--verify",
        ],
        b"",
    );
    ok(&out, "bench --route");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("through route prefix"), "{report}");
    assert!(report.contains("wrong values: 0"), "{report}");

    let bad = TempFile::new(
        "unused.yml",
        &format!(
            "pools:\n  a: {{ servers: [\"{}\"] }}\n  b: {{ servers: [\"{}\"] }}\nroute: a\n",
            s[0].addr(),
            s[1].addr()
        ),
    );
    let out = memshard(&["get", "--route", bad.path(), "k"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pool \"b\" is not used by the route"), "{err}");
}
