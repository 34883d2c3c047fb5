#!/usr/bin/env python3
"""Writes cases/<case>/servers.txt, meta.txt and keys.txt for the dalli vectors.

Only chooses server lists and keys. sha1/crc32 are used here solely to *search* for corner inputs
(two servers sharing a continuum point, keys whose crc32 equals a point, keys below the first /
above the last point); every expected answer comes from the real Dalli ring (dalli_route.rb).
All servers are loopback addresses (127.0.66.x, ::1, localhost) because dalli connects to each.
"""
import hashlib, os, random, struct, sys, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")

UTF8_WORDS = ["ключ", "значение", "键", "値", "κλειδί", "clé", "Schlüssel", "llave_ñ", "🔑", "🚀cache",
              "مفتاح", "מפתח", "चाबी", "열쇠", "ǅemal", "naïve", "façade", "Ωmega", "日本語キー", "𝔘𝔫𝔦"]
PRINTABLE = [chr(c) for c in range(33, 127)]


def make_keys(seed, n):
    rnd = random.Random(seed)
    out, seen = [], set()

    def add(k):
        if k in seen or len(k.encode("utf-8")) > 250 or any(ch in k for ch in "\t\r\n\0 "):
            return
        seen.add(k)
        out.append(k)

    while len(out) < n:
        r = rnd.random()
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
            add("".join(rnd.choice(UTF8_WORDS) for _ in range(rnd.randint(1, 12))) + str(len(out)))
    return out


def crc(k):
    return zlib.crc32(k.encode("utf-8")) & 0xFFFFFFFF


def name_of(addr):
    host, port = addr.rsplit(":", 1)
    return "%s:%s" % (host.strip("[]"), port)


def points(addr, count=160):
    return [int(hashlib.sha1(("%s:%d" % (name_of(addr), i)).encode()).hexdigest()[:8], 16) for i in range(count)]


def write_case(name, servers, note, keys):
    d = os.path.join(CASES, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "servers.txt"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in servers))
    with open(os.path.join(d, "meta.txt"), "w", encoding="utf-8") as f:
        f.write("flavor=dalli\nnote=%s\n" % note)
    with open(os.path.join(d, "keys.txt"), "w", encoding="utf-8") as f:
        f.write("".join(k + "\n" for k in keys))


def find_tie():
    owner = {}
    for port in range(20000, 30000):
        a = "127.0.66.1:%d" % port
        for p in points(a):
            o = owner.get(p)
            if o is not None and o != a:
                return o, a, p
            owner[p] = a
    raise SystemExit("no tie")


def corner_keys(servers, targets, prefix, want=20):
    """Keys whose crc32 lies in (prev point, target] for each target (they land on target's entry)."""
    allp = sorted(set(q for s in servers for q in points(s)))
    out = []
    for t in targets:
        i = allp.index(t)
        hi = allp[i + 1] if i + 1 < len(allp) else 1 << 32
        n = 0
        got = 0
        while got < want:
            k = "%s-%d-%d" % (prefix, t, n)
            if t <= crc(k) < hi:
                out.append(k)
                got += 1
            n += 1
    return out


