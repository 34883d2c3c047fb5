#!/usr/bin/env python3
"""Checks every expected.tsv here against an independent Python model of the placement rules the README states
(stdlib only). It computes nothing that goes into the vectors; it prints, per case, how many keys the model
places elsewhere than the real client did, and exits 1 if any.

  libmemcached-modula  one-at-a-time over the key's bytes taken as SIGNED chars (x86 `char`), % node count,
                       nodes in reply order
  libmemcached         weighted ketama (OPT_LIBKETAMA_COMPATIBLE): node name = HOSTNAME field ("localhost" when
                       empty), point keys "name-i" (port 11211) or "name:port-i", points per server
                       floor(float32 arithmetic)*4 (156 for 25 equal servers), md5 -> 4 LE u32 per digest, key
                       hash = md5(key)[0:4] LE, first point >= hash, wrap; equal points keep node order
  spymemcached-modula  (String.hashCode over UTF-16 units & 0xffffffff) % node count, reply order
  aws-java-ketama      SHA-384 of "ip:port-i" (i < 40), first 16 digest bytes as 4 LE u32; equal points: later
                       node wins; key hash = SHA-384(key)[0:4] LE; first point >= hash, wrap
ADDR is always the IP field : port of the chosen node.
"""
import bisect, hashlib, math, os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def nodes_of(path):
    with open(path, "rb") as f:
        line = f.read().decode("utf-8").strip().split("\n")[1]
    out = []
    for tok in line.split():
        h, ip, p = tok.split("|")
        out.append((h, ip, int(p)))
    return out


def oaat(b):
    v = 0
    for c in b:
        if c >= 128:
            c -= 256
        v = (v + (c & 0xFFFFFFFF)) & 0xFFFFFFFF
        v = (v + (v << 10)) & 0xFFFFFFFF
        v ^= v >> 6
    v = (v + (v << 3)) & 0xFFFFFFFF
    v ^= v >> 11
    v = (v + (v << 15)) & 0xFFFFFFFF
    return v


def java_hashcode(s):
    h = 0
    u = s.encode("utf-16-be")
    for i in range(0, len(u), 2):
        h = (31 * h + (u[i] << 8 | u[i + 1])) & 0xFFFFFFFF
    return h


def libmemcached_points_per_server(n):
    pct = f32(f32(1.0) / f32(float(n)))
    v = f32(f32(f32(pct * 160.0) / 4.0) * f32(float(n)))
    return int(math.floor(f32(v + 0.0000000001))) * 4


def model(flavor, nodes):
    n = len(nodes)
    if flavor == "libmemcached-modula":
        return lambda k: 0 if n == 1 else oaat(k) % n
    if flavor == "spymemcached-modula":
        return lambda k: java_hashcode(k.decode("utf-8")) % n
    if flavor == "libmemcached":
        pps = libmemcached_points_per_server(n)
        pts = []
        for idx, (h, ip, p) in enumerate(nodes):
            name = h or "localhost"
            for i in range(pps // 4):
                nk = ("%s-%d" % (name, i)) if p == 11211 else ("%s:%d-%d" % (name, p, i))
                d = hashlib.md5(nk.encode()).digest()
                for v in struct.unpack("<4I", d):
                    pts.append((v, idx))
        pts.sort(key=lambda t: t[0])  # stable: equal points keep node order
        vals = [v for v, _ in pts]

        def f(k):
            if n == 1:
                return 0
            hv = struct.unpack("<I", hashlib.md5(k).digest()[:4])[0]
            j = bisect.bisect_left(vals, hv)
            return pts[j if j < len(pts) else 0][1]
        return f
    if flavor == "aws-java-ketama":
        ring = {}
        for idx, (h, ip, p) in enumerate(nodes):
            for i in range(40):
                d = hashlib.sha384(("%s:%d-%d" % (ip, p, i)).encode()).digest()
                for v in struct.unpack("<4I", d[:16]):
                    ring[v] = idx  # TreeMap.put: the later node wins a shared point
        vals = sorted(ring)

        def f(k):
            hv = struct.unpack("<I", hashlib.sha384(k).digest()[:4])[0]
            j = bisect.bisect_left(vals, hv)
            return ring[vals[j if j < len(vals) else 0]]
        return f
    raise SystemExit("unknown flavor " + flavor)


def main():
    bad_total = 0
    for client in ("php", "java"):
        cdir = os.path.join(HERE, client, "cases")
        if not os.path.isdir(cdir):
            continue
        for case in sorted(os.listdir(cdir)):
            d = os.path.join(cdir, case)
            meta = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(d, "meta.txt"), encoding="utf-8"))
            nodes = nodes_of(os.path.join(d, "config.txt"))
            pick = model(meta["flavor"], nodes)
            bad = total = 0
            for line in open(os.path.join(d, "expected.tsv"), "rb"):
                k, addr = line.rstrip(b"\n").rsplit(b"\t", 1)
                h, ip, p = nodes[pick(k)]
                total += 1
                if addr.decode() != "%s:%d" % (ip, p):
                    bad += 1
            bad_total += bad
            print("%s/%s\t%s\t%d keys\t%d model mismatches" % (client, case, meta["flavor"], total, bad))
    sys.exit(1 if bad_total else 0)


if __name__ == "__main__":
    main()
