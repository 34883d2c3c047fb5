#!/usr/bin/env python3
"""An independent re-implementation of libmemcached 1.1.4 ketama placement, used ONLY to check our
understanding of the peer against the harness (and to pick corner keys). Vectors never come from here.

Usage: ketama_model.py --servers FILE --flavor F [--hash H] < keys   (same output as the harness)
"""
import hashlib, math, struct, sys

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

def sx(b):  # C `(uint32_t)(char)b` on x86-64: char is signed -> sign extension
    return (b - 256) & 0xFFFFFFFF if b >= 128 else b

M32 = 0xFFFFFFFF

def oaat(data):
    h = 0
    for b in data:
        h = (h + sx(b)) & M32
        h = (h + (h << 10)) & M32
        h ^= h >> 6
    h = (h + (h << 3)) & M32
    h ^= h >> 11
    h = (h + (h << 15)) & M32
    return h

def md5h(data):
    return struct.unpack_from("<I", hashlib.md5(data).digest())[0]

def fnv1_32(data):
    h = 2166136261
    for b in data:
        h = (h * 16777619) & M32
        h ^= sx(b)
    return h

def fnv1a_32(data):
    h = 2166136261
    for b in data:
        h ^= sx(b)
        h = (h * 16777619) & M32
    return h

def fnv1_64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        h ^= (b - 256) & 0xFFFFFFFFFFFFFFFF if b >= 128 else b
    return h & M32

def fnv1a_64(data):  # libmemcached's "fnv1a_64" is really 32-bit: truncated basis and prime
    h = 0xcbf29ce484222325 & M32
    for b in data:
        h ^= sx(b)
        h = (h * (0x100000001b3 & M32)) & M32
    return h

_CRC = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
    _CRC.append(c)

