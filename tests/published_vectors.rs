//! Every published upstream vector in compat-vectors/published (see its README for sources and licences).
//! A missing folder fails loudly (tests/common).

mod common;

use memshard::{Flavor, KeyHash, Ring, Server, parse_server_list};
use std::collections::HashMap;

fn ring(flavor: Flavor, servers: Vec<Server>) -> Ring {
    Ring::new(servers, flavor).expect("ring")
}

/// Rows of a TSV with a header line.
fn tsv(rel: &str) -> Vec<Vec<String>> {
    common::published_text(rel)
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn libmemcached_servers() -> Vec<Server> {
    tsv("libmemcached/servers.tsv")
        .iter()
        .map(|r| {
            Server::new(r[0].clone(), r[1].parse().unwrap()).with_weight(r[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn libmemcached_ketama_test_cases() {
    let r = ring(Flavor::Libmemcached, libmemcached_servers());
    let rows = tsv("libmemcached/ketama_test_cases.tsv");
    assert_eq!(rows.len(), 99);
    for row in &rows {
        let key = row[0].as_bytes();
        assert_eq!(r.hash_key(key).to_string(), row[1], "hash1 of {:?}", row[0]);
        assert_eq!(
            r.point_for(key).unwrap().to_string(),
            row[2],
            "hash2 of {:?}",
            row[0]
        );
        assert_eq!(
            r.server_for(key).unwrap().host,
            row[3],
            "server of {:?}",
            row[0]
        );
    }
}

#[test]
fn libmemcached_ketama_test_cases_spy() {
    let r = ring(Flavor::LibmemcachedSpy, libmemcached_servers());
    let rows = tsv("libmemcached/ketama_test_cases_spy.tsv");
    assert_eq!(rows.len(), 99);
    for row in &rows {
        let key = row[0].as_bytes();
        // hash2 is a stale copy upstream (see the README); hash1 and server are real.
        assert_eq!(r.hash_key(key).to_string(), row[1], "hash1 of {:?}", row[0]);
        assert_eq!(
            r.server_for(key).unwrap().host,
            row[3],
            "server of {:?}",
            row[0]
        );
    }
}

#[test]
fn libmemcached_wraparound() {
    let v = common::published_json("libmemcached/extra.json");
    let servers = parse_server_list(v["server_list_string"].as_str().unwrap()).unwrap();
    assert_eq!(
        servers,
        libmemcached_servers()
            .into_iter()
            .map(|mut s| {
                s.addr = format!("{}:{}", s.host, s.port);
                s
            })
            .collect::<Vec<_>>()
    );
    let r = ring(Flavor::Libmemcached, servers);
    let w = &v["wraparound_assertion"];
    let key = w["key"].as_str().unwrap().as_bytes();
    assert_eq!(
        format!("{:08x}", r.hash_key(key)),
        w["key_hash_hex"].as_str().unwrap()
    );
    // past the last point: lands on the smallest point, which is below the key hash
    assert!(r.point_for(key).unwrap() < r.hash_key(key));
}

/// node-hashring's 100,000-key fixtures, made by python libketama, python hash_ring, pylibmc.
fn node_fixture(file: &str, flavor: Flavor, servers: &str) {
    let r = ring(flavor, parse_server_list(servers).unwrap());
    let rows = tsv(&format!("node-hashring/{file}"));
    assert_eq!(rows.len(), 100_000);
    let mut bad = 0;
    for row in &rows {
        if r.server_for(row[0].as_bytes()).unwrap().addr != row[1] {
            bad += 1;
        }
    }
    assert_eq!(bad, 0, "{file}: {bad} of 100000 keys placed differently");
}

#[test]
fn node_hashring_fixture_libketama() {
    node_fixture(
        "ketama.tsv",
        Flavor::Libketama,
        "0.0.0.1\t1\n0.0.0.2\t2\n0.0.0.3\t3\n0.0.0.4\t4\n0.0.0.5\t5\n",
    );
}

#[test]
fn node_hashring_fixture_hash_ring() {
    node_fixture(
        "hash_ring.tsv",
        Flavor::HashRing,
        "0.0.0.1 1\n0.0.0.2 2\n0.0.0.3 3\n0.0.0.4 4\n0.0.0.5 5\n",
    );
}

#[test]
fn node_hashring_fixture_pylibmc() {
    node_fixture(
        "pylibmc.tsv",
        Flavor::Libmemcached,
        "0.0.0.1:11211\n0.0.0.2:11211\n0.0.0.3\n0.0.0.4:11213\n0.0.0.5:11212\n",
    );
}

fn spy_nodes() -> Vec<Server> {
    (1..=8)
        .map(|n| Server::new(format!("10.0.1.{n}"), 11211))
        .collect()
}

#[test]
fn spymemcached_lib_ketama_compat() {
    let r = ring(Flavor::Spymemcached, spy_nodes());
    for (file, n) in [
        ("lib_ketama_compat_two.tsv", 2841),
        ("lib_ketama_compat_three.tsv", 400),
    ] {
        let rows = tsv(&format!("spymemcached/{file}"));
        assert_eq!(rows.len(), n);
        for row in &rows {
            assert_eq!(
                r.server_for(row[0].as_bytes()).unwrap().addr,
                row[1],
                "{file} key {:?}",
                row[0]
            );
        }
    }
    // The same nodes are plain libketama with "ip:port" server strings and equal weights.
    let lk = ring(Flavor::Libketama, spy_nodes());
    for row in tsv("spymemcached/lib_ketama_compat_two.tsv") {
        assert_eq!(lk.server_for(row[0].as_bytes()).unwrap().addr, row[1]);
    }
}

#[test]
fn spymemcached_small_vectors() {
    let v = common::published_json("spymemcached/vectors.json");
    let u = &v["unresolved_4_or_5_nodes"];
    // The tests' node keys are "127.0.0.1:<port>" (pre-JDK-14 toString of unresolved addresses).
    let nodes = |n: u16| -> Vec<Server> {
        (0..n)
            .map(|i| Server::new("127.0.0.1", 10000 + i))
            .collect()
    };
    let r4 = ring(Flavor::Spymemcached, nodes(4));
    let r5 = ring(Flavor::Spymemcached, nodes(5));
    let check = |r: &Ring, table: &serde_json::Value| {
        let table = table.as_object().expect("lookup table");
        assert!(!table.is_empty());
        for (key, want) in table {
            assert_eq!(
                r.route(key.as_bytes()).unwrap() as u64,
                want.as_u64().unwrap(),
                "key {key}"
            );
        }
    };
    check(&r4, &u["lookups_4_nodes"]);
    check(&r5, &u["lookups_5_nodes"]);
    check(&r4, &u["wrap_keys_4_nodes"]);
    check(&r5, &u["lib_ketama_compat_5_nodes"]);

    // LIBMEMCACHED node-key format with weights = libmemcached's own recipe over "localhost".
    let w = &v["weighted_libmemcached_format"];
    let servers = vec![
        Server::new("localhost", 11211).with_weight(8),
        Server::new("localhost", 11212).with_weight(8),
    ];
    let r = ring(Flavor::Libmemcached, servers);
    for (key, want) in w["expected_socket_address_toString"].as_object().unwrap() {
        let port = want.as_str().unwrap().rsplit(':').next().unwrap();
        assert_eq!(
            r.server_for(key.as_bytes()).unwrap().port.to_string(),
            port,
            "key {key}"
        );
    }
}

#[test]
fn libketama_python_tests_and_ketama_test_checksum() {
    use md5::{Digest, Md5};
    let v = common::published_json("libketama/vectors.json");
    let p = &v["python_ketama_tests"];
    let servers = parse_server_list("127.0.0.1:11211\t600\n127.0.0.1:11212\t400\n").unwrap();
    let r = ring(Flavor::Libketama, servers);
    assert_eq!(
        r.point_counts().iter().sum::<u32>() as u64,
        p["num_points"].as_u64().unwrap()
    );
    assert_eq!(
        r.hash_key(b"test") as u64,
        p["hashi"]["test"].as_u64().unwrap()
    );
    let want = &p["get_server"]["test"];
    assert_eq!(
        r.point_for(b"test").unwrap() as u64,
        want[0].as_u64().unwrap()
    );
    assert_eq!(
        r.server_for(b"test").unwrap().addr,
        want[1].as_str().unwrap()
    );

    // ketama_test.c over ketama.servers for keys "0".."999999": md5 of its whole stdout.
    let c = &v["test_sh_output_checksum"];
    let file = common::published_text("libketama/ketama.servers.tsv");
    let servers = parse_server_list(&file.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap();
    let r = ring(Flavor::Libketama, servers);
    let mut out = String::with_capacity(40 << 20);
    out.push('\n');
    for i in 0..1_000_000u32 {
        let k = i.to_string();
        let s = r.server_for(k.as_bytes()).unwrap();
        out.push_str(&format!(
            "{} {} {}\n",
            r.hash_key(k.as_bytes()),
            r.point_for(k.as_bytes()).unwrap(),
            s.addr
        ));
    }
    let got: String = Md5::digest(out.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(got, c["md5_of_entire_stdout"].as_str().unwrap());
}

#[test]
fn uhashring_vectors() {
    let v = common::published_json("uhashring/vectors.json");
    assert_eq!(
        KeyHash::Md5.hash(b"test") as u64,
        v["ketama_hashi"]["test"].as_u64().unwrap()
    );
    let w = &v["weight_fn_distribution"];
    let nodes: Vec<Server> = w["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(n, wt)| {
            Server::new(n.clone(), 11211)
                .with_weight(wt.as_u64().unwrap() as u32)
                .with_name(n.clone())
        })
        .collect();
    let r = ring(Flavor::Uhashring, nodes.clone());
    for (i, s) in nodes.iter().enumerate() {
        let want = w["expected_points_per_node"][s.name.as_deref().unwrap()]
            .as_u64()
            .unwrap();
        assert_eq!(r.point_counts()[i] as u64, want, "{}", s.addr);
    }
    let eq = &v["ring_size_equal_weights"];
    let nodes: Vec<Server> = eq["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| Server::new(n.as_str().unwrap(), 11211).with_name(n.as_str().unwrap()))
        .collect();
    let r = ring(Flavor::Uhashring, nodes);
    assert!(
        r.point_counts()
            .iter()
            .all(|&c| c as u64 == eq["expected_points_per_node"].as_u64().unwrap())
    );

    // Two of the three nodes share one point: the ring holds it once, for the node inserted last.
    let c = &v["collision_nodes"];
    let names: Vec<&str> = c["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let nodes: Vec<Server> = names
        .iter()
        .map(|n| Server::new(*n, 11211).with_name(*n))
        .collect();
    let r = ring(Flavor::Uhashring, nodes);
    let point = c["colliding_point"].as_u64().unwrap() as u32;
    let sharing: Vec<usize> = (0..names.len())
        .filter(|&i| {
            (0..40).any(|k| {
                (0..4).any(|j| md5_point(format!("{}-{k}", names[i]).as_bytes(), j) == point)
            })
        })
        .collect();
    assert!(
        sharing.len() >= 2,
        "the published collision point is shared by {sharing:?}"
    );
    assert_eq!(r.len(), 3 * 160 - (sharing.len() - 1));
    assert_eq!(r.point_counts().iter().sum::<u32>(), 480);

    // libketama compatibility config: same points and placement as python_ketama.
    let lk = &v["libketama_compat_config"];
    let nodes: Vec<Server> = lk["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(n, w)| {
            n.parse::<Server>()
                .unwrap()
                .with_weight(w.as_u64().unwrap() as u32)
        })
        .collect();
    let u = ring(Flavor::Uhashring, nodes.clone());
    let k = ring(Flavor::Libketama, nodes);
    assert_eq!(u.point_counts(), k.point_counts());
    assert_eq!(u.server_for(b"test").unwrap().addr, "127.0.0.1:11211");
}

#[test]
fn go_ketama_vectors() {
    let v = common::published_json("go-ketama/vectors.json");
    let b = &v["basic_compat"];
    let servers: Vec<Server> = b["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p[0].as_str()
                .unwrap()
                .parse::<Server>()
                .unwrap()
                .with_weight(p[1].as_u64().unwrap() as u32)
        })
        .collect();
    let r = ring(Flavor::GoKetama, servers);
    let mut counts: HashMap<String, u64> = HashMap::new();
    for i in 0..100_000 {
        *counts
            .entry(
                r.server_for(format!("foo{i}").as_bytes())
                    .unwrap()
                    .addr
                    .clone(),
            )
            .or_default() += 1;
    }
    for (name, want) in b["expected_counts"].as_object().unwrap() {
        assert_eq!(
            counts.get(name).copied().unwrap_or(0),
            want.as_u64().unwrap(),
            "{name}"
        );
    }
    let z = &v["segfault_keys_hash_zero"];
    let servers: Vec<Server> = z["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p[0].as_str()
                .unwrap()
                .parse::<Server>()
                .unwrap()
                .with_weight(p[1].as_u64().unwrap() as u32)
        })
        .collect();
    let r = ring(Flavor::GoKetama, servers);
    for (hex, want) in z["keys_hex"].as_object().unwrap() {
        let key: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(r.hash_key(&key), 0);
        assert_eq!(r.server_for(&key).unwrap().addr, want.as_str().unwrap());
    }
}

/// Point `i` of the md5 digest of `data`, as every ketama reads it (bytes `4i..4i+3`,
/// little-endian), from the md-5 crate: the vectors are checked against md5 itself, and
/// memshard's own md5 against the same crate in its unit tests.
fn md5_point(data: &[u8], i: usize) -> u32 {
    use md5::{Digest, Md5};
    let d = Md5::digest(data);
    u32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]])
}
