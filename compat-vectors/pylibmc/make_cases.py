#!/usr/bin/env python3
"""pylibmc cases (answers from pylibmc; inputs chosen here).  usage: make_cases.py OUT_CASES_DIR"""
import json, os, socket, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "libmemcached", "tools"))
from make_cases import keyset, servers  # noqa: E402

def mkeys(seed):  # memcached-valid keys (real servers are contacted in the 'real' cases)
    return [k for k in keyset(seed, n=1500) if len(k) <= 250 and all(0x21 <= b for b in k) and 0x7f not in k][:1000]

W = {"ketama_weighted": True}
K = {"ketama": True}
KM = {"ketama": True, "hash": "md5"}
REAL = [("127.0.0.2:11211", 1), ("127.0.0.3:11211", 2), ("127.0.0.4:11211", 1), ("127.0.0.1:11213", 3), ("127.0.0.1:11214", 1)]
REAL1 = [(a, 1) for a, _ in REAL]
CASES = [  # name, servers, behaviors, flavor, hash, mode, note
    ("kw-n5-equal", [("0.0.0.1:11211", 1), ("0.0.0.2:11211", 1), ("0.0.0.3:11211", 1), ("0.0.0.4:11213", 1), ("0.0.0.5:11212", 1)], W, "libmemcached", None, "hash", ""),
    ("kw-n10-random-weights", servers(10, 810, weights="random", ports="mixed"), W, "libmemcached", None, "hash", ""),
    ("kw-weights-29-16-15", [("10.2.1.1:11211", 29), ("10.2.1.2:11211", 16), ("10.2.1.3:11211", 15)], W, "libmemcached", None, "hash", "float trap"),
    ("kw-hosts-ipv6", servers(12, 812, hosts="mixed", ports="mixed", weights="random"), W, "libmemcached", None, "hash", "IPv6 given as [addr]:port:weight"),
    ("kw-n61-equal", servers(61, 861), W, "libmemcached", None, "hash", ""),
    ("k-default-n7", servers(7, 907), K, "libmemcached-unweighted", None, "hash", "behaviors {ketama: True}, key hash left at default (one-at-a-time)"),
    ("k-default-n25-mixed", servers(25, 925, ports="mixed", hosts="mixed"), K, "libmemcached-unweighted", None, "hash", "all weights 1 (see README: a weight > 1 turns weighted ketama on)"),
    ("k-md5-n10", servers(10, 910, ports="mixed"), KM, "libmemcached-unweighted", "md5", "hash", "behaviors {ketama: True, hash: md5}"),
    ("real-kw-loopback", REAL, W, "libmemcached", None, "real", "real memcached servers on loopback; keys stored through pylibmc, then read back from each server alone"),
    ("real-k-loopback", REAL1, K, "libmemcached-unweighted", None, "real", "real memcached servers on loopback, {ketama: True}"),
]

def listening(h, p):
    try:
        socket.create_connection((h, p), timeout=0.5).close()
        return True
    except OSError:
        return False

def start_real(procs):
    """memcached on the REAL loopback addresses (fixed: they are the answers). An address already in use
    is an error: the 'real' cases flush and fill the servers, so they must be ours."""
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
        if any(c[5] == "real" for c in CASES):
            start_real(procs)
        total = 0
        for name, srv, beh, flavor, h, mode, note in CASES:
            d = os.path.join(out, name); os.makedirs(d, exist_ok=True)
            sp = os.path.join(d, "servers.txt")
            with open(sp, "w") as f:
                f.write(f"# pylibmc behaviors={json.dumps(beh)}\n" + "".join(f"{a} {w}\n" for a, w in srv))
            with open(os.path.join(d, "meta.txt"), "w") as f:
                f.write(f"flavor={flavor}\n" + (f"hash={h}\n" if h else "") + (f"note={note}\n" if note else ""))
            keys = mkeys(2000 + sum(map(ord, name)))
            res = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pylibmc_route.py"), mode, sp, json.dumps(beh)],
                                 input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
            assert len(res.splitlines()) == len(keys), name
            if mode == "real":  # the real placement must equal Client.hash()
                chk = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pylibmc_route.py"), "hash", sp, json.dumps(beh)],
                                     input=b"".join(k + b"\n" for k in keys), capture_output=True, check=True).stdout
                assert chk == res, name
            open(os.path.join(d, "expected.tsv"), "wb").write(res)
            total += len(keys); print(f"{name}\t{len(keys)}")
        print(f"cases={len(CASES)} keys={total}", file=sys.stderr)
    finally:
        for p in procs:  # SIGKILL: on SIGTERM memcached 1.6 takes up to 1 s to exit
            p.kill(); p.wait()

if __name__ == "__main__":
    main(sys.argv[1])
