#!/usr/bin/env python3
"""pymemcache HashClient cases (run with the venv python that has pymemcache 4.0.0). Server lists and keys are
chosen here; every answer comes from the real HashClient via pymemcache_route.py. pymemcache's own murmur3_32
is used only to *search* for tie corners (two servers with the same score for a key).
usage: make_cases.py OUT_DIR   (writes OUT_DIR/cases/..., OUT_DIR/bytes-keys/... and OUT_DIR/ranking/...)"""
import os, random, subprocess, sys
from pymemcache.client.hash import HashClient
from pymemcache.client.murmur3 import murmur3_32
from pymemcache.client.rendezvous import RendezvousHash
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from make_cases import keyset, servers  # noqa: E402

EDGE = ["\u00e9", "\u00ff", "\u0100", "\u0141", "\u07ff", "\u0800", "\u4e2d\u6587", "\ufffd", "\uffff", "\U00010000",
        "\U0001f600", "\U0010ffff", "a\U0001f680b", "\U0001f511" * 3, "é" * 60, "\U0001f600" * 62, "x\uffffy",
        "A\u0141", "AA", "A\u0241", "ключ", "键", "naïve-ü"]   # U+0141/U+0241 share the low byte 0x41 with "A"

def ascii_keys(seed, extra=()):
    ks = [k for k in keyset(seed, n=3000, extra=[e.encode() for e in extra]) if len(k) <= 250 and all(0x21 <= b <= 0x7e for b in k)]
    return ks[:max(1000, len(extra) + 600)]

def unicode_keys(seed, extra=()):
    out = []
    for k in keyset(seed, n=1600, extra=[e.encode() for e in list(extra) + EDGE]):
        try:
            k.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(k) <= 250 and all(b >= 0x21 and b != 0x7f for b in k):
            out.append(k)
    return out[:max(1000, len(extra) + len(EDGE) + 600)]

def score(node, key):
    return murmur3_32(f"{node}-{key}")

def find_tie(key, seed):
    """two IPv4 'host:port' servers whose node strings score the same for key"""
    r = random.Random(seed)
    seen = {}
    while True:
        t = "10.%d.%d.%d:11211" % (r.randrange(256), r.randrange(256), r.randrange(1, 255))
        node = t  # HashClient's node string for "a.b.c.d:port" is the same text
        s = score(node, key)
        if s in seen and seen[s] != t:
            return seen[s], t, s
        seen[s] = t

def tie_cases():
    out = []
    for i in range(3):
        key = f"tie:{i}"
        a, b, s = find_tie(key, 100 + i)
        lo, hi = sorted([a, b])
        r = random.Random(200 + i)
        fill = []
        while len(fill) < 3:  # other servers that score lower for the tie key, so the tie is for the top
            t = "10.200.%d.%d:11211" % (r.randrange(256), r.randrange(1, 255))
            if score(t, key) < s and t not in fill:
                fill.append(t)
        note = (f"{a} and {b} both score {s} for key {key} (murmur3_32 of 'NODE-KEY'): the greater node string "
                f"({hi}) wins whatever the order")
        out.append((f"tie{i}-ab", [a, b], [key], note))
        out.append((f"tie{i}-ba", [b, a], [key], note))
        out.append((f"tie{i}-n5", [fill[0], b, fill[1], a, fill[2]], [key], note + "; three lower-scoring servers around them"))
    return out

N10 = [a for a, _ in servers(10, 4010, ports="mixed")]
N10P = list(N10); random.Random(3).shuffle(N10P)
CASES = [  # name, servers, driver args, keys function, key seed, extra keys, note
    ("n1", ["127.0.0.1:11211"], [], ascii_keys, 1, (), "one server"),
    ("n2", [a for a, _ in servers(2, 4002)], [], ascii_keys, 2, (), ""),
    ("n3-ports", ["10.0.1.1:11211", "10.0.1.1:11212", "10.0.1.2:22122"], [], ascii_keys, 3, (), "same host, other ports"),
    ("n7", [a for a, _ in servers(7, 4007)], [], ascii_keys, 7, (), ""),
    ("n25", [a for a, _ in servers(25, 4025, ports="mixed")], [], ascii_keys, 25, (), ""),
    ("n100", [a for a, _ in servers(100, 4100, ports="mixed")], [], ascii_keys, 100, (), ""),
    ("n10", N10, [], ascii_keys, 10, (), "same keys as n10-permuted"),
    ("n10-permuted", N10P, [], ascii_keys, 10, (), "the n10 servers in another order: rendezvous does not depend on order"),
    ("hostnames", [a for a, _ in servers(12, 4012, hosts="name", ports="mixed")], [], ascii_keys, 12, (),
     "host names are used verbatim in the node string host:port (never resolved)"),
    ("ipv6", [a for a, _ in servers(6, 4006, hosts="ipv6", ports="mixed")] + ["[::1]:11211", "[::1]:11212", "127.0.0.1:11211"],
     [], ascii_keys, 6, (), "IPv6 [addr]:port: the node string is addr:port without brackets, e.g. ::1:11211"),
    ("mixed", [a for a, _ in servers(30, 4030, hosts="mixed", ports="mixed")], [], ascii_keys, 30, (), ""),
    ("unicode-n5", [a for a, _ in servers(5, 4105, ports="mixed")], ["--unicode"], unicode_keys, 105, (),
     "allow_unicode_keys=True, UTF-8 keys as str: murmur3 takes each code point's low 8 bits, length in code points"),
    ("unicode-n10", N10, ["--unicode"], unicode_keys, 110, (), "allow_unicode_keys=True"),
    ("unicode-n64-mixed", [a for a, _ in servers(64, 4164, hosts="mixed", ports="mixed")], ["--unicode"], unicode_keys, 164, (),
     "allow_unicode_keys=True"),
    ("key-prefix", N10, ["--prefix", "app1:"], ascii_keys, 10, (),
     "key_prefix=b'app1:': the prefix is not hashed (same answers as n10)"),
]

