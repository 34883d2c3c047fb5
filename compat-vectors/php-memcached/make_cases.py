#!/usr/bin/env python3
"""php-memcached cases: server lists and keys are chosen here (same generators as ../libmemcached);
every answer comes from php-memcached's Memcached::getServerByKey() via php_route.php.
usage: make_cases.py OUT_CASES_DIR"""
import os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from make_cases import keyset, servers  # noqa: E402

def valid_keys(seed, extra=()):
    return [k for k in keyset(seed, n=1100, extra=extra) if len(k) <= 250][:1000]

CASES = [
    ("n1-single", [("127.0.0.1:11211", 1)], "one server"),
    ("n2-ip-11211", servers(2, 2), ""),
    ("n3-ports-mixed", [("10.0.1.1:11211", 1), ("10.0.1.1:11212", 1), ("10.0.1.2:22122", 1)], "port 11211 dropped from point names"),
    ("n7-equal", servers(7, 7), ""),
    ("n25-equal", servers(25, 25), ""),
    ("n61-equal", servers(61, 61), ""),
    ("n100-equal", servers(100, 100), "100 servers: libmemcached 1.1.4 aborts above 100 in ketama mode"),
    ("n10-random-weights", servers(10, 110, weights="random", ports="mixed"), ""),
    ("n50-random-weights", servers(50, 150, weights="random", ports="mixed"), ""),
    ("extreme-1-vs-1000000", [("10.9.0.1:11211", 1), ("10.9.0.2:11211", 1000000)], "weight 1 vs 1000000"),
    ("weights-21-10-9", [("10.2.0.1:11211", 21), ("10.2.0.2:11211", 10), ("10.2.0.3:11211", 9)], "float trap"),
    ("weights-29-16-15", [("10.2.1.1:11211", 29), ("10.2.1.2:11211", 16), ("10.2.1.3:11211", 15)], "float trap (f32: 57 digests, exact: 58)"),
    ("hostnames", servers(12, 12, hosts="name", ports="mixed", weights="random"), "host names verbatim in point names"),
    ("ipv6", servers(8, 8, hosts="ipv6", ports="mixed", weights="random") + [("[::1]:11211", 1), ("[::1]:11212", 1)], "IPv6 host passed without brackets"),
    ("mixed-everything", servers(30, 30, hosts="mixed", ports="mixed", weights="wide"), ""),
    ("published-8", [("10.0.1.%d:11211" % (i + 1), w) for i, w in enumerate([600, 300, 200, 350, 1000, 800, 950, 100])], "libmemcached's own test server list"),
]

def main(out):
    total = 0
    for name, srv, note in CASES:
        d = os.path.join(out, name); os.makedirs(d, exist_ok=True)
        sp = os.path.join(d, "servers.txt")
        with open(sp, "w") as f:
            f.write(f"# php-memcached {name}\n" + "".join(f"{a} {w}\n" for a, w in srv))
        with open(os.path.join(d, "meta.txt"), "w") as f:
            f.write("flavor=libmemcached\n" + (f"note={note}\n" if note else ""))
        keys = valid_keys(1000 + len(name) * 7 + sum(map(ord, name)))
        res = subprocess.run(["php", os.path.join(HERE, "php_route.php"), "--servers", sp],
                             input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
        assert len(res.splitlines()) == len(keys), name
        open(os.path.join(d, "expected.tsv"), "wb").write(res)
        total += len(keys); print(f"{name}\t{len(keys)}")
    print(f"cases={len(CASES)} keys={total}", file=sys.stderr)

if __name__ == "__main__":
    main(sys.argv[1])
