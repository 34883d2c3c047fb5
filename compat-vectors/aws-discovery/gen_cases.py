#!/usr/bin/env python3
"""Writes <client>/cases/<case>-<mode>/config.txt, meta.txt and keys.txt for the AWS auto-discovery vectors.

config.txt is the exact body the fake configuration endpoint serves for `config get cluster`:
    <version>\n<hostname|ip|port> <hostname|ip|port> ...\n
Every data node is a loopback IP (127.0.16x.y). This script only chooses configs and keys; every expected
answer comes afterwards from the real clients (run_case.py + the drivers, see README.md).
Keys: 20 edge keys + ../spymemcached/gen_cases.py make_keys (UTF-8 incl. non-BMP, printable ASCII, up to
250 bytes, no space or control character), 1000 per case; cases that share a seed share their keys.
"""
import os, random, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "spymemcached"))
from gen_cases import make_keys  # noqa: E402

EDGE = ["\u00e9", "\u00ff", "\u0100", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\ufffd", "\uffff", "\U00010000",
        "\U0001f600", "\U0010ffff", "\U0001d518\U0001d52b", "a\U0001f680b", "\U0001f511" * 3, "é" * 60,
        "\u4e2d\u6587" * 40, "\U0001f600" * 62, "x\uffffy", "key:\U0001f680:" + "9" * 20]
NKEYS = 1000


def keys_for(seed):
    out, seen = [], set()
    extra = 0
    while True:
        out, seen = [], set()
        for k in EDGE + make_keys(seed, NKEYS - len(EDGE) + extra):
            if k not in seen and len(k.encode("utf-8")) <= 250:
                seen.add(k)
                out.append(k)
        if len(out) >= NKEYS:
            return out[:NKEYS]
        extra += NKEYS - len(out)


def name(cluster, i, suffix="abc123"):
    return "%s-%04d-001.%s.0001.use1.cache.amazonaws.com" % (cluster, i, suffix)


def body(version, nodes):
    return "%d\n%s\n" % (version, " ".join("%s|%s|%d" % n for n in nodes))


FLAVORS = {
    ("php", "modula"): "libmemcached-modula",
    ("php", "ketama"): "libmemcached",
    ("java", "modula"): "spymemcached-modula",
    ("java", "ketama"): "aws-java-ketama",
}
SETUP = {
    ("php", "modula"): "PHP fork, OPT_CLIENT_MODE=DYNAMIC_CLIENT_MODE, default options (MODULA, one-at-a-time)",
    ("php", "ketama"): "PHP fork, OPT_CLIENT_MODE=DYNAMIC_CLIENT_MODE, OPT_LIBKETAMA_COMPATIBLE=true",
    ("java", "modula"): "Java fork, new MemcachedClient(AddrUtil.getAddresses(cfg endpoint)) (DefaultConnectionFactory)",
    ("java", "ketama"): "Java fork, new MemcachedClient(new KetamaConnectionFactory(), AddrUtil.getAddresses(cfg endpoint))",
}


def cases():
    rnd = random.Random(20261202)
    out = []  # (case, version, nodes, seed, note, java_ok)
    out.append(("n1", 1, [(name("vectors", 1), "127.0.160.1", 11211)], 101, "1 node", True))
    n3 = [(name("vectors", i), "127.0.161.%d" % i, 11211) for i in (1, 2, 3)]
    out.append(("n3", 2, n3, 103, "3 nodes, port 11211, listed in name/IP order", True))
    n10 = [(name("vectors", i), "127.0.162.%d" % i, 11211) for i in range(1, 11)]
    out.append(("n10", 3, n10, 110, "10 nodes, port 11211, listed in name/IP order", True))
    perm = n10[:]
    while perm == n10 or perm == sorted(perm, key=lambda n: n[0]):
        rnd.shuffle(perm)
    out.append(("n10-unsorted", 4, perm, 110,
                "the nodes of n10 listed in a shuffled order (same keys as n10): clients keep reply order", True))
    renamed = [(name("other", 11 - i, "xyz789"), ip, port) for (_, ip, port), i in zip(n10, range(1, 11))]
    out.append(("n10-renamed", 5, renamed, 110,
                "same IPs/ports in the same order as n10, other host names (same keys as n10): "
                "only the PHP ketama flavor hashes host names", True))
    swapped = [(n3[(i + 1) % 3][0], n3[i][1], n3[i][2]) for i in range(3)]
    out.append(("n3-swapped-names", 6, swapped, 103,
                "the host names of n3 rotated over its IPs (same keys as n3): PHP ketama places by name "
                "but connects to the IP", True))
    mixed = [(name("vectors", 1), "127.0.166.1", 11211), (name("vectors", 2), "127.0.166.2", 11212),
             (name("vectors", 3), "127.0.166.3", 21211), (name("vectors", 4), "127.0.166.1", 11213),
             (name("vectors", 5), "127.0.166.5", 11211), (name("vectors", 6), "127.0.166.6", 12345)]
    out.append(("n6-mixed-ports", 7, mixed, 106,
                "ports 11211/11212/21211/11213/12345; 127.0.166.1 twice (ports 11211 and 11213)", True))
    empty = [("", "127.0.167.1", 11211), (name("vectors", 2), "127.0.167.2", 11211),
             ("", "127.0.167.3", 11212), (name("vectors", 4), "127.0.167.4", 11211)]
    out.append(("n4-empty-hostname", 8, empty, 104,
                "two empty host name fields (ports 11211 and 11212): libmemcached names them localhost", False))
    same = [("", "127.0.168.%d" % i, 11211) for i in (1, 2, 3)]
    out.append(("n3-empty-hostname-same-port", 9, same, 113,
                "three empty host name fields, all port 11211: three nodes named localhost:11211", False))
    n25 = [(name("big", i, "def456"), "127.0.169.%d" % i, 11211 if i % 4 else 11300 + i) for i in range(1, 26)]
    rnd.shuffle(n25)
    out.append(("n25", 10, n25, 125,
                "25 nodes, shuffled, some ports != 11211 (25 equal weights: libmemcached's float rounding "
                "gives 156 points per server, not 160)", True))
    return out


def main():
    for client in ("php", "java"):
        for case, version, nodes, seed, note, java_ok in cases():
            if client == "java" and not java_ok:
                d = os.path.join(HERE, client, "rejected", case)
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "config.txt"), "w", encoding="utf-8", newline="") as f:
                    f.write(body(version, nodes))
                continue
            keys = keys_for(seed)
            assert len(keys) == NKEYS
            for mode in ("modula", "ketama"):
                d = os.path.join(HERE, client, "cases", "%s-%s" % (case, mode))
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "config.txt"), "w", encoding="utf-8", newline="") as f:
                    f.write(body(version, nodes))
                with open(os.path.join(d, "meta.txt"), "w", encoding="utf-8", newline="") as f:
                    f.write("flavor=%s\nnote=%s; %s\n" % (FLAVORS[client, mode], note, SETUP[client, mode]))
                with open(os.path.join(d, "keys.txt"), "w", encoding="utf-8", newline="") as f:
                    for k in keys:
                        f.write(k + "\n")


if __name__ == "__main__":
    main()