def crc32(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _CRC[(c ^ b) & 0xFF]  # high bytes: sign extension is masked off by & 0xff
    return ((~c & M32) >> 16) & 0x7FFF

def murmur(data):
    m, n = 0x5bd1e995, len(data)
    h = ((0xdeadbeef * n) & M32) ^ n
    i = 0
    while n - i >= 4:
        k = struct.unpack_from("<I", data, i)[0]
        k = (k * m) & M32; k ^= k >> 24; k = (k * m) & M32
        h = (h * m) & M32; h ^= k
        i += 4
    rem = n - i
    if rem == 3: h ^= data[i + 2] << 16
    if rem >= 2: h ^= data[i + 1] << 8
    if rem >= 1:
        h ^= data[i]; h = (h * m) & M32
    h ^= h >> 13; h = (h * m) & M32; h ^= h >> 15
    return h

def rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M32

def murmur3(data):
    n = len(data); h = (0xdeadbeef * n) & M32
    c1, c2 = 0xcc9e2d51, 0x1b873593
    nb = n // 4
    for i in range(nb):
        k = struct.unpack_from("<I", data, 4 * i)[0]
        k = (k * c1) & M32; k = rotl(k, 15); k = (k * c2) & M32
        h ^= k; h = rotl(h, 13); h = (h * 5 + 0xe6546b64) & M32
    tail = data[4 * nb:]; k = 0
    if len(tail) == 3: k ^= tail[2] << 16
    if len(tail) >= 2: k ^= tail[1] << 8
    if len(tail) >= 1:
        k ^= tail[0]; k = (k * c1) & M32; k = rotl(k, 15); k = (k * c2) & M32; h ^= k
    h ^= n
    h ^= h >> 16; h = (h * 0x85ebca6b) & M32; h ^= h >> 13; h = (h * 0xc2b2ae35) & M32; h ^= h >> 16
    return h

def jenkins(data):  # lookup3 hashlittle, initval 13 (byte-wise path == aligned path on little endian)
    n = len(data)
    a = b = c = (0xdeadbeef + n + 13) & M32
    def mix(a, b, c):
        a = (a - c) & M32; a ^= rotl(c, 4); c = (c + b) & M32
        b = (b - a) & M32; b ^= rotl(a, 6); a = (a + c) & M32
        c = (c - b) & M32; c ^= rotl(b, 8); b = (b + a) & M32
        a = (a - c) & M32; a ^= rotl(c, 16); c = (c + b) & M32
        b = (b - a) & M32; b ^= rotl(a, 19); a = (a + c) & M32
        c = (c - b) & M32; c ^= rotl(b, 4); b = (b + a) & M32
        return a, b, c
    i = 0
    while n - i > 12:
        a = (a + struct.unpack_from("<I", data, i)[0]) & M32
        b = (b + struct.unpack_from("<I", data, i + 4)[0]) & M32
        c = (c + struct.unpack_from("<I", data, i + 8)[0]) & M32
        a, b, c = mix(a, b, c)
        i += 12
    rem = n - i
    if rem == 0:
        return c
    t = data[i:] + b"\0" * (12 - rem)
    a = (a + struct.unpack_from("<I", t, 0)[0]) & M32
    b = (b + struct.unpack_from("<I", t, 4)[0]) & M32
    c = (c + struct.unpack_from("<I", t, 8)[0]) & M32
    c ^= b; c = (c - rotl(b, 14)) & M32
    a ^= c; a = (a - rotl(c, 11)) & M32
    b ^= a; b = (b - rotl(a, 25)) & M32
    c ^= b; c = (c - rotl(b, 16)) & M32
    a ^= c; a = (a - rotl(c, 4)) & M32
    b ^= a; b = (b - rotl(a, 14)) & M32
    c ^= b; c = (c - rotl(b, 24)) & M32
    return c

HASHES = {"one-at-a-time": oaat, "md5": md5h, "crc32": crc32, "fnv1_32": fnv1_32, "fnv1a_32": fnv1a_32,
          "fnv1_64": fnv1_64, "fnv1a_64": fnv1a_64, "murmur": murmur, "murmur3": murmur3, "jenkins": jenkins}

def parse_servers(path):
    out = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        t = line.split()
        addr, w = t[0], int(t[1]) if len(t) > 1 else 1
        if addr.startswith("["):
            host, port = addr[1:addr.index("]")], int(addr[addr.index("]") + 2:])
        else:
            host, port = addr.rsplit(":", 1); port = int(port)
        out.append((addr, host, port, w))
    return out

def continuum(servers, flavor, hash_name=None):
    n = len(servers)
    pts = []
    if flavor in ("libmemcached", "libmemcached-spy"):
        W = f32(float(sum(s[3] for s in servers)))
        for idx, (_, host, port, w) in enumerate(servers):
            pct = f32(f32(float(w)) / W)
            x = f32(f32(f32(pct * 160.0) / 4.0) * f32(float(n)))
            x = f32(x + f32(1e-10))
            ndig = int(math.floor(x))
            for i in range(ndig):
                if flavor == "libmemcached-spy":
                    name = f"/{host}:{port}-{i}"
                elif port == 11211:
                    name = f"{host}-{i}"
                else:
                    name = f"{host}:{port}-{i}"
                d = hashlib.md5(name.encode()).digest()
                for k in range(4):
                    pts.append((struct.unpack_from("<I", d, 4 * k)[0], idx))
        keyhash = HASHES[hash_name or "md5"]
    else:
        hf = HASHES[hash_name or "one-at-a-time"]
        for idx, (_, host, port, w) in enumerate(servers):
            for i in range(100):
                name = f"{host}-{i}" if port == 11211 else f"{host}:{port}-{i}"
                pts.append((hf(name.encode()), idx))
        keyhash = hf
    pts.sort()
    return pts, keyhash

def lookup(pts, keyhash, key, nservers):
    import bisect
    if nservers == 1:
        return 0
    h = keyhash(key)
    i = bisect.bisect_left(pts, (h, -1))
    if i == len(pts):
        i = 0
    return pts[i][1]

if __name__ == "__main__":
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    servers = parse_servers(args["--servers"])
    pts, kh = continuum(servers, args["--flavor"], args.get("--hash"))
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        key = line.rstrip(b"\n")
        out.write(key + b"\t" + servers[lookup(pts, kh, key, len(servers))][0].encode() + b"\n")
