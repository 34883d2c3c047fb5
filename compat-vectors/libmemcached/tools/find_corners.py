#!/usr/bin/env python3
"""Search server names / keys for the two ketama corners (weighted libmemcached point format).

This only *chooses inputs*; the expected placements always come from the real libmemcached harness.

  (a) two servers sharing a continuum point: point strings "host-i" (port 11211) or "host:port-i",
      i = 0..39, four little-endian u32 per md5 digest; birthday search over candidate host names.
  (b) keys whose md5 key hash (LE u32 of digest bytes 0..3) equals a continuum point exactly.

Prints JSON to stdout. Deterministic.
"""
import hashlib, json, struct, sys

def points(name_prefix, ndig=40):
    out = []
    for i in range(ndig):
        d = hashlib.md5(f"{name_prefix}-{i}".encode()).digest()
        out.extend((struct.unpack_from("<I", d, 4 * k)[0], i, k) for k in range(4))
    return out

def collision_search(nhosts=3000):
    seen = {}
    found = []
    for h in range(nhosts):
        host = f"cache-{h:04d}.corner.test"
        for v, i, k in points(host):  # port 11211 -> no port in the point name
            if v in seen and seen[v][0] != host:
                found.append({"value": v, "a": seen[v][0], "a_idx": seen[v][1], "b": host, "b_idx": [i, k]})
            seen.setdefault(v, (host, [i, k]))
    return found

def key_hits(nkeys=2_000_000, nhosts=1500):
    keys = {}
    for n in range(nkeys):
        k = f"k{n}"
        keys.setdefault(struct.unpack_from("<I", hashlib.md5(k.encode()).digest())[0], k)
    hits = []
    for h in range(nhosts):
        host = f"10.77.{h // 250}.{h % 250 + 1}"
        for port in (11211, 11300):
            pref = host if port == 11211 else f"{host}:{port}"
            for v, i, k in points(pref):
                if v in keys:
                    hits.append({"value": v, "host": host, "port": port, "point": [i, k], "key": keys[v]})
    return hits

if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "both"
    res = {}
    if what in ("both", "collision"):
        res["collisions"] = collision_search()
    if what in ("both", "keys"):
        res["key_hits"] = key_hits()
    json.dump(res, sys.stdout, indent=1)
