#!/usr/bin/env python3
"""Writes cases/<case>/{servers.txt,meta.txt,expected.tsv}. Server lists and keys are chosen here
(deterministically); every expected.tsv line is the answer of the real libmemcached, via the harness.

usage: make_cases.py HARNESS_BINARY OUT_CASES_DIR
"""
import hashlib, json, math, os, random, struct, subprocess, sys, zlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ketama_model as km          # only used to pick interesting inputs (corner keys / weight sets)
import find_corners as fc

NKEYS = 1000

def keyset(seed, n=NKEYS, extra=()):
    r = random.Random(seed)
    ks, seen = [], set()
    def add(k):
        if isinstance(k, str):
            k = k.encode("utf-8")
        if k and k not in seen and not any(c in k for c in b"\t\r\n\0 "):
            seen.add(k); ks.append(k)
    for k in extra:
        add(k)
    add("VDEAAAAA")                       # md5 key hash 0xfffcd1b5: wraps past the last point
    utf = "éüßøåçñ中文字日本語한국어ΩπЖд😀🚀"
    while len(ks) < n:
        c = r.random()
        if c < 0.45:
            add(f"key:{r.randrange(10**9)}")
        elif c < 0.6:
            add("".join(r.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:.") for _ in range(r.randrange(1, 40))))
        elif c < 0.75:
            add("".join(r.choice(utf + "abc123") for _ in range(r.randrange(1, 12))))
        elif c < 0.9:                      # raw high bytes (not necessarily UTF-8)
            add(bytes(r.choice([r.randrange(0x80, 0x100), r.randrange(0x21, 0x7f)]) for _ in range(r.randrange(1, 16))))
        elif c < 0.97:
            add(bytes([r.randrange(0x21, 0x7f)]))
        else:                              # long keys (> 250 bytes: fine, no server is contacted)
            add("L" * r.randrange(200, 400) + str(r.randrange(10**6)))
    return ks[:max(n, len(extra))]

def ip(r):
    return f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}"

def servers(n, seed, weights="equal", ports="11211", hosts="ip"):
    r = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        kind = hosts if hosts != "mixed" else r.choice(["ip", "name", "ipv6"])
        h = {"ip": ip(r), "name": f"cache-{r.randrange(10**6)}.{r.choice(['example.com', 'svc.local', 'memcache'])}",
             "ipv6": f"2001:db8::{r.randrange(1, 65536):x}"}[kind]
        p = {"11211": 11211, "other": r.choice([11212, 11213, 21211, 1, 65535, r.randrange(1024, 65536)]),
             "mixed": r.choice([11211, 11211, 11212, 11213, 22122, r.randrange(1, 65536)])}[ports]
        w = {"equal": 1, "random": r.randrange(1, 101), "wide": r.choice([1, 2, 3, 10, 100, 1000, 65535, 1000000])}[weights]
        addr = f"[{h}]:{p}" if ":" in h else f"{h}:{p}"
        if addr in seen:
            continue
        seen.add(addr); out.append((addr, w))
    return out

def main(HARNESS, OUT):
    global CASES
    CASES = []
    def case(name, srv, flavor, hash_=None, note="", keys=None, seed=None):
        CASES.append(dict(name=name, servers=srv, flavor=flavor, hash=hash_, note=note,
                          keys=keys if keys is not None else keyset(seed if seed is not None else zlib.crc32(name.encode()))))

    def write(c):
        d = os.path.join(OUT, c["name"]); os.makedirs(d, exist_ok=True)
        sp = os.path.join(d, "servers.txt")
        with open(sp, "w") as f:
            f.write(f"# {c['note'] or c['name']}\n")
            for a, w in c["servers"]:
                f.write(f"{a} {w}\n")
        with open(os.path.join(d, "meta.txt"), "w") as f:
            f.write(f"flavor={c['flavor']}\n")
            if c["hash"]:
                f.write(f"hash={c['hash']}\n")
            if c["note"]:
                f.write(f"note={c['note']}\n")
        args = [HARNESS, "--servers", sp, "--flavor", c["flavor"]] + (["--hash", c["hash"]] if c["hash"] else [])
        out = subprocess.run(args, input=b"".join(k + b"\n" for k in c["keys"]), capture_output=True, check=True).stdout
        # cross-check: memcached_server_by_key gives the same answer for memcached-valid keys
        valid = [k for k in c["keys"] if len(k) <= 250]
        chk = subprocess.run(args + ["--lookup", "by-key"], input=b"".join(k + b"\n" for k in valid), capture_output=True, check=True).stdout
        got = dict(l.split(b"\t") for l in out.splitlines())
        for l in chk.splitlines():
            k, a = l.split(b"\t")
            assert got[k] == a, (c["name"], k)
        with open(os.path.join(d, "expected.tsv"), "wb") as f:
            f.write(out)
        return len(out.splitlines())

    # ---------- flavor libmemcached (KETAMA_WEIGHTED) ----------
    S = lambda lst: [(a, w) for a, w in lst]
    case("w-n1-single", [("10.0.0.1:11211", 1)], "libmemcached", note="one server: libmemcached skips hashing (hash 0)")
    case("w-n2-ip-11211", servers(2, 2), "libmemcached")
    case("w-n3-ports-mixed", [("10.0.1.1:11211", 1), ("10.0.1.1:11212", 1), ("10.0.1.2:22122", 1)], "libmemcached",
         note="same host, port 11211 (dropped from point name) and other ports (kept)")
    for n in (7, 25, 50, 61, 100):
        case(f"w-n{n}-equal", servers(n, n), "libmemcached", note=f"{n} servers, equal weights")
    for n in (2, 3, 7, 10, 25, 50, 100):
        case(f"w-n{n}-random-weights", servers(n, 100 + n, weights="random", ports="mixed"), "libmemcached",
             note="random weights 1..100, mixed ports")
    case("w-n10-wide-weights", servers(10, 7, weights="wide", ports="mixed", hosts="mixed"), "libmemcached",
         note="weights 1..1000000, IPs/hostnames/IPv6")
    case("w-extreme-1-vs-1000000", [("10.9.0.1:11211", 1), ("10.9.0.2:11211", 1000000)], "libmemcached",
         note="weight 1 against 1000000: the light server gets floor(f32 arithmetic)=0 digests -> no points")
    case("w-extreme-many", [("10.9.1.%d:11211" % i, 1) for i in range(1, 10)] + [("10.9.1.99:11211", 1000000)], "libmemcached",
         note="nine weight-1 servers and one weight-1000000 server")
    case("w-huge-weights", [("10.9.2.1:11211", 4000000000), ("10.9.2.2:11211", 3000000000), ("10.9.2.3:11211", 1)], "libmemcached",
         note="total weight exceeds u32 (libmemcached sums in u64, converts to float)")
    case("w-weights-21-10-9", [("10.2.0.1:11211", 21), ("10.2.0.2:11211", 10), ("10.2.0.3:11211", 9)], "libmemcached",
         note="float trap: digests 63/30/27")
    case("w-weights-29-16-15", [("10.2.1.1:11211", 29), ("10.2.1.2:11211", 16), ("10.2.1.3:11211", 15)], "libmemcached",
         note="float trap: f32 gives 57/32/30 digests, exact arithmetic gives 58 for the first")
    # more float-vs-exact weight sets, found by search
    def f32cnt(ws):
        n = len(ws); W = km.f32(float(sum(ws))); out = []
        for w in ws:
            pct = km.f32(km.f32(float(w)) / W)
            x = km.f32(km.f32(km.f32(km.f32(pct * 160.0) / 4.0) * km.f32(float(n))) + km.f32(1e-10))
            out.append(math.floor(x))
        return out
    r = random.Random(3); found = []
    while len(found) < 3:
        ws = [r.randrange(1, 50) for _ in range(r.randrange(2, 8))]
        if f32cnt(ws) != [(w * 40 * len(ws)) // sum(ws) for w in ws]:
            found.append(ws)
    for i, ws in enumerate(found):
        case(f"w-float-trap-{i}", [(f"10.3.{i}.{j + 1}:11211", w) for j, w in enumerate(ws)], "libmemcached",
             note=f"weights {ws}: f32 digest counts {f32cnt(ws)} differ from exact floor(40*n*w/W)")
    case("w-hostnames", servers(12, 12, hosts="name", ports="mixed", weights="random"), "libmemcached",
         note="host names are used verbatim in point names (no DNS)")
    case("w-ipv6", servers(8, 8, hosts="ipv6", ports="mixed", weights="random"), "libmemcached",
         note="IPv6: point name uses the address without brackets, e.g. 2001:db8::1:11212-0 / 2001:db8::1-0")
    case("w-ipv6-loopback", [("[::1]:11211", 1), ("[::1]:11212", 2), ("[::ffff:127.0.0.1]:11211", 1), ("127.0.0.1:11211", 1)],
         "libmemcached", note="::1 at 11211 and 11212; v4-mapped IPv6")
    case("w-mixed-everything", servers(30, 30, hosts="mixed", ports="mixed", weights="wide"), "libmemcached")
    case("w-published-8", [("10.0.1.%d:11211" % (i + 1), w) for i, w in enumerate([600, 300, 200, 350, 1000, 800, 950, 100])],
         "libmemcached", note="server list of libmemcached's own ketama test (random keys here)")
    case("w-localhost-names", [("localhost:11211", 1), ("localhost:11212", 1), ("127.0.0.1:11211", 1), ("127.0.0.2:11211", 3)],
         "libmemcached", note="localhost and 127.0.0.1 are different point names")
    # ---------- --hash with the weighted flavor ----------
    for h in ("one-at-a-time", "fnv1a_32", "crc32"):
        case(f"w-hash-{h}", servers(10, 40, weights="random", ports="mixed"), "libmemcached", hash_=h,
             note=f"KETAMA_WEIGHTED then HASH={h}: key hash changes, continuum points stay md5 (4 per digest)")
    # ---------- flavor libmemcached-spy ----------
    case("spy-published-8", [("10.0.1.%d:11211" % (i + 1), w) for i, w in enumerate([600, 300, 200, 350, 1000, 800, 950, 100])],
         "libmemcached-spy", note="SPY: point name /host:port-i, port always present")
    case("spy-n3-ports-mixed", [("10.0.1.1:11211", 1), ("10.0.1.1:11212", 1), ("10.0.1.2:22122", 1)], "libmemcached-spy")
    case("spy-n25-random-weights", servers(25, 225, weights="random", ports="mixed"), "libmemcached-spy")
    case("spy-hostnames-ipv6", servers(12, 312, hosts="mixed", ports="mixed", weights="random"), "libmemcached-spy")
    case("spy-n100-equal", servers(100, 400), "libmemcached-spy")
    case("spy-weights-29-16-15", [("10.2.1.1:11211", 29), ("10.2.1.2:11211", 16), ("10.2.1.3:11211", 15)], "libmemcached-spy")
    # ---------- flavor libmemcached-unweighted ----------
    case("u-default-n7", servers(7, 507), "libmemcached-unweighted", note="KETAMA, default key hash (one-at-a-time), 100 points")
    case("u-default-n50-mixed", servers(50, 550, hosts="mixed", ports="mixed", weights="wide"), "libmemcached-unweighted",
         note="weights in the file are ignored by this flavor (servers added before KETAMA is set)")
    case("u-default-n100", servers(100, 600), "libmemcached-unweighted")
    case("u-default-highbytes", servers(5, 605, ports="mixed"), "libmemcached-unweighted",
         keys=keyset(605, extra=[bytes([b, 0x41]) for b in range(0x80, 0x100)]),
         note="one-at-a-time sign-extends bytes >= 0x80 ((uint32_t)(char)b)")
    for h in ("md5", "one-at-a-time", "crc32", "fnv1_32", "fnv1a_32", "fnv1_64", "fnv1a_64", "murmur", "murmur3", "jenkins"):
        case(f"u-{h}-n10", servers(10, 700 + len(h), ports="mixed", hosts="mixed"), "libmemcached-unweighted", hash_=h,
             note=f"KETAMA with HASH={h}: points and keys hashed with {h}")
    case("u-crc32-n25-ties", servers(25, 725), "libmemcached-unweighted", hash_="crc32",
         note="crc32 yields 15-bit values: 2500 points in 0..32767, many equal points -> tie order matters")
    case("u-md5-n61", servers(61, 761, ports="mixed"), "libmemcached-unweighted", hash_="md5")

    # ---------- corners ----------
    corn = json.load(open(os.environ["CORNERS_JSON"])) if os.environ.get("CORNERS_JSON") else {
        "collisions": fc.collision_search(), "key_hits": fc.key_hits()}
    col = corn["collisions"][0]
    A, B, V = col["a"], col["b"], col["value"]
    others = [f"cache-{i:04d}.other.test" for i in range(3)]
    def near_keys(srv_list, flavor, value, want=60):
        """keys (from a 2M candidate pool) whose md5 hash lies in (previous point, value]"""
        servs = [(a, a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]), w) for a, w in srv_list]
        pts, _ = km.continuum(servs, flavor)
        vals = sorted(set(p[0] for p in pts))
        i = vals.index(value)
        lo = vals[i - 1] if i > 0 else -1
        out = []
        for n in range(3_000_000):
            k = f"n{n}".encode()
            h = struct.unpack_from("<I", hashlib.md5(k).digest())[0]
            if lo < h <= value:
                out.append(k)
                if len(out) >= want:
                    break
        return out
    srvAB = [(f"{A}:11211", 1), (f"{B}:11211", 1)] + [(f"{o}:11211", 1) for o in others]
    srvBA = [(f"{B}:11211", 1), (f"{A}:11211", 1)] + [(f"{o}:11211", 1) for o in others]
    nk = near_keys(srvAB, "libmemcached", V)
    case("corner-shared-point", srvAB, "libmemcached", keys=keyset(901, extra=nk),
         note=f"{A} point {col['a_idx']} and {B} point {col['b_idx']} (digest index, u32 index) are both {V}; "
              f"the first {len(nk)} keys hash into (previous point, {V}] and land on the shared point; lower server index wins")
    case("corner-shared-point-reversed", srvBA, "libmemcached", keys=keyset(901, extra=nk),
         note=f"same as corner-shared-point with the two colliding servers swapped in the list (tie goes to the earlier line)")
    hits = corn["key_hits"][:6]
    srvK = []
    for h in hits:
        a = f"{h['host']}:{h['port']}"
        if a not in [s[0] for s in srvK]:
            srvK.append((a, 1))
    hit_keys = [h["key"].encode() for h in hits]
    hit_near = []
    for h in hits:  # keys hashing one below / one above are not findable; use the exact keys plus keys just below each point
        pass
    case("corner-key-on-point", srvK, "libmemcached", keys=keyset(902, extra=hit_keys),
         note="the first %d keys have md5 key hash exactly equal to a continuum point: %s (lookup is first point >= hash, so the key stays on that point's server)"
              % (len(hit_keys), "; ".join(f"{h['key']}={h['value']}@{h['host']}:{h['port']}#{h['point']}" for h in hits)))
    srvBoth = srvBA + srvK
    case("corner-both", srvBoth, "libmemcached", keys=keyset(903, extra=nk[:30] + hit_keys),
         note=f"shared point {V} ({B} listed before {A}) with first 30 keys landing on it; then keys {[k.decode() for k in hit_keys]} "
              f"equal to points exactly; VDEAAAAA wraps past the last point")
    case("spy-corner-key-hash-wrap", srvBoth, "libmemcached-spy", keys=keyset(904, extra=nk[:30] + hit_keys),
         note="same servers/keys as corner-both but SPY names (corners do not apply to SPY points; kept as a regression set)")

    total = 0
    for c in CASES:
        n = write(c)
        total += n
        print(f"{c['name']}\t{n}")
    print(f"cases={len(CASES)} keys={total}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
