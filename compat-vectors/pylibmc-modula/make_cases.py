#!/usr/bin/env python3
"""pylibmc cases at default behaviors (distribution modula). Answers from pylibmc; inputs chosen here.
usage: make_cases.py OUT_CASES_DIR"""
import json, os, random, socket, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from make_cases import keyset, servers  # noqa: E402

HIGH = [bytes([b]) for b in range(0x80, 0x100)] + [bytes([b, 0x41]) for b in range(0x80, 0x100)] + \
       ["é", "ключ", "键", "😀", "naïve-ü"]

def mkeys(seed, extra=()):  # memcached-valid keys (real servers are contacted in the 'real' cases)
    ks = [k for k in keyset(seed, n=1500, extra=extra) if len(k) <= 250 and all(0x21 <= b for b in k) and 0x7f not in k]
    return ks[:max(1000, len(extra) + 600)]

N10 = servers(10, 2010, ports="mixed")
N10W = [(a, w) for (a, _), w in zip(N10, [100, 1, 7, 3, 50, 2, 9, 4, 1, 20])]
N10P = list(N10); random.Random(11).shuffle(N10P)
REAL = [("127.0.1.1:11211", 1), ("127.0.1.2:11211", 3), ("127.0.1.3:11212", 1), ("127.0.1.4:11211", 2), ("127.0.1.5:11213", 1)]
CASES = [  # name, servers, behaviors (None = no behaviors argument), hash name, mode, key seed, extra keys, note
    ("n1-single", [("10.0.0.1:11211", 1)], None, None, "hash", 1, (), "one server"),
    ("n2", servers(2, 2002), None, None, "hash", 2, (), ""),
    ("n7", servers(7, 2007), None, None, "hash", 7, (), ""),
    ("n25-mixed", servers(25, 2025, ports="mixed", hosts="mixed"), None, None, "hash", 25, (), "IPs, host names, IPv6"),
    ("n100", servers(100, 2100), None, None, "hash", 100, (), ""),
    ("n10-equal", N10, None, None, "hash", 10, (), "same servers and keys as n10-weights and n10-permuted"),
    ("n10-weights", N10W, None, None, "hash", 10, (), "host:port:weight with weights 1..100: modula ignores them"),
    ("n10-permuted", N10P, None, None, "hash", 10, (), "the n10-equal servers in another order"),
    ("highbytes-n5", servers(5, 2205, ports="mixed"), None, None, "hash", 205, HIGH,
     "bytes >= 0x80: one-at-a-time sign-extends each (char) byte"),
    ("behaviors-empty-dict", servers(6, 2206), {}, None, "hash", 206, (), "behaviors={} (same as none)"),
    ("hash-crc", N10W, {"hash": "crc"}, "crc32", "hash", 301, HIGH, "behaviors {hash: crc}"),
    ("hash-md5", N10W, {"hash": "md5"}, "md5", "hash", 302, HIGH, "behaviors {hash: md5}"),
    ("hash-fnv1a_32", N10W, {"hash": "fnv1a_32"}, "fnv1a_32", "hash", 303, HIGH, "behaviors {hash: fnv1a_32}"),
    ("hash-fnv1_64", N10W, {"hash": "fnv1_64"}, "fnv1_64", "hash", 304, HIGH, "behaviors {hash: fnv1_64}"),
    ("hash-murmur", N10W, {"hash": "murmur"}, "murmur", "hash", 305, HIGH, "behaviors {hash: murmur}"),
    ("real-default", REAL, None, None, "real", 401, HIGH,
     "real memcached servers on loopback; keys stored through pylibmc, then read back from each server alone"),
    ("real-crc", REAL, {"hash": "crc"}, "crc32", "real", 402, (), "real servers, behaviors {hash: crc}"),
]

def listening(h, p):
    try:
        socket.create_connection((h, p), timeout=0.5).close()
        return True
    except OSError:
        return False

def start_real(procs):
    """memcached on the REAL loopback addresses (fixed: they are the answers); an address in use is an error."""
    for a, _ in REAL:
        h, p = a.rsplit(":", 1)
        if listening(h, int(p)):
            sys.exit(f"{a} is already in use (something else listens there); not starting memcached")
        procs.append(subprocess.Popen(["memcached", "-u", "nobody", "-l", h, "-p", p, "-U", "0", "-m", "16"]))
    for (a, _), proc in zip(REAL, procs):
        h, p = a.rsplit(":", 1)
        for _ in range(200):
            if proc.poll() is not None:
                sys.exit(f"memcached on {a} exited (rc {proc.returncode})")
            if listening(h, int(p)):
                break
            time.sleep(0.05)
        else:
            sys.exit(f"memcached on {a} did not start listening")

def main(out):
    procs = []
    try:
        if any(c[4] == "real" for c in CASES):
            start_real(procs)
        total = 0
        for name, srv, beh, h, mode, seed, extra, note in CASES:
            d = os.path.join(out, name); os.makedirs(d, exist_ok=True)
            sp = os.path.join(d, "servers.txt")
            with open(sp, "w") as f:
                f.write(f"# pylibmc behaviors={json.dumps(beh)}\n" + "".join(f"{a} {w}\n" for a, w in srv))
            with open(os.path.join(d, "meta.txt"), "w") as f:
                f.write("flavor=libmemcached-modula\n" + (f"hash={h}\n" if h else "") + (f"note={note}\n" if note else ""))
            keys = mkeys(5000 + seed, extra)
            run = lambda m: subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pylibmc_route.py"), m, sp, json.dumps(beh)],
                                           input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
            res = run(mode)
            assert len(res.splitlines()) == len(keys), name
            if mode == "real":  # the real placement must equal Client.hash()
                assert run("hash") == res, name
            open(os.path.join(d, "expected.tsv"), "wb").write(res)
            total += len(keys); print(f"{name}\t{len(keys)}")
        print(f"cases={len(CASES)} keys={total}", file=sys.stderr)
    finally:
        for p in procs:  # SIGKILL: on SIGTERM memcached 1.6 takes up to 1 s to exit
            p.kill(); p.wait()

if __name__ == "__main__":
    main(sys.argv[1])