def main():
    rnd = random.Random(977)
    os.makedirs(CASES, exist_ok=True)
    write_case("n1", ["127.0.66.1:21001"], "single server: dalli builds no continuum, every key -> the server",
               make_keys("d1", 1000))
    write_case("n2", ["127.0.66.1:21001", "127.0.66.2:21002"], "2 servers", make_keys("d2", 1000))
    write_case("n3", ["127.0.66.1:11211", "127.0.66.2:11211", "127.0.66.3:11211"],
               "3 servers on port 11211 (port always in the name: '127.0.66.1:11211:i')", make_keys("d3", 1000))
    write_case("n10", ["127.0.66.%d:%d" % (i, 21000 + i) for i in range(1, 11)], "10 servers, distinct ports",
               make_keys("d10", 1000))
    write_case("n50", ["127.0.66.%d:%d" % (i, 11211 if i % 5 == 0 else 22000 + i) for i in range(1, 51)],
               "50 servers, mixed ports incl. 11211", make_keys("d50", 1000))
    write_case("equal-3-7", ["127.0.66.%d:%d 3" % (i, 21100 + i) for i in range(1, 8)],
               "7 servers, equal weights 3 (same as weight 1)", make_keys("de7", 1000))
    write_case("random-10", ["127.0.66.%d:%d %d" % (i, 21200 + i, rnd.randint(1, 100)) for i in range(1, 11)],
               "10 servers, random weights 1..100", make_keys("dr10", 1000))
    write_case("random-25", ["127.0.66.%d:%d %d" % (i, 21300 + i, rnd.randint(1, 1000)) for i in range(1, 26)],
               "25 servers, random weights 1..1000", make_keys("dr25", 1000))
    write_case("extreme", ["127.0.66.1:21401 1", "127.0.66.2:21402 1000000"],
               "weights 1 vs 1000000: floor(2*160*1/1000001.0)=0 entries for the weight-1 server",
               make_keys("dx", 1000))
    write_case("extreme3", ["127.0.66.1:21401 1", "127.0.66.2:21402 1000000", "127.0.66.3:21403 3000"],
               "weights 1, 1000000, 3000", make_keys("dx3", 1000))
    write_case("w-21-10-9", ["127.0.66.1:21501 21", "127.0.66.2:21502 10", "127.0.66.3:21503 9"],
               "weights 21/10/9", make_keys("d21", 1000))
    write_case("w-29-16-15", ["127.0.66.1:21601 29", "127.0.66.2:21602 16", "127.0.66.3:21603 15"],
               "weights 29/16/15", make_keys("d29", 1000))
    write_case("w-odd-7", ["127.0.66.%d:%d %d" % (i, 21700 + i, w) for i, w in
                           enumerate((1, 2, 3, 5, 7, 11, 13), 1)],
               "7 servers, weights 1,2,3,5,7,11,13 (non-integer entry counts floored)", make_keys("dodd", 1000))
    write_case("localhost-ipv6", ["localhost:21801", "[::1]:21802 2", "127.0.0.1:21803"],
               "name is hostname:port as written (no resolution): 'localhost:21801:i'; IPv6 brackets dropped: "
               "'::1:21802:i'", make_keys("dlh", 1000))
    a, b, p = find_tie()
    print("tie: %s %s %d" % (a, b, p), file=sys.stderr)
    tk = corner_keys([a, b], [p], "tie")
    write_case("tie-ab", [a, b], "%s and %s share continuum value %d; sort_by then last entry <= hash" % (a, b, p),
               tk + make_keys("dtie", 1000))
    write_case("tie-ba", [b, a], "as tie-ab, list order reversed (shared value %d)" % p, tk + make_keys("dtie", 1000))
    # exact hits + both ends of the ring
    cand = {}
    for n in range(3_000_000):
        k = "exact:%d" % n
        cand.setdefault(crc(k), k)
    servers, ek, port = [], [], 23000
    while len(servers) < 5:
        port += 1
        s = "127.0.66.9:%d" % port
        hits = [cand[q] for q in points(s) if q in cand]
        if hits:
            servers.append(s)
            ek.extend(hits)
    allp = sorted(q for s in servers for q in points(s))
    wrap, n = [], 0
    while len(wrap) < 20:
        k = "wrap:%d" % n
        h = crc(k)
        if (h < allp[0] and sum(1 for w in wrap if crc(w) < allp[0]) < 10) or \
           (h >= allp[-1] and sum(1 for w in wrap if crc(w) >= allp[-1]) < 10):
            wrap.append(k)
        n += 1
    write_case("exact-hit", servers, "keys whose crc32 equals a continuum value exactly (they go to that entry), "
               "keys below the first value (wrap to the LAST entry) and at/above the last value",
               ek + wrap + make_keys("dex", 1000))
    long_keys = []
    r2 = random.Random(5)
    for i in range(200):
        L = r2.choice([249, 250, 251, 252, 300, 400])
        long_keys.append(("L%d_" % i + "".join(r2.choice(PRINTABLE) for _ in range(L)))[:L])
    for i in range(100):
        L = r2.choice([200, 250, 251, 260])
        long_keys.append(("U%d_" % i + "é" * L)[:L])  # L characters, 2 bytes each
    write_case("long-keys", ["127.0.66.1:21901", "127.0.66.2:21902", "127.0.66.3:21903"],
               "keys longer than 250 CHARACTERS (String#length, not bytes) are replaced before hashing by "
               "key[0,212] + ':md5:' + md5hex(key); 250 chars of 2-byte UTF-8 (500 bytes) are hashed as is",
               long_keys + make_keys("dlong", 700))


if __name__ == "__main__":
    main()