# The two node strings that tie for the key "k" (both score 0xa6192275), found with murmur3_32 like find_tie.
K_TIE = ["10.0.242.254:11211", "10.1.66.9:11211"]

def ranking_cases():
    """Server lists for ranking/: the tie for "k" alone in both orders, under two higher-scoring servers with
    two lower ones around it (both orders of the pair), and tie0's pair among its three lower servers."""
    s = score(K_TIE[0], "k")
    assert s == score(K_TIE[1], "k") == 0xA6192275, s
    r = random.Random(300)
    above, below = [], []
    while len(above) < 2 or len(below) < 2:
        t = "10.201.%d.%d:11211" % (r.randrange(256), r.randrange(1, 255))
        side = above if score(t, "k") > s else below
        if len(side) < 2 and t not in above + below:
            side.append(t)
    lo, hi = K_TIE
    tie0 = [c for c in tie_cases() if c[0] == "tie0-n5"][0]
    return [
        ("k-ab", [lo, hi], "k"),
        ("k-ba", [hi, lo], "k"),
        ("k-mid-ab", [below[0], above[0], lo, below[1], hi, above[1]], "k"),
        ("k-mid-ba", [above[1], hi, below[0], lo, above[0], below[1]], "k"),
        ("tie0-n5", tie0[1], tie0[2][0]),
    ]

def ranking_of(nodes, key):
    """The order in which pymemcache's own RendezvousHash picks a key's node as the winner is removed each time
    (what HashClient does to a server it marks dead: hasher.remove_node)."""
    h = HashClient(nodes).hasher
    assert isinstance(h, RendezvousHash), h
    order = []
    while True:
        n = h.get_node(key)
        if n is None:
            return order
        order.append(n)
        h.remove_node(n)

def write_ranking(out):
    """ranking/<case>/servers.txt and expected.tsv: KEY<TAB>NODE NODE ... (every server, the owner first)."""
    for name, srv, tie_key in ranking_cases():
        d = os.path.join(out, "ranking", name)
        write(d, srv, f"the order pymemcache picks servers for a key as each winner is removed; tie key {tie_key}")
        keys = [tie_key.encode()] + [k for k in ascii_keys(400) if k != tie_key.encode()][:199]
        with open(os.path.join(d, "expected.tsv"), "wb") as f:
            for k in keys:
                f.write(k + b"\t" + " ".join(ranking_of(srv, k.decode())).encode() + b"\n")
        print(f"ranking/{name}\t{len(keys)}")

def run(srv_path, args, keys):
    res = subprocess.run([sys.executable, os.path.join(HERE, "pymemcache_route.py"), srv_path] + args,
                         input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
    assert len(res.splitlines()) == len(keys), srv_path
    return res

def write(d, srv, note, meta=True):
    os.makedirs(d, exist_ok=True)
    sp = os.path.join(d, "servers.txt")
    with open(sp, "w") as f:
        f.write(f"# pymemcache HashClient: {note or os.path.basename(d)}\n" + "".join(f"{a}\n" for a in srv))
    if meta:
        with open(os.path.join(d, "meta.txt"), "w") as f:
            f.write("flavor=pymemcache\n" + (f"note={note}\n" if note else ""))
    return sp

def main(out):
    total = 0
    cases = list(CASES) + [(n, s, ["--unicode"], unicode_keys, 900 + i, tuple(x), note)
                           for i, (n, s, x, note) in enumerate(tie_cases())]
    for name, srv, args, kf, seed, extra, note in cases:
        d = os.path.join(out, "cases", name)
        sp = write(d, srv, note)
        keys = kf(6000 + seed, extra)
        open(os.path.join(d, "expected.tsv"), "wb").write(run(sp, args, keys))
        total += len(keys); print(f"{name}\t{len(keys)}")
    # Documentation, not a case: bytes keys are hashed as their repr, f"{node}-{key}" = "host:port-b'...'".
    d = os.path.join(out, "bytes-keys")
    sp = write(d, N10, "bytes keys (documentation, not a case)", meta=False)
    keys = [k for k in ascii_keys(77) if b"'" not in k and b"\\" not in k][:300] + [e.encode() for e in EDGE]
    keys = [k for k in keys if len(str(k)) <= 250]   # the repr must pass check_key_helper too (below)
    res = run(sp, ["--bytes"], keys)
    # the same HashClient, given the str "b'...'" (repr of the bytes key) as the key, answers the same:
    reprs = [str(k).encode() for k in keys]
    alt = run(sp, ["--unicode"], reprs)
    assert [l.split(b"\t")[1] for l in res.splitlines()] == [l.split(b"\t")[1] for l in alt.splitlines()]
    plain = run(sp, ["--unicode"], keys)
    differ = sum(a != b for a, b in zip(res.splitlines(), plain.splitlines()))
    open(os.path.join(d, "expected.tsv"), "wb").write(res)
    open(os.path.join(d, "as-str.tsv"), "wb").write(plain)
    print(f"bytes-keys\t{len(keys)} ({differ} placed differently from the same key given as str)")
    write_ranking(out)
    print(f"cases={len(cases)} keys={total}", file=sys.stderr)

if __name__ == "__main__":
    main(sys.argv[1])
