//! `--peer` and `--peer-option` on the command line, and the tag audit following the flavor:
//! no servers needed (`route` and `plan` place keys without connecting).

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::TempDir;

fn dir(what: &str) -> TempDir {
    TempDir::new(&format!("peer-cli-{what}"))
}

/// Exit code, standard output, standard error.
fn memshard(args: &[&str]) -> (i32, String, String) {
    support::parts(&support::memshard(args))
}

const SERVERS: &str = "127.0.0.1:21001\n127.0.0.1:21002\n127.0.0.1:21003\n127.0.0.1:21004\n";

fn keys() -> Vec<String> {
    (0..300).map(|i| format!("user:{i}")).collect()
}

fn route(list: &str, extra: &[&str]) -> String {
    let mut args = vec!["route", "--servers", list];
    args.extend_from_slice(extra);
    let keys = keys();
    args.extend(keys.iter().map(String::as_str));
    let (code, out, err) = memshard(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// `--peer NAME` places as that peer at its defaults; its options as the peer spells them.
#[test]
fn a_peer_places_as_its_defaults_and_its_options_say() {
    let dir = dir("route");
    let list = dir.file("servers.txt", SERVERS);
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--peer", "php-memcached"],
            &["--flavor", "libmemcached-modula"],
        ),
        (&["--peer", "pylibmc"], &["--flavor", "libmemcached-modula"]),
        (
            &["--peer", "spymemcached"],
            &["--flavor", "spymemcached-modula"],
        ),
        (
            &["--peer", "aws-java"],
            &["--flavor", "spymemcached-modula"],
        ),
        (&["--peer", "gomemcache"], &["--flavor", "gomemcache"]),
        (&["--peer", "pymemcache"], &["--flavor", "pymemcache"]),
        (&["--peer", "dalli"], &["--flavor", "dalli"]),
        (
            &[
                "--peer",
                "php-memcached",
                "--peer-option",
                "OPT_LIBKETAMA_COMPATIBLE=true",
            ],
            &["--flavor", "libmemcached"],
        ),
        (
            &["--peer", "pylibmc", "--peer-option", "ketama=true"],
            &["--flavor", "libmemcached-unweighted"],
        ),
        (
            &[
                "--peer",
                "spymemcached",
                "--peer-option",
                "ConnectionFactory=KetamaConnectionFactory",
            ],
            &["--flavor", "spymemcached"],
        ),
    ];
    for (peer, flavor) in cases {
        assert_eq!(
            route(&list, peer),
            route(&list, flavor),
            "{peer:?} vs {flavor:?}"
        );
    }
    // The defaults are not the ketama mode: most keys differ.
    let modula = route(&list, &["--peer", "php-memcached"]);
    let ketama = route(&list, &["--flavor", "libmemcached"]);
    let same = modula
        .lines()
        .zip(ketama.lines())
        .filter(|(a, b)| a == b)
        .count();
    assert!(same < 200, "{same} of 300 keys agree");
    // dalli's namespace is hashed with the key (as dalli's ring does).
    let plain = route(&list, &["--peer", "dalli"]);
    let spaced = route(
        &list,
        &["--peer", "dalli", "--peer-option", "namespace=app"],
    );
    assert_ne!(plain, spaced);
}

/// An explicit --flavor, --hash or --codec with --peer is an error, as are unknown options.
#[test]
fn conflicts_and_unknown_options_are_refused() {
    let dir = dir("conflicts");
    let list = dir.file("servers.txt", SERVERS);
    for extra in [&["--flavor", "libmemcached"][..], &["--hash", "md5"]] {
        let mut args = vec!["route", "--servers", &list, "--peer", "php-memcached"];
        args.extend_from_slice(extra);
        args.push("k");
        let (code, _, err) = memshard(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("--peer"), "{err}");
    }
    let (code, _, err) = memshard(&[
        "get",
        "--servers",
        &list,
        "--peer",
        "php-memcached",
        "--codec",
        "raw",
        "k",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--peer sets the codec"), "{err}");
    let (code, _, err) = memshard(&[
        "route",
        "--servers",
        &list,
        "--peer",
        "php-memcached",
        "--peer-option",
        "OPT_KETAMA=1",
        "k",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("OPT_LIBKETAMA_COMPATIBLE"), "{err}");
    let (code, _, err) = memshard(&["route", "--servers", &list, "--peer", "memcache", "k"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("php-memcached"), "{err}");
    // Options that change nothing are accepted.
    let same = route(
        &list,
        &[
            "--peer",
            "php-memcached",
            "--peer-option",
            "OPT_BINARY_PROTOCOL=true",
        ],
    );
    assert_eq!(same, route(&list, &["--peer", "php-memcached"]));
}

/// The aliases keep their meaning and say so, once per run.
#[test]
fn the_peer_named_flavors_warn_once() {
    let dir = dir("alias");
    let list = dir.file("servers.txt", SERVERS);
    for (alias, option) in [
        ("php-memcached", "OPT_LIBKETAMA_COMPATIBLE"),
        ("pylibmc", "ketama_weighted"),
    ] {
        let (code, out, err) =
            memshard(&["route", "--servers", &list, "--flavor", alias, "a", "b"]);
        assert_eq!(code, 0, "{err}");
        let (_, ketama, _) = memshard(&[
            "route",
            "--servers",
            &list,
            "--flavor",
            "libmemcached",
            "a",
            "b",
        ]);
        assert_eq!(out, ketama);
        assert_eq!(
            err.lines().filter(|l| l.contains("warning")).count(),
            1,
            "{err}"
        );
        for needle in [
            "ketama mode",
            option,
            "libmemcached-modula",
            &format!("--peer {alias}"),
        ] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }
    let (_, _, err) = memshard(&["route", "--servers", &list, "--flavor", "libmemcached", "a"]);
    assert!(!err.contains("warning"), "{err}");
}

/// No hash tag unless one is given or the flavor's peer applies one: a php-memcached setup
/// has no pile-up to report; twemproxy with `hash_tag: "{}"` has the real one.
#[test]
fn the_tag_audit_follows_the_flavor() {
    let dir = dir("tags");
    let mut keys = String::new();
    for i in 0..6_000 {
        keys.push_str(&format!("order:{{acme}}:{i}\n"));
    }
    for i in 0..4_000 {
        keys.push_str(&format!("plain:{i}\n"));
    }
    let key_file = dir.file("keys.txt", &keys);
    let list = dir.file("servers.txt", SERVERS);
    let (code, out, err) = memshard(&[
        "plan",
        "--servers",
        &list,
        "--peer",
        "php-memcached",
        "--tag-audit",
        "--key-file",
        &key_file,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no hash tag"), "{out}");
    assert!(!out.contains("WARNING"), "{out}");
    let yml = dir.file(
        "nutcracker.yml",
        "alpha:\n  listen: 127.0.0.1:22121\n  hash: md5\n  distribution: ketama\n  \
         hash_tag: \"{}\"\n  servers:\n   - 127.0.0.1:21001:1\n   - 127.0.0.1:21002:1\n   \
         - 127.0.0.1:21003:1\n   - 127.0.0.1:21004:1\n",
    );
    let (code, out, err) = memshard(&[
        "plan",
        "--twemproxy-config",
        &yml,
        "--tag-audit",
        "--key-file",
        &key_file,
    ]);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("WARNING: tag"))
        .collect();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(warnings[0].contains("\"acme\""), "{out}");
}
