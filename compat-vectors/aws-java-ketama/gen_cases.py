#!/usr/bin/env python3
"""Writes cases/<case>/servers.txt, meta.txt and keys.txt for the aws-java-ketama vectors. It only chooses
server lists and keys; SHA-384 is used here solely to *search* for corner inputs (two servers sharing a
continuum point, keys whose hash equals a point, keys past the last point). Every answer comes from the fork's
KetamaNodeLocator (AwsKetamaRoute.java)."""
import hashlib, os, random, struct, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "spymemcached"))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from gen_cases import make_keys  # noqa: E402  (UTF-8 incl. non-BMP, printable ASCII, up to 250 bytes)
from make_cases import servers  # noqa: E402

CASES = os.path.join(HERE, "cases")
F = "aws-java-ketama"

def h4(data, off=0):
    return struct.unpack_from("<I", hashlib.sha384(data).digest(), off)[0]

def points(nodekey):  # search helper: 40 digests x 4 LE u32 of the first 16 bytes
    out = []
    for i in range(40):
        d = hashlib.sha384(("%s-%d" % (nodekey, i)).encode()).digest()
        out.extend(struct.unpack_from("<4I", d))
    return out

def write_case(name, srv, note, keys):
    d = os.path.join(CASES, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "servers.txt"), "w", encoding="utf-8") as f:
        f.write("# aws-elasticache-cluster-client-memcached-for-java KetamaConnectionFactory(): %s\n" % name)
        f.writelines("%s\n" % a for a in srv)
    with open(os.path.join(d, "meta.txt"), "w", encoding="utf-8") as f:
        f.write("flavor=%s\nnote=%s\n" % (F, note))
    seen, out = set(), []
    for k in keys:
        if k not in seen and len(k.encode()) <= 250:
            seen.add(k); out.append(k)
    with open(os.path.join(d, "keys.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.writelines(k + "\n" for k in out)

def ips(n, seed, ports="mixed"):
    return [a for a, _ in servers(n, seed, ports=ports)]

def find_tie():
    owner = {}
    for c in range(1, 255):
        for b in range(256):
            nk = "10.66.%d.%d:11211" % (b, c)
            for p in points(nk):
                o = owner.get(p)
                if o is not None and o != nk:
                    return o, nk, p
                owner[p] = nk
    raise SystemExit("no tie found")

def tie_keys(srv, p, want=20):
    allp = sorted(set(q for s in srv for q in points(s)))
    i = allp.index(p)
    lo = allp[i - 1] if i > 0 else -1
    out, n = [], 0
    while len(out) < want and n < 20_000_000:
        k = "tie-%d" % n
        if lo < h4(k.encode()) <= p:
            out.append(k)
        n += 1
    return out

def find_exact(ncand=2_000_000, nserv=6):
    cand = {}
    for n in range(ncand):
        k = "exact:%d" % n
        cand.setdefault(h4(k.encode()), k)
    srv, keys, c = [], [], 0
    while len(srv) < nserv:
        c += 1
        s = "10.99.%d.%d:11211" % (c // 250, c % 250 + 1)
        hits = [cand[q] for q in points(s) if q in cand]
        if hits:
            srv.append(s); keys.extend(hits)
    return srv, keys

def wrap_keys(srv, want=10):
    mx = max(q for s in srv for q in points(s))
    out, n = [], 0
    while len(out) < want:
        k = "wrap:%d" % n
        if h4(k.encode()) > mx:
            out.append(k)
        n += 1
    return out

def main():
    os.makedirs(CASES, exist_ok=True)
    for n in (1, 2, 3, 8):
        write_case("n%d" % n, ["10.0.1.%d:11211" % i for i in range(1, n + 1)],
                   "%d IPv4 literals, port 11211 (kept in the node key)" % n, make_keys("aws%d" % n, 1000))
    write_case("n10-ports", ["10.0.2.%d:%d" % (i, 11211 + (i % 4)) for i in range(1, 11)], "ports 11211..11214",
               make_keys("aws10", 1000))
    for n in (25, 50, 100):
        write_case("n%d" % n, ips(n, 6000 + n), "%d random 10.x IPv4 literals, mixed ports" % n, make_keys("aws%d" % n, 1000))
    n10 = ips(10, 6010)
    p10 = list(n10); random.Random(4).shuffle(p10)
    write_case("n10", n10, "same keys as n10-permuted", make_keys("awsp", 1000))
    write_case("n10-permuted", p10, "the n10 servers in another order (only ties depend on order)", make_keys("awsp", 1000))
    write_case("localhost", ["localhost:11211", "localhost:11212", "127.0.0.1:11213", "10.0.3.1:11211"],
               "localhost resolves (hosts file) to 127.0.0.1; setNodeEndPoint rebuilds the address from the IP, so the "
               "node key is '127.0.0.1:PORT-i' (Debian spymemcached 2.12.3 would use 'localhost/127.0.0.1:PORT-i')",
               make_keys("awslh", 1000))
    write_case("unresolved", ["cache-a.example:11211", "cache-b.example:11212", "10.0.3.2:11211"],
               "names that do not resolve: node key 'cache-a.example/<unresolved>:11211-i' (Java 14+ text)",
               make_keys("awsun", 1000))
    write_case("ipv6", ["[::1]:11211", "[::1]:11212", "[2001:db8::1]:11211", "[fe80::1:2]:11300", "10.0.3.3:11211"],
               "IPv6: node key is Java's uncompressed form in brackets, e.g. '[0:0:0:0:0:0:0:1]:11211-i'",
               make_keys("awsv6", 1000))
    a, b, p = find_tie()
    print("tie: %s and %s share point %d" % (a, b, p), file=sys.stderr)
    tk = tie_keys([a, b], p)
    note = "%s and %s share continuum point %d (SHA-384); TreeMap.put: the node put last owns it" % (a, b, p)
    write_case("tie-ab", [a, b], note + "; %d keys land on it" % len(tk), tk + make_keys("awstie", 1000))
    write_case("tie-ba", [b, a], note + " (order reversed)", tk + make_keys("awstie", 1000))
    others = ["10.0.4.%d:11211" % i for i in range(1, 5)]
    mixed = [a] + others + [b]
    write_case("tie-mixed", mixed, note + "; first and last of 6", tie_keys(mixed, p) + make_keys("awstiem", 1000))
    es, ek = find_exact()
    wk = wrap_keys(es)
    write_case("exact-hit", es, "the first %d keys hash exactly onto a point (they stay on it); then %d keys hash past "
               "the last point (wrap to the first)" % (len(ek), len(wk)), ek + wk + make_keys("awsexact", 1000))

if __name__ == "__main__":
    main()
