#!/usr/bin/env python3
"""Writes cases/<case>/servers.txt, meta.txt and keys.txt for the spymemcached vectors.

This script only chooses server lists and keys. md5 is used here solely to *search* for corner
inputs (two servers sharing a continuum point, keys whose hash equals a point exactly, keys past
the last point); every expected answer is produced afterwards by the real spymemcached locator
(SpyRoute.java) in generate.sh.
"""
import hashlib, os, random, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")

UTF8_WORDS = ["ключ", "значение", "键", "値", "κλειδί", "clé", "Schlüssel", "llave_ñ", "🔑", "🚀cache",
              "مفتاح", "מפתח", "चाबी", "열쇠", "ǅemal", "naïve", "façade", "Ωmega", "日本語キー", "𝔘𝔫𝔦"]
PRINTABLE = [chr(c) for c in range(33, 127)]


def make_keys(seed, n):
    rnd = random.Random(seed)
    out, seen = [], set()

    def add(k):
        b = k.encode("utf-8")
        if k in seen or len(b) > 250 or any(ch in k for ch in "\t\r\n\0 "):
            return
        seen.add(k)
        out.append(k)

    while len(out) < n:
        r = rnd.random()
        i = len(out)
        if r < 0.25:
            add("key:%d" % rnd.randrange(10**6))
        elif r < 0.45:
            add("".join(rnd.choice(PRINTABLE) for _ in range(rnd.randint(1, 40))))
        elif r < 0.70:
            add("%s_%d_%s" % (rnd.choice(UTF8_WORDS), rnd.randrange(10**5), rnd.choice(UTF8_WORDS)))
        elif r < 0.80:
            add("user/%08x/session" % rnd.getrandbits(32))
        elif r < 0.90:
            add("".join(rnd.choice(PRINTABLE) for _ in range(rnd.randint(150, 250))))
        else:
            add("".join(rnd.choice(UTF8_WORDS) for _ in range(rnd.randint(1, 12))) + str(i))
    return out


def md5h(s):
    return struct.unpack("<I", hashlib.md5(s.encode("utf-8")).digest()[:4])[0]


def points(nodekey, digests=40):
    pts = []
    for i in range(digests):
        d = hashlib.md5(("%s-%d" % (nodekey, i)).encode()).digest()
        pts.extend(struct.unpack("<4I", d))
    return pts


def write_case(name, servers, meta, keys, header=None):
    d = os.path.join(CASES, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "servers.txt"), "w", encoding="utf-8") as f:
        if header:
            for h in header:
                f.write("# %s\n" % h)
        for s in servers:
            f.write(s + "\n")
    with open(os.path.join(d, "meta.txt"), "w", encoding="utf-8") as f:
        for k, v in meta:
            f.write("%s=%s\n" % (k, v))
    with open(os.path.join(d, "keys.txt"), "w", encoding="utf-8") as f:
        for k in keys:
            f.write(k + "\n")


def ip_list(rnd, n, ports=(11211,)):
    seen, out = set(), []
    while len(out) < n:
        a = "10.%d.%d.%d:%d" % (rnd.randrange(256), rnd.randrange(256), rnd.randrange(1, 255), rnd.choice(ports))
        if a.split(":")[0] not in seen:
            seen.add(a.split(":")[0])
            out.append(a)
    return out


def find_tie():
    """Two IPv4 literals (port 11211) with an equal md5 continuum point (node key 'ip:11211-i')."""
    owner = {}
    for c in range(1, 255):
        for b in range(0, 256):
            ip = "10.77.%d.%d" % (b, c)
            nk = ip + ":11211"
            for p in points(nk):
                o = owner.get(p)
                if o is not None and o != nk:
                    return o, nk, p
                owner[p] = nk
    raise SystemExit("no tie found")


