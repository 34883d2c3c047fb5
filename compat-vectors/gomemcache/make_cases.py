#!/usr/bin/env python3
"""gomemcache cases: server lists (numeric IPs only) and keys are chosen here (generators of ../libmemcached);
every answer comes from gomemcache's ServerList.PickServer via the gmroute binary.
usage: make_cases.py GMROUTE_BINARY OUT_CASES_DIR"""
import os, random, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from make_cases import keyset, servers  # noqa: E402

HIGH = [bytes([b]) for b in range(0x80, 0x100)] + [bytes([b, 0x41]) for b in range(0x80, 0x100)] + \
       [s.encode() for s in ["é", "ключ", "键", "😀", "naïve-ü", "\U0010ffff", "\uffff"]]

def ascii_keys(seed, extra=()):
    return [k for k in keyset(seed, n=3000, extra=extra) if len(k) <= 250 and all(0x21 <= b <= 0x7e for b in k)][:1000]

def any_keys(seed, extra=()):
    ks = [k for k in keyset(seed, n=1500, extra=extra) if len(k) <= 250 and all(b >= 0x21 and b != 0x7f for b in k)]
    return ks[:max(1000, len(extra) + 600)]

def ips(n, seed, ports="mixed"):
    return [a for a, _ in servers(n, seed, ports=ports)]

N10 = ips(10, 5010)
N10P = list(N10); random.Random(9).shuffle(N10P)
NA = "bytes >= 0x80 (UTF-8 and lone high bytes): PickServer places them, but this gomemcache's legalKey refuses " \
     "them (ErrMalformedKey) before PickServer; newer upstream versions accept them"
CASES = [  # name, servers, keys function, seed, extra, note
    ("n1", ["127.0.0.1:11211"], ascii_keys, 1, (), "one server: returned without hashing"),
    ("n2", ips(2, 5002, "11211"), ascii_keys, 2, (), ""),
    ("n3-ports", ["10.0.1.1:11211", "10.0.1.1:11212", "10.0.1.2:22122"], ascii_keys, 3, (), ""),
    ("n7", ips(7, 5007), ascii_keys, 7, (), ""),
    ("n25", ips(25, 5025), ascii_keys, 25, (), ""),
    ("n100", ips(100, 5100), ascii_keys, 100, (), ""),
    ("n10", N10, ascii_keys, 10, (), "same keys as n10-permuted"),
    ("n10-permuted", N10P, ascii_keys, 10, (), "the n10 servers in another order: the list index decides"),
    ("ipv6", [a for a, _ in servers(6, 5006, hosts="ipv6", ports="mixed")] + ["[::1]:11211", "[::1]:11212", "127.0.0.1:11211"],
     ascii_keys, 6, (), "IPv6 literals"),
    ("nonascii-n5", ips(5, 5105), any_keys, 105, HIGH, NA),
    ("nonascii-n10", N10, any_keys, 110, HIGH, NA),
    ("nonascii-n2", ips(2, 5102), any_keys, 102, HIGH, NA),
]

def main(binary, out):
    total = 0
    for name, srv, kf, seed, extra, note in CASES:
        d = os.path.join(out, name); os.makedirs(d, exist_ok=True)
        sp = os.path.join(d, "servers.txt")
        with open(sp, "w") as f:
            f.write(f"# gomemcache ServerList.SetServers: {name}\n" + "".join(f"{a}\n" for a in srv))
        with open(os.path.join(d, "meta.txt"), "w") as f:
            f.write("flavor=gomemcache\n" + (f"note={note}\n" if note else ""))
        keys = kf(7000 + seed, extra)
        res = subprocess.run([binary, sp], input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
        assert [l.split(b"\t")[0] for l in res.splitlines()] == keys, name
        open(os.path.join(d, "expected.tsv"), "wb").write(res)
        total += len(keys); print(f"{name}\t{len(keys)}")
    print(f"cases={len(CASES)} keys={total}", file=sys.stderr)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