def main():
    os.makedirs(CASES, exist_ok=True)
    rnd = random.Random(20240611)
    F = ("flavor", "spymemcached")
    W = ("flavor", "spymemcached-weighted")
    # --- unweighted, IPv4 literals -------------------------------------------------------------
    for n in (1, 2, 3, 8):
        servers = ["10.0.1.%d:11211" % i for i in range(1, n + 1)]
        write_case("n%d" % n, servers, [F, ("note", "%d IPv4 literals, port 11211; node key 'ip:11211-i'" % n)],
                   make_keys("n%d" % n, 1000))
    write_case("n10-ports", ["10.0.2.%d:%d" % (i, 11211 + (i % 4)) for i in range(1, 11)],
               [F, ("note", "10 IPv4 literals, ports 11211..11214 (port kept in node key even when 11211)")],
               make_keys("n10", 1000))
    for n in (50, 100, 200):
        write_case("n%d" % n, ip_list(rnd, n, (11211, 11212, 21211, 6379)),
                   [F, ("note", "%d random 10.x IPv4 literals, mixed ports" % n)], make_keys("n%d" % n, 1000))
    write_case("same-ip-ports", ["127.0.0.1:%d" % p for p in (11211, 11212, 11213, 11214, 11215)],
               [F, ("note", "one IP, five ports; node key '127.0.0.1:PORT-i'")], make_keys("sameip", 1000))
    # --- host names and IPv6 (node key depends on java.net text, see README) -----------------
    write_case("localhost", ["localhost:11211", "localhost:11212", "127.0.0.1:11213", "10.0.3.1:11211"],
               [F, ("note", "host name localhost (resolved via hosts file to 127.0.0.1): node key "
                    "'localhost/127.0.0.1:PORT-i'; IP literal 127.0.0.1 -> '127.0.0.1:PORT-i'")],
               make_keys("localhost", 1000))
    write_case("unresolved", ["cache-a.example:11211", "cache-b.example:11212", "10.0.3.2:11211"],
               [F, ("note", "host names that do NOT resolve (generation uses -Djdk.net.hosts.file without them): "
                    "node key 'cache-a.example/<unresolved>:11211-i' (Java 14+ InetSocketAddress.toString)")],
               make_keys("unresolved", 1000))
    write_case("ipv6", ["[::1]:11211", "[::1]:11212", "[2001:db8::1]:11211", "[fe80::1:2]:11300", "10.0.3.3:11211"],
               [F, ("note", "IPv6 literals: node key is Java's uncompressed form in brackets, e.g. [::1]:11211 -> "
                    "'[0:0:0:0:0:0:0:1]:11211-i', [2001:db8::1]:11211 -> '[2001:db8:0:0:0:0:0:1]:11211-i'")],
               make_keys("ipv6", 1000))
    # --- corners: tie, exact hits, wrap -------------------------------------------------------
    a, b, p = find_tie()
    print("tie: %s and %s share point %d" % (a, b, p), file=sys.stderr)
    tie_keys = tie_corner_keys([a, b], p)
    write_case("tie-ab", [a, b], [F, ("note", "%s and %s share continuum point %d; TreeMap.put: the node put LAST "
                                       "(later in the server list) owns it" % (a, b, p))],
               tie_keys + make_keys("tie", 1000))
    write_case("tie-ba", [b, a], [F, ("note", "as tie-ab with the list order reversed; shared point %d" % p)],
               tie_keys + make_keys("tie", 1000))
    others = ["10.0.4.%d:11211" % i for i in range(1, 5)]
    write_case("tie-mixed", [a] + others + [b], [F, ("note", "shared point %d between first and last of 6" % p)],
               tie_corner_keys([a] + others + [b], p) + make_keys("tiemixed", 1000))
    write_case("w-tie-ab", [a + " 1", b + " 1"], [W, ("note", "weighted flavor, equal weights (40 digests each): "
                                                     "shared point %d, last put wins" % p)],
               tie_keys + make_keys("tie", 1000))
    write_case("w-tie-ba", [b + " 1", a + " 1"], [W, ("note", "weighted flavor, reversed order, shared point %d" % p)],
               tie_keys + make_keys("tie", 1000))
    exact_servers, exact_keys = find_exact()
    write_case("exact-hit", exact_servers,
               [F, ("note", "keys whose md5 hash equals a continuum point exactly (ceiling: the key goes to that "
                    "point's node), plus keys past the last point (wrap to the first point)")],
               exact_keys + wrap_keys(exact_servers) + make_keys("exact", 1000))
    # --- weighted ----------------------------------------------------------------------------
    for n in (7, 25, 50, 61, 100):
        write_case("w-equal-%d" % n, ["%s 1" % s for s in ip_list(rnd, n, (11211, 11212))],
                   [W, ("note", "%d servers, equal weights 1" % n)], make_keys("we%d" % n, 1000))
    write_case("w-equal3-8", ["10.0.1.%d:11211 3" % i for i in range(1, 9)],
               [W, ("note", "8 servers, equal weights 3")], make_keys("we3", 1000))
    write_case("w-random-10", ["%s %d" % (s, rnd.randint(1, 100)) for s in ip_list(rnd, 10, (11211, 11300))],
               [W, ("note", "10 servers, random weights 1..100")], make_keys("wr10", 1000))
    write_case("w-random-50", ["%s %d" % (s, rnd.randint(1, 1000)) for s in ip_list(rnd, 50, (11211, 11300))],
               [W, ("note", "50 servers, random weights 1..1000")], make_keys("wr50", 1000))
    write_case("w-extreme", ["10.0.5.1:11211 1", "10.0.5.2:11211 1000000"],
               [W, ("note", "weights 1 vs 1000000: the weight-1 server gets floor(...)=0 digests, no points")],
               make_keys("wx", 1000))
    write_case("w-extreme3", ["10.0.5.1:11211 1", "10.0.5.2:11212 1000000", "10.0.5.3:11213 3"],
               [W, ("note", "weights 1, 1000000, 3")], make_keys("wx3", 1000))
    write_case("w-21-10-9", ["10.0.6.1:11211 21", "10.0.6.2:11211 10", "10.0.6.3:11211 9"],
               [W, ("note", "weights 21/10/9 (float vs double vs exact arithmetic trap)")], make_keys("w21", 1000))
    write_case("w-29-16-15", ["10.0.6.1:11211 29", "10.0.6.2:11211 16", "10.0.6.3:11211 15"],
               [W, ("note", "weights 29/16/15 (float vs double vs exact arithmetic trap)")], make_keys("w29", 1000))
    write_case("w-mixed-ports", ["10.0.7.%d:%d %d" % (i, 11211 if i % 2 else 11311, i) for i in range(1, 12)],
               [W, ("note", "11 servers, weights 1..11, ports 11211/11311")], make_keys("wmp", 1000))
    write_case("w-localhost-ipv6", ["localhost:11211 2", "[::1]:11212 3", "127.0.0.1:11213 1", "10.0.7.99:11211 5"],
               [W, ("note", "weighted with host name localhost (node key 'localhost/127.0.0.1:11211') and IPv6 "
                    "literal (node key '[0:0:0:0:0:0:0:1]:11212')")], make_keys("wlh", 1000))


def tie_corner_keys(servers, p):
    """Keys whose ceiling point is the shared point p (hash in (prev point, p])."""
    allp = sorted(set(q for s in servers for q in points(s)))
    i = allp.index(p)
    lo = allp[i - 1] if i > 0 else -1
    out, n = [], 0
    while len(out) < 20 and n < 5_000_000:
        k = "tie-%d" % n
        h = md5h(k)
        if lo < h <= p:
            out.append(k)
        n += 1
    return out


def find_exact():
    cand = {}
    for n in range(3_000_000):
        k = "exact:%d" % n
        cand.setdefault(md5h(k), k)
    servers, keys = [], []
    c = 0
    while len(servers) < 8:
        c += 1
        s = "10.88.%d.%d:11211" % (c // 250, c % 250 + 1)
        hits = [cand[q] for q in points(s) if q in cand]
        if hits:
            servers.append(s)
            keys.extend(hits)
    return servers, keys


def wrap_keys(servers):
    mx = max(q for s in servers for q in points(s))
    out, n = [], 0
    while len(out) < 10:
        k = "wrap:%d" % n
        if md5h(k) > mx:
            out.append(k)
        n += 1
    return out


if __name__ == "__main__":
    main()
